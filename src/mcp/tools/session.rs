//! Tools that act on tmux sessions: list, inspect, create, rename, kill.
//!
//! Sessions created here are detached (no human client is attached, switched or resized) and
//! recorded as the creator's in the gateway's ownership table ([`crate::auth::owners`]); the
//! name is claimed before tmux creates the session, so no moment exists in which it is shown
//! unowned. When no tmux server runs, the control-mode
//! engine cannot attach; `create_session` then starts the server with one subprocess (see
//! [`crate::mux::tmux::start`]) and waits until the engine reaches it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::Duration;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::support::{
    build, check_window_name, name_filter, session_only, validate_environment,
    validate_start_directory, validate_window_size,
};
use super::window::{WindowInfo, list_window_rows};
use crate::auth::can_name_session;
use crate::auth::owners::SessionKey;
use crate::auth::pattern::NamePattern;
use crate::mcp::McpServer;
use crate::mcp::access::{SESSIONS_HINT, TmuxAccess, engine_error, parse_target};
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mcp::fields::RowShape;
use crate::mcp::self_guard::Kill;
use crate::mux::lines::excerpt;
use crate::mux::tmux::command::escape_format;
use crate::mux::tmux::format::{row_format, split_row};
use crate::mux::tmux::ops;
use crate::mux::tmux::spawn::TERM_MARKER_PREFIX;
use crate::mux::tmux::start::{argv_value, run_starting_server};
use crate::mux::tmux::target::{SessionName, SessionSel, Target};
use crate::mux::tmux::watch_session::is_watch_session;
use crate::mux::tmux::{
    BatchMode, CommandOutcome, ConnectError, EngineError, TmuxCommand, TmuxEndpoint,
};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSessionsInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Only sessions matching every given field.
    #[serde(
        default,
        deserialize_with = "crate::mcp::args::option_object_or_json_string"
    )]
    pub filters: Option<SessionFilters>,
    /// Fields wanted, e.g. `["name", "created"]` (`id` always); `["all"]`: every field.
    #[serde(default)]
    pub fields: Option<Vec<String>>,
}

/// Conditions on sessions; every given field must hold.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionFilters {
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

    fn matches(&self, session: &SessionInfo) -> bool {
        self.name.as_ref().is_none_or(|p| p.matches(&session.name))
            && self
                .attached
                .is_none_or(|a| a == (session.attached_clients > 0))
            && self
                .created_by_you
                .is_none_or(|c| c == session.created_by_you)
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ListSessionsOutput {
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

/// One tmux session.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SessionInfo {
    /// Session id (`$N`): the stable way to target it.
    pub id: String,
    pub name: String,
    /// Number of windows.
    pub windows: u32,
    /// Number of clients (humans or programs) attached to it, not counting the gateway's own
    /// connections.
    pub attached_clients: u32,
    /// Creation time, seconds since the Unix epoch.
    pub created: u64,
    /// Last activity in any of its panes, seconds since the Unix epoch.
    pub last_activity: u64,
    /// Its current window (`@N`).
    pub active_window_id: String,
    /// The active pane of its current window (`%N`).
    pub active_pane_id: String,
    /// Whether it was created through this gateway by you.
    pub created_by_you: bool,
}

/// `-F` fields of a session row; the name (free text) last.
pub(crate) const SESSION_FIELDS: [&str; 8] = [
    "session_id",
    "session_windows",
    "session_attached",
    "session_created",
    "session_activity",
    "window_id",
    "pane_id",
    "session_name",
];

/// Parses one row printed with [`SESSION_FIELDS`] (`created_by_you` false: only the ownership
/// table can tell).
pub(crate) fn parse_session_row(line: &[u8]) -> Option<SessionInfo> {
    let f = split_row(line, SESSION_FIELDS.len())?;
    Some(SessionInfo {
        id: f[0].clone(),
        windows: f[1].parse().unwrap_or(0),
        attached_clients: f[2].parse().unwrap_or(0),
        created: f[3].parse().ok()?,
        last_activity: f[4].parse().unwrap_or(0),
        active_window_id: f[5].clone(),
        active_pane_id: f[6].clone(),
        name: f[7].clone(),
        created_by_you: false,
    })
}

impl SessionInfo {
    /// The session as the ownership table knows it.
    pub(crate) fn key(&self) -> SessionKey {
        SessionKey {
            id: self.id.clone(),
            created: self.created,
        }
    }
}

/// The `list-sessions` command with [`SESSION_FIELDS`].
pub(crate) fn list_sessions_command() -> Result<TmuxCommand, ToolError> {
    build(TmuxCommand::new("list-sessions").opt("-F", row_format(&SESSION_FIELDS)))
}

/// Keeps the rows the caller may see, marking the ones it created. `rows` are every session
/// of the server: ownerships of sessions no longer among them are forgotten.
pub(crate) fn visible_sessions(tmux: &TmuxAccess<'_>, rows: &[Vec<u8>]) -> Vec<SessionInfo> {
    let sessions: Vec<SessionInfo> = rows
        .iter()
        .filter_map(|row| parse_session_row(row))
        .collect();
    let live: Vec<SessionKey> = sessions.iter().map(SessionInfo::key).collect();
    tmux.owners.retain(&tmux.scope, &live);
    sessions
        .into_iter()
        .filter(|session| tmux.can_see(&session.name, &session.key()))
        .map(|session| SessionInfo {
            created_by_you: tmux.created_by_caller(&session.key(), &session.name),
            ..session
        })
        .collect()
}

/// Every session of the server the caller may see, with `attached_clients` not counting the
/// gateway's own control connections (one round trip: sessions and clients).
pub(crate) async fn list_session_rows(
    tmux: &TmuxAccess<'_>,
) -> Result<Vec<SessionInfo>, ToolError> {
    let clients = build(TmuxCommand::new("list-clients").opt("-F", row_format(&CLIENT_FIELDS)))?;
    let outcomes = match tmux
        .server
        .run_batch(
            &tmux.caller,
            vec![list_sessions_command()?, clients],
            BatchMode::Independent,
            None,
        )
        .await
    {
        Ok(outcomes) => outcomes,
        // A server with no session (an empty workspace) lists none.
        Err(EngineError::Unavailable {
            cause: ConnectError::NoSessions { .. },
            ..
        }) => return Ok(Vec::new()),
        // No server running: none, once the socket itself says so. The engine's verdict may
        // date from before a server (re)started, while it waits to reconnect; then this is
        // the "not reachable yet" error, to retry.
        Err(EngineError::Unavailable {
            cause: ConnectError::NoServer { .. },
            ..
        }) if nobody_listens(tmux.server.endpoint()).await => return Ok(Vec::new()),
        Err(error) => return Err(engine_error(tmux.server_name(), error, "call list_servers")),
    };
    let (sessions, clients) = match outcomes.as_slice() {
        [CommandOutcome::Ok(sessions), CommandOutcome::Ok(clients)] => (sessions, clients),
        [CommandOutcome::Failed(message), ..] | [_, CommandOutcome::Failed(message)] => {
            return Err(ToolError::new(
                ToolErrorKind::Conflict,
                format!("tmux refused to list sessions: {message}"),
                "retry; if it persists call get_server_info",
            ));
        }
        _ => {
            return Err(ToolError::new(
                ToolErrorKind::Unavailable,
                "tmux did not answer for every command",
                "retry shortly",
            ));
        }
    };
    let attached = foreign_clients_by_session(clients);
    Ok(visible_sessions(tmux, sessions)
        .into_iter()
        .map(|session| SessionInfo {
            attached_clients: attached.get(&session.id).copied().unwrap_or(0),
            ..session
        })
        .collect())
}

/// `-F` fields of a client row.
const CLIENT_FIELDS: [&str; 2] = ["session_id", "client_termname"];

/// Clients per session id, leaving out muxgate's own control clients (recognised by their
/// `TERM` marker).
fn foreign_clients_by_session(rows: &[Vec<u8>]) -> BTreeMap<String, u32> {
    let mut counts = BTreeMap::new();
    for row in rows {
        if let Some(f) = split_row(row, CLIENT_FIELDS.len())
            && !f[1].starts_with(TERM_MARKER_PREFIX)
        {
            *counts.entry(f[0].clone()).or_insert(0) += 1;
        }
    }
    counts
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
            SessionSel::Id(id) => s.id == id.to_string(),
            SessionSel::Name(name) => s.name == name.as_str(),
        })
        .ok_or_else(|| {
            ToolError::not_found(format!("no session {wanted} on this server"), SESSIONS_HINT)
        })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetSessionInfoInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session `$N` or exact name; a window `@N` or pane `%N` means its session.
    pub target: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionDetail {
    pub server: String,
    pub session: SessionInfo,
    /// Its windows in index order.
    pub windows: Vec<WindowInfo>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSessionInput {
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
    #[serde(
        default,
        deserialize_with = "crate::mcp::args::option_object_or_json_string"
    )]
    pub environment: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CreateSessionOutput {
    pub server: String,
    pub session: SessionInfo,
    /// Whether no tmux server was running and this call started it.
    pub started_server: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KillSessionInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session `$N` or exact name (not a window or pane).
    pub target: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct KillSessionOutput {
    pub server: String,
    /// Id of the killed session.
    pub id: String,
    /// Its name.
    pub name: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenameSessionInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session `$N` or exact name.
    pub target: String,
    /// 1-64 of A-Z a-z 0-9 _ -; unused and allowed by your access.
    pub new_name: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RenameSessionOutput {
    pub server: String,
    /// Session id (unchanged by the rename).
    pub id: String,
    pub old_name: String,
    pub new_name: String,
}

/// A validated `create_session` request, as tmux arguments for either path.
struct NewSession {
    name: SessionName,
    window_name: Option<String>,
    start_directory: Option<String>,
    width: Option<u32>,
    height: Option<u32>,
    environment: Vec<(String, String)>,
}

impl NewSession {
    fn validate(input: CreateSessionInput, call: &CallContext) -> Result<Self, ToolError> {
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
        let environment = validate_environment(input.environment.unwrap_or_default())?;
        Ok(Self {
            name,
            window_name: input.window_name,
            start_directory: input.start_directory,
            width: input.width,
            height: input.height,
            environment,
        })
    }

    /// The control-mode command that creates the session and prints its row; `launch` starts
    /// its shell integrated.
    fn command(&self, launch: Option<&[String]>) -> Result<TmuxCommand, ToolError> {
        let mut create = TmuxCommand::new("new-session")
            .flag("-d")
            .flag("-E")
            .flag("-P")
            .opt("-F", row_format(&SESSION_FIELDS))
            .opt("-s", self.name.as_str());
        if let Some(window_name) = &self.window_name {
            create = create.opt("-n", window_name);
        }
        if let Some(dir) = &self.start_directory {
            create = create.format_opt("-c", dir);
        }
        if let Some(width) = self.width {
            create = create.opt("-x", width.to_string());
        }
        if let Some(height) = self.height {
            create = create.opt("-y", height.to_string());
        }
        for (name, value) in &self.environment {
            create = create.opt("-e", format!("{name}={value}"));
        }
        if let Some(argv) = launch {
            create = ops::shell::with_launch(create, argv);
        }
        build(create)
    }

    /// The same command as argv for a `tmux` subprocess.
    fn argv(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "new-session".into(),
            "-d".into(),
            "-E".into(),
            "-P".into(),
            "-F".into(),
            row_format(&SESSION_FIELDS).into(),
            "-s".into(),
            argv_value(self.name.as_str()),
        ];
        if let Some(window_name) = &self.window_name {
            args.extend(["-n".into(), argv_value(window_name)]);
        }
        if let Some(dir) = &self.start_directory {
            let escaped = String::from_utf8_lossy(&escape_format(dir.as_bytes())).into_owned();
            args.extend(["-c".into(), argv_value(&escaped)]);
        }
        if let Some(width) = self.width {
            args.extend(["-x".into(), width.to_string().into()]);
        }
        if let Some(height) = self.height {
            args.extend(["-y".into(), height.to_string().into()]);
        }
        for (name, value) in &self.environment {
            args.extend(["-e".into(), argv_value(&format!("{name}={value}"))]);
        }
        args
    }
}

/// How long `create_session` waits for the engine to reach a server it just started.
const ENGINE_WARMUP: Duration = Duration::from_secs(3);

impl McpServer {
    /// Starts the server with the session (one subprocess), then waits until the engine can
    /// reach it so that the caller's next call works.
    async fn start_server_with_session(
        &self,
        tmux: &TmuxAccess<'_>,
        spec: &NewSession,
    ) -> Result<SessionInfo, ToolError> {
        let settings = self.state().config.engine.settings();
        let stdout = run_starting_server(
            &settings.tmux_bin,
            tmux.server.endpoint(),
            spec.argv(),
            settings.connect_timeout,
        )
        .await
        .map_err(|e| creation_failed(&e.to_string()))?;
        let row = stdout
            .lines()
            .find_map(|line| parse_session_row(line.as_bytes()))
            .ok_or_else(|| creation_failed("tmux did not report the new session"))?;
        let deadline = tokio::time::Instant::now() + ENGINE_WARMUP + settings.reconnect_backoff;
        while tokio::time::Instant::now() < deadline {
            let probe = build(TmuxCommand::new("display-message").flag("-p").arg("ok"))?;
            match tmux.server.run(&tmux.caller, probe).await {
                Err(EngineError::Unavailable { .. }) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                _ => break,
            }
        }
        Ok(row)
    }
}

/// A server started by `create_session` read its configuration only as it started, so its
/// first shell began before its default shell could be asked for: that brand-new shell is
/// replaced by the integrated one. Failing that, the session keeps its plain shell.
async fn integrate_first_shell(tmux: &TmuxAccess<'_>, session: &SessionInfo, enabled: bool) {
    let Some(argv) = tmux.integrated_shell(enabled).await else {
        return;
    };
    let respawn = TmuxCommand::new("respawn-pane")
        .flag("-k")
        .target(&session.id);
    let outcome = match build(ops::shell::with_launch(respawn, &argv)) {
        Ok(command) => tmux.server.run(&tmux.caller, command).await.map(drop),
        Err(error) => {
            tracing::warn!(%error, "cannot build the integrated shell's command");
            return;
        }
    };
    if let Err(error) = outcome {
        tracing::warn!(session = %session.id, %error, "the first shell of a new server stays unintegrated");
    }
}

/// Refuses a new session when the workspace already holds `limit` (0: no limit), counting
/// every session, whoever made it.
async fn check_session_limit(tmux: &TmuxAccess<'_>, limit: u32) -> Result<(), ToolError> {
    if limit == 0 {
        return Ok(());
    }
    let list = build(TmuxCommand::new("list-sessions").opt("-F", row_format(&["session_name"])))?;
    let sessions = match tmux.server.run(&tmux.caller, list).await {
        Ok(rows) => rows
            .iter()
            .filter_map(|row| split_row(row, 1))
            .filter(|name| !is_watch_session(&name[0]))
            .count(),
        Err(error) if server_absent(&error) => 0,
        Err(error) => {
            return Err(engine_error(
                tmux.server_name(),
                error,
                "call list_sessions",
            ));
        }
    };
    if sessions >= limit as usize {
        return Err(ToolError::new(
            ToolErrorKind::Busy,
            format!("your workspace already has {sessions} sessions, its limit ({limit})"),
            "kill a session you no longer need (kill_session), or reuse one",
        ));
    }
    Ok(())
}

/// tmux's refusal of a name that is in use.
fn is_duplicate(message: &str) -> bool {
    message.contains("duplicate session")
}

/// The error for a name already in use: it names the session only when the caller may see
/// it (a session it may not see is not confirmed to exist, nor whose it is).
async fn name_taken(tmux: &TmuxAccess<'_>, name: &str) -> ToolError {
    let visible = list_session_rows(tmux)
        .await
        .is_ok_and(|sessions| sessions.iter().any(|s| s.name == name));
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

/// Whether no server listens on the endpoint's socket (it is missing, or refuses). Unknown
/// for a sandboxed server (its socket is not this process's to probe): then `false`.
async fn nobody_listens(endpoint: &TmuxEndpoint) -> bool {
    let Some(path) = endpoint.local_socket_path() else {
        return false;
    };
    match tokio::net::UnixStream::connect(&path).await {
        Ok(_) => false,
        Err(error) => matches!(
            error.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
        ),
    }
}

/// Whether an engine failure means that no server (or no session) exists to attach to.
fn server_absent(error: &EngineError) -> bool {
    matches!(
        error,
        EngineError::Unavailable {
            cause: ConnectError::NoServer { .. } | ConnectError::NoSessions { .. },
            ..
        }
    )
}

#[tool_router(router = session_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "list_sessions",
        description = "List the tmux sessions you may see, optionally filtered.\n\n\
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
        let matcher = SessionMatcher::new(input.filters.as_ref())?;
        let selection = SESSION_SHAPE.select(input.fields.as_deref(), "list_sessions")?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let sessions = list_session_rows(&tmux)
            .await?
            .iter()
            .filter(|s| matcher.matches(s))
            .map(|s| SESSION_SHAPE.shape(s, &selection))
            .collect::<Result<_, _>>()?;
        Ok(Json(ListSessionsOutput {
            server: tmux.server_name().to_owned(),
            sessions,
        }))
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
        let target = parse_target(&input.target)?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let session = find_session(&tmux, &target).await?;
        let windows = list_window_rows(&tmux, Some(&session.id)).await?;
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
        let spec = NewSession::validate(input, &call)?;
        if let Some(limits) = &tmux.workspace {
            check_session_limit(&tmux, limits.sessions).await?;
        }
        let _claim = tmux
            .owners
            .claim_name(&tmux.scope, spec.name.as_str(), call.sub());
        let integration = self.state().config.tmux.shell_integration;
        let launch = tmux.integrated_shell(integration).await;
        let outcome = tmux
            .server
            .run(&tmux.caller, spec.command(launch.as_deref())?)
            .await;
        let (session, started_server) = match outcome {
            Ok(rows) => (created_session(&rows)?, false),
            Err(error) if server_absent(&error) => {
                let session = self.start_server_with_session(&tmux, &spec).await?;
                integrate_first_shell(&tmux, &session, integration).await;
                (session, true)
            }
            Err(EngineError::Command(message)) if is_duplicate(&message) => {
                return Err(name_taken(&tmux, spec.name.as_str()).await);
            }
            Err(EngineError::Command(message)) => return Err(creation_failed(&message)),
            Err(error) => {
                return Err(engine_error(
                    tmux.server_name(),
                    error,
                    "call list_sessions",
                ));
            }
        };
        tmux.owners.record(&tmux.scope, &session.key(), call.sub());
        Ok(Json(CreateSessionOutput {
            server: tmux.server_name().to_owned(),
            session: SessionInfo {
                created_by_you: true,
                ..session
            },
            started_server,
        }))
    }

    #[tool(
        name = "kill_session",
        description = "Kill a tmux session: every window, pane and program in it ends.\n\n\
            Irreversible; attached humans are detached or moved by tmux. Refused for muxgate's own \
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
        let target = parse_target(&input.target)?;
        let session = session_only(&target, "kill_session")?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let resolved = tmux.resolve(&Target::Session(session)).await?;
        if let Some(me) = &self.state().self_location {
            me.check(&tmux, Kill::Session(resolved.session_id)).await?;
        }
        let kill = build(TmuxCommand::new("kill-session").target(resolved.session_id))?;
        tmux.run(kill, SESSIONS_HINT).await?;
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
        let target = parse_target(&input.target)?;
        let session = session_only(&target, "rename_session")?;
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
        let rename = build(
            TmuxCommand::new("rename-session")
                .target(resolved.session_id)
                .end_of_options()
                .arg(new_name.as_str()),
        )?;
        if let Err(error) = tmux.run(rename, SESSIONS_HINT).await {
            return Err(if is_duplicate(&error.message) {
                name_taken(&tmux, new_name.as_str()).await
            } else {
                error
            });
        }
        Ok(Json(RenameSessionOutput {
            server: tmux.server_name().to_owned(),
            id: resolved.session_id.to_string(),
            old_name: resolved.session_name,
            new_name: new_name.to_string(),
        }))
    }
}

/// The session `new-session -P` reported, or why the chained creation failed.
/// The new session's row, printed by `new-session -P`.
fn created_session(rows: &[Vec<u8>]) -> Result<SessionInfo, ToolError> {
    rows.iter()
        .find_map(|line| parse_session_row(line))
        .ok_or_else(|| creation_failed("tmux did not report the new session"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Principal;

    #[test]
    fn the_default_view_names_fields_of_the_row() {
        crate::mcp::fields::assert_shape_covers::<SessionInfo>(&SESSION_SHAPE);
    }

    fn row(fields: &[&str]) -> Vec<u8> {
        crate::mux::tmux::format::encode_row(fields)
    }

    fn call() -> CallContext {
        CallContext {
            principal: Principal::new("alice", ["mux:admin"]),
            mcp_session: None,
            output: Default::default(),
        }
    }

    #[test]
    fn rows_parse_with_the_name_last() {
        let line = row(&["$2", "3", "1", "100", "200", "@4", "%7", "build|x"]);
        let parsed = parse_session_row(&line).unwrap();
        assert_eq!(parsed.id, "$2");
        assert_eq!(parsed.windows, 3);
        assert_eq!(parsed.created, 100);
        assert_eq!(parsed.active_pane_id, "%7");
        // A separator inside the name cannot shift the other fields.
        assert_eq!(parsed.name, "build|x");
        assert!(!parsed.created_by_you, "only the ownership table can say");
        assert!(parse_session_row(b"$0|1").is_none());
        assert!(
            parse_session_row(&row(&["$0", "1", "0", "x", "1", "@0", "%0", "m"])).is_none(),
            "no creation time, no ownership key"
        );
    }

    #[test]
    fn the_gateways_own_clients_are_not_counted() {
        let rows = [
            row(&["$1", "xterm-256color"]),
            row(&["$1", "muxgate-123"]),
            row(&["$2", "muxgate-9"]),
            row(&["$1", "screen"]),
        ];
        let counts = foreign_clients_by_session(&rows);
        assert_eq!(counts.get("$1"), Some(&2));
        assert_eq!(counts.get("$2"), None);
    }

    #[test]
    fn filters_combine() {
        let session = |name: &str, attached, mine| SessionInfo {
            id: "$0".into(),
            name: name.into(),
            windows: 1,
            attached_clients: attached,
            created: 0,
            last_activity: 0,
            active_window_id: "@0".into(),
            active_pane_id: "%0".into(),
            created_by_you: mine,
        };
        let all = SessionMatcher::new(None).unwrap();
        assert!(all.matches(&session("x", 0, false)));
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
    fn creation_is_one_command_with_every_value_quoted() {
        let input = CreateSessionInput {
            server: None,
            name: "build".into(),
            window_name: Some("edit;".into()),
            start_directory: Some("/".into()),
            width: Some(100),
            height: None,
            environment: Some(BTreeMap::from([("A".into(), "1;".into())])),
        };
        let spec = NewSession::validate(input, &call()).unwrap();
        let line = String::from_utf8(spec.command(None).unwrap().as_bytes().to_vec()).unwrap();
        assert!(line.starts_with("new-session -d -E -P -F "), "{line}");
        assert!(
            line.ends_with(" -s 'build' -n 'edit;' -c '/' -x '100' -e 'A=1;'"),
            "{line}"
        );
        let launch = ["/bin/zsh".to_owned(), "-l".to_owned()];
        let integrated = spec.command(Some(&launch)).unwrap();
        assert!(
            integrated
                .as_bytes()
                .ends_with(b" -e 'A=1;' -- '/bin/zsh' '-l'"),
            "the shell comes after every option"
        );
        assert!(!line.contains("@muxgate"), "no owner tag in tmux: {line}");
        let argv: Vec<String> = spec
            .argv()
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert!(argv.contains(&"edit\\;".to_owned()));
        assert!(argv.contains(&"A=1\\;".to_owned()));
        assert!(!argv.iter().any(|a| a == ";"), "one command: {argv:?}");
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
        let err = |input| NewSession::validate(input, &call()).err().unwrap();
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
                environment: Some(env),
                ..base()
            })
            .message
            .contains("1BAD")
        );

        let mut limited = call();
        limited.principal.acl.sessions.restrict(vec![
            crate::auth::pattern::NamePattern::new("ci-*").unwrap(),
        ]);
        let denied = NewSession::validate(base(), &limited).err().unwrap();
        assert_eq!(denied.kind, ToolErrorKind::Forbidden);
    }
}
