//! Each spawned agent's state, followed for as long as it lives, so that a person hears when
//! it needs one (`[notify]`: `agent_blocked`, `agent_idle`, `agent_exited`) without anyone
//! polling.
//!
//! One task per agent, reading its state only when it can have changed ([`AgentFollow`]): an
//! agent that sits idle or blocked costs no tmux command. The task ends with the agent
//! (`exited`), when it is stopped, or at shutdown.

use std::collections::HashMap;
use std::sync::Mutex;

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

/// The running watches, by scope and agent id: stopping an agent stops its watch.
#[derive(Debug, Default)]
pub(crate) struct AgentWatches {
    stops: Mutex<HashMap<(String, String), CancellationToken>>,
}

impl AgentWatches {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), CancellationToken>> {
        self.stops.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts following `agent`, whose state is `state` now.
    pub(crate) fn start(&self, gateway: &McpServer, agent: Watched, state: &'static str) {
        let stop = gateway.state().shutdown.child_token();
        let key = (agent.scope.as_str().to_owned(), agent.id.clone());
        if let Some(old) = self.lock().insert(key, stop.clone()) {
            old.cancel();
        }
        tokio::spawn(follow(gateway.clone(), agent, state, stop));
    }

    /// Stops following agent `id` of `scope`.
    pub(crate) fn stop(&self, scope: &OwnerScope, id: &str) {
        if let Some(stop) = self
            .lock()
            .remove(&(scope.as_str().to_owned(), id.to_owned()))
        {
            stop.cancel();
        }
    }
}

/// Follows `agent` until it exits, `stop` is cancelled, or its server cannot be reached.
async fn follow(
    gateway: McpServer,
    agent: Watched,
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
        gateway.state().notifier.send(event);
    }
}
