//! `get_pane_state`: what a pane is doing — running, waiting for input, at its prompt, quiet for
//! how long, dead — from evidence only, one body for both backends; what each backend reads
//! is [`crate::mcp::pane_state`].

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::pane_access::PaneAccess;
use crate::mcp::pane_state::PaneStateOutput;
use crate::mcp::shared_tool::{MuxTool, Reply};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetPaneStateInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane. Zellij: `[SESSION:]terminal_N`.
    pub target: String,
}

#[tool_router(router = state_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "get_pane_state",
        description = "What a pane is doing: foreground process, waiting_for_input, \
            idle_for_ms, at_prompt, an agent CLI's state (agent_status: blocked, idle…), \
            alternate screen, dead.\n\n\
            A field without evidence is left out, never guessed.",
        annotations(
            title = "Get a pane's state",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub(crate) async fn get_pane_state(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<GetPaneStateInput>,
    ) -> Result<Json<PaneStateOutput>, ToolError> {
        self.serve(&call, input).await.map(Json)
    }
}

impl MuxTool for GetPaneStateInput {
    type Answer = PaneStateOutput;

    fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    async fn act<A: PaneAccess>(self, gateway: &McpServer, access: A) -> Reply<Self> {
        let pane = access.pane(&self.target).await?;
        access.pane_state(gateway, &pane).await
    }
}
