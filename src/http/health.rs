//! `/healthz` (the process answers) and `/readyz` (every tmux server it must drive is reachable).
//!
//! Readiness is asked of a [`ReadinessProbe`], so the HTTP layer does not know how servers are
//! reached; [`EngineReadiness`] asks each server one command through its engine worker (the
//! same connection tool calls use, so "ready" means tools can reach it).
//!
//! Anyone can ask (orchestrators probe without credentials), so the answer says only whether
//! the gateway is ready and how many servers are not: which ones and why (socket paths,
//! tmux's messages) go to the log.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::config::{ServerName, TmuxServer};
use muxgate_tmux::typed::server::TmuxServerOps;
use muxgate_tmux::{Caller, ConnectError, EngineError, TmuxEngine};

/// A boxed, sendable future (what [`ReadinessProbe::check`] returns).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The longest `/readyz` waits for a probe before answering not ready.
pub const READINESS_TIMEOUT: Duration = Duration::from_secs(5);

/// Reports the state of every configured tmux server.
///
/// Implemented for closures returning a future, which suits tests:
/// `Arc::new(|| async { vec![] })`.
pub trait ReadinessProbe: Send + Sync + 'static {
    /// The state of every configured tmux server.
    fn check(&self) -> BoxFuture<'_, Vec<ServerReadiness>>;
}

impl<F, Fut> ReadinessProbe for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Vec<ServerReadiness>> + Send + 'static,
{
    fn check(&self) -> BoxFuture<'_, Vec<ServerReadiness>> {
        Box::pin(self())
    }
}

/// One server's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerReadiness {
    /// The configured server's name.
    pub name: String,
    /// Configured `allow_absent`: an absent server does not make the gateway unready.
    pub allow_absent: bool,
    /// Whether it answers; serialized flat (`status`, and `reason` when unreachable).
    #[serde(flatten)]
    pub status: ServerStatus,
}

/// A server's state, serialized as `status`: `ready`, `absent` or `unreachable`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ServerStatus {
    /// The server answers.
    Ready,
    /// No server is running on the socket, or it runs without a session.
    Absent,
    /// The server could not be asked (permissions, timeout, unexpected error).
    Unreachable {
        /// The error, for the log (the `/readyz` body leaves it out).
        reason: String,
    },
}

impl ServerReadiness {
    /// Whether this server lets the gateway be ready.
    pub fn is_ok(&self) -> bool {
        match self.status {
            ServerStatus::Ready => true,
            ServerStatus::Absent => self.allow_absent,
            ServerStatus::Unreachable { .. } => false,
        }
    }
}

/// The `/readyz` body: no server names, no reasons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Readiness {
    /// Whether every server is ready, or absent with `allow_absent`.
    pub ready: bool,
    /// `ready` or `not_ready`.
    pub status: &'static str,
    /// Servers that keep the gateway from being ready.
    pub servers_not_ready: usize,
}

impl Readiness {
    /// The answer for `servers`; the ones not ready are logged with their reasons.
    pub fn from_servers(servers: &[ServerReadiness]) -> Self {
        let not_ready: Vec<&ServerReadiness> = servers.iter().filter(|s| !s.is_ok()).collect();
        for server in &not_ready {
            tracing::warn!(server = %server.name, state = ?server.status, "tmux server not ready");
        }
        Self {
            ready: not_ready.is_empty(),
            status: if not_ready.is_empty() {
                "ready"
            } else {
                "not_ready"
            },
            servers_not_ready: not_ready.len(),
        }
    }
}

/// `GET /healthz`: 200 with `{"status": "ok"}` whenever the process answers.
pub async fn healthz() -> Response {
    Json(serde_json::json!({ "status": "ok" })).into_response()
}

/// `GET /readyz`: 200 when [`Readiness::ready`], else 503; also 503 when the probe does not
/// answer within [`READINESS_TIMEOUT`].
pub async fn readyz(State(probe): State<Arc<dyn ReadinessProbe>>) -> Response {
    match tokio::time::timeout(READINESS_TIMEOUT, probe.check()).await {
        Ok(servers) => {
            let readiness = Readiness::from_servers(&servers);
            let status = if readiness.ready {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            (status, Json(readiness)).into_response()
        }
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({
                "ready": false,
                "status": "not_ready",
                "error": format!("readiness probe did not answer within {READINESS_TIMEOUT:?}"),
            })),
        )
            .into_response(),
    }
}

/// Readiness from the tmux engine: one `display-message` per configured server.
pub struct EngineReadiness {
    engine: TmuxEngine,
    allow_absent: BTreeMap<String, bool>,
}

impl EngineReadiness {
    /// Probes the servers of `engine`, each with its `allow_absent` from `servers`.
    pub fn new(engine: TmuxEngine, servers: &BTreeMap<ServerName, TmuxServer>) -> Self {
        Self {
            engine,
            allow_absent: servers
                .iter()
                .map(|(name, server)| (name.to_string(), server.allow_absent))
                .collect(),
        }
    }
}

impl ReadinessProbe for EngineReadiness {
    fn check(&self) -> BoxFuture<'_, Vec<ServerReadiness>> {
        Box::pin(async move {
            let caller = Caller::new("muxgate:readiness");
            let probes = self.engine.servers().map(|server| {
                let caller = caller.clone();
                async move {
                    let result = TmuxServerOps::new(server.clone(), caller)
                        .probe(READINESS_TIMEOUT)
                        .await;
                    let status = match result {
                        Ok(()) => ServerStatus::Ready,
                        Err(EngineError::Unavailable {
                            cause: ConnectError::NoServer { .. } | ConnectError::NoSessions { .. },
                            ..
                        }) => ServerStatus::Absent,
                        Err(e) => ServerStatus::Unreachable {
                            reason: e.to_string(),
                        },
                    };
                    ServerReadiness {
                        name: server.name().to_owned(),
                        allow_absent: self
                            .allow_absent
                            .get(server.name())
                            .copied()
                            .unwrap_or(false),
                        status,
                    }
                }
            });
            futures::future::join_all(probes).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(status: ServerStatus, allow_absent: bool) -> ServerReadiness {
        ServerReadiness {
            name: "s".into(),
            allow_absent,
            status,
        }
    }

    #[test]
    fn ready_needs_every_server_up_or_allowed_absent() {
        assert!(Readiness::from_servers(&[]).ready);
        assert!(Readiness::from_servers(&[server(ServerStatus::Ready, false)]).ready);
        assert!(Readiness::from_servers(&[server(ServerStatus::Absent, true)]).ready);
        assert!(!Readiness::from_servers(&[server(ServerStatus::Absent, false)]).ready);
        let unreachable = ServerStatus::Unreachable {
            reason: "permission denied".into(),
        };
        assert!(!Readiness::from_servers(&[server(unreachable, true)]).ready);
        assert!(
            !Readiness::from_servers(&[
                server(ServerStatus::Ready, false),
                server(ServerStatus::Absent, false)
            ])
            .ready
        );
    }

    #[test]
    fn the_body_names_no_server_and_no_reason() {
        let body = serde_json::to_value(Readiness::from_servers(&[
            server(
                ServerStatus::Unreachable {
                    reason: "cannot connect to /run/tmux/secret.sock".into(),
                },
                false,
            ),
            server(ServerStatus::Ready, false),
        ]))
        .unwrap();
        assert_eq!(
            body,
            serde_json::json!({"ready": false, "status": "not_ready", "servers_not_ready": 1})
        );
    }
}
