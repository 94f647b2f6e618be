//! Sealed audit lines that have not reached the file yet, in chain order.
//!
//! A line is sealed (given its `seq` and link) when the writer takes its record, and leaves the
//! backlog only once the OS has accepted all of it. When the disk refuses a write the lines stay
//! here and are written again later, in the same order, so the chain on disk never skips one.
//! A write can also be cut short part-way through a line (a full disk accepts what fits): the
//! backlog then knows how much of its first line is already in the file ([`Backlog::sent`]),
//! which is the fragment the writer removes again if the rest cannot follow.
//!
//! This is bookkeeping only; [`super::chain::ChainWriter`] does the I/O.

use std::collections::VecDeque;

/// Lines waiting to be written, back to back.
#[derive(Debug, Default)]
pub(crate) struct Backlog {
    /// The lines' bytes, each ending with a newline.
    bytes: Vec<u8>,
    /// Each line's length, first line first.
    lines: VecDeque<usize>,
    /// Bytes at the front already in the file, all of them part of the first line: a write
    /// stopped inside it.
    sent: usize,
}

impl Backlog {
    /// Adds a sealed line (with its newline) at the end.
    pub(crate) fn push(&mut self, line: &[u8]) {
        self.bytes.extend_from_slice(line);
        self.lines.push_back(line.len());
    }

    /// Lines waiting (a line of which only a fragment was written counts as waiting).
    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// What still has to be written: everything after the fragment already in the file.
    pub(crate) fn unsent(&self) -> &[u8] {
        &self.bytes[self.sent..]
    }

    /// Bytes of the first line already in the file (a write stopped inside it).
    pub(crate) fn sent(&self) -> usize {
        self.sent
    }

    /// The OS took the next `n` bytes of [`Backlog::unsent`]. Returns how many lines are now
    /// wholly in the file and their total length; they leave the backlog.
    pub(crate) fn advance(&mut self, n: usize) -> (u64, u64) {
        self.sent += n.min(self.bytes.len() - self.sent);
        let (mut lines, mut bytes) = (0u64, 0usize);
        while let Some(&len) = self.lines.front() {
            if self.sent - bytes < len {
                break;
            }
            bytes += len;
            lines += 1;
            self.lines.pop_front();
        }
        self.bytes.drain(..bytes);
        self.sent -= bytes;
        (lines, bytes as u64)
    }

    /// The fragment of the first line in the file was removed again: the whole line waits.
    pub(crate) fn unsend(&mut self) {
        self.sent = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backlog(lines: &[&str]) -> Backlog {
        let mut backlog = Backlog::default();
        for line in lines {
            backlog.push(line.as_bytes());
        }
        backlog
    }

    #[test]
    fn whole_lines_leave_in_order() {
        let mut b = backlog(&["one\n", "two\n", "three\n"]);
        assert_eq!(b.len(), 3);
        assert_eq!(b.unsent(), b"one\ntwo\nthree\n");
        assert_eq!(b.advance(8), (2, 8));
        assert_eq!(b.len(), 1);
        assert_eq!(b.unsent(), b"three\n");
        assert_eq!(b.advance(6), (1, 6));
        assert!(b.is_empty());
        assert_eq!(b.unsent(), b"");
    }

    /// A write that stops inside a line leaves that line waiting, with its written part known,
    /// so the next write sends only the rest, or the writer cuts the part back.
    #[test]
    fn a_write_cut_short_inside_a_line() {
        let mut b = backlog(&["one\n", "two\n", "three\n"]);
        // "one\n" and "tw" reached the file.
        assert_eq!(b.advance(6), (1, 4));
        assert_eq!((b.len(), b.sent()), (2, 2));
        assert_eq!(b.unsent(), b"o\nthree\n");
        // The rest of "two" follows, then part of "three".
        assert_eq!(b.advance(4), (1, 4));
        assert_eq!((b.len(), b.sent()), (1, 2));
        // The fragment "th" was cut from the file: the whole line waits again.
        b.unsend();
        assert_eq!(b.unsent(), b"three\n");
        assert_eq!(b.advance(0), (0, 0));
        assert_eq!(b.advance(6), (1, 6));
        assert!(b.is_empty());
    }

    /// Lines pushed while a fragment of the first is in the file wait behind it.
    #[test]
    fn lines_added_after_a_short_write() {
        let mut b = backlog(&["one\n"]);
        assert_eq!(b.advance(2), (0, 0));
        b.push(b"two\n");
        assert_eq!(b.unsent(), b"e\ntwo\n");
        assert_eq!(b.advance(6), (2, 8));
        assert!(b.is_empty());
    }

    /// More than what waits cannot be taken.
    #[test]
    fn advance_is_capped_at_what_waits() {
        let mut b = backlog(&["one\n"]);
        assert_eq!(b.advance(100), (1, 4));
        assert_eq!(b.advance(5), (0, 0));
        assert_eq!(b.sent(), 0);
    }
}
