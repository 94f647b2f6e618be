//! Reading what a pane printed since a cursor, as one caller ([`TmuxSince::rows_since`]): the
//! complete new rows, the row still being written and the cursor for the next read
//! ([`NewRows`]).
//!
//! The cursor logic (marks, anchors, finding rows again after tmux trimmed its history) is
//! pure, in [`crate::ops::since`]; this module owns the command lines that feed it and the
//! order of the reads. Each read asks for the pane's state and its rows on the same line, so
//! no output can slip in between them. Callers get data and a [`SinceError`] that says what
//! happened, not what to tell anyone about it.

use crate::ops::since::{PaneRows, SinceCursor, cursor_at, locate, parse_state, state_command};
use crate::typed::op_error::PaneOpError;
use crate::{BatchMode, Caller, CommandOutcome, PaneId, QuoteError, TmuxCommand, TmuxServer};

/// What a pane printed since a cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRows {
    /// The complete rows printed since the cursor, oldest first; on a first read, or when the
    /// rows since were dropped unread (`lines_missed`), the visible rows above the cursor.
    pub rows: Vec<Vec<u8>>,
    /// The row the terminal cursor is on (printed, not finished), trailing blanks removed.
    pub partial_line: String,
    /// Rows were dropped unread (tmux trimmed them from its history, or they were cleared).
    pub lines_missed: bool,
    /// Where the next read starts.
    pub next: SinceCursor,
}

/// Why the rows since a cursor could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SinceError {
    /// Reading the pane failed, or the pane is missing.
    #[error(transparent)]
    Read(#[from] PaneOpError),
    /// The pane shows a full-screen program, which keeps no history to read from.
    #[error("the pane shows a full-screen program")]
    FullScreen,
    /// The pane's program is not the one the cursor was made for: its output started over.
    /// `while_read`: the respawn happened between the two reads of this call.
    #[error("the pane was respawned")]
    Respawned {
        /// It happened during this read rather than before it.
        while_read: bool,
    },
}

/// A pane's state and the rows read with it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SinceRead {
    /// The pane's state, read first.
    state: PaneRows,
    /// The rows from the line asked for to the bottom of the screen (none when only the state
    /// was asked for, or tmux refused the capture).
    rows: Vec<Vec<u8>>,
}

/// The state, then the rows from `start_line` (a `capture-pane -S` line: negative lines are
/// history) to the bottom of the screen when there is one.
fn read_commands(pane: PaneId, start_line: Option<i64>) -> Result<Vec<TmuxCommand>, QuoteError> {
    let mut commands = vec![state_command(pane)?];
    if let Some(start_line) = start_line {
        commands.push(
            TmuxCommand::new("capture-pane")
                .flag("-p")
                .opt("-S", start_line.to_string())
                .opt("-E", "-")
                .target(pane)
                .build()?,
        );
    }
    Ok(commands)
}

/// The answers to [`read_commands`] for `pane`.
fn parse_read(pane: PaneId, outcomes: Vec<CommandOutcome>) -> Result<SinceRead, PaneOpError> {
    let mut outcomes = outcomes.into_iter();
    let state = match outcomes.next() {
        Some(CommandOutcome::Ok(lines)) => lines.first().and_then(|line| parse_state(pane, line)),
        _ => None,
    }
    .ok_or(PaneOpError::Missing(pane))?;
    let rows = match outcomes.next() {
        Some(CommandOutcome::Ok(rows)) => rows,
        _ => Vec::new(),
    };
    Ok(SinceRead { state, rows })
}

/// The panes of one tmux server, read for `capture_since` as `caller` (the engine's fairness
/// key).
#[derive(Clone)]
pub struct TmuxSince {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxSince {
    /// The panes of `server`, read for `capture_since` as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// The rows `pane` printed since `cursor`; without one, the visible rows (a first read).
    pub async fn rows_since(
        &self,
        pane: PaneId,
        cursor: Option<&SinceCursor>,
    ) -> Result<NewRows, SinceError> {
        let Some(cursor) = cursor else {
            let (state, rows) = self.state_and_rows(pane, Some(0)).await?;
            return Ok(new_rows(
                self.server.name(),
                pane,
                &state,
                rows,
                state.history_size,
                None,
            ));
        };
        let (state, _) = self.state_and_rows(pane, None).await?;
        if state.pane_pid != cursor.pane_pid {
            return Err(SinceError::Respawned { while_read: false });
        }
        let start_line = state.line_of(state.search_start(cursor));
        let (state, rows) = self.state_and_rows(pane, Some(start_line)).await?;
        if state.pane_pid != cursor.pane_pid {
            return Err(SinceError::Respawned { while_read: true });
        }
        // tmux starts a capture that reaches above the history at its top.
        let history = i64::try_from(state.history_size).unwrap_or(i64::MAX);
        let first_row = u64::try_from(start_line.saturating_add(history)).unwrap_or(0);
        let found = locate(cursor, &rows, first_row);
        Ok(new_rows(
            self.server.name(),
            pane,
            &state,
            rows,
            first_row,
            Some(found),
        ))
    }

    /// The pane's state and its rows from `start_line`, refused for a full-screen program.
    async fn state_and_rows(
        &self,
        pane: PaneId,
        start_line: Option<i64>,
    ) -> Result<(PaneRows, Vec<Vec<u8>>), SinceError> {
        let read = self.read(pane, start_line).await?;
        if read.state.alternate_on {
            return Err(SinceError::FullScreen);
        }
        Ok((read.state, read.rows))
    }

    /// `pane`'s state, with its rows from `start_line` to the bottom of the screen when given
    /// (`None` reads the state only).
    async fn read(&self, pane: PaneId, start_line: Option<i64>) -> Result<SinceRead, PaneOpError> {
        let outcomes = self
            .server
            .run_batch(
                &self.caller,
                read_commands(pane, start_line)?,
                BatchMode::StopOnError,
                None,
            )
            .await?;
        parse_read(pane, outcomes)
    }
}

/// The rows of `server`'s `pane` after the cursor (`found`: where they start in `rows`, captured from row
/// `first_row`; `None` inside: the anchor was lost; `None` outside: a first read).
fn new_rows(
    server: &str,
    pane: PaneId,
    state: &PaneRows,
    rows: Vec<Vec<u8>>,
    first_row: u64,
    found: Option<Option<usize>>,
) -> NewRows {
    let index = |row: u64| usize::try_from(row.saturating_sub(first_row)).unwrap_or(usize::MAX);
    let cursor_index = index(state.cursor_row()).min(rows.len());
    let visible_index = index(state.history_size).min(cursor_index);
    let (start, lines_missed) = match found {
        None => (visible_index, false),
        Some(Some(start)) => (start.min(cursor_index), false),
        Some(None) => (visible_index, true),
    };
    let partial_line = rows
        .get(cursor_index)
        .map(|row| String::from_utf8_lossy(row).trim_end().to_owned())
        .unwrap_or_default();
    let next = cursor_at(server, pane, state, &rows, first_row);
    NewRows {
        rows: rows[start..cursor_index].to_vec(),
        partial_line,
        lines_missed,
        next,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(texts: &[&str]) -> Vec<Vec<u8>> {
        texts.iter().map(|t| t.as_bytes().to_vec()).collect()
    }

    /// 2 rows of history, the cursor on the second visible row (row 3).
    const STATE: PaneRows = PaneRows {
        pane_pid: 42,
        history_size: 2,
        history_limit: 2000,
        cursor_y: 1,
        alternate_on: false,
    };

    /// A first read captures from the top of the screen, row 2.
    #[test]
    fn a_first_read_gives_the_visible_rows_above_the_cursor() {
        let read = new_rows("s", PaneId(5), &STATE, rows(&["v0", "$ ed  "]), 2, None);
        assert_eq!(read.rows, rows(&["v0"]));
        assert_eq!(read.partial_line, "$ ed");
        assert!(!read.lines_missed);
        assert_eq!((read.next.mark, read.next.pane_pid), (3, 42));
    }

    #[test]
    fn rows_after_a_found_anchor_come_back_and_a_lost_one_is_told() {
        let all = rows(&["h0", "h1", "v0", "$ "]);
        let found = new_rows("s", PaneId(5), &STATE, all.clone(), 0, Some(Some(1)));
        assert_eq!(found.rows, rows(&["h1", "v0"]));
        assert!(!found.lines_missed);
        let lost = new_rows("s", PaneId(5), &STATE, all, 0, Some(None));
        assert_eq!(lost.rows, rows(&["v0"]));
        assert!(lost.lines_missed);
    }

    #[test]
    fn command_lines() {
        let lines = |start_line| -> Vec<String> {
            read_commands(PaneId(5), start_line)
                .unwrap()
                .iter()
                .map(TmuxCommand::text)
                .collect()
        };
        let state_only = lines(None);
        assert_eq!(state_only.len(), 1);
        assert!(
            state_only[0].starts_with("display-message -p -t '%5' "),
            "{}",
            state_only[0]
        );
        assert_eq!(
            lines(Some(-120))[1],
            "capture-pane -p -S '-120' -E '-' -t '%5'"
        );
        assert_eq!(lines(Some(0))[1], "capture-pane -p -S '0' -E '-' -t '%5'");
    }

    #[test]
    fn answers_to_a_read() {
        let state = CommandOutcome::Ok(vec![b"%5 42 100 2000 3 0".to_vec()]);
        let rows = CommandOutcome::Ok(vec![b"$ ls".to_vec(), b"a b".to_vec()]);
        let read = parse_read(PaneId(5), vec![state.clone(), rows]).unwrap();
        assert_eq!(read.state.pane_pid, 42);
        assert_eq!(read.state.cursor_row(), 103);
        assert_eq!(read.rows.len(), 2);
        let refused = CommandOutcome::Failed("x".into());
        assert!(
            parse_read(PaneId(5), vec![state.clone(), refused])
                .unwrap()
                .rows
                .is_empty()
        );
        assert!(parse_read(PaneId(5), vec![state]).unwrap().rows.is_empty());
    }

    #[test]
    fn a_missing_pane_is_told() {
        // tmux prints an empty line for a missing `display-message` target.
        for outcomes in [
            vec![CommandOutcome::Ok(vec![Vec::new()])],
            vec![CommandOutcome::Ok(vec![b"%6 42 100 2000 3 0".to_vec()])],
            vec![CommandOutcome::Failed("can't find pane: %5".into())],
            Vec::new(),
        ] {
            assert!(matches!(
                parse_read(PaneId(5), outcomes),
                Err(PaneOpError::Missing(PaneId(5)))
            ));
        }
    }
}
