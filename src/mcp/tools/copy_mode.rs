//! Copy mode: tmux's scrollback viewer inside a pane. Entering it freezes what a watching
//! human sees in that pane (the program keeps running; its new output shows again on exit).
//!
//! Reading scrollback does not need copy mode: capture_pane reads any range directly.

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::pane_ops::op_error;
use muxgate_tmux::typed::copy_mode::ModeState;

/// Most lines one call scrolls.
const MAX_SCROLL: u32 = 100_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EnterCopyModeInput {
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
pub(crate) struct ExitCopyModeInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane.
    pub target: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CopyModeOutput {
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
        let target = tmux.target(&input.target).await?;
        if input.scroll_up > MAX_SCROLL {
            return Err(ToolError::invalid_arguments(
                format!("scroll_up is larger than {MAX_SCROLL}"),
                "scroll fewer lines (the history is usually a few thousand lines)",
            ));
        }
        let pane = tmux.pane_of(&target).await?;
        let state = tmux
            .copy_mode()
            .enter(pane, input.scroll_up)
            .await
            .map_err(|e| op_error(&tmux, e, &target, "call list_panes"))?;
        Ok(copy_mode_output(tmux.server_name(), state))
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
        let target = tmux.target(&input.target).await?;
        let pane = tmux.pane_of(&target).await?;
        let state = tmux
            .copy_mode()
            .exit(pane)
            .await
            .map_err(|e| op_error(&tmux, e, &target, "call list_panes"))?;
        Ok(copy_mode_output(tmux.server_name(), state))
    }
}

fn copy_mode_output(server: &str, state: ModeState) -> Json<CopyModeOutput> {
    Json(CopyModeOutput {
        server: server.to_owned(),
        pane_id: state.pane_id,
        in_mode: state.in_mode,
        scroll_position: state.scroll_position,
        mode: state.mode,
    })
}
