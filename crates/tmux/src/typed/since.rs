//! Reading a pane for `capture_since`, as one caller: its state and its rows, in one write.
//!
//! The cursor logic (marks, anchors, finding rows again after tmux trimmed its history) is
//! pure, in [`crate::ops::since`]; this module owns the command lines that feed it. Each read
//! asks for the pane's state and its rows on the same line, so no output can slip in between
//! them. Callers get a [`SinceRead`] and a [`PaneOpError`] that says what happened, not what to
//! tell anyone about it.

use crate::ops::since::{PaneRows, parse_state, state_command};
use crate::typed::op_error::PaneOpError;
use crate::{BatchMode, Caller, CommandOutcome, PaneId, QuoteError, TmuxCommand, TmuxServer};

/// A pane's state and the rows read with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinceRead {
    /// The pane's state, read first.
    pub state: PaneRows,
    /// The rows from the line asked for to the bottom of the screen (none when only the state
    /// was asked for, or tmux refused the capture).
    pub rows: Vec<Vec<u8>>,
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

    /// `pane`'s state, with its rows from `start_line` to the bottom of the screen when given
    /// (`None` reads the state only).
    pub async fn read(
        &self,
        pane: PaneId,
        start_line: Option<i64>,
    ) -> Result<SinceRead, PaneOpError> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
