//! Errors of the Zellij backend, worded so that a model can act on them.
//!
//! Each message names the target and what is wrong with it, in terms of Zellij alone: which call
//! to make next is the tool layer's to say (the gateway's Zellij access adds a suggestion per
//! kind), so the backend knows nothing of MCP tools.

use std::path::PathBuf;
use std::time::Duration;

use muxgate_mux::error::{BackendError, ErrorKind, Unsupported};

use super::ids::{InvalidId, PaneId, SessionName, TabId};
use super::listing::ParseError;

/// Everything that can go wrong in the Zellij backend.
#[derive(Debug, thiserror::Error)]
pub enum ZellijError {
    /// The `zellij` binary could not be started.
    #[error(
        "cannot run zellij at {binary}: {source} (install it with scripts/install-zellij or set the binary path in the config)"
    )]
    NotInstalled {
        /// The binary the configuration names.
        binary: PathBuf,
        /// Why it could not be started.
        source: std::io::Error,
    },

    /// The binary ran but is older than the oldest supported release.
    #[error("zellij {found} is too old; muxgate needs zellij 0.44 or newer")]
    UnsupportedVersion {
        /// The version it reported.
        found: String,
    },

    /// A client-supplied identifier was malformed.
    #[error(transparent)]
    InvalidId(#[from] InvalidId),

    /// An act or option Zellij does not offer was asked for.
    #[error(transparent)]
    Unsupported(#[from] Unsupported),

    /// A client-supplied argument was refused before anything ran.
    #[error("invalid {what}: {reason}")]
    InvalidArgument {
        /// The argument, as the caller names it.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// The session does not exist (or exited).
    #[error("no session {session}")]
    NoSuchSession {
        /// The session named.
        session: SessionName,
    },

    /// A session of that name already exists.
    #[error("session {session} already exists")]
    SessionExists {
        /// The name asked for.
        session: SessionName,
    },

    /// The pane is not in the session.
    #[error("no pane {pane} in session {session}")]
    NoSuchPane {
        /// The session looked in.
        session: SessionName,
        /// The pane named.
        pane: PaneId,
    },

    /// The tab is not in the session.
    #[error("no tab {tab} in session {session}")]
    NoSuchTab {
        /// The session looked in.
        session: SessionName,
        /// The tab named.
        tab: TabId,
    },

    /// The operation does not apply to this kind of pane (e.g. typing into a plugin pane).
    #[error("pane {pane} in session {session} {reason}")]
    WrongPaneKind {
        /// The pane's session.
        session: SessionName,
        /// The pane.
        pane: PaneId,
        /// What the pane is, as the rest of a sentence ("is a plugin pane").
        reason: &'static str,
    },

    /// Closing this would end the session, which the caller did not ask for.
    #[error(
        "refusing to close the last {what} of session {session}: that would end the session (kill the session instead)"
    )]
    WouldEndSession {
        /// The session.
        session: SessionName,
        /// What was to close (`tab`, `pane`).
        what: &'static str,
    },

    /// A `zellij` process exited unsuccessfully.
    #[error("`zellij {command}` failed (exit {status}): {stderr}")]
    CommandFailed {
        /// The command (`action list-panes`).
        command: String,
        /// How it exited (`3`, `signal 9`).
        status: String,
        /// The first lines of what it printed on its standard error.
        stderr: String,
    },

    /// Zellij accepted an action but the session does not show its effect.
    #[error("zellij did not {what} in session {session}: {detail}")]
    NoEffect {
        /// The session.
        session: SessionName,
        /// What did not happen, as a verb phrase ("show the command's whole output").
        what: &'static str,
        /// What the session shows instead.
        detail: String,
    },

    /// A step did not finish in time. Nothing is left running on muxgate's side.
    #[error("{what} timed out after {} ms", after.as_millis())]
    Timeout {
        /// The step.
        what: String,
        /// How long it was given.
        after: Duration,
    },

    /// Too many operations are waiting for this session.
    #[error("session {session} is busy ({capacity} operations queued); retry shortly")]
    Busy {
        /// The session.
        session: SessionName,
        /// How many operations its queue holds.
        capacity: usize,
    },

    /// A stream of pane events ended before the wait was satisfied.
    #[error("watching pane {pane} in session {session} ended: {reason}")]
    WatchEnded {
        /// The pane's session.
        session: SessionName,
        /// The pane watched.
        pane: PaneId,
        /// Why it ended ([`PANE_CLOSED`] when the pane closed).
        reason: String,
    },

    /// A step of an input batch failed; the steps before it were delivered, none after.
    #[error(
        "step {step} of the batch failed ({step} earlier steps were delivered, none after): {source}"
    )]
    BatchStep {
        /// The failed step's index, from 0 (also the number of steps delivered).
        step: usize,
        /// Why it failed.
        source: Box<ZellijError>,
    },

    /// Output larger than the configured cap.
    #[error("output of `zellij {command}` exceeds {limit} bytes")]
    OutputTooLarge {
        /// The command.
        command: String,
        /// The cap, in bytes.
        limit: usize,
    },

    /// Zellij's answer could not be read.
    #[error(transparent)]
    Parse(#[from] ParseError),

    /// An I/O error talking to a `zellij` child process.
    #[error("I/O error with `zellij {command}`: {source}")]
    Io {
        /// The command.
        command: String,
        /// The error.
        source: std::io::Error,
    },
}

/// The reason of a [`ZellijError::WatchEnded`] when the pane closed.
pub const PANE_CLOSED: &str = "the pane closed";

impl ZellijError {
    /// Whether a wait ended because its pane closed.
    pub fn is_pane_closed(&self) -> bool {
        matches!(self, Self::WatchEnded { reason, .. } if reason == PANE_CLOSED)
    }
}

/// Result alias of the Zellij backend.
pub type Result<T, E = ZellijError> = std::result::Result<T, E>;

impl BackendError for ZellijError {
    fn kind(&self) -> ErrorKind {
        use ZellijError as E;
        match self {
            E::BatchStep { source, .. } => source.kind(),
            // An operator's matter (install or upgrade zellij), not the caller's.
            E::NotInstalled { .. } | E::UnsupportedVersion { .. } | E::Io { .. } => {
                ErrorKind::Unavailable
            }
            E::Unsupported(_) => ErrorKind::Unsupported,
            E::InvalidId(_) | E::InvalidArgument { .. } => ErrorKind::InvalidInput,
            E::NoSuchSession { .. } | E::NoSuchPane { .. } | E::NoSuchTab { .. } => {
                ErrorKind::NotFound
            }
            E::SessionExists { .. }
            | E::WrongPaneKind { .. }
            | E::WouldEndSession { .. }
            | E::CommandFailed { .. }
            | E::NoEffect { .. }
            | E::WatchEnded { .. }
            | E::OutputTooLarge { .. } => ErrorKind::Conflict,
            E::Timeout { .. } => ErrorKind::Timeout,
            E::Busy { .. } => ErrorKind::Busy,
            E::Parse(_) => ErrorKind::Internal,
        }
    }
}
