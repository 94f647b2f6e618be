//! The tmux control-mode engine.
//!
//! Every tmux server muxgate drives is reached through persistent control-mode clients, never
//! one subprocess per operation. Layers, from the wire up:
//! - [`protocol`]: pure byte-level parser of control-mode output (replies, notifications, output);
//! - [`quote`]: quoting of arguments for control-mode command lines;
//! - [`command`]: typed command lines built from quoted arguments;
//! - [`spawn`]: how tmux children are started (endpoint and wrapper, environment, PDEATHSIG,
//!   marker TERM);
//! - [`connection`]: one `tmux -C` child, its reader task and FIFO reply matching;
//! - [`worker`]: one per server, the serialized, fair, pipelined command queue;
//! - [`latency`]: the worker's command latency histogram, read by the metrics exporter;
//! - [`output`]: per-pane output streams (bounded rings) that waiters subscribe to;
//! - [`monitor`]: per-session output connections feeding those streams;
//! - [`stale`]: finding control clients left behind by a dead muxgate;
//! - [`channel`]: `wait-for` channel names, signals, and waits on a client of their own;
//! - [`claims`]: which panes a programmatic run currently owns;
//! - [`start`]: starting a server that is not running (the one subprocess a tool may need);
//! - [`target`], [`format`]: validated targets as clients name them, and listing rows (pure);
//!   [`target_path`]: tmux's `SESSION:WINDOW.PANE` resolved to an id exactly (pure);
//! - [`format_check`]: the grammar of the tmux formats a client may have tmux expand (pure);
//! - [`ops`]: operations (keys, input, captures, buffers, pipes) as commands and parsers (pure);
//! - [`panes`]: the backend-neutral pane operations ([`muxgate_mux::pane_io::PaneIo`]) for tmux;
//! - [`sessions`], [`windows`], [`pane_lifecycle`]: typed session, window and pane-changing
//!   operations (their command lines and rows), for the tools that act on them; [`pane_row`]:
//!   the full row of a pane they and the pane listings read;
//! - [`copy_mode`], [`since`], [`placement`]: entering and leaving copy mode, a pane's state and
//!   rows read together for `capture_since`, and which windows and sessions hold a pane (the
//!   gateway asks about its own);
//! - [`pane_shape`]: a pane's size and cursor, for the live view and recordings;
//! - [`pane_state`]: a pane's state in one row, read by the tools that wait on a pane, run
//!   commands in it or report on it; [`typing`]: a line and its Enter typed in one write.
//! - [`op_error`]: the error the typed operations share, and a batch's answers read into it;
//! - [`locate`]: where a client's target is (session, window, pane), for access checks;
//!   [`display`]: `display-message` in a pane's context (the snapshot row, a client's format).
//!
//! [`TmuxServer`] ties one server's worker and output hub together; [`TmuxEngine`] holds the
//! configured servers by name.

pub mod buffers;
pub mod channel;
pub mod claims;
pub mod command;
pub mod connection;
pub mod copy_mode;
pub mod display;
pub mod environment;
pub mod format;
pub mod format_check;
pub mod ids;
pub mod latency;
pub mod locate;
pub mod monitor;
pub mod op_error;
pub mod ops;
pub mod options;
pub mod output;
pub mod pane_lifecycle;
pub mod pane_row;
pub mod pane_shape;
pub mod pane_state;
pub mod panes;
pub mod placement;
pub mod protocol;
pub mod quote;
mod router;
pub mod server;
pub mod sessions;
pub mod shared_lines;
pub mod since;
pub mod spawn;
pub mod stale;
pub mod start;
pub mod target;
pub mod target_path;
pub mod typing;
pub mod watch_session;
pub mod windows;
pub mod worker;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use claims::{PaneClaim, PaneClaims};
pub use command::{CommandBuilder, TmuxCommand};
pub use connection::ConnectError;
pub use ids::{PaneId, SessionId, WindowId};
pub use latency::{LatencyHistogram, LatencySnapshot};
pub use monitor::{OutputHub, OutputStats};
pub use output::{OutputSubscription, StreamEnd};
pub use quote::QuoteError;
pub use shared_lines::{LineBatch, LineReader};
pub use spawn::{ClientWrapper, RunAs, TmuxEndpoint, TmuxSocket};
pub use worker::{BatchMode, Caller, CommandOutcome, WorkerHandle, WorkerStats};

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
    /// Lines written and not yet answered, per server. Small keeps callers fair; the first few
    /// give most of pipelining's speed.
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
            pipeline_depth: 8,
            output_ring_bytes: 1024 * 1024,
            output_idle_close: Duration::from_secs(30),
            pause_after_secs: 5,
            reconnect_backoff: Duration::from_millis(200),
            max_watched_sessions: 4096,
        }
    }
}

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

/// One configured tmux server: its command worker and its output hub.
#[derive(Clone)]
pub struct TmuxServer {
    name: Arc<str>,
    /// Unique among the servers of this gateway (see [`ServerInstance`]).
    key: Arc<str>,
    /// Which process serves it now (see [`TmuxServer::set_epoch`]).
    epoch: Arc<std::sync::atomic::AtomicU64>,
    endpoint: TmuxEndpoint,
    worker: WorkerHandle,
    output: OutputHub,
    claims: PaneClaims,
}

impl TmuxServer {
    /// Starts the worker for a server. Nothing connects until the first command.
    pub fn start(
        name: &str,
        endpoint: impl Into<TmuxEndpoint>,
        settings: Arc<EngineSettings>,
        shutdown: CancellationToken,
    ) -> Self {
        let endpoint = endpoint.into();
        let worker =
            WorkerHandle::spawn(name, endpoint.clone(), settings.clone(), shutdown.clone());
        let output = OutputHub::new(name, endpoint.clone(), settings, worker.clone(), shutdown);
        Self {
            name: name.into(),
            key: name.into(),
            epoch: Arc::default(),
            endpoint,
            worker,
            output,
            claims: PaneClaims::default(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// This server under `key` instead of its name, for servers that share a name (every
    /// workspace's is `workspace`; its key names the workspace).
    pub fn keyed(mut self, key: &str) -> Self {
        self.key = key.into();
        self
    }

    /// Which server process this is, for what the gateway keeps about its panes.
    pub fn instance(&self) -> ServerInstance {
        ServerInstance {
            key: self.key.clone(),
            epoch: self.epoch.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Marks that another process serves this server from now on (a workspace's sandbox
    /// started, or found after a restart), by something that tells the processes apart (its
    /// start time): what the gateway kept about the panes of the one before no longer applies.
    pub fn set_epoch(&self, epoch: u64) {
        self.epoch
            .store(epoch, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn endpoint(&self) -> &TmuxEndpoint {
        &self.endpoint
    }

    pub fn worker(&self) -> &WorkerHandle {
        &self.worker
    }

    pub fn output(&self) -> &OutputHub {
        &self.output
    }

    /// Panes owned by programmatic runs; see [`claims`].
    pub fn claims(&self) -> &PaneClaims {
        &self.claims
    }

    /// Runs one command; see [`WorkerHandle::run`].
    pub async fn run(
        &self,
        caller: &Caller,
        command: TmuxCommand,
    ) -> Result<Vec<Vec<u8>>, EngineError> {
        self.worker.run(caller, command).await
    }

    /// Runs a batch in one write; see [`WorkerHandle::run_batch`].
    pub async fn run_batch(
        &self,
        caller: &Caller,
        commands: Vec<TmuxCommand>,
        mode: BatchMode,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<Vec<CommandOutcome>, EngineError> {
        self.worker
            .run_batch(caller, commands, mode, deadline)
            .await
    }

    /// Subscribes to a pane's output from now on, giving up at `deadline`; see
    /// [`OutputHub::subscribe`].
    pub async fn subscribe(
        &self,
        caller: &Caller,
        pane: PaneId,
        deadline: tokio::time::Instant,
    ) -> Result<OutputSubscription, EngineError> {
        self.output.subscribe(caller, pane, deadline).await
    }

    /// `pane`'s output stream if it is recording now; see [`OutputHub::recording`].
    pub fn recording(&self, pane: PaneId) -> Option<Arc<output::PaneStream>> {
        self.output.recording(pane)
    }

    /// Keeps a pane's output stream, and so its command ledger, recording for
    /// [`LEDGER_KEEP`] from now; see [`OutputHub::keep`].
    pub async fn keep(
        &self,
        caller: &Caller,
        pane: PaneId,
        deadline: tokio::time::Instant,
    ) -> Result<Arc<output::PaneStream>, EngineError> {
        self.output.keep(caller, pane, deadline, LEDGER_KEEP).await
    }
}

/// One tmux server process as the gateway tells them apart. A pane id (`%3`) and the pids tmux
/// reports say which pane of *a* server: a workspace's server always has pid 2 in its sandbox
/// and numbers panes from `%0` again after a restart, and every workspace's server is named
/// `workspace`. Reports, links and secrets bound to a pane are bound to this as well.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerInstance {
    /// The server's key: its configured name, or its workspace's.
    pub key: Arc<str>,
    /// The process behind it (0 for a configured server, whose pid tells its processes apart).
    pub epoch: u64,
}

/// How long a pane's ledger keeps recording after the last call that read it or ran a command
/// in it: long enough for an agent's working session, short enough that panes nobody asks
/// about stop holding an output connection.
pub const LEDGER_KEEP: Duration = Duration::from_secs(30 * 60);

/// All configured tmux servers, by name.
#[derive(Clone, Default)]
pub struct TmuxEngine {
    servers: BTreeMap<String, TmuxServer>,
}

impl TmuxEngine {
    /// Starts a worker per `(name, socket)`; they stop when `shutdown` fires.
    pub fn start(
        servers: impl IntoIterator<Item = (String, TmuxSocket)>,
        settings: EngineSettings,
        shutdown: &CancellationToken,
    ) -> Self {
        let settings = Arc::new(settings);
        let servers = servers
            .into_iter()
            .map(|(name, socket)| {
                let server = TmuxServer::start(&name, socket, settings.clone(), shutdown.clone());
                (name, server)
            })
            .collect();
        Self { servers }
    }

    pub fn server(&self, name: &str) -> Option<&TmuxServer> {
        self.servers.get(name)
    }

    pub fn servers(&self) -> impl Iterator<Item = &TmuxServer> {
        self.servers.values()
    }

    /// Whether no control client of any server is open (after shutdown: all detached).
    pub fn detached(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.servers().all(|server| {
            !server.worker().stats().connected.load(Ordering::Relaxed)
                && server
                    .output()
                    .stats()
                    .connections_open
                    .load(Ordering::Relaxed)
                    <= 0
        })
    }
}
