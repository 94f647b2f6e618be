//! Targets as agents write them (`SESSION:WINDOW.PANE`, `SESSION:WINDOW` with an index or an
//! exact window name) over MCP (real HTTP, rmcp's client) against a real private tmux server:
//! each reaches the object tmux itself would name by index, answers name ids, ambiguous and
//! missing paths name the candidates, and a session outside the caller's ACL reads exactly like
//! a missing one.

mod common;

use common::mcp_client::{Client, connect, connect_with, fails, ok};
use common::tmux::TestTmux;
use common::tools::{session_limited_token, wait_for_screen};
use common::{TestGateway, config_with_server, spawn_gateway};
use serde_json::{Value, json};

/// The gateway's name for the test server.
const SERVER: &str = "local";

/// What tmux itself reports for `format` at `target` (the test's own view, by index).
fn display(tmux: &TestTmux, target: &str, format: &str) -> String {
    tmux.ok(&["display-message", "-p", "-t", target, format])
        .trim_end()
        .to_owned()
}

/// Session `work`: window 0 `editor`, window 1 `logs` split into panes 0 and 1, windows 2 and
/// 3 both named `dup`. Session `secret` beside it.
fn layout(tmux: &TestTmux) {
    tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "work",
        "-n",
        "editor",
        "-x",
        "120",
        "-y",
        "40",
    ]);
    tmux.ok(&["new-window", "-d", "-t", "work:1", "-n", "logs"]);
    tmux.ok(&["split-window", "-d", "-t", "work:1"]);
    tmux.ok(&["new-window", "-d", "-t", "work:2", "-n", "dup"]);
    tmux.ok(&["new-window", "-d", "-t", "work:3", "-n", "dup"]);
    tmux.ok(&["new-session", "-d", "-s", "secret", "-x", "80", "-y", "24"]);
}

async fn gateway(tmux: &TestTmux) -> TestGateway {
    spawn_gateway(config_with_server(SERVER, &tmux.socket, false)).await
}

fn message(error: &Value) -> &str {
    error["message"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_resolve_to_the_ids_tmux_names_by_index() {
    let tmux = TestTmux::start();
    layout(&tmux);
    let gateway = gateway(&tmux).await;
    let client = connect(&gateway).await;
    let logs_0 = display(&tmux, "work:1.0", "#{pane_id}");
    let logs_1 = display(&tmux, "work:1.1", "#{pane_id}");
    assert_ne!(logs_0, logs_1);

    // `work:1.0` is pane 0 of window 1, and the answer names its id.
    let info = ok(&client, "get_pane_info", json!({"target": "work:1.0"})).await;
    assert_eq!(info["id"], logs_0.as_str(), "{info}");
    let info = ok(&client, "get_pane_info", json!({"target": "work:1.1"})).await;
    assert_eq!(info["id"], logs_1.as_str(), "{info}");

    // Input typed at `work:1.0` lands in that pane, and a capture by path reads it back.
    ok(
        &client,
        "send_keys",
        json!({"target": "work:1.0", "keys": ["echo reached-$((6*7))"]}),
    )
    .await;
    wait_for_screen(&tmux, &logs_0, "reached-42").await;
    let capture = ok(&client, "capture_pane", json!({"target": "work:1.0"})).await;
    assert_eq!(capture["pane_id"], logs_0.as_str());
    assert!(
        capture["text"]
            .as_str()
            .unwrap_or_default()
            .contains("reached-42"),
        "{capture}"
    );
    assert!(
        !common::tools::screen(&tmux, &logs_1).contains("reached-42"),
        "the other pane of the window got the input"
    );

    // A window by exact name, and a pane of it; answers name ids.
    let editor = display(&tmux, "work:0", "#{window_id}");
    let window = ok(&client, "get_window_info", json!({"target": "work:editor"})).await;
    assert_eq!(window["window"]["id"], editor.as_str(), "{window}");
    let by_index = ok(&client, "get_window_info", json!({"target": "work:0"})).await;
    assert_eq!(by_index["window"]["id"], editor.as_str());
    let pane = ok(&client, "get_pane_info", json!({"target": "work:editor.0"})).await;
    assert_eq!(
        pane["id"],
        display(&tmux, "work:0.0", "#{pane_id}").as_str()
    );
    let panes = ok(&client, "list_panes", json!({"target": "work:logs"})).await;
    let ids: Vec<&str> = panes["panes"]
        .as_array()
        .map(|rows| rows.iter().filter_map(|p| p["id"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(ids, [logs_0.as_str(), logs_1.as_str()], "{panes}");

    // Exactly: never a prefix, a pattern or another case.
    for text in ["work:edit", "work:edi*", "work:Editor"] {
        fails(
            &client,
            "get_window_info",
            json!({"target": text}),
            "not_found",
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ambiguous_and_missing_paths_name_the_candidates() {
    let tmux = TestTmux::start();
    layout(&tmux);
    let gateway = gateway(&tmux).await;
    let client = connect(&gateway).await;
    let dup_2 = display(&tmux, "work:2", "#{window_id}");
    let dup_3 = display(&tmux, "work:3", "#{window_id}");

    let err = fails(
        &client,
        "capture_pane",
        json!({"target": "work:dup"}),
        "invalid_arguments",
    )
    .await;
    assert!(
        message(&err).contains(&dup_2) && message(&err).contains(&dup_3),
        "{err}"
    );
    // Nothing was acted on: the first of the two is not picked.
    fails(
        &client,
        "kill_window",
        json!({"target": "work:dup"}),
        "invalid_arguments",
    )
    .await;
    assert_eq!(display(&tmux, "work:2", "#{window_id}"), dup_2);

    let err = fails(
        &client,
        "capture_pane",
        json!({"target": "work:9"}),
        "not_found",
    )
    .await;
    assert!(
        message(&err).contains("\"editor\"") && message(&err).contains("\"logs\""),
        "{err}"
    );
    let err = fails(
        &client,
        "capture_pane",
        json!({"target": "work:1.7"}),
        "not_found",
    )
    .await;
    let logs_1 = display(&tmux, "work:1.1", "#{pane_id}");
    assert!(
        message(&err).contains("no pane 7") && message(&err).contains(&logs_1),
        "{err}"
    );
    let err = fails(
        &client,
        "capture_pane",
        json!({"target": "nosuch:0"}),
        "not_found",
    )
    .await;
    assert!(message(&err).contains("\"work\""), "{err}");

    // tmux's relative forms stay refused, naming the input.
    for text in ["work:{last}", "1.0", ":1", "work:+1", "work:1.{top}"] {
        let err = fails(
            &client,
            "capture_pane",
            json!({"target": text}),
            "invalid_arguments",
        )
        .await;
        assert!(message(&err).contains(text), "{text}: {err}");
    }
}

/// The error `client` gets for a path into `session`.
async fn path_error(client: &Client, session: &str) -> Value {
    fails(
        client,
        "capture_pane",
        json!({"target": format!("{session}:0.0")}),
        "not_found",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_outside_the_acl_reads_as_missing() {
    let tmux = TestTmux::start();
    layout(&tmux);
    let gateway = gateway(&tmux).await;
    let scopes = ["mux:read", "mux:write", "mux:admin"];
    let limited = connect_with(
        &gateway,
        &session_limited_token(&gateway, "agent-work", &scopes, &["work"]),
    )
    .await;

    // The same path works for a caller that may see the session...
    let full = connect(&gateway).await;
    let secret_pane = display(&tmux, "secret:0.0", "#{pane_id}");
    let info = ok(&full, "get_pane_info", json!({"target": "secret:0.0"})).await;
    assert_eq!(info["id"], secret_pane.as_str());

    // ...and for one that may not, it reads exactly as a session that does not exist.
    let hidden = path_error(&limited, "secret").await;
    let missing = path_error(&limited, "absent").await;
    assert_eq!(
        message(&hidden).replace("secret", "absent"),
        message(&missing),
        "{hidden} / {missing}"
    );
    assert_eq!(hidden["suggestion"], missing["suggestion"]);
    let secret_id = display(&tmux, "secret", "#{session_id}");
    assert!(!message(&hidden).contains(&secret_id), "{hidden}");
    let by_id = fails(
        &limited,
        "capture_pane",
        json!({"target": format!("{secret_id}:0.0")}),
        "not_found",
    )
    .await;
    assert!(!message(&by_id).contains("secret"), "{by_id}");
    // Input by path never reaches it.
    fails(
        &limited,
        "send_keys",
        json!({"target": "secret:0.0", "keys": ["echo leaked"]}),
        "not_found",
    )
    .await;
    assert!(!common::tools::screen(&tmux, &secret_pane).contains("leaked"));

    // Its own session resolves as for anyone.
    let work_pane = display(&tmux, "work:1.1", "#{pane_id}");
    let info = ok(&limited, "get_pane_info", json!({"target": "work:1.1"})).await;
    assert_eq!(info["id"], work_pane.as_str());
}
