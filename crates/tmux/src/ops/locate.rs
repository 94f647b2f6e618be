//! Where a client's target is: the session, window and pane it names, as `list-panes` rows.
//!
//! Access checks resolve a target this way before acting on it (objects a caller may not see
//! are reported like missing ones), and so do the tools that must know the pane exists before
//! asking `display-message` about it: tmux 3.3a's `display-message -t %N` answers for another
//! pane when `%N` is gone, where `list-panes -t %N` fails. Which row is the target's, and
//! whether the caller may see it, is the caller's business. Pure: the commands and the rows.

use crate::wire::format::{flag, row_format, split_row};
use crate::wire::target::Target;
use crate::{QuoteError, TmuxCommand};

/// `-F` fields of a location row; the session name (free text) last.
const LOCATION_FIELDS: [&str; 7] = [
    "session_id",
    "session_created",
    "window_id",
    "window_active",
    "pane_id",
    "pane_active",
    "session_name",
];

/// One pane's place, as a location row reports it (ids as tmux prints them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PaneLocation {
    /// `$N`.
    pub session_id: String,
    /// The session's creation time, seconds since the Unix epoch, as printed.
    pub session_created: String,
    /// `@N`.
    pub window_id: String,
    /// Whether the window is its session's current one.
    pub window_active: bool,
    /// `%N`.
    pub pane_id: String,
    /// Whether the pane is its window's active one.
    pub pane_active: bool,
    /// The session's name.
    pub session_name: String,
}

/// The rows of the panes `target` covers: a session's (`-s`), a window's, or those of the
/// window holding a pane. For a window, tmux answers in the session that was most recently
/// active among those holding it (see [`locate_everywhere_command`]).
pub(crate) fn locate_command(target: &Target) -> Result<TmuxCommand, QuoteError> {
    let mut command = TmuxCommand::new("list-panes");
    if matches!(target, Target::Session(_)) {
        command = command.flag("-s");
    }
    command
        .opt("-t", target.tmux_target())
        .opt("-F", row_format(&LOCATION_FIELDS))
        .build()
}

/// The rows of every pane of the server, in every session holding it: for finding a window's
/// own session when tmux answered [`locate_command`] in another.
pub(crate) fn locate_everywhere_command() -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("list-panes")
        .flag("-a")
        .opt("-F", row_format(&LOCATION_FIELDS))
        .build()
}

/// The locations in rows printed by either command; rows that are not location rows are
/// skipped.
pub fn parse_locations(rows: &[Vec<u8>]) -> Vec<PaneLocation> {
    rows.iter()
        .filter_map(|row| split_row(row, LOCATION_FIELDS.len()))
        .map(|f| PaneLocation {
            session_id: f[0].clone(),
            session_created: f[1].clone(),
            window_id: f[2].clone(),
            window_active: flag(&f[3]),
            pane_id: f[4].clone(),
            pane_active: flag(&f[5]),
            session_name: f[6].clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::format::encode_row;
    use crate::wire::target::SessionSel;
    use crate::{PaneId, SessionId, WindowId};

    #[test]
    fn a_session_lists_all_its_windows_and_others_their_window() {
        let line = |target: Target| locate_command(&target).unwrap().text();
        let session = line(Target::Session(SessionSel::Id(SessionId(1))));
        assert!(
            session.starts_with("list-panes -s -t '$1' -F "),
            "{session}"
        );
        assert!(session.contains("session_created"), "{session}");
        let window = line(Target::Window(WindowId(2)));
        assert!(window.starts_with("list-panes -t '@2' -F "), "{window}");
        let pane = line(Target::Pane(PaneId(3)));
        assert!(pane.starts_with("list-panes -t '%3' -F "), "{pane}");
        let everywhere = locate_everywhere_command().unwrap().text();
        assert!(everywhere.starts_with("list-panes -a -F "), "{everywhere}");
    }

    #[test]
    fn location_rows_parse_with_the_name_last() {
        let rows = vec![
            encode_row(&["$1", "1700000000", "@2", "1", "%3", "0", "my | work"]),
            b"junk".to_vec(),
        ];
        assert_eq!(
            parse_locations(&rows),
            [PaneLocation {
                session_id: "$1".into(),
                session_created: "1700000000".into(),
                window_id: "@2".into(),
                window_active: true,
                pane_id: "%3".into(),
                pane_active: false,
                session_name: "my | work".into(),
            }]
        );
    }
}
