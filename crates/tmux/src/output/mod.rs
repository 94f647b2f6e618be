//! Per-pane output streams: what a pane's program wrote, as bytes, for waiters to read.
//!
//! A [`PaneStream`] is a bounded ring of the most recent output of one pane, addressed by
//! absolute byte offsets, plus a version channel that wakes subscribers. Writers (connection
//! reader tasks) append and never wait; readers ([`OutputSubscription`]) wake on new bytes and
//! take everything new at once, so a flood costs one wake-up per batch of output, not per byte.
//! A reader that falls further behind than the ring holds is told how many bytes it missed.
//!
//! Each stream also keeps its pane's command [`Ledger`], built from the shell-integration marks
//! in the output as it is appended (one `memchr` per chunk when there are none), and the time of
//! the last output byte.
//!
//! The streams know nothing about tmux connections: [`monitor`] feeds them from the output
//! connections attached to the watch session ([`watch_session`]), routing each pane's output
//! to its stream; [`shared_lines`] decodes a pane's output into text lines once for every
//! text wait on it.

pub mod monitor;
mod router;
pub mod shared_lines;
pub mod watch_session;

use std::any::Any;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, Mutex, Weak};
use std::time::SystemTime;

use muxgate_mux::ledger::Ledger;
use muxgate_mux::ledger::marks::MarkScanner;
use muxgate_mux::lines::LineAssembler;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::wire::ids::PaneId;

/// How long after a lost connection ended a pane's stream its next subscriber can still
/// continue it ([`StreamEnd::Lost`]).
pub const CONTINUED_WITHIN: std::time::Duration = std::time::Duration::from_secs(600);

/// Commands a pane's ledger keeps.
const LEDGER_RECORDS: usize = 100;
/// The longest typed command line read back from the stream for a record.
const MAX_TYPED_BYTES: u64 = 4096;

/// Why a stream will receive no more output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamEnd {
    /// The pane's program exited and the pane stayed (remain-on-exit); its exit status if known.
    #[error("the program in the pane exited{}", status_suffix(*.status))]
    PaneExited {
        /// The program's exit status, if known.
        status: Option<i32>,
    },
    /// The pane no longer exists.
    #[error("the pane was closed")]
    PaneClosed,
    /// The session the output came through was closed.
    #[error("the session was closed")]
    SessionClosed,
    /// The tmux server went away.
    #[error("the tmux server went away")]
    ServerGone,
    /// The output connection failed for another reason.
    #[error("the output connection closed: {0}")]
    ConnectionClosed(String),
    /// The connection to a server on another host was lost: the link may have dropped with
    /// the server still running. A new subscription to the pane within [`CONTINUED_WITHIN`]
    /// continues its stream (its ledger, its offsets) once the server answers again, with a
    /// gap marked.
    #[error("the connection to the host was lost: {0}")]
    Lost(String),
}

fn status_suffix(status: Option<i32>) -> String {
    status
        .map(|s| format!(" with status {s}"))
        .unwrap_or_default()
}

/// The recent output of one pane.
#[derive(Debug)]
pub struct PaneStream {
    pane: PaneId,
    ring: Mutex<Ring>,
    /// Bumped on every append, gap and close; subscribers wait on it.
    version: watch::Sender<u64>,
    /// What the stream's readers derive from it and share (its decoded lines), while one holds
    /// it: see [`Self::shared`].
    shared: Mutex<Option<Weak<dyn Any + Send + Sync>>>,
    /// When the stream started: nothing before it is in the stream or its ledger.
    since: SystemTime,
    started: Instant,
}

#[derive(Debug)]
struct Ring {
    buf: VecDeque<u8>,
    capacity: usize,
    /// Absolute offset of `buf[0]`.
    start: u64,
    /// How many times tmux dropped output (`%pause`).
    gaps: u64,
    /// Where the last gaps are (their number and stream offset), so that a read never joins the
    /// bytes on both sides of one.
    gap_offsets: VecDeque<(u64, u64)>,
    end: Option<StreamEnd>,
    scanner: MarkScanner,
    ledger: Ledger,
    /// When the last byte arrived.
    last_output: Option<Instant>,
    /// When the stream ended.
    ended_at: Option<SystemTime>,
    /// Since when none of the pane's output was seen, for a stream that continues one a lost
    /// connection ended ([`PaneStream::continuation`]): that one's end.
    unseen_since: Option<SystemTime>,
}

impl Ring {
    fn end_offset(&self) -> u64 {
        self.start + self.buf.len() as u64
    }

    /// Appends the bytes at indexes `from..to` of the ring to `out`, as at most two memory
    /// copies: this runs under the ring's lock, which the connection's reader needs for every
    /// `%output`, so byte-by-byte copying of a whole ring (ten waiters in a flood) held it up.
    fn copy_range(&self, from: usize, to: usize, out: &mut Vec<u8>) {
        let (front, back) = self.buf.as_slices();
        let to = to.min(self.buf.len());
        if from >= to {
            return;
        }
        out.reserve(to - from);
        if from < front.len() {
            out.extend_from_slice(&front[from..to.min(front.len())]);
        }
        if to > front.len() {
            out.extend_from_slice(&back[from.saturating_sub(front.len())..to - front.len()]);
        }
    }
}

impl PaneStream {
    /// A stream keeping the last `capacity` bytes of `pane`'s output.
    pub fn new(pane: PaneId, capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            pane,
            ring: Mutex::new(Ring {
                // Empty until output arrives: most watched panes are quiet, and thousands of
                // them each holding a preallocated block cost the gateway a quarter of its memory.
                buf: VecDeque::new(),
                capacity: capacity.max(1),
                start: 0,
                gaps: 0,
                gap_offsets: VecDeque::new(),
                end: None,
                scanner: MarkScanner::new(),
                ledger: Ledger::new(LEDGER_RECORDS),
                last_output: None,
                ended_at: None,
                unseen_since: None,
            }),
            version: watch::Sender::new(0),
            shared: Mutex::new(None),
            since: SystemTime::now(),
            started: Instant::now(),
        })
    }

    /// A stream that goes on where this one, ended by a lost connection, stopped: the same
    /// start, offsets, bytes and ledger, with a gap marked where the output went unseen. This
    /// one is left as it is, so its subscribers still read what it holds, then its end.
    pub(super) fn continuation(&self) -> Arc<Self> {
        let ring = {
            let old = self.lock();
            let lost_at = old.ended_at.unwrap_or_else(SystemTime::now);
            let mut ledger = old.ledger.clone();
            ledger.lost_sight(old.end_offset(), lost_at);
            Ring {
                buf: old.buf.clone(),
                capacity: old.capacity,
                start: old.start,
                gaps: old.gaps,
                gap_offsets: old.gap_offsets.clone(),
                end: None,
                scanner: MarkScanner::new(),
                ledger,
                // Whether the pane printed meanwhile is not known: not quiet for long, then.
                last_output: Some(Instant::now()),
                ended_at: None,
                unseen_since: Some(lost_at),
            }
        };
        let stream = Arc::new(Self {
            pane: self.pane,
            ring: Mutex::new(ring),
            version: watch::Sender::new(0),
            shared: Mutex::new(None),
            since: self.since,
            started: self.started,
        });
        stream.mark_gap();
        stream
    }

    /// Since when the pane's output went unseen, if the stream went on after a lost
    /// connection.
    pub fn unseen_since(&self) -> Option<SystemTime> {
        self.lock().unseen_since
    }

    /// The pane whose output this is.
    pub fn pane(&self) -> PaneId {
        self.pane
    }

    /// Absolute offset just past the last byte written so far.
    pub fn end_offset(&self) -> u64 {
        self.lock().end_offset()
    }

    /// Bytes of output the stream keeps.
    fn capacity(&self) -> usize {
        self.lock().capacity
    }

    /// The value readers of this stream share (its decoded lines, for text waits), made by
    /// `make` from the stream's capacity when no reader holds one. Held weakly and typed by
    /// its readers, so the stream knows nothing of what they derive.
    pub(super) fn shared<T: Any + Send + Sync>(&self, make: impl FnOnce(usize) -> T) -> Arc<T> {
        // Only ever replaced whole, so a poisoned slot is still consistent.
        let mut slot = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = slot
            .as_ref()
            .and_then(Weak::upgrade)
            .and_then(|held| held.downcast::<T>().ok())
        {
            return held;
        }
        let made = Arc::new(make(self.capacity()));
        let erased: Arc<dyn Any + Send + Sync> = made.clone();
        *slot = Some(Arc::downgrade(&erased));
        made
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        // Every update leaves the ring consistent, so a poisoned lock is still usable.
        self.ring.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends output. Never blocks beyond the ring's own lock.
    pub fn push(&self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let end = {
            let mut ring = self.lock();
            if ring.end.is_some() {
                return;
            }
            let base = ring.end_offset();
            let mut marks = Vec::new();
            ring.scanner.feed(data, base, &mut marks);
            ring.last_output = Some(Instant::now());
            let data = if data.len() > ring.capacity {
                let skip = data.len() - ring.capacity;
                ring.start += (ring.buf.len() + skip) as u64;
                ring.buf.clear();
                &data[skip..]
            } else {
                let overflow = (ring.buf.len() + data.len()).saturating_sub(ring.capacity);
                ring.buf.drain(..overflow);
                ring.start += overflow as u64;
                data
            };
            ring.buf.extend(data);
            if !marks.is_empty() {
                let now = SystemTime::now();
                let Ring {
                    buf, start, ledger, ..
                } = &mut *ring;
                for mark in marks {
                    ledger.apply(mark, now, |range| typed_text(buf, *start, range));
                }
            }
            ring.end_offset()
        };
        self.version.send_replace(end);
    }

    /// When the stream started.
    pub fn since(&self) -> SystemTime {
        self.since
    }

    /// When the stream started, in Unix milliseconds (0 before the epoch): how cursors name
    /// a recording, since ledger ids start again with each.
    pub fn since_unix_ms(&self) -> u64 {
        self.since
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    /// How long ago the pane last printed anything (`None`: nothing since the stream started).
    pub fn quiet_for(&self) -> Option<std::time::Duration> {
        self.lock().last_output.map(|at| at.elapsed())
    }

    /// Since when the pane has printed nothing (the stream's start if it printed nothing yet).
    pub fn idle_since(&self) -> Instant {
        self.lock().last_output.unwrap_or(self.started)
    }

    /// Reads the pane's command ledger. `read` runs under the stream's lock, so it must not
    /// call the stream's other methods.
    pub fn with_ledger<T>(&self, read: impl FnOnce(&Ledger) -> T) -> T {
        read(&self.lock().ledger)
    }

    /// Names the command of a `run_command` run about to be typed (see [`Ledger::name_run`]).
    pub fn name_run(&self, run: &str, command: &str) {
        self.lock().ledger.name_run(run, command);
    }

    /// Names the next command the pane's shell starts (see [`Ledger::name_next`]).
    pub fn name_next(&self, command: &str) -> u64 {
        self.lock().ledger.name_next(command)
    }

    /// Drops a name [`Self::name_next`] gave, if no command took it.
    pub fn forget_name(&self, id: u64) {
        self.lock().ledger.forget_name(id);
    }

    /// The bytes of `range` the ring still holds, and how many at its start it no longer does.
    pub fn bytes(&self, range: Range<u64>) -> (Vec<u8>, u64) {
        let ring = self.lock();
        let from = range.start.max(ring.start);
        let to = range.end.min(ring.end_offset());
        let mut out = Vec::new();
        if from < to {
            let index = |at: u64| usize::try_from(at - ring.start).unwrap_or(usize::MAX);
            ring.copy_range(index(from), index(to), &mut out);
        }
        (
            out,
            from.saturating_sub(range.start)
                .min(range.end - range.start),
        )
    }

    /// Records that tmux dropped some of this pane's output here.
    pub fn mark_gap(&self) {
        let mut ring = self.lock();
        ring.gaps += 1;
        let at = (ring.gaps, ring.end_offset());
        if ring.gap_offsets.len() == MAX_GAP_OFFSETS {
            ring.gap_offsets.pop_front();
        }
        ring.gap_offsets.push_back(at);
        // The bytes after a gap start anywhere: a half-read mark is not finished by them.
        ring.scanner.reset();
        drop(ring);
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Ends the stream; subscribers read what is left, then get `reason`. The first reason wins.
    pub fn close(&self, reason: StreamEnd) {
        {
            let mut ring = self.lock();
            if ring.end.is_some() {
                return;
            }
            ring.end = Some(reason);
            ring.ended_at = Some(SystemTime::now());
        }
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Whether the stream has ended.
    pub fn is_closed(&self) -> bool {
        self.lock().end.is_some()
    }

    /// A subscription that sees output from now on.
    pub fn subscribe(self: &Arc<Self>) -> OutputSubscription {
        let ring = self.lock();
        OutputSubscription {
            stream: self.clone(),
            changes: self.version.subscribe(),
            cursor: ReadCursor {
                position: ring.end_offset(),
                gaps_seen: ring.gaps,
            },
        }
    }

    /// Takes the output after `cursor`, up to the absolute offset `limit`, and moves the cursor
    /// past it. `Err` once the stream has ended and everything before the end was read.
    pub(super) fn read(
        &self,
        cursor: &mut ReadCursor,
        limit: u64,
    ) -> Result<OutputChunk, StreamEnd> {
        let ring = self.lock();
        let mut chunk = OutputChunk::default();
        if cursor.position < ring.start {
            chunk.missed_bytes = ring.start - cursor.position;
            cursor.position = ring.start;
        }
        let mut end = ring.end_offset().min(limit.max(cursor.position));
        // Gaps this reader has not been told of: those at or before its position are reported
        // with this chunk, and the first one after it ends the chunk there.
        let forgotten = ring
            .gap_offsets
            .front()
            .map_or(ring.gaps, |(seq, _)| seq - 1);
        if forgotten > cursor.gaps_seen {
            chunk.gap = true;
            cursor.gaps_seen = forgotten;
        }
        for &(seq, at) in &ring.gap_offsets {
            if seq <= cursor.gaps_seen {
                continue;
            }
            if at > cursor.position {
                end = end.min(at);
                break;
            }
            chunk.gap = true;
            cursor.gaps_seen = seq;
        }
        let from = usize::try_from(cursor.position - ring.start).unwrap_or(usize::MAX);
        let to = usize::try_from(end - ring.start).unwrap_or(usize::MAX);
        ring.copy_range(from, to, &mut chunk.data);
        cursor.position = end;
        if chunk.is_empty()
            && end == ring.end_offset()
            && let Some(reason) = &ring.end
        {
            return Err(reason.clone());
        }
        Ok(chunk)
    }
}

/// The visible text of the typed input in `range` of a ring starting at `start`, when the ring
/// still holds all of it and it is short enough to be one command line.
fn typed_text(buf: &VecDeque<u8>, start: u64, range: Range<u64>) -> Option<String> {
    if range.start < start || range.end - range.start > MAX_TYPED_BYTES {
        return None;
    }
    let from = usize::try_from(range.start - start).ok()?;
    let to = usize::try_from(range.end - start).ok()?;
    let bytes: Vec<u8> = buf.range(from..to.min(buf.len())).copied().collect();
    Some(LineAssembler::lines_of(&bytes).join("\n"))
}

/// Gap offsets a stream remembers; a reader further behind is told of the older gaps at once.
const MAX_GAP_OFFSETS: usize = 64;

/// A reader's place in a [`PaneStream`]: the next byte it reads and the gaps it has seen.
#[derive(Debug, Clone, Copy)]
pub(super) struct ReadCursor {
    pub(super) position: u64,
    gaps_seen: u64,
}

/// New output since the subscriber's last read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputChunk {
    /// The new bytes, as the pane's program wrote them.
    pub data: Vec<u8>,
    /// Bytes the subscriber fell behind by (overwritten in the ring before it read them).
    pub missed_bytes: u64,
    /// tmux itself dropped output somewhere in this range (flow control); the screen may hold
    /// text the stream never showed.
    pub gap: bool,
}

impl OutputChunk {
    /// Whether nothing happened: no bytes, none missed, no gap.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty() && self.missed_bytes == 0 && !self.gap
    }
}

/// A reader's position in a [`PaneStream`]. Dropping it is the unsubscribe.
#[derive(Debug)]
pub struct OutputSubscription {
    stream: Arc<PaneStream>,
    changes: watch::Receiver<u64>,
    cursor: ReadCursor,
}

impl OutputSubscription {
    /// The pane subscribed to.
    pub fn pane(&self) -> PaneId {
        self.stream.pane
    }

    /// When the stream subscribed to started (see [`PaneStream::since_unix_ms`]): a
    /// continued stream keeps its start.
    pub fn since_unix_ms(&self) -> u64 {
        self.stream.since_unix_ms()
    }

    /// Reads again from the absolute offset `to`, if it is before where this subscriber is:
    /// a subscriber of a continued stream takes up where one of the lost stream stopped
    /// (the offsets are the same), reading what the continuation already holds.
    pub fn rewind(&mut self, to: u64) {
        self.cursor.position = self.cursor.position.min(to);
    }

    /// Absolute offset of the next byte this subscriber will read.
    pub fn position(&self) -> u64 {
        self.cursor.position
    }

    pub(super) fn stream(&self) -> &Arc<PaneStream> {
        &self.stream
    }

    pub(super) fn cursor(&self) -> ReadCursor {
        self.cursor
    }

    /// Takes whatever arrived since the last read, without waiting. `Err` once the stream has
    /// ended and everything before the end was read.
    pub fn take(&mut self) -> Result<OutputChunk, StreamEnd> {
        self.take_until(u64::MAX)
    }

    /// Like [`Self::take`], but reads no byte at or past the absolute offset `limit`.
    pub(super) fn take_until(&mut self, limit: u64) -> Result<OutputChunk, StreamEnd> {
        self.changes.mark_unchanged();
        self.stream.read(&mut self.cursor, limit)
    }

    /// Waits until the stream changes (output, a gap or its end) after the last take or wait.
    pub(super) async fn changed(&mut self) -> Result<(), StreamEnd> {
        self.changes.changed().await.map_err(|_| {
            // The sender lives in the stream this subscription holds, so this cannot happen;
            // treat it as an end.
            StreamEnd::ConnectionClosed("output stream dropped".into())
        })
    }

    /// Waits for new output (or the end) and takes it. Cancel-safe: dropping the future loses
    /// nothing, the next call returns the same data.
    pub async fn next(&mut self) -> Result<OutputChunk, StreamEnd> {
        loop {
            let chunk = self.take()?;
            if !chunk.is_empty() {
                return Ok(chunk);
            }
            self.changed().await?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn subscriber_sees_only_new_output() {
        let stream = PaneStream::new(PaneId(1), 16);
        stream.push(b"old");
        let mut sub = stream.subscribe();
        assert_eq!(sub.take().unwrap(), OutputChunk::default());
        stream.push(b"new");
        assert_eq!(sub.take().unwrap().data, b"new");
        assert_eq!(sub.position(), 6);
    }

    #[test]
    fn slow_subscriber_is_told_what_it_missed() {
        let stream = PaneStream::new(PaneId(1), 8);
        let mut sub = stream.subscribe();
        stream.push(b"0123456789");
        stream.push(b"abc");
        let chunk = sub.take().unwrap();
        assert_eq!(chunk.missed_bytes, 13 - 8);
        assert_eq!(chunk.data.len(), 8);
        assert_eq!(chunk.data, b"56789abc");
    }

    #[test]
    fn reads_across_the_rings_wrap_point_return_the_stream_in_order() {
        // A small ring wraps around its storage again and again; every take must return
        // exactly the newest bytes of the stream, and what it skipped must add up.
        let stream = PaneStream::new(PaneId(4), 13);
        let mut readers: Vec<(OutputSubscription, usize)> =
            (0..3).map(|_| (stream.subscribe(), 0)).collect();
        let mut sent = Vec::new();
        let mut seed = 7u32;
        for round in 0..500u32 {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let len = (seed >> 16) as usize % 9;
            let piece: Vec<u8> = (0..len).map(|i| (round as usize * 31 + i) as u8).collect();
            stream.push(&piece);
            sent.extend_from_slice(&piece);
            for (k, (sub, read)) in readers.iter_mut().enumerate() {
                if (seed >> (k + 3)) & 1 == 0 {
                    continue;
                }
                let chunk = sub.take().unwrap();
                let missed = usize::try_from(chunk.missed_bytes).unwrap();
                assert_eq!(*read + missed + chunk.data.len(), sent.len(), "reader {k}");
                assert_eq!(
                    chunk.data,
                    sent[*read + missed..],
                    "reader {k}, round {round}"
                );
                *read = sent.len();
            }
        }
    }

    #[test]
    fn gaps_and_end_are_reported_after_the_data() {
        let stream = PaneStream::new(PaneId(2), 64);
        let mut sub = stream.subscribe();
        stream.push(b"before");
        stream.mark_gap();
        stream.push(b"after");
        stream.close(StreamEnd::PaneExited { status: Some(3) });
        stream.push(b"ignored");
        // The bytes on either side of the gap come in two chunks, the second one flagged.
        let chunk = sub.take().unwrap();
        assert_eq!(chunk.data, b"before");
        assert!(!chunk.gap);
        let chunk = sub.take().unwrap();
        assert_eq!(chunk.data, b"after");
        assert!(chunk.gap);
        assert_eq!(sub.take(), Err(StreamEnd::PaneExited { status: Some(3) }));
        // A subscriber that comes after a gap is not told of it.
        let stream = PaneStream::new(PaneId(2), 64);
        stream.mark_gap();
        let mut late = stream.subscribe();
        stream.push(b"x");
        assert!(!late.take().unwrap().gap);
        // One far behind many gaps is told of the ones the stream no longer places.
        let stream = PaneStream::new(PaneId(2), 1 << 16);
        let mut behind = stream.subscribe();
        for _ in 0..=MAX_GAP_OFFSETS {
            stream.push(b"y");
            stream.mark_gap();
        }
        let first = behind.take().unwrap();
        assert!(first.gap, "the forgotten first gap, told at once");
        assert_eq!(first.data, b"yy", "up to the first gap still placed");
    }

    #[tokio::test]
    async fn next_wakes_on_push() {
        let stream = PaneStream::new(PaneId(3), 64);
        let mut sub = stream.subscribe();
        let writer = stream.clone();
        let task = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            writer.push(b"hello");
        });
        let chunk = tokio::time::timeout(Duration::from_secs(5), sub.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(chunk.data, b"hello");
        task.await.unwrap();
    }

    #[test]
    fn a_continuation_goes_on_where_a_lost_stream_stopped() {
        let stream = PaneStream::new(PaneId(5), 1 << 10);
        stream.push(b"$ \x1b]133;A\x07\x1b]133;B\x07ls\r\n\x1b]133;C\x07a b\r\n\x1b]133;D;0\x07");
        stream.push(b"\x1b]133;A\x07\x1b]133;B\x07");
        let mut reader = stream.subscribe();
        let end = stream.end_offset();
        assert!(stream.with_ledger(Ledger::at_prompt));
        stream.close(StreamEnd::Lost("eof".into()));

        let next = stream.continuation();
        assert!(!next.is_closed());
        assert_eq!(next.end_offset(), end, "offsets go on");
        assert_eq!(
            next.since_unix_ms(),
            stream.since_unix_ms(),
            "the same recording"
        );
        let unseen = next.unseen_since().expect("when output went unseen");
        assert!(unseen <= SystemTime::now());
        assert!(stream.unseen_since().is_none());
        let records = next.with_ledger(|l| l.records().map(|r| r.exit_status).collect::<Vec<_>>());
        assert_eq!(records, [Some(0)], "the ledger goes on");
        // A subscriber of the continuation may take up where one of the lost stream stopped.
        let mut taken_up = next.subscribe();
        next.push(b"x");
        taken_up.rewind(end);
        assert_eq!(taken_up.take().unwrap().data, b"x");
        assert!(
            !next.with_ledger(Ledger::at_prompt),
            "where the shell is went unseen"
        );
        // The bytes from before are still there, a gap between them and what follows.
        let mut later = next.subscribe();
        next.push(b"after");
        let (bytes, missed) = next.bytes(0..next.end_offset());
        assert_eq!(missed, 0);
        assert!(bytes.ends_with(b"after") && bytes.starts_with(b"$ "));
        assert_eq!(later.take().unwrap().data, b"after");
        // The lost stream's own readers still get its end.
        assert_eq!(reader.take(), Err(StreamEnd::Lost("eof".into())));
        // A mark cut by the loss is not finished by what follows it.
        let cut = PaneStream::new(PaneId(6), 1 << 10);
        cut.push(b"\x1b]133;C");
        cut.close(StreamEnd::Lost("eof".into()));
        let next = cut.continuation();
        next.push(b"\x07out\x1b]133;D;3\x07");
        assert_eq!(next.with_ledger(|l| l.records().count()), 0);
    }
}
