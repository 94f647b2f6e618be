//! A pane's output as text lines, decoded once for every text wait on that pane.
//!
//! Waiting for text means turning the pane's byte stream into visible lines
//! ([`LineAssembler`]) and matching them. Ten agents waiting on one busy pane used to decode
//! the same bytes ten times; now the stream's [`PaneLines`] decodes them once into a bounded
//! log of lines, each tagged with the stream offset just past its end, and each wait holds a
//! [`LineReader`]: its own cursor into that log.
//!
//! Only output that arrives after a wait began counts, and the line being written when it
//! began may already hold older text. So a reader decodes the bytes from its start to the end
//! of that first line itself, with a fresh assembler (exactly what a decoder of its own would
//! have seen), and takes the shared lines after it.
//!
//! Bounded: the log keeps about as much text as the stream's ring keeps bytes. A reader that
//! falls further behind, like a byte subscriber that does, is told it lost output.
//!
//! This module knows nothing about patterns or tools; the gateway's `wait_for_text` matches the
//! lines.

use std::collections::VecDeque;
use std::sync::Arc;

use muxgate_mux::lines::{LineAssembler, LineSink};

use crate::output::{OutputSubscription, PaneStream, ReadCursor, StreamEnd};

/// Bytes decoded between two yields to the runtime: a waiter catching up on a whole ring
/// must not hold a runtime thread from every other request.
const DECODE_SLICE: u64 = 16 * 1024;

/// Log overhead counted per line besides its text, so that empty lines are bounded too.
const LINE_OVERHEAD: usize = 32;

/// The decoded lines of one pane stream, shared by its readers.
#[derive(Debug)]
pub struct PaneLines {
    log: tokio::sync::Mutex<LineLog>,
}

impl PaneLines {
    /// A log decoding the stream from `from`, keeping about `capacity` bytes of text.
    pub(super) fn new(from: ReadCursor, capacity: usize) -> Self {
        Self {
            log: tokio::sync::Mutex::new(LineLog::new(from, capacity)),
        }
    }
}

#[derive(Debug)]
struct LineLog {
    /// Where the shared decoder is in the stream.
    cursor: ReadCursor,
    assembler: LineAssembler,
    entries: VecDeque<Entry>,
    /// Sequence number of `entries[0]`.
    first_seq: u64,
    /// Stream offset up to which entries were dropped to stay within `capacity`.
    dropped_to: u64,
    size: usize,
    capacity: usize,
    end: Option<StreamEnd>,
}

#[derive(Debug, Clone)]
enum Entry {
    /// A completed line, and the stream offset just past its last byte.
    Line { end: u64, text: Arc<str> },
    /// Output was lost before this offset (the decoder fell behind the ring, or tmux dropped
    /// some); decoding started afresh there.
    Lost { at: u64 },
}

impl Entry {
    fn end(&self) -> u64 {
        match self {
            Entry::Line { end, .. } => *end,
            Entry::Lost { at } => *at,
        }
    }

    fn size(&self) -> usize {
        match self {
            Entry::Line { text, .. } => text.len() + LINE_OVERHEAD,
            Entry::Lost { .. } => LINE_OVERHEAD,
        }
    }
}

/// Collects completed lines with their absolute end offsets.
struct Ended {
    base: u64,
    lines: Vec<(u64, String)>,
}

impl LineSink for Ended {
    fn line(&mut self, text: String, end: usize) {
        self.lines.push((self.base + end as u64, text));
    }
}

impl LineLog {
    fn new(cursor: ReadCursor, capacity: usize) -> Self {
        Self {
            cursor,
            assembler: LineAssembler::new(),
            entries: VecDeque::new(),
            first_seq: 0,
            dropped_to: 0,
            size: 0,
            capacity: capacity.max(LINE_OVERHEAD),
            end: None,
        }
    }

    fn next_seq(&self) -> u64 {
        self.first_seq + self.entries.len() as u64
    }

    fn push(&mut self, entry: Entry) {
        self.size += entry.size();
        self.entries.push_back(entry);
        while self.size > self.capacity {
            let Some(old) = self.entries.pop_front() else {
                break;
            };
            self.size -= old.size();
            self.first_seq += 1;
            self.dropped_to = self.dropped_to.max(old.end());
        }
    }

    /// Decodes at most [`DECODE_SLICE`] more bytes of `stream`, none at or past `target`.
    /// Returns whether there may be more to decode.
    fn decode_slice(&mut self, stream: &PaneStream, target: u64) -> bool {
        if self.end.is_some() {
            return false;
        }
        let limit = target.min(self.cursor.position.saturating_add(DECODE_SLICE));
        match stream.read(&mut self.cursor, limit) {
            Err(end) => {
                self.end = Some(end);
                false
            }
            Ok(chunk) if chunk.is_empty() => false,
            Ok(chunk) => {
                let base = self.cursor.position - chunk.data.len() as u64;
                if chunk.missed_bytes > 0 || chunk.gap {
                    self.assembler.reset();
                    self.push(Entry::Lost { at: base });
                }
                let mut ended = Ended {
                    base,
                    lines: Vec::new(),
                };
                self.assembler.feed(&chunk.data, &mut ended);
                for (end, text) in ended.lines {
                    self.push(Entry::Line {
                        end,
                        text: text.into(),
                    });
                }
                self.cursor.position < target
            }
        }
    }

    /// The sequence number of the first entry ending after `offset`, if the log still holds
    /// everything after `offset`.
    fn first_after(&self, offset: u64) -> Option<u64> {
        if self.dropped_to > offset {
            return None;
        }
        let index = self.entries.partition_point(|e| e.end() <= offset);
        Some(self.first_seq + index as u64)
    }
}

/// What a reader got from one read: the lines completed since its last read, oldest first.
#[derive(Debug, Default)]
pub struct LineBatch {
    /// The visible text of each completed line, oldest first.
    pub lines: Vec<Arc<str>>,
    /// The line being written, when new output arrived and it has visible text.
    pub partial: Option<String>,
    /// Some output was lost before or among these lines: the screen may hold text they miss.
    pub lost: bool,
    /// Whether new output arrived at all (it may have been only escape sequences).
    pub new_output: bool,
    /// Whether the program draws on the alternate screen as of the last decoded byte.
    pub alternate_screen: bool,
}

impl LineBatch {
    fn is_empty(&self) -> bool {
        !self.new_output && !self.lost
    }
}

/// One wait's view of a pane's lines. Dropping it is the unsubscribe.
#[derive(Debug)]
pub struct LineReader {
    lines: Arc<PaneLines>,
    /// Wakes the reader; also the bytes of its first line while it decodes that itself.
    subscription: OutputSubscription,
    phase: Phase,
    /// Stream offset the reader has seen output up to.
    seen: u64,
}

#[derive(Debug)]
enum Phase {
    /// Decoding its own bytes until the first shared line that ends after its start.
    Head(LineAssembler),
    /// Reading shared lines from this sequence number.
    Shared(u64),
}

impl LineReader {
    /// A reader of the output after `subscription`'s position.
    pub fn new(subscription: OutputSubscription) -> Self {
        let from = subscription.cursor();
        let lines = subscription
            .stream()
            .shared(|capacity| PaneLines::new(from, capacity));
        let seen = subscription.position();
        Self {
            lines,
            subscription,
            phase: Phase::Head(LineAssembler::new()),
            seen,
        }
    }

    /// Tells the reader the program was drawing on the alternate screen when it started (the
    /// stream only reports switches).
    pub async fn assume_alternate_screen(&mut self) {
        let switch = b"\x1b[?1049h";
        if let Phase::Head(assembler) = &mut self.phase {
            assembler.feed(switch, &mut Vec::new());
        }
        let mut log = self.lines.log.lock().await;
        // Only a log that has decoded nothing past this reader's start is in the same state.
        if log.cursor.position <= self.subscription.position() {
            log.assembler.feed(switch, &mut Vec::new());
        }
    }

    /// Waits for new output (or the end) and returns the lines it completed. Cancel-safe:
    /// dropping the future loses nothing, the next call returns the same lines.
    pub async fn next(&mut self) -> Result<LineBatch, StreamEnd> {
        loop {
            let batch = self.read().await?;
            if !batch.is_empty() {
                return Ok(batch);
            }
            self.subscription.changed().await?;
        }
    }

    /// Decodes what the stream has (shared with the other readers) and returns what is new
    /// for this reader. `Err` once the stream has ended and this reader has read everything.
    async fn read(&mut self) -> Result<LineBatch, StreamEnd> {
        let lines = self.lines.clone();
        let mut log = lines.log.lock().await;
        let stream = self.subscription.stream();
        // Up to what the stream holds now: a pane that never stops printing must not keep one
        // read decoding forever.
        let target = stream.end_offset();
        while log.decode_slice(stream, target) {
            tokio::task::yield_now().await;
        }
        // Nothing awaits from here on, so a cancelled read changes nothing.
        let fresh = log.cursor.position > self.seen;
        let mut batch = LineBatch::default();
        if let Phase::Head(_) = self.phase {
            self.read_head(&log, &mut batch);
        }
        if let Phase::Shared(next) = &mut self.phase {
            if *next < log.first_seq {
                batch.lost = true;
                *next = log.first_seq;
            }
            let skip = usize::try_from(*next - log.first_seq).unwrap_or(usize::MAX);
            for entry in log.entries.iter().skip(skip) {
                match entry {
                    Entry::Line { text, .. } => batch.lines.push(text.clone()),
                    Entry::Lost { .. } => batch.lost = true,
                }
            }
            *next = log.next_seq();
            batch.alternate_screen = log.assembler.alternate_screen();
            if fresh {
                batch.partial = log.assembler.has_partial().then(|| log.assembler.partial());
            }
        }
        batch.new_output |= fresh;
        self.seen = self.seen.max(log.cursor.position);
        if batch.is_empty()
            && let Some(end) = &log.end
        {
            return Err(end.clone());
        }
        Ok(batch)
    }

    /// Decodes this reader's own bytes up to the end of the first shared line that ends after
    /// its start, then moves it on to the shared lines.
    fn read_head(&mut self, log: &LineLog, batch: &mut LineBatch) {
        let Phase::Head(assembler) = &mut self.phase else {
            return;
        };
        let start = self.subscription.position();
        let Some(first) = log.first_after(start) else {
            // The log already dropped lines this reader has not seen.
            batch.lost = true;
            self.phase = Phase::Shared(log.first_seq);
            return;
        };
        let first_entry = usize::try_from(first - log.first_seq)
            .ok()
            .and_then(|i| log.entries.get(i));
        let first_end = first_entry.map(Entry::end);
        let limit = first_end.unwrap_or(log.cursor.position);
        let Ok(chunk) = self.subscription.take_until(limit) else {
            // The stream ended before this reader's start; the end is reported from the log.
            self.phase = Phase::Shared(log.next_seq());
            return;
        };
        if chunk.missed_bytes > 0 || chunk.gap {
            // The bytes of the first line are gone: read shared lines from here, like a reader
            // that fell behind.
            batch.lost = true;
            let next = log
                .first_after(self.subscription.position())
                .unwrap_or(log.first_seq);
            self.phase = Phase::Shared(next);
            return;
        }
        let mut own = Vec::new();
        assembler.feed(&chunk.data, &mut own);
        batch.new_output |= !chunk.data.is_empty();
        batch.alternate_screen = assembler.alternate_screen();
        let reached = first_end.is_some_and(|end| self.subscription.position() >= end);
        if reached {
            if assembler.has_partial() {
                own.push(assembler.partial());
            }
            batch.lost |= matches!(first_entry, Some(Entry::Lost { .. }));
            self.phase = Phase::Shared(first + 1);
        } else if !chunk.data.is_empty() && assembler.has_partial() {
            batch.partial = Some(assembler.partial());
        }
        batch.lines.extend(own.into_iter().map(Arc::from));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PaneId;

    fn texts(batch: &LineBatch) -> Vec<&str> {
        batch.lines.iter().map(|l| &**l).collect()
    }

    #[tokio::test]
    async fn readers_share_lines_but_each_starts_where_it_subscribed() {
        let stream = PaneStream::new(PaneId(1), 4096);
        let mut early = LineReader::new(stream.subscribe());
        stream.push(b"before the late reader\r\nhalf a li");
        assert_eq!(
            texts(&early.read().await.unwrap()),
            ["before the late reader"]
        );
        let mut late = LineReader::new(stream.subscribe());
        stream.push(b"ne\r\nnext line\r\n$ ");
        let batch = early.read().await.unwrap();
        assert_eq!(texts(&batch), ["half a line", "next line"]);
        assert_eq!(batch.partial.as_deref(), Some("$"));
        // The late reader sees only what was written after it began, even within a line.
        let batch = late.read().await.unwrap();
        assert_eq!(texts(&batch), ["ne", "next line"]);
        assert_eq!(batch.partial.as_deref(), Some("$"));
        stream.push(b"ls\r\n");
        assert_eq!(texts(&late.read().await.unwrap()), ["$ ls"]);
        assert_eq!(texts(&early.read().await.unwrap()), ["$ ls"]);
    }

    #[tokio::test]
    async fn a_reader_before_any_newline_sees_its_partial_line() {
        let stream = PaneStream::new(PaneId(2), 4096);
        stream.push(b"Password");
        let mut reader = LineReader::new(stream.subscribe());
        stream.push(b": ");
        let batch = reader.read().await.unwrap();
        assert!(batch.lines.is_empty());
        assert_eq!(batch.partial.as_deref(), Some(":"));
        assert!(batch.new_output);
    }

    #[tokio::test]
    async fn a_reader_that_falls_behind_the_log_is_told_it_lost_output() {
        let stream = PaneStream::new(PaneId(3), 256);
        let mut slow = LineReader::new(stream.subscribe());
        let mut fast = LineReader::new(stream.subscribe());
        for i in 0..40 {
            stream.push(format!("line {i:02} of a long run of output\r\n").as_bytes());
            fast.read().await.unwrap();
        }
        let batch = slow.read().await.unwrap();
        assert!(batch.lost);
        assert_eq!(
            batch.lines.last().map(|l| &**l),
            Some("line 39 of a long run of output")
        );
        let batch = fast.read().await.unwrap();
        assert!(!batch.lost && batch.lines.is_empty());
    }

    #[tokio::test]
    async fn gaps_are_reported_and_the_end_comes_after_the_lines() {
        let stream = PaneStream::new(PaneId(4), 4096);
        let mut reader = LineReader::new(stream.subscribe());
        stream.push(b"one\r\n");
        reader.read().await.unwrap();
        stream.mark_gap();
        stream.push(b"two\r\n");
        stream.close(StreamEnd::PaneExited { status: Some(1) });
        let batch = reader.read().await.unwrap();
        assert!(batch.lost);
        assert_eq!(texts(&batch), ["two"]);
        assert_eq!(
            reader.read().await.unwrap_err(),
            StreamEnd::PaneExited { status: Some(1) }
        );
    }

    #[tokio::test]
    async fn every_reader_gets_the_same_lines_as_a_decoder_of_its_own() {
        // Readers join at random points of a stream cut at random places; each must see
        // exactly what a fresh assembler fed the bytes after its start would produce.
        let stream = PaneStream::new(PaneId(5), 1 << 20);
        let mut sent = Vec::new();
        let mut readers: Vec<(LineReader, usize, Vec<String>)> = Vec::new();
        let mut seed = 11u32;
        let words: [&[u8]; 8] = [
            b"alpha ",
            b"beta",
            b"\r\n",
            b"\x1b[31mred\x1b[0m",
            b"\r",
            b"gamma\n",
            b"\xc3",
            b"\xa9",
        ];
        for round in 0..300 {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            if round % 37 == 0 {
                readers.push((LineReader::new(stream.subscribe()), sent.len(), Vec::new()));
            }
            let piece = words[(seed >> 16) as usize % words.len()];
            stream.push(piece);
            sent.extend_from_slice(piece);
            for (k, (reader, _, got)) in readers.iter_mut().enumerate() {
                if (seed >> (k % 8 + 4)) & 1 == 1 {
                    let batch = reader.read().await.unwrap();
                    assert!(!batch.lost);
                    got.extend(batch.lines.iter().map(|l| l.to_string()));
                }
            }
        }
        for (reader, start, got) in &mut readers {
            got.extend(
                reader
                    .read()
                    .await
                    .unwrap()
                    .lines
                    .iter()
                    .map(|l| l.to_string()),
            );
            let mut own = LineAssembler::new();
            let mut expected = Vec::new();
            own.feed(&sent[*start..], &mut expected);
            assert_eq!(*got, expected, "reader starting at {start}");
        }
    }
}
