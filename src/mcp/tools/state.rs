//! `get_pane_state`: what a pane is doing — running, waiting for input, at its prompt, quiet for
//! how long, dead — from evidence only.
//!
//! One tmux command reads the pane's flags; the pane's output stream (kept recording, as for
//! the ledger) gives the time of its last byte and, with shell integration, whether the shell
//! is at its prompt; `/proc` gives the foreground process and whether it is blocked reading the
//! terminal ([`muxgate_mux::foreground`]); the agent's own hooks, what it says it is doing
//! (`report_agent_state`). In a workspace the pane's pids belong to the sandbox's pid
//! namespace, so `/proc` is not read there and the process fields are left out.

use crate::mcp::tools::watch::{foreground_of_state, read_settled_state};
use muxgate_mux::foreground::Blocked;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::watch::{KEEP_WAIT, keep, unix_ms};
use crate::mcp::McpServer;
use crate::mcp::access::TmuxAccess;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::shared_tool::{Reply, SharedTool};
use crate::mcp::zellij_access::ZellijAccess;
use crate::mux::agent_report::PaneInstance;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetPaneStateInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane. Zellij: `[SESSION:]terminal_N`.
    pub target: String,
}

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

#[tool_router(router = state_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "get_pane_state",
        description = "What a pane is doing: foreground process, waiting_for_input, \
            idle_for_ms, at_prompt, agent_state (its hooks' report), alternate screen, dead.\n\n\
            A field without evidence is left out, never guessed.",
        annotations(
            title = "Get a pane's state",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub(crate) async fn get_pane_state(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<GetPaneStateInput>,
    ) -> Result<Json<PaneStateOutput>, ToolError> {
        self.serve(&call, input).await.map(Json)
    }
}

impl SharedTool for GetPaneStateInput {
    type Answer = PaneStateOutput;

    fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    async fn on_tmux(self, gateway: &McpServer, tmux: TmuxAccess<'_>) -> Reply<Self> {
        let pane = tmux.pane_named(&self.target).await?;
        let stream = keep(&tmux, pane, Instant::now() + KEEP_WAIT).await?;
        let state = read_settled_state(&tmux, pane).await?;
        let process = foreground_of_state(&tmux, &state).await;
        let at_prompt =
            stream.with_ledger(|ledger| ledger.shell_integrated().then(|| ledger.at_prompt()));
        let report = gateway.state().agent_reports.latest(
            &tmux.instance(),
            PaneInstance {
                server: state.server_pid,
                pane,
                program: state.pane_pid,
            },
        );
        Ok(PaneStateOutput {
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
            recording_since_ms: Some(unix_ms(stream.since())),
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
        })
    }

    async fn on_zellij(self, _: &McpServer, z: ZellijAccess<'_>) -> Reply<Self> {
        z.pane_state(self).await
    }
}
