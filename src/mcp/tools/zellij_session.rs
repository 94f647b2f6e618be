//! Read-only Zellij tools that show the workspace before acting: a Zellij server's sessions
//! and panes as `list_sessions` and `list_panes` read them, and the attached clients and the
//! live layout (list_servers names the Zellij servers too). None changes anything or moves focus.

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::zellij_objects::{ZellijClientInfo, ZellijPaneInfo, ZellijSessionInfo};
use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::listing::{JsonRow, Listed, ListsPanes, ListsSessions, PaneQuery};
use crate::mcp::row_object::object;
use crate::mcp::zellij_access::ZellijAccess;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ZellijSessionInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ZellijListClientsOutput {
    pub server: String,
    pub session: String,
    /// Attached clients (humans' terminals); empty when nobody is attached.
    pub clients: Vec<ZellijClientInfo>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ZellijDumpLayoutOutput {
    pub server: String,
    pub session: String,
    /// The live layout in Zellij's KDL layout format.
    pub layout: String,
    /// Bytes cut from the start to respect your output limit.
    pub truncated_bytes: usize,
}

impl ListsSessions for ZellijAccess<'_> {
    /// Each session the caller may see, as its name, age and whether it exited.
    async fn session_rows(&self) -> Result<Vec<JsonRow>, ToolError> {
        self.backend
            .list_sessions()
            .await
            .map_err(|e| self.error(e))?
            .into_iter()
            .filter(|s| self.can_see(&s.name))
            .map(|s| {
                object(&ZellijSessionInfo {
                    name: s.name.to_string(),
                    created_ago: s.created_ago,
                    exited: s.exited,
                })
            })
            .collect()
    }
}

impl ListsPanes for ZellijAccess<'_> {
    /// The panes of one session (`target`, default the server's), as Zellij describes them;
    /// plugin panes (tab bar, status bar) only when asked for.
    async fn pane_rows(&self, _: &McpServer, query: PaneQuery<'_>) -> Result<Listed, ToolError> {
        let session = self.session(query.target)?;
        let rows = self
            .backend
            .list_panes(&session)
            .await
            .map_err(|e| self.error(e))?
            .into_iter()
            .filter(|p| query.with_plugins || p.is_user_terminal())
            .map(|p| object(&ZellijPaneInfo::from(p)))
            .collect::<Result<_, _>>()?;
        Ok(Listed {
            session: Some(session.to_string()),
            rows,
        })
    }
}

#[tool_router(router = zellij_session_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "zellij_list_clients",
        description = "List the clients (humans' terminals) attached to a Zellij session and the pane each has focused.\n\n\
            Empty when nobody is attached.",
        annotations(
            title = "List Zellij clients",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn zellij_list_clients(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijSessionInput>,
    ) -> Result<Json<ZellijListClientsOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let clients = z
            .backend
            .list_clients(&session)
            .await
            .map_err(|e| z.error(e))?
            .into_iter()
            .map(ZellijClientInfo::from)
            .collect();
        Ok(Json(ZellijListClientsOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            clients,
        }))
    }

    #[tool(
        name = "zellij_dump_layout",
        description = "Return the live layout of a Zellij session as KDL (tabs, panes, splits, commands, cwd).\n\n\
            `focus=true` marks the focused tab and panes. Has no ids (see list_panes).",
        annotations(
            title = "Dump Zellij layout",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn zellij_dump_layout(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijSessionInput>,
    ) -> Result<Json<ZellijDumpLayoutOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let layout = z
            .backend
            .dump_layout(&session)
            .await
            .map_err(|e| z.error(e))?;
        let (layout, truncated_bytes) = z.budget().cap_output(&layout);
        Ok(Json(ZellijDumpLayoutOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            layout,
            truncated_bytes,
        }))
    }
}
