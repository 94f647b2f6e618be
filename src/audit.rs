//! The audit log: one JSON line per tool call, redacted, hash-chained, written off the
//! request path.
//!
//! ```toml
//! [audit]
//! path = "/var/log/muxgate/audit.jsonl"   # unset: no audit log
//! queue_capacity = 4096                     # records waiting for the writer
//! max_string_chars = 200                    # cap on echoed argument strings
//! ```
//!
//! A line looks like
//! `{"seq":7,"time":"2026-08-30T12:00:00.123Z","kind":"call","sub":"ci-bot","mcp_session":"…",
//! "tool":"send_keys","server":"default","targets":["%3"],"outcome":"ok","duration_ms":4,
//! "error_kind":null,"args":{"pane_id":"%3","keys":{"len":5,"sha256_prefix":"…"}},"prev":"…"}`.
//! `time` is when the call finished. Arguments are redacted by [`redact`] before they are
//! queued; tokens never reach this module.
//!
//! [`AuditLog::record`] never waits: it offers the record to a bounded queue, and if the queue
//! is full the record is dropped and counted. The writer thread then writes a
//! `{"kind":"dropped","count":N}` line as soon as it runs again, so every gap is visible in the
//! chain. [`AuditLog::flush`] and [`AuditLog::close`] (call it on shutdown) wait for the
//! writer, with a timeout. The hash chain and `verify` live in [`chain`].

pub mod chain;
pub mod redact;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use chain::ChainWriter;
pub use chain::{ChainProblem, GENESIS, VerifyReport, verify};

/// How long [`AuditLog::flush`] and [`AuditLog::close`] wait for the writer.
pub const WRITER_TIMEOUT: Duration = Duration::from_secs(10);

/// `[audit]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// The audit file (JSON lines, appended, mode 0600). Unset: auditing is off.
    pub path: Option<PathBuf>,
    /// Records that may wait for the writer before new ones are dropped (and counted).
    pub queue_capacity: usize,
    /// Longest echoed argument string, in characters.
    pub max_string_chars: usize,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            path: None,
            queue_capacity: 4096,
            max_string_chars: 200,
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

/// One finished tool call, as the MCP handler knows it.
#[derive(Debug, Clone, Copy)]
pub struct ToolCall<'a> {
    /// The caller.
    pub sub: &'a str,
    /// The MCP session, if the protocol version has sessions.
    pub mcp_session: Option<&'a str>,
    /// Tool name.
    pub tool: &'a str,
    /// Configured server name the call addressed.
    pub server: Option<&'a str>,
    /// Resolved targets (session/window/pane ids).
    pub targets: &'a [String],
    /// Result.
    pub outcome: Outcome,
    /// Wall time of the call.
    pub duration: Duration,
    /// Short stable error category (`not_found`, `timeout`, `missing_scope`, …), never a
    /// message that could echo input.
    pub error_kind: Option<&'a str>,
    /// The raw arguments; redacted here before anything is queued.
    pub args: &'a Value,
}

#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Entry {
    Call {
        sub: String,
        mcp_session: Option<String>,
        tool: String,
        server: Option<String>,
        targets: Vec<Value>,
        outcome: Outcome,
        duration_ms: u64,
        error_kind: Option<String>,
        args: Value,
    },
    Dropped {
        count: u64,
    },
}

#[derive(Serialize)]
struct Line<'a> {
    seq: u64,
    time: &'a str,
    #[serde(flatten)]
    entry: &'a Entry,
    prev: &'a str,
}

#[derive(Debug)]
struct Pending {
    time: String,
    entry: Entry,
}

enum Command {
    Record(Box<Pending>),
    Flush(oneshot::Sender<Result<(), String>>),
    Close(oneshot::Sender<Result<(), String>>),
}

/// Counters for metrics.
#[derive(Debug, Default)]
struct Counters {
    written: AtomicU64,
    dropped: AtomicU64,
    write_errors: AtomicU64,
}

/// A snapshot of the audit counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuditStats {
    /// Lines written (calls and drop notices).
    pub written: u64,
    /// Records dropped because the queue was full or the log closed.
    pub dropped: u64,
    /// Lines that could not be written.
    pub write_errors: u64,
}

/// Why the audit log could not be opened or flushed.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// Opening the file failed.
    #[error("audit: cannot open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `queue_capacity` is zero.
    #[error("audit: queue_capacity must be at least 1")]
    ZeroCapacity,
    /// The writer failed or is gone.
    #[error("audit: writer failed: {0}")]
    Writer(String),
    /// The writer did not answer in time.
    #[error("audit: writer did not answer within {WRITER_TIMEOUT:?}")]
    Timeout,
}

struct Inner {
    tx: mpsc::Sender<Command>,
    /// Drops not yet reported in the file.
    unreported_drops: Arc<AtomicU64>,
    counters: Arc<Counters>,
    max_chars: usize,
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

impl AuditLog {
    /// Opens the configured file (or returns a disabled log when no path is set) and starts
    /// the writer thread.
    pub fn open(cfg: &AuditConfig) -> Result<Self, AuditError> {
        Self::start(cfg, None)
    }

    /// A log that records nothing.
    pub fn disabled() -> Self {
        Self { inner: None }
    }

    /// Whether records are written.
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    fn start(
        cfg: &AuditConfig,
        gate: Option<std::sync::mpsc::Receiver<()>>,
    ) -> Result<Self, AuditError> {
        let Some(path) = &cfg.path else {
            return Ok(Self::disabled());
        };
        if cfg.queue_capacity == 0 {
            return Err(AuditError::ZeroCapacity);
        }
        let writer = ChainWriter::open(path).map_err(|source| AuditError::Open {
            path: path.clone(),
            source,
        })?;
        let (tx, rx) = mpsc::channel(cfg.queue_capacity);
        let unreported_drops = Arc::new(AtomicU64::new(0));
        let counters = Arc::new(Counters::default());
        let task = WriterTask {
            writer,
            rx,
            unreported_drops: Arc::clone(&unreported_drops),
            counters: Arc::clone(&counters),
        };
        std::thread::Builder::new()
            .name("muxgate-audit".into())
            .spawn(move || {
                if let Some(gate) = gate {
                    // Test seam: hold the writer until the test has filled the queue.
                    let _ = gate.recv();
                }
                task.run();
            })
            .map_err(|source| AuditError::Open {
                path: path.clone(),
                source,
            })?;
        Ok(Self {
            inner: Some(Arc::new(Inner {
                tx,
                unreported_drops,
                counters,
                max_chars: cfg.max_string_chars,
            })),
        })
    }

    /// Records a finished tool call without waiting; if the queue is full the record is
    /// dropped and counted (and the gap is written to the log later).
    pub fn record(&self, call: ToolCall<'_>) {
        let Some(inner) = &self.inner else {
            return;
        };
        let cap = |s: &str| redact::cap_chars(s, inner.max_chars);
        let entry = Entry::Call {
            sub: call.sub.to_owned(),
            mcp_session: call.mcp_session.map(cap),
            tool: cap(call.tool),
            server: call.server.map(cap),
            targets: call.targets.iter().map(|t| Value::String(cap(t))).collect(),
            outcome: call.outcome,
            duration_ms: u64::try_from(call.duration.as_millis()).unwrap_or(u64::MAX),
            error_kind: call.error_kind.map(cap),
            args: redact::redact_args(call.args, inner.max_chars),
        };
        let pending = Box::new(Pending {
            time: rfc3339_millis(SystemTime::now()),
            entry,
        });
        if inner.tx.try_send(Command::Record(pending)).is_err() {
            inner.unreported_drops.fetch_add(1, Ordering::Relaxed);
            inner.counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    async fn round_trip(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<(), String>>) -> Command,
    ) -> Result<(), AuditError> {
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

    /// Writes everything recorded so far, syncs, and stops the writer. Later records are
    /// counted as dropped.
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
        }
    }
}

struct WriterTask {
    writer: ChainWriter,
    rx: mpsc::Receiver<Command>,
    unreported_drops: Arc<AtomicU64>,
    counters: Arc<Counters>,
}

/// Most commands handled between two flushes.
const BATCH: usize = 256;

impl WriterTask {
    fn run(mut self) {
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            let Some(first) = self.rx.blocking_recv() else {
                // Every handle is gone without `close()`: still write what is pending.
                if let Err(e) = self.finish() {
                    self.write_failed(&e);
                }
                return;
            };
            batch.push(first);
            while batch.len() < BATCH {
                match self.rx.try_recv() {
                    Ok(cmd) => batch.push(cmd),
                    Err(_) => break,
                }
            }
            for cmd in batch.drain(..) {
                match cmd {
                    Command::Record(pending) => {
                        self.report_drops();
                        self.write(&pending.time, &pending.entry);
                    }
                    Command::Flush(ack) => {
                        self.report_drops();
                        let _ = ack.send(self.writer.sync().map_err(|e| e.to_string()));
                    }
                    Command::Close(ack) => {
                        let result = self.finish();
                        // Release the file (and its lock) before saying it is closed, so the
                        // caller may reopen it at once.
                        drop(self);
                        let _ = ack.send(result.map_err(|e| e.to_string()));
                        return;
                    }
                }
            }
            // The queue had room again: make any drops since the last batch visible now.
            self.report_drops();
            if let Err(e) = self.writer.flush() {
                self.write_failed(&e);
            }
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        self.rx.close();
        self.report_drops();
        let result = self.writer.sync();
        tracing::info!(
            path = %self.writer.path().display(),
            seq = self.writer.seq(),
            head = %self.writer.head(),
            "audit log closed"
        );
        result
    }

    fn report_drops(&mut self) {
        let count = self.unreported_drops.swap(0, Ordering::Relaxed);
        if count > 0 {
            let time = rfc3339_millis(SystemTime::now());
            self.write(&time, &Entry::Dropped { count });
        }
    }

    fn write(&mut self, time: &str, entry: &Entry) {
        let result = self.writer.append(|seq, prev| {
            let line = Line {
                seq,
                time,
                entry,
                prev,
            };
            // Serializing plain strings, numbers and `Value`s cannot fail; an empty object
            // would still be a (malformed, hence visible) line.
            serde_json::to_vec(&line).unwrap_or_else(|_| b"{}".to_vec())
        });
        match result {
            Ok(()) => {
                self.counters.written.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => self.write_failed(&e),
        }
    }

    fn write_failed(&self, error: &std::io::Error) {
        let n = self.counters.write_errors.fetch_add(1, Ordering::Relaxed) + 1;
        // Log the first failure and then at powers of two, not once per record.
        if n.is_power_of_two() {
            tracing::error!(path = %self.writer.path().display(), %error, failures = n, "audit write failed");
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
fn rfc3339_millis(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(path: &std::path::Path, capacity: usize) -> AuditConfig {
        AuditConfig {
            path: Some(path.to_owned()),
            queue_capacity: capacity,
            ..AuditConfig::default()
        }
    }

    fn call<'a>(args: &'a Value, targets: &'a [String]) -> ToolCall<'a> {
        ToolCall {
            sub: "alice",
            mcp_session: Some("sess-1"),
            tool: "send_keys",
            server: Some("default"),
            targets,
            outcome: Outcome::Ok,
            duration: Duration::from_millis(12),
            error_kind: None,
            args,
        }
    }

    fn read_lines(path: &std::path::Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn timestamps() {
        let at = |s: u64, ms: u64| {
            rfc3339_millis(UNIX_EPOCH + Duration::from_secs(s) + Duration::from_millis(ms))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_700_000_000, 999), "2023-11-14T22:13:20.999Z");
        assert_eq!(at(4_107_542_399, 0), "2100-02-28T23:59:59.000Z");
    }

    #[test]
    fn config_parses_and_refuses_unknown_keys() {
        let cfg: AuditConfig = toml::from_str(r#"path = "/tmp/x.jsonl""#).unwrap();
        assert_eq!(cfg.queue_capacity, 4096);
        assert!(toml::from_str::<AuditConfig>("paht = 1").is_err());
    }

    #[tokio::test]
    async fn records_are_written_as_chained_json_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&config(&path, 16)).unwrap();
        let targets = vec!["%3".to_owned()];
        let args = json!({ "pane_id": "%3", "keys": "ls" });
        log.record(call(&args, &targets));
        log.record(ToolCall {
            outcome: Outcome::Denied,
            error_kind: Some("missing_scope"),
            ..call(&args, &targets)
        });
        log.flush().await.unwrap();
        let lines = read_lines(&path);
        assert_eq!(lines.len(), 2);
        let first = &lines[0];
        assert_eq!(first["seq"], 1);
        assert_eq!(first["kind"], "call");
        assert_eq!(first["sub"], "alice");
        assert_eq!(first["mcp_session"], "sess-1");
        assert_eq!(first["tool"], "send_keys");
        assert_eq!(first["server"], "default");
        assert_eq!(first["targets"], json!(["%3"]));
        assert_eq!(first["outcome"], "ok");
        assert_eq!(first["duration_ms"], 12);
        assert_eq!(first["error_kind"], Value::Null);
        assert_eq!(first["args"]["keys"]["len"], 2);
        assert_eq!(first["prev"], GENESIS);
        assert!(first["time"].as_str().unwrap().ends_with('Z'));
        assert_eq!(lines[1]["outcome"], "denied");
        assert_eq!(lines[1]["error_kind"], "missing_scope");
        log.close().await.unwrap();
        assert!(verify(&path).unwrap().is_intact());
        assert_eq!(log.stats().written, 2);
    }

    #[tokio::test]
    async fn a_full_queue_drops_and_reports_the_gap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let (release, gate) = std::sync::mpsc::channel();
        let log = AuditLog::start(&config(&path, 2), Some(gate)).unwrap();
        let targets = Vec::new();
        let args = json!({});
        for _ in 0..10 {
            log.record(call(&args, &targets));
        }
        assert_eq!(log.stats().dropped, 8);
        release.send(()).unwrap();
        log.flush().await.unwrap();
        let lines = read_lines(&path);
        let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["dropped", "call", "call"]);
        assert_eq!(lines[0]["count"], 8);
        assert!(verify(&path).unwrap().is_intact());
        log.close().await.unwrap();
    }

    #[tokio::test]
    async fn records_after_close_are_counted_as_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&config(&path, 4)).unwrap();
        log.close().await.unwrap();
        let args = json!({});
        log.record(call(&args, &[]));
        assert_eq!(log.stats().dropped, 1);
        assert!(log.flush().await.is_err());
        // The lock is released with the writer: the file can be reopened.
        let again = AuditLog::open(&config(&path, 4)).unwrap();
        again.close().await.unwrap();
    }

    #[tokio::test]
    async fn the_chain_continues_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let args = json!({ "keys": "x" });
        for _ in 0..2 {
            let log = AuditLog::open(&config(&path, 4)).unwrap();
            log.record(call(&args, &[]));
            log.record(call(&args, &[]));
            log.close().await.unwrap();
        }
        let report = verify(&path).unwrap();
        assert!(report.is_intact(), "{report}");
        assert_eq!(report.last_seq, 4);
    }

    #[tokio::test]
    async fn disabled_log_is_a_no_op() {
        let log = AuditLog::open(&AuditConfig::default()).unwrap();
        assert!(!log.is_enabled());
        log.record(call(&json!({}), &[]));
        log.flush().await.unwrap();
        assert_eq!(log.stats(), AuditStats::default());
    }

    #[test]
    fn zero_capacity_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = AuditLog::open(&config(&dir.path().join("a"), 0)).unwrap_err();
        assert!(matches!(err, AuditError::ZeroCapacity));
    }

    /// Every secret a client could send, in every place it could hide, is absent from the
    /// file; only its digest is there.
    #[tokio::test]
    async fn no_secret_reaches_the_audit_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&config(&path, 64)).unwrap();
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
        ];
        let payloads = [
            json!({ "pane_id": "%1", "keys": secrets[0] }),
            json!({ "text": secrets[1], "bracket": true }),
            json!({ "command": secrets[2], "timeout": 5 }),
            json!({ "session_name": "s", "environment": { "TOKEN": secrets[3] } }),
            json!({ "content": secrets[4], "logical_name": "b" }),
            json!({ "option": "@x", "value": secrets[5] }),
            json!({ "operations": [ { "tool": "send_keys", "arguments": { "keys": secrets[6] } } ] }),
            json!({ "pane_id": "%1", "wait_for_previous": secrets[7] }),
            json!([secrets[8], { "keys": secrets[8] }]),
            json!({ "shell": secrets[9] }),
            json!({ "patterns": [secrets[10]], "stop": secrets[10] }),
            json!({ "operations": [ { "tool": "run_command", "arguments": format!("{{\"command\":\"{}\"}}", secrets[11]) } ] }),
        ];
        for args in &payloads {
            log.record(call(args, &[]));
        }
        log.close().await.unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), payloads.len());
        for secret in secrets {
            assert!(!text.contains(secret), "{secret} found in the audit file");
        }
        assert!(text.contains(&redact::sha256_prefix(secrets[0].as_bytes())));
    }
}
