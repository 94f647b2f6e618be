//! `list_agents` and `stop_agent`: the agents `spawn_agent` started, at a glance, and ending
//! one.
//!
//! An agent is shown to whoever may see its session (the ACL of sessions), and to the client
//! that spawned it once its session is gone (so that it learns it ended). Its state is read as
//! `get_pane_state` reads it ([`pane_state::with_screen`]), with the kind it was spawned as.
//! Stopping ends its session and removes its worktree, but keeps its branch (what it committed
//! stays), and refuses to drop work not yet committed unless told to (`force`).

use std::collections::HashMap;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::agent_spawn::{WorktreeOutput, worktree_error};
use super::session::{SessionInfo, list_session_rows};
use crate::fleet::registry::AgentRecord;
use crate::fleet::worktree;
use crate::mcp::McpServer;
use crate::mcp::access::TmuxAccess;
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mcp::pane_state::{self, ScreenRead};
use muxgate_mux::lines::excerpt;
use muxgate_tmux::{PaneId, SessionId};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListAgentsInput {
    #[serde(default)]
    pub server: Option<String>,
}

/// One agent at a glance.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct AgentRow {
    pub agent_id: String,
    pub kind: String,
    /// starting, working, blocked (needs a human), idle, exited, unknown
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_on: Option<&'static str>,
    /// Since this state was first read.
    pub state_for_ms: u64,
    /// The deciding evidence.
    pub why: Option<String>,
    pub last_line: Option<String>,
    /// Of the screen read now: pass to answer_agent.
    pub screen_digest: Option<String>,
    pub pane_id: String,
    pub session_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeOutput>,
    /// Where it runs: local, or a `[hosts.<name>]`.
    pub host: String,
    /// Unix ms.
    pub started_ms: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ListAgentsOutput {
    pub server: String,
    pub agents: Vec<AgentRow>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StopAgentInput {
    #[serde(default)]
    pub server: Option<String>,
    pub agent_id: String,
    /// Also drop work its worktree has not committed.
    #[serde(default)]
    pub force: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct StopAgentOutput {
    pub agent_id: String,
    /// false: its session had ended already.
    pub session_killed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree_removed: Option<String>,
    /// Its branch, which stays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_kept: Option<String>,
    /// Uncommitted paths dropped (force).
    pub dropped_changes: usize,
}

/// Whether `record`'s session is `session` (the same id, made at the same time: a restarted
/// server reuses ids).
fn is_its_session(record: &AgentRecord, session: &SessionInfo) -> bool {
    session.session.id.to_string() == record.session
        && session.session.created == record.session_created
}

/// The caller's view of the server's agents: each with its session when the caller may see
/// it, or without one when the session is gone and the caller spawned it.
async fn visible_agents(
    gateway: &McpServer,
    tmux: &TmuxAccess<'_>,
) -> Result<Vec<(AgentRecord, Option<SessionId>)>, ToolError> {
    let records = gateway.state().fleet.of_scope(&tmux.scope);
    if records.is_empty() {
        return Ok(Vec::new());
    }
    let sessions = list_session_rows(tmux).await?;
    let by_id: HashMap<String, &SessionInfo> = sessions
        .iter()
        .map(|info| (info.session.id.to_string(), info))
        .collect();
    Ok(records
        .into_iter()
        .filter_map(|record| match by_id.get(&record.session) {
            Some(info) if is_its_session(&record, info) => Some((record, Some(info.session.id))),
            _ if record.owner == tmux.call.sub() => Some((record, None)),
            _ => None,
        })
        .collect())
}

/// The agents of the server the caller may see, as `list_agents` (and the fleet resource)
/// answers.
pub(crate) async fn agents_of(
    gateway: &McpServer,
    tmux: &TmuxAccess<'_>,
) -> Result<ListAgentsOutput, ToolError> {
    let mut agents = Vec::new();
    for (record, session) in visible_agents(gateway, tmux).await? {
        agents.push(row(gateway, tmux, record, session.is_some()).await?);
    }
    Ok(ListAgentsOutput {
        server: tmux.server_name().to_owned(),
        agents,
    })
}

/// The host name answers give the server's panes' machine.
fn host_of(tmux: &TmuxAccess<'_>) -> String {
    tmux.server
        .endpoint()
        .remote_host()
        .map_or_else(|| "local".to_owned(), |host| host.name.to_string())
}

/// One agent's row: its state read now, or `exited` when its session or pane is gone.
async fn row(
    gateway: &McpServer,
    tmux: &TmuxAccess<'_>,
    record: AgentRecord,
    alive: bool,
) -> Result<AgentRow, ToolError> {
    let pane = record.pane.parse::<PaneId>().ok();
    let read = match (pane, alive) {
        (Some(pane), true) => match pane_state::with_screen(gateway, tmux, pane).await {
            Ok(read) => Some(read),
            Err(error) if error.kind == ToolErrorKind::NotFound => None,
            Err(error) => return Err(error),
        },
        _ => None,
    };
    let (state, blocked_on, why, screen) = match read {
        Some((state, screen)) => match state.agent_status {
            Some(status) => (
                status.state,
                status.blocked_on,
                status.explain.into_iter().next(),
                screen,
            ),
            None => ("unknown", None, None, screen),
        },
        None if alive => (
            "exited",
            None,
            Some("its pane is gone".to_owned()),
            ScreenRead::default(),
        ),
        None => (
            "exited",
            None,
            Some("its session is gone".to_owned()),
            ScreenRead::default(),
        ),
    };
    let fleet = &gateway.state().fleet;
    let state_for = fleet.state_for(&tmux.scope, &record.id, state);
    Ok(AgentRow {
        state,
        blocked_on,
        state_for_ms: u64::try_from(state_for.as_millis()).unwrap_or(u64::MAX),
        why,
        last_line: screen.last_line,
        screen_digest: screen.digest,
        host: host_of(tmux),
        worktree: record.worktree.as_ref().map(WorktreeOutput::from),
        agent_id: record.id,
        kind: record.kind,
        pane_id: record.pane,
        session_id: record.session,
        title: record.title,
        started_ms: record.started_ms,
    })
}

/// The work `record`'s worktree has not committed: how many paths, and the first of them.
/// A worktree that is no longer there has none.
async fn uncommitted(record: &AgentRecord) -> Result<(Vec<String>, usize), ToolError> {
    let Some(worktree) = &record.worktree else {
        return Ok((Vec::new(), 0));
    };
    if !worktree.path.is_dir() {
        return Ok((Vec::new(), 0));
    }
    worktree::changes(&worktree.path).await.map_err(|error| {
        tracing::warn!(agent = %record.id, %error, "an agent's worktree could not be read");
        ToolError::new(
            ToolErrorKind::Unavailable,
            format!("the agent's worktree could not be read: {error}"),
            "retry; or pass force: true to remove it whatever it holds",
        )
    })
}

impl McpServer {
    /// Ends `record`'s agent: its session (when `alive`), then its worktree.
    async fn stop(
        &self,
        tmux: &TmuxAccess<'_>,
        record: AgentRecord,
        alive: Option<SessionId>,
        force: bool,
    ) -> Result<StopAgentOutput, ToolError> {
        let (named, changes) = uncommitted(&record).await?;
        if changes > 0 && !force {
            let more = if changes > named.len() { ", …" } else { "" };
            return Err(ToolError::new(
                ToolErrorKind::Conflict,
                format!(
                    "agent {:?} has {changes} uncommitted path(s) in its worktree: {}{more}",
                    record.id,
                    named
                        .iter()
                        .map(|p| excerpt(p))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "have it commit them (its branch stays), or pass force: true to drop them",
            ));
        }
        // Stopped on purpose: its end is no news for anyone.
        self.state().agent_watches.stop(&tmux.scope, &record.id);
        if let Some(session) = alive {
            tmux.sessions().kill(session).await.map_err(|e| {
                super::session::session_error(tmux.server_name(), e, "call list_agents")
            })?;
        }
        let repositories = &self.state().config.repositories;
        let mut removed = None;
        if let Some(worktree) = &record.worktree
            && worktree.path.is_dir()
        {
            let Some(repository) = repositories.get(&worktree.repository) else {
                return Err(ToolError::new(
                    ToolErrorKind::Conflict,
                    format!(
                        "repository {:?} is no longer configured",
                        worktree.repository
                    ),
                    "ask the operator to configure it again, or remove the worktree by hand",
                ));
            };
            worktree::remove(&repository.path, &worktree.path, force)
                .await
                .map_err(|error| {
                    worktree_error(
                        error,
                        "removed",
                        "retry with force: true, or remove it by hand",
                    )
                })?;
            removed = Some(worktree.path.display().to_string());
        }
        self.state().fleet.remove(&tmux.scope, &record.id);
        self.state()
            .fleet_feed
            .changed(tmux.server_name(), &record.id, &record.owner);
        Ok(StopAgentOutput {
            agent_id: record.id,
            session_killed: alive.is_some(),
            worktree_removed: removed,
            branch_kept: record.worktree.map(|w| w.branch),
            dropped_changes: changes,
        })
    }
}

#[tool_router(router = agent_fleet_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "list_agents",
        description = "List the agents spawn_agent started that you may see: kind, state \
            (working, blocked, idle, exited…) and for how long, why, last line, worktree.",
        annotations(
            title = "List agents",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_agents(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ListAgentsInput>,
    ) -> Result<Json<ListAgentsOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        agents_of(self, &tmux).await.map(Json)
    }

    #[tool(
        name = "stop_agent",
        description = "End an agent spawn_agent started: its session ends and its worktree is \
            removed; its branch stays.\n\n\
            Refuses while its worktree holds uncommitted work, unless `force`.",
        annotations(
            title = "Stop an agent",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn stop_agent(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<StopAgentInput>,
    ) -> Result<Json<StopAgentOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let found = visible_agents(self, &tmux)
            .await?
            .into_iter()
            .find(|(record, _)| record.id == input.agent_id);
        let Some((record, session)) = found else {
            return Err(ToolError::not_found(
                format!("no agent {:?} that you may see", excerpt(&input.agent_id)),
                "call list_agents for the agents you may stop",
            ));
        };
        self.stop(&tmux, record, session, input.force)
            .await
            .map(Json)
    }
}
