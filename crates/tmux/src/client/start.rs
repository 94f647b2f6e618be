//! Starting a tmux server: the one case where muxgate runs tmux as a one-shot subprocess on a
//! tool's behalf.
//!
//! A control-mode client can only exist attached to a session, so when no server runs on a
//! socket (or it runs with no session) the engine cannot reach it at all, and the first session
//! must be created by a plain `tmux new-session -d …` client, which starts the server. Everything
//! else, including every later command on that server, goes through the engine.
//!
//! The child is spawned like every tmux child ([`crate::client::spawn::tmux_command`]: `PDEATHSIG`,
//! only [`crate::client::spawn::INHERITED_ENV`] of muxgate's environment — a server copies its starting
//! client's environment into its global environment, which every pane inherits — inside the
//! server's wrapper if any, killed when dropped), with one further rule: tmux reads a command
//! list from its argv, where an argument *ending* in `;` separates commands. [`argv_value`]
//! keeps such a value literal.
//!
//! The server started this way reads the user's tmux configuration like any tmux server.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use muxgate_mux::child_process;

use crate::client::remote::LinkDown;
use crate::client::spawn::{TmuxEndpoint, tmux_command};

/// Why the server could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    /// tmux could not be started.
    #[error("cannot run {bin}: {error}")]
    Spawn {
        /// The tmux binary.
        bin: String,
        /// Why it could not be started.
        error: String,
    },
    /// tmux did not finish within the timeout (held here).
    #[error("tmux did not finish within {0:?}")]
    Timeout(Duration),
    /// tmux ran and refused; its message.
    #[error("tmux: {0}")]
    Failed(String),
    /// The server is on another machine, and the link to it is down.
    #[error(transparent)]
    LinkDown(#[from] LinkDown),
}

/// One argv argument for tmux's argv command parser: a value ending in `;` gets a backslash
/// before that `;`, which the parser removes, so the value arrives unchanged.
pub fn argv_value(value: &str) -> OsString {
    match value.strip_suffix(';') {
        Some(head) => format!("{head}\\;").into(),
        None => value.into(),
    }
}

/// The separator between two commands of an argv command list.
pub const ARGV_SEPARATOR: &str = ";";

/// The most of a starting client's output read (its answer is one line of ids).
const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// Runs `tmux <socket> <args>` once (a command list that starts the server, e.g.
/// `new-session -d …`) and returns its standard output.
pub async fn run_starting_server(
    tmux_bin: &Path,
    endpoint: &TmuxEndpoint,
    args: Vec<OsString>,
    timeout: Duration,
) -> Result<String, StartError> {
    let mut command = tmux_command(tmux_bin, endpoint, args)?;
    let spawn_error = |e: std::io::Error| StartError::Spawn {
        bin: tmux_bin.display().to_string(),
        error: e.to_string(),
    };
    let child = command.spawn().map_err(spawn_error)?;
    // The server may be on another machine: what its client prints is read within a bound.
    let (status, stdout, stderr) = tokio::time::timeout(
        timeout,
        child_process::bounded_output(child, MAX_OUTPUT_BYTES),
    )
    .await
    .map_err(|_| StartError::Timeout(timeout))?
    .map_err(spawn_error)?;
    if status.success() {
        Ok(String::from_utf8_lossy(&stdout).into_owned())
    } else {
        let stderr = String::from_utf8_lossy(&stderr).trim().to_owned();
        Err(StartError::Failed(if stderr.is_empty() {
            format!("tmux exited with {status}")
        } else {
            stderr
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_ending_in_a_semicolon_stay_literal() {
        assert_eq!(argv_value("plain"), OsString::from("plain"));
        assert_eq!(argv_value("a;b"), OsString::from("a;b"));
        assert_eq!(argv_value("end;"), OsString::from("end\\;"));
        assert_eq!(argv_value("esc\\;"), OsString::from("esc\\\\;"));
        assert_eq!(argv_value(";"), OsString::from("\\;"));
    }
}
