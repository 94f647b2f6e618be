//! What the `zellij_*` tools return for Zellij sessions, tabs, panes and clients: output
//! structs with schemas, built from the backend's listings. Ids are the ones the tools take
//! back: pane `terminal_N` / `plugin_N`, tab id `N` (stable, not the position).

use schemars::JsonSchema;
use serde::Serialize;

use muxgate_zellij::listing::{Client, Pane, Tab, TabRow};

/// One Zellij session, as `list_sessions` shows it (Zellij tags no owner and counts no
/// clients per session).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ZellijSessionInfo {
    pub name: String,
    /// How long ago it was created, as Zellij says it.
    pub created_ago: String,
    /// Kept for resurrection: it takes no actions.
    pub exited: bool,
}

/// The fields of a [`ZellijSessionInfo`] row.
pub(super) const ZELLIJ_SESSION_FIELDS: &[&str] = &["name", "created_ago", "exited"];

/// The fields of a [`ZellijTabInfo`] row.
pub(super) const ZELLIJ_TAB_FIELDS: &[&str] = &[
    "tab_id",
    "position",
    "name",
    "active",
    "fullscreen_active",
    "floating_panes_visible",
    "rows",
    "columns",
    "tiled_panes",
    "floating_panes",
    "active_pane_id",
];

/// One tab of a Zellij session.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ZellijTabInfo {
    /// Stable tab id (never reused in the session): pass it as `tab`.
    pub tab_id: u32,
    /// 0-based position in the tab bar (changes when tabs before it close).
    pub position: usize,
    pub name: String,
    /// Whether an attached client has this tab in view (false for all when none is attached).
    pub active: bool,
    /// A pane of this tab is fullscreen.
    pub fullscreen_active: bool,
    pub floating_panes_visible: bool,
    /// Size of the tab's pane area.
    pub rows: usize,
    pub columns: usize,
    pub tiled_panes: usize,
    pub floating_panes: usize,
    /// Its focused tiled terminal pane (`terminal_N`): where to send input next.
    pub active_pane_id: Option<String>,
}

impl ZellijTabInfo {
    /// A tab's row; `panes` are its session's (see [`muxgate_zellij::listing::active_pane`]).
    pub(crate) fn of(t: Tab, panes: &[Pane]) -> Self {
        TabRow::new(t, panes).into()
    }
}

impl From<TabRow> for ZellijTabInfo {
    fn from(row: TabRow) -> Self {
        let t = row.tab;
        Self {
            active_pane_id: row.active_pane.map(|p| p.to_string()),
            tab_id: t.id.0,
            position: t.position,
            name: t.name,
            active: t.active,
            fullscreen_active: t.is_fullscreen_active,
            floating_panes_visible: t.are_floating_panes_visible,
            rows: t.viewport_rows,
            columns: t.viewport_columns,
            tiled_panes: t.selectable_tiled_panes_count,
            floating_panes: t.selectable_floating_panes_count,
        }
    }
}

/// The fields of a [`ZellijPaneInfo`] row, for `list_panes` filters.
pub(super) const ZELLIJ_PANE_FIELDS: &[&str] = &[
    "pane_id",
    "tab_id",
    "tab_name",
    "title",
    "focused",
    "floating",
    "fullscreen",
    "plugin",
    "exited",
    "exit_status",
    "rows",
    "columns",
    "command",
    "cwd",
];

/// One pane of a Zellij session.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ZellijPaneInfo {
    /// `terminal_N` (a shell or command) or `plugin_N`: pass it as `pane`.
    pub pane_id: String,
    /// The tab that holds it (stable id) and that tab's name.
    pub tab_id: u32,
    pub tab_name: String,
    pub title: String,
    /// Focused within its tab's layer (tiled or floating). Focus belongs to clients; with no
    /// client attached this is the tab's last focus.
    pub focused: bool,
    pub floating: bool,
    pub fullscreen: bool,
    /// Plugin pane (not a terminal; takes no text).
    pub plugin: bool,
    /// The command of a command pane exited; the pane is held until closed.
    pub exited: bool,
    /// Its exit status, once exited.
    pub exit_status: Option<i32>,
    /// Text area size in cells.
    pub rows: usize,
    pub columns: usize,
    /// The command line of a command pane, or the foreground program Zellij detected.
    pub command: Option<String>,
    pub cwd: Option<String>,
}

impl From<Pane> for ZellijPaneInfo {
    fn from(p: Pane) -> Self {
        Self {
            pane_id: p.id.to_string(),
            tab_id: p.tab_id.0,
            tab_name: p.tab_name,
            title: p.title,
            focused: p.is_focused,
            floating: p.is_floating,
            fullscreen: p.is_fullscreen,
            plugin: !p.id.is_terminal(),
            exited: p.exited,
            exit_status: p.exit_status,
            rows: p.geometry.content_rows,
            columns: p.geometry.content_columns,
            command: p.terminal_command.or(p.running_command),
            cwd: p.cwd,
        }
    }
}

/// A client (a human's terminal) attached to a Zellij session.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ZellijClientInfo {
    pub client_id: u32,
    /// The pane this client has focused, when Zellij reports one.
    pub focused_pane: Option<String>,
    /// What the client runs (usually `zellij` or `zellij attach <session>`).
    pub running_command: String,
}

impl From<Client> for ZellijClientInfo {
    fn from(c: Client) -> Self {
        Self {
            client_id: c.id,
            focused_pane: c.focused_pane.map(|p| p.to_string()),
            running_command: c.running_command,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_and_tab_fields_are_the_rows_fields() {
        crate::mcp::fields::assert_fields_are::<ZellijSessionInfo>(ZELLIJ_SESSION_FIELDS);
        crate::mcp::fields::assert_fields_are::<ZellijTabInfo>(ZELLIJ_TAB_FIELDS);
    }

    #[test]
    fn the_pane_fields_are_the_rows_fields() {
        let row = serde_json::to_value(ZellijPaneInfo {
            pane_id: "terminal_1".into(),
            tab_id: 0,
            tab_name: "Tab #1".into(),
            title: "bash".into(),
            focused: true,
            floating: false,
            fullscreen: false,
            plugin: false,
            exited: false,
            exit_status: None,
            rows: 24,
            columns: 80,
            command: None,
            cwd: None,
        })
        .unwrap();
        let mut keys: Vec<&str> = row
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        let mut fields = ZELLIJ_PANE_FIELDS.to_vec();
        fields.sort_unstable();
        assert_eq!(keys, fields);
    }
}
