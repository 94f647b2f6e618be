//! The HTTP front: the axum router, the Host/Origin guard, health endpoints, graceful shutdown.
//!
//! Routes:
//! - `/mcp`: MCP over Streamable HTTP, served by rmcp's `StreamableHttpService` with
//!   [`crate::mcp::McpServer`]. 2025-era clients get sessions (`initialize`, `Mcp-Session-Id`,
//!   `DELETE`, SSE resumption); 2026-07-28 clients are served statelessly (`server/discover`).
//! - `/healthz`, `/readyz`: see [`health`].
//!
//! - `/.well-known/oauth-protected-resource[/mcp]`: RFC 9728 metadata (public).
//!
//! Layers on `/mcp`, outermost first: trace → Host/Origin [`guard`] → JWT bearer auth
//! ([`crate::auth::require_bearer`], puts the `Principal` in the request) → per-client request
//! rate ([`crate::limits::limit_requests`]) → MCP session ↔ `sub` binding
//! ([`crate::auth::bind_sessions`]) → body size limit → rmcp.
//!
//! The router is built from explicit [`HttpDeps`], so tests and later layers construct it the
//! same way `muxgate serve` does.

pub mod allowlist;
pub mod guard;
pub mod health;
pub mod shutdown;

use std::future::IntoFuture;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;

use crate::auth::{Authenticator, ProtectedResource, SessionBindings};
use crate::config::HttpConfig;
use crate::limits::Limits;
use crate::mcp::McpServer;
use guard::Allowlist;
use health::ReadinessProbe;

/// Everything the router is built from.
pub struct HttpDeps {
    pub http: HttpConfig,
    /// Prototype MCP handler, cloned for every session or stateless request.
    pub mcp: McpServer,
    pub readiness: Arc<dyn ReadinessProbe>,
    pub security: Security,
    /// Cancelled at shutdown; rmcp's sessions and streams end with it.
    pub shutdown: CancellationToken,
}

/// The per-request security layers' state.
pub struct Security {
    pub authenticator: Arc<Authenticator>,
    pub resource: Arc<ProtectedResource>,
    pub limits: Arc<Limits>,
    pub sessions: Arc<SessionBindings>,
}

/// The gateway's router.
pub fn router(deps: HttpDeps) -> Router {
    let HttpDeps {
        http,
        mcp,
        readiness,
        security,
        shutdown,
    } = deps;
    let allowlist = Arc::new(Allowlist {
        hosts: http.allowed_hosts.clone(),
        origins: http.allowed_origins.clone(),
    });

    let mcp_routes = Router::new()
        .route_service("/mcp", mcp_service(&http, mcp, &shutdown))
        .layer(
            ServiceBuilder::new()
                .layer(TraceLayer::new_for_http())
                .layer(from_fn_with_state(allowlist, guard::enforce))
                .layer(from_fn_with_state(
                    security.authenticator,
                    crate::auth::require_bearer,
                ))
                .layer(from_fn_with_state(
                    security.limits,
                    crate::limits::limit_requests,
                ))
                .layer(from_fn_with_state(
                    security.sessions,
                    crate::auth::bind_sessions,
                ))
                .layer(RequestBodyLimitLayer::new(http.max_body_bytes)),
        );

    // Health endpoints are polled by orchestrators: not traced, so a 503 from /readyz while a
    // server is down does not flood the log.
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .with_state(readiness)
        .merge(mcp_routes)
        .merge(security.resource.router())
}

/// rmcp's Streamable HTTP service for `/mcp`.
fn mcp_service(
    http: &HttpConfig,
    mcp: McpServer,
    shutdown: &CancellationToken,
) -> StreamableHttpService<McpServer, LocalSessionManager> {
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(http.session_idle());
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        // The guard layer checks Host and Origin before authentication; one matcher only.
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(http.max_body_bytes)
        .with_cancellation_token(shutdown.child_token());
    StreamableHttpService::new(move || Ok(mcp.clone()), Arc::new(sessions), config)
}

/// Serves `app` on `listener` until `shutdown` is cancelled, then gives in-flight requests up
/// to `grace` to finish.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: CancellationToken,
    grace: Duration,
) -> io::Result<()> {
    let server = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.clone().cancelled_owned())
        .into_future();
    tokio::select! {
        result = server => result,
        () = async {
            shutdown.cancelled().await;
            tokio::time::sleep(grace).await;
        } => {
            tracing::warn!(?grace, "requests still open after the shutdown grace period; exiting");
            Ok(())
        }
    }
}
