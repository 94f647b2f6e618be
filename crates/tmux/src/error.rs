//! Why the engine could not run a command: the one error every caller of a server sees.

use std::time::Duration;

use crate::client::connection::ConnectError;
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
    /// A short, stable name of the variant (for metrics and trace attributes).
    pub fn kind(&self) -> &'static str {
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
