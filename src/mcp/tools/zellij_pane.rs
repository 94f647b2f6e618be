//! Zellij pane tools: open a shell, a command, or a file in the user's editor. Nobody's focus
//! moves unless the call sets `focus: true`. The pane tools both backends serve (`kill_pane`,
//! `set_pane_title`, `resize_pane`, `select_pane`) are one body each, in
//! [`super::pane_lifecycle`].

use std::path::PathBuf;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::zellij_objects::ZellijPaneInfo;
use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::zellij_access::{ZellijAccess, parse_tab};
use muxgate_zellij::backend::{EditOptions, NewPaneOptions, SplitDirection};
use muxgate_zellij::ids::{SessionName, TabId};

/// Where a tool opens a Zellij pane: the server, the session, the tab and the working
/// directory.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PaneSpot {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// Tab id (list_windows' `tab_id`); default: the first tab.
    #[serde(default)]
    pub tab: Option<String>,
    /// Absolute working directory.
    #[serde(default)]
    pub cwd: Option<String>,
}

impl PaneSpot {
    /// The caller's access to the server, and the session and tab, checked.
    pub(crate) async fn open<'a>(
        &self,
        mcp: &'a McpServer,
        call: &'a CallContext,
    ) -> Result<(ZellijAccess<'a>, SessionName, Option<TabId>), ToolError> {
        let z = mcp.zellij_access(call, self.server.as_deref()).await?;
        let session = z.session(self.session.as_deref())?;
        let tab = self.tab.as_deref().map(parse_tab).transpose()?;
        Ok((z, session, tab))
    }
}

// `deny_unknown_fields` still refuses a misspelled argument: serde checks what the flattened
// spot left over.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ZellijNewPaneInput {
    #[serde(flatten)]
    pub spot: PaneSpot,
    /// Pane title (at most 256 bytes).
    #[serde(default)]
    pub name: Option<String>,
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
pub(crate) struct ZellijPaneOutput {
    pub server: String,
    pub session: String,
    pub pane: ZellijPaneInfo,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ZellijEditFileInput {
    #[serde(flatten)]
    pub spot: PaneSpot,
    /// The file to open; relative paths are resolved against `cwd` (the editor's).
    pub file: String,
    /// Line to put the cursor on (1-based).
    #[serde(default)]
    pub line: Option<usize>,
    /// Open the editor in a floating pane.
    #[serde(default)]
    pub floating: bool,
    /// Focus the editor pane (moves attached humans' view).
    #[serde(default)]
    pub focus: bool,
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
        let (z, session, tab) = input.spot.open(self, &call).await?;
        let opts = NewPaneOptions {
            tab,
            name: input.name,
            cwd: input.spot.cwd.map(PathBuf::from),
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
        let (z, session, tab) = input.spot.open(self, &call).await?;
        let opts = EditOptions {
            tab,
            line: input.line,
            floating: input.floating,
            cwd: input.spot.cwd.map(PathBuf::from),
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
