//! tmux `wait-for` channels: names, and waiting on one without blocking anyone else.
//!
//! `wait-for CHANNEL` blocks the tmux client that issues it until another client runs
//! `wait-for -S CHANNEL` (tmux remembers a signal nobody waited for, and the next wait returns
//! at once). On the engine's shared control connection a wait would hold up every command
//! queued behind it, so each wait gets a connection of its own: one `tmux -C wait-for` client,
//! started for the wait and killed when the wait ends for any reason (signal, timeout,
//! cancellation — the child is killed on drop, and a remote one leaves when its input closes). This is the one place a waiting tool starts a
//! process: control mode has no non-blocking form of `wait-for`. Signalling goes through the
//! engine like any command (`wait-for -S` does not block). [`TmuxChannels`] does both for one
//! owner's channels on one server, and owns the command lines.
//!
//! A `wait-for` client whose server is killed exits 0 without a word, exactly like a signalled
//! one (tmux 3.3a): the caller must check that the server is still the same one before calling
//! it a signal (the `wait_for_channel` tool compares the server's pid and start time). A client
//! that fails to reach its server exits non-zero with tmux's message.

use std::path::Path;

use muxgate_mux::child_process;

use crate::client::remote::LinkDown;
use crate::client::spawn::{TmuxEndpoint, tmux_command};
use crate::typed::op_error::OpError;
use crate::{Caller, QuoteError, TmuxCommand, TmuxServer};

/// Longest channel name accepted.
const MAX_CHANNEL_LEN: usize = 128;

/// A channel name from a client: 1–128 of `A-Z a-z 0-9 _ . : -`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelName(String);

/// Why a channel name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelNameError {
    /// The name is empty.
    #[error("a channel name must not be empty")]
    Empty,
    /// The name is longer than 128 bytes.
    #[error("a channel name has at most {MAX_CHANNEL_LEN} characters")]
    TooLong,
    /// The name holds a character outside `A-Z a-z 0-9 _ . : -`; the first such.
    #[error("a channel name may contain only letters, digits and _ . : - (found {0:?})")]
    BadCharacter(char),
}

impl ChannelName {
    /// Checks `name` and takes it as a channel name.
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

    /// The name as the client gave it (tmux knows it by [`Self::in_tmux`]).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl ChannelName {
    /// The channel tmux sees. On a server shared by several clients each client's channels
    /// are its own (`muxgate_<client tag>_<name>`), so one cannot signal or consume another's;
    /// on a server of one tenant (`owner: None`) the name is used as it is.
    pub fn in_tmux(&self, owner: Option<&str>) -> String {
        format!("{}{}", Self::prefix(owner), self.0)
    }

    /// What [`Self::in_tmux`] puts before every name of `owner`.
    pub fn prefix(owner: Option<&str>) -> String {
        match owner {
            Some(owner) => format!("muxgate_{}_", crate::ops::client_tag(owner)),
            None => String::new(),
        }
    }
}

/// Why a channel wait ended without a signal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelWaitError {
    /// The `tmux wait-for` client could not be started; the OS error.
    #[error("could not start tmux ({0})")]
    Spawn(String),
    /// The `tmux wait-for` client exited with an error (it could not reach its server); tmux's
    /// message, or its exit status when tmux said nothing.
    #[error("the tmux server went away during the wait: {0}")]
    ServerGone(String),
    /// The server is on another machine, and the link to it is down.
    #[error(transparent)]
    LinkDown(#[from] LinkDown),
}

/// `wait-for -S`: `channel` after `--`, so a name starting with `-` is not an option.
fn signal_command(channel: &str) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("wait-for")
        .flag("-S")
        .end_of_options()
        .arg(channel)
        .build()
}

/// One owner's `wait-for` channels on one tmux server, signalled as `caller` (the engine's
/// fairness key). Every name is taken through [`ChannelName::in_tmux`] for the owner given at
/// construction, so nothing here reaches another owner's channels.
#[derive(Clone)]
pub struct TmuxChannels {
    server: TmuxServer,
    caller: Caller,
    /// Whose channels they are (`None`: the server has one tenant).
    owner: Option<String>,
}

impl TmuxChannels {
    /// The channels of `owner` (`None`: the server has one tenant) on `server`, signalled as
    /// `caller`.
    pub fn new(server: TmuxServer, caller: Caller, owner: Option<String>) -> Self {
        Self {
            server,
            caller,
            owner,
        }
    }

    /// The name tmux knows `channel` by: what a script in a pane signals.
    pub fn in_tmux(&self, channel: &ChannelName) -> String {
        channel.in_tmux(self.owner.as_deref())
    }

    /// Signals `channel`; tmux remembers it when nobody waits yet.
    pub async fn signal(&self, channel: &ChannelName) -> Result<(), OpError> {
        let command = signal_command(&self.in_tmux(channel))?;
        self.server.run(&self.caller, command).await?;
        Ok(())
    }

    /// Waits until `channel` is signalled, or the server dies (see the module docs); started
    /// with the tmux at `tmux_bin`. Dropping the future kills the waiting client, so timeouts
    /// and cancellation are the caller's `select!`.
    pub async fn wait(
        &self,
        tmux_bin: &Path,
        channel: &ChannelName,
    ) -> Result<(), ChannelWaitError> {
        wait_for_signal(tmux_bin, self.server.endpoint(), &self.in_tmux(channel)).await
    }
}

/// Waits until `channel` (as tmux names it, see [`ChannelName::in_tmux`]) is signalled on the
/// server at `endpoint`, or the server dies.
///
/// The client runs in control mode with its standard input held open: it leaves when the
/// wait is over, and also when its input closes. Dropping this future kills the local child;
/// for a server on another host that child is the link's channel, whose closing is the remote
/// client's end of input, so no `wait-for` outlives its wait on the host either.
async fn wait_for_signal(
    tmux_bin: &Path,
    endpoint: &TmuxEndpoint,
    channel: &str,
) -> Result<(), ChannelWaitError> {
    let mut command = tmux_command(tmux_bin, endpoint, ["-C", "wait-for", "--", channel])?;
    command.stdin(std::process::Stdio::piped());
    let mut child = command
        .spawn()
        .map_err(|e| ChannelWaitError::Spawn(e.to_string()))?;
    let _input = child.stdin.take();
    // A control client may be told of other sessions' changes while it waits: only the tail
    // of what it says is kept.
    let (status, said, complaint) = child_process::bounded_output(child, TAIL_BYTES)
        .await
        .map_err(|e| ChannelWaitError::Spawn(e.to_string()))?;
    let (said, complaint) = (
        String::from_utf8_lossy(&said),
        String::from_utf8_lossy(&complaint),
    );
    let refused = said.lines().find_map(|line| line.strip_prefix("%error"));
    if status.success() && refused.is_none() {
        return Ok(());
    }
    let complaint = complaint.trim();
    Err(ChannelWaitError::ServerGone(if !complaint.is_empty() {
        complaint.chars().take(200).collect()
    } else {
        format!("tmux exited with {status}")
    }))
}

/// The most of a waiting client's output kept.
const TAIL_BYTES: usize = 8192;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_is_one_quoted_command() {
        assert_eq!(
            signal_command("muxgate_0123456789abcdef_build.done")
                .unwrap()
                .text(),
            "wait-for -S -- 'muxgate_0123456789abcdef_build.done'"
        );
        assert_eq!(signal_command("-x").unwrap().text(), "wait-for -S -- '-x'");
    }

    #[test]
    fn channels_of_a_shared_server_are_each_clients_own() {
        let name = ChannelName::parse("build.done").unwrap();
        assert_eq!(name.in_tmux(None), "build.done");
        let alice = name.in_tmux(Some("alice"));
        let bob = name.in_tmux(Some("bob"));
        assert!(
            alice.starts_with("muxgate_") && alice.ends_with("_build.done"),
            "{alice}"
        );
        assert_ne!(alice, bob);
        assert_eq!(alice, name.in_tmux(Some("alice")), "stable");
    }

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
