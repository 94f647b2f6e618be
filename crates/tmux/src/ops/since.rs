//! `capture_since`: a cursor that remembers how far a caller has read a pane, and the rows
//! that appeared after it.
//!
//! Rows are numbered from the top of the pane's history: row `history_size + cursor_y` is the
//! row the terminal cursor is on. A cursor stores that row number (the *mark*: every row above it
//! has been read), a hash of the few rows just above the mark (the *anchor*) and one of what the
//! mark row itself held (a prompt, typically, that a command is then typed after). Next time, the
//! rows from the mark down to the cursor's current row are new. tmux renumbers rows when it trims
//! the oldest history (in chunks, once `history-limit` is reached) or when the history is
//! cleared; the anchor finds the rows again after such a shift, and when it cannot (the rows were
//! trimmed away, or the screen was cleared), the visible rows are returned with
//! `lines_missed` set. A cursor also names the pane and its process: a respawned pane starts a
//! new stream of output, and an old cursor is refused rather than misread.
//!
//! The wire form is `mgc1.` + base64url(JSON): opaque to clients, checked field by field when
//! it comes back. Pure: no I/O; [`crate::typed::since`] runs `state_command` and the captures.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::wire::command::TmuxCommand;
use crate::wire::ids::PaneId;
use crate::wire::quote::QuoteError;

/// Prefix of every cursor this version writes.
const CURSOR_PREFIX: &str = "mgc1.";
/// Longest cursor accepted (a real one is about 150 characters).
const MAX_CURSOR_LEN: usize = 1024;
/// Rows above the mark that make up the anchor.
pub const ANCHOR_ROWS: usize = 3;

/// Where a caller stopped reading a pane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SinceCursor {
    /// Configured server name.
    #[serde(rename = "s")]
    pub server: String,
    /// Pane id without the `%`.
    #[serde(rename = "p")]
    pub pane: u32,
    /// The pane's process when the cursor was made.
    #[serde(rename = "pid")]
    pub pane_pid: u32,
    /// First unread row.
    #[serde(rename = "m")]
    pub mark: u64,
    /// Hash of the rows just above `mark` (hex), and how many rows it covers.
    #[serde(rename = "a")]
    pub anchor: String,
    /// How many rows the anchor covers (at most [`ANCHOR_ROWS`]).
    #[serde(rename = "n")]
    pub anchor_rows: u8,
    /// Hash (hex) of the first `prefix_len` bytes of the mark row, as it was then.
    #[serde(rename = "ph")]
    pub prefix: String,
    /// How many bytes of the mark row the prefix hash covers.
    #[serde(rename = "pl")]
    pub prefix_len: u16,
}

/// Why a cursor string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    /// The string is not a cursor this version wrote; what is wrong with it.
    #[error("not a capture_since cursor ({0})")]
    Malformed(&'static str),
}

impl SinceCursor {
    /// The opaque string handed to clients.
    pub fn encode(&self) -> String {
        // Serializing plain strings and integers cannot fail.
        let json = serde_json::to_vec(self).unwrap_or_default();
        format!("{CURSOR_PREFIX}{}", URL_SAFE_NO_PAD.encode(json))
    }

    /// Reads a cursor a client sent back.
    pub fn decode(text: &str) -> Result<Self, CursorError> {
        if text.len() > MAX_CURSOR_LEN {
            return Err(CursorError::Malformed("too long"));
        }
        let body = text
            .strip_prefix(CURSOR_PREFIX)
            .ok_or(CursorError::Malformed("unknown prefix"))?;
        let json = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| CursorError::Malformed("not base64url"))?;
        let cursor: Self =
            serde_json::from_slice(&json).map_err(|_| CursorError::Malformed("bad fields"))?;
        let anchor_ok = is_hash(&cursor.anchor)
            && is_hash(&cursor.prefix)
            && usize::from(cursor.anchor_rows) <= ANCHOR_ROWS
            && u64::from(cursor.anchor_rows) <= cursor.mark;
        if !anchor_ok {
            return Err(CursorError::Malformed("bad anchor"));
        }
        Ok(cursor)
    }

    /// The pane (`%N`) the cursor reads.
    pub fn pane_id(&self) -> PaneId {
        PaneId(self.pane)
    }
}

fn is_hash(text: &str) -> bool {
    text.len() == 16 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What `capture_since` needs to know about a pane, read in the same batch as its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PaneRows {
    /// Process id of the program started in the pane.
    pub(crate) pane_pid: u32,
    /// Lines of scrollback history.
    pub(crate) history_size: u64,
    /// The most lines of history the pane keeps.
    pub(crate) history_limit: u64,
    /// The cursor's row inside the visible screen (0-based).
    pub(crate) cursor_y: u64,
    /// Whether the program switched to the alternate screen.
    pub(crate) alternate_on: bool,
}

// `display-message` with a missing target prints an empty line instead of failing (tmux 3.3a):
// the pane id leads, so that a missing pane is recognised.
const STATE_FORMAT: &str =
    "#{pane_id} #{pane_pid} #{history_size} #{history_limit} #{cursor_y} #{alternate_on}";

/// `display-message` printing a pane's [`PaneRows`].
pub(crate) fn state_command(pane: PaneId) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("display-message")
        .flag("-p")
        .target(pane)
        .arg(STATE_FORMAT)
        .build()
}

/// Parses [`state_command`]'s line for `pane`; `None` when tmux did not find the pane.
pub(crate) fn parse_state(pane: PaneId, line: &[u8]) -> Option<PaneRows> {
    let text = std::str::from_utf8(line).ok()?;
    let (id, rest) = text.split_once(' ')?;
    if id != pane.to_string() {
        return None;
    }
    let mut fields = rest.split(' ').map(|f| f.parse::<u64>().ok());
    let pane_pid = u32::try_from(fields.next()??).ok()?;
    let history_size = fields.next()??;
    let history_limit = fields.next()??;
    let cursor_y = fields.next()??;
    let alternate_on = fields.next()?? == 1;
    Some(PaneRows {
        pane_pid,
        history_size,
        history_limit,
        cursor_y,
        alternate_on,
    })
}

impl PaneRows {
    /// The row the terminal cursor is on, counted from the top of the history.
    pub(crate) fn cursor_row(&self) -> u64 {
        self.history_size + self.cursor_y
    }

    /// The `capture-pane -S` line number of a row (negative lines are history).
    pub(crate) fn line_of(&self, row: u64) -> i64 {
        i64::try_from(row).unwrap_or(i64::MAX) - i64::try_from(self.history_size).unwrap_or(0)
    }

    /// The first row to capture so that `cursor`'s anchor can be found even after tmux trimmed
    /// the history since: trims happen only near `history-limit`, by a tenth of it at a time.
    /// A mark past the cursor's row means the rows moved by an unknown amount (the history was
    /// cleared): everything is searched.
    pub(crate) fn search_start(&self, cursor: &SinceCursor) -> u64 {
        if cursor.mark > self.cursor_row() {
            return 0;
        }
        let anchor_start = cursor.mark.saturating_sub(u64::from(cursor.anchor_rows));
        let near_limit = self.history_size + self.history_limit / 10 + 1 >= self.history_limit;
        let slack = if near_limit {
            self.history_limit / 10 + 1
        } else {
            0
        };
        anchor_start.saturating_sub(slack)
    }
}

/// Hash of rows (16 hex digits).
pub(crate) fn anchor_hash(rows: &[Vec<u8>]) -> String {
    let mut hasher = Sha256::new();
    for row in rows {
        hasher.update(row);
        hasher.update(b"\n");
    }
    hex::encode(&hasher.finalize()[..8])
}

/// A new cursor at the pane's current cursor row, anchored on `rows` (captured from row
/// `first_row`).
pub(crate) fn cursor_at(
    server: &str,
    pane: PaneId,
    state: &PaneRows,
    rows: &[Vec<u8>],
    first_row: u64,
) -> SinceCursor {
    let mark = state.cursor_row();
    let end = usize::try_from(mark.saturating_sub(first_row)).unwrap_or(usize::MAX);
    let end = end.min(rows.len());
    let start = end.saturating_sub(ANCHOR_ROWS);
    let mark_row = rows.get(end).map_or(&[][..], |row| trim_end(row));
    let prefix_len = mark_row.len().min(MAX_PREFIX);
    SinceCursor {
        server: server.to_owned(),
        pane: pane.0,
        pane_pid: state.pane_pid,
        mark: first_row + end as u64,
        anchor: anchor_hash(&rows[start..end]),
        anchor_rows: u8::try_from(end - start).unwrap_or(0),
        prefix: anchor_hash(&[mark_row[..prefix_len].to_vec()]),
        prefix_len: u16::try_from(prefix_len).unwrap_or(0),
    }
}

/// Longest part of the mark row a cursor remembers.
const MAX_PREFIX: usize = 256;

fn trim_end(row: &[u8]) -> &[u8] {
    let len = row.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    &row[..len]
}

/// Whether `row` (the mark row, or nothing when it was not captured) still starts as it did.
fn prefix_matches(cursor: &SinceCursor, row: Option<&Vec<u8>>) -> bool {
    let Some(row) = row else { return true };
    let len = usize::from(cursor.prefix_len);
    row.len() >= len && anchor_hash(&[row[..len].to_vec()]) == cursor.prefix
}

/// Where the unread rows start in `rows` (captured from row `first_row`), or `None` when the
/// anchor is gone (the rows were trimmed away or overwritten).
pub fn locate(cursor: &SinceCursor, rows: &[Vec<u8>], first_row: u64) -> Option<usize> {
    let n = usize::from(cursor.anchor_rows);
    let expected = cursor.mark.checked_sub(first_row)?;
    let expected = usize::try_from(expected).ok()?;
    // Content only moves up (trims and cleared history renumber rows downwards), so search
    // from the expected place upwards, nearest first.
    let highest = expected.min(rows.len());
    (n..=highest).rev().find(|&end| {
        anchor_hash(&rows[end - n..end]) == cursor.anchor && prefix_matches(cursor, rows.get(end))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(texts: &[&str]) -> Vec<Vec<u8>> {
        texts.iter().map(|t| t.as_bytes().to_vec()).collect()
    }

    fn state(history_size: u64, cursor_y: u64) -> PaneRows {
        PaneRows {
            pane_pid: 42,
            history_size,
            history_limit: 2000,
            cursor_y,
            alternate_on: false,
        }
    }

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let screen = rows(&["a", "b", "c", "d"]);
        let cursor = cursor_at("work", PaneId(3), &state(0, 3), &screen, 0);
        assert_eq!(cursor.mark, 3);
        assert_eq!(cursor.anchor_rows, 3);
        let text = cursor.encode();
        assert!(text.starts_with("mgc1."));
        assert_eq!(SinceCursor::decode(&text), Ok(cursor));

        for bad in [
            "",
            "mgc1.",
            "mgc1.!!!!",
            "mgc2.eyJ9",
            "mgc1.eyJzIjoxfQ",
            &"x".repeat(2000),
        ] {
            assert!(SinceCursor::decode(bad).is_err(), "{bad}");
        }
        // Well-formed JSON with an anchor covering more rows than exist.
        let forged = SinceCursor {
            prefix: "z".repeat(16),
            ..SinceCursor::decode(&text).unwrap()
        };
        assert!(SinceCursor::decode(&forged.encode()).is_err());
        let forged = SinceCursor {
            anchor_rows: 3,
            mark: 1,
            ..SinceCursor::decode(&text).unwrap()
        };
        assert!(SinceCursor::decode(&forged.encode()).is_err());
    }

    #[test]
    fn unread_rows_start_at_the_mark() {
        let before = rows(&["$ ls", "a b", "$ "]);
        let cursor = cursor_at("work", PaneId(1), &state(0, 2), &before, 0);
        let after = rows(&["$ ls", "a b", "$ echo hi", "hi", "$ "]);
        assert_eq!(locate(&cursor, &after, 0), Some(2));
    }

    #[test]
    fn a_trimmed_history_is_found_again_by_its_anchor() {
        let before = rows(&["1", "2", "3", "4", "5", "6"]);
        let cursor = cursor_at("work", PaneId(1), &state(4, 2), &before, 0);
        assert_eq!(cursor.mark, 6);
        // Two rows trimmed from the top, two new rows printed.
        let after = rows(&["3", "4", "5", "6", "7", "8"]);
        assert_eq!(locate(&cursor, &after, 0), Some(4));
        // Captured from row 1 on: indexes are relative to the capture.
        assert_eq!(locate(&cursor, &after[1..], 1), Some(3));
    }

    #[test]
    fn rows_gone_are_not_found() {
        let before = rows(&["x", "y", "z"]);
        let cursor = cursor_at("work", PaneId(1), &state(0, 3), &before, 0);
        assert_eq!(locate(&cursor, &rows(&["p", "q", "r", "s"]), 0), None);
        assert_eq!(locate(&cursor, &rows(&[]), 0), None);
    }

    #[test]
    fn a_cursor_at_the_very_top_relies_on_its_prompt() {
        let cursor = cursor_at("work", PaneId(1), &state(0, 0), &rows(&["$ "]), 0);
        assert_eq!(
            (cursor.mark, cursor.anchor_rows, cursor.prefix_len),
            (0, 0, 1)
        );
        assert_eq!(locate(&cursor, &rows(&["$ ls", "a"]), 0), Some(0));
        // The prompt row was trimmed away.
        assert_eq!(locate(&cursor, &rows(&["335", "336"]), 0), None);
    }

    #[test]
    fn states_parse() {
        let state = parse_state(PaneId(7), b"%7 1234 10 2000 5 0").unwrap();
        assert_eq!(state.cursor_row(), 15);
        assert_eq!(state.line_of(3), -7);
        assert!(parse_state(PaneId(7), b"%7 1234 10 2000 5").is_none());
        assert!(parse_state(PaneId(7), b"%7 x 10 2000 5 0").is_none());
        assert!(parse_state(PaneId(7), b"%8 1234 10 2000 5 0").is_none());
        assert!(parse_state(PaneId(7), b"").is_none(), "a missing pane");
    }

    #[test]
    fn the_search_reaches_back_a_trim_near_the_limit() {
        let cursor = SinceCursor {
            server: "w".into(),
            pane: 1,
            pane_pid: 42,
            mark: 1990,
            anchor: "0".repeat(16),
            anchor_rows: 3,
            prefix: "0".repeat(16),
            prefix_len: 0,
        };
        let mut near = state(1990, 0);
        assert_eq!(near.search_start(&cursor), 1987 - 201);
        near.history_size = 100;
        assert_eq!(near.search_start(&cursor), 0, "cleared history");
        let far = PaneRows {
            history_limit: 50_000,
            ..state(1990, 5)
        };
        assert_eq!(far.search_start(&cursor), 1987);
    }
}
