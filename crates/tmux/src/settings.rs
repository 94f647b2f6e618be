//! The engine's tunables: the `[engine]` section of the configuration, as the engine takes it.

use std::path::PathBuf;
use std::time::Duration;

/// Engine tunables (the `[engine]` section of the configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSettings {
    /// The tmux binary.
    pub tmux_bin: PathBuf,
    /// How long one command (or one batch) may take before the caller gets a timeout.
    pub command_timeout: Duration,
    /// How long a control client may take to attach.
    pub connect_timeout: Duration,
    /// Commands that may wait to be written, per server.
    pub queue_capacity: usize,
    /// Commands one caller may have waiting, per server, when the caller brings no share of
    /// its own (clients always do: `limits.worker_queue_share`).
    pub per_caller_queue: usize,
    /// Lines written and not yet answered, per server. Small keeps callers fair (a caller's
    /// line waits for at most this many of others'); larger lets more of them share one turn of
    /// tmux's event loop, whose cost grows with the server's sessions.
    pub pipeline_depth: usize,
    /// Output kept per subscribed pane.
    pub output_ring_bytes: usize,
    /// How long a watched window stays linked into the watch session with no subscriber.
    pub output_idle_close: Duration,
    /// tmux drops a pane's output older than this many seconds instead of buffering it.
    pub pause_after_secs: u32,
    /// Wait after a failed connect before spawning another client for the same server.
    pub reconnect_backoff: Duration,
    /// Sessions watched at once (a window of theirs linked into the watch session), per server.
    pub max_watched_sessions: usize,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            tmux_bin: PathBuf::from("tmux"),
            command_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            queue_capacity: 8192,
            per_caller_queue: 2048,
            pipeline_depth: 16,
            output_ring_bytes: 1024 * 1024,
            output_idle_close: Duration::from_secs(30),
            pause_after_secs: 5,
            reconnect_backoff: Duration::from_millis(200),
            max_watched_sessions: 4096,
        }
    }
}
