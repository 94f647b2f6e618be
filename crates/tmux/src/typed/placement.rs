//! Where a pane sits on one tmux server, as one caller: the server's socket, and every window
//! and session the pane is linked into.
//!
//! The gateway asks this about the pane it runs in, to refuse a kill that would take it down.
//! This module owns the command lines and the `-F` rows they print; callers get a
//! [`Placement`] and an [`OpError`] that says what happened, not what to tell anyone
//! about it.

use crate::typed::op_error::OpError;
use crate::wire::format::{row_format, split_row};
use crate::{Caller, PaneId, QuoteError, SessionId, TmuxCommand, TmuxServer, WindowId};

/// `-F` fields of a pane's row in the listing of every pane.
const PLACE_FIELDS: [&str; 3] = ["pane_id", "window_id", "session_id"];

/// Where a pane sits on a server: every (window, session) it is linked into.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// The window of each link (`@N`; repeated for a window linked into several sessions).
    pub windows: Vec<WindowId>,
    /// The session of each link (`$N`).
    pub sessions: Vec<SessionId>,
}

fn socket_command() -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("display-message")
        .flag("-p")
        .trusted_format("#{socket_path}")
        .build()
}

/// Every pane of every session: a window linked into several sessions has a row in each.
fn list_command() -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("list-panes")
        .flag("-a")
        .opt("-F", row_format(&PLACE_FIELDS))
        .build()
}

/// `pane`'s windows and sessions from the rows of [`list_command`].
fn parse_placement(pane: PaneId, rows: &[Vec<u8>]) -> Placement {
    let pane = pane.to_string();
    let mut placement = Placement::default();
    for f in rows
        .iter()
        .filter_map(|row| split_row(row, PLACE_FIELDS.len()))
    {
        if f[0] == pane {
            placement.windows.extend(f[1].parse::<WindowId>().ok());
            placement.sessions.extend(f[2].parse::<SessionId>().ok());
        }
    }
    placement
}

/// Where panes sit on one tmux server, asked as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxPlacement {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxPlacement {
    /// Where panes sit on `server`, asked as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// The path of the socket the server listens on, as it reports it (if it printed one).
    pub async fn socket_path(&self) -> Result<Option<String>, OpError> {
        let lines = self.server.run(&self.caller, socket_command()?).await?;
        Ok(lines
            .first()
            .map(|l| String::from_utf8_lossy(l).into_owned()))
    }

    /// Every window and session `pane` is linked into (none when it is not on the server).
    pub async fn of(&self, pane: PaneId) -> Result<Placement, OpError> {
        let rows = self.server.run(&self.caller, list_command()?).await?;
        Ok(parse_placement(pane, &rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::format::encode_row;

    #[test]
    fn command_lines() {
        assert!(
            socket_command()
                .unwrap()
                .text()
                .starts_with("display-message -p ")
        );
        let list = list_command().unwrap().text();
        assert!(list.starts_with("list-panes -a -F "), "{list}");
        assert!(list.contains("window_id") && list.contains("session_id"));
    }

    #[test]
    fn every_link_of_the_pane_counts() {
        let rows = vec![
            encode_row(&["%4", "@2", "$1"]),
            encode_row(&["%5", "@3", "$1"]),
            encode_row(&["%4", "@2", "$5"]),
            b"junk".to_vec(),
        ];
        assert_eq!(
            parse_placement(PaneId(4), &rows),
            Placement {
                windows: vec![WindowId(2), WindowId(2)],
                sessions: vec![SessionId(1), SessionId(5)],
            }
        );
        assert_eq!(parse_placement(PaneId(9), &rows), Placement::default());
    }
}
