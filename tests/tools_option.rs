//! Option, environment and hook tools over MCP against a real tmux server.

mod common;

use common::calls::{admin_limited_to, err_kind, legacy, ok, stateless};
use common::tmux::TestTmux;
use common::{config_with_server, spawn_gateway};
use serde_json::json;

fn show(tmux: &TestTmux, args: &[&str]) -> String {
    tmux.ok(args).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_and_set_options_at_every_scope() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "ci-a"]);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = legacy(&gateway, &gateway.token).await;
    let window = show(
        &tmux,
        &["display-message", "-p", "-t", "main:0", "#{window_id}"],
    );
    let pane = tmux.pane_id("main:0").to_string();

    // Reads: server, global, per object (inherited values included), user options.
    let escape = ok(
        &client,
        "show_option",
        json!({"scope": "server", "option": "escape-time"}),
    )
    .await;
    assert_eq!(
        escape["value"],
        show(&tmux, &["show-options", "-s", "-v", "escape-time"])
    );
    assert_eq!(escape["target"], json!(null));
    let status = ok(
        &client,
        "show_option",
        json!({"scope": "session", "target": "main", "option": "status"}),
    )
    .await;
    assert_eq!(status["value"], "on");
    assert!(status["target"].as_str().unwrap().starts_with('$'));
    let global = ok(
        &client,
        "show_option",
        json!({"scope": "session", "global": true, "option": "status"}),
    )
    .await;
    assert_eq!(global["value"], "on");
    let keys = ok(
        &client,
        "show_option",
        json!({"scope": "window", "target": window, "option": "mode-keys"}),
    )
    .await;
    assert_eq!(
        keys["value"],
        show(&tmux, &["show-options", "-g", "-w", "-v", "mode-keys"])
    );
    let remain = ok(
        &client,
        "show_option",
        json!({"scope": "pane", "target": pane, "option": "remain-on-exit"}),
    )
    .await;
    assert_eq!(remain["value"], "off");
    let unset = ok(
        &client,
        "show_option",
        json!({"scope": "session", "target": "main", "option": "@nothing"}),
    )
    .await;
    assert_eq!(unset["value"], json!(null));

    // Writes, checked through tmux.
    ok(
        &client,
        "set_option",
        json!({"scope": "session", "target": "main", "option": "status", "value": "off"}),
    )
    .await;
    assert_eq!(
        show(&tmux, &["show-options", "-t", "main", "-v", "status"]),
        "off"
    );
    ok(
        &client,
        "set_option",
        json!({"scope": "session", "target": "main", "option": "status", "unset": true}),
    )
    .await;
    assert_eq!(
        show(&tmux, &["show-options", "-t", "main", "-v", "status"]),
        ""
    );
    ok(&client, "set_option", json!({"scope": "window", "target": window, "option": "@note", "value": "-starts with a dash #{x}"})).await;
    assert_eq!(
        show(&tmux, &["show-options", "-w", "-t", &window, "-v", "@note"]),
        "-starts with a dash #{x}"
    );
    let read_back = ok(
        &client,
        "show_option",
        json!({"scope": "window", "target": window, "option": "@note"}),
    )
    .await;
    assert_eq!(read_back["value"], "-starts with a dash #{x}");
    ok(
        &client,
        "set_option",
        json!({"scope": "pane", "target": pane, "option": "remain-on-exit", "value": "on"}),
    )
    .await;
    assert_eq!(
        show(
            &tmux,
            &["show-options", "-p", "-t", &pane, "-v", "remain-on-exit"]
        ),
        "on"
    );
    ok(
        &client,
        "set_option",
        json!({"scope": "session", "global": true, "option": "display-time", "value": "1234"}),
    )
    .await;
    assert_eq!(
        show(&tmux, &["show-options", "-g", "-v", "display-time"]),
        "1234"
    );
    ok(
        &client,
        "set_option",
        json!({"scope": "server", "option": "escape-time", "value": "42"}),
    )
    .await;
    assert_eq!(
        show(&tmux, &["show-options", "-s", "-v", "escape-time"]),
        "42"
    );

    // Refusals.
    for (tool, args, kind, needle) in [
        (
            "set_option",
            json!({"scope": "session", "target": "main", "option": "after-new-window", "value": "kill-server"}),
            "forbidden",
            "hook",
        ),
        (
            "set_option",
            json!({"scope": "session", "global": true, "option": "pane-died", "value": "x"}),
            "forbidden",
            "hook",
        ),
        (
            "set_option",
            json!({"scope": "session", "target": "main", "option": "status-left", "value": "#(touch /tmp/x)"}),
            "invalid_arguments",
            "#(",
        ),
        (
            // Expanded on every status redraw: the backtracking regex would pin tmux for ever.
            "set_option",
            json!({"scope": "session", "target": "main", "option": "status-right", "value": "#{s/^(a|a)*$/x/:pane_title}"}),
            "invalid_arguments",
            "regex",
        ),
        (
            "set_option",
            json!({"scope": "session", "target": "main", "option": "status-right", "value": "#{S:#{session_name}}"}),
            "invalid_arguments",
            "`S`",
        ),
        (
            "set_option",
            json!({"scope": "session", "target": "main", "option": "status"}),
            "invalid_arguments",
            "value",
        ),
        (
            "set_option",
            json!({"scope": "session", "target": "main", "option": "status", "value": "on", "unset": true}),
            "invalid_arguments",
            "value",
        ),
        (
            "set_option",
            json!({"scope": "session", "target": "main", "option": "status", "value": "maybe"}),
            "invalid_arguments",
            "maybe",
        ),
        (
            "set_option",
            json!({"scope": "session", "target": "main", "option": "no-such-option", "value": "1"}),
            "invalid_arguments",
            "no-such-option",
        ),
        (
            "show_option",
            json!({"scope": "session", "target": "main", "option": "no-such-option"}),
            "invalid_arguments",
            "no-such-option",
        ),
        (
            "show_option",
            json!({"scope": "session", "target": "main", "option": "bad name"}),
            "invalid_arguments",
            "bad name",
        ),
        (
            "show_option",
            json!({"scope": "server", "target": "main", "option": "escape-time"}),
            "invalid_arguments",
            "server options",
        ),
        (
            "show_option",
            json!({"scope": "session", "option": "status"}),
            "invalid_arguments",
            "target",
        ),
        (
            "show_option",
            json!({"scope": "session", "global": true, "target": "main", "option": "status"}),
            "invalid_arguments",
            "global",
        ),
        (
            "show_option",
            json!({"scope": "galaxy", "option": "status"}),
            "invalid_arguments",
            "galaxy",
        ),
        (
            "show_option",
            json!({"scope": "session", "target": "nosuch", "option": "status"}),
            "not_found",
            "nosuch",
        ),
    ] {
        err_kind(&client, tool, args, kind, needle).await;
    }
    assert_eq!(
        show(&tmux, &["show-options", "-g", "after-new-window"]),
        "after-new-window"
    );

    // Limited to ci-*: hidden sessions are missing, and shared scopes are out of reach.
    let ci = admin_limited_to(&gateway, "ci", &["ci-*"]);
    let limited = stateless(&gateway, &ci).await;
    err_kind(
        &limited,
        "show_option",
        json!({"scope": "pane", "target": pane, "option": "remain-on-exit"}),
        "not_found",
        &pane,
    )
    .await;
    err_kind(
        &limited,
        "set_option",
        json!({"scope": "session", "global": true, "option": "status", "value": "off"}),
        "forbidden",
        "every session",
    )
    .await;
    err_kind(
        &limited,
        "set_option",
        json!({"scope": "server", "option": "escape-time", "value": "1"}),
        "forbidden",
        "every session",
    )
    .await;
    ok(
        &limited,
        "set_option",
        json!({"scope": "session", "target": "ci-a", "option": "status", "value": "off"}),
    )
    .await;
    ok(
        &limited,
        "show_option",
        json!({"scope": "server", "option": "escape-time"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_and_set_environment() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "ci-a"]);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = legacy(&gateway, &gateway.token).await;

    ok(&client, "set_environment", json!({"scope": "session", "target": "main", "name": "API_MODE", "value": "-x; $HOME #{y}"})).await;
    assert_eq!(
        show(&tmux, &["show-environment", "-t", "main", "API_MODE"]),
        "API_MODE=-x; $HOME #{y}"
    );
    let one = ok(
        &client,
        "show_environment",
        json!({"scope": "session", "target": "main", "name": "API_MODE"}),
    )
    .await;
    assert_eq!(one["variables"], json!({"API_MODE": "-x; $HOME #{y}"}));
    let all = ok(
        &client,
        "show_environment",
        json!({"scope": "session", "target": "main"}),
    )
    .await;
    assert_eq!(all["variables"]["API_MODE"], "-x; $HOME #{y}");
    assert!(
        all["removed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == "SSH_AUTH_SOCK"),
        "{all}"
    );
    let missing = ok(
        &client,
        "show_environment",
        json!({"scope": "session", "target": "main", "name": "NOPE"}),
    )
    .await;
    assert_eq!(missing["variables"], json!({}));
    let set = ok(
        &client,
        "set_environment",
        json!({"scope": "session", "target": "main", "name": "API_MODE", "unset": true}),
    )
    .await;
    assert_eq!(set["unset"], true);
    assert!(set.get("value").is_none(), "values are not echoed: {set}");
    assert!(
        !tmux
            .tmux(&["show-environment", "-t", "main", "API_MODE"])
            .status
            .success()
    );

    ok(
        &client,
        "set_environment",
        json!({"scope": "global", "name": "SHARED", "value": "1"}),
    )
    .await;
    assert_eq!(
        show(&tmux, &["show-environment", "-g", "SHARED"]),
        "SHARED=1"
    );
    let global = ok(&client, "show_environment", json!({"scope": "global"})).await;
    assert_eq!(global["variables"]["SHARED"], "1");
    assert_eq!(global["target"], json!(null));

    for (args, kind, needle) in [
        (
            json!({"scope": "global", "name": "1BAD", "value": "x"}),
            "invalid_arguments",
            "1BAD",
        ),
        (
            json!({"scope": "global", "name": "A"}),
            "invalid_arguments",
            "value",
        ),
        (
            json!({"scope": "session", "name": "A", "value": "x"}),
            "invalid_arguments",
            "target",
        ),
        (
            json!({"scope": "global", "target": "main", "name": "A", "value": "x"}),
            "invalid_arguments",
            "target",
        ),
        (
            json!({"scope": "session", "target": "nosuch", "name": "A", "value": "x"}),
            "not_found",
            "nosuch",
        ),
    ] {
        err_kind(&client, "set_environment", args, kind, needle).await;
    }
    err_kind(
        &client,
        "show_environment",
        json!({"scope": "session", "target": "main", "name": "A=B"}),
        "invalid_arguments",
        "A=B",
    )
    .await;

    let ci = admin_limited_to(&gateway, "ci", &["ci-*"]);
    let limited = legacy(&gateway, &ci).await;
    err_kind(
        &limited,
        "set_environment",
        json!({"scope": "global", "name": "X", "value": "1"}),
        "forbidden",
        "every session",
    )
    .await;
    err_kind(
        &limited,
        "show_environment",
        json!({"scope": "session", "target": "main"}),
        "not_found",
        "main",
    )
    .await;
    ok(
        &limited,
        "set_environment",
        json!({"scope": "session", "target": "ci-a", "name": "X", "value": "1"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_are_readable_and_never_writable() {
    let tmux = TestTmux::start();
    tmux.ok(&[
        "set-hook",
        "-t",
        "main",
        "after-new-window",
        "display-message created",
    ]);
    tmux.ok(&["set-hook", "-g", "session-created", "display-message hello"]);
    let pane = tmux.pane_id("main:0").to_string();
    tmux.ok(&[
        "set-hook",
        "-p",
        "-t",
        &pane,
        "pane-exited",
        "display-message bye",
    ]);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = stateless(&gateway, &gateway.token).await;

    let session = ok(
        &client,
        "show_hooks",
        json!({"scope": "session", "target": "main"}),
    )
    .await;
    assert_eq!(
        session["hooks"],
        json!([{"name": "after-new-window", "index": 0, "command": "display-message created"}])
    );
    let global = ok(
        &client,
        "show_hooks",
        json!({"scope": "session", "global": true}),
    )
    .await;
    let names: Vec<_> = global["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].clone())
        .collect();
    assert_eq!(names, [json!("session-created")], "{global}");
    let on_pane = ok(
        &client,
        "show_hook",
        json!({"scope": "pane", "target": pane, "hook_name": "pane-exited"}),
    )
    .await;
    assert_eq!(on_pane["hooks"][0]["command"], "display-message bye");
    let unset = ok(
        &client,
        "show_hook",
        json!({"scope": "session", "global": true, "hook_name": "client-attached"}),
    )
    .await;
    assert_eq!(unset["hooks"], json!([]));

    err_kind(
        &client,
        "show_hook",
        json!({"scope": "session", "global": true, "hook_name": "status"}),
        "invalid_arguments",
        "status",
    )
    .await;
    err_kind(
        &client,
        "show_hooks",
        json!({"scope": "server"}),
        "invalid_arguments",
        "server",
    )
    .await;
    err_kind(
        &client,
        "show_hooks",
        json!({"scope": "session"}),
        "invalid_arguments",
        "target",
    )
    .await;

    let ci = admin_limited_to(&gateway, "ci", &["ci-*"]);
    let limited = legacy(&gateway, &ci).await;
    err_kind(
        &limited,
        "show_hooks",
        json!({"scope": "session", "target": "main"}),
        "not_found",
        "main",
    )
    .await;
}
