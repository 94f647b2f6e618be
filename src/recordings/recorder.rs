//! The recordings running now: one task per recorded pane, subscribed to the pane's output
//! stream like a wait is, writing each batch of output as events ([`super::writer`], on the
//! blocking pool) until the pane ends, the recording is stopped or the gateway shuts down.
//!
//! Only output is recorded: what is typed into a pane never is (a secret typed at a password
//! prompt stays out), but whatever the pane echoes back is output, as on the screen.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::RecordingsSettings;
use super::policy::RecordingPolicy;
use super::store::Store;
use super::writer::{CastWriter, CurrentFile, Subject};
use muxgate_tmux::output::{CONTINUED_WITHIN, OutputChunk, StreamEnd};
use muxgate_tmux::typed::pane_reads::TmuxPaneReads;
use muxgate_tmux::{Caller, EngineError, OutputSubscription, PaneId, TmuxServer};

/// The engine's name for the recorder as a caller (its own queue share and watch share).
const CALLER: &str = "muxgate-recordings";

/// How long the recorder gathers output before writing it.
const COALESCE: Duration = Duration::from_millis(10);

/// How long starting a recording may take (the pane's size, the subscription).
const START_TIMEOUT: Duration = Duration::from_secs(5);

/// Where in a recording a moment is: the file and the seconds into it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordingRef {
    /// The cast file's name.
    pub file: String,
    /// Seconds into the file.
    pub at_secs: f64,
}

/// What [`Recorder::stop`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Stopped {
    /// The recording ended here.
    Was(RecordingRef),
    /// The pane was not being recorded.
    NotRecorded,
    /// A rule records the pane: it goes on.
    ByRule(String),
}

/// Why a recording could not start.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Recordings are off.
    #[error("recordings are off (recordings.enabled = false)")]
    Disabled,
    /// As many panes as `max_panes` are recorded already.
    #[error("{0} panes are recorded already (recordings.max_panes)")]
    TooMany(usize),
    /// Half of `max_panes` run on request already; the rest is kept for the rules.
    #[error(
        "{0} recordings started on request run already, the most there may be (half of \
         recordings.max_panes: the rest is kept for the rules)"
    )]
    TooManyRequested(usize),
    /// The pane's server could not be reached.
    #[error("cannot reach the pane: {0}")]
    Engine(#[from] EngineError),
    /// The file could not be written.
    #[error("cannot write the recording: {0}")]
    Io(#[from] std::io::Error),
    /// The pane's output stream did not start in time.
    #[error("the pane did not answer within {START_TIMEOUT:?}")]
    Timeout,
}

/// The recordings; cheap to clone. A disabled recorder records nothing.
#[derive(Clone, Default)]
pub struct Recorder {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    store: Store,
    policy: RecordingPolicy,
    max_file_bytes: u64,
    max_panes: usize,
    caller: Caller,
    active: Mutex<HashMap<Key, Active>>,
    /// Starts one at a time, so two calls on one pane start one recording.
    starting: tokio::sync::Mutex<()>,
    shutdown: CancellationToken,
    next_id: std::sync::atomic::AtomicU64,
}

/// A pane of a server, the server as the gateway names it (a workspace's by its tenant).
type Key = (String, PaneId);

struct Active {
    id: u64,
    /// The rule that started it (none: on request); only the configuration stops those.
    rule: Option<String>,
    stop: CancellationToken,
    current: Arc<Mutex<CurrentFile>>,
}

impl Recorder {
    /// The recorder of `settings`; its recordings end when `shutdown` is cancelled.
    pub fn new(settings: RecordingsSettings, shutdown: CancellationToken) -> Self {
        let caller = Caller::new(CALLER).with_watch_share(settings.max_panes);
        Self {
            inner: Some(Arc::new(Inner {
                store: Store::new(settings.dir, settings.max_total_bytes),
                policy: settings.policy,
                max_file_bytes: settings.max_file_bytes,
                max_panes: settings.max_panes,
                caller,
                active: Mutex::default(),
                starting: tokio::sync::Mutex::new(()),
                shutdown,
                next_id: 0.into(),
            })),
        }
    }

    /// A recorder that records nothing (`recordings.enabled = false`).
    pub fn disabled() -> Self {
        Self { inner: None }
    }

    /// Whether recordings are on.
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// Whether a call of `sub` could make a recording start or name one: a rule may match
    /// it, or some pane is recorded now. When not, a call costs the recorder nothing.
    pub fn concerns(&self, sub: &str) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|inner| inner.policy.may_record_for(sub) || !inner.lock().is_empty())
    }

    /// Whether a rule may record a pane `sub` acts on (the pane's session decides).
    pub fn may_record_for(&self, sub: &str) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|inner| inner.policy.may_record_for(sub))
    }

    /// Whether `pane` of `server` is recorded by a rule now (not merely on request).
    pub fn by_rule(&self, server: &str, pane: PaneId) -> bool {
        self.inner.as_ref().is_some_and(|inner| {
            inner
                .lock()
                .get(&(server.to_owned(), pane))
                .is_some_and(|a| a.rule.is_some())
        })
    }

    /// The rule that records a pane of `session` `sub` acts on.
    pub fn rule_for(&self, sub: &str, session: &str) -> Option<String> {
        self.inner
            .as_ref()
            .and_then(|inner| inner.policy.rule_for(sub, session).map(str::to_owned))
    }

    /// Where the recording of `pane` on `server` is now, if it is recorded.
    pub fn now(&self, server: &str, pane: PaneId) -> Option<RecordingRef> {
        let inner = self.inner.as_ref()?;
        let active = inner.lock();
        let current = active.get(&(server.to_owned(), pane))?.current.clone();
        drop(active);
        Some(reference(&current))
    }

    /// Records `pane` of `server` (named `server_key` in file names and the audit log) unless
    /// it is already; `title` says why, `rule` which rule asked (none: a request). A rule
    /// asking for a pane recorded on request takes that recording over. Returns where the
    /// recording is now.
    pub async fn start(
        &self,
        server: &TmuxServer,
        server_key: &str,
        pane: PaneId,
        title: String,
        rule: Option<String>,
    ) -> Result<RecordingRef, RecordError> {
        let inner = self.inner.as_ref().ok_or(RecordError::Disabled)?;
        let _one_at_a_time = tokio::time::timeout(START_TIMEOUT, inner.starting.lock())
            .await
            .map_err(|_| RecordError::Timeout)?;
        let key = (server_key.to_owned(), pane);
        {
            let mut active = inner.lock();
            if let Some(running) = active.get_mut(&key) {
                // A rule's promise holds for a recording begun on request too: from now on
                // only the configuration stops it, not `record_pane record: false`.
                if running.rule.is_none() {
                    running.rule = rule;
                }
                let current = running.current.clone();
                drop(active);
                return Ok(reference(&current));
            }
            let count = active.len();
            if count >= inner.max_panes {
                return Err(RecordError::TooMany(count));
            }
            let requested = active.values().filter(|a| a.rule.is_none()).count();
            if rule.is_none() && requested >= inner.max_requested() {
                return Err(RecordError::TooManyRequested(requested));
            }
        }
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        let (width, height) =
            tokio::time::timeout_at(deadline, pane_size(server, &inner.caller, pane))
                .await
                .map_err(|_| RecordError::Timeout)??;
        let subscription = server.subscribe(&inner.caller, pane, deadline).await?;
        let subject = Subject {
            server: server_key.to_owned(),
            pane,
            width,
            height,
            title,
            max_file_bytes: inner.max_file_bytes,
        };
        let store = inner.store.clone();
        let writer = tokio::task::spawn_blocking(move || CastWriter::open(store, subject))
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))??;
        let current = writer.current();
        let id = inner
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stop = inner.shutdown.child_token();
        inner.lock().insert(
            key.clone(),
            Active {
                id,
                rule,
                stop: stop.clone(),
                current: current.clone(),
            },
        );
        tokio::spawn(record(
            inner.clone(),
            server.clone(),
            key,
            id,
            subscription,
            writer,
            stop,
        ));
        Ok(reference(&current))
    }

    /// Stops recording `pane` of `server`, unless a rule records it (the agent a rule records
    /// cannot turn its own recording off).
    pub fn stop(&self, server: &str, pane: PaneId) -> Stopped {
        let Some(inner) = self.inner.as_ref() else {
            return Stopped::NotRecorded;
        };
        let mut active = inner.lock();
        let key = (server.to_owned(), pane);
        if let Some(rule) = active.get(&key).and_then(|a| a.rule.clone()) {
            return Stopped::ByRule(rule);
        }
        let Some(stopped) = active.remove(&key) else {
            return Stopped::NotRecorded;
        };
        drop(active);
        stopped.stop.cancel();
        Stopped::Was(reference(&stopped.current))
    }

    /// How many panes are recorded now.
    pub fn recording(&self) -> usize {
        self.inner.as_ref().map_or(0, |inner| inner.lock().len())
    }
}

impl Inner {
    /// Recordings on request (`record_pane`) may take at most half the slots, so that agents
    /// asking cannot fill the recorder and leave a pane a rule records unrecordable.
    fn max_requested(&self) -> usize {
        self.max_panes / 2
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Active>> {
        // Entries are inserted and removed whole, so a poisoned map is consistent.
        self.active.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forgets recording `id` of `key` (not a newer one of the same pane).
    fn ended(&self, key: &Key, id: u64) {
        let mut active = self.lock();
        if active.get(key).is_some_and(|a| a.id == id) {
            active.remove(key);
        }
    }
}

fn reference(current: &Mutex<CurrentFile>) -> RecordingRef {
    let current = current.lock().unwrap_or_else(|e| e.into_inner());
    RecordingRef {
        file: current.name.clone(),
        at_secs: current.offset_at(Instant::now()),
    }
}

/// The pane's size in cells, for the cast's header.
async fn pane_size(
    server: &TmuxServer,
    caller: &Caller,
    pane: PaneId,
) -> Result<(u16, u16), RecordError> {
    let shape = TmuxPaneReads::new(server.clone(), caller.clone())
        .shape(pane)
        .await?;
    // A size tmux does not give is not worth refusing the recording for.
    Ok(shape.map_or((80, 24), |shape| (shape.cols.get(), shape.rows.get())))
}

/// The recording task: the pane's output into the writer, one batch at a time. When the link
/// to the pane's host is lost, the recording waits for it and goes on, with a marker saying
/// what went unseen.
async fn record(
    inner: Arc<Inner>,
    server: TmuxServer,
    key: Key,
    id: u64,
    mut subscription: OutputSubscription,
    mut writer: CastWriter,
    stop: CancellationToken,
) {
    let why = loop {
        let next = tokio::select! {
            biased;
            () = stop.cancelled() => break STOPPED.to_owned(),
            next = subscription.next() => next,
        };
        let (note, batch) = match next {
            Ok(first) => (None, gather(first, &mut subscription, &stop).await),
            Err(StreamEnd::Lost(reason)) => {
                match resume(&inner, &server, &subscription, &stop).await {
                    Ok(resumed) => subscription = resumed,
                    Err(why) => break why,
                }
                let note = format!(
                    "gap: the link to the pane's host was lost ({reason}); output printed until now was not seen"
                );
                (Some(note), Vec::new())
            }
            Err(end) => break format!("end: {end}"),
        };
        match write(writer, note, batch, key.1).await {
            Some(back) => writer = back,
            None => {
                inner.ended(&key, id);
                return;
            }
        }
    };
    inner.ended(&key, id);
    let finished = tokio::task::spawn_blocking(move || writer.finish(Instant::now(), &why)).await;
    if let Ok(Err(error)) = finished {
        tracing::warn!(pane = %key.1, %error, "recordings: cannot close the file");
    }
}

/// Why a recording ends when it is stopped.
const STOPPED: &str = "end: the recording was stopped";

/// `first` and whatever follows it within [`COALESCE`]: a flood arrives as many small chunks,
/// and gathering them makes one write (and one trip to the blocking pool) of many, at the
/// price of times precise to `COALESCE`. The stream's end is seen by the next `next`.
async fn gather(
    first: OutputChunk,
    subscription: &mut OutputSubscription,
    stop: &CancellationToken,
) -> Vec<(Instant, OutputChunk)> {
    let mut batch = vec![(Instant::now(), first)];
    tokio::select! {
        biased;
        () = stop.cancelled() => {}
        () = tokio::time::sleep(COALESCE) => {}
    }
    while let Ok(chunk) = subscription.take() {
        if chunk.is_empty() {
            break;
        }
        batch.push((Instant::now(), chunk));
    }
    batch
}

/// Writes `note` (a marker, now) and `batch` on the blocking pool; `None` when the recording
/// cannot go on (the file could not be written: logged, and what was written is kept).
async fn write(
    mut writer: CastWriter,
    note: Option<String>,
    batch: Vec<(Instant, OutputChunk)>,
    pane: PaneId,
) -> Option<CastWriter> {
    let written = tokio::task::spawn_blocking(move || {
        let result = note
            .map_or(Ok(()), |note| writer.marker(Instant::now(), &note))
            .and_then(|()| {
                batch
                    .iter()
                    .try_for_each(|(at, chunk)| writer.chunk(*at, chunk))
            })
            .and_then(|()| writer.flush());
        (writer, result)
    })
    .await;
    match written {
        Ok((back, Ok(()))) => Some(back),
        Ok((back, Err(error))) => {
            tracing::warn!(pane = %pane, %error, "recordings: cannot write; recording stopped");
            back.abandon();
            None
        }
        Err(error) => {
            tracing::warn!(pane = %pane, %error, "recordings: the writer failed");
            None
        }
    }
}

/// The longest pause between attempts to resume.
const RESUME_PAUSE_MAX: Duration = Duration::from_secs(10);

/// A subscription that continues `lost`'s stream once the pane's host answers again (the
/// engine continues a stream only for the very pane it was: the same process of the same
/// server). `Err` with why the recording ends instead: it was stopped, the pane is gone, the
/// server was restarted, or the link stayed down past [`CONTINUED_WITHIN`], after which the
/// engine continues nothing.
async fn resume(
    inner: &Inner,
    server: &TmuxServer,
    lost: &OutputSubscription,
    stop: &CancellationToken,
) -> Result<OutputSubscription, String> {
    let pane = lost.pane();
    let deadline = tokio::time::Instant::now() + CONTINUED_WITHIN;
    let mut pause = Duration::from_millis(500);
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return Err(STOPPED.to_owned()),
            () = tokio::time::sleep(pause) => {}
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!(
                "end: the link to the pane's host stayed down for {} s",
                CONTINUED_WITHIN.as_secs()
            ));
        }
        let until = tokio::time::Instant::now() + START_TIMEOUT;
        let subscribed = tokio::select! {
            biased;
            () = stop.cancelled() => return Err(STOPPED.to_owned()),
            subscribed = server.subscribe(&inner.caller, pane, until) => subscribed,
        };
        match subscribed {
            Ok(mut resumed) if resumed.since_unix_ms() == lost.since_unix_ms() => {
                // What the continuation took in before this subscription is read too.
                resumed.rewind(lost.position());
                return Ok(resumed);
            }
            Ok(_) => {
                return Err(format!(
                    "end: {pane}'s output could not be continued (its tmux server was \
                     restarted, its pane respawned, or the link was down too long)"
                ));
            }
            Err(EngineError::Command(message)) => return Err(format!("end: tmux: {message}")),
            Err(_) => pause = (pause * 2).min(RESUME_PAUSE_MAX),
        }
    }
}
