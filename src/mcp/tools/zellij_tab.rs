//! Zellij tab tools: create, rename, close, switch to, and show/hide floating panes. Tabs are
//! targeted by their stable id; only `zellij_go_to_tab` (and `focus: true` on
//! `zellij_new_tab`) moves a human's view.

use std::path::PathBuf;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::zellij_objects::ZellijTabInfo;
use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::zellij_access::parse_tab;
use crate::mux::zellij::backend::NewTabOptions;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijNewTabInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// Tab name (at most 256 bytes). Default: Zellij's `Tab #N`.
    #[serde(default)]
    pub name: Option<String>,
    /// Absolute working directory of the tab's panes.
    #[serde(default)]
    pub cwd: Option<String>,
    /// A KDL layout for the tab, e.g. `layout { pane split_direction="vertical" { pane; pane; } }`.
    #[serde(default)]
    pub layout: Option<String>,
    /// Program and args to run in the tab's pane instead of a shell.
    #[serde(default)]
    pub command: Vec<String>,
    /// Switch attached clients to the new tab.
    #[serde(default)]
    pub focus: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ZellijTabOutput {
    pub server: String,
    pub session: String,
    pub tab: ZellijTabInfo,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijRenameTabInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// Tab id (zellij_list_tabs), not its position.
    pub tab: String,
    /// The new name (at most 256 bytes).
    pub name: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijTabTargetInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// Tab id (zellij_list_tabs), not its position.
    pub tab: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ZellijCloseTabOutput {
    pub server: String,
    pub session: String,
    /// The closed tab's id.
    pub closed_tab_id: u32,
    /// Tabs left, by position.
    pub tabs: Vec<ZellijTabInfo>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijFloatingInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// Tab id (zellij_list_tabs), not its position.
    pub tab: String,
    /// `true` shows, `false` hides the tab's floating panes; omitted: toggle.
    #[serde(default)]
    pub visible: Option<bool>,
}

#[tool_router(router = zellij_tab_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "zellij_new_tab",
        description = "Create a tab in a Zellij session, in the background unless `focus` is true.\n\n\
            `focus: true` switches every attached client to it (no zellij_go_to_tab needed). \
            Returns the tab with its stable `tab_id`.",
        annotations(
            title = "New Zellij tab",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn zellij_new_tab(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijNewTabInput>,
    ) -> Result<Json<ZellijTabOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let opts = NewTabOptions {
            name: input.name,
            cwd: input.cwd.map(PathBuf::from),
            layout: input.layout,
            command: input.command,
            focus: input.focus,
        };
        let tab = z
            .backend
            .new_tab(&session, opts)
            .await
            .map_err(|e| z.error(e))?;
        Ok(Json(ZellijTabOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            tab: tab.into(),
        }))
    }

    #[tool(
        name = "zellij_rename_tab",
        description = "Rename a Zellij tab by id, without focusing it.",
        annotations(
            title = "Rename Zellij tab",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn zellij_rename_tab(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijRenameTabInput>,
    ) -> Result<Json<ZellijTabOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let tab = parse_tab(&input.tab)?;
        let tab = z
            .backend
            .rename_tab(&session, tab, &input.name)
            .await
            .map_err(|e| z.error(e))?;
        Ok(Json(ZellijTabOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            tab: tab.into(),
        }))
    }

    #[tool(
        name = "zellij_close_tab",
        description = "Close a Zellij tab by id, killing all its panes and their processes.\n\n\
            Its viewers move to a neighbouring tab; the session's last tab is refused. Returns the \
            tabs left.",
        annotations(
            title = "Close Zellij tab",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn zellij_close_tab(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijTabTargetInput>,
    ) -> Result<Json<ZellijCloseTabOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let tab = parse_tab(&input.tab)?;
        z.backend
            .close_tab(&session, tab)
            .await
            .map_err(|e| z.error(e))?;
        let tabs = z
            .backend
            .list_tabs(&session)
            .await
            .map_err(|e| z.error(e))?;
        Ok(Json(ZellijCloseTabOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            closed_tab_id: tab.0,
            tabs: tabs.into_iter().map(ZellijTabInfo::from).collect(),
        }))
    }

    #[tool(
        name = "zellij_go_to_tab",
        description = "Focus tool: switch every attached human's view to a Zellij tab.\n\n\
            Only when the user asks to see the tab: other tools work on any tab by id. No effect \
            with nobody attached.",
        annotations(
            title = "Go to Zellij tab",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn zellij_go_to_tab(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijTabTargetInput>,
    ) -> Result<Json<ZellijTabOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let tab = parse_tab(&input.tab)?;
        let tab = z
            .backend
            .go_to_tab(&session, tab)
            .await
            .map_err(|e| z.error(e))?;
        Ok(Json(ZellijTabOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            tab: tab.into(),
        }))
    }

    #[tool(
        name = "zellij_toggle_floating_panes",
        description = "Show or hide the floating panes of a Zellij tab.\n\n\
            No tab switch; a tab without floating panes gets none. Hidden panes keep running. \
            Returns the tab (`floating_panes_visible`).",
        annotations(
            title = "Toggle Zellij floating panes",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn zellij_toggle_floating_panes(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijFloatingInput>,
    ) -> Result<Json<ZellijTabOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let tab = parse_tab(&input.tab)?;
        let tab = match input.visible {
            Some(visible) => {
                z.backend
                    .set_floating_panes_visible(&session, tab, visible)
                    .await
            }
            None => z.backend.toggle_floating_panes(&session, tab).await,
        }
        .map_err(|e| z.error(e))?;
        Ok(Json(ZellijTabOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            tab: tab.into(),
        }))
    }
}
