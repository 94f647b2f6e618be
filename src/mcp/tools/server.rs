//! Tools that act on the gateway's tmux servers as a whole.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::{TmuxServer, TmuxSocket};
use crate::mcp::McpServer;
use crate::mcp::error::ToolError;

/// `list_servers` takes no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListServersInput {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ListServersOutput {
    /// Configured servers in name order.
    pub servers: Vec<ServerSummary>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ServerSummary {
    /// The value to pass as `server` to other tools.
    pub name: String,
    /// How the gateway reaches this server, as configured.
    pub socket: SocketSummary,
    /// Whether the operator marked this server as allowed to be absent (not running).
    pub allow_absent: bool,
    /// Always `not_checked`: this listing reports configuration and does not contact tmux.
    pub reachability: Reachability,
}

/// The configured socket of a server.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SocketSummary {
    /// The user's default tmux socket.
    Default,
    /// A named socket in tmux's socket directory (`tmux -L`).
    Name { name: String },
    /// A socket at a path (`tmux -S`).
    Path { path: String },
}

/// Whether the server's reachability was checked for this answer.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reachability {
    NotChecked,
}

impl ServerSummary {
    fn new(name: &str, server: &TmuxServer) -> Self {
        let socket = match &server.socket {
            TmuxSocket::Default => SocketSummary::Default,
            TmuxSocket::Name(name) => SocketSummary::Name { name: name.clone() },
            TmuxSocket::Path(path) => SocketSummary::Path {
                path: path.display().to_string(),
            },
        };
        Self {
            name: name.to_owned(),
            socket,
            allow_absent: server.allow_absent,
            reachability: Reachability::NotChecked,
        }
    }
}

#[tool_router(router = server_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "list_servers",
        description = "List the tmux servers this gateway is configured to drive, by name.\n\n\
            Every other tool selects a server with its `server` argument, using a name from this \
            list; socket paths are never passed by clients. Read-only: it reads the gateway's \
            configuration, does not contact tmux, and changes nothing in any tmux client's view. \
            `reachability` is `not_checked` for every entry, so a listed server may not be \
            running; tools that act on it report that. Call it once at the start: its answer \
            changes only when the operator changes the configuration.",
        annotations(
            title = "List tmux servers",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    fn list_servers(
        &self,
        Parameters(ListServersInput {}): Parameters<ListServersInput>,
    ) -> Result<Json<ListServersOutput>, ToolError> {
        let servers = self
            .state()
            .config
            .tmux
            .servers
            .iter()
            .map(|(name, server)| ServerSummary::new(name.as_str(), server))
            .collect();
        Ok(Json(ListServersOutput { servers }))
    }
}
