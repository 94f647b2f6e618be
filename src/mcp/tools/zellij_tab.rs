//! Zellij tabs, which are the windows of a Zellij server: its tabs as `list_windows` reads them
//! and `create_window` makes them (the window tools are one body each, in `window.rs`), and the
//! Zellij tool that shows/hides a tab's floating panes. Tabs are targeted by their stable id;
//! only `select_window` (and `select: true` on `create_window`) moves a human's view.

use std::path::PathBuf;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::zellij_objects::ZellijTabInfo;
use crate::mcp::McpServer;
use crate::mcp::answers::AnsweredWindow;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::listing::{Listed, ListsWindows};
use crate::mcp::row_object::object;
use crate::mcp::window_creation::{CreateWindowInput, CreatesWindows};
use crate::mcp::zellij_access::{ZellijAccess, parse_tab};
use muxgate_zellij::backend::NewTabOptions;
use muxgate_zellij::ids::SessionName;
use muxgate_zellij::listing::Tab;

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ZellijTabOutput {
    pub server: String,
    pub session: String,
    pub tab: ZellijTabInfo,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ZellijFloatingInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// Tab id (list_windows' `tab_id`), not its position.
    pub tab: String,
    /// `true` shows, `false` hides the tab's floating panes; omitted: toggle.
    #[serde(default)]
    pub visible: Option<bool>,
}

impl ListsWindows for ZellijAccess<'_> {
    /// The tabs of one session (`target`, default the server's), by position.
    async fn window_rows(&self, target: Option<&str>) -> Result<Listed, ToolError> {
        let session = self.session(target)?;
        let tabs = self
            .backend
            .list_tabs(&session)
            .await
            .map_err(|e| self.error(e))?;
        let panes = self
            .backend
            .list_panes(&session)
            .await
            .map_err(|e| self.error(e))?;
        let rows = tabs
            .into_iter()
            .map(|t| object(&ZellijTabInfo::of(t, &panes)))
            .collect::<Result<_, _>>()?;
        Ok(Listed {
            session: Some(session.to_string()),
            rows,
        })
    }
}

impl CreatesWindows for ZellijAccess<'_> {
    /// A tab at the end of the session (`target`), in the background unless `select`; `shell`
    /// runs as a command pane (`sh -c`), `layout` lays the tab out.
    async fn create_window(
        &self,
        _: &McpServer,
        input: CreateWindowInput,
    ) -> Result<AnsweredWindow, ToolError> {
        let session = self.session(Some(&input.target))?;
        let opts = NewTabOptions {
            name: input.name,
            cwd: input.start_directory.map(PathBuf::from),
            layout: input.layout,
            command: input
                .shell
                .map(|shell| vec!["sh".to_owned(), "-c".to_owned(), shell])
                .unwrap_or_default(),
            focus: input.select,
        };
        let tab = self
            .backend
            .new_tab(&session, opts)
            .await
            .map_err(|e| self.error(e))?;
        Ok(AnsweredWindow::Zellij {
            session: session.to_string(),
            row: tab_row(self, &session, tab).await?,
        })
    }
}

/// A tab's row, with its active pane from a listing of its session's panes.
async fn tab_row(
    z: &ZellijAccess<'_>,
    session: &SessionName,
    tab: Tab,
) -> Result<ZellijTabInfo, ToolError> {
    let panes = z
        .backend
        .list_panes(session)
        .await
        .map_err(|e| z.error(e))?;
    Ok(ZellijTabInfo::of(tab, &panes))
}

#[tool_router(router = zellij_tab_tools, vis = "pub(crate)")]
impl McpServer {
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
            tab: tab_row(&z, &session, tab).await?,
        }))
    }
}
