//! Copy mode: tmux's scrollback viewer inside a pane. Entering it freezes what a watching
//! human sees in that pane (the program keeps running; its new output shows again on exit).
//!
//! Reading scrollback does not need copy mode: capture_pane reads any range directly.

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::mcp::McpServer;
use crate::mcp::access::{engine_error, list_hint, parse_target};
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::pane_ops::{not_found, quote_error};
use crate::mux::tmux::format::{flag, row_format, split_row};
use crate::mux::tmux::{BatchMode, CommandOutcome, EngineError, TmuxCommand};

/// Most lines one call scrolls.
const MAX_SCROLL: u32 = 100_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnterCopyModeInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane.
    pub target: String,
    /// Lines to scroll up into the history after entering.
    #[serde(default)]
    pub scroll_up: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExitCopyModeInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane.
    pub target: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CopyModeOutput {
    pub server: String,
    pub pane_id: String,
    /// Whether the pane is in a mode afterwards, which one, and how far it is scrolled back.
    pub in_mode: bool,
    pub mode: String,
    pub scroll_position: u32,
}

#[tool_router(router = copy_mode_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "enter_copy_mode",
        description = "Put a pane into copy mode (scrollback viewer), optionally scrolled up.\n\n\
            Humans see the pane frozen; send_keys goes to copy mode until exit_copy_mode. To read \
            scrollback use capture_pane.",
        annotations(
            title = "Enter copy mode",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn enter_copy_mode(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<EnterCopyModeInput>,
    ) -> Result<Json<CopyModeOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = parse_target(&input.target)?;
        if input.scroll_up > MAX_SCROLL {
            return Err(ToolError::invalid_arguments(
                format!("scroll_up is larger than {MAX_SCROLL}"),
                "scroll fewer lines (the history is usually a few thousand lines)",
            ));
        }
        let pane = tmux.pane_of(&target).await?;
        let mut commands = vec![
            TmuxCommand::new("copy-mode")
                .target(pane)
                .build()
                .map_err(quote_error)?,
        ];
        if input.scroll_up > 0 {
            commands.push(
                TmuxCommand::new("send-keys")
                    .flag("-X")
                    .opt("-N", input.scroll_up.to_string())
                    .target(pane)
                    .arg("scroll-up")
                    .build()
                    .map_err(quote_error)?,
            );
        }
        commands.push(mode_state(pane)?);
        let outcomes = tmux
            .run_batch(commands, BatchMode::StopOnError, None)
            .await?;
        let state = last_lines(&tmux, outcomes, &target)?;
        copy_mode_output(tmux.server_name(), &state, &target)
    }

    #[tool(
        name = "exit_copy_mode",
        description = "Leave copy mode (or any tmux mode) in a pane, back to the live program.\n\n\
            No-op if not in a mode.",
        annotations(
            title = "Exit copy mode",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn exit_copy_mode(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ExitCopyModeInput>,
    ) -> Result<Json<CopyModeOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = parse_target(&input.target)?;
        let pane = tmux.pane_of(&target).await?;
        let commands = vec![
            TmuxCommand::new("copy-mode")
                .flag("-q")
                .target(pane)
                .build()
                .map_err(quote_error)?,
            mode_state(pane)?,
        ];
        let outcomes = tmux
            .run_batch(commands, BatchMode::StopOnError, None)
            .await?;
        let state = last_lines(&tmux, outcomes, &target)?;
        copy_mode_output(tmux.server_name(), &state, &target)
    }
}

const MODE_FIELDS: [&str; 4] = ["pane_id", "pane_in_mode", "scroll_position", "pane_mode"];

fn mode_state(pane: crate::mux::tmux::PaneId) -> Result<TmuxCommand, ToolError> {
    TmuxCommand::new("display-message")
        .flag("-p")
        .target(pane)
        .arg(row_format(&MODE_FIELDS))
        .build()
        .map_err(quote_error)
}

/// The last command's lines, or the first failure of the chain.
fn last_lines(
    tmux: &crate::mcp::access::TmuxAccess<'_>,
    outcomes: Vec<CommandOutcome>,
    target: &crate::mux::tmux::target::Target,
) -> Result<Vec<Vec<u8>>, ToolError> {
    let mut last = Vec::new();
    for outcome in outcomes {
        match outcome {
            CommandOutcome::Ok(lines) => last = lines,
            CommandOutcome::Failed(message) => {
                return Err(engine_error(
                    tmux.server_name(),
                    EngineError::Command(message),
                    list_hint(target),
                ));
            }
            CommandOutcome::NotRun => return Err(not_found(target)),
        }
    }
    Ok(last)
}

fn copy_mode_output(
    server: &str,
    lines: &[Vec<u8>],
    target: &crate::mux::tmux::target::Target,
) -> Result<Json<CopyModeOutput>, ToolError> {
    let f = lines
        .first()
        .and_then(|line| split_row(line, MODE_FIELDS.len()))
        .ok_or_else(|| not_found(target))?;
    Ok(Json(CopyModeOutput {
        server: server.to_owned(),
        pane_id: f[0].clone(),
        in_mode: flag(&f[1]),
        scroll_position: f[2].parse().unwrap_or(0),
        mode: f[3].clone(),
    }))
}
