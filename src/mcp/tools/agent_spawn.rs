//! `spawn_agent`: start an agent program of a configured kind (`[agents.<kind>]`) in a new
//! session of the caller's, optionally in a new git worktree, and hand it its first prompt
//! once it is ready.
//!
//! The path, one stage after another; a stage that fails undoes the ones before it:
//! 1. **check**: the kind, the id, the repository and base, the variables, the prompt — all
//!    before anything runs.
//! 2. **worktree** ([`crate::fleet::worktree::add`]): `<worktrees>/<id>` on branch
//!    `agent/<id>`, made on the gateway's machine (so not for a workspace's or a host's server).
//! 3. **session**: the program itself as the pane's program (its words go to tmux as separate
//!    arguments; no shell reads them), the pane kept when it ends (`remain-on-exit`) so that its
//!    end and status stay readable; recorded as the caller's, and in the fleet.
//! 4. **ready** ([`until_ready`]): the agent's state is read again each time its pane prints
//!    (at most every [`LOOK_PAUSE`]) and at least every [`HOOK_PAUSE`] (a hook's report prints
//!    nothing), until it reads idle, blocked or exited — a barrier, not a sleep.
//! 5. **prompt**: delivered as `send_prompt` delivers one, only to an agent that is idle.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::prompt::{PromptTime, SendPromptOutput, deliver_prompt};
use super::session::session_error;
use super::support::validate_environment;
use super::watch::{cancelled, elapsed_ms, keep, read_state};
use crate::auth::can_name_session;
use crate::auth::owners::SessionKey;
use crate::fleet::registry::{AgentRecord, RecordError, check_agent_id};
use crate::fleet::worktree::{self, Worktree, WorktreeError};
use crate::fleet::{AgentProgram, Readiness};
use crate::mcp::McpServer;
use crate::mcp::access::TmuxAccess;
use crate::mcp::agent_watch::Watched;
use crate::mcp::args::ObjectArg;
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mcp::pane_state::{self, AgentStatusOutput};
use crate::mux::prompt;
use muxgate_mux::lines::excerpt;
use muxgate_tmux::PaneId;
use muxgate_tmux::typed::options::{OptionLevel, OptionPlace};
use muxgate_tmux::typed::sessions::{NewSession, SessionError};
use muxgate_tmux::wire::target::SessionName;

/// The least time between two reads of a printing agent's state (a spinner redraws at 10 Hz).
const LOOK_PAUSE: Duration = Duration::from_millis(150);
/// The most time between two reads: a hook's report prints nothing.
const HOOK_PAUSE: Duration = Duration::from_secs(1);
/// How long a pane without other evidence must be quiet before the first prompt is pasted.
const PROMPT_QUIET: Duration = Duration::from_millis(300);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SpawnAgentInput {
    #[serde(default)]
    pub server: Option<String>,
    /// A configured `[agents.<kind>]` (claude-code, codex, …).
    #[serde(default)]
    pub kind: Option<String>,
    /// Instead of kind: an agent of yours whose session or server was lost, started again in
    /// its worktree (with its kind's resume_args).
    #[serde(default)]
    pub resume: Option<String>,
    /// Its id and session name (default `<kind>-<n>`): letters, digits, - _ .
    #[serde(default)]
    pub id: Option<String>,
    /// A configured `[repositories.<name>]`: it works in a new worktree on branch `agent/<id>`.
    #[serde(default)]
    pub repository: Option<String>,
    /// What the branch starts from (default: the repository's base).
    #[serde(default)]
    pub base: Option<String>,
    /// Without repository: the directory it starts in.
    #[serde(default)]
    pub start_directory: Option<String>,
    /// Its pane's title.
    #[serde(default)]
    pub title: Option<String>,
    /// Variables added to the kind's own.
    #[serde(default)]
    pub env: Option<ObjectArg<BTreeMap<String, String>>>,
    /// Its first task, submitted once it is ready (as send_prompt).
    #[serde(default)]
    pub prompt: Option<String>,
    /// Seconds to be ready and take the prompt (default: the kind's).
    #[serde(default)]
    pub timeout: Option<f64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SpawnAgentOutput {
    pub agent_id: String,
    pub kind: String,
    pub server: String,
    pub session_id: String,
    pub pane_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeOutput>,
    /// idle (ready), blocked (needs a human first), exited, or starting (not ready in time).
    pub state: &'static str,
    pub explain: Vec<String>,
    pub waited_ms: u64,
    /// The first prompt's delivery, as send_prompt answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<SendPromptOutput>,
    /// resume: what did not come back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<Vec<String>>,
}

/// An agent's worktree, as answers show it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct WorktreeOutput {
    pub repository: String,
    pub path: String,
    pub branch: String,
    pub base: String,
}

impl From<&Worktree> for WorktreeOutput {
    fn from(worktree: &Worktree) -> Self {
        Self {
            repository: worktree.repository.clone(),
            path: worktree.path.display().to_string(),
            branch: worktree.branch.clone(),
            base: worktree.base.clone(),
        }
    }
}

/// A spawn, checked: what runs where.
pub(super) struct Plan<'a> {
    pub(super) kind: &'a str,
    pub(super) program: &'a AgentProgram,
    pub(super) id: String,
    /// The repository's name and configuration, and the base.
    pub(super) repository: Option<(&'a str, &'a crate::fleet::Repository, String)>,
    pub(super) start_directory: Option<String>,
    pub(super) title: Option<String>,
    pub(super) environment: Vec<(String, String)>,
    pub(super) prompt: Option<String>,
    /// Started again: what follows its `args` (the kind's resume arguments).
    pub(super) resume_args: Vec<String>,
    /// The CLI's own session id, kept from the agent's record across a resume.
    pub(super) cli_session: Option<String>,
}

/// The configured kind `kind`, or an error naming the configured ones.
pub(super) fn program_of<'a>(
    agents: &'a BTreeMap<String, AgentProgram>,
    kind: &str,
) -> Result<(&'a str, &'a AgentProgram), ToolError> {
    agents
        .get_key_value(kind)
        .map(|(kind, program)| (kind.as_str(), program))
        .ok_or_else(|| {
            let kinds: Vec<&str> = agents.keys().map(String::as_str).collect();
            if kinds.is_empty() {
                ToolError::new(
                    ToolErrorKind::Unsupported,
                    "this gateway has no agent kinds configured",
                    "ask the operator to add an [agents.<kind>] table",
                )
            } else {
                ToolError::invalid_arguments(
                    format!("no agent kind {:?} is configured", excerpt(kind)),
                    format!("use one of: {}", kinds.join(", ")),
                )
            }
        })
}

/// Checks the request against the configuration and the caller's access; nothing runs.
fn plan<'a>(
    gateway: &'a McpServer,
    tmux: &TmuxAccess<'_>,
    input: SpawnAgentInput,
) -> Result<Plan<'a>, ToolError> {
    let config = &gateway.state().config;
    let Some(kind) = &input.kind else {
        return Err(ToolError::invalid_arguments(
            "pass kind (a new agent) or resume (an agent of yours to start again)",
            "list_agents shows your agents; the operator's [agents.<kind>] tables the kinds",
        ));
    };
    let (kind, program) = program_of(&config.agents, kind)?;
    let id = match input.id {
        Some(id) => id,
        None => free_id(gateway, tmux, kind),
    };
    check_agent_id(&id).map_err(|why| {
        ToolError::invalid_arguments(format!("id {why}"), "choose an id like fix-login-2")
    })?;
    SessionName::parse(&id).map_err(|e| {
        ToolError::invalid_arguments(e.to_string(), "choose an id like fix-login-2")
    })?;
    if gateway.state().fleet.contains(&tmux.scope, &id) {
        return Err(ToolError::new(
            ToolErrorKind::Conflict,
            format!("an agent {id:?} exists already"),
            "choose another id, or stop_agent it first",
        ));
    }
    can_name_session(&tmux.call.principal, &id).map_err(|denied| {
        ToolError::new(
            ToolErrorKind::Forbidden,
            denied.to_string(),
            "choose an id your access allows as a session name",
        )
    })?;
    let repository = match input.repository {
        None => None,
        Some(name) => Some(repository_of(gateway, tmux, &name, input.base)?),
    };
    if repository.is_some() && input.start_directory.is_some() {
        return Err(ToolError::invalid_arguments(
            "pass repository or start_directory, not both",
            "the worktree is where an agent with a repository starts",
        ));
    }
    tmux.check_start_directory(input.start_directory.as_deref())?;
    check_title(input.title.as_deref())?;
    let environment = environment_of(program, &id, input.env)?;
    let prompt = match &input.prompt {
        None => None,
        Some(text) => Some(checked_prompt(text)?),
    };
    Ok(Plan {
        kind,
        program,
        id,
        repository,
        start_directory: input.start_directory,
        title: input.title,
        environment,
        prompt,
        resume_args: Vec::new(),
        cli_session: None,
    })
}

/// A pane title a caller may give: up to 256 characters, none a control character.
pub(super) fn check_title(title: Option<&str>) -> Result<(), ToolError> {
    match title {
        Some(title) if title.chars().count() > 256 || title.chars().any(char::is_control) => {
            Err(ToolError::invalid_arguments(
                "title must be up to 256 characters, without control characters",
                "pass a short plain title",
            ))
        }
        _ => Ok(()),
    }
}

/// The first id `<kind>-<n>` no agent of the server holds.
fn free_id(gateway: &McpServer, tmux: &TmuxAccess<'_>, kind: &str) -> String {
    let fleet = &gateway.state().fleet;
    (1..)
        .map(|n| format!("{kind}-{n}"))
        .find(|id| !fleet.contains(&tmux.scope, id))
        .unwrap_or_else(|| kind.to_owned())
}

/// The configured repository `name` with the base to branch from, where worktrees can be
/// made: on the gateway's own machine, outside any workspace.
fn repository_of<'a>(
    gateway: &'a McpServer,
    tmux: &TmuxAccess<'_>,
    name: &str,
    base: Option<String>,
) -> Result<(&'a str, &'a crate::fleet::Repository, String), ToolError> {
    let repositories = &gateway.state().config.repositories;
    let Some((name, repository)) = repositories.get_key_value(name) else {
        let names: Vec<&str> = repositories.keys().map(String::as_str).collect();
        return Err(ToolError::not_found(
            format!("no repository {:?} is configured", excerpt(name)),
            if names.is_empty() {
                "spawn without repository, or ask the operator to add [repositories.<name>]"
                    .to_owned()
            } else {
                format!("use one of: {}", names.join(", "))
            },
        ));
    };
    if tmux.workspace.is_some() || tmux.server.endpoint().remote_host().is_some() {
        return Err(ToolError::invalid_arguments(
            "worktrees are made on the gateway's machine, and this server's panes run elsewhere \
             (a workspace or another host)",
            "spawn without repository and clone or check out inside the agent's session",
        ));
    }
    let base = base.unwrap_or_else(|| repository.base.clone());
    crate::fleet::config::check_base(&base).map_err(|why| {
        ToolError::invalid_arguments(format!("base {why}"), "name a branch, tag or commit")
    })?;
    Ok((name.as_str(), repository, base))
}

/// The kind's variables, the caller's (which may not replace them), and `MUXGATE_AGENT_ID`.
pub(super) fn environment_of(
    program: &AgentProgram,
    id: &str,
    extra: Option<ObjectArg<BTreeMap<String, String>>>,
) -> Result<Vec<(String, String)>, ToolError> {
    let mut environment = program.env.clone();
    for (name, value) in extra.unwrap_or_default().0 {
        if environment.contains_key(&name) || name == "MUXGATE_AGENT_ID" {
            return Err(ToolError::invalid_arguments(
                format!("env {name:?} is set by the agent kind's configuration"),
                "leave it out, or ask the operator to change [agents.<kind>] env",
            ));
        }
        environment.insert(name, value);
    }
    environment.insert("MUXGATE_AGENT_ID".to_owned(), id.to_owned());
    validate_environment(environment)
}

/// The prompt's text as `send_prompt` takes it.
pub(super) fn checked_prompt(text: &str) -> Result<String, ToolError> {
    let Some(text) = prompt::prompt_text(text) else {
        return Err(ToolError::invalid_arguments(
            "prompt has nothing visible",
            "pass the first task's text, or leave prompt out",
        ));
    };
    super::input::check_text_len(text.len())?;
    Ok(text.to_owned())
}

fn record_error(error: RecordError) -> ToolError {
    match error {
        RecordError::Taken(_) => ToolError::new(
            ToolErrorKind::Conflict,
            error.to_string(),
            "choose another id",
        ),
        RecordError::Full => ToolError::new(
            ToolErrorKind::Busy,
            error.to_string(),
            "stop_agent agents you no longer need",
        ),
    }
}

/// [`worktree_error`] of a spawn or resume that could not make the agent's worktree.
pub(super) fn worktree_not_made(error: WorktreeError) -> ToolError {
    worktree_error(
        error,
        "made",
        "choose another id or base (a branch agent/<id> must not exist yet)",
    )
}

/// What an agent hears when its worktree could not be `done` ("made", "removed"); `conflict`
/// says what to do when git refused. Failures of the gateway's own (git missing, timed out, I/O)
/// are logged and not shown: they are the operator's to read.
pub(super) fn worktree_error(error: WorktreeError, done: &str, conflict: &str) -> ToolError {
    let failed = format!("the agent's worktree could not be {done}");
    match error {
        WorktreeError::Exists(_) | WorktreeError::Refused(_) => ToolError::new(
            ToolErrorKind::Conflict,
            format!("{failed}: {error}"),
            conflict,
        ),
        WorktreeError::Busy(_) => ToolError::new(
            ToolErrorKind::Busy,
            format!("{failed}: {error}"),
            "retry in a moment",
        ),
        WorktreeError::Spawn(_) | WorktreeError::TimedOut | WorktreeError::Io(_) => {
            tracing::warn!(%error, "{failed}");
            ToolError::new(
                ToolErrorKind::Unavailable,
                failed,
                "retry later; if it persists the operator must check the gateway's log",
            )
        }
    }
}

/// The agent's session, running its program, its pane kept when the program ends; with the
/// pid of the tmux server it is in.
pub(super) async fn start_session(
    gateway: &McpServer,
    tmux: &TmuxAccess<'_>,
    plan: &Plan<'_>,
    directory: Option<String>,
) -> Result<(muxgate_tmux::typed::sessions::Session, PaneId, u32), ToolError> {
    let name = SessionName::parse(&plan.id)
        .map_err(|e| ToolError::invalid_arguments(e.to_string(), "choose another id"))?;
    let spec = NewSession {
        name,
        window_name: Some(plan.kind.to_owned()),
        start_directory: directory,
        width: None,
        height: None,
        environment: plan.environment.clone(),
    };
    let argv: Vec<String> = std::iter::once(plan.program.command.clone())
        .chain(plan.program.args.iter().cloned())
        .chain(plan.resume_args.iter().cloned())
        .collect();
    let _claim = tmux
        .owners
        .claim_name(&tmux.scope, &plan.id, tmux.call.sub());
    let settings = gateway.state().config.engine.settings();
    let failed = |error: SessionError| match error {
        SessionError::NameInUse(_) => ToolError::new(
            ToolErrorKind::Conflict,
            format!("the session name {:?} is taken", plan.id),
            "choose another id",
        ),
        error => session_error(tmux.server_name(), error, "call list_sessions"),
    };
    let created = tmux
        .sessions()
        .create(&spec, Some(&argv), &settings)
        .await
        .map_err(failed)?;
    let session = created.session;
    if created.started_server {
        tmux.sessions()
            .respawn_first_pane(session.id, &argv)
            .await
            .map_err(failed)?;
    }
    let key = SessionKey {
        id: session.id.to_string(),
        created: session.created,
    };
    tmux.owners.record(&tmux.scope, &key, tmux.call.sub());
    let pane = session
        .active_pane_id
        .parse::<PaneId>()
        .map_err(|_| ToolError::new(ToolErrorKind::Internal, "tmux named no pane", "retry"))?;
    let keep_dead = OptionPlace {
        level: OptionLevel::Pane,
        global: false,
        target: Some(pane.to_string()),
    };
    if let Err(error) = tmux
        .options()
        .set(&keep_dead, "remain-on-exit", Some("on"))
        .await
    {
        tracing::warn!(%pane, %error, "an agent's pane will close when it ends");
    }
    if let Some(title) = &plan.title
        && let Err(error) = tmux.pane_lifecycle().set_title(pane, title).await
    {
        tracing::warn!(%pane, %error, "an agent's pane title was not set");
    }
    let server_pid = read_state(tmux, pane).await?.server_pid;
    Ok((session, pane, server_pid))
}

/// Reads the agent's state until it is ready (idle), needs a human (blocked) or exited, or
/// `deadline` passes; then its last state and when it was read.
async fn until_ready(
    gateway: &McpServer,
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    readiness: (Readiness, Duration),
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<AgentStatusOutput, ToolError> {
    let stream = keep(tmux, pane, deadline).await?;
    let mut output = stream.subscribe();
    let mut ended = false;
    loop {
        let looked = Instant::now();
        let (state, _) = pane_state::with_screen(gateway, tmux, pane).await?;
        let status = state.agent_status.unwrap_or_else(|| AgentStatusOutput {
            kind: String::new(),
            state: if state.dead { "exited" } else { "unknown" },
            blocked_on: None,
            seen_for_ms: 0,
            explain: Vec::new(),
        });
        let quiet = state.idle_for_ms.map(Duration::from_millis);
        match readiness {
            _ if matches!(status.state, "blocked" | "exited") => return Ok(status),
            (Readiness::Screen, _) if status.state == "idle" => return Ok(status),
            (Readiness::Quiet, needed) if quiet.is_some_and(|q| q >= needed) => {
                return Ok(AgentStatusOutput {
                    state: "idle",
                    explain: vec![format!("quiet for {} ms", needed.as_millis())],
                    ..status
                });
            }
            _ if Instant::now() >= deadline => return Ok(status),
            _ => {}
        }
        let next_look = (looked + HOOK_PAUSE).min(deadline);
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(cancelled()),
            () = tokio::time::sleep_until(next_look) => {}
            next = output.next(), if !ended => ended = next.is_err(),
        }
        tokio::time::sleep_until((looked + LOOK_PAUSE).min(deadline)).await;
    }
}

/// Delivers the first prompt to an agent that is ready; says why not to one that is not.
async fn first_prompt(
    gateway: &McpServer,
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    text: &str,
    state: &str,
    until: PromptTime,
    cancel: &CancellationToken,
) -> Result<SendPromptOutput, ToolError> {
    if state != "idle" {
        return Ok(SendPromptOutput {
            pane_id: pane.to_string(),
            outcome: "not_ready",
            ready_by: None,
            evidence: match state {
                "blocked" => "agent_blocked",
                "exited" => "pane_exited",
                _ => "agent_starting",
            },
            enter_presses: 0,
            waited_ms: 0,
            output_position: None,
            replayed: false,
        });
    }
    let reports = &gateway.state().agent_reports;
    deliver_prompt(tmux, pane, text, until, reports, cancel).await
}

impl McpServer {
    /// Follows the spawned agent's state from now on, for `[notify]`.
    fn follow(&self, tmux: &TmuxAccess<'_>, plan: &Plan<'_>, pane: PaneId, state: &'static str) {
        let watched = Watched {
            call: tmux.call.clone(),
            server: tmux.server_name().to_owned(),
            scope: tmux.scope.clone(),
            id: plan.id.clone(),
            kind: plan.kind.to_owned(),
            pane,
        };
        self.state().agent_watches.start(self, watched, state);
    }

    /// The stages after the checks: worktree and session, then [`Self::settle`].
    async fn spawn(
        &self,
        tmux: &TmuxAccess<'_>,
        plan: Plan<'_>,
        timeout: Option<f64>,
        cancel: &CancellationToken,
    ) -> Result<SpawnAgentOutput, ToolError> {
        let ready_default = Duration::from_secs(plan.program.ready_timeout_secs);
        let budget = tmux.budget().wait(timeout, ready_default)?;
        let worktree = match &plan.repository {
            Some((name, repository, base)) => Some(
                worktree::add(name, repository, &plan.id, base)
                    .await
                    .map_err(worktree_not_made)?,
            ),
            None => None,
        };
        let directory = worktree
            .as_ref()
            .map(|w| w.path.display().to_string())
            .or_else(|| plan.start_directory.clone());
        let started = start_session(self, tmux, &plan, directory).await;
        let started = match started {
            Ok(started) => started,
            Err(error) => {
                if let (Some(worktree), Some((_, repository, _))) = (&worktree, &plan.repository) {
                    worktree::discard(&repository.path, worktree).await;
                }
                return Err(error);
            }
        };
        self.settle(tmux, plan, started, worktree, &budget, cancel)
            .await
    }

    /// The stages after the session: record, barrier, prompt; the answer.
    pub(super) async fn settle(
        &self,
        tmux: &TmuxAccess<'_>,
        plan: Plan<'_>,
        (session, pane, server_pid): (muxgate_tmux::typed::sessions::Session, PaneId, u32),
        worktree: Option<Worktree>,
        budget: &crate::mcp::budget::WaitBudget,
        cancel: &CancellationToken,
    ) -> Result<SpawnAgentOutput, ToolError> {
        let fleet = &self.state().fleet;
        let record = AgentRecord {
            id: plan.id.clone(),
            kind: plan.kind.to_owned(),
            owner: tmux.call.sub().to_owned(),
            session: session.id.to_string(),
            session_created: session.created,
            pane: pane.to_string(),
            server_process: Some((tmux.instance().epoch, server_pid)),
            title: plan.title.clone(),
            worktree: worktree.clone(),
            cli_session: plan.cli_session.clone(),
            started_ms: super::watch::unix_ms(std::time::SystemTime::now()),
        };
        fleet.insert(&tmux.scope, record).map_err(record_error)?;
        let readiness = (
            plan.program.ready,
            Duration::from_millis(plan.program.ready_quiet_ms),
        );
        let status = until_ready(self, tmux, pane, readiness, budget.deadline, cancel).await?;
        self.follow(tmux, &plan, pane, status.state);
        self.state()
            .fleet_feed
            .changed(tmux.server_name(), &plan.id, tmux.call.sub());
        let prompt = match &plan.prompt {
            Some(text) => {
                let until = PromptTime {
                    deadline: budget.deadline,
                    timeout: budget.effective,
                    quiet: PROMPT_QUIET,
                };
                Some(first_prompt(self, tmux, pane, text, status.state, until, cancel).await?)
            }
            None => None,
        };
        Ok(SpawnAgentOutput {
            agent_id: plan.id,
            kind: plan.kind.to_owned(),
            server: tmux.server_name().to_owned(),
            session_id: session.id.to_string(),
            pane_id: pane.to_string(),
            worktree: worktree.as_ref().map(WorktreeOutput::from),
            state: status.state,
            explain: status.explain,
            waited_ms: elapsed_ms(budget.started),
            prompt,
            lost: None,
        })
    }
}

#[tool_router(router = agent_spawn_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "spawn_agent",
        description = "Start an agent CLI of a configured kind in a new session of yours, \
            optionally in a new git worktree (branch agent/<id>), and submit its first prompt \
            once it is ready; or `resume` one of yours whose session was lost.\n\n\
            Returns its id, pane and `state` (idle, blocked, exited or starting).",
        annotations(
            title = "Spawn an agent",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn spawn_agent(
        &self,
        Extension(call): Extension<CallContext>,
        cancel: CancellationToken,
        Parameters(input): Parameters<SpawnAgentInput>,
    ) -> Result<Json<SpawnAgentOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let timeout = input.timeout;
        if input.resume.is_some() {
            let work = self.resume_agent(&tmux, input, &cancel);
            return self.state().until_shutdown(work).await.map(Json);
        }
        let plan = plan(self, &tmux, input)?;
        let work = self.spawn(&tmux, plan, timeout, &cancel);
        self.state().until_shutdown(work).await.map(Json)
    }
}
