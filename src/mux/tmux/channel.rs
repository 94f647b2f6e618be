//! tmux `wait-for` channels: names, and waiting on one without blocking anyone else.
//!
//! `wait-for CHANNEL` blocks the tmux client that issues it until another client runs
//! `wait-for -S CHANNEL` (tmux remembers a signal nobody waited for, and the next wait returns
//! at once). On the engine's shared control connection a wait would hold up every command
//! queued behind it, so each wait gets a connection of its own: one `tmux wait-for` client,
//! started for the wait and killed when the wait ends for any reason (signal, timeout,
//! cancellation — the child is killed on drop). This is the one place a waiting tool starts a
//! process: control mode has no non-blocking form of `wait-for`. Signalling goes through the
//! engine like any command (`wait-for -S` does not block).
//!
//! A `wait-for` client whose server is killed exits 0 without a word, exactly like a signalled
//! one (tmux 3.3a): the caller must check that the server is still the same one before calling
//! it a signal (the `wait_for_channel` tool compares the server's pid). A client that fails to
//! reach its server exits non-zero with tmux's message.

use std::path::Path;

use super::spawn::{TmuxEndpoint, tmux_command};

/// Longest channel name accepted.
const MAX_CHANNEL_LEN: usize = 128;

/// A channel name from a client: 1–128 of `A-Z a-z 0-9 _ . : -`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelName(String);

/// Why a channel name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelNameError {
    #[error("a channel name must not be empty")]
    Empty,
    #[error("a channel name has at most {MAX_CHANNEL_LEN} characters")]
    TooLong,
    #[error("a channel name may contain only letters, digits and _ . : - (found {0:?})")]
    BadCharacter(char),
}

impl ChannelName {
    pub fn parse(name: &str) -> Result<Self, ChannelNameError> {
        if name.is_empty() {
            return Err(ChannelNameError::Empty);
        }
        if name.len() > MAX_CHANNEL_LEN {
            return Err(ChannelNameError::TooLong);
        }
        if let Some(bad) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-')))
        {
            return Err(ChannelNameError::BadCharacter(bad));
        }
        Ok(Self(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a channel wait ended without a signal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelWaitError {
    #[error("could not start tmux ({0})")]
    Spawn(String),
    #[error("the tmux server went away during the wait: {0}")]
    ServerGone(String),
}

/// Waits until `channel` is signalled on the server at `endpoint`, or the server dies (see the
/// module docs). Dropping the future kills the waiting client, so timeouts and cancellation
/// are the caller's `select!`.
pub async fn wait_for_signal(
    tmux_bin: &Path,
    endpoint: &TmuxEndpoint,
    channel: &ChannelName,
) -> Result<(), ChannelWaitError> {
    let mut command = tmux_command(tmux_bin, endpoint);
    command.arg("wait-for").arg(channel.as_str());
    let output = command
        .output()
        .await
        .map_err(|e| ChannelWaitError::Spawn(e.to_string()))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    Err(ChannelWaitError::ServerGone(if stderr.is_empty() {
        format!("tmux exited with {}", output.status)
    } else {
        stderr.chars().take(200).collect()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_names_are_checked() {
        for good in ["build", "r_1.done", "a:b-c", &"x".repeat(128)] {
            assert!(ChannelName::parse(good).is_ok(), "{good}");
        }
        assert_eq!(ChannelName::parse(""), Err(ChannelNameError::Empty));
        assert_eq!(
            ChannelName::parse(&"x".repeat(129)),
            Err(ChannelNameError::TooLong)
        );
        for (bad, c) in [
            ("a b", ' '),
            ("a;b", ';'),
            ("a'b", '\''),
            ("é", 'é'),
            ("#{x}", '#'),
        ] {
            assert_eq!(
                ChannelName::parse(bad),
                Err(ChannelNameError::BadCharacter(c))
            );
        }
    }
}
