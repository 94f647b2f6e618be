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

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::chain::ChainWriter;
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

pub(super) struct WriterTask {
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
    pub(super) async fn run(mut self) {
        let mut batch = Vec::with_capacity(BATCH);
        let mut acks: Acks = Vec::new();
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
        let result = self.write_checkpoint(reason);
        if result.is_err() {
            self.checkpoint_due = Some(Instant::now() + self.interval);
        }
        result
    }

    fn write_checkpoint(&mut self, reason: CheckpointReason) -> Result<(), String> {
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
        self.writer.sync().map_err(|e| {
            self.write_failed(&e);
            e.to_string()
        })?;
        if let Some(path) = &self.head_path {
            let head = Head {
                seq: self.writer.seq(),
                link: self.writer.head().to_owned(),
                offset: self.writer.end_offset(),
                time,
            };
            head.save(path, &self.key).map_err(|e| {
                self.write_failed(&e);
                e.to_string()
            })?;
        }
        Ok(())
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
