//! A pane's state as `get_pane_state` answers it ([`PaneStateOutput`]), and each backend's
//! way to read it, which [`super::pane_access::PaneAccess::pane_state`] picks.
//!
//! On tmux ([`on_tmux`]), one tmux command reads the pane's flags; the pane's output stream
//! (kept recording, as for the ledger) gives the time of its last byte and, with shell
//! integration, whether the shell is at its prompt; `/proc` gives the foreground process and
//! whether it is blocked reading the terminal ([`muxgate_mux::foreground`]); the agent's own
//! hooks, what it says it is doing (`report_agent_state`). In a workspace the pane's pids
//! belong to the sandbox's pid namespace, so `/proc` is not read there and the process fields
//! are left out. On Zellij ([`on_zellij`]), what Zellij reports of the pane.

use muxgate_mux::foreground::Blocked;
use muxgate_mux::lines::excerpt;
use muxgate_mux::shell_run::screen::program_name;
use muxgate_tmux::PaneId;
use muxgate_zellij::panes::ZellijPanes;
use schemars::JsonSchema;
use serde::Serialize;
use tokio::time::Instant;

use super::McpServer;
use super::access::TmuxAccess;
use super::error::ToolError;
use super::scoped::Scoped;
use super::tools::watch::{KEEP_WAIT, foreground_of_state, keep, read_settled_state};
use super::zellij_access::ZellijAccess;
use crate::mux::agent_kind::ScreenSigns;
use crate::mux::agent_report::{AgentState, PaneInstance};
use crate::mux::agent_status::{Evidence, judge};
use crate::mux::screen_digest::screen_digest;
use muxgate_mux::multiplexer::CaptureRange;

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct PaneStateOutput {
    pub pane_id: String,
    /// Zellij: the pane's session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The foreground program as tmux names it (Zellij: the program Zellij reports).
    pub current_command: String,
    pub foreground_pid: Option<u32>,
    pub foreground_command_line: Option<String>,
    /// true: blocked reading the terminal, or a shell with no job running; false: busy or
    /// waiting on something else; absent: cannot tell (e.g. a program polling many inputs).
    pub waiting_for_input: Option<bool>,
    /// Where the foreground process is blocked: read_terminal, read, poll, sleep, wait_child,
    /// running.
    pub blocked_in: Option<&'static str>,
    /// Since the pane last printed anything; absent if it printed nothing since recording began.
    pub idle_for_ms: Option<u64>,
    /// Unix ms; output before it is not known.
    pub recording_since_ms: Option<u64>,
    /// From the shell's OSC 133 marks; absent without them. The marks arrive with the pane's
    /// output, which can trail the process table (`foreground_*`) by a few milliseconds.
    pub at_prompt: Option<bool>,
    pub alternate_screen: Option<bool>,
    pub in_mode: Option<bool>,
    pub dead: bool,
    pub dead_status: Option<i32>,
    /// What the agent's hook last reported (report_agent_state), and how long ago.
    pub agent_state: Option<&'static str>,
    pub agent: Option<String>,
    pub agent_reported_ms_ago: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_status: Option<AgentStatusOutput>,
}

/// An agent CLI (claude-code, codex, gemini-cli, aider, opencode) in the pane: its state from
/// its screen, hooks and process.
// (Terse field docs: they are in every `tools/list` answer.)
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct AgentStatusOutput {
    pub kind: String,
    /// starting, working, blocked (needs a human), idle, exited, unknown
    pub state: &'static str,
    /// permission, confirmation, login, trust, question
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_on: Option<&'static str>,
    pub seen_for_ms: u64,
    /// The evidence, the deciding first.
    pub explain: Vec<String>,
}

fn blocked_name(blocked: Blocked) -> Option<&'static str> {
    Some(match blocked {
        Blocked::Running => "running",
        Blocked::ReadingTerminal => "read_terminal",
        Blocked::Reading => "read",
        Blocked::Polling => "poll",
        Blocked::Sleeping => "sleep",
        Blocked::WaitingForChild => "wait_child",
        Blocked::Unknown => return None,
    })
}

/// `pane`'s state on a tmux server.
pub(crate) async fn on_tmux(
    gateway: &McpServer,
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
) -> Result<PaneStateOutput, ToolError> {
    with_screen(gateway, tmux, pane)
        .await
        .map(|(state, _)| state)
}

/// What an agent's screen showed when its state was read.
#[derive(Debug, Clone, Default)]
pub(crate) struct ScreenRead {
    /// Its last line with anything on it.
    pub(crate) last_line: Option<String>,
    /// Its [`screen_digest`].
    pub(crate) digest: Option<String>,
}

impl ScreenRead {
    /// What the visible `lines` show: their digest and last line with anything on it.
    pub(crate) fn of<L: AsRef<str>>(lines: &[L]) -> Self {
        Self {
            last_line: lines
                .iter()
                .rev()
                .map(|line| line.as_ref().trim())
                .find(|line| !line.is_empty())
                .map(excerpt),
            digest: Some(screen_digest(lines)),
        }
    }
}

/// `pane`'s state on a tmux server, and what its screen showed where an agent's screen was
/// read.
pub(crate) async fn with_screen(
    gateway: &McpServer,
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
) -> Result<(PaneStateOutput, ScreenRead), ToolError> {
    let stream = keep(tmux, pane, Instant::now() + KEEP_WAIT).await?;
    let state = read_settled_state(tmux, pane).await?;
    let process = foreground_of_state(tmux, &state).await;
    let at_prompt =
        stream.with_ledger(|ledger| ledger.shell_integrated().then(|| ledger.at_prompt()));
    let instance = PaneInstance {
        server: state.server_pid,
        pane,
        program: state.pane_pid,
    };
    let report = gateway
        .state()
        .agent_reports
        .latest(&tmux.instance(), instance);
    let (agent_status, screen) = agent_status(
        gateway,
        tmux,
        instance,
        AgentFacts {
            command_line: process
                .as_ref()
                .map_or(state.current_command.as_str(), |p| p.command_line.as_str()),
            dead: state.dead.then_some(state.dead_status),
            quiet_for: stream.quiet_for(),
            hook: report.as_ref().map(|r| (r.state, r.at.elapsed())),
        },
    )
    .await?
    .unzip();
    if let Some(status) = &agent_status {
        gateway.state().agent_reads.publish(
            tmux.instance(),
            pane,
            status,
            screen.as_ref().unwrap_or(&ScreenRead::default()),
        );
    }
    let state = PaneStateOutput {
        pane_id: pane.to_string(),
        session: None,
        current_command: state.current_command,
        foreground_pid: process.as_ref().map(|p| p.pid),
        foreground_command_line: process.as_ref().map(|p| p.command_line.clone()),
        waiting_for_input: process.as_ref().and_then(|p| p.waiting_for_input()),
        blocked_in: process.as_ref().and_then(|p| blocked_name(p.blocked)),
        idle_for_ms: stream
            .quiet_for()
            .map(|quiet| u64::try_from(quiet.as_millis()).unwrap_or(u64::MAX)),
        recording_since_ms: Some(stream.since_unix_ms()),
        at_prompt,
        alternate_screen: Some(state.alternate_on),
        in_mode: Some(state.in_mode),
        dead: state.dead,
        dead_status: state.dead_status.filter(|_| state.dead),
        agent_state: report.as_ref().map(|r| r.state.as_str()),
        agent_reported_ms_ago: report
            .as_ref()
            .map(|r| u64::try_from(r.at.elapsed().as_millis()).unwrap_or(u64::MAX)),
        agent: report.and_then(|r| r.agent),
        agent_status,
    };
    Ok((state, screen.unwrap_or_default()))
}

/// What `get_pane_state` read of a pane that an agent's state is weighed from.
struct AgentFacts<'a> {
    /// The foreground process's command line (tmux's name of it where `/proc` is not read).
    command_line: &'a str,
    dead: Option<Option<i32>>,
    quiet_for: Option<std::time::Duration>,
    hook: Option<(AgentState, std::time::Duration)>,
}

/// The state of the agent in `pane`, if one of a known kind runs or ran there (the kind
/// `spawn_agent` started there, else the one its command line names), and the last line of
/// its screen: the screen is read (one more tmux command) only while it runs.
async fn agent_status(
    gateway: &McpServer,
    tmux: &TmuxAccess<'_>,
    pane: PaneInstance,
    facts: AgentFacts<'_>,
) -> Result<Option<(AgentStatusOutput, ScreenRead)>, ToolError> {
    let state = gateway.state();
    let server = tmux.instance();
    let spawned = state
        .fleet
        .kind_in(
            &tmux.scope,
            &pane.pane.to_string(),
            (server.epoch, pane.server),
        )
        .and_then(|kind| state.agent_kinds.get(&kind));
    let running = match spawned {
        Some(kind) => facts.dead.is_none().then_some(kind),
        None => state.agent_kinds.of_command_line(facts.command_line),
    };
    let sighting = match (running, state.agent_sightings.last(&server, pane), spawned) {
        (Some(kind), _, _) | (None, None, Some(kind)) => {
            state.agent_sightings.saw(&server, pane, &kind.kind)
        }
        (None, Some(sighting), _) => sighting,
        (None, None, None) => return Ok(None),
    };
    let (signs, read) = match running {
        Some(kind) if facts.dead.is_none() => {
            let lines = tmux
                .pane_reads()
                .capture(pane.pane, &CaptureRange::visible())
                .await
                .map_err(|e| tmux.error(e, "call list_panes"))?;
            let lines: Vec<String> = lines
                .iter()
                .map(|line| String::from_utf8_lossy(line).into_owned())
                .collect();
            (kind.read_screen(&lines), ScreenRead::of(&lines))
        }
        _ => (ScreenSigns::default(), ScreenRead::default()),
    };
    let seen_for = sighting.since.elapsed();
    let verdict = judge(&Evidence {
        running: running.is_some(),
        dead: facts.dead,
        screen: signs,
        quiet_for: facts.quiet_for,
        seen_for,
        hook: facts.hook,
    });
    let status = AgentStatusOutput {
        kind: sighting.kind,
        state: verdict.phase.as_str(),
        blocked_on: verdict.blocked_on.map(|why| why.as_str()),
        seen_for_ms: u64::try_from(seen_for.as_millis()).unwrap_or(u64::MAX),
        explain: verdict.explain,
    };
    Ok(Some((status, read)))
}

/// `get_pane_state` on a Zellij server: what Zellij reports of the pane, its program and
/// command line, and whether its command exited with which status. Zellij says nothing of
/// the foreground process's state, the pane's output times, modes or screens, and no
/// agent hook reports on Zellij panes, so those fields are left out, never guessed.
pub(crate) async fn on_zellij(
    z: &ZellijAccess<'_>,
    pane: &Scoped<ZellijPanes>,
) -> Result<PaneStateOutput, ToolError> {
    let session = pane.mux.session();
    let pane = z
        .backend
        .pane(session, pane.pane)
        .await
        .map_err(|e| z.error(e))?;
    let command_line = pane.running_command.or(pane.terminal_command);
    Ok(PaneStateOutput {
        pane_id: pane.id.to_string(),
        session: Some(session.to_string()),
        current_command: command_line
            .as_deref()
            .map(program_name)
            .unwrap_or_default()
            .to_owned(),
        foreground_pid: None,
        foreground_command_line: command_line,
        waiting_for_input: None,
        blocked_in: None,
        idle_for_ms: None,
        recording_since_ms: None,
        at_prompt: None,
        alternate_screen: None,
        in_mode: None,
        dead: pane.exited,
        dead_status: pane.exit_status.filter(|_| pane.exited),
        agent_state: None,
        agent: None,
        agent_reported_ms_ago: None,
        agent_status: None,
    })
}
