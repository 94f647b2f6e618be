//! Other machines whose tmux servers the gateway drives: `[hosts.<name>]`, one SSH connection
//! each, every control client of the host a channel on it.
//!
//! - [`config`]: a host as configured, and the names its servers get (`build-1`,
//!   `build-1/ci`);
//! - [`ssh_args`]: the `ssh` command lines of a link (the master and its clients);
//! - [`link`]: a host's link kept up with bounded back-off, and its state, which every call to
//!   the host asks first;
//! - [`dial_in`]: hosts that dial in over a WebSocket (`muxgate host connect`, whose end is
//!   [`connect`]), their links carried through it;
//! - [`probe`]: what tmux does not tell about a host's panes (their foreground processes,
//!   their terminals' modes), read there by `muxgate host-probe` over a channel of the link;
//! - [`gate`]: on the host, the forced command of the gateway's key (`muxgate host-gate`),
//!   which runs tmux and the probe as the gateway starts them and nothing else.
//!
//! The SSH implementation is OpenSSH's client, one master (`ControlMaster`) per host: its key
//! exchange, host-key checking and `known_hosts` handling are the ones operators already audit
//! and configure, and each control client is a channel on the master's connection, started
//! like a local tmux client (a child process whose pipes the engine already reads, bounded),
//! so a remote server needs nothing new from the engine. What [`Hosts`] adds is the master's
//! life: started at the gateway's start, restarted when it ends, stopped at shutdown.

pub mod config;
pub mod connect;
pub mod dial_in;
pub mod gate;
pub(crate) mod link;
mod link_news;
pub(crate) mod probe;
pub(crate) mod ssh_args;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use muxgate_mux::child_process;
use muxgate_tmux::client::remote::shell_word;
use muxgate_tmux::{ClientLaunch, RemoteHost, TmuxEndpoint};

use config::HostConfig;
use dial_in::DialIns;
use link::{HostLink, MasterCommand};
use probe::remote::RemoteProcesses;

/// The program every link runs.
const SSH_PROGRAM: &str = "ssh";

/// Logins under way at once, over every host.
const CONCURRENT_LOGINS: usize = 8;

/// The configured hosts' links, each kept up by its own task until [`Hosts::close`].
pub struct Hosts {
    links: BTreeMap<String, Arc<HostLink>>,
    /// How each host is reached, by the host's name.
    remotes: BTreeMap<String, Arc<RemoteHost>>,
    /// The host of each remote server, by the server's name.
    servers: BTreeMap<String, String>,
    endpoints: Vec<(String, TmuxEndpoint)>,
    /// The hosts that dial in, and the WebSocket each keeps waiting.
    dial_ins: Arc<DialIns>,
    /// Shared by the links' keepers ([`CONCURRENT_LOGINS`]).
    logins: Arc<tokio::sync::Semaphore>,
    /// The directory of the masters' control sockets (none without hosts).
    sockets: Option<PathBuf>,
    stop: CancellationToken,
}

/// A host that cannot be started as configured: the key (`hosts.build-1.identity_file`) and
/// why.
#[derive(Debug, thiserror::Error)]
#[error("{key}: {message}")]
pub struct HostError {
    /// The configuration key at fault.
    pub key: String,
    /// What is wrong with it.
    pub message: String,
}

impl Hosts {
    /// Checks the files each host names, then starts its link.
    pub(crate) fn start(hosts: &BTreeMap<String, HostConfig>) -> Result<Self, HostError> {
        for (name, host) in hosts {
            preflight(name, host)?;
        }
        let stop = CancellationToken::new();
        let sockets = if hosts.is_empty() {
            None
        } else {
            Some(socket_dir().map_err(|e| HostError {
                key: "hosts".into(),
                message: format!("cannot make a private directory for the links' sockets: {e}"),
            })?)
        };
        let mut dial_ins = DialIns::default();
        for (name, _) in hosts.iter().filter(|(_, host)| host.dial_in) {
            dial_ins.add(name);
        }
        let mut started = Self {
            dial_ins: Arc::new(dial_ins),
            links: BTreeMap::new(),
            remotes: BTreeMap::new(),
            servers: BTreeMap::new(),
            endpoints: Vec::new(),
            logins: Arc::new(tokio::sync::Semaphore::new(CONCURRENT_LOGINS)),
            sockets: sockets.clone(),
            stop,
        };
        for (index, (name, host)) in hosts.iter().enumerate() {
            let Some(dir) = &sockets else { break };
            // Numbered, not named: a socket path has room for about 100 bytes, and ssh adds a
            // suffix of its own while it sets the socket up.
            started.add(name, host, dir, &index.to_string())?;
        }
        Ok(started)
    }

    /// Starts host `name`'s link, its sockets in `dir` named after `id`.
    fn add(
        &mut self,
        name: &str,
        host: &HostConfig,
        dir: &Path,
        id: &str,
    ) -> Result<(), HostError> {
        let link = Arc::new(HostLink::new(name));
        let control = dir.join(id);
        let args = ssh_args::client(host, &control);
        let processes = RemoteProcesses::new(
            name,
            SSH_PROGRAM.into(),
            args.clone(),
            &host.muxgate,
            link.clone(),
        );
        let remote = Arc::new(RemoteHost {
            name: name.into(),
            program: SSH_PROGRAM.into(),
            args,
            tmux: vec![host.tmux.clone()],
            link: link.clone(),
            processes: Arc::new(processes),
        });
        for (server, socket) in host.server_names(name) {
            self.servers.insert(server.clone(), name.to_owned());
            self.endpoints.push((
                server,
                TmuxEndpoint {
                    socket,
                    launch: ClientLaunch::Remote(remote.clone()),
                },
            ));
        }
        let dial_in = self.dial_ins.get(name);
        let proxy = match &dial_in {
            Some(dial_in) => {
                let relay = dir.join(format!("{id}.relay"));
                let listener = tokio::net::UnixListener::bind(&relay).map_err(|e| HostError {
                    key: format!("hosts.{name}.dial_in"),
                    message: format!("cannot listen on {}: {e}", relay.display()),
                })?;
                tokio::spawn(dial_in::relay(dial_in.clone(), listener, self.stop.clone()));
                Some(dial_in::proxy_command(&relay))
            }
            None => None,
        };
        let master = MasterCommand {
            logins: self.logins.clone(),
            program: SSH_PROGRAM.into(),
            host: host.clone(),
            control,
            proxy,
            dial_in,
        };
        tokio::spawn(link::keep_up(link.clone(), master, self.stop.clone()));
        self.links.insert(name.to_owned(), link);
        self.remotes.insert(name.to_owned(), remote);
        Ok(())
    }

    /// Tells `notifier` when a host's link goes down and comes back ([`link_news`]).
    pub(crate) fn tell_link_edges(&self, notifier: &crate::notify::Notifier) {
        for link in self.links.values() {
            tokio::spawn(link_news::tell(
                link.clone(),
                notifier.clone(),
                self.stop.clone(),
            ));
        }
    }

    /// The hosts that dial in.
    pub(crate) fn dial_ins(&self) -> &Arc<DialIns> {
        &self.dial_ins
    }

    /// The hosts' servers, for the engine: each name and how it is reached.
    pub(crate) fn endpoints(&self) -> impl Iterator<Item = (String, TmuxEndpoint)> + '_ {
        self.endpoints.iter().cloned()
    }

    /// How host `name` is reached: its link and its client command.
    pub(crate) fn remote(&self, name: &str) -> Option<&Arc<RemoteHost>> {
        self.remotes.get(name)
    }

    /// The host server `server` runs on; `None` for a server of this machine.
    pub(crate) fn host_of(&self, server: &str) -> Option<&str> {
        self.servers.get(server).map(String::as_str)
    }

    /// The link of the host a server runs on; `None` for a server of this machine.
    pub(crate) fn link_of(&self, server: &str) -> Option<&Arc<HostLink>> {
        self.links.get(self.servers.get(server)?)
    }

    /// Every host's link, in name order.
    pub(crate) fn links(&self) -> impl Iterator<Item = &Arc<HostLink>> {
        self.links.values()
    }

    /// Stops every link (their channels close with them) and removes the sockets' directory.
    pub(crate) fn close(&self) {
        self.stop.cancel();
        if let Some(dir) = &self.sockets {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// What `muxgate doctor` finds of a host: its files, then one login of its own (exactly as
/// the link logs in) that asks the host's tmux for its version. `Ok`: that version.
pub(crate) async fn check(name: &str, host: &HostConfig) -> Result<String, String> {
    preflight(name, host).map_err(|e| e.to_string())?;
    let version = run_once(host, &format!("{} -V", shell_word(&host.tmux))).await?;
    Ok(version
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(64)
        .collect())
}

/// The files host `name` names, for `muxgate doctor` where it cannot log in itself (a host that
/// dials in).
pub(crate) fn check_files(name: &str, host: &HostConfig) -> Result<(), String> {
    preflight(name, host).map_err(|e| e.to_string())
}

/// Whether the host runs its process probe (`muxgate host-probe`, asked nothing): one more
/// login of `muxgate doctor`'s, after [`check`] found the host reachable.
pub(crate) async fn check_probe(host: &HostConfig) -> Result<(), String> {
    run_once(host, &format!("{} host-probe", shell_word(&host.muxgate)))
        .await
        .map(drop)
}

/// Runs the command `line` on the host in a login of its own, with no input; what it printed
/// when it succeeded, else why it did not.
async fn run_once(host: &HostConfig, line: &str) -> Result<String, String> {
    let mut command = ssh_args::process(SSH_PROGRAM.as_ref(), ssh_args::probe(host));
    command
        .arg("--")
        .arg(line)
        .stdin(std::process::Stdio::null());
    let limit = host.connect_timeout() + std::time::Duration::from_secs(5);
    let child = command
        .spawn()
        .map_err(|e| format!("cannot run {SSH_PROGRAM}: {e}"))?;
    // The host answers: what it prints is read within a bound.
    let (status, stdout, stderr) =
        match tokio::time::timeout(limit, child_process::bounded_output(child, 4096)).await {
            Ok(Ok(output)) => output,
            Ok(Err(error)) => return Err(format!("cannot run {SSH_PROGRAM}: {error}")),
            Err(_) => return Err(format!("no answer within {limit:?}")),
        };
    if status.success() {
        return Ok(String::from_utf8_lossy(&stdout).into_owned());
    }
    let said = link::last_words(&String::from_utf8_lossy(&stderr))
        .unwrap_or_else(|| format!("ssh exited with {status}"));
    Err(if said.contains("Host key verification failed") {
        format!(
            "{said} The host's key is not the one {} lists; nothing was sent to it",
            host.known_hosts.display()
        )
    } else if said.contains("Permission denied") {
        format!(
            "{said} The host does not accept {}",
            host.identity_file.display()
        )
    } else {
        said
    })
}

impl Drop for Hosts {
    /// A gateway that fails to start after its hosts did leaves no link behind.
    fn drop(&mut self) {
        self.close();
    }
}

/// The files a host names must be there before its link is tried: a missing key or
/// `known_hosts` is the operator's to fix, not a link failure to retry forever.
fn preflight(name: &str, host: &HostConfig) -> Result<(), HostError> {
    let key = |field: &str| format!("hosts.{name}.{field}");
    if let Err(error) = std::fs::File::open(&host.identity_file) {
        return Err(HostError {
            key: key("identity_file"),
            message: format!("cannot read {}: {error}", host.identity_file.display()),
        });
    }
    match std::fs::File::open(&host.known_hosts) {
        Ok(_) => Ok(()),
        // Trust on first use records the host's key: the file may be made then.
        Err(error) if host.trust_on_first_use && error.kind() == std::io::ErrorKind::NotFound => {
            Ok(())
        }
        Err(error) => Err(HostError {
            key: key("known_hosts"),
            message: format!(
                "cannot read {}: {error} (list the host's keys there, e.g. with \
                 `ssh-keyscan -p PORT HOST`; a key not listed is refused)",
                host.known_hosts.display()
            ),
        }),
    }
}

/// A new private directory for the masters' control sockets, short enough for a socket path.
fn socket_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::env::temp_dir().join(format!(
        "muxgate-links-{}",
        hex::encode(rand::random::<[u8; 6]>())
    ));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}
