//! How the gateway answers the ways real clients open a conversation, over real HTTP: each
//! quirk gets the most useful answer the protocol allows, and the client's next, corrected
//! request is served.

mod common;

use common::tmux::TestTmux;
use common::{
    LEGACY_VERSION, RawMcp, STATELESS_VERSION, TestGateway, config_with_server, response_message,
    spawn_gateway, stateless_meta,
};
use reqwest::StatusCode;
use serde_json::{Value, json};

const FUTURE_VERSION: &str = "2031-01-01";

async fn gateway(tmux: &TestTmux) -> TestGateway {
    spawn_gateway(config_with_server("dev", &tmux.socket, false)).await
}

/// A POST carrying the token and exactly `headers` (no others the protocol asks for).
async fn post(gateway: &TestGateway, headers: &[(&str, &str)], body: &Value) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(&gateway.mcp_url)
        .bearer_auth(&gateway.token)
        .header("content-type", "application/json")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("POST /mcp")
}

fn initialize(id: u64, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "negotiation-test", "version": "0"}}})
}

fn list_servers(id: u64, meta: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "list_servers", "arguments": {}, "_meta": meta}})
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

/// A JSON-RPC error answer: its HTTP status, its id, code and message.
async fn error_of(response: reqwest::Response) -> (StatusCode, Value, i64, String) {
    let status = response.status();
    let body: Value = response.json().await.expect("a JSON-RPC error body");
    let error = &body["error"];
    (
        status,
        body["id"].clone(),
        error["code"].as_i64().unwrap_or_default(),
        error["message"].as_str().unwrap_or_default().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_after_a_successful_discover_opens_a_session() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux).await;
    let mut mcp = gateway.raw();
    mcp.protocol_version = Some(STATELESS_VERSION.to_owned());
    let discover = mcp
        .request(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
            "params": {"_meta": stateless_meta()}}),
        )
        .await;
    assert!(
        discover["result"]["supportedVersions"].is_array(),
        "{discover}"
    );

    // The client then initializes, as some do: a 2025-era session opens and serves. Some
    // send the handshake without a version header (Claude Code), some still with the header of
    // the era they discovered in (the Python SDK's `initialize()` after its discover).
    let fresh = gateway.raw();
    for mut client in [fresh, mcp] {
        let init = client.initialize().await;
        assert_eq!(init["result"]["protocolVersion"], LEGACY_VERSION, "{init}");
        let call = client
            .request(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "list_servers", "arguments": {}}}))
            .await;
        assert_eq!(call["result"]["isError"], false, "{call}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialize_of_the_per_request_era_is_a_removed_method() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux).await;
    // A 2026-07-28 request of the method that era removed (no handshake in its params): 404,
    // method not found, as the protocol requires. A handshake under the same header opens a
    // session (the test above).
    let headers = [
        ACCEPT,
        ("mcp-protocol-version", STATELESS_VERSION),
        ("mcp-method", "initialize"),
    ];
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "initialize",
        "params": {"_meta": stateless_meta()}});
    let (status, id, code, message) = error_of(post(&gateway, &headers, &body).await).await;
    assert_eq!((status, code), (StatusCode::NOT_FOUND, -32601), "{message}");
    assert_eq!(id, 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_future_version_negotiates_down_or_lists_what_is_supported() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux).await;

    // `initialize` at a version from the future: answered with the newest session version,
    // also when the client already sends that version in the header.
    for headers in [
        vec![ACCEPT],
        vec![ACCEPT, ("mcp-protocol-version", FUTURE_VERSION)],
    ] {
        let response = post(&gateway, &headers, &initialize(1, FUTURE_VERSION)).await;
        assert_eq!(response.status(), StatusCode::OK, "{headers:?}");
        assert!(response.headers().contains_key("mcp-session-id"));
        let init = response_message(response).await;
        assert_eq!(init["result"]["protocolVersion"], LEGACY_VERSION, "{init}");
    }

    // A per-request call at a future version: an error listing the supported versions; the
    // client retries with the newest of them and is served.
    let mut meta = stateless_meta();
    meta["io.modelcontextprotocol/protocolVersion"] = json!(FUTURE_VERSION);
    let future = [
        ACCEPT,
        ("mcp-protocol-version", FUTURE_VERSION),
        ("mcp-method", "tools/call"),
        ("mcp-name", "list_servers"),
    ];
    let response = post(&gateway, &future, &list_servers(2, meta)).await;
    let status = response.status();
    let body: Value = response.json().await.expect("JSON-RPC error");
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["id"], 2, "{body}");
    let supported = body["error"]["data"]["supported"]
        .as_array()
        .expect("the supported versions")
        .clone();
    let newest = supported.last().and_then(Value::as_str).expect("a version");
    assert_eq!(newest, STATELESS_VERSION, "{body}");
    let mut mcp = gateway.raw();
    mcp.protocol_version = Some(newest.to_owned());
    let retried = mcp.request(&list_servers(3, stateless_meta())).await;
    assert_eq!(retried["result"]["isError"], false, "{retried}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_standard_header_is_refused_naming_the_value_to_send() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux).await;
    let no_name = [
        ACCEPT,
        ("mcp-protocol-version", STATELESS_VERSION),
        ("mcp-method", "tools/call"),
    ];
    let response = post(&gateway, &no_name, &list_servers(4, stateless_meta())).await;
    let (status, id, code, message) = error_of(response).await;
    assert_eq!(
        (status, code),
        (StatusCode::BAD_REQUEST, -32020),
        "{message}"
    );
    assert_eq!(id, 4);
    assert!(message.contains("`Mcp-Name: list_servers`"), "{message}");

    let no_method = [ACCEPT, ("mcp-protocol-version", STATELESS_VERSION)];
    let response = post(&gateway, &no_method, &list_servers(5, stateless_meta())).await;
    let (status, _, code, message) = error_of(response).await;
    assert_eq!(
        (status, code),
        (StatusCode::BAD_REQUEST, -32020),
        "{message}"
    );
    assert!(message.contains("`Mcp-Method: tools/call`"), "{message}");

    // Sent as told, the same call is served.
    let full = [
        ACCEPT,
        ("mcp-protocol-version", STATELESS_VERSION),
        ("mcp-method", "tools/call"),
        ("mcp-name", "list_servers"),
    ];
    let response = post(&gateway, &full, &list_servers(6, stateless_meta())).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response_message(response).await["result"]["isError"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_outside_any_session_or_era_says_how_to_speak() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux).await;
    let list = json!({"jsonrpc": "2.0", "id": "x1", "method": "tools/list"});
    for headers in [
        vec![ACCEPT],
        vec![ACCEPT, ("mcp-protocol-version", LEGACY_VERSION)],
    ] {
        let (status, id, code, message) = error_of(post(&gateway, &headers, &list).await).await;
        assert_eq!(
            (status, code),
            (StatusCode::BAD_REQUEST, -32600),
            "{message}"
        );
        assert_eq!(id, "x1");
        assert!(
            message.contains("initialize") && message.contains(STATELESS_VERSION),
            "{message}"
        );
    }
    // An unknown session is still 404, so that clients start a new one.
    let stale = [ACCEPT, ("mcp-session-id", "no-such-session")];
    assert_eq!(
        post(&gateway, &stale, &list).await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_header_without_both_types_says_which_to_send() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux).await;
    for accept in ["application/json", "*/*"] {
        let response = post(
            &gateway,
            &[("accept", accept)],
            &initialize(7, LEGACY_VERSION),
        )
        .await;
        let (status, id, _, message) = error_of(response).await;
        assert_eq!(status, StatusCode::NOT_ACCEPTABLE, "{accept}: {message}");
        assert_eq!(id, 7);
        assert!(
            message.contains("Accept: application/json, text/event-stream"),
            "{message}"
        );
    }
    let mut mcp = RawMcp::new(&gateway.mcp_url);
    mcp.bearer = Some(gateway.token.clone());
    assert_eq!(
        mcp.initialize().await["result"]["protocolVersion"],
        LEGACY_VERSION
    );
}
