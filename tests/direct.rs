//! The 2026-07-28 requests the gateway answers without rmcp's transport, over real HTTP
//! against a real tmux server: a quick call is one JSON body, a waiting call answers on a
//! stream with its own client's progress token (however many clients chose the same one), a
//! client that hangs up ends its wait, and what the direct path does not take still reaches
//! rmcp.

mod common;

use std::time::Duration;

use common::tmux::TestTmux;
use common::{
    RawMcp, STATELESS_VERSION, TestGateway, config_with_server, spawn_gateway, sse_events,
    stateless_meta, wait_until_async,
};
use serde_json::{Value, json};

async fn gateway(tmux: &TestTmux, progress_interval_secs: u64) -> TestGateway {
    let mut config = config_with_server("work", &tmux.socket, false);
    config.http.progress_interval_secs = progress_interval_secs;
    spawn_gateway(config).await
}

fn client(gateway: &TestGateway) -> RawMcp {
    let mut mcp = gateway.raw();
    mcp.protocol_version = Some(STATELESS_VERSION.to_owned());
    mcp
}

/// A `tools/call` of `tool` at 2026-07-28, with `progress` as its progress token if any.
fn call(id: u64, tool: &str, arguments: Value, progress: Option<&str>) -> Value {
    let mut meta = stateless_meta();
    if let Some(token) = progress {
        meta["progressToken"] = json!(token);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments, "_meta": meta}})
}

fn content_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// The messages of an SSE answer.
fn messages(text: &str) -> Vec<Value> {
    sse_events(text)
        .into_iter()
        .filter_map(|event| serde_json::from_str(&event.data).ok())
        .collect()
}

/// A call that is over at once is answered as one JSON body, shaped as rmcp shapes a
/// 2026-07-28 result; so are `tools/list` and `server/discover`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_call_is_one_json_answer() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux, 10).await;
    let mcp = client(&gateway);

    let response = mcp
        .post(&call(1, "list_servers", json!({}), None))
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), 200);
    assert_eq!(content_type(&response), "application/json");
    let answer: Value = response.json().await.expect("a JSON body");
    assert_eq!(answer["id"], 1, "{answer}");
    let result = &answer["result"];
    assert_eq!(result["resultType"], "complete", "{answer}");
    assert_eq!(result["isError"], false, "{answer}");
    assert_eq!(
        result["structuredContent"]["servers"][0]["name"], "work",
        "{answer}"
    );

    for (id, method) in [(2, "tools/list"), (3, "server/discover")] {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method,
                          "params": {"_meta": stateless_meta()}});
        let response = mcp.post(&body).send().await.expect("POST");
        assert_eq!(response.status(), 200, "{method}");
        assert_eq!(content_type(&response), "application/json", "{method}");
        let answer: Value = response.json().await.expect("a JSON body");
        assert_eq!(answer["id"], id, "{answer}");
        assert!(answer["result"].is_object(), "{method}: {answer}");
    }
    let tools: Value = mcp
        .post(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list",
                      "params": {"_meta": stateless_meta()}}))
        .send()
        .await
        .expect("POST")
        .json()
        .await
        .expect("JSON");
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"send_keys"), "{names:?}");

    // A tool error is a result too, and an unknown tool rmcp's own error.
    let refused = mcp
        .request(&call(5, "capture_pane", json!({"target": "%999"}), None))
        .await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let unknown = mcp.request(&call(6, "no_such_tool", json!({}), None)).await;
    assert!(unknown["error"]["code"].is_i64(), "{unknown}");
}

/// A call that waits longer than a moment answers on an SSE stream. Two clients that chose the
/// same progress token each hear only their own wait's progress, under that token; a waiting
/// call without one gets keep-alive comments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_call_streams_its_own_progress() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux, 1).await;
    let main = tmux.pane_id("main").to_string();
    let other = tmux.session_running("other", "sh");
    let wait = |pane: &str| json!({"target": pane, "patterns": ["never-printed"], "timeout": 2.5});
    let (first, second) = (client(&gateway), client(&gateway));

    let ask = |mcp: &RawMcp, id: u64, pane: &str| {
        mcp.post(&call(id, "wait_for_text", wait(pane), Some("same")))
            .send()
    };
    let in_time = Duration::from_secs(20);
    let (a, b) = tokio::join!(ask(&first, 7, &main), ask(&second, 8, &other));
    for (response, id, pane) in [(a, 7, &main), (b, 8, &other)] {
        let response = response.expect("POST");
        assert_eq!(content_type(&response), "text/event-stream");
        let text = tokio::time::timeout(in_time, response.text())
            .await
            .expect("the stream ends after its answer")
            .expect("the stream");
        let messages = messages(&text);
        let answer = messages.iter().find(|m| m["id"] == id).expect("the answer");
        assert_eq!(
            answer["result"]["structuredContent"]["outcome"], "timeout",
            "{text}"
        );
        let progress: Vec<&Value> = messages
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .collect();
        assert!(!progress.is_empty(), "no progress: {text}");
        for note in progress {
            assert_eq!(note["params"]["progressToken"], "same", "{text}");
            let message = note["params"]["message"].as_str().expect("message");
            assert!(
                message.starts_with(&format!("wait_for_text on {pane}:")),
                "another call's progress: {message}"
            );
        }
    }

    let response = first
        .post(&call(9, "wait_for_text", wait(&main), None))
        .send()
        .await
        .expect("POST");
    let text = tokio::time::timeout(in_time, response.text())
        .await
        .expect("the stream ends after its answer")
        .expect("the stream");
    let answer_at = text.find("\"id\":9").expect("the answer");
    assert!(
        text[..answer_at].contains(":\n"),
        "no keep-alive before the answer:\n{text}"
    );
}

/// A client that hangs up ends its wait, whether it hangs up before the answer became a stream
/// or after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_hangs_up_ends_its_wait() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux, 10).await;
    let pane = tmux.pane_id("main").to_string();
    let mcp = client(&gateway);
    let active = || async { common::probe::metric(&gateway.base, "muxgate_waits_active").await };

    // Hung up as soon as the wait runs (its answer not yet a stream), then once it is one.
    for stream_first in [false, true] {
        let body = call(
            1,
            "wait_for_text",
            json!({"target": pane, "patterns": ["never-printed"], "timeout": 60}),
            None,
        );
        let request = mcp.post(&body).send();
        let (head, seen) = tokio::sync::oneshot::channel();
        let waiting = tokio::spawn(async move {
            let response = request.await.expect("POST");
            let _ = head.send(content_type(&response));
            response.text().await.expect("the stream")
        });
        assert!(
            wait_until_async(Duration::from_secs(10), || async { active().await == 1.0 }).await,
            "the wait never started"
        );
        if stream_first {
            // The answer became a stream: its head came before the call ended.
            let head = tokio::time::timeout(Duration::from_secs(10), seen).await;
            let kind = head.expect("the stream's head").expect("a content type");
            assert_eq!(kind, "text/event-stream");
        }
        assert!(!waiting.is_finished(), "the wait ended by itself");
        waiting.abort();
        assert!(
            wait_until_async(Duration::from_secs(10), || async { active().await == 0.0 }).await,
            "the wait outlived its client (its answer a stream: {stream_first})"
        );
    }
}

/// What the direct path does not take still reaches rmcp: a request whose `Mcp-Name`
/// contradicts its body is refused with the protocol's header-mismatch error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_it_does_not_take_reaches_rmcp() {
    let tmux = TestTmux::start();
    let gateway = gateway(&tmux, 10).await;
    let mcp = client(&gateway);
    let mut request = mcp
        .post(&call(1, "list_servers", json!({}), None))
        .build()
        .expect("a request");
    let other = reqwest::header::HeaderValue::from_static("list_sessions");
    request.headers_mut().insert("mcp-name", other);
    let response = mcp.http.execute(request).await.expect("POST");
    assert_eq!(response.status(), 400);
    let answer: Value = response.json().await.expect("a JSON-RPC error");
    assert_eq!(answer["error"]["code"], -32020, "{answer}");
}
