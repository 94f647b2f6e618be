//! What the listing tools ask of a backend: its rows, as the JSON objects the caller is sent.
//!
//! `list_sessions`, `list_panes` and `list_windows` are written once: each filters a backend's
//! rows and shapes them to the caller's `fields`, the same way on tmux and on Zellij. What
//! differs is where the rows come from and what they hold, and that is all a backend answers
//! here: its rows ([`ListsSessions`], [`ListsPanes`], [`ListsWindows`]), only those the caller
//! may see, and what kind of row they are ([`RowKind`]). Each backend's rows are implemented
//! beside the tool that lists them, since reading them is that tool's knowledge of the backend.

use std::future::Future;

use muxgate_zellij::unsupported;
use serde_json::{Map, Value};

use super::McpServer;
use super::error::ToolError;
use super::fields::{RowShape, Selection};
use super::filter::Filters;

/// A listing row: the JSON object a caller is sent for one session, pane or window.
pub(crate) type JsonRow = Map<String, Value>;

/// What a backend's rows of one listing hold.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RowKind {
    /// Rows with a default view, and `fields` to ask for more or fewer.
    Shaped(&'static RowShape),
    /// Rows that are always whole: `fields` is refused, saying `instead` what to do.
    Whole {
        /// Every field a row has.
        fields: &'static [&'static str],
        /// What to do instead of asking for `fields`.
        instead: &'static str,
    },
}

impl RowKind {
    /// Every field a row may have: what `filters` may name.
    pub(crate) fn fields(self) -> &'static [&'static str] {
        match self {
            Self::Shaped(shape) => shape.all,
            Self::Whole { fields, .. } => fields,
        }
    }

    /// These rows as the caller's `fields` (of a call of `tool`) ask to see them.
    pub(crate) fn view(self, fields: Option<&[String]>, tool: &str) -> Result<RowView, ToolError> {
        let selection = match self {
            Self::Shaped(shape) => shape.select(fields, tool)?,
            Self::Whole { instead, .. } if fields.is_some() => {
                return Err(ToolError::unsupported(unsupported::FIELDS, instead));
            }
            Self::Whole { .. } => Selection::All,
        };
        Ok(RowView {
            kind: self,
            selection,
        })
    }
}

/// Rows as one call asked to see them: which fields each keeps.
#[derive(Debug)]
pub(crate) struct RowView {
    kind: RowKind,
    selection: Selection,
}

impl RowView {
    /// The fields rows need for this view and `filters`.
    pub(crate) fn needs<'a>(&'a self, filters: &'a Filters) -> NeededFields<'a> {
        NeededFields {
            view: self,
            filters,
        }
    }

    /// The `rows` that `keep` keeps, each with the fields the call asked for.
    pub(crate) fn show(&self, rows: Vec<JsonRow>, keep: impl Fn(&JsonRow) -> bool) -> Vec<JsonRow> {
        rows.into_iter()
            .filter(|row| keep(row))
            .map(|row| match self.kind {
                RowKind::Shaped(shape) => shape.project(row, &self.selection),
                RowKind::Whole { .. } => row,
            })
            .collect()
    }
}

/// The fields of a listing's rows that one call needs: those it may show and those its
/// filters test. A backend that builds its rows from typed records builds only these.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NeededFields<'a> {
    view: &'a RowView,
    filters: &'a Filters,
}

impl NeededFields<'_> {
    /// Whether the rows must carry `field`.
    pub(crate) fn contains(&self, field: &str) -> bool {
        self.filters.tests(field)
            || match self.view.kind {
                RowKind::Shaped(shape) => shape.may_show(field, &self.view.selection),
                RowKind::Whole { .. } => true,
            }
    }
}

/// The rows of a listing, and the session they are of when the backend lists one session at
/// a time (Zellij, whose ids count per session).
#[derive(Debug)]
pub(crate) struct Listed {
    /// The session listed; `None` when the rows may be of every session (tmux).
    pub session: Option<String>,
    /// The rows the caller may see, in the backend's order.
    pub rows: Vec<JsonRow>,
}

/// What a `list_panes` call asks a backend for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PaneQuery<'a> {
    /// The client's `target`: what to list the panes of; `None` for the backend's default.
    pub target: Option<&'a str>,
    /// The fields the rows need: a backend may leave out the rest, and need not read what
    /// only they would show (tmux reads a pane's state only when one of its fields is needed).
    pub needed: NeededFields<'a>,
    /// Whether rows include plugin panes, for a backend that has them (Zellij).
    pub with_plugins: bool,
}

/// A backend's sessions, for `list_sessions`.
pub(crate) trait ListsSessions {
    /// Each session the caller may see, as a row.
    fn session_rows(&self) -> impl Future<Output = Result<Vec<JsonRow>, ToolError>> + Send;
}

/// A backend's panes, for `list_panes`.
pub(crate) trait ListsPanes {
    /// The panes `query` names that the caller may see, as rows.
    fn pane_rows(
        &self,
        gateway: &McpServer,
        query: PaneQuery<'_>,
    ) -> impl Future<Output = Result<Listed, ToolError>> + Send;
}

/// A backend's windows (Zellij's tabs), for `list_windows`.
pub(crate) trait ListsWindows {
    /// The windows of the session `target` names (every session's on tmux when `None`, the
    /// default session's on Zellij) that the caller may see, as rows.
    fn window_rows(
        &self,
        target: Option<&str>,
    ) -> impl Future<Output = Result<Listed, ToolError>> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::error::ToolErrorKind;

    const SHAPE: RowShape = RowShape {
        always: &["id"],
        all: &["id", "name", "size"],
        default: &["name"],
        when_set: &[],
    };

    fn row() -> JsonRow {
        serde_json::json!({"id": 1, "name": "a", "size": 2})
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    #[test]
    fn shaped_rows_take_fields_and_whole_rows_refuse_them() {
        let shaped = RowKind::Shaped(&SHAPE);
        let view = shaped.view(None, "list_x").unwrap();
        let shown = view.show(vec![row(), row()], |r| r["id"] == 1);
        let fields: Vec<&str> = shown[0].keys().map(String::as_str).collect();
        assert_eq!((shown.len(), fields), (2, vec!["id", "name"]));
        assert!(view.show(vec![row()], |r| r["id"] == 2).is_empty());
        assert_eq!(shaped.fields(), ["id", "name", "size"]);

        let whole = RowKind::Whole {
            fields: &["id", "name", "size"],
            instead: "omit fields",
        };
        let view = whole.view(None, "list_x").unwrap();
        assert_eq!(view.show(vec![row()], |_| true), [row()]);
        let asked = ["name".to_owned()];
        let refused = whole.view(Some(&asked), "list_x").unwrap_err();
        assert_eq!(refused.kind, ToolErrorKind::Unsupported);
        assert_eq!(refused.suggestion, "omit fields");
    }
}
