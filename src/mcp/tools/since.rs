//! `capture_since`: the rows a pane printed since the caller last looked.
//!
//! Reading the rows since a cursor is the tmux crate's ([`muxgate_tmux::typed::since`]: the
//! reads, each the pane's state and its rows together, and the cursor logic of
//! [`muxgate_tmux::ops::since`]). This module checks the cursor against the server and the
//! pane, words what went wrong, and shapes the answer to the caller's budget.

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::op_failure;
use crate::mcp::McpServer;
use crate::mcp::access::TmuxAccess;
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use muxgate_tmux::PaneId;
use muxgate_tmux::ops::capture::{DEFAULT_MAX_LINES, shape_capture};
use muxgate_tmux::ops::since::SinceCursor;
use muxgate_tmux::typed::op_error::{OpError, PaneOpError};
use muxgate_tmux::typed::since::SinceError;

/// Most rows a client may ask for at once.
const MAX_MAX_LINES: usize = 10_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CaptureSinceInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane. Optional with `cursor`.
    #[serde(default)]
    pub target: Option<String>,
    /// `cursor` from the previous call; absent: start now (returns the visible rows).
    #[serde(default)]
    pub cursor: Option<String>,
    /// Most lines returned, the last kept (default 500, max 10000).
    #[serde(default)]
    pub max_lines: Option<usize>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct CaptureSinceOutput {
    pub pane_id: String,
    /// The complete rows that appeared since the cursor, oldest first, joined with `\n` (rows as
    /// the terminal shows them: a long line wrapped by the terminal is several rows).
    pub lines: String,
    /// How many rows `lines` holds.
    pub line_count: usize,
    /// The row the terminal cursor is on (a prompt, or a line still being written); it is
    /// returned again as part of `lines` once complete.
    pub partial_line: String,
    /// Pass this to the next capture_since call on the same pane.
    pub cursor: String,
    /// Rows were missed: tmux trimmed or cleared the history, or the screen was cleared, before
    /// they were read. `lines` then holds the visible rows above the terminal cursor.
    pub lines_missed: bool,
    /// Rows or bytes were cut to respect `max_lines` or your output budget (oldest first).
    pub truncated: bool,
    pub truncated_lines: usize,
    pub truncated_bytes: usize,
}

/// Reads the rows the pane `input` names printed since its cursor, keeping the last
/// `max_lines` (checked).
async fn capture_since(
    tmux: &TmuxAccess<'_>,
    input: &CaptureSinceInput,
    max_lines: usize,
) -> Result<CaptureSinceOutput, ToolError> {
    let cursor = input
        .cursor
        .as_deref()
        .map(|text| {
            SinceCursor::decode(text).map_err(|e| {
                ToolError::invalid_arguments(
                    format!("cursor: {e}"),
                    "pass a cursor exactly as capture_since returned it, or omit it to start over",
                )
            })
        })
        .transpose()?;
    if let Some(cursor) = &cursor
        && cursor.server != tmux.server_name()
    {
        return Err(ToolError::invalid_arguments(
            "cursor: it was made on another server",
            "pass the cursor with the server it came from, or omit it to start over",
        ));
    }
    let pane = match (&input.target, &cursor) {
        (Some(target), cursor) => {
            let pane = tmux.pane_named(target).await?;
            if let Some(cursor) = cursor
                && cursor.pane_id() != pane
            {
                return Err(ToolError::invalid_arguments(
                    format!("cursor: it was made for {}, not {pane}", cursor.pane_id()),
                    "pass the cursor with its own pane, or omit it to start over",
                ));
            }
            pane
        }
        (None, Some(cursor)) => tmux.pane_named(&cursor.pane_id().to_string()).await?,
        (None, None) => {
            return Err(ToolError::invalid_arguments(
                "give a target, a cursor, or both",
                "call list_panes to see pane ids",
            ));
        }
    };

    let read = tmux
        .since()
        .rows_since(pane, cursor.as_ref())
        .await
        .map_err(|e| since_error(tmux, pane, e))?;
    let shaped = shape_capture(&read.rows, max_lines, false);
    let (lines, truncated_bytes) = tmux.budget().cap_output(&shaped.text);
    Ok(CaptureSinceOutput {
        pane_id: pane.to_string(),
        lines,
        line_count: shaped.lines,
        partial_line: read.partial_line,
        cursor: read.next.encode(),
        lines_missed: read.lines_missed,
        truncated: shaped.truncated() || truncated_bytes > 0,
        truncated_lines: shaped.truncated_lines,
        truncated_bytes,
    })
}

/// Why the rows since a cursor could not be read, as an error for the model.
pub(crate) fn since_error(tmux: &TmuxAccess<'_>, pane: PaneId, error: SinceError) -> ToolError {
    match error {
        SinceError::Read(PaneOpError::Op(OpError::Quote(e))) => ToolError::new(
            ToolErrorKind::Internal,
            format!("capture_since command: {e}"),
            "retry; report it if it persists",
        ),
        SinceError::Read(PaneOpError::Op(e)) => {
            op_failure(tmux.server_name(), e, "call list_panes")
        }
        SinceError::Read(PaneOpError::Missing(pane)) => ToolError::not_found(
            format!("pane {pane} not found"),
            "call list_panes to see pane ids",
        ),
        SinceError::FullScreen => ToolError::new(
            ToolErrorKind::Conflict,
            format!("{pane} shows a full-screen program: it keeps no history to read from"),
            "use capture_pane to read its screen, or wait_for_text to wait for a change",
        ),
        SinceError::Respawned { while_read: false } => ToolError::new(
            ToolErrorKind::Conflict,
            format!("{pane} was respawned since this cursor was made: its output started over"),
            "call capture_since without a cursor to start over (capture_pane shows the screen)",
        ),
        SinceError::Respawned { while_read: true } => ToolError::new(
            ToolErrorKind::Conflict,
            format!("{pane} was respawned while it was read"),
            "call capture_since without a cursor to start over",
        ),
    }
}

#[tool_router(router = since_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "capture_since",
        description = "Read only the rows a pane printed since your last capture_since.\n\n\
            Returns complete new rows, the unfinished row as `partial_line`, and a `cursor` for \
            the next call. `lines_missed: true`: rows were dropped unread (`lines`: the screen). \
            Refused after a respawn (omit `cursor` to restart) and for full-screen \
            programs (use capture_pane).",
        annotations(
            title = "Capture new rows since a cursor",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub(crate) async fn capture_since(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<CaptureSinceInput>,
    ) -> Result<Json<CaptureSinceOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let max_lines = input.max_lines.unwrap_or(DEFAULT_MAX_LINES);
        if !(1..=MAX_MAX_LINES).contains(&max_lines) {
            return Err(ToolError::invalid_arguments(
                format!("max_lines must be between 1 and {MAX_MAX_LINES}, got {max_lines}"),
                "pass a smaller max_lines",
            ));
        }
        capture_since(&tmux, &input, max_lines).await.map(Json)
    }
}
