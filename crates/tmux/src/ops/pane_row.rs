//! The full row of one pane: its place, size, program and state, as `list-panes` (or a pane
//! creation's `-P`) prints it for [`row_format`](PaneRecord::row_format).
//!
//! One row answers everything the pane tools report, so describing panes costs one tmux
//! command however many there are. Pure: the listing command, the format and its parsing.

use std::sync::OnceLock;

use crate::wire::format::{flag, row_format, split_row};
use crate::wire::target::Target;
use crate::{PaneId, QuoteError, TmuxCommand};

/// `-F` fields of a pane row; free text last (only the last field may hold a separator).
const PANE_FIELDS: [&str; 25] = [
    "pane_id",
    "pane_index",
    "session_id",
    "window_id",
    "window_index",
    "pane_active",
    "window_active",
    "window_zoomed_flag",
    "pane_width",
    "pane_height",
    "pane_left",
    "pane_top",
    "pane_pid",
    "pane_dead",
    "pane_dead_status",
    "pane_in_mode",
    "pane_mode",
    "pane_tty",
    // The tmux server's pid: with `pane_pid`, names the pane's program across time.
    "pid",
    "session_created",
    "session_name",
    "window_name",
    "pane_title",
    "pane_current_command",
    // Last: a directory name may hold any byte, including the separator.
    "pane_current_path",
];

/// One pane as its row reports it (and, with whose session it is, as tools answer it).
// No more field docs: each would be schema text in every tools/list.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct PaneRecord {
    /// Pane id (`%N`): the stable way to target it.
    #[serde(rename = "id")]
    pub pane: PaneId,
    /// Position of the pane in its window (0-based).
    pub index: u32,
    pub session_id: String,
    pub session_name: String,
    pub window_id: String,
    pub window_index: u32,
    pub window_name: String,
    /// Whether it is the active pane of its window.
    pub active: bool,
    /// Whether its window is the current window of the session.
    pub window_active: bool,
    /// Whether its window is zoomed (one pane fills it).
    pub zoomed: bool,
    /// Size in cells.
    pub width: u32,
    pub height: u32,
    /// Offset of the pane's top-left cell inside the window.
    pub left: u32,
    pub top: u32,
    /// Process id of the program started in the pane (usually a shell).
    pub pid: u32,
    /// The foreground program's name, as tmux reports it.
    pub current_command: String,
    /// The foreground program's working directory.
    pub current_path: String,
    /// Title set by the program (or set_pane_title).
    pub title: String,
    /// The terminal device of the pane.
    pub tty: String,
    /// Whether the program exited and the pane stayed (remain-on-exit).
    pub dead: bool,
    /// The exit status of a dead pane's program, when known.
    pub dead_status: Option<i32>,
    /// Whether the pane shows a mode (copy mode, a chooser) instead of its program.
    pub in_mode: bool,
    /// The mode's name (`copy-mode`, `view-mode`…), empty when not in a mode.
    pub mode: String,
    /// Its session's creation time, seconds since the Unix epoch (with the id, what names a
    /// session across a server's restarts; for the ownership check, not answered).
    #[serde(skip)]
    pub session_created: u64,
    /// The tmux server's pid (with `pid`, names the pane's program across time; not answered).
    #[serde(skip)]
    pub server_pid: u32,
}

impl PaneRecord {
    /// The `-F` format whose rows [`Self::parse`] reads (made once: every listing sends it).
    pub fn row_format() -> &'static str {
        static FORMAT: OnceLock<String> = OnceLock::new();
        FORMAT.get_or_init(|| row_format(&PANE_FIELDS))
    }

    /// Parses one row of [`Self::row_format`]; `None` when it is not one (a row without its
    /// session's creation time included: the session id alone does not name a session).
    pub fn parse(line: &[u8]) -> Option<Self> {
        let mut f = split_row(line, PANE_FIELDS.len())?;
        let number = |i: usize| f[i].parse::<u32>().unwrap_or(0);
        let dead = flag(&f[13]);
        Some(Self {
            pane: f[0].parse().ok()?,
            index: number(1),
            window_index: number(4),
            active: flag(&f[5]),
            window_active: flag(&f[6]),
            zoomed: flag(&f[7]),
            width: number(8),
            height: number(9),
            left: number(10),
            top: number(11),
            pid: number(12),
            dead,
            dead_status: if dead { f[14].parse().ok() } else { None },
            in_mode: flag(&f[15]),
            server_pid: number(18),
            session_created: f[19].parse().ok()?,
            // The text fields last, moved out of the split row rather than copied: a listing
            // parses every pane of the server.
            session_id: std::mem::take(&mut f[2]),
            window_id: std::mem::take(&mut f[3]),
            mode: std::mem::take(&mut f[16]),
            tty: std::mem::take(&mut f[17]),
            session_name: std::mem::take(&mut f[20]),
            window_name: std::mem::take(&mut f[21]),
            title: std::mem::take(&mut f[22]),
            current_command: std::mem::take(&mut f[23]),
            current_path: std::mem::take(&mut f[24]),
        })
    }
}

/// A full pane row as tmux prints it: a dead, zoomed pane in copy mode whose path holds the
/// field separator (for the tests of this row and of the answers built from it).
#[cfg(any(test, feature = "test-util"))]
pub fn sample_row() -> Vec<u8> {
    crate::wire::format::encode_row(&[
        "%3",
        "1",
        "$0",
        "@2",
        "4",
        "1",
        "0",
        "1",
        "80",
        "24",
        "40",
        "0",
        "4242",
        "1",
        "2",
        "1",
        "copy-mode",
        "/dev/pts/3",
        "777",
        "1700000000",
        "main",
        "editor",
        "my title",
        "vim",
        "/home/u/a|b",
    ])
}

/// `list-panes` printing rows of [`PaneRecord::row_format`]: every pane of the server
/// (`None`), or those of a session (`-s`), of a window, or of the window holding a pane.
pub(crate) fn list_command(scope: Option<&Target>) -> Result<TmuxCommand, QuoteError> {
    let mut command = TmuxCommand::new("list-panes");
    match scope {
        None => command = command.flag("-a"),
        Some(target) => {
            if matches!(target, Target::Session(_)) {
                command = command.flag("-s");
            }
            command = command.opt("-t", target.tmux_target());
        }
    }
    command.opt("-F", PaneRecord::row_format()).build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::format::encode_row;
    use crate::wire::target::SessionSel;
    use crate::{SessionId, WindowId};

    #[test]
    fn listings_cover_the_server_a_session_or_a_window() {
        let line = |scope: Option<&Target>| list_command(scope).unwrap().text();
        assert!(line(None).starts_with("list-panes -a -F "));
        assert!(
            line(Some(&Target::Session(SessionSel::Id(SessionId(1)))))
                .starts_with("list-panes -s -t '$1' -F ")
        );
        assert!(line(Some(&Target::Window(WindowId(2)))).starts_with("list-panes -t '@2' -F "));
        assert!(line(Some(&Target::Pane(PaneId(3)))).starts_with("list-panes -t '%3' -F "));
        assert!(line(None).contains("pane_current_path"));
    }

    #[test]
    fn rows_parse_with_the_path_last() {
        let line = sample_row();
        let row = PaneRecord::parse(&line).unwrap();
        assert_eq!((row.pane, row.server_pid, row.pid), (PaneId(3), 777, 4242));
        assert_eq!(
            (row.session_id.as_str(), row.session_created),
            ("$0", 1_700_000_000)
        );
        assert_eq!(
            (row.index, row.window_index, row.width, row.left),
            (1, 4, 80, 40)
        );
        assert!(row.active && !row.window_active && row.zoomed && row.dead && row.in_mode);
        assert_eq!(row.dead_status, Some(2));
        assert_eq!(row.current_path, "/home/u/a|b");
        assert_eq!(
            (row.window_name.as_str(), row.title.as_str()),
            ("editor", "my title")
        );
        assert!(PaneRecord::parse(b"%3|1").is_none());
    }

    #[test]
    fn a_live_pane_has_no_exit_status() {
        let mut fields = vec!["0"; PANE_FIELDS.len()];
        fields[0] = "%1";
        fields[14] = "2";
        fields[19] = "5";
        let row = PaneRecord::parse(&encode_row(&fields)).unwrap();
        assert!(!row.dead);
        assert_eq!(row.dead_status, None);
        fields[19] = "";
        assert!(
            PaneRecord::parse(&encode_row(&fields)).is_none(),
            "no creation time, no session"
        );
    }
}
