//! Output watching: how pane output reaches [`PaneStream`]s.
//!
//! tmux sends `%output` to a control client only for panes of windows linked into the session
//! it is attached to. Each server has at most one output connection, attached to the server's
//! watch session ([`crate::output::watch_session`]): the [`OutputHub`] links the window of a pane into
//! it when the pane gets its first subscriber, and unlinks a window once nothing has watched it
//! for `output_idle_close`; once nothing is watched the session is killed and the connection
//! closed, and both come back with the next subscriber. Pane output is routed by the
//! `router`. The hub caps the sessions watched at once (a session is watched while one
//! of its windows is linked), per server and per caller.
//!
//! The `WatchMonitor` task of the connection:
//! - routes `%output` into the streams of subscribed panes (on the reader task, without waiting
//!   on anyone — see [`crate::client::connection`]);
//! - on `%pause` (tmux dropped output it could not deliver in time) marks a gap in the stream and
//!   resumes the pane at once with `refresh-client -A '%N:continue'`;
//! - ends a stream when its pane's program exits (`refresh-client -B` subscription on
//!   `#{pane_dead}`, evaluated by tmux itself once a second: no command from muxgate), when the
//!   pane disappears (checked with one `list-panes` after a window/layout notification; a pane
//!   moved to another window has that window linked instead), or when the server goes away;
//! - kills a window left linked into the watch session only (its own session was killed), as
//!   tmux would have killed it without muxgate, and ends its streams.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::client::connection::{
    CloseReason, ConnEvent, ConnectError, ConnectOptions, Connection, LineRequest, OutputMode,
    OutputSink,
};
use crate::client::spawn::{ClientLaunch, TmuxEndpoint, term_marker};
use crate::client::worker::{BatchMode, Caller, CommandOutcome, WorkerHandle};
use crate::output::router::Router;
use crate::output::watch_session;
use crate::output::{OutputSubscription, PaneStream, StreamEnd};
use crate::wire::command::TmuxCommand;
use crate::wire::ids::{PaneId, SessionId, WindowId};
use crate::wire::protocol::{Block, SubscriptionChange};
use crate::{EngineError, EngineSettings, QueueScope};

const DEAD_SUBSCRIPTION: &str = "muxgate_dead";

/// Counters an operator can read (exported as metrics).
#[derive(Debug, Default)]
pub struct OutputStats {
    /// Bytes of pane output received, decoded, whether a stream wanted them or not.
    pub bytes_read: AtomicU64,
    /// `%pause`s received: times tmux dropped a pane's output it could not deliver in time.
    pub pauses: AtomicU64,
    /// Output connections open now.
    pub connections_open: AtomicI64,
    /// Output connections opened.
    pub connects: AtomicU64,
}

/// Routes the watch connection's output.
struct RouterSink {
    router: Arc<Router>,
    stats: Arc<OutputStats>,
}

impl OutputSink for RouterSink {
    fn output(&self, pane: PaneId, data: &[u8]) {
        self.stats
            .bytes_read
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        if let Some(stream) = self.router.stream(pane) {
            stream.push(data);
        }
    }
}

/// The running watch session, and the windows linked into it.
struct Watch {
    session: SessionId,
    /// Cancelled by the monitor when the session starts to end: nothing more is linked.
    ended: CancellationToken,
    /// Cancelled once the connection is closed and the session destroyed: a new one may start.
    gone: CancellationToken,
    linked: HashMap<WindowId, Linked>,
    /// Windows the hub stopped counting to make room, for the monitor to unlink.
    released: Vec<WindowId>,
    /// Owners the worker's client has switched to while this session lives, so more recently
    /// active than it (`watch_session::links`).
    switched: HashSet<SessionId>,
    /// The worker's connection count when `switched` was taken: a new connection attaches to a
    /// session of tmux's choosing, perhaps this one, which would make it the most recent again.
    switched_on: u64,
}

/// Why a window is linked: its own session (counted against the caps) and the caller whose
/// subscription linked it (counted against that caller's share).
#[derive(Clone)]
struct Linked {
    session: SessionId,
    opener: Arc<str>,
}

impl Watch {
    fn running(&self) -> bool {
        !self.ended.is_cancelled()
    }

    /// The owners known to be more recent than this session, with the worker's connection
    /// count now; forgotten when the worker has connected again since they were switched to.
    fn switched(&mut self, connects: u64) -> &HashSet<SessionId> {
        if self.switched_on != connects {
            self.switched.clear();
            self.switched_on = connects;
        }
        &self.switched
    }

    /// Sessions watched or `planned`, and how many of them `caller` opened.
    fn counts(&self, caller: &str, planned: &[&Linked]) -> (usize, usize) {
        let mut sessions: HashMap<SessionId, bool> = HashMap::new();
        for linked in self.linked.values().chain(planned.iter().copied()) {
            *sessions.entry(linked.session).or_default() |= *linked.opener == *caller;
        }
        let mine = sessions.values().filter(|mine| **mine).count();
        (sessions.len(), mine)
    }
}

/// Where a pane is: its window and the session that window belongs to.
#[derive(Debug, Clone, Copy)]
struct Place {
    window: WindowId,
    session: SessionId,
}

/// The output side of one tmux server.
#[derive(Clone)]
pub struct OutputHub {
    inner: Arc<HubInner>,
}

struct HubInner {
    server: Arc<str>,
    endpoint: TmuxEndpoint,
    settings: Arc<EngineSettings>,
    worker: WorkerHandle,
    shutdown: CancellationToken,
    router: Arc<Router>,
    /// The watch session, read and updated under a short lock.
    watch: Mutex<Option<Watch>>,
    /// Taken for the whole of a change to the watch session (starting it, linking or unlinking
    /// a window), so that changes never interleave; never for a lookup, so subscribers of
    /// watched panes never queue behind one.
    changing: tokio::sync::Mutex<()>,
    /// Windows waiting to be linked, taken in batches by one task ([`OutputHub::drain_links`]).
    pending_links: Mutex<Vec<LinkRequest>>,
    /// Windows with a link request queued or in a batch being linked, and how many requests
    /// each: the monitor leaves their panes to the link (see [`watch_session::departures`]).
    requested: Mutex<HashMap<WindowId, usize>>,
    /// Whether that task runs.
    linking: AtomicBool,
    stats: Arc<OutputStats>,
}

/// A subscriber's request to link its pane's window, answered once the batch holding it ran.
struct LinkRequest {
    caller: Caller,
    place: Place,
    done: LinkDone,
}

/// Where a link request's outcome goes.
type LinkDone = oneshot::Sender<Result<(), EngineError>>;

/// The subscribers waiting for each window of a batch to be linked.
type Subscribers = HashMap<WindowId, Vec<LinkDone>>;

impl HubInner {
    fn lock_watch(&self) -> std::sync::MutexGuard<'_, Option<Watch>> {
        // Every update is a single assignment or map operation: a poisoned lock is consistent.
        self.watch.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, Vec<LinkRequest>> {
        // Only pushed to and drained: a poisoned lock is consistent.
        self.pending_links.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_requested(&self) -> std::sync::MutexGuard<'_, HashMap<WindowId, usize>> {
        // Single map operations only: a poisoned lock is consistent.
        self.requested.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a link request for `window` in (`true`) or out.
    fn count_request(&self, window: WindowId, added: bool) {
        let mut requested = self.lock_requested();
        let count = requested.entry(window).or_default();
        if added {
            *count += 1;
        } else {
            *count = count.saturating_sub(1);
            if *count == 0 {
                requested.remove(&window);
            }
        }
    }

    /// The running watch session, if `window` is linked into it.
    fn linked(&self, window: WindowId) -> bool {
        self.lock_watch()
            .as_ref()
            .is_some_and(|w| w.running() && w.linked.contains_key(&window))
    }

    fn unavailable(&self, why: impl Into<String>) -> EngineError {
        EngineError::Unavailable {
            server: self.server.to_string(),
            cause: ConnectError::Refused(why.into()),
        }
    }
}

impl OutputHub {
    /// The output side of the server `server` at `endpoint`, sending its commands through
    /// `worker`; its output connection closes when `shutdown` fires. Nothing connects until a
    /// pane is first subscribed to or kept.
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
                watch: Mutex::new(None),
                changing: tokio::sync::Mutex::new(()),
                pending_links: Mutex::new(Vec::new()),
                requested: Mutex::new(HashMap::new()),
                linking: AtomicBool::new(false),
                stats: Arc::new(OutputStats::default()),
            }),
        }
    }

    /// The hub's counters.
    pub fn stats(&self) -> &OutputStats {
        &self.inner.stats
    }

    /// How many output subscriptions are alive (for metrics and leak checks).
    pub fn subscriptions(&self) -> usize {
        self.inner.router.subscriptions()
    }

    /// Windows linked into the watch session now.
    pub fn watched_windows(&self) -> usize {
        self.inner
            .lock_watch()
            .as_ref()
            .filter(|w| w.running())
            .map_or(0, |w| w.linked.len())
    }

    /// `pane`'s stream, if it is recording now (a subscriber or a keep holds it open); nothing
    /// is started.
    pub fn recording(&self, pane: PaneId) -> Option<Arc<PaneStream>> {
        self.inner.router.live(pane).map(|(_, stream)| stream)
    }

    /// Subscribes to `pane`'s output from now on. When this returns, output the pane produces
    /// from this moment is captured (so a caller may subscribe, then send keys).
    ///
    /// Gives up at `deadline` with [`EngineError::Timeout`]: the first subscriber of a window
    /// waits for it to be linked, behind the changes queued before it.
    pub async fn subscribe(
        &self,
        caller: &Caller,
        pane: PaneId,
        deadline: Instant,
    ) -> Result<OutputSubscription, EngineError> {
        let started = Instant::now();
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
        deadline: Instant,
        period: Duration,
    ) -> Result<Arc<PaneStream>, EngineError> {
        let subscription = self.subscribe(caller, pane, deadline).await?;
        let stream = subscription.stream().clone();
        self.inner.router.keep(&stream, Instant::now() + period);
        Ok(stream)
    }

    async fn subscribe_now(
        &self,
        caller: &Caller,
        pane: PaneId,
    ) -> Result<OutputSubscription, EngineError> {
        // The watch session may end between linking and returning (its last window idled out
        // at that moment): then link again.
        for _ in 0..3 {
            if let Some((window, stream)) = self.inner.router.live(pane)
                && self.inner.linked(window)
            {
                self.inner.router.settled(pane);
                return Ok(stream.subscribe());
            }
            let (place, origin) = self.locate(caller, pane).await?;
            // Routed before the window is linked, so no byte that arrives after is missed. A
            // stream of this very pane that a lost connection interrupted goes on.
            let routed = self.inner.router.route(
                pane,
                place.window,
                origin,
                self.inner.settings.output_ring_bytes,
            );
            // A stream routed before may know an older window (the pane was moved since).
            self.inner.router.moved(pane, place.window);
            let subscription = routed.subscribe();
            if !self.inner.linked(place.window) {
                self.link(caller, place).await?;
            }
            if !routed.is_closed() && self.inner.linked(place.window) {
                self.inner.router.settled(pane);
                return Ok(subscription);
            }
        }
        Err(self
            .inner
            .unavailable("the watch session kept closing while muxgate was linking"))
    }

    /// Where `pane` is, and its origin ([`watch_session::PlaceRow::origin`]). tmux answers for
    /// the most recently active session holding the pane's window; should that be the watch
    /// session, the window's own session is looked up.
    async fn locate(&self, caller: &Caller, pane: PaneId) -> Result<(Place, String), EngineError> {
        let lines = self
            .inner
            .worker
            .run(caller, watch_session::place(pane)?)
            .await?;
        let Some(row) = watch_session::parse_place(&lines, pane) else {
            return Err(EngineError::Command(format!("can't find pane: {pane}")));
        };
        let window = row.window;
        if !watch_session::is_watch_session(&row.session_name) {
            let place = Place {
                window,
                session: row.session,
            };
            return Ok((place, row.origin));
        }
        let command = TmuxCommand::new("list-windows")
            .flag("-a")
            .opt("-F", "#{window_id} #{session_id} #{session_name}")
            .build()?;
        let lines = self.inner.worker.run(caller, command).await?;
        lines
            .iter()
            .filter_map(|line| std::str::from_utf8(line).ok())
            .filter_map(|text| {
                let mut parts = text.splitn(3, ' ');
                let w = parts.next()?.parse::<WindowId>().ok()?;
                let s = parts.next()?.parse::<SessionId>().ok()?;
                let name = parts.next().unwrap_or("");
                (w == window && !watch_session::is_watch_session(name)).then_some(s)
            })
            .next()
            .map(|session| (Place { window, session }, row.origin))
            .ok_or_else(|| EngineError::Command(format!("can't find pane: {pane}")))
    }

    /// Links `place`'s window into the watch session, starting the session if none runs.
    ///
    /// Requests queue and one task links them in batches, each batch one job of the worker (its
    /// lines pipelined, each window's link and its switch, if any, on one line, so no other
    /// command runs between them): a storm of first subscribers costs one job per batch, not a
    /// round trip each. The task, not this call, runs the batch, so a subscriber that gives up (its
    /// deadline) leaves the others' links and the hub's record of them whole.
    async fn link(&self, caller: &Caller, place: Place) -> Result<(), EngineError> {
        let (done, result) = oneshot::channel();
        self.inner.count_request(place.window, true);
        self.inner.lock_pending().push(LinkRequest {
            caller: caller.clone(),
            place,
            done,
        });
        if !self.inner.linking.swap(true, Ordering::AcqRel) {
            tokio::spawn(self.clone().drain_links());
        }
        result
            .await
            .unwrap_or_else(|_| Err(self.inner.unavailable("muxgate stopped while linking")))
    }

    /// Links queued windows, a batch at a time, until none is left.
    async fn drain_links(self) {
        loop {
            let batch: Vec<LinkRequest> = {
                let mut pending = self.inner.lock_pending();
                let n = pending.len().min(LINKS_PER_BATCH);
                pending.drain(..n).collect()
            };
            if batch.is_empty() {
                self.inner.linking.store(false, Ordering::Release);
                // A request pushed after the drain above but before the store saw the task
                // still running: take it on, unless a new task already did.
                if self.inner.lock_pending().is_empty()
                    || self.inner.linking.swap(true, Ordering::AcqRel)
                {
                    return;
                }
                continue;
            }
            let windows: Vec<WindowId> = batch.iter().map(|r| r.place.window).collect();
            let _changing = self.inner.changing.lock().await;
            self.link_batch(batch).await;
            // Recorded as linked by now, or failed: the monitor may look their panes up.
            for window in windows {
                self.inner.count_request(window, false);
            }
        }
    }

    /// Links one batch: starts the watch session with the first window if none runs, checks
    /// each request against the caps in order, then links the rest in one job.
    async fn link_batch(&self, batch: Vec<LinkRequest>) {
        let mut batch = batch.into_iter();
        let Some(watch) = self.running_watch(&mut batch).await else {
            return;
        };
        let (planned, mut waiting) = self.plan(batch);
        if planned.is_empty() {
            return;
        }
        let mut outcomes = self.link_into(watch, &planned).await;
        if outcomes.iter().any(|o| {
            o.as_ref()
                .is_err_and(|e| !matches!(e, EngineError::Command(_)))
        }) {
            // The job as a whole failed (a timeout, a lost connection): some lines may have run.
            // What tmux holds decides, so that no window stays linked unrecorded.
            if let Some(present) = self.windows_in(watch).await {
                for ((window, _), outcome) in planned.iter().zip(outcomes.iter_mut()) {
                    if present.contains(window) {
                        *outcome = Ok(());
                    }
                }
            }
        }
        for ((window, linked), outcome) in planned.into_iter().zip(outcomes) {
            let mut guard = self.inner.lock_watch();
            let running = guard.as_mut().filter(|w| w.session == watch && w.running());
            let outcome = match (running, outcome) {
                (Some(w), Ok(())) => {
                    w.linked.insert(window, linked);
                    Ok(())
                }
                // The session ended meanwhile: the subscriber finds its window unlinked and
                // tries again with the next one.
                (None, _) => Ok(()),
                (Some(_), Err(e)) => Err(e),
            };
            drop(guard);
            for done in waiting.remove(&window).unwrap_or_default() {
                let _ = done.send(outcome.clone());
            }
        }
    }

    /// The running watch session, waiting for an ending one to be gone, or started with the
    /// first request of `batch` still waited for. A start that fails for another reason than
    /// the caps fails the rest of the batch with it: each would fail the same way, one
    /// connect timeout after another.
    async fn running_watch(
        &self,
        batch: &mut std::vec::IntoIter<LinkRequest>,
    ) -> Option<SessionId> {
        loop {
            let current = self
                .inner
                .lock_watch()
                .as_ref()
                .map(|w| (w.session, w.running(), w.gone.clone()));
            match current {
                // A session that is ending must be gone before a new one can take its name.
                Some((_, false, gone)) => gone.cancelled().await,
                Some((watch, true, _)) => return Some(watch),
                None => {
                    let first = batch.find(|r| !r.done.is_closed())?;
                    let started = match self.check_caps(&first.caller, first.place.session, &[]) {
                        Ok(()) => self.start(&first.caller, first.place).await,
                        Err(e) => Err(e),
                    };
                    match started {
                        Err(e) if !matches!(e, EngineError::TooManyWatched { .. }) => {
                            for request in batch.by_ref().chain(std::iter::once(first)) {
                                let _ = request.done.send(Err(e.clone()));
                            }
                            return None;
                        }
                        started => {
                            let _ = first.done.send(started);
                        }
                    }
                }
            }
        }
    }

    /// The requests of a batch to link, in order, within the caps: each window once, with the
    /// subscribers waiting for it. Requests whose window is linked already, or that are
    /// refused, are answered here; those whose subscriber gave up are dropped.
    fn plan(
        &self,
        batch: impl Iterator<Item = LinkRequest>,
    ) -> (Vec<(WindowId, Linked)>, Subscribers) {
        let mut planned: Vec<(WindowId, Linked)> = Vec::new();
        let mut waiting = Subscribers::new();
        for request in batch {
            if request.done.is_closed() {
                continue;
            }
            let window = request.place.window;
            if let Some(others) = waiting.get_mut(&window) {
                others.push(request.done);
                continue;
            }
            if self.inner.linked(window) {
                let _ = request.done.send(Ok(()));
                continue;
            }
            let held: Vec<&Linked> = planned.iter().map(|(_, l)| l).collect();
            match self.check_caps(&request.caller, request.place.session, &held) {
                Ok(()) => {
                    let linked = Linked {
                        session: request.place.session,
                        opener: request.caller.id().into(),
                    };
                    planned.push((window, linked));
                    waiting.insert(window, vec![request.done]);
                }
                Err(e) => {
                    let _ = request.done.send(Err(e));
                }
            }
        }
        (planned, waiting)
    }

    /// The windows tmux holds in the watch session, or `None` if it cannot tell.
    async fn windows_in(&self, watch: SessionId) -> Option<HashSet<WindowId>> {
        let command = watch_session::windows(watch).ok()?;
        let rows = self
            .inner
            .worker
            .run(&Caller::new(MONITOR_CALLER), command)
            .await
            .ok()?;
        Some(watch_session::listed(&rows))
    }

    /// Links `windows` into the running `watch`, switching only to owners not switched to
    /// before while it lives: one outcome per window, in order.
    async fn link_into(
        &self,
        watch: SessionId,
        windows: &[(WindowId, Linked)],
    ) -> Vec<Result<(), EngineError>> {
        let connects = self.worker_connects();
        let switched = self
            .inner
            .lock_watch()
            .as_mut()
            .filter(|w| w.session == watch)
            .map(|w| w.switched(connects).clone())
            .unwrap_or_default();
        let (outcomes, newly_switched) = self.run_links(watch, windows, &switched).await;
        if let Some(w) = self
            .inner
            .lock_watch()
            .as_mut()
            .filter(|w| w.session == watch && w.switched_on == connects)
        {
            w.switched.extend(newly_switched);
        }
        outcomes
    }

    /// Runs the links of `windows` into `watch`, switching to owners not in `switched`: one
    /// outcome per window, in order, and the owners switched to.
    async fn run_links(
        &self,
        watch: SessionId,
        windows: &[(WindowId, Linked)],
        switched: &HashSet<SessionId>,
    ) -> (Vec<Result<(), EngineError>>, Vec<SessionId>) {
        let places: Vec<(WindowId, SessionId)> =
            windows.iter().map(|(w, l)| (*w, l.session)).collect();
        let lines = match watch_session::links(watch, &places, switched) {
            Ok(lines) => lines,
            Err(e) => return (vec![Err(e.into()); windows.len()], Vec::new()),
        };
        let lengths = lines.iter().map(|line| line.commands.len()).collect();
        let commands = lines
            .iter()
            .flat_map(|line| line.commands.iter().cloned())
            .collect();
        let outcomes = self
            .inner
            .worker
            .run_batch(
                &Caller::new(MONITOR_CALLER),
                commands,
                BatchMode::Lines(lengths),
                None,
            )
            .await;
        let mut outcomes = match outcomes {
            Ok(outcomes) => outcomes.into_iter(),
            Err(e) => return (vec![Err(e); windows.len()], Vec::new()),
        };
        let lost = || EngineError::ConnectionLost {
            server: self.inner.server.to_string(),
        };
        let mut newly_switched = Vec::new();
        let linked = lines
            .iter()
            .map(|line| {
                let link = outcomes.next();
                if let Some(owner) = line.switches
                    && matches!(outcomes.next(), Some(CommandOutcome::Ok(_)))
                {
                    newly_switched.push(owner);
                }
                match link {
                    Some(CommandOutcome::Ok(_)) => Ok(()),
                    Some(CommandOutcome::Failed(message)) => Err(EngineError::Command(message)),
                    Some(CommandOutcome::NotRun) | None => Err(lost()),
                }
            })
            .collect();
        (linked, newly_switched)
    }

    /// How many times the worker has connected to tmux.
    fn worker_connects(&self) -> u64 {
        self.inner.worker.stats().connects.load(Ordering::Relaxed)
    }

    /// Refuses a new watched session beyond the server's cap or the caller's share, after
    /// releasing one watched only for ledgers if that makes room.
    fn check_caps(
        &self,
        caller: &Caller,
        session: SessionId,
        planned: &[&Linked],
    ) -> Result<(), EngineError> {
        let limit = self.inner.settings.max_watched_sessions;
        let share = caller.watch_share();
        let counts = || {
            let watch = self.inner.lock_watch();
            let Some(watch) = watch.as_ref().filter(|w| w.running()) else {
                return (0, 0, false);
            };
            let (running, mine) = watch.counts(caller.id(), planned);
            let watched = watch
                .linked
                .values()
                .chain(planned.iter().copied())
                .any(|l| l.session == session);
            (running, mine, watched)
        };
        let (mut running, mut mine, watched) = counts();
        if watched {
            return Ok(());
        }
        let caller_full = share.is_some_and(|share| mine >= share);
        if (running >= limit || caller_full)
            && self.release_kept((running < limit).then(|| caller.id()))
        {
            (running, mine, _) = counts();
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
        Ok(())
    }

    /// Stops watching one session watched only to keep ledgers recording (the one kept for
    /// the shortest time; of `opener`'s sessions when given), so that a subscriber can have its
    /// place: its windows are forgotten at once and unlinked by the monitor. Whether one was.
    fn release_kept(&self, opener: Option<&str>) -> bool {
        let held = self.inner.router.live_windows();
        let mut guard = self.inner.lock_watch();
        let Some(watch) = guard.as_mut() else {
            return false;
        };
        // Each session's latest keep, or `None` once a subscriber holds any of its windows.
        let mut sessions: HashMap<SessionId, Option<Instant>> = HashMap::new();
        for (window, linked) in &watch.linked {
            if opener.is_some_and(|o| *linked.opener != *o) {
                continue;
            }
            // A window no stream holds any more is idle: the first to go.
            let kept_until = held.get(window).copied().unwrap_or(Some(Instant::now()));
            sessions
                .entry(linked.session)
                .and_modify(|latest| {
                    *latest = match (*latest, kept_until) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        _ => None,
                    }
                })
                .or_insert(kept_until);
        }
        let victim = sessions
            .into_iter()
            .filter_map(|(session, until)| until.map(|until| (until, session)))
            .min();
        let Some((_, session)) = victim else {
            return false;
        };
        tracing::debug!(server = %self.inner.server, %session, "releasing a session watched only for ledgers, to make room");
        let windows: HashSet<WindowId> = watch
            .linked
            .iter()
            .filter(|(_, l)| l.session == session)
            .map(|(w, _)| *w)
            .collect();
        watch.linked.retain(|w, _| !windows.contains(w));
        watch.released.extend(windows.iter().copied());
        drop(guard);
        self.inner.router.close_where(
            &StreamEnd::ConnectionClosed("released to make room for a wait".into()),
            |_, window| windows.contains(&window),
        );
        true
    }

    /// Starts the watch session with `place`'s window in it, and its connection and monitor.
    async fn start(&self, caller: &Caller, place: Place) -> Result<(), EngineError> {
        let (conn, placeholder) = self.connect(caller).await?;
        let watch = conn.session();
        let first = Linked {
            session: place.session,
            opener: caller.id().into(),
        };
        let connects = self.worker_connects();
        let (linked, switched) = self
            .run_links(watch, &[(place.window, first.clone())], &HashSet::new())
            .await;
        if let Some(Err(e)) = linked.into_iter().next() {
            let kill = TmuxCommand::new("kill-session").target(watch).build()?;
            let _ = self.inner.worker.run(caller, kill).await;
            conn.close(self.inner.settings.connect_timeout).await;
            return Err(e);
        }
        let ended = CancellationToken::new();
        *self.inner.lock_watch() = Some(Watch {
            session: watch,
            ended: ended.clone(),
            gone: CancellationToken::new(),
            linked: HashMap::from([(place.window, first)]),
            released: Vec::new(),
            switched: switched.into_iter().collect(),
            switched_on: connects,
        });
        self.inner.stats.connects.fetch_add(1, Ordering::Relaxed);
        self.inner
            .stats
            .connections_open
            .fetch_add(1, Ordering::Relaxed);
        let monitor = WatchMonitor {
            hub: self.inner.clone(),
            watch,
            placeholder,
            conn,
            ended,
            dying: HashMap::new(),
            idle_since: HashMap::new(),
            check_at: None,
            follow_at: None,
            empty_since: None,
        };
        tokio::spawn(monitor.run());
        Ok(())
    }

    /// The output connection, on a watch session it creates itself (so the session never
    /// exists without its client: another client attaching without a target could otherwise
    /// pick it), with the placeholder window's id. A watch session left by a muxgate that died
    /// (no client attached; its windows whose own session has ended live on in it until now)
    /// is killed first, after this gateway's command client leaves it (tmux attaches a client
    /// that names no session to the most recent one); one with a client is another gateway's,
    /// and this one does not fight it.
    async fn connect(&self, caller: &Caller) -> Result<(Connection, WindowId), EngineError> {
        match self.connect_once().await {
            Err(EngineError::Unavailable {
                cause: ConnectError::Refused(message),
                ..
            }) if message.contains("duplicate session") => {
                let rows = self
                    .inner
                    .worker
                    .run(caller, watch_session::clients()?)
                    .await?;
                let ours = term_marker();
                if !watch_session::is_stale(&rows, &ours) {
                    return Err(self.inner.unavailable(format!(
                        "another client is attached to this server's {} session (a second gateway?)",
                        watch_session::WATCH_SESSION
                    )));
                }
                if watch_session::ours_attached(&rows, &ours) {
                    self.inner
                        .worker
                        .run(caller, watch_session::leave()?)
                        .await?;
                }
                self.inner
                    .worker
                    .run(caller, watch_session::kill_stale()?)
                    .await?;
                self.connect_once().await
            }
            other => other,
        }
    }

    /// Creates the watch session through a new output connection, with its dead-pane
    /// subscription.
    async fn connect_once(&self) -> Result<(Connection, WindowId), EngineError> {
        let sink = Arc::new(RouterSink {
            router: self.inner.router.clone(),
            stats: self.inner.stats.clone(),
        });
        let options = ConnectOptions {
            tmux_bin: self.inner.settings.tmux_bin.clone(),
            endpoint: self.inner.endpoint.clone(),
            session: None,
            create: Some(watch_session::NEW_SESSION),
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
        let watch = conn.session();
        // One subscription covers every pane of the session: tmux re-evaluates it each second
        // and reports only changes.
        let commands = [
            watch_session::placeholder(watch)?,
            TmuxCommand::new("refresh-client")
                .opt(
                    "-B",
                    format!(
                        "{DEAD_SUBSCRIPTION}:%*:#{{pane_dead}}:#{{pane_dead_status}}:#{{pane_dead_signal}}"
                    ),
                )
                .build()?,
        ];
        let blocks = ask_line(&mut conn, &commands, self.inner.settings.command_timeout).await;
        let placeholder = blocks
            .filter(|blocks| blocks.len() == commands.len() && blocks.iter().all(|b| b.ok))
            .and_then(|blocks| watch_session::parse_placeholder(&blocks[0].body));
        match placeholder {
            Some(placeholder) => Ok((conn, placeholder)),
            None => {
                conn.close(self.inner.settings.connect_timeout).await;
                Err(self
                    .inner
                    .unavailable("the output connection did not take its settings"))
            }
        }
    }
}

/// Runs `commands` as one line on `conn` and returns their reply blocks; `None` when the line
/// cannot be written, the connection ends or tmux does not answer within `timeout`. Output
/// keeps flowing on the reader task while this waits.
async fn ask_line(
    conn: &mut Connection,
    commands: &[TmuxCommand],
    timeout: Duration,
) -> Option<Vec<Block>> {
    let line = crate::wire::command::chain_line(commands);
    let (line, reply) = LineRequest::new(line, commands.len());
    let ended = conn.ended();
    conn.submit(vec![line], timeout).await.ok()?;
    // A line tmux never began comes back in the close event, which the caller reads only after
    // this returns: waiting for its reply would keep the caller blind to the end of the
    // connection (and its watch session recorded as running) until the timeout.
    tokio::select! {
        biased;
        answered = tokio::time::timeout(timeout, reply) => answered.ok()?.ok()?.ok(),
        () = ended => None,
    }
}

/// The task that owns the output connection.
struct WatchMonitor {
    hub: Arc<HubInner>,
    watch: SessionId,
    /// The watch session's own first window, kept as its current window (see
    /// [`watch_session`]): never an orphan.
    placeholder: WindowId,
    conn: Connection,
    /// Cancelled when this monitor ends.
    ended: CancellationToken,
    /// Panes reported dead before tmux knew how their program ended.
    dying: HashMap<PaneId, Dying>,
    /// Linked windows with no live stream, since when.
    idle_since: HashMap<WindowId, Instant>,
    /// When to look for orphaned windows and vanished or moved panes (set by a structural
    /// notification; a burst of them costs one look).
    check_at: Option<Instant>,
    /// When to look again for panes left to their links (the pane list alone).
    follow_at: Option<Instant>,
    /// Since when no window has been linked.
    empty_since: Option<Instant>,
}

/// A pane whose status is awaited: since when, and when to ask tmux for it next.
#[derive(Debug, Clone, Copy)]
struct Dying {
    since: Instant,
    next_ask: Instant,
}

/// How long to wait for tmux to learn a dead pane's exit status.
const DEAD_STATUS_GRACE: Duration = Duration::from_secs(5);
/// How often to ask tmux for it meanwhile: the subscription does not always report the status
/// arriving after the dead flag (tmux 3.3a).
const DEAD_STATUS_ASK: Duration = Duration::from_millis(300);

/// The caller the monitor's own commands run as.
const MONITOR_CALLER: &str = "muxgate:watch";

/// Most windows linked by one job of the worker: each window's link is its own line, and the
/// batch shares the worker's queue with every agent's commands.
const LINKS_PER_BATCH: usize = 256;

enum MonitorWake {
    Event(Option<ConnEvent>),
    IdleCheck,
    DyingExpired,
    StructureCheck,
    FollowCheck,
    Shutdown,
}

/// How long after a structural notification the monitor looks (more may follow at once).
const STRUCTURE_CHECK_DELAY: Duration = Duration::from_millis(20);
/// How long after a check that left panes to their links the monitor looks again.
const LINKING_RECHECK_DELAY: Duration = Duration::from_millis(250);

impl WatchMonitor {
    async fn run(mut self) {
        let idle = self
            .hub
            .settings
            .output_idle_close
            .max(Duration::from_millis(100));
        // Checked a few times per idle period, so a window is unlinked close to its time.
        let mut idle_check = tokio::time::interval((idle / 4).max(Duration::from_millis(50)));
        idle_check.tick().await;
        let shutdown = self.hub.shutdown.clone();
        let end = loop {
            let dying_deadline = self.dying.values().map(|d| d.next_ask).min();
            let wake = tokio::select! {
                () = shutdown.cancelled() => MonitorWake::Shutdown,
                event = self.conn.next_event() => MonitorWake::Event(event),
                _ = idle_check.tick() => MonitorWake::IdleCheck,
                () = sleep_until(dying_deadline) => MonitorWake::DyingExpired,
                () = sleep_until(self.check_at) => MonitorWake::StructureCheck,
                () = sleep_until(self.follow_at) => MonitorWake::FollowCheck,
            };
            match wake {
                MonitorWake::Shutdown => {
                    break StreamEnd::ConnectionClosed("muxgate is shutting down".into());
                }
                MonitorWake::IdleCheck => {
                    if self.unlink_idle(idle).await {
                        break StreamEnd::ConnectionClosed("idle".into());
                    }
                }
                MonitorWake::Event(Some(ConnEvent::Closed { reason, .. })) => {
                    let remote = matches!(self.hub.endpoint.launch, ClientLaunch::Remote(_));
                    break if !reason.server_gone() {
                        StreamEnd::ConnectionClosed(reason.to_string())
                    } else if remote
                        && matches!(reason, CloseReason::Eof | CloseReason::ReadError(_))
                    {
                        // A host's server that ended no client of its own (no `%exit`) may
                        // only be out of reach: its link dropped.
                        StreamEnd::Lost(reason.to_string())
                    } else {
                        StreamEnd::ServerGone
                    };
                }
                MonitorWake::Event(None) => {
                    break StreamEnd::ConnectionClosed("reader ended".into());
                }
                // The watch session is gone and tmux moved the client (`detach-on-destroy off`).
                MonitorWake::Event(Some(ConnEvent::SessionChanged { .. })) => {
                    break StreamEnd::ConnectionClosed("the watch session ended".into());
                }
                MonitorWake::DyingExpired => self.ask_dying().await,
                MonitorWake::StructureCheck => {
                    self.check_at = None;
                    self.kill_orphans().await;
                    self.follow_panes().await;
                    if self.only_watch_left().await {
                        break StreamEnd::SessionClosed;
                    }
                }
                MonitorWake::FollowCheck => {
                    self.follow_at = None;
                    self.follow_panes().await;
                }
                MonitorWake::Event(Some(ConnEvent::Pause(pane))) => self.resume(pane).await,
                MonitorWake::Event(Some(ConnEvent::Continue(_))) => {}
                MonitorWake::Event(Some(ConnEvent::Notification { name, args })) => {
                    self.on_notification(&name, &args);
                }
            }
        };
        self.finish(end).await;
    }

    /// Kills the watch session (the windows only it holds end, the others stay in their
    /// sessions), ends the connection, then the streams of the windows it carried.
    ///
    /// The kill is sent on the connection itself and not waited for: tmux detaches the client
    /// as part of it (and exits at once when no other session is left). tmux's own
    /// `destroy-unattached` would spare this, but with it tmux (3.3a to 3.5a at least) crashes
    /// when the session is destroyed while its control client is still exiting.
    async fn finish(mut self, end: StreamEnd) {
        // No new subscriber trusts this session from here on.
        self.ended.cancel();
        if !matches!(end, StreamEnd::ServerGone | StreamEnd::Lost(_))
            && let Ok(command) = TmuxCommand::new("kill-session").target(self.watch).build()
        {
            let (line, _) = LineRequest::new(command.as_bytes().to_vec(), 1);
            let _ = self
                .conn
                .submit(vec![line], self.hub.settings.command_timeout)
                .await;
        }
        self.conn.close(self.hub.settings.connect_timeout).await;
        let (linked, gone) = {
            let mut watch = self.hub.lock_watch();
            match watch.take() {
                Some(w) if w.session == self.watch => (
                    w.linked.keys().copied().collect::<HashSet<_>>(),
                    Some(w.gone),
                ),
                other => {
                    *watch = other;
                    (HashSet::new(), None)
                }
            }
        };
        self.hub
            .router
            .close_where(&end, |_, window| linked.contains(&window));
        // The streams a lost link ended are held for the next subscriber to continue, until
        // they lapse.
        if matches!(end, StreamEnd::Lost(_)) && self.hub.router.start_expiring() {
            tokio::spawn(expire_interrupted(
                self.hub.router.clone(),
                self.hub.shutdown.clone(),
            ));
        }
        self.hub
            .stats
            .connections_open
            .fetch_sub(1, Ordering::Relaxed);
        if let Some(gone) = gone {
            gone.cancel();
        }
    }

    /// Unlinks the windows no stream has needed for `idle`, and those released to make room.
    /// With its last watched window the session is killed: it is marked ended first, so that a
    /// subscriber starts a new one rather than linking into this one.
    async fn unlink_idle(&mut self, idle: Duration) -> bool {
        let now = Instant::now();
        self.hub.router.expire_kept(now);
        let held = self.hub.router.live_windows();
        let (linked, released) = match self.hub.lock_watch().as_mut() {
            Some(w) if w.session == self.watch => (
                w.linked.keys().copied().collect::<Vec<_>>(),
                std::mem::take(&mut w.released),
            ),
            _ => return false,
        };
        self.idle_since.retain(|w, _| linked.contains(w));
        let linked_count = linked.len();
        let mut due = Vec::new();
        for window in linked {
            if held.contains_key(&window) {
                self.idle_since.remove(&window);
            } else if self.idle_since.entry(window).or_insert(now).elapsed() >= idle {
                due.push(window);
            }
        }
        // A session left with no watched window (its last one ended with its own session)
        // closes after the same idle time.
        let empty_for = if linked_count == 0 {
            now - *self.empty_since.get_or_insert(now)
        } else {
            self.empty_since = None;
            Duration::ZERO
        };
        if due.is_empty() && released.is_empty() && empty_for < idle {
            return false;
        }
        let hub = self.hub.clone();
        let _changing = hub.changing.lock().await;
        let held = self.hub.router.live_windows();
        let mut unlink = released;
        {
            let mut watch = self.hub.lock_watch();
            let Some(w) = watch.as_mut().filter(|w| w.session == self.watch) else {
                return false;
            };
            for window in due {
                if !held.contains_key(&window) && w.linked.remove(&window).is_some() {
                    unlink.push(window);
                }
            }
            if w.linked.is_empty() && (!unlink.is_empty() || empty_for >= idle) {
                // Nothing is watched any more: the connection closes, and the session with it.
                self.ended.cancel();
                return true;
            }
        }
        for window in unlink {
            self.idle_since.remove(&window);
            if let Ok(command) = watch_session::unlink(self.watch, window) {
                let _ = self.ask(&command).await;
            }
        }
        false
    }

    async fn resume(&mut self, pane: PaneId) {
        self.hub.stats.pauses.fetch_add(1, Ordering::Relaxed);
        if let Some(stream) = self.hub.router.stream(pane) {
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
            .submit(vec![line], self.hub.settings.command_timeout)
            .await;
    }

    fn on_notification(&mut self, name: &str, args: &[u8]) {
        match name {
            "subscription-changed" => self.on_dead_change(args),
            // A session ended or a window left one (windows only the watch session still holds
            // must end), or panes may have gone or moved.
            "sessions-changed"
            | "window-close"
            | "unlinked-window-close"
            | "layout-change"
            | "window-pane-changed" => {
                self.check_at
                    .get_or_insert_with(|| Instant::now() + STRUCTURE_CHECK_DELAY);
            }
            _ => {}
        }
    }

    fn on_dead_change(&mut self, args: &[u8]) {
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
            // The pty closed but tmux has not reaped the program yet; its status follows in a
            // later change (or never, if it lives on without a terminal).
            DeadValue::DeadUnknown => {
                let now = Instant::now();
                self.dying.entry(pane).or_insert(Dying {
                    since: now,
                    next_ask: now + DEAD_STATUS_ASK,
                });
            }
        }
    }

    fn pane_exited(&self, pane: PaneId, status: Option<i32>) {
        self.hub
            .router
            .close_where(&StreamEnd::PaneExited { status }, |p, _| p == pane);
    }

    /// Kills the windows linked into the watch session only, and ends their streams.
    async fn kill_orphans(&mut self) {
        let Ok(command) = watch_session::windows(self.watch) else {
            return;
        };
        let Some(rows) = self.ask(&command).await else {
            return;
        };
        let orphans = watch_session::orphans(&rows, self.placeholder);
        if orphans.is_empty() {
            return;
        }
        if let Some(watch) = self.hub.lock_watch().as_mut()
            && watch.session == self.watch
        {
            for window in &orphans {
                watch.linked.remove(window);
            }
        }
        self.hub
            .router
            .close_where(&StreamEnd::SessionClosed, |_, window| {
                orphans.contains(&window)
            });
        for window in orphans {
            if let Ok(command) = watch_session::kill(window) {
                let _ = self.ask(&command).await;
            }
        }
    }

    /// Whether the watch session is the server's only session: the last real one has ended, so
    /// the watch session must go (and tmux then exits, as it would have with the last real
    /// session, `exit-empty`).
    async fn only_watch_left(&mut self) -> bool {
        let Ok(command) = watch_session::sessions() else {
            return false;
        };
        self.ask(&command)
            .await
            .is_some_and(|rows| watch_session::only_watch_left(&rows))
    }

    /// After a structural change: ends the streams of panes that no longer exist, and links
    /// the new window of a watched pane that was moved out of its window.
    async fn follow_panes(&mut self) {
        let live = self.hub.router.live_panes();
        if live.is_empty() {
            return;
        }
        // Read before the pane list, the requests first: a window whose link is recorded
        // between the two reads is in both, and one linked after the list is in neither.
        let requested: HashSet<WindowId> = self.hub.lock_requested().keys().copied().collect();
        let linked: HashSet<WindowId> = match self.hub.lock_watch().as_ref() {
            Some(w) if w.session == self.watch => w.linked.keys().copied().collect(),
            _ => return,
        };
        let Ok(command) = TmuxCommand::new("list-panes")
            .flag("-s")
            .target(self.watch)
            .opt("-F", "#{pane_id} #{window_id}")
            .build()
        else {
            return;
        };
        let Some(rows) = self.ask(&command).await else {
            return;
        };
        let present = watch_session::pane_windows(&rows);
        let found = watch_session::departures(&live, &present, &linked, &requested);
        if found.left_to_links > 0 {
            // Looked at again once their links are recorded: a pane that moved or ended while
            // its window was being linked sends no further notification.
            self.follow_at
                .get_or_insert_with(|| Instant::now() + LINKING_RECHECK_DELAY);
        }
        for (pane, window) in found.moved {
            self.hub.router.moved(pane, window);
        }
        for pane in found.missing {
            match self.place_of(pane).await {
                Some(place) => self.link_moved(pane, place).await,
                None => self
                    .hub
                    .router
                    .close_where(&StreamEnd::PaneClosed, |p, _| p == pane),
            }
        }
    }

    /// Where a pane that left the watch session's windows is now, if it still exists.
    async fn place_of(&mut self, pane: PaneId) -> Option<Place> {
        let command = watch_session::place(pane).ok()?;
        let rows = self.ask(&command).await?;
        let row = watch_session::parse_place(&rows, pane)?;
        Some(Place {
            window: row.window,
            session: row.session,
        })
    }

    /// Links the window a watched pane was moved to (through the worker: the link line switches
    /// the issuing client, which must not be this connection's).
    async fn link_moved(&mut self, pane: PaneId, place: Place) {
        let hub = self.hub.clone();
        let _changing = hub.changing.lock().await;
        if !self.hub.linked(place.window) {
            let linked = Linked {
                session: place.session,
                opener: MONITOR_CALLER.into(),
            };
            let outcome = OutputHub { inner: hub.clone() }
                .link_into(self.watch, &[(place.window, linked.clone())])
                .await;
            if !matches!(outcome.first(), Some(Ok(()))) {
                return;
            }
            if let Some(watch) = self.hub.lock_watch().as_mut()
                && watch.session == self.watch
            {
                watch.linked.insert(place.window, linked);
            }
        }
        self.hub.router.moved(pane, place.window);
    }

    /// Asks tmux for the status of dead panes that are due; ends their streams once it is
    /// known, or without it after [`DEAD_STATUS_GRACE`].
    async fn ask_dying(&mut self) {
        let now = Instant::now();
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
    /// `None` when it fails, the connection is gone or tmux does not answer in time.
    async fn ask(&mut self, command: &TmuxCommand) -> Option<Vec<Vec<u8>>> {
        let blocks = ask_line(
            &mut self.conn,
            std::slice::from_ref(command),
            self.hub.settings.command_timeout,
        )
        .await?;
        blocks.into_iter().next().filter(|b| b.ok).map(|b| b.body)
    }
}

/// Lets go of the streams a lost connection ended once nobody can continue them any more, so
/// that a host that never comes back holds no pane's output.
async fn expire_interrupted(router: Arc<Router>, shutdown: CancellationToken) {
    while let Some(due) = router.expire_interrupted() {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep_until(due) => {}
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
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
