//! How a tool reaches tmux on a caller's behalf: which configured server, whether the caller
//! may see the target, running commands as that caller, and turning engine failures into
//! errors a model can act on.
//!
//! Every tmux tool goes through a [`TmuxAccess`]: [`McpServer::tmux_access`] picks the server
//! (by the `server` argument, subject to the caller's server ACL), [`TmuxAccess::target`] turns
//! a client's target argument into one tmux is given (a path `SESSION:WINDOW.PANE` resolved to
//! the id it names, in a session the caller may see), and [`TmuxAccess::resolve`] /
//! [`TmuxAccess::authorize`] check a target against the caller's session ACL. Objects a caller
//! may not see are reported exactly like missing ones.
//!
//! Not here: the scope check (tiers) and rate limits, which [`super::call`] applies to every
//! call before a tool runs.

use std::sync::Arc;

use muxgate_mux::error::{BackendError, ErrorKind};
use muxgate_mux::host::{Host, LocalHost, SandboxHost};
use muxgate_mux::lines::excerpt;

use crate::auth::owners::{OwnerScope, SessionKey, SessionOwners};
use crate::auth::{SessionRef, can_see_session, check_server, check_session};
use crate::limits::Limits;
use crate::workspace::{self, WorkspaceError, WorkspaceLimits, WorkspaceName, Workspaces};
use muxgate_tmux::LinkDown;
use muxgate_tmux::client::channel::TmuxChannels;
use muxgate_tmux::follow::command_run::TmuxCommandRuns;
use muxgate_tmux::follow::state_wait::TmuxStateWaits;
use muxgate_tmux::output::watch_session::is_watch_session;
use muxgate_tmux::typed::buffers::TmuxBuffers;
use muxgate_tmux::typed::copy_mode::TmuxCopyMode;
use muxgate_tmux::typed::environment::TmuxEnvironment;
use muxgate_tmux::typed::locate::TmuxLocator;
use muxgate_tmux::typed::options::TmuxOptions;
use muxgate_tmux::typed::pane_lifecycle::TmuxPaneLifecycle;
use muxgate_tmux::typed::pane_reads::TmuxPaneReads;
use muxgate_tmux::typed::pane_state::TmuxPaneStates;
use muxgate_tmux::typed::pipe::TmuxPipes;
use muxgate_tmux::typed::placement::TmuxPlacement;
use muxgate_tmux::typed::server::TmuxServerOps;
use muxgate_tmux::typed::sessions::TmuxSessions;
use muxgate_tmux::typed::since::TmuxSince;
use muxgate_tmux::typed::typing::TmuxTyping;
use muxgate_tmux::typed::windows::{TmuxWindows, Window};
use muxgate_tmux::wire::target::{ClientTarget, Target, TargetError, TargetPath};
use muxgate_tmux::wire::target_path::{PathError, resolve_path};
use muxgate_tmux::{
    Caller, ConnectError, EngineError, PaneId, QueueScope, ServerInstance, SessionId, TmuxServer,
    WindowId,
};

use super::McpServer;
use super::backend::Backend;
use super::budget::CallBudget;
use super::call::CallContext;
use super::error::{ToolError, ToolErrorKind};

/// One call's access to one tmux server.
pub struct TmuxAccess<'a> {
    pub server: TmuxServer,
    pub call: &'a CallContext,
    pub caller: Caller,
    pub limits: &'a Limits,
    /// The limits of the caller's workspace, when `server` is it.
    pub workspace: Option<WorkspaceLimits>,
    /// Who created which session, and this server's part of that table.
    pub owners: &'a SessionOwners,
    pub scope: OwnerScope,
}

/// Where a target lives, as tmux reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub session_id: SessionId,
    pub session_name: String,
    /// The client that created the session through the gateway, if one did.
    pub owner: Option<String>,
    /// The window (for a pane or window target; the active window for a session target).
    pub window_id: WindowId,
    /// The pane (the pane itself, or the active pane of the window / session's active window).
    pub pane_id: PaneId,
}

impl McpServer {
    /// The names of the tmux servers the caller may use, in order: its workspace first (in
    /// workspace mode), then the configured servers it is granted.
    pub(crate) fn visible_servers(&self, call: &CallContext) -> Vec<&str> {
        let state = self.state();
        state
            .workspaces
            .as_ref()
            .map(|_| workspace::SERVER_NAME)
            .into_iter()
            .chain(state.tmux.servers().map(TmuxServer::name))
            .filter(|n| check_server(&call.principal, n).is_ok())
            .collect()
    }

    /// The backend `server` names for this caller, for a tool both backends serve. Without a
    /// name: tmux when the caller may use any tmux server (its workspace included), else Zellij
    /// when it may use a Zellij one. A Zellij server the caller may not use counts as tmux, so
    /// the tmux side reports it exactly like a name that exists nowhere.
    pub(crate) fn backend_of(&self, call: &CallContext, server: Option<&str>) -> Backend {
        let mut zellij = self
            .state()
            .zellij
            .iter()
            .filter(|s| check_server(&call.principal, s.name()).is_ok());
        match server {
            Some(name) if zellij.any(|s| s.name() == name) => Backend::Zellij,
            Some(_) => Backend::Tmux,
            None if self.visible_servers(call).is_empty() && zellij.next().is_some() => {
                Backend::Zellij
            }
            None => Backend::Tmux,
        }
    }

    /// The server `name` (or, when `None`, the only server the caller may use); the caller's
    /// workspace is started if it is not running.
    pub(crate) async fn tmux_access<'a>(
        &'a self,
        call: &'a CallContext,
        name: Option<&str>,
    ) -> Result<TmuxAccess<'a>, ToolError> {
        let state = self.state();
        let visible = self.visible_servers(call);
        let name = match name {
            Some(name) => name,
            None => match visible.as_slice() {
                [only] => only,
                _ => {
                    return Err(ToolError::invalid_arguments(
                        "this gateway drives several tmux servers: pass `server`",
                        format!("use one of: {}", visible.join(", ")),
                    ));
                }
            },
        };
        let unknown = || {
            ToolError::not_found(
                format!("no tmux server named {:?}", excerpt(name)),
                "call list_servers for the names you may use",
            )
        };
        if !visible.contains(&name) {
            if self.backend_of(call, Some(name)) == Backend::Zellij {
                return Err(ToolError::invalid_arguments(
                    format!(
                        "{:?} is a Zellij server, and this tool serves tmux only",
                        excerpt(name)
                    ),
                    "on Zellij use the tools both backends serve or the zellij_* tools \
                     (docs/tools.md says which)",
                ));
            }
            return Err(unknown());
        }
        let (server, workspace, scope) = match &state.workspaces {
            Some(workspaces) if name == workspace::SERVER_NAME => {
                // Boxed: starting a workspace is a large future, and every call's state would
                // otherwise be as large for as long as the call runs.
                let server =
                    Box::pin(workspace_server(workspaces, &call.principal.workspace)).await?;
                let scope = OwnerScope::workspace(&call.principal.workspace);
                (server, Some(*workspaces.limits()), scope)
            }
            _ => {
                let server = state.tmux.server(name).cloned().ok_or_else(unknown)?;
                (server, None, OwnerScope::configured(name))
            }
        };
        Ok(TmuxAccess {
            server,
            call,
            caller: call.caller(&state.limits),
            limits: &state.limits,
            workspace,
            owners: &state.owners,
            scope,
        })
    }
}

/// The caller's workspace server, started if needed.
async fn workspace_server(workspaces: &Workspaces, name: &str) -> Result<TmuxServer, ToolError> {
    let name = WorkspaceName::parse(name).map_err(|e| {
        ToolError::new(
            ToolErrorKind::Forbidden,
            e.to_string(),
            "ask the operator to fix the workspace named for this client",
        )
    })?;
    workspaces.server(&name).await.map_err(|error| match error {
        WorkspaceError::TooMany(_) => ToolError::new(
            ToolErrorKind::Busy,
            "this gateway has no room for another workspace",
            "ask the operator to delete unused workspaces or raise workspaces.max_workspaces",
        ),
        WorkspaceError::LinkDown(down) => link_down_error(&down),
        // The details (paths, sandbox messages) go to the gateway's log, not to clients.
        error => {
            tracing::warn!(workspace = %name, %error, "a workspace could not be started");
            ToolError::new(
                ToolErrorKind::Unavailable,
                "your workspace could not be started",
                "retry in a few seconds; if it persists the operator must check the gateway's log",
            )
        }
    })
}

impl TmuxAccess<'_> {
    /// The configured server name.
    pub fn server_name(&self) -> &str {
        self.server.name()
    }

    /// The machine the server's panes run on: the gateway's own, read directly; another host,
    /// asked over its link; a workspace's sandbox, whose process numbers name other processes
    /// here, so nothing is read of them.
    pub fn host(&self) -> Arc<dyn Host> {
        if self.workspace.is_some() {
            Arc::new(SandboxHost)
        } else if let Some(remote) = self.server.endpoint().remote_host() {
            remote.processes.clone()
        } else {
            Arc::new(LocalHost)
        }
    }

    /// Which server process the call reaches (see [`ServerInstance`]).
    pub fn instance(&self) -> ServerInstance {
        self.server.instance()
    }

    /// An engine error of this server as a [`ToolError`]; not-found errors suggest
    /// `list_hint` (e.g. "call list_panes").
    pub fn error(&self, error: EngineError, list_hint: &str) -> ToolError {
        engine_error(self.server_name(), error, list_hint)
    }

    /// Whether the caller's ACL depends on which session a target is in (if not, a target
    /// can be handed to tmux without resolving it first).
    pub fn acl_needs_sessions(&self) -> bool {
        let acl = &self.call.principal.acl;
        acl.own_sessions || !acl.sessions.is_unrestricted()
    }

    /// The client that created `session` (named `name`) through the gateway, if one did.
    pub fn owner(&self, session: &SessionKey, name: &str) -> Option<String> {
        self.owners.owner(&self.scope, session, name)
    }

    /// Whether the caller created `session` (named `name`) through the gateway.
    pub fn created_by_caller(&self, session: &SessionKey, name: &str) -> bool {
        self.owner(session, name).as_deref() == Some(self.call.sub())
    }

    /// Whether the caller may see `window`: its session's ACL allows it.
    pub(crate) fn can_see_window(&self, window: &Window) -> bool {
        let session = SessionKey {
            id: window.session_id.clone(),
            created: window.session_created,
        };
        self.can_see(&window.session_name, &session)
    }

    /// Whether the caller may see a session (for filtering listings).
    pub fn can_see(&self, session_name: &str, session: &SessionKey) -> bool {
        // The watch session is the gateway's own (its windows are listed in their sessions).
        if is_watch_session(session_name) {
            return false;
        }
        let owner = self.owner(session, session_name);
        can_see_session(
            &self.call.principal,
            self.server_name(),
            SessionRef {
                name: session_name,
                owner: owner.as_deref(),
            },
        )
    }

    /// The server's sessions, acted on as this caller.
    pub fn sessions(&self) -> TmuxSessions {
        TmuxSessions::new(self.server.clone(), self.caller.clone())
    }

    /// The caller's own paste buffers on the server.
    pub fn buffers(&self) -> TmuxBuffers {
        TmuxBuffers::new(
            self.server.clone(),
            self.caller.clone(),
            self.call.sub().to_owned(),
        )
    }

    /// The caller's own `wait-for` channels on the server (on its workspace's server, the
    /// tenant's).
    pub fn channels(&self) -> TmuxChannels {
        TmuxChannels::new(
            self.server.clone(),
            self.caller.clone(),
            self.channel_owner().map(str::to_owned),
        )
    }

    /// Whose `wait-for` channels they are on this server: the caller's on a shared server,
    /// nobody's (the tenant's) in a workspace.
    pub fn channel_owner(&self) -> Option<&str> {
        self.workspace.is_none().then(|| self.call.sub())
    }

    /// Copy mode in the server's panes, acted on as this caller.
    pub fn copy_mode(&self) -> TmuxCopyMode {
        TmuxCopyMode::new(self.server.clone(), self.caller.clone())
    }

    /// The server's options and hooks, acted on as this caller.
    pub fn options(&self) -> TmuxOptions {
        TmuxOptions::new(self.server.clone(), self.caller.clone())
    }

    /// The environments new panes get on the server, acted on as this caller.
    pub fn environment(&self) -> TmuxEnvironment {
        TmuxEnvironment::new(self.server.clone(), self.caller.clone())
    }

    /// The server as a whole, acted on as this caller.
    pub fn server_ops(&self) -> TmuxServerOps {
        TmuxServerOps::new(self.server.clone(), self.caller.clone())
    }

    /// Where panes sit on the server, asked as this caller.
    pub fn placement(&self) -> TmuxPlacement {
        TmuxPlacement::new(self.server.clone(), self.caller.clone())
    }

    /// The server's panes, read for `capture_since` as this caller.
    pub fn since(&self) -> TmuxSince {
        TmuxSince::new(self.server.clone(), self.caller.clone())
    }

    /// The server's windows, acted on as this caller.
    pub fn windows(&self) -> TmuxWindows {
        TmuxWindows::new(self.server.clone(), self.caller.clone())
    }

    /// The server's panes, changed as this caller.
    pub fn pane_lifecycle(&self) -> TmuxPaneLifecycle {
        TmuxPaneLifecycle::new(self.server.clone(), self.caller.clone())
    }

    /// State waits on the server's panes, as this caller.
    pub fn state_waits(&self) -> TmuxStateWaits {
        TmuxStateWaits::new(self.server.clone(), self.caller.clone())
    }

    /// Command runs in the server's panes, as this caller.
    pub fn command_runs(&self) -> TmuxCommandRuns {
        TmuxCommandRuns::new(self.server.clone(), self.caller.clone())
    }

    /// Where targets are on the server, asked as this caller.
    pub fn locator(&self) -> TmuxLocator {
        TmuxLocator::new(self.server.clone(), self.caller.clone())
    }

    /// The server's pane rows, captures and sizes, read as this caller.
    pub fn pane_reads(&self) -> TmuxPaneReads {
        TmuxPaneReads::new(self.server.clone(), self.caller.clone())
    }

    /// Piping the server's panes' output to files, as this caller.
    pub fn pipes(&self) -> TmuxPipes {
        TmuxPipes::new(self.server.clone(), self.caller.clone())
    }

    /// The server's panes' states, read as this caller.
    pub fn pane_states(&self) -> TmuxPaneStates {
        TmuxPaneStates::new(self.server.clone(), self.caller.clone())
    }

    /// Typing lines into the server's panes, as this caller.
    pub fn typing(&self) -> TmuxTyping {
        TmuxTyping::new(self.server.clone(), self.caller.clone())
    }

    /// The argv that starts this server's default shell with shell integration, when
    /// `enabled` and the shell has a script; `None` starts tmux's default shell plainly (also
    /// when tmux cannot say which it is: a new pane is never refused for this).
    pub async fn integrated_shell(&self, enabled: bool) -> Option<Vec<String>> {
        if !enabled {
            return None;
        }
        self.server_ops().integrated_shell().await
    }

    /// Asks tmux where `target` is (one command) and checks the caller may see it.
    pub async fn resolve(&self, target: &Target) -> Result<Resolved, ToolError> {
        // tmux's own "can't find …" is replaced by the same message a hidden target gets, so
        // the two cannot be told apart.
        let located = |e: EngineError| match e {
            EngineError::Quote(e) => {
                ToolError::invalid_arguments(e.to_string(), "remove NUL bytes")
            }
            e => missing_as_not_found(self.error(e, list_hint(target)), target),
        };
        let mut rows = self.locator().locate(target).await.map_err(located)?;
        // tmux answers for the most recently active session holding the window, which can be
        // the watch session: then the window's own session is found among all of them.
        if let Some(first) = rows.first()
            && is_watch_session(&first.session_name)
        {
            if matches!(target, Target::Session(_)) {
                return Err(not_found(target));
            }
            let window = first.window_id.clone();
            rows = self
                .locator()
                .locate_everywhere()
                .await
                .map_err(|e| self.error(e, list_hint(target)))?
                .into_iter()
                .filter(|r| r.window_id == window && !is_watch_session(&r.session_name))
                .collect();
        }
        let row = rows
            .iter()
            .find(|r| match target {
                Target::Pane(pane) => r.pane_id == pane.to_string(),
                Target::Window(_) => r.pane_active,
                Target::Session(_) => r.window_active && r.pane_active,
            })
            .or_else(|| rows.first())
            .ok_or_else(|| not_found(target))?;
        let key = SessionKey {
            id: row.session_id.clone(),
            created: row.session_created.parse().map_err(|_| not_found(target))?,
        };
        let resolved = Resolved {
            session_id: row.session_id.parse().map_err(|_| not_found(target))?,
            owner: self.owner(&key, &row.session_name),
            session_name: row.session_name.clone(),
            window_id: row.window_id.parse().map_err(|_| not_found(target))?,
            pane_id: row.pane_id.parse().map_err(|_| not_found(target))?,
        };
        if let Target::Pane(pane) = target
            && resolved.pane_id != *pane
        {
            return Err(not_found(target));
        }
        check_session(
            &self.call.principal,
            self.server_name(),
            SessionRef {
                name: &resolved.session_name,
                owner: resolved.owner.as_deref(),
            },
        )
        .map_err(|_| not_found(target))?;
        Ok(resolved)
    }

    /// Checks the caller may act on `target`: resolves it only when the caller's ACL depends on
    /// sessions; otherwise tmux itself reports a missing target when the command runs.
    pub async fn authorize(&self, target: &Target) -> Result<(), ToolError> {
        if self.acl_needs_sessions() {
            self.resolve(target).await?;
        }
        Ok(())
    }

    /// The pane a tool acts on for `target` (the pane itself, or the active pane of a window or
    /// session), after checking the caller may see it. Costs no tmux command for a pane id when
    /// the caller's ACL does not depend on sessions (tmux itself then reports a missing pane
    /// when the real command runs); one command otherwise.
    pub async fn pane_of(&self, target: &Target) -> Result<PaneId, ToolError> {
        match target {
            Target::Pane(pane) if !self.acl_needs_sessions() => Ok(*pane),
            _ => Ok(self.resolve(target).await?.pane_id),
        }
    }

    /// [`Self::pane_of`] for a client's target argument (see [`Self::target`]).
    pub async fn pane_named(&self, target: &str) -> Result<PaneId, ToolError> {
        self.pane_of(&self.target(target).await?).await
    }

    /// A client's target argument as tmux is given it: an id or session name as it is, a path
    /// `SESSION:WINDOW[.PANE]` as the id it names (one command listing the session's panes).
    /// A path's session the caller may not see is reported like a missing one, and only then
    /// are its windows or panes named in errors.
    pub async fn target(&self, text: &str) -> Result<Target, ToolError> {
        match ClientTarget::parse(text).map_err(|e| target_error(&e))? {
            ClientTarget::Direct(target) => Ok(target),
            ClientTarget::Path(path) => self.resolve_path(&path).await,
        }
    }

    async fn resolve_path(&self, path: &TargetPath) -> Result<Target, ToolError> {
        let layout = match self.locator().layout(path).await {
            Ok(layout) => layout,
            Err(EngineError::Quote(e)) => {
                return Err(ToolError::invalid_arguments(
                    e.to_string(),
                    "remove NUL bytes",
                ));
            }
            Err(e) => match self.error(e, SESSIONS_HINT) {
                e if e.kind == ToolErrorKind::NotFound => return Err(self.no_session(path).await),
                e => return Err(e),
            },
        };
        let Some(layout) = layout else {
            return Err(self.no_session(path).await);
        };
        let visible = layout.session_created.parse().is_ok_and(|created| {
            let key = SessionKey {
                id: layout.session_id.clone(),
                created,
            };
            self.can_see(&layout.session_name, &key)
        });
        if !visible {
            return Err(self.no_session(path).await);
        }
        resolve_path(path, &layout).map_err(|e| path_error(&e))
    }

    /// The error for a path whose session is missing or hidden (they read the same), naming
    /// the sessions the caller may see.
    async fn no_session(&self, path: &TargetPath) -> ToolError {
        let mut names: Vec<String> = match self.sessions().list().await {
            Ok(sessions) => sessions
                .into_iter()
                .filter(|s| {
                    let key = SessionKey {
                        id: s.id.to_string(),
                        created: s.created,
                    };
                    self.can_see(&s.name, &key)
                })
                .map(|s| format!("{:?} ({})", excerpt(&s.name), s.id))
                .collect(),
            Err(_) => Vec::new(),
        };
        let more = names.len().saturating_sub(MAX_SESSIONS_NAMED);
        names.truncate(MAX_SESSIONS_NAMED);
        let listed = match (names.is_empty(), more) {
            (true, _) => "none".to_owned(),
            (false, 0) => names.join(", "),
            (false, more) => format!("{} and {more} more", names.join(", ")),
        };
        ToolError::not_found(
            format!(
                "target {:?}: no session {} on this server; sessions you may see: {listed}",
                excerpt(&path.to_string()),
                path.session
            ),
            SESSIONS_HINT,
        )
    }

    /// What the caller may still spend in this call (waits, answer text).
    pub fn budget(&self) -> CallBudget<'_> {
        CallBudget::new(self.limits, self.call)
    }
}

/// Sessions named, at most, when a path's session is missing.
const MAX_SESSIONS_NAMED: usize = 12;

/// Checks a client's target argument is one [`TmuxAccess::target`] accepts (no tmux command),
/// for checks made before a server is reached.
pub(crate) fn check_target(text: &str) -> Result<(), ToolError> {
    ClientTarget::parse(text)
        .map(drop)
        .map_err(|e| target_error(&e))
}

/// The target a check made before a server is reached can judge: the one written, for an id or
/// a session name; `None` for a path, whose kind only resolving it tells.
pub(crate) fn checked_target(text: &str) -> Result<Option<Target>, ToolError> {
    match ClientTarget::parse(text).map_err(|e| target_error(&e))? {
        ClientTarget::Direct(target) => Ok(Some(target)),
        ClientTarget::Path(_) => Ok(None),
    }
}

/// A path that names no single object, as an error naming the candidates.
fn path_error(error: &PathError) -> ToolError {
    if error.is_ambiguous() {
        ToolError::invalid_arguments(error.to_string(), "pass one of the ids named above")
    } else {
        ToolError::not_found(
            error.to_string(),
            "pass an id named above, or call list_panes for the session",
        )
    }
}

/// The tool error for a malformed target.
pub(crate) fn target_error(error: &TargetError) -> ToolError {
    ToolError::invalid_arguments(
        error.to_string(),
        "call list_panes (or list_sessions / list_windows) and pass an id from its result",
    )
}

/// A target that must be a pane; `instead` names the tools for a window or a session.
pub(crate) fn pane_only(target: &Target, instead: &str) -> Result<PaneId, ToolError> {
    match target {
        Target::Pane(pane) => Ok(*pane),
        other => Err(ToolError::invalid_arguments(
            format!(
                "this tool needs a pane id (%N), not {} {other}",
                other.kind()
            ),
            format!("call list_panes for pane ids, or use {instead}"),
        )),
    }
}

/// The window a tool that acts on one window was given (`@N` only).
pub(crate) fn window_only(target: &Target, tool: &str) -> Result<WindowId, ToolError> {
    match target {
        Target::Window(window) => Ok(*window),
        other => Err(ToolError::invalid_arguments(
            format!(
                "{tool} takes a window id (@N), not the {} {other}",
                other.kind()
            ),
            "call list_windows and pass the window's id",
        )),
    }
}

/// The list tool that shows valid targets of this kind.
pub(crate) fn list_hint(target: &Target) -> &'static str {
    match target {
        Target::Pane(_) => PANES_HINT,
        Target::Window(_) => WINDOWS_HINT,
        Target::Session(_) => SESSIONS_HINT,
    }
}

/// What to do about a pane that is not there.
pub(crate) const PANES_HINT: &str = "call list_panes to see valid pane ids";
/// What to do about a window that is not there.
pub(crate) const WINDOWS_HINT: &str = "call list_windows to see valid window ids";
/// What to do about a session that is not there.
pub(crate) const SESSIONS_HINT: &str = "call list_sessions to see valid sessions";

/// A not-found error from tmux, reworded as [`not_found`] for `target` (other errors pass).
pub(crate) fn missing_as_not_found(error: ToolError, target: &Target) -> ToolError {
    if error.kind == ToolErrorKind::NotFound {
        not_found(target)
    } else {
        error
    }
}

/// The error for a target that does not exist or that the caller may not see (they read
/// the same).
pub(crate) fn not_found(target: &Target) -> ToolError {
    ToolError::not_found(
        format!("no {} {target} on this server", target.kind()),
        list_hint(target),
    )
}

/// Turns an engine failure into an error a model can act on: its kind as the engine names it,
/// a message naming the server, and what to do next.
pub(crate) fn engine_error(server: &str, error: EngineError, list_hint: &str) -> ToolError {
    let kind = error.kind();
    let (message, suggestion) = match error {
        EngineError::Unavailable {
            cause: ConnectError::LinkDown(down),
            ..
        } => return link_down_error(&down),
        EngineError::Command(message) => command_error(kind, message, list_hint),
        EngineError::Unavailable {
            cause: ConnectError::NoServer { .. } | ConnectError::NoSessions { .. },
            ..
        } => (
            format!("no tmux server is running for {server:?}"),
            "call create_session to start one, or ask the operator to start it",
        ),
        EngineError::Unavailable { cause, .. } => (
            format!("tmux server {server:?} cannot be reached: {cause}"),
            "retry in a few seconds; if it persists the operator must check the server",
        ),
        EngineError::ConnectionLost { .. } => (
            format!(
                "the connection to tmux server {server:?} closed while the command ran; it may or may not have taken effect"
            ),
            "check the target's state (e.g. list_panes) before retrying",
        ),
        EngineError::Timeout { .. } => (
            format!("tmux server {server:?} did not answer in time"),
            "retry shortly; the server may be overloaded",
        ),
        EngineError::QueueFull { scope, .. } => (
            match scope {
                QueueScope::Caller => {
                    format!("you have too many commands queued on tmux server {server:?}")
                }
                QueueScope::Server => format!("tmux server {server:?} is busy"),
            },
            "wait for your pending calls to finish, then retry; batch operations where possible",
        ),
        EngineError::TooManyWatched {
            limit,
            scope: QueueScope::Server,
            ..
        } => (
            format!(
                "tmux server {server:?} already has {limit} sessions being watched by waits, \
                 the most this gateway keeps (one tmux control client each)"
            ),
            "retry when other waits have ended, or wait on a pane of a session already watched",
        ),
        EngineError::TooManyWatched {
            limit,
            scope: QueueScope::Caller,
            ..
        } => (
            format!(
                "your waits already watch {limit} sessions on tmux server {server:?}, your \
                 share (limits.max_watched_sessions)"
            ),
            "let some of your waits end, or wait on a pane of a session you already watch",
        ),
        EngineError::Quote(e) => (
            e.to_string(),
            "remove NUL bytes from the text (send them as the key C-@ if needed)",
        ),
        EngineError::ShuttingDown => (
            "the gateway is shutting down".to_owned(),
            "reconnect in a moment",
        ),
    };
    ToolError::new(kind.into(), message, suggestion)
}

/// A server on a host whose link is down: `unavailable`, naming the host and its last error,
/// with when the link is tried again as `retry_after_ms` (the same words a limit uses).
pub(crate) fn link_down_error(down: &LinkDown) -> ToolError {
    let retry_ms = u64::try_from(down.retry_after.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    ToolError::new(
        ToolErrorKind::Unavailable,
        format!("host {:?} is unreachable: {}", &*down.host, down.reason),
        format!(
            "retry after {retry_ms} ms (retry_after_ms: {retry_ms}); list_servers shows the \
             state of every host's link"
        ),
    )
}

/// The message and suggestion for a command tmux refused, or whose reply the engine declined
/// to read, by the `kind` the engine gave it.
fn command_error(kind: ErrorKind, message: String, list_hint: &str) -> (String, &str) {
    match kind {
        ErrorKind::NotFound => (format!("tmux: {message}"), list_hint),
        // Not tmux's refusal: the gateway did not read a reply larger than the caller's budget.
        ErrorKind::InvalidInput => (
            "tmux's reply was larger than your output budget (`max_output_bytes`) lets the \
             gateway read, so it was not read"
                .to_owned(),
            "ask for less: a later `start` (e.g. -50) or a smaller range, or fewer objects; \
             `max_lines` trims only what was read",
        ),
        _ => (
            format!("tmux refused the command: {message}"),
            "check the arguments against the tool description; list the target's state first",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use muxgate_tmux::client::worker::REPLY_OVER_BUDGET;

    #[test]
    fn missing_targets_suggest_the_list_tool() {
        let err = engine_error(
            "default",
            EngineError::Command("can't find pane: %99".into()),
            PANES_HINT,
        );
        assert_eq!(err.kind, ToolErrorKind::NotFound);
        assert!(err.suggestion.contains("list_panes"));
        let err = engine_error(
            "default",
            EngineError::Unavailable {
                server: "default".into(),
                cause: ConnectError::NoServer { socket: "x".into() },
            },
            "",
        );
        assert_eq!(err.kind, ToolErrorKind::Unavailable);
        assert!(err.suggestion.contains("create_session"));
    }

    /// A reply the gateway would not read is the caller's to shrink, not tmux's refusal.
    #[test]
    fn a_reply_over_the_budget_names_the_budget_and_how_to_ask_for_less() {
        let err = engine_error(
            "default",
            EngineError::Command(REPLY_OVER_BUDGET.into()),
            PANES_HINT,
        );
        assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
        assert!(
            err.message.contains("`max_output_bytes`"),
            "{}",
            err.message
        );
        assert!(!err.message.contains("refused"), "{}", err.message);
        assert!(
            err.suggestion.starts_with("ask for less"),
            "{}",
            err.suggestion
        );
    }

    #[test]
    fn malformed_targets_name_the_input() {
        let err = check_target("main:{last}").unwrap_err();
        assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
        assert!(err.message.contains("main:{last}"), "{}", err.message);
        assert!(check_target("%4").is_ok());
        assert!(check_target("main:1.0").is_ok());
    }
}
