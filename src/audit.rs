//! The audit log: JSON lines, one when a tool call starts and one when it ends, redacted,
//! chained with a secret key, written off the request path.
//!
//! ```toml
//! [audit]
//! path = "/var/log/muxgate/audit.jsonl"       # unset: no audit log (no key, no head file)
//! # key_file = "/etc/muxgate/audit.key"       # default <state dir>/audit.key, generated
//! # head_file = "/var/lib/muxgate/audit.head" # default <state dir>/audit.head
//! queue_capacity = 4096                         # records waiting for the writer
//! backlog_capacity = 16384                      # lines held while the disk refuses them
//! max_string_chars = 200                        # cap on echoed argument strings
//! checkpoint_interval_secs = 60                 # checkpoint after records, at most this late
//! fail_closed = false                           # refuse calls whose start cannot be written
//! ```
//!
//! # Format
//!
//! Every line is a JSON object: `seq` (1, 2, 3 … across restarts), `time` (UTC, milliseconds),
//! `kind`, the kind's fields, and last `link`, which chains it to the line before with the
//! audit key (see [`chain`]). The kinds:
//!
//! - `start`, written before a call runs (before its scope and rate checks, too):
//!   `{"seq":7,"time":"…","kind":"start","call":"3f9c0a1b-12","sub":"ci-bot","mcp_session":"…",
//!   "tool":"send_keys","server":"default","targets":["%3"],"args":{"target":"%3",
//!   "keys":{"len":5,"mac":"…"},"enter":true},"link":"…"}`. `call` is unique across restarts
//!   (a random prefix per start of the gateway, then a counter). `args` are redacted by
//!   [`redact`] against the tool's input schema before they are queued; tokens never reach
//!   this module;
//! - `end`, when it finished, was refused or was cancelled (the client went away):
//!   `{"seq":9,"time":"…","kind":"end","call":"3f9c0a1b-12","outcome":"ok","duration_ms":4,
//!   "error_kind":null,"link":"…"}`. A `start` without its `end` is a call the gateway did
//!   not see finish (it was killed, or the end record was dropped);
//! - `approval`, how a call held for a human ended, between its `start` and `end`:
//!   `{"kind":"approval","call":"…","rule":"…","decision":"approved","by":"alice",
//!   "waited_ms":5100}` (see [`crate::approvals`]);
//! - `secret`, a secret entry request and what became of it: `{"kind":"secret","request":"s-1",
//!   "sub":"ci-bot","server":"default","pane":"%3","event":"typed","bytes":12}`; the secret's
//!   length only (see [`crate::secret_entry`]);
//! - `recording`, between a call's start and end when it acted on a pane being recorded
//!   (`[recordings]`): `{"kind":"recording","call":"3f9c0a1b-12","server":"default",
//!   "pane":"%3","file":"default-p3-20261127T211500123Z.cast","at_secs":12.345,…}`, the file in
//!   the recordings directory and the second in it when the call ran;
//! - `dropped`: `{"kind":"dropped","count":N,"reason":"queue_full"|"write_failed"}`, records
//!   the gateway lost: the queue to the writer was full, or the disk refused writes until the
//!   backlog was full (see below). Logs written before reasons were recorded have none;
//! - `checkpoint`: `{"kind":"checkpoint","reason":"interval"|"close","count":41,"head":"…"}`,
//!   written [`AuditConfig::checkpoint_interval_secs`] after the first record that followed the
//!   previous checkpoint, and when the log closes: the log then held `count` records ending
//!   with link `head`. After writing one the writer syncs the file and replaces the head file
//!   (see [`head`]), which is what lets `muxgate audit verify --head` see a cut tail.
//!
//! # Key
//!
//! `audit.key_file` if set, else `<state dir>/audit.key`; generated (32 random bytes, hex,
//! `0600`, replaced atomically) when it is missing and the log has no records yet. The gateway
//! refuses to start when the key is missing while the log has records, when the log's last
//! record does not verify with the key, or when the log no longer holds what the head file
//! names: continuing would hide what happened. Without a state directory (no `state.dir`,
//! `XDG_STATE_HOME` or `HOME`) `audit.key_file` must be set. Whoever can read the key can
//! forge the log: keep it where no pane can read it (the state directory is outside every
//! workspace; on a shared tmux server every pane runs as the gateway's user and can).
//!
//! # Verifying
//!
//! `muxgate audit verify FILE [--key FILE] [--head FILE]` ([`verify`]) shows:
//!
//! - without the key: nothing; it says the chain cannot be verified, and fails;
//! - with the key: every edited, inserted, reordered or forged line, by line number, and
//!   deleted lines by the gap in `seq` they leave; but not lines cut off the end, which leave
//!   a valid shorter chain. Every `dropped` record (its line, count and reason) and the total
//!   lost: such a log is intact but incomplete, and the command fails on it too;
//! - with the head file as well: a log cut back to before the last checkpoint (up to all of
//!   it), or replaced by another chain. Still unseen: records written after the last
//!   checkpoint (at most one interval of them, or what a crash left) cut off, and a log and
//!   head file both rolled back to older copies (copy the head file elsewhere to close that).
//!
//! The gateway makes the head file's check itself when it opens the log.
//!
//! # Writing
//!
//! [`AuditLog::start`] offers the start record to a bounded queue and returns at once; if the
//! queue is full the record is dropped and counted, and the writer thread writes a `dropped`
//! line as soon as it runs again, so every gap is visible in the chain. The writer seals each
//! record into a backlog and writes the backlog once per batch; lines the disk refuses (full,
//! failing) stay there, in order, and are written again with the next batch and on a timer
//! (see [`writer`]). A partly written line is cut off the file again. Only when
//! [`AuditConfig::backlog_capacity`] lines wait are newer records dropped, counted, and
//! reported by a `dropped` record (`write_failed`) before any later record. With
//! `fail_closed = true` it instead waits until the writer has handed the record to the OS (the
//! writer batches, so concurrent calls share one write), and a full queue or a failed write
//! refuses the call; a refused start that is held in the backlog is still written later,
//! followed by the call's `end` (`unavailable`). End records never wait. [`AuditLog::flush`]
//! and [`AuditLog::close`] (call it on shutdown; it writes the closing checkpoint) wait for the
//! writer, with a timeout. Lines still held when the log closes on a disk that refuses them
//! are lost: the writer logs how many, as an error.

mod backlog;
pub mod chain;
pub mod head;
pub mod key;
mod record;
pub mod redact;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use rand::RngCore as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};

use crate::utc::Utc;

pub use chain::{ChainProblem, GENESIS, Gap, VerifyReport, verify};
use chain::{ChainWriter, OpenError};
pub use head::{Head, HeadError, HeadMismatch};
pub use key::{AuditKey, KeyError};
use record::Entry;
use writer::{Ack, Command, Counters, Done, Pending, WriterTask};

/// How long [`AuditLog::flush`], [`AuditLog::close`] and a fail-closed [`AuditLog::start`] wait
/// for the writer.
pub const WRITER_TIMEOUT: Duration = Duration::from_secs(10);

/// The key file's name in the state directory.
pub const KEY_FILE: &str = "audit.key";
/// The head file's name in the state directory.
pub const HEAD_FILE: &str = "audit.head";

/// `[audit]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// The audit file (JSON lines, appended, mode 0600). Unset: auditing is off.
    pub path: Option<PathBuf>,
    /// The key the chain and digests are made with; default `<state dir>/audit.key`. Generated
    /// when missing while the log has no records.
    pub key_file: Option<PathBuf>,
    /// Where the head of the chain is kept at each checkpoint; default
    /// `<state dir>/audit.head`.
    pub head_file: Option<PathBuf>,
    /// Records that may wait for the writer before new ones are dropped (and counted).
    pub queue_capacity: usize,
    /// Lines the writer holds while the disk refuses them (written again later, in order)
    /// before new records are dropped (and counted in a `dropped` record).
    pub backlog_capacity: usize,
    /// Longest echoed argument string, in characters.
    pub max_string_chars: usize,
    /// Longest time between a record and the checkpoint that covers it.
    pub checkpoint_interval_secs: u64,
    /// Refuse a call whose start record cannot be written (queue full, write failed).
    pub fail_closed: bool,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            path: None,
            key_file: None,
            head_file: None,
            queue_capacity: 4096,
            backlog_capacity: 16384,
            max_string_chars: 200,
            checkpoint_interval_secs: 60,
            fail_closed: false,
        }
    }
}

impl AuditConfig {
    /// The key file: `key_file`, else `audit.key` in `state_dir`.
    pub fn key_path(&self, state_dir: Option<&Path>) -> Option<PathBuf> {
        self.key_file
            .clone()
            .or_else(|| state_dir.map(|dir| dir.join(KEY_FILE)))
    }

    /// The head file: `head_file`, else `audit.head` in `state_dir`.
    pub fn head_path(&self, state_dir: Option<&Path>) -> Option<PathBuf> {
        self.head_file
            .clone()
            .or_else(|| state_dir.map(|dir| dir.join(HEAD_FILE)))
    }
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Succeeded.
    Ok,
    /// Failed (an `isError` result or a protocol error).
    Error,
    /// Refused by policy (scope, ACL).
    Denied,
    /// Refused by a limit.
    Limited,
    /// Cancelled by the client or by shutdown.
    Cancelled,
}

/// A tool call about to run, as the MCP handler knows it.
#[derive(Debug, Clone, Copy)]
pub struct CallStart<'a> {
    /// The caller.
    pub sub: &'a str,
    /// The MCP session, if the protocol version has sessions.
    pub mcp_session: Option<&'a str>,
    /// Tool name.
    pub tool: &'a str,
    /// Configured server name the call addresses.
    pub server: Option<&'a str>,
    /// The targets its arguments name (session/window/pane ids).
    pub targets: &'a [String],
    /// The raw arguments; redacted here before anything is queued.
    pub args: &'a Value,
    /// The tool's input schema: argument values are echoed only when they are what it says.
    pub schema: Option<&'a Map<String, Value>>,
}

/// A snapshot of the audit counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuditStats {
    /// Lines that reached the OS (calls, drop notices, checkpoints).
    pub written: u64,
    /// Records dropped because the queue or the backlog was full, or left unwritten when the
    /// log closed.
    pub dropped: u64,
    /// Failed attempts to write lines (or the head file).
    pub write_errors: u64,
    /// Lines sealed and waiting for the disk now (it refused them).
    pub backlog: u64,
}

/// Why the audit log could not be opened, or a record not written.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// Opening or continuing the file failed.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: OpenError,
    },
    /// No key file is configured and there is no state directory to keep one in.
    #[error(
        "audit.path is set but there is no state directory for the audit key (no state.dir, \
         XDG_STATE_HOME or HOME): set audit.key_file"
    )]
    NoKeyFile,
    /// The key cannot be read or created.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The default key file is gone while the log it sealed is still there.
    #[error(
        "the audit key {key} is missing but {log} already has records: restore the key, or move \
         the log (and its head file) aside to start a new one"
    )]
    KeyMissing {
        /// The key file.
        key: PathBuf,
        /// The log.
        log: PathBuf,
    },
    /// The head file cannot be read or does not verify.
    #[error(transparent)]
    Head(#[from] HeadError),
    /// The log does not hold what the head file names.
    #[error(transparent)]
    HeadMismatch(#[from] Box<HeadMismatch>),
    /// `queue_capacity` is zero.
    #[error("audit.queue_capacity must be at least 1")]
    ZeroCapacity,
    /// `backlog_capacity` is zero.
    #[error("audit.backlog_capacity must be at least 1")]
    ZeroBacklog,
    /// `checkpoint_interval_secs` is zero.
    #[error("audit.checkpoint_interval_secs must be at least 1")]
    ZeroCheckpointInterval,
    /// The writer's queue is full (a fail-closed start record).
    #[error("the audit queue is full")]
    QueueFull,
    /// The writer failed or is gone.
    #[error("the audit writer failed: {0}")]
    Writer(String),
    /// The writer did not answer in time.
    #[error("the audit writer did not answer within {WRITER_TIMEOUT:?}")]
    Timeout,
}

struct Inner {
    tx: mpsc::Sender<Command>,
    /// Drops not yet reported in the file.
    unreported_drops: Arc<AtomicU64>,
    counters: Arc<Counters>,
    max_chars: usize,
    key: Arc<AuditKey>,
    fail_closed: bool,
    /// Random per opening: call ids stay unique across restarts.
    instance: String,
    next_call: AtomicU64,
}

impl Inner {
    /// Offers a record to the queue without waiting; a record that does not fit is counted.
    fn offer(&self, entry: Entry, ack: Option<Ack>) -> Result<(), AuditError> {
        let pending = Box::new(Pending {
            time: Utc::from(SystemTime::now()).rfc3339_millis(),
            entry,
        });
        match self.tx.try_send(Command::Record { pending, ack }) {
            Ok(()) => Ok(()),
            Err(error) => {
                self.unreported_drops.fetch_add(1, Ordering::Relaxed);
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                Err(match error {
                    TrySendError::Full(_) => AuditError::QueueFull,
                    TrySendError::Closed(_) => AuditError::Writer("the writer has stopped".into()),
                })
            }
        }
    }
}

/// A secret entry request's record; see [`AuditLog::secret`].
#[derive(Debug, Clone, Copy)]
pub struct SecretRecord<'a> {
    pub request: &'a str,
    pub sub: &'a str,
    pub server: &'a str,
    pub pane: &'a str,
    /// `requested`, `typed` or `refused`.
    pub event: &'static str,
    pub bytes: Option<usize>,
}

/// Handle to the audit log; cheap to clone. A disabled log ignores records.
#[derive(Clone)]
pub struct AuditLog {
    inner: Option<Arc<Inner>>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("enabled", &self.is_enabled())
            .field("stats", &self.stats())
            .finish()
    }
}

/// A call whose start record was offered: [`OpenCall::end`] records how it ended. Dropped
/// without `end` (the request was cancelled), it records the call as cancelled.
pub struct OpenCall {
    inner: Option<Arc<Inner>>,
    id: String,
    started: Instant,
    ended: bool,
}

impl std::fmt::Debug for OpenCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenCall").field("id", &self.id).finish()
    }
}

impl OpenCall {
    /// The call's id in the log (empty when the log is off).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Records the end of the call: its outcome and a short stable error category
    /// (`not_found`, `timeout`, `missing_scope`, …), never a message that could echo input.
    pub fn end(mut self, outcome: Outcome, error_kind: Option<&str>) {
        self.record_end(outcome, error_kind);
    }

    /// Records how a hold for approval ended: the rule that held the call, the decision
    /// (`approved`, `denied`, `timed_out`, `cancelled`), who made it and how long the call waited. A
    /// denial's reason is the approver's free text and is not recorded.
    pub fn approval(&self, rule: &str, decision: &'static str, by: Option<&str>, waited_ms: u64) {
        let Some(inner) = &self.inner else {
            return;
        };
        let entry = Entry::Approval {
            call: self.id.clone(),
            rule: redact::cap_chars(rule, inner.max_chars),
            decision,
            by: by.map(|by| redact::cap_chars(by, inner.max_chars)),
            waited_ms,
        };
        // A lost record is counted and reported like any other.
        let _ = inner.offer(entry, None);
    }

    /// Records that the call acts on a pane being recorded: the recording's file and the
    /// second in it where the call began, so an auditor goes from the call to the moment in
    /// the cast.
    pub fn recording(&self, server: &str, pane: &str, file: &str, at_secs: f64) {
        let Some(inner) = &self.inner else {
            return;
        };
        let entry = Entry::Recording {
            call: self.id.clone(),
            server: redact::cap_chars(server, inner.max_chars),
            pane: redact::cap_chars(pane, inner.max_chars),
            file: redact::cap_chars(file, inner.max_chars),
            at_secs: (at_secs * 1000.0).round() / 1000.0,
        };
        // A lost record is counted and reported like any other.
        let _ = inner.offer(entry, None);
    }

    fn record_end(&mut self, outcome: Outcome, error_kind: Option<&str>) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let Some(inner) = &self.inner else {
            return;
        };
        let entry = Entry::End {
            call: std::mem::take(&mut self.id),
            outcome,
            duration_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            error_kind: error_kind.map(|k| redact::cap_chars(k, inner.max_chars)),
        };
        // A lost end record is counted and reported like any other.
        let _ = inner.offer(entry, None);
    }
}

impl Drop for OpenCall {
    fn drop(&mut self) {
        self.record_end(Outcome::Cancelled, None);
    }
}

impl AuditLog {
    /// Opens the configured file (or returns a disabled log when no path is set), with its
    /// key and head file (`state_dir` holds them unless configured elsewhere), and starts the
    /// writer thread.
    pub fn open(cfg: &AuditConfig, state_dir: Option<&Path>) -> Result<Self, AuditError> {
        Self::start_writer(cfg, state_dir, None)
    }

    /// A log that records nothing.
    pub fn disabled() -> Self {
        Self { inner: None }
    }

    /// Whether records are written.
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    fn start_writer(
        cfg: &AuditConfig,
        state_dir: Option<&Path>,
        gate: Option<std::sync::mpsc::Receiver<()>>,
    ) -> Result<Self, AuditError> {
        let Some(path) = &cfg.path else {
            return Ok(Self::disabled());
        };
        if cfg.queue_capacity == 0 {
            return Err(AuditError::ZeroCapacity);
        }
        if cfg.backlog_capacity == 0 {
            return Err(AuditError::ZeroBacklog);
        }
        if cfg.checkpoint_interval_secs == 0 {
            return Err(AuditError::ZeroCheckpointInterval);
        }
        let key_path = cfg.key_path(state_dir).ok_or(AuditError::NoKeyFile)?;
        let key = Arc::new(load_or_create_key(&key_path, path)?);
        let head_path = cfg.head_path(state_dir);
        let open_error = |source: OpenError| AuditError::Open {
            path: path.clone(),
            source,
        };
        let mut writer = ChainWriter::open(path, Arc::clone(&key)).map_err(open_error)?;
        match &head_path {
            Some(head_path) => {
                if let Some(head) = Head::load(head_path, &key)? {
                    head.check_log(head_path, writer.file_mut())?;
                }
            }
            None => tracing::warn!(
                "audit: no state directory and no audit.head_file: a log cut at its end cannot \
                 be detected"
            ),
        }
        // The writer's own clock, for checkpoints: a current-thread runtime on its thread.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| open_error(e.into()))?;
        let (tx, rx) = mpsc::channel(cfg.queue_capacity);
        let unreported_drops = Arc::new(AtomicU64::new(0));
        let counters = Arc::new(Counters::default());
        let task = WriterTask {
            writer,
            rx,
            unreported_drops: Arc::clone(&unreported_drops),
            counters: Arc::clone(&counters),
            key: Arc::clone(&key),
            head_path,
            interval: Duration::from_secs(cfg.checkpoint_interval_secs),
            checkpoint_due: None,
            backlog_capacity: cfg.backlog_capacity,
            lost: writer::Lost::default(),
            retry: writer::Retry::default(),
        };
        std::thread::Builder::new()
            .name("muxgate-audit".into())
            .spawn(move || {
                if let Some(gate) = gate {
                    // Test seam: hold the writer until the test has filled the queue.
                    let _ = gate.recv();
                }
                runtime.block_on(task.run());
            })
            .map_err(|e| open_error(e.into()))?;
        let mut instance = [0u8; 4];
        rand::rng().fill_bytes(&mut instance);
        Ok(Self {
            inner: Some(Arc::new(Inner {
                tx,
                unreported_drops,
                counters,
                max_chars: cfg.max_string_chars,
                key,
                fail_closed: cfg.fail_closed,
                instance: hex::encode(instance),
                next_call: AtomicU64::new(1),
            })),
        })
    }

    /// Records what became of a secret entry request (see [`crate::secret_entry`]): the
    /// secret's length when it was typed, never the secret or a digest of it (a digest of a
    /// short password can be searched for).
    pub fn secret(&self, record: SecretRecord<'_>) {
        let Some(inner) = &self.inner else {
            return;
        };
        let cap = |s: &str| redact::cap_chars(s, inner.max_chars);
        let entry = Entry::Secret {
            request: cap(record.request),
            sub: cap(record.sub),
            server: cap(record.server),
            pane: cap(record.pane),
            event: record.event,
            bytes: record.bytes,
        };
        // A lost record is counted and reported like any other.
        let _ = inner.offer(entry, None);
    }

    /// Records that a call starts. Without `fail_closed` this never waits: a record that does
    /// not fit the queue is dropped and counted (and the gap written to the log later). With
    /// it, it waits until the record reached the OS, and `Err` means the call must not run.
    pub async fn start(&self, call: CallStart<'_>) -> Result<OpenCall, AuditError> {
        let Some(inner) = &self.inner else {
            return Ok(OpenCall {
                inner: None,
                id: String::new(),
                started: Instant::now(),
                ended: true,
            });
        };
        let n = inner.next_call.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}-{n}", inner.instance);
        let cap = |s: &str| redact::cap_chars(s, inner.max_chars);
        let entry = Entry::Start {
            call: id.clone(),
            sub: call.sub.to_owned(),
            mcp_session: call.mcp_session.map(cap),
            tool: cap(call.tool),
            server: call.server.map(cap),
            targets: call.targets.iter().map(|t| Value::String(cap(t))).collect(),
            args: redact::redact_args(call.args, call.schema, &inner.key, inner.max_chars),
        };
        let mut open = OpenCall {
            inner: Some(Arc::clone(inner)),
            id,
            started: Instant::now(),
            ended: false,
        };
        if !inner.fail_closed {
            // Counted when dropped; the call goes on.
            let _ = inner.offer(entry, None);
            return Ok(open);
        }
        let (ack, written) = oneshot::channel();
        if let Err(error) = inner.offer(entry, Some(ack)) {
            // Nothing was queued, so no end record either.
            open.ended = true;
            return Err(error);
        }
        let error = match tokio::time::timeout(WRITER_TIMEOUT, written).await {
            Ok(Ok(Ok(()))) => return Ok(open),
            Ok(Ok(Err(refused))) => {
                if !refused.kept {
                    // Dropped and counted: there is no start for an end to follow.
                    open.ended = true;
                }
                AuditError::Writer(refused.why)
            }
            Ok(Err(_)) => AuditError::Writer("the writer has stopped".into()),
            Err(_) => AuditError::Timeout,
        };
        // The start record waits in the backlog (or may still reach the file after a timeout):
        // say how the call ended.
        open.end(Outcome::Error, Some("unavailable"));
        Err(error)
    }

    async fn round_trip(&self, make: impl FnOnce(Done) -> Command) -> Result<(), AuditError> {
        let Some(inner) = &self.inner else {
            return Ok(());
        };
        let (ack, done) = oneshot::channel();
        let exchange = async {
            inner
                .tx
                .send(make(ack))
                .await
                .map_err(|_| AuditError::Writer("the writer has stopped".into()))?;
            done.await
                .map_err(|_| AuditError::Writer("the writer has stopped".into()))?
                .map_err(AuditError::Writer)
        };
        tokio::time::timeout(WRITER_TIMEOUT, exchange)
            .await
            .map_err(|_| AuditError::Timeout)?
    }

    /// Waits until everything recorded so far is written and synced.
    pub async fn flush(&self) -> Result<(), AuditError> {
        self.round_trip(Command::Flush).await
    }

    /// Writes everything recorded so far and a closing checkpoint, syncs, updates the head
    /// file, and stops the writer. Later records are counted as dropped.
    pub async fn close(&self) -> Result<(), AuditError> {
        self.round_trip(Command::Close).await
    }

    /// Counters for metrics.
    pub fn stats(&self) -> AuditStats {
        let Some(inner) = &self.inner else {
            return AuditStats::default();
        };
        AuditStats {
            written: inner.counters.written.load(Ordering::Relaxed),
            dropped: inner.counters.dropped.load(Ordering::Relaxed),
            write_errors: inner.counters.write_errors.load(Ordering::Relaxed),
            backlog: inner.counters.backlog.load(Ordering::Relaxed),
        }
    }
}

/// The key, generated if it is missing and the log has no records yet. A log with records and
/// no key is not continued: a new key would make its past unverifiable.
fn load_or_create_key(key_path: &Path, log: &Path) -> Result<AuditKey, AuditError> {
    match AuditKey::load(key_path) {
        Err(KeyError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            let has_records = std::fs::metadata(log).is_ok_and(|m| m.len() > 0);
            if has_records {
                return Err(AuditError::KeyMissing {
                    key: key_path.to_owned(),
                    log: log.to_owned(),
                });
            }
            let key = AuditKey::create(key_path)?;
            tracing::info!(key = %key_path.display(), "audit key generated");
            Ok(key)
        }
        loaded => Ok(loaded?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A log in `dir` (`audit.jsonl`), with its key and head file in `dir` as the state
    /// directory.
    fn config(dir: &Path, capacity: usize) -> AuditConfig {
        AuditConfig {
            path: Some(dir.join("audit.jsonl")),
            queue_capacity: capacity,
            ..AuditConfig::default()
        }
    }

    fn call<'a>(args: &'a Value, targets: &'a [String]) -> CallStart<'a> {
        CallStart {
            sub: "alice",
            mcp_session: Some("sess-1"),
            tool: "send_keys",
            server: Some("default"),
            targets,
            args,
            schema: None,
        }
    }

    fn read_lines(path: &Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn kinds(path: &Path) -> Vec<String> {
        read_lines(path)
            .iter()
            .map(|l| l["kind"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Verifies with the key and head file in `dir`.
    fn verify_in(dir: &Path) -> VerifyReport {
        let key = AuditKey::load(&dir.join(KEY_FILE)).unwrap();
        let head = Head::load(&dir.join(HEAD_FILE), &key).unwrap();
        verify(
            &dir.join("audit.jsonl"),
            &key,
            head.as_ref().map(Head::anchor),
        )
        .unwrap()
    }

    #[test]
    fn config_parses_and_refuses_unknown_keys() {
        let cfg: AuditConfig = toml::from_str(r#"path = "/tmp/x.jsonl""#).unwrap();
        assert_eq!(cfg.queue_capacity, 4096);
        assert_eq!(cfg.backlog_capacity, 16384);
        assert_eq!(cfg.checkpoint_interval_secs, 60);
        assert!(!cfg.fail_closed);
        assert_eq!(
            cfg.key_path(Some(Path::new("/s"))),
            Some(PathBuf::from("/s/audit.key"))
        );
        assert_eq!(cfg.key_path(None), None);
        let cfg: AuditConfig =
            toml::from_str("key_file = '/k'\nhead_file = '/h'\nfail_closed = true").unwrap();
        assert_eq!(cfg.key_path(None), Some(PathBuf::from("/k")));
        assert_eq!(
            cfg.head_path(Some(Path::new("/s"))),
            Some(PathBuf::from("/h"))
        );
        assert!(toml::from_str::<AuditConfig>("paht = 1").is_err());
    }

    #[tokio::test]
    async fn calls_are_written_as_start_and_end_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&config(dir.path(), 16), Some(dir.path())).unwrap();
        let targets = vec!["%3".to_owned()];
        let args = json!({ "target": "%3", "keys": "ls" });
        let first = log.start(call(&args, &targets)).await.unwrap();
        let second = log.start(call(&args, &targets)).await.unwrap();
        assert_ne!(first.id(), second.id());
        let first_id = first.id().to_owned();
        first.end(Outcome::Ok, None);
        second.end(Outcome::Denied, Some("missing_scope"));
        log.flush().await.unwrap();
        let lines = read_lines(&path);
        assert_eq!(kinds(&path), ["start", "start", "end", "end"]);
        let start = &lines[0];
        assert_eq!(start["seq"], 1);
        assert_eq!(start["call"], first_id.as_str());
        assert_eq!(start["sub"], "alice");
        assert_eq!(start["mcp_session"], "sess-1");
        assert_eq!(start["tool"], "send_keys");
        assert_eq!(start["server"], "default");
        assert_eq!(start["targets"], json!(["%3"]));
        assert_eq!(start["args"]["keys"]["len"], 2);
        assert!(start["time"].as_str().unwrap().ends_with('Z'));
        assert_eq!(start["link"].as_str().unwrap().len(), 64);
        let end = &lines[2];
        assert_eq!(end["call"], first_id.as_str());
        assert_eq!(end["outcome"], "ok");
        assert!(end["duration_ms"].is_u64());
        assert_eq!(end["error_kind"], Value::Null);
        assert!(end.get("args").is_none(), "{end}");
        assert_eq!(lines[3]["outcome"], "denied");
        assert_eq!(lines[3]["error_kind"], "missing_scope");
        log.close().await.unwrap();
        assert_eq!(kinds(&path).last().unwrap(), "checkpoint");
        let report = verify_in(dir.path());
        assert!(report.is_intact(), "{report}");
        assert_eq!(report.anchored_seq, Some(5));
        assert_eq!(log.stats().written, 5);
    }

    /// A full disk for the writer: its descriptor is pointed at `/dev/full`, where the kernel
    /// refuses every write with ENOSPC, until [`FullDisk::free`] puts the file back.
    struct FullDisk {
        fd: std::os::fd::RawFd,
        file: std::os::fd::OwnedFd,
    }

    impl FullDisk {
        /// The writer's descriptor of `log`, found in `/proc/self/fd`.
        fn fill(log: &Path) -> Self {
            use std::os::fd::{AsRawFd, FromRawFd};
            let log = log.canonicalize().unwrap();
            let fd = std::fs::read_dir("/proc/self/fd")
                .unwrap()
                .filter_map(Result::ok)
                .find(|entry| std::fs::read_link(entry.path()).ok().as_deref() == Some(&log))
                .and_then(|entry| entry.file_name().to_str()?.parse().ok())
                .expect("the writer holds the log open");
            // SAFETY: dup(2) of an open descriptor; the new one is owned here.
            let file = unsafe { std::os::fd::OwnedFd::from_raw_fd(libc::dup(fd)) };
            let full = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap();
            // SAFETY: dup2(2) replaces the writer's descriptor in one step; it stays open.
            assert_eq!(unsafe { libc::dup2(full.as_raw_fd(), fd) }, fd);
            Self { fd, file }
        }

        fn free(self) {
            use std::os::fd::AsRawFd;
            // SAFETY: as in `fill`, back to the log's own open file.
            assert_eq!(
                unsafe { libc::dup2(self.file.as_raw_fd(), self.fd) },
                self.fd
            );
        }
    }

    /// Polls `done` every 10 ms for at most 10 s.
    async fn until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "{what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// `n` calls, each a start and an end record.
    async fn calls(log: &AuditLog, n: usize) {
        let args = json!({});
        for _ in 0..n {
            log.start(call(&args, &[]))
                .await
                .unwrap()
                .end(Outcome::Ok, None);
        }
    }

    /// Records the disk refuses are held, counted in the backlog gauge, and written in order
    /// once it takes them again, by the retry timer alone (no new record arrives).
    #[tokio::test]
    async fn records_the_disk_refuses_are_held_and_written_later() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&config(dir.path(), 64), Some(dir.path())).unwrap();
        calls(&log, 1).await;
        log.flush().await.unwrap();
        let full = FullDisk::fill(&path);
        calls(&log, 5).await;
        let err = log.flush().await.unwrap_err();
        assert!(err.to_string().contains("No space left"), "{err}");
        let stats = log.stats();
        assert_eq!((stats.backlog, stats.dropped), (10, 0), "{stats:?}");
        assert!(stats.write_errors > 0);
        assert_eq!(kinds(&path).len(), 2, "nothing more reached the file");

        full.free();
        until("the retry timer writes the backlog", || {
            log.stats().backlog == 0
        })
        .await;
        let lines = read_lines(&path);
        assert_eq!(lines.len(), 12);
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(line["seq"], i + 1, "in order");
        }
        assert_eq!(log.stats().written, 12);
        log.close().await.unwrap();
        let report = verify_in(dir.path());
        assert!(report.is_complete(), "{report}");
    }

    /// Once the backlog is full, newer records are dropped and counted; when the disk takes
    /// writes again, a `dropped` record with their number comes before anything else.
    #[tokio::test]
    async fn a_full_backlog_drops_records_and_records_the_gap_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let cfg = AuditConfig {
            backlog_capacity: 4,
            ..config(dir.path(), 64)
        };
        let log = AuditLog::open(&cfg, Some(dir.path())).unwrap();
        calls(&log, 1).await;
        log.flush().await.unwrap();
        let full = FullDisk::fill(&path);
        calls(&log, 5).await;
        until("the writer drops what the backlog cannot hold", || {
            log.stats().dropped == 6
        })
        .await;
        assert_eq!(log.stats().backlog, 4);
        full.free();
        until("the retry timer writes the backlog", || {
            log.stats().backlog == 0
        })
        .await;
        calls(&log, 1).await;
        log.close().await.unwrap();
        assert_eq!(
            kinds(&path),
            [
                "start",
                "end",
                "start",
                "end",
                "start",
                "end",
                "dropped",
                "start",
                "end",
                "checkpoint"
            ]
        );
        let lines = read_lines(&path);
        assert_eq!(lines[6]["count"], 6);
        assert_eq!(lines[6]["reason"], "write_failed");
        let report = verify_in(dir.path());
        assert!(report.is_intact(), "{report}");
        assert!(!report.is_complete());
        assert_eq!(report.lost, 6);
        assert_eq!(
            report.gaps,
            [Gap {
                line: 7,
                count: 6,
                reason: "write_failed".into()
            }]
        );
        assert!(
            report
                .to_string()
                .starts_with("INCOMPLETE: 6 record(s) lost in 1 gap(s)")
        );
    }

    /// With `fail_closed`, a start the disk refuses is refused, yet its record is held and
    /// written later with the call's end, once each; a start that does not fit the backlog
    /// either is dropped without an end, and the gap is recorded.
    #[tokio::test]
    async fn fail_closed_refuses_while_the_disk_is_full_and_loses_nothing_silently() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let cfg = AuditConfig {
            fail_closed: true,
            backlog_capacity: 4,
            ..config(dir.path(), 64)
        };
        let log = AuditLog::open(&cfg, Some(dir.path())).unwrap();
        let full = FullDisk::fill(&path);
        let args = json!({});
        for _ in 0..2 {
            let err = log.start(call(&args, &[])).await.unwrap_err();
            assert!(err.to_string().contains("No space left"), "{err}");
        }
        let err = log.start(call(&args, &[])).await.unwrap_err();
        assert!(err.to_string().contains("backlog_capacity"), "{err}");
        assert_eq!(log.stats().backlog, 4);
        full.free();
        until("the retry timer writes the backlog", || {
            log.stats().backlog == 0
        })
        .await;
        log.start(call(&args, &[]))
            .await
            .unwrap()
            .end(Outcome::Ok, None);
        log.close().await.unwrap();
        let lines = read_lines(&path);
        assert_eq!(
            kinds(&path),
            [
                "start",
                "end",
                "start",
                "end",
                "dropped",
                "start",
                "end",
                "checkpoint"
            ]
        );
        for (start, end) in [(0, 1), (2, 3)] {
            assert_eq!(lines[start]["call"], lines[end]["call"]);
            assert_eq!(lines[end]["outcome"], "error");
            assert_eq!(lines[end]["error_kind"], "unavailable");
        }
        assert_eq!(lines[4]["count"], 1);
        assert_eq!(lines[6]["outcome"], "ok");
        let report = verify_in(dir.path());
        assert!(report.is_intact(), "{report}");
        assert_eq!(report.lost, 1);
    }

    #[tokio::test]
    async fn a_call_dropped_without_its_end_is_recorded_as_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&config(dir.path(), 16), Some(dir.path())).unwrap();
        let args = json!({});
        let open = log.start(call(&args, &[])).await.unwrap();
        let id = open.id().to_owned();
        drop(open);
        log.flush().await.unwrap();
        let lines = read_lines(&path);
        assert_eq!(lines[1]["kind"], "end");
        assert_eq!(lines[1]["call"], id.as_str());
        assert_eq!(lines[1]["outcome"], "cancelled");
        log.close().await.unwrap();
    }

    #[tokio::test]
    async fn checkpoints_follow_records_and_close_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let cfg = AuditConfig {
            checkpoint_interval_secs: 1,
            ..config(dir.path(), 16)
        };
        let log = AuditLog::open(&cfg, Some(dir.path())).unwrap();
        let args = json!({});
        log.start(call(&args, &[]))
            .await
            .unwrap()
            .end(Outcome::Ok, None);
        log.flush().await.unwrap();
        assert_eq!(kinds(&path), ["start", "end"]);
        assert!(!dir.path().join(HEAD_FILE).exists());

        tokio::time::sleep(Duration::from_millis(1500)).await;
        let lines = read_lines(&path);
        assert_eq!(kinds(&path), ["start", "end", "checkpoint"]);
        assert_eq!(lines[2]["reason"], "interval");
        assert_eq!(lines[2]["count"], 2);
        assert_eq!(lines[2]["head"], lines[1]["link"]);
        let key = AuditKey::load(&dir.path().join(KEY_FILE)).unwrap();
        let head = Head::load(&dir.path().join(HEAD_FILE), &key)
            .unwrap()
            .unwrap();
        assert_eq!(
            (head.seq, head.link.as_str()),
            (3, lines[2]["link"].as_str().unwrap())
        );
        assert_eq!(head.offset, std::fs::metadata(&path).unwrap().len());

        // Nothing new, no checkpoint.
        tokio::time::sleep(Duration::from_millis(1300)).await;
        assert_eq!(kinds(&path).len(), 3);

        log.close().await.unwrap();
        let lines = read_lines(&path);
        assert_eq!(lines[3]["kind"], "checkpoint");
        assert_eq!(lines[3]["reason"], "close");
        let head = Head::load(&dir.path().join(HEAD_FILE), &key)
            .unwrap()
            .unwrap();
        assert_eq!(head.seq, 4);
    }

    #[tokio::test]
    async fn a_full_queue_drops_and_reports_the_gap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let (release, gate) = std::sync::mpsc::channel();
        let log =
            AuditLog::start_writer(&config(dir.path(), 2), Some(dir.path()), Some(gate)).unwrap();
        let args = json!({});
        let mut open = Vec::new();
        for _ in 0..10 {
            open.push(log.start(call(&args, &[])).await.unwrap());
        }
        assert_eq!(log.stats().dropped, 8);
        release.send(()).unwrap();
        log.flush().await.unwrap();
        assert_eq!(kinds(&path), ["dropped", "start", "start"]);
        assert_eq!(read_lines(&path)[0]["count"], 8);
        assert_eq!(read_lines(&path)[0]["reason"], "queue_full");
        std::mem::forget(open);
        log.close().await.unwrap();
        let report = verify_in(dir.path());
        assert!(report.is_intact(), "{report}");
        assert!(!report.is_complete());
        assert_eq!(report.lost, 8);
        assert_eq!(report.gaps.len(), 1);
        assert_eq!(
            report.gaps[0].to_string(),
            "line 1: 8 record(s) lost (queue_full: the queue to the writer was full)"
        );
    }

    #[tokio::test]
    async fn fail_closed_waits_for_the_write_and_refuses_a_full_queue() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let cfg = AuditConfig {
            fail_closed: true,
            ..config(dir.path(), 1)
        };
        let (release, gate) = std::sync::mpsc::channel();
        let log = AuditLog::start_writer(&cfg, Some(dir.path()), Some(gate)).unwrap();
        let args = json!({});
        // The writer is held: the first start waits in the queue, the second finds it full.
        let first = tokio::spawn({
            let log = log.clone();
            async move {
                log.start(call(&json!({}), &[]))
                    .await
                    .map(|o| o.id().to_owned())
            }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !first.is_finished(),
            "a fail-closed start waits for the writer"
        );
        let refused = log.start(call(&args, &[])).await.unwrap_err();
        assert!(matches!(refused, AuditError::QueueFull), "{refused}");
        release.send(()).unwrap();
        let id = first.await.unwrap().unwrap();
        // Acknowledged means in the file, without a flush.
        let lines = read_lines(&path);
        assert_eq!(lines.last().unwrap()["call"], id.as_str());
        log.close().await.unwrap();
        assert!(verify_in(dir.path()).is_intact());
    }

    #[tokio::test]
    async fn fail_closed_refuses_when_the_log_cannot_be_written() {
        let dir = tempfile::tempdir().unwrap();
        let full = AuditConfig {
            path: Some("/dev/full".into()),
            fail_closed: true,
            ..AuditConfig::default()
        };
        let log = AuditLog::open(&full, Some(dir.path())).unwrap();
        let args = json!({});
        let err = log.start(call(&args, &[])).await.unwrap_err();
        assert!(matches!(err, AuditError::Writer(_)), "{err}");
        assert!(err.to_string().contains("No space left"), "{err}");
        assert!(log.stats().write_errors > 0);
        drop(log);

        // Without fail_closed the call goes on; the failure is counted.
        let open = AuditLog::open(
            &AuditConfig {
                fail_closed: false,
                ..full
            },
            Some(dir.path()),
        )
        .unwrap();
        assert!(open.start(call(&args, &[])).await.is_ok());
        assert!(open.flush().await.is_err());
        assert!(open.stats().write_errors > 0);
    }

    #[tokio::test]
    async fn records_after_close_are_counted_as_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(&config(dir.path(), 4), Some(dir.path())).unwrap();
        log.close().await.unwrap();
        let args = json!({});
        log.start(call(&args, &[]))
            .await
            .unwrap()
            .end(Outcome::Ok, None);
        assert_eq!(log.stats().dropped, 2);
        assert!(log.flush().await.is_err());
        // The lock is released with the writer: the file can be reopened.
        let again = AuditLog::open(&config(dir.path(), 4), Some(dir.path())).unwrap();
        again.close().await.unwrap();
    }

    #[tokio::test]
    async fn the_chain_continues_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let args = json!({ "keys": "x" });
        for _ in 0..2 {
            let log = AuditLog::open(&config(dir.path(), 4), Some(dir.path())).unwrap();
            log.start(call(&args, &[]))
                .await
                .unwrap()
                .end(Outcome::Ok, None);
            log.close().await.unwrap();
        }
        let report = verify_in(dir.path());
        assert!(report.is_intact(), "{report}");
        assert_eq!(report.last_seq, 6);
        assert_eq!(report.anchored_seq, Some(6));
    }

    #[tokio::test]
    async fn the_key_is_generated_once_and_then_required() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path(), 4);
        let log = AuditLog::open(&cfg, Some(dir.path())).unwrap();
        let key_file = dir.path().join(KEY_FILE);
        let key = std::fs::read(&key_file).unwrap();
        log.close().await.unwrap();
        AuditLog::open(&cfg, Some(dir.path()))
            .unwrap()
            .close()
            .await
            .unwrap();
        assert_eq!(std::fs::read(&key_file).unwrap(), key, "the key is kept");

        std::fs::remove_file(&key_file).unwrap();
        let err = AuditLog::open(&cfg, Some(dir.path())).unwrap_err();
        assert!(matches!(err, AuditError::KeyMissing { .. }), "{err}");
        assert!(!key_file.exists(), "no new key for an existing log");

        // A configured key file is used (and generated the same way) wherever it is; one that
        // cannot be created is a clear error. Without one and without a state directory there
        // is nowhere to keep a key.
        let elsewhere = tempfile::tempdir().unwrap();
        let configured = |key: PathBuf| AuditConfig {
            path: Some(elsewhere.path().join("audit.jsonl")),
            key_file: Some(key),
            ..AuditConfig::default()
        };
        let key_elsewhere = elsewhere.path().join("k");
        AuditLog::open(&configured(key_elsewhere.clone()), Some(elsewhere.path()))
            .unwrap()
            .close()
            .await
            .unwrap();
        assert!(AuditKey::load(&key_elsewhere).is_ok());
        let uncreatable = AuditConfig {
            path: Some(elsewhere.path().join("other.jsonl")),
            ..configured(elsewhere.path().join("no/such/dir/k"))
        };
        let err = AuditLog::open(&uncreatable, Some(elsewhere.path())).unwrap_err();
        assert!(matches!(err, AuditError::Key(KeyError::Io { .. })), "{err}");
        let err = AuditLog::open(&config(dir.path(), 4), None).unwrap_err();
        assert!(matches!(err, AuditError::NoKeyFile), "{err}");
        assert!(err.to_string().contains("audit.key_file"), "{err}");
    }

    /// A log cut (or replaced) while the gateway was down is not continued: the next
    /// checkpoint would overwrite the head file that shows it.
    #[tokio::test]
    async fn a_log_cut_while_stopped_is_not_continued() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let cfg = config(dir.path(), 8);
        let log = AuditLog::open(&cfg, Some(dir.path())).unwrap();
        let args = json!({});
        for _ in 0..3 {
            log.start(call(&args, &[]))
                .await
                .unwrap()
                .end(Outcome::Ok, None);
        }
        log.close().await.unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let kept: Vec<&str> = text.lines().take(4).collect();
        std::fs::write(&path, kept.join("\n") + "\n").unwrap();
        let err = AuditLog::open(&cfg, Some(dir.path())).unwrap_err();
        assert!(matches!(err, AuditError::HeadMismatch(_)), "{err}");
        assert!(err.to_string().contains("cut or replaced"), "{err}");

        std::fs::write(&path, "").unwrap();
        assert!(AuditLog::open(&cfg, Some(dir.path())).is_err());
    }

    #[test]
    fn zero_capacity_and_interval_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = AuditLog::open(&config(dir.path(), 0), Some(dir.path())).unwrap_err();
        assert!(matches!(err, AuditError::ZeroCapacity));
        let cfg = AuditConfig {
            backlog_capacity: 0,
            ..config(dir.path(), 1)
        };
        let err = AuditLog::open(&cfg, Some(dir.path())).unwrap_err();
        assert!(matches!(err, AuditError::ZeroBacklog));
        let cfg = AuditConfig {
            checkpoint_interval_secs: 0,
            ..config(dir.path(), 1)
        };
        let err = AuditLog::open(&cfg, Some(dir.path())).unwrap_err();
        assert!(matches!(err, AuditError::ZeroCheckpointInterval));
    }

    #[tokio::test]
    async fn disabled_log_is_a_no_op() {
        let log = AuditLog::open(&AuditConfig::default(), None).unwrap();
        assert!(!log.is_enabled());
        log.start(call(&json!({}), &[]))
            .await
            .unwrap()
            .end(Outcome::Ok, None);
        log.flush().await.unwrap();
        assert_eq!(log.stats(), AuditStats::default());
    }

    /// Every secret a client could send, in every place it could hide, is absent from the
    /// file; only its keyed digest is there.
    #[tokio::test]
    async fn no_secret_reaches_the_audit_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&config(dir.path(), 64), Some(dir.path())).unwrap();
        let secrets = [
            "KEYSTROKE-SECRET-1",
            "TEXT-SECRET-2",
            "COMMAND-SECRET-3",
            "ENV-SECRET-4",
            "BUFFER-SECRET-5",
            "VALUE-SECRET-6",
            "NESTED-SECRET-7",
            "UNKNOWN-FIELD-SECRET-8",
            "MALFORMED-SECRET-9",
            "SHELL-SECRET-10",
            "PATTERN-SECRET-11",
            "JSON-STRING-SECRET-12",
            "BOOLEAN-FIELD-SECRET-13",
        ];
        let payloads = [
            json!({ "target": "%1", "keys": secrets[0] }),
            json!({ "text": secrets[1], "bracket": true }),
            json!({ "command": secrets[2], "timeout": 5 }),
            json!({ "session_name": "s", "environment": { "TOKEN": secrets[3] } }),
            json!({ "content": secrets[4], "logical_name": "b" }),
            json!({ "option": "@x", "value": secrets[5] }),
            json!({ "operations": [ { "target": "%1", "keys": secrets[6] } ] }),
            json!({ "target": "%1", "wait_for_previous": secrets[7] }),
            json!([secrets[8], { "keys": secrets[8] }]),
            json!({ "shell": secrets[9] }),
            json!({ "patterns": [secrets[10]], "stop": secrets[10] }),
            json!({ "operations": [ format!("{{\"keys\":\"{}\"}}", secrets[11]) ] }),
            json!({ "target": "%1", "keys": "x", "literal": secrets[12] }),
        ];
        let schema = match json!({
            "properties": { "target": { "type": "string" }, "literal": { "type": "boolean" } }
        }) {
            Value::Object(map) => map,
            _ => unreachable!(),
        };
        for args in &payloads {
            log.start(CallStart {
                schema: Some(&schema),
                ..call(args, &[])
            })
            .await
            .unwrap()
            .end(Outcome::Ok, None);
        }
        log.close().await.unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2 * payloads.len() + 1);
        for secret in secrets {
            assert!(!text.contains(secret), "{secret} found in the audit file");
        }
        let key = AuditKey::load(&dir.path().join(KEY_FILE)).unwrap();
        assert!(text.contains(&key.digest_mac(secrets[0].as_bytes())));
        assert!(text.contains(r#""target":"%1""#));
    }
}
