//! What agent CLIs say about themselves: their own hooks (Claude Code's `Notification`,
//! `Stop` and `UserPromptSubmit`, Codex's `notify`…) report "working", "waiting for input" or
//! "idle" for the pane they run in, and the latest report per pane is kept here.
//!
//! A report names the server instance ([`ServerInstance`]: which of the gateway's servers, and
//! which process of it) and the pane's program instance (the tmux server's pid and the pane's
//! pid), so a report reaches no other tenant's workspace (each is a server named `workspace`,
//! whose panes have the same ids and pids in their sandboxes) and outlives neither a respawn
//! nor a server restart that reuses the pane id. The store is bounded: past [`MAX_PANES`]
//! panes the oldest report is dropped.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::time::Instant;

use muxgate_tmux::{PaneId, ServerInstance};

/// Most panes with a kept report.
pub(crate) const MAX_PANES: usize = 4096;

/// What an agent says it is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    Working,
    WaitingForInput,
    Idle,
}

impl AgentState {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Working => "working",
            AgentState::WaitingForInput => "waiting_for_input",
            AgentState::Idle => "idle",
        }
    }

    /// Whether the agent takes a prompt in this state.
    pub fn takes_input(self) -> bool {
        !matches!(self, AgentState::Working)
    }
}

/// One pane's program instance: the server's pid, the pane, and the pid of its program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PaneInstance {
    pub server: u32,
    pub pane: PaneId,
    pub program: u32,
}

/// The latest report of one pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentReport {
    pub state: AgentState,
    /// The agent's name as its hook gave it (`claude-code`), if any.
    pub agent: Option<String>,
    pub at: Instant,
}

/// The latest report per pane, per server instance.
#[derive(Debug)]
pub struct AgentReports {
    reports: Mutex<HashMap<(ServerInstance, PaneInstance), AgentReport>>,
    /// Counts the reports, to wake whoever follows agents' states.
    changes: tokio::sync::watch::Sender<u64>,
}

impl Default for AgentReports {
    fn default() -> Self {
        Self {
            reports: Mutex::default(),
            changes: tokio::sync::watch::Sender::new(0),
        }
    }
}

impl AgentReports {
    /// Changes with every report.
    pub(crate) fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Keeps `report` as the latest for `pane` of server `server`.
    pub fn record(&self, server: &ServerInstance, pane: PaneInstance, report: AgentReport) {
        let mut reports = self.lock();
        let key = (server.clone(), pane);
        if !reports.contains_key(&key)
            && reports.len() >= MAX_PANES
            && let Some(oldest) = reports
                .iter()
                .min_by_key(|(_, r)| r.at)
                .map(|(k, _)| k.clone())
        {
            reports.remove(&oldest);
        }
        reports.insert(key, report);
        drop(reports);
        self.changes
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    /// The latest report for `pane` of server `server`, if its program instance made one.
    pub fn latest(&self, server: &ServerInstance, pane: PaneInstance) -> Option<AgentReport> {
        self.lock().get(&(server.clone(), pane)).cloned()
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(ServerInstance, PaneInstance), AgentReport>> {
        // A panic while holding the lock leaves a map that is still whole.
        self.reports
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(key: &str, epoch: u64) -> ServerInstance {
        ServerInstance {
            key: key.into(),
            epoch,
        }
    }

    fn instance(pane: u32, program: u32) -> PaneInstance {
        PaneInstance {
            server: 10,
            pane: PaneId(pane),
            program,
        }
    }

    fn report(state: AgentState) -> AgentReport {
        report_at(state, Instant::now())
    }

    fn report_at(state: AgentState, at: Instant) -> AgentReport {
        AgentReport {
            state,
            agent: Some("claude-code".into()),
            at,
        }
    }

    #[test]
    fn the_latest_report_of_the_same_program_counts() {
        let reports = AgentReports::default();
        reports.record(
            &server("main", 0),
            instance(3, 100),
            report(AgentState::Working),
        );
        reports.record(
            &server("main", 0),
            instance(3, 100),
            report(AgentState::Idle),
        );
        let latest = reports
            .latest(&server("main", 0), instance(3, 100))
            .unwrap();
        assert_eq!(latest.state, AgentState::Idle);
        // A respawned pane, another server with the same pane id: no report.
        assert_eq!(reports.latest(&server("main", 0), instance(3, 101)), None);
        assert_eq!(reports.latest(&server("other", 0), instance(3, 100)), None);
    }

    #[test]
    fn workspaces_and_their_restarts_do_not_share_reports() {
        // Every workspace's server is `workspace`, with pid 2 and panes from %0 in its sandbox.
        let reports = AgentReports::default();
        let alice = server("workspace:alice", 7);
        reports.record(&alice, instance(0, 3), report(AgentState::WaitingForInput));
        assert!(reports.latest(&alice, instance(0, 3)).is_some());
        assert_eq!(
            reports.latest(&server("workspace:bob", 7), instance(0, 3)),
            None
        );
        assert_eq!(
            reports.latest(&server("workspace:alice", 8), instance(0, 3)),
            None
        );
    }

    #[test]
    fn the_store_keeps_at_most_max_panes_dropping_the_oldest() {
        let reports = AgentReports::default();
        let start = Instant::now();
        for pane in 0..=u32::try_from(MAX_PANES).unwrap() {
            let at = start + std::time::Duration::from_millis(u64::from(pane));
            reports.record(
                &server("main", 0),
                instance(pane, 1),
                report_at(AgentState::Idle, at),
            );
        }
        assert_eq!(reports.lock().len(), MAX_PANES);
        assert_eq!(reports.latest(&server("main", 0), instance(0, 1)), None);
        assert!(reports.latest(&server("main", 0), instance(1, 1)).is_some());
    }

    #[test]
    fn only_working_refuses_input() {
        assert!(!AgentState::Working.takes_input());
        assert!(AgentState::WaitingForInput.takes_input());
        assert!(AgentState::Idle.takes_input());
    }
}
