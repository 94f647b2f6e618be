//! What the tools that wait on a pane share: which pane a target means, the pane's state in
//! one tmux command, the wait budget (a concurrent-wait slot and a clamped timeout), and the
//! error a cancelled wait ends with.
//!
//! Waiting itself never asks tmux anything: it sleeps on the pane's output subscription (see
//! [`crate::mux::tmux::output`]) until output arrives, the deadline passes or the client cancels.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::mcp::access::{PANES_HINT, TmuxAccess, engine_error};
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mux::foreground::{self, Foreground};
use crate::mux::tmux::format::{flag, row_format, split_row};
use crate::mux::tmux::output::PaneStream;
use crate::mux::tmux::{EngineError, OutputSubscription, PaneId, TmuxCommand};

/// A pane's state, read in one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneState {
    pub pane: PaneId,
    /// The tmux server's pid: together with the pane id, names the pane across time.
    pub server_pid: u32,
    /// The pid of the pane's program (changes when the pane is respawned).
    pub pane_pid: u32,
    pub dead: bool,
    pub in_mode: bool,
    pub alternate_on: bool,
    /// Lines in the pane's history (scrolled off the top of the screen).
    pub history_size: u64,
    pub history_limit: u64,
    /// The cursor's row on the screen, from 0.
    pub cursor_y: u64,
    pub height: u64,
    /// How the pane's program ended, once dead.
    pub dead_status: Option<i32>,
    /// The pane's terminal device (`/dev/pts/N`).
    pub tty: String,
    /// The foreground program, as tmux names it (`bash`, `vim`).
    pub current_command: String,
}

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

impl PaneState {
    /// The command reading `pane`'s state: `list-panes` of its window (it fails for a missing
    /// pane, where `display-message` would not), one row per pane.
    pub fn command(pane: PaneId) -> Result<TmuxCommand, ToolError> {
        TmuxCommand::new("list-panes")
            .target(pane)
            .opt("-F", row_format(&STATE_FIELDS))
            .build()
            .map_err(|e| ToolError::new(ToolErrorKind::Internal, e.to_string(), "report this"))
    }

    /// `pane`'s row among `rows`.
    pub fn parse(pane: PaneId, rows: &[Vec<u8>]) -> Option<Self> {
        rows.iter().find_map(|row| {
            let f = split_row(row, STATE_FIELDS.len())?;
            if f[0].parse::<PaneId>().ok()? != pane {
                return None;
            }
            let number = |i: usize| f[i].parse::<u64>().unwrap_or(0);
            Some(Self {
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

    /// The pane's foreground process; see [`foreground_of`].
    pub fn foreground(&self, tmux: &TmuxAccess<'_>) -> Option<Foreground> {
        foreground_of(tmux, self.server_pid, self.pane_pid, &self.tty, self.dead)
    }

    /// Reads `pane`'s state; for a pane just dead, waits (3 s at most) for tmux to learn how its
    /// program ended, which tmux 3.3a records after the dead flag (seen over 1 s under load).
    pub async fn read_settled(tmux: &TmuxAccess<'_>, pane: PaneId) -> Result<Self, ToolError> {
        let mut state = Self::read(tmux, pane).await?;
        for _ in 0..30 {
            if !state.dead || state.dead_status.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            state = Self::read(tmux, pane).await?;
        }
        Ok(state)
    }

    /// Reads `pane`'s state.
    pub async fn read(tmux: &TmuxAccess<'_>, pane: PaneId) -> Result<Self, ToolError> {
        let rows = tmux.run(Self::command(pane)?, PANES_HINT).await?;
        Self::parse(pane, &rows).ok_or_else(|| missing_pane(pane))
    }
}

/// A pane's foreground process from `/proc`, where the gateway may read it: not for a
/// workspace's panes (their pids belong to the sandbox's pid namespace), not for a dead pane.
pub fn foreground_of(
    tmux: &TmuxAccess<'_>,
    server_pid: u32,
    pane_pid: u32,
    tty: &str,
    dead: bool,
) -> Option<Foreground> {
    if tmux.workspace.is_some() || dead {
        return None;
    }
    foreground::of_pane(server_pid, pane_pid, tty)
}

/// The error for a pane that does not exist (any more).
pub fn missing_pane(pane: PaneId) -> ToolError {
    ToolError::not_found(format!("no pane {pane} on this server"), PANES_HINT)
}

/// Subscribes to `pane`'s output from now on, giving up at `deadline` (the first wait on a
/// session waits for its output connection to attach).
pub async fn subscribe(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    deadline: Instant,
) -> Result<OutputSubscription, ToolError> {
    tmux.server
        .subscribe(&tmux.caller, pane, deadline)
        .await
        .map_err(|e| engine_error(tmux.server_name(), e, PANES_HINT))
}

/// How long starting to record a pane may wait for its output connection, for calls that read
/// a pane's state rather than wait on it.
pub const KEEP_WAIT: Duration = Duration::from_secs(10);

/// A time as Unix milliseconds (0 before the epoch).
pub fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Keeps `pane`'s command ledger recording (starting it if needed) and returns its stream.
pub async fn keep(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    deadline: Instant,
) -> Result<Arc<PaneStream>, ToolError> {
    tmux.server
        .keep(&tmux.caller, pane, deadline)
        .await
        .map_err(|e| engine_error(tmux.server_name(), e, PANES_HINT))
}

/// Runs one of a wait's tmux steps (resolving its target, reading the pane's state), giving up
/// at the wait's own deadline with the same error as a subscription that could not begin in
/// time.
pub async fn by_deadline<T>(
    tmux: &TmuxAccess<'_>,
    deadline: Instant,
    step: impl Future<Output = Result<T, ToolError>>,
) -> Result<T, ToolError> {
    let started = Instant::now();
    tokio::time::timeout_at(deadline, step)
        .await
        .unwrap_or_else(|_| {
            let timeout = EngineError::Timeout {
                server: tmux.server_name().to_owned(),
                after: started.elapsed(),
            };
            Err(engine_error(tmux.server_name(), timeout, ""))
        })
}

/// What a wait ends with when the client cancelled the call (the client no longer reads it).
pub fn cancelled() -> ToolError {
    ToolError::new(
        ToolErrorKind::Cancelled,
        "the call was cancelled by the client",
        "none needed",
    )
}

/// Milliseconds since `started`, for results.
pub fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_state_row() {
        let row = "%3|100|200|0|1|0|55|2000|7|40||/dev/pts/4|bash";
        let other = "%4|100|201|1|0|1|0|2000|0|40|2|/dev/pts/5|vim";
        let rows = vec![other.as_bytes().to_vec(), row.as_bytes().to_vec()];
        let state = PaneState::parse(PaneId(3), &rows).unwrap();
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
        assert!(PaneState::parse(PaneId(5), &rows).is_none());
    }
}
