//! A pane's state in one command, as one caller: whether its program runs, which mode and
//! screen it shows, its history and cursor, and which program is in the foreground.
//!
//! The tools that wait on a pane, run commands in it or report on it read this before they
//! act. This module owns the command line and the `-F` row it prints; callers get a
//! [`PaneState`] and a [`PaneOpError`] that says what happened, not what to tell anyone
//! about it.

use std::path::Path;
use std::time::Duration;

use muxgate_mux::foreground::Foreground;
use muxgate_mux::host::Host;

use crate::typed::op_error::PaneOpError;
use crate::wire::format::{flag, row_format, split_row};
use crate::{Caller, PaneId, QuoteError, TmuxCommand, TmuxServer};

/// A pane's state, read in one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneState {
    /// The pane (`%N`).
    pub pane: PaneId,
    /// The tmux server's pid: together with the pane id, names the pane across time.
    pub server_pid: u32,
    /// The pid of the pane's program (changes when the pane is respawned).
    pub pane_pid: u32,
    /// Whether the program exited and the pane stayed.
    pub dead: bool,
    /// Whether the pane shows a mode (copy mode…) instead of its program.
    pub in_mode: bool,
    /// Whether the program switched to the alternate screen.
    pub alternate_on: bool,
    /// Lines in the pane's history (scrolled off the top of the screen).
    pub history_size: u64,
    /// The most lines of history the pane keeps.
    pub history_limit: u64,
    /// The cursor's row on the screen, from 0.
    pub cursor_y: u64,
    /// The pane's height in cells.
    pub height: u64,
    /// How the pane's program ended, once dead.
    pub dead_status: Option<i32>,
    /// The pane's terminal device (`/dev/pts/N`).
    pub tty: String,
    /// The foreground program, as tmux names it (`bash`, `vim`).
    pub current_command: String,
}

impl PaneState {
    /// The pane's foreground process, as `host` (the machine the pane runs on) tells it; none
    /// for a dead pane.
    pub async fn foreground(&self, host: &dyn Host) -> Option<Foreground> {
        if self.dead {
            return None;
        }
        host.foreground(self.server_pid, self.pane_pid, &self.tty)
            .await
    }
}

/// `-F` fields of the state row; free text last.
const STATE_FIELDS: [&str; 13] = [
    "pane_id",
    "pid",
    "pane_pid",
    "pane_dead",
    "pane_in_mode",
    "alternate_on",
    "history_size",
    "history_limit",
    "cursor_y",
    "pane_height",
    "pane_dead_status",
    "pane_tty",
    "pane_current_command",
];

/// The command reading `pane`'s state: `list-panes` of its window (it fails for a missing
/// pane, where `display-message` would not), one row per pane.
fn state_command(pane: PaneId) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("list-panes")
        .target(pane)
        .opt("-F", row_format(&STATE_FIELDS))
        .build()
}

/// `pane`'s row among the rows of [`state_command`].
fn parse_state(pane: PaneId, rows: &[Vec<u8>]) -> Option<PaneState> {
    rows.iter().find_map(|row| {
        let f = split_row(row, STATE_FIELDS.len())?;
        if f[0].parse::<PaneId>().ok()? != pane {
            return None;
        }
        let number = |i: usize| f[i].parse::<u64>().unwrap_or(0);
        Some(PaneState {
            pane,
            server_pid: f[1].parse().ok()?,
            pane_pid: f[2].parse().unwrap_or(0),
            dead: flag(&f[3]),
            in_mode: flag(&f[4]),
            alternate_on: flag(&f[5]),
            history_size: number(6),
            history_limit: number(7),
            cursor_y: number(8),
            height: number(9),
            dead_status: f[10].parse().ok(),
            tty: f[11].clone(),
            current_command: f[12].clone(),
        })
    })
}

/// The panes of one tmux server, read as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxPaneStates {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxPaneStates {
    /// The panes of `server`, read as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// `pane`'s state.
    pub async fn read(&self, pane: PaneId) -> Result<PaneState, PaneOpError> {
        let rows = self.server.run(&self.caller, state_command(pane)?).await?;
        parse_state(pane, &rows).ok_or(PaneOpError::Missing(pane))
    }

    /// `pane`'s state; for a pane just dead, waits (3 s at most) for tmux to learn how its
    /// program ended, which tmux 3.3a records after the dead flag (seen over 1 s under load).
    pub async fn read_settled(&self, pane: PaneId) -> Result<PaneState, PaneOpError> {
        let mut state = self.read(pane).await?;
        for _ in 0..30 {
            if !state.dead || state.dead_status.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            state = self.read(pane).await?;
        }
        Ok(state)
    }

    /// `pane`'s state once its program has started. Right after a pane is made, tmux shows its
    /// own name for it until the program is executed (an agent that runs a command in a
    /// session it just created sees `tmux`, not its shell); tmux tells no event for that
    /// moment, so the state is read again every 20 ms, for at most 2 s or until
    /// `deadline`. A pane that really runs tmux is answered as it is then.
    pub async fn read_started(
        &self,
        pane: PaneId,
        deadline: tokio::time::Instant,
    ) -> Result<PaneState, PaneOpError> {
        let until = deadline.min(tokio::time::Instant::now() + START_GRACE);
        let mut state = self.read(pane).await?;
        while shows_tmux(&state.current_command) && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
            state = self.read(pane).await?;
        }
        Ok(state)
    }
}

/// How long [`TmuxPaneStates::read_started`] waits for a new pane's program to start.
const START_GRACE: Duration = Duration::from_secs(2);

#[cfg(test)]
impl PaneState {
    /// For tests: live pane `pane` of server 1, at the top of a 40-row screen, whose program
    /// (pid 7) tmux names `command`.
    pub(crate) fn running(pane: PaneId, command: &str) -> Self {
        Self {
            pane,
            server_pid: 1,
            pane_pid: 7,
            dead: false,
            in_mode: false,
            alternate_on: false,
            history_size: 0,
            history_limit: 2000,
            cursor_y: 0,
            height: 40,
            dead_status: None,
            tty: "/dev/pts/1".into(),
            current_command: command.into(),
        }
    }
}

/// Whether `current_command` is tmux's own name: what tmux shows for a pane whose process it
/// has forked but not yet made the pane's program (or for a pane that runs tmux itself).
fn shows_tmux(current_command: &str) -> bool {
    Path::new(current_command).file_name() == Some("tmux".as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmux_itself_is_told_by_its_name_with_or_without_a_path() {
        for name in ["tmux", "/usr/bin/tmux"] {
            assert!(shows_tmux(name), "{name}");
        }
        for name in ["bash", "tmux-mem-cpu-load", "", "/bin/sh"] {
            assert!(!shows_tmux(name), "{name}");
        }
    }

    #[test]
    fn command_line() {
        let line = state_command(PaneId(3)).unwrap().text();
        assert!(line.starts_with("list-panes -t '%3' -F "), "{line}");
        assert!(line.ends_with("|#{q:pane_current_command}'"), "{line}");
    }

    #[test]
    fn parses_a_state_row() {
        let row = "%3|100|200|0|1|0|55|2000|7|40||/dev/pts/4|bash";
        let other = "%4|100|201|1|0|1|0|2000|0|40|2|/dev/pts/5|vim";
        let rows = vec![other.as_bytes().to_vec(), row.as_bytes().to_vec()];
        let state = parse_state(PaneId(3), &rows).unwrap();
        assert_eq!(
            state,
            PaneState {
                pane: PaneId(3),
                server_pid: 100,
                pane_pid: 200,
                dead: false,
                in_mode: true,
                alternate_on: false,
                history_size: 55,
                history_limit: 2000,
                cursor_y: 7,
                height: 40,
                dead_status: None,
                tty: "/dev/pts/4".into(),
                current_command: "bash".into(),
            }
        );
        assert!(parse_state(PaneId(5), &rows).is_none());
        let other_state = parse_state(PaneId(4), &rows).unwrap();
        assert!(other_state.dead);
        assert_eq!(other_state.dead_status, Some(2));
    }

    #[test]
    fn a_row_without_a_server_pid_is_not_a_state() {
        let rows = vec![b"%3||200|0|1|0|55|2000|7|40||/dev/pts/4|bash".to_vec()];
        assert!(parse_state(PaneId(3), &rows).is_none());
    }
}
