//! Zellij pane tools: open (a shell, a command, or a file in the user's editor), close, rename,
//! resize, fullscreen, and the explicit focus tool. Panes are targeted by id (`terminal_N`);
//! nobody's focus moves unless the tool is `zellij_focus_pane` or the call sets `focus: true`.

use std::path::PathBuf;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::pane_lifecycle::{KillPaneOutput, PaneIdInput, SetPaneTitleInput, SetPaneTitleOutput};
use super::zellij_objects::ZellijPaneInfo;
use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::zellij_access::{parse_pane, parse_tab};
use crate::mux::zellij::backend::{EditOptions, NewPaneOptions, ResizeMode, Side, SplitDirection};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijNewPaneInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// Tab id (zellij_list_tabs); default: the first tab.
    #[serde(default)]
    pub tab: Option<String>,
    /// Pane title (at most 256 bytes).
    #[serde(default)]
    pub name: Option<String>,
    /// Absolute working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Program and args instead of a shell (e.g. `["make", "test"]`); held after it exits.
    #[serde(default)]
    pub command: Vec<String>,
    /// Float above the tab instead of splitting the tiled layout.
    #[serde(default)]
    pub floating: bool,
    /// For a tiled pane: split `right` or `down`. Default: where Zellij finds room.
    #[serde(default)]
    pub direction: Option<SplitDirection>,
    /// Close the pane when `command` exits (command panes only).
    #[serde(default)]
    pub close_on_exit: bool,
    /// Focus the new pane (moves attached humans' view).
    #[serde(default)]
    pub focus: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ZellijPaneOutput {
    pub server: String,
    pub session: String,
    pub pane: ZellijPaneInfo,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijPaneTargetInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// Pane `terminal_N` or `plugin_N`.
    pub pane: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijResizePaneInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// Pane `terminal_N`.
    pub pane: String,
    /// `increase` or `decrease`.
    pub mode: ResizeMode,
    /// Side to move: `left`, `right`, `up`, `down`; default: where Zellij finds room.
    #[serde(default)]
    pub side: Option<Side>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ZellijFocusPaneOutput {
    pub server: String,
    pub session: String,
    pub pane: ZellijPaneInfo,
    /// Clients attached to the session.
    pub clients: usize,
    /// Clients that now have the pane focused.
    pub clients_focused: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijEditFileInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// The file to open; relative paths are resolved against `cwd`.
    pub file: String,
    /// Line to put the cursor on (1-based).
    #[serde(default)]
    pub line: Option<usize>,
    /// Tab id (zellij_list_tabs); default: the first tab.
    #[serde(default)]
    pub tab: Option<String>,
    /// Open the editor in a floating pane.
    #[serde(default)]
    pub floating: bool,
    /// Absolute working directory of the editor.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Focus the editor pane (moves attached humans' view).
    #[serde(default)]
    pub focus: bool,
}

impl McpServer {
    /// `kill_pane` on a Zellij server: closes the pane (`terminal_N` or `SESSION:terminal_N`)
    /// and its process. A tab left empty closes (`tab_closed`); the session's last pane is
    /// refused, as Zellij would end the session.
    pub(crate) async fn close_zellij_pane(
        &self,
        call: &CallContext,
        input: PaneIdInput,
    ) -> Result<KillPaneOutput, ToolError> {
        let z = self.zellij_access(call, input.server.as_deref()).await?;
        let (session, pane) = z.pane_target(&input.target)?;
        let closed = z
            .backend
            .close_pane(&session, pane)
            .await
            .map_err(|e| z.error(e))?;
        Ok(KillPaneOutput {
            server: z.server_name().to_owned(),
            pane_id: closed.pane.to_string(),
            session: Some(session.to_string()),
            tab_id: Some(closed.tab.0),
            tab_closed: Some(closed.tab_closed),
        })
    }

    /// `set_pane_title` on a Zellij server: renames the pane without focusing it.
    pub(crate) async fn set_zellij_pane_title(
        &self,
        call: &CallContext,
        input: SetPaneTitleInput,
    ) -> Result<SetPaneTitleOutput, ToolError> {
        let z = self.zellij_access(call, input.server.as_deref()).await?;
        let (session, pane) = z.pane_target(&input.target)?;
        let pane = z
            .backend
            .rename_pane(&session, pane, &input.title)
            .await
            .map_err(|e| z.error(e))?;
        Ok(SetPaneTitleOutput {
            server: z.server_name().to_owned(),
            session: Some(session.to_string()),
            pane_id: pane.id.to_string(),
            title: input.title,
        })
    }
}

#[tool_router(router = zellij_pane_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "zellij_new_pane",
        description = "Open a pane in a Zellij tab: a shell, or `command` as a command pane; floating or tiled.\n\n\
            A floating pane stays hidden if the tab's floating panes are.",
        annotations(
            title = "New Zellij pane",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn zellij_new_pane(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijNewPaneInput>,
    ) -> Result<Json<ZellijPaneOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let opts = NewPaneOptions {
            tab: input.tab.as_deref().map(parse_tab).transpose()?,
            name: input.name,
            cwd: input.cwd.map(PathBuf::from),
            command: input.command,
            floating: input.floating,
            direction: input.direction,
            close_on_exit: input.close_on_exit,
            focus: input.focus,
        };
        let pane = z
            .backend
            .new_pane(&session, opts)
            .await
            .map_err(|e| z.error(e))?;
        Ok(Json(ZellijPaneOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            pane: pane.into(),
        }))
    }

    #[tool(
        name = "zellij_resize_pane",
        description = "Grow or shrink a Zellij pane by one step, by id, without focusing it.\n\n\
            A pane that cannot grow (alone in its tab, or fullscreen) keeps its size: check \
            `rows`/`columns`.",
        annotations(
            title = "Resize Zellij pane",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn zellij_resize_pane(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijResizePaneInput>,
    ) -> Result<Json<ZellijPaneOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let pane = parse_pane(&input.pane)?;
        let pane = z
            .backend
            .resize_pane(&session, pane, input.mode, input.side)
            .await
            .map_err(|e| z.error(e))?;
        Ok(Json(ZellijPaneOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            pane: pane.into(),
        }))
    }

    #[tool(
        name = "zellij_toggle_fullscreen",
        description = "Toggle fullscreen of a Zellij pane within its tab, by id.\n\n\
            Zellij also focuses it for viewers of that tab; no tab switch. Returns the pane.",
        annotations(
            title = "Toggle Zellij fullscreen",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn zellij_toggle_fullscreen(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijPaneTargetInput>,
    ) -> Result<Json<ZellijPaneOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let pane = parse_pane(&input.pane)?;
        let pane = z
            .backend
            .toggle_fullscreen(&session, pane)
            .await
            .map_err(|e| z.error(e))?;
        Ok(Json(ZellijPaneOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            pane: pane.into(),
        }))
    }

    #[tool(
        name = "zellij_focus_pane",
        description = "Focus tool: show a Zellij pane to every attached human (switch to its tab and focus it).\n\n\
            Only when the user asks to see it: other tools work on any pane by id. Returns \
            `clients_focused`.",
        annotations(
            title = "Focus Zellij pane",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn zellij_focus_pane(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijPaneTargetInput>,
    ) -> Result<Json<ZellijFocusPaneOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let pane = parse_pane(&input.pane)?;
        let focused = z
            .backend
            .focus_pane(&session, pane)
            .await
            .map_err(|e| z.error(e))?;
        Ok(Json(ZellijFocusPaneOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            pane: focused.pane.into(),
            clients: focused.clients,
            clients_focused: focused.clients_focused,
        }))
    }

    #[tool(
        name = "zellij_edit_file",
        description = "Open a file in the user's editor ($EDITOR, Zellij's `edit`) in a new Zellij pane.\n\n\
            The editor runs until the human quits it; capture_pane reads its screen. Returns \
            the pane.",
        annotations(
            title = "Edit file in Zellij",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn zellij_edit_file(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijEditFileInput>,
    ) -> Result<Json<ZellijPaneOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let opts = EditOptions {
            tab: input.tab.as_deref().map(parse_tab).transpose()?,
            line: input.line,
            floating: input.floating,
            cwd: input.cwd.map(PathBuf::from),
            focus: input.focus,
        };
        let pane = z
            .backend
            .edit_file(&session, std::path::Path::new(&input.file), opts)
            .await
            .map_err(|e| z.error(e))?;
        Ok(Json(ZellijPaneOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            pane: pane.into(),
        }))
    }
}
