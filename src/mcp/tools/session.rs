//! Tools that act on tmux sessions.

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::OWNER_OPTION;
use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mux::tmux::TmuxCommand;
use crate::mux::tmux::format::{row_format, split_row};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSessionsInput {
    /// Configured tmux server name (from list_servers); may be omitted when the gateway has
    /// only one.
    #[serde(default)]
    pub server: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ListSessionsOutput {
    pub server: String,
    pub sessions: Vec<SessionInfo>,
}

/// One tmux session.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionInfo {
    /// Session id (`$N`): the stable way to target it.
    pub id: String,
    pub name: String,
    /// Number of windows.
    pub windows: u32,
    /// Number of clients (humans or programs) attached to it.
    pub attached_clients: u32,
    /// Creation time, seconds since the Unix epoch.
    pub created: u64,
    /// Whether it was created through this gateway by you.
    pub created_by_you: bool,
}

const SESSION_FIELDS: [&str; 6] = [
    "session_id",
    "session_windows",
    "session_attached",
    "session_created",
    OWNER_OPTION,
    "session_name",
];

#[tool_router(router = session_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "list_sessions",
        description = "List the tmux sessions of a server that you may see.\n\n\
            Operates on one configured server (`server`, from list_servers). Read-only: one \
            tmux command, no change to any human's view, focus or window sizes. Returns each \
            session's id (`$N`), name, window count, attached clients and creation time; \
            target sessions by id (or exact name) in other tools. Sessions outside your access \
            are not listed. Next: list_windows or list_panes for what is inside.",
        annotations(
            title = "List sessions",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_sessions(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ListSessionsInput>,
    ) -> Result<Json<ListSessionsOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref())?;
        let command = TmuxCommand::new("list-sessions")
            .opt("-F", row_format(&SESSION_FIELDS))
            .build()
            .map_err(|e| ToolError::invalid_arguments(e.to_string(), ""))?;
        let rows = tmux.run(command, "call list_servers").await?;
        let sessions = rows
            .iter()
            .filter_map(|row| split_row(row, SESSION_FIELDS.len()))
            .filter(|f| tmux.can_see(&f[5], &f[4]))
            .map(|f| SessionInfo {
                id: f[0].clone(),
                windows: f[1].parse().unwrap_or(0),
                attached_clients: f[2].parse().unwrap_or(0),
                created: f[3].parse().unwrap_or(0),
                created_by_you: f[4] == call.sub(),
                name: f[5].clone(),
            })
            .collect();
        Ok(Json(ListSessionsOutput {
            server: tmux.server_name().to_owned(),
            sessions,
        }))
    }
}
