//! Hostile HTTP input on /mcp: malformed JSON-RPC, oversized bodies (declared and streamed),
//! wrong content types, invalid UTF-8 in JSON, a wrong Accept, huge and many headers, deep
//! nesting. Each gets a clean 4xx or a JSON-RPC error (never a 5xx, a hang or a dropped
//! connection), and the gateway keeps serving a well-behaved client throughout.

mod common;

use std::time::Duration;

use common::tmux::TestTmux;
use common::{TestGateway, config_with_server, spawn_gateway};
use reqwest::StatusCode;
use serde_json::{Value, json};

const MAX_BODY: usize = 64 * 1024;

/// What a hostile request got back.
#[derive(Debug)]
struct Answer {
    status: StatusCode,
    body: String,
}

impl Answer {
    /// A JSON-RPC error code in the body (plain JSON or the first SSE data line).
    fn rpc_error(&self) -> Option<i64> {
        std::iter::once(self.body.as_str())
            .chain(self.body.lines().filter_map(|l| l.strip_prefix("data:")))
            .find_map(|json| {
                serde_json::from_str::<Value>(json.trim()).ok()?["error"]["code"].as_i64()
            })
    }
}

async fn send(request: reqwest::RequestBuilder) -> Answer {
    let response = tokio::time::timeout(Duration::from_secs(20), request.send())
        .await
        .expect("an answer within 20 s")
        .expect("an HTTP answer, not a dropped connection");
    let status = response.status();
    let body = tokio::time::timeout(Duration::from_secs(20), response.text())
        .await
        .expect("the body within 20 s")
        .unwrap_or_default();
    Answer { status, body }
}

/// Sends a POST to /mcp with `headers` (raw `name: value\r\n` lines) over a plain socket and
/// returns the status code of the answer.
async fn raw_status(gateway: &TestGateway, headers: &str, body: &[u8]) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(gateway.addr)
        .await
        .expect("connect");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {}\r\n\
         content-type: application/json\r\naccept: {ACCEPT}\r\n{headers}\r\n",
        gateway.addr, gateway.token
    );
    // The server may answer and close before it has read everything: a failed write is fine.
    let _ = socket.write_all(request.as_bytes()).await;
    let _ = socket.write_all(body).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), socket.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    text.strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3)?.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"))
}

/// A POST to /mcp with the full-access token and `content_type`/`accept`, body as given.
fn post(
    gateway: &TestGateway,
    body: impl Into<reqwest::Body>,
    content_type: &str,
    accept: &str,
) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(&gateway.mcp_url)
        .bearer_auth(&gateway.token)
        .header("content-type", content_type)
        .header("accept", accept)
        .body(body)
}

const JSON: &str = "application/json";
const ACCEPT: &str = "application/json, text/event-stream";

fn initialize_body() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "hostile", "version": "0"}}
    })
}

/// A well-behaved client still gets served: initialize, then a tool call.
async fn still_serves(gateway: &TestGateway, after: &str) {
    let mut raw = gateway.raw();
    raw.initialize().await;
    let answer = raw
        .request(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "list_sessions", "arguments": {}}}))
        .await;
    assert_eq!(
        answer["result"]["isError"], false,
        "after {after}: {answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_get_clean_errors_and_others_are_still_served() {
    let tmux = TestTmux::start();
    let mut config = config_with_server("work", &tmux.socket, false);
    config.http.max_body_bytes = MAX_BODY;
    let gateway = spawn_gateway(config).await;
    let mut session = gateway.raw();
    session.initialize().await;
    let session_id = session.session_id.clone().expect("session");
    let in_session = |body: Vec<u8>| {
        post(&gateway, body, JSON, ACCEPT)
            .header("mcp-session-id", &session_id)
            .header("mcp-protocol-version", "2025-11-25")
    };

    let deep = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
    let cases: Vec<(&str, reqwest::RequestBuilder, Option<StatusCode>)> = vec![
        (
            "truncated JSON",
            post(&gateway, r#"{"jsonrpc": "2.0", "id": 1, "meth"#, JSON, ACCEPT),
            None,
        ),
        ("empty body", post(&gateway, "", JSON, ACCEPT), None),
        ("a JSON number", post(&gateway, "42", JSON, ACCEPT), None),
        (
            "an object that is not JSON-RPC",
            post(&gateway, r#"{"hello": "world"}"#, JSON, ACCEPT),
            None,
        ),
        (
            "wrong jsonrpc version",
            post(
                &gateway,
                r#"{"jsonrpc": "1.0", "id": 1, "method": "ping"}"#,
                JSON,
                ACCEPT,
            ),
            None,
        ),
        ("an empty batch", post(&gateway, "[]", JSON, ACCEPT), None),
        ("deep nesting", post(&gateway, deep.clone(), JSON, ACCEPT), None),
        (
            "invalid UTF-8 in a JSON string",
            post(
                &gateway,
                b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"in\xff\xfeitialize\"}".to_vec(),
                JSON,
                ACCEPT,
            ),
            None,
        ),
        (
            "a lone surrogate escape",
            in_session(
                br#"{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "send_keys", "arguments": {"target": "main", "keys": "\ud800", "literal": true}}}"#
                    .to_vec(),
            ),
            None,
        ),
        (
            "invalid UTF-8 in tool arguments",
            in_session(
                b"{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": \"tools/call\", \"params\": {\"name\": \"send_keys\", \"arguments\": {\"target\": \"main\", \"keys\": \"\xc3\x28\", \"literal\": true}}}".to_vec(),
            ),
            None,
        ),
        (
            "arguments of the wrong type",
            in_session(
                br#"{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "send_keys", "arguments": [1, 2]}}"#
                    .to_vec(),
            ),
            None,
        ),
        (
            "an unknown method",
            in_session(br#"{"jsonrpc": "2.0", "id": 6, "method": "no/such"}"#.to_vec()),
            None,
        ),
        (
            "text/plain",
            post(&gateway, initialize_body().to_string(), "text/plain", ACCEPT),
            Some(StatusCode::UNSUPPORTED_MEDIA_TYPE),
        ),
        (
            "no content type",
            reqwest::Client::new()
                .post(&gateway.mcp_url)
                .bearer_auth(&gateway.token)
                .header("accept", ACCEPT)
                .body(initialize_body().to_string()),
            Some(StatusCode::UNSUPPORTED_MEDIA_TYPE),
        ),
        (
            "Accept: text/html",
            post(&gateway, initialize_body().to_string(), JSON, "text/html"),
            Some(StatusCode::NOT_ACCEPTABLE),
        ),
        (
            "a huge session id",
            post(&gateway, initialize_body().to_string(), JSON, ACCEPT)
                .header("mcp-session-id", "s".repeat(64 * 1024)),
            None,
        ),
        (
            "a bearer token of garbage bytes",
            reqwest::Client::new()
                .post(&gateway.mcp_url)
                .header("authorization", b"Bearer \xff\xfe\x80".as_slice())
                .header("content-type", JSON)
                .header("accept", ACCEPT)
                .body(initialize_body().to_string()),
            Some(StatusCode::UNAUTHORIZED),
        ),
        (
            "PUT",
            reqwest::Client::new()
                .put(&gateway.mcp_url)
                .bearer_auth(&gateway.token)
                .body("{}"),
            Some(StatusCode::METHOD_NOT_ALLOWED),
        ),
    ];
    for (name, request, expected) in cases {
        eprintln!("sending {name}");
        let answer = send(request).await;
        eprintln!(
            "{name}: {} {:?} {}",
            answer.status,
            answer.rpc_error(),
            answer.body.chars().take(160).collect::<String>()
        );
        match expected {
            Some(status) => assert_eq!(answer.status, status, "{name}: {answer:?}"),
            None => assert!(
                answer.status.is_client_error()
                    || (answer.status.is_success() && answer.rpc_error().is_some()),
                "{name}: neither a 4xx nor a JSON-RPC error: {answer:?}"
            ),
        }
        still_serves(&gateway, name).await;
    }

    // Header sections beyond what the HTTP server buffers, sent on a raw socket (a client
    // library may see the connection close while still writing).
    // Oversized bodies too: the server answers before the client has sent everything.
    let huge = format!(
        "x-padding: {}\r\ncontent-length: 2\r\n",
        "p".repeat(512 * 1024)
    );
    let many: String = (0..500)
        .map(|i| format!("x-h{i}: v\r\n"))
        .collect::<String>()
        + "content-length: 2\r\n";
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "ping",
                     "params": {"pad": "x".repeat(4 * MAX_BODY)}})
    .to_string();
    let declared = format!("content-length: {}\r\n", big.len());
    let chunk = format!("{:x}\r\n{}\r\n", 4096, " ".repeat(4096));
    let streamed = chunk.repeat(64) + "0\r\n\r\n";
    for (name, headers, body, status) in [
        ("a 512 KiB header", huge, "{}".to_owned(), 431),
        ("500 headers", many, "{}".to_owned(), 431),
        ("a declared oversized body", declared, big, 413),
        (
            "a streamed oversized body",
            "transfer-encoding: chunked\r\n".to_owned(),
            streamed,
            413,
        ),
    ] {
        let got = raw_status(&gateway, &headers, body.as_bytes()).await;
        eprintln!("{name}: {got}");
        assert_eq!(got, status, "{name}");
        still_serves(&gateway, name).await;
    }

    // The session used for the in-session cases was not broken by them.
    let answer = session
        .request(&json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}))
        .await;
    assert!(answer["result"].is_object(), "{answer}");
}

/// Sends an `initialize` from `source` with `token` and returns the answer's status and
/// `Retry-After`.
async fn initialize_from(
    gateway: &TestGateway,
    source: &str,
    token: &str,
) -> (StatusCode, Option<String>) {
    let client = reqwest::Client::builder()
        .local_address(source.parse::<std::net::IpAddr>().ok())
        .build()
        .expect("a client");
    let response = client
        .post(&gateway.mcp_url)
        .bearer_auth(token)
        .header("content-type", JSON)
        .header("accept", ACCEPT)
        .json(&initialize_body())
        .send()
        .await
        .expect("an answer");
    let retry = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (response.status(), retry)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_that_keeps_failing_to_authenticate_is_throttled_and_valid_tokens_are_not() {
    let tmux = TestTmux::start();
    let mut config = config_with_server("work", &tmux.socket, false);
    config.http.auth_failures_per_minute = 5;
    let gateway = spawn_gateway(config).await;
    let forged = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl";

    // Five failures are the budget; the sixth still gets its 401 and spends it.
    for attempt in 1..=6 {
        let (status, _) = initialize_from(&gateway, "127.0.0.1", forged).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "attempt {attempt}");
    }
    // From now on the source's bad tokens get 429 with Retry-After…
    let (status, retry) = initialize_from(&gateway, "127.0.0.1", forged).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = retry.expect("Retry-After").parse().expect("whole seconds");
    assert!(
        (1..=12).contains(&retry),
        "one failure back in 12 s: {retry}"
    );
    // …while a valid token from the same address (another tenant behind the same proxy or
    // host) is served, and does not lift the block for the bad ones.
    let (status, _) = initialize_from(&gateway, "127.0.0.1", &gateway.token).await;
    assert_eq!(status, StatusCode::OK, "a valid token is turned away");
    let (status, _) = initialize_from(&gateway, "127.0.0.1", forged).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);

    // Another address is not affected: it is served, and its own failures are its own.
    let (status, _) = initialize_from(&gateway, "127.0.0.2", &gateway.token).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = initialize_from(&gateway, "127.0.0.2", forged).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let metrics = reqwest::Client::new()
        .get(format!("{}/metrics", gateway.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    let throttled = metrics
        .lines()
        .find(|l| l.starts_with("muxgate_auth_failures_total{reason=\"throttled\"}"))
        .unwrap_or_else(|| panic!("a throttled count in:\n{metrics}"));
    assert!(throttled.ends_with(" 2"), "{throttled}");
    let bad_signatures = metrics
        .lines()
        .find(|l| l.starts_with("muxgate_auth_failures_total{reason=\"bad_signature\"}"))
        .unwrap_or_else(|| panic!("a bad_signature count in:\n{metrics}"));
    assert!(
        bad_signatures.ends_with(" 7"),
        "the throttled ones are not counted twice: {bad_signatures}"
    );
}
