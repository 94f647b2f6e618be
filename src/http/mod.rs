//! The HTTP front: the axum router, the Host/Origin guard, health endpoints, graceful shutdown.
//!
//! Routes:
//! - `/mcp`: MCP over Streamable HTTP, served by rmcp's `StreamableHttpService` with
//!   [`crate::mcp::McpServer`]. 2025-era clients get sessions (`initialize`, `Mcp-Session-Id`,
//!   `DELETE`, SSE resumption); 2026-07-28 clients are served statelessly (`server/discover`),
//!   their plain calls by the handler directly ([`direct`]).
//! - `/healthz`, `/readyz`: see [`health`].
//! - `/metrics`: Prometheus exposition ([`crate::telemetry::exposition`]), unless
//!   `metrics.enabled` is false.
//! - `/.well-known/oauth-protected-resource[/mcp]`: RFC 9728 metadata (public).
//! - `/approvals`: calls held for a human, and their decisions; `/approvals/secrets`: secret
//!   entry requests whose client could not show their link, and a fresh link to one
//!   ([`approvals`]; bearer authentication and the `mux:approve` scope).
//! - `/secret`: the page behind a secret entry link ([`secret`]; the link's one-time token is
//!   the credential).
//! - `/inbox`: the approver's page for a phone ([`inbox`]; a one-time sign-in link opens a
//!   session cookie), made by `POST /approvals/link` or a notification.
//! - `/view`, `/view/events`: the live view of a pane behind a signed, expiring link
//!   ([`view`]; the link is the credential), unless `view.enabled` is false.
//!
//! Every route is counted by status ([`crate::telemetry::http`]). Layers on `/mcp`, outermost
//! first: trace → in-flight tracking for graceful shutdown ([`shutdown::track_in_flight`]) →
//! Host/Origin [`guard`] → JWT bearer auth ([`crate::auth::require_bearer`], puts the
//! `Principal` in the request) → JSON-RPC body check with the body size limit ([`body`]; marks
//! `initialize` and `tools/call`) → negotiation quirks answered in JSON-RPC ([`negotiate`]: an
//! unknown version header at `initialize` dropped; a missing header, session or `Accept` type
//! refused naming what to send) → per-client request rate ([`crate::limits::limit_requests`]:
//! a refused `tools/call` is answered as its `isError` result, anything else 429) → MCP session
//! ↔ `sub` binding, which also recycles a client's idle sessions ([`crate::auth::bind_sessions`])
//! → DELETE answered 204 ([`session_end`]) → the plain 2026-07-28 requests (`tools/call`,
//! `tools/list`, `server/discover`) answered by the handler without rmcp's transport
//! ([`direct`]) → body size limit → rmcp, with the gateway's
//! session manager ([`sessions`]: counted sessions, closed when evicted, and a request
//! cancelled when its client hangs up, [`hangup`]).
//!
//! [`serve`] runs the router on plain TCP or, with `[http.tls]`, on TLS ([`tls`]), every
//! connection without Nagle's delay ([`tcp`]), on every socket [`listen`] bound (the
//! configured address, and with host-network workspaces the other loopback address too), and
//! carries out the shutdown sequence ([`shutdown`]).
//!
//! The router is built from explicit [`HttpDeps`], so tests and later layers construct it the
//! same way `muxgate serve` does.

pub(crate) mod answer;
pub(crate) mod approvals;
pub(crate) mod body;
pub mod dial_in;
mod direct;
pub(crate) mod guard;
pub(crate) mod hangup;
pub mod health;
pub(crate) mod held_body;
pub(crate) mod inbox;
pub(crate) mod listen;
pub(crate) mod negotiate;
pub(crate) mod secret;
pub(crate) mod session_end;
pub(crate) mod sessions;
pub(crate) mod shutdown;
pub(crate) mod tcp;
pub mod tls;
pub(crate) mod view;

use std::future::{Future, IntoFuture};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::connect_info::Connected;
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use axum::serve::IncomingStream;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rustls::ServerConfig;
use tower::ServiceBuilder;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;

use crate::auth::throttle::PeerAddr;
use crate::auth::{Authenticator, ProtectedResource, SessionBindings};
use crate::config::HttpConfig;
use crate::limits::Limits;
use crate::mcp::McpServer;
use crate::telemetry::Metrics;
use crate::telemetry::exposition::MetricsEndpoint;
use guard::Allowlist;
use health::ReadinessProbe;
use listen::Listeners;
use sessions::McpSessions;
use shutdown::Shutdown;

/// Everything the router is built from. `H` is the MCP handler: [`McpServer`], or in
/// conformance mode the same wrapped with the suite's fixtures.
pub struct HttpDeps<H = McpServer> {
    /// `[http]`: the `Host` and `Origin` allowlists, the body limit and the SSE keep-alive
    /// interval of `/mcp`.
    pub http: HttpConfig,
    /// Prototype MCP handler, cloned for every session or stateless request.
    pub mcp: H,
    /// Asked by `/readyz` for the state of every tmux server.
    pub readiness: Arc<dyn ReadinessProbe>,
    /// The state of the authentication, rate limit and session layers.
    pub security: Security,
    /// The request metrics and `/metrics`.
    pub telemetry: HttpTelemetry,
    /// The shutdown sequence: in-flight tracking, and rmcp's sessions and streams end with it.
    pub shutdown: Shutdown,
    /// The calls held for approval and who may decide them (`/approvals`).
    pub approvals: approvals::ApprovalsApi,
    /// The open secret entry requests (`/secret`).
    pub secrets: secret::SecretApi,
    /// The approvers' inbox (`/inbox`).
    pub inbox: inbox::InboxApi,
    /// The live view (`/view`); `None` when `view.enabled` is false.
    pub view: Option<view::ViewApi>,
    /// Hosts that dial in (`/hosts/connect`); `None` when none does.
    pub dial_in: Option<dial_in::DialInApi>,
}

#[cfg(feature = "conformance")]
impl<H> HttpDeps<H> {
    /// The same dependencies around another MCP handler.
    pub fn map_handler<T>(self, wrap: impl FnOnce(H) -> T) -> HttpDeps<T> {
        HttpDeps {
            http: self.http,
            mcp: wrap(self.mcp),
            readiness: self.readiness,
            security: self.security,
            telemetry: self.telemetry,
            shutdown: self.shutdown,
            approvals: self.approvals,
            secrets: self.secrets,
            inbox: self.inbox,
            view: self.view,
            dial_in: self.dial_in,
        }
    }
}

/// What the router reports to.
pub struct HttpTelemetry {
    /// Where every route's requests are counted, by status.
    pub metrics: Arc<Metrics>,
    /// `/metrics`; `None` when `metrics.enabled` is false.
    pub endpoint: Option<Arc<MetricsEndpoint>>,
}

/// The per-request security layers' state.
pub struct Security {
    /// Verifies the bearer tokens on `/mcp` and `/approvals`.
    pub authenticator: Arc<Authenticator>,
    /// The RFC 9728 metadata served at `/.well-known/oauth-protected-resource`.
    pub resource: Arc<ProtectedResource>,
    /// Per-client limits; the router applies their request rate to `/mcp`.
    pub limits: Arc<Limits>,
    /// Which client (`sub`) each MCP session belongs to, and each session's use.
    pub sessions: Arc<SessionBindings>,
    /// rmcp's sessions, which the binding layer closes when it evicts them.
    pub mcp_sessions: Arc<McpSessions>,
}

/// The gateway's router.
pub fn router<H: ServerHandler + Clone>(deps: HttpDeps<H>) -> Router {
    let HttpDeps {
        http,
        mcp,
        readiness,
        security,
        telemetry,
        shutdown,
        approvals,
        secrets,
        inbox,
        view,
        dial_in,
    } = deps;
    let allowlist = Arc::new(Allowlist {
        hosts: http.allowed_hosts.clone(),
        origins: http.allowed_origins.clone(),
    });

    let mcp_routes = mcp_routes(&http, mcp, &security, &shutdown, &allowlist);
    let approval_routes = approval_routes(approvals, allowlist.clone(), security.authenticator);

    // Health endpoints are polled by orchestrators: not traced, so a 503 from /readyz while a
    // server is down does not flood the log.
    let mut app = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .with_state(readiness)
        .merge(mcp_routes)
        .merge(approval_routes)
        .merge(secret_routes(secrets, allowlist.clone()))
        .merge(inbox_routes(inbox, allowlist.clone()))
        .merge(security.resource.router());
    if let Some(dial_in) = dial_in {
        app = app.merge(dial_in_routes(dial_in, allowlist.clone()));
    }
    if let Some(view) = view {
        app = app.merge(view::routes(view, allowlist));
    }
    if let Some(endpoint) = telemetry.endpoint {
        app = app.merge(metrics_routes(endpoint));
    }
    app.layer(from_fn_with_state(
        telemetry.metrics,
        crate::telemetry::http::count_requests,
    ))
}

/// `/mcp` and its layers, outermost first (the module docs name each).
fn mcp_routes<H: ServerHandler + Clone>(
    http: &HttpConfig,
    mcp: H,
    security: &Security,
    shutdown: &Shutdown,
    allowlist: &Arc<Allowlist>,
) -> Router {
    let direct = direct::Direct::new(
        mcp.clone(),
        http.max_body_bytes,
        http.progress_interval(),
        shutdown.streams_token(),
    );
    Router::new()
        .route_service(
            "/mcp",
            mcp_service(http, mcp, security.mcp_sessions.clone(), shutdown),
        )
        .layer(
            ServiceBuilder::new()
                .layer(TraceLayer::new_for_http().make_span_with(request_span))
                .layer(from_fn_with_state(
                    shutdown.clone(),
                    shutdown::track_in_flight,
                ))
                .layer(from_fn_with_state(allowlist.clone(), guard::enforce))
                .layer(from_fn_with_state(
                    security.authenticator.clone(),
                    crate::auth::require_bearer,
                ))
                .layer(from_fn_with_state(
                    http.max_body_bytes,
                    body::check_jsonrpc_body,
                ))
                .layer(axum::middleware::from_fn(negotiate::answer_quirks))
                .layer(from_fn_with_state(
                    security.limits.clone(),
                    crate::limits::limit_requests,
                ))
                .layer(from_fn_with_state(
                    security.sessions.clone(),
                    crate::auth::bind_sessions,
                ))
                .layer(axum::middleware::from_fn(session_end::no_content_on_delete))
                .layer(from_fn_with_state(direct, direct::serve))
                .layer(RequestBodyLimitLayer::new(http.max_body_bytes)),
        )
}

/// `/approvals`, behind the Host/Origin guard and bearer authentication (the handlers check
/// the approver's scope).
fn approval_routes(
    approvals: approvals::ApprovalsApi,
    allowlist: Arc<Allowlist>,
    authenticator: Arc<Authenticator>,
) -> Router {
    Router::new()
        .route("/approvals", get(approvals::list))
        .route("/approvals/{id}", post(approvals::decide))
        .route("/approvals/secrets", get(approvals::secrets))
        .route("/approvals/secrets/{id}", post(approvals::secret_link))
        .route("/approvals/link", post(approvals::inbox_link))
        .with_state(approvals)
        .layer(
            ServiceBuilder::new()
                .layer(TraceLayer::new_for_http().make_span_with(request_span))
                .layer(from_fn_with_state(allowlist, guard::enforce))
                .layer(from_fn_with_state(
                    authenticator,
                    crate::auth::require_bearer,
                ))
                // Enforced by the handler's body extractor, so that a body over it is refused
                // in JSON like every other refusal of this route.
                .layer(DefaultBodyLimit::max(APPROVAL_BODY_LIMIT)),
        )
}

/// `/metrics`, for scrapers: no Host check (they use the pod or container address).
fn metrics_routes(endpoint: Arc<MetricsEndpoint>) -> Router {
    Router::new()
        .route("/metrics", get(crate::telemetry::exposition::serve))
        .with_state(endpoint)
}

/// `/hosts/connect`, behind the Host/Origin guard; the handler authenticates the host.
fn dial_in_routes(dial_in: dial_in::DialInApi, allowlist: Arc<Allowlist>) -> Router {
    Router::new()
        .route("/hosts/connect", get(dial_in::connect))
        .with_state(dial_in)
        .layer(
            ServiceBuilder::new()
                .layer(TraceLayer::new_for_http().make_span_with(request_span))
                .layer(from_fn_with_state(allowlist, guard::enforce)),
        )
}

/// Largest body of an inbox form (a denial's reason or an answer, and the ids beside them).
const INBOX_BODY_LIMIT: usize = 16 * 1024;

/// `/inbox`, behind the Host/Origin guard; its handlers check the session cookie.
fn inbox_routes(inbox: inbox::InboxApi, allowlist: Arc<Allowlist>) -> Router {
    Router::new()
        .route("/inbox", get(inbox::show))
        .route(
            "/inbox/signin",
            get(inbox::sign_in_page).post(inbox::sign_in),
        )
        .route("/inbox/signout", post(inbox::sign_out))
        .route("/inbox/decide", post(inbox::decide))
        .route("/inbox/answer", post(inbox::answer))
        .route("/inbox/secret", post(inbox::secret))
        .with_state(inbox)
        .layer(
            ServiceBuilder::new()
                .layer(TraceLayer::new_for_http().make_span_with(request_span))
                .layer(from_fn_with_state(allowlist, guard::enforce))
                .layer(RequestBodyLimitLayer::new(INBOX_BODY_LIMIT)),
        )
}

/// Largest body of a secret form (the token and a secret of at most
/// [`crate::secret_entry::page::MAX_SECRET_BYTES`], form-encoded: up to three bytes each).
const SECRET_BODY_LIMIT: usize = 16 * 1024;

/// `/secret`, behind the Host/Origin guard: a browser on another site can neither read the
/// form nor post to it.
fn secret_routes(secrets: secret::SecretApi, allowlist: Arc<Allowlist>) -> Router {
    Router::new()
        .route("/secret", get(secret::show).post(secret::submit))
        .with_state(secrets)
        .layer(
            ServiceBuilder::new()
                .layer(TraceLayer::new_for_http().make_span_with(request_span))
                .layer(from_fn_with_state(allowlist, guard::enforce))
                .layer(RequestBodyLimitLayer::new(SECRET_BODY_LIMIT)),
        )
}

/// rmcp's Streamable HTTP service for `/mcp`.
fn mcp_service<H: ServerHandler + Clone>(
    http: &HttpConfig,
    mcp: H,
    sessions: Arc<McpSessions>,
    shutdown: &Shutdown,
) -> StreamableHttpService<H, McpSessions> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        // The guard layer checks Host and Origin before authentication; one matcher only.
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(http.max_body_bytes)
        // An answer still being worked on (a wait) sends an SSE comment this often, so that
        // clients with short read timeouts and proxies keep the stream open even when the
        // client asked for no progress.
        .with_sse_keep_alive(Some(http.progress_interval()))
        .with_cancellation_token(shutdown.streams_token());
    StreamableHttpService::new(move || Ok(mcp.clone()), sessions, config)
}

impl Connected<IncomingStream<'_, tcp::NoDelayListener>> for PeerAddr {
    fn connect_info(stream: IncomingStream<'_, tcp::NoDelayListener>) -> Self {
        Self(*stream.remote_addr())
    }
}

impl Connected<IncomingStream<'_, tls::TlsListener>> for PeerAddr {
    fn connect_info(stream: IncomingStream<'_, tls::TlsListener>) -> Self {
        Self(*stream.remote_addr())
    }
}

/// The debug span of an HTTP request: method and path, never the query string (a client may
/// put a token or other secrets there; they are refused, not logged).
fn request_span(request: &http::Request<axum::body::Body>) -> tracing::Span {
    tracing::debug_span!(
        "request",
        method = %request.method(),
        path = request.uri().path(),
        version = ?request.version(),
    )
}

/// Largest body of a decision (`{"decision", "reason"}`).
pub const APPROVAL_BODY_LIMIT: usize = 4096;

/// How long connections may take to close once MCP streams have been closed.
const STREAMS_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// Serves `app` on `listeners` (over TLS with `tls`) until shutdown begins, then runs the
/// shutdown sequence: in-flight requests get up to `grace`, then MCP streams are closed and
/// the remaining connections get [`STREAMS_CLOSE_TIMEOUT`].
pub async fn serve(
    listeners: Listeners,
    app: Router,
    tls: Option<Arc<ServerConfig>>,
    shutdown: &Shutdown,
    grace: Duration,
) -> io::Result<()> {
    let stop_accepting = shutdown.begin().clone().cancelled_owned();
    let mut server: Pin<Box<dyn Future<Output = io::Result<()>> + Send>> = match tls {
        None => Box::pin(
            axum::serve(
                tcp::NoDelayListener::new(listeners),
                app.into_make_service_with_connect_info::<PeerAddr>(),
            )
            .with_graceful_shutdown(stop_accepting)
            .into_future(),
        ),
        Some(config) => Box::pin(
            axum::serve(
                tls::TlsListener::new(listeners, config)?,
                app.into_make_service_with_connect_info::<PeerAddr>(),
            )
            .with_graceful_shutdown(stop_accepting)
            .into_future(),
        ),
    };
    tokio::select! {
        result = &mut server => return result,
        () = shutdown.begin().cancelled() => {}
    }
    tokio::select! {
        result = &mut server => return result,
        _ = shutdown.drain(grace) => {}
    }
    match tokio::time::timeout(STREAMS_CLOSE_TIMEOUT, server).await {
        Ok(result) => result,
        Err(_) => {
            tracing::warn!("connections still open after MCP streams were closed; exiting");
            Ok(())
        }
    }
}
