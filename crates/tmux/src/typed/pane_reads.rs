//! What tmux says about panes that the gateway shapes into its own answers, as one caller:
//! listings of pane rows ([`PaneRecord`]), captured lines, a pane's snapshot, a format
//! expanded in a pane's context, a pane's size ([`PaneShape`]) and its screen with that size.
//!
//! Each read is one write to the server's worker. This module owns the command lines and reads
//! the answers by position; callers get rows and lines, and the engine's own [`EngineError`]
//! (tmux's refusal is an [`EngineError::Command`], its message as tmux wrote it).

use muxgate_mux::multiplexer::CaptureRange;
use tokio::time::Instant;

use crate::ops::capture::capture_command;
use crate::ops::display::{PaneSnapshot, expand_command, parse_snapshot, snapshot_command};
use crate::ops::pane_row::{self, PaneRecord};
use crate::ops::pane_shape::PaneShape;
use crate::typed::sessions::{self, Session};
use crate::wire::target::Target;
use crate::{BatchMode, Caller, CommandOutcome, EngineError, PaneId, TmuxServer};

/// A pane's visible lines and its snapshot, read in one write ([`TmuxPaneReads::snapshot`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotRead {
    /// The captured lines, as tmux printed them.
    pub lines: Vec<Vec<u8>>,
    /// The pane's facts.
    pub pane: PaneSnapshot,
}

/// A pane's size and its screen, read in one write ([`TmuxPaneReads::screen_with_shape`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapedScreen {
    /// Its size and cursor; `None` when tmux's row did not read as one.
    pub shape: Option<PaneShape>,
    /// The captured rows, as tmux printed them.
    pub rows: Vec<Vec<u8>>,
}

/// Reads of one server's panes, as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxPaneReads {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxPaneReads {
    /// Reads of `server`'s panes, as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// The rows of every pane of the server (`None`), or of those of a session, of a window,
    /// or of the window holding a pane; rows that do not parse are left out.
    pub async fn list(&self, scope: Option<&Target>) -> Result<Vec<PaneRecord>, EngineError> {
        let rows = self
            .server
            .run(&self.caller, pane_row::list_command(scope)?)
            .await?;
        Ok(records(&rows))
    }

    /// Every session and every pane's row, in one write; `None` when tmux refused either
    /// listing.
    pub async fn sessions_and_panes(
        &self,
    ) -> Result<Option<(Vec<Session>, Vec<PaneRecord>)>, EngineError> {
        let commands = vec![sessions::list_command()?, pane_row::list_command(None)?];
        let outcomes = self
            .server
            .run_batch(&self.caller, commands, BatchMode::Independent, None)
            .await?;
        Ok(match outcomes.as_slice() {
            [CommandOutcome::Ok(sessions), CommandOutcome::Ok(panes)] => {
                Some((sessions::parse_sessions(sessions), records(panes)))
            }
            _ => None,
        })
    }

    /// `range` of `pane`, one entry per line as tmux printed it.
    pub async fn capture(
        &self,
        pane: PaneId,
        range: &CaptureRange,
    ) -> Result<Vec<Vec<u8>>, EngineError> {
        let command = capture_command(range, pane)?;
        self.server.run(&self.caller, command).await
    }

    /// `range` of each of `panes`, in one write (the caller keeps the write small); `None` for
    /// a pane tmux could not capture (one that closed since it was listed).
    pub async fn capture_each(
        &self,
        panes: &[PaneId],
        range: &CaptureRange,
    ) -> Result<Vec<Option<Vec<Vec<u8>>>>, EngineError> {
        let commands = panes
            .iter()
            .map(|pane| capture_command(range, *pane))
            .collect::<Result<Vec<_>, _>>()?;
        let outcomes = self
            .server
            .run_batch(&self.caller, commands, BatchMode::Independent, None)
            .await?;
        Ok(outcomes
            .into_iter()
            .map(|outcome| match outcome {
                CommandOutcome::Ok(lines) => Some(lines),
                CommandOutcome::Failed(_) | CommandOutcome::NotRun => None,
            })
            .collect())
    }

    /// `range` of `pane` and its snapshot, in one write. The capture comes first: it fails for
    /// a missing pane, where `display-message` would (tmux 3.3) quietly expand the format for
    /// some other pane. `None` when tmux answered neither way for one of them, or printed a
    /// snapshot that does not read.
    pub async fn snapshot(
        &self,
        pane: PaneId,
        range: &CaptureRange,
    ) -> Result<Option<SnapshotRead>, EngineError> {
        let commands = vec![capture_command(range, pane)?, snapshot_command(pane)?];
        let mut outcomes = self
            .server
            .run_batch(&self.caller, commands, BatchMode::Independent, None)
            .await?
            .into_iter();
        let Some(lines) = answer(outcomes.next())? else {
            return Ok(None);
        };
        let Some(fields) = answer(outcomes.next())? else {
            return Ok(None);
        };
        Ok(parse_snapshot(pane, &fields).map(|pane| SnapshotRead { lines, pane }))
    }

    /// `format` expanded in `pane`'s context, one entry per printed line. The format is the
    /// client's, checked beforehand (see [`crate::wire::format_check`]).
    pub async fn expand(&self, pane: PaneId, format: &str) -> Result<Vec<Vec<u8>>, EngineError> {
        let command = expand_command(pane, format)?;
        self.server.run(&self.caller, command).await
    }

    /// `pane`'s size and cursor; `None` when tmux's row does not read as one.
    pub async fn shape(&self, pane: PaneId) -> Result<Option<PaneShape>, EngineError> {
        let rows = self
            .server
            .run(&self.caller, PaneShape::command(pane)?)
            .await?;
        Ok(rows.first().and_then(|row| PaneShape::parse(row)))
    }

    /// `pane`'s size and `range` of its screen, in one write that gives up at `deadline`;
    /// `None` when tmux refused either read.
    pub async fn screen_with_shape(
        &self,
        pane: PaneId,
        range: &CaptureRange,
        deadline: Instant,
    ) -> Result<Option<ShapedScreen>, EngineError> {
        let commands = vec![PaneShape::command(pane)?, capture_command(range, pane)?];
        let outcomes = self
            .server
            .run_batch(
                &self.caller,
                commands,
                BatchMode::StopOnError,
                Some(deadline),
            )
            .await?;
        let mut outcomes = outcomes.into_iter();
        let (Some(CommandOutcome::Ok(shape)), Some(CommandOutcome::Ok(rows))) =
            (outcomes.next(), outcomes.next())
        else {
            return Ok(None);
        };
        let shape = shape.first().and_then(|row| PaneShape::parse(row));
        Ok(Some(ShapedScreen { shape, rows }))
    }
}

/// The rows of a pane listing that parse.
fn records(rows: &[Vec<u8>]) -> Vec<PaneRecord> {
    rows.iter()
        .filter_map(|row| PaneRecord::parse(row))
        .collect()
}

/// One answer of a batch: its lines, tmux's refusal as an error, or `None` when it was not
/// run or is missing.
fn answer(outcome: Option<CommandOutcome>) -> Result<Option<Vec<Vec<u8>>>, EngineError> {
    match outcome {
        Some(CommandOutcome::Ok(lines)) => Ok(Some(lines)),
        Some(CommandOutcome::Failed(message)) => Err(EngineError::Command(message)),
        Some(CommandOutcome::NotRun) | None => Ok(None),
    }
}
