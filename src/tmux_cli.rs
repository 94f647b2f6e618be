//! One-shot `tmux` subprocesses for diagnostics: is tmux installed, is a server running, which
//! clients does it have.
//!
//! Used by `muxgate doctor`, a one-shot command where a process per check is the simplest
//! honest probe. Not for tool calls or `/readyz`: those go through the engine (one persistent
//! connection per server instead of a process per command).
//!
//! Every command runs with a timeout, is killed when dropped, and has `TMUX` removed from its
//! environment so that a gateway started inside tmux still addresses the configured socket.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::config::TmuxSocket;
use muxgate_tmux::client::connection::is_absent_message;
use muxgate_tmux::output::watch_session::is_watch_session;

/// How long one diagnostic tmux command may take.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Why a tmux command did not give an answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CliError {
    #[error("cannot run tmux: {0}")]
    Spawn(String),
    #[error("tmux did not answer within {0:?}")]
    Timeout(Duration),
    /// tmux ran and failed; its stderr.
    #[error("{0}")]
    Failed(String),
}

/// Runs `tmux <socket args> <args>` and returns its stdout.
pub(crate) async fn run(
    socket: &TmuxSocket,
    args: &[&str],
    timeout: Duration,
) -> Result<String, CliError> {
    let mut command = Command::new("tmux");
    command
        .args(socket.args())
        .args(args)
        .env_remove("TMUX")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(timeout, command.output())
        .await
        .map_err(|_| CliError::Timeout(timeout))?
        .map_err(|e| CliError::Spawn(e.to_string()))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        Err(CliError::Failed(if stderr.is_empty() {
            format!("tmux exited with {}", output.status)
        } else {
            stderr
        }))
    }
}

/// The tmux found on `PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TmuxBinary {
    pub path: PathBuf,
    /// `tmux -V` output, e.g. `tmux 3.3a`.
    pub version: String,
}

/// Finds tmux on `PATH` and asks its version.
pub(crate) async fn find_tmux() -> Result<TmuxBinary, CliError> {
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let path = find_in_path(&path_var, "tmux")
        .ok_or_else(|| CliError::Spawn("tmux is not on PATH".into()))?;
    let version = run(&TmuxSocket::Default, &["-V"], PROBE_TIMEOUT).await?;
    Ok(TmuxBinary {
        path,
        version: version.trim().to_owned(),
    })
}

fn find_in_path(path_var: &OsString, program: &str) -> Option<PathBuf> {
    std::env::split_paths(path_var)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What a probe found at a socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ServerProbe {
    Running {
        sessions: usize,
    },
    /// No server is running there.
    Absent,
    Unreachable(String),
}

/// Asks the server at `socket` for its sessions (the gateway's watch session not counted).
pub(crate) async fn probe_server(socket: &TmuxSocket, timeout: Duration) -> ServerProbe {
    match run(socket, &["list-sessions", "-F", "#{session_name}"], timeout).await {
        Ok(out) => ServerProbe::Running {
            sessions: out
                .lines()
                .filter(|l| !l.is_empty() && !is_watch_session(l))
                .count(),
        },
        Err(CliError::Failed(stderr)) if is_absent_message(&stderr) => ServerProbe::Absent,
        Err(err) => ServerProbe::Unreachable(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_servers_are_told_apart_from_failures() {
        assert!(is_absent_message(
            "no server running on /tmp/tmux-1000/default"
        ));
        assert!(is_absent_message(
            "error connecting to /tmp/tmux-1000/x (No such file or directory)"
        ));
        assert!(is_absent_message(
            "error connecting to /tmp/tmux-1000/x (Connection refused)"
        ));
        assert!(!is_absent_message(
            "error connecting to /tmp/tmux-1000/x (Permission denied)"
        ));
        assert!(!is_absent_message("server exited unexpectedly"));
    }

    #[test]
    fn programs_are_found_on_path_only_if_executable() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("prog");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        let path_var: OsString = dir.path().as_os_str().to_owned();
        assert_eq!(find_in_path(&path_var, "prog"), None);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(find_in_path(&path_var, "prog"), Some(exe));
        assert_eq!(find_in_path(&path_var, "other"), None);
    }
}
