//! Tools that act on tmux sessions: list, inspect, create, rename, kill.
//!
//! Sessions created here are detached (no human client is attached, switched or resized) and
//! recorded as the creator's in the gateway's ownership table ([`crate::auth::owners`]); the
//! name is claimed before tmux creates the session, so no moment exists in which it is shown
//! unowned. When no tmux server runs, the control-mode engine cannot attach; `create_session`
//! then starts the server with one subprocess and waits until the engine reaches it (see
//! [`muxgate_tmux::typed::sessions`], which runs every tmux command of these tools).

use std::collections::BTreeMap;

use muxgate_mux::lines::excerpt;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::support::{
    check_window_name, name_filter, op_failure, session_target, validate_environment,
    validate_start_directory, validate_window_size,
};
use super::window::list_window_rows;
use super::zellij_objects::ZELLIJ_SESSION_FIELDS;
use crate::auth::can_name_session;
use crate::auth::owners::SessionKey;
use crate::auth::pattern::NamePattern;
use crate::mcp::McpServer;
use crate::mcp::access::{SESSIONS_HINT, TmuxAccess, check_target, engine_error};
use crate::mcp::args::ObjectArg;
use crate::mcp::backend::Backend;
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mcp::fields::RowShape;
use crate::mcp::listing::{JsonRow, ListsSessions, RowKind};
use crate::mcp::pane_access::PaneAccess;
use crate::mcp::row_object::object;
use crate::mcp::self_guard::Kill;
use crate::mcp::shared_tool::{MuxTool, Reply};
use muxgate_tmux::typed::sessions::{NewSession, Session, SessionError};
use muxgate_tmux::typed::windows::Window;
use muxgate_tmux::wire::target::{SessionName, SessionSel, Target};
use muxgate_tmux::{EngineError, SessionId};
use muxgate_zellij::unsupported;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListSessionsInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Only sessions matching every given field.
    #[serde(default)]
    pub filters: Option<ObjectArg<SessionFilters>>,
    /// Fields wanted, e.g. `["name", "created"]` (`id` always); `["all"]`: every field.
    #[serde(default)]
    pub fields: Option<Vec<String>>,
}

/// Conditions on sessions; every given field must hold.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionFilters {
    /// Exact name or glob (`*`, `?`), e.g. `build-*`; case-sensitive.
    #[serde(default)]
    pub name: Option<String>,
    /// true: only sessions with a client attached; false: only detached ones.
    #[serde(default)]
    pub attached: Option<bool>,
    /// true: only sessions you created through this gateway; false: only others.
    #[serde(default)]
    pub created_by_you: Option<bool>,
}

/// [`SessionFilters`] ready to apply.
struct SessionMatcher {
    name: Option<NamePattern>,
    attached: Option<bool>,
    created_by_you: Option<bool>,
}

impl SessionMatcher {
    fn new(filters: Option<&SessionFilters>) -> Result<Self, ToolError> {
        Ok(Self {
            name: name_filter(filters.and_then(|f| f.name.as_deref()))?,
            attached: filters.and_then(|f| f.attached),
            created_by_you: filters.and_then(|f| f.created_by_you),
        })
    }

    /// Whether a backend's row matches. A row without a count of attached clients (Zellij's,
    /// which refuses `attached`) or an owner counts as detached and not yours.
    fn matches(&self, row: &JsonRow) -> bool {
        let name = row.get("name").and_then(Value::as_str).unwrap_or_default();
        let attached = row
            .get("attached_clients")
            .and_then(Value::as_u64)
            .is_some_and(|clients| clients > 0);
        let created_by_you = row.get("created_by_you").and_then(Value::as_bool) == Some(true);
        self.name.as_ref().is_none_or(|p| p.matches(name))
            && self.attached.is_none_or(|a| a == attached)
            && self.created_by_you.is_none_or(|c| c == created_by_you)
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ListSessionsOutput {
    pub server: String,
    /// The sessions, with the fields asked for.
    #[schemars(with = "Vec<SessionInfo>")]
    pub sessions: Vec<Map<String, Value>>,
}

/// What a `list_sessions` row shows by default: enough to pick a session and type into it.
pub(crate) const SESSION_SHAPE: RowShape = RowShape {
    always: &["id"],
    all: &[
        "id",
        "name",
        "windows",
        "attached_clients",
        "created",
        "last_activity",
        "active_window_id",
        "active_pane_id",
        "created_by_you",
    ],
    default: &["name", "windows", "attached_clients", "active_pane_id"],
    when_set: &["created_by_you"],
};

/// One tmux session, as the caller sees it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct SessionInfo {
    #[serde(flatten)]
    pub session: Session,
    /// Whether it was created through this gateway by you.
    pub created_by_you: bool,
}

impl SessionInfo {
    /// The session as the ownership table knows it.
    pub(crate) fn key(&self) -> SessionKey {
        SessionKey {
            id: self.session.id.to_string(),
            created: self.session.created,
        }
    }
}

/// Keeps the `sessions` the caller may see, marking the ones it created. `sessions` are every
/// session of the server: ownerships of sessions no longer among them are forgotten.
pub(crate) fn visible(tmux: &TmuxAccess<'_>, sessions: Vec<Session>) -> Vec<SessionInfo> {
    let sessions: Vec<SessionInfo> = sessions
        .into_iter()
        .map(|session| SessionInfo {
            session,
            created_by_you: false,
        })
        .collect();
    let live: Vec<SessionKey> = sessions.iter().map(SessionInfo::key).collect();
    tmux.owners.retain(&tmux.scope, &live);
    sessions
        .into_iter()
        .filter(|info| tmux.can_see(&info.session.name, &info.key()))
        .map(|info| SessionInfo {
            created_by_you: tmux.created_by_caller(&info.key(), &info.session.name),
            ..info
        })
        .collect()
}

/// Every session of the server the caller may see, with `attached_clients` not counting the
/// gateway's own control connections.
pub(crate) async fn list_session_rows(
    tmux: &TmuxAccess<'_>,
) -> Result<Vec<SessionInfo>, ToolError> {
    let sessions = tmux
        .sessions()
        .list()
        .await
        .map_err(|e| session_error(tmux.server_name(), e, "call list_servers"))?;
    Ok(visible(tmux, sessions))
}

/// A failed session operation as an error for the model; `list_hint` says where valid targets
/// are listed. [`SessionError::NameInUse`] gets [`name_taken`] where a name was chosen.
pub(crate) fn session_error(server: &str, error: SessionError, list_hint: &str) -> ToolError {
    match error {
        SessionError::Op(error) => op_failure(server, error, list_hint),
        SessionError::NameInUse(message) => {
            engine_error(server, EngineError::Command(message), list_hint)
        }
        SessionError::ListRefused(message) => ToolError::new(
            ToolErrorKind::Conflict,
            format!("tmux refused to list sessions: {message}"),
            "retry; if it persists call get_server_info",
        ),
        SessionError::NotCreated(message) => creation_failed(&message),
    }
}

/// The visible session `target` names, or one that holds a window or pane target.
pub(crate) async fn find_session(
    tmux: &TmuxAccess<'_>,
    target: &Target,
) -> Result<SessionInfo, ToolError> {
    let wanted = match target {
        Target::Session(session) => session.clone(),
        other => SessionSel::Id(tmux.resolve(other).await?.session_id),
    };
    list_session_rows(tmux)
        .await?
        .into_iter()
        .find(|s| match &wanted {
            SessionSel::Id(id) => s.session.id == *id,
            SessionSel::Name(name) => s.session.name == name.as_str(),
        })
        .ok_or_else(|| {
            ToolError::not_found(format!("no session {wanted} on this server"), SESSIONS_HINT)
        })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetSessionInfoInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session `$N` or exact name; a window `@N` or pane `%N` means its session.
    pub target: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SessionDetail {
    pub server: String,
    pub session: SessionInfo,
    /// Its windows in index order.
    pub windows: Vec<Window>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateSessionInput {
    #[serde(default)]
    pub server: Option<String>,
    /// 1-64 of A-Z a-z 0-9 _ -; unused and allowed by your access.
    pub name: String,
    /// First window's name (1-64 chars, no `#` or control chars); default: its program's.
    #[serde(default)]
    pub window_name: Option<String>,
    /// Absolute path of an existing directory for the first pane.
    #[serde(default)]
    pub start_directory: Option<String>,
    /// First window's width in columns (1-10000); default: `default-size`.
    #[serde(default)]
    pub width: Option<u32>,
    /// First window's height in rows (1-10000); default: `default-size`.
    #[serde(default)]
    pub height: Option<u32>,
    /// Environment variables for its panes (`NAME: value`).
    #[serde(default)]
    pub environment: Option<ObjectArg<BTreeMap<String, String>>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CreateSessionOutput {
    pub server: String,
    pub session: SessionInfo,
    /// Whether no tmux server was running and this call started it.
    pub started_server: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct KillSessionInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session `$N` or exact name (not a window or pane).
    pub target: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct KillSessionOutput {
    pub server: String,
    /// Id of the killed session.
    pub id: String,
    /// Its name.
    pub name: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RenameSessionInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session `$N` or exact name.
    pub target: String,
    /// 1-64 of A-Z a-z 0-9 _ -; unused and allowed by your access.
    pub new_name: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct RenameSessionOutput {
    pub server: String,
    /// Session id (unchanged by the rename).
    pub id: String,
    pub old_name: String,
    pub new_name: String,
}

/// Checks a `create_session` request before anything runs.
fn new_session(input: CreateSessionInput, call: &CallContext) -> Result<NewSession, ToolError> {
    let name = SessionName::parse(&input.name).map_err(|e| {
        ToolError::invalid_arguments(e.to_string(), "choose a name like build-1 or ci_test")
    })?;
    can_name_session(&call.principal, name.as_str()).map_err(|denied| {
        ToolError::new(
            ToolErrorKind::Forbidden,
            denied.to_string(),
            "choose a name your access allows (list_sessions shows the names you can see)",
        )
    })?;
    if let Some(window_name) = &input.window_name {
        check_window_name(window_name, "window_name")?;
    }
    if let Some(dir) = &input.start_directory {
        validate_start_directory(dir)?;
    }
    validate_window_size(input.width, "width")?;
    validate_window_size(input.height, "height")?;
    let environment = validate_environment(input.environment.unwrap_or_default().0)?;
    Ok(NewSession {
        name,
        window_name: input.window_name,
        start_directory: input.start_directory,
        width: input.width,
        height: input.height,
        environment,
    })
}

/// A server started by `create_session` read its configuration only as it started, so its
/// first shell began before its default shell could be asked for: that brand-new shell is
/// replaced by the integrated one. Failing that, the session keeps its plain shell.
async fn integrate_first_shell(tmux: &TmuxAccess<'_>, session: SessionId, enabled: bool) {
    let Some(argv) = tmux.integrated_shell(enabled).await else {
        return;
    };
    if let Err(error) = tmux.sessions().respawn_first_pane(session, &argv).await {
        tracing::warn!(session = %session, %error, "the first shell of a new server stays unintegrated");
    }
}

/// Refuses a new session when the workspace already holds `limit` (0: no limit), counting
/// every session, whoever made it.
async fn check_session_limit(tmux: &TmuxAccess<'_>, limit: u32) -> Result<(), ToolError> {
    if limit == 0 {
        return Ok(());
    }
    let sessions = tmux
        .sessions()
        .count()
        .await
        .map_err(|e| session_error(tmux.server_name(), e, "call list_sessions"))?;
    if sessions >= limit as usize {
        return Err(ToolError::new(
            ToolErrorKind::Busy,
            format!("your workspace already has {sessions} sessions, its limit ({limit})"),
            "kill a session you no longer need (kill_session), or reuse one",
        ));
    }
    Ok(())
}

/// The error for a name already in use: it names the session only when the caller may see
/// it (a session it may not see is not confirmed to exist, nor whose it is).
async fn name_taken(tmux: &TmuxAccess<'_>, name: &str) -> ToolError {
    let visible = list_session_rows(tmux)
        .await
        .is_ok_and(|sessions| sessions.iter().any(|s| s.session.name == name));
    if visible {
        ToolError::new(
            ToolErrorKind::Conflict,
            format!("a session named {:?} already exists", excerpt(name)),
            "use that session (list_sessions), or choose another name",
        )
    } else {
        ToolError::new(
            ToolErrorKind::Conflict,
            format!("the session name {:?} is not available", excerpt(name)),
            "choose another name",
        )
    }
}

fn creation_failed(message: &str) -> ToolError {
    ToolError::new(
        ToolErrorKind::Unavailable,
        format!("could not create the session: {message}"),
        "check the arguments (start_directory, sizes); if it persists the operator must check tmux",
    )
}

#[tool_router(router = session_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "list_sessions",
        description = "List the sessions you may see, optionally filtered.\n\n\
            Returns each session's id (`$N`), name, window count, attached clients and active pane \
            (`fields` for more).",
        annotations(
            title = "List sessions",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_sessions(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ListSessionsInput>,
    ) -> Result<Json<ListSessionsOutput>, ToolError> {
        self.serve(&call, input).await.map(Json)
    }

    #[tool(
        name = "get_session_info",
        description = "Describe one tmux session and its windows.\n\n\
            Returns the session as list_sessions shows it, plus its windows as list_windows does.",
        annotations(
            title = "Get session info",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_session_info(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<GetSessionInfoInput>,
    ) -> Result<Json<SessionDetail>, ToolError> {
        check_target(&input.target)?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = tmux.target(&input.target).await?;
        let session = find_session(&tmux, &target).await?;
        let windows = list_window_rows(&tmux, Some(session.session.id)).await?;
        Ok(Json(SessionDetail {
            server: tmux.server_name().to_owned(),
            session,
            windows,
        }))
    }

    #[tool(
        name = "create_session",
        description = "Create a detached tmux session, starting the server if none runs.\n\n\
            No human's view changes. Returns its id (`$N`), window and pane ids: send input to \
            the pane next (send_keys, run_command). A taken name is an error.",
        annotations(
            title = "Create session",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn create_session(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<CreateSessionInput>,
    ) -> Result<Json<CreateSessionOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        tmux.check_start_directory(input.start_directory.as_deref())?;
        let spec = new_session(input, &call)?;
        if let Some(limits) = &tmux.workspace {
            check_session_limit(&tmux, limits.sessions).await?;
        }
        let _claim = tmux
            .owners
            .claim_name(&tmux.scope, spec.name.as_str(), call.sub());
        let integration = self.state().config.tmux.shell_integration;
        let launch = tmux.integrated_shell(integration).await;
        let settings = self.state().config.engine.settings();
        let created = match tmux
            .sessions()
            .create(&spec, launch.as_deref(), &settings)
            .await
        {
            Ok(created) => created,
            Err(SessionError::NameInUse(_)) => {
                return Err(name_taken(&tmux, spec.name.as_str()).await);
            }
            Err(error) => {
                return Err(session_error(
                    tmux.server_name(),
                    error,
                    "call list_sessions",
                ));
            }
        };
        if created.started_server {
            integrate_first_shell(&tmux, created.session.id, integration).await;
        }
        let session = SessionInfo {
            session: created.session,
            created_by_you: true,
        };
        let started_server = created.started_server;
        tmux.owners.record(&tmux.scope, &session.key(), call.sub());
        Ok(Json(CreateSessionOutput {
            server: tmux.server_name().to_owned(),
            session,
            started_server,
        }))
    }

    #[tool(
        name = "kill_session",
        description = "Kill a tmux session: every window, pane and program in it ends.\n\n\
            Irreversible, also for attached humans. Refused for muxgate's own \
            session. For one window or pane use kill_window or kill_pane.",
        annotations(
            title = "Kill session",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn kill_session(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<KillSessionInput>,
    ) -> Result<Json<KillSessionOutput>, ToolError> {
        let session = session_target(&input.target, "kill_session")?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let resolved = tmux.resolve(&Target::Session(session)).await?;
        if let Some(me) = &self.state().self_location {
            me.check(&tmux, Kill::Session(resolved.session_id)).await?;
        }
        tmux.sessions()
            .kill(resolved.session_id)
            .await
            .map_err(|e| session_error(tmux.server_name(), e, SESSIONS_HINT))?;
        Ok(Json(KillSessionOutput {
            server: tmux.server_name().to_owned(),
            id: resolved.session_id.to_string(),
            name: resolved.session_name,
        }))
    }

    #[tool(
        name = "rename_session",
        description = "Rename a tmux session.\n\n\
            Humans see the new name in their status line. The id (`$N`) stays.",
        annotations(
            title = "Rename session",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn rename_session(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<RenameSessionInput>,
    ) -> Result<Json<RenameSessionOutput>, ToolError> {
        let session = session_target(&input.target, "rename_session")?;
        let new_name = SessionName::parse(&input.new_name).map_err(|e| {
            ToolError::invalid_arguments(e.to_string(), "choose a name like build-1 or ci_test")
        })?;
        can_name_session(&call.principal, new_name.as_str()).map_err(|denied| {
            ToolError::new(
                ToolErrorKind::Forbidden,
                denied.to_string(),
                "choose a name your access allows",
            )
        })?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let resolved = tmux.resolve(&Target::Session(session)).await?;
        match tmux.sessions().rename(resolved.session_id, &new_name).await {
            Ok(()) => {}
            Err(SessionError::NameInUse(_)) => {
                return Err(name_taken(&tmux, new_name.as_str()).await);
            }
            Err(error) => return Err(session_error(tmux.server_name(), error, SESSIONS_HINT)),
        }
        Ok(Json(RenameSessionOutput {
            server: tmux.server_name().to_owned(),
            id: resolved.session_id.to_string(),
            old_name: resolved.session_name,
            new_name: new_name.to_string(),
        }))
    }
}

/// What a backend's `list_sessions` rows hold: a tmux session's shaped row, or a Zellij
/// session's name, age and whether it exited.
fn session_rows_of(backend: Backend) -> RowKind {
    match backend {
        Backend::Tmux => RowKind::Shaped(&SESSION_SHAPE),
        Backend::Zellij => RowKind::Whole {
            fields: ZELLIJ_SESSION_FIELDS,
            instead: "omit fields for a Zellij server: its row is always the session's name, \
                      created_ago and exited",
        },
    }
}

impl MuxTool for ListSessionsInput {
    type Answer = ListSessionsOutput;

    fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    /// On Zellij: sessions carry no per-session client count, and a row is always whole.
    fn check(&self, backend: Backend) -> Result<(), ToolError> {
        session_rows_of(backend).view(self.fields.as_deref(), "list_sessions")?;
        let filters = self.filters.as_deref();
        if backend == Backend::Zellij && filters.is_some_and(|f| f.attached.is_some()) {
            return Err(ToolError::unsupported(
                unsupported::ATTACHED_FILTER,
                "omit it, and see a session's clients with zellij_list_clients",
            ));
        }
        SessionMatcher::new(filters)?;
        Ok(())
    }

    async fn act<A: PaneAccess>(self, _: &McpServer, access: A) -> Reply<Self> {
        let view = session_rows_of(A::BACKEND).view(self.fields.as_deref(), "list_sessions")?;
        let matcher = SessionMatcher::new(self.filters.as_deref())?;
        let rows = access.session_rows().await?;
        Ok(ListSessionsOutput {
            server: access.server_name().to_owned(),
            sessions: view.show(rows, |row| matcher.matches(row)),
        })
    }
}

impl ListsSessions for TmuxAccess<'_> {
    async fn session_rows(&self) -> Result<Vec<JsonRow>, ToolError> {
        list_session_rows(self).await?.iter().map(object).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Principal;

    #[test]
    fn the_default_view_names_fields_of_the_row() {
        crate::mcp::fields::assert_shape_covers::<SessionInfo>(&SESSION_SHAPE);
    }

    fn call() -> CallContext {
        CallContext {
            principal: Principal::new("alice", ["mux:admin"]),
            mcp_session: None,
            output: Default::default(),
        }
    }

    #[test]
    fn filters_combine() {
        let session = |name: &str, attached, mine| {
            let info = SessionInfo {
                session: Session {
                    id: SessionId(0),
                    name: name.into(),
                    windows: 1,
                    attached_clients: attached,
                    created: 0,
                    last_activity: 0,
                    active_window_id: "@0".into(),
                    active_pane_id: "%0".into(),
                },
                created_by_you: mine,
            };
            object(&info).unwrap()
        };
        let all = SessionMatcher::new(None).unwrap();
        assert!(all.matches(&session("x", 0, false)));
        let zellij_row = JsonRow::from_iter([("name".to_owned(), Value::from("ci-1"))]);
        let detached = SessionMatcher::new(Some(&SessionFilters {
            name: Some("ci-*".into()),
            attached: None,
            created_by_you: Some(false),
        }))
        .unwrap();
        assert!(detached.matches(&zellij_row));
        let filters = SessionFilters {
            name: Some("ci-*".into()),
            attached: Some(false),
            created_by_you: Some(true),
        };
        let m = SessionMatcher::new(Some(&filters)).unwrap();
        assert!(m.matches(&session("ci-1", 0, true)));
        assert!(!m.matches(&session("ci-1", 1, true)));
        assert!(!m.matches(&session("ci-1", 0, false)));
        assert!(!m.matches(&session("main", 0, true)));
    }

    #[test]
    fn a_valid_request_becomes_the_session_to_create() {
        let input = CreateSessionInput {
            server: None,
            name: "build".into(),
            window_name: Some("edit;".into()),
            start_directory: Some("/".into()),
            width: Some(100),
            height: None,
            environment: Some(ObjectArg(BTreeMap::from([("A".into(), "1;".into())]))),
        };
        let spec = new_session(input, &call()).unwrap();
        assert_eq!(spec.name.as_str(), "build");
        assert_eq!(spec.window_name.as_deref(), Some("edit;"));
        assert_eq!(spec.start_directory.as_deref(), Some("/"));
        assert_eq!((spec.width, spec.height), (Some(100), None));
        assert_eq!(spec.environment, [("A".to_owned(), "1;".to_owned())]);
    }

    #[test]
    fn creation_input_is_validated_before_anything_runs() {
        let base = || CreateSessionInput {
            server: None,
            name: "ok".into(),
            window_name: None,
            start_directory: None,
            width: None,
            height: None,
            environment: None,
        };
        let err = |input| new_session(input, &call()).err().unwrap();
        assert_eq!(
            err(CreateSessionInput {
                name: "a:b".into(),
                ..base()
            })
            .kind,
            ToolErrorKind::InvalidArguments
        );
        assert!(
            err(CreateSessionInput {
                width: Some(0),
                ..base()
            })
            .message
            .contains("width")
        );
        assert!(
            err(CreateSessionInput {
                start_directory: Some("rel".into()),
                ..base()
            })
            .message
            .contains("start_directory")
        );
        assert!(
            err(CreateSessionInput {
                window_name: Some("a#b".into()),
                ..base()
            })
            .message
            .contains("window_name")
        );
        let env = BTreeMap::from([("1BAD".into(), "x".into())]);
        assert!(
            err(CreateSessionInput {
                environment: Some(ObjectArg(env)),
                ..base()
            })
            .message
            .contains("1BAD")
        );

        let mut limited = call();
        limited.principal.acl.sessions.restrict(vec![
            crate::auth::pattern::NamePattern::new("ci-*").unwrap(),
        ]);
        let denied = new_session(base(), &limited).err().unwrap();
        assert_eq!(denied.kind, ToolErrorKind::Forbidden);
    }
}
