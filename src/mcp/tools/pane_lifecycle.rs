//! Tools that change panes: split, kill, respawn, select, resize, swap, retitle, clear.
//!
//! Each description says what changes in a human's view. Focus moves only in select_pane
//! (and split_window with `select`); kill_pane and respawn_pane refuse the pane the gateway
//! itself runs in ([`crate::mcp::self_guard`]). The commands are
//! [`muxgate_tmux::typed::pane_lifecycle`]'s; these tools check arguments and access, call it and
//! shape the answer. `kill_pane`, `select_pane`, `resize_pane` and `set_pane_title` serve
//! Zellij servers too: each is one body ([`MuxTool`]) written against the backend's
//! [`Multiplexer`], which acts on the pane and answers the backend's own row for it.

use std::borrow::Cow;
use std::collections::BTreeMap;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use super::support::check_shell;
use crate::mcp::McpServer;
use crate::mcp::access::{
    PANES_HINT, TmuxAccess, check_target, checked_target, list_hint, pane_only,
};
use crate::mcp::answers::AnsweredPane;
use crate::mcp::args::ObjectArg;
use crate::mcp::backend::Backend;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::pane_access::PaneAccess;
use crate::mcp::pane_ops::{PaneInfo, PaneRow, not_found, op_error, pane_info};
use crate::mcp::self_guard::Kill;
use crate::mcp::shared_tool::{MuxTool, Reply};
use muxgate_mux::multiplexer::{FocusMove, Multiplexer, PaneResize};
use muxgate_tmux::PaneId;
use muxgate_tmux::typed::pane_lifecycle::{Spawn, Split, SplitSide, SplitSize};
use muxgate_tmux::wire::target::Target;
use muxgate_zellij::unsupported;

/// Longest pane title accepted.
const MAX_TITLE_LEN: usize = 256;
/// Longest environment variable name, and most variables per call.
const MAX_ENV_NAME_LEN: usize = 128;
const MAX_ENV_VARS: usize = 64;

/// Where the new pane goes, relative to the split one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SplitDirection {
    Above,
    #[default]
    Below,
    Left,
    Right,
}

/// A pane size: cells, or a percentage of the split pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaneSize {
    Cells(u32),
    Percent(u32),
}

impl From<PaneSize> for SplitSize {
    fn from(size: PaneSize) -> Self {
        match size {
            PaneSize::Cells(n) => SplitSize::Cells(n),
            PaneSize::Percent(p) => SplitSize::Percent(p),
        }
    }
}

impl PaneSize {
    fn parse(text: &str) -> Option<Self> {
        let (digits, percent) = match text.strip_suffix('%') {
            Some(digits) => (digits, true),
            None => (text, false),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 5 {
            return None;
        }
        let n: u32 = digits.parse().ok()?;
        match (percent, n) {
            (true, 1..=99) => Some(PaneSize::Percent(n)),
            (false, 1..=10_000) => Some(PaneSize::Cells(n)),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for PaneSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SizeVisitor;
        impl Visitor<'_> for SizeVisitor {
            type Value = PaneSize;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a number of cells (1-10000) or a percentage string like \"30%\" (1-99)",
                )
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<PaneSize, E> {
                PaneSize::parse(&v.to_string())
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PaneSize, E> {
                Err(E::invalid_value(de::Unexpected::Signed(v), &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PaneSize, E> {
                PaneSize::parse(v).ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
            }
        }
        deserializer.deserialize_any(SizeVisitor)
    }
}

impl JsonSchema for PaneSize {
    fn schema_name() -> Cow<'static, str> {
        "PaneSize".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Cells (an integer, 1-10000) or a percentage of the split pane (a string like \"30%\").",
            "oneOf": [
                {"type": "integer", "minimum": 1, "maximum": 10000},
                {"type": "string", "pattern": "^[0-9]{1,2}%$"}
            ]
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SplitWindowInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N` to split; a window or session means its active pane.
    pub target: String,
    /// below (default), above, left or right of the split pane.
    #[serde(default)]
    pub direction: SplitDirection,
    /// Size of the new pane; default: half of the split pane.
    #[serde(default)]
    pub size: Option<PaneSize>,
    /// Absolute working directory; default: the session's.
    #[serde(default)]
    pub start_directory: Option<String>,
    /// Command to run instead of the shell (`sh -c`); the pane closes when it exits.
    #[serde(default)]
    pub shell: Option<String>,
    /// Environment variables for its program (`NAME: value`).
    #[serde(default)]
    pub environment: Option<ObjectArg<BTreeMap<String, String>>>,
    /// Make the new pane active (moves a watching human's focus).
    #[serde(default)]
    pub select: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PaneIdInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane id (`%N`) only. Zellij: `[SESSION:]terminal_N`.
    pub target: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PaneActionOutput {
    pub server: String,
    pub pane_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct KillPaneOutput {
    pub server: String,
    pub pane_id: String,
    /// Zellij: the pane's session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Zellij: the tab it was in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tab_id: Option<u32>,
    /// Zellij: the tab closed with its last pane.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tab_closed: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RespawnPaneInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane id (`%N`) only.
    pub target: String,
    /// Kill the running program first; false respawns only a dead pane (remain-on-exit).
    #[serde(default = "yes")]
    pub kill: bool,
    /// Command to run instead of the original one (`sh -c`).
    #[serde(default)]
    pub shell: Option<String>,
    /// Absolute working directory.
    #[serde(default)]
    pub start_directory: Option<String>,
    /// Environment variables for the new program.
    #[serde(default)]
    pub environment: Option<ObjectArg<BTreeMap<String, String>>>,
}

fn yes() -> bool {
    true
}

/// Which pane select_pane makes active.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SelectDirection {
    Up,
    Down,
    Left,
    Right,
    Last,
    Next,
    Previous,
}

impl From<SelectDirection> for FocusMove {
    fn from(direction: SelectDirection) -> Self {
        match direction {
            SelectDirection::Up => FocusMove::Up,
            SelectDirection::Down => FocusMove::Down,
            SelectDirection::Left => FocusMove::Left,
            SelectDirection::Right => FocusMove::Right,
            SelectDirection::Last => FocusMove::Last,
            SelectDirection::Next => FocusMove::Next,
            SelectDirection::Previous => FocusMove::Previous,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SelectPaneInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N` to make active; with `direction`, the pane (or window `@N`) to start from.
    /// Zellij: `[SESSION:]terminal_N`.
    pub target: String,
    /// Instead of `target`: up/down/left/right of it, last (previously active), or next/previous
    /// (wrapping).
    #[serde(default)]
    pub direction: Option<SelectDirection>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SelectPaneOutput {
    pub server: String,
    /// The window's active pane afterwards (unchanged when there was no pane in that
    /// direction).
    pub active_pane: AnsweredPane,
    /// Zellij: the clients attached to the session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clients: Option<usize>,
    /// Zellij: the clients that now have the pane focused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clients_focused: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResizePaneInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane. Zellij: `[SESSION:]terminal_N`.
    pub target: String,
    /// Width in cells.
    #[serde(default)]
    pub width: Option<u32>,
    /// Height in cells.
    #[serde(default)]
    pub height: Option<u32>,
    /// true zooms the pane to fill its window, false unzooms; not with width/height.
    #[serde(default)]
    pub zoom: Option<bool>,
}

/// What a `resize_pane` call changes, checked before either backend is asked.
fn resize_of(input: &ResizePaneInput) -> Result<PaneResize, ToolError> {
    let sizes = input.width.is_some() || input.height.is_some();
    match (input.zoom, sizes) {
        (Some(_), true) => Err(ToolError::invalid_arguments(
            "pass either zoom or width/height, not both",
            "call resize_pane twice: once to unzoom, once to resize",
        )),
        (None, false) => Err(ToolError::invalid_arguments(
            "nothing to do: pass width and/or height, or zoom",
            "e.g. {\"width\": 80} or {\"zoom\": true}",
        )),
        (Some(zoom), false) => Ok(PaneResize::Zoom(zoom)),
        (None, true) if input.width == Some(0) || input.height == Some(0) => {
            Err(ToolError::invalid_arguments(
                "width and height must be at least 1",
                "pass sizes in cells",
            ))
        }
        (None, true) => Ok(PaneResize::Cells {
            width: input.width,
            height: input.height,
        }),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SwapPaneInput {
    #[serde(default)]
    pub server: Option<String>,
    /// One pane (`%N`).
    pub source: String,
    /// The other pane (`%N`); may be in another window.
    pub target: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SwapPaneOutput {
    pub server: String,
    pub source: PaneInfo,
    pub target: PaneInfo,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SetPaneTitleInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane. Zellij: `[SESSION:]terminal_N`.
    pub target: String,
    /// Up to 256 chars, no control chars.
    pub title: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SetPaneTitleOutput {
    pub server: String,
    /// Zellij: the pane's session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub pane_id: String,
    pub title: String,
}

#[tool_router(router = pane_lifecycle_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "split_window",
        description = "Split a pane into two, optionally running a command in the new one.\n\n\
            Focus stays unless `select`; a zoomed window is unzoomed. Returns the new pane: use \
            its `id` (`%N`) in other tools.",
        annotations(
            title = "Split window",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn split_window(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<SplitWindowInput>,
    ) -> Result<Json<PaneInfo>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = tmux.target(&input.target).await?;
        let spawn = check_spawn(
            input.start_directory,
            input.shell,
            input.environment.as_deref(),
        )?;
        let pane = tmux.pane_of(&target).await?;
        let launch = match spawn.shell {
            Some(_) => None,
            None => {
                let integration = self.state().config.tmux.shell_integration;
                tmux.integrated_shell(integration).await
            }
        };
        let split = Split {
            pane,
            side: match input.direction {
                SplitDirection::Above => SplitSide::Above,
                SplitDirection::Below => SplitSide::Below,
                SplitDirection::Left => SplitSide::Left,
                SplitDirection::Right => SplitSide::Right,
            },
            size: input.size.map(SplitSize::from),
            spawn,
            select: input.select,
        };
        let row = tmux
            .pane_lifecycle()
            .split(&split, launch.as_deref())
            .await
            .map_err(|e| op_error(&tmux, e, &target, list_hint(&target)))?
            .and_then(|row| PaneRow::from(row).for_caller(&tmux))
            .ok_or_else(|| not_found(&target))?;
        Ok(Json(row.info))
    }

    #[tool(
        name = "kill_pane",
        description = "Kill a pane and its program (its output and state are lost).\n\n\
            A window (and session) left empty closes. Refused for the gateway's own pane. To stop \
            only the program: send_keys `C-c`, or respawn_pane.",
        annotations(
            title = "Kill pane",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn kill_pane(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<PaneIdInput>,
    ) -> Result<Json<KillPaneOutput>, ToolError> {
        self.serve(&call, input).await.map(Json)
    }

    #[tool(
        name = "respawn_pane",
        description = "Restart the program in a pane, killing the running one first by default.\n\n\
            The pane keeps its id, size and place; its screen is cleared. Refused for the \
            gateway's own pane.",
        annotations(
            title = "Respawn pane",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn respawn_pane(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<RespawnPaneInput>,
    ) -> Result<Json<PaneActionOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let pane = exact_pane(&tmux, &input.target, "list_panes").await?;
        let spawn = check_spawn(
            input.start_directory,
            input.shell,
            input.environment.as_deref(),
        )?;
        let pane = tmux.resolve(&Target::Pane(pane)).await?.pane_id;
        self.refuse_self_kill(&tmux, Kill::Pane(pane)).await?;
        let target = Target::Pane(pane);
        tmux.pane_lifecycle()
            .respawn(pane, input.kill, &spawn)
            .await
            .map_err(|e| op_error(&tmux, e, &target, list_hint(&target)))?;
        Ok(Json(PaneActionOutput {
            server: tmux.server_name().to_owned(),
            pane_id: pane.to_string(),
        }))
    }

    #[tool(
        name = "select_pane",
        description = "Make a pane its window's active pane: MOVES FOCUS for watching humans.\n\n\
            Only when asked to change focus: other tools take pane ids. Returns the window's \
            active pane afterwards.",
        annotations(
            title = "Select pane",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn select_pane(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<SelectPaneInput>,
    ) -> Result<Json<SelectPaneOutput>, ToolError> {
        self.serve(&call, input).await.map(Json)
    }

    #[tool(
        name = "resize_pane",
        description = "Resize a pane in cells, or zoom/unzoom it.\n\n\
            Humans see the layout change. A pane cannot outgrow its window (see resize_window). \
            Resizing unzooms; zooming makes the pane active. Returns the pane afterwards.",
        annotations(
            title = "Resize pane",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn resize_pane(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ResizePaneInput>,
    ) -> Result<Json<AnsweredPane>, ToolError> {
        let change = resize_of(&input)?;
        self.serve(&call, ResizePane { input, change })
            .await
            .map(Json)
    }

    #[tool(
        name = "swap_pane",
        description = "Swap the places of two panes, in one window or across windows.\n\n\
            Each keeps its id and program. Returns both panes afterwards.",
        annotations(
            title = "Swap panes",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn swap_pane(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<SwapPaneInput>,
    ) -> Result<Json<SwapPaneOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let source = exact_pane(&tmux, &input.source, "list_panes").await?;
        let target = exact_pane(&tmux, &input.target, "list_panes").await?;
        if source == target {
            return Err(ToolError::invalid_arguments(
                "source and target are the same pane",
                "pass two different pane ids",
            ));
        }
        for pane in [source, target] {
            tmux.authorize(&Target::Pane(pane)).await?;
        }
        tmux.pane_lifecycle()
            .swap(source, target)
            .await
            .map_err(|e| op_error(&tmux, e, &Target::Pane(target), PANES_HINT))?;
        let source_info = pane_info(&tmux, &Target::Pane(source)).await?.info;
        let target_info = pane_info(&tmux, &Target::Pane(target)).await?.info;
        Ok(Json(SwapPaneOutput {
            server: tmux.server_name().to_owned(),
            source: source_info,
            target: target_info,
        }))
    }

    #[tool(
        name = "set_pane_title",
        description = "Set a pane's title (shown in borders or status if configured).\n\n\
            Taken literally; its program may replace it.",
        annotations(
            title = "Set pane title",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn set_pane_title(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<SetPaneTitleInput>,
    ) -> Result<Json<SetPaneTitleOutput>, ToolError> {
        if input.title.chars().count() > MAX_TITLE_LEN || input.title.chars().any(char::is_control)
        {
            return Err(ToolError::invalid_arguments(
                format!(
                    "title must be at most {MAX_TITLE_LEN} characters without control characters"
                ),
                "pass a short, plain title",
            ));
        }
        self.serve(&call, input).await.map(Json)
    }

    #[tool(
        name = "clear_pane",
        description = "Clear a pane's screen and erase its scrollback history (lost).\n\n\
            The program keeps running, not told; a shell reprints its prompt after Enter or \
            send_keys [\"C-l\"].",
        annotations(
            title = "Clear pane",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn clear_pane(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<super::pane::PaneTargetInput>,
    ) -> Result<Json<PaneActionOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = tmux.target(&input.target).await?;
        let pane = tmux.pane_of(&target).await?;
        tmux.pane_lifecycle()
            .clear(pane)
            .await
            .map_err(|e| op_error(&tmux, e, &target, "call list_panes"))?;
        Ok(Json(PaneActionOutput {
            server: tmux.server_name().to_owned(),
            pane_id: pane.to_string(),
        }))
    }
}

/// What `kill_pane` names for a window or a session.
const KILL_INSTEAD: &str = "kill_window or kill_session";

impl MuxTool for PaneIdInput {
    type Answer = KillPaneOutput;

    fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    fn check(&self, backend: Backend) -> Result<(), ToolError> {
        if backend == Backend::Tmux
            && let Some(target) = checked_target(&self.target)?
        {
            pane_only(&target, KILL_INSTEAD)?;
        }
        Ok(())
    }

    /// On Zellij a tab left empty closes (`tab_closed`), and the session's last pane is
    /// refused, as closing it would end the session.
    async fn act<A: PaneAccess>(self, gateway: &McpServer, access: A) -> Reply<Self> {
        let scoped = access.exact_pane(&self.target, KILL_INSTEAD).await?;
        access.may_kill(gateway, &scoped).await?;
        let holder = scoped
            .mux
            .kill_pane(&scoped.pane)
            .await
            .map_err(|e| access.error(&scoped, e))?;
        Ok(KillPaneOutput {
            server: access.server_name().to_owned(),
            pane_id: scoped.pane.to_string(),
            session: scoped.session,
            tab_id: holder.map(|h| h.id),
            tab_closed: holder.map(|h| h.closed),
        })
    }
}

impl MuxTool for SelectPaneInput {
    type Answer = SelectPaneOutput;

    fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    /// Zellij moves focus by pane only, so `direction` is refused there.
    fn check(&self, backend: Backend) -> Result<(), ToolError> {
        match backend {
            Backend::Tmux => check_target(&self.target)?,
            Backend::Zellij if self.direction.is_some() => {
                return Err(ToolError::unsupported(
                    unsupported::DIRECTION,
                    "call list_panes and pass the pane's id as target, without direction",
                ));
            }
            Backend::Zellij => {}
        }
        Ok(())
    }

    /// On tmux a window or session target starts from its active pane; on Zellij the pane is
    /// shown to every attached human (its tab, and the pane focused there).
    async fn act<A: PaneAccess>(self, _: &McpServer, access: A) -> Reply<Self> {
        let scoped = access.pane(&self.target).await?;
        let towards = self.direction.map_or(FocusMove::Here, FocusMove::from);
        let focused = scoped
            .mux
            .focus(&scoped.pane, towards)
            .await
            .map_err(|e| access.error(&scoped, e))?;
        Ok(SelectPaneOutput {
            server: access.server_name().to_owned(),
            active_pane: access.answered(&scoped, focused.pane)?,
            clients: focused.clients,
            clients_focused: focused.clients_focused,
        })
    }
}

/// `resize_pane`'s call: its input and the change it asks for, checked.
struct ResizePane {
    input: ResizePaneInput,
    change: PaneResize,
}

impl MuxTool for ResizePane {
    type Answer = AnsweredPane;

    fn server(&self) -> Option<&str> {
        self.input.server.as_deref()
    }

    /// On Zellij `zoom` is fullscreen within the pane's tab, and `width` and `height` are
    /// reached in Zellij's own steps (see [`muxgate_zellij::backend`]).
    async fn act<A: PaneAccess>(self, _: &McpServer, access: A) -> Reply<Self> {
        let scoped = access.pane(&self.input.target).await?;
        let row = scoped
            .mux
            .resize(&scoped.pane, self.change)
            .await
            .map_err(|e| access.error(&scoped, e))?;
        access.answered(&scoped, row)
    }
}

impl MuxTool for SetPaneTitleInput {
    type Answer = SetPaneTitleOutput;

    fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    async fn act<A: PaneAccess>(self, _: &McpServer, access: A) -> Reply<Self> {
        let scoped = access.pane(&self.target).await?;
        scoped
            .mux
            .set_title(&scoped.pane, &self.title)
            .await
            .map_err(|e| access.error(&scoped, e))?;
        Ok(SetPaneTitleOutput {
            server: access.server_name().to_owned(),
            session: scoped.session,
            pane_id: scoped.pane.to_string(),
            title: self.title,
        })
    }
}

impl McpServer {
    /// Self-protection: refuses `kill` when it would take down the gateway's own pane.
    pub(crate) async fn refuse_self_kill(
        &self,
        tmux: &TmuxAccess<'_>,
        kill: Kill,
    ) -> Result<(), ToolError> {
        match &self.state().self_location {
            Some(me) => me.check(tmux, kill).await,
            None => Ok(()),
        }
    }
}

/// The pane a client's target names, for a tool that takes nothing else: a pane id, or a path
/// to one pane (`SESSION:WINDOW.PANE`).
async fn exact_pane(tmux: &TmuxAccess<'_>, text: &str, instead: &str) -> Result<PaneId, ToolError> {
    pane_only(&tmux.target(text).await?, instead)
}

/// Checks how a new program starts (split_window, respawn_pane).
fn check_spawn(
    start_directory: Option<String>,
    shell: Option<String>,
    environment: Option<&BTreeMap<String, String>>,
) -> Result<Spawn, ToolError> {
    if let Some(dir) = &start_directory
        && (!dir.starts_with('/') || dir.chars().any(char::is_control))
    {
        return Err(ToolError::invalid_arguments(
            "start_directory must be an absolute path without control characters",
            "pass a path starting with /",
        ));
    }
    check_shell(shell.as_deref())?;
    let environment = environment.map(env_assignments).transpose()?;
    Ok(Spawn {
        start_directory,
        shell,
        environment: environment.unwrap_or_default(),
    })
}

/// `NAME=value` strings for `-e`, with names checked.
fn env_assignments(environment: &BTreeMap<String, String>) -> Result<Vec<String>, ToolError> {
    if environment.len() > MAX_ENV_VARS {
        return Err(ToolError::invalid_arguments(
            format!("more than {MAX_ENV_VARS} environment variables"),
            "pass fewer variables",
        ));
    }
    environment
        .iter()
        .map(|(name, value)| {
            let valid = !name.is_empty()
                && name.len() <= MAX_ENV_NAME_LEN
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if valid {
                Ok(format!("{name}={value}"))
            } else {
                Err(ToolError::invalid_arguments(
                    format!(
                        "environment variable name {:?} is not valid",
                        name.chars().take(64).collect::<String>()
                    ),
                    "use names of letters, digits and _ that do not start with a digit",
                ))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_cells_or_percentages() {
        let parse = |v: serde_json::Value| serde_json::from_value::<PaneSize>(v);
        assert_eq!(parse(serde_json::json!(12)).unwrap(), PaneSize::Cells(12));
        assert_eq!(
            parse(serde_json::json!("30%")).unwrap(),
            PaneSize::Percent(30)
        );
        assert_eq!(parse(serde_json::json!("7")).unwrap(), PaneSize::Cells(7));
        for bad in [
            serde_json::json!(0),
            serde_json::json!(-3),
            serde_json::json!("0%"),
            serde_json::json!("100%"),
            serde_json::json!("50 %"),
            serde_json::json!("x"),
            serde_json::json!(20000),
        ] {
            let err = parse(bad.clone()).unwrap_err().to_string();
            assert!(err.contains("percentage"), "{bad}: {err}");
        }
        assert_eq!(
            SplitSize::from(PaneSize::Percent(30)),
            SplitSize::Percent(30)
        );
        assert_eq!(SplitSize::from(PaneSize::Cells(4)), SplitSize::Cells(4));
    }

    #[test]
    fn spawn_options_are_checked() {
        let some = |s: &str| Some(s.to_owned());
        let env = BTreeMap::from([("A_1".to_owned(), "x y;#{z}".to_owned())]);
        let spawn = check_spawn(some("/tmp/#dir"), some("echo hi"), Some(&env)).unwrap();
        assert_eq!(
            spawn,
            Spawn {
                start_directory: some("/tmp/#dir"),
                shell: some("echo hi"),
                environment: vec!["A_1=x y;#{z}".to_owned()],
            }
        );
        assert!(check_spawn(some("relative"), None, None).is_err());
        assert!(check_spawn(None, some("  "), None).is_err());
        for bad in ["", "1A", "A-B", "A=B", "é"] {
            let env = BTreeMap::from([(bad.to_owned(), "v".to_owned())]);
            assert!(check_spawn(None, None, Some(&env)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn pane_only_targets() {
        let target = |text: &str| Target::parse(text).unwrap();
        assert_eq!(pane_only(&target("%4"), "x").unwrap(), PaneId(4));
        let err = pane_only(&target("@1"), "kill_window").unwrap_err();
        assert!(err.message.contains("window @1") && err.suggestion.contains("kill_window"));
        assert!(pane_only(&target("main"), "x").is_err());
    }
}
