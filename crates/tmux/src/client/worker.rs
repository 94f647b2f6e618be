//! The Worker: one per tmux server, the only writer of commands to that server.
//!
//! Callers hand the worker whole jobs (one command, or a batch) through a [`WorkerHandle`]. The
//! worker task owns the command connection (`no-output`) and:
//! - writes each job in one write, back to back with earlier ones (pipelining), keeping at most
//!   `pipeline_depth` lines unanswered — a job of more independent lines than that is written
//!   in slices, one slice per turn of its caller (a `;`-chained job is one line);
//! - picks the next job round-robin across callers, so one caller's thousand queued commands
//!   delay another caller's single command by at most the lines already in flight;
//! - bounds the queue (globally and per caller): a full queue is an immediate, clear error;
//! - connects lazily, reconnects after `%exit`/EOF, sends lines tmux never started again on the
//!   new connection, and fails lines that were running with [`EngineError::ConnectionLost`];
//! - kills a connection whose oldest line has gone unanswered for far longer than the command
//!   timeout (a wedged server), so no caller waits forever.
//!
//! Per-command timeouts are enforced on the caller's side: a caller that gives up simply drops
//! its reply channel, and the worker skips jobs nobody waits for.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::client::connection::{
    ConnEvent, ConnectError, ConnectOptions, Connection, LineError, LineRequest, LineResult,
    NotSent, OutputMode,
};
use crate::client::latency::LatencyHistogram;
use crate::client::spawn::TmuxEndpoint;
use crate::client::stale;
use crate::wire::command::{TmuxCommand, chain_line, chunk_lines};
use crate::wire::protocol::Block;
use crate::{EngineError, EngineSettings, QueueScope};

/// Who is asking: the unit of fairness and of queue shares (an authenticated client's `sub`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Caller {
    id: Arc<str>,
    queue_share: Option<usize>,
    reply_budget: Option<usize>,
    watch_share: Option<usize>,
}

impl Caller {
    /// The caller `id`, with no limits of its own: only the engine's apply.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self {
            id: id.into(),
            queue_share: None,
            reply_budget: None,
            watch_share: None,
        }
    }

    /// Limits how many of a server's output connections (watched sessions) this caller may
    /// open, so that one client cannot take them all.
    pub fn with_watch_share(mut self, sessions: usize) -> Self {
        self.watch_share = Some(sessions);
        self
    }

    /// See [`Self::with_watch_share`].
    pub fn watch_share(&self) -> Option<usize> {
        self.watch_share
    }

    /// Most bytes of any one command's reply this caller may receive: a longer reply is read
    /// and thrown away (the command fails saying so), so no caller can make the gateway hold
    /// more than that per command.
    pub fn with_reply_budget(mut self, bytes: usize) -> Self {
        self.reply_budget = Some(bytes);
        self
    }

    /// Limits how many commands this caller may have queued on one server (default: the
    /// engine's `per_caller_queue`).
    pub fn with_queue_share(mut self, commands: usize) -> Self {
        self.queue_share = Some(commands);
        self
    }

    /// The caller's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// How the commands of a batch relate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchMode {
    /// Each command on its own line: all run, whatever the others do.
    Independent,
    /// One `;`-chained line: tmux stops at the first failure and runs nothing after it.
    StopOnError,
    /// `;`-chained lines of these many commands each, in order (commands beyond their sum go
    /// on one line each): within a line tmux stops at the first failure, and nothing of another
    /// caller runs inside a line.
    Lines(Vec<usize>),
}

/// What became of one command of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandOutcome {
    /// It ran; its output lines.
    Ok(Vec<Vec<u8>>),
    /// tmux refused it (`%error`); tmux's message.
    Failed(String),
    /// It was not run because an earlier command of a [`BatchMode::StopOnError`] batch failed.
    NotRun,
}

/// Counters an operator can read (exported as metrics).
#[derive(Debug, Default)]
pub struct WorkerStats {
    /// Commands handed to the command connection to write.
    pub commands_sent: AtomicU64,
    /// Lines handed to the command connection to write (a `;`-chained line holds several
    /// commands).
    pub lines_written: AtomicU64,
    /// Command connections opened.
    pub connects: AtomicU64,
    /// Attempts to open the command connection that failed.
    pub connect_failures: AtomicU64,
    /// Command connections that ended while the worker ran.
    pub connections_lost: AtomicU64,
    /// Command connections killed because tmux stopped answering.
    pub stalls: AtomicU64,
    /// Whether the command connection is open right now.
    pub connected: AtomicBool,
    /// Time from handing a job to the worker until its last reply (or its failure), per job.
    pub latency: LatencyHistogram,
}

/// Commands queued and not yet written, per caller and in total.
#[derive(Debug, Default)]
struct QueueGauge {
    inner: Mutex<GaugeInner>,
}

#[derive(Debug, Default)]
struct GaugeInner {
    total: usize,
    per_caller: HashMap<Arc<str>, usize>,
}

impl QueueGauge {
    fn lock(&self) -> std::sync::MutexGuard<'_, GaugeInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn try_add(
        &self,
        caller: &Caller,
        n: usize,
        settings: &EngineSettings,
    ) -> Result<(), QueueScope> {
        let mut g = self.lock();
        if g.total + n > settings.queue_capacity && g.total > 0 {
            return Err(QueueScope::Server);
        }
        let share = caller.queue_share.unwrap_or(settings.per_caller_queue);
        let mine = g.per_caller.get(&caller.id).copied().unwrap_or(0);
        if mine + n > share && mine > 0 {
            return Err(QueueScope::Caller);
        }
        g.total += n;
        *g.per_caller.entry(caller.id.clone()).or_insert(0) += n;
        Ok(())
    }

    fn remove(&self, caller: &Arc<str>, n: usize) {
        let mut g = self.lock();
        g.total = g.total.saturating_sub(n);
        if let Some(mine) = g.per_caller.get_mut(caller) {
            *mine = mine.saturating_sub(n);
            if *mine == 0 {
                g.per_caller.remove(caller);
            }
        }
    }

    fn total(&self) -> usize {
        self.lock().total
    }
}

struct Job {
    caller: Arc<str>,
    lines: Vec<LineRequest>,
}

impl Job {
    fn commands(&self) -> usize {
        self.lines.iter().map(LineRequest::commands).sum()
    }
}

/// Cheap, cloneable access to one server's worker.
#[derive(Clone)]
pub struct WorkerHandle {
    server: Arc<str>,
    jobs: mpsc::UnboundedSender<Job>,
    gauge: Arc<QueueGauge>,
    stats: Arc<WorkerStats>,
    settings: Arc<EngineSettings>,
}

impl WorkerHandle {
    /// Starts the worker task for the server `name` at `endpoint`. It stops when `shutdown` fires
    /// or the last handle is dropped, detaching its control client.
    pub fn spawn(
        name: &str,
        endpoint: TmuxEndpoint,
        settings: Arc<EngineSettings>,
        shutdown: CancellationToken,
    ) -> Self {
        // Client pids of a wrapped server belong to the wrapper's pid namespace: nothing to
        // sweep by pid there (and its clients die with their wrapper anyway).
        let swept_stale = !endpoint.pids_are_local();
        let (jobs, rx) = mpsc::unbounded_channel();
        let gauge = Arc::new(QueueGauge::default());
        let stats = Arc::new(WorkerStats::default());
        let worker = Worker {
            server: name.into(),
            options: ConnectOptions {
                tmux_bin: settings.tmux_bin.clone(),
                endpoint,
                session: None,
                create: None,
                output: OutputMode::Off,
                timeout: settings.connect_timeout,
            },
            settings: settings.clone(),
            jobs: rx,
            queue: FairQueue::default(),
            retry: VecDeque::new(),
            conn: None,
            killed_at: None,
            last_failure: None,
            exiting_again: false,
            gauge: gauge.clone(),
            stats: stats.clone(),
            shutdown,
            swept_stale,
        };
        tokio::spawn(worker.run());
        Self {
            server: name.into(),
            jobs,
            gauge,
            stats,
            settings,
        }
    }

    /// The configured server name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The worker's counters.
    pub fn stats(&self) -> &WorkerStats {
        &self.stats
    }

    /// Commands waiting to be written.
    pub fn queued(&self) -> usize {
        self.gauge.total()
    }

    /// Runs one command; a tmux `%error` becomes [`EngineError::Command`].
    pub async fn run(
        &self,
        caller: &Caller,
        command: TmuxCommand,
    ) -> Result<Vec<Vec<u8>>, EngineError> {
        let mut outcomes = self
            .run_batch(caller, vec![command], BatchMode::Independent, None)
            .await?;
        match outcomes.pop() {
            Some(CommandOutcome::Ok(lines)) => Ok(lines),
            Some(CommandOutcome::Failed(message)) => Err(EngineError::Command(message)),
            Some(CommandOutcome::NotRun) | None => Err(EngineError::ConnectionLost {
                server: self.server.to_string(),
            }),
        }
    }

    /// Runs `commands` as one job written in a single write. Returns one outcome per command.
    /// `deadline` defaults to now + the engine's command timeout.
    pub async fn run_batch(
        &self,
        caller: &Caller,
        commands: Vec<TmuxCommand>,
        mode: BatchMode,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<Vec<CommandOutcome>, EngineError> {
        if commands.is_empty() {
            return Ok(Vec::new());
        }
        let deadline =
            deadline.unwrap_or_else(|| tokio::time::Instant::now() + self.settings.command_timeout);
        let count = commands.len();
        let limited = |(line, rx): (LineRequest, _)| match caller.reply_budget {
            Some(bytes) => (line.with_reply_limit(bytes), rx),
            None => (line, rx),
        };
        let (lines, receivers): (Vec<_>, Vec<_>) = match &mode {
            BatchMode::Independent => commands
                .iter()
                .map(|c| {
                    let (line, rx) = limited(LineRequest::new(c.as_bytes().to_vec(), 1));
                    (line, (rx, 1))
                })
                .unzip(),
            BatchMode::StopOnError => {
                let (line, rx) = limited(LineRequest::new(chain_line(&commands), count));
                (vec![line], vec![(rx, count)])
            }
            BatchMode::Lines(lengths) => chunk_lines(&commands, lengths)
                .into_iter()
                .map(|chunk| {
                    let (line, rx) = limited(LineRequest::new(chain_line(chunk), chunk.len()));
                    (line, (rx, chunk.len()))
                })
                .unzip(),
        };
        self.gauge
            .try_add(caller, count, &self.settings)
            .map_err(|scope| EngineError::QueueFull {
                server: self.server.to_string(),
                scope,
            })?;
        if self
            .jobs
            .send(Job {
                caller: caller.id.clone(),
                lines,
            })
            .is_err()
        {
            self.gauge.remove(&caller.id, count);
            return Err(EngineError::ShuttingDown);
        }

        // A span only inside a traced request (a tool call), not for the engine's own probes.
        let span = if tracing::Span::current().is_none() {
            tracing::Span::none()
        } else {
            tracing::info_span!(
                "tmux.batch",
                otel.name = "tmux batch",
                tmux.server = %self.server,
                tmux.commands = count,
                tmux.batch_mode = ?mode,
                error.type = tracing::field::Empty,
            )
        };
        let started = Instant::now();
        let result = self
            .collect_replies(receivers, started, deadline, count)
            .instrument(span.clone())
            .await;
        self.stats.latency.observe(started.elapsed());
        if let Err(error) = &result {
            span.record("error.type", error.label());
        }
        result
    }

    /// Waits for the replies of one job's lines, in order; each line's commands that tmux did
    /// not run (after a failure in the line) are [`CommandOutcome::NotRun`].
    async fn collect_replies(
        &self,
        receivers: Vec<(oneshot::Receiver<LineResult>, usize)>,
        started: Instant,
        deadline: tokio::time::Instant,
        count: usize,
    ) -> Result<Vec<CommandOutcome>, EngineError> {
        let mut outcomes = Vec::with_capacity(count);
        for (rx, commands) in receivers {
            let line_end = outcomes.len() + commands;
            let result =
                tokio::time::timeout_at(deadline, rx)
                    .await
                    .map_err(|_| EngineError::Timeout {
                        server: self.server.to_string(),
                        after: started.elapsed(),
                    })?;
            let blocks = match result {
                Ok(Ok(blocks)) => blocks,
                Ok(Err(e)) => return Err(self.line_error(e)),
                // The worker dropped the request: it is shutting down.
                Err(_) => return Err(EngineError::ShuttingDown),
            };
            outcomes.extend(blocks.into_iter().take(commands).map(block_outcome));
            outcomes.resize(line_end, CommandOutcome::NotRun);
        }
        Ok(outcomes)
    }

    fn line_error(&self, error: LineError) -> EngineError {
        let server = self.server.to_string();
        match error {
            LineError::Lost => EngineError::ConnectionLost { server },
            LineError::NotSent(NotSent::Unavailable(cause)) => {
                EngineError::Unavailable { server, cause }
            }
            LineError::NotSent(NotSent::ShuttingDown) => EngineError::ShuttingDown,
        }
    }
}

/// The message of a command whose reply was longer than its caller may receive: the reply was
/// thrown away unread (see `Block::oversized`).
pub const REPLY_OVER_BUDGET: &str = "the reply was larger than your output budget allows";

fn block_outcome(block: Block) -> CommandOutcome {
    if block.oversized {
        return CommandOutcome::Failed(REPLY_OVER_BUDGET.into());
    }
    if block.ok {
        CommandOutcome::Ok(block.body)
    } else {
        let message = block
            .body
            .iter()
            .map(|l| String::from_utf8_lossy(l))
            .collect::<Vec<_>>()
            .join("; ");
        CommandOutcome::Failed(message)
    }
}

/// Jobs per caller, served round-robin.
#[derive(Default)]
struct FairQueue {
    per_caller: HashMap<Arc<str>, VecDeque<Job>>,
    order: VecDeque<Arc<str>>,
}

impl FairQueue {
    fn push(&mut self, job: Job) {
        let queue = self.per_caller.entry(job.caller.clone()).or_default();
        if queue.is_empty() {
            self.order.push_back(job.caller.clone());
        }
        queue.push_back(job);
    }

    fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The next caller's next job, or its first `max_lines` lines when it is longer: the rest
    /// stays first in that caller's queue and waits for the caller's next turn, so a large
    /// batch of independent lines cannot hold everybody else back.
    fn pop_up_to(&mut self, max_lines: usize) -> Option<Job> {
        let caller = self.order.pop_front()?;
        let queue = self.per_caller.get_mut(&caller)?;
        let mut job = queue.pop_front()?;
        if job.lines.len() > max_lines.max(1) {
            let rest = job.lines.split_off(max_lines.max(1));
            queue.push_front(Job {
                caller: job.caller.clone(),
                lines: rest,
            });
        }
        if queue.is_empty() {
            self.per_caller.remove(&caller);
        } else {
            self.order.push_back(caller);
        }
        Some(job)
    }

    fn drain(&mut self) -> impl Iterator<Item = Job> + '_ {
        self.order.clear();
        self.per_caller.drain().flat_map(|(_, jobs)| jobs)
    }
}

struct Worker {
    server: Arc<str>,
    options: ConnectOptions,
    settings: Arc<EngineSettings>,
    jobs: mpsc::UnboundedReceiver<Job>,
    queue: FairQueue,
    /// Lines a lost connection never started; written first on the next connection.
    retry: VecDeque<LineRequest>,
    conn: Option<Connection>,
    /// When `conn` was killed for stalling; until it reports its end nothing is written to it
    /// and the stall timer is not armed again (it would fire at once, forever).
    killed_at: Option<tokio::time::Instant>,
    last_failure: Option<(Instant, ConnectError)>,
    /// Whether the last failed connect found the server exiting right after another that did:
    /// that server is not being restarted, and the backoff applies to it again.
    exiting_again: bool,
    gauge: Arc<QueueGauge>,
    stats: Arc<WorkerStats>,
    shutdown: CancellationToken,
    swept_stale: bool,
}

enum Wake {
    Job(Option<Job>),
    Conn(Option<ConnEvent>),
    Progress,
    Stalled,
    Shutdown,
}

impl Worker {
    async fn run(mut self) {
        loop {
            self.pump().await;
            let stall_at = match self.killed_at {
                // A killed client that does not report its end within this is abandoned.
                Some(killed) => Some(killed + self.settings.connect_timeout),
                None => self
                    .conn
                    .as_ref()
                    .and_then(Connection::oldest_in_flight)
                    .map(|t| tokio::time::Instant::from_std(t + self.settings.stall_timeout())),
            };
            self.stats
                .connected
                .store(self.conn.is_some(), Ordering::Relaxed);
            let wake = tokio::select! {
                biased;
                () = self.shutdown.cancelled() => Wake::Shutdown,
                job = self.jobs.recv() => Wake::Job(job),
                activity = conn_activity(self.conn.as_mut()) => activity,
                () = sleep_until(stall_at) => Wake::Stalled,
            };
            match wake {
                Wake::Shutdown | Wake::Job(None) => break,
                Wake::Job(Some(job)) => self.queue.push(job),
                Wake::Progress => {}
                Wake::Conn(Some(ConnEvent::Closed { reason, unstarted })) => {
                    tracing::info!(server = %self.server, %reason, requeued = unstarted.len(), "tmux command connection closed");
                    self.stats.connections_lost.fetch_add(1, Ordering::Relaxed);
                    self.conn = None;
                    self.killed_at = None;
                    for line in unstarted.into_iter().rev() {
                        self.retry.push_front(line);
                    }
                }
                Wake::Conn(Some(event)) => {
                    tracing::trace!(server = %self.server, ?event, "tmux notification");
                }
                Wake::Conn(None) => {
                    self.conn = None;
                    self.killed_at = None;
                }
                Wake::Stalled if self.killed_at.is_some() => {
                    tracing::warn!(server = %self.server, "the stalled tmux client did not exit; abandoning it");
                    // Its callers have long given up (the stall timeout is a multiple of
                    // theirs); dropping it fails whatever is left.
                    self.conn = None;
                    self.killed_at = None;
                }
                Wake::Stalled => {
                    tracing::warn!(server = %self.server, "tmux stopped answering; dropping the control connection");
                    self.stats.stalls.fetch_add(1, Ordering::Relaxed);
                    if let Some(conn) = self.conn.as_mut() {
                        conn.kill();
                        self.killed_at = Some(tokio::time::Instant::now());
                    }
                }
            }
        }
        self.fail_everything(NotSent::ShuttingDown);
        if let Some(conn) = self.conn.take() {
            conn.close(self.settings.connect_timeout).await;
        }
        self.stats.connected.store(false, Ordering::Relaxed);
    }

    /// Writes queued work while the pipeline has room.
    async fn pump(&mut self) {
        if self.killed_at.is_some() {
            // The connection is going away; its unstarted lines come back to `retry`.
            return;
        }
        if !self.retry.is_empty() {
            if !self.ensure_connected().await {
                return;
            }
            let lines: Vec<_> = self
                .retry
                .drain(..)
                .filter(LineRequest::is_wanted)
                .collect();
            self.write(lines).await;
        }
        while !self.queue.is_empty() {
            let in_flight = self.conn.as_ref().map_or(0, Connection::in_flight);
            let room = self.settings.pipeline_depth.saturating_sub(in_flight);
            if room == 0 {
                return;
            }
            let Some(job) = self.queue.pop_up_to(room) else {
                return;
            };
            self.gauge.remove(&job.caller, job.commands());
            let lines: Vec<_> = job
                .lines
                .into_iter()
                .filter(LineRequest::is_wanted)
                .collect();
            if lines.is_empty() {
                continue;
            }
            if !self.ensure_connected().await {
                for line in lines {
                    line.fail(NotSent::Unavailable(self.failure()));
                }
                return;
            }
            self.write(lines).await;
        }
    }

    async fn write(&mut self, lines: Vec<LineRequest>) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        let commands: usize = lines.iter().map(LineRequest::commands).sum();
        let count = lines.len();
        let stats = &self.stats;
        // Counted as they are handed over, before they are written: a caller woken by a reply
        // already sees its commands counted.
        let counted = || {
            stats
                .commands_sent
                .fetch_add(commands as u64, Ordering::Relaxed);
            stats
                .lines_written
                .fetch_add(count as u64, Ordering::Relaxed);
        };
        // The connection ended before the write: keep the lines for the next one.
        if let Err(lines) = conn
            .submit_then(lines, self.settings.command_timeout, counted)
            .await
        {
            self.retry.extend(lines);
        }
    }

    /// Connects if needed; after a failure, waits `reconnect_backoff` before trying again so
    /// that a dead server does not cost a process spawn per call. Two failures hold nothing
    /// back, so that the next call sees the server as soon as it is there:
    /// - a host's link that was down refused without starting anything;
    /// - a server that exited while the client attached is most often being restarted, and the
    ///   last attempt's error is older than the server now running. If it is gone for good, the
    ///   next attempt finds no server, and that failure has the backoff; one found exiting twice
    ///   running has it too, so a server that ends every attach costs no process per call.
    async fn ensure_connected(&mut self) -> bool {
        if self.conn.is_some() {
            return true;
        }
        if let Some((at, error)) = &self.last_failure
            && !self.tries_again_at_once(error)
            && at.elapsed() < self.settings.reconnect_backoff
        {
            self.fail_everything(NotSent::Unavailable(self.failure()));
            return false;
        }
        match Connection::connect(&self.options).await {
            Ok(conn) => {
                tracing::debug!(server = %self.server, session = %conn.session(), "tmux command connection attached");
                self.stats.connects.fetch_add(1, Ordering::Relaxed);
                self.last_failure = None;
                self.conn = Some(conn);
                if !self.swept_stale {
                    self.swept_stale = true;
                    self.sweep_stale_clients().await;
                }
                true
            }
            Err(error) => {
                tracing::debug!(server = %self.server, %error, "tmux command connection failed");
                self.stats.connect_failures.fetch_add(1, Ordering::Relaxed);
                let exited =
                    |failure: &ConnectError| matches!(failure, ConnectError::ServerExited { .. });
                self.exiting_again =
                    exited(&error) && self.last_failure.as_ref().is_some_and(|(_, e)| exited(e));
                self.last_failure = Some((Instant::now(), error));
                self.fail_everything(NotSent::Unavailable(self.failure()));
                false
            }
        }
    }

    /// Whether a connect that failed with `error` leaves the next one free of the backoff.
    fn tries_again_at_once(&self, error: &ConnectError) -> bool {
        match error {
            ConnectError::LinkDown(_) => true,
            ConnectError::ServerExited { .. } => !self.exiting_again,
            _ => false,
        }
    }

    fn failure(&self) -> ConnectError {
        self.last_failure
            .as_ref()
            .map(|(_, e)| e.clone())
            .unwrap_or_else(|| ConnectError::Refused("not connected".into()))
    }

    /// Fails every queued and retried line with `reason`.
    fn fail_everything(&mut self, reason: NotSent) {
        for line in self.retry.drain(..) {
            line.fail(reason.clone());
        }
        for job in self.queue.drain() {
            self.gauge.remove(&job.caller, job.commands());
            for line in job.lines {
                line.fail(reason.clone());
            }
        }
    }

    /// Removes control clients left attached by a muxgate process that died without detaching
    /// (possible before PDEATHSIG, or with a different owner). Runs once per worker.
    async fn sweep_stale_clients(&mut self) {
        let Ok(command) = TmuxCommand::new("list-clients")
            .flag("-F")
            .trusted_format(stale::CLIENT_FORMAT)
            .build()
        else {
            return;
        };
        let (line, rx) = LineRequest::new(command.as_bytes().to_vec(), 1);
        self.write(vec![line]).await;
        let server = self.server.clone();
        tokio::spawn(async move {
            let Ok(Ok(blocks)) = rx.await else { return };
            let Some(block) = blocks.first().filter(|b| b.ok) else {
                return;
            };
            let clients = stale::parse_clients(&block.body);
            for client in stale::muxgate_clients(&clients, stale::parent_pid) {
                if matches!(client.state, stale::ControlClientState::Stale { .. }) {
                    tracing::warn!(server = %server, pid = client.pid, owner = client.owner_pid, "removing a stale muxgate control client");
                    stale::kill_stale(&client);
                }
            }
        });
    }
}

async fn conn_activity(conn: Option<&mut Connection>) -> Wake {
    let Some(conn) = conn else {
        return std::future::pending().await;
    };
    let conn: &mut Connection = conn;
    // Split borrows: progress only needs shared access, events need the receiver.
    let progress = conn.progress_notifier();
    tokio::select! {
        () = progress.notified() => Wake::Progress,
        event = conn.next_event() => Wake::Conn(event),
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl EngineSettings {
    /// How long the oldest unanswered line may wait before the connection is declared wedged.
    fn stall_timeout(&self) -> Duration {
        self.command_timeout * 3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(caller: &str, lines: usize) -> Job {
        Job {
            caller: caller.into(),
            lines: (0..lines)
                .map(|i| LineRequest::new(format!("display-message -p {i}").into_bytes(), 1).0)
                .collect(),
        }
    }

    fn take(queue: &mut FairQueue, room: usize) -> (String, usize) {
        let job = queue.pop_up_to(room).expect("a job");
        (job.caller.to_string(), job.lines.len())
    }

    #[test]
    fn callers_take_turns_and_large_jobs_go_in_slices() {
        let mut queue = FairQueue::default();
        queue.push(job("a", 20));
        queue.push(job("a", 1));
        queue.push(job("b", 1));
        assert_eq!(take(&mut queue, 8), ("a".into(), 8));
        assert_eq!(take(&mut queue, 8), ("b".into(), 1));
        assert_eq!(take(&mut queue, 8), ("a".into(), 8));
        assert_eq!(take(&mut queue, 8), ("a".into(), 4));
        assert_eq!(take(&mut queue, 8), ("a".into(), 1));
        assert!(queue.is_empty());
        assert!(queue.pop_up_to(8).is_none());
    }

    #[test]
    fn a_slice_always_makes_progress() {
        let mut queue = FairQueue::default();
        queue.push(job("a", 3));
        assert_eq!(take(&mut queue, 0), ("a".into(), 1));
    }
}
