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
//! - `checkpoint`: `{"kind":"checkpoint","reason":"interval"|"close"|"rotate","count":41,
//!   "head":"…"}`, written [`AuditConfig::checkpoint_interval_secs`] after the first record that
//!   followed the previous checkpoint, when the log closes, and as the last record of a file
//!   before it is rotated: the log then held `count` records ending with link `head`. After
//!   writing one the writer syncs the file and replaces the head file (see [`head`]), which is
//!   what lets `muxgate audit verify --head` see a cut tail;
//! - `continued`: `{"kind":"continued","previous_file":"audit.jsonl.20261127T211500123Z",
//!   "previous_seq":41,"previous_link":"…"}`, the first record of a file after a rotation (see
//!   [`files`]); its link chains to `previous_link`;
//! - `head_reset`: `{"kind":"head_reset","head_file":"…","sealed_log":"…"}`, the first record
//!   of a start whose head file sealed another log (see [`head`]).
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
//! `muxgate audit verify [FILE|DIR]... [--key FILE] [--head FILE]` ([`verify_files`]: the
//! files of a rotated log as one chain, see [`verify`](mod@verify)) shows:
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
pub(crate) mod chain;
pub mod files;
pub(crate) mod head;
pub(crate) mod key;
mod record;
pub(crate) mod redact;
pub(crate) mod verify;
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

pub use chain::GENESIS;
use chain::{ChainWriter, OpenError};
pub use head::{Head, HeadError, HeadMismatch, Sealing};
pub use key::{AuditKey, KeyError};
use record::Entry;
pub use verify::{ChainProblem, Gap, VerifyReport, verify, verify_files};
use writer::{Ack, Command, Counters, Done, Pending, WriterTask};

/// How long [`AuditLog::flush`], [`AuditLog::close`] and a fail-closed [`AuditLog::start`] wait
/// for the writer.
pub const WRITER_TIMEOUT: Duration = Duration::from_secs(10);

/// The key file's name in the state directory.
pub const KEY_FILE: &str = "audit.key";

/// `[audit]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// The audit file (JSON lines, appended, mode 0600). Unset: auditing is off.
    pub path: Option<PathBuf>,
    /// The key the chain and digests are made with; default `<state dir>/audit.key`. Generated
    /// when missing while the log has no records.
    pub key_file: Option<PathBuf>,
    /// Where the head of the chain is kept at each checkpoint; default: one per log in the
    /// state directory ([`files::default_head`]).
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
    /// Rotate the live file once it holds this many bytes (0: never).
    pub rotate_bytes: u64,
    /// Rotate the live file once its first record is this many seconds old (0: never).
    pub rotate_secs: u64,
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
            rotate_bytes: 0,
            rotate_secs: 0,
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

    /// The head file: `head_file`, else the log's own in `state_dir`.
    pub fn head_path(&self, state_dir: Option<&Path>) -> Option<PathBuf> {
        match (&self.head_file, state_dir, &self.path) {
            (Some(head), _, _) => Some(head.clone()),
            (None, Some(dir), Some(log)) => Some(files::default_head(dir, log)),
            _ => None,
        }
    }

    /// Where head files were kept before each log had its own: read when the log's own is
    /// missing and `head_file` is not set.
    pub fn legacy_head_path(&self, state_dir: Option<&Path>) -> Option<PathBuf> {
        match (&self.head_file, state_dir) {
            (None, Some(dir)) => Some(dir.join(files::LEGACY_HEAD_FILE)),
            _ => None,
        }
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
    /// The host that server runs on, when it is another machine's.
    pub host: Option<&'a str>,
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
    /// The log does not hold what its head file names: it was cut or replaced.
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
    /// The request's id.
    pub request: &'a str,
    /// The client that asked for the secret.
    pub sub: &'a str,
    /// The server of the pane.
    pub server: &'a str,
    /// The pane the secret goes to.
    pub pane: &'a str,
    /// `requested`, `typed` or `refused`.
    pub event: &'static str,
    /// How many bytes were typed (never the bytes themselves).
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
        check_sizes(cfg)?;
        let key_path = cfg.key_path(state_dir).ok_or(AuditError::NoKeyFile)?;
        let key = Arc::new(load_or_create_key(&key_path, path)?);
        let head_path = cfg.head_path(state_dir);
        let open_error = |source: OpenError| AuditError::Open {
            path: path.clone(),
            source,
        };
        let mut writer = ChainWriter::open(path, Arc::clone(&key)).map_err(open_error)?;
        let first = chain::first_record(writer.file_mut()).map_err(|e| open_error(e.into()))?;
        let head_check = match &head_path {
            Some(head_path) => check_head(cfg, state_dir, head_path, path, &key, first.as_ref())?,
            None => {
                tracing::warn!(
                    "audit: no state directory and no audit.head_file: a log cut at its end \
                     cannot be detected"
                );
                HeadCheck::default()
            }
        };
        let mut opening = continue_rotated_chain(&mut writer, path, &key).map_err(open_error)?;
        opening.extend(head_check.reset);
        // The writer's own clock, for checkpoints: a current-thread runtime on its thread.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| open_error(e.into()))?;
        let (tx, rx) = mpsc::channel(cfg.queue_capacity);
        let unreported_drops = Arc::new(AtomicU64::new(0));
        let counters = Arc::new(Counters::default());
        let task = WriterTask {
            log: path.clone(),
            file_first: first.map(|record| record.link),
            file_started: None,
            rotation: writer::Rotation::new(cfg.rotate_bytes, cfg.rotate_secs),
            legacy_head: head_check.legacy,
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
        spawn_writer(runtime, task, opening, gate).map_err(|e| open_error(e.into()))?;
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
            host: call.host.map(cap),
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

/// What [`check_head`] found beyond a log its head file vouches for.
#[derive(Default)]
struct HeadCheck {
    /// A head file of an earlier version that vouched for this log: the writer replaces it by
    /// the log's own once it saved that.
    legacy: Option<PathBuf>,
    /// The head file sealed another log: the record that says so.
    reset: Option<record::Entry>,
}

/// Checks the log against its head file (the log's own, else one written before each log had
/// its own). A head file that seals another log is not a cut one: the log starts, and says why.
fn check_head(
    cfg: &AuditConfig,
    state_dir: Option<&Path>,
    head_path: &Path,
    log: &Path,
    key: &AuditKey,
    first: Option<&chain::Unsealed>,
) -> Result<HeadCheck, AuditError> {
    let first = first.map(|record| record.link.as_str());
    if let Some(head) = Head::load(head_path, key)? {
        return match head.check(head_path, log, first)? {
            Sealing::ThisLog => Ok(HeadCheck::default()),
            Sealing::AnotherLog(sealed) => {
                tracing::warn!(
                    head_file = %head_path.display(),
                    sealed = %sealed.display(),
                    log = %log.display(),
                    "audit: the head file seals another log (audit.path changed, or two logs                      share audit.head_file): it says nothing about this log, which it seals                      from now on; a head_reset record says so in the log"
                );
                Ok(HeadCheck {
                    legacy: None,
                    reset: Some(record::Entry::HeadReset {
                        head_file: head_path.display().to_string(),
                        sealed_log: sealed.display().to_string(),
                    }),
                })
            }
        };
    }
    let Some(legacy) = cfg.legacy_head_path(state_dir) else {
        return Ok(HeadCheck::default());
    };
    match Head::load(&legacy, key)? {
        // Written for another log (by a gateway configured with this head_file): not ours.
        Some(head) if head.log.is_some() => Ok(HeadCheck::default()),
        Some(head) => {
            head.check(&legacy, log, first)?;
            Ok(HeadCheck {
                legacy: Some(legacy),
                reset: None,
            })
        }
        None => Ok(HeadCheck::default()),
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

/// Runs the writer task on a thread of its own, `opening` its first records.
fn spawn_writer(
    runtime: tokio::runtime::Runtime,
    task: WriterTask,
    opening: Vec<record::Entry>,
    gate: Option<std::sync::mpsc::Receiver<()>>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("muxgate-audit".into())
        .spawn(move || {
            if let Some(gate) = gate {
                // Test seam: hold the writer until the test has filled the queue.
                let _ = gate.recv();
            }
            runtime.block_on(task.run(opening));
        })
        .map(drop)
}

/// Refuses sizes of zero in `[audit]` (a queue, backlog or checkpoint interval of nothing).
fn check_sizes(cfg: &AuditConfig) -> Result<(), AuditError> {
    if cfg.queue_capacity == 0 {
        return Err(AuditError::ZeroCapacity);
    }
    if cfg.backlog_capacity == 0 {
        return Err(AuditError::ZeroBacklog);
    }
    if cfg.checkpoint_interval_secs == 0 {
        return Err(AuditError::ZeroCheckpointInterval);
    }
    Ok(())
}

/// A new live file after a rotation continues the chain of the file rotated out last: the
/// writer is set to follow that file's last record, and the `continued` record that opens the
/// file is returned (nothing for a file that already has records).
fn continue_rotated_chain(
    writer: &mut ChainWriter,
    path: &Path,
    key: &AuditKey,
) -> Result<Vec<record::Entry>, OpenError> {
    if !writer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(previous) = files::rotated_files(path)?.pop() else {
        return Ok(Vec::new());
    };
    let (seq, link) = chain::last_record(&previous, key)?;
    writer.continue_after(seq, &link);
    Ok(vec![record::Entry::Continued {
        previous_file: files::name_of(&previous),
        previous_seq: seq,
        previous_link: link,
    }])
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
            host: None,
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

    /// The head file of the log in `dir`.
    fn head_file(dir: &Path) -> PathBuf {
        files::default_head(dir, &dir.join("audit.jsonl"))
    }

    /// Verifies with the key and head file in `dir`.
    fn verify_in(dir: &Path) -> VerifyReport {
        let key = AuditKey::load(&dir.join(KEY_FILE)).unwrap();
        let head = Head::load(&head_file(dir), &key).unwrap();
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
                file: None,
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
        assert!(!head_file(dir.path()).exists());

        tokio::time::sleep(Duration::from_millis(1500)).await;
        let lines = read_lines(&path);
        assert_eq!(kinds(&path), ["start", "end", "checkpoint"]);
        assert_eq!(lines[2]["reason"], "interval");
        assert_eq!(lines[2]["count"], 2);
        assert_eq!(lines[2]["head"], lines[1]["link"]);
        let key = AuditKey::load(&dir.path().join(KEY_FILE)).unwrap();
        let head = Head::load(&head_file(dir.path()), &key).unwrap().unwrap();
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
        let head = Head::load(&head_file(dir.path()), &key).unwrap().unwrap();
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

    /// Gateways that share a state directory but write different logs (or one whose
    /// `audit.path` changed) each keep a head file of their own: neither takes the other's
    /// for a cut log.
    #[tokio::test]
    async fn logs_that_share_a_state_directory_each_have_their_own_head_file() {
        let state = tempfile::tempdir().unwrap();
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let cfg = |dir: &Path| AuditConfig {
            path: Some(dir.join("audit.jsonl")),
            ..AuditConfig::default()
        };
        for dir in [a.path(), b.path(), a.path(), b.path()] {
            let log = AuditLog::open(&cfg(dir), Some(state.path())).unwrap();
            calls(&log, 1).await;
            log.close().await.unwrap();
        }
        let key = AuditKey::load(&state.path().join(KEY_FILE)).unwrap();
        let heads: Vec<PathBuf> = [a.path(), b.path()]
            .iter()
            .map(|dir| cfg(dir).head_path(Some(state.path())).unwrap())
            .collect();
        assert_ne!(heads[0], heads[1]);
        for (dir, head) in [a.path(), b.path()].iter().zip(&heads) {
            let head = Head::load(head, &key).unwrap().unwrap();
            assert_eq!(head.log.as_deref(), Some(dir.join("audit.jsonl").as_path()));
            let report = verify(&dir.join("audit.jsonl"), &key, Some(head.anchor())).unwrap();
            assert!(report.is_complete(), "{report}");
            assert_eq!(report.anchored_seq, Some(6));
        }
    }

    /// A head file that names another log (`audit.path` changed, one `head_file` for two logs)
    /// is no alarm: the log starts with a `head_reset` record naming the other log, and the head
    /// file seals it from then on; the same log moved to another path is still recognised by
    /// its first record; another chain put in its place is a replaced log.
    #[tokio::test]
    async fn a_head_file_names_the_log_it_seals() {
        let dir = tempfile::tempdir().unwrap();
        let head = dir.path().join("shared.head");
        let cfg = |log: PathBuf| AuditConfig {
            path: Some(log),
            head_file: Some(head.clone()),
            ..AuditConfig::default()
        };
        let a = dir.path().join("a.jsonl");
        let log = AuditLog::open(&cfg(a.clone()), Some(dir.path())).unwrap();
        calls(&log, 2).await;
        log.close().await.unwrap();

        // Another log with this head file (audit.path changed): it starts, and says why.
        let b = dir.path().join("b.jsonl");
        let log = AuditLog::open(&cfg(b.clone()), Some(dir.path())).unwrap();
        calls(&log, 1).await;
        log.close().await.unwrap();
        let lines = read_lines(&b);
        assert_eq!(lines[0]["kind"], "head_reset");
        assert_eq!(lines[0]["head_file"], head.display().to_string());
        assert_eq!(lines[0]["sealed_log"], a.display().to_string());
        let key = AuditKey::load(&dir.path().join(KEY_FILE)).unwrap();
        let loaded = Head::load(&head, &key).unwrap().unwrap();
        assert_eq!(loaded.log.as_deref(), Some(b.as_path()));
        let report = verify(&b, &key, Some(loaded.anchor())).unwrap();
        assert!(report.is_complete(), "{report}");
        // Back to the first log: the same again, the other way round.
        let log = AuditLog::open(&cfg(a.clone()), Some(dir.path())).unwrap();
        log.close().await.unwrap();
        let lines = read_lines(&a);
        assert_eq!(lines[lines.len() - 2]["kind"], "head_reset");
        assert_eq!(
            lines[lines.len() - 2]["sealed_log"],
            b.display().to_string()
        );

        let moved = dir.path().join("moved");
        std::fs::create_dir(&moved).unwrap();
        let a_moved = moved.join("a.jsonl");
        std::fs::rename(&a, &a_moved).unwrap();
        let log = AuditLog::open(&cfg(a_moved.clone()), Some(dir.path())).unwrap();
        calls(&log, 1).await;
        log.close().await.unwrap();
        let resets = read_lines(&a_moved)
            .iter()
            .filter(|l| l["kind"] == "head_reset")
            .count();
        assert_eq!(resets, 1, "a moved log is the same log, not another one");
        let loaded = Head::load(&head, &key).unwrap().unwrap();
        assert_eq!(loaded.log.as_deref(), Some(a_moved.as_path()));
        let report = verify(&a_moved, &key, Some(loaded.anchor())).unwrap();
        assert!(report.is_complete(), "{report}");
        assert_eq!(report.anchored_seq, Some(report.last_seq));

        // Another chain (same key) in its place.
        let other = dir.path().join("other.jsonl");
        let log = AuditLog::open(
            &AuditConfig {
                path: Some(other.clone()),
                ..AuditConfig::default()
            },
            Some(dir.path()),
        )
        .unwrap();
        calls(&log, 5).await;
        log.close().await.unwrap();
        std::fs::copy(&other, &a_moved).unwrap();
        let err = AuditLog::open(&cfg(a_moved), Some(dir.path())).unwrap_err();
        assert!(matches!(err, AuditError::HeadMismatch(_)), "{err}");
        assert!(err.to_string().contains("another file"), "{err}");
    }

    /// The files an earlier version left (see `tests/fixtures/audit-v1`): its log, its key, and
    /// its head file `audit.head`, which names no log.
    fn earlier_version(state: &Path) {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/audit-v1");
        for name in ["audit.jsonl", "audit.head", "audit.key"] {
            std::fs::copy(fixture.join(name), state.join(name)).unwrap();
        }
    }

    /// A log and head file written by an earlier version open and verify; the log then gets
    /// its own head file and the old one goes. An old head file that does not match is refused
    /// as before, with the hint that it may be another log's.
    #[tokio::test]
    async fn a_log_and_head_file_of_an_earlier_version_still_open() {
        let dir = tempfile::tempdir().unwrap();
        earlier_version(dir.path());
        let legacy = dir.path().join("audit.head");
        let key = AuditKey::load(&dir.path().join(KEY_FILE)).unwrap();
        let old = Head::load(&legacy, &key).unwrap().unwrap();
        assert_eq!(old.log, None);
        let path = dir.path().join("audit.jsonl");
        assert!(
            verify(&path, &key, Some(old.anchor()))
                .unwrap()
                .is_complete()
        );

        let log = AuditLog::open(&config(dir.path(), 8), Some(dir.path())).unwrap();
        calls(&log, 1).await;
        log.close().await.unwrap();
        assert!(!legacy.exists(), "replaced by the log's own head file");
        let report = verify_in(dir.path());
        assert!(report.is_complete(), "{report}");
        assert_eq!(report.anchored_seq, Some(report.last_seq));
        assert!(report.last_seq > old.seq);

        let dir = tempfile::tempdir().unwrap();
        earlier_version(dir.path());
        let path = dir.path().join("audit.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        let kept: Vec<&str> = text.lines().take(2).collect();
        std::fs::write(&path, kept.join("\n") + "\n").unwrap();
        let err = AuditLog::open(&config(dir.path(), 8), Some(dir.path())).unwrap_err();
        assert!(err.to_string().contains("cut or replaced"), "{err}");
        assert!(err.to_string().contains("move it aside instead"), "{err}");
    }

    /// A `dropped` record of an earlier version has no reason: it counts as a full queue.
    #[test]
    fn a_dropped_record_without_a_reason_is_a_full_queue() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let key = Arc::new(AuditKey::from_secret(&[5; 32]));
        let mut writer = ChainWriter::open(&path, Arc::clone(&key)).unwrap();
        writer.seal(|seq| {
            format!(r#"{{"seq":{seq},"time":"t","kind":"dropped","count":3}}"#).into_bytes()
        });
        writer.write_backlog().1.unwrap();
        let report = verify(&path, &key, None).unwrap();
        assert!(report.is_intact() && !report.is_complete(), "{report}");
        assert_eq!(report.gaps[0].reason, "queue_full");
        assert_eq!(report.lost, 3);
    }

    /// A log rotated by size: the files, in order.
    async fn rotated_log(dir: &Path) -> Vec<PathBuf> {
        let cfg = AuditConfig {
            rotate_bytes: 1500,
            ..config(dir, 64)
        };
        let log = AuditLog::open(&cfg, Some(dir)).unwrap();
        for _ in 0..8 {
            calls(&log, 2).await;
            log.flush().await.unwrap();
        }
        log.close().await.unwrap();
        files::log_files(&dir.join("audit.jsonl")).unwrap()
    }

    fn file_lines(path: &Path) -> Vec<Value> {
        read_lines(path)
    }

    /// Rotation by size: each full file ends with a `rotate` checkpoint, the next begins with a
    /// `continued` record naming it and its last record, and the files verify as one chain,
    /// anchored by the head file, also after a restart.
    #[tokio::test]
    async fn the_log_rotates_by_size_and_its_files_verify_as_one_chain() {
        let dir = tempfile::tempdir().unwrap();
        let files = rotated_log(dir.path()).await;
        assert!(files.len() >= 4, "{files:?}");
        let live = dir.path().join("audit.jsonl");
        assert_eq!(files.last(), Some(&live));
        for pair in files.windows(2) {
            let before = file_lines(&pair[0]);
            let last = before.last().unwrap();
            assert_eq!(last["kind"], "checkpoint");
            assert_eq!(last["reason"], "rotate");
            assert!(std::fs::metadata(&pair[0]).unwrap().len() >= 1500);
            let first = &file_lines(&pair[1])[0];
            assert_eq!(first["kind"], "continued");
            assert_eq!(first["previous_file"], files::name_of(&pair[0]).as_str());
            assert_eq!(first["previous_seq"], last["seq"]);
            assert_eq!(first["previous_link"], last["link"]);
            assert_eq!(first["seq"], last["seq"].as_u64().unwrap() + 1);
        }
        let key = AuditKey::load(&dir.path().join(KEY_FILE)).unwrap();
        let head = Head::load(&head_file(dir.path()), &key).unwrap().unwrap();
        let report = verify_files(&files, &key, Some(head.anchor())).unwrap();
        assert!(report.is_complete(), "{report}");
        assert_eq!(report.files, files.len() as u64);
        assert_eq!(report.anchored_seq, Some(report.last_seq));
        assert_eq!(report.verified, report.last_seq);
        assert!(
            report
                .to_string()
                .contains(&format!("in {} files", files.len()))
        );

        let log = AuditLog::open(&config(dir.path(), 8), Some(dir.path())).unwrap();
        calls(&log, 1).await;
        log.close().await.unwrap();
        let files = files::log_files(&live).unwrap();
        let head = Head::load(&head_file(dir.path()), &key).unwrap().unwrap();
        let report = verify_files(&files, &key, Some(head.anchor())).unwrap();
        assert!(report.is_complete(), "{report}");
        assert_eq!(report.anchored_seq, Some(report.last_seq));
    }

    /// A missing, reordered, edited or foreign file breaks the chain where it is, naming it;
    /// older files archived away leave a set that still verifies, and says where it starts.
    #[tokio::test]
    async fn a_missing_reordered_or_edited_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let files = rotated_log(dir.path()).await;
        let key = AuditKey::load(&dir.path().join(KEY_FILE)).unwrap();
        let check = |files: &[PathBuf]| verify_files(files, &key, None).unwrap();
        let name = |i: usize| files::name_of(&files[i]);

        let mut missing = files.clone();
        missing.remove(1);
        let report = check(&missing);
        assert!(
            matches!(&report.first_problem, Some(ChainProblem::FilesMissing { file, after, .. })
                if *file == name(2) && *after == name(0)),
            "{report}"
        );
        assert!(
            report.to_string().contains("a file of the log is missing"),
            "{report}"
        );

        let mut reordered = files.clone();
        reordered.swap(1, 2);
        let report = check(&reordered);
        assert_eq!(report.problems, 3, "{report}");
        assert!(
            report.file_problems.iter().any(|p| matches!(p,
                ChainProblem::OutOfOrder { file, after, .. } if *file == name(1) && *after == name(2))),
            "{:?}",
            report.file_problems
        );
        let out_of_order = report
            .file_problems
            .iter()
            .map(ToString::to_string)
            .find(|p| p.contains("out of order"))
            .unwrap();
        assert!(
            out_of_order.starts_with(&format!("{} continues record", name(1))),
            "{out_of_order}"
        );
        let later_first = check(&[files[2].clone(), files[0].clone()]);
        assert!(
            matches!(&later_first.first_problem, Some(ChainProblem::NotContinued { file, .. }) if *file == name(0)),
            "{later_first}"
        );

        let edited = dir.path().join("edited");
        std::fs::create_dir(&edited).unwrap();
        let mut copies = Vec::new();
        for file in &files {
            let copy = edited.join(file.file_name().unwrap());
            std::fs::copy(file, &copy).unwrap();
            copies.push(copy);
        }
        let text = std::fs::read_to_string(&copies[1]).unwrap();
        std::fs::write(
            &copies[1],
            text.replacen(r#""sub":"alice""#, r#""sub":"mallory""#, 1),
        )
        .unwrap();
        let report = check(&copies);
        assert!(
            matches!(report.first_problem, Some(ChainProblem::Altered { .. })),
            "{report}"
        );
        assert_eq!(report.first_problem_file.as_deref(), Some(name(1).as_str()));
        assert!(
            report
                .to_string()
                .starts_with(&format!("BROKEN: {}: line ", name(1))),
            "{report}"
        );

        let archived = check(&files[2..]);
        assert!(archived.is_complete(), "{archived}");
        let starts = archived.starts_after.unwrap();
        assert_eq!(starts.file, name(1));
    }

    /// Rotation by age: once the live file's first record is `rotate_secs` old, the file is
    /// rotated at the next batch.
    #[tokio::test]
    async fn the_log_rotates_by_age() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("audit.jsonl");
        let cfg = AuditConfig {
            rotate_secs: 1,
            ..config(dir.path(), 64)
        };
        let log = AuditLog::open(&cfg, Some(dir.path())).unwrap();
        calls(&log, 1).await;
        log.flush().await.unwrap();
        assert!(files::rotated_files(&live).unwrap().is_empty());
        let deadline = Instant::now() + Duration::from_secs(10);
        while files::rotated_files(&live).unwrap().is_empty() {
            assert!(Instant::now() < deadline, "never rotated");
            calls(&log, 1).await;
            log.flush().await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        log.close().await.unwrap();
        let rotated = files::rotated_files(&live).unwrap();
        let lines = file_lines(&rotated[0]);
        let (first, last) = (&lines[0], lines.last().unwrap());
        assert_eq!(last["reason"], "rotate");
        let ms = |v: &Value| {
            let t = v["time"].as_str().unwrap();
            let secs: f64 = t[17..23].parse().unwrap();
            let mins: f64 = t[14..16].parse().unwrap();
            mins * 60.0 + secs
        };
        let age = (ms(last) - ms(first)).rem_euclid(3600.0);
        assert!(age >= 1.0, "rotated after {age} s");
        let report = verify_files(
            &files::log_files(&live).unwrap(),
            &log_key(dir.path()),
            None,
        )
        .unwrap();
        assert!(report.is_complete(), "{report}");
    }

    fn log_key(dir: &Path) -> AuditKey {
        AuditKey::load(&dir.join(KEY_FILE)).unwrap()
    }

    /// A rotation cut short by a crash is picked up: the head file names the rotated file's
    /// name before the rename, and the gateway continues from whichever file holds the record.
    #[tokio::test]
    async fn a_rotation_cut_short_by_a_crash_is_completed() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&config(dir.path(), 8), Some(dir.path())).unwrap();
        calls(&log, 2).await;
        log.close().await.unwrap();
        let key = log_key(dir.path());
        let head_path = head_file(dir.path());
        let head = Head::load(&head_path, &key).unwrap().unwrap();
        let rotated = files::rotated_name(&live, std::time::SystemTime::now());
        let naming_rotated = Head {
            file: Some(files::name_of(&rotated)),
            ..head
        };
        naming_rotated.save(&head_path, &key).unwrap();

        // Before the rename: the live file still holds the record.
        let log = AuditLog::open(&config(dir.path(), 8), Some(dir.path())).unwrap();
        log.close().await.unwrap();
        let head = Head::load(&head_path, &key).unwrap().unwrap();
        Head {
            file: Some(files::name_of(&rotated)),
            ..head
        }
        .save(&head_path, &key)
        .unwrap();

        // After it, before a new live file: the gateway makes one that continues the chain.
        std::fs::rename(&live, &rotated).unwrap();
        let log = AuditLog::open(&config(dir.path(), 8), Some(dir.path())).unwrap();
        calls(&log, 1).await;
        log.close().await.unwrap();
        let first = &file_lines(&live)[0];
        assert_eq!(first["kind"], "continued");
        assert_eq!(first["previous_file"], files::name_of(&rotated).as_str());
        let files = files::log_files(&live).unwrap();
        assert_eq!(files, [rotated, live]);
        let head = Head::load(&head_path, &key).unwrap().unwrap();
        let report = verify_files(&files, &key, Some(head.anchor())).unwrap();
        assert!(report.is_complete(), "{report}");
        assert_eq!(report.anchored_seq, Some(report.last_seq));
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
