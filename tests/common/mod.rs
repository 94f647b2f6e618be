//! Helpers shared by the integration tests: a real gateway on a loopback port, private tmux
//! servers that are killed when dropped ([`tmux`]), and raw MCP-over-HTTP requests. Including
//! this module also gives the test process an environment of its own ([`isolation`]).
//!
//! Each test binary uses a subset of these helpers.
#![allow(dead_code)]

pub(crate) mod browser;
pub(crate) mod calls;
pub(crate) mod human;
pub(crate) mod isolation;
pub(crate) mod logs;
pub(crate) mod mcp_client;
pub(crate) mod needs;
pub(crate) mod probe;
pub(crate) mod pty;
pub(crate) mod serve;
pub(crate) mod sockets;
pub(crate) mod ssh_host;
pub(crate) mod tmux;
pub(crate) mod tools;
pub(crate) mod webhook;
pub(crate) mod workspaces;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use muxgate::auth::config::SecretString;
use muxgate::auth::{MintRequest, TokenMinter};
use muxgate::config::Config;
use muxgate::gateway::{Gateway, mint_full_access};
use muxgate_tmux::TmuxEngine;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The `{kind, message, suggestion}` of a failed tool call, parsed from its text
/// (`error (<kind>): <message>\nsuggestion: <suggestion>`); panics on any other result.
pub(crate) fn tool_error(result: &rmcp::model::CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(true), "expected an error: {result:?}");
    assert_eq!(
        result.structured_content, None,
        "errors carry no structured content"
    );
    let text = &result.content[0].as_text().expect("error text").text;
    let (head, suggestion) = text
        .rsplit_once("\nsuggestion: ")
        .unwrap_or_else(|| panic!("no suggestion line: {text}"));
    let (kind, message) = head
        .strip_prefix("error (")
        .and_then(|rest| rest.split_once("): "))
        .unwrap_or_else(|| panic!("not a tool error: {text}"));
    json!({"kind": kind, "message": message, "suggestion": suggestion})
}

/// The protocol versions the tests speak.
pub(crate) const LEGACY_VERSION: &str = "2025-11-25";
pub(crate) const STATELESS_VERSION: &str = "2026-07-28";

/// The HS256 secret test gateways sign and verify with.
pub(crate) const TEST_SECRET: &str = "muxgate-test-secret-0123456789abcdef0123456789";

/// A gateway serving on `127.0.0.1:<free port>` inside the test process.
pub(crate) struct TestGateway {
    pub addr: SocketAddr,
    /// `http://127.0.0.1:<port>`
    pub base: String,
    /// `http://127.0.0.1:<port>/mcp`
    pub mcp_url: String,
    /// A token with every scope, for `sub` "test".
    pub token: String,
    pub config: Arc<Config>,
    /// The gateway's tmux engine, for checks on its counters.
    pub engine: TmuxEngine,
    pub shutdown: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
    /// The state directory made for this gateway when its config named none.
    state_dir: Option<tempfile::TempDir>,
}

impl TestGateway {
    /// Cancels the gateway and waits for its server task to end (at most `timeout`).
    pub(crate) async fn stop(mut self, timeout: Duration) -> std::io::Result<()> {
        self.shutdown.cancel();
        let task = self.task.take().expect("task present until stopped");
        tokio::time::timeout(timeout, task)
            .await
            .expect("gateway did not stop in time")
            .expect("gateway task panicked")
    }

    /// A token for `sub` with `scopes`, signed with the gateway's key.
    pub(crate) fn mint(&self, sub: &str, scopes: &[&str]) -> String {
        mint_for(&self.config, sub, scopes, None)
    }

    /// rmcp's client transport, authenticated with `token`.
    pub(crate) fn transport_with(
        &self,
        token: &str,
    ) -> StreamableHttpClientTransport<reqwest::Client> {
        StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.mcp_url.as_str()).auth_header(token),
        )
    }

    /// rmcp's client transport with the full-access test token.
    pub(crate) fn transport(&self) -> StreamableHttpClientTransport<reqwest::Client> {
        self.transport_with(&self.token)
    }

    /// A raw MCP client carrying the full-access test token.
    pub(crate) fn raw(&self) -> RawMcp {
        let mut raw = RawMcp::new(&self.mcp_url);
        raw.bearer = Some(self.token.clone());
        raw
    }
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A token for `sub` with `scopes` (an hour long), signed with `config`'s key; limited to the
/// servers matching `servers` when given.
pub(crate) fn mint_for(
    config: &Config,
    sub: &str,
    scopes: &[&str],
    servers: Option<&[&str]>,
) -> String {
    TokenMinter::from_config(&config.auth)
        .expect("minter")
        .mint(&MintRequest {
            sub: sub.to_owned(),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            ttl: Duration::from_secs(3600),
            servers: servers.map(|s| s.iter().map(|p| (*p).to_owned()).collect()),
            sessions: None,
            own_sessions: false,
            workspace: None,
            toolsets: None,
        })
        .expect("mint")
}

/// Starts a gateway for `config` (its `http.bind` is ignored; without an auth secret it gets
/// [`TEST_SECRET`], without a state directory a fresh one) exactly as `muxgate serve`
/// assembles one.
pub(crate) async fn spawn_gateway(config: Config) -> TestGateway {
    spawn_gateway_with(config, |_, _| {}).await
}

/// [`spawn_gateway`], with the configuration finished by `finish` once the gateway's address
/// is known (a `http.public_url` naming it, say).
pub(crate) async fn spawn_gateway_with(
    mut config: Config,
    finish: impl FnOnce(&mut Config, SocketAddr),
) -> TestGateway {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("local address");
    finish(&mut config, addr);
    if config.auth.secret.is_none() && config.auth.secret_file.is_none() {
        config.auth.secret = Some(SecretString::new(TEST_SECRET));
    }
    let state_dir = match config.state.dir {
        Some(_) => None,
        None => {
            let dir = tempfile::tempdir().expect("a state directory");
            config.state.dir = Some(dir.path().to_owned());
            Some(dir)
        }
    };
    let config = Arc::new(config);
    let shutdown = CancellationToken::new();
    let mcp_url = format!("http://{addr}/mcp");
    let gateway = Gateway::build(config.clone(), &mcp_url, shutdown.clone())
        .await
        .expect("assemble the gateway");
    let engine = gateway.engine.clone();
    let task = tokio::spawn(gateway.serve(listener));
    let token = mint_full_access(&config, "test", Duration::from_secs(3600)).expect("mint");
    TestGateway {
        addr,
        base: format!("http://{addr}"),
        mcp_url,
        token,
        config,
        engine,
        shutdown,
        task: Some(task),
        state_dir,
    }
}

/// A config whose rate limits do not get in the way of tests that make many calls quickly.
pub(crate) fn relaxed(mut config: Config) -> Config {
    let many = std::num::NonZeroU32::new(100_000).expect("non-zero");
    config.limits.requests_per_second = many;
    config.limits.request_burst = many;
    config.limits.tool_calls_per_second = many;
    config.limits.tool_call_burst = many;
    config
}

/// A generous deadline for subscribing to a pane's output in engine tests.
pub(crate) fn subscribe_deadline() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(30)
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes.
pub(crate) async fn wait_until(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if condition() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Like [`wait_until`], for a condition that has to be awaited (a scrape of `/metrics`, a call).
pub(crate) async fn wait_until_async<F: Future<Output = bool>>(
    timeout: Duration,
    mut condition: impl FnMut() -> F,
) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if condition().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A raw MCP-over-HTTP client for tests that check the wire (headers, status codes).
pub(crate) struct RawMcp {
    pub http: reqwest::Client,
    pub url: String,
    /// Sent as `Mcp-Session-Id` when set.
    pub session_id: Option<String>,
    /// Sent as `MCP-Protocol-Version` when set.
    pub protocol_version: Option<String>,
    /// Sent as `Authorization: Bearer …` when set.
    pub bearer: Option<String>,
}

impl RawMcp {
    pub(crate) fn new(url: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            url: url.to_owned(),
            session_id: None,
            protocol_version: None,
            bearer: None,
        }
    }

    /// A POST with the headers Streamable HTTP requires, plus session and version if known.
    /// At [`STATELESS_VERSION`] it also sends the `Mcp-Method` (and for requests naming a
    /// tool, prompt or resource, `Mcp-Name`) headers that version requires.
    pub(crate) fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(session) = &self.session_id {
            request = request.header("mcp-session-id", session);
        }
        if let Some(token) = &self.bearer {
            request = request.bearer_auth(token);
        }
        if let Some(version) = &self.protocol_version {
            request = request.header("mcp-protocol-version", version);
            if version == STATELESS_VERSION
                && let Some(method) = body["method"].as_str()
            {
                request = request.header("mcp-method", method);
                // The name a request acts on: a tool's or prompt's name, a resource's URI.
                let params = &body["params"];
                if let Some(name) = params["name"].as_str().or(params["uri"].as_str()) {
                    request = request.header("mcp-name", name);
                }
            }
        }
        request
    }

    /// A GET for the session's standalone SSE stream.
    pub(crate) fn stream(&self) -> reqwest::RequestBuilder {
        self.with_session(self.http.get(&self.url))
            .header("accept", "text/event-stream")
    }

    /// A DELETE ending the session.
    pub(crate) fn delete(&self) -> reqwest::RequestBuilder {
        self.with_session(self.http.delete(&self.url))
    }

    /// `request` with the session id, protocol version and token, where known.
    fn with_session(&self, mut request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if let Some(session) = &self.session_id {
            request = request.header("mcp-session-id", session);
        }
        if let Some(version) = &self.protocol_version {
            request = request.header("mcp-protocol-version", version);
        }
        if let Some(token) = &self.bearer {
            request = request.bearer_auth(token);
        }
        request
    }

    /// POSTs a JSON-RPC request and returns its response message (from JSON or SSE).
    pub(crate) async fn request(&self, body: &Value) -> Value {
        let response = self.post(body).send().await.expect("POST /mcp");
        assert!(
            response.status().is_success(),
            "POST {body} -> {}",
            response.status()
        );
        response_message(response).await
    }

    /// `initialize` + `notifications/initialized` at [`LEGACY_VERSION`]; keeps the session id.
    pub(crate) async fn initialize(&mut self) -> Value {
        let response = self
            .post(&json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {
                    "protocolVersion": LEGACY_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "raw-test", "version": "0"}
                }
            }))
            .send()
            .await
            .expect("POST initialize");
        assert!(response.status().is_success(), "{}", response.status());
        self.session_id = Some(
            response
                .headers()
                .get("mcp-session-id")
                .expect("initialize returns a session id")
                .to_str()
                .expect("ASCII session id")
                .to_owned(),
        );
        self.protocol_version = Some(LEGACY_VERSION.to_owned());
        let result = response_message(response).await;
        let notified = self
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .send()
            .await
            .expect("POST initialized");
        assert_eq!(notified.status(), reqwest::StatusCode::ACCEPTED);
        result
    }
}

/// The `_meta` a 2026-07-28 request carries in place of a session.
pub(crate) fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// The JSON-RPC response in an HTTP response body, whether sent as JSON or as SSE events
/// (the first event whose data is a message with an `id` and a result or error).
pub(crate) async fn response_message(response: reqwest::Response) -> Value {
    let is_sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_sse {
        return response.json().await.expect("JSON body");
    }
    let mut body = String::new();
    let mut response = response;
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(10), response.chunk())
            .await
            .expect("SSE chunk within 10 s")
            .expect("read SSE");
        let Some(chunk) = chunk else {
            panic!("SSE ended without a response message: {body}");
        };
        body.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(message) = sse_events(&body)
            .into_iter()
            .filter_map(|event| serde_json::from_str::<Value>(&event.data).ok())
            .find(|m| {
                m.get("id").is_some() && (m.get("result").is_some() || m.get("error").is_some())
            })
        {
            return message;
        }
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub id: Option<String>,
    pub data: String,
}

/// Posts the request `body` (JSON-RPC id `id`) and reads its SSE answer whole: returns the
/// `notifications/progress` messages it carried and the response with that id.
pub(crate) async fn call_with_progress(mcp: &RawMcp, id: u64, body: &Value) -> (Vec<Value>, Value) {
    let text = mcp
        .post(body)
        .header("accept", "application/json, text/event-stream")
        .send()
        .await
        .expect("POST")
        .text()
        .await
        .expect("read the answer");
    let messages: Vec<Value> = sse_events(&text)
        .into_iter()
        .filter_map(|event| serde_json::from_str(&event.data).ok())
        .collect();
    let response = messages
        .iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no response in {text}"))
        .clone();
    let progress = messages
        .into_iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    (progress, response)
}

/// Parses the complete events in an SSE text (an unterminated last event is left out).
pub(crate) fn sse_events(text: &str) -> Vec<SseEvent> {
    let normalized = text.replace("\r\n", "\n");
    let mut blocks: Vec<&str> = normalized.split("\n\n").collect();
    blocks.pop();
    blocks
        .into_iter()
        .map(|block| {
            let mut event = SseEvent {
                id: None,
                data: String::new(),
            };
            for line in block.lines() {
                if let Some(id) = line.strip_prefix("id:") {
                    event.id = Some(id.trim().to_owned());
                } else if let Some(data) = line.strip_prefix("data:") {
                    if !event.data.is_empty() {
                        event.data.push('\n');
                    }
                    event.data.push_str(data.strip_prefix(' ').unwrap_or(data));
                }
            }
            event
        })
        .collect()
}

/// The tools a client with the default toolsets is shown by a gateway with tmux servers only.
pub(crate) fn default_listing() -> Vec<String> {
    let shown = muxgate::auth::Toolsets::default();
    muxgate::mcp::catalog::tools()
        .into_iter()
        .filter(|tool| {
            muxgate::mcp::catalog::toolset::of(&tool.name)
                .is_some_and(|t| shown.contains(t) && t != muxgate::auth::Toolset::Zellij)
        })
        .map(|tool| tool.name.to_string())
        .collect()
}

/// A config with one server on `socket_name`, merged over the embedded default, with
/// [`relaxed`] rate limits.
pub(crate) fn config_with_server(name: &str, socket_name: &str, allow_absent: bool) -> Config {
    relaxed(
        Config::from_toml_str(&format!(
            "[tmux.servers.{name}]\nsocket_name = '{socket_name}'\nallow_absent = {allow_absent}\n"
        ))
        .expect("valid test config"),
    )
}
