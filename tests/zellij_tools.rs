//! The `zellij_*` tools over MCP: a real gateway (`spawn_gateway`) driving real headless
//! Zellij sessions in a private environment (`zellij_common::Harness`). Covers every tool, its
//! validation errors, the access rules, and the workflows of a Zellij user: look around,
//! read a server tab's output, run a one-off command and get its output and exit status,
//! create a tab without moving a human's view.

mod common;
mod zellij_common;

use common::calls::{Client, err, err_kind, legacy, ok, token};
use common::{TestGateway, relaxed, spawn_gateway};
use muxgate::config::Config;
use muxgate_zellij::ids::SessionName;
use serde_json::{Value, json};
use zellij_common::Harness;

/// A harness with one headless session, and a gateway whose Zellij server `z` defaults to it.
struct Setup {
    h: Harness,
    session: SessionName,
    gateway: TestGateway,
    client: Client,
}

async fn setup() -> Option<Setup> {
    setup_with("").await
}

/// [`setup`] with more config text appended.
async fn setup_with(extra: &str) -> Option<Setup> {
    let h = Harness::new().await?;
    let session = h.session().await;
    let env = &h.env;
    let path = |p: &Option<std::path::PathBuf>| p.as_ref().unwrap().display().to_string();
    let config = relaxed(
        Config::from_toml_str(&format!(
            "[zellij]\nbinary = '{}'\n[zellij.servers.z]\nsession = '{session}'\n\
             socket_dir = '{}'\nhome = '{}'\ntmp_dir = '{}'\n{extra}",
            env.binary.display(),
            path(&env.socket_dir),
            path(&env.home),
            path(&env.tmp_dir),
        ))
        .expect("config"),
    );
    let gateway = spawn_gateway(config).await;
    let client = legacy(&gateway, &gateway.token).await;
    Some(Setup {
        h,
        session,
        gateway,
        client,
    })
}

/// What Zellij cannot read is refused before its server is opened: with a `zellij` binary that
/// does not exist, a capture Zellij could read fails to reach the server (`unavailable`), while
/// one it cannot read is `unsupported`, as on a working server. Needs no Zellij.
#[tokio::test]
async fn a_capture_zellij_cannot_read_is_refused_before_the_server_is_opened() {
    let config = relaxed(
        Config::from_toml_str(&format!(
            "[tmux.servers.default]\nsocket_name = '{}'\nallow_absent = true\n\
             [zellij]\nbinary = '/nonexistent/zellij'\n[zellij.servers.z]\nsession = 's'\n",
            common::tmux::unique_socket_name()
        ))
        .expect("config"),
    );
    let gateway = spawn_gateway(config).await;
    let client = legacy(&gateway, &gateway.token).await;
    let pane = json!({"server": "z", "target": "terminal_0"});
    err_kind(
        &client,
        "capture_pane",
        pane.clone(),
        "unavailable",
        "zellij",
    )
    .await;
    let mut coloured = pane;
    coloured["escape_sequences"] = json!(true);
    err_kind(
        &client,
        "capture_pane",
        coloured,
        "unsupported",
        "Zellij does not offer escape_sequences",
    )
    .await;
}

/// `wait_for_text` on Zellij keeps tmux's rules: only output after the call (or `since`)
/// counts unless `include_screen`, case is ignored unless `match_case`, `stop` patterns end it
/// as `stopped`, a null `patterns` waits for any output, and the echo of typed input does not
/// match. The pane shows `SHARED_42` from the step before.
async fn shared_wait_rules(client: &Client) {
    let wait = |args: Value| async move {
        let mut all = json!({"server": "z", "target": "terminal_0", "timeout": 2});
        all.as_object_mut()
            .unwrap()
            .extend(args.as_object().unwrap().clone());
        ok(client, "wait_for_text", all).await
    };
    // The screen changes during the wait (another line is printed), yet the old line stays old.
    let (old, ()) = tokio::join!(
        wait(json!({"patterns": ["SHARED_42"], "timeout": 2})),
        async {
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            ok(
                client,
                "send_keys",
                json!({"server": "z", "target": "terminal_0", "keys": "echo OTHER_$((1+1))"}),
            )
            .await;
        }
    );
    assert_eq!(old["outcome"], "timeout", "text on screen matched: {old}");
    assert!(
        old["tail"].to_string().contains("OTHER_2"),
        "the wait saw no new output: {old}"
    );
    let on_screen = wait(json!({"patterns": ["shared_42"], "include_screen": true})).await;
    assert_eq!(on_screen["outcome"], "matched", "{on_screen}");
    let exact_case =
        wait(json!({"patterns": ["shared_42"], "include_screen": true, "match_case": true, "timeout": 1}))
            .await;
    assert_eq!(exact_case["outcome"], "timeout", "{exact_case}");

    // Output printed before the wait started counts with `since`; the echo does not.
    let typed = |keys: &str| {
        let keys = keys.to_owned();
        async move {
            ok(
                client,
                "send_keys",
                json!({"server": "z", "target": "terminal_0", "keys": keys}),
            )
            .await["output_position"]
                .clone()
        }
    };
    let fast = typed("echo FAST_$((1+1))").await;
    // Printed (the typed line shows FAST_$((1+1))) before the wait starts.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let screen = ok(
            client,
            "capture_pane",
            json!({"server": "z", "target": "terminal_0"}),
        )
        .await;
        if screen["text"]
            .as_str()
            .unwrap_or_default()
            .contains("FAST_2")
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "FAST_2 never showed: {screen}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let caught = wait(json!({"patterns": ["FAST_2"], "since": fast})).await;
    assert_eq!(caught["matched_line"], "FAST_2", "{caught}");
    let slow = typed("sleep 1; echo ECHOED_LATE").await;
    let late = wait(json!({"patterns": ["ECHOED_LATE"], "since": slow, "timeout": 5})).await;
    assert_eq!(late["outcome"], "matched", "{late}");
    assert!(
        late["elapsed_ms"].as_u64().unwrap() >= 500,
        "the echo of the command matched: {late}"
    );
    let failing = typed("echo BUILD_$((0+0)) FAILED").await;
    let stopped =
        wait(json!({"patterns": ["never-printed"], "stop": ["failed"], "since": failing})).await;
    assert_eq!(stopped["outcome"], "stopped", "{stopped}");
    assert_eq!(stopped["matched_pattern"], "failed");
    let any = typed("echo ANY").await;
    let any = wait(json!({"patterns": null, "since": any})).await;
    assert_eq!(any["outcome"], "any_output", "{any}");
    err_kind(
        client,
        "wait_for_text",
        json!({"server": "z", "target": "terminal_7", "patterns": ["x"], "since": fast}),
        "invalid_arguments",
        "it was made for",
    )
    .await;
}

/// Waits for the shell prompt in `pane`, so typed input is not lost to the shell's startup.
async fn prompt(client: &Client, pane: &str) {
    ok(
        client,
        "wait_for_text",
        json!({"server": "z", "target": pane, "patterns": ["[$#] ?$"], "regex": true,
               "include_screen": true, "timeout": 15}),
    )
    .await;
}

fn ids(list: &Value, key: &str, field: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {list}"))
        .iter()
        .map(|o| match &o[field] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// The Zellij entries of a list_servers answer.
fn zellij_servers(list: &Value) -> Vec<Value> {
    list["servers"]
        .as_array()
        .unwrap_or_else(|| panic!("no servers in {list}"))
        .iter()
        .filter(|s| s["backend"] == "zellij")
        .cloned()
        .collect()
}

fn tab<'a>(tabs: &'a Value, id: &str) -> &'a Value {
    tabs["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tab_id"].as_u64() == id.parse().ok())
        .unwrap_or_else(|| panic!("no tab {id} in {tabs}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_tools_and_access_rules() {
    let Some(Setup {
        h: _h,
        session,
        gateway,
        client,
    }) = setup().await
    else {
        return;
    };
    let s = session.as_str();

    // list_servers names the Zellij servers beside the tmux ones.
    let servers = ok(&client, "list_servers", json!({})).await;
    assert_eq!(
        zellij_servers(&servers),
        [
            json!({"name": "z", "backend": "zellij", "kind": "configured", "allow_absent": false,
                "reachability": "running", "default_session": s})
        ]
    );
    let sessions = ok(&client, "list_sessions", json!({"server": "z"})).await;
    assert_eq!(ids(&sessions, "sessions", "name"), [s]);
    assert_eq!(sessions["sessions"][0]["exited"], false);
    let glob = format!("{}*", &s[..3]);
    let matched = ok(
        &client,
        "list_sessions",
        json!({"server": "z", "filters": {"name": glob}}),
    )
    .await;
    assert_eq!(ids(&matched, "sessions", "name"), [s]);
    let unmatched = ok(
        &client,
        "list_sessions",
        json!({"server": "z", "filters": {"name": "nothing-*"}}),
    )
    .await;
    assert_eq!(unmatched["sessions"], json!([]));
    // Zellij sessions carry no owner tag: none is the caller's.
    let yours = ok(
        &client,
        "list_sessions",
        json!({"server": "z", "filters": {"created_by_you": true}}),
    )
    .await;
    assert_eq!(yours["sessions"], json!([]));
    for (args, refused) in [
        (
            json!({"server": "z", "filters": {"attached": true}}),
            "Zellij does not offer the attached filter",
        ),
        (
            json!({"server": "z", "fields": ["name"]}),
            "Zellij does not offer fields",
        ),
    ] {
        err_kind(&client, "list_sessions", args, "unsupported", refused).await;
    }

    let tabs = ok(&client, "list_windows", json!({"server": "z"})).await;
    assert_eq!(tabs["session"], s);
    assert_eq!(ids(&tabs, "windows", "tab_id"), ["0"]);
    assert_eq!(tabs["windows"][0]["active_pane_id"], "terminal_0", "{tabs}");
    assert_eq!(
        tabs["windows"][0]["columns"], 160,
        "sized by muxgate: {tabs}"
    );

    let panes = ok(&client, "list_panes", json!({"server": "z", "target": s})).await;
    assert_eq!(panes["session"], s);
    assert_eq!(ids(&panes, "panes", "pane_id"), ["terminal_0"]);
    let plugins = ok(
        &client,
        "list_panes",
        json!({"server": "z", "filters": {"plugin": true, "tab_id": 0}}),
    )
    .await;
    let plugin_ids = ids(&plugins, "panes", "pane_id");
    assert!(
        !plugin_ids.is_empty() && plugin_ids.iter().all(|p| p.starts_with("plugin_")),
        "{plugins}"
    );
    let clients = ok(&client, "zellij_list_clients", json!({})).await;
    assert_eq!(clients["clients"], json!([]));
    let layout = ok(&client, "zellij_dump_layout", json!({})).await;
    assert!(
        layout["layout"].as_str().unwrap().contains("layout {"),
        "{layout}"
    );
    assert_eq!(layout["truncated_bytes"], 0);

    // Validation: unknown fields, malformed and missing targets, unknown servers.
    let e = err(&client, "list_windows", json!({"server": "z", "sesion": s})).await;
    assert_eq!(e["kind"], "invalid_arguments");
    assert!(e["message"].as_str().unwrap().contains("sesion"), "{e}");
    err_kind(
        &client,
        "list_windows",
        json!({"server": "z", "target": "a b"}),
        "invalid_arguments",
        "invalid session name",
    )
    .await;
    err_kind(
        &client,
        "list_windows",
        json!({"server": "z", "target": "nosuch"}),
        "not_found",
        "no session nosuch",
    )
    .await;
    err_kind(
        &client,
        "zellij_dump_layout",
        json!({"session": "nosuch"}),
        "not_found",
        "no session nosuch",
    )
    .await;
    let none = ok(
        &client,
        "list_panes",
        json!({"server": "z", "filters": {"tab_id": 7}}),
    )
    .await;
    assert_eq!(none["panes"], json!([]));
    err_kind(
        &client,
        "list_panes",
        json!({"server": "z", "filters": {"tab": "0"}}),
        "invalid_arguments",
        "unknown filter field \"tab\"",
    )
    .await;
    err_kind(
        &client,
        "list_panes",
        json!({"server": "z", "fields": ["title"]}),
        "unsupported",
        "Zellij does not offer fields",
    )
    .await;
    err_kind(
        &client,
        "list_panes",
        json!({"server": "z", "target": "nosuch"}),
        "not_found",
        "no session nosuch",
    )
    .await;
    err_kind(
        &client,
        "zellij_list_clients",
        json!({"server": "default"}),
        "not_found",
        "no Zellij server named \"default\"",
    )
    .await;

    // A token limited to other sessions sees none of this one, worded like a missing one.
    let limited = token(
        &gateway,
        "bob",
        &["mux:read", "mux:write"],
        Some(&["other-*"]),
        false,
    );
    let bob = legacy(&gateway, &limited).await;
    let seen = ok(&bob, "list_sessions", json!({"server": "z"})).await;
    assert_eq!(seen["sessions"], json!([]));
    let hidden = err(&bob, "list_windows", json!({"server": "z"})).await;
    let missing = err(
        &client,
        "list_windows",
        json!({"server": "z", "target": "other-1"}),
    )
    .await;
    assert_eq!(hidden["kind"], "not_found");
    assert_eq!(
        hidden["message"].as_str().unwrap().replace(s, "X"),
        missing["message"].as_str().unwrap().replace("other-1", "X")
    );
    let e = err(
        &bob,
        "send_keys",
        json!({"server": "z", "target": "terminal_0", "keys": "x", "enter": false}),
    )
    .await;
    assert_eq!(e["kind"], "not_found");

    // Tiers come from the annotations: a read-only token cannot create tabs.
    let read_only = legacy(
        &gateway,
        &token(&gateway, "dave", &["mux:read"], None, false),
    )
    .await;
    let e = err(
        &read_only,
        "create_window",
        json!({"server": "z", "target": s}),
    )
    .await;
    assert_eq!(e["kind"], "forbidden", "{e}");
    ok(
        &read_only,
        "capture_pane",
        json!({"server": "z", "target": "terminal_0"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tabs_are_made_in_the_background_and_focus_moves_only_when_asked() {
    let Some(Setup {
        h,
        session,
        gateway: _gateway,
        client,
    }) = setup().await
    else {
        return;
    };
    // A human attached to the session, looking at tab 0.
    let human = h.attach_client(&session).await;
    let tabs = ok(&client, "list_windows", json!({"server": "z"})).await;
    assert_eq!(tab(&tabs, "0")["active"], true, "{tabs}");

    let created = ok(
        &client,
        "create_window",
        json!({"server": "z", "target": session, "name": "build"}),
    )
    .await;
    let build = created["window"]["tab_id"].to_string();
    assert_eq!(created["window"]["name"], "build");
    assert_eq!(created["window"]["session"], session.as_str());
    for (args, kind, refused) in [
        (
            json!({"position": "after"}),
            "unsupported",
            "Zellij does not offer position and environment",
        ),
        (
            json!({"environment": {"A": "b"}}),
            "unsupported",
            "Zellij does not offer position and environment",
        ),
        (json!({"shell": " "}), "invalid_arguments", "shell is empty"),
    ] {
        let mut args = args;
        args["server"] = json!("z");
        args["target"] = json!(session);
        err_kind(&client, "create_window", args, kind, refused).await;
    }
    let tabs = ok(&client, "list_windows", json!({"server": "z"})).await;
    assert_eq!(tab(&tabs, "0")["active"], true, "the human stays: {tabs}");
    assert_eq!(tab(&tabs, &build)["active"], false, "{tabs}");

    let renamed = ok(
        &client,
        "rename_window",
        json!({"server": "z", "target": build, "new_name": "build & test"}),
    )
    .await;
    assert_eq!(renamed["window"]["name"], "build & test");
    assert_eq!(renamed["window"]["session"], session.as_str());
    let tabs = ok(&client, "list_windows", json!({"server": "z"})).await;
    assert_eq!(tab(&tabs, "0")["active"], true, "rename keeps the view");

    // Floating panes of the background tab: shown, hidden, flipped.
    ok(
        &client,
        "zellij_new_pane",
        json!({"tab": build, "floating": true}),
    )
    .await;
    let shown = ok(
        &client,
        "zellij_toggle_floating_panes",
        json!({"tab": build, "visible": true}),
    )
    .await;
    assert_eq!(shown["tab"]["floating_panes_visible"], true);
    let flipped = ok(
        &client,
        "zellij_toggle_floating_panes",
        json!({"tab": build}),
    )
    .await;
    assert_eq!(flipped["tab"]["floating_panes_visible"], false);
    let tabs = ok(&client, "list_windows", json!({"server": "z"})).await;
    assert_eq!(tab(&tabs, "0")["active"], true, "{tabs}");

    // A tab created with focus takes the human there; go_to_tab takes them back.
    let focused = ok(
        &client,
        "create_window",
        json!({"server": "z", "target": session, "name": "shown", "select": true}),
    )
    .await;
    let shown_id = focused["window"]["tab_id"].to_string();
    let tabs = ok(&client, "list_windows", json!({"server": "z"})).await;
    assert_eq!(tab(&tabs, &shown_id)["active"], true, "{tabs}");
    assert_eq!(tab(&tabs, "0")["active"], false, "{tabs}");
    let back = ok(
        &client,
        "select_window",
        json!({"server": "z", "target": format!("{session}:0")}),
    )
    .await;
    assert_eq!(back["window"]["active"], true, "{back}");
    err_kind(
        &client,
        "select_window",
        json!({"server": "z", "target": "0", "step": "next"}),
        "unsupported",
        "Zellij does not offer step and index",
    )
    .await;

    // Closing a background tab leaves the human where they are.
    let closed = ok(
        &client,
        "kill_window",
        json!({"server": "z", "target": build}),
    )
    .await;
    assert_eq!(closed["id"], build.as_str());
    assert_eq!(closed["session_id"], session.as_str());
    assert_eq!(closed["session_closed"], false);
    let tabs = ok(&client, "list_windows", json!({"server": "z"})).await;
    assert!(!ids(&tabs, "windows", "tab_id").contains(&build));
    assert_eq!(tab(&tabs, "0")["active"], true, "{tabs}");
    let current = ok(
        &client,
        "list_windows",
        json!({"server": "z", "filters": {"active": true}}),
    )
    .await;
    assert_eq!(ids(&current, "windows", "tab_id"), ["0"], "{current}");
    err_kind(
        &client,
        "list_windows",
        json!({"server": "z", "fields": ["name"]}),
        "unsupported",
        "Zellij does not offer fields",
    )
    .await;

    // A background tab's output is read while the human looks at another tab (Zellij renders
    // only what clients see; the wait then reads the screen, see the watch module).
    let bg = ok(
        &client,
        "create_window",
        json!({"server": "z", "target": session, "name": "bg",
               "shell": "sleep 0.3; echo bg-ready; exec sleep 600"}),
    )
    .await;
    let bg_tab = bg["window"]["tab_id"].to_string();
    let panes = ok(
        &client,
        "list_panes",
        json!({"server": "z", "filters": {"tab_id": bg["window"]["tab_id"]}}),
    )
    .await;
    let bg_pane = panes["panes"][0]["pane_id"].as_str().unwrap().to_owned();
    assert_eq!(bg["window"]["active_pane_id"], bg_pane.as_str(), "{bg}");
    let seen = ok(
        &client,
        "wait_for_text",
        json!({"server": "z", "target": bg_pane, "patterns": ["bg-ready"],
               "include_screen": true, "timeout": 10}),
    )
    .await;
    assert_eq!(seen["matched_line"], "bg-ready", "{seen}");
    let tabs = ok(&client, "list_windows", json!({"server": "z"})).await;
    assert_eq!(tab(&tabs, "0")["active"], true, "{tabs}");
    assert_eq!(tab(&tabs, &bg_tab)["active"], false, "{tabs}");
    ok(
        &client,
        "kill_window",
        json!({"server": "z", "target": bg_tab}),
    )
    .await;

    for (tool, args) in [
        (
            "rename_window",
            json!({"server": "z", "target": build, "new_name": "x"}),
        ),
        ("kill_window", json!({"server": "z", "target": build})),
        ("select_window", json!({"server": "z", "target": build})),
        ("zellij_toggle_floating_panes", json!({"tab": build})),
    ] {
        err_kind(&client, tool, args, "not_found", "no tab").await;
    }
    err_kind(
        &client,
        "rename_window",
        json!({"server": "z", "target": "0", "new_name": "a\nb"}),
        "invalid_arguments",
        "control characters",
    )
    .await;
    err_kind(
        &client,
        "kill_window",
        json!({"server": "z", "target": "@0"}),
        "invalid_arguments",
        "tab id",
    )
    .await;
    // A tool only tmux serves says so when it is pointed at a Zellij server.
    err_kind(
        &client,
        "get_window_info",
        json!({"server": "z", "target": "0"}),
        "invalid_arguments",
        "\"z\" is a Zellij server, and this tool serves tmux only",
    )
    .await;
    ok(
        &client,
        "kill_window",
        json!({"server": "z", "target": shown_id}),
    )
    .await;
    err_kind(
        &client,
        "kill_window",
        json!({"server": "z", "target": "0"}),
        "conflict",
        "last tab",
    )
    .await;
    human.detach().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panes_are_managed_by_id() {
    let Some(Setup {
        h,
        session,
        gateway: _gateway,
        client,
    }) = setup().await
    else {
        return;
    };
    let right = ok(
        &client,
        "zellij_new_pane",
        json!({"direction": "right", "name": "side"}),
    )
    .await;
    let pane = right["pane"]["pane_id"].as_str().unwrap().to_owned();
    assert_eq!(right["pane"]["floating"], false);
    assert_eq!(right["pane"]["focused"], false, "no focus by default");
    let renamed = ok(
        &client,
        "set_pane_title",
        json!({"server": "z", "target": pane, "title": "logs"}),
    )
    .await;
    assert_eq!(renamed["title"], "logs");
    assert_eq!(renamed["pane_id"], pane.as_str());
    let listed = ok(
        &client,
        "list_panes",
        json!({"server": "z", "filters": {"pane_id": pane}}),
    )
    .await;
    assert_eq!(listed["panes"][0]["title"], "logs", "{listed}");

    // resize_pane steps toward a size in Zellij's steps, and stops where a border cannot move.
    let before = right["pane"]["columns"].as_u64().unwrap();
    let rows = right["pane"]["rows"].as_u64().unwrap();
    let wanted = before + 12;
    let grown = ok(
        &client,
        "resize_pane",
        json!({"server": "z", "target": pane, "width": wanted}),
    )
    .await;
    let columns = grown["columns"].as_u64().unwrap();
    assert!(columns >= wanted, "{before} -> {grown}");
    assert!(
        columns < wanted + 40,
        "stopped at the first step past it: {grown}"
    );
    assert_eq!(grown["session"], session.as_str());
    let shrunk = ok(
        &client,
        "resize_pane",
        json!({"server": "z", "target": pane, "width": before}),
    )
    .await;
    assert!(shrunk["columns"].as_u64().unwrap() <= before, "{shrunk}");
    let full_height = ok(
        &client,
        "resize_pane",
        json!({"server": "z", "target": pane, "height": 3}),
    )
    .await;
    assert_eq!(
        full_height["rows"].as_u64().unwrap(),
        rows,
        "no border above or below it can move: {full_height}"
    );
    err_kind(
        &client,
        "resize_pane",
        json!({"server": "z", "target": pane, "width": 80, "zoom": true}),
        "invalid_arguments",
        "not both",
    )
    .await;

    // zoom is fullscreen, and asking twice leaves it so.
    for _ in 0..2 {
        let full = ok(
            &client,
            "resize_pane",
            json!({"server": "z", "target": pane, "zoom": true}),
        )
        .await;
        assert_eq!(full["fullscreen"], true, "{full}");
    }
    let tiled = ok(
        &client,
        "resize_pane",
        json!({"server": "z", "target": pane, "zoom": false}),
    )
    .await;
    assert_eq!(tiled["fullscreen"], false, "{tiled}");
    // Resizing a pane of a fullscreen tab leaves fullscreen first, as tmux unzooms.
    ok(
        &client,
        "resize_pane",
        json!({"server": "z", "target": pane, "zoom": true}),
    )
    .await;
    let unzoomed = ok(
        &client,
        "resize_pane",
        json!({"server": "z", "target": pane, "width": wanted}),
    )
    .await;
    assert_eq!(unzoomed["fullscreen"], false, "{unzoomed}");
    assert!(
        unzoomed["columns"].as_u64().unwrap() >= wanted,
        "{unzoomed}"
    );

    // select_pane moves an attached human to the pane.
    let human = h.attach_client(&session).await;
    let focused = ok(
        &client,
        "select_pane",
        json!({"server": "z", "target": pane}),
    )
    .await;
    assert_eq!(focused["clients"], 1);
    assert_eq!(focused["clients_focused"], 1, "{focused}");
    assert_eq!(focused["active_pane"]["pane_id"], pane.as_str());
    human.detach().await;
    err_kind(
        &client,
        "select_pane",
        json!({"server": "z", "target": pane, "direction": "left"}),
        "unsupported",
        "Zellij does not offer direction",
    )
    .await;

    // A command pane and the editor.
    let file = h.env.home.as_ref().unwrap().join("notes.txt");
    std::fs::write(&file, "edit-me-line\n").unwrap();
    let editor = ok(
        &client,
        "zellij_edit_file",
        json!({"file": file.display().to_string(), "floating": true}),
    )
    .await;
    let editor_pane = editor["pane"]["pane_id"].as_str().unwrap().to_owned();
    assert_eq!(editor["pane"]["floating"], true);
    ok(
        &client,
        "wait_for_text",
        json!({"server": "z", "target": editor_pane, "patterns": ["edit-me-line"],
               "include_screen": true, "timeout": 15}),
    )
    .await;
    let closed = ok(
        &client,
        "kill_pane",
        json!({"server": "z", "target": editor_pane}),
    )
    .await;
    assert_eq!(closed["tab_closed"], false);

    let closed = ok(
        &client,
        "kill_pane",
        json!({"server": "z", "target": format!("{session}:{pane}")}),
    )
    .await;
    assert_eq!(closed["pane_id"], pane.as_str());
    assert_eq!(closed["session"], session.as_str());
    let panes = ok(&client, "list_panes", json!({"server": "z"})).await;
    assert_eq!(ids(&panes, "panes", "pane_id"), ["terminal_0"]);
    err_kind(
        &client,
        "kill_pane",
        json!({"server": "z", "target": "terminal_0"}),
        "conflict",
        "last pane",
    )
    .await;
    err_kind(
        &client,
        "kill_pane",
        json!({"server": "z", "target": "terminal_99"}),
        "not_found",
        "no pane terminal_99",
    )
    .await;

    // Zellij accepts bad targets silently; muxgate reports them.
    for (tool, extra) in [
        ("resize_pane", json!({"width": 50})),
        ("resize_pane", json!({"zoom": true})),
        ("select_pane", json!({})),
    ] {
        let mut args = extra;
        args["server"] = json!("z");
        args["target"] = json!("terminal_99");
        err_kind(&client, tool, args, "not_found", "no pane terminal_99").await;
    }
    err_kind(
        &client,
        "set_pane_title",
        json!({"server": "z", "target": "terminal_99", "title": "x"}),
        "not_found",
        "no pane terminal_99",
    )
    .await;
    err_kind(
        &client,
        "zellij_new_pane",
        json!({"tab": "9"}),
        "not_found",
        "no tab 9",
    )
    .await;
    err_kind(
        &client,
        "zellij_new_pane",
        json!({"cwd": "relative/dir"}),
        "invalid_arguments",
        "absolute",
    )
    .await;
    err_kind(
        &client,
        "kill_pane",
        json!({"server": "z", "target": "%1"}),
        "invalid_arguments",
        "invalid pane id",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_io_and_the_user_workflows() {
    let Some(Setup {
        h: _h,
        session,
        gateway: _gateway,
        client,
    }) = setup().await
    else {
        return;
    };
    prompt(&client, "terminal_0").await;

    // Type, wait for the result, read it back (screen and scrollback).
    let typed = ok(
        &client,
        "send_keys",
        json!({"server": "z", "target": "terminal_0", "keys": "for i in $(seq 1 80); do echo row_$i; done"}),
    )
    .await;
    assert_eq!(typed["pane_id"], "terminal_0");
    let seen = ok(
        &client,
        "wait_for_text",
        json!({"server": "z", "target": "terminal_0", "patterns": ["row_80"],
               "since": typed["output_position"], "timeout": 10}),
    )
    .await;
    assert_eq!(seen["matched_line"], "row_80", "{seen}");
    // capture_pane reads a Zellij pane when `server` names a Zellij server.
    let visible = ok(
        &client,
        "capture_pane",
        json!({"server": "z", "target": "terminal_0"}),
    )
    .await;
    let text = visible["text"].as_str().unwrap();
    assert!(
        text.contains("row_80") && !text.contains("row_1\n"),
        "{text}"
    );
    assert_eq!(visible["session"], session.as_str());
    assert_eq!(visible["pane_id"], "terminal_0");
    let full = ok(
        &client,
        "capture_pane",
        json!({"server": "z", "target": format!("{session}:terminal_0"), "start": "-"}),
    )
    .await;
    assert!(full["text"].as_str().unwrap().contains("row_1\n"), "{full}");
    let tail = ok(
        &client,
        "capture_pane",
        json!({"server": "z", "target": "terminal_0", "start": "-", "max_lines": 3}),
    )
    .await;
    assert_eq!(tail["lines"], 3);
    assert_eq!(tail["truncated"], true);
    assert_eq!(
        tail["truncated_lines"],
        tail["total_lines"].as_u64().unwrap() - 3
    );
    assert!(tail["text"].as_str().unwrap().starts_with("[... "));
    // What only tmux can do is refused, not ignored.
    for (options, says) in [
        (
            json!({"start": -5}),
            "Zellij does not offer a start other than 0",
        ),
        (json!({"end": 3}), "an end other than"),
        (
            json!({"escape_sequences": true}),
            "Zellij does not offer escape_sequences",
        ),
    ] {
        let mut args = json!({"server": "z", "target": "terminal_0"});
        args.as_object_mut()
            .unwrap()
            .extend(options.as_object().unwrap().clone());
        err_kind(&client, "capture_pane", args, "unsupported", says).await;
    }

    // send_keys types into a Zellij pane with tmux's key names: text, then Enter.
    let sent = ok(
        &client,
        "send_keys",
        json!({"server": "z", "target": "terminal_0",
               "keys": ["echo SHARED_$((20+22))", "Enter"], "enter": false}),
    )
    .await;
    assert_eq!(sent["session"], session.as_str());
    assert_eq!(sent["pane_id"], "terminal_0");
    assert_eq!(sent["keys_pressed"], 1);
    assert_eq!(sent["text_bytes"], "echo SHARED_$((20+22))".len());
    assert!(sent["output_position"].is_string(), "{sent}");
    let seen = ok(
        &client,
        "wait_for_text",
        json!({"server": "z", "target": "terminal_0", "patterns": ["SHARED_42"],
               "since": sent["output_position"], "timeout": 10}),
    )
    .await;
    assert_eq!(seen["outcome"], "matched", "{seen}");
    shared_wait_rules(&client).await;
    for (keys, says) in [
        (
            json!({"keys": ["KP0"]}),
            "Zellij does not offer the key \"KP0\"",
        ),
        (
            json!({"keys": "/w==", "literal": true, "encoding": "base64"}),
            "not UTF-8",
        ),
    ] {
        let mut args = json!({"server": "z", "target": "terminal_0", "enter": false});
        args.as_object_mut()
            .unwrap()
            .extend(keys.as_object().unwrap().clone());
        err_kind(&client, "send_keys", args, "unsupported", says).await;
    }

    // Keys: interrupt a running program.
    ok(
        &client,
        "send_keys",
        json!({"server": "z", "target": "terminal_0", "keys": "sleep 300; echo SLEEP_$((1+1))"}),
    )
    .await;
    // A Ctrl-C that lands while bash is still starting the command is lost (the sleep then
    // runs its 300 s): send it until the prompt is back. "Back" is the screen's last line being
    // a prompt: earlier prompts stay on screen above the running command, so a wait for any
    // prompt line would pass without the interrupt.
    let prompt_last = regex::Regex::new(r"[$#] ?$").unwrap();
    let mut interrupted = false;
    let mut screen = Value::Null;
    'interrupt: for _ in 0..5 {
        ok(
            &client,
            "send_keys",
            json!({"server": "z", "target": "terminal_0", "keys": ["C-c"], "enter": false}),
        )
        .await;
        for _ in 0..15 {
            screen = ok(
                &client,
                "capture_pane",
                json!({"server": "z", "target": "terminal_0"}),
            )
            .await;
            let text = screen["text"].as_str().unwrap_or_default();
            if text.lines().last().is_some_and(|l| prompt_last.is_match(l)) {
                interrupted = true;
                break 'interrupt;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }
    assert!(
        interrupted,
        "Ctrl c never brought the prompt back; the pane shows {screen}\n{}",
        zellij_common::pane_processes(&session)
    );
    assert!(
        !screen["text"]
            .as_str()
            .unwrap_or_default()
            .contains("SLEEP_2"),
        "the sleep ran to its end: {screen}"
    );
    // Text, a paste and a key, then a wait: one pane_batch. The wait counts what the pane
    // printed since before the batch's first input, not the echo of what it typed.
    let batch = ok(
        &client,
        "pane_batch",
        json!({"server": "z", "operations": [
            {"op": "send_keys", "target": "terminal_0", "keys": "echo BATCH_", "enter": false},
            {"op": "paste_text", "target": "terminal_0", "text": "$((20+22))"},
            {"op": "send_keys", "target": "terminal_0", "keys": ["Enter"], "enter": false},
            {"op": "wait_for_text", "target": "terminal_0", "patterns": ["^BATCH_42$"],
             "regex": true, "timeout": 10},
            {"op": "capture_since", "target": "terminal_0"}
        ], "on_error": "continue"}),
    )
    .await;
    assert_eq!(batch["succeeded"], 4, "{batch}");
    let results = batch["results"].as_array().unwrap();
    assert_eq!(results[1]["result"]["session"], session.as_str(), "{batch}");
    assert_eq!(results[3]["result"]["outcome"], "matched", "{batch}");
    assert_eq!(results[3]["result"]["matched_line"], "BATCH_42", "{batch}");
    assert!(
        results[4]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("Zellij does not offer capture_since"),
        "{batch}"
    );
    // The echo alone never ends such a wait: the batch typed BATCH_ROW but printed nothing.
    let echo_only = ok(
        &client,
        "pane_batch",
        json!({"server": "z", "operations": [
            {"op": "send_keys", "target": "terminal_0", "keys": "# BATCH_ROW", "enter": false},
            {"op": "wait_for_text", "target": "terminal_0", "patterns": ["BATCH_ROW"],
             "timeout": 1.5}
        ]}),
    )
    .await;
    assert_eq!(
        echo_only["results"][1]["result"]["outcome"], "timeout",
        "{echo_only}"
    );
    ok(
        &client,
        "send_keys",
        json!({"server": "z", "target": "terminal_0", "keys": ["C-c"], "enter": false}),
    )
    .await;

    // paste_text without bracket types the text; bytes that are not UTF-8 are refused.
    let typed = ok(
        &client,
        "pane_batch",
        json!({"server": "z", "operations": [
            {"op": "paste_text", "target": "terminal_0", "text": "echo TYPED_$((1+1))",
             "bracket": false},
            {"op": "send_keys", "target": "terminal_0", "keys": ["Enter"], "enter": false},
            {"op": "wait_for_text", "target": "terminal_0", "patterns": ["^TYPED_2$"],
             "regex": true, "timeout": 10}
        ]}),
    )
    .await;
    assert_eq!(
        typed["results"][2]["result"]["outcome"], "matched",
        "{typed}"
    );
    err_kind(
        &client,
        "paste_text",
        json!({"server": "z", "target": "terminal_0", "text": "/w==", "encoding": "base64"}),
        "unsupported",
        "not UTF-8",
    )
    .await;

    // send_keys_batch: every operation checked first; then each delivered in order.
    let refused = ok(
        &client,
        "send_keys_batch",
        json!({"server": "z", "operations": [
            {"target": "terminal_0", "keys": "echo SKB_1"},
            {"target": "terminal_0", "keys": ["KP0"]},
            {"target": "terminal_0", "keys": "echo SKB_3"}
        ]}),
    )
    .await;
    assert_eq!(refused["stopped_at"], 1, "{refused}");
    assert_eq!(refused["succeeded"], 1, "{refused}");
    assert!(
        refused["results"][1]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("Zellij does not offer the key \"KP0\""),
        "{refused}"
    );
    let position = refused["output_positions"]["terminal_0"].as_str().unwrap();
    ok(
        &client,
        "wait_for_text",
        json!({"server": "z", "target": "terminal_0", "patterns": ["^SKB_1$"], "regex": true,
               "since": position, "timeout": 10}),
    )
    .await;
    let screen = ok(
        &client,
        "capture_pane",
        json!({"server": "z", "target": "terminal_0"}),
    )
    .await;
    assert!(
        !screen["text"]
            .as_str()
            .unwrap_or_default()
            .contains("SKB_3"),
        "an operation after the refused one was sent: {screen}"
    );

    // With on_error "continue" each operation stands alone: a pane that is not there fails
    // its own operation (named in its result), and the ones around it are delivered.
    let independent = ok(
        &client,
        "send_keys_batch",
        json!({"server": "z", "on_error": "continue", "operations": [
            {"target": "terminal_0", "keys": "echo SKB_4"},
            {"target": "terminal_99", "keys": "echo lost"},
            {"target": "terminal_0", "keys": "echo SKB_6"}
        ]}),
    )
    .await;
    assert_eq!(independent["succeeded"], 2, "{independent}");
    assert_eq!(independent["stopped_at"], Value::Null, "{independent}");
    assert_eq!(independent["results"][1]["success"], false, "{independent}");
    assert_eq!(
        independent["results"][1]["pane_id"], "terminal_99",
        "{independent}"
    );
    let position = independent["output_positions"]["terminal_0"]
        .as_str()
        .unwrap();
    ok(
        &client,
        "wait_for_text",
        json!({"server": "z", "target": "terminal_0", "patterns": ["^SKB_6$"], "regex": true,
               "since": position, "timeout": 10}),
    )
    .await;

    // Run in the user's shell: only this command's output, and its exit status.
    let ran = ok(
        &client,
        "run_command",
        json!({"server": "z", "target": "terminal_0", "command": "echo in-shell; (exit 3)"}),
    )
    .await;
    assert_eq!(ran["exit_status"], 3, "{ran}");
    assert_eq!(ran["output"], "in-shell\n");
    assert_eq!(ran["timed_out"], false);
    assert_eq!(ran["started"], true);
    assert_eq!(ran["session"], session.as_str());
    assert_eq!(ran["effective_timeout"], 30.0);
    let cut = ok(
        &client,
        "run_command",
        json!({"server": "z", "target": "terminal_0", "command": "seq 1 9", "max_lines": 2}),
    )
    .await;
    assert_eq!(
        cut["output"], "[... 7 lines truncated ...]\n8\n9\n",
        "{cut}"
    );
    assert_eq!(cut["output_truncated"], true);
    assert_eq!(cut["truncated_lines"], 7);
    // A timeout is an answer, as on tmux: no status, what it printed, the command still runs.
    let slow = ok(
        &client,
        "run_command",
        json!({"server": "z", "target": "terminal_0", "command": "echo begun; sleep 30",
               "timeout": 3}),
    )
    .await;
    assert_eq!(slow["timed_out"], true, "{slow}");
    assert_eq!(slow["exit_status"], Value::Null);
    assert_eq!(slow["started"], true);
    assert!(
        slow["output"].as_str().unwrap().starts_with("begun"),
        "{slow}"
    );
    ok(
        &client,
        "send_keys",
        json!({"server": "z", "target": "terminal_0", "keys": ["C-c"], "enter": false}),
    )
    .await;
    let after = ok(
        &client,
        "run_command",
        json!({"server": "z", "target": "terminal_0", "command": "echo again"}),
    )
    .await;
    assert_eq!(
        (&after["exit_status"], &after["output"]),
        (&json!(0), &json!("again\n"))
    );

    // A one-off command in a hidden pane: output and status, pane gone, nothing left behind.
    let one_off = ok(
        &client,
        "zellij_run_command",
        json!({"command": "echo one-off; echo to-stderr >&2; exit 5"}),
    )
    .await;
    assert_eq!(one_off["exit_status"], 5, "{one_off}");
    assert_eq!(one_off["output"], "one-off\nto-stderr");
    assert_eq!(one_off["pane_closed"], true);
    let panes = ok(&client, "list_panes", json!({"server": "z"})).await;
    assert_eq!(ids(&panes, "panes", "pane_id"), ["terminal_0"]);
    let kept = ok(
        &client,
        "zellij_run_command",
        json!({"command": "seq 1 30", "keep_pane": true, "max_lines": 5, "floating": false}),
    )
    .await;
    assert_eq!(kept["exit_status"], 0);
    assert_eq!(kept["total_lines"], 30);
    assert_eq!(kept["truncated"], true);
    assert!(
        kept["output"]
            .as_str()
            .unwrap()
            .ends_with("26\n27\n28\n29\n30")
    );
    let kept_pane = kept["pane_id"].as_str().unwrap().to_owned();
    let panes = ok(&client, "list_panes", json!({"server": "z"})).await;
    let held = panes["panes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pane_id"] == kept_pane.as_str())
        .expect("kept pane listed");
    assert_eq!(held["exited"], true);
    assert_eq!(held["exit_status"], 0);
    let state = ok(
        &client,
        "get_pane_state",
        json!({"server": "z", "target": kept_pane}),
    )
    .await;
    assert_eq!(
        (&state["dead"], &state["dead_status"]),
        (&json!(true), &json!(0)),
        "{state}"
    );
    let shell = ok(
        &client,
        "get_pane_state",
        json!({"server": "z", "target": format!("{session}:terminal_0")}),
    )
    .await;
    assert_eq!(shell["dead"], false, "{shell}");
    assert_eq!(shell["session"], session.as_str());
    assert!(
        !shell["current_command"]
            .as_str()
            .unwrap_or_default()
            .is_empty(),
        "{shell}"
    );
    // What Zellij does not report is left out, never guessed.
    for unknown in [
        "waiting_for_input",
        "idle_for_ms",
        "at_prompt",
        "alternate_screen",
    ] {
        assert!(shell.get(unknown).is_none(), "{unknown}: {shell}");
    }
    ok(
        &client,
        "kill_pane",
        json!({"server": "z", "target": kept_pane}),
    )
    .await;

    // Workflow: a dev-server tab created in the background; read its output from here.
    let server = ok(
        &client,
        "create_window",
        json!({"server": "z", "target": session, "name": "server",
               "shell": "for i in 1 2 3; do echo served $i; done; exec sleep 600"}),
    )
    .await;
    let panes = ok(
        &client,
        "list_panes",
        json!({"server": "z", "filters": {"tab_id": server["window"]["tab_id"]}}),
    )
    .await;
    let server_pane = panes["panes"][0]["pane_id"].as_str().unwrap().to_owned();
    ok(
        &client,
        "wait_for_text",
        json!({"server": "z", "target": server_pane, "patterns": ["served 3"],
               "include_screen": true}),
    )
    .await;
    let out = ok(
        &client,
        "capture_pane",
        json!({"server": "z", "target": server_pane}),
    )
    .await;
    assert!(
        out["text"]
            .as_str()
            .unwrap()
            .contains("served 1\nserved 2\nserved 3"),
        "{out}"
    );

    // Errors: missing panes, plugin panes, timeouts, bad patterns.
    err_kind(
        &client,
        "send_keys",
        json!({"server": "z", "target": "terminal_99", "keys": "x"}),
        "not_found",
        "no pane terminal_99",
    )
    .await;
    err_kind(
        &client,
        "capture_pane",
        json!({"server": "z", "target": "terminal_99"}),
        "not_found",
        "no pane terminal_99",
    )
    .await;
    err_kind(
        &client,
        "wait_for_text",
        json!({"server": "z", "target": "terminal_99", "patterns": ["x"], "timeout": 2}),
        "not_found",
        "no pane terminal_99",
    )
    .await;
    err_kind(
        &client,
        "run_command",
        json!({"server": "z", "target": "terminal_99", "command": "true"}),
        "not_found",
        "no pane terminal_99",
    )
    .await;
    let panes = ok(
        &client,
        "list_panes",
        json!({"server": "z", "filters": {"plugin": true}}),
    )
    .await;
    let plugin = ids(&panes, "panes", "pane_id")
        .into_iter()
        .find(|p| p.starts_with("plugin_"))
        .expect("a plugin pane");
    err_kind(
        &client,
        "send_keys",
        json!({"server": "z", "target": plugin, "keys": "x"}),
        "conflict",
        "plugin pane",
    )
    .await;
    let timed_out = ok(
        &client,
        "wait_for_text",
        json!({"server": "z", "target": "terminal_0", "patterns": ["never-shown-anywhere"],
               "timeout": 1}),
    )
    .await;
    assert_eq!(timed_out["outcome"], "timeout", "{timed_out}");
    assert_eq!(timed_out["found"], false);
    err_kind(
        &client,
        "wait_for_text",
        json!({"server": "z", "target": "terminal_0", "patterns": ["("], "regex": true}),
        "invalid_arguments",
        "pattern 0",
    )
    .await;
    err_kind(
        &client,
        "zellij_run_command",
        json!({"command": "sleep 30", "timeout": 1}),
        "timeout",
        "still running",
    )
    .await;
    err_kind(
        &client,
        "zellij_run_command",
        json!({"command": "true", "cwd": "rel"}),
        "invalid_arguments",
        "absolute",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_audited_without_what_was_typed() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let Some(Setup {
        h: _h,
        session: _,
        gateway,
        client,
    }) = setup_with(&format!("[audit]\npath = '{}'\n", log.display())).await
    else {
        return;
    };
    prompt(&client, "terminal_0").await;
    ok(
        &client,
        "send_keys",
        json!({"server": "z", "target": "terminal_0", "keys": "# TYPED-SECRET-1", "enter": false}),
    )
    .await;
    ok(
        &client,
        "pane_batch",
        json!({"server": "z", "operations": [
            {"op": "paste_text", "target": "terminal_0", "text": "PASTED-SECRET-2"},
            {"op": "send_keys", "target": "terminal_0", "keys": ["C-c"], "enter": false}
        ]}),
    )
    .await;
    ok(
        &client,
        "zellij_run_command",
        json!({"command": "echo RUN-SECRET-3"}),
    )
    .await;
    drop(client);
    gateway
        .stop(std::time::Duration::from_secs(10))
        .await
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    for secret in ["TYPED-SECRET-1", "PASTED-SECRET-2", "RUN-SECRET-3"] {
        assert!(!text.contains(secret), "{secret} in the audit log: {text}");
    }
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let write = records
        .iter()
        .find(|r| r["kind"] == "start" && r["tool"] == "send_keys")
        .expect("a record of the write");
    assert_eq!(write["args"]["target"], "terminal_0");
    assert_eq!(write["args"]["keys"]["len"], 16);
    assert_eq!(write["targets"], json!(["terminal_0"]), "{write}");
    let end = records
        .iter()
        .find(|r| r["kind"] == "end" && r["call"] == write["call"])
        .expect("the end of the write");
    assert_eq!(end["outcome"], "ok");
}

/// A token for `sub` with read access, limited to `servers` and `sessions` patterns.
fn limited_token(
    gateway: &TestGateway,
    sub: &str,
    servers: Option<&[&str]>,
    sessions: Option<&[&str]>,
    own_sessions: bool,
) -> String {
    let list = |p: Option<&[&str]>| p.map(|p| p.iter().map(|s| (*s).to_owned()).collect());
    muxgate::auth::TokenMinter::from_config(&gateway.config.auth)
        .unwrap()
        .mint(&muxgate::auth::MintRequest {
            sub: sub.to_owned(),
            scopes: vec!["mux:read".into()],
            ttl: std::time::Duration::from_secs(3600),
            servers: list(servers),
            sessions: list(sessions),
            own_sessions,
            workspace: None,
            toolsets: None,
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_are_chosen_by_name_under_the_same_access_rules() {
    let empty_dir = tempfile::tempdir().unwrap();
    let Some(Setup {
        h: _h,
        session,
        gateway,
        client,
    }) = setup_with(&format!(
        "[zellij.servers.empty]\nsocket_dir = '{}'\n",
        empty_dir.path().display()
    ))
    .await
    else {
        return;
    };
    let s = session.as_str();
    let servers = ok(&client, "list_servers", json!({})).await;
    let zellij = zellij_servers(&servers);
    let names: Vec<&Value> = zellij.iter().map(|s| &s["name"]).collect();
    assert_eq!(names, ["empty", "z"]);
    assert_eq!(zellij[0]["reachability"], "no_sessions", "{servers}");
    err_kind(
        &client,
        "zellij_list_clients",
        json!({}),
        "invalid_arguments",
        "several Zellij servers",
    )
    .await;
    ok(&client, "zellij_list_clients", json!({"server": "z"})).await;
    // A server whose socket dir holds no session: nothing listed, named sessions missing.
    let none = ok(&client, "list_sessions", json!({"server": "empty"})).await;
    assert_eq!(none["sessions"], json!([]));
    err_kind(
        &client,
        "zellij_list_clients",
        json!({"server": "empty"}),
        "invalid_arguments",
        "no default session",
    )
    .await;
    err_kind(
        &client,
        "list_panes",
        json!({"server": "empty", "target": s}),
        "not_found",
        "no session",
    )
    .await;

    // Server patterns: a token for `z` only needs no `server` argument and never sees `empty`.
    let only_z = legacy(
        &gateway,
        &limited_token(&gateway, "zed", Some(&["z"]), None, false),
    )
    .await;
    let servers = ok(&only_z, "list_servers", json!({})).await;
    assert_eq!(ids(&servers, "servers", "name"), ["z"]);
    ok(&only_z, "zellij_list_clients", json!({})).await;
    // With no tmux server to use, a shared tool without `server` reaches the Zellij one.
    let read = ok(&only_z, "capture_pane", json!({"target": "terminal_0"})).await;
    assert_eq!(read["server"], "z");
    err_kind(
        &only_z,
        "zellij_list_clients",
        json!({"server": "empty"}),
        "not_found",
        "no Zellij server named",
    )
    .await;
    let tmux_only = legacy(
        &gateway,
        &limited_token(&gateway, "tim", Some(&["default"]), None, false),
    )
    .await;
    err_kind(
        &tmux_only,
        "zellij_list_clients",
        json!({}),
        "unavailable",
        "no Zellij server you may use",
    )
    .await;
    // A Zellij server the caller may not use is not named as one to a tmux-only tool either.
    err_kind(
        &tmux_only,
        "get_window_info",
        json!({"server": "z", "target": "0"}),
        "not_found",
        "no tmux server named \"z\"",
    )
    .await;
    // A Zellij server the caller may not use reads as a name that exists nowhere.
    let refused = err(
        &tmux_only,
        "capture_pane",
        json!({"server": "z", "target": "terminal_0"}),
    )
    .await;
    let missing = err(
        &tmux_only,
        "capture_pane",
        json!({"server": "nowhere", "target": "terminal_0"}),
    )
    .await;
    assert_eq!(refused["kind"], missing["kind"]);
    assert_eq!(refused["suggestion"], missing["suggestion"]);
    let message = |e: &Value| e["message"].as_str().unwrap_or_default().to_owned();
    assert_eq!(
        message(&refused).replace("\"z\"", "\"nowhere\""),
        message(&missing)
    );

    // Zellij sessions have no owner: in own_sessions mode only an explicit grant shows one.
    let own = legacy(&gateway, &limited_token(&gateway, "olga", None, None, true)).await;
    let seen = ok(&own, "list_sessions", json!({"server": "z"})).await;
    assert_eq!(seen["sessions"], json!([]));
    err_kind(
        &own,
        "capture_pane",
        json!({"server": "z", "target": "terminal_0"}),
        "not_found",
        "no session",
    )
    .await;
    let granted = legacy(
        &gateway,
        &limited_token(&gateway, "olga", None, Some(&[s]), true),
    )
    .await;
    let seen = ok(&granted, "list_sessions", json!({"server": "z"})).await;
    assert_eq!(ids(&seen, "sessions", "name"), [s]);
    ok(
        &granted,
        "capture_pane",
        json!({"server": "z", "target": "terminal_0"}),
    )
    .await;
}

/// `zellij_run_command` answers an exit status only with the output printed before it, in
/// order, every time: Zellij can report a command's exit before its screen shows all the
/// command printed (an answer read then had the status without the output), and it can apply
/// the first bytes a new pane prints after later ones (an answer had its two lines swapped).
/// Fifty runs in a row, each answer whole and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_off_command_is_answered_with_its_whole_output_every_time() {
    let Some(Setup {
        h: _h,
        session: _,
        gateway: _gateway,
        client,
    }) = setup().await
    else {
        return;
    };
    for run in 0..50 {
        let answer = ok(
            &client,
            "zellij_run_command",
            json!({"command": format!("printf 'ZOUT%s\\n' {run}; printf 'tail-%s\\n' {run}; exit 3")}),
        )
        .await;
        assert_eq!(
            (&answer["exit_status"], &answer["output"]),
            (&json!(3), &json!(format!("ZOUT{run}\ntail-{run}"))),
            "run {run}: {answer}"
        );
    }
}
