//! Each spawned agent's state, followed for as long as it lives, so that a person hears when
//! it needs one (`[notify]`: `agent_blocked`, `agent_idle`, `agent_exited`) without anyone
//! polling.
//!
//! One task per agent, reading its state only when it can have changed ([`AgentFollow`]): an
//! agent that sits idle or blocked costs no tmux command. The task ends with the agent
//! (`exited`), when it is stopped, or at shutdown. What each watch last saw is kept
//! ([`AgentWatches::blocked`]): the inbox lists the agents blocked on a human from it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::McpServer;
use super::agent_follow::{AgentFollow, Look, Seen};
use super::call::CallContext;
use super::pane_state;
use crate::auth::owners::OwnerScope;
use crate::notify::Event;
use muxgate_tmux::PaneId;

/// The agent a watch follows.
pub(crate) struct Watched {
    pub(crate) call: CallContext,
    pub(crate) server: String,
    pub(crate) scope: OwnerScope,
    pub(crate) id: String,
    pub(crate) kind: String,
    pub(crate) pane: PaneId,
}

/// One running watch: how to stop it, and what it last saw.
struct Watch {
    stop: CancellationToken,
    agent: Arc<Watched>,
    seen: Edge,
}

/// An agent's state as its watch last read it, and since when.
#[derive(Debug, Clone)]
pub(crate) struct Edge {
    pub(crate) state: &'static str,
    pub(crate) blocked_on: Option<&'static str>,
    pub(crate) why: Option<String>,
    pub(crate) since: Instant,
}

impl Edge {
    fn of(state: &'static str, status: Option<&pane_state::AgentStatusOutput>) -> Self {
        Self {
            state,
            blocked_on: status.and_then(|s| s.blocked_on),
            why: status.and_then(|s| s.explain.first()).cloned(),
            since: Instant::now(),
        }
    }
}

/// The running watches, by scope and agent id: stopping an agent stops its watch.
#[derive(Default)]
pub(crate) struct AgentWatches {
    watches: Mutex<HashMap<(String, String), Watch>>,
}

impl std::fmt::Debug for AgentWatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentWatches")
            .field("watches", &self.lock().len())
            .finish()
    }
}

impl AgentWatches {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Watch>> {
        self.watches.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts following `agent`, whose state is `state` now.
    pub(crate) fn start(&self, gateway: &McpServer, agent: Watched, state: &'static str) {
        let stop = gateway.state().shutdown.child_token();
        let agent = Arc::new(agent);
        let key = (agent.scope.as_str().to_owned(), agent.id.clone());
        let watch = Watch {
            stop: stop.clone(),
            agent: agent.clone(),
            seen: Edge::of(state, None),
        };
        if let Some(old) = self.lock().insert(key, watch) {
            old.stop.cancel();
        }
        tokio::spawn(follow(gateway.clone(), agent, state, stop));
    }

    /// Stops following agent `id` of `scope`.
    pub(crate) fn stop(&self, scope: &OwnerScope, id: &str) {
        if let Some(watch) = self
            .lock()
            .remove(&(scope.as_str().to_owned(), id.to_owned()))
        {
            watch.stop.cancel();
        }
    }

    /// Notes the state `agent`'s watch read last.
    fn saw(&self, agent: &Watched, edge: Edge) {
        let key = (agent.scope.as_str().to_owned(), agent.id.clone());
        if let Some(watch) = self.lock().get_mut(&key) {
            watch.seen = edge;
        }
    }

    /// The watched agent `id` of `scope` (an [`OwnerScope`]'s text: every tenant's workspace
    /// server has the same name, its scope is its own).
    pub(crate) fn find(&self, scope: &str, id: &str) -> Option<Arc<Watched>> {
        self.lock()
            .get(&(scope.to_owned(), id.to_owned()))
            .map(|watch| watch.agent.clone())
    }

    /// The watched agents blocked on a human now, longest-blocked first.
    pub(crate) fn blocked(&self) -> Vec<(Arc<Watched>, Edge)> {
        let mut blocked: Vec<(Arc<Watched>, Edge)> = self
            .lock()
            .values()
            .filter(|watch| watch.seen.state == "blocked")
            .map(|watch| (watch.agent.clone(), watch.seen.clone()))
            .collect();
        blocked.sort_by_key(|(_, edge)| edge.since);
        blocked
    }
}

/// Follows `agent` until it exits, `stop` is cancelled, or its server cannot be reached.
async fn follow(
    gateway: McpServer,
    agent: Arc<Watched>,
    mut state: &'static str,
    stop: CancellationToken,
) {
    let Ok(tmux) = gateway.tmux_access(&agent.call, Some(&agent.server)).await else {
        return;
    };
    let Ok(mut follow) =
        AgentFollow::start(&gateway, &tmux, agent.pane, Seen::JustStarted(state)).await
    else {
        return;
    };
    loop {
        let look = tokio::select! {
            biased;
            () = stop.cancelled() => return,
            look = follow.next(&gateway, &tmux) => look,
        };
        let (now_state, status) = match look {
            None => return,
            Some(Look::State { state, status, .. }) => (state, status),
            Some(Look::Gone) => ("exited", None),
            Some(Look::NoAgent) => continue,
        };
        if now_state != state {
            state = now_state;
            gateway
                .state()
                .agent_watches
                .saw(&agent, Edge::of(state, status.as_ref()));
            tell(&gateway, &agent, state, status.as_ref());
            gateway
                .state()
                .fleet_feed
                .changed(&agent.server, &agent.id, agent.call.sub());
        }
        if state == "exited" {
            return;
        }
    }
}

/// Tells `[notify]` of an edge into a state a person may act on.
fn tell(
    gateway: &McpServer,
    agent: &Watched,
    state: &'static str,
    status: Option<&pane_state::AgentStatusOutput>,
) {
    let event = match state {
        "blocked" | "idle" | "exited" => Event::agent_state(
            state,
            &crate::notify::AgentEdge {
                client: agent.call.sub(),
                server: &agent.server,
                agent: &agent.id,
                kind: &agent.kind,
                blocked_on: status.and_then(|s| s.blocked_on),
                why: status.and_then(|s| s.explain.first()).map(String::as_str),
            },
        ),
        _ => return,
    };
    if let Some(event) = event {
        let event = event.in_workspace(&agent.call.principal.workspace);
        gateway.state().notifier.send(event);
    }
}
