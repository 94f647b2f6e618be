//! Why the engine could not run a command: the one error every caller of a server sees.

use std::time::Duration;

use muxgate_mux::error::{BackendError, ErrorKind};

use crate::client::connection::ConnectError;
use crate::client::worker::REPLY_OVER_BUDGET;
use crate::wire::quote::QuoteError;

/// Which queue was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueScope {
    /// The server's whole queue.
    Server,
    /// The caller's share of it.
    Caller,
}

/// Why the engine could not run a command.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EngineError {
    /// No connection to the server could be made.
    #[error("tmux server {server:?} is not available: {cause}")]
    Unavailable {
        /// The server's configured name.
        server: String,
        /// Why no connection could be made.
        cause: ConnectError,
    },
    /// The connection closed after tmux started the command: it may or may not have run.
    #[error(
        "the connection to tmux server {server:?} closed while the command was running; it may or may not have run"
    )]
    ConnectionLost {
        /// The server's configured name.
        server: String,
    },
    /// The server did not answer before the caller's deadline.
    #[error("tmux server {server:?} did not answer in time")]
    Timeout {
        /// The server's configured name.
        server: String,
        /// How long the caller waited.
        after: Duration,
    },
    /// The server's command queue, or the caller's share of it, is full.
    #[error("tmux server {server:?} is busy: {} queue is full, retry shortly", match .scope { QueueScope::Server => "its", QueueScope::Caller => "your share of its" })]
    QueueFull {
        /// The server's configured name.
        server: String,
        /// Which queue is full.
        scope: QueueScope,
    },
    /// Watching one more session would pass the server's cap on watched sessions or the
    /// caller's share of it.
    #[error("tmux server {server:?} already has {limit} watched sessions ({})", match .scope { QueueScope::Server => "engine.max_watched_sessions", QueueScope::Caller => "your limits.max_watched_sessions" })]
    TooManyWatched {
        /// The server's configured name.
        server: String,
        /// The cap that was reached, in sessions.
        limit: usize,
        /// Whether the server's cap or the caller's share of it is full.
        scope: QueueScope,
    },
    /// tmux refused the command (`%error`), or its reply was larger than the caller's budget
    /// ([`REPLY_OVER_BUDGET`]); the message.
    #[error("tmux: {0}")]
    Command(String),
    /// An argument could not be put on a tmux command line.
    #[error(transparent)]
    Quote(#[from] QuoteError),
    /// The engine is shutting down.
    #[error("muxgate is shutting down")]
    ShuttingDown,
}

impl EngineError {
    /// A short, stable name of the variant (for trace attributes).
    pub fn label(&self) -> &'static str {
        match self {
            Self::Unavailable { .. } => "unavailable",
            Self::ConnectionLost { .. } => "connection_lost",
            Self::Timeout { .. } => "timeout",
            Self::QueueFull { .. } => "queue_full",
            Self::TooManyWatched { .. } => "too_many_watched",
            Self::Command(_) => "tmux_error",
            Self::Quote(_) => "quote",
            Self::ShuttingDown => "shutting_down",
        }
    }
}

impl BackendError for EngineError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::Command(message) if is_missing_target(message) => ErrorKind::NotFound,
            // Not tmux's refusal: the engine did not read a reply over the caller's budget.
            Self::Command(message) if message == REPLY_OVER_BUDGET => ErrorKind::InvalidInput,
            Self::Command(_) => ErrorKind::Conflict,
            Self::Quote(_) => ErrorKind::InvalidInput,
            Self::Unavailable { .. } | Self::ConnectionLost { .. } | Self::ShuttingDown => {
                ErrorKind::Unavailable
            }
            Self::Timeout { .. } => ErrorKind::Timeout,
            Self::QueueFull { .. } | Self::TooManyWatched { .. } => ErrorKind::Busy,
        }
    }
}

/// tmux's wording for a target that does not exist.
fn is_missing_target(message: &str) -> bool {
    ["can't find", "no such", "not found"]
        .iter()
        .any(|needle| message.contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmux_s_refusals_are_told_apart_by_its_wording() {
        let kind = |message: &str| EngineError::Command(message.to_owned()).kind();
        assert_eq!(kind("can't find pane: %99"), ErrorKind::NotFound);
        assert_eq!(kind("no such session: work"), ErrorKind::NotFound);
        assert_eq!(kind(REPLY_OVER_BUDGET), ErrorKind::InvalidInput);
        assert_eq!(kind("size missing"), ErrorKind::Conflict);
        let busy = EngineError::QueueFull {
            server: "default".into(),
            scope: QueueScope::Caller,
        };
        assert_eq!(busy.kind(), ErrorKind::Busy);
        assert_eq!(EngineError::ShuttingDown.kind(), ErrorKind::Unavailable);
    }
}
