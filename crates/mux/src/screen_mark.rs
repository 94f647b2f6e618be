//! Which lines of a screen are new since an earlier look at it.
//!
//! A backend that streams no output (Zellij sends whole screens, not the bytes a program
//! wrote) can still wait for *new* output the way tmux waits do: remember the screen at the
//! start as a [`ScreenMark`], and in each later screen find where the marked last line went.
//! Output only pushes lines up, so that line sits at its old row or above it, with the same
//! lines above it; what follows it is new, and so is the line itself if it grew (the prompt
//! the user is typing after). When it is found nowhere (the screen was cleared, a full-screen
//! program took over), the whole screen is new.
//!
//! A mark is small: the last line's text (cut to a bounded start) and a hash of each of the
//! few lines above it, so it fits in an `output_position` handed to the client.

use serde::{Deserialize, Serialize};

/// Lines above the last one whose hashes a mark keeps: enough to tell one prompt from another.
const CONTEXT_LINES: usize = 7;
/// Bytes kept of the last line (its start).
const MAX_LAST_BYTES: usize = 256;

/// Where a screen stood: its last non-blank line and the lines above it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenMark {
    /// Row of the last line (0 for an empty screen).
    #[serde(rename = "r")]
    row: usize,
    /// The last line, trailing blanks removed and cut to [`MAX_LAST_BYTES`].
    #[serde(rename = "l")]
    last: String,
    /// Hashes of the lines above it, top to bottom.
    #[serde(rename = "h")]
    above: Vec<u32>,
}

impl ScreenMark {
    /// The mark of `lines` (a screen, top to bottom).
    pub fn of(lines: &[String]) -> Self {
        let end = lines
            .iter()
            .rposition(|l| !l.trim_end().is_empty())
            .map_or(0, |i| i + 1);
        let Some(row) = end.checked_sub(1) else {
            return Self {
                row: 0,
                last: String::new(),
                above: Vec::new(),
            };
        };
        let start = row.saturating_sub(CONTEXT_LINES);
        Self {
            row,
            last: bounded_start(lines[row].trim_end()).to_owned(),
            above: lines[start..row].iter().map(|l| line_hash(l)).collect(),
        }
    }

    /// Whether the mark was decoded from something a client could have forged into a size the
    /// gateway would not make.
    pub fn is_plausible(&self) -> bool {
        self.above.len() <= CONTEXT_LINES && self.last.len() <= MAX_LAST_BYTES
    }

    /// The lines of `now` that are new since the mark: those after the marked last line, led
    /// by the part that line grew by, or by the whole line when it was rewritten. All of them
    /// when the mark is found nowhere.
    pub fn new_lines(&self, now: &[String]) -> Vec<String> {
        let (row, old_bytes) = self.new_from(now);
        let mut lines = now.get(row..).unwrap_or_default().to_vec();
        if let Some(first) = lines.first_mut() {
            first.drain(..old_bytes.min(first.len()));
        }
        lines
    }

    /// Where the new lines of `now` start: the row, and how many bytes at its start are old.
    fn new_from(&self, now: &[String]) -> (usize, usize) {
        if self.last.is_empty() {
            return (0, 0);
        }
        let highest = self.row.min(now.len().saturating_sub(1));
        for at in (0..=highest).rev() {
            let line = now[at].trim_end();
            if !line.starts_with(&self.last) || !self.context_matches(now, at) {
                continue;
            }
            // A last line cut to its start cannot tell "unchanged" from "grew": count it.
            let unchanged = line.len() == self.last.len() && self.last.len() < MAX_LAST_BYTES;
            return if unchanged {
                (at + 1, 0)
            } else {
                (at, self.last.len())
            };
        }
        // The marked line was rewritten in place (a progress line, an erased prompt): the
        // lines above it still place it, and it is new.
        let rewritten = (1..=self.row.min(now.len()))
            .rev()
            .find(|&at| self.context_matches(now, at));
        (rewritten.unwrap_or(0), 0)
    }

    /// Whether the lines above row `at` of `now` are the marked ones. Lines scrolled off the
    /// top cannot be checked and are taken as matching, but at least one must be checked
    /// (else a cleared screen's first line would pass for the mark).
    fn context_matches(&self, now: &[String], at: usize) -> bool {
        (self.above.is_empty() || at > 0)
            && self
                .above
                .iter()
                .rev()
                .zip((0..at).rev())
                .all(|(hash, i)| *hash == line_hash(&now[i]))
    }
}

/// The start of `line`, at most [`MAX_LAST_BYTES`] long and cut at a character boundary.
fn bounded_start(line: &str) -> &str {
    let mut end = line.len().min(MAX_LAST_BYTES);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

/// FNV-1a of a line without its trailing blanks: stable across processes and versions, so a
/// mark handed out stays good across a gateway restart.
fn line_hash(line: &str) -> u32 {
    line.trim_end().bytes().fold(0x811c_9dc5, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| (*l).to_owned()).collect()
    }

    fn new(before: &[&str], now: &[&str]) -> Vec<String> {
        ScreenMark::of(&screen(before)).new_lines(&screen(now))
    }

    #[test]
    fn nothing_is_new_on_the_same_screen() {
        assert!(new(&["$ ls", "a b", "$ "], &["$ ls", "a b", "$ "]).is_empty());
    }

    #[test]
    fn a_grown_last_line_gives_its_new_part_and_what_follows() {
        assert_eq!(
            new(
                &["$ ls", "a b", "$ "],
                &["$ ls", "a b", "$ echo hi", "hi", "$ "]
            ),
            [" echo hi", "hi", "$ "]
        );
    }

    #[test]
    fn a_scrolled_screen_finds_the_mark_higher_up() {
        let before: Vec<String> = (0..10).map(|n| format!("line {n}")).collect();
        let mut now: Vec<String> = (3..10).map(|n| format!("line {n}")).collect();
        now.extend(screen(&["new 1", "new 2", "new 3"]));
        assert_eq!(
            ScreenMark::of(&before).new_lines(&now),
            ["new 1", "new 2", "new 3"]
        );
    }

    #[test]
    fn the_same_prompt_lower_down_is_not_the_marked_one() {
        // The marked prompt at row 1 grew; the identical prompt below it is new.
        assert_eq!(
            new(&["$ true", "$ "], &["$ true", "$ false", "$ "]),
            [" false", "$ "]
        );
    }

    #[test]
    fn a_rewritten_last_line_is_placed_by_the_lines_above_it() {
        let before = ["$ make", "error: old", "50%"];
        assert_eq!(new(&before, &["$ make", "error: old", "60%"]), ["60%"]);
        // Erased: nothing new yet.
        assert!(new(&before, &["$ make", "error: old"]).is_empty());
    }

    #[test]
    fn a_cleared_or_replaced_screen_is_new_throughout() {
        let before = ["$ make", "building", "$ "];
        assert_eq!(
            new(&before, &["top - 10:00", "PID USER"]),
            ["top - 10:00", "PID USER"]
        );
        assert_eq!(new(&before, &["$ "]), ["$ "]);
        assert_eq!(new(&[], &["hello"]), ["hello"]);
    }

    #[test]
    fn trailing_blanks_are_ignored() {
        assert!(new(&["$ ls  ", "a", "$ ", "", "   "], &["$ ls", "a", "$   "]).is_empty());
    }

    #[test]
    fn a_long_last_line_counts_as_grown_past_its_kept_start() {
        let long = "x".repeat(400);
        let mark = ScreenMark::of(&screen(&["$ ", &long]));
        assert!(mark.is_plausible());
        assert_eq!(mark.new_lines(&screen(&["$ ", &long])), ["x".repeat(144)]);
    }
}
