//! Typed configuration: embedded default, TOML file, `MUXGATE_*` environment overrides.
//!
//! Loading goes through three steps:
//! 1. [`layers`] builds one TOML tree: the embedded default (`config/default.toml`, which is
//!    also the documented example), the operator's file merged over it, then the environment
//!    overrides (`MUXGATE_HTTP__BIND=…` sets `http.bind`);
//! 2. the tree is deserialized into [`Config`]; every struct refuses unknown keys, and errors
//!    carry the full key path;
//! 3. [`Config::validate`] checks what serde cannot (cross-field and cross-entry rules).
//!
//! Every error names the key and where its value came from (file, variable or default).
//!
//! Adding a section: add a `pub` field with a `#[serde(deny_unknown_fields)]` struct here, put
//! its keys with their defaults and comments in `config/default.toml`; merging and env overrides
//! then work without further code. A table of named entries (like `tmux.servers`) also goes in
//! [`layers::REPLACED_TABLES`].
//!
//! This module does not act on the configuration; the HTTP layer, the engine and the tools read
//! their sections from a shared [`Config`].

pub mod allowlist;
pub(crate) mod layers;

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Table;

use self::allowlist::{HostPattern, OriginPattern};
use crate::approvals::{ApprovalPolicy, ApprovalsConfig};
use crate::audit::AuditConfig;
use crate::auth::{AuthConfig, ClientPolicyConfig, DefaultClientConfig};
use crate::limits::{LimitOverrides, LimitsConfig};
use crate::recordings::writer::MIN_FILE_BYTES;
use crate::recordings::{RecordingPolicy, RecordingsConfig};
use crate::state::StateConfig;
use crate::telemetry::{LogConfig, MetricsConfig, OtelConfig};
use crate::workspace::WorkspacesConfig;
pub use layers::{EnvError, Origin};
use layers::{KeyPath, Layered, display_path};
use muxgate_tmux::EngineSettings;
pub use muxgate_tmux::TmuxSocket;
use muxgate_zellij::backend::ZellijServerSpec;
use muxgate_zellij::cli::ZellijEnv;
use muxgate_zellij::ids::SessionName as ZellijSessionName;

/// The embedded default configuration document.
pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");

/// The whole gateway configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `[http]`: the listener and what it accepts.
    pub http: HttpConfig,
    /// `[tmux]`: the tmux servers clients may drive, and shell integration.
    pub tmux: TmuxConfig,
    /// `[engine]`: tunables of the tmux control-mode engine.
    pub engine: EngineConfig,
    /// `[zellij]`: the Zellij servers clients may drive (none by default) and how `zellij` runs.
    pub zellij: ZellijConfig,
    /// `[auth]`: how bearer tokens (JWTs) are verified, and signed by `muxgate token`.
    pub auth: AuthConfig,
    /// Per-client policy and limits, by the token's `sub`.
    #[serde(default)]
    pub clients: BTreeMap<String, ClientPolicyConfig<LimitOverrides>>,
    /// The policy of a `sub` without an entry in `clients`.
    #[serde(default)]
    pub clients_default: DefaultClientConfig,
    /// `[limits]`: per-client rates and caps; `[clients.<sub>.limits]` overrides them.
    pub limits: LimitsConfig,
    /// `[audit]`: the keyed (HMAC-chained) log of tool calls; off while `audit.path` is unset.
    pub audit: AuditConfig,
    /// `[log]`: format and filter of the log lines on stderr.
    pub log: LogConfig,
    /// `[metrics]`: Prometheus metrics at `GET /metrics` (on by default).
    pub metrics: MetricsConfig,
    /// `[otel]`: OpenTelemetry trace export over OTLP/HTTP; off while `otel.endpoint` is unset.
    pub otel: OtelConfig,
    /// `[state]`: where the gateway keeps what must outlive a restart.
    pub state: StateConfig,
    /// `[workspaces]`: a sandboxed tmux server per tenant (off by default).
    pub workspaces: WorkspacesConfig,
    /// Calls a human must approve (none by default).
    #[serde(default)]
    pub approvals: ApprovalsConfig,
    /// Panes' output recorded as asciinema casts (off by default).
    #[serde(default)]
    pub recordings: RecordingsConfig,
    /// The live view (`/view`) and its links.
    #[serde(default)]
    pub view: crate::view::ViewConfig,
    /// `[notify]`: webhooks told when a human is needed (none by default).
    #[serde(default)]
    pub notify: crate::notify::NotifyConfig,
    /// `[inbox]`: the approvers' page and its sign-in links.
    #[serde(default)]
    pub inbox: crate::inbox::InboxConfig,
    /// `[agents.<kind>]`: the agent programs `spawn_agent` may start (none by default).
    #[serde(default)]
    pub agents: BTreeMap<String, crate::fleet::AgentProgram>,
    /// `[repositories.<name>]`: the git repositories spawned agents may get worktrees of.
    #[serde(default)]
    pub repositories: BTreeMap<String, crate::fleet::Repository>,
    /// `[hosts.<name>]`: other machines whose tmux servers clients may drive, over SSH.
    #[serde(default)]
    pub hosts: BTreeMap<String, crate::hosts::config::HostConfig>,
    /// The file this configuration was read from (none: the embedded default alone).
    #[serde(skip)]
    pub source_file: Option<PathBuf>,
}

/// `[http.tls]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain, leaf first.
    pub cert_file: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: PathBuf,
    /// How often the files are checked for changes.
    #[serde(default = "default_watch_interval_secs")]
    pub watch_interval_secs: u64,
}

fn default_watch_interval_secs() -> u64 {
    10
}

impl TlsConfig {
    /// [`Self::watch_interval_secs`] as a [`Duration`].
    pub fn watch_interval(&self) -> Duration {
        Duration::from_secs(self.watch_interval_secs)
    }
}

/// `http.public_url`: an `http` or `https` URL with no query or fragment; links are built by
/// appending a path to it (a trailing `/` is dropped).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct PublicUrl(String);

impl PublicUrl {
    /// The URL of `path` (`/secret`) under this one.
    pub fn join(&self, path: &str) -> String {
        format!("{}{path}", self.0)
    }
}

impl TryFrom<String> for PublicUrl {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        let parsed = url::Url::parse(&text)
            .map_err(|e| format!("http.public_url {text:?} is not a URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
            return Err(format!(
                "http.public_url {text:?} must be an http:// or https:// URL with a host"
            ));
        }
        if parsed.query().is_some() || parsed.fragment().is_some() || !parsed.username().is_empty()
        {
            return Err(format!(
                "http.public_url {text:?} must have no query, fragment or user name"
            ));
        }
        Ok(Self(parsed.as_str().trim_end_matches('/').to_owned()))
    }
}

/// `[http]`: the listener and what it accepts.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// Address and port to listen on (default `127.0.0.1:8767`: local clients only); `muxgate
    /// serve --bind` overrides it.
    pub bind: SocketAddr,
    /// `Host` header values accepted (DNS-rebinding protection); not empty, `*` accepts any.
    /// Default: `localhost`, `127.0.0.1`, `::1`.
    pub allowed_hosts: Vec<HostPattern>,
    /// `Origin` header values accepted (a request without `Origin` is not checked). Default:
    /// `http` and `https` on any port of `localhost`, `127.0.0.1` and `[::1]`.
    pub allowed_origins: Vec<OriginPattern>,
    /// Largest request body accepted on `/mcp`, in bytes (default 4 MiB); larger ones get 413.
    pub max_body_bytes: usize,
    /// An MCP session idle this long is closed (busy and idle: [`crate::auth::session`]).
    pub session_idle_secs: u64,
    /// Most MCP sessions one client (`sub`) may have open; at the cap a new one evicts the
    /// client's least recently used idle session.
    pub max_sessions_per_client: usize,
    /// Most failed authentications a minute from one source address (0: no limit).
    pub auth_failures_per_minute: u32,
    /// How often a waiting call tells a client that asked for progress that it still runs.
    pub progress_interval_secs: u64,
    /// Seconds in-flight requests get to finish after SIGTERM or SIGINT before MCP sessions and
    /// streams are closed (default 10).
    pub shutdown_grace_secs: u64,
    /// Where humans' browsers reach the gateway, for the links it hands out (secret entry);
    /// default: the scheme and `Host` of the request that asks for the link.
    #[serde(default)]
    pub public_url: Option<PublicUrl>,
    /// `[http.tls]`: serve HTTPS with this certificate and key (plain HTTP without it).
    #[serde(default)]
    pub tls: Option<TlsConfig>,
}

impl HttpConfig {
    /// [`Self::session_idle_secs`] as a [`Duration`].
    pub fn session_idle(&self) -> Duration {
        Duration::from_secs(self.session_idle_secs)
    }

    /// [`Self::shutdown_grace_secs`] as a [`Duration`].
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }

    /// [`Self::progress_interval_secs`] as a [`Duration`].
    pub fn progress_interval(&self) -> Duration {
        Duration::from_secs(self.progress_interval_secs)
    }
}

/// `[tmux]`: the tmux servers this gateway may drive.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TmuxConfig {
    /// Shells the gateway starts (bash, zsh, fish) mark their prompts and commands for the
    /// command ledger; see [`muxgate_mux::shell_integration`].
    pub shell_integration: bool,
    /// By name, in name order.
    pub servers: BTreeMap<ServerName, TmuxServer>,
}

/// One configured tmux server (`[tmux.servers.<name>]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawTmuxServer")]
pub struct TmuxServer {
    /// The server's socket: `socket_name` (`tmux -L`), `socket_path` (`tmux -S`, absolute), or
    /// neither for the user's default socket.
    pub socket: TmuxSocket,
    /// `/readyz` stays ready while this server is not running.
    pub allow_absent: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTmuxServer {
    socket_name: Option<String>,
    socket_path: Option<PathBuf>,
    #[serde(default)]
    allow_absent: bool,
}

impl TryFrom<RawTmuxServer> for TmuxServer {
    type Error = String;

    fn try_from(raw: RawTmuxServer) -> Result<Self, String> {
        let socket = match (raw.socket_name, raw.socket_path) {
            (Some(_), Some(_)) => {
                return Err("socket_name and socket_path are mutually exclusive; \
                            set one, or neither for the default socket"
                    .into());
            }
            (Some(name), None) => {
                if !TmuxSocket::is_valid_name(&name) {
                    return Err(format!(
                        "socket_name `{name}` is invalid: use 1-64 characters from \
                         A-Z a-z 0-9 _ . - (use socket_path for a path)"
                    ));
                }
                TmuxSocket::Name(name)
            }
            (None, Some(path)) => {
                if !path.is_absolute() {
                    return Err(format!("socket_path `{}` must be absolute", path.display()));
                }
                TmuxSocket::Path(path)
            }
            (None, None) => TmuxSocket::Default,
        };
        Ok(TmuxServer {
            socket,
            allow_absent: raw.allow_absent,
        })
    }
}

/// The name clients use to pick a tmux server: 1-64 characters from `A-Z a-z 0-9 _ . -`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct ServerName(String);

/// A string that is not a valid [`ServerName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid server name `{0}`: use 1-64 characters from A-Z a-z 0-9 _ . -")]
pub struct InvalidServerName(pub String);

impl ServerName {
    /// `name` as a server name; an error unless it is 1-64 characters from
    /// `A-Z a-z 0-9 _ . -`.
    pub fn parse(name: &str) -> Result<Self, InvalidServerName> {
        if is_safe_name(name) {
            Ok(Self(name.to_owned()))
        } else {
            Err(InvalidServerName(name.to_owned()))
        }
    }

    /// The name as configured.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ServerName {
    type Error = InvalidServerName;

    fn try_from(name: String) -> Result<Self, InvalidServerName> {
        if is_safe_name(&name) {
            Ok(Self(name))
        } else {
            Err(InvalidServerName(name))
        }
    }
}

impl Borrow<str> for ServerName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn is_safe_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// `[zellij]`: the Zellij servers this gateway may drive and how it runs `zellij`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZellijConfig {
    /// The `zellij` executable (looked up on `PATH` unless it is a path).
    pub binary: PathBuf,
    /// Longest time one `zellij` CLI call may take.
    pub call_timeout_ms: u64,
    /// Longest time one operation (several calls on one session's queue) may take.
    pub op_timeout_ms: u64,
    /// Operations that may wait per Zellij session before callers get a "busy" error.
    pub queue_capacity: usize,
    /// By name, in name order. None by default.
    #[serde(default)]
    pub servers: BTreeMap<ServerName, ZellijServer>,
}

/// One configured Zellij server (`[zellij.servers.<name>]`): the sessions in one socket dir,
/// and the session tools use when a call names none.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZellijServer {
    /// The session a call acts on when it names no session.
    #[serde(default)]
    pub session: Option<ZellijSessionName>,
    /// `ZELLIJ_SOCKET_DIR` (absolute): only sessions whose sockets live there are visible.
    /// Default: Zellij's own (under `$XDG_RUNTIME_DIR` or the temp dir).
    #[serde(default)]
    pub socket_dir: Option<PathBuf>,
    /// `HOME` for the `zellij` processes muxgate starts (absolute). Default: muxgate's.
    #[serde(default)]
    pub home: Option<PathBuf>,
    /// `TMPDIR` for them (absolute). Default: muxgate's.
    #[serde(default)]
    pub tmp_dir: Option<PathBuf>,
    /// `ZELLIJ_CONFIG_FILE` for them (absolute). Default: Zellij's lookup.
    #[serde(default)]
    pub config_file: Option<PathBuf>,
}

impl ZellijConfig {
    /// How the backend drives `server`: these keys, with the backend's defaults for the rest.
    pub fn spec(&self, server: &ZellijServer) -> ZellijServerSpec {
        let env = ZellijEnv {
            socket_dir: server.socket_dir.clone(),
            home: server.home.clone(),
            tmp_dir: server.tmp_dir.clone(),
            config_file: server.config_file.clone(),
            ..ZellijEnv::new(self.binary.clone())
        };
        ZellijServerSpec {
            call_timeout: Duration::from_millis(self.call_timeout_ms),
            op_timeout: Duration::from_millis(self.op_timeout_ms),
            queue_capacity: self.queue_capacity,
            ..ZellijServerSpec::new(env)
        }
    }

    fn validate(&self, tmux: &TmuxConfig) -> Result<(), Violation> {
        if self.binary.as_os_str().is_empty() {
            return Err(Violation::at(&["zellij", "binary"], "must not be empty"));
        }
        positive(&["zellij", "call_timeout_ms"], self.call_timeout_ms)?;
        positive(&["zellij", "op_timeout_ms"], self.op_timeout_ms)?;
        positive(&["zellij", "queue_capacity"], self.queue_capacity as u64)?;
        let mut seen: BTreeMap<(Option<&PathBuf>, Option<&ZellijSessionName>), &ServerName> =
            BTreeMap::new();
        for (name, server) in &self.servers {
            let at = |key: &str| Violation {
                path: ["zellij", "servers", name.as_str(), key]
                    .iter()
                    .filter(|s| !s.is_empty())
                    .map(|s| s.to_string())
                    .collect(),
                message: String::new(),
            };
            if tmux.servers.contains_key(name.as_str()) {
                return Err(Violation {
                    message: format!(
                        "the name is already used by tmux.servers.{name}; server names are shared \
                         by both backends (access rules match them), so pick another"
                    ),
                    ..at("")
                });
            }
            for (key, path) in [
                ("socket_dir", &server.socket_dir),
                ("home", &server.home),
                ("tmp_dir", &server.tmp_dir),
                ("config_file", &server.config_file),
            ] {
                if let Some(path) = path
                    && !path.is_absolute()
                {
                    return Err(Violation {
                        message: format!("`{}` must be an absolute path", path.display()),
                        ..at(key)
                    });
                }
            }
            if let Some(first) =
                seen.insert((server.socket_dir.as_ref(), server.session.as_ref()), name)
            {
                return Err(Violation {
                    message: format!(
                        "addresses the same socket dir and session as zellij.servers.{first}"
                    ),
                    ..at("")
                });
            }
        }
        Ok(())
    }
}

/// `[engine]`: tunables of the tmux control-mode engine (see [`EngineSettings`]). How many
/// commands one client may queue is a per-client limit: `limits.worker_queue_share`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// The tmux binary, looked up on `PATH` unless it is a path (default `tmux`).
    pub tmux_bin: PathBuf,
    /// Milliseconds one tmux command (or one batch) may take before its caller gets a timeout
    /// error (default 10000).
    pub command_timeout_ms: u64,
    /// Commands queued per tmux server, across all clients, before callers get a "busy" error
    /// (default 8192).
    pub queue_capacity: usize,
    /// Commands written to tmux before waiting for replies, per server (default 16); small keeps
    /// clients fair, larger shares tmux's turns among more commands.
    pub pipeline_depth: usize,
    /// Bytes of recent output kept per watched pane for waits and incremental reads (default
    /// 1 MiB).
    pub output_ring_bytes: usize,
    /// Seconds a watched window may go without a watcher before it stops being watched
    /// (default 30).
    pub output_idle_close_secs: u64,
    /// tmux drops a pane's output that is this many seconds behind instead of buffering it
    /// (default 5); the gap is reported to waiters.
    pub pause_after_secs: u32,
    /// Formerly `max_output_connections`, when each watched session had its own connection.
    #[serde(alias = "max_output_connections")]
    pub max_watched_sessions: usize,
}

impl EngineConfig {
    /// [`Self::command_timeout_ms`] as a [`Duration`].
    pub fn command_timeout(&self) -> Duration {
        Duration::from_millis(self.command_timeout_ms)
    }

    /// [`Self::output_idle_close_secs`] as a [`Duration`].
    pub fn output_idle_close(&self) -> Duration {
        Duration::from_secs(self.output_idle_close_secs)
    }

    /// The engine's settings: these keys, with the engine's defaults for the rest.
    pub fn settings(&self) -> EngineSettings {
        EngineSettings {
            tmux_bin: self.tmux_bin.clone(),
            command_timeout: self.command_timeout(),
            queue_capacity: self.queue_capacity,
            pipeline_depth: self.pipeline_depth,
            output_ring_bytes: self.output_ring_bytes,
            output_idle_close: self.output_idle_close(),
            pause_after_secs: self.pause_after_secs,
            max_watched_sessions: self.max_watched_sessions,
            ..EngineSettings::default()
        }
    }
}

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A document (the file, or the embedded default) is not valid TOML.
    #[error("{origin}: {message}")]
    Syntax {
        /// The document that failed to parse.
        origin: Origin,
        /// The TOML parser's message, with the line and column.
        message: String,
    },
    /// A key with a bad value, an unknown key, or a rule between keys that does not hold.
    #[error("{key}: {message} (set in {origin})")]
    Invalid {
        /// The key's full path (`http.allowed_hosts[0]`).
        key: String,
        /// What is wrong (e.g. `must be at least 1`).
        message: String,
        /// Where the value was set: the file, an environment variable, or the embedded default.
        origin: Origin,
    },
    /// A `MUXGATE_*` environment variable that is not a usable override.
    #[error(transparent)]
    Env(#[from] EnvError),
}

/// A loaded configuration and what it was built from.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The merged and validated configuration.
    pub config: Config,
    /// The operator's file, if any (else only the embedded default was used).
    pub file: Option<PathBuf>,
    /// Names of the environment variables that overrode keys.
    pub env_overrides: Vec<String>,
}

impl Config {
    /// Without workspaces: a warning when clients that can type (`mux:write`, configured in
    /// `[clients]`) can use a configured server, since each of them then runs code as that
    /// server's user and reaches every session there whatever its access rules say. `None` when
    /// no client is configured (one local user, as on the embedded default).
    pub fn shared_server_warning(&self) -> Option<String> {
        use crate::auth::SCOPE_WRITE;
        if self.workspaces.enabled {
            return None;
        }
        let writers: Vec<&str> = self
            .clients
            .iter()
            .filter(|(_, client)| {
                client.scopes.as_ref().is_none_or(|scopes| {
                    scopes
                        .iter()
                        .any(|s| s == SCOPE_WRITE || s == crate::auth::SCOPE_ADMIN)
                })
            })
            .map(|(sub, _)| sub.as_str())
            .collect();
        if writers.is_empty() {
            return None;
        }
        let servers: Vec<&str> = self.tmux.servers.keys().map(|n| n.as_str()).collect();
        Some(format!(
            "workspaces are off: clients that can type ({}) run commands as the tmux user of \
             server(s) {}, so their session patterns and own_sessions separate only clients that \
             cannot type; enable [workspaces] to give each tenant a sandboxed server",
            writers.join(", "),
            servers.join(", ")
        ))
    }

    /// With workspaces: a warning when configured servers remain beside them (the embedded
    /// default keeps `default`). They run outside every sandbox, so whoever the configuration
    /// grants one to runs code there unsandboxed; the warning names who that is now.
    pub fn servers_beside_workspaces_warning(&self) -> Option<String> {
        use crate::auth::pattern::NamePattern;
        if !self.workspaces.enabled {
            return None;
        }
        let tmux: Vec<&str> = self.tmux.servers.keys().map(|n| n.as_str()).collect();
        let zellij: Vec<&str> = self.zellij.servers.keys().map(|n| n.as_str()).collect();
        let mut kinds = Vec::new();
        if !tmux.is_empty() {
            kinds.push(format!("tmux server(s) {}", tmux.join(", ")));
        }
        if !zellij.is_empty() {
            kinds.push(format!("Zellij server(s) {}", zellij.join(", ")));
        }
        if kinds.is_empty() {
            return None;
        }
        let grants_one = |patterns: &Option<Vec<String>>| {
            patterns.iter().flatten().any(|pattern| {
                NamePattern::new(pattern)
                    .is_ok_and(|p| tmux.iter().chain(&zellij).any(|name| p.matches(name)))
            })
        };
        let mut granted: Vec<&str> = self
            .clients
            .iter()
            .filter(|(_, client)| grants_one(&client.servers))
            .map(|(sub, _)| sub.as_str())
            .collect();
        if grants_one(&self.clients_default.servers) {
            granted.push("[clients_default]");
        }
        let granted = match granted.as_slice() {
            [] => "no client now".to_owned(),
            subs => subs.join(", "),
        };
        Some(format!(
            "configured {} beside workspaces: they run outside every sandbox, as their own \
             Unix user, and a client the configuration grants one to ([clients.<sub>] servers, \
             [clients_default] servers) runs code there unsandboxed (granted to: {granted}); \
             an empty [tmux.servers] table in the config file serves workspaces only",
            kinds.join(" and ")
        ))
    }

    /// The embedded default, without file or environment.
    pub fn embedded_default() -> Config {
        // The embedded document is part of the binary and a unit test loads it.
        Self::load_text(None, std::iter::empty())
            .expect("embedded default config is valid")
            .config
    }

    /// Loads `file` (or only the embedded default) with overrides from `env`
    /// (typically [`process_env`]).
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<LoadedConfig, ConfigError> {
        let file = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                    path: path.to_owned(),
                    source,
                })?;
                Some((path.to_owned(), text))
            }
            None => None,
        };
        Self::load_text(file, env)
    }

    /// Loads a config document given as text, merged over the embedded default, without
    /// environment overrides. Used by tests and tools that build configs in memory.
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        Self::load_text(
            Some(("(inline)".into(), text.to_owned())),
            std::iter::empty(),
        )
        .map(|loaded| loaded.config)
    }

    fn load_text(
        file: Option<(PathBuf, String)>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<LoadedConfig, ConfigError> {
        let default = parse_table(DEFAULT_TOML, Origin::Embedded)?;
        let file = match file {
            Some((path, text)) => {
                let table = parse_table(&text, Origin::File(path.clone()))?;
                Some((path, table))
            }
            None => None,
        };
        let overrides = layers::env_overrides(env)?;
        let layered = Layered::build(default, file, &overrides)?;
        let mut config = deserialize(&layered)?;
        config.source_file = layered.file.as_ref().map(|(path, _)| path.clone());
        config
            .validate()
            .map_err(|Violation { path, message }| ConfigError::Invalid {
                key: display_path(&path),
                origin: layered.origin_of(&path),
                message,
            })?;
        Ok(LoadedConfig {
            config,
            file: layered.file.map(|(path, _)| path),
            env_overrides: layered
                .applied_env
                .into_iter()
                .map(|(_, var)| var)
                .collect(),
        })
    }

    /// The files holding what no pane may read: this configuration, the keys it names, the
    /// audit log and its key and head files (the default ones are in the state directory).
    /// (Public keys are left out: they are public.)
    pub fn secret_paths(&self) -> Vec<PathBuf> {
        [
            self.source_file.as_ref(),
            self.auth.secret_file.as_ref(),
            self.auth.signing_key_file.as_ref(),
            self.http.tls.as_ref().map(|tls| &tls.key_file),
            self.metrics.bearer_token_file.as_ref(),
            self.audit.path.as_ref(),
            self.audit.key_file.as_ref(),
            self.audit.head_file.as_ref(),
        ]
        .into_iter()
        .flatten()
        .chain(self.hosts.values().map(|host| &host.identity_file))
        .chain(
            self.notify
                .targets
                .values()
                .filter_map(|target| target.secret_file.as_ref()),
        )
        .cloned()
        .collect()
    }

    /// `[notify]`: each target usable, a queue of at least one.
    fn validate_notify(&self) -> Result<(), Violation> {
        positive(&["notify", "queue"], self.notify.queue as u64)?;
        for (name, target) in &self.notify.targets {
            if let Some(problem) = target.problem() {
                return Err(Violation::at(&["notify", "targets", name], &problem));
            }
            let Some(approver) = &target.inbox_for else {
                continue;
            };
            let at = ["notify", "targets", name, "inbox_for"];
            if self.http.public_url.is_none() {
                return Err(Violation::at(
                    &at,
                    "a sign-in link needs http.public_url: the address a phone reaches the gateway at",
                ));
            }
            if self.approvals.approvers.is_empty() {
                return Err(Violation::at(
                    &at,
                    "inbox links need approvals.approvers to name who may decide (empty, anyone \
                     named would be one)",
                ));
            }
            let approvers = ApprovalPolicy::compile(&self.approvals).unwrap_or_default();
            if !approvers.may_decide(approver) {
                return Err(Violation::at(
                    &at,
                    &format!("{approver:?} is not among approvals.approvers"),
                ));
            }
        }
        Ok(())
    }

    fn validate_fleet(&self) -> Result<(), Violation> {
        for (kind, program) in &self.agents {
            if let Some(problem) = program.problem() {
                return Err(Violation::at(&["agents", kind], &problem));
            }
        }
        for (name, repository) in &self.repositories {
            if let Some(problem) = repository.problem() {
                return Err(Violation::at(&["repositories", name], &problem));
            }
        }
        Ok(())
    }

    /// Rules serde cannot express. Returns the first violation found.
    fn validate(&self) -> Result<(), Violation> {
        let http = &self.http;
        if http.allowed_hosts.is_empty() {
            return Err(Violation::at(
                &["http", "allowed_hosts"],
                "must not be empty; use [\"*\"] to accept any Host",
            ));
        }
        positive(&["http", "max_body_bytes"], http.max_body_bytes as u64)?;
        positive(&["http", "session_idle_secs"], http.session_idle_secs)?;
        positive(
            &["http", "max_sessions_per_client"],
            http.max_sessions_per_client as u64,
        )?;
        positive(
            &["http", "progress_interval_secs"],
            http.progress_interval_secs,
        )?;

        if self.tmux.servers.is_empty() && self.hosts.is_empty() && !self.workspaces.enabled {
            return Err(Violation::at(
                &["tmux", "servers"],
                "no tmux server configured; add a [tmux.servers.<name>] table or a \
                 [hosts.<name>] one, or enable [workspaces]",
            ));
        }
        let mut seen: BTreeMap<&TmuxSocket, &ServerName> = BTreeMap::new();
        for (name, server) in &self.tmux.servers {
            if let Some(first) = seen.insert(&server.socket, name) {
                return Err(Violation {
                    path: vec!["tmux".into(), "servers".into(), name.to_string()],
                    message: format!(
                        "addresses the same tmux server as tmux.servers.{first} ({})",
                        server.socket
                    ),
                });
            }
        }

        let engine = &self.engine;
        positive(&["engine", "command_timeout_ms"], engine.command_timeout_ms)?;
        positive(&["engine", "queue_capacity"], engine.queue_capacity as u64)?;
        positive(&["engine", "pipeline_depth"], engine.pipeline_depth as u64)?;
        positive(
            &["engine", "max_watched_sessions"],
            engine.max_watched_sessions as u64,
        )?;
        positive(
            &["engine", "output_ring_bytes"],
            engine.output_ring_bytes as u64,
        )?;
        positive(
            &["engine", "output_idle_close_secs"],
            engine.output_idle_close_secs,
        )?;
        positive(
            &["engine", "pause_after_secs"],
            engine.pause_after_secs.into(),
        )?;
        if engine.tmux_bin.as_os_str().is_empty() {
            return Err(Violation::at(&["engine", "tmux_bin"], "must not be empty"));
        }
        self.validate_limits()?;
        self.zellij.validate(&self.tmux)?;
        self.validate_workspaces()?;
        self.validate_notify()?;
        self.validate_fleet()?;
        self.validate_hosts()?;
        if let Some(tls) = &http.tls {
            positive(
                &["http", "tls", "watch_interval_secs"],
                tls.watch_interval_secs,
            )?;
        }
        self.validate_approvals()?;
        self.validate_recordings()?;
        self.validate_view()?;
        self.validate_inbox()?;
        self.validate_telemetry()
    }

    fn validate_approvals(&self) -> Result<(), Violation> {
        positive(&["approvals", "timeout_secs"], self.approvals.timeout_secs)?;
        ApprovalPolicy::compile(&self.approvals).map_err(|error| Violation {
            path: match error.index {
                Some(index) => vec![
                    "approvals".into(),
                    format!("rules[{index}]"),
                    error.field.into(),
                ],
                None => vec!["approvals".into(), error.field.into()],
            },
            message: error.message,
        })?;
        Ok(())
    }

    fn validate_recordings(&self) -> Result<(), Violation> {
        let recordings = &self.recordings;
        if recordings.max_file_bytes < MIN_FILE_BYTES {
            return Err(Violation::at(
                &["recordings", "max_file_bytes"],
                &format!("must be at least {MIN_FILE_BYTES}"),
            ));
        }
        if recordings.max_total_bytes < recordings.max_file_bytes {
            return Err(Violation::at(
                &["recordings", "max_total_bytes"],
                "must be at least recordings.max_file_bytes",
            ));
        }
        positive(&["recordings", "max_panes"], recordings.max_panes as u64)?;
        RecordingPolicy::compile(&recordings.rules).map_err(|error| Violation {
            path: vec![
                "recordings".into(),
                format!("rules[{}]", error.index),
                error.field.into(),
            ],
            message: error.message,
        })?;
        Ok(())
    }

    fn validate_inbox(&self) -> Result<(), Violation> {
        let within = |key: &str, value: u64, range: std::ops::RangeInclusive<u64>| {
            if range.contains(&value) {
                Ok(())
            } else {
                Err(Violation::at(
                    &["inbox", key],
                    &format!("must be {} to {} seconds", range.start(), range.end()),
                ))
            }
        };
        within(
            "link_ttl_secs",
            self.inbox.link_ttl_secs,
            crate::inbox::LINK_TTL_SECS,
        )?;
        within(
            "session_ttl_secs",
            self.inbox.session_ttl_secs,
            crate::inbox::SESSION_TTL_SECS,
        )
    }

    fn validate_view(&self) -> Result<(), Violation> {
        positive(&["view", "max_link_minutes"], self.view.max_link_minutes)?;
        positive(
            &["view", "default_link_minutes"],
            self.view.default_link_minutes,
        )?;
        if self.view.default_link_minutes > self.view.max_link_minutes {
            return Err(Violation::at(
                &["view", "default_link_minutes"],
                "must be at most view.max_link_minutes",
            ));
        }
        Ok(())
    }

    /// `max_output_bytes` bounds a whole answer: it must leave room for text after the
    /// answer's own fields.
    fn validate_limits(&self) -> Result<(), Violation> {
        let min = crate::limits::output::MIN_MAX_OUTPUT_BYTES;
        let too_small = |path: &[&str]| {
            Violation::at(
                path,
                &format!("must be at least {min}: it bounds a whole answer, fields included"),
            )
        };
        if self.limits.max_output_bytes.get() < min {
            return Err(too_small(&["limits", "max_output_bytes"]));
        }
        for (sub, client) in &self.clients {
            if client
                .limits
                .max_output_bytes
                .is_some_and(|max| max.get() < min)
            {
                return Err(too_small(&["clients", sub, "limits", "max_output_bytes"]));
            }
        }
        Ok(())
    }

    fn validate_workspaces(&self) -> Result<(), Violation> {
        if let Some(dir) = &self.state.dir
            && !dir.is_absolute()
        {
            return Err(Violation::at(
                &["state", "dir"],
                &format!("`{}` must be an absolute path", dir.display()),
            ));
        }
        let workspaces = &self.workspaces;
        if let Err((key, message)) = workspaces.validate() {
            return Err(Violation::at(&["workspaces", key], &message));
        }
        if workspaces.enabled {
            let taken = crate::workspace::SERVER_NAME;
            if self.tmux.servers.contains_key(taken) || self.zellij.servers.contains_key(taken) {
                return Err(Violation {
                    path: vec!["tmux".into(), "servers".into(), taken.into()],
                    message: format!(
                        "the server name `{taken}` is reserved for each client's own workspace \
                         when workspaces are enabled; rename this server"
                    ),
                });
            }
        }
        Ok(())
    }

    fn validate_hosts(&self) -> Result<(), Violation> {
        for (name, host) in &self.hosts {
            let at = |key: &str, message: String| Violation {
                path: vec!["hosts".into(), name.clone(), key.into()],
                message,
            };
            if !is_safe_name(name) {
                return Err(Violation {
                    path: vec!["hosts".into(), name.clone()],
                    message: "a host name is 1-64 characters from A-Z a-z 0-9 _ . -".into(),
                });
            }
            let taken = if self.tmux.servers.contains_key(name.as_str()) {
                Some("tmux.servers")
            } else if self.zellij.servers.contains_key(name.as_str()) {
                Some("zellij.servers")
            } else if self.workspaces.enabled && name == crate::workspace::SERVER_NAME {
                Some("each client's workspace")
            } else {
                None
            };
            if let Some(taken) = taken {
                return Err(Violation {
                    path: vec!["hosts".into(), name.clone()],
                    message: format!(
                        "the name is already used by {taken}; a host's servers are named after \
                         it (`{name}`, `{name}/<socket name>`), so rename one of them"
                    ),
                });
            }
            if let Err((key, message)) = host.validate() {
                return Err(at(key, message));
            }
        }
        self.validate_workspace_hosts()
    }

    /// Each place `workspaces.hosts` names is this machine or a host that can run workspaces.
    fn validate_workspace_hosts(&self) -> Result<(), Violation> {
        let at = |message: String| Violation {
            path: vec!["workspaces".into(), "hosts".into()],
            message,
        };
        for place in &self.workspaces.hosts {
            if place == crate::workspace::config::LOCAL_HOST {
                continue;
            }
            match self.hosts.get(place) {
                None => {
                    return Err(at(format!(
                        "`{place}` is neither \"local\" nor a [hosts.<name>] entry"
                    )));
                }
                Some(host) if host.workspaces_config.is_none() => {
                    return Err(at(format!(
                        "host `{place}` has no workspaces_config: set hosts.{place}.workspaces_config \
                         to the muxgate configuration on the host its workspaces use"
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    fn validate_telemetry(&self) -> Result<(), Violation> {
        if let Err(error) = tracing_subscriber::EnvFilter::try_new(&self.log.level) {
            return Err(Violation {
                path: vec!["log".into(), "level".into()],
                message: format!(
                    "not a valid filter ({error}); e.g. \"info\" or \"muxgate=debug,warn\""
                ),
            });
        }
        let metrics = &self.metrics;
        if metrics.bearer_token.is_some() && metrics.bearer_token_file.is_some() {
            return Err(Violation::at(
                &["metrics", "bearer_token"],
                "bearer_token and bearer_token_file are mutually exclusive",
            ));
        }
        if metrics
            .bearer_token
            .as_ref()
            .is_some_and(|t| t.expose().trim().is_empty())
        {
            return Err(Violation::at(
                &["metrics", "bearer_token"],
                "must not be empty",
            ));
        }
        let otel = &self.otel;
        if let Some(endpoint) = &otel.endpoint
            && (!endpoint.starts_with("http://") || endpoint.parse::<http::Uri>().is_err())
        {
            return Err(Violation::at(
                &["otel", "endpoint"],
                "must be an http:// URL of an OTLP/HTTP receiver, e.g. \"http://127.0.0.1:4318\" \
                 (export to a local collector; it forwards over TLS if needed)",
            ));
        }
        if !(0.0..=1.0).contains(&otel.sample_ratio) {
            return Err(Violation::at(
                &["otel", "sample_ratio"],
                "must be between 0.0 and 1.0",
            ));
        }
        positive(&["otel", "export_timeout_ms"], otel.export_timeout_ms)?;
        if otel.service_name.is_empty() {
            return Err(Violation::at(
                &["otel", "service_name"],
                "must not be empty",
            ));
        }
        Ok(())
    }
}

struct Violation {
    path: KeyPath,
    message: String,
}

impl Violation {
    fn at(path: &[&str], message: &str) -> Self {
        Self {
            path: path.iter().map(|s| s.to_string()).collect(),
            message: message.to_owned(),
        }
    }
}

fn positive(path: &[&str], value: u64) -> Result<(), Violation> {
    if value == 0 {
        Err(Violation::at(path, "must be at least 1"))
    } else {
        Ok(())
    }
}

/// The `MUXGATE_*` variables of this process, for [`Config::load`].
pub fn process_env() -> Result<Vec<(String, String)>, ConfigError> {
    let mut vars = Vec::new();
    for (name, value) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(layers::ENV_PREFIX) {
            continue;
        }
        let value = value.into_string().map_err(|_| EnvError {
            var: name.to_owned(),
            message: "value is not valid UTF-8".into(),
        })?;
        vars.push((name.to_owned(), value));
    }
    Ok(vars)
}

fn parse_table(text: &str, origin: Origin) -> Result<Table, ConfigError> {
    toml::from_str(text).map_err(|e: toml::de::Error| ConfigError::Syntax {
        origin,
        message: e.to_string().trim_end().to_owned(),
    })
}

fn deserialize(layered: &Layered) -> Result<Config, ConfigError> {
    let value = toml::Value::Table(layered.tree.clone());
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path: KeyPath = err
            .path()
            .iter()
            .map(|segment| segment.to_string())
            .collect();
        let origin = layered.origin_of(&path);
        let mut message = describe_serde_message(err.inner().message());
        if matches!(origin, Origin::Env(_)) && message.contains("expected a string") {
            message.push_str("; quote the value to pass it as a string, e.g. '\"123\"'");
        }
        ConfigError::Invalid {
            key: if path.is_empty() {
                "(top level)".into()
            } else {
                display_path(&path)
            },
            message,
            origin,
        }
    })
}

/// Rewords serde's struct-field messages for a config file's vocabulary (keys, not fields).
/// The key path already names the offending key, so "unknown field `x`" becomes "unknown key".
fn describe_serde_message(message: &str) -> String {
    if let Some(rest) = message.strip_prefix("unknown field `")
        && let Some((_, tail)) = rest.split_once('`')
    {
        let tail = tail.trim_start_matches(',').trim_start();
        return match tail {
            "there are no fields" => "unknown key, this table takes no keys".into(),
            tail => format!("unknown key, {tail}"),
        };
    }
    message.replacen("missing field", "missing key", 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn load(file: &str, vars: &[(&str, &str)]) -> Result<LoadedConfig, ConfigError> {
        Config::load_text(Some(("test.toml".into(), file.to_owned())), env(vars))
    }

    /// Loads and expects an `Invalid` error; returns (key, message, origin).
    fn invalid(file: &str, vars: &[(&str, &str)]) -> (String, String, Origin) {
        match load(file, vars) {
            Err(ConfigError::Invalid {
                key,
                message,
                origin,
            }) => (key, message, origin),
            other => panic!("expected an invalid-key error, got {other:?}"),
        }
    }

    fn file_origin() -> Origin {
        Origin::File("test.toml".into())
    }

    #[test]
    fn clients_that_can_type_on_a_shared_server_are_warned_about() {
        assert_eq!(Config::embedded_default().shared_server_warning(), None);
        let readers = Config::from_toml_str("[clients.ro]\nscopes = ['mux:read']\n").unwrap();
        assert_eq!(readers.shared_server_warning(), None);
        let writers = Config::from_toml_str(
            "[clients.alice]\nsessions = ['a-*']\n[clients.bob]\nscopes = ['mux:read', 'mux:write']\n\
             [clients.ro]\nscopes = ['mux:read']\n",
        )
        .unwrap();
        let warning = writers.shared_server_warning().unwrap();
        assert!(warning.contains("(alice, bob)"), "{warning}");
        assert!(warning.contains("server(s) default"), "{warning}");
        let mut isolated = writers;
        isolated.workspaces.enabled = true;
        assert_eq!(isolated.shared_server_warning(), None);
    }

    #[test]
    fn servers_beside_workspaces_are_warned_about() {
        let mut config = Config::embedded_default();
        assert_eq!(config.servers_beside_workspaces_warning(), None);
        config.workspaces.enabled = true;
        let warning = config.servers_beside_workspaces_warning().unwrap();
        assert!(
            warning.starts_with("configured tmux server(s) default beside workspaces"),
            "{warning}"
        );
        assert!(warning.contains("(granted to: no client now)"), "{warning}");
        let granted = Config::from_toml_str(
            "[workspaces]\nenabled = true\n[clients.ops]\nservers = ['def*']\n\
             [clients.other]\nservers = ['build']\n[clients_default]\nservers = ['*']\n",
        )
        .unwrap();
        let warning = granted.servers_beside_workspaces_warning().unwrap();
        assert!(
            warning.contains("(granted to: ops, [clients_default])"),
            "{warning}"
        );
        let only = Config::from_toml_str("[workspaces]\nenabled = true\n[tmux.servers]\n").unwrap();
        assert!(only.tmux.servers.is_empty());
        assert_eq!(only.servers_beside_workspaces_warning(), None);
        let (key, message, _) = invalid("[tmux.servers]\n", &[]);
        assert_eq!(key, "tmux.servers");
        assert!(message.contains("enable [workspaces]"), "{message}");
    }

    #[test]
    fn embedded_default_is_one_default_server_on_loopback() {
        let config = Config::embedded_default();
        assert_eq!(config.http.bind, "127.0.0.1:8767".parse().unwrap());
        let servers: Vec<_> = config.tmux.servers.iter().collect();
        assert_eq!(servers.len(), 1);
        assert_eq!(servers[0].0.as_str(), "default");
        assert_eq!(servers[0].1.socket, TmuxSocket::Default);
        assert!(
            servers[0].1.allow_absent,
            "a fresh machine has no tmux server yet"
        );
        assert!(
            config
                .http
                .allowed_hosts
                .iter()
                .all(|h| !matches!(h, HostPattern::Any))
        );
        assert_eq!(config.engine.command_timeout(), Duration::from_secs(10));
    }

    #[test]
    fn the_example_file_is_valid() {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/config/example.toml"));
        let config = Config::load(Some(path), env(&[])).unwrap().config;
        assert_eq!(config.tmux.servers.len(), 3);
        assert_eq!(
            config.zellij.servers["desk"]
                .session
                .as_ref()
                .map(|s| s.as_str()),
            Some("work")
        );
        assert!(config.http.allowed_origins.is_empty());
    }

    #[test]
    fn a_file_changes_only_its_keys_and_replaces_the_server_list() {
        let loaded = load(
            "[http]\nbind = '0.0.0.0:9000'\n\
             [tmux.servers.build]\nsocket_name = 'build'\nallow_absent = true\n\
             [tmux.servers.shared]\nsocket_path = '/run/tmux/shared'\n",
            &[],
        )
        .unwrap();
        let config = loaded.config;
        assert_eq!(config.http.bind, "0.0.0.0:9000".parse().unwrap());
        assert_eq!(config.http.max_body_bytes, 4 * 1024 * 1024);
        let names: Vec<_> = config.tmux.servers.keys().map(ServerName::as_str).collect();
        assert_eq!(names, ["build", "shared"]);
        assert_eq!(
            config.tmux.servers["build"],
            TmuxServer {
                socket: TmuxSocket::Name("build".into()),
                allow_absent: true
            }
        );
        assert_eq!(
            config.tmux.servers["shared"].socket.args(),
            [
                std::ffi::OsString::from("-S"),
                std::ffi::OsString::from("/run/tmux/shared")
            ]
        );
        assert_eq!(loaded.file, Some(PathBuf::from("test.toml")));
    }

    #[test]
    fn env_overrides_win_over_the_file_and_are_reported() {
        let loaded = load(
            "[http]\nbind = '127.0.0.1:1'\n",
            &[
                ("MUXGATE_HTTP__BIND", "0.0.0.0:8080"),
                (
                    "MUXGATE_HTTP__ALLOWED_HOSTS",
                    r#"["gw.example", "localhost:8080"]"#,
                ),
                ("MUXGATE_ENGINE__PIPELINE_DEPTH", "8"),
                ("MUXGATE_TMUX__SERVERS__DEFAULT__ALLOW_ABSENT", "true"),
                ("MUXGATE_TMUX__SERVERS__CI__SOCKET_NAME", "ci"),
                ("MUXGATE_LOG", "debug"),
            ],
        )
        .unwrap();
        let config = loaded.config;
        assert_eq!(config.http.bind, "0.0.0.0:8080".parse().unwrap());
        assert_eq!(
            config.http.allowed_hosts,
            [
                HostPattern::parse("gw.example").unwrap(),
                HostPattern::parse("localhost:8080").unwrap()
            ]
        );
        assert_eq!(config.engine.pipeline_depth, 8);
        assert!(config.tmux.servers["default"].allow_absent);
        assert_eq!(
            config.tmux.servers["ci"].socket,
            TmuxSocket::Name("ci".into())
        );
        assert_eq!(loaded.env_overrides.len(), 5);
        assert!(
            loaded
                .env_overrides
                .contains(&"MUXGATE_HTTP__BIND".to_string())
        );
    }

    #[test]
    fn unknown_key_names_its_path_the_choices_and_the_file() {
        let (key, message, origin) = invalid("[http]\nbnd = 'x'\n", &[]);
        assert_eq!(key, "http.bnd");
        assert!(
            message.starts_with("unknown key, expected one of"),
            "{message}"
        );
        assert!(message.contains("`bind`"), "{message}");
        assert_eq!(origin, file_origin());
    }

    #[test]
    fn unknown_section_is_refused() {
        let (key, message, _) = invalid("[htp]\nbind = 'x'\n", &[]);
        assert_eq!(key, "htp");
        assert!(message.starts_with("unknown key"), "{message}");
    }

    #[test]
    fn unknown_key_in_a_server_is_refused() {
        let (key, message, _) = invalid("[tmux.servers.a]\nsocket = 'x'\n", &[]);
        assert_eq!(key, "tmux.servers.a.socket");
        assert!(message.contains("`socket_name`"), "{message}");
    }

    #[test]
    fn unknown_key_from_env_names_the_variable() {
        let (key, _, origin) = invalid("", &[("MUXGATE_ENGINE__QUEUE_CAP", "1")]);
        assert_eq!(key, "engine.queue_cap");
        assert_eq!(origin, Origin::Env("MUXGATE_ENGINE__QUEUE_CAP".into()));
    }

    #[test]
    fn bad_values_name_the_key() {
        let (key, message, origin) = invalid("[engine]\nqueue_capacity = -1\n", &[]);
        assert_eq!(key, "engine.queue_capacity");
        assert!(message.contains("invalid value"), "{message}");
        assert_eq!(origin, file_origin());

        let (key, message, _) = invalid("[http]\nbind = 'localhost'\n", &[]);
        assert_eq!(key, "http.bind");
        assert!(message.contains("socket address"), "{message}");

        let (key, message, _) = invalid("[http]\nmax_body_bytes = 'big'\n", &[]);
        assert_eq!(key, "http.max_body_bytes");
        assert!(message.contains("invalid type"), "{message}");
    }

    #[test]
    fn bad_value_from_env_names_the_variable_and_suggests_quoting() {
        let (key, message, origin) = invalid(
            "[tmux.servers.a]\nsocket_name = 'a'\n",
            &[("MUXGATE_TMUX__SERVERS__A__SOCKET_NAME", "123")],
        );
        assert_eq!(key, "tmux.servers.a.socket_name");
        assert_eq!(
            origin,
            Origin::Env("MUXGATE_TMUX__SERVERS__A__SOCKET_NAME".into())
        );
        assert!(message.contains("quote the value"), "{message}");

        let (key, _, origin) = invalid("", &[("MUXGATE_HTTP__BIND", "nonsense")]);
        assert_eq!(key, "http.bind");
        assert_eq!(origin, Origin::Env("MUXGATE_HTTP__BIND".into()));
    }

    #[test]
    fn bad_host_and_origin_patterns_are_refused() {
        let (key, message, _) = invalid("[http]\nallowed_hosts = ['a b']\n", &[]);
        assert_eq!(key, "http.allowed_hosts[0]");
        assert!(message.contains("invalid host pattern"), "{message}");

        let (key, message, _) = invalid(
            "[http]\nallowed_origins = ['http://ok:1', 'localhost']\n",
            &[],
        );
        assert_eq!(key, "http.allowed_origins[1]");
        assert!(message.contains("invalid origin pattern"), "{message}");

        let (key, message, _) = invalid("[http]\nallowed_hosts = []\n", &[]);
        assert_eq!(key, "http.allowed_hosts");
        assert!(message.contains("[\"*\"]"), "{message}");
    }

    #[test]
    fn workspaces_run_only_where_they_can() {
        let host = "[hosts.build-1]\nssh = 'agent@build-1:22'\nidentity_file = '/k'\n\
                    known_hosts = '/kh'\n";
        for (text, said) in [
            ("[workspaces]\nhosts = []\n".to_owned(), "at least one"),
            (
                "[workspaces]\nhosts = ['local', 'local']\n".to_owned(),
                "named twice",
            ),
            (
                "[workspaces]\nhosts = ['build-2']\n".to_owned(),
                "neither \"local\" nor",
            ),
            (
                format!("[workspaces]\nhosts = ['build-1']\n{host}"),
                "set hosts.build-1.workspaces_config",
            ),
            (
                format!("[workspaces]\nhosts = ['build-1']\n{host}workspaces_config = 'rel'\n"),
                "absolute path",
            ),
        ] {
            let (_, message, _) = invalid(&text, &[]);
            assert!(message.contains(said), "{text}: {message}");
        }
        let placed = format!(
            "[workspaces]\nhosts = ['local', 'build-1']\n{host}workspaces_config = '/etc/m.toml'\n"
        );
        let config = Config::from_toml_str(&placed).expect("valid");
        assert_eq!(config.workspaces.hosts, ["local", "build-1"]);
        assert_eq!(
            Config::embedded_default().workspaces.hosts,
            [crate::workspace::config::LOCAL_HOST]
        );
    }

    #[test]
    fn both_socket_kinds_at_once_are_refused() {
        let (key, message, origin) = invalid(
            "[tmux.servers.a]\nsocket_name = 'a'\nsocket_path = '/tmp/a'\n",
            &[],
        );
        assert_eq!(key, "tmux.servers.a");
        assert!(message.contains("mutually exclusive"), "{message}");
        assert_eq!(origin, file_origin());
    }

    #[test]
    fn socket_names_and_paths_are_checked() {
        for bad in ["a/b", "", "..", "x y"] {
            let (key, message, _) =
                invalid(&format!("[tmux.servers.a]\nsocket_name = '{bad}'\n"), &[]);
            assert_eq!(key, "tmux.servers.a");
            assert!(message.contains("socket_name"), "{bad}: {message}");
        }
        let (key, message, _) = invalid("[tmux.servers.a]\nsocket_path = 'rel/sock'\n", &[]);
        assert_eq!(key, "tmux.servers.a");
        assert!(message.contains("absolute"), "{message}");
    }

    #[test]
    fn server_names_are_checked() {
        let long = "x".repeat(65);
        for bad in ["\"a b\"", "\"a/b\"", "\"\"", long.as_str()] {
            let (key, message, _) = invalid(&format!("[tmux.servers.{bad}]\n"), &[]);
            assert!(key.starts_with("tmux.servers"), "{bad}: {key}");
            assert!(message.contains("invalid server name"), "{bad}: {message}");
        }
        assert!(ServerName::parse("ok.name-1_2").is_ok());
        assert!(ServerName::parse(&"x".repeat(64)).is_ok());
    }

    #[test]
    fn an_output_budget_too_small_for_an_answer_is_refused() {
        let (key, message, _) = invalid("[limits]\nmax_output_bytes = 4096\n", &[]);
        assert_eq!(key, "limits.max_output_bytes");
        assert!(message.contains("at least 16384"), "{message}");
        let (key, _, _) = invalid("[clients.bot.limits]\nmax_output_bytes = 100\n", &[]);
        assert_eq!(key, "clients.bot.limits.max_output_bytes");
    }

    #[test]
    fn a_clients_limits_are_read_as_limit_overrides() {
        let config = Config::from_toml_str(
            "[clients.bot]\nscopes = [\"mux:read\"]\n[clients.bot.limits]\ntool_calls_per_second = 5\n",
        )
        .unwrap();
        let bot = &config.clients["bot"];
        assert_eq!(bot.limits.tool_calls_per_second.map(|n| n.get()), Some(5));
        assert_eq!(bot.limits.max_output_bytes, None);
        let (key, _, _) = invalid("[clients.bot.limits]\ntool_calls = 5\n", &[]);
        assert_eq!(key, "clients.bot.limits.tool_calls");
    }

    #[test]
    fn an_empty_server_list_is_refused() {
        let (key, message, _) = invalid("[tmux.servers]\n", &[]);
        assert_eq!(key, "tmux.servers");
        assert!(message.contains("no tmux server"), "{message}");
    }

    #[test]
    fn two_names_for_one_socket_are_refused() {
        let (key, message, _) = invalid(
            "[tmux.servers.a]\nsocket_name = 's'\n[tmux.servers.b]\nsocket_name = 's'\n",
            &[],
        );
        assert_eq!(key, "tmux.servers.b");
        assert!(message.contains("tmux.servers.a"), "{message}");
        let (key, _, _) = invalid("[tmux.servers.a]\n[tmux.servers.b]\n", &[]);
        assert_eq!(key, "tmux.servers.b");
    }

    #[test]
    fn http_counts_are_checked() {
        for key in [
            "max_body_bytes",
            "session_idle_secs",
            "max_sessions_per_client",
            "progress_interval_secs",
        ] {
            let (path, message, _) = invalid(&format!("[http]\n{key} = 0\n"), &[]);
            assert_eq!(path, format!("http.{key}"));
            assert_eq!(message, "must be at least 1");
        }
    }

    #[test]
    fn engine_limits_are_checked() {
        for key in [
            "command_timeout_ms",
            "queue_capacity",
            "pipeline_depth",
            "output_ring_bytes",
            "output_idle_close_secs",
            "pause_after_secs",
            "max_watched_sessions",
        ] {
            let (path, message, _) = invalid(&format!("[engine]\n{key} = 0\n"), &[]);
            assert_eq!(path, format!("engine.{key}"));
            assert_eq!(message, "must be at least 1");
        }
        let (key, _, _) = invalid("[engine]\ntmux_bin = ''\n", &[]);
        assert_eq!(key, "engine.tmux_bin");
    }

    #[test]
    fn engine_defaults_are_the_engines_own() {
        assert_eq!(
            Config::embedded_default().engine.settings(),
            EngineSettings::default()
        );
    }

    #[test]
    fn http_limits_are_checked() {
        let (key, _, _) = invalid("[http]\nmax_body_bytes = 0\n", &[]);
        assert_eq!(key, "http.max_body_bytes");
        let (key, _, origin) = invalid("", &[("MUXGATE_HTTP__SESSION_IDLE_SECS", "0")]);
        assert_eq!(key, "http.session_idle_secs");
        assert_eq!(
            origin,
            Origin::Env("MUXGATE_HTTP__SESSION_IDLE_SECS".into())
        );
    }

    #[test]
    fn zellij_servers_are_named_like_tmux_servers() {
        let config = load(
            "[zellij.servers.desk]\nsession = 'work'\nsocket_dir = '/run/z'\n\
             [zellij.servers.other]\n",
            &[("MUXGATE_ZELLIJ__CALL_TIMEOUT_MS", "700")],
        )
        .unwrap()
        .config;
        assert!(Config::embedded_default().zellij.servers.is_empty());
        let names: Vec<_> = config
            .zellij
            .servers
            .keys()
            .map(ServerName::as_str)
            .collect();
        assert_eq!(names, ["desk", "other"]);
        let spec = config.zellij.spec(&config.zellij.servers["desk"]);
        assert_eq!(spec.env.socket_dir, Some(PathBuf::from("/run/z")));
        assert_eq!(spec.env.binary, PathBuf::from("zellij"));
        assert_eq!(spec.call_timeout, Duration::from_millis(700));
        assert_eq!(config.zellij.servers["other"].session, None);
    }

    #[test]
    fn zellij_server_errors_name_the_key() {
        let (key, message, _) = invalid("[zellij.servers.a]\nsession = 'a b'\n", &[]);
        assert_eq!(key, "zellij.servers.a.session");
        assert!(message.contains("invalid session name"), "{message}");
        let (key, message, _) = invalid("[zellij.servers.a]\nsocket = '/x'\n", &[]);
        assert_eq!(key, "zellij.servers.a.socket");
        assert!(message.contains("`socket_dir`"), "{message}");
        let (key, message, _) = invalid("[zellij.servers.a]\nsocket_dir = 'rel'\n", &[]);
        assert_eq!(key, "zellij.servers.a.socket_dir");
        assert!(message.contains("absolute"), "{message}");
        let (key, message, _) = invalid("[zellij.servers.default]\n", &[]);
        assert_eq!(key, "zellij.servers.default");
        assert!(message.contains("tmux.servers.default"), "{message}");
        let (key, message, _) = invalid(
            "[zellij.servers.a]\nsession = 's'\n[zellij.servers.b]\nsession = 's'\n",
            &[],
        );
        assert_eq!(key, "zellij.servers.b");
        assert!(message.contains("zellij.servers.a"), "{message}");
        let (key, message, _) = invalid("[zellij]\nop_timeout_ms = 0\n", &[]);
        assert_eq!(key, "zellij.op_timeout_ms");
        assert_eq!(message, "must be at least 1");
        let (key, _, _) = invalid("[zellij]\nbinary = ''\n", &[]);
        assert_eq!(key, "zellij.binary");
    }

    #[test]
    fn syntax_errors_name_the_file_and_line() {
        match load("[http\nbind = 1\n", &[]) {
            Err(ConfigError::Syntax { origin, message }) => {
                assert_eq!(origin, file_origin());
                assert!(message.contains("line 1"), "{message}");
            }
            other => panic!("expected a syntax error, got {other:?}"),
        }
    }

    #[test]
    fn env_errors_surface() {
        match load("", &[("MUXGATE_HTTP_BIND", "x")]) {
            Err(ConfigError::Env(err)) => assert_eq!(err.var, "MUXGATE_HTTP_BIND"),
            other => panic!("expected an env error, got {other:?}"),
        }
    }

    #[test]
    fn a_public_url_is_an_http_base_without_query_or_user() {
        let url = |text: &str| PublicUrl::try_from(text.to_owned());
        assert_eq!(
            url("https://gateway.example/").unwrap().join("/secret"),
            "https://gateway.example/secret"
        );
        assert_eq!(
            url("http://10.0.0.5:8767/mux").unwrap().join("/secret"),
            "http://10.0.0.5:8767/mux/secret"
        );
        for bad in [
            "gateway.example",
            "ftp://gateway.example",
            "https://gateway.example/?a=1",
            "https://gateway.example/#x",
            "https://user@gateway.example",
            "file:///etc",
        ] {
            assert!(url(bad).unwrap_err().contains("http.public_url"), "{bad}");
        }
    }

    #[test]
    fn a_missing_file_is_a_read_error() {
        let err = Config::load(Some(Path::new("/nonexistent/muxgate.toml")), env(&[])).unwrap_err();
        assert!(matches!(err, ConfigError::Read { .. }), "{err:?}");
        assert!(err.to_string().contains("/nonexistent/muxgate.toml"));
    }

    #[test]
    fn recordings_are_off_by_default_and_checked_when_set() {
        let default = load("", &[]).unwrap().config.recordings;
        assert!(!default.enabled);
        assert_eq!(
            default,
            RecordingsConfig::default(),
            "default.toml says what the code does"
        );
        let cases = [
            (
                "[recordings]\nmax_file_bytes = 100\n",
                "recordings.max_file_bytes",
            ),
            (
                "[recordings]\nmax_file_bytes = 8192\nmax_total_bytes = 4096\n",
                "recordings.max_total_bytes",
            ),
            ("[recordings]\nmax_panes = 0\n", "recordings.max_panes"),
            (
                "[[recordings.rules]]\nname = \"r\"\nsessions = [\"\"]\n",
                "recordings.rules[0].sessions",
            ),
            ("[recordings]\nenable = true\n", "recordings.enable"),
        ];
        for (text, key) in cases {
            let error = load(text, &[]).unwrap_err().to_string();
            assert!(error.starts_with(key), "{text}: {error}");
        }
    }

    #[test]
    fn error_display_reads_as_one_line_with_key_and_origin() {
        let err = load("[http]\nbnd = 1\n", &[]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("http.bnd: unknown key, expected one of"),
            "{text}"
        );
        assert!(text.ends_with("(set in config file test.toml)"), "{text}");
    }
}
