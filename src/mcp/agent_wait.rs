//! `wait_for_state`'s agent conditions: wait until any (or all) of some panes' agents is
//! blocked on a person, idle (done with its task), or either of these or exited — the moment a
//! coordinator has something to do.
//!
//! Each pane's agent is followed as [`AgentFollow`] follows one: its state is read at the start,
//! then only when it can have changed, so a wait on a quiet fleet asks tmux nothing.

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::McpServer;
use super::access::TmuxAccess;
use super::agent_follow::{AgentFollow, Look, Seen};
use super::error::ToolError;
use muxgate_tmux::PaneId;

/// Which agent states end a pane's wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AgentCondition {
    /// Needs a person: a dialog, a permission, a login, a question.
    Blocked,
    /// Waiting for its next task.
    Idle,
    /// Blocked, idle or exited: not working.
    Waiting,
}

impl AgentCondition {
    /// Whether an agent in `state` (`exited` for a pane that is gone) has reached it.
    fn reached_by(self, state: &str) -> bool {
        match self {
            Self::Blocked => state == "blocked",
            Self::Idle => state == "idle",
            Self::Waiting => matches!(state, "blocked" | "idle" | "exited"),
        }
    }
}

/// One pane whose agent reached the state.
#[derive(Debug)]
pub(crate) struct AgentReached {
    pub(crate) pane: PaneId,
    /// When, from the start of the wait.
    pub(crate) after: std::time::Duration,
    pub(crate) state: &'static str,
    /// The last line on its screen (the question, for a blocked agent).
    pub(crate) line: Option<String>,
}

/// What an agent wait found: the panes that got there, in order, and those that did not.
#[derive(Debug, Default)]
pub(crate) struct AgentWaitEnd {
    pub(crate) reached: Vec<AgentReached>,
    pub(crate) pending: Vec<PaneId>,
}

/// Waits until any (`all` false) or all of `panes` reach `condition`, `deadline` passes or
/// `cancel` fires (`None`). A pane that is gone and so cannot reach the condition stays pending
/// and is followed no further; the wait ends early when no pane is left to follow.
pub(crate) async fn wait(
    gateway: &McpServer,
    tmux: &TmuxAccess<'_>,
    panes: Vec<PaneId>,
    (condition, all): (AgentCondition, bool),
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<Option<AgentWaitEnd>, ToolError> {
    let started = Instant::now();
    let mut following = FuturesUnordered::new();
    for &pane in &panes {
        let follow = AgentFollow::start(gateway, tmux, pane, Seen::Before).await?;
        following.push(look_at(follow, gateway, tmux));
    }
    let mut end = AgentWaitEnd {
        reached: Vec::new(),
        pending: panes,
    };
    let done = |end: &AgentWaitEnd| end.pending.is_empty() || (!all && !end.reached.is_empty());
    while !done(&end) {
        let (follow, look) = tokio::select! {
            () = cancel.cancelled() => return Ok(None),
            () = tokio::time::sleep_until(deadline) => break,
            next = following.next() => match next {
                Some(next) => next,
                None => break,
            },
        };
        let gone = matches!(look, Some(Look::Gone));
        let (state, line) = match look {
            // The gateway is shutting down.
            None => break,
            Some(Look::State { state, screen, .. }) => (state, screen.last_line),
            Some(Look::Gone) => ("exited", None),
            Some(Look::NoAgent) => ("", None),
        };
        if condition.reached_by(state) {
            end.pending.retain(|&pane| pane != follow.pane());
            end.reached.push(AgentReached {
                pane: follow.pane(),
                after: started.elapsed(),
                state,
                line,
            });
        } else if !gone {
            following.push(look_at(follow, gateway, tmux));
        }
    }
    Ok(Some(end))
}

/// The next look at `follow`'s agent, with the follow (to look again).
async fn look_at(
    mut follow: AgentFollow,
    gateway: &McpServer,
    tmux: &TmuxAccess<'_>,
) -> (AgentFollow, Option<Look>) {
    let look = follow.next(gateway, tmux).await;
    (follow, look)
}
