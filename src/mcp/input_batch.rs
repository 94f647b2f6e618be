//! A batch of input for several panes (`send_keys_batch`), delivered as each backend delivers
//! it: on tmux ONE write for every operation ([`TmuxPanes::deliver_batch`]), on Zellij, which
//! takes no write for several panes, one operation after the other. Either way the answer is a
//! [`DeliveredBatch`]: each operation's outcome with its failure worded for the model, where
//! the batch stopped, and each pane's `output_position`.
//!
//! [`super::pane_access::PaneAccess::deliver_batch`] picks the delivery; the tool's one body
//! is in `tools/batch.rs`.

use std::collections::BTreeMap;

use muxgate_mux::multiplexer::{BatchOutcome, InputPiece, Multiplexer};
use muxgate_tmux::typed::panes::{TmuxPaneError, TmuxPanes};
use muxgate_tmux::{BatchMode, PaneId};
use muxgate_zellij::panes::ZellijPanes;
use tokio::time::Instant;

use super::access::{TmuxAccess, engine_error};
use super::error::{ToolError, ToolErrorKind};
use super::position::{OutputPosition, ZellijPosition};
use super::scoped::Scoped;
use super::zellij_access::ZellijAccess;

/// One operation of a batch: the pane (checked for the caller), its input, and the text it
/// types (the echo a wait from the pane's position leaves out).
pub(crate) struct BatchInput<M: Multiplexer> {
    /// The pane.
    pub pane: Scoped<M>,
    /// What it types, in order.
    pub input: Vec<InputPiece>,
    /// The text typed, key names left out.
    pub typed: String,
}

/// A batch delivered.
#[derive(Default)]
pub(crate) struct DeliveredBatch {
    /// Each operation's outcome, in order; a failure as the error for the model.
    pub outcomes: Vec<BatchOutcome<ToolError>>,
    /// The operation the batch stopped at (stop on the first failure), if one did.
    pub stopped_at: Option<usize>,
    /// Per pane typed into: its `output_position` before the batch's input.
    pub positions: BTreeMap<String, String>,
}

/// The failure of an operation the batch's time ran out on.
pub(crate) fn batch_timed_out() -> ToolError {
    ToolError::new(
        ToolErrorKind::Timeout,
        "the batch timed out before this operation completed",
        "check the pane with capture_pane before sending it again",
    )
}

/// `ops` on a tmux server, as one write; under `stop` tmux runs nothing after the first
/// failure. A pane's position holds all the batch typed into it.
pub(crate) async fn on_tmux(
    tmux: &TmuxAccess<'_>,
    ops: Vec<BatchInput<TmuxPanes>>,
    stop: bool,
    deadline: Instant,
) -> Result<DeliveredBatch, ToolError> {
    let mode = if stop {
        BatchMode::StopOnError
    } else {
        BatchMode::Independent
    };
    let mut typed: BTreeMap<PaneId, Vec<String>> = BTreeMap::new();
    let mut hints = Vec::with_capacity(ops.len());
    let mut inputs = Vec::with_capacity(ops.len());
    for op in ops {
        typed.entry(op.pane.pane).or_default().push(op.typed);
        hints.push((op.pane.pane, op.pane.hint));
        inputs.push((op.pane.pane, op.input));
    }
    let delivered = tmux
        .panes()
        .deliver_batch(&inputs, mode, Some(deadline))
        .await
        .map_err(|error| engine_error(tmux.server_name(), error, "call list_panes"))?;
    let outcomes = delivered
        .outcomes
        .into_iter()
        .zip(hints)
        .map(|(outcome, (pane, hint))| match outcome {
            BatchOutcome::Failed(TmuxPaneError::Refused(message)) => {
                BatchOutcome::Failed(ToolError::new(
                    ToolErrorKind::Conflict,
                    format!("tmux refused the input: {message}"),
                    "call list_panes to check the pane",
                ))
            }
            BatchOutcome::Failed(error) => BatchOutcome::Failed(tmux.pane_error(pane, hint, error)),
            BatchOutcome::Delivered => BatchOutcome::Delivered,
            BatchOutcome::NotRun => BatchOutcome::NotRun,
            BatchOutcome::TimedOut => BatchOutcome::TimedOut,
        })
        .collect();
    let positions = delivered
        .positions
        .into_iter()
        .map(|(pane, cursor)| {
            let echo = typed.get(&pane).map(|t| t.join("\n")).unwrap_or_default();
            (
                pane.to_string(),
                OutputPosition::new(cursor, &echo).encode(),
            )
        })
        .collect();
    Ok(DeliveredBatch {
        outcomes,
        stopped_at: delivered.stopped_at,
        positions,
    })
}

/// `ops` on a Zellij server, one after the other, each as `send_keys` delivers it; under
/// `stop` nothing after the first failure (a time-out included) is sent. A pane's position is
/// the mark before its first input, with all the batch typed into it.
pub(crate) async fn on_zellij(
    zellij: &ZellijAccess<'_>,
    ops: Vec<BatchInput<ZellijPanes>>,
    stop: bool,
    deadline: Instant,
) -> Result<DeliveredBatch, ToolError> {
    let mut batch = DeliveredBatch::default();
    let mut marks = BTreeMap::new();
    for (index, op) in ops.iter().enumerate() {
        if batch.stopped_at.is_some() {
            batch.outcomes.push(BatchOutcome::NotRun);
            continue;
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        let sent = tokio::time::timeout(remaining, op.pane.mux.deliver(&op.pane.pane, &op.input));
        let outcome = match sent.await {
            Ok(Ok(mark)) => {
                let (_, echo) = marks.entry(op.pane.pane.to_string()).or_insert_with(|| {
                    (
                        mark.map(|mark| (op.pane.mux.session().clone(), mark)),
                        String::new(),
                    )
                });
                echo.push_str(&op.typed);
                echo.push('\n');
                BatchOutcome::Delivered
            }
            Ok(Err(error)) => BatchOutcome::Failed(zellij.error(error)),
            Err(_) => BatchOutcome::TimedOut,
        };
        if stop && !matches!(outcome, BatchOutcome::Delivered) {
            batch.stopped_at = Some(index);
        }
        batch.outcomes.push(outcome);
    }
    batch.positions = marks
        .into_iter()
        .filter_map(|(pane, (mark, echo))| {
            let (session, mark) = mark?;
            let server = zellij.server_name();
            let position = ZellijPosition::new(server, session.as_str(), &pane, mark, &echo);
            Some((pane, position.encode()))
        })
        .collect();
    Ok(batch)
}
