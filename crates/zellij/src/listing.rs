//! Typed views of Zellij's listings and the pure parsers that build them.
//!
//! Inputs are the stdout of `list-panes --json --all`, `list-tabs --json --all`, `ls -n`,
//! `list-clients` and the one-line replies of `new-tab` / `new-pane` / `run`. Nothing here runs a
//! process: the CLI layer hands over bytes, these functions return values or a [`ParseError`].
//! Unknown JSON fields are ignored so that newer Zellij releases (≥ 0.44) keep parsing.

use serde::{Deserialize, Serialize};

use super::ids::{PaneId, SessionName, TabId};

/// Output that did not have the expected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected output from `zellij {command}`: {detail}")]
pub struct ParseError {
    /// The Zellij command whose output was parsed (`action list-panes`, `ls`…).
    pub command: &'static str,
    /// What did not match.
    pub detail: String,
}

impl ParseError {
    fn new(command: &'static str, detail: impl Into<String>) -> Self {
        Self {
            command,
            detail: detail.into(),
        }
    }
}

/// A session as listed by `zellij ls -n`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionEntry {
    /// The session's name.
    pub name: SessionName,
    /// Age as Zellij prints it (`"1s"`, `"2h 3m"`), for display only.
    pub created_ago: String,
    /// An exited session kept for resurrection: it has no server and takes no actions.
    pub exited: bool,
}

/// Position and size of a pane, in cells, with and without its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PaneGeometry {
    /// Column of the pane's left edge, frame included.
    pub x: usize,
    /// Row of the pane's top edge, frame included.
    pub y: usize,
    /// Height in rows, frame included.
    pub rows: usize,
    /// Width in columns, frame included.
    pub columns: usize,
    /// Column of the content's left edge (inside the frame).
    pub content_x: usize,
    /// Row of the content's top edge (inside the frame).
    pub content_y: usize,
    /// Height of the content in rows (frame excluded).
    pub content_rows: usize,
    /// Width of the content in columns (frame excluded).
    pub content_columns: usize,
}

/// One pane of a session (`list-panes --json --all`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pane {
    /// The pane's id (`terminal_N` or `plugin_N`).
    pub id: PaneId,
    /// Stable id of the pane's tab.
    pub tab_id: TabId,
    /// Position of the pane's tab, from 0.
    pub tab_position: usize,
    /// Name of the pane's tab.
    pub tab_name: String,
    /// The pane's title as Zellij shows it.
    pub title: String,
    /// Focused within its layer (tiled or floating) of its tab. Focus is per client; with no
    /// client attached this is the tab's last focus.
    pub is_focused: bool,
    /// A floating pane (false: tiled).
    pub is_floating: bool,
    /// The pane fills its tab as the fullscreen pane.
    pub is_fullscreen: bool,
    /// Hidden panes that still run (for example Zellij's own helper plugins).
    pub is_suppressed: bool,
    /// UI panes such as bars are not selectable.
    pub is_selectable: bool,
    /// The command of a command pane exited (the pane is then usually held).
    pub exited: bool,
    /// Exit status of the exited command, when Zellij reports one.
    pub exit_status: Option<i32>,
    /// A command pane whose command exited and that waits to be re-run or closed.
    pub is_held: bool,
    /// Position and size of the pane, in cells.
    pub geometry: PaneGeometry,
    /// Cursor `(column, row)` inside the pane, when visible.
    pub cursor: Option<(usize, usize)>,
    /// The command line of a command pane (`run` / `new-pane -- cmd`).
    pub terminal_command: Option<String>,
    /// The foreground command Zellij detected in a terminal pane.
    pub running_command: Option<String>,
    /// Working directory of the pane's process, when Zellij reports it.
    pub cwd: Option<String>,
    /// Where a plugin pane's plugin was loaded from (`zellij:link`, `file:…`).
    pub plugin_url: Option<String>,
}

impl Pane {
    /// Terminal panes a user or agent works with: not plugins, not suppressed helpers.
    pub fn is_user_terminal(&self) -> bool {
        self.id.is_terminal() && !self.is_suppressed
    }
}

/// One tab of a session (`list-tabs --json --all`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tab {
    /// The tab's stable id.
    pub id: TabId,
    /// Position among the session's tabs, from 0 (changes when tabs before it close).
    pub position: usize,
    /// The tab's name.
    pub name: String,
    /// Whether a client has this tab in view; false for every tab when no client is attached.
    pub active: bool,
    /// One pane fills the tab (fullscreen).
    pub is_fullscreen_active: bool,
    /// Input to the tab goes to all its panes (sync mode).
    pub is_sync_panes_active: bool,
    /// The tab's floating panes are shown.
    pub are_floating_panes_visible: bool,
    /// Rows of the area the tab's panes share, UI bars excluded.
    pub viewport_rows: usize,
    /// Columns of the area the tab's panes share, UI bars excluded.
    pub viewport_columns: usize,
    /// Rows of the tab's whole display area, UI bars included.
    pub display_area_rows: usize,
    /// Columns of the tab's whole display area, UI bars included.
    pub display_area_columns: usize,
    /// Number of selectable (not UI bar) tiled panes in the tab.
    pub selectable_tiled_panes_count: usize,
    /// Number of selectable floating panes in the tab.
    pub selectable_floating_panes_count: usize,
    /// Client ids that have this tab focused, other than the one asking.
    pub other_focused_clients: Vec<u32>,
    /// Name of the tab's active swap layout, if any.
    pub active_swap_layout_name: Option<String>,
}

/// A client attached to a session (`list-clients`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Client {
    /// Zellij's id of the client (the `CLIENT_ID` column).
    pub id: u32,
    /// The pane this client has focused, if Zellij reported one.
    pub focused_pane: Option<PaneId>,
    /// The command Zellij lists for the client's focused pane (`N/A` when none).
    pub running_command: String,
}

/// The JSON shape of one `list-panes` entry (Zellij's `PaneListEntry`).
#[derive(Deserialize)]
struct RawPane {
    id: u32,
    is_plugin: bool,
    #[serde(default)]
    is_focused: bool,
    #[serde(default)]
    is_fullscreen: bool,
    #[serde(default)]
    is_floating: bool,
    #[serde(default)]
    is_suppressed: bool,
    #[serde(default)]
    title: String,
    #[serde(default)]
    exited: bool,
    #[serde(default)]
    exit_status: Option<i32>,
    #[serde(default)]
    is_held: bool,
    #[serde(default)]
    pane_x: usize,
    #[serde(default)]
    pane_content_x: usize,
    #[serde(default)]
    pane_y: usize,
    #[serde(default)]
    pane_content_y: usize,
    #[serde(default)]
    pane_rows: usize,
    #[serde(default)]
    pane_content_rows: usize,
    #[serde(default)]
    pane_columns: usize,
    #[serde(default)]
    pane_content_columns: usize,
    #[serde(default)]
    cursor_coordinates_in_pane: Option<(usize, usize)>,
    #[serde(default)]
    terminal_command: Option<String>,
    #[serde(default)]
    plugin_url: Option<String>,
    #[serde(default = "default_true")]
    is_selectable: bool,
    tab_id: u32,
    #[serde(default)]
    tab_position: usize,
    #[serde(default)]
    tab_name: String,
    #[serde(default)]
    pane_command: Option<String>,
    #[serde(default)]
    pane_cwd: Option<String>,
}

/// A tab together with the pane input goes to when no pane is named (see [`active_pane`]): a
/// window as the tools answer it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TabRow {
    /// The tab.
    pub tab: Tab,
    /// Its active pane.
    pub active_pane: Option<PaneId>,
}

impl TabRow {
    /// `tab`'s row; `panes` are its session's.
    pub fn new(tab: Tab, panes: &[Pane]) -> Self {
        Self {
            active_pane: active_pane(tab.id, panes),
            tab,
        }
    }
}

/// The pane of a tab that input goes to when no pane is named, as tmux's active pane: its
/// focused tiled terminal pane, else its first tiled terminal pane (with no client attached,
/// Zellij keeps a tab's last focus).
pub fn active_pane(tab: TabId, panes: &[Pane]) -> Option<PaneId> {
    let mut tiled = panes
        .iter()
        .filter(|p| p.tab_id == tab && !p.is_floating && p.is_user_terminal());
    let first = tiled.clone().next().map(|p| p.id);
    tiled.find(|p| p.is_focused).map(|p| p.id).or(first)
}

fn default_true() -> bool {
    true
}

/// The JSON shape of one `list-tabs` entry (Zellij's `TabInfo`).
#[derive(Deserialize)]
struct RawTab {
    tab_id: u32,
    position: usize,
    name: String,
    #[serde(default)]
    active: bool,
    #[serde(default)]
    is_fullscreen_active: bool,
    #[serde(default)]
    is_sync_panes_active: bool,
    #[serde(default)]
    are_floating_panes_visible: bool,
    #[serde(default)]
    viewport_rows: usize,
    #[serde(default)]
    viewport_columns: usize,
    #[serde(default)]
    display_area_rows: usize,
    #[serde(default)]
    display_area_columns: usize,
    #[serde(default)]
    selectable_tiled_panes_count: usize,
    #[serde(default)]
    selectable_floating_panes_count: usize,
    #[serde(default)]
    other_focused_clients: Vec<u32>,
    #[serde(default)]
    active_swap_layout_name: Option<String>,
}

/// The JSON error and the start of the text that caused it.
fn json_detail(e: &serde_json::Error, text: &str) -> String {
    let start: String = text.chars().take(60).collect();
    format!("{e}; output starts with {start:?}")
}

/// Parses `zellij action list-panes --json --all`.
pub fn parse_panes(json: &str) -> Result<Vec<Pane>, ParseError> {
    let raw: Vec<RawPane> = serde_json::from_str(json)
        .map_err(|e| ParseError::new("action list-panes --json --all", json_detail(&e, json)))?;
    Ok(raw.into_iter().map(Pane::from).collect())
}

impl From<RawPane> for Pane {
    fn from(r: RawPane) -> Self {
        Self {
            id: PaneId::from_parts(r.id, r.is_plugin),
            tab_id: TabId(r.tab_id),
            tab_position: r.tab_position,
            tab_name: r.tab_name,
            title: r.title,
            is_focused: r.is_focused,
            is_floating: r.is_floating,
            is_fullscreen: r.is_fullscreen,
            is_suppressed: r.is_suppressed,
            is_selectable: r.is_selectable,
            exited: r.exited,
            exit_status: r.exit_status,
            is_held: r.is_held,
            geometry: PaneGeometry {
                x: r.pane_x,
                y: r.pane_y,
                rows: r.pane_rows,
                columns: r.pane_columns,
                content_x: r.pane_content_x,
                content_y: r.pane_content_y,
                content_rows: r.pane_content_rows,
                content_columns: r.pane_content_columns,
            },
            cursor: r.cursor_coordinates_in_pane,
            terminal_command: r.terminal_command,
            running_command: r.pane_command,
            cwd: r.pane_cwd,
            plugin_url: r.plugin_url,
        }
    }
}

/// Parses `zellij action list-tabs --json --all`, ordered by position.
pub fn parse_tabs(json: &str) -> Result<Vec<Tab>, ParseError> {
    let raw: Vec<RawTab> = serde_json::from_str(json)
        .map_err(|e| ParseError::new("action list-tabs --json --all", json_detail(&e, json)))?;
    let mut tabs: Vec<Tab> = raw
        .into_iter()
        .map(|r| Tab {
            id: TabId(r.tab_id),
            position: r.position,
            name: r.name,
            active: r.active,
            is_fullscreen_active: r.is_fullscreen_active,
            is_sync_panes_active: r.is_sync_panes_active,
            are_floating_panes_visible: r.are_floating_panes_visible,
            viewport_rows: r.viewport_rows,
            viewport_columns: r.viewport_columns,
            display_area_rows: r.display_area_rows,
            display_area_columns: r.display_area_columns,
            selectable_tiled_panes_count: r.selectable_tiled_panes_count,
            selectable_floating_panes_count: r.selectable_floating_panes_count,
            other_focused_clients: r.other_focused_clients,
            active_swap_layout_name: r.active_swap_layout_name,
        })
        .collect();
    tabs.sort_by_key(|t| t.position);
    Ok(tabs)
}

/// Parses `zellij ls -n` (`NAME [Created 1m 2s ago] (EXITED - attach to resurrect)`).
///
/// Lines whose first word is not a valid [`SessionName`] are skipped: muxgate cannot address
/// such sessions anyway, and one odd name must not hide the others.
pub fn parse_sessions(text: &str) -> Vec<SessionEntry> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let (name, rest) = line.split_once(' ').unwrap_or((line, ""));
            let name = SessionName::new(name).ok()?;
            let created_ago = rest
                .split_once("[Created ")
                .and_then(|(_, r)| r.split_once(" ago]"))
                .map(|(age, _)| age.to_owned())
                .unwrap_or_default();
            Some(SessionEntry {
                name,
                created_ago,
                exited: rest.contains("(EXITED"),
            })
        })
        .collect()
}

/// Parses `zellij action list-clients` (a header, then `ID PANE_ID RUNNING_COMMAND` rows).
///
/// The header is printed even when no client is attached, so an empty text is an error: the
/// CLI got no answer.
pub fn parse_clients(text: &str) -> Result<Vec<Client>, ParseError> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    match lines.next() {
        None => {
            return Err(ParseError::new(
                "action list-clients",
                "empty output (no answer from the server)",
            ));
        }
        Some(header) if header.trim_start().starts_with("CLIENT_ID") => {}
        Some(other) => {
            return Err(ParseError::new(
                "action list-clients",
                format!("missing CLIENT_ID header, got {other:?}"),
            ));
        }
    }
    lines
        .map(|line| {
            let mut words = line.split_whitespace();
            let id = words.next().and_then(|w| w.parse().ok()).ok_or_else(|| {
                ParseError::new("action list-clients", format!("bad row {line:?}"))
            })?;
            let focused_pane = words.next().and_then(|w| w.parse().ok());
            let running_command = words.collect::<Vec<_>>().join(" ");
            Ok(Client {
                id,
                focused_pane,
                running_command,
            })
        })
        .collect()
}

/// Parses the single tab id `new-tab` prints.
pub fn parse_new_tab_id(stdout: &str) -> Result<TabId, ParseError> {
    stdout.trim().parse().map_err(|_| {
        ParseError::new(
            "action new-tab",
            format!("expected a tab id, got {:?}", stdout.trim()),
        )
    })
}

/// Parses the single pane id `new-pane`, `run` and `edit` print (`terminal_N`).
pub fn parse_new_pane_id(command: &'static str, stdout: &str) -> Result<PaneId, ParseError> {
    stdout.trim().parse().map_err(|_| {
        ParseError::new(
            command,
            format!("expected a pane id, got {:?}", stdout.trim()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured from Zellij 0.45.1 (`list-panes --json --all`), one terminal and the suppressed
    // helper plugin.
    const PANES: &str = r#"[{"id":0,"is_plugin":true,"is_focused":false,"is_fullscreen":false,"is_floating":false,"is_suppressed":true,"title":"zellij:link","exited":false,"exit_status":null,"is_held":false,"pane_x":0,"pane_content_x":0,"pane_y":0,"pane_content_y":0,"pane_rows":0,"pane_content_rows":0,"pane_columns":0,"pane_content_columns":0,"cursor_coordinates_in_pane":null,"terminal_command":null,"plugin_url":"zellij:link","is_selectable":true,"index_in_pane_group":{},"default_fg":null,"default_bg":null,"tab_id":0,"tab_position":0,"tab_name":"Tab #1"},
      {"id":1,"is_plugin":false,"is_focused":true,"is_fullscreen":false,"is_floating":true,"is_suppressed":false,"title":"job","exited":true,"exit_status":3,"is_held":true,"pane_x":1,"pane_content_x":2,"pane_y":3,"pane_content_y":4,"pane_rows":10,"pane_content_rows":8,"pane_columns":40,"pane_content_columns":38,"cursor_coordinates_in_pane":[5,6],"terminal_command":"bash -c exit 3","plugin_url":null,"is_selectable":true,"index_in_pane_group":{},"tab_id":2,"tab_position":1,"tab_name":"work","pane_command":"bash","pane_cwd":"/srv","future_field":1}]"#;

    #[test]
    fn panes_parse_into_typed_values() {
        let panes = parse_panes(PANES).unwrap();
        assert_eq!(panes.len(), 2);
        assert_eq!(panes[0].id, PaneId::Plugin(0));
        assert!(!panes[0].is_user_terminal());
        let p = &panes[1];
        assert_eq!(p.id, PaneId::Terminal(1));
        assert!(p.is_user_terminal());
        assert_eq!(
            (p.tab_id, p.tab_position, p.tab_name.as_str()),
            (TabId(2), 1, "work")
        );
        assert_eq!((p.exited, p.exit_status, p.is_held), (true, Some(3), true));
        assert_eq!(p.cursor, Some((5, 6)));
        assert_eq!(p.geometry.content_columns, 38);
        assert_eq!(p.terminal_command.as_deref(), Some("bash -c exit 3"));
        assert_eq!(p.running_command.as_deref(), Some("bash"));
        assert_eq!(p.cwd.as_deref(), Some("/srv"));
    }

    #[test]
    fn bad_pane_json_is_an_error() {
        let err = parse_panes("Pane not found").unwrap_err();
        assert_eq!(err.command, "action list-panes --json --all");
        assert!(parse_panes(r#"[{"is_plugin":false}]"#).is_err());
    }

    #[test]
    fn tabs_parse_and_sort_by_position() {
        let json = r#"[{"position":1,"name":"b","active":false,"panes_to_hide":0,"is_fullscreen_active":false,"is_sync_panes_active":false,"are_floating_panes_visible":true,"other_focused_clients":[],"active_swap_layout_name":null,"is_swap_layout_dirty":false,"viewport_rows":50,"viewport_columns":50,"display_area_rows":50,"display_area_columns":50,"selectable_tiled_panes_count":1,"selectable_floating_panes_count":0,"tab_id":4,"has_bell_notification":false,"is_flashing_bell":false},
                      {"position":0,"name":"a","active":true,"tab_id":0,"other_focused_clients":[2]}]"#;
        let tabs = parse_tabs(json).unwrap();
        assert_eq!(
            tabs.iter().map(|t| t.id).collect::<Vec<_>>(),
            [TabId(0), TabId(4)]
        );
        assert!(tabs[0].active);
        assert_eq!(tabs[0].other_focused_clients, [2]);
        assert!(tabs[1].are_floating_panes_visible);
        assert_eq!(tabs[1].viewport_columns, 50);
    }

    #[test]
    fn sessions_from_ls_n() {
        let text = "s1 [Created 1s ago] \nold [Created 2h 3m ago] (EXITED - attach to resurrect)\nbad/name [Created 1s ago] \n";
        let s = parse_sessions(text);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name.as_str(), "s1");
        assert_eq!(s[0].created_ago, "1s");
        assert!(!s[0].exited);
        assert_eq!(s[1].created_ago, "2h 3m");
        assert!(s[1].exited);
        assert!(parse_sessions("").is_empty());
    }

    #[test]
    fn clients_table() {
        let text = "CLIENT_ID ZELLIJ_PANE_ID RUNNING_COMMAND\n1         terminal_0     bash -l\n2         plugin_3       N/A\n";
        let c = parse_clients(text).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].id, 1);
        assert_eq!(c[0].focused_pane, Some(PaneId::Terminal(0)));
        assert_eq!(c[0].running_command, "bash -l");
        assert_eq!(c[1].focused_pane, Some(PaneId::Plugin(3)));
        assert!(
            parse_clients("CLIENT_ID ZELLIJ_PANE_ID RUNNING_COMMAND\n")
                .unwrap()
                .is_empty()
        );
        assert!(parse_clients("").is_err());
        assert!(parse_clients("garbage\n").is_err());
    }

    #[test]
    fn new_ids() {
        assert_eq!(parse_new_tab_id("3\n"), Ok(TabId(3)));
        assert!(parse_new_tab_id("").is_err());
        assert_eq!(
            parse_new_pane_id("run", "terminal_4\n"),
            Ok(PaneId::Terminal(4))
        );
        assert!(parse_new_pane_id("run", "oops").is_err());
    }

    #[test]
    fn a_tabs_active_pane_is_its_focused_tiled_terminal() {
        let panes = parse_panes(
            r#"[{"id":0,"is_plugin":true,"is_focused":true,"tab_id":0},
                {"id":1,"is_plugin":false,"is_focused":false,"tab_id":0},
                {"id":2,"is_plugin":false,"is_focused":true,"tab_id":0},
                {"id":3,"is_plugin":false,"is_focused":true,"is_floating":true,"tab_id":0},
                {"id":4,"is_plugin":false,"is_focused":false,"tab_id":1},
                {"id":5,"is_plugin":false,"is_focused":true,"is_floating":true,"tab_id":1},
                {"id":6,"is_plugin":true,"tab_id":2}]"#,
        )
        .unwrap();
        assert_eq!(active_pane(TabId(0), &panes), Some(PaneId::Terminal(2)));
        assert_eq!(
            active_pane(TabId(1), &panes),
            Some(PaneId::Terminal(4)),
            "no tiled pane focused: the first tiled one"
        );
        assert_eq!(active_pane(TabId(2), &panes), None, "plugins only");
    }
}
