//! Read-only Zellij tools that show the workspace before acting: sessions, tabs, panes,
//! attached clients and the live layout (list_servers names the Zellij servers too). None
//! changes anything or moves focus.

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::zellij_objects::{ZellijClientInfo, ZellijPaneInfo, ZellijSessionInfo, ZellijTabInfo};
use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::zellij_access::parse_tab;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijServerInput {
    #[serde(default)]
    pub server: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ZellijListSessionsOutput {
    pub server: String,
    /// Sessions you may see, live and exited.
    pub sessions: Vec<ZellijSessionInfo>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijSessionInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ZellijListTabsOutput {
    pub server: String,
    pub session: String,
    /// By position.
    pub tabs: Vec<ZellijTabInfo>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijListPanesInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// Only panes of this tab (its id from zellij_list_tabs).
    #[serde(default)]
    pub tab: Option<String>,
    /// Also list plugin panes (tab bar, status bar, helpers).
    #[serde(default)]
    pub include_plugins: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ZellijListPanesOutput {
    pub server: String,
    pub session: String,
    pub panes: Vec<ZellijPaneInfo>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ZellijListClientsOutput {
    pub server: String,
    pub session: String,
    /// Attached clients (humans' terminals); empty when nobody is attached.
    pub clients: Vec<ZellijClientInfo>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ZellijDumpLayoutOutput {
    pub server: String,
    pub session: String,
    /// The live layout in Zellij's KDL layout format.
    pub layout: String,
    /// Bytes cut from the start to respect your output limit.
    pub truncated_bytes: usize,
}

#[tool_router(router = zellij_session_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "zellij_list_sessions",
        description = "List the Zellij sessions of a server that you may see.\n\n\
            Includes exited sessions (`exited: true`), which take no actions.",
        annotations(
            title = "List Zellij sessions",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn zellij_list_sessions(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijServerInput>,
    ) -> Result<Json<ZellijListSessionsOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let sessions = z
            .backend
            .list_sessions()
            .await
            .map_err(|e| z.error(e))?
            .into_iter()
            .filter(|s| z.can_see(&s.name))
            .map(ZellijSessionInfo::from)
            .collect();
        Ok(Json(ZellijListSessionsOutput {
            server: z.server_name().to_owned(),
            sessions,
        }))
    }

    #[tool(
        name = "zellij_list_tabs",
        description = "List the tabs of a Zellij session with their stable ids, names and sizes.\n\n\
            Tab tools take `tab_id` (not the position). `active`: in an attached human's view.",
        annotations(
            title = "List Zellij tabs",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn zellij_list_tabs(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijSessionInput>,
    ) -> Result<Json<ZellijListTabsOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let tabs = z
            .backend
            .list_tabs(&session)
            .await
            .map_err(|e| z.error(e))?
            .into_iter()
            .map(ZellijTabInfo::from)
            .collect();
        Ok(Json(ZellijListTabsOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            tabs,
        }))
    }

    #[tool(
        name = "zellij_list_panes",
        description = "List the panes of a Zellij session (or of one tab) with ids, titles, commands, sizes and state.\n\n\
            Pane tools take `pane_id` (`terminal_N`). State: focused (per tab), floating, \
            fullscreen, command exit status.",
        annotations(
            title = "List Zellij panes",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn zellij_list_panes(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijListPanesInput>,
    ) -> Result<Json<ZellijListPanesOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let tab = input.tab.as_deref().map(parse_tab).transpose()?;
        let panes = match tab {
            // The tab listing checks that the tab exists.
            Some(tab) => {
                let (panes, tabs) = tokio::try_join!(
                    z.backend.list_panes(&session),
                    z.backend.list_tabs(&session)
                )
                .map_err(|e| z.error(e))?;
                if !tabs.iter().any(|t| t.id == tab) {
                    return Err(z.error(crate::mux::zellij::error::ZellijError::NoSuchTab {
                        session,
                        tab,
                    }));
                }
                panes.into_iter().filter(|p| p.tab_id == tab).collect()
            }
            None => z
                .backend
                .list_panes(&session)
                .await
                .map_err(|e| z.error(e))?,
        };
        let panes = panes
            .into_iter()
            .filter(|p| input.include_plugins || p.is_user_terminal())
            .map(ZellijPaneInfo::from)
            .collect();
        Ok(Json(ZellijListPanesOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            panes,
        }))
    }

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
            `focus=true` marks the focused tab and panes. Has no ids (see zellij_list_panes).",
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
        let (layout, truncated_bytes) = z.cap_output(&layout);
        Ok(Json(ZellijDumpLayoutOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            layout,
            truncated_bytes,
        }))
    }
}
