//! Tools that act on the gateway's servers as a whole: which exist (tmux and Zellij), their
//! state, and killing a tmux one.

use std::time::{Duration, Instant};

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::session::visible;
use super::support::require_every_session;
use crate::auth::check_server;
use crate::hosts::link::{HostLink, LinkPhase};
use crate::mcp::McpServer;
use crate::mcp::access::engine_error;
use crate::mcp::backend::Backend;
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mcp::self_guard::Kill;
use muxgate_tmux::client::channel::ChannelName;
use muxgate_tmux::{ConnectError, EngineError};

/// How long list_servers waits for any one server.
const PROBE_DEADLINE: Duration = Duration::from_secs(1);

/// How long kill_server waits for the killed server to be gone.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// `list_servers` takes no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListServersInput {}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ListServersOutput {
    /// Servers you may use: tmux, then Zellij, each in name order.
    pub servers: Vec<ServerSummary>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ServerSummary {
    /// The value to pass as `server` to other tools.
    pub name: String,
    pub backend: Backend,
    /// What kind of server it is.
    pub kind: ServerKind,
    /// Whether the operator marked this server as allowed to be absent (not running).
    pub allow_absent: bool,
    /// What the gateway found when it asked the server just now.
    pub reachability: Reachability,
    /// Zellij: the session of targets that name none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_session: Option<String>,
    /// Another machine it runs on: `name`, `link` (up, connecting, down), `rtt_ms`, and while
    /// not up `last_error` and `retry_after_ms`. Its schema says only "an object": every tool
    /// listing carries this schema, and the default listing stays within its budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub host: Option<HostSummary>,
}

/// Its host and the link to it.
#[derive(Debug, Serialize)]
pub(crate) struct HostSummary {
    /// The host's name.
    pub name: String,
    /// Up: calls reach the host; down: they are refused at once until it is back.
    pub link: LinkPhase,
    /// How long asking this server just now took: a round trip of the link and tmux's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    /// While the link is not up: its last error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// While the link is down: when it is tried again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl HostSummary {
    /// `link`'s state now, and the round trip of a probe that answered.
    fn of(link: &HostLink, rtt: Option<Duration>) -> Self {
        let report = link.report();
        Self {
            name: link.name().to_owned(),
            link: report.phase,
            rtt_ms: rtt.map(|rtt| (rtt.as_secs_f64() * 1e5).round() / 100.0),
            last_error: report.last_error,
            retry_after_ms: report
                .retry_after
                .map(|after| u64::try_from(after.as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

/// Whose server it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ServerKind {
    /// Your own workspace: a sandboxed tmux server only you (and your team) use.
    Workspace,
    /// A server the operator configured, shared by every client allowed to use it.
    Configured,
}

/// The state of a server when it was asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Reachability {
    /// It answered.
    Running,
    /// No server runs on the socket (create_session starts one).
    NotRunning,
    /// A server runs but has no session to attach to (create_session creates one).
    NoSessions,
    /// It could not be asked (permissions, timeout, an unexpected tmux error).
    Unreachable,
}

impl Reachability {
    fn of(result: &Result<(), EngineError>) -> Self {
        match result {
            Ok(()) => Self::Running,
            Err(EngineError::Unavailable {
                cause: ConnectError::NoServer { .. },
                ..
            }) => Self::NotRunning,
            Err(EngineError::Unavailable {
                cause: ConnectError::NoSessions { .. },
                ..
            }) => Self::NoSessions,
            Err(_) => Self::Unreachable,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServerInput {
    #[serde(default)]
    pub server: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ServerInfo {
    pub server: String,
    /// Whether a tmux server answered.
    pub alive: bool,
    /// Its state as list_servers reports it.
    pub reachability: Reachability,
    /// tmux version (e.g. `3.3a`); absent when not alive.
    pub version: Option<String>,
    /// When it started, seconds since the Unix epoch; absent when not alive.
    pub started: Option<u64>,
    /// Sessions you may see on it (0 when not alive).
    pub sessions: u32,
    /// What tmux calls your `wait-for` channels here, before their name: a script in a pane
    /// signals `<channel_prefix><channel>` (`tmux wait-for -S …`). Empty in your workspace;
    /// on a shared server it keeps other clients from signalling or consuming your channels.
    pub channel_prefix: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct KillServerOutput {
    pub server: String,
    /// The server exited (a server still running after the kill is an error instead).
    pub killed: bool,
}

impl McpServer {
    /// The Zellij servers the caller may use, each asked for its sessions just now: running
    /// when one is live. Zellij has no server process apart from its sessions, so a socket dir
    /// with none is `no_sessions` rather than `not_running`.
    async fn zellij_server_summaries(&self, call: &CallContext) -> Vec<ServerSummary> {
        let probes = self
            .state()
            .zellij
            .iter()
            .filter(|s| check_server(&call.principal, s.name()).is_ok())
            .map(|server| async move {
                let sessions = async {
                    let z = self.zellij_access(call, Some(server.name())).await.ok()?;
                    let listed = tokio::time::timeout(PROBE_DEADLINE, z.backend.list_sessions());
                    listed.await.ok()?.ok()
                };
                let reachability = match sessions.await {
                    Some(sessions) if sessions.iter().any(|s| !s.exited) => Reachability::Running,
                    Some(_) => Reachability::NoSessions,
                    None => Reachability::Unreachable,
                };
                ServerSummary {
                    name: server.name().to_owned(),
                    backend: Backend::Zellij,
                    kind: ServerKind::Configured,
                    allow_absent: false,
                    reachability,
                    default_session: server.default_session().map(ToString::to_string),
                    host: None,
                }
            });
        futures::future::join_all(probes).await
    }
}

/// What a probe after `kill-server` says about the server that was told to exit.
fn killed(before: Option<&str>, probe: &Result<Option<String>, EngineError>) -> bool {
    match probe {
        Ok(now) => before.is_none_or(|before| now.as_deref() != Some(before)),
        Err(error) => matches!(
            Reachability::of(&Err(error.clone())),
            Reachability::NotRunning | Reachability::NoSessions
        ),
    }
}

#[tool_router(router = server_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "list_servers",
        description = "List your servers: `name` (the `server` of other tools; omit it if only one), `backend`, \
            `kind` (workspace: your own sandbox; configured: shared) and \
            `reachability` (no_sessions: create_session starts it).",
        annotations(
            title = "List servers",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_servers(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(ListServersInput {}): Parameters<ListServersInput>,
    ) -> Result<Json<ListServersOutput>, ToolError> {
        let probes = self.visible_servers(&call).into_iter().map(|name| {
            let call = &call;
            async move {
                let state = self.state();
                let configured = state.config.tmux.servers.get(name);
                let link = state.hosts.link_of(name);
                let started = Instant::now();
                let probe = match self.tmux_access(call, Some(name)).await {
                    Ok(tmux) => Some(tmux.server_ops().probe(PROBE_DEADLINE).await),
                    Err(_) => None,
                };
                let rtt = matches!(probe, Some(Ok(()))).then(|| started.elapsed());
                Ok::<_, ToolError>(ServerSummary {
                    name: name.to_owned(),
                    backend: Backend::Tmux,
                    kind: if configured.is_some() || link.is_some() {
                        ServerKind::Configured
                    } else {
                        ServerKind::Workspace
                    },
                    allow_absent: configured.is_some_and(|c| c.allow_absent),
                    reachability: probe
                        .as_ref()
                        .map_or(Reachability::Unreachable, Reachability::of),
                    default_session: None,
                    host: link.map(|link| HostSummary::of(link, rtt)),
                })
            }
        });
        let mut servers = futures::future::try_join_all(probes).await?;
        servers.extend(self.zellij_server_summaries(&call).await);
        Ok(Json(ListServersOutput { servers }))
    }

    #[tool(
        name = "get_server_info",
        description = "Describe one tmux server: version, start time, sessions, channel_prefix.\n\n\
            Not running: `alive: false`, not an error.",
        annotations(
            title = "Get server info",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_server_info(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ServerInput>,
    ) -> Result<Json<ServerInfo>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let described = tmux.server_ops().describe().await;
        let mut info = ServerInfo {
            server: tmux.server_name().to_owned(),
            alive: false,
            reachability: Reachability::of(&described.as_ref().map(|_| ()).map_err(Clone::clone)),
            version: None,
            started: None,
            sessions: 0,
            channel_prefix: ChannelName::prefix(tmux.channel_owner()),
        };
        let described = match described {
            Ok(described) => described,
            Err(EngineError::Unavailable {
                cause: ConnectError::NoServer { .. } | ConnectError::NoSessions { .. },
                ..
            }) => return Ok(Json(info)),
            Err(error) => return Err(engine_error(tmux.server_name(), error, "call list_servers")),
        };
        if let Some(about) = described.about {
            info.alive = true;
            info.version = Some(about.version);
            info.started = about.started;
        }
        if let Some(sessions) = described.sessions {
            info.sessions = u32::try_from(visible(&tmux, sessions).len()).unwrap_or(u32::MAX);
        }
        Ok(Json(info))
    }

    #[tool(
        name = "kill_server",
        description = "Kill a tmux server: every session and program on it ends.\n\n\
            Irreversible; humans are disconnected. Refused for muxgate's own server or without \
            access to all its sessions. Use kill_session for one.",
        annotations(
            title = "Kill server",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn kill_server(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ServerInput>,
    ) -> Result<Json<KillServerOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        require_every_session(&tmux, "kill_server")?;
        if let Some(me) = &self.state().self_location {
            me.check(&tmux, Kill::Server).await?;
        }
        let server = tmux.server_ops();
        let before = server.identity().await.ok().flatten();
        server
            .kill()
            .await
            .map_err(|error| engine_error(tmux.server_name(), error, "call list_servers"))?;
        // tmux exits asynchronously; answer once it is gone, so that the next call (e.g.
        // create_session) finds no server rather than one that is shutting down.
        let deadline = tokio::time::Instant::now() + EXIT_WAIT;
        loop {
            let probe = server.identity().await;
            if killed(before.as_deref(), &probe) {
                return Ok(Json(KillServerOutput {
                    server: tmux.server_name().to_owned(),
                    killed: true,
                }));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ToolError::new(
                    ToolErrorKind::Timeout,
                    format!(
                        "tmux server {:?} was told to exit but still runs after {EXIT_WAIT:?}",
                        tmux.server_name()
                    ),
                    "call get_server_info; a program in the server may be keeping it busy",
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_killed_when_it_is_gone_or_another_one_answers() {
        let answer = |text: &str| Ok(Some(text.to_owned()));
        let gone = Err(EngineError::Unavailable {
            server: "s".into(),
            cause: ConnectError::NoServer { socket: "x".into() },
        });
        assert!(killed(Some("42 1000"), &gone));
        assert!(killed(Some("42 1000"), &answer("43 1005")), "a new server");
        assert!(!killed(Some("42 1000"), &answer("42 1000")), "still up");
        let slow = Err(EngineError::Timeout {
            server: "s".into(),
            after: Duration::from_secs(1),
        });
        assert!(!killed(Some("42 1000"), &slow), "no answer is not proof");
    }

    #[test]
    fn reachability_follows_the_engine_error() {
        let unavailable = |cause| {
            Err(EngineError::Unavailable {
                server: "s".into(),
                cause,
            })
        };
        assert_eq!(Reachability::of(&Ok(())), Reachability::Running);
        assert_eq!(
            Reachability::of(&unavailable(ConnectError::NoServer { socket: "x".into() })),
            Reachability::NotRunning
        );
        assert_eq!(
            Reachability::of(&unavailable(ConnectError::NoSessions {
                socket: "x".into()
            })),
            Reachability::NoSessions
        );
        assert_eq!(
            Reachability::of(&unavailable(ConnectError::Refused("denied".into()))),
            Reachability::Unreachable
        );
        assert_eq!(
            Reachability::of(&Err(EngineError::Timeout {
                server: "s".into(),
                after: Duration::from_secs(1)
            })),
            Reachability::Unreachable
        );
    }
}
