//! send_keys_batch over MCP against a real tmux server: order across panes, on_error stop and
//! continue, per-operation errors, and the configured size cap in the schema and in force.

mod common;

use std::time::Duration;

use common::tmux::TestTmux;
use common::tools::{call_err, call_ok, client};
use common::{config_with_server, spawn_gateway, wait_until};
use serde_json::{Value, json};

/// A session whose pane copies its input lines to `file`.
fn recording_pane(tmux: &TestTmux, name: &str, file: &std::path::Path) -> String {
    tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        name,
        "-P",
        "-F",
        "#{pane_id}",
        &format!("cat > '{}'", file.display()),
    ])
    .trim()
    .to_owned()
}

async fn file_is(file: &std::path::Path, expected: &str) {
    let arrived = wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(file).unwrap_or_default() == expected
    })
    .await;
    assert!(
        arrived,
        "{} holds {:?}, expected {expected:?}",
        file.display(),
        std::fs::read_to_string(file).unwrap_or_default()
    );
}

fn op(target: &str, text: &str) -> Value {
    json!({"target": target, "keys": text, "literal": true})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_arrive_in_order_and_errors_stop_or_not() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let (file_a, file_b) = (dir.path().join("a"), dir.path().join("b"));
    let a = recording_pane(&tmux, "a", &file_a);
    let b = recording_pane(&tmux, "b", &file_b);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;

    let all = call_ok(
        &client,
        "send_keys_batch",
        json!({"operations": [
            op(&a, "one 'quoted' $(not run) #{x}"),
            op(&b, "two ; three"),
            op(&a, "four"),
            {"target": b, "keys": ["f", "i", "v", "e", "Enter"], "enter": false},
        ]}),
    )
    .await;
    assert_eq!(all["succeeded"], 4, "{all}");
    assert_eq!(all["failed"], 0);
    assert_eq!(all["stopped_at"], Value::Null);
    assert_eq!(all["results"][2]["pane_id"], a.as_str());
    file_is(&file_a, "one 'quoted' $(not run) #{x}\nfour\n").await;
    file_is(&file_b, "two ; three\nfive\n").await;

    // Stop (the default): a pane that does not exist ends the batch there.
    let stopped = call_ok(
        &client,
        "send_keys_batch",
        json!({"operations": [op(&a, "six"), op("%999", "lost"), op(&b, "never")]}),
    )
    .await;
    assert_eq!(stopped["stopped_at"], 1, "{stopped}");
    assert_eq!(
        (stopped["succeeded"].clone(), stopped["failed"].clone()),
        (json!(1), json!(2))
    );
    assert_eq!(stopped["results"][1]["success"], false);
    assert!(
        stopped["results"][2]["error"]
            .as_str()
            .unwrap()
            .contains("not run")
    );
    file_is(&file_a, "one 'quoted' $(not run) #{x}\nfour\nsix\n").await;

    // Continue: an invalid operation (base64 text without literal) fails alone.
    let continued = call_ok(
        &client,
        "send_keys_batch",
        json!({"on_error": "continue", "operations": [
            op(&a, "seven"),
            {"target": b, "keys": ["ZWlnaHQ="], "encoding": "base64"},
            op(&b, "eight"),
        ]}),
    )
    .await;
    assert_eq!(continued["stopped_at"], Value::Null, "{continued}");
    assert_eq!(continued["succeeded"], 2);
    assert_eq!(continued["results"][1]["success"], false);
    assert!(
        continued["results"][1]["suggestion"]
            .as_str()
            .unwrap()
            .contains("literal")
    );
    file_is(&file_b, "two ; three\nfive\neight\n").await;
    file_is(&file_a, "one 'quoted' $(not run) #{x}\nfour\nsix\nseven\n").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_batches_are_refused_whole_and_the_cap_is_advertised() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a");
    let a = recording_pane(&tmux, "a", &file);
    let mut config = config_with_server("work", &tmux.socket, false);
    config.limits.max_batch_ops = std::num::NonZeroU32::new(3).unwrap();
    let gateway = spawn_gateway(config).await;
    let client = client(&gateway).await;

    let tools = client.list_all_tools().await.unwrap();
    let tool = tools.iter().find(|t| t.name == "send_keys_batch").unwrap();
    let operations = &tool.input_schema["properties"]["operations"];
    assert_eq!(operations["maxItems"], 3, "{operations}");
    assert_eq!(operations["minItems"], 1, "{operations}");

    let unknown = call_err(
        &client,
        "send_keys_batch",
        json!({"operations": [op(&a, "x"), {"target": a, "keys": "y", "colour": "red"}]}),
    )
    .await;
    let message = unknown["message"].as_str().unwrap();
    assert!(
        message.contains("operations[1]") && message.contains("colour"),
        "{unknown}"
    );
    let too_many = call_err(
        &client,
        "send_keys_batch",
        json!({"operations": [op(&a, "1"), op(&a, "2"), op(&a, "3"), op(&a, "4")]}),
    )
    .await;
    assert_eq!(too_many["kind"], "invalid_arguments", "{too_many}");
    let empty = call_err(&client, "send_keys_batch", json!({"operations": []})).await;
    assert_eq!(empty["kind"], "invalid_arguments");
    let bad_timeout = call_err(
        &client,
        "send_keys_batch",
        json!({"operations": [op(&a, "1")], "timeout": -1}),
    )
    .await;
    assert_eq!(bad_timeout["kind"], "invalid_arguments");
    // Nothing of the refused batches reached the pane.
    call_ok(
        &client,
        "send_keys_batch",
        json!({"operations": [op(&a, "only")]}),
    )
    .await;
    file_is(&file, "only\n").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_batch_sends_waits_and_captures_in_one_call() {
    let tmux = TestTmux::start();
    let pane = tmux
        .ok(&[
            "new-session",
            "-d",
            "-s",
            "p",
            "-x",
            "80",
            "-y",
            "20",
            "-P",
            "-F",
            "#{pane_id}",
            "env PS1='$ ' sh",
        ])
        .trim()
        .to_owned();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client(&gateway).await;
    assert!(
        wait_until(Duration::from_secs(10), || tmux
            .ok(&["capture-pane", "-p", "-t", &pane])
            .contains('$'))
        .await
    );

    let done = call_ok(
        &client,
        "pane_batch",
        json!({"operations": [
            {"op": "capture_since", "target": pane},
            {"op": "send_keys", "target": pane, "keys": "echo batch-$((20+22))", "literal": true},
            {"op": "wait_for_text", "target": pane, "patterns": ["batch-42"], "timeout": 10},
            {"op": "capture_pane", "target": pane},
        ]}),
    )
    .await;
    assert_eq!(done["succeeded"], 4, "{done}");
    assert_eq!(done["results"][2]["result"]["outcome"], "matched", "{done}");
    assert!(
        done["results"][3]["result"]["text"]
            .as_str()
            .unwrap()
            .contains("batch-42")
    );
    let cursor = done["results"][0]["result"]["cursor"].clone();
    let since = call_ok(
        &client,
        "pane_batch",
        json!({"operations": [{"op": "capture_since", "cursor": cursor}]}),
    )
    .await;
    let lines = since["results"][0]["result"]["lines"].as_str().unwrap();
    assert!(lines.contains("batch-42"), "{since}");

    // A failing operation stops the batch; the rest are reported as not run.
    let stopped = call_ok(
        &client,
        "pane_batch",
        json!({"operations": [
            {"op": "capture_pane", "target": "%999"},
            {"op": "send_keys", "target": pane, "keys": "echo never", "literal": true},
        ]}),
    )
    .await;
    assert_eq!(stopped["stopped_at"], 0, "{stopped}");
    assert_eq!(stopped["results"][1]["op"], "send_keys");
    assert_eq!(stopped["results"][1]["success"], false);

    // Only the five pane tools, and no server per operation.
    let nested = call_err(
        &client,
        "pane_batch",
        json!({"operations": [{"op": "pane_batch", "operations": []}]}),
    )
    .await;
    assert!(
        nested["message"]
            .as_str()
            .unwrap()
            .contains("operations[0]"),
        "{nested}"
    );
    let with_server = call_ok(
        &client,
        "pane_batch",
        json!({"operations": [{"op": "capture_pane", "target": pane, "server": "other"}]}),
    )
    .await;
    assert_eq!(with_server["failed"], 1, "{with_server}");
}

/// The `notifications/progress` messages in a tools/call answered over SSE.
async fn progress_of(mcp: &common::RawMcp, id: u64, operations: Vec<Value>) -> Vec<Value> {
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "send_keys_batch", "arguments": {"operations": operations},
                   "_meta": {"progressToken": format!("p{id}")}}
    });
    let (progress, result) = common::call_with_progress(mcp, id, &body).await;
    assert_eq!(result["result"]["isError"], false, "{result}");
    progress
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_reported_per_operation_for_batches_over_three() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let a = recording_pane(&tmux, "a", &dir.path().join("a"));
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let mut mcp = gateway.raw();
    mcp.initialize().await;

    let five: Vec<Value> = (0..5).map(|i| op(&a, &format!("p{i}"))).collect();
    let progress = progress_of(&mcp, 2, five).await;
    assert_eq!(progress.len(), 5, "{progress:?}");
    for (i, note) in progress.iter().enumerate() {
        assert_eq!(note["params"]["progressToken"], "p2");
        assert_eq!(note["params"]["progress"], (i + 1) as f64);
        assert_eq!(note["params"]["total"], 5.0);
    }
    let three: Vec<Value> = (0..3).map(|i| op(&a, &format!("q{i}"))).collect();
    assert!(progress_of(&mcp, 3, three).await.is_empty());
}
