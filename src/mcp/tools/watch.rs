//! What the tools that wait on a pane share: which pane a target means, the pane's state (read
//! through [`muxgate_tmux::typed::pane_state`]), the wait budget (a concurrent-wait slot and a
//! clamped timeout), and the error a cancelled wait ends with.
//!
//! Waiting itself never asks tmux anything: it sleeps on the pane's output subscription (see
//! [`muxgate_tmux::output`]) until output arrives, the deadline passes or the client cancels.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use muxgate_mux::foreground::Foreground;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::support::op_failure;
use crate::mcp::access::{PANES_HINT, TmuxAccess, engine_error};
use crate::mcp::error::{ToolError, ToolErrorKind};
use muxgate_tmux::output::PaneStream;
use muxgate_tmux::typed::op_error::{OpError, PaneOpError};
use muxgate_tmux::typed::pane_state::PaneState;
use muxgate_tmux::{EngineError, OutputSubscription, PaneId};

// The MCP edge of [`muxgate_tmux::typed::pane_state`]: the typed read, with its errors as the
// wait tools report them.
/// Reads `pane`'s state; for a pane just dead, waits a little for tmux to learn how its
/// program ended (see [`muxgate_tmux::typed::pane_state::TmuxPaneStates::read_settled`]).
pub(crate) async fn read_settled_state(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
) -> Result<PaneState, ToolError> {
    tmux.pane_states()
        .read_settled(pane)
        .await
        .map_err(|e| state_error(tmux, e))
}

/// Reads `pane`'s state.
pub(crate) async fn read_state(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
) -> Result<PaneState, ToolError> {
    tmux.pane_states()
        .read(pane)
        .await
        .map_err(|e| state_error(tmux, e))
}

/// The foreground process of the pane `state` describes, as the host of its server tells it.
pub(crate) async fn foreground_of_state(
    tmux: &TmuxAccess<'_>,
    state: &PaneState,
) -> Option<Foreground> {
    state.foreground(&*tmux.host()).await
}

pub(crate) fn state_error(tmux: &TmuxAccess<'_>, error: PaneOpError) -> ToolError {
    match error {
        PaneOpError::Op(OpError::Quote(e)) => {
            ToolError::new(ToolErrorKind::Internal, e.to_string(), "report this")
        }
        PaneOpError::Op(e) => op_failure(tmux.server_name(), e, PANES_HINT),
        PaneOpError::Missing(pane) => missing_pane(pane),
    }
}

/// A pane's foreground process, as the host its server runs on tells it (a workspace's tells
/// nothing: its pids belong to the sandbox's pid namespace); none for a dead pane.
pub(crate) async fn foreground_of(
    tmux: &TmuxAccess<'_>,
    server_pid: u32,
    pane_pid: u32,
    tty: &str,
    dead: bool,
) -> Option<Foreground> {
    if dead {
        return None;
    }
    tmux.host().foreground(server_pid, pane_pid, tty).await
}

/// The error for a pane that does not exist (any more).
pub(crate) fn missing_pane(pane: PaneId) -> ToolError {
    ToolError::not_found(format!("no pane {pane} on this server"), PANES_HINT)
}

/// Subscribes to `pane`'s output from now on, giving up at `deadline` (the first wait on a
/// session waits for its output connection to attach).
pub(crate) async fn subscribe(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    deadline: Instant,
) -> Result<OutputSubscription, ToolError> {
    tmux.server
        .subscribe(&tmux.caller, pane, deadline)
        .await
        .map_err(|e| engine_error(tmux.server_name(), e, PANES_HINT))
}

/// How long starting to record a pane may wait for its output connection, for calls that read
/// a pane's state rather than wait on it.
pub(crate) const KEEP_WAIT: Duration = Duration::from_secs(10);

/// A time as Unix milliseconds (0 before the epoch).
pub(crate) fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Keeps `pane`'s command ledger recording (starting it if needed) and returns its stream.
pub(crate) async fn keep(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    deadline: Instant,
) -> Result<Arc<PaneStream>, ToolError> {
    tmux.server
        .keep(&tmux.caller, pane, deadline)
        .await
        .map_err(|e| engine_error(tmux.server_name(), e, PANES_HINT))
}

/// Runs one of a wait's tmux steps (resolving its target, reading the pane's state), giving up
/// at the wait's own deadline with the same error as a subscription that could not begin in
/// time.
pub(crate) async fn by_deadline<T>(
    tmux: &TmuxAccess<'_>,
    deadline: Instant,
    step: impl Future<Output = Result<T, ToolError>>,
) -> Result<T, ToolError> {
    let started = Instant::now();
    tokio::time::timeout_at(deadline, step)
        .await
        .unwrap_or_else(|_| {
            let timeout = EngineError::Timeout {
                server: tmux.server_name().to_owned(),
                after: started.elapsed(),
            };
            Err(engine_error(tmux.server_name(), timeout, ""))
        })
}

/// What a wait ends with when the client cancelled the call (the client no longer reads it).
pub(crate) fn cancelled() -> ToolError {
    ToolError::new(
        ToolErrorKind::Cancelled,
        "the call was cancelled by the client",
        "none needed",
    )
}

/// Runs `work` until it ends, or ends it with [`cancelled`] when the client cancels first (for
/// work that does not watch `cancel` itself).
pub(crate) async fn until_client_cancels<T>(
    cancel: &CancellationToken,
    work: impl Future<Output = Result<T, ToolError>>,
) -> Result<T, ToolError> {
    tokio::select! {
        () = cancel.cancelled() => Err(cancelled()),
        result = work => result,
    }
}

/// Milliseconds since `started`, for results.
pub(crate) fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}
