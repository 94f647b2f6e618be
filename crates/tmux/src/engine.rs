//! A tmux server as the gateway drives it ([`TmuxServer`]: its worker, output hub and run
//! claims), which process serves it ([`ServerInstance`]), and the configured servers by name
//! ([`TmuxEngine`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::client::spawn::TmuxEndpoint;
use crate::client::worker::{BatchMode, Caller, CommandOutcome, WorkerHandle};
use crate::error::EngineError;
use crate::output::monitor::OutputHub;
use crate::output::{self, OutputSubscription};
use crate::settings::EngineSettings;
use crate::typed::claims::PaneClaims;
use crate::wire::command::TmuxCommand;
use crate::wire::ids::PaneId;

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

    /// The configured server name.
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

    /// How the server is reached.
    pub fn endpoint(&self) -> &TmuxEndpoint {
        &self.endpoint
    }

    /// The server's command worker.
    pub fn worker(&self) -> &WorkerHandle {
        &self.worker
    }

    /// The server's output hub.
    pub fn output(&self) -> &OutputHub {
        &self.output
    }

    /// Panes owned by programmatic runs; see [`crate::typed::claims`].
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
    /// Starts a worker per `(name, endpoint)`; they stop when `shutdown` fires.
    pub fn start(
        servers: impl IntoIterator<Item = (String, TmuxEndpoint)>,
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

    /// The server configured as `name`.
    pub fn server(&self, name: &str) -> Option<&TmuxServer> {
        self.servers.get(name)
    }

    /// Every configured server, in name order.
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
