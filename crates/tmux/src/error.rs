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
    #[error("tmux server {server:?} is not available: {cause}")]
    Unavailable { server: String, cause: ConnectError },
    #[error(
        "the connection to tmux server {server:?} closed while the command was running; it may or may not have run"
    )]
    ConnectionLost { server: String },
    #[error("tmux server {server:?} did not answer in time")]
    Timeout { server: String, after: Duration },
    #[error("tmux server {server:?} is busy: {} queue is full, retry shortly", match .scope { QueueScope::Server => "its", QueueScope::Caller => "your share of its" })]
    QueueFull { server: String, scope: QueueScope },
    #[error("tmux server {server:?} already has {limit} watched sessions ({})", match .scope { QueueScope::Server => "engine.max_watched_sessions", QueueScope::Caller => "your limits.max_watched_sessions" })]
    TooManyWatched {
        server: String,
        limit: usize,
        /// Whether the server's cap or the caller's share of it is full.
        scope: QueueScope,
    },
    #[error("tmux: {0}")]
    Command(String),
    #[error(transparent)]
    Quote(#[from] QuoteError),
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
