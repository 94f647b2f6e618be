//! Tools that read panes: listings, single-pane details, snapshots, captures, formats, and
//! finding a pane by its position. None of them changes anything in tmux or in any human's
//! view; each costs one or two tmux commands written in one batch.
//!
//! Pane tools that change things live in [`super::pane_lifecycle`] (split, kill, respawn,
//! select, resize, swap, title, clear), [`super::copy_mode`] and [`super::pipe`]; input in
//! [`super::input`]; searching in [`super::search`].

use std::borrow::Cow;
use std::collections::BTreeMap;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::support::check_tmux_format;
use super::zellij_objects::ZELLIJ_PANE_FIELDS;
use crate::mcp::McpServer;
use crate::mcp::access::{TmuxAccess, check_target, list_hint};
use crate::mcp::args::ObjectArg;
use crate::mcp::backend::Backend;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::fields::RowShape;
use crate::mcp::filter::Filters;
use crate::mcp::listing::{Listed, ListsPanes, PaneQuery, RowKind};
use crate::mcp::pane_access::PaneAccess;
use crate::mcp::pane_ops::{
    PANE_INFO_FIELDS, PANE_SHAPE, PaneInfo, PaneRow, PaneScope, check_max_lines, not_found,
    pane_info, pane_rows, quote_error, shape_and_cap,
};
use crate::mcp::row_object::object_of;
use crate::mcp::shared_tool::{MuxTool, Reply};
use crate::mcp::tools::watch::foreground_of;
use crate::mux::agent_report::{AgentReports, PaneInstance};
use muxgate_mux::error::Unsupported;
use muxgate_mux::multiplexer::{CaptureRange, LineBound, Multiplexer};
use muxgate_tmux::EngineError;
use muxgate_tmux::ops::capture::DEFAULT_MAX_LINES;
use muxgate_tmux::ops::display::PaneSnapshot;
use muxgate_tmux::wire::target::Target;
use muxgate_zellij::panes::capture_scope;
use muxgate_zellij::unsupported;

pub(crate) fn default_max_lines() -> usize {
    DEFAULT_MAX_LINES
}

/// A line bound as clients send it: a line number, or `"-"` for the edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineArg(pub LineBound);

impl<'de> Deserialize<'de> for LineArg {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LineVisitor;
        impl Visitor<'_> for LineVisitor {
            type Value = LineArg;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a line number (0 = top of the screen, negative = history) or \"-\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LineArg, E> {
                Ok(LineArg(LineBound::Line(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LineArg, E> {
                i64::try_from(v)
                    .map(|v| LineArg(LineBound::Line(v)))
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LineArg, E> {
                match v {
                    "-" => Ok(LineArg(LineBound::Edge)),
                    other => other
                        .parse::<i64>()
                        .map(|n| LineArg(LineBound::Line(n)))
                        .map_err(|_| E::invalid_value(de::Unexpected::Str(other), &self)),
                }
            }
        }
        deserializer.deserialize_any(LineVisitor)
    }
}

impl JsonSchema for LineArg {
    fn schema_name() -> Cow<'static, str> {
        "LineBound".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A line number (0 = top visible line, negative = scrollback history) or \"-\" (start of history / end of screen).",
            "oneOf": [{"type": "integer"}, {"type": "string", "const": "-"}]
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListPanesInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Only this session (`$N`, name), window `@N` or pane's window `%N`; default: all.
    /// Zellij: a session name (default: the server's session).
    #[serde(default)]
    pub target: Option<String>,
    /// Match output fields, e.g. `{"title__icontains": "build"}`.
    /// Key suffixes: __[i]exact, __[i]contains, __[i]startswith, __[i]endswith, __[i]regex,
    /// __in, __nin, __gt, __gte, __lt, __lte.
    // This text is the argument's description in the tool listing, which shows `[i]` as is.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[serde(default)]
    pub filters: Option<ObjectArg<BTreeMap<String, Value>>>,
    /// Fields wanted, e.g. `["window_index", "pid"]` (`id` always); `["all"]`: every field.
    /// Default: id, session_name, size, command, path; flags when set. State (waiting_for_input,
    /// idle_for_ms, at_prompt, agent_state…) only on request.
    #[serde(default)]
    pub fields: Option<Vec<String>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ListPanesOutput {
    pub server: String,
    /// Zellij: the session listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Matching panes, in tmux's order (session, window, pane index), with the fields asked for.
    #[schemars(with = "Vec<ListedPane>")]
    pub panes: Vec<serde_json::Map<String, Value>>,
}

/// A `list_panes` row: the pane's details and, when asked for (in `fields` or `filters`), its
/// state as `get_pane_state` says it — from `/proc` (outside workspaces), from its output stream
/// if that is recording already (a listing starts none), and from its agent's hook.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ListedPane {
    #[serde(flatten)]
    info: PaneInfo,
    waiting_for_input: Option<bool>,
    foreground_command_line: Option<String>,
    idle_for_ms: Option<u64>,
    at_prompt: Option<bool>,
    agent_state: Option<&'static str>,
}

/// The fields of [`ListedPane`] beyond [`PaneInfo`]'s.
const PANE_STATE_FIELDS: [&str; 5] = [
    "waiting_for_input",
    "foreground_command_line",
    "idle_for_ms",
    "at_prompt",
    "agent_state",
];

/// Every field of a [`ListedPane`], for `fields` and `filters`.
const LISTED_PANE_FIELDS: [&str; PANE_INFO_FIELDS.len() + PANE_STATE_FIELDS.len()] = {
    let mut all = [""; PANE_INFO_FIELDS.len() + PANE_STATE_FIELDS.len()];
    let mut i = 0;
    while i < all.len() {
        all[i] = if i < PANE_INFO_FIELDS.len() {
            PANE_INFO_FIELDS[i]
        } else {
            PANE_STATE_FIELDS[i - PANE_INFO_FIELDS.len()]
        };
        i += 1;
    }
    all
};

/// `list_panes` rows: [`PANE_SHAPE`] with the state fields on request.
const LISTED_PANE_SHAPE: RowShape = RowShape {
    all: &LISTED_PANE_FIELDS,
    ..PANE_SHAPE
};

impl ListedPane {
    /// `row` with its state when `with_state`, else without.
    async fn new(
        tmux: &TmuxAccess<'_>,
        row: PaneRow,
        reports: &AgentReports,
        with_state: bool,
    ) -> Self {
        let mut listed = Self {
            waiting_for_input: None,
            foreground_command_line: None,
            idle_for_ms: None,
            at_prompt: None,
            agent_state: None,
            info: row.info,
        };
        if !with_state {
            return listed;
        }
        let pane = &listed.info.record;
        if let Some(fg) = foreground_of(tmux, pane.server_pid, pane.pid, &pane.tty, pane.dead).await
        {
            listed.waiting_for_input = fg.waiting_for_input();
            listed.foreground_command_line = Some(fg.command_line);
        }
        if let Some(stream) = tmux.server.recording(pane.pane) {
            listed.idle_for_ms = stream
                .quiet_for()
                .map(|quiet| u64::try_from(quiet.as_millis()).unwrap_or(u64::MAX));
            listed.at_prompt =
                stream.with_ledger(|ledger| ledger.shell_integrated().then(|| ledger.at_prompt()));
        }
        let instance = PaneInstance {
            server: pane.server_pid,
            pane: pane.pane,
            program: pane.pid,
        };
        listed.agent_state = reports
            .latest(&tmux.instance(), instance)
            .map(|report| report.state.as_str());
        listed
    }
}

/// Whether a `list_panes` call's `filters` name `plugin`, which lists Zellij's plugin panes.
fn names_plugin(input: &ListPanesInput) -> bool {
    input
        .filters
        .as_ref()
        .is_some_and(|f| f.keys().any(|k| k.split("__").next() == Some("plugin")))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PaneTargetInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane.
    pub target: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SnapshotPaneInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane.
    pub target: String,
    /// Most lines of text returned; the bottom ones are kept.
    #[serde(default = "default_max_lines")]
    pub max_lines: usize,
    /// Fields wanted, e.g. `["content", "title"]`; `["all"]`: every field.
    #[serde(default)]
    pub fields: Option<Vec<String>>,
}

/// `snapshot_pane`'s answer with the fields asked for.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(transparent)]
pub(crate) struct SnapshotPaneView(#[schemars(with = "SnapshotPaneOutput")] Map<String, Value>);

/// What a snapshot shows by default: what the pane shows and runs, where the cursor is, and
/// whatever is unusual about it (ids of its window and session, history, pid, title and edges
/// on request).
const SNAPSHOT_SHAPE: RowShape = RowShape {
    always: &["server", "pane_id"],
    all: &[
        "server",
        "pane_id",
        "window_id",
        "session_id",
        "cursor_x",
        "cursor_y",
        "width",
        "height",
        "in_mode",
        "mode",
        "scroll_position",
        "history_size",
        "history_limit",
        "alternate_screen",
        "pid",
        "current_command",
        "current_path",
        "dead",
        "dead_status",
        "title",
        "at_top",
        "at_bottom",
        "at_left",
        "at_right",
        "content",
        "content_lines",
        "truncated",
        "truncated_lines",
        "dropped_bytes",
    ],
    default: &[
        "cursor_x",
        "cursor_y",
        "width",
        "height",
        "current_command",
        "current_path",
        "content",
        "content_lines",
    ],
    when_set: &[
        "in_mode",
        "mode",
        "scroll_position",
        "alternate_screen",
        "dead",
        "dead_status",
        "truncated",
        "truncated_lines",
        "dropped_bytes",
    ],
};

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SnapshotPaneOutput {
    pub server: String,
    #[serde(flatten)]
    pub pane: PaneSnapshot,
    /// The visible text, trailing blank lines removed.
    pub content: String,
    /// Lines in `content`.
    pub content_lines: usize,
    /// Whether `content` was cut (lines by `max_lines`, bytes by your output budget).
    pub truncated: bool,
    pub truncated_lines: usize,
    pub dropped_bytes: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CapturePaneInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane. Zellij: `[SESSION:]terminal_N`.
    pub target: String,
    /// First line: 0 screen top (default), -N into scrollback, "-" its start.
    #[serde(default)]
    pub start: Option<LineArg>,
    /// Last line, as `start`; "-" (default) screen bottom.
    #[serde(default)]
    pub end: Option<LineArg>,
    /// Join lines the terminal wrapped into one line each.
    #[serde(default)]
    pub join_wrapped: bool,
    /// Keep colours and attributes as terminal escape sequences.
    #[serde(default)]
    pub escape_sequences: bool,
    /// Most lines returned; the last are kept, after a `[... N lines truncated ...]` line.
    #[serde(default = "default_max_lines")]
    pub max_lines: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CapturePaneOutput {
    pub server: String,
    /// Zellij: the pane's session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub pane_id: String,
    /// The captured text (trailing blank lines removed), behind a truncation marker line when
    /// lines were cut.
    pub text: String,
    /// Lines in `text` (the marker not counted), and lines the capture had in total.
    pub lines: usize,
    pub total_lines: usize,
    /// Whether anything was cut: `truncated_lines` from the top by `max_lines`, then
    /// `dropped_bytes` from the front by your output budget.
    pub truncated: bool,
    pub truncated_lines: usize,
    pub dropped_bytes: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DisplayMessageInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane.
    pub target: String,
    /// A tmux format, e.g. `#{pane_current_command} #{?pane_dead,dead,alive}`. Refused (error names
    /// it): `#(…)`, regex/search, loop and re-expansion modifiers, server-wide variables.
    pub format_string: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct DisplayMessageOutput {
    pub server: String,
    pub pane_id: String,
    /// The expanded format.
    pub output: String,
    /// Bytes cut from the front by your output budget.
    pub dropped_bytes: usize,
}

/// A window corner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Corner {
    TopLeft,
    TopRight,
    BottomLeft,
    BottomRight,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FindPaneByPositionInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Window `@N`; a pane `%N` or session (`$N`, name) means its (current) window.
    pub target: String,
    /// Which corner.
    pub corner: Corner,
}

#[tool_router(router = pane_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "list_panes",
        description = "List panes with their ids, sizes, programs and state.\n\n\
            Metadata only (`fields` for more): to search screen text use search_panes, to read it \
            capture_pane. Pass its `id` (`%N`) as other tools' `target`.",
        annotations(
            title = "List panes",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_panes(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ListPanesInput>,
    ) -> Result<Json<ListPanesOutput>, ToolError> {
        self.serve(&call, input).await.map(Json)
    }

    #[tool(
        name = "get_pane_info",
        description = "Get one pane's details: ids, size, position, program, working directory, \
            title, state.\n\n\
            For its text use capture_pane; for text plus cursor and mode, snapshot_pane.",
        annotations(
            title = "Get pane info",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_pane_info(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<PaneTargetInput>,
    ) -> Result<Json<PaneInfo>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = tmux.target(&input.target).await?;
        Ok(Json(pane_info(&tmux, &target).await?.info))
    }

    #[tool(
        name = "snapshot_pane",
        description = "Snapshot a pane: visible text, cursor, size, program and path; mode, \
            scroll, alternate screen and dead state when set (`fields` for more).\n\n\
            One call instead of capture_pane + get_pane_info; scrollback: capture_pane.",
        annotations(
            title = "Snapshot pane",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn snapshot_pane(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<SnapshotPaneInput>,
    ) -> Result<Json<SnapshotPaneView>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = tmux.target(&input.target).await?;
        let max_lines = check_max_lines(input.max_lines)?;
        let selection = SNAPSHOT_SHAPE.select(input.fields.as_deref(), "snapshot_pane")?;
        let pane = tmux.pane_of(&target).await?;
        let range = CaptureRange::visible();
        let read = tmux
            .pane_reads()
            .snapshot(pane, &range)
            .await
            .map_err(|e| tmux.error(e, list_hint(&target)))?
            .ok_or_else(|| not_found(&target))?;
        let (lines, row) = (read.lines, read.pane);
        let capture = shape_and_cap(&tmux, &lines, &range, max_lines);
        let snapshot = SnapshotPaneOutput {
            server: tmux.server_name().to_owned(),
            pane: row,
            truncated: capture.truncated(),
            content_lines: capture.captured.lines,
            truncated_lines: capture.captured.truncated_lines,
            dropped_bytes: capture.dropped_bytes,
            content: capture.captured.text,
        };
        Ok(Json(SnapshotPaneView(
            SNAPSHOT_SHAPE.shape(&snapshot, &selection)?,
        )))
    }

    #[tool(
        name = "capture_pane",
        description = "Read a pane's text: the visible screen, or any range of its scrollback.\n\n\
            Long captures keep the last lines. To wait for output use wait_for_text, not capture \
            in a loop.",
        annotations(
            title = "Capture pane",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub(crate) async fn capture_pane(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<CapturePaneInput>,
    ) -> Result<Json<CapturePaneOutput>, ToolError> {
        self.serve(&call, input).await.map(Json)
    }

    #[tool(
        name = "display_message",
        description = "Expand a tmux format string (`#{variable}`, conditionals, modifiers) in a \
            pane's context.\n\n\
            For variables no other tool reports, e.g. `#{pane_pid} #{pane_tty}`. Nothing is \
            displayed.",
        annotations(
            title = "Display message",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn display_message(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<DisplayMessageInput>,
    ) -> Result<Json<DisplayMessageOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = tmux.target(&input.target).await?;
        check_tmux_format(&input.format_string, "format_string")?;
        // Always resolved: tmux 3.3's display-message expands for another pane when the target
        // does not exist, instead of failing.
        let pane = tmux.resolve(&target).await?.pane_id;
        let lines = tmux
            .pane_reads()
            .expand(pane, &input.format_string)
            .await
            .map_err(|e| match e {
                EngineError::Quote(e) => quote_error(e),
                e => tmux.error(e, "call list_panes"),
            })?;
        let text = lines
            .iter()
            .map(|l| String::from_utf8_lossy(l))
            .collect::<Vec<_>>()
            .join("\n");
        let (output, dropped_bytes) = tmux.budget().cap_output(&text);
        Ok(Json(DisplayMessageOutput {
            server: tmux.server_name().to_owned(),
            pane_id: pane.to_string(),
            output,
            dropped_bytes,
        }))
    }

    #[tool(
        name = "find_pane_by_position",
        description = "Find the pane in a corner of a window (top_left, top_right, bottom_left, \
            bottom_right).\n\n\
            Returns the pane's details, including its `id`.",
        annotations(
            title = "Find pane by position",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn find_pane_by_position(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<FindPaneByPositionInput>,
    ) -> Result<Json<PaneInfo>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = tmux.target(&input.target).await?;
        let rows = pane_rows(&tmux, &PaneScope::Of(target.clone())).await?;
        let window: Vec<PaneInfo> = match &target {
            Target::Session(_) => rows
                .into_iter()
                .filter(|r| r.info.record.window_active)
                .map(|r| r.info)
                .collect(),
            _ => rows.into_iter().map(|r| r.info).collect(),
        };
        corner_pane(window, input.corner)
            .map(Json)
            .ok_or_else(|| not_found(&target))
    }
}

/// What a backend's `list_panes` rows hold: a tmux pane's shaped row (its state on request),
/// or a Zellij pane's whole row.
fn pane_rows_of(backend: Backend) -> RowKind {
    match backend {
        Backend::Tmux => RowKind::Shaped(&LISTED_PANE_SHAPE),
        Backend::Zellij => RowKind::Whole {
            fields: ZELLIJ_PANE_FIELDS,
            instead: "omit fields for a Zellij server",
        },
    }
}

impl MuxTool for ListPanesInput {
    type Answer = ListPanesOutput;

    fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    fn check(&self, backend: Backend) -> Result<(), ToolError> {
        let rows = pane_rows_of(backend);
        rows.view(self.fields.as_deref(), "list_panes")?;
        if backend == Backend::Tmux
            && let Some(target) = &self.target
        {
            check_target(target)?;
        }
        if let Some(filters) = &self.filters {
            Filters::parse(filters, rows.fields(), "list_panes")?;
        }
        Ok(())
    }

    async fn act<A: PaneAccess>(self, gateway: &McpServer, access: A) -> Reply<Self> {
        let rows = pane_rows_of(A::BACKEND);
        let filters = match &self.filters {
            Some(filters) => Filters::parse(filters, rows.fields(), "list_panes")?,
            None => Filters::default(),
        };
        let view = rows.view(self.fields.as_deref(), "list_panes")?;
        let query = PaneQuery {
            target: self.target.as_deref(),
            needed: view.needs(&filters),
            with_plugins: names_plugin(&self),
        };
        let listed = access.pane_rows(gateway, query).await?;
        Ok(ListPanesOutput {
            server: access.server_name().to_owned(),
            session: listed.session,
            panes: view.show(listed.rows, |row| filters.matches(row)),
        })
    }
}

impl ListsPanes for TmuxAccess<'_> {
    /// The panes of what `target` names (every pane without one), each with its state when
    /// asked for; a target with no pane the caller may see is not found.
    async fn pane_rows(
        &self,
        gateway: &McpServer,
        query: PaneQuery<'_>,
    ) -> Result<Listed, ToolError> {
        let scope = match query.target {
            Some(target) => PaneScope::Of(self.target(target).await?),
            None => PaneScope::All,
        };
        let rows = pane_rows(self, &scope).await?;
        if let PaneScope::Of(target) = &scope
            && rows.is_empty()
        {
            return Err(not_found(target));
        }
        let reports = &gateway.state().agent_reports;
        let needed = |field: &str| query.needed.contains(field);
        let with_state = PANE_STATE_FIELDS.iter().any(|field| needed(field));
        let mut listed = Vec::with_capacity(rows.len());
        for row in rows {
            let pane = ListedPane::new(self, row, reports, with_state).await;
            listed.push(object_of(&pane, needed)?);
        }
        Ok(Listed {
            session: None,
            rows: listed,
        })
    }
}

impl CapturePaneInput {
    fn range(&self) -> CaptureRange {
        CaptureRange {
            start: self.start.map(|s| s.0),
            end: self.end.map(|e| e.0),
            join_wrapped: self.join_wrapped,
            escape_sequences: self.escape_sequences,
        }
    }
}

/// A range Zellij cannot read ([`capture_scope`]), refused with what to ask for instead.
fn zellij_capture_refusal(refusal: Unsupported) -> ToolError {
    let instead = if refusal == unsupported::ESCAPE_SEQUENCES {
        "omit escape_sequences for a Zellij pane"
    } else if refusal == unsupported::CAPTURE_END {
        "omit end, and cut the answer with max_lines"
    } else {
        "pass start \"-\" and cut the answer with max_lines"
    };
    ToolError::unsupported(refusal, instead)
}

impl MuxTool for CapturePaneInput {
    type Answer = CapturePaneOutput;

    fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    fn check(&self, backend: Backend) -> Result<(), ToolError> {
        check_max_lines(self.max_lines)?;
        if backend == Backend::Zellij {
            capture_scope(&self.range()).map_err(zellij_capture_refusal)?;
        }
        Ok(())
    }

    async fn act<A: PaneAccess>(self, _: &McpServer, access: A) -> Reply<Self> {
        let scoped = access.pane(&self.target).await?;
        let captured = scoped
            .mux
            .capture(&scoped.pane, &self.range(), self.max_lines)
            .await
            .map_err(|e| access.error(&scoped, e))?;
        let (text, dropped_bytes) = access.budget().cap_output(&captured.text);
        Ok(CapturePaneOutput {
            server: access.server_name().to_owned(),
            session: scoped.session,
            pane_id: scoped.pane.to_string(),
            truncated: captured.truncated() || dropped_bytes > 0,
            lines: captured.lines,
            total_lines: captured.total_lines,
            truncated_lines: captured.truncated_lines,
            dropped_bytes,
            text,
        })
    }
}

/// The pane of one window that touches the given corner.
fn corner_pane(panes: Vec<PaneInfo>, corner: Corner) -> Option<PaneInfo> {
    let right = panes.iter().map(|p| p.record.left + p.record.width).max()?;
    let bottom = panes.iter().map(|p| p.record.top + p.record.height).max()?;
    let left = panes.iter().map(|p| p.record.left).min()?;
    let top = panes.iter().map(|p| p.record.top).min()?;
    panes.into_iter().find(|p| {
        let horizontal = match corner {
            Corner::TopLeft | Corner::BottomLeft => p.record.left == left,
            Corner::TopRight | Corner::BottomRight => p.record.left + p.record.width == right,
        };
        let vertical = match corner {
            Corner::TopLeft | Corner::TopRight => p.record.top == top,
            Corner::BottomLeft | Corner::BottomRight => p.record.top + p.record.height == bottom,
        };
        horizontal && vertical
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_view_names_fields_of_the_row() {
        crate::mcp::fields::assert_shape_covers::<SnapshotPaneOutput>(&SNAPSHOT_SHAPE);
    }

    fn pane(id: u32, left: u32, top: u32, width: u32, height: u32) -> PaneInfo {
        let mut record = muxgate_tmux::ops::pane_row::PaneRecord::parse(
            &muxgate_tmux::ops::pane_row::sample_row(),
        )
        .unwrap();
        record.pane = muxgate_tmux::PaneId(id);
        (record.left, record.top, record.width, record.height) = (left, top, width, height);
        PaneInfo {
            record,
            created_by_you: false,
        }
    }

    #[test]
    fn corners_of_a_three_pane_window() {
        // Left half %1; right half split into %2 (top) and %3 (bottom).
        let panes = vec![
            pane(1, 0, 0, 40, 24),
            pane(2, 41, 0, 39, 12),
            pane(3, 41, 13, 39, 11),
        ];
        let at = |c| corner_pane(panes.clone(), c).map(|p| p.record.pane.0);
        assert_eq!(at(Corner::TopLeft), Some(1));
        assert_eq!(at(Corner::BottomLeft), Some(1));
        assert_eq!(at(Corner::TopRight), Some(2));
        assert_eq!(at(Corner::BottomRight), Some(3));
        assert!(corner_pane(Vec::new(), Corner::TopLeft).is_none());
    }

    #[test]
    fn line_bounds_take_numbers_or_a_dash() {
        let parse = |v: Value| serde_json::from_value::<LineArg>(v).map(|l| l.0);
        assert_eq!(parse(serde_json::json!(-20)).unwrap(), LineBound::Line(-20));
        assert_eq!(parse(serde_json::json!(3)).unwrap(), LineBound::Line(3));
        assert_eq!(parse(serde_json::json!("-")).unwrap(), LineBound::Edge);
        assert_eq!(parse(serde_json::json!("-5")).unwrap(), LineBound::Line(-5));
        let err = parse(serde_json::json!("top")).unwrap_err().to_string();
        assert!(err.contains("line number"), "{err}");
        assert!(parse(serde_json::json!(1.5)).is_err());
    }
}
