//! Each spawned agent's state, followed for as long as it lives, so that a person hears when
//! it needs one (`[notify]`: `agent_blocked`, `agent_idle`, `agent_exited`) without anyone
//! polling.
//!
//! One task per agent. Its state is read again (as `get_pane_state` reads it) only when it can
//! have changed: when its pane prints (at most every [`LOOK_PAUSE`]), when an agent hook
//! reports, when a rule of time would turn the verdict (output stops counting as "moving"
//! [`MOVING`] after it, a new agent stops counting as "starting" [`STARTING`] after it was
//! first seen), and when its output ends. An agent that sits idle or blocked costs no tmux
//! command. The task ends with the agent (`exited`), when it is stopped, or at shutdown.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::McpServer;
use super::call::CallContext;
use super::error::ToolErrorKind;
use super::pane_state;
use super::tools::watch::{KEEP_WAIT, keep};
use crate::auth::owners::OwnerScope;
use crate::mux::agent_status::{MOVING, STARTING};
use crate::notify::Event;
use muxgate_tmux::PaneId;

/// The least time between two reads of a printing agent's state.
const LOOK_PAUSE: Duration = Duration::from_millis(150);
/// Past a time rule's turn, how long to wait before reading, so the rule has turned.
const MARGIN: Duration = Duration::from_millis(100);

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

/// When to read the agent's state next.
#[derive(Debug, Default)]
struct Looks {
    /// A read asked for by an event (output, a hook).
    soon: Option<Instant>,
    /// The turns of the time rules.
    moving_ends: Option<Instant>,
    starting_ends: Option<Instant>,
    /// The last read.
    last: Option<Instant>,
}

impl Looks {
    /// Asks for a read as soon as the pause after the last one allows.
    fn ask(&mut self, now: Instant) {
        let earliest = self.last.map_or(now, |last| (last + LOOK_PAUSE).max(now));
        self.soon = Some(self.soon.map_or(earliest, |soon| soon.min(earliest)));
    }

    /// The next read's time, if one is due at all.
    fn next(&self) -> Option<Instant> {
        [self.soon, self.moving_ends, self.starting_ends]
            .into_iter()
            .flatten()
            .min()
    }

    /// Notes a read at `now`: every turn that has come is spent.
    fn looked(&mut self, now: Instant) {
        self.last = Some(now);
        for at in [
            &mut self.soon,
            &mut self.moving_ends,
            &mut self.starting_ends,
        ] {
            if at.is_some_and(|at| at <= now) {
                *at = None;
            }
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
    let Ok(stream) = keep(&tmux, agent.pane, Instant::now() + KEEP_WAIT).await else {
        return;
    };
    let mut output = stream.subscribe();
    let mut reports = gateway.state().agent_reports.changes();
    let mut looks = Looks {
        starting_ends: Some(Instant::now() + STARTING + MARGIN),
        ..Looks::default()
    };
    let mut ended = false;
    loop {
        let next = looks.next();
        tokio::select! {
            biased;
            () = stop.cancelled() => return,
            next = output.next(), if !ended => {
                ended = next.is_err();
                let now = Instant::now();
                looks.ask(now);
                looks.moving_ends = Some(now + MOVING + MARGIN);
                continue;
            }
            changed = reports.changed() => {
                if changed.is_err() {
                    return;
                }
                looks.ask(Instant::now());
                continue;
            }
            () = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {}
        }
        looks.looked(Instant::now());
        let read = match pane_state::with_screen(&gateway, &tmux, agent.pane).await {
            Ok((read, _)) => read,
            // Its pane (or session) is gone: so is the agent.
            Err(error) if error.kind == ToolErrorKind::NotFound => {
                tell(&gateway, &agent, "exited", None);
                return;
            }
            Err(_) => continue,
        };
        let now_state = match (&read.agent_status, read.dead) {
            (Some(status), _) => status.state,
            (None, true) => "exited",
            (None, false) => continue,
        };
        if now_state != state {
            state = now_state;
            let status = read.agent_status.as_ref();
            tell(&gateway, &agent, state, status);
            if state == "exited" {
                return;
            }
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
