//! The writer thread: the only code that touches the audit file. It takes records from the
//! bounded queue in batches, appends them to the chain, flushes once per batch (answering the
//! fail-closed start records that wait for it), writes a `dropped` line for records lost to a
//! full queue, and a checkpoint (synced, then mirrored into the head file) an interval after
//! the first record since the last one, and when the log closes.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use tokio::sync::{mpsc, oneshot};

use super::chain::ChainWriter;
use super::head::Head;
use super::key::AuditKey;
use super::record::{CheckpointReason, Entry, render};
use crate::utc::Utc;

#[derive(Debug)]
pub(super) struct Pending {
    pub(super) time: String,
    pub(super) entry: Entry,
}

/// Answers whether a record reached the OS.
pub(super) type Ack = oneshot::Sender<Result<(), String>>;

pub(super) enum Command {
    Record {
        pending: Box<Pending>,
        /// Only for fail-closed start records.
        ack: Option<Ack>,
    },
    Flush(Ack),
    Close(Ack),
}

/// Counters for metrics.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) written: AtomicU64,
    pub(super) dropped: AtomicU64,
    pub(super) write_errors: AtomicU64,
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
    pub(super) checkpoint_due: Option<tokio::time::Instant>,
}

/// Most commands handled between two flushes.
const BATCH: usize = 256;

/// Acknowledgements waiting for the flush that ends a batch, with their record's own result.
type Acks = Vec<(Ack, Result<(), String>)>;

impl WriterTask {
    pub(super) async fn run(mut self) {
        let mut batch = Vec::with_capacity(BATCH);
        let mut acks: Acks = Vec::new();
        loop {
            let next = match self.checkpoint_due {
                Some(due) => match tokio::time::timeout_at(due, self.rx.recv()).await {
                    Ok(next) => next,
                    Err(_) => {
                        let _ = self.checkpoint(CheckpointReason::Interval);
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
                    Command::Flush(ack) => {
                        self.report_drops();
                        self.settle(&mut acks);
                        let _ = ack.send(self.writer.sync().map_err(|e| e.to_string()));
                    }
                    Command::Close(ack) => {
                        let mut closers = vec![ack];
                        let result = self.finish(&mut acks, commands.collect(), &mut closers);
                        // Release the file (and its lock) before saying it is closed, so the
                        // caller may reopen it at once.
                        drop(self);
                        for ack in closers {
                            let _ = ack.send(result.clone());
                        }
                        return;
                    }
                }
            }
            // The queue had room again: make any drops since the last batch visible now.
            self.report_drops();
            self.settle(&mut acks);
        }
    }

    /// Writes a record; a fail-closed one waits in `acks` for the flush that ends the batch.
    fn record(&mut self, pending: &Pending, ack: Option<Ack>, acks: &mut Acks) {
        self.report_drops();
        let result = self.write(&pending.time, &pending.entry);
        if let Some(ack) = ack {
            acks.push((ack, result));
        }
    }

    /// Pushes the batch to the OS and answers the records waiting for it.
    fn settle(&mut self, acks: &mut Acks) {
        let flushed = self.writer.flush().map_err(|e| {
            self.write_failed(&e);
            e.to_string()
        });
        for (ack, written) in acks.drain(..) {
            let _ = ack.send(written.and_then(|()| flushed.clone()));
        }
    }

    /// Closes the queue and writes what it still held (`queued`, then the rest), the drop
    /// notice and the closing checkpoint. Flush and close requests among them join `closers`,
    /// to be answered once the file is released.
    fn finish(
        &mut self,
        acks: &mut Acks,
        queued: Vec<Command>,
        closers: &mut Vec<Ack>,
    ) -> Result<(), String> {
        self.rx.close();
        let mut late = |task: &mut Self, cmd| match cmd {
            Command::Record { pending, ack } => task.record(&pending, ack, acks),
            Command::Flush(ack) | Command::Close(ack) => closers.push(ack),
        };
        for cmd in queued {
            late(self, cmd);
        }
        while let Ok(cmd) = self.rx.try_recv() {
            late(self, cmd);
        }
        self.report_drops();
        self.settle(acks);
        let result = self.checkpoint(CheckpointReason::Close);
        tracing::info!(
            path = %self.writer.path().display(),
            seq = self.writer.seq(),
            head = %self.writer.head(),
            "audit log closed"
        );
        result
    }

    /// Writes a checkpoint record, syncs, and replaces the head file.
    fn checkpoint(&mut self, reason: CheckpointReason) -> Result<(), String> {
        self.checkpoint_due = None;
        let result = self.write_checkpoint(reason);
        if let Err(e) = &result {
            self.write_failed(e);
            // Try again an interval later, not in a loop.
            self.checkpoint_due = Some(tokio::time::Instant::now() + self.interval);
        }
        result.map_err(|e| e.to_string())
    }

    fn write_checkpoint(&mut self, reason: CheckpointReason) -> std::io::Result<()> {
        let time = Utc::from(SystemTime::now()).rfc3339_millis();
        let entry = Entry::Checkpoint {
            reason,
            count: self.writer.seq(),
            head: self.writer.head().to_owned(),
        };
        self.writer.append(|seq| render(seq, &time, &entry))?;
        self.counters.written.fetch_add(1, Ordering::Relaxed);
        self.writer.sync()?;
        if let Some(path) = &self.head_path {
            let head = Head {
                seq: self.writer.seq(),
                link: self.writer.head().to_owned(),
                offset: self.writer.end_offset()?,
                time,
            };
            head.save(path, &self.key)?;
        }
        Ok(())
    }

    fn report_drops(&mut self) {
        let count = self.unreported_drops.swap(0, Ordering::Relaxed);
        if count > 0 {
            let time = Utc::from(SystemTime::now()).rfc3339_millis();
            let _ = self.write(&time, &Entry::Dropped { count });
        }
    }

    /// Appends a record (to the buffer; [`WriterTask::settle`] flushes it).
    fn write(&mut self, time: &str, entry: &Entry) -> Result<(), String> {
        match self.writer.append(|seq| render(seq, time, entry)) {
            Ok(()) => {
                self.counters.written.fetch_add(1, Ordering::Relaxed);
                self.checkpoint_due
                    .get_or_insert_with(|| tokio::time::Instant::now() + self.interval);
                Ok(())
            }
            Err(e) => {
                self.write_failed(&e);
                Err(e.to_string())
            }
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
