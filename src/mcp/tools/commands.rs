//! `list_commands` and `get_command_output`: a pane's commands as records, read from the
//! command ledger its output stream keeps ([`muxgate_mux::ledger`]).
//!
//! A pane's ledger records while its stream is kept: from the first call on the pane that keeps
//! it (these, `get_pane_state`, `wait_for_state`, `run_command`) until
//! [`muxgate_tmux::LEDGER_KEEP`] after the last. Reading it asks tmux nothing once recording
//! runs.

use std::sync::Arc;
use std::time::SystemTime;

use muxgate_mux::ledger::CommandRecord;
use muxgate_mux::lines::LineAssembler;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::watch::{KEEP_WAIT, keep, unix_ms};
use crate::mcp::McpServer;
use crate::mcp::access::TmuxAccess;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use muxgate_tmux::ops::capture::{DEFAULT_MAX_LINES, shape_capture};
use muxgate_tmux::output::PaneStream;

/// Records listed by default, and at most.
const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 100;
/// Most output rows a client may ask for at once.
const MAX_MAX_LINES: usize = 10_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListCommandsInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane.
    pub target: String,
    /// Newest records returned (default 20, max 100).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// One command the pane's shell ran.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct CommandInfo {
    /// Pass to get_command_output.
    pub id: u64,
    /// As sent by the shell or run_command, else as echoed when typed.
    pub command: Option<String>,
    pub cwd: Option<String>,
    /// Start, Unix time in milliseconds.
    pub started_ms: u64,
    /// Run time so far, for a running command.
    pub duration_ms: u64,
    /// Absent while running, or when the shell did not report it.
    pub exit_status: Option<i32>,
    pub running: Option<bool>,
    pub output_bytes: u64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ListCommandsOutput {
    pub pane_id: String,
    /// Unix ms; commands before it are not known.
    pub recording_since_ms: u64,
    /// The shell marks its prompts (OSC 133); without that only run_command's runs are recorded.
    pub shell_integration: bool,
    pub at_prompt: bool,
    pub cwd: Option<String>,
    /// Oldest first.
    pub commands: Vec<CommandInfo>,
    /// Unix ms: output unseen since (a lost link).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unseen_since_ms: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetCommandOutputInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane.
    pub target: String,
    /// From list_commands; default: the latest.
    #[serde(default)]
    pub id: Option<u64>,
    /// Most lines returned, the last kept (default 500, max 10000).
    #[serde(default)]
    pub max_lines: Option<usize>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct GetCommandOutputOutput {
    pub pane_id: String,
    pub id: u64,
    pub command: Option<String>,
    pub exit_status: Option<i32>,
    pub running: Option<bool>,
    /// The command's own output as lines (no prompt, no echo).
    pub output: String,
    pub line_count: usize,
    /// Bytes at its start the pane's stream no longer holds (it keeps the last MiB).
    pub lost_bytes: Option<u64>,
    pub truncated: bool,
    pub truncated_lines: usize,
    pub truncated_bytes: usize,
}

/// Starts or refreshes recording of `target`'s pane and returns its stream.
async fn recorded(
    tmux: &TmuxAccess<'_>,
    target: &str,
) -> Result<(muxgate_tmux::PaneId, Arc<PaneStream>), ToolError> {
    let pane = tmux.pane_named(target).await?;
    let stream = keep(tmux, pane, Instant::now() + KEEP_WAIT).await?;
    Ok((pane, stream))
}

fn info(record: &CommandRecord, stream_end: u64) -> CommandInfo {
    let ended = record.ended.unwrap_or_else(SystemTime::now);
    CommandInfo {
        id: record.id,
        command: record.command.clone(),
        cwd: record.cwd.clone(),
        started_ms: unix_ms(record.started),
        duration_ms: u64::try_from(
            ended
                .duration_since(record.started)
                .unwrap_or_default()
                .as_millis(),
        )
        .unwrap_or(u64::MAX),
        exit_status: record.exit_status,
        running: (!record.finished()).then_some(true),
        output_bytes: record.output_to.unwrap_or(stream_end) - record.output_from,
    }
}

fn check_range(name: &str, value: usize, max: usize) -> Result<(), ToolError> {
    if (1..=max).contains(&value) {
        return Ok(());
    }
    Err(ToolError::invalid_arguments(
        format!("{name} must be between 1 and {max}, got {value}"),
        format!("pass a {name} from 1 to {max}"),
    ))
}

#[tool_router(router = commands_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "list_commands",
        description = "List what a pane's shell ran: command, cwd, exit status, timing.\n\n\
            Recorded from the first call on a pane (`recording_since_ms`): all of an OSC 133 \
            shell's, else run_command's.",
        annotations(
            title = "List a pane's commands",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub(crate) async fn list_commands(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ListCommandsInput>,
    ) -> Result<Json<ListCommandsOutput>, ToolError> {
        let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
        check_range("limit", limit, MAX_LIMIT)?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let (pane, stream) = recorded(&tmux, &input.target).await?;
        let end = stream.end_offset();
        let unseen_since_ms = stream.unseen_since().map(unix_ms);
        let output = stream.with_ledger(|ledger| {
            let mut commands: Vec<CommandInfo> = ledger
                .records()
                .rev()
                .take(limit)
                .map(|r| info(r, end))
                .collect();
            commands.reverse();
            ListCommandsOutput {
                pane_id: pane.to_string(),
                recording_since_ms: stream.since_unix_ms(),
                shell_integration: ledger.shell_integrated(),
                at_prompt: ledger.at_prompt(),
                cwd: ledger.cwd().map(str::to_owned),
                commands,
                unseen_since_ms,
            }
        });
        Ok(Json(output))
    }

    #[tool(
        name = "get_command_output",
        description = "Read one recorded command's own output (no prompt, no echo).\n\n\
            Also while it runs.",
        annotations(
            title = "Read a command's output",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub(crate) async fn get_command_output(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<GetCommandOutputInput>,
    ) -> Result<Json<GetCommandOutputOutput>, ToolError> {
        let max_lines = input.max_lines.unwrap_or(DEFAULT_MAX_LINES);
        check_range("max_lines", max_lines, MAX_MAX_LINES)?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let (pane, stream) = recorded(&tmux, &input.target).await?;
        let record = stream.with_ledger(|ledger| match input.id {
            Some(id) => ledger.record(id).cloned(),
            None => ledger.records().next_back().cloned(),
        });
        let Some(record) = record else {
            let what = input
                .id
                .map_or_else(|| "no command".to_owned(), |id| format!("no command {id}"));
            return Err(ToolError::not_found(
                format!("{what} recorded in {pane}"),
                "call list_commands to see the recorded commands (recording starts at the first call on a pane)",
            ));
        };
        let to = record.output_to.unwrap_or_else(|| stream.end_offset());
        let (bytes, lost) = stream.bytes(record.output_from..to);
        let lines: Vec<Vec<u8>> = LineAssembler::lines_of(&bytes)
            .into_iter()
            .map(String::into_bytes)
            .collect();
        let shaped = shape_capture(&lines, max_lines, false);
        let (output, truncated_bytes) = tmux.budget().cap_output(&shaped.text);
        Ok(Json(GetCommandOutputOutput {
            pane_id: pane.to_string(),
            id: record.id,
            command: record.command,
            exit_status: record.exit_status,
            running: (record.ended.is_none()).then_some(true),
            output,
            line_count: shaped.lines,
            lost_bytes: (lost > 0).then_some(lost),
            truncated: shaped.truncated() || truncated_bytes > 0,
            truncated_lines: shaped.truncated_lines,
            truncated_bytes,
        }))
    }
}
