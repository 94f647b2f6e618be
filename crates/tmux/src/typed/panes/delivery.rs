//! Input delivered to a pane in one write, together with a reading of where the pane's output
//! stood just before it: the state and visible rows are read on the same `;`-chained line as
//! the input, so no output can fall between the reading and the input. The reading is a
//! [`SinceCursor`] a later follow (`capture_since`, a wait's `since`) starts from.
//!
//! A batch that delivers to several panes in one write ([`TmuxPanes::deliver_batch`]) takes
//! the same reading before its first input into each pane.

use muxgate_mux::multiplexer::{BatchOutcome, CaptureRange, InputPiece, LineBound};
use tokio::time::Instant;

use super::{TmuxPaneError, TmuxPanes, input_plan};
use crate::ops::buffer::transient_buffer_name;
use crate::ops::capture::capture_command;
use crate::ops::input::InputPlan;
use crate::ops::since::{SinceCursor, cursor_at, parse_state, state_command};
use crate::typed::buffers::delete_command;
use crate::typed::op_error::{OpError, first_failure};
use crate::{BatchMode, CommandOutcome, EngineError, PaneId, QuoteError, TmuxCommand};

/// What was delivered to a pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// Bytes of text typed or pasted.
    pub text_bytes: usize,
    /// Keys pressed.
    pub keys: usize,
    /// Where the pane's output stood just before the input (a cursor at the terminal cursor's
    /// row); `None` on the alternate screen, which keeps no rows to follow.
    pub position: Option<SinceCursor>,
}

/// A batch of input delivered ([`TmuxPanes::deliver_batch`]).
#[derive(Debug)]
pub struct BatchDelivered {
    /// Each operation's outcome, in order.
    pub outcomes: Vec<BatchOutcome<TmuxPaneError>>,
    /// The operation the batch stopped at ([`BatchMode::StopOnError`]): the first whose input
    /// could not be planned or whose command tmux refused.
    pub stopped_at: Option<usize>,
    /// Each pane typed into, with where its output stood just before the batch's first input
    /// into it; a pane on the alternate screen has none.
    pub positions: Vec<(PaneId, SinceCursor)>,
}

/// Every planned operation as one write: before the first input into each pane, the reading
/// of where its output stands ([`position_commands`]).
#[derive(Debug, Default)]
struct OneWrite {
    commands: Vec<TmuxCommand>,
    /// (operation, first command, command count) of each planned operation; a pane's reading
    /// belongs to the operation it precedes, so a failure there is that operation's failure.
    spans: Vec<(usize, usize, usize)>,
    /// (pane, first command) of each pane's reading.
    readings: Vec<(PaneId, usize)>,
}

impl OneWrite {
    fn of(plans: Vec<(usize, InputPlan)>) -> Result<Self, QuoteError> {
        let mut write = Self::default();
        for (op, plan) in plans {
            let first = write.commands.len();
            if !write.readings.iter().any(|(pane, _)| *pane == plan.pane()) {
                write.readings.push((plan.pane(), first));
                write.commands.extend(position_commands(plan.pane())?);
            }
            write.commands.extend(plan.into_commands());
            write.spans.push((op, first, write.commands.len() - first));
        }
        Ok(write)
    }
}

/// What became of one operation from the outcomes of its commands (`None`: the write timed
/// out before they were answered): as [`first_failure`] reads them, a command that was not run
/// after a refusal elsewhere meaning the operation was not run.
fn settle(outcomes: Option<&[CommandOutcome]>) -> BatchOutcome<TmuxPaneError> {
    match outcomes.map(first_failure) {
        None => BatchOutcome::TimedOut,
        Some(Ok(())) => BatchOutcome::Delivered,
        Some(Err(OpError::Refused(message))) => {
            BatchOutcome::Failed(TmuxPaneError::Refused(message))
        }
        Some(Err(_)) => BatchOutcome::NotRun,
    }
}

/// What one write of planned input answered.
struct Written {
    /// Each planned operation, settled.
    settled: Vec<(usize, BatchOutcome<TmuxPaneError>)>,
    /// Each pane typed into, with where its output stood before its first input.
    positions: Vec<(PaneId, SinceCursor)>,
}

/// A pane's visible screen and the row its cursor is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisibleScreen {
    /// The cursor's row, from the top of the screen.
    pub cursor_row: usize,
    /// The visible rows, from the top, as text.
    pub rows: Vec<String>,
}

/// The commands that read where a pane's output stands: its state and visible rows.
fn position_commands(pane: PaneId) -> Result<Vec<TmuxCommand>, QuoteError> {
    let screen = CaptureRange {
        start: Some(LineBound::Line(0)),
        end: Some(LineBound::Edge),
        ..CaptureRange::visible()
    };
    Ok(vec![state_command(pane)?, capture_command(&screen, pane)?])
}

/// The position the outcomes of [`position_commands`] describe, on the server configured as
/// `server`; `None` on the alternate screen or when tmux did not describe the pane.
fn position_of(server: &str, pane: PaneId, outcomes: &[CommandOutcome]) -> Option<SinceCursor> {
    let [CommandOutcome::Ok(state), CommandOutcome::Ok(rows)] = outcomes else {
        return None;
    };
    let state = parse_state(pane, state.first()?)?;
    if state.alternate_on {
        return None;
    }
    Some(cursor_at(server, pane, &state, rows, state.history_size))
}

impl TmuxPanes {
    /// Runs `plan` as one chained line (nothing runs after a failure), after a reading of
    /// where the pane's output stood. If the line fails, the transient buffers it may have
    /// left are deleted before the error returns.
    pub async fn deliver_marked(&self, plan: InputPlan) -> Result<Delivered, TmuxPaneError> {
        let mut delivered = Delivered {
            text_bytes: plan.text_bytes(),
            keys: plan.key_count(),
            position: None,
        };
        if plan.is_empty() {
            return Ok(delivered);
        }
        let written = self
            .write(vec![(0, plan)], BatchMode::StopOnError, None)
            .await?;
        delivered.position = written.positions.into_iter().next().map(|(_, at)| at);
        match written.settled.into_iter().next() {
            Some((_, BatchOutcome::Delivered)) => Ok(delivered),
            Some((_, BatchOutcome::Failed(error))) => Err(error),
            _ => Err(TmuxPaneError::Unanswered),
        }
    }

    /// Delivers each operation's input to its pane, in order, as ONE write, with a reading of
    /// where each pane's output stood before the batch's first input into it. With
    /// [`BatchMode::StopOnError`] nothing after the first failure runs (input that cannot be
    /// planned, a command tmux refused); with [`BatchMode::Independent`] each operation stands
    /// alone. Past `deadline` every operation sent reads as timed out. Transient buffers a
    /// failed operation may have left are deleted.
    pub async fn deliver_batch(
        &self,
        ops: &[(PaneId, Vec<InputPiece>)],
        mode: BatchMode,
        deadline: Option<Instant>,
    ) -> Result<BatchDelivered, EngineError> {
        let stop = mode == BatchMode::StopOnError;
        // Planned operations are settled by the write; these are the others.
        let mut outcomes: Vec<BatchOutcome<TmuxPaneError>> = Vec::with_capacity(ops.len());
        let mut stopped_at = None;
        let mut plans = Vec::new();
        for (op, (pane, input)) in ops.iter().enumerate() {
            if stopped_at.is_some() {
                outcomes.push(BatchOutcome::NotRun);
                continue;
            }
            match input_plan(*pane, input) {
                Ok(plan) => {
                    plans.push((op, plan));
                    outcomes.push(BatchOutcome::TimedOut);
                }
                Err(error) => {
                    outcomes.push(BatchOutcome::Failed(error));
                    if stop {
                        stopped_at = Some(op);
                    }
                }
            }
        }
        let written = match self.write(plans, mode, deadline).await {
            Ok(written) => written,
            // Every operation sent stays timed out.
            Err(EngineError::Timeout { .. }) => Written {
                settled: Vec::new(),
                positions: Vec::new(),
            },
            Err(error) => return Err(error),
        };
        for (op, outcome) in written.settled {
            if stop && matches!(outcome, BatchOutcome::Failed(_)) {
                stopped_at = Some(stopped_at.map_or(op, |at: usize| at.min(op)));
            }
            outcomes[op] = outcome;
        }
        Ok(BatchDelivered {
            outcomes,
            stopped_at,
            positions: written.positions,
        })
    }

    /// Runs `plans` as one write ([`OneWrite`]) and settles each; the transient buffers of the
    /// plans are deleted unless every operation was delivered.
    async fn write(
        &self,
        plans: Vec<(usize, InputPlan)>,
        mode: BatchMode,
        deadline: Option<Instant>,
    ) -> Result<Written, EngineError> {
        let buffers: Vec<String> = plans
            .iter()
            .flat_map(|(_, plan)| plan.transient_buffers().iter().cloned())
            .collect();
        let write = OneWrite::of(plans)?;
        if write.commands.is_empty() {
            return Ok(Written {
                settled: Vec::new(),
                positions: Vec::new(),
            });
        }
        let answers = match self
            .server
            .run_batch(&self.caller, write.commands, mode, deadline)
            .await
        {
            Ok(answers) => answers,
            Err(error) => {
                self.delete_buffers(&buffers).await;
                return Err(error);
            }
        };
        let settled: Vec<(usize, BatchOutcome<TmuxPaneError>)> = write
            .spans
            .iter()
            .map(|&(op, first, count)| (op, settle(answers.get(first..first + count))))
            .collect();
        if settled
            .iter()
            .any(|(_, outcome)| !matches!(outcome, BatchOutcome::Delivered))
        {
            self.delete_buffers(&buffers).await;
        }
        let positions = write
            .readings
            .iter()
            .filter_map(|&(pane, first)| {
                let reading = answers.get(first..first + 2)?;
                Some((pane, position_of(self.server.name(), pane, reading)?))
            })
            .collect();
        Ok(Written { settled, positions })
    }

    /// Pastes `text` into `pane` through a transient buffer (bracketed if `bracket` and the
    /// program asked for it); one write, and the buffer is gone afterwards.
    pub async fn paste(
        &self,
        pane: PaneId,
        text: &[u8],
        bracket: bool,
    ) -> Result<Delivered, TmuxPaneError> {
        let mut plan = InputPlan::new(pane);
        plan.paste(text, bracket, transient_buffer_name)?;
        self.deliver_marked(plan).await
    }

    /// `pane`'s visible screen and its cursor's row, in one write; `None` when tmux does not
    /// describe the pane.
    pub async fn visible_screen(
        &self,
        pane: PaneId,
    ) -> Result<Option<VisibleScreen>, TmuxPaneError> {
        let commands = position_commands(pane).map_err(crate::EngineError::from)?;
        let outcomes = self
            .server
            .run_batch(&self.caller, commands, BatchMode::StopOnError, None)
            .await?;
        let [CommandOutcome::Ok(state), CommandOutcome::Ok(rows)] = &outcomes[..] else {
            return Ok(None);
        };
        let Some(state) = state.first().and_then(|row| parse_state(pane, row)) else {
            return Ok(None);
        };
        Ok(Some(VisibleScreen {
            cursor_row: usize::try_from(state.cursor_y).unwrap_or(usize::MAX),
            rows: rows
                .iter()
                .map(|row| String::from_utf8_lossy(row).into_owned())
                .collect(),
        }))
    }

    /// Best-effort removal of transient buffers after a failed delivery (a buffer already
    /// consumed by `paste-buffer -d` just reports an error, which is ignored).
    async fn delete_buffers(&self, names: &[String]) {
        let commands: Vec<TmuxCommand> = names
            .iter()
            .filter_map(|name| delete_command(name).ok())
            .collect();
        if !commands.is_empty() {
            let _ = self
                .server
                .run_batch(&self.caller, commands, BatchMode::Independent, None)
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(pane: u32, text: &str) -> InputPlan {
        input_plan(PaneId(pane), &[InputPiece::Text(text.as_bytes().to_vec())])
            .expect("plain text plans")
    }

    fn line(command: &TmuxCommand) -> String {
        String::from_utf8_lossy(command.as_bytes()).into_owned()
    }

    #[test]
    fn each_pane_is_read_once_just_before_its_first_input() {
        let write = OneWrite::of(vec![
            (0, plan(1, "a")),
            (1, plan(2, "b")),
            (2, plan(1, "c")),
        ])
        .expect("pane ids quote");
        let reading = position_commands(PaneId(1)).expect("pane ids quote").len();
        assert_eq!(write.readings, [(PaneId(1), 0), (PaneId(2), reading + 1)]);
        // The reading belongs to the operation it precedes; the third reads nothing.
        assert_eq!(
            write.spans,
            [
                (0, 0, reading + 1),
                (1, reading + 1, reading + 1),
                (2, 2 * reading + 2, 1)
            ]
        );
        let lines: Vec<String> = write.commands.iter().map(line).collect();
        assert_eq!(lines.len(), 2 * reading + 3);
        assert_eq!(lines[reading], "send-keys -t '%1' -l -- 'a'");
        assert_eq!(lines[2 * reading + 1], "send-keys -t '%2' -l -- 'b'");
        assert_eq!(lines[2 * reading + 2], "send-keys -t '%1' -l -- 'c'");
    }

    #[test]
    fn an_operation_is_settled_by_its_first_command_that_did_not_succeed() {
        let ok = || CommandOutcome::Ok(Vec::new());
        assert!(matches!(settle(None), BatchOutcome::TimedOut));
        assert!(matches!(
            settle(Some(&[ok(), ok()])),
            BatchOutcome::Delivered
        ));
        let refused = [
            ok(),
            CommandOutcome::Failed("no pane".into()),
            CommandOutcome::NotRun,
        ];
        assert!(matches!(
            settle(Some(&refused)),
            BatchOutcome::Failed(TmuxPaneError::Refused(message)) if message == "no pane"
        ));
        assert!(matches!(
            settle(Some(&[CommandOutcome::NotRun])),
            BatchOutcome::NotRun
        ));
    }
}
