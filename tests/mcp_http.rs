//! `/mcp` end to end over real HTTP: both protocol eras, with rmcp's own client and with raw
//! requests that check the wire (headers, status codes, session lifecycle, resumption).

mod common;

use std::time::Duration;

use common::{
    LEGACY_VERSION, RawMcp, STATELESS_VERSION, TestGateway, config_with_server, spawn_gateway,
    sse_events, stateless_meta,
};
use muxgate::config::Config;
use rmcp::model::{CallToolRequestParams, ClientConfig, ErrorCode, JsonObject, ProtocolVersion};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::{Value, json};

/// A socket name no tmux server runs on (list_servers asks each server).
const ABSENT_SOCKET: &str = "muxgate-test-never-started";

/// Two servers, so list_servers has something to order and describe.
fn two_server_config() -> Config {
    Config::from_toml_str(&format!(
        "[tmux.servers.work]\nsocket_name = '{ABSENT_SOCKET}'\n\
         [tmux.servers.shared]\nsocket_path = '/run/tmux/shared'\nallow_absent = true\n",
    ))
    .expect("valid config")
}

fn expected_servers() -> Value {
    json!({"servers": [
        {"name": "shared", "backend": "tmux", "kind": "configured", "allow_absent": true,
         "reachability": "not_running"},
        {"name": "work", "backend": "tmux", "kind": "configured", "allow_absent": false,
         "reachability": "not_running"},
    ]})
}

async fn legacy_client(gateway: &TestGateway) -> RunningService<RoleClient, ClientConfig> {
    ClientConfig::default()
        .serve(gateway.transport())
        .await
        .expect("initialize with rmcp's client")
}

async fn stateless_client(gateway: &TestGateway) -> RunningService<RoleClient, ClientConfig> {
    ClientConfig::default()
        .serve_with_lifecycle(
            gateway.transport(),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discover with rmcp's client")
}

fn arguments(value: Value) -> JsonObject {
    value.as_object().expect("object").clone()
}

/// An answer sent as SSE leaves in several small writes; with Nagle's algorithm each waited
/// for the client's delayed ACK (40 ms per call on a kept-alive connection).
#[tokio::test]
async fn the_gateway_end_of_a_connection_sends_at_once() {
    let gateway = spawn_gateway(two_server_config()).await;
    let client = tokio::net::TcpStream::connect(gateway.addr)
        .await
        .expect("connect");
    let local = client.local_addr().expect("local address");
    assert!(common::sockets::gateway_end_sends_at_once(local).await);
}

#[tokio::test]
async fn rmcp_client_with_session_lists_and_calls_tools() {
    let gateway = spawn_gateway(two_server_config()).await;
    let client = legacy_client(&gateway).await;

    let info = client.peer_info().expect("server info after initialize");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    let server_info = info.server_info.as_ref().expect("serverInfo");
    assert_eq!(server_info.name, "muxgate");
    assert_eq!(server_info.version, env!("CARGO_PKG_VERSION"));
    assert!(info.capabilities.tools.is_some());
    assert!(info.capabilities.prompts.is_some());
    assert!(info.capabilities.resources.is_some());
    assert!(info.capabilities.completions.is_none());
    assert!(
        info.instructions
            .as_deref()
            .is_some_and(|i| i.contains("list_servers"))
    );

    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<_> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names.len(), common::default_listing().len(), "{names:?}");
    let list_servers = tools
        .iter()
        .find(|t| t.name == "list_servers")
        .expect("list_servers is listed");
    assert!(list_servers.output_schema.is_some());
    assert_eq!(
        list_servers
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint),
        Some(true)
    );

    let result = client
        .call_tool(CallToolRequestParams::new("list_servers"))
        .await
        .expect("tools/call list_servers");
    assert_eq!(result.is_error, Some(false));
    assert_eq!(result.structured_content, Some(expected_servers()));

    client.cancel().await.expect("close the session");
}

#[tokio::test]
async fn rmcp_client_reports_argument_and_tool_errors() {
    let gateway = spawn_gateway(two_server_config()).await;
    let client = legacy_client(&gateway).await;

    let result = client
        .call_tool(
            CallToolRequestParams::new("list_servers")
                .with_arguments(arguments(json!({"bogus_field": 1}))),
        )
        .await
        .expect("an argument error is a tool result, not a protocol error");
    let error = &common::tool_error(&result);
    assert_eq!(error["kind"], "invalid_arguments");
    assert!(
        error["message"].as_str().unwrap().contains("`bogus_field`"),
        "{error}"
    );
    assert!(!error["suggestion"].as_str().unwrap().is_empty());
    let text = &result.content[0].as_text().expect("text").text;
    assert!(text.contains("bogus_field"), "{text}");

    let err = client
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await
        .expect_err("unknown tool is a JSON-RPC error");
    match err {
        ServiceError::McpError(data) => assert_eq!(data.code, ErrorCode::INVALID_PARAMS),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }

    // Declared capabilities are served (their content: tests/resources_prompts.rs).
    client.list_prompts(None).await.expect("prompts/list");
    client.list_resources(None).await.expect("resources/list");
    client
        .list_resource_templates(None)
        .await
        .expect("resources/templates/list");
    client.cancel().await.expect("close the session");
}

#[tokio::test]
async fn rmcp_client_without_session_uses_2026_07_28() {
    let gateway = spawn_gateway(two_server_config()).await;
    let client = stateless_client(&gateway).await;

    let info = client.peer_info().expect("server info after discover");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some("muxgate")
    );
    assert!(info.capabilities.tools.is_some());
    assert!(info.capabilities.prompts.is_some());

    let tools = client.list_all_tools().await.expect("tools/list");
    assert_eq!(tools.len(), common::default_listing().len());
    let result = client
        .call_tool(CallToolRequestParams::new("list_servers"))
        .await
        .expect("tools/call");
    assert_eq!(result.structured_content, Some(expected_servers()));
    client.cancel().await.expect("stop the client");
}

#[tokio::test]
async fn raw_session_lifecycle_initialize_list_call_delete() {
    let gateway = spawn_gateway(two_server_config()).await;
    let mut mcp = gateway.raw();

    let init = mcp.initialize().await;
    assert_eq!(init["result"]["protocolVersion"], LEGACY_VERSION);
    assert_eq!(init["result"]["serverInfo"]["name"], "muxgate");
    assert_eq!(init["result"]["capabilities"], declared_capabilities());
    let session = mcp.session_id.clone().expect("session id");
    assert!(session.len() >= 16, "session id looks too short: {session}");

    let list = mcp
        .request(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await;
    let tool = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "list_servers")
        .expect("list_servers is listed");
    assert_eq!(tool["inputSchema"]["additionalProperties"], false);
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
    // Hints that mean nothing for a read-only tool are left out of the listing.
    assert_eq!(tool["annotations"].get("destructiveHint"), None);
    assert_eq!(tool["annotations"].get("idempotentHint"), None);
    assert_eq!(tool["annotations"]["openWorldHint"], false);
    assert!(tool["outputSchema"]["properties"]["servers"].is_object());

    let call = mcp
        .request(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "list_servers", "arguments": {}}}))
        .await;
    assert_eq!(call["result"]["structuredContent"], expected_servers());

    let unknown = mcp
        .request(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "nope", "arguments": {}}}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    let completion = mcp
        .request(
            &json!({"jsonrpc": "2.0", "id": 41, "method": "completion/complete",
            "params": {"ref": {"type": "ref/prompt", "name": "x"},
                       "argument": {"name": "a", "value": "b"}}}),
        )
        .await;
    assert_eq!(completion["error"]["code"], -32601, "{completion}");

    let deleted = mcp
        .http
        .delete(&mcp.url)
        .bearer_auth(&gateway.token)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", LEGACY_VERSION)
        .send()
        .await
        .expect("DELETE");
    // 204, not rmcp's 202: the Python SDKs log a failed termination for anything but 200/204.
    assert_eq!(deleted.status(), reqwest::StatusCode::NO_CONTENT);

    let after = mcp
        .post(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}))
        .send()
        .await
        .expect("POST after DELETE");
    assert_eq!(after.status(), reqwest::StatusCode::NOT_FOUND);

    mcp.session_id = None;
    let without_session = mcp
        .post(&json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}))
        .send()
        .await
        .expect("POST without session");
    assert_eq!(without_session.status(), reqwest::StatusCode::BAD_REQUEST);
}

/// Streams are resumable: each SSE response starts with a priming event that carries an
/// event id and a retry interval. rmcp replays a request's events to a `GET` with
/// `Last-Event-ID` while the request is unfinished; a finished request's stream resumes as an
/// empty, closed stream (200), so a reconnecting EventSource stops instead of looping.
#[tokio::test]
async fn raw_session_streams_carry_resumption_ids() {
    let gateway = spawn_gateway(two_server_config()).await;
    let mut mcp = gateway.raw();
    mcp.initialize().await;

    let response = mcp
        .post(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "list_servers", "arguments": {}}}))
        .send()
        .await
        .expect("tools/call");
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    let body = tokio::time::timeout(Duration::from_secs(10), response.text())
        .await
        .expect("stream ends after the response")
        .expect("read SSE body");
    assert!(body.contains("retry: 3000"), "{body}");
    let events = sse_events(&body);
    assert!(events.len() >= 2, "{body}");
    assert!(
        events.iter().all(|e| e.id.is_some()),
        "every event has an id: {body}"
    );
    let last_id = events.last().and_then(|e| e.id.clone()).expect("id");

    let resumed = mcp
        .http
        .get(&mcp.url)
        .bearer_auth(&gateway.token)
        .header("accept", "text/event-stream")
        .header(
            "mcp-session-id",
            mcp.session_id.as_deref().expect("session"),
        )
        .header("mcp-protocol-version", LEGACY_VERSION)
        .header("last-event-id", &last_id)
        .send()
        .await
        .expect("GET with Last-Event-ID");
    assert_eq!(resumed.status(), reqwest::StatusCode::OK);
    let rest = tokio::time::timeout(Duration::from_secs(5), resumed.text())
        .await
        .expect("a finished stream resumes as a closed stream")
        .expect("read");
    assert!(
        sse_events(&rest).iter().all(|e| e.data.is_empty()),
        "{rest}"
    );
}

/// What the gateway declares at `initialize` and `server/discover`, in both eras.
fn declared_capabilities() -> Value {
    json!({
        "prompts": {}, "resources": {"subscribe": true}, "tools": {},
        "extensions": {"io.modelcontextprotocol/skills": {}}
    })
}

#[tokio::test]
async fn raw_stateless_discover_and_call_need_no_session() {
    let gateway = spawn_gateway(two_server_config()).await;
    let mut mcp = gateway.raw();
    mcp.protocol_version = Some(STATELESS_VERSION.to_owned());

    let response = mcp
        .post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
            "params": {"_meta": stateless_meta()}}),
        )
        .send()
        .await
        .expect("server/discover");
    assert!(response.status().is_success(), "{}", response.status());
    assert!(response.headers().get("mcp-session-id").is_none());
    let discover = common::response_message(response).await;
    let result = &discover["result"];
    let versions = result["supportedVersions"].as_array().expect("versions");
    assert!(versions.contains(&json!(STATELESS_VERSION)), "{result}");
    assert!(versions.contains(&json!(LEGACY_VERSION)), "{result}");
    assert_eq!(result["capabilities"], declared_capabilities(), "{result}");

    let response = mcp
        .post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "list_servers", "arguments": {}, "_meta": stateless_meta()}}))
        .send()
        .await
        .expect("tools/call");
    assert!(response.status().is_success(), "{}", response.status());
    assert!(response.headers().get("mcp-session-id").is_none());
    let call = common::response_message(response).await;
    assert_eq!(call["result"]["structuredContent"], expected_servers());

    let list = mcp
        .request(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
            "params": {"_meta": stateless_meta()}}))
        .await;
    assert_eq!(list["result"]["cacheScope"], "private", "{list}");
}

#[tokio::test]
async fn foreign_host_and_origin_are_forbidden() {
    let gateway = spawn_gateway(Config::embedded_default()).await;
    let mcp = gateway.raw();
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": LEGACY_VERSION, "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}});

    let bad_host = mcp
        .post(&initialize)
        .header("host", "evil.example")
        .send()
        .await
        .expect("POST");
    assert_eq!(bad_host.status(), reqwest::StatusCode::FORBIDDEN);
    let body: Value = bad_host.json().await.expect("JSON body");
    assert!(
        body["message"].as_str().unwrap().contains("evil.example"),
        "{body}"
    );

    let bad_origin = mcp
        .post(&initialize)
        .header("origin", "https://evil.example")
        .send()
        .await
        .expect("POST");
    assert_eq!(bad_origin.status(), reqwest::StatusCode::FORBIDDEN);

    let good_origin = mcp
        .post(&initialize)
        .header("origin", "http://localhost:5173")
        .send()
        .await
        .expect("POST");
    assert_eq!(good_origin.status(), reqwest::StatusCode::OK);

    // Health endpoints serve probes that do not know the public host name.
    let health = mcp
        .http
        .get(format!("{}/healthz", gateway.base))
        .header("host", "10.0.0.7:8767")
        .send()
        .await
        .expect("GET /healthz");
    assert_eq!(health.status(), reqwest::StatusCode::OK);
}

#[tokio::test]
async fn configured_hosts_are_accepted() {
    let mut config = Config::embedded_default();
    config.http.allowed_hosts =
        vec![muxgate::config::allowlist::HostPattern::parse("gateway.example").unwrap()];
    let gateway = spawn_gateway(config).await;
    let mcp = gateway.raw();
    let ping = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": LEGACY_VERSION, "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}});
    let allowed = mcp
        .post(&ping)
        .header("host", "gateway.example:443")
        .send()
        .await
        .expect("POST");
    assert_eq!(allowed.status(), reqwest::StatusCode::OK);
    let loopback = mcp.post(&ping).send().await.expect("POST");
    assert_eq!(loopback.status(), reqwest::StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn oversized_bodies_are_refused() {
    let mut config = Config::embedded_default();
    config.http.max_body_bytes = 1024;
    let gateway = spawn_gateway(config).await;
    let mcp = gateway.raw();
    let big = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": LEGACY_VERSION, "capabilities": {},
                   "clientInfo": {"name": "x".repeat(2048), "version": "0"}}});
    let response = mcp.post(&big).send().await.expect("POST");
    assert_eq!(response.status(), reqwest::StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn shutdown_ends_open_sessions_and_the_server() {
    let gateway = spawn_gateway(config_with_server("x", "muxgate-unused", true)).await;
    let mut mcp = gateway.raw();
    mcp.initialize().await;
    // A long-lived standalone SSE stream, as clients keep open for server messages.
    let stream = mcp
        .http
        .get(&mcp.url)
        .bearer_auth(&gateway.token)
        .header("accept", "text/event-stream")
        .header(
            "mcp-session-id",
            mcp.session_id.as_deref().expect("session"),
        )
        .header("mcp-protocol-version", LEGACY_VERSION)
        .send()
        .await
        .expect("GET stream");
    assert!(stream.status().is_success(), "{}", stream.status());

    let base = gateway.base.clone();
    gateway
        .stop(Duration::from_secs(5))
        .await
        .expect("clean stop with a stream open");
    let after = reqwest::Client::new()
        .get(format!("{base}/healthz"))
        .timeout(Duration::from_secs(2))
        .send()
        .await;
    assert!(after.is_err(), "gateway still answers after shutdown");
}

/// Session binding through the real router and a real rmcp session: another client's token on
/// a session id gets 404 for POST, GET and DELETE, and the session keeps working for its owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_belong_to_their_client() {
    let gateway = spawn_gateway(two_server_config()).await;
    let mut alice = RawMcp::new(&gateway.mcp_url);
    alice.bearer = Some(gateway.mint("alice", &["mux:read"]));
    alice.initialize().await;

    let mut intruder = RawMcp::new(&gateway.mcp_url);
    intruder.bearer = Some(gateway.mint("bob", &["mux:admin"]));
    intruder.session_id = alice.session_id.clone();
    intruder.protocol_version = Some(LEGACY_VERSION.into());
    let post = intruder.post(&list_tools()).send().await.unwrap();
    assert_eq!(post.status(), reqwest::StatusCode::NOT_FOUND);
    let get = intruder.stream().send().await.unwrap();
    assert_eq!(get.status(), reqwest::StatusCode::NOT_FOUND);
    let delete = intruder.delete().send().await.unwrap();
    assert_eq!(delete.status(), reqwest::StatusCode::NOT_FOUND);
    let answer = alice.request(&list_tools()).await;
    assert!(
        answer["result"]["tools"].is_array(),
        "the owner's session lives: {answer}"
    );
}

fn list_tools() -> Value {
    json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
}

/// A raw client of `sub`, its session opened.
async fn session_of(gateway: &TestGateway, sub: &str) -> RawMcp {
    let mut mcp = RawMcp::new(&gateway.mcp_url);
    mcp.bearer = Some(gateway.mint(sub, &["mux:read", "mux:write"]));
    mcp.initialize().await;
    mcp
}

/// What a request naming `mcp`'s session is answered (a `tools/list`).
async fn status_of(mcp: &RawMcp) -> reqwest::StatusCode {
    mcp.post(&list_tools()).send().await.expect("POST").status()
}

/// The sample `series` (labels included) of the gateway's `/metrics`.
async fn metric(gateway: &TestGateway, series: &str) -> Option<f64> {
    common::probe::metric_sample(&gateway.base, series).await
}

/// A client at `http.max_sessions_per_client` whose sessions are idle opens another: its least
/// recently used session is closed to make room (the next request naming it gets 404, so the
/// client starts over), its others keep working, and another client's sessions, even older
/// ones, are never touched. Ending a session frees its place too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_a_new_session_evicts_the_clients_least_recently_used_idle_one() {
    let mut config = two_server_config();
    config.http.max_sessions_per_client = 2;
    let gateway = spawn_gateway(config).await;
    let bob = session_of(&gateway, "bob").await;
    let oldest = session_of(&gateway, "alice").await;
    let used = session_of(&gateway, "alice").await;
    used.request(&list_tools()).await;
    let newest = session_of(&gateway, "alice").await;

    assert_eq!(status_of(&oldest).await, reqwest::StatusCode::NOT_FOUND);
    assert_eq!(status_of(&used).await, reqwest::StatusCode::OK);
    assert_eq!(status_of(&newest).await, reqwest::StatusCode::OK);
    assert_eq!(status_of(&bob).await, reqwest::StatusCode::OK, "bob's");
    let evicted = r#"muxgate_mcp_sessions_evicted_total{reason="cap"}"#;
    assert_eq!(metric(&gateway, evicted).await, Some(1.0));
    // Really closed in rmcp, not only forgotten: 3 sessions remain of 4 opened.
    assert!(
        common::wait_until_async(Duration::from_secs(10), || async {
            metric(&gateway, "muxgate_mcp_sessions_active").await == Some(3.0)
        })
        .await,
        "the evicted session still counted as open"
    );

    let ended = used.delete().send().await.expect("DELETE");
    assert_eq!(ended.status(), reqwest::StatusCode::NO_CONTENT);
    session_of(&gateway, "alice").await;
    assert_eq!(status_of(&newest).await, reqwest::StatusCode::OK);
    assert_eq!(
        metric(&gateway, evicted).await,
        Some(1.0),
        "DELETE made room"
    );
}

/// When every session of a client is busy (here one with a wait in flight, one with its GET
/// stream open), another `initialize` is refused with 429 and `Retry-After`, and nothing is
/// closed; once a wait ends its session is idle again and makes room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_every_session_is_busy_a_new_one_is_refused_with_retry_after() {
    let tmux = common::tmux::TestTmux::start();
    let mut config = config_with_server("work", &tmux.socket, false);
    config.http.max_sessions_per_client = 2;
    let gateway = spawn_gateway(config).await;
    let pane = tmux.pane_id("main").to_string();
    let waiting = session_of(&gateway, "alice").await;
    let wait = waiting
        .post(
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "wait_for_text",
            "arguments": {"target": pane, "patterns": ["never-printed"], "timeout": 60}}}),
        )
        .send()
        .await
        .expect("POST wait_for_text");
    assert_eq!(wait.status(), reqwest::StatusCode::OK);
    let listening = session_of(&gateway, "alice").await;
    let stream = listening.stream().send().await.expect("GET stream");
    assert_eq!(stream.status(), reqwest::StatusCode::OK);

    let mut third = RawMcp::new(&gateway.mcp_url);
    third.bearer = waiting.bearer.clone();
    let refused = third.post(&initialize_body()).send().await.expect("POST");
    assert_eq!(refused.status(), reqwest::StatusCode::TOO_MANY_REQUESTS);
    let retry_after = refused.headers().get("retry-after").cloned();
    let retry: u64 = retry_after
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .expect("a Retry-After in seconds");
    assert!((1..=60).contains(&retry), "{retry}");
    let body: Value = refused.json().await.expect("JSON");
    assert_eq!(body["error"], "too_many_sessions", "{body}");
    let evicted = r#"muxgate_mcp_sessions_evicted_total{reason="cap"}"#;
    assert_eq!(metric(&gateway, evicted).await, Some(0.0));
    // Another client is not affected.
    session_of(&gateway, "bob").await;

    // The waiting client hangs up: its wait ends, its session is idle and makes room.
    drop(wait);
    assert!(
        common::wait_until_async(Duration::from_secs(15), || async {
            third
                .post(&initialize_body())
                .send()
                .await
                .expect("POST")
                .status()
                == reqwest::StatusCode::OK
        })
        .await,
        "the session whose wait ended never made room"
    );
    assert_eq!(status_of(&waiting).await, reqwest::StatusCode::NOT_FOUND);
    assert_eq!(status_of(&listening).await, reqwest::StatusCode::OK);
    drop(stream);
}

fn initialize_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": LEGACY_VERSION, "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}})
}

/// A session idle for `http.session_idle_secs` is closed (counted, and the next request naming
/// it gets 404); one with its GET stream open is busy, however long, and stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_idle_past_the_idle_time_are_closed_and_busy_ones_stay() {
    let mut config = two_server_config();
    config.http.session_idle_secs = 1;
    let gateway = spawn_gateway(config).await;
    let idle = session_of(&gateway, "alice").await;
    let listening = session_of(&gateway, "alice").await;
    let stream = listening.stream().send().await.expect("GET stream");
    assert_eq!(stream.status(), reqwest::StatusCode::OK);

    let evicted = r#"muxgate_mcp_sessions_evicted_total{reason="idle"}"#;
    assert!(
        common::wait_until_async(Duration::from_secs(15), || async {
            metric(&gateway, evicted).await == Some(1.0)
                && metric(&gateway, "muxgate_mcp_sessions_active").await == Some(1.0)
        })
        .await,
        "the idle session was never closed"
    );
    assert_eq!(status_of(&idle).await, reqwest::StatusCode::NOT_FOUND);
    // Twice the idle time later, the listened-to session still answers.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(status_of(&listening).await, reqwest::StatusCode::OK);
    assert_eq!(metric(&gateway, evicted).await, Some(1.0));
    drop(stream);
}

/// A `tools/call` refused by the HTTP request rate is answered as that call's result
/// (`isError`, the limit named, `retry_after_ms`), which SDKs hand to the model; other
/// requests beyond the rate still get 429 with `Retry-After`, but never a DELETE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_over_the_request_rate_is_a_tool_result_that_says_when_to_retry() {
    let mut config = two_server_config();
    config.limits.requests_per_second = std::num::NonZeroU32::new(1).unwrap();
    config.limits.request_burst = std::num::NonZeroU32::new(4).unwrap();
    let gateway = spawn_gateway(config).await;
    let mut mcp = gateway.raw();
    mcp.initialize().await;

    let mut refused = None;
    for id in 1..=8 {
        let response = mcp
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "list_servers", "arguments": {}}}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "a tools/call is never a 429");
        let message = common::response_message(response).await;
        assert_eq!(message["id"], id, "{message}");
        if message["result"]["isError"] == true {
            refused = Some(message);
            break;
        }
    }
    let refused = refused.expect("the burst runs out within 8 calls");
    let result: rmcp::model::CallToolResult =
        serde_json::from_value(refused["result"].clone()).unwrap();
    let text = result.content[0].as_text().unwrap().text.clone();
    assert!(text.starts_with("error (busy): "), "{refused}");
    assert!(text.contains("`requests_per_second`"), "{text}");
    let retry_ms: u64 = text
        .split("retry_after_ms: ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("no retry_after_ms in {text}"));
    assert!((1..=1000).contains(&retry_ms), "{text}");

    let ping = mcp
        .post(&json!({"jsonrpc": "2.0", "id": 99, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(ping.status(), 429, "a request that is not a tool call");
    assert!(ping.headers().contains_key("retry-after"));

    // Ending the session is never refused, however fast the client went.
    let session = mcp.session_id.clone().expect("a session id");
    let mut end = reqwest::Client::new()
        .delete(&mcp.url)
        .header("mcp-session-id", &session);
    if let Some(token) = &mcp.bearer {
        end = end.bearer_auth(token);
    }
    let ended = end.send().await.unwrap();
    assert_eq!(ended.status(), 204, "DELETE while over the request rate");
}
