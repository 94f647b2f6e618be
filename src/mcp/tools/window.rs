//! Tools that act on tmux windows: list, inspect, create, rename, select, resize, lay out, move
//! and kill.
//!
//! Windows are always targeted by id (`@N`); a session target picks where a new window goes.
//! `list_windows`, `create_window`, `rename_window`, `select_window` and `kill_window` also
//! serve Zellij servers, whose tabs are their windows (a Zellij server's tabs are read and made
//! in `zellij_tab`).
//! Only `select_window` (and `create_window`/`move_window` with `select: true`) changes which
//! window humans attached to a session are looking at; `resize_window` changes the size they
//! see. Everything else leaves their view alone.

use muxgate_mux::lines::excerpt;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::support::{
    build_error, check_shell, check_window_name, name_filter, validate_environment,
    validate_start_directory, validate_window_size,
};
use super::zellij_objects::ZELLIJ_TAB_FIELDS;
use crate::auth::pattern::NamePattern;
use crate::mcp::McpServer;
use crate::mcp::access::{
    SESSIONS_HINT, TmuxAccess, WINDOWS_HINT, check_target, checked_target, engine_error,
    target_error, window_only,
};
use crate::mcp::answers::AnsweredWindow;
use crate::mcp::args::ObjectArg;
use crate::mcp::backend::{Backend, Row};
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mcp::fields::RowShape;
use crate::mcp::listing::{JsonRow, Listed, ListsWindows, RowKind};
use crate::mcp::pane_access::{PaneAccess, WindowNamed};
use crate::mcp::row_object::object;
use crate::mcp::shared_tool::{MuxTool, Reply};
use crate::mcp::window_creation::{CreateWindowInput, CreatesWindows, Position};
use muxgate_mux::multiplexer::{Multiplexer, WindowMove};
use muxgate_tmux::typed::op_error::OpError;
use muxgate_tmux::typed::windows::{NewWindow, Place, Side, Window};
use muxgate_tmux::wire::target::{ClientTarget, SessionSel, Target};
use muxgate_tmux::{SessionId, WindowId};
use muxgate_zellij::unsupported;

/// The windows the caller may see: those of sessions its session ACL allows.
fn visible(tmux: &TmuxAccess<'_>, windows: Vec<Window>) -> impl Iterator<Item = Window> {
    windows
        .into_iter()
        .filter(|window| tmux.can_see_window(window))
}

/// The windows the caller may see: of one session (by id, `$N`), or of every session.
pub(crate) async fn list_window_rows(
    tmux: &TmuxAccess<'_>,
    session_id: Option<SessionId>,
) -> Result<Vec<Window>, ToolError> {
    let windows = tmux
        .windows()
        .list(session_id.map(|id| id.to_string()).as_deref())
        .await
        .map_err(|e| window_error(tmux, e, SESSIONS_HINT, UNANSWERED))?;
    Ok(visible(tmux, windows).collect())
}

/// The error for a line that ended without an answer for every command.
const UNANSWERED: (&str, &str) = (
    "tmux did not answer for every command",
    "call list_windows to check the window's state",
);

/// A failed window operation as an error for the model: engine failures suggest `list_hint`,
/// and an answer tmux left out reads `missing` (message, suggestion).
fn window_error(
    tmux: &TmuxAccess<'_>,
    error: OpError,
    list_hint: &str,
    missing: (&str, &str),
) -> ToolError {
    match error {
        OpError::Engine(error) => engine_error(tmux.server_name(), error, list_hint),
        OpError::Quote(error) => build_error(error),
        OpError::Refused(message) => refused(&message),
        OpError::Unanswered => ToolError::new(ToolErrorKind::Internal, missing.0, missing.1),
    }
}

/// `window` as a change left it, from its session's windows listed right after the change.
fn window_after(
    tmux: &TmuxAccess<'_>,
    changed: Result<Vec<Window>, OpError>,
    session: SessionId,
    window: WindowId,
) -> Result<Window, ToolError> {
    let windows = changed.map_err(|e| window_error(tmux, e, "call list_panes", UNANSWERED))?;
    visible(tmux, windows)
        .find(|w| w.id == window)
        .ok_or_else(|| {
            ToolError::not_found(
                format!("window {window} is no longer in session {session}"),
                "call list_windows",
            )
        })
}

fn refused(message: &str) -> ToolError {
    if message.contains("can't find") || message.contains("no such") {
        return ToolError::not_found(format!("tmux: {message}"), WINDOWS_HINT);
    }
    ToolError::new(
        ToolErrorKind::Conflict,
        format!("tmux refused the command: {message}"),
        "check the arguments against the tool description; list the target's state first",
    )
}

/// Conditions on windows; every given field must hold.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WindowFilters {
    /// Exact name or glob (`*`, `?`); case-sensitive.
    #[serde(default)]
    pub name: Option<String>,
    /// `true`: only each session's current window; `false`: only the others.
    #[serde(default)]
    pub active: Option<bool>,
}

struct WindowMatcher {
    name: Option<NamePattern>,
    active: Option<bool>,
}

impl WindowMatcher {
    fn new(filters: Option<&WindowFilters>) -> Result<Self, ToolError> {
        Ok(Self {
            name: name_filter(filters.and_then(|f| f.name.as_deref()))?,
            active: filters.and_then(|f| f.active),
        })
    }

    /// Whether a backend's row (a tmux window, a Zellij tab) matches, by its `name` and
    /// `active`.
    fn matches(&self, row: &JsonRow) -> bool {
        let name = row.get("name").and_then(Value::as_str).unwrap_or_default();
        let active = row.get("active").and_then(Value::as_bool) == Some(true);
        self.name.as_ref().is_none_or(|p| p.matches(name))
            && self.active.is_none_or(|a| a == active)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListWindowsInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Only this session's windows (`$N` or exact name); default: all you may see. Zellij: a
    /// session name (default: the server's session); its tabs are listed.
    #[serde(default)]
    pub target: Option<String>,
    /// Only windows matching every given field.
    #[serde(default)]
    pub filters: Option<ObjectArg<WindowFilters>>,
    /// Fields wanted, e.g. `["name", "layout"]` (`id` always); `["all"]`: every field.
    #[serde(default)]
    pub fields: Option<Vec<String>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ListWindowsOutput {
    pub server: String,
    /// Zellij: the session listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Windows by session, then index, with the fields asked for. A window linked into
    /// several sessions appears once per session.
    #[schemars(with = "Vec<Window>")]
    pub windows: Vec<Map<String, Value>>,
}

/// What a `list_windows` row shows by default: where it is, its size and its active pane (its
/// layout string, long and rarely needed, on request).
pub(crate) const WINDOW_SHAPE: RowShape = RowShape {
    always: &["id"],
    all: &[
        "id",
        "index",
        "name",
        "session_id",
        "session_name",
        "active",
        "panes",
        "width",
        "height",
        "zoomed",
        "active_pane_id",
        "layout",
    ],
    default: &[
        "index",
        "name",
        "session_name",
        "panes",
        "width",
        "height",
        "active_pane_id",
    ],
    when_set: &["active", "zoomed"],
};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetWindowInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Window `@N`; a pane `%N` means its window, a session its current window.
    pub target: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct WindowOutput {
    pub server: String,
    pub window: AnsweredWindow,
}

impl WindowOutput {
    fn tmux(tmux: &TmuxAccess<'_>, window: Window) -> Self {
        Self {
            server: tmux.server_name().to_owned(),
            window: Row::Tmux(window),
        }
    }
}

impl From<Position> for Side {
    fn from(position: Position) -> Self {
        match position {
            Position::Before => Side::Before,
            Position::After => Side::After,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct KillWindowInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Window id (`@N`) only. Zellij: a tab, `[SESSION:]N` (its `tab_id`).
    pub target: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct KillWindowOutput {
    pub server: String,
    /// Id of the killed window.
    pub id: String,
    /// The session it was in (Zellij: its name).
    pub session_id: String,
    /// Whether that session ended because this was its last window.
    pub session_closed: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RenameWindowInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Window id (`@N`). Zellij: a tab, `[SESSION:]N` (its `tab_id`).
    pub target: String,
    /// 1-64 chars, no `#` or control chars.
    pub new_name: String,
}

/// Which window to select relative to the session's current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WindowStep {
    Next,
    Previous,
    Last,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SelectWindowInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Window `@N`, or a session (`$N` or exact name) with `step` or `index`. Zellij: a tab,
    /// `[SESSION:]N` (its `tab_id`).
    pub target: String,
    /// With a session target: next/previous by index (wrapping), or last (previously current).
    #[serde(default)]
    pub step: Option<WindowStep>,
    /// With a session target: the index of the window to select.
    #[serde(default)]
    pub index: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResizeWindowInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Window id (`@N`).
    pub target: String,
    /// Width in columns (1-10000); give width, height or both.
    #[serde(default)]
    pub width: Option<u32>,
    /// Height in rows (1-10000).
    #[serde(default)]
    pub height: Option<u32>,
}

/// The layouts tmux knows by name (3.3 and later; 3.5 adds the mirrored ones).
const NAMED_LAYOUTS: [&str; 7] = [
    "even-horizontal",
    "even-vertical",
    "main-horizontal",
    "main-vertical",
    "tiled",
    "main-horizontal-mirrored",
    "main-vertical-mirrored",
];

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SelectLayoutInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Window id (`@N`).
    pub target: String,
    /// even-horizontal, even-vertical, main-horizontal, main-vertical, tiled, or a layout string
    /// from list_windows.
    pub layout: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MoveWindowInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Window id (`@N`).
    pub target: String,
    /// A session (`$N` or exact name; next free index), or a window `@N` with `position`.
    pub destination: String,
    /// With a window destination: `before` or `after` it.
    #[serde(default)]
    pub position: Option<Position>,
    /// Make it the destination session's current window (humans there see it).
    #[serde(default)]
    pub select: bool,
}

/// Checks a layout argument: a known name, or tmux's layout string syntax (tmux verifies the
/// checksum and geometry itself).
fn check_layout(layout: &str) -> Result<(), ToolError> {
    if NAMED_LAYOUTS.contains(&layout) {
        return Ok(());
    }
    let (checksum, body) = layout.split_once(',').unwrap_or(("", ""));
    let is_layout_string = checksum.len() == 4
        && checksum.bytes().all(|b| b.is_ascii_hexdigit())
        && !body.is_empty()
        && layout.len() <= 8192
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || b"x,[]{}".contains(&b));
    if is_layout_string {
        return Ok(());
    }
    Err(ToolError::invalid_arguments(
        format!(
            "layout {:?} is neither a layout name nor a layout string",
            excerpt(layout)
        ),
        "use even-horizontal, even-vertical, main-horizontal, main-vertical or tiled, or a layout string from list_windows",
    ))
}

/// Where a window is created or moved, and the session it ends up in.
struct Placement {
    place: Place,
    session: SessionId,
}

/// Resolves a create/move destination (checking the caller may see it).
async fn placement(
    tmux: &TmuxAccess<'_>,
    destination: &Target,
    position: Option<Position>,
    field: &str,
) -> Result<Placement, ToolError> {
    let resolved = tmux.resolve(destination).await?;
    match (destination, position) {
        (Target::Window(window), Some(position)) => Ok(Placement {
            place: Place::Beside(*window, position.into()),
            session: resolved.session_id,
        }),
        (Target::Session(_), None) => Ok(Placement {
            place: Place::In(resolved.session_id),
            session: resolved.session_id,
        }),
        (Target::Window(_), None) => Err(ToolError::invalid_arguments(
            format!("{field} is a window: pass position (before or after) to say where"),
            "or pass a session to use the next free index",
        )),
        (Target::Session(_), Some(_)) => Err(ToolError::invalid_arguments(
            format!("position needs a window {field} (@N), not a session"),
            "omit position, or pass the window to place it next to",
        )),
        (Target::Pane(_), _) => Err(ToolError::invalid_arguments(
            format!("{field} must be a session or a window, not a pane"),
            "call list_windows and pass a window id, or pass a session",
        )),
    }
}

impl From<WindowStep> for WindowMove {
    fn from(step: WindowStep) -> Self {
        match step {
            WindowStep::Next => WindowMove::Next,
            WindowStep::Previous => WindowMove::Previous,
            WindowStep::Last => WindowMove::Last,
        }
    }
}

impl SelectWindowInput {
    /// The move `step` or `index` asks for; without either, the target window itself.
    fn towards(&self) -> WindowMove {
        match (self.step, self.index) {
            (Some(step), _) => step.into(),
            (None, Some(index)) => WindowMove::Index(index),
            (None, None) => WindowMove::Here,
        }
    }
}

/// What `select_window` selects on tmux, where a window target takes neither `step` nor
/// `index` and a session target takes one of them.
fn select_move(
    target: &Target,
    step: Option<WindowStep>,
    index: Option<u32>,
) -> Result<WindowMove, ToolError> {
    match (target, step, index) {
        (Target::Window(_), None, None) => Ok(WindowMove::Here),
        (Target::Session(_), Some(step), None) => Ok(step.into()),
        (Target::Session(_), None, Some(index)) => Ok(WindowMove::Index(index)),
        (Target::Window(_), _, _) => Err(ToolError::invalid_arguments(
            "step and index go with a session target, not a window id",
            "pass only the window id, or pass its session with step or index",
        )),
        (Target::Session(_), None, None) => Err(ToolError::invalid_arguments(
            "with a session target, pass step (next, previous, last) or index",
            "or pass a window id (@N) from list_windows",
        )),
        (Target::Session(_), Some(_), Some(_)) => Err(ToolError::invalid_arguments(
            "pass either step or index, not both",
            "remove one of them",
        )),
        (Target::Pane(_), _, _) => Err(ToolError::invalid_arguments(
            "select_window takes a window id (@N) or a session, not a pane",
            "to make a pane active call select_pane",
        )),
    }
}

#[tool_router(router = window_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "list_windows",
        description = "List the windows you may see, of one session or all.\n\n\
            Returns each window's id (`@N`), index, name, session, pane count, size, active pane; \
            `active` (the session's current window), `zoomed` when set.",
        annotations(
            title = "List windows",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_windows(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ListWindowsInput>,
    ) -> Result<Json<ListWindowsOutput>, ToolError> {
        self.serve(&call, input).await.map(Json)
    }

    #[tool(
        name = "get_window_info",
        description = "Describe one tmux window, as list_windows shows it.",
        annotations(
            title = "Get window info",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_window_info(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<GetWindowInput>,
    ) -> Result<Json<WindowOutput>, ToolError> {
        check_target(&input.target)?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = tmux.target(&input.target).await?;
        let window = match &target {
            Target::Window(id) => *id,
            other => tmux.resolve(other).await?.window_id,
        };
        let window = list_window_rows(&tmux, None)
            .await?
            .into_iter()
            .find(|w| w.id == window)
            .ok_or_else(|| {
                ToolError::not_found(format!("no window {window} on this server"), WINDOWS_HINT)
            })?;
        Ok(Json(WindowOutput::tmux(&tmux, window)))
    }

    #[tool(
        name = "create_window",
        description = "Create a window (default shell, or `shell`) without switching to it.\n\n\
            Humans keep their current window unless `select: true`. Returns the window: \
            its id (`@N`) and `active_pane_id`, where to send input next.",
        annotations(
            title = "Create window",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn create_window(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<CreateWindowInput>,
    ) -> Result<Json<WindowOutput>, ToolError> {
        check_shell(input.shell.as_deref())?;
        self.serve(&call, input).await.map(Json)
    }

    #[tool(
        name = "kill_window",
        description = "Kill a window: its panes and their programs end.\n\n\
            Irreversible. Its session ends too if it was the last window (`session_closed`). \
            Refused for muxgate's own window. For one pane use kill_pane.",
        annotations(
            title = "Kill window",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn kill_window(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<KillWindowInput>,
    ) -> Result<Json<KillWindowOutput>, ToolError> {
        self.serve(&call, input).await.map(Json)
    }

    #[tool(
        name = "rename_window",
        description = "Rename a window.\n\n\
            tmux then stops naming it after its program. Humans see the new name; the id stays.",
        annotations(
            title = "Rename window",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn rename_window(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<RenameWindowInput>,
    ) -> Result<Json<WindowOutput>, ToolError> {
        self.serve(&call, input).await.map(Json)
    }

    #[tool(
        name = "select_window",
        description = "Make a window current in its session: CHANGES what attached humans see.\n\n\
            Not needed to read or type: capture_pane and send_keys work on any pane by id. Returns \
            the new current window.",
        annotations(
            title = "Select window",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn select_window(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<SelectWindowInput>,
    ) -> Result<Json<WindowOutput>, ToolError> {
        self.serve(&call, input).await.map(Json)
    }

    #[tool(
        name = "resize_window",
        description = "Set a window's size in cells; humans looking at it see the new size.\n\n\
            Sets its `window-size` option to manual; to follow clients again, unset it with \
            set_option (scope window). For one pane use resize_pane.",
        annotations(
            title = "Resize window",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn resize_window(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ResizeWindowInput>,
    ) -> Result<Json<WindowOutput>, ToolError> {
        if let Some(target) = checked_target(&input.target)? {
            window_only(&target, "resize_window")?;
        }
        if input.width.is_none() && input.height.is_none() {
            return Err(ToolError::invalid_arguments(
                "pass width, height or both",
                "e.g. width 120 and height 40",
            ));
        }
        validate_window_size(input.width, "width")?;
        validate_window_size(input.height, "height")?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = tmux.target(&input.target).await?;
        let window = window_only(&target, "resize_window")?;
        let resolved = tmux.resolve(&target).await?;
        let resized = tmux
            .windows()
            .resize(window, resolved.session_id, input.width, input.height)
            .await;
        let window = window_after(&tmux, resized, resolved.session_id, window)?;
        Ok(Json(WindowOutput::tmux(&tmux, window)))
    }

    #[tool(
        name = "select_layout",
        description = "Arrange a window's panes in a layout; humans see the panes move.\n\n\
            Pane ids and contents stay; sizes change. Returns the window with its new layout \
            string.",
        annotations(
            title = "Select layout",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn select_layout(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<SelectLayoutInput>,
    ) -> Result<Json<WindowOutput>, ToolError> {
        if let Some(target) = checked_target(&input.target)? {
            window_only(&target, "select_layout")?;
        }
        check_layout(&input.layout)?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = tmux.target(&input.target).await?;
        let window = window_only(&target, "select_layout")?;
        let resolved = tmux.resolve(&target).await?;
        let laid_out = tmux
            .windows()
            .select_layout(window, resolved.session_id, &input.layout)
            .await;
        let window = window_after(&tmux, laid_out, resolved.session_id, window)
            .map_err(|e| match e.message.contains("invalid layout") {
                true => ToolError::invalid_arguments(
                    e.message,
                    "pass a layout name, or a layout string exactly as list_windows reported it for this window",
                ),
                false => e,
            })?;
        Ok(Json(WindowOutput::tmux(&tmux, window)))
    }

    #[tool(
        name = "move_window",
        description = "Move a window within its session or to another session.\n\n\
            It keeps its id, panes and programs. No current window changes unless `select: true`. \
            A session left without windows ends. Returns the window at its new place.",
        annotations(
            title = "Move window",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn move_window(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<MoveWindowInput>,
    ) -> Result<Json<WindowOutput>, ToolError> {
        if let Some(target) = checked_target(&input.target)? {
            window_only(&target, "move_window")?;
        }
        check_target(&input.destination)?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = tmux.target(&input.target).await?;
        let window = window_only(&target, "move_window")?;
        let destination = tmux.target(&input.destination).await?;
        tmux.resolve(&target).await?;
        let place = placement(&tmux, &destination, input.position, "destination").await?;
        if destination == Target::Window(window) {
            return Err(ToolError::invalid_arguments(
                "destination is the window being moved",
                "pass another window or a session as destination",
            ));
        }
        let moved = tmux
            .windows()
            .move_to(window, place.place, place.session, input.select)
            .await;
        let window = window_after(&tmux, moved, place.session, window)?;
        Ok(Json(WindowOutput::tmux(&tmux, window)))
    }
}

/// The tmux session a `list_windows` `target` names, if it names one (it must be a session).
fn listed_session(target: Option<&str>) -> Result<Option<SessionSel>, ToolError> {
    match target.map(ClientTarget::parse).transpose() {
        Err(e) => Err(target_error(&e)),
        Ok(None) => Ok(None),
        Ok(Some(ClientTarget::Direct(Target::Session(session)))) => Ok(Some(session)),
        Ok(Some(other)) => Err(ToolError::invalid_arguments(
            format!("target must be a session, not {other}"),
            "pass a session id ($N) or name, or omit target for every session",
        )),
    }
}

/// What a backend's `list_windows` rows hold: a tmux window's shaped row, or a Zellij tab's
/// whole row.
fn window_rows_of(backend: Backend) -> RowKind {
    match backend {
        Backend::Tmux => RowKind::Shaped(&WINDOW_SHAPE),
        Backend::Zellij => RowKind::Whole {
            fields: ZELLIJ_TAB_FIELDS,
            instead: "omit fields for a Zellij server",
        },
    }
}

impl MuxTool for ListWindowsInput {
    type Answer = ListWindowsOutput;

    fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    fn check(&self, backend: Backend) -> Result<(), ToolError> {
        WindowMatcher::new(self.filters.as_deref())?;
        if backend == Backend::Tmux {
            listed_session(self.target.as_deref())?;
        }
        window_rows_of(backend).view(self.fields.as_deref(), "list_windows")?;
        Ok(())
    }

    async fn act<A: PaneAccess>(self, _: &McpServer, access: A) -> Reply<Self> {
        let matcher = WindowMatcher::new(self.filters.as_deref())?;
        let view = window_rows_of(A::BACKEND).view(self.fields.as_deref(), "list_windows")?;
        let listed = access.window_rows(self.target.as_deref()).await?;
        Ok(ListWindowsOutput {
            server: access.server_name().to_owned(),
            session: listed.session,
            windows: view.show(listed.rows, |row| matcher.matches(row)),
        })
    }
}

impl ListsWindows for TmuxAccess<'_> {
    /// The windows of one session (every session's without `target`); a session with none the
    /// caller may see is not found.
    async fn window_rows(&self, target: Option<&str>) -> Result<Listed, ToolError> {
        let session = listed_session(target)?;
        let windows: Vec<Window> = list_window_rows(self, None)
            .await?
            .into_iter()
            .filter(|w| match &session {
                None => true,
                Some(SessionSel::Id(id)) => w.session_id == id.to_string(),
                Some(SessionSel::Name(name)) => w.session_name == name.as_str(),
            })
            .collect();
        if let Some(session) = &session
            && windows.is_empty()
        {
            // Every session has a window: none means no such (visible) session.
            return Err(ToolError::not_found(
                format!("no session {session} on this server"),
                SESSIONS_HINT,
            ));
        }
        Ok(Listed {
            session: None,
            rows: windows.iter().map(object).collect::<Result<_, _>>()?,
        })
    }
}

impl MuxTool for CreateWindowInput {
    type Answer = WindowOutput;

    fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    fn check(&self, backend: Backend) -> Result<(), ToolError> {
        match backend {
            Backend::Tmux => {
                if self.layout.is_some() {
                    return Err(ToolError::unsupported(
                        muxgate_tmux::unsupported::LAYOUT,
                        "omit layout, then call split_window and select_layout",
                    ));
                }
                check_target(&self.target)?;
                if let Some(name) = &self.name {
                    check_window_name(name, "name")?;
                }
                if let Some(dir) = &self.start_directory {
                    validate_start_directory(dir)?;
                }
                validate_environment(self.environment.clone().unwrap_or_default().0)?;
            }
            Backend::Zellij => {
                if self.position.is_some() || self.environment.is_some() {
                    return Err(ToolError::unsupported(
                        unsupported::POSITION_AND_ENVIRONMENT,
                        "omit position and environment for a Zellij server",
                    ));
                }
            }
        }
        Ok(())
    }

    async fn act<A: PaneAccess>(self, gateway: &McpServer, access: A) -> Reply<Self> {
        let window = access.create_window(gateway, self).await?;
        Ok(WindowOutput {
            server: access.server_name().to_owned(),
            window,
        })
    }
}

impl CreatesWindows for TmuxAccess<'_> {
    /// A window placed in its session (next free index) or beside a window, running the
    /// `shell` given or the integrated shell.
    async fn create_window(
        &self,
        gateway: &McpServer,
        input: CreateWindowInput,
    ) -> Result<AnsweredWindow, ToolError> {
        let target = self.target(&input.target).await?;
        self.check_start_directory(input.start_directory.as_deref())?;
        let environment = validate_environment(input.environment.unwrap_or_default().0)?;
        let place = placement(self, &target, input.position, "target").await?;
        let new_window = NewWindow {
            place: place.place,
            name: input.name,
            start_directory: input.start_directory,
            environment,
            select: input.select,
        };
        let launch = match input.shell {
            Some(shell) => Some(vec![shell]),
            None => {
                let integration = gateway.state().config.tmux.shell_integration;
                self.integrated_shell(integration).await
            }
        };
        let window = self
            .windows()
            .create(&new_window, launch.as_deref())
            .await
            .map_err(|e| {
                window_error(
                    self,
                    e,
                    "call list_windows to see valid targets",
                    (
                        "tmux did not report the new window",
                        "call list_windows to find it",
                    ),
                )
            })?;
        Ok(Row::Tmux(window))
    }
}

impl MuxTool for KillWindowInput {
    type Answer = KillWindowOutput;

    fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    fn check(&self, backend: Backend) -> Result<(), ToolError> {
        if backend == Backend::Tmux
            && let Some(target) = checked_target(&self.target)?
        {
            window_only(&target, "kill_window")?;
        }
        Ok(())
    }

    /// On Zellij the session's last tab is refused, as closing it would end the session.
    async fn act<A: PaneAccess>(self, gateway: &McpServer, access: A) -> Reply<Self> {
        let named = WindowNamed::Window("kill_window");
        let scoped = access.window(&self.target, named).await?;
        access.may_kill_window(gateway, &scoped).await?;
        let session_closed = scoped
            .mux
            .kill_window(&scoped.window)
            .await
            .map_err(|e| access.window_error(e))?;
        Ok(KillWindowOutput {
            server: access.server_name().to_owned(),
            id: scoped.window.to_string(),
            session_id: scoped.session,
            session_closed,
        })
    }
}

impl MuxTool for RenameWindowInput {
    type Answer = WindowOutput;

    fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    fn check(&self, backend: Backend) -> Result<(), ToolError> {
        if backend == Backend::Tmux {
            if let Some(target) = checked_target(&self.target)? {
                window_only(&target, "rename_window")?;
            }
            check_window_name(&self.new_name, "new_name")?;
        }
        Ok(())
    }

    async fn act<A: PaneAccess>(self, _: &McpServer, access: A) -> Reply<Self> {
        let named = WindowNamed::Window("rename_window");
        let scoped = access.window(&self.target, named).await?;
        let row = scoped
            .mux
            .rename_window(&scoped.window, &self.new_name)
            .await
            .map_err(|e| access.window_error(e))?;
        Ok(WindowOutput {
            server: access.server_name().to_owned(),
            window: access.answered_window(&scoped, row)?,
        })
    }
}

impl MuxTool for SelectWindowInput {
    type Answer = WindowOutput;

    fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    fn check(&self, backend: Backend) -> Result<(), ToolError> {
        match backend {
            Backend::Tmux => {
                if let Some(target) = checked_target(&self.target)? {
                    select_move(&target, self.step, self.index)?;
                }
            }
            Backend::Zellij if self.step.is_some() || self.index.is_some() => {
                return Err(ToolError::unsupported(
                    unsupported::STEP_AND_INDEX,
                    "call list_windows and pass the tab's tab_id as target",
                ));
            }
            Backend::Zellij => {}
        }
        Ok(())
    }

    /// On tmux a move (`step`, `index`) starts from the session's current window; on Zellij
    /// every attached human is switched to the tab.
    async fn act<A: PaneAccess>(self, _: &McpServer, access: A) -> Reply<Self> {
        let towards = self.towards();
        let named = match towards {
            WindowMove::Here => WindowNamed::Window("select_window"),
            _ => WindowNamed::Session("select_window"),
        };
        let scoped = access.window(&self.target, named).await?;
        let row = scoped
            .mux
            .select_window(&scoped.window, towards)
            .await
            .map_err(|e| access.window_error(e))?;
        Ok(WindowOutput {
            server: access.server_name().to_owned(),
            window: access.answered_window(&scoped, row)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_view_names_fields_of_the_row() {
        crate::mcp::fields::assert_shape_covers::<Window>(&WINDOW_SHAPE);
    }

    #[test]
    fn filters_apply() {
        let w = Window {
            id: WindowId(3),
            index: 2,
            name: "my editor|x".into(),
            session_id: "$1".into(),
            session_name: "main".into(),
            session_created: 0,
            active: true,
            panes: 2,
            width: 80,
            height: 24,
            zoomed: false,
            active_pane_id: "%5".into(),
            layout: "abcd,80x24,0,0".into(),
        };
        let filters = WindowFilters {
            name: Some("my*".into()),
            active: Some(true),
        };
        let m = WindowMatcher::new(Some(&filters)).unwrap();
        let row = |window: &Window| object(window).unwrap();
        assert!(m.matches(&row(&w)));
        assert!(!m.matches(&row(&Window {
            active: false,
            ..w.clone()
        })));
        assert!(!m.matches(&row(&Window {
            name: "shell".into(),
            ..w
        })));
        let tab = JsonRow::from_iter([
            ("name".to_owned(), Value::from("my tab")),
            ("active".to_owned(), Value::from(true)),
        ]);
        assert!(m.matches(&tab), "a Zellij tab's row matches as a window's");
    }

    #[test]
    fn layouts_are_names_or_layout_strings() {
        assert!(check_layout("tiled").is_ok());
        assert!(check_layout("c08a,100x30,0,0[100x15,0,0,0,100x14,0,16,1]").is_ok());
        for bad in [
            "",
            "bogus",
            "c08a,",
            "zzzz,1x1,0,0",
            "c08a,1x1;kill-server",
            "c08a 1x1",
        ] {
            assert!(check_layout(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn positions_and_selections_are_read() {
        assert_eq!(Side::from(Position::Before), Side::Before);
        assert_eq!(Side::from(Position::After), Side::After);
        assert!(matches!(
            select_move(&Target::parse("@4").unwrap(), None, None),
            Ok(WindowMove::Here)
        ));
        let session = Target::parse("main").unwrap();
        assert!(matches!(
            select_move(&session, Some(WindowStep::Next), None),
            Ok(WindowMove::Next)
        ));
        assert!(matches!(
            select_move(&session, None, Some(2)),
            Ok(WindowMove::Index(2))
        ));
        for (target, step, index) in [
            ("@4", Some(WindowStep::Last), None),
            ("@4", None, Some(1)),
            ("main", None, None),
            ("main", Some(WindowStep::Last), Some(1)),
            ("%1", None, None),
        ] {
            let target = Target::parse(target).unwrap();
            assert!(select_move(&target, step, index).is_err(), "{target:?}");
        }
    }
}
