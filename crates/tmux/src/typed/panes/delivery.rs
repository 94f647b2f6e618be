//! Input delivered to a pane in one write, together with a reading of where the pane's output
//! stood just before it: the state and visible rows are read on the same `;`-chained line as
//! the input, so no output can fall between the reading and the input. The reading is a
//! [`SinceCursor`] a later follow (`capture_since`, a wait's `since`) starts from.
//!
//! A batch that delivers to several panes in one write builds the same reading for each with
//! [`position_commands`] and reads it back with [`position_of`].

use muxgate_mux::multiplexer::{CaptureRange, LineBound};

use super::{TmuxPaneError, TmuxPanes};
use crate::ops::buffer::transient_buffer_name;
use crate::ops::capture::capture_command;
use crate::ops::input::InputPlan;
use crate::ops::since::{SinceCursor, cursor_at, parse_state, state_command};
use crate::typed::buffers::delete_command;
use crate::typed::op_error::first_failure;
use crate::{BatchMode, CommandOutcome, PaneId, QuoteError, TmuxCommand};

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

/// A pane's visible screen and the row its cursor is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisibleScreen {
    /// The cursor's row, from the top of the screen.
    pub cursor_row: usize,
    /// The visible rows, from the top, as text.
    pub rows: Vec<String>,
}

/// The commands that read where a pane's output stands: its state and visible rows.
pub fn position_commands(pane: PaneId) -> Result<Vec<TmuxCommand>, QuoteError> {
    let screen = CaptureRange {
        start: Some(LineBound::Line(0)),
        end: Some(LineBound::Edge),
        ..CaptureRange::visible()
    };
    Ok(vec![state_command(pane)?, capture_command(&screen, pane)?])
}

/// The position the outcomes of [`position_commands`] describe, on the server configured as
/// `server`; `None` on the alternate screen or when tmux did not describe the pane.
pub fn position_of(server: &str, pane: PaneId, outcomes: &[CommandOutcome]) -> Option<SinceCursor> {
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
        let pane = plan.pane();
        let buffers = plan.transient_buffers().to_vec();
        let mut commands = position_commands(pane).map_err(crate::EngineError::from)?;
        let marks = commands.len();
        commands.extend(plan.into_commands());
        let outcomes = self
            .server
            .run_batch(&self.caller, commands, BatchMode::StopOnError, None)
            .await;
        let outcomes = match outcomes {
            Ok(outcomes) => outcomes,
            Err(error) => {
                self.delete_buffers(&buffers).await;
                return Err(error.into());
            }
        };
        let reading = &outcomes[..marks.min(outcomes.len())];
        delivered.position = position_of(self.server.name(), pane, reading);
        if let Err(failure) = first_failure(&outcomes) {
            self.delete_buffers(&buffers).await;
            return Err(failure.into());
        }
        Ok(delivered)
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
