//! Pane operations as plain async functions over a caller's [`TmuxAccess`]: listing panes,
//! finding the pane a tool acts on, delivering input, capturing text.
//!
//! The `#[tool]` functions stay thin wrappers around these, and other tools reuse them (batches
//! that send, wait and capture in one call). The commands themselves are built by the pure
//! [`muxgate_tmux::ops`] modules; this layer runs them as the caller, checks the caller's
//! session ACL, and turns failures into [`ToolError`]s.
//!
//! Functions taking a [`PaneId`] expect a pane the caller may act on: get it from
//! [`TmuxAccess::pane_of`] (or [`pane_rows`]) first.

use schemars::JsonSchema;
use serde::Serialize;

pub(crate) use super::access::not_found;
use super::access::{PANES_HINT, TmuxAccess, engine_error, list_hint, missing_as_not_found};
use super::error::{ToolError, ToolErrorKind};
use super::fields::RowShape;
use crate::auth::owners::SessionKey;
use muxgate_mux::multiplexer::{CaptureRange, CapturedText};
use muxgate_tmux::ops::capture::shape_capture;
use muxgate_tmux::ops::input::{InputError, InputPlan};
use muxgate_tmux::ops::pane_row::PaneRecord;
use muxgate_tmux::typed::op_error::OpError;
use muxgate_tmux::typed::panes::Delivered;
use muxgate_tmux::wire::target::Target;
use muxgate_tmux::{EngineError, PaneId, QuoteError};

/// One tmux pane, as listings and pane tools report it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct PaneInfo {
    #[serde(flatten)]
    pub record: PaneRecord,
    /// Whether its session was created through this gateway by you.
    pub created_by_you: bool,
}

/// What a `list_panes` row shows by default: its id and session, its size, what runs in it and
/// where, and its flags when they are set (window and pane positions on request).
pub(crate) const PANE_SHAPE: RowShape = RowShape {
    always: &["id"],
    all: &PANE_INFO_FIELDS,
    default: &[
        "session_name",
        "width",
        "height",
        "current_command",
        "current_path",
    ],
    when_set: &[
        "active",
        "zoomed",
        "dead",
        "dead_status",
        "mode",
        "created_by_you",
    ],
};

/// Field names of [`PaneInfo`], for filters.
pub(crate) const PANE_INFO_FIELDS: [&str; 24] = [
    "id",
    "index",
    "session_id",
    "session_name",
    "window_id",
    "window_index",
    "window_name",
    "active",
    "window_active",
    "zoomed",
    "width",
    "height",
    "left",
    "top",
    "pid",
    "current_command",
    "current_path",
    "title",
    "tty",
    "dead",
    "dead_status",
    "in_mode",
    "mode",
    "created_by_you",
];

/// A pane row with its session as the ownership table knows it (for the ACL check).
#[derive(Debug, Clone)]
pub(crate) struct PaneRow {
    pub info: PaneInfo,
    pub session: SessionKey,
}

impl PaneRow {
    /// The row as the caller sees it: `None` when its session is hidden from the caller, else
    /// with `created_by_you` set.
    pub(crate) fn for_caller(mut self, tmux: &TmuxAccess<'_>) -> Option<Self> {
        let name = &self.info.record.session_name;
        if !tmux.can_see(name, &self.session) {
            return None;
        }
        self.info.created_by_you = tmux.created_by_caller(&self.session, name);
        Some(self)
    }

    /// The pane's id.
    pub(crate) fn pane(&self) -> PaneId {
        self.info.record.pane
    }
}

impl From<PaneRecord> for PaneRow {
    fn from(record: PaneRecord) -> Self {
        Self {
            session: SessionKey {
                id: record.session_id.clone(),
                created: record.session_created,
            },
            info: PaneInfo {
                record,
                created_by_you: false,
            },
        }
    }
}

/// Which panes a listing covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PaneScope {
    /// Every pane of the server.
    All,
    /// The panes of a session (`$N` / name), of a window (`@N`), or of the window holding a
    /// pane (`%N`).
    Of(Target),
}

/// Lists the panes of `scope` that the caller may see, with one tmux command.
pub(crate) async fn pane_rows(
    tmux: &TmuxAccess<'_>,
    scope: &PaneScope,
) -> Result<Vec<PaneRow>, ToolError> {
    let hint = match scope {
        PaneScope::All => "call list_sessions",
        PaneScope::Of(target) => list_hint(target),
    };
    let target = match scope {
        PaneScope::All => None,
        PaneScope::Of(target) => Some(target),
    };
    let records = tmux.pane_reads().list(target).await.map_err(|e| {
        let error = match e {
            EngineError::Quote(e) => quote_error(e),
            e => tmux.error(e, hint),
        };
        match target {
            Some(target) => missing_as_not_found(error, target),
            None => error,
        }
    })?;
    Ok(visible_rows(tmux, records))
}

/// The rows of a pane listing that the caller may see.
pub(crate) fn visible_rows(tmux: &TmuxAccess<'_>, records: Vec<PaneRecord>) -> Vec<PaneRow> {
    records
        .into_iter()
        .filter_map(|record| PaneRow::from(record).for_caller(tmux))
        .collect()
}

/// The pane `target` designates — the pane itself, a window's active pane, or the active pane
/// of a session's current window — with its details, if the caller may see it (one command).
pub(crate) async fn pane_info(
    tmux: &TmuxAccess<'_>,
    target: &Target,
) -> Result<PaneRow, ToolError> {
    let rows = pane_rows(tmux, &PaneScope::Of(target.clone())).await?;
    let found = rows.into_iter().find(|row| match target {
        Target::Pane(pane) => row.pane() == *pane,
        Target::Window(_) => row.info.record.active,
        Target::Session(_) => row.info.record.window_active && row.info.record.active,
    });
    found.ok_or_else(|| not_found(target))
}

/// Runs an [`InputPlan`] in one write, after a reading of where the pane's output stood
/// ([`muxgate_tmux::typed::panes::TmuxPanes::deliver_marked`]).
pub(crate) async fn deliver(
    tmux: &TmuxAccess<'_>,
    plan: InputPlan,
) -> Result<Delivered, ToolError> {
    let pane = plan.pane();
    let delivered = tmux.panes().deliver_marked(plan).await;
    delivered.map_err(|e| tmux.pane_error(pane, PANES_HINT, e))
}

/// Pastes `text` into `pane` through a transient buffer
/// ([`muxgate_tmux::typed::panes::TmuxPanes::paste`]).
pub(crate) async fn paste_text(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    text: &[u8],
    bracket: bool,
) -> Result<Delivered, ToolError> {
    let pasted = tmux.panes().paste(pane, text, bracket).await;
    pasted.map_err(|e| tmux.pane_error(pane, PANES_HINT, e))
}

/// Text captured from a pane, shaped and capped for a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PaneCapture {
    pub captured: CapturedText,
    /// Bytes cut from the front by the caller's output budget (after the line cap).
    pub dropped_bytes: usize,
}

impl PaneCapture {
    pub(crate) fn truncated(&self) -> bool {
        self.captured.truncated() || self.dropped_bytes > 0
    }
}

/// Shapes raw `capture-pane` lines as `capture_pane` does (for callers that ran the command
/// in a batch of their own), then applies the caller's byte budget (keeping the tail).
pub(crate) fn shape_and_cap(
    tmux: &TmuxAccess<'_>,
    lines: &[Vec<u8>],
    range: &CaptureRange,
    max_lines: usize,
) -> PaneCapture {
    let mut captured = shape_capture(lines, max_lines, range.join_wrapped);
    let (text, dropped_bytes) = tmux.budget().cap_output(&captured.text);
    captured.text = text;
    PaneCapture {
        captured,
        dropped_bytes,
    }
}

/// Refuses `max_lines` of 0.
pub(crate) fn check_max_lines(max_lines: usize) -> Result<usize, ToolError> {
    if max_lines == 0 {
        return Err(ToolError::invalid_arguments(
            "max_lines must be at least 1",
            "omit max_lines for the default of 500",
        ));
    }
    Ok(max_lines)
}

/// A quoting failure (a NUL byte in an argument) as a tool error.
pub(crate) fn quote_error(error: QuoteError) -> ToolError {
    ToolError::invalid_arguments(
        error.to_string(),
        "remove NUL bytes (send them with send_keys as the key C-@)",
    )
}

/// A typed operation on `target` that failed, as an error for the model: engine failures
/// suggest `engine_hint`; a command tmux refused reads as any refusal for `target`, and one it
/// did not run (or a row it did not print) as `target` not found.
pub(crate) fn op_error(
    tmux: &TmuxAccess<'_>,
    error: OpError,
    target: &Target,
    engine_hint: &str,
) -> ToolError {
    match error {
        OpError::Engine(error) => engine_error(tmux.server_name(), error, engine_hint),
        OpError::Quote(error) => quote_error(error),
        OpError::Refused(message) => engine_error(
            tmux.server_name(),
            EngineError::Command(message),
            list_hint(target),
        ),
        OpError::Unanswered => not_found(target),
    }
}

/// An input plan that cannot be built, as a tool error that says how to fix the input.
pub(crate) fn input_error(error: InputError) -> ToolError {
    match error {
        InputError::Quote(e) => quote_error(e),
        InputError::PasteEndInBracketedPaste { .. } => ToolError::new(
            ToolErrorKind::InvalidArguments,
            error.to_string(),
            "remove ESC [201~ from the text (a paste cannot contain its own end marker)",
        ),
        other => ToolError::new(
            ToolErrorKind::InvalidArguments,
            other.to_string(),
            "paste with bracket false, or send the NUL bytes with send_keys",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_view_names_fields_of_the_row() {
        crate::mcp::fields::assert_shape_covers::<PaneInfo>(&PANE_SHAPE);
    }

    fn row(fields: &[&str]) -> Vec<u8> {
        muxgate_tmux::wire::format::encode_row(fields)
    }

    #[test]
    fn parses_pane_rows() {
        let line = muxgate_tmux::ops::pane_row::sample_row();
        let parsed = PaneRow::from(PaneRecord::parse(&line).unwrap());
        assert_eq!(
            (parsed.pane(), parsed.info.record.server_pid),
            (PaneId(3), 777)
        );
        assert_eq!(
            parsed.session,
            SessionKey {
                id: "$0".into(),
                created: 1_700_000_000
            }
        );
        assert!(
            !parsed.info.created_by_you,
            "only the ownership table can say"
        );
        let info = parsed.info.record;
        assert_eq!(
            (info.index, info.window_index, info.width, info.left),
            (1, 4, 80, 40)
        );
        assert!(info.active && !info.window_active && info.zoomed && info.dead && info.in_mode);
        assert_eq!(info.dead_status, Some(2));
        assert_eq!(info.current_path, "/home/u/a|b");
        assert_eq!(
            (info.session_name.as_str(), info.title.as_str()),
            ("main", "my title")
        );
        assert!(PaneRecord::parse(b"%3|1").is_none());
    }

    #[test]
    fn filter_fields_are_the_output_fields() {
        let info = PaneRecord::parse(&row(&[
            "%1", "0", "$0", "@0", "0", "1", "1", "0", "1", "1", "0", "0", "1", "0", "", "0", "",
            "", "9", "1", "s", "w", "t", "c", "p",
        ]))
        .map(PaneRow::from)
        .unwrap()
        .info;
        let value = serde_json::to_value(&info).unwrap();
        let mut keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut fields = PANE_INFO_FIELDS.to_vec();
        keys.sort_unstable();
        fields.sort_unstable();
        assert_eq!(keys, fields);
    }
}
