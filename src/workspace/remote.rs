//! The gateway's end of a workspace placed on another host (`workspaces.hosts`): how its
//! sandbox is started there and how its tmux clients reach it, both over the host's link
//! (see [`super::on_host`] for the host's end).
//!
//! Its tmux server is a remote server whose clients run `muxgate host-workspace … client` on
//! the host, which jails each as a local workspace's client is jailed here; the engine drives
//! it like any other server. Its panes' processes live in the sandbox's own pid namespace on
//! the host, so nothing is read of them ([`SandboxHost`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use muxgate_mux::child_process;
use muxgate_mux::host::SandboxHost;
use muxgate_tmux::client::remote::shell_word;
use muxgate_tmux::{ClientLaunch, RemoteHost, TmuxEndpoint, TmuxSocket};

use super::WorkspaceError;
use super::name::WorkspaceName;
use super::sandbox;
use crate::hosts::link::last_words;
use crate::hosts::ssh_args;

/// Most bytes of what a start request prints that are read.
const START_OUTPUT_BYTES: usize = 8 * 1024;

/// Most lines the host warns of beside a start that are logged here.
const RELAYED_LINES: usize = 16;

/// A host that runs workspaces for the gateway.
#[derive(Debug, Clone)]
pub struct WorkspaceHost {
    /// The host's link, as its own servers use it.
    pub link: Arc<RemoteHost>,
    /// muxgate on the host.
    pub muxgate: String,
    /// The configuration on the host its workspaces use (`hosts.<name>.workspaces_config`).
    pub config: PathBuf,
}

impl WorkspaceHost {
    /// The host's name.
    pub(crate) fn name(&self) -> &str {
        &self.link.name
    }

    /// The words of a `host-workspace` request about workspace `name`.
    fn request(&self, operation: &str, name: &WorkspaceName) -> Vec<String> {
        vec![
            self.muxgate.clone(),
            "host-workspace".into(),
            "--config".into(),
            self.config.to_string_lossy().into_owned(),
            operation.into(),
            name.as_str().into(),
        ]
    }

    /// How the engine reaches workspace `name`'s tmux server on the host.
    pub(crate) fn endpoint(&self, name: &WorkspaceName) -> TmuxEndpoint {
        let mut client = self.request("client", name);
        client.push("--".into());
        TmuxEndpoint {
            socket: TmuxSocket::Path(sandbox::INSIDE_SOCKET.into()),
            launch: ClientLaunch::Remote(Arc::new(RemoteHost {
                name: self.link.name.clone(),
                program: self.link.program.clone(),
                args: self.link.args.clone(),
                tmux: client,
                link: self.link.link.clone(),
                processes: Arc::new(SandboxHost),
            })),
        }
    }

    /// Starts workspace `name`'s sandbox on the host unless it runs there, within `timeout`.
    /// `Ok`: the sandbox's start time on the host (which tells one run of it from the next).
    pub(crate) async fn start(
        &self,
        name: &WorkspaceName,
        timeout: Duration,
    ) -> Result<u64, WorkspaceError> {
        self.link.link.check().map_err(WorkspaceError::LinkDown)?;
        self.request_start(name, timeout)
            .await
            .map_err(WorkspaceError::Remote)
    }

    async fn request_start(&self, name: &WorkspaceName, timeout: Duration) -> Result<u64, String> {
        let line = self
            .request("start", name)
            .iter()
            .map(|word| shell_word(word))
            .collect::<Vec<_>>()
            .join(" ");
        let mut command = ssh_args::process(&self.link.program, &self.link.args);
        command
            .arg("--")
            .arg(line)
            .stdin(std::process::Stdio::null());
        let child = command
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.link.program.display()))?;
        let (status, stdout, stderr) = tokio::time::timeout(
            timeout,
            child_process::bounded_output(child, START_OUTPUT_BYTES),
        )
        .await
        .map_err(|_| format!("host {} did not start it within {timeout:?}", self.name()))?
        .map_err(|e| e.to_string())?;
        if status.success() {
            relay_warnings(self.name(), name, &stderr);
            return String::from_utf8_lossy(&stdout)
                .trim()
                .parse()
                .map_err(|_| format!("host {} answered no start time", self.name()));
        }
        // The host's own words: its last line, without control characters.
        let said: String = last_words(&String::from_utf8_lossy(&stderr))
            .unwrap_or_else(|| status.to_string())
            .chars()
            .filter(|c| !c.is_control())
            .collect();
        Err(format!("host {} could not start it: {said}", self.name()))
    }
}

/// Logs here what the host's muxgate warned of while it started workspace `name` (a bound it
/// cannot set up there, say): the operator reads the gateway's log, not the host's.
fn relay_warnings(host: &str, name: &WorkspaceName, stderr: &[u8]) {
    let text = String::from_utf8_lossy(stderr);
    for line in text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .take(RELAYED_LINES)
    {
        let said: String = line.chars().filter(|c| !c.is_control()).collect();
        tracing::warn!(host, workspace = %name, said, "the host warned as it started a workspace");
    }
}
