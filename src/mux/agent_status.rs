//! An agent's state from evidence: what its screen shows (its kind's manifest,
//! [`super::agent_kind`]), what its hooks last reported ([`super::agent_report`]) and its
//! process (in the foreground or gone), weighed into one of `starting`, `working`, `blocked`
//! (needs a human), `idle` (waiting for its next task), `exited` or `unknown`, with the
//! evidence that decided.
//!
//! A dialog on the screen decides first: it is there to be answered, whatever a hook said (and
//! a dialog opened mid-task leaves the spinner's line above it). Then the newest evidence: a
//! hook's report counts while the screen has not changed since it came (`waiting_for_input`:
//! ready for its next prompt, so idle); after that, the screen, where a busy sign outranks the
//! idle prompt (agents draw their input box while they work). With no sign, an agent first seen less than
//! [`STARTING`] ago is starting, and one whose screen moved in the last [`MOVING`] is working.
//! Nothing else is guessed: `unknown`.
//!
//! [`AgentSightings`] remembers, per pane instance, which kind ran there and since when, so
//! that an agent that left the foreground reads `exited` and one just started `starting`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::agent_kind::{BlockedOn, ScreenSigns};
use super::agent_report::{AgentState, PaneInstance};
use muxgate_tmux::ServerInstance;

/// A screen that printed within this is taken as working when no sign says otherwise.
pub(crate) const MOVING: Duration = Duration::from_millis(1500);
/// An agent seen for less than this, with no sign yet, is starting.
pub(crate) const STARTING: Duration = Duration::from_secs(30);
/// Most panes with a remembered agent.
const MAX_PANES: usize = 4096;

/// An agent's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AgentPhase {
    Starting,
    Working,
    Blocked,
    Idle,
    Exited,
    Unknown,
}

impl AgentPhase {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AgentPhase::Starting => "starting",
            AgentPhase::Working => "working",
            AgentPhase::Blocked => "blocked",
            AgentPhase::Idle => "idle",
            AgentPhase::Exited => "exited",
            AgentPhase::Unknown => "unknown",
        }
    }
}

/// What is known of one pane's agent.
#[derive(Debug)]
pub(crate) struct Evidence {
    /// Its program is the pane's foreground process.
    pub(crate) running: bool,
    /// The pane is dead (its program exited), with its status.
    pub(crate) dead: Option<Option<i32>>,
    /// What its screen shows.
    pub(crate) screen: ScreenSigns,
    /// Since the pane last printed; `None`: nothing printed since recording began.
    pub(crate) quiet_for: Option<Duration>,
    /// Since the agent was first seen in the pane.
    pub(crate) seen_for: Duration,
    /// Its hooks' latest report and its age.
    pub(crate) hook: Option<(AgentState, Duration)>,
}

/// An agent's state and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgentVerdict {
    pub(crate) phase: AgentPhase,
    /// For `blocked`: on what.
    pub(crate) blocked_on: Option<BlockedOn>,
    /// The evidence that decided, first; then what was set aside.
    pub(crate) explain: Vec<String>,
}

impl AgentVerdict {
    fn new(phase: AgentPhase, because: String) -> Self {
        Self {
            phase,
            blocked_on: None,
            explain: vec![because],
        }
    }
}

/// Weighs `evidence` into a verdict.
pub(crate) fn judge(evidence: &Evidence) -> AgentVerdict {
    if let Some(status) = evidence.dead {
        let status = status.map_or_else(|| "unknown".to_owned(), |s| s.to_string());
        return AgentVerdict::new(
            AgentPhase::Exited,
            format!("process: the pane's program exited (status {status})"),
        );
    }
    if !evidence.running {
        return AgentVerdict::new(
            AgentPhase::Exited,
            "process: the agent is no longer the pane's foreground program".into(),
        );
    }
    let fresh = fresh_hook(evidence).filter(|_| evidence.screen.blocked.is_none());
    let mut verdict = match fresh {
        Some((state, age)) => from_hook(state, age),
        None => from_screen(evidence),
    };
    if let Some((state, age)) = evidence.hook
        && fresh.is_none()
    {
        verdict.explain.push(format!(
            "hook: {} reported {} ago, before the screen last changed or below a dialog (set aside)",
            state.as_str(),
            ago(age)
        ));
    }
    verdict
}

/// The hook's report, if the screen has not changed since it came.
fn fresh_hook(evidence: &Evidence) -> Option<(AgentState, Duration)> {
    let (state, age) = evidence.hook?;
    match evidence.quiet_for {
        Some(quiet) if quiet < age => None,
        _ => Some((state, age)),
    }
}

fn from_hook(state: AgentState, age: Duration) -> AgentVerdict {
    let phase = match state {
        AgentState::Working => AgentPhase::Working,
        AgentState::WaitingForInput | AgentState::Idle => AgentPhase::Idle,
    };
    AgentVerdict::new(
        phase,
        format!(
            "hook: {} reported {} ago, and the screen has not changed since",
            state.as_str(),
            ago(age)
        ),
    )
}

fn from_screen(evidence: &Evidence) -> AgentVerdict {
    let screen = &evidence.screen;
    if let Some((why, line)) = &screen.blocked {
        let mut verdict = AgentVerdict::new(
            AgentPhase::Blocked,
            format!("screen: a {} dialog: {line:?}", why.as_str()),
        );
        verdict.blocked_on = Some(*why);
        if let Some(busy) = &screen.busy {
            verdict.explain.push(format!(
                "screen: a busy sign above it, outranked by the dialog: {busy:?}"
            ));
        }
        return verdict;
    }
    if let Some(busy) = &screen.busy {
        return AgentVerdict::new(AgentPhase::Working, format!("screen: busy: {busy:?}"));
    }
    if let Some(idle) = &screen.idle {
        return AgentVerdict::new(
            AgentPhase::Idle,
            format!("screen: its prompt, no busy sign: {idle:?}"),
        );
    }
    match evidence.quiet_for {
        _ if evidence.seen_for < STARTING => AgentVerdict::new(
            AgentPhase::Starting,
            format!(
                "process: first seen {} ago; no sign on the screen yet",
                ago(evidence.seen_for)
            ),
        ),
        Some(quiet) if quiet < MOVING => AgentVerdict::new(
            AgentPhase::Working,
            format!("screen: no sign, but it printed {} ago", ago(quiet)),
        ),
        _ => AgentVerdict::new(
            AgentPhase::Unknown,
            "screen: no sign of its manifest's, and no hook report".into(),
        ),
    }
}

/// `duration` as people say it: `850 ms`, `12 s`.
fn ago(duration: Duration) -> String {
    if duration < Duration::from_secs(10) {
        format!("{} ms", duration.as_millis())
    } else {
        format!("{} s", duration.as_secs())
    }
}

/// Which agent kind ran in each pane instance, and since when.
#[derive(Debug, Default)]
pub(crate) struct AgentSightings {
    seen: Mutex<HashMap<(ServerInstance, PaneInstance), Sighting>>,
}

/// One pane's agent: its kind and when it was first seen there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sighting {
    pub(crate) kind: String,
    pub(crate) since: Instant,
}

impl AgentSightings {
    /// Notes that `kind` runs in `pane` now; the sighting, first seen when this kind began
    /// there (another kind starts a new one).
    pub(crate) fn saw(&self, server: &ServerInstance, pane: PaneInstance, kind: &str) -> Sighting {
        let mut seen = self.lock();
        let key = (server.clone(), pane);
        if let Some(known) = seen.get(&key).filter(|s| s.kind == kind) {
            return known.clone();
        }
        if !seen.contains_key(&key)
            && seen.len() >= MAX_PANES
            && let Some(oldest) = seen
                .iter()
                .min_by_key(|(_, s)| s.since)
                .map(|(k, _)| k.clone())
        {
            seen.remove(&oldest);
        }
        let sighting = Sighting {
            kind: kind.to_owned(),
            since: Instant::now(),
        };
        seen.insert(key, sighting.clone());
        sighting
    }

    /// The agent last seen in `pane`, if any.
    pub(crate) fn last(&self, server: &ServerInstance, pane: PaneInstance) -> Option<Sighting> {
        self.lock().get(&(server.clone(), pane)).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(ServerInstance, PaneInstance), Sighting>> {
        // A panic while holding the lock leaves a map that is still whole.
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence() -> Evidence {
        Evidence {
            running: true,
            dead: None,
            screen: ScreenSigns::default(),
            quiet_for: Some(Duration::from_secs(5)),
            seen_for: Duration::from_secs(60),
            hook: None,
        }
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn a_dialog_outranks_the_spinner_above_it() {
        let mut e = evidence();
        e.screen.busy = Some("esc to interrupt".into());
        e.screen.idle = Some("? for shortcuts".into());
        e.screen.blocked = Some((BlockedOn::Permission, "Do you want to proceed?".into()));
        let verdict = judge(&e);
        assert_eq!(verdict.phase, AgentPhase::Blocked);
        assert_eq!(verdict.blocked_on, Some(BlockedOn::Permission));
        assert!(
            verdict.explain[0].contains("permission dialog"),
            "{verdict:?}"
        );
        assert!(verdict.explain[1].contains("outranked"), "{verdict:?}");
    }

    #[test]
    fn busy_outranks_idle_and_idle_needs_its_prompt() {
        let mut e = evidence();
        e.screen.idle = Some(">".into());
        assert_eq!(judge(&e).phase, AgentPhase::Idle);
        e.screen.busy = Some("esc to interrupt".into());
        assert_eq!(judge(&e).phase, AgentPhase::Working);
    }

    #[test]
    fn without_a_sign_a_new_agent_starts_a_moving_screen_works_else_unknown() {
        let mut e = evidence();
        e.seen_for = secs(2);
        e.quiet_for = Some(Duration::from_millis(200));
        assert_eq!(judge(&e).phase, AgentPhase::Starting);
        e.seen_for = secs(120);
        assert_eq!(judge(&e).phase, AgentPhase::Working);
        e.quiet_for = Some(secs(3));
        e.seen_for = secs(120);
        assert_eq!(judge(&e).phase, AgentPhase::Unknown);
        e.quiet_for = None;
        assert_eq!(judge(&e).phase, AgentPhase::Unknown);
    }

    #[test]
    fn a_hook_counts_until_the_screen_changes_and_never_over_a_dialog() {
        let mut e = evidence();
        e.screen.busy = Some("esc to interrupt".into());
        // Reported 2 s ago, quiet for 5 s: the report is the newest evidence.
        e.hook = Some((AgentState::WaitingForInput, secs(2)));
        let verdict = judge(&e);
        assert_eq!(verdict.phase, AgentPhase::Idle);
        assert!(verdict.explain[0].starts_with("hook:"), "{verdict:?}");
        // Reported 10 s ago, the screen changed 5 s ago: the screen decides.
        e.hook = Some((AgentState::WaitingForInput, secs(10)));
        let verdict = judge(&e);
        assert_eq!(verdict.phase, AgentPhase::Working);
        assert!(verdict.explain[1].contains("set aside"), "{verdict:?}");
        // A dialog is answered whatever the newest hook says (Claude Code's permission
        // notification reports `working`).
        e.hook = Some((AgentState::Working, secs(1)));
        e.screen.blocked = Some((BlockedOn::Permission, "Do you want to proceed?".into()));
        let verdict = judge(&e);
        assert_eq!(verdict.phase, AgentPhase::Blocked);
        assert!(
            verdict.explain.last().unwrap().contains("set aside"),
            "{verdict:?}"
        );
    }

    #[test]
    fn a_gone_program_has_exited_whatever_the_screen_says() {
        let mut e = evidence();
        e.screen.blocked = Some((BlockedOn::Login, "Select login method".into()));
        e.running = false;
        assert_eq!(judge(&e).phase, AgentPhase::Exited);
        e.dead = Some(Some(3));
        let verdict = judge(&e);
        assert_eq!(verdict.phase, AgentPhase::Exited);
        assert!(verdict.explain[0].contains("status 3"), "{verdict:?}");
    }

    #[test]
    fn a_sighting_keeps_its_first_time_until_another_kind_runs() {
        let sightings = AgentSightings::default();
        let server = ServerInstance {
            key: "s".into(),
            epoch: 1,
        };
        let pane = PaneInstance {
            server: 1,
            pane: muxgate_tmux::PaneId(3),
            program: 9,
        };
        let first = sightings.saw(&server, pane, "codex");
        assert_eq!(sightings.saw(&server, pane, "codex"), first);
        assert_eq!(sightings.last(&server, pane), Some(first.clone()));
        let other = sightings.saw(&server, pane, "aider");
        assert_eq!(other.kind, "aider");
        let elsewhere = ServerInstance {
            key: "s".into(),
            epoch: 2,
        };
        assert_eq!(sightings.last(&elsewhere, pane), None);
    }
}
