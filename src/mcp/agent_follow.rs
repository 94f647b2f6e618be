//! One agent's state, read again only when it can have changed: when its pane prints (at most
//! every [`LOOK_PAUSE`], and once more when it has paused for [`SETTLE`]), when an agent hook
//! reports, when a rule of time would turn the
//! verdict (output stops counting as "moving" [`MOVING`] after it, a new agent stops counting
//! as "starting" [`STARTING`] after it was first seen), and when its output ends. An agent that
//! sits idle or blocked costs no tmux command.
//!
//! Followed so by the task that tells `[notify]` of a spawned agent's edges
//! ([`super::agent_watch`]) and by `wait_for_state`'s agent conditions.

use std::time::Duration;

use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use super::McpServer;
use super::access::TmuxAccess;
use super::error::{ToolError, ToolErrorKind};
use super::pane_state::{self, AgentStatusOutput, ScreenRead};
use super::tools::watch::{KEEP_WAIT, keep};
use crate::mux::agent_status::{MOVING, STARTING};
use muxgate_tmux::output::OutputSubscription;
use muxgate_tmux::{PaneId, ServerInstance};

/// The least time between two reads of a printing agent's state.
const LOOK_PAUSE: Duration = Duration::from_millis(150);
/// Reads held for slow followers; one that falls further behind reads the state itself.
const READS_BACKLOG: usize = 1024;
/// Past a time rule's turn, how long to wait before reading, so the rule has turned.
const MARGIN: Duration = Duration::from_millis(100);
/// How long output must pause before the screen it left is read once more: a read during a
/// burst may see it half drawn (a dialog, then nothing more printed until it is answered).
/// Longer than a spinner's frame, so a working agent is not read at every frame.
const SETTLE: Duration = Duration::from_millis(250);

/// What a look at an agent found.
#[derive(Debug)]
pub(crate) enum Look {
    /// Its state now (`exited` for a dead pane whatever ran there), how it was judged, and what
    /// its screen showed.
    State {
        state: &'static str,
        status: Option<AgentStatusOutput>,
        screen: ScreenRead,
    },
    /// Its pane runs no agent muxgate knows (yet).
    NoAgent,
    /// Its pane (or session) is gone: so is the agent.
    Gone,
}

/// When to read the agent's state next.
#[derive(Debug, Default)]
struct Looks {
    /// A read asked for by an event (output, a hook).
    soon: Option<Instant>,
    /// Once output has paused: [`SETTLE`] after the last.
    settled: Option<Instant>,
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
        [
            self.soon,
            self.settled,
            self.moving_ends,
            self.starting_ends,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Notes a read at `now`: every turn that has come is spent.
    fn looked(&mut self, now: Instant) {
        self.last = Some(now);
        for at in [
            &mut self.soon,
            &mut self.settled,
            &mut self.moving_ends,
            &mut self.starting_ends,
        ] {
            if at.is_some_and(|at| at <= now) {
                *at = None;
            }
        }
    }
}

/// What is known of a followed agent's state when following begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// Just started, and read as this state.
    JustStarted(&'static str),
    /// Nothing: read it at once.
    Before,
}

/// A read of an agent's state, by whoever made it (a follower, `list_agents`, `get_pane_state`,
/// `answer_agent`…): every follower of that pane takes it as its own, so an edge any reader
/// saw is an edge told, even one that ended before the follower would have looked.
#[derive(Debug, Clone)]
pub(crate) struct StateRead {
    server: ServerInstance,
    pane: PaneId,
    state: &'static str,
    status: Option<AgentStatusOutput>,
    screen: ScreenRead,
}

/// The reads of agents' states, as they are made.
#[derive(Debug)]
pub(crate) struct StateReads {
    reads: broadcast::Sender<StateRead>,
}

impl Default for StateReads {
    fn default() -> Self {
        Self {
            reads: broadcast::Sender::new(READS_BACKLOG),
        }
    }
}

impl StateReads {
    /// Tells the followers of `pane` on `server` what a read found.
    pub(crate) fn publish(
        &self,
        server: ServerInstance,
        pane: PaneId,
        status: &AgentStatusOutput,
        screen: &ScreenRead,
    ) {
        // No follower: nobody to tell.
        let _ = self.reads.send(StateRead {
            server,
            pane,
            state: status.state,
            status: Some(status.clone()),
            screen: screen.clone(),
        });
    }
}

/// One agent's pane, followed.
pub(crate) struct AgentFollow {
    pane: PaneId,
    server: ServerInstance,
    /// Everyone's reads of agents' states.
    reads: broadcast::Receiver<StateRead>,
    output: OutputSubscription,
    reports: watch::Receiver<u64>,
    looks: Looks,
    ended: bool,
}

impl AgentFollow {
    /// Starts following the agent in `pane`: one just started (its state is known; read again
    /// on the first event, or, were it still starting, when it has been seen for
    /// [`STARTING`]), or with `Seen::Before` one whose state the first [`Self::next`] reads at
    /// once.
    pub(crate) async fn start(
        gateway: &McpServer,
        tmux: &TmuxAccess<'_>,
        pane: PaneId,
        seen: Seen,
    ) -> Result<Self, ToolError> {
        let stream = keep(tmux, pane, Instant::now() + KEEP_WAIT).await?;
        let now = Instant::now();
        let looks = match seen {
            Seen::JustStarted(state) => Looks {
                starting_ends: (state == "starting").then(|| now + STARTING + MARGIN),
                ..Looks::default()
            },
            Seen::Before => Looks {
                soon: Some(now),
                ..Looks::default()
            },
        };
        Ok(Self {
            pane,
            server: tmux.instance(),
            reads: gateway.state().agent_reads.reads.subscribe(),
            output: stream.subscribe(),
            reports: gateway.state().agent_reports.changes(),
            looks,
            ended: false,
        })
    }

    /// The pane followed.
    pub(crate) fn pane(&self) -> PaneId {
        self.pane
    }

    /// The agent's state the next time it may have changed; `None` once the gateway no longer
    /// takes reports (it is shutting down). Cancel-safe: dropping the future loses no event.
    pub(crate) async fn next(
        &mut self,
        gateway: &McpServer,
        tmux: &TmuxAccess<'_>,
    ) -> Option<Look> {
        loop {
            let next = self.looks.next();
            tokio::select! {
                biased;
                chunk = self.output.next(), if !self.ended => {
                    self.ended = chunk.is_err();
                    let now = Instant::now();
                    self.looks.ask(now);
                    self.looks.settled = Some(now + SETTLE);
                    self.looks.moving_ends = Some(now + MOVING + MARGIN);
                    continue;
                }
                changed = self.reports.changed() => {
                    changed.ok()?;
                    self.looks.ask(Instant::now());
                    continue;
                }
                read = self.reads.recv() => match read {
                    Ok(read) if read.pane == self.pane && read.server == self.server => {
                        return Some(Look::State {
                            state: read.state,
                            status: read.status,
                            screen: read.screen,
                        });
                    }
                    // Someone else's pane; or reads were missed: look again.
                    Ok(_) => continue,
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        self.looks.ask(Instant::now());
                        continue;
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                () = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {}
            }
            // Spent only once the read is done: a read dropped halfway is made again.
            let at = Instant::now();
            let read = pane_state::with_screen(gateway, tmux, self.pane).await;
            self.looks.looked(at);
            match read {
                Ok((read, screen)) => {
                    // A starting agent turns `unknown` once seen for STARTING: read then.
                    self.looks.starting_ends = read
                        .agent_status
                        .as_ref()
                        .filter(|status| status.state == "starting")
                        .map(|status| {
                            let seen = Duration::from_millis(status.seen_for_ms);
                            at + STARTING.saturating_sub(seen) + MARGIN
                        });
                    return Some(match (read.agent_status, read.dead) {
                        (Some(status), _) => Look::State {
                            state: status.state,
                            status: Some(status),
                            screen,
                        },
                        (None, true) => Look::State {
                            state: "exited",
                            status: None,
                            screen,
                        },
                        (None, false) => Look::NoAgent,
                    });
                }
                Err(error) if error.kind == ToolErrorKind::NotFound => return Some(Look::Gone),
                // Read again on the next event.
                Err(_) => {}
            }
        }
    }
}
