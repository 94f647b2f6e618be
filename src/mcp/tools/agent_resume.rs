//! `spawn_agent {"resume": ID}`: start again an agent of the caller's whose session or tmux
//! server was lost (a reboot, a killed server), in its worktree, and say what did not come back.
//!
//! 1. **check**: the agent is the caller's (`list_agents` shows it), its kind is still
//!    configured, and it does not run now (its pane alive in the server process it was
//!    started in); a session left with its program ended is closed first.
//! 2. **worktree**: kept where its directory still is (uncommitted work included); made
//!    again on its branch where it is gone ([`worktree::restore`]).
//! 3. **session**: as a spawn's, the kind's resume arguments after its `args` (its
//!    `resume_session_args` with the CLI's own session id where its hook reported one, else
//!    its `resume_args`), then the same record, barrier, prompt and follower
//!    ([`McpServer::settle`]).

use tokio_util::sync::CancellationToken;

use super::agent_spawn::{
    Plan, SpawnAgentInput, SpawnAgentOutput, check_title, checked_prompt, environment_of,
    program_of, start_session, worktree_not_made,
};
use super::watch::read_state;
use crate::fleet::registry::AgentRecord;
use crate::fleet::worktree;
use crate::mcp::McpServer;
use crate::mcp::access::TmuxAccess;
use crate::mcp::error::{ToolError, ToolErrorKind};
use muxgate_tmux::PaneId;
use muxgate_tmux::SessionId;

/// What a resume may be given beside the agent's id.
fn check_input(input: &SpawnAgentInput) -> Result<(), ToolError> {
    let extra = [
        ("kind", input.kind.is_some()),
        ("id", input.id.is_some()),
        ("repository", input.repository.is_some()),
        ("base", input.base.is_some()),
        ("start_directory", input.start_directory.is_some()),
        ("env", input.env.is_some()),
    ];
    match extra.iter().find(|(_, given)| *given) {
        Some((name, _)) => Err(ToolError::invalid_arguments(
            format!(
                "{name} is the resumed agent's own: a resume takes only prompt, title and timeout"
            ),
            format!("leave {name} out"),
        )),
        None => check_title(input.title.as_deref()),
    }
}

/// Whether the agent of `record` runs now; a session of it whose program ended is closed.
async fn ensure_not_running(tmux: &TmuxAccess<'_>, record: &AgentRecord) -> Result<(), ToolError> {
    let Ok(pane) = record.pane.parse::<PaneId>() else {
        return Ok(());
    };
    let Ok(state) = read_state(tmux, pane).await else {
        // Its pane is gone (or its server is): nothing runs.
        return Ok(());
    };
    let same_server = record.server_process == Some((tmux.instance().epoch, state.server_pid));
    if !same_server {
        return Ok(());
    }
    if !state.dead {
        return Err(ToolError::new(
            ToolErrorKind::Conflict,
            format!("agent {:?} still runs, in pane {pane}", record.id),
            "answer or prompt it; to start it afresh, stop_agent it and spawn a new one",
        ));
    }
    if let Ok(session) = record.session.parse::<SessionId>() {
        tmux.sessions()
            .kill(session)
            .await
            .map_err(|e| super::session::session_error(tmux.server_name(), e, "retry"))?;
    }
    Ok(())
}

impl McpServer {
    /// Starts the caller's agent `input.resume` again.
    pub(super) async fn resume_agent(
        &self,
        tmux: &TmuxAccess<'_>,
        input: SpawnAgentInput,
        cancel: &CancellationToken,
    ) -> Result<SpawnAgentOutput, ToolError> {
        check_input(&input)?;
        let id = input.resume.clone().unwrap_or_default();
        let fleet = &self.state().fleet;
        let record = fleet
            .get(&tmux.scope, &id)
            .filter(|record| record.owner == tmux.call.sub())
            .ok_or_else(|| {
                ToolError::not_found(
                    format!("you have no agent {:?} on this server", id),
                    "list_agents shows yours",
                )
            })?;
        let config = &self.state().config;
        let (kind, program) = program_of(&config.agents, &record.kind)?;
        let prompt = input.prompt.as_deref().map(checked_prompt).transpose()?;
        let budget = tmux.budget().wait(
            input.timeout,
            std::time::Duration::from_secs(program.ready_timeout_secs),
        )?;
        ensure_not_running(tmux, &record).await?;
        let (resume_args, conversation) = program.resume_args_for(record.cli_session.as_deref());
        let mut lost = self.worktree_back(&record).await?;
        if !conversation {
            lost.insert(
                1,
                format!(
                    "its conversation: [agents.{kind}] has no resume_args (nor a reported \
                     session for resume_session_args), so it starts afresh"
                ),
            );
        }
        let plan = Plan {
            kind,
            program,
            id: record.id.clone(),
            repository: None,
            start_directory: record
                .worktree
                .as_ref()
                .map(|w| w.path.display().to_string()),
            title: input.title.or_else(|| record.title.clone()),
            environment: environment_of(program, &record.id, None)?,
            prompt,
            resume_args,
            cli_session: record.cli_session.clone(),
        };
        fleet.remove(&tmux.scope, &record.id);
        let directory = plan.start_directory.clone();
        let started = match start_session(self, tmux, &plan, directory).await {
            Ok(started) => started,
            Err(error) => {
                // Kept, so that the resume can be tried again.
                let _ = fleet.insert(&tmux.scope, record);
                return Err(error);
            }
        };
        let mut answer = self
            .settle(
                tmux,
                plan,
                started,
                record.worktree.clone(),
                &budget,
                cancel,
            )
            .await?;
        answer.lost = Some(lost);
        Ok(answer)
    }

    /// Makes the agent's worktree ready again (made again on its branch where its directory is
    /// gone); what will not come back.
    async fn worktree_back(&self, record: &AgentRecord) -> Result<Vec<String>, ToolError> {
        let config = &self.state().config;
        let mut lost = vec!["its screen and scrollback (it runs in a new session)".to_owned()];
        if record.worktree.is_none() {
            lost.push("its start directory (only a worktree is recorded)".to_owned());
        }
        if let Some(kept) = &record.worktree
            && tokio::fs::symlink_metadata(&kept.path).await.is_err()
        {
            let repository = config.repositories.get(&kept.repository).ok_or_else(|| {
                ToolError::not_found(
                    format!(
                        "its worktree is gone and repository {:?} is no longer configured",
                        kept.repository
                    ),
                    "ask the operator to configure it again, or stop_agent it",
                )
            })?;
            worktree::restore(repository, kept)
                .await
                .map_err(worktree_not_made)?;
            lost.push(format!(
                "work not committed in its worktree (made again from branch {})",
                kept.branch
            ));
        }
        Ok(lost)
    }
}
