//! The two servers under test and the agents that call them, both through rmcp's client:
//! - muxgate: a `muxgate serve` child process (this build's release binary) on a loopback port,
//!   one Streamable HTTP session per agent, each agent with a token of its own;
//! - the reference: PyPI `libtmux-mcp` (stdio only), installed into a virtualenv outside the
//!   repository; every agent starts its own server process, as stdio MCP clients do.
//!
//! [`Call`] names one operation in neutral terms and turns it into each server's arguments
//! (`target` for muxgate, `pane_id` / `session_name` for the reference).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use http::{HeaderName, HeaderValue};
use muxgate::auth::{MintRequest, TokenMinter};
use muxgate::config::Config;
use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::{Map, Value, json};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::cost::Era;

/// The reference version the numbers in BENCHMARKS.md were measured against.
pub(crate) const REFERENCE_PACKAGE: &str = "libtmux-mcp";
pub(crate) const REFERENCE_VERSION: &str = "0.1.0a22";

pub(crate) type McpClient = RunningService<rmcp::RoleClient, ClientConfig>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    Muxgate,
    Reference,
}

impl Flavor {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Flavor::Muxgate => "muxgate",
            Flavor::Reference => "libtmux-mcp",
        }
    }
}

/// One operation, in terms both servers understand.
pub(crate) enum Call<'a> {
    /// Text typed literally, then Enter if `enter`.
    SendKeys {
        pane: &'a str,
        keys: &'a str,
        enter: bool,
    },
    /// Literal text, no Enter: what a raw `send-keys -l` does.
    TypeText {
        pane: &'a str,
        text: &'a str,
    },
    CapturePane {
        pane: &'a str,
    },
    SnapshotPane {
        pane: &'a str,
    },
    ListPanes {
        session: &'a str,
    },
    RunCommand {
        pane: &'a str,
        command: &'a str,
    },
    /// `send_keys_batch`: each (pane, text) typed literally, then Enter.
    SendKeysBatch {
        ops: &'a [(String, String)],
    },
    WaitForText {
        pane: &'a str,
        pattern: &'a str,
        timeout_secs: f64,
    },
}

impl Call<'_> {
    /// The tool name and arguments for `flavor`.
    pub(crate) fn request(&self, flavor: Flavor) -> (&'static str, Value) {
        let pane_key = match flavor {
            Flavor::Muxgate => "target",
            Flavor::Reference => "pane_id",
        };
        let mut args = Map::new();
        let name = match self {
            Call::SendKeys { pane, keys, enter } => {
                args.insert(pane_key.into(), json!(pane));
                args.insert("keys".into(), json!(keys));
                args.insert("literal".into(), json!(true));
                args.insert("enter".into(), json!(enter));
                "send_keys"
            }
            Call::TypeText { pane, text } => {
                args.insert(pane_key.into(), json!(pane));
                args.insert("keys".into(), json!(text));
                args.insert("literal".into(), json!(true));
                args.insert("enter".into(), json!(false));
                "send_keys"
            }
            Call::CapturePane { pane } => {
                args.insert(pane_key.into(), json!(pane));
                "capture_pane"
            }
            Call::SnapshotPane { pane } => {
                args.insert(pane_key.into(), json!(pane));
                "snapshot_pane"
            }
            Call::ListPanes { session } => {
                let key = match flavor {
                    Flavor::Muxgate => "target",
                    Flavor::Reference => "session_name",
                };
                args.insert(key.into(), json!(session));
                "list_panes"
            }
            Call::RunCommand { pane, command } => {
                args.insert(pane_key.into(), json!(pane));
                args.insert("command".into(), json!(command));
                "run_command"
            }
            Call::SendKeysBatch { ops } => {
                let ops: Vec<Value> = ops
                    .iter()
                    .map(|(pane, keys)| json!({pane_key: pane, "keys": keys, "literal": true, "enter": true}))
                    .collect();
                args.insert("operations".into(), Value::Array(ops));
                "send_keys_batch"
            }
            Call::WaitForText {
                pane,
                pattern,
                timeout_secs,
            } => {
                args.insert(pane_key.into(), json!(pane));
                args.insert("patterns".into(), json!([pattern]));
                args.insert("timeout".into(), json!(timeout_secs));
                "wait_for_text"
            }
        };
        (name, Value::Object(args))
    }
}

/// One agent: an MCP session with one of the servers.
pub(crate) struct Agent {
    pub flavor: Flavor,
    client: McpClient,
    /// The reference's server process (stdio), killed with the agent.
    process: Option<Child>,
}

impl Agent {
    /// Calls the tool for `call` and returns its structured result (or `null`); a tool error
    /// is an error here, so a failing call can never pass for a fast one.
    pub(crate) async fn call(&self, call: &Call<'_>) -> Result<Value> {
        let (name, args) = call.request(self.flavor);
        self.call_tool(name, args).await
    }

    /// Calls tool `name` with `args` (a JSON object) as [`Self::call`] does.
    pub(crate) async fn call_tool(&self, name: &'static str, args: Value) -> Result<Value> {
        let Value::Object(args) = args else {
            bail!("{name}: arguments must be an object")
        };
        let result = self
            .client
            .call_tool(CallToolRequestParams::new(name).with_arguments(args))
            .await
            .with_context(|| format!("{} {name}: tools/call failed", self.flavor.name()))?;
        if result.is_error == Some(true) {
            bail!(
                "{} {name} returned an error: {:?}",
                self.flavor.name(),
                result.content
            );
        }
        Ok(result.structured_content.unwrap_or(Value::Null))
    }

    /// The reference's server process id (muxgate agents share the gateway's).
    pub(crate) fn process_id(&self) -> Option<u32> {
        self.process.as_ref().and_then(Child::id)
    }

    /// Ends the session (and the reference's process).
    pub(crate) async fn close(mut self) {
        let _ = self.client.cancel().await;
        if let Some(process) = &mut self.process {
            let _ = process.kill().await;
        }
    }
}

/// A running `muxgate serve` with its own config; killed on drop.
pub(crate) struct Muxgate {
    child: Child,
    pid: u32,
    mcp_url: String,
    metrics_url: String,
    minter: TokenMinter,
    http: reqwest::Client,
    _dir: TempDir,
}

impl Muxgate {
    /// Starts the gateway on a loopback port, driving the tmux server on `socket`. Rate limits
    /// are lifted (this measures speed, not limits); everything else keeps its default.
    /// `path` replaces `PATH` for the gateway (the spawn counter's wrapper).
    pub(crate) async fn start(socket: &str, path: Option<&OsString>) -> Result<Self> {
        Self::start_with(socket, path, "").await
    }

    /// [`Self::start`] with `extra` TOML appended to the config; `{dir}` in it becomes the
    /// gateway's own temporary directory.
    pub(crate) async fn start_with(
        socket: &str,
        path: Option<&OsString>,
        extra: &str,
    ) -> Result<Self> {
        let dir = tempfile::tempdir().context("create a temporary directory")?;
        let secret = muxgate::auth::generate_secret();
        let config_text = format!(
            r#"[http]
bind = "127.0.0.1:0"

[tmux.servers.bench]
socket_name = "{socket}"

[auth]
secret = "{secret}"

[engine]
# The idle-sessions case watches up to 4,096 sessions at once, beyond the default cap.
max_watched_sessions = 8192

[limits]
requests_per_second = 1000000
request_burst = 1000000
tool_calls_per_second = 1000000
tool_call_burst = 1000000
worker_queue_share = 8192
# Waits in flight for the whole idle-sessions case (minutes at 4,096): none ends and is called
# again while the idle server is measured.
max_wait_seconds = 3600

[log]
level = "warn"
{extra}"#,
            extra = extra.replace("{dir}", &dir.path().display().to_string())
        );
        let config = Config::from_toml_str(&config_text).context("the benchmark's config")?;
        let minter = TokenMinter::from_config(&config.auth).context("token minter")?;
        let config_path = dir.path().join("muxgate.toml");
        std::fs::write(&config_path, &config_text).context("write the config")?;
        let log = std::fs::File::create(dir.path().join("muxgate.log")).context("log file")?;

        let mut command = Command::new(env!("CARGO_BIN_EXE_muxgate"));
        command
            .arg("serve")
            .arg("--config")
            .arg(&config_path)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .env_remove("MUXGATE_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .kill_on_drop(true);
        if let Some(path) = path {
            command.env("PATH", path);
        }
        let mut child = command.spawn().context("start muxgate serve")?;
        let pid = child.id().context("muxgate exited at once")?;
        let stdout = child.stdout.take().context("muxgate's stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let mcp_url = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await? {
                if let Some(url) = line.trim().strip_prefix("MCP endpoint: ") {
                    return Ok(url.to_owned());
                }
            }
            bail!("muxgate serve exited before printing its endpoint")
        })
        .await
        .context("muxgate serve did not start within 30 s")??;
        // Keep reading stdout so the gateway never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let metrics_url = format!("{}/metrics", mcp_url.trim_end_matches("/mcp"));
        Ok(Self {
            child,
            pid,
            mcp_url,
            metrics_url,
            minter,
            http: reqwest::Client::new(),
            _dir: dir,
        })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The gateway's temporary directory (its config, log, and state when configured there).
    pub(crate) fn dir(&self) -> &Path {
        self._dir.path()
    }

    /// The MCP endpoint's URL.
    pub(crate) fn mcp_url(&self) -> &str {
        &self.mcp_url
    }

    /// A new MCP session for agent `n`, with a token of its own (`sub` = `agent-<n>`).
    pub(crate) async fn agent(&self, n: usize) -> Result<Agent> {
        self.agent_speaking(n, Era::Session).await
    }

    /// Agent `n`, speaking MCP as `era` does: a 2025-06-18 session, or 2026-07-28 requests
    /// with no session (after `server/discover`).
    pub(crate) async fn agent_speaking(&self, n: usize, era: Era) -> Result<Agent> {
        let token = self.token(n)?;
        let mut config =
            StreamableHttpClientTransportConfig::with_uri(self.mcp_url.as_str()).auth_header(token);
        if let Era::StatelessThroughRmcp = era {
            // A header no tool declares: the gateway's direct path leaves the request to rmcp.
            config.custom_headers.insert(
                HeaderName::from_static("mcp-param-bench"),
                HeaderValue::from_static("rmcp"),
            );
        }
        let transport = StreamableHttpClientTransport::from_config(config);
        let client = match era {
            Era::Session => ClientConfig::default()
                .serve(transport)
                .await
                .context("connect to muxgate")?,
            Era::Stateless | Era::StatelessThroughRmcp => {
                let discover = ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                };
                ClientConfig::default()
                    .serve_with_lifecycle(transport, discover)
                    .await
                    .context("discover muxgate")?
            }
        };
        Ok(Agent {
            flavor: Flavor::Muxgate,
            client,
            process: None,
        })
    }

    /// A token with every tool scope for agent `n` (`sub` = `agent-<n>`).
    pub(crate) fn token(&self, n: usize) -> Result<String> {
        self.mint(
            &format!("agent-{n}"),
            &["mux:read", "mux:write", "mux:admin"],
        )
    }

    /// A token of a human approver (`sub` = `approver`, scope `mux:approve` alone).
    pub(crate) fn approver_token(&self) -> Result<String> {
        self.mint("approver", &[muxgate::auth::SCOPE_APPROVE])
    }

    fn mint(&self, sub: &str, scopes: &[&str]) -> Result<String> {
        self.minter
            .mint(&MintRequest {
                sub: sub.to_owned(),
                scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
                ttl: Duration::from_secs(24 * 3600),
                servers: None,
                sessions: None,
                own_sessions: false,
                workspace: None,
                toolsets: None,
            })
            .with_context(|| format!("mint a token for {sub}"))
    }

    /// The sum of a metric's samples (all label sets) from `/metrics`.
    pub(crate) async fn metric(&self, name: &str) -> Result<f64> {
        let text = self
            .http
            .get(&self.metrics_url)
            .send()
            .await
            .context("GET /metrics")?
            .text()
            .await
            .context("read /metrics")?;
        Ok(text
            .lines()
            .filter(|line| {
                line.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with([' ', '{']))
            })
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum())
    }

    /// Stops the gateway.
    pub(crate) async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// The reference server installed in a virtualenv.
pub(crate) struct Reference {
    executable: PathBuf,
}

impl Reference {
    /// Installs [`REFERENCE_PACKAGE`] == [`REFERENCE_VERSION`] into the virtualenv at `venv`
    /// (created with `python3 -m venv` when missing; pip does nothing when it is already
    /// there).
    pub(crate) fn install(venv: &Path) -> Result<Self> {
        let python = venv.join("bin/python");
        if !python.is_file() {
            eprintln!("creating a virtualenv at {}", venv.display());
            let status = std::process::Command::new("python3")
                .args(["-m", "venv"])
                .arg(venv)
                .status()
                .context("run python3 -m venv (is python3 with venv installed?)")?;
            ensure!(
                status.success(),
                "python3 -m venv {} failed",
                venv.display()
            );
        }
        let output = std::process::Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(format!("{REFERENCE_PACKAGE}=={REFERENCE_VERSION}"))
            .output()
            .context("run pip")?;
        ensure!(
            output.status.success(),
            "pip install {REFERENCE_PACKAGE}=={REFERENCE_VERSION} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        let executable = venv.join("bin").join(REFERENCE_PACKAGE);
        ensure!(
            executable.is_file(),
            "{} is missing after the install",
            executable.display()
        );
        Ok(Self { executable })
    }

    /// Starts a server process driving the tmux server on `socket` (every tool enabled) and
    /// connects to it over stdio. `path` replaces `PATH` (the spawn counter's wrapper).
    pub(crate) async fn agent(&self, socket: &str, path: Option<&OsString>) -> Result<Agent> {
        let mut command = Command::new(&self.executable);
        command
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .env("LIBTMUX_SOCKET", socket)
            .env("LIBTMUX_TOOLSETS", "inspect,manage,execute,teardown")
            // Quiet and offline, like muxgate at `warn`: no per-request log lines, no banner,
            // no update check.
            .env("FASTMCP_LOG_LEVEL", "WARNING")
            .env("FASTMCP_SHOW_SERVER_BANNER", "false")
            .env("FASTMCP_CHECK_FOR_UPDATES", "off")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        if let Some(path) = path {
            command.env("PATH", path);
        }
        let mut process = command
            .spawn()
            .with_context(|| format!("start {}", self.executable.display()))?;
        let stdout = process.stdout.take().context("the reference's stdout")?;
        let stdin = process.stdin.take().context("the reference's stdin")?;
        let client = tokio::time::timeout(
            Duration::from_secs(60),
            ClientConfig::default().serve((stdout, stdin)),
        )
        .await
        .context("the reference did not answer initialize within 60 s")?
        .context("connect to the reference over stdio")?;
        Ok(Agent {
            flavor: Flavor::Reference,
            client,
            process: Some(process),
        })
    }
}

/// The `Mcp-Session-Id` an `initialize` answer opened.
pub(crate) fn session_id(response: &reqwest::Response) -> Result<String> {
    Ok(response
        .headers()
        .get("mcp-session-id")
        .context("a session id")?
        .to_str()
        .context("an ASCII session id")?
        .to_owned())
}

/// Where the reference is installed: `$MUXGATE_BENCH_VENV`, else a cache directory in the
/// user's home (never inside the repository).
pub(crate) fn default_venv() -> Result<PathBuf> {
    if let Some(venv) = std::env::var_os("MUXGATE_BENCH_VENV") {
        return Ok(PathBuf::from(venv));
    }
    let cache = match std::env::var_os("XDG_CACHE_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").context("HOME is not set")?).join(".cache"),
    };
    Ok(cache
        .join("muxgate-bench")
        .join(format!("{REFERENCE_PACKAGE}-{REFERENCE_VERSION}")))
}
