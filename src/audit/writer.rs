//! The writer thread: the only code that touches the audit file. It takes records from the
//! bounded queue in batches, seals each into the chain's backlog and writes the backlog once per
//! batch (answering the fail-closed start records that wait for it), and writes a checkpoint
//! (synced, then mirrored into the head file) an interval after the first record since the last
//! one, and when the log closes.
//!
//! Nothing is lost silently. A record the OS refuses (a full or failing disk) stays sealed in
//! the backlog, which is written again on the next batch and on a timer (backing off from
//! [`RETRY_FIRST`] to [`RETRY_MAX`]) even when no record arrives. Only when the backlog holds
//! `audit.backlog_capacity` lines are newer records dropped: they are not sealed, only counted,
//! like records that found the queue full, and before any later record a `dropped` record with
//! each count and its reason is sealed, so every gap is part of the verified chain.
//!
//! With `audit.rotate_bytes` or `audit.rotate_secs` it also rotates the live file (see
//! [`super::files`]) once everything sealed is written: a `rotate` checkpoint ends the file, the
//! head file names the file's new name before the rename (so a crash in between leaves a head
//! file that still vouches for it), and a new live file begins with a `continued` record. If
//! the new file cannot be made, writing goes on in the renamed file and the rotation is tried
//! again a checkpoint interval later.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::chain::ChainWriter;
use super::files::{name_of, rotated_name};
use super::head::Head;
use super::key::AuditKey;
use super::record::{CheckpointReason, DropReason, Entry, render};
use crate::utc::Utc;

/// The first wait before writing the backlog again after the disk refused it.
pub(super) const RETRY_FIRST: Duration = Duration::from_millis(100);
/// The longest wait between two attempts while the disk keeps refusing.
pub(super) const RETRY_MAX: Duration = Duration::from_secs(2);

#[derive(Debug)]
pub(super) struct Pending {
    pub(super) time: String,
    pub(super) entry: Entry,
}

/// Why a fail-closed start record was not acknowledged.
#[derive(Debug)]
pub(super) struct Refused {
    pub(super) why: String,
    /// The record is sealed and waits in the backlog: it will still be written, so the call's
    /// end must be recorded too. `false`: it was dropped (and counted) instead.
    pub(super) kept: bool,
}

/// Answers whether a record reached the OS.
pub(super) type Ack = oneshot::Sender<Result<(), Refused>>;

/// Answers a flush or a close.
pub(super) type Done = oneshot::Sender<Result<(), String>>;

pub(super) enum Command {
    Record {
        pending: Box<Pending>,
        /// Only for fail-closed start records.
        ack: Option<Ack>,
    },
    Flush(Done),
    Close(Done),
}

/// Counters for metrics.
#[derive(Debug, Default)]
pub(super) struct Counters {
    /// Lines that reached the OS.
    pub(super) written: AtomicU64,
    /// Records never sealed (queue full, backlog full) or left unwritten when the log closed.
    pub(super) dropped: AtomicU64,
    /// Failed attempts to write lines or the head file.
    pub(super) write_errors: AtomicU64,
    /// Lines sealed and waiting for the disk now.
    pub(super) backlog: AtomicU64,
}

/// Records dropped and not yet reported by a `dropped` record, by reason.
#[derive(Debug, Default)]
pub(super) struct Lost {
    queue_full: u64,
    write_failed: u64,
}

impl Lost {
    fn any(&self) -> bool {
        self.queue_full > 0 || self.write_failed > 0
    }
}

/// Writing the backlog again while the disk refuses it.
#[derive(Debug, Default)]
pub(super) struct Retry {
    /// The next attempt; none while nothing waits.
    due: Option<Instant>,
    /// The wait before that attempt: doubles from [`RETRY_FIRST`] up to [`RETRY_MAX`].
    delay: Duration,
    /// A write failed in this batch: the rest of it does not try again (one failed write per
    /// batch, not one per record, while the disk is full).
    failed_in_batch: bool,
    /// Failed attempts since the last write that worked.
    failures: u64,
    /// Why the last attempt failed.
    last_error: String,
}

/// When the live file is rotated, and how far a rotation got.
#[derive(Debug)]
pub(super) struct Rotation {
    /// Rotate at this size (0: never).
    bytes: u64,
    /// Rotate once the file's first record is this old (0: never).
    secs: u64,
    /// The file was renamed, but no new live file could be made yet.
    moved: bool,
    /// A failed rotation is not tried again before this.
    not_before: Option<Instant>,
}

impl Rotation {
    pub(super) fn new(bytes: u64, secs: u64) -> Self {
        Self {
            bytes,
            secs,
            moved: false,
            not_before: None,
        }
    }
}

pub(super) struct WriterTask {
    /// The live file's path.
    pub(super) log: PathBuf,
    /// The link of the first record of the file being written: which file it is.
    pub(super) file_first: Option<String>,
    /// The time of that record (none: read from the file when needed).
    pub(super) file_started: Option<String>,
    pub(super) rotation: Rotation,
    /// A head file written before each log had its own, replaced once the log's own is saved.
    pub(super) legacy_head: Option<PathBuf>,
    pub(super) writer: ChainWriter,
    pub(super) rx: mpsc::Receiver<Command>,
    pub(super) unreported_drops: Arc<AtomicU64>,
    pub(super) counters: Arc<Counters>,
    pub(super) key: Arc<AuditKey>,
    pub(super) head_path: Option<PathBuf>,
    pub(super) interval: Duration,
    /// When the next checkpoint is due: an interval after the first record since the last one.
    pub(super) checkpoint_due: Option<Instant>,
    /// Most lines the backlog holds before records are dropped.
    pub(super) backlog_capacity: usize,
    pub(super) lost: Lost,
    pub(super) retry: Retry,
}

/// Most commands handled between two writes.
const BATCH: usize = 256;

/// Fail-closed start records waiting for the write that ends a batch, with their `seq` (none:
/// the record was dropped).
type Acks = Vec<(Ack, Option<u64>)>;

impl WriterTask {
    /// Runs until the log is closed; `opening` are the records this start begins with (the
    /// `continued` record of a new live file after a rotation, a `head_reset` record).
    pub(super) async fn run(mut self, opening: Vec<Entry>) {
        let mut batch = Vec::with_capacity(BATCH);
        let mut acks: Acks = Vec::new();
        if !opening.is_empty() {
            let time = Utc::from(SystemTime::now()).rfc3339_millis();
            for entry in &opening {
                self.seal(&time, entry);
            }
            self.settle(&mut acks);
            // The head file may name another file or log until this is saved: save it now,
            // not a checkpoint interval later. A failure is logged, and the next checkpoint
            // saves it.
            if self.writer.backlog_len() == 0 && self.sync().is_ok() {
                let _ = self.save_head(&name_of(&self.log), time);
            }
        }
        loop {
            let next = match self.next_timer() {
                Some(due) => match tokio::time::timeout_at(due, self.rx.recv()).await {
                    Ok(next) => next,
                    Err(_) => {
                        self.on_timer();
                        continue;
                    }
                },
                None => self.rx.recv().await,
            };
            let Some(first) = next else {
                // Every handle is gone without `close()`: still write what is pending.
                let _ = self.finish(&mut acks, Vec::new(), &mut Vec::new());
                return;
            };
            self.retry.failed_in_batch = false;
            batch.push(first);
            while batch.len() < BATCH {
                match self.rx.try_recv() {
                    Ok(cmd) => batch.push(cmd),
                    Err(_) => break,
                }
            }
            let mut commands = batch.drain(..);
            while let Some(cmd) = commands.next() {
                match cmd {
                    Command::Record { pending, ack } => self.record(&pending, ack, &mut acks),
                    Command::Flush(done) => {
                        self.settle(&mut acks);
                        let _ = done.send(self.synced());
                    }
                    Command::Close(done) => {
                        let mut closers = vec![done];
                        let result = self.finish(&mut acks, commands.collect(), &mut closers);
                        // Release the file (and its lock) before saying it is closed, so the
                        // caller may reopen it at once.
                        drop(self);
                        for done in closers {
                            let _ = done.send(result.clone());
                        }
                        return;
                    }
                }
            }
            self.settle(&mut acks);
            self.rotate_if_due();
        }
    }

    /// The next checkpoint or retry, whichever is first.
    fn next_timer(&self) -> Option<Instant> {
        match (self.checkpoint_due, self.retry.due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_timer(&mut self) {
        let now = Instant::now();
        if self.retry.due.is_some_and(|due| due <= now) {
            self.retry.due = None;
            self.retry.failed_in_batch = false;
            // A failure schedules the next attempt.
            let _ = self.drain();
        }
        if self.checkpoint_due.is_some_and(|due| due <= now) {
            let _ = self.checkpoint(CheckpointReason::Interval);
        }
        self.rotate_if_due();
    }

    /// Seals a record; a fail-closed one waits in `acks` for the write that ends the batch.
    fn record(&mut self, pending: &Pending, ack: Option<Ack>, acks: &mut Acks) {
        let sealed = self.admit(&pending.time, &pending.entry);
        if let Some(ack) = ack {
            acks.push((ack, sealed));
        }
    }

    /// Seals a record into the backlog and returns its `seq`, unless the backlog is full: then
    /// the record is dropped and counted (`None`).
    fn admit(&mut self, time: &str, entry: &Entry) -> Option<u64> {
        self.collect_queue_drops();
        if self.lost.any() || self.backlog_full() {
            // Earlier losses are reported before any later record, and writing may make room.
            let _ = self.drain();
        }
        if self.lost.any() || self.backlog_full() {
            self.lose();
            return None;
        }
        Some(self.seal(time, entry))
    }

    /// Writes what the batch sealed and answers the fail-closed records: written, waiting in
    /// the backlog, or dropped.
    fn settle(&mut self, acks: &mut Acks) {
        self.collect_queue_drops();
        let _ = self.drain();
        let written = self.writer.written_seq();
        for (ack, sealed) in acks.drain(..) {
            let answer = match sealed {
                Some(seq) if seq <= written => Ok(()),
                Some(_) => Err(Refused {
                    why: self.retry.last_error.clone(),
                    kept: true,
                }),
                None => Err(Refused {
                    why: format!(
                        "the disk refuses writes and {} audit records already wait for it \
                         (audit.backlog_capacity)",
                        self.writer.backlog_len()
                    ),
                    kept: false,
                }),
            };
            let _ = ack.send(answer);
        }
    }

    /// After [`WriterTask::settle`]: whether everything sealed is in the file, synced.
    fn synced(&mut self) -> Result<(), String> {
        let waiting = self.writer.backlog_len();
        if waiting > 0 {
            return Err(format!(
                "{waiting} audit records wait for the disk ({})",
                self.retry.last_error
            ));
        }
        self.writer.sync().map_err(|e| {
            self.write_failed(&e);
            e.to_string()
        })
    }

    /// Closes the queue and writes what it still held (`queued`, then the rest) and the
    /// closing checkpoint. Flush and close requests among them join `closers`, to be answered
    /// once the file is released. What still cannot be written is lost, and said so.
    fn finish(
        &mut self,
        acks: &mut Acks,
        queued: Vec<Command>,
        closers: &mut Vec<Done>,
    ) -> Result<(), String> {
        self.rx.close();
        let mut late = |task: &mut Self, cmd| match cmd {
            Command::Record { pending, ack } => task.record(&pending, ack, acks),
            Command::Flush(done) | Command::Close(done) => closers.push(done),
        };
        for cmd in queued {
            late(self, cmd);
        }
        while let Ok(cmd) = self.rx.try_recv() {
            late(self, cmd);
        }
        // One more attempt, whatever failed earlier in this batch.
        self.retry.failed_in_batch = false;
        self.settle(acks);
        let result = self.checkpoint(CheckpointReason::Close);
        let unwritten = self.writer.backlog_len() as u64;
        let unreported = self.lost.queue_full + self.lost.write_failed;
        if unwritten + unreported > 0 {
            self.counters
                .dropped
                .fetch_add(unwritten, Ordering::Relaxed);
            tracing::error!(
                path = %self.writer.path().display(),
                unwritten,
                unreported_drops = unreported,
                error = %self.retry.last_error,
                "the audit log closed with records it could not write: they are lost, and no \
                 dropped record in the log shows it"
            );
        }
        tracing::info!(
            path = %self.writer.path().display(),
            seq = self.writer.written_seq(),
            head = %self.writer.head(),
            "audit log closed"
        );
        result
    }

    /// Writes a checkpoint record, syncs, and replaces the head file; on failure it is tried
    /// again an interval later.
    fn checkpoint(&mut self, reason: CheckpointReason) -> Result<(), String> {
        self.checkpoint_due = None;
        let file = name_of(self.writer.path());
        let result = self.write_checkpoint(reason, &file);
        if result.is_err() {
            self.checkpoint_due = Some(Instant::now() + self.interval);
        }
        result
    }

    /// Writes a checkpoint and saves the head file naming `file` as the one that holds it.
    fn write_checkpoint(&mut self, reason: CheckpointReason, file: &str) -> Result<(), String> {
        // A checkpoint vouches for every record before it: those must be in the file first.
        self.drain()?;
        let time = Utc::from(SystemTime::now()).rfc3339_millis();
        let entry = Entry::Checkpoint {
            reason,
            count: self.writer.seq(),
            head: self.writer.head().to_owned(),
        };
        self.writer.seal(|seq| render(seq, &time, &entry));
        self.write_backlog()?;
        self.sync()?;
        self.save_head(file, time)
    }

    fn sync(&mut self) -> Result<(), String> {
        self.writer.sync().map_err(|e| {
            self.write_failed(&e);
            e.to_string()
        })
    }

    /// Replaces the head file: the last record written, in `file`. Then the head file of an
    /// earlier version, if this log still had one, is no longer needed.
    fn save_head(&mut self, file: &str, time: String) -> Result<(), String> {
        let Some(path) = &self.head_path else {
            return Ok(());
        };
        let head = Head {
            seq: self.writer.seq(),
            link: self.writer.head().to_owned(),
            offset: self.writer.end_offset(),
            time,
            log: Some(std::path::absolute(&self.log).unwrap_or_else(|_| self.log.clone())),
            file: Some(file.to_owned()),
            first: self.file_first.clone(),
        };
        head.save(path, &self.key).map_err(|e| {
            self.write_failed(&e);
            e.to_string()
        })?;
        if let Some(legacy) = self.legacy_head.take()
            && let Err(error) = std::fs::remove_file(&legacy)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %legacy.display(), %error, "removing the replaced audit head file failed");
        }
        Ok(())
    }

    /// Rotates the live file when it is due and everything sealed is written.
    fn rotate_if_due(&mut self) {
        if self.writer.backlog_len() > 0
            || self.rotation.not_before.is_some_and(|t| Instant::now() < t)
            || !(self.rotation.moved || self.rotation_due())
        {
            return;
        }
        if let Err(error) = self.rotate() {
            tracing::error!(path = %self.log.display(), %error, "rotating the audit log failed; trying again later");
            self.rotation.not_before = Some(Instant::now() + self.interval);
        }
    }

    /// Whether the live file is as large or as old as the configuration allows.
    fn rotation_due(&mut self) -> bool {
        let Rotation { bytes, secs, .. } = self.rotation;
        if bytes > 0 && self.writer.end_offset() >= bytes {
            return true;
        }
        if secs == 0 || self.writer.end_offset() == 0 {
            return false;
        }
        if self.file_started.is_none() {
            self.file_started = super::chain::first_record(self.writer.file_mut())
                .ok()
                .flatten()
                .and_then(|record| record.time);
        }
        let cutoff = SystemTime::now()
            .checked_sub(Duration::from_secs(secs))
            .map(|t| Utc::from(t).rfc3339_millis());
        // Both are RFC 3339 UTC times of one width: they compare as strings.
        matches!((&self.file_started, cutoff), (Some(started), Some(cutoff)) if *started <= cutoff)
    }

    /// Ends the live file with a `rotate` checkpoint, renames it, and starts a new live file
    /// with a `continued` record.
    fn rotate(&mut self) -> Result<(), String> {
        if !self.rotation.moved {
            let rotated = rotated_name(&self.log, SystemTime::now());
            let live = name_of(&self.log);
            // The head names the new name first: a crash after the rename leaves a head file
            // that vouches for the renamed file (and before it, the live file still holds it).
            self.write_checkpoint(CheckpointReason::Rotate, &name_of(&rotated))?;
            if let Err(error) = std::fs::rename(&self.log, &rotated) {
                let time = Utc::from(SystemTime::now()).rfc3339_millis();
                let _ = self.save_head(&live, time);
                return Err(format!("renaming to {}: {error}", rotated.display()));
            }
            sync_dir(&self.log);
            self.writer.moved_to(&rotated);
            self.rotation.moved = true;
        }
        let mut next = ChainWriter::open(&self.log, Arc::clone(&self.key))
            .map_err(|e| format!("opening a new {}: {e}", self.log.display()))?;
        if !next.is_empty() {
            return Err(format!(
                "{} appeared while the log was rotated; it is not continued",
                self.log.display()
            ));
        }
        next.continue_after(self.writer.seq(), self.writer.head());
        let entry = Entry::Continued {
            previous_file: name_of(self.writer.path()),
            previous_seq: self.writer.seq(),
            previous_link: self.writer.head().to_owned(),
        };
        let rotated = std::mem::replace(&mut self.writer, next);
        tracing::info!(rotated = %rotated.path().display(), seq = rotated.seq(), "audit log rotated");
        drop(rotated);
        self.rotation.moved = false;
        self.file_first = None;
        self.file_started = None;
        let time = Utc::from(SystemTime::now()).rfc3339_millis();
        self.seal(&time, &entry);
        self.write_backlog()?;
        self.sync()?;
        self.save_head(&name_of(&self.log), time)
    }

    fn backlog_full(&self) -> bool {
        self.writer.backlog_len() >= self.backlog_capacity
    }

    fn collect_queue_drops(&mut self) {
        self.lost.queue_full += self.unreported_drops.swap(0, Ordering::Relaxed);
    }

    /// Counts a record dropped because the backlog is full.
    fn lose(&mut self) {
        self.lost.write_failed += 1;
        self.counters.dropped.fetch_add(1, Ordering::Relaxed);
        // Log the first and then at powers of two, not once per record.
        if self.lost.write_failed.is_power_of_two() {
            tracing::error!(
                path = %self.writer.path().display(),
                dropped = self.lost.write_failed,
                backlog = self.writer.backlog_len(),
                "the audit log cannot be written and its backlog is full: records are dropped, \
                 and a dropped record will say how many"
            );
        }
    }

    /// Seals a record into the backlog; a checkpoint is due an interval later.
    fn seal(&mut self, time: &str, entry: &Entry) -> u64 {
        let seq = self.writer.seal(|seq| render(seq, time, entry));
        if self.file_first.is_none() {
            self.file_first = Some(self.writer.head().to_owned());
            self.file_started = Some(time.to_owned());
        }
        self.counters
            .backlog
            .store(self.writer.backlog_len() as u64, Ordering::Relaxed);
        self.checkpoint_due
            .get_or_insert_with(|| Instant::now() + self.interval);
        seq
    }

    /// Seals a `dropped` record for each reason records were lost, while the backlog has room.
    /// Returns whether it sealed any.
    fn seal_notices(&mut self) -> bool {
        let time = Utc::from(SystemTime::now()).rfc3339_millis();
        let mut sealed = false;
        for reason in [DropReason::QueueFull, DropReason::WriteFailed] {
            let count = match reason {
                DropReason::QueueFull => &mut self.lost.queue_full,
                DropReason::WriteFailed => &mut self.lost.write_failed,
            };
            if *count == 0 || self.writer.backlog_len() >= self.backlog_capacity {
                continue;
            }
            let entry = Entry::Dropped {
                count: std::mem::take(count),
                reason,
            };
            self.seal(&time, &entry);
            sealed = true;
        }
        sealed
    }

    /// Writes the backlog, then seals the notices of earlier losses as soon as there is room
    /// and writes those too. `Err` while the disk refuses (the lines wait for the next try).
    fn drain(&mut self) -> Result<(), String> {
        let written = self.write_backlog();
        if self.seal_notices() && written.is_ok() {
            return self.write_backlog();
        }
        written
    }

    /// Hands the backlog to the OS. On failure the next attempt is scheduled, backing off.
    fn write_backlog(&mut self) -> Result<(), String> {
        if self.retry.failed_in_batch {
            return Err(self.retry.last_error.clone());
        }
        let (lines, result) = self.writer.write_backlog();
        self.counters.written.fetch_add(lines, Ordering::Relaxed);
        self.counters
            .backlog
            .store(self.writer.backlog_len() as u64, Ordering::Relaxed);
        match result {
            Ok(()) => {
                if self.retry.failures > 0 {
                    tracing::warn!(
                        path = %self.writer.path().display(),
                        failed_attempts = self.retry.failures,
                        "the audit log can be written again; the records held meanwhile are in it"
                    );
                }
                self.retry = Retry::default();
                Ok(())
            }
            Err(e) => {
                self.write_failed(&e);
                let delay = (self.retry.delay * 2).clamp(RETRY_FIRST, RETRY_MAX);
                self.retry = Retry {
                    due: Some(Instant::now() + delay),
                    delay,
                    failed_in_batch: true,
                    failures: self.retry.failures + 1,
                    last_error: e.to_string(),
                };
                Err(self.retry.last_error.clone())
            }
        }
    }

    fn write_failed(&self, error: &std::io::Error) {
        let n = self.counters.write_errors.fetch_add(1, Ordering::Relaxed) + 1;
        // Log the first failure and then at powers of two, not once per attempt.
        if n.is_power_of_two() {
            tracing::error!(path = %self.writer.path().display(), %error, failures = n, "audit write failed");
        }
    }
}

/// Makes a rename in the directory of `path` durable; a failure only weakens durability, and is
/// logged.
fn sync_dir(path: &Path) {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if let Err(error) = std::fs::File::open(dir).and_then(|d| d.sync_all()) {
        tracing::warn!(dir = %dir.display(), %error, "syncing the audit log's directory failed");
    }
}
