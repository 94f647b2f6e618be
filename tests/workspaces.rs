//! Workspace mode: one sandboxed tmux server per tenant, through a real gateway.

mod common;

use common::tmux::TestTmux;
use common::tools::{call_err, call_ok, client_with};
use common::workspaces::WorkspaceState;
use common::{config_with_server, spawn_gateway};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tenant_gets_its_own_server_named_workspace() {
    let shared = TestTmux::start();
    let state = WorkspaceState::new();
    let gateway =
        spawn_gateway(state.config(config_with_server("shared", &shared.socket, false))).await;
    let alice = client_with(&gateway, &gateway.mint("alice", &["mux:admin"])).await;
    let bob = client_with(&gateway, &gateway.mint("bob", &["mux:admin"])).await;

    let servers = call_ok(&alice, "list_servers", json!({})).await;
    assert_eq!(
        servers["servers"],
        json!([{"name": "workspace", "kind": "workspace", "allow_absent": false, "reachability": "no_sessions"}]),
        "a configured server is not granted explicitly: only the workspace shows"
    );
    let created = call_ok(&alice, "create_session", json!({"name": "a1"})).await;
    assert_eq!(created["server"], "workspace");
    let pane = created["session"]["active_pane_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = call_ok(
        &alice,
        "run_command",
        json!({"target": pane, "command": "echo hi from $HOSTNAME; pwd", "timeout": 20}),
    )
    .await;
    assert_eq!(run["exit_status"], 0, "{run}");
    assert_eq!(run["output"], "hi from workspace\n/workspace\n", "{run}");

    let listed = call_ok(&bob, "list_sessions", json!({})).await;
    assert_eq!(
        listed["sessions"],
        json!([]),
        "bob's workspace is another server"
    );
    let created = call_ok(&bob, "create_session", json!({"name": "a1"})).await;
    assert_eq!(
        created["session"]["active_pane_id"], pane,
        "the same pane id names bob's own pane in bob's own server"
    );
    let run = call_ok(
        &bob,
        "run_command",
        json!({"target": pane, "command": "echo bob-was-here", "timeout": 20}),
    )
    .await;
    assert_eq!(run["output"], "bob-was-here\n", "{run}");
    let alice_screen = call_ok(&alice, "capture_pane", json!({"target": pane})).await;
    assert!(
        !alice_screen["text"]
            .as_str()
            .unwrap()
            .contains("bob-was-here"),
        "{alice_screen}"
    );
    let error = call_err(&bob, "list_sessions", json!({"server": "shared"})).await;
    assert_eq!(
        error["kind"], "not_found",
        "a configured server needs an explicit grant: {error}"
    );
    let listed = call_ok(&alice, "list_sessions", json!({})).await;
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1);
    assert_ne!(state.sandbox_pid("alice"), state.sandbox_pid("bob"));
    assert!(state.sandbox_pid("alice").is_some());
}
