//! Each spawned agent's state, followed for as long as it lives, so that a person hears when
//! it needs one (`[notify]`: `agent_blocked`, `agent_idle`, `agent_exited`) without anyone
//! polling.
//!
//! One task per agent, reading its state only when it can have changed ([`AgentFollow`]): an
//! agent that sits idle or blocked costs no tmux command. The task ends with the agent
//! (`exited`), when it is stopped, or at shutdown. What each watch last saw is kept
//! ([`AgentWatches::blocked`]): the inbox lists the agents blocked on a human from it. When the
//! gateway starts, the agents an earlier run spawned that still run are followed again
//! ([`McpServer::follow_recorded`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::McpServer;
use super::agent_follow::{AgentFollow, Look, Seen};
use super::call::CallContext;
use super::error::{ToolError, ToolErrorKind};
use super::pane_state;
use crate::auth::owners::OwnerScope;
use crate::auth::{Principal, SCOPE_READ};
use crate::fleet::registry::AgentRecord;
use crate::notify::Event;
use crate::workspace::{self, WorkspaceName};
use muxgate_tmux::PaneId;

/// How many times [`McpServer::follow_recorded`] tries an agent whose state it cannot read,
/// and how long it waits between tries.
const FOLLOW_ATTEMPTS: u32 = 3;
const FOLLOW_RETRY: Duration = Duration::from_secs(1);

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

impl McpServer {
    /// Follows again every recorded agent that still runs in the tmux server process it was
    /// spawned in (the gateway restarted, its agents did not): its edges are told and the
    /// inbox lists it, as before. A workspace that is not running is not started for it. An
    /// agent whose state cannot be read (a server slow to answer as the gateway starts) is
    /// tried again, [`FOLLOW_ATTEMPTS`] times in all, and said so when given up on; one whose
    /// pane is gone is not.
    pub(crate) async fn follow_recorded(&self) {
        for (scope, record) in self.state().fleet.all() {
            for attempt in 1..=FOLLOW_ATTEMPTS {
                let Some(agent) = self.recorded(&scope, &record).await else {
                    break;
                };
                match self.follow_again(&scope, &record, agent).await {
                    // Its pane is gone: nothing runs to follow.
                    Ok(())
                    | Err(ToolError {
                        kind: ToolErrorKind::NotFound,
                        ..
                    }) => break,
                    Err(_) if attempt < FOLLOW_ATTEMPTS => tokio::time::sleep(FOLLOW_RETRY).await,
                    Err(error) => tracing::warn!(
                        agent = %record.id,
                        scope,
                        error = %error.message,
                        "a recorded agent's state could not be read: it is not followed"
                    ),
                }
            }
        }
    }

    /// Follows `agent` (of `record`) again if it still runs, not exited, in the server process
    /// it was spawned in; an error when its state could not be read.
    async fn follow_again(
        &self,
        scope: &str,
        record: &AgentRecord,
        agent: Watched,
    ) -> Result<(), ToolError> {
        let tmux = self.tmux_access(&agent.call, Some(&agent.server)).await?;
        let process = super::tools::watch::read_state(&tmux, agent.pane).await?;
        let same_process =
            record.server_process == Some((tmux.instance().epoch, process.server_pid));
        let (state, _) = pane_state::with_screen(self, &tmux, agent.pane).await?;
        let running = state.agent_status.as_ref().map(|s| s.state);
        if let (true, Some(now)) = (same_process, running.filter(|s| *s != "exited")) {
            tracing::info!(agent = %record.id, scope, state = now, "following a recorded agent again");
            drop(tmux);
            self.state().agent_watches.start(self, agent, now);
        }
        Ok(())
    }

    /// The watch of recorded agent `record` of `scope`, read as its spawner: the server its
    /// scope names, its workspace where it is one (and only while that workspace runs).
    async fn recorded(&self, scope: &str, record: &AgentRecord) -> Option<Watched> {
        let pane = record.pane.parse::<PaneId>().ok()?;
        let mut principal = Principal::new(record.owner.as_str(), [SCOPE_READ]);
        let (server, owner_scope) = if let Some(name) = scope.strip_prefix("workspace:") {
            let workspaces = self.state().workspaces.as_ref()?;
            workspaces.running_server(&WorkspaceName::parse(name).ok()?)?;
            principal.workspace = name.to_owned();
            principal.acl.own_server = Some(workspace::SERVER_NAME);
            (
                workspace::SERVER_NAME.to_owned(),
                OwnerScope::workspace(name),
            )
        } else {
            let name = scope.strip_prefix("server:")?;
            (name.to_owned(), OwnerScope::configured(name))
        };
        Some(Watched {
            call: CallContext {
                principal,
                mcp_session: None,
                output: Default::default(),
            },
            server,
            scope: owner_scope,
            id: record.id.clone(),
            kind: record.kind.clone(),
            pane,
        })
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
