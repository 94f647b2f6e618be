//! `display-message` in one pane's context: the row `snapshot_pane` reads, and a client's
//! format expanded (`display_message`).
//!
//! tmux 3.3a expands `display-message -t %N` for some other pane when `%N` does not exist,
//! instead of failing. Callers therefore make sure of the pane first (a capture of it on the
//! same line, or resolving the target), and `parse_snapshot` takes no row that names
//! another pane. Pure: builds the commands and parses the row; runs nothing.

use crate::wire::format::{flag, row_format, split_row};
use crate::{PaneId, QuoteError, TmuxCommand};

/// `-F` fields of the snapshot row; free text last.
const SNAPSHOT_FIELDS: [&str; 23] = [
    "pane_id",
    "window_id",
    "session_id",
    "cursor_x",
    "cursor_y",
    "pane_width",
    "pane_height",
    "pane_in_mode",
    "scroll_position",
    "history_size",
    "history_limit",
    "alternate_on",
    "pane_pid",
    "pane_dead",
    "pane_dead_status",
    "pane_at_top",
    "pane_at_bottom",
    "pane_at_left",
    "pane_at_right",
    "pane_mode",
    "pane_title",
    "pane_current_command",
    "pane_current_path",
];

/// A pane's state as a snapshot reports it, besides its text (and as `snapshot_pane` answers
/// it).
// No more field docs: each would be schema text in every tools/list.
#[allow(missing_docs)]
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct PaneSnapshot {
    pub pane_id: String,
    pub window_id: String,
    pub session_id: String,
    /// Cursor column and row inside the visible screen (0-based).
    pub cursor_x: u32,
    pub cursor_y: u32,
    /// Size in cells.
    pub width: u32,
    pub height: u32,
    /// Whether the pane shows a mode (copy mode…) instead of its program, and which.
    pub in_mode: bool,
    pub mode: String,
    /// Lines scrolled back in copy mode (0 when not scrolled or not in copy mode).
    pub scroll_position: u32,
    /// Lines of scrollback history, and the most the pane keeps.
    pub history_size: u32,
    pub history_limit: u32,
    /// Whether the program switched to the alternate screen (full-screen programs: editors,
    /// pagers, top); tmux's `alternate_on`.
    pub alternate_screen: bool,
    /// Process id of the program started in the pane, and the foreground program's name
    /// and working directory.
    pub pid: u32,
    pub current_command: String,
    pub current_path: String,
    /// Whether the program exited and the pane stayed, and its exit status if known.
    pub dead: bool,
    pub dead_status: Option<i32>,
    pub title: String,
    /// Which window edges the pane touches.
    pub at_top: bool,
    pub at_bottom: bool,
    pub at_left: bool,
    pub at_right: bool,
}

/// The command that prints `pane`'s snapshot row (see [`parse_snapshot`]).
pub(crate) fn snapshot_command(pane: PaneId) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("display-message")
        .flag("-p")
        .target(pane)
        .arg(row_format(&SNAPSHOT_FIELDS))
        .build()
}

/// `pane`'s snapshot from the lines [`snapshot_command`] printed; `None` when the first is
/// not a snapshot row of `pane` (tmux 3.3a may have answered for another pane).
pub(crate) fn parse_snapshot(pane: PaneId, lines: &[Vec<u8>]) -> Option<PaneSnapshot> {
    let f = lines
        .first()
        .and_then(|row| split_row(row, SNAPSHOT_FIELDS.len()))
        .filter(|f| f[0] == pane.to_string())?;
    // tmux prints nothing for a number it does not know (no mode, no history yet).
    let number = |i: usize| f[i].parse::<u32>().unwrap_or(0);
    let dead = flag(&f[13]);
    Some(PaneSnapshot {
        pane_id: f[0].clone(),
        window_id: f[1].clone(),
        session_id: f[2].clone(),
        cursor_x: number(3),
        cursor_y: number(4),
        width: number(5),
        height: number(6),
        in_mode: flag(&f[7]),
        scroll_position: number(8),
        history_size: number(9),
        history_limit: number(10),
        alternate_screen: flag(&f[11]),
        pid: number(12),
        dead,
        dead_status: if dead { f[14].parse().ok() } else { None },
        at_top: flag(&f[15]),
        at_bottom: flag(&f[16]),
        at_left: flag(&f[17]),
        at_right: flag(&f[18]),
        mode: f[19].clone(),
        title: f[20].clone(),
        current_command: f[21].clone(),
        current_path: f[22].clone(),
    })
}

/// The command that expands `format` in `pane`'s context and prints it. `format` is the
/// client's, checked beforehand (see [`crate::wire::format_check`]); it travels as one quoted
/// argument.
pub(crate) fn expand_command(pane: PaneId, format: &str) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("display-message")
        .flag("-p")
        .target(pane)
        .arg(format)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::format::encode_row;

    fn row(pane: &str, dead: &str) -> Vec<u8> {
        encode_row(&[
            pane,
            "@2",
            "$1",
            "3",
            "4",
            "80",
            "24",
            "1",
            "5",
            "100",
            "2000",
            "0",
            "42",
            dead,
            "7",
            "1",
            "0",
            "0",
            "1",
            "copy-mode",
            "my | title",
            "bash",
            "/srv",
        ])
    }

    #[test]
    fn the_snapshot_row_is_asked_of_the_pane() {
        let text = snapshot_command(PaneId(4)).unwrap().text();
        assert!(text.starts_with("display-message -p -t '%4' '"), "{text}");
        assert!(text.contains("pane_current_path"), "{text}");
    }

    #[test]
    fn a_snapshot_row_parses() {
        let snapshot = parse_snapshot(PaneId(4), &[row("%4", "1")]).unwrap();
        assert_eq!(
            snapshot,
            PaneSnapshot {
                pane_id: "%4".into(),
                window_id: "@2".into(),
                session_id: "$1".into(),
                cursor_x: 3,
                cursor_y: 4,
                width: 80,
                height: 24,
                in_mode: true,
                scroll_position: 5,
                history_size: 100,
                history_limit: 2000,
                alternate_screen: false,
                pid: 42,
                dead: true,
                dead_status: Some(7),
                at_top: true,
                at_bottom: false,
                at_left: false,
                at_right: true,
                mode: "copy-mode".into(),
                title: "my | title".into(),
                current_command: "bash".into(),
                current_path: "/srv".into(),
            }
        );
        let alive = parse_snapshot(PaneId(4), &[row("%4", "0")]).unwrap();
        assert_eq!(alive.dead_status, None);
    }

    #[test]
    fn a_row_for_another_pane_or_no_row_is_none() {
        assert_eq!(parse_snapshot(PaneId(9), &[row("%4", "0")]), None);
        assert_eq!(parse_snapshot(PaneId(4), &[b"junk".to_vec()]), None);
        assert_eq!(parse_snapshot(PaneId(4), &[]), None);
    }

    #[test]
    fn a_format_is_one_quoted_argument() {
        assert_eq!(
            expand_command(PaneId(4), "#{pane_pid} 'x'").unwrap().text(),
            r"display-message -p -t '%4' '#{pane_pid} '\''x'\'"
        );
        assert!(expand_command(PaneId(4), "a\0b").is_err());
    }
}
