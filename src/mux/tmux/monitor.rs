//! Output connections: how pane output reaches [`PaneStream`]s.
//!
//! tmux sends `%output` only for panes of the session a control client is attached to, so the
//! [`OutputHub`] of a server opens one output connection per session that has subscribers, on
//! demand, and closes it after it has been idle (no live subscription) for `output_idle_close`.
//! Each connection is owned by a small monitor task that:
//! - routes the session's `%output` into the streams of subscribed panes (on the reader task,
//!   without waiting on anyone — see [`super::connection`]);
//! - on `%pause` (tmux dropped output it could not deliver in time) marks a gap in the stream and
//!   resumes the pane at once with `refresh-client -A '%N:continue'`;
//! - ends a stream when its pane's program exits (`refresh-client -B` subscription on
//!   `#{pane_dead}`, evaluated by tmux itself once a second: no command from muxgate), when the
//!   pane disappears (checked with one `list-panes` after a window/layout notification), or when
//!   the session or server goes away;
//! - treats `%session-changed` (the session died and tmux moved the client, `detach-on-destroy
//!   off`) as the end of the session, so output of another session never leaks into a stream.
//!
//! A pane whose window is linked into several sessions is routed from exactly one connection.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::command::TmuxCommand;
use super::connection::{
    ConnEvent, ConnectError, ConnectOptions, Connection, LineRequest, OutputMode, OutputSink,
};
use super::ids::{PaneId, SessionId};
use super::output::{OutputSubscription, PaneStream, StreamEnd};
use super::protocol::SubscriptionChange;
use super::spawn::TmuxEndpoint;
use super::worker::{Caller, WorkerHandle};
use super::{EngineError, EngineSettings, QueueScope};

const DEAD_SUBSCRIPTION: &str = "muxgate_dead";

/// Counters an operator can read (exported as metrics).
#[derive(Debug, Default)]
pub struct OutputStats {
    pub bytes_read: AtomicU64,
    pub pauses: AtomicU64,
    pub connections_open: AtomicI64,
    pub connects: AtomicU64,
}

/// Which stream each pane's output goes to, and through which session's connection.
#[derive(Default)]
struct Router {
    routes: Mutex<HashMap<PaneId, Route>>,
}

struct Route {
    session: SessionId,
    stream: Weak<PaneStream>,
    /// The stream held open until then, so its pane's ledger keeps recording with no
    /// subscriber (see [`OutputHub::keep`]).
    kept: Option<(Arc<PaneStream>, tokio::time::Instant)>,
}

impl Router {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PaneId, Route>> {
        // Each update is a single insert or remove, so a poisoned map is still consistent.
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stream(&self, session: SessionId, pane: PaneId) -> Option<Arc<PaneStream>> {
        let routes = self.lock();
        let route = routes.get(&pane)?;
        (route.session == session).then(|| route.stream.upgrade())?
    }

    /// The live, open stream for `pane`, if some subscriber still holds one.
    fn live(&self, pane: PaneId) -> Option<(SessionId, Arc<PaneStream>)> {
        let routes = self.lock();
        let route = routes.get(&pane)?;
        let stream = route.stream.upgrade()?;
        (!stream.is_closed()).then_some((route.session, stream))
    }

    /// Routes `stream`'s pane to it, unless a live, open stream of the same session already
    /// has the pane: then that one stays, and is returned, so that subscribers who raced to
    /// subscribe to one pane share one stream (a replaced stream would never see output).
    fn insert_or_existing(&self, session: SessionId, stream: Arc<PaneStream>) -> Arc<PaneStream> {
        let mut routes = self.lock();
        if let Some(existing) = routes
            .get(&stream.pane())
            .filter(|r| r.session == session)
            .and_then(|r| r.stream.upgrade())
            .filter(|s| !s.is_closed())
        {
            return existing;
        }
        routes.insert(
            stream.pane(),
            Route {
                session,
                stream: Arc::downgrade(&stream),
                kept: None,
            },
        );
        stream
    }

    /// Holds `stream` open until `until` (or later, if it already was), while it is its
    /// pane's routed stream.
    fn keep(&self, stream: &Arc<PaneStream>, until: tokio::time::Instant) {
        let mut routes = self.lock();
        let Some(route) = routes.get_mut(&stream.pane()) else {
            return;
        };
        if !route
            .stream
            .upgrade()
            .is_some_and(|s| Arc::ptr_eq(&s, stream))
        {
            return;
        }
        let until = match &route.kept {
            Some((_, kept)) => until.max(*kept),
            None => until,
        };
        route.kept = Some((stream.clone(), until));
    }

    /// Lets go of kept streams whose time is up or whose pane's output ended.
    fn expire_kept(&self, now: tokio::time::Instant) {
        for route in self.lock().values_mut() {
            if route
                .kept
                .as_ref()
                .is_some_and(|(stream, until)| *until <= now || stream.is_closed())
            {
                route.kept = None;
            }
        }
    }

    /// Sessions whose every live stream is held only by [`Self::keep`], with the latest time
    /// they are kept until.
    fn kept_only_sessions(&self) -> HashMap<SessionId, tokio::time::Instant> {
        let routes = self.lock();
        let mut sessions: HashMap<SessionId, Option<tokio::time::Instant>> = HashMap::new();
        for route in routes.values() {
            let subscribed = route.stream.strong_count() > usize::from(route.kept.is_some());
            let entry = sessions
                .entry(route.session)
                .or_insert(Some(tokio::time::Instant::now()));
            match (&route.kept, subscribed) {
                (_, true) => *entry = None,
                (Some((_, until)), false) => {
                    *entry = entry.map(|latest| latest.max(*until));
                }
                (None, false) => {}
            }
        }
        sessions
            .into_iter()
            .filter_map(|(session, until)| until.map(|until| (session, until)))
            .collect()
    }

    /// Live subscriptions across all panes (each holds its pane's stream; a kept stream's own
    /// hold is not one).
    fn subscriptions(&self) -> usize {
        self.lock()
            .values()
            .map(|r| r.stream.strong_count() - usize::from(r.kept.is_some()))
            .sum()
    }

    /// Panes of `session` that still have a subscriber; forgets the others.
    fn live_panes(&self, session: SessionId) -> Vec<PaneId> {
        let mut routes = self.lock();
        routes.retain(|_, r| r.stream.strong_count() > 0);
        routes
            .iter()
            .filter(|(_, r)| r.session == session)
            .map(|(p, _)| *p)
            .collect()
    }

    /// Ends and forgets the streams of `session` for which `which` holds.
    fn close_where(&self, session: SessionId, reason: &StreamEnd, which: impl Fn(PaneId) -> bool) {
        let closed: Vec<_> = {
            let mut routes = self.lock();
            let panes: Vec<_> = routes
                .iter()
                .filter(|(p, r)| r.session == session && which(**p))
                .map(|(p, _)| *p)
                .collect();
            panes
                .into_iter()
                .filter_map(|p| routes.remove(&p))
                .collect()
        };
        for route in closed {
            if let Some(stream) = route.stream.upgrade() {
                stream.close(reason.clone());
            }
        }
    }
}

/// The output side of one tmux server.
#[derive(Clone)]
pub struct OutputHub {
    inner: Arc<HubInner>,
}

impl OutputHub {
    /// `pane`'s stream, if it is recording now (a subscriber or a keep holds it open); nothing
    /// is started.
    pub fn recording(&self, pane: PaneId) -> Option<Arc<PaneStream>> {
        self.inner.router.live(pane).map(|(_, stream)| stream)
    }
}

struct HubInner {
    server: Arc<str>,
    endpoint: TmuxEndpoint,
    settings: Arc<EngineSettings>,
    worker: WorkerHandle,
    shutdown: CancellationToken,
    router: Arc<Router>,
    /// The running monitors' registration channels. Held only for a lookup or an insert, never
    /// across an attach, so subscribers of watched sessions never queue behind one.
    monitors: Mutex<HashMap<SessionId, Monitor>>,
    /// Taken for the whole of an attach: a server's output clients attach one at a time (tmux
    /// before 3.7 can crash when a control client is notified while it is still identifying
    /// itself; one client attaching at a time keeps other attaches out of that window).
    attaching: tokio::sync::Mutex<()>,
    stats: Arc<OutputStats>,
}

/// A running monitor's registration channel, and the caller whose subscription opened it
/// (counted against that caller's share of the server's output connections).
struct Monitor {
    register: mpsc::UnboundedSender<Register>,
    opener: Arc<str>,
    /// Closes the connection at once (to make room, see [`OutputHub::release_kept`]).
    release: CancellationToken,
}

struct Register {
    stream: Arc<PaneStream>,
    /// Answered with the stream the pane is routed to (this one, or one registered before).
    done: oneshot::Sender<Arc<PaneStream>>,
}

impl OutputHub {
    pub fn new(
        server: &str,
        endpoint: TmuxEndpoint,
        settings: Arc<EngineSettings>,
        worker: WorkerHandle,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            inner: Arc::new(HubInner {
                server: server.into(),
                endpoint,
                settings,
                worker,
                shutdown,
                router: Arc::new(Router::default()),
                monitors: Mutex::new(HashMap::new()),
                attaching: tokio::sync::Mutex::new(()),
                stats: Arc::new(OutputStats::default()),
            }),
        }
    }

    pub fn stats(&self) -> &OutputStats {
        &self.inner.stats
    }

    /// How many output subscriptions are alive (for metrics and leak checks).
    pub fn subscriptions(&self) -> usize {
        self.inner.router.subscriptions()
    }

    /// Subscribes to `pane`'s output from now on. When this returns, output the pane produces
    /// from this moment is captured (so a caller may subscribe, then send keys).
    ///
    /// Gives up at `deadline` with [`EngineError::Timeout`]: the first subscriber of a session
    /// waits for its output connection to attach, behind the attaches queued before it.
    pub async fn subscribe(
        &self,
        caller: &Caller,
        pane: PaneId,
        deadline: tokio::time::Instant,
    ) -> Result<OutputSubscription, EngineError> {
        let started = tokio::time::Instant::now();
        tokio::time::timeout_at(deadline, self.subscribe_now(caller, pane))
            .await
            .unwrap_or_else(|_| {
                Err(EngineError::Timeout {
                    server: self.inner.server.to_string(),
                    after: started.elapsed(),
                })
            })
    }

    /// Keeps `pane`'s output stream (and so its command ledger) recording for `period` from
    /// now, subscriber or not, and returns it. Starting it waits like [`Self::subscribe`];
    /// keeping it counts against the caller's watched sessions like a subscription does.
    pub async fn keep(
        &self,
        caller: &Caller,
        pane: PaneId,
        deadline: tokio::time::Instant,
        period: Duration,
    ) -> Result<Arc<PaneStream>, EngineError> {
        let subscription = self.subscribe(caller, pane, deadline).await?;
        let stream = subscription.stream().clone();
        self.inner
            .router
            .keep(&stream, tokio::time::Instant::now() + period);
        Ok(stream)
    }

    /// Closes the output connection of one session watched only to keep ledgers recording (the
    /// one kept for the shortest time; of `opener`'s connections when given), so that a
    /// subscriber can have its place. Whether one was closed.
    fn release_kept(&self, opener: Option<&str>) -> bool {
        let kept = self.inner.router.kept_only_sessions();
        let mut monitors = self.lock_monitors();
        let victim = monitors
            .iter()
            .filter(|(_, m)| !m.register.is_closed())
            .filter(|(_, m)| opener.is_none_or(|o| *m.opener == *o))
            .filter_map(|(session, _)| kept.get(session).map(|until| (*until, *session)))
            .min();
        let Some((_, session)) = victim else {
            return false;
        };
        if let Some(monitor) = monitors.remove(&session) {
            tracing::debug!(server = %self.inner.server, %session, "closing an output connection kept only for ledgers, to make room");
            monitor.release.cancel();
        }
        true
    }

    async fn subscribe_now(
        &self,
        caller: &Caller,
        pane: PaneId,
    ) -> Result<OutputSubscription, EngineError> {
        if let Some((session, stream)) = self.inner.router.live(pane)
            && self.running(session).is_some()
        {
            return Ok(stream.subscribe());
        }
        let session = self.session_of(caller, pane).await?;
        // A monitor may close between our send and its reply (idle timeout): then start a new one.
        for _ in 0..3 {
            let register = self.monitor(caller, session).await?;
            let stream = PaneStream::new(pane, self.inner.settings.output_ring_bytes);
            // Subscribe before registering so no byte routed after registration is missed.
            let subscription = stream.subscribe();
            let (done, registered) = oneshot::channel();
            if register
                .send(Register {
                    stream: stream.clone(),
                    done,
                })
                .is_ok()
                && let Ok(routed) = registered.await
            {
                // Another subscriber registered the pane first: share its stream.
                return Ok(if Arc::ptr_eq(&routed, &stream) {
                    subscription
                } else {
                    routed.subscribe()
                });
            }
        }
        Err(EngineError::Unavailable {
            server: self.inner.server.to_string(),
            cause: ConnectError::Refused("the output connection kept closing".into()),
        })
    }

    fn lock_monitors(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Monitor>> {
        // A panic cannot leave an entry half-written, so a poisoned map is still consistent.
        self.inner
            .monitors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The registration channel of `session`'s monitor, if one is running.
    fn running(&self, session: SessionId) -> Option<mpsc::UnboundedSender<Register>> {
        self.lock_monitors()
            .get(&session)
            .map(|monitor| &monitor.register)
            .filter(|tx| !tx.is_closed())
            .cloned()
    }

    /// The session whose output connection carries `pane`'s output.
    async fn session_of(&self, caller: &Caller, pane: PaneId) -> Result<SessionId, EngineError> {
        let command = TmuxCommand::new("list-panes")
            .target(pane)
            .flag("-F")
            .trusted_format("#{pane_id} #{session_id}")
            .build()?;
        let lines = self.inner.worker.run(caller, command).await?;
        lines
            .iter()
            .find_map(|line| {
                let text = std::str::from_utf8(line).ok()?;
                let (id, session) = text.split_once(' ')?;
                (id.parse::<PaneId>().ok()? == pane).then(|| session.parse().ok())?
            })
            .ok_or_else(|| EngineError::Command(format!("can't find pane: {pane}")))
    }

    /// The registration channel of `session`'s monitor, starting one if needed.
    async fn monitor(
        &self,
        caller: &Caller,
        session: SessionId,
    ) -> Result<mpsc::UnboundedSender<Register>, EngineError> {
        if let Some(tx) = self.running(session) {
            return Ok(tx);
        }
        let _attaching = self.inner.attaching.lock().await;
        // Another subscriber may have attached this session while we queued.
        if let Some(tx) = self.running(session) {
            return Ok(tx);
        }
        let limit = self.inner.settings.max_output_connections;
        let counts = || {
            let monitors = self.lock_monitors();
            let open = monitors.values().filter(|m| !m.register.is_closed());
            let mine = open.clone().filter(|m| *m.opener == *caller.id()).count();
            (open.count(), mine)
        };
        let (mut running, mut mine) = counts();
        let share = caller.watch_share();
        let caller_full = share.is_some_and(|share| mine >= share);
        if (running >= limit || caller_full)
            && self.release_kept((running < limit).then(|| caller.id()))
        {
            (running, mine) = counts();
        }
        if running >= limit {
            return Err(EngineError::TooManyWatched {
                server: self.inner.server.to_string(),
                limit,
                scope: QueueScope::Server,
            });
        }
        if let Some(share) = share
            && mine >= share
        {
            return Err(EngineError::TooManyWatched {
                server: self.inner.server.to_string(),
                limit: share,
                scope: QueueScope::Caller,
            });
        }
        let sink = Arc::new(SessionSink {
            session,
            router: self.inner.router.clone(),
            stats: self.inner.stats.clone(),
        });
        let options = ConnectOptions {
            tmux_bin: self.inner.settings.tmux_bin.clone(),
            endpoint: self.inner.endpoint.clone(),
            session: Some(session),
            output: OutputMode::On {
                pause_after_secs: self.inner.settings.pause_after_secs,
                sink,
            },
            timeout: self.inner.settings.connect_timeout,
        };
        let mut conn =
            Connection::connect(&options)
                .await
                .map_err(|cause| EngineError::Unavailable {
                    server: self.inner.server.to_string(),
                    cause,
                })?;
        // One subscription covers every pane of the session: tmux re-evaluates it each second
        // and reports only changes.
        let watch_dead = TmuxCommand::new("refresh-client")
            .opt(
                "-B",
                format!(
                    "{DEAD_SUBSCRIPTION}:%*:#{{pane_dead}}:#{{pane_dead_status}}:#{{pane_dead_signal}}"
                ),
            )
            .build()?;
        let (line, _) = LineRequest::new(watch_dead.as_bytes().to_vec(), 1);
        if conn
            .submit(vec![line], self.inner.settings.command_timeout)
            .await
            .is_err()
        {
            return Err(EngineError::Unavailable {
                server: self.inner.server.to_string(),
                cause: ConnectError::Refused("the output connection closed at once".into()),
            });
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let release = self.inner.shutdown.child_token();
        {
            let mut monitors = self.lock_monitors();
            monitors.retain(|_, monitor| !monitor.register.is_closed());
            monitors.insert(
                session,
                Monitor {
                    register: tx.clone(),
                    opener: caller.id().into(),
                    release: release.clone(),
                },
            );
        }
        self.inner.stats.connects.fetch_add(1, Ordering::Relaxed);
        self.inner
            .stats
            .connections_open
            .fetch_add(1, Ordering::Relaxed);
        let monitor = SessionMonitor {
            server: self.inner.server.clone(),
            session,
            conn,
            registrations: rx,
            router: self.inner.router.clone(),
            settings: self.inner.settings.clone(),
            shutdown: release,
            stats: self.inner.stats.clone(),
            dying: HashMap::new(),
        };
        tokio::spawn(monitor.run());
        Ok(tx)
    }
}

/// Routes one session connection's output.
struct SessionSink {
    session: SessionId,
    router: Arc<Router>,
    stats: Arc<OutputStats>,
}

impl OutputSink for SessionSink {
    fn output(&self, pane: PaneId, data: &[u8]) {
        self.stats
            .bytes_read
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        if let Some(stream) = self.router.stream(self.session, pane) {
            stream.push(data);
        }
    }
}

struct SessionMonitor {
    server: Arc<str>,
    session: SessionId,
    conn: Connection,
    registrations: mpsc::UnboundedReceiver<Register>,
    router: Arc<Router>,
    settings: Arc<EngineSettings>,
    /// Cancelled at shutdown, or when the hub releases this connection to make room.
    shutdown: CancellationToken,
    stats: Arc<OutputStats>,
    /// Panes reported dead before tmux knew how their program ended.
    dying: HashMap<PaneId, Dying>,
}

/// A pane whose status is awaited: since when, and when to ask tmux for it next.
#[derive(Debug, Clone, Copy)]
struct Dying {
    since: tokio::time::Instant,
    next_ask: tokio::time::Instant,
}

/// How long to wait for tmux to learn a dead pane's exit status.
const DEAD_STATUS_GRACE: Duration = Duration::from_secs(5);
/// How often to ask tmux for it meanwhile: the subscription does not always report the status
/// arriving after the dead flag (tmux 3.3a).
const DEAD_STATUS_ASK: Duration = Duration::from_millis(300);

enum MonitorWake {
    Register(Option<Register>),
    Event(Option<ConnEvent>),
    IdleCheck,
    DyingExpired,
    Shutdown,
}

impl SessionMonitor {
    async fn run(mut self) {
        let idle = self
            .settings
            .output_idle_close
            .max(Duration::from_millis(100));
        let mut idle_check = tokio::time::interval(idle);
        idle_check.tick().await;
        let mut idle_since: Option<tokio::time::Instant> = None;
        let end = loop {
            let dying_deadline = self.dying.values().map(|d| d.next_ask).min();
            let wake = tokio::select! {
                () = self.shutdown.cancelled() => MonitorWake::Shutdown,
                reg = self.registrations.recv() => MonitorWake::Register(reg),
                event = self.conn.next_event() => MonitorWake::Event(event),
                _ = idle_check.tick() => MonitorWake::IdleCheck,
                () = sleep_until(dying_deadline) => MonitorWake::DyingExpired,
            };
            match wake {
                MonitorWake::Shutdown | MonitorWake::Register(None) => {
                    break StreamEnd::ConnectionClosed("muxgate is shutting down".into());
                }
                MonitorWake::Register(Some(reg)) => {
                    let routed = self.router.insert_or_existing(self.session, reg.stream);
                    idle_since = None;
                    let _ = reg.done.send(routed);
                }
                MonitorWake::IdleCheck => {
                    self.router.expire_kept(tokio::time::Instant::now());
                    if !self.router.live_panes(self.session).is_empty() {
                        idle_since = None;
                    } else if idle_since.is_some_and(|t| t.elapsed() >= idle) {
                        tracing::debug!(server = %self.server, session = %self.session, "closing idle output connection");
                        break StreamEnd::ConnectionClosed("idle".into());
                    } else if idle_since.is_none() {
                        idle_since = Some(tokio::time::Instant::now());
                    }
                }
                MonitorWake::Event(Some(ConnEvent::Closed { reason, .. })) => {
                    break if reason.server_gone() {
                        StreamEnd::ServerGone
                    } else {
                        StreamEnd::SessionClosed
                    };
                }
                MonitorWake::Event(None) => {
                    break StreamEnd::ConnectionClosed("reader ended".into());
                }
                MonitorWake::Event(Some(ConnEvent::SessionChanged { .. })) => {
                    break StreamEnd::SessionClosed;
                }
                MonitorWake::DyingExpired => self.ask_dying().await,
                MonitorWake::Event(Some(ConnEvent::Pause(pane))) => self.resume(pane).await,
                MonitorWake::Event(Some(ConnEvent::Continue(_))) => {}
                MonitorWake::Event(Some(ConnEvent::Notification { name, args })) => {
                    self.on_notification(&name, &args).await;
                }
            }
        };
        // Close the connection first so no output arrives after the streams end.
        let conn = self.conn;
        conn.close(self.settings.connect_timeout).await;
        self.router.close_where(self.session, &end, |_| true);
        self.stats.connections_open.fetch_sub(1, Ordering::Relaxed);
    }

    async fn resume(&mut self, pane: PaneId) {
        self.stats.pauses.fetch_add(1, Ordering::Relaxed);
        if let Some(stream) = self.router.stream(self.session, pane) {
            stream.mark_gap();
        }
        let Ok(command) = TmuxCommand::new("refresh-client")
            .opt("-A", format!("{pane}:continue"))
            .build()
        else {
            return;
        };
        let (line, _) = LineRequest::new(command.as_bytes().to_vec(), 1);
        let _ = self
            .conn
            .submit(vec![line], self.settings.command_timeout)
            .await;
    }

    async fn on_notification(&mut self, name: &str, args: &[u8]) {
        match name {
            "subscription-changed" => {
                let Some(change) = SubscriptionChange::parse(args) else {
                    return;
                };
                if change.name != DEAD_SUBSCRIPTION.as_bytes() {
                    return;
                }
                let Some(pane) = change.pane else { return };
                match parse_dead_value(change.value) {
                    DeadValue::Alive => {
                        self.dying.remove(&pane);
                    }
                    DeadValue::Dead(status) => {
                        self.dying.remove(&pane);
                        self.pane_exited(pane, status);
                    }
                    // The pty closed but tmux has not reaped the program yet; its status follows
                    // in a later change (or never, if it lives on without a terminal).
                    DeadValue::DeadUnknown => {
                        let now = tokio::time::Instant::now();
                        self.dying.entry(pane).or_insert(Dying {
                            since: now,
                            next_ask: now + DEAD_STATUS_ASK,
                        });
                    }
                }
            }
            "window-close" | "unlinked-window-close" | "layout-change" | "window-pane-changed" => {
                self.drop_vanished_panes().await;
            }
            _ => {}
        }
    }

    fn pane_exited(&self, pane: PaneId, status: Option<i32>) {
        self.router
            .close_where(self.session, &StreamEnd::PaneExited { status }, |p| {
                p == pane
            });
    }

    /// After a structural change, ends the streams of subscribed panes that no longer exist.
    /// Asks tmux for the status of dead panes that are due; ends their streams once it is
    /// known, or without it after [`DEAD_STATUS_GRACE`].
    async fn ask_dying(&mut self) {
        let now = tokio::time::Instant::now();
        let due: Vec<(PaneId, Dying)> = self
            .dying
            .iter()
            .filter(|(_, d)| now >= d.next_ask)
            .map(|(p, d)| (*p, *d))
            .collect();
        for (pane, dying) in due {
            match self.dead_value(pane).await {
                Some(DeadValue::Dead(status)) => {
                    self.dying.remove(&pane);
                    self.pane_exited(pane, status);
                }
                Some(DeadValue::Alive) => {
                    self.dying.remove(&pane);
                }
                _ if now >= dying.since + DEAD_STATUS_GRACE => {
                    self.dying.remove(&pane);
                    self.pane_exited(pane, None);
                }
                _ => {
                    if let Some(d) = self.dying.get_mut(&pane) {
                        d.next_ask = now + DEAD_STATUS_ASK;
                    }
                }
            }
        }
    }

    /// `pane`'s dead flag and status, asked directly (one command); `None` when tmux does not
    /// answer or the pane is gone.
    async fn dead_value(&mut self, pane: PaneId) -> Option<DeadValue> {
        let command = TmuxCommand::new("display-message")
            .flag("-p")
            .target(pane)
            .trusted_format("#{pane_id}:#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}")
            .build()
            .ok()?;
        let body = self.ask(&command).await?;
        // tmux 3.3a answers a missing pane with an empty line: require the pane's own id.
        let rest = body.first()?.strip_prefix(format!("{pane}:").as_bytes())?;
        Some(parse_dead_value(rest))
    }

    /// Runs one command on this connection and returns the lines of its successful reply;
    /// `None` when it fails, the connection is gone or tmux does not answer in time. Output
    /// keeps flowing on the reader task while this waits.
    async fn ask(&mut self, command: &TmuxCommand) -> Option<Vec<Vec<u8>>> {
        let (line, reply) = LineRequest::new(command.as_bytes().to_vec(), 1);
        self.conn
            .submit(vec![line], self.settings.command_timeout)
            .await
            .ok()?;
        let blocks = tokio::time::timeout(self.settings.command_timeout, reply)
            .await
            .ok()?
            .ok()?
            .ok()?;
        blocks.into_iter().next().filter(|b| b.ok).map(|b| b.body)
    }

    async fn drop_vanished_panes(&mut self) {
        if self.router.live_panes(self.session).is_empty() {
            return;
        }
        let Ok(command) = TmuxCommand::new("list-panes")
            .flag("-s")
            .target(self.session)
            .flag("-F")
            .trusted_format("#{pane_id}")
            .build()
        else {
            return;
        };
        let Some(body) = self.ask(&command).await else {
            return;
        };
        let existing: HashSet<PaneId> = body.iter().filter_map(|l| PaneId::from_bytes(l)).collect();
        self.router
            .close_where(self.session, &StreamEnd::PaneClosed, |p| {
                !existing.contains(&p)
            });
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The value of the dead-pane subscription: `pane_dead:pane_dead_status:pane_dead_signal`.
#[derive(Debug, PartialEq, Eq)]
enum DeadValue {
    Alive,
    /// Dead with its exit status, or 128 + signal for a killed program (as shells report it).
    Dead(Option<i32>),
    DeadUnknown,
}

fn parse_dead_value(value: &[u8]) -> DeadValue {
    let text = String::from_utf8_lossy(value);
    let mut parts = text.split(':');
    if parts.next() != Some("1") {
        return DeadValue::Alive;
    }
    let status = parts.next().and_then(|s| s.parse::<i32>().ok());
    let signal = parts.next().and_then(|s| s.parse::<i32>().ok());
    match (status, signal) {
        (Some(status), _) => DeadValue::Dead(Some(status)),
        (None, Some(signal)) => DeadValue::Dead(Some(128 + signal)),
        (None, None) => DeadValue::DeadUnknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_dead_pane_values() {
        assert_eq!(parse_dead_value(b"0::"), DeadValue::Alive);
        assert_eq!(parse_dead_value(b"1:3:"), DeadValue::Dead(Some(3)));
        assert_eq!(parse_dead_value(b"1::9"), DeadValue::Dead(Some(137)));
        assert_eq!(parse_dead_value(b"1::"), DeadValue::DeadUnknown);
        assert_eq!(parse_dead_value(b""), DeadValue::Alive);
    }
}
