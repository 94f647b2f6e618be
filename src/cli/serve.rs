//! `muxgate serve`: assemble the gateway from its config and run it until SIGTERM/SIGINT.
//!
//! Logging and trace export are set up from the loaded config before the async runtime starts,
//! and the span exporter is flushed after it has stopped.
//!
//! On the embedded default (HS256 without a configured secret) it generates a secret for this
//! process and prints a ready bearer token and client snippet, so a newcomer can connect at once.
//!
//! It listens on `http.bind`, and with workspaces that share the host's network also on the
//! other loopback address of that port ([`crate::http::listen`]).

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;

use super::ServeArgs;
use crate::auth::config::SecretString;
use crate::auth::{AuthConfig, JwtAlgorithm, generate_secret, local_secret};
use crate::config::allowlist::HostPattern;
use crate::config::{self, Config};
use crate::gateway::{Gateway, Mode, mint_full_access};
use crate::http::{listen, shutdown};
use crate::limits::LimitsConfig;
use crate::telemetry::subscriber;
use crate::workspace::sandbox::Network;

pub(super) fn run(args: ServeArgs) -> anyhow::Result<()> {
    let mut loaded = Config::load(args.config.config.as_deref(), config::process_env()?)?;
    if let Some(bind) = args.bind {
        loaded.config.http.bind = bind;
    }
    let mode = mode(&args, &loaded.config)?;
    let telemetry = subscriber::init(&loaded.config.log, &loaded.config.otel)?;
    let served = super::runtime()?.block_on(serve(loaded.config, mode));
    telemetry.shutdown();
    served
}

/// Production, unless a conformance build was asked for conformance mode on a loopback address.
fn mode(args: &ServeArgs, config: &Config) -> anyhow::Result<Mode> {
    #[cfg(feature = "conformance")]
    if args.conformance {
        crate::conformance::ensure_loopback(config.http.bind)?;
        return Ok(Mode::Conformance);
    }
    let _ = (args, config);
    Ok(Mode::Production)
}

async fn serve(mut config: Config, mode: Mode) -> anyhow::Result<()> {
    let local_secret = ensure_signing_secret(&mut config);
    if local_secret && config.source_file.is_none() && !limits_from_environment() {
        local_rates(&mut config.limits);
    }
    let config = Arc::new(config);
    warn_if_unreachable_by_host(&config);

    let shutdown = CancellationToken::new();
    shutdown::cancel_on_signal(shutdown.clone()).context("cannot install signal handlers")?;
    let listeners = listen::bind(config.http.bind, holds_every_loopback(&config)).await?;
    let local_addr = listeners.local_addr()?;
    let mcp_url = super::local_url(local_addr, config.http.tls.is_some(), "/mcp");

    let gateway = Gateway::build_in(mode, config.clone(), &mcp_url, shutdown.clone()).await?;
    let bearer_token = if local_secret && mode == Mode::Production {
        Some(mint_full_access(&config, READY_TOKEN_SUB, READY_TOKEN_TTL)?)
    } else {
        None
    };
    let banner = ReadyBanner {
        mcp_url,
        bearer_token,
        servers: config.tmux.servers.keys().map(|n| n.to_string()).collect(),
    };
    #[cfg(feature = "conformance")]
    if mode == Mode::Conformance {
        println!("{CONFORMANCE_WARNING}");
        tracing::warn!("{CONFORMANCE_WARNING}");
    }
    print!("{}", banner.render());
    let addresses = listeners.addresses()?;
    tracing::info!(%local_addr, ?addresses, tls = config.http.tls.is_some(), "listening");

    gateway.serve(listeners).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Whether the gateway holds the other loopback address on its port too: workspaces sharing
/// the host's network could otherwise listen there and receive the requests of clients that
/// try it first (see [`listen`]).
fn holds_every_loopback(config: &Config) -> bool {
    config.workspaces.enabled && config.workspaces.network == Network::Host
}

#[cfg(feature = "conformance")]
const CONFORMANCE_WARNING: &str = "CONFORMANCE TEST MODE: authentication is OFF and test fixtures \
are served; every local process can drive the configured tmux servers. Never run this in \
production.";

/// `sub` of the token printed at start on the embedded default.
const READY_TOKEN_SUB: &str = "local";
/// Its lifetime.
const READY_TOKEN_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// With HS256 and no configured secret (the embedded default), signs with the local secret
/// kept in the state directory ([`local_secret`]: created on the first start, read again at
/// every later one, so printed tokens outlive a restart), or, without a usable state
/// directory, with a random secret for this process only. Returns whether it did: only then is
/// a ready token printed, because no configuration names that secret.
fn ensure_signing_secret(config: &mut Config) -> bool {
    let auth = &config.auth;
    if !needs_local_secret(auth) {
        return false;
    }
    let kept = config
        .state
        .resolve(|var| std::env::var_os(var))
        .and_then(|dir| match local_secret::load_or_create(&dir) {
            Ok(secret) => Ok((secret, dir)),
            Err(e) => Err(format!("{}: {e}", local_secret::path(&dir).display())),
        });
    let secret = match kept {
        Ok((secret, dir)) => {
            tracing::info!(
                file = %local_secret::path(&dir).display(),
                "no auth secret configured: tokens are signed with the local secret"
            );
            secret
        }
        Err(why) => {
            tracing::warn!(
                "no auth secret configured and the local secret cannot be kept ({why}): tokens \
                 printed now stop working when the gateway stops"
            );
            generate_secret()
        }
    };
    config.auth.secret = Some(SecretString::new(secret));
    true
}

/// The embedded default's rates (no config file, no secret, no `MUXGATE_LIMITS__*`): every
/// token is the local user's, and one local agent with its scripts makes hundreds of calls a
/// second, which the shipped per-client rates (sized for many remote clients sharing a server)
/// would refuse. A config file or a configured secret keeps the shipped rates.
fn local_rates(limits: &mut LimitsConfig) {
    limits.requests_per_second = LOCAL_REQUESTS_PER_SECOND;
    limits.request_burst = LOCAL_REQUEST_BURST;
    limits.tool_calls_per_second = LOCAL_TOOL_CALLS_PER_SECOND;
    limits.tool_call_burst = LOCAL_TOOL_CALL_BURST;
}

const LOCAL_REQUESTS_PER_SECOND: NonZeroU32 = NonZeroU32::new(1000).unwrap();
const LOCAL_REQUEST_BURST: NonZeroU32 = NonZeroU32::new(2000).unwrap();
const LOCAL_TOOL_CALLS_PER_SECOND: NonZeroU32 = NonZeroU32::new(500).unwrap();
const LOCAL_TOOL_CALL_BURST: NonZeroU32 = NonZeroU32::new(1000).unwrap();

/// Whether the environment sets any `[limits]` key.
fn limits_from_environment() -> bool {
    std::env::vars_os().any(|(name, _)| {
        name.to_string_lossy()
            .to_ascii_uppercase()
            .starts_with("MUXGATE_LIMITS__")
    })
}

/// Whether `auth` is the embedded default's: HS256 with no secret configured.
pub(super) fn needs_local_secret(auth: &AuthConfig) -> bool {
    auth.algorithm == JwtAlgorithm::HS256 && auth.secret.is_none() && auth.secret_file.is_none()
}

/// Remote clients would all get 403 when the gateway listens beyond loopback but accepts only
/// loopback Host names; say so at startup.
fn warn_if_unreachable_by_host(config: &Config) {
    let http = &config.http;
    let loopback_only = http.allowed_hosts.iter().all(|pattern| match pattern {
        HostPattern::Any => false,
        HostPattern::Exact { host, .. } => {
            host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }
    });
    if !http.bind.ip().is_loopback() && loopback_only {
        tracing::warn!(
            bind = %http.bind,
            "listening beyond loopback but http.allowed_hosts lists only loopback names: \
             remote clients will get 403 until their Host is added"
        );
    }
}

/// What `serve` prints once it listens: the endpoint and a client configuration to paste.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyBanner {
    /// The `/mcp` URL a local client uses (over loopback when bound to an unspecified address).
    pub mcp_url: String,
    /// A full-access token (`sub` `local`, valid 30 days), printed only when the gateway signs with
    /// its local secret (HS256 without a configured secret); `None` otherwise.
    pub bearer_token: Option<String>,
    /// The names of the configured tmux servers.
    pub servers: Vec<String>,
}

impl ReadyBanner {
    /// The banner as printed: version, endpoint, tmux servers, the token if any, and an
    /// `mcpServers` client configuration.
    pub fn render(&self) -> String {
        let mut out = format!(
            "muxgate {} ready\n  MCP endpoint: {}\n  tmux servers: {}\n",
            env!("CARGO_PKG_VERSION"),
            self.mcp_url,
            self.servers.join(", ")
        );
        if let Some(token) = &self.bearer_token {
            out.push_str(&format!("  bearer token: {token}\n"));
        }
        out.push_str("Client configuration (e.g. .mcp.json):\n");
        out.push_str(&client_snippet(&self.mcp_url, self.bearer_token.as_deref()));
        out.push('\n');
        out
    }
}

/// An `mcpServers` entry for clients that read the common JSON configuration format.
pub fn client_snippet(mcp_url: &str, bearer_token: Option<&str>) -> String {
    let mut server = serde_json::json!({ "type": "http", "url": mcp_url });
    if let Some(token) = bearer_token {
        server["headers"] = serde_json::json!({ "Authorization": format!("Bearer {token}") });
    }
    let snippet = serde_json::json!({ "mcpServers": { "muxgate": server } });
    // Serializing a `Value` cannot fail.
    serde_json::to_string_pretty(&snippet).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippet_carries_the_token_only_when_there_is_one() {
        let plain: serde_json::Value =
            serde_json::from_str(&client_snippet("http://h/mcp", None)).unwrap();
        assert_eq!(
            plain,
            serde_json::json!({"mcpServers": {"muxgate": {"type": "http", "url": "http://h/mcp"}}})
        );
        let with_token: serde_json::Value =
            serde_json::from_str(&client_snippet("http://h/mcp", Some("t0k"))).unwrap();
        assert_eq!(
            with_token["mcpServers"]["muxgate"]["headers"]["Authorization"],
            "Bearer t0k"
        );
    }

    #[test]
    fn banner_lists_endpoint_servers_and_snippet() {
        let banner = ReadyBanner {
            mcp_url: "http://127.0.0.1:8767/mcp".into(),
            bearer_token: None,
            servers: vec!["default".into()],
        }
        .render();
        assert!(banner.contains("MCP endpoint: http://127.0.0.1:8767/mcp\n"));
        assert!(banner.contains("tmux servers: default\n"));
        assert!(!banner.contains("bearer token"));
        assert!(banner.contains("\"url\": \"http://127.0.0.1:8767/mcp\""));
    }
}
