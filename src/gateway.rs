//! Assembling a running gateway from a [`Config`]: the tmux engine, the security layers, the
//! metrics, the MCP handler and the router — the one place `muxgate serve` and the integration
//! tests share — and running it until it has shut down cleanly ([`Gateway::serve`]).
//!
//! Not here: binding the listener and installing signal handlers (the `serve` command of [`crate::cli`]);
//! the HTTP serving and shutdown sequence itself ([`crate::http::serve`]).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio_util::sync::CancellationToken;

use crate::approvals::{ApprovalDesk, ApprovalPolicy};
use crate::audit::{AuditError, AuditLog};
use crate::auth::owners::SessionOwners;
use crate::auth::{
    AuthConfigError, Authenticator, MintError, MintRequest, ProtectedResource, SCOPE_ADMIN,
    SCOPE_READ, SCOPE_WRITE, SessionBindings, TokenMinter,
};
use crate::config::{Config, HttpConfig};
use crate::fleet::registry::Fleet;
use crate::hosts::{HostError, Hosts};
use crate::http::health::EngineReadiness;
use crate::http::listen::Listeners;
use crate::http::sessions::McpSessions;
use crate::http::shutdown::Shutdown;
use crate::http::tls::{self, CertStore, TlsError};
use crate::http::{self, HttpDeps, HttpTelemetry, Security};
use crate::limits::Limits;
use crate::mcp::self_guard::SelfLocation;
use crate::mcp::{McpServer, McpState};
use crate::recordings::Recorder;
use crate::secret_entry::{PaneDestination, SecretDesk};
use crate::telemetry::exposition::MetricsEndpoint;
use crate::telemetry::{Metrics, MetricsTokenError};
use crate::view::link::ViewKey;
use crate::workspace::{self, WorkspaceError, WorkspaceHost, Workspaces};
use muxgate_tmux::TmuxEngine;
use muxgate_zellij::servers::ZellijServers;

/// Why a gateway could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The `[auth]` section cannot be used.
    #[error("auth: {0}")]
    Auth(#[from] AuthConfigError),
    /// The audit log cannot be opened.
    #[error("audit: {0}")]
    Audit(#[from] AuditError),
    /// The certificate or key of `[http.tls]` cannot be loaded.
    #[error("http.tls: {0}")]
    Tls(#[from] TlsError),
    /// The metrics endpoint's token cannot be read.
    #[error(transparent)]
    MetricsToken(#[from] MetricsTokenError),
    /// The state directory cannot be used.
    #[error("state: {0}")]
    State(String),
    /// Workspace mode cannot start.
    #[error("workspaces: {0}")]
    Workspace(#[from] WorkspaceError),
    /// The recordings directory cannot be used.
    #[error("{0}")]
    Recordings(String),
    /// The `[approvals]` section is invalid.
    #[error("approvals: {0}")]
    Approvals(String),
    /// A `[hosts.<name>]` entry cannot be used.
    #[error(transparent)]
    Host(#[from] HostError),
    /// A shipped agent manifest does not read (a build defect).
    #[error("{0}")]
    AgentKinds(String),
    /// A `[notify]` target cannot be used (its key file, say).
    #[error("{0}")]
    Notify(String),
}

/// What a gateway is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Authenticated, muxgate's own catalog: what `muxgate serve` runs.
    Production,
    /// Authentication off and the conformance suite's fixtures added (see
    /// [`crate::conformance`]); test builds only.
    #[cfg(feature = "conformance")]
    Conformance,
}

/// A gateway ready to serve: its router and the parts that need an orderly shutdown.
pub struct Gateway {
    /// The HTTP router: MCP, health, metrics and the human-facing pages.
    pub app: Router,
    /// The tmux servers' engine, closed on shutdown.
    pub engine: TmuxEngine,
    /// The audit log, flushed on shutdown.
    pub audit: Arc<AuditLog>,
    /// The metrics `/metrics` exposes.
    pub metrics: Arc<Metrics>,
    config: Arc<Config>,
    shutdown: Shutdown,
    /// The served certificate, with `[http.tls]`.
    tls: Option<Arc<CertStore>>,
    /// Cancelled by [`Gateway::shutdown`], after the HTTP server has drained.
    engine_shutdown: CancellationToken,
    /// The other machines' links, closed after the engine has detached from their servers.
    hosts: Arc<Hosts>,
}

/// How long shutdown waits for the tmux control clients to detach.
const DETACH_TIMEOUT: Duration = Duration::from_secs(5);

impl Gateway {
    /// Builds every part. `mcp_url` is the URL clients use (the protected resource's default
    /// identifier); cancelling `shutdown` starts the shutdown sequence (see
    /// [`crate::http::shutdown`]).
    pub async fn build(
        config: Arc<Config>,
        mcp_url: &str,
        shutdown: CancellationToken,
    ) -> Result<Self, GatewayError> {
        Self::build_in(Mode::Production, config, mcp_url, shutdown).await
    }

    /// [`Gateway::build`] in a chosen [`Mode`]. In workspace mode it first proves that
    /// sandboxes start on this host.
    pub async fn build_in(
        mode: Mode,
        config: Arc<Config>,
        mcp_url: &str,
        shutdown: CancellationToken,
    ) -> Result<Self, GatewayError> {
        let shutdown = Shutdown::new(shutdown);
        let engine_shutdown = CancellationToken::new();
        let hosts = Arc::new(Hosts::start(&config.hosts)?);
        let engine = start_engine(&config, &hosts, &engine_shutdown);
        warn_about_setup(&config);
        let stores = Stores::open(&config, &hosts, &shutdown, &engine_shutdown).await?;
        let desks = Desks::new(&config, shutdown.begin().child_token())?;
        hosts.tell_link_edges(&desks.notifier);
        let mut metrics = Metrics::new();
        let resource = Arc::new(ProtectedResource::new(&config.auth, mcp_url)?);
        let authenticator = authenticator(mode, &config, &resource, &metrics, &stores)?;
        let limits = limits(&config, &metrics);
        // Opened after the approval and auth checks: a gateway refused for those leaves no
        // audit file behind.
        let audit = Arc::new(AuditLog::open(&config.audit, stores.state_dir.as_deref())?);
        metrics.collect_approvals(desks.approvals.clone());
        metrics.collect_secrets(desks.secrets.clone());
        metrics.collect_notifications(desks.notifier.clone());
        metrics.collect_hosts(hosts.clone());
        metrics.collect_from(
            engine.clone(),
            stores.workspaces.clone(),
            audit.clone(),
            limits.clone(),
        );
        let (sessions, mcp_sessions) = sessions(&config, &metrics, &shutdown);
        let metrics = Arc::new(metrics);
        let security = Security {
            authenticator,
            resource,
            limits,
            sessions,
            mcp_sessions,
        };
        let tls = match &config.http.tls {
            Some(tls) => Some(Arc::new(CertStore::load(tls)?)),
            None => None,
        };
        let parts = Parts {
            config: config.clone(),
            engine: engine.clone(),
            hosts: hosts.clone(),
            audit: audit.clone(),
            stores,
            desks,
            metrics: metrics.clone(),
            shutdown: shutdown.clone(),
        };
        let deps = parts.http_deps(security)?;
        let app = match mode {
            Mode::Production => http::router(deps),
            #[cfg(feature = "conformance")]
            Mode::Conformance => {
                http::router(deps.map_handler(crate::conformance::ConformanceServer::new))
            }
        };
        Ok(Self {
            app,
            engine,
            audit,
            metrics,
            config,
            shutdown,
            tls,
            engine_shutdown,
            hosts,
        })
    }

    /// Serves on `listeners` (HTTPS with `[http.tls]`) until the shutdown token is cancelled,
    /// then runs the whole shutdown sequence: in-flight calls finish within the grace period,
    /// MCP streams close, tmux control clients detach and the audit log is flushed.
    pub async fn serve(self, listeners: impl Into<Listeners>) -> io::Result<()> {
        let tls = match &self.tls {
            Some(store) => {
                let config = store.server_config().map_err(io::Error::other)?;
                tls::watch(store.clone(), self.shutdown.begin().clone())?;
                Some(config)
            }
            None => None,
        };
        let served = http::serve(
            listeners.into(),
            self.app.clone(),
            tls,
            &self.shutdown,
            self.config.http.shutdown_grace(),
        )
        .await;
        self.shutdown().await;
        served
    }

    /// After the HTTP server has stopped: detaches every tmux control client (waiting up to
    /// [`DETACH_TIMEOUT`] for them to close) and flushes the audit log.
    pub async fn shutdown(self) {
        self.engine_shutdown.cancel();
        let detached = tokio::time::timeout(DETACH_TIMEOUT, async {
            while !self.engine.detached() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        if detached.is_err() {
            tracing::warn!("tmux control clients still open after {DETACH_TIMEOUT:?}");
        }
        self.hosts.close();
        if let Err(error) = self.audit.close().await {
            tracing::error!(%error, "flushing the audit log failed");
        }
    }
}

/// What the gateway keeps on disk or for its whole life, opened once before anything serves.
struct Stores {
    state_dir: Option<PathBuf>,
    owners: Arc<SessionOwners>,
    workspaces: Option<Workspaces>,
    view_key: ViewKey,
    recorder: Recorder,
    fleet: Fleet,
}

impl Stores {
    async fn open(
        config: &Config,
        hosts: &Hosts,
        shutdown: &Shutdown,
        engine_shutdown: &CancellationToken,
    ) -> Result<Self, GatewayError> {
        let state_dir = open_state_dir(config)?;
        let owners = Arc::new(match &state_dir {
            Some(dir) => SessionOwners::open(&dir.join(OWNERS_FILE))
                .map_err(|e| GatewayError::State(e.to_string()))?,
            None => SessionOwners::in_memory(),
        });
        tokio::spawn(Arc::clone(&owners).retry_failed_saves(engine_shutdown.clone()));
        let workspaces = match (&state_dir, config.workspaces.enabled) {
            (Some(dir), true) => Some(
                Workspaces::open(
                    &config.workspaces,
                    dir,
                    &config.secret_paths(),
                    Arc::new(config.engine.settings()),
                    engine_shutdown.clone(),
                    workspace_hosts(config, hosts),
                )
                .await?,
            ),
            _ => None,
        };
        let recorder = match config
            .recordings
            .settings(state_dir.as_deref())
            .map_err(GatewayError::Recordings)?
        {
            Some(settings) => Recorder::new(settings, shutdown.begin().child_token()),
            None => Recorder::disabled(),
        };
        let fleet = match &state_dir {
            Some(dir) => Fleet::open(&dir.join(FLEET_FILE))
                .map_err(|e| GatewayError::State(e.to_string()))?,
            None => Fleet::default(),
        };
        Ok(Self {
            view_key: view_key(state_dir.as_deref())?,
            state_dir,
            owners,
            fleet,
            workspaces,
            recorder,
        })
    }
}

/// The hosts `workspaces.hosts` names, as workspaces reach them.
fn workspace_hosts(config: &Config, hosts: &Hosts) -> BTreeMap<String, WorkspaceHost> {
    config
        .workspaces
        .hosts
        .iter()
        .filter_map(|place| {
            let host = config.hosts.get(place)?;
            let found = WorkspaceHost {
                link: hosts.remote(place)?.clone(),
                muxgate: host.muxgate.clone(),
                config: host.workspaces_config.clone()?,
            };
            Some((place.clone(), found))
        })
        .collect()
}

/// The inbox's routes' state: the approval desks, and the MCP handler its screens and answers
/// go through.
fn inbox_api(
    approvals: http::approvals::ApprovalsApi,
    http: Arc<HttpConfig>,
    mcp: McpServer,
) -> http::inbox::InboxApi {
    http::inbox::InboxApi {
        sign_ins: approvals.sign_ins,
        desk: approvals.desk,
        policy: approvals.policy,
        secrets: approvals.secrets,
        http,
        mcp,
    }
}

/// Where humans stay in charge: the approval rules and the desks where approvals and secrets
/// wait for a person.
struct Desks {
    policy: Arc<ApprovalPolicy>,
    approvals: ApprovalDesk,
    secrets: SecretDesk<PaneDestination>,
    /// Who is told when a call or secret waits for a person (`[notify]`).
    notifier: crate::notify::Notifier,
    /// The inbox's sign-in links and sessions.
    sign_ins: Arc<crate::inbox::signin::SignIns>,
}

impl Desks {
    fn new(config: &Config, shutdown: CancellationToken) -> Result<Self, GatewayError> {
        let sign_ins = Arc::new(crate::inbox::signin::SignIns::new(&config.inbox));
        let inbox_links = config
            .http
            .public_url
            .as_ref()
            .map(|base| crate::notify::InboxLinks {
                sign_ins: sign_ins.clone(),
                base: base.join(""),
            });
        Ok(Self {
            policy: Arc::new(approval_policy(config)?),
            approvals: ApprovalDesk::default(),
            secrets: SecretDesk::default(),
            notifier: crate::notify::Notifier::start(&config.notify, inbox_links, shutdown)
                .map_err(GatewayError::Notify)?,
            sign_ins,
        })
    }
}

/// Every part the handlers share, made once; [`Parts::http_deps`] hands each handler its share.
struct Parts {
    config: Arc<Config>,
    engine: TmuxEngine,
    hosts: Arc<Hosts>,
    audit: Arc<AuditLog>,
    stores: Stores,
    desks: Desks,
    metrics: Arc<Metrics>,
    shutdown: Shutdown,
}

impl Parts {
    fn http_deps(self, security: Security) -> Result<HttpDeps, GatewayError> {
        let config = self.config.clone();
        let endpoint = if config.metrics.enabled {
            let token = config.metrics.bearer_token()?;
            Some(Arc::new(MetricsEndpoint::new(
                self.metrics.clone(),
                token.as_ref(),
            )))
        } else {
            None
        };
        let http_config = Arc::new(config.http.clone());
        let approvals = http::approvals::ApprovalsApi {
            desk: self.desks.approvals.clone(),
            policy: self.desks.policy.clone(),
            secrets: self.desks.secrets.clone(),
            http: http_config.clone(),
            sign_ins: self.desks.sign_ins.clone(),
        };
        let secrets = http::secret::SecretApi {
            desk: self.desks.secrets.clone(),
            audit: self.audit.clone(),
        };
        let view = config.view.enabled.then(|| http::view::ViewApi {
            key: self.stores.view_key.clone(),
            tmux: self.engine.clone(),
            workspaces: self.stores.workspaces.clone(),
            stop: self.shutdown.streams_token(),
            viewers: crate::view::viewers::Viewers::new(
                config.view.max_viewers as usize,
                config.view.max_viewers_per_link as usize,
            ),
        });
        let dial_in = (!self.hosts.dial_ins().is_empty()).then(|| http::dial_in::DialInApi {
            authenticator: security.authenticator.clone(),
            hosts: self.hosts.dial_ins().clone(),
        });
        let readiness = Arc::new(EngineReadiness::new(
            self.engine.clone(),
            &config.tmux.servers,
        ));
        let telemetry = HttpTelemetry {
            metrics: self.metrics.clone(),
            endpoint,
        };
        let shutdown = self.shutdown.clone();
        let mcp = self.mcp_server(&security.limits)?;
        // An earlier run's agents that still run are followed again, without holding the start.
        tokio::spawn({
            let mcp = mcp.clone();
            async move { mcp.follow_recorded().await }
        });
        Ok(HttpDeps {
            http: config.http.clone(),
            readiness,
            telemetry,
            shutdown,
            inbox: inbox_api(approvals.clone(), http_config, mcp.clone()),
            approvals,
            secrets,
            view,
            dial_in,
            mcp,
            security,
        })
    }

    fn mcp_server(self, limits: &Arc<Limits>) -> Result<McpServer, GatewayError> {
        let config = self.config;
        let agent_kinds = crate::mux::agent_kind::AgentKinds::for_programs(&config.agents)
            .map_err(|e| GatewayError::AgentKinds(e.to_string()))?;
        let notifier = self.desks.notifier;
        Ok(McpServer::new(McpState {
            zellij: ZellijServers::new(config.zellij.servers.iter().map(|(name, server)| {
                (
                    name.to_string(),
                    server.session.clone(),
                    config.zellij.spec(server),
                )
            })),
            tmux: self.engine,
            hosts: self.hosts,
            limits: limits.clone(),
            audit: self.audit,
            self_location: SelfLocation::from_env(
                std::env::var("TMUX").ok().as_deref(),
                std::env::var("TMUX_PANE").ok().as_deref(),
            ),
            metrics: self.metrics,
            owners: self.stores.owners,
            workspaces: self.stores.workspaces,
            shutdown: self.shutdown.begin().child_token(),
            agent_reports: Default::default(),
            agent_kinds,
            agent_sightings: Default::default(),
            notifier,
            approval_policy: self.desks.policy,
            approvals: self.desks.approvals,
            secrets: self.desks.secrets,
            recorder: self.stores.recorder,
            fleet: self.stores.fleet,
            answers: Default::default(),
            prompts: Default::default(),
            fleet_feed: Default::default(),
            agent_reads: Default::default(),
            agent_watches: Default::default(),
            held_targets: Default::default(),
            view_key: self.stores.view_key,
            config,
        }))
    }
}

/// The engine of the configured servers: this machine's and the hosts'.
fn start_engine(config: &Config, hosts: &Hosts, shutdown: &CancellationToken) -> TmuxEngine {
    let local = config
        .tmux
        .servers
        .iter()
        .map(|(name, server)| (name.to_string(), server.socket.clone().into()));
    TmuxEngine::start(
        local.chain(hosts.endpoints()),
        config.engine.settings(),
        shutdown,
    )
}

/// The request limits: the defaults and each configured client's own.
fn limits(config: &Config, metrics: &Metrics) -> Arc<Limits> {
    let per_client = config
        .clients
        .iter()
        .map(|(sub, client)| (sub, &client.limits));
    Arc::new(Limits::new(&config.limits, per_client).with_hook(metrics.limit_hook()))
}

/// The session table and rmcp's sessions, which it closes when it evicts them; their idle
/// sessions are recycled until shutdown begins.
fn sessions(
    config: &Config,
    metrics: &Metrics,
    shutdown: &Shutdown,
) -> (Arc<SessionBindings>, Arc<McpSessions>) {
    let mcp_sessions = Arc::new(McpSessions::new(metrics.sessions_gauge()));
    let bindings = Arc::new(
        SessionBindings::new(SESSION_BINDINGS_CAPACITY, config.http.session_idle())
            .with_max_per_sub(config.http.max_sessions_per_client)
            .with_recycling(mcp_sessions.clone(), metrics.eviction_hook()),
    );
    tokio::spawn(http::sessions::recycle(
        bindings.clone(),
        mcp_sessions.clone(),
        shutdown.begin().child_token(),
    ));
    (bindings, mcp_sessions)
}

/// Warns of a setup that works but exposes something: a tmux server shared with humans,
/// configured servers beside workspaces, or a file holding secrets that other users may read.
fn warn_about_setup(config: &Config) {
    if let Some(warning) = config.shared_server_warning() {
        tracing::warn!("{warning}");
    }
    if let Some(warning) = config.servers_beside_workspaces_warning() {
        tracing::warn!("{warning}");
    }
    for (path, mode) in readable_by_others(&config.secret_paths()) {
        tracing::warn!(
            file = %path.display(),
            mode = format!("{mode:o}"),
            "a file holding keys, configuration or the audit log is readable by other users; chmod 600 it"
        );
    }
}

/// The authenticator: the configured clients, the failure throttle, and in workspace mode
/// each client's own server and the teams a claim may name; no authentication in conformance
/// mode.
fn authenticator(
    mode: Mode,
    config: &Config,
    resource: &ProtectedResource,
    metrics: &Metrics,
    stores: &Stores,
) -> Result<Arc<Authenticator>, GatewayError> {
    let mut authenticator = Authenticator::new(&config.auth, &config.clients, resource)?
        .with_default_client(&config.clients_default, config.auth.algorithm)?
        .with_failure_throttle(config.http.auth_failures_per_minute)
        .with_reject_hook(metrics.reject_hook());
    if stores.workspaces.is_some() {
        authenticator =
            authenticator.with_workspaces(workspace::SERVER_NAME, &config.workspaces.teams)?;
    }
    #[cfg(feature = "conformance")]
    let authenticator = match mode {
        Mode::Production => authenticator,
        Mode::Conformance => authenticator.without_authentication(crate::conformance::principal()),
    };
    // Without the conformance feature, production is the only mode.
    #[cfg(not(feature = "conformance"))]
    let Mode::Production = mode;
    Ok(Arc::new(authenticator))
}

/// The `[approvals]` policy, its tool names checked against the catalog (a misspelt one would
/// hold nothing); a timeout beyond `limits.max_wait_seconds` is said once, since it is cut.
fn approval_policy(config: &Config) -> Result<ApprovalPolicy, GatewayError> {
    let policy = ApprovalPolicy::compile(&config.approvals)
        .map_err(|e| GatewayError::Approvals(format!("{}: {}", e.field, e.message)))?;
    let tools = crate::mcp::catalog::tools();
    let known: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    if let [first, ..] = policy.unknown_tools(&known).as_slice() {
        return Err(GatewayError::Approvals(format!(
            "rules name the tool `{first}`, which does not exist (`muxgate tools` lists them)"
        )));
    }
    let max_wait = u64::from(config.limits.max_wait_seconds.get());
    if config.approvals.timeout_secs > max_wait {
        tracing::warn!(
            timeout_secs = config.approvals.timeout_secs,
            max_wait,
            "approvals.timeout_secs is cut to limits.max_wait_seconds (per client, its own)"
        );
    }
    Ok(policy)
}

/// The files among `paths` that exist and that users other than their owner may read, with
/// their modes.
fn readable_by_others(paths: &[PathBuf]) -> Vec<(PathBuf, u32)> {
    use std::os::unix::fs::PermissionsExt;
    paths
        .iter()
        .filter_map(|path| {
            let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
            (mode & 0o044 != 0).then(|| (path.clone(), mode))
        })
        .collect()
}

/// The state directory, created if missing. Without one (no `state.dir`, `HOME` or
/// `XDG_STATE_HOME`) the gateway keeps session owners in memory only, and says so; workspaces
/// cannot run without one.
fn open_state_dir(config: &Config) -> Result<Option<PathBuf>, GatewayError> {
    let dir = match config.state.resolve(|var| std::env::var_os(var)) {
        Ok(dir) => dir,
        Err(why) if config.workspaces.enabled => return Err(GatewayError::State(why)),
        Err(why) => {
            tracing::warn!("{why}; session owners are kept in memory and forgotten at restart");
            return Ok(None);
        }
    };
    crate::state::create_state_dir(&dir)
        .map_err(|e| GatewayError::State(format!("{}: {e}", dir.display())))?;
    Ok(Some(dir))
}

/// The key live-view links are signed with: kept in the state directory, so links outlive a
/// restart and `muxgate view-link` signs with it; without one, random and in memory.
fn view_key(state_dir: Option<&Path>) -> Result<ViewKey, GatewayError> {
    match state_dir {
        Some(dir) => crate::view::key::load_or_create(dir).map_err(|e| {
            GatewayError::State(format!("{}: {e}", crate::view::key::path(dir).display()))
        }),
        None => Ok(ViewKey::random()),
    }
}

/// The session ownership table, in the state directory.
const OWNERS_FILE: &str = "owners.json";

/// The spawned agents' records, in the state directory.
const FLEET_FILE: &str = "agents.json";

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
        workspace: None,
        toolsets: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn secret_files_readable_by_others_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let (private, shared, missing) = (
            dir.path().join("key"),
            dir.path().join("config.toml"),
            dir.path().join("nope"),
        );
        for (path, mode) in [(&private, 0o600), (&shared, 0o644)] {
            std::fs::write(path, "x").unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        assert_eq!(
            readable_by_others(&[private, shared.clone(), missing]),
            vec![(shared, 0o644)]
        );
    }
}
