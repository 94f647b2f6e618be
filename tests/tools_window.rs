//! Window tools over MCP against a real tmux server, including a human attached on a real
//! terminal whose view must not change unless a tool says it does.

mod common;

use std::time::Duration;

use common::calls::{Client, admin_limited_to, err, err_kind, legacy, ok, stateless};
use common::human::{Human, human_attached, human_view};
use common::tmux::TestTmux;
use common::{config_with_server, spawn_gateway, wait_until};
use serde_json::{Value, json};

fn window_ids(listing: &Value) -> Vec<String> {
    listing["windows"]
        .as_array()
        .expect("windows")
        .iter()
        .map(|w| w["id"].as_str().unwrap().to_owned())
        .collect()
}

/// `(window id, index, name)` of a session's windows, from tmux itself.
fn windows_of(tmux: &TestTmux, session: &str) -> Vec<(String, u32, String)> {
    tmux.ok(&[
        "list-windows",
        "-t",
        session,
        "-F",
        "#{window_id} #{window_index} #{window_name}",
    ])
    .lines()
    .map(|l| {
        let mut parts = l.splitn(3, ' ');
        (
            parts.next().unwrap().to_owned(),
            parts.next().unwrap().parse().unwrap(),
            parts.next().unwrap_or_default().to_owned(),
        )
    })
    .collect()
}

fn window_id(tmux: &TestTmux, target: &str) -> String {
    tmux.ok(&["display-message", "-p", "-t", target, "#{window_id}"])
        .trim()
        .to_owned()
}

fn active_window(tmux: &TestTmux, session: &str) -> String {
    tmux.ok(&[
        "display-message",
        "-p",
        "-t",
        &format!("{session}:"),
        "#{window_id}",
    ])
    .trim()
    .to_owned()
}

async fn setup() -> (TestTmux, common::TestGateway, Client) {
    let tmux = TestTmux::start();
    tmux.ok(&["rename-window", "-t", "main:0", "shell"]);
    tmux.ok(&["new-window", "-d", "-t", "main", "-n", "logs"]);
    tmux.ok(&["new-session", "-d", "-s", "ci-a", "-n", "ci-win"]);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = legacy(&gateway, &gateway.token).await;
    (tmux, gateway, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_get_windows_with_filters_and_acl() {
    let (tmux, gateway, client) = setup().await;
    let shell = window_id(&tmux, "main:0");
    let logs = window_id(&tmux, "main:1");

    let all = ok(&client, "list_windows", json!({})).await;
    assert_eq!(all["windows"].as_array().unwrap().len(), 3, "{all}");
    let main = ok(&client, "list_windows", json!({"target": "main"})).await;
    assert_eq!(window_ids(&main), [shell.as_str(), logs.as_str()]);
    let first = &main["windows"][0];
    assert_eq!(first["name"], "shell");
    assert_eq!(first["index"], 0);
    assert_eq!(first["session_name"], "main");
    assert_eq!(first["active"], true);
    assert_eq!(first["panes"], 1);
    assert_eq!(
        (first["width"].as_u64(), first["height"].as_u64()),
        (Some(120), Some(40))
    );
    assert!(first["active_pane_id"].as_str().unwrap().starts_with('%'));
    // The default view leaves out the layout string and unset flags; `fields` asks for them.
    let logs_row = &main["windows"][1];
    for hidden in ["layout", "session_id", "zoomed"] {
        assert!(first.get(hidden).is_none(), "{hidden} in {first}");
    }
    assert!(
        logs_row.get("active").is_none(),
        "unset flag shown: {logs_row}"
    );
    let laid = ok(
        &client,
        "list_windows",
        json!({"target": "main", "fields": ["layout", "active"]}),
    )
    .await;
    let laid = laid["windows"][1].as_object().unwrap();
    assert_eq!(laid.len(), 3, "id, layout and active: {laid:?}");
    assert_eq!(laid["active"], false);
    assert!(laid["layout"].as_str().unwrap().contains('x'));

    let named = ok(&client, "list_windows", json!({"filters": {"name": "l*"}})).await;
    assert_eq!(window_ids(&named), [logs.as_str()]);
    let inactive = ok(
        &client,
        "list_windows",
        json!({"target": "main", "filters": "{\"active\": false}"}),
    )
    .await;
    assert_eq!(window_ids(&inactive), [logs.as_str()]);

    let info = ok(&client, "get_window_info", json!({"target": logs})).await;
    assert_eq!(info["window"]["name"], "logs");
    let pane = tmux.pane_id("main:1").to_string();
    let via_pane = ok(&client, "get_window_info", json!({"target": pane})).await;
    assert_eq!(via_pane["window"]["id"], logs.as_str());
    let via_session = ok(&client, "get_window_info", json!({"target": "main"})).await;
    assert_eq!(via_session["window"]["id"], shell.as_str());

    err_kind(
        &client,
        "list_windows",
        json!({"target": "nosuch"}),
        "not_found",
        "nosuch",
    )
    .await;
    err_kind(
        &client,
        "list_windows",
        json!({"target": pane}),
        "invalid_arguments",
        "session",
    )
    .await;
    err_kind(
        &client,
        "list_windows",
        json!({"filters": {"x": 1}}),
        "invalid_arguments",
        "`x`",
    )
    .await;
    err_kind(
        &client,
        "get_window_info",
        json!({"target": "@999"}),
        "not_found",
        "@999",
    )
    .await;
    err_kind(
        &client,
        "get_window_info",
        json!({"target": "@x"}),
        "invalid_arguments",
        "@x",
    )
    .await;

    // Limited to ci-*: main's windows are neither listed nor readable, like missing ones.
    let ci = admin_limited_to(&gateway, "ci", &["ci-*"]);
    let limited = stateless(&gateway, &ci).await;
    let seen = ok(&limited, "list_windows", json!({})).await;
    assert_eq!(seen["windows"].as_array().unwrap().len(), 1);
    assert_eq!(seen["windows"][0]["session_name"], "ci-a");
    err_kind(
        &limited,
        "list_windows",
        json!({"target": "main"}),
        "not_found",
        "main",
    )
    .await;
    let hidden = err(&limited, "get_window_info", json!({"target": logs})).await;
    let missing = err(&limited, "get_window_info", json!({"target": "@999"})).await;
    assert_eq!(hidden["kind"], "not_found");
    assert_eq!(
        hidden["message"].as_str().unwrap().replace(&logs, "@X"),
        missing["message"].as_str().unwrap().replace("@999", "@X")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_window_stays_in_the_background_unless_selected() {
    let (tmux, _gateway, client) = setup().await;
    let shell = window_id(&tmux, "main:0");
    let logs = window_id(&tmux, "main:1");
    let dir = tempfile::tempdir().unwrap();
    let dir_path = std::fs::canonicalize(dir.path()).unwrap();

    let created = ok(
        &client,
        "create_window",
        json!({
            "target": "main",
            "name": "build; it",
            "start_directory": dir_path.to_str().unwrap(),
            "environment": {"MODE": "fast"},
        }),
    )
    .await;
    let window = &created["window"];
    let new_id = window["id"].as_str().unwrap().to_owned();
    assert_eq!(window["name"], "build; it");
    assert_eq!(window["index"], 2);
    assert_eq!(window["active"], false);
    assert_eq!(
        active_window(&tmux, "main"),
        shell,
        "create_window changed the current window"
    );
    let pane = window["active_pane_id"].as_str().unwrap();
    // tmux reads the path from the pane's process, which a busy machine may not have started
    // yet: until then the path is empty.
    let path = || {
        tmux.ok(&["display-message", "-p", "-t", pane, "#{pane_current_path}"])
            .trim()
            .to_owned()
    };
    common::wait_until(Duration::from_secs(10), || !path().is_empty()).await;
    assert_eq!(path(), dir_path.to_str().unwrap());

    // Positioned before an existing window: later windows shift up.
    let before = ok(
        &client,
        "create_window",
        json!({"target": logs, "position": "before", "name": "inserted"}),
    )
    .await;
    let inserted = before["window"]["id"].as_str().unwrap().to_owned();
    let order: Vec<String> = windows_of(&tmux, "main").into_iter().map(|w| w.0).collect();
    assert_eq!(
        order,
        [
            shell.clone(),
            inserted.clone(),
            logs.clone(),
            new_id.clone()
        ]
    );
    let after = ok(
        &client,
        "create_window",
        json!({"target": new_id, "position": "after", "select": true}),
    )
    .await;
    let selected = after["window"]["id"].as_str().unwrap();
    assert_eq!(after["window"]["active"], true);
    assert_eq!(
        active_window(&tmux, "main"),
        selected,
        "select: true must switch"
    );

    for (args, kind, needle) in [
        (
            json!({"target": "main", "position": "after"}),
            "invalid_arguments",
            "position",
        ),
        (
            json!({"target": logs, "name": "x"}),
            "invalid_arguments",
            "position",
        ),
        (
            json!({"target": "main", "name": "a#b"}),
            "invalid_arguments",
            "name",
        ),
        (
            json!({"target": "main", "position": "above"}),
            "invalid_arguments",
            "above",
        ),
        (json!({"target": "%0"}), "invalid_arguments", "pane"),
        (json!({"target": "nosuch"}), "not_found", "nosuch"),
        (
            json!({"target": "main", "environment": {"1X": "y"}}),
            "invalid_arguments",
            "1X",
        ),
        (
            json!({"target": "main", "layout": "layout { pane; }"}),
            "unsupported",
            "tmux does not offer layout",
        ),
        (
            json!({"target": "main", "shell": ""}),
            "invalid_arguments",
            "shell is empty",
        ),
    ] {
        err_kind(&client, "create_window", args, kind, needle).await;
    }
    assert_eq!(
        windows_of(&tmux, "main").len(),
        5,
        "a refused call created a window"
    );

    // A window running a command instead of the shell.
    let running = ok(
        &client,
        "create_window",
        json!({"target": "main", "shell": "echo from-the-shell-arg; exec sleep 60"}),
    )
    .await;
    let pane = running["window"]["active_pane_id"].as_str().unwrap();
    let seen = ok(
        &client,
        "wait_for_text",
        json!({"target": pane, "patterns": ["from-the-shell-arg"], "include_screen": true}),
    )
    .await;
    assert_eq!(seen["matched_line"], "from-the-shell-arg", "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_select_resize_layout_move_and_kill_windows() {
    let (tmux, gateway, client) = setup().await;
    let shell = window_id(&tmux, "main:0");
    let logs = window_id(&tmux, "main:1");

    // rename
    let renamed = ok(
        &client,
        "rename_window",
        json!({"target": logs, "new_name": "-tail; f"}),
    )
    .await;
    assert_eq!(renamed["window"]["name"], "-tail; f");
    assert_eq!(windows_of(&tmux, "main")[1].2, "-tail; f");
    err_kind(
        &client,
        "rename_window",
        json!({"target": logs, "new_name": ""}),
        "invalid_arguments",
        "new_name",
    )
    .await;
    err_kind(
        &client,
        "rename_window",
        json!({"target": "main", "new_name": "x"}),
        "invalid_arguments",
        "window id",
    )
    .await;

    // select: by id, by step, by index
    let selected = ok(&client, "select_window", json!({"target": logs})).await;
    assert_eq!(selected["window"]["id"], logs.as_str());
    assert_eq!(active_window(&tmux, "main"), logs);
    let stepped = ok(
        &client,
        "select_window",
        json!({"target": "main", "step": "next"}),
    )
    .await;
    assert_eq!(stepped["window"]["id"], shell.as_str());
    let last = ok(
        &client,
        "select_window",
        json!({"target": "main", "step": "last"}),
    )
    .await;
    assert_eq!(last["window"]["id"], logs.as_str());
    let indexed = ok(
        &client,
        "select_window",
        json!({"target": "main", "index": 0}),
    )
    .await;
    assert_eq!(indexed["window"]["id"], shell.as_str());
    assert_eq!(active_window(&tmux, "main"), shell);
    err_kind(
        &client,
        "select_window",
        json!({"target": "main"}),
        "invalid_arguments",
        "step",
    )
    .await;
    err_kind(
        &client,
        "select_window",
        json!({"target": "main", "index": 7}),
        "not_found",
        "index 7",
    )
    .await;
    err_kind(
        &client,
        "select_window",
        json!({"target": logs, "step": "next"}),
        "invalid_arguments",
        "session",
    )
    .await;
    // A path names a window once resolved, so the same rule holds after resolving it.
    err_kind(
        &client,
        "select_window",
        json!({"target": "main:0", "step": "next"}),
        "invalid_arguments",
        "with step or index takes a session",
    )
    .await;

    // resize
    let resized = ok(
        &client,
        "resize_window",
        json!({"target": logs, "width": 70, "height": 15}),
    )
    .await;
    assert_eq!(
        (
            resized["window"]["width"].as_u64(),
            resized["window"]["height"].as_u64()
        ),
        (Some(70), Some(15))
    );
    err_kind(
        &client,
        "resize_window",
        json!({"target": logs}),
        "invalid_arguments",
        "width",
    )
    .await;
    err_kind(
        &client,
        "resize_window",
        json!({"target": logs, "width": 0}),
        "invalid_arguments",
        "width",
    )
    .await;

    // layout: a name, then restoring an earlier layout string
    tmux.ok(&["split-window", "-d", "-t", &shell]);
    let before = ok(&client, "get_window_info", json!({"target": shell})).await;
    let original = before["window"]["layout"].as_str().unwrap().to_owned();
    let laid = ok(
        &client,
        "select_layout",
        json!({"target": shell, "layout": "even-horizontal"}),
    )
    .await;
    assert_ne!(laid["window"]["layout"], original.as_str());
    let restored = ok(
        &client,
        "select_layout",
        json!({"target": shell, "layout": original}),
    )
    .await;
    assert_eq!(restored["window"]["layout"], original.as_str());
    err_kind(
        &client,
        "select_layout",
        json!({"target": shell, "layout": "spiral"}),
        "invalid_arguments",
        "spiral",
    )
    .await;
    err_kind(
        &client,
        "select_layout",
        json!({"target": shell, "layout": "abcd,1x1,0,0"}),
        "invalid_arguments",
        "layout",
    )
    .await;

    // move to another session, then next to a window there
    let moved = ok(
        &client,
        "move_window",
        json!({"target": logs, "destination": "ci-a"}),
    )
    .await;
    assert_eq!(moved["window"]["session_name"], "ci-a");
    assert_eq!(moved["window"]["id"], logs.as_str());
    let ci_win = window_id(&tmux, "ci-a:0");
    ok(
        &client,
        "move_window",
        json!({"target": logs, "destination": ci_win, "position": "before"}),
    )
    .await;
    let order: Vec<String> = windows_of(&tmux, "ci-a").into_iter().map(|w| w.0).collect();
    assert_eq!(order, [logs.clone(), ci_win.clone()]);
    assert_eq!(
        active_window(&tmux, "ci-a"),
        ci_win,
        "move_window without select switched"
    );
    err_kind(
        &client,
        "move_window",
        json!({"target": logs, "destination": ci_win}),
        "invalid_arguments",
        "position",
    )
    .await;
    err_kind(
        &client,
        "move_window",
        json!({"target": logs, "destination": logs, "position": "after"}),
        "invalid_arguments",
        "destination",
    )
    .await;

    // Limited to ci-*: moving into a hidden session looks like moving into a missing one.
    let ci = admin_limited_to(&gateway, "ci", &["ci-*"]);
    let limited = legacy(&gateway, &ci).await;
    err_kind(
        &limited,
        "move_window",
        json!({"target": logs, "destination": "main"}),
        "not_found",
        "main",
    )
    .await;
    err_kind(
        &limited,
        "kill_window",
        json!({"target": shell}),
        "not_found",
        &shell,
    )
    .await;
    err_kind(
        &limited,
        "rename_window",
        json!({"target": shell, "new_name": "x"}),
        "not_found",
        &shell,
    )
    .await;

    // kill: a window, then a session's last window (which ends the session)
    let killed = ok(&client, "kill_window", json!({"target": logs})).await;
    assert_eq!(killed["session_closed"], false);
    assert_eq!(windows_of(&tmux, "ci-a").len(), 1);
    let last_one = ok(&client, "kill_window", json!({"target": ci_win})).await;
    assert_eq!(last_one["session_closed"], true);
    assert!(!tmux.ok(&["list-sessions"]).contains("ci-a"));
    err_kind(
        &client,
        "kill_window",
        json!({"target": "main"}),
        "invalid_arguments",
        "window id",
    )
    .await;
    err_kind(
        &client,
        "kill_window",
        json!({"target": logs}),
        "not_found",
        &logs,
    )
    .await;
}

#[test]
fn an_attached_human_keeps_their_view_while_agents_read_and_create_windows() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tmux = TestTmux::start();
    tmux.ok(&["new-window", "-d", "-t", "main"]);
    tmux.ok(&["select-window", "-t", "main:1"]);
    let _human = Human::attach(&tmux, "main", 100, 30);
    assert!(runtime.block_on(wait_until(Duration::from_secs(5), || human_attached(&tmux))));
    let before = human_view(&tmux, "main");
    assert!(before.0.contains("100x30"), "{before:?}");

    runtime.block_on(async {
        let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
        let client = legacy(&gateway, &gateway.token).await;
        let first = window_id(&tmux, "main:0");
        let pane = tmux.pane_id("main:0").to_string();
        for (tool, args) in [
            ("list_servers", json!({})),
            ("get_server_info", json!({})),
            ("list_sessions", json!({})),
            ("get_session_info", json!({"target": "main"})),
            ("list_windows", json!({"target": "main"})),
            ("get_window_info", json!({"target": first})),
            ("get_window_info", json!({"target": pane})),
            (
                "show_option",
                json!({"scope": "window", "target": first, "option": "mode-keys"}),
            ),
            (
                "show_environment",
                json!({"scope": "session", "target": "main"}),
            ),
            ("show_hooks", json!({"scope": "session", "global": true})),
        ] {
            ok(&client, tool, args).await;
        }
        let created = ok(
            &client,
            "create_window",
            json!({"target": "main", "name": "bg"}),
        )
        .await;
        let new_window = created["window"]["id"].as_str().unwrap().to_owned();

        let after = human_view(&tmux, "main");
        assert_eq!(
            after.0, before.0,
            "the human's client (size, current window) changed"
        );
        assert_eq!(after.2, before.2, "the session environment changed");
        let old_windows: Vec<&str> = after
            .1
            .lines()
            .filter(|l| !l.starts_with(&format!("{new_window} ")))
            .collect();
        assert_eq!(
            old_windows,
            before.1.lines().collect::<Vec<_>>(),
            "existing windows changed size or activity"
        );
    });
}
