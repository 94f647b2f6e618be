//! `pipe_pane`: append everything a pane's program prints to a file on the gateway's host.

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::mcp::McpServer;
use crate::mcp::access::list_hint;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::pane_ops::quote_error;
use muxgate_tmux::EngineError;
use muxgate_tmux::ops::pipe::PipePath;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PipePaneInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane.
    pub target: String,
    /// Absolute path of the file to append to (created if missing); omit to stop.
    #[serde(default)]
    pub output_path: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PipePaneOutput {
    pub server: String,
    pub pane_id: String,
    /// Whether output is being piped afterwards.
    pub piping: bool,
    /// The file output is appended to, when piping.
    pub output_path: Option<String>,
}

#[tool_router(router = pipe_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "pipe_pane",
        description = "Append a pane's output to a file (`output_path`), or stop (omit it).\n\n\
            tmux runs `cat >> path` on the gateway's host as the tmux server's user. Replaces the \
            pane's earlier pipe. To read output once use capture_pane.",
        annotations(
            title = "Pipe pane output to a file",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn pipe_pane(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<PipePaneInput>,
    ) -> Result<Json<PipePaneOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = tmux.target(&input.target).await?;
        let path = input
            .output_path
            .as_deref()
            .map(PipePath::parse)
            .transpose()
            .map_err(|e| {
                ToolError::invalid_arguments(
                    e.to_string(),
                    "pass an absolute file path, or omit output_path to stop piping",
                )
            })?;
        let pane = tmux.pane_of(&target).await?;
        tmux.pipes()
            .pipe(pane, path.as_ref())
            .await
            .map_err(|e| match e {
                EngineError::Quote(e) => quote_error(e),
                e => tmux.error(e, list_hint(&target)),
            })?;
        Ok(Json(PipePaneOutput {
            server: tmux.server_name().to_owned(),
            pane_id: pane.to_string(),
            piping: path.is_some(),
            output_path: path.map(|p| p.as_str().to_owned()),
        }))
    }
}
