//! `report_agent_state`: an agent CLI's own hooks say what it is doing in its pane — working,
//! waiting for input, idle — for `get_pane_state` and `send_prompt` to use where `/proc` cannot
//! tell (agent CLIs poll many inputs). Meant for hooks (`deploy/hooks/muxgate-agent-state`
//! posts it in one stateless request), not for models, so it is in the `channels` toolset.
//!
//! The report is kept for the pane's current program only ([`PaneInstance`]); see
//! [`crate::mux::agent_report`]. A `session_id` (the CLI's own conversation id, which Claude
//! Code's and Gemini CLI's hooks carry) is kept in the record of the agent spawned in that pane,
//! so that `spawn_agent {"resume"}` takes that conversation up.

use crate::mcp::tools::watch::read_state;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mux::agent_report::{AgentReport, AgentState, PaneInstance};

/// Longest agent name kept.
const MAX_AGENT_NAME: usize = 64;
/// Longest CLI session id kept.
const MAX_SESSION_ID: usize = 128;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReportAgentStateInput {
    #[serde(default)]
    pub server: Option<String>,
    /// The agent's pane `%N` (in a hook: `$TMUX_PANE`).
    pub target: String,
    pub state: AgentState,
    /// The agent's name, e.g. `claude-code` (1-64 of A-Z a-z 0-9 . _ -).
    #[serde(default)]
    pub agent: Option<String>,
    /// The CLI's own session id, if its hook has one (1-128 of A-Z a-z 0-9 . _ : -).
    #[serde(default)]
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ReportAgentStateOutput {
    pub pane_id: String,
    pub state: &'static str,
}

fn check_agent_name(name: &str) -> Result<(), ToolError> {
    let valid = !name.is_empty()
        && name.len() <= MAX_AGENT_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if valid {
        Ok(())
    } else {
        Err(ToolError::invalid_arguments(
            "agent must be 1-64 characters of A-Z a-z 0-9 . _ -",
            "pass the agent's short name, e.g. claude-code",
        ))
    }
}

/// A CLI's session id is passed to it as one argument on a resume: kept to plain characters.
fn check_session_id(id: &str) -> Result<(), ToolError> {
    let valid = !id.is_empty()
        && id.len() <= MAX_SESSION_ID
        && !id.starts_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b));
    if valid {
        Ok(())
    } else {
        Err(ToolError::invalid_arguments(
            "session_id must be 1-128 characters of A-Z a-z 0-9 . _ : - (not starting with -)",
            "pass the CLI's session id as its hook gives it, or leave it out",
        ))
    }
}

#[tool_router(router = agent_report_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "report_agent_state",
        description = "Record what the agent CLI in a pane says it is doing: working, \
            waiting_for_input or idle (for get_pane_state and send_prompt).\n\n\
            For the agent's own hooks (deploy/hooks/muxgate-agent-state), not for models.",
        annotations(
            title = "Report an agent's state",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub(crate) async fn report_agent_state(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ReportAgentStateInput>,
    ) -> Result<Json<ReportAgentStateOutput>, ToolError> {
        if let Some(agent) = &input.agent {
            check_agent_name(agent)?;
        }
        if let Some(session) = &input.session_id {
            check_session_id(session)?;
        }
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let pane = tmux.pane_named(&input.target).await?;
        let state = read_state(&tmux, pane).await?;
        if let Some(session) = &input.session_id {
            let process = (tmux.instance().epoch, state.server_pid);
            self.state()
                .fleet
                .note_cli_session(&tmux.scope, &pane.to_string(), process, session);
        }
        let instance = PaneInstance {
            server: state.server_pid,
            pane,
            program: state.pane_pid,
        };
        self.state().agent_reports.record(
            &tmux.instance(),
            instance,
            AgentReport {
                state: input.state,
                agent: input.agent,
                at: Instant::now(),
            },
        );
        Ok(Json(ReportAgentStateOutput {
            pane_id: pane.to_string(),
            state: input.state.as_str(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_names_are_short_plain_words() {
        for good in ["claude-code", "codex", "aider_0.8", "a"] {
            assert!(check_agent_name(good).is_ok(), "{good}");
        }
        for bad in ["", "two words", "semi;colon", &"x".repeat(65), "ünï"] {
            assert!(check_agent_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn session_ids_are_one_plain_argument() {
        for good in ["4f1c2a9e-7b3d-4e8f-9a1b-2c3d4e5f6a7b", "sess_1.2:3"] {
            assert!(check_session_id(good).is_ok(), "{good}");
        }
        for bad in ["", "--dangerously", "a b", "a;b", "$(x)", &"x".repeat(129)] {
            assert!(check_session_id(bad).is_err(), "{bad}");
        }
    }
}
