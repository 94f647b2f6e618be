//! Assembling a running gateway from a [`Config`]: the tmux engine, the security layers, the
//! MCP handler and the router — the one place `muxgate serve` and the integration tests share.
//!
//! Not here: listening and signals (see [`crate::cli::serve`] and [`crate::http::serve`]).

use std::sync::Arc;

use axum::Router;
use tokio_util::sync::CancellationToken;

use crate::audit::{AuditError, AuditLog};
use crate::auth::{
    AuthConfigError, Authenticator, MintError, MintRequest, ProtectedResource, SCOPE_ADMIN,
    SCOPE_READ, SCOPE_WRITE, SessionBindings, TokenMinter,
};
use crate::config::Config;
use crate::http::health::EngineReadiness;
use crate::http::{self, HttpDeps, Security};
use crate::limits::Limits;
use crate::mcp::self_guard::SelfLocation;
use crate::mcp::{McpServer, McpState};
use crate::mux::tmux::TmuxEngine;

/// Why a gateway could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("auth: {0}")]
    Auth(#[from] AuthConfigError),
    #[error("audit: {0}")]
    Audit(#[from] AuditError),
}

/// A gateway ready to serve: its router and the parts that need an orderly shutdown.
pub struct Gateway {
    pub app: Router,
    pub engine: TmuxEngine,
    pub audit: Arc<AuditLog>,
    /// Cancelled by [`Gateway::shutdown`], after the HTTP server has drained.
    engine_shutdown: CancellationToken,
}

impl Gateway {
    /// Builds every part. `mcp_url` is the URL clients use (the protected resource's default
    /// identifier); `http_shutdown` ends MCP sessions and streams when cancelled.
    pub fn build(
        config: Arc<Config>,
        mcp_url: &str,
        http_shutdown: CancellationToken,
    ) -> Result<Self, GatewayError> {
        let engine_shutdown = CancellationToken::new();
        let engine = TmuxEngine::start(
            config
                .tmux
                .servers
                .iter()
                .map(|(name, server)| (name.to_string(), server.socket.clone())),
            config.engine.settings(),
            &engine_shutdown,
        );
        let resource = Arc::new(ProtectedResource::new(&config.auth, mcp_url)?);
        let authenticator = Arc::new(Authenticator::new(
            &config.auth,
            &config.clients,
            &resource,
        )?);
        let limits = Arc::new(Limits::new(
            &config.limits,
            config
                .clients
                .iter()
                .map(|(sub, client)| (sub, &client.limits)),
        ));
        let audit = Arc::new(AuditLog::open(&config.audit)?);
        let sessions = Arc::new(SessionBindings::new(
            SESSION_BINDINGS_CAPACITY,
            config.http.session_idle() * 2,
        ));
        let mcp = McpServer::new(McpState {
            config: config.clone(),
            tmux: engine.clone(),
            limits: limits.clone(),
            audit: audit.clone(),
            self_location: SelfLocation::from_env(
                std::env::var("TMUX").ok().as_deref(),
                std::env::var("TMUX_PANE").ok().as_deref(),
            ),
        });
        let app = http::router(HttpDeps {
            http: config.http.clone(),
            mcp,
            readiness: Arc::new(EngineReadiness::new(engine.clone(), &config.tmux.servers)),
            security: Security {
                authenticator,
                resource,
                limits,
                sessions,
            },
            shutdown: http_shutdown,
        });
        Ok(Self {
            app,
            engine,
            audit,
            engine_shutdown,
        })
    }

    /// After the HTTP server has stopped: detaches every tmux control client and flushes the
    /// audit log.
    pub async fn shutdown(self) {
        self.engine_shutdown.cancel();
        if let Err(error) = self.audit.close().await {
            tracing::error!(%error, "flushing the audit log failed");
        }
    }
}

/// Most MCP sessions remembered at once (bindings of session id → `sub`).
const SESSION_BINDINGS_CAPACITY: usize = 100_000;

/// A token for `sub` with every scope, signed with the configured key.
pub fn mint_full_access(
    config: &Config,
    sub: &str,
    ttl: std::time::Duration,
) -> Result<String, MintError> {
    TokenMinter::from_config(&config.auth)?.mint(&MintRequest {
        sub: sub.to_owned(),
        scopes: [SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN]
            .map(str::to_owned)
            .to_vec(),
        ttl,
        servers: None,
        sessions: None,
        own_sessions: false,
    })
}
