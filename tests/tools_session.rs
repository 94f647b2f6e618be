//! Session tools over MCP against a real tmux server.

mod common;

use common::calls::{admin_limited_to, err, err_kind, legacy, ok, stateless, token};
use common::tmux::{TestTmux, unique_socket_name};
use common::{config_with_server, spawn_gateway};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use serde_json::{Value, json};

async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ClientConfig>,
    name: &str,
    args: Value,
) -> rmcp::model::CallToolResult {
    client
        .call_tool(
            CallToolRequestParams::new(name.to_owned())
                .with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .expect("tools/call")
}

fn names(listing: &Value) -> Vec<String> {
    listing["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_sessions_shows_only_what_the_caller_may_see() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "ci-build"]);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;

    let client = ClientConfig::default()
        .serve(gateway.transport())
        .await
        .unwrap();
    let all = call(&client, "list_sessions", json!({})).await;
    assert_eq!(all.is_error, Some(false), "{all:?}");
    let names: Vec<_> = all.structured_content.unwrap()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["ci-build", "main"]);

    // A token limited to `ci-*` sessions never learns that `main` exists.
    let token = muxgate::auth::TokenMinter::from_config(&gateway.config.auth)
        .unwrap()
        .mint(&muxgate::auth::MintRequest {
            sub: "ci".into(),
            scopes: vec!["mux:read".into()],
            ttl: std::time::Duration::from_secs(60),
            servers: None,
            sessions: Some(vec!["ci-*".into()]),
            own_sessions: false,
            workspace: None,
            toolsets: None,
        })
        .unwrap();
    let limited = ClientConfig::default()
        .serve(gateway.transport_with(&token))
        .await
        .unwrap();
    let seen = call(&limited, "list_sessions", json!({"server": "work"})).await;
    let sessions = &seen.structured_content.unwrap()["sessions"];
    assert_eq!(sessions.as_array().unwrap().len(), 1, "{sessions}");
    assert_eq!(sessions[0]["name"], "ci-build");

    let unknown = call(&limited, "list_sessions", json!({"server": "nope"})).await;
    assert_eq!(common::tool_error(&unknown)["kind"], "not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_sessions_filters_by_name_attachment_and_creator() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "ci-1"]);
    tmux.ok(&["new-session", "-d", "-s", "ci-2"]);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = legacy(&gateway, &gateway.token).await;
    ok(&client, "create_session", json!({"name": "ci-mine"})).await;

    let globbed = ok(
        &client,
        "list_sessions",
        json!({"filters": {"name": "ci-?"}}),
    )
    .await;
    assert_eq!(names(&globbed), ["ci-1", "ci-2"]);
    let exact = ok(
        &client,
        "list_sessions",
        json!({"filters": {"name": "main"}}),
    )
    .await;
    assert_eq!(names(&exact), ["main"]);
    let mine = ok(
        &client,
        "list_sessions",
        json!({"filters": {"created_by_you": true}}),
    )
    .await;
    assert_eq!(names(&mine), ["ci-mine"]);
    assert_eq!(mine["sessions"][0]["created_by_you"], true);
    // The dict may arrive as a JSON string.
    let as_string = ok(
        &client,
        "list_sessions",
        json!({"filters": "{\"name\": \"ci-*\", \"created_by_you\": false}"}),
    )
    .await;
    assert_eq!(names(&as_string), ["ci-1", "ci-2"]);
    let detached = ok(
        &client,
        "list_sessions",
        json!({"filters": {"attached": true}}),
    )
    .await;
    assert!(names(&detached).is_empty(), "{detached}");

    // The default view: enough to pick a session and type into it; `fields` asks for more.
    let session = &exact["sessions"][0];
    assert!(session["id"].as_str().unwrap().starts_with('$'));
    assert!(session["active_pane_id"].as_str().unwrap().starts_with('%'));
    for hidden in [
        "created",
        "last_activity",
        "active_window_id",
        "created_by_you",
    ] {
        assert!(session.get(hidden).is_none(), "{hidden} in {session}");
    }
    let dated = ok(
        &client,
        "list_sessions",
        json!({"filters": {"name": "main"}, "fields": ["created"]}),
    )
    .await;
    let dated = &dated["sessions"][0];
    assert_eq!(
        dated.as_object().unwrap().len(),
        2,
        "id and created: {dated}"
    );
    assert!(dated["created"].as_u64().unwrap() > 1_600_000_000);
    err_kind(
        &client,
        "list_sessions",
        json!({"fields": ["colour"]}),
        "invalid_arguments",
        "\"colour\"",
    )
    .await;
    let exact = ok(
        &client,
        "list_sessions",
        json!({"filters": {"name": "main"}, "fields": ["all"]}),
    )
    .await;
    let session = &exact["sessions"][0];
    assert!(session["id"].as_str().unwrap().starts_with('$'));
    assert!(
        session["active_window_id"]
            .as_str()
            .unwrap()
            .starts_with('@')
    );
    assert!(session["active_pane_id"].as_str().unwrap().starts_with('%'));
    assert_eq!(session["windows"], 1);
    assert!(session["created"].as_u64().unwrap() > 1_600_000_000);

    err_kind(
        &client,
        "list_sessions",
        json!({"filters": {"nmae": "x"}}),
        "invalid_arguments",
        "nmae",
    )
    .await;
    err_kind(
        &client,
        "list_sessions",
        json!({"filters": {"name": ""}}),
        "invalid_arguments",
        "filters.name",
    )
    .await;
    err_kind(
        &client,
        "list_sessions",
        json!({"filters": "not json"}),
        "invalid_arguments",
        "JSON",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_session_info_by_name_id_or_contained_pane_and_hidden_is_missing() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-window", "-d", "-t", "main", "-n", "second"]);
    tmux.ok(&["new-session", "-d", "-s", "ci-x"]);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = stateless(&gateway, &gateway.token).await;

    let by_name = ok(&client, "get_session_info", json!({"target": "main"})).await;
    assert_eq!(by_name["server"], "work");
    assert_eq!(by_name["session"]["name"], "main");
    let windows: Vec<_> = by_name["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(windows.len(), 2);
    assert_eq!(windows[1], "second");
    let id = by_name["session"]["id"].as_str().unwrap().to_owned();
    let by_id = ok(&client, "get_session_info", json!({"target": id})).await;
    assert_eq!(by_id["session"]["name"], "main");
    let pane = tmux.pane_id("main:1").to_string();
    let by_pane = ok(&client, "get_session_info", json!({"target": pane})).await;
    assert_eq!(by_pane["session"]["id"], id.as_str());

    err_kind(
        &client,
        "get_session_info",
        json!({"target": "main:{last}"}),
        "invalid_arguments",
        "main:{last}",
    )
    .await;
    err_kind(
        &client,
        "get_session_info",
        json!({}),
        "invalid_arguments",
        "target",
    )
    .await;
    let missing = err(&client, "get_session_info", json!({"target": "nosuch"})).await;
    assert_eq!(missing["kind"], "not_found");

    // Limited to ci-*: `main` looks exactly like a session that does not exist.
    let ci = admin_limited_to(&gateway, "ci", &["ci-*"]);
    let limited = legacy(&gateway, &ci).await;
    let hidden = err(&limited, "get_session_info", json!({"target": "main"})).await;
    let missing = err(&limited, "get_session_info", json!({"target": "nosuch"})).await;
    assert_eq!(hidden["kind"], "not_found");
    assert_eq!(
        hidden["message"].as_str().unwrap().replace("main", "X"),
        missing["message"].as_str().unwrap().replace("nosuch", "X")
    );
    let hidden_pane = err(&limited, "get_session_info", json!({"target": pane})).await;
    assert_eq!(hidden_pane["kind"], "not_found");
    ok(&limited, "get_session_info", json!({"target": "ci-x"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_session_is_detached_tagged_and_configured() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = legacy(&gateway, &gateway.token).await;
    let dir = tempfile::tempdir().unwrap();
    let dir_path = std::fs::canonicalize(dir.path()).unwrap();

    let created = ok(
        &client,
        "create_session",
        json!({
            "name": "build-1",
            "window_name": "edit; it",
            "start_directory": dir_path.to_str().unwrap(),
            "width": 90,
            "height": 20,
            "environment": {"GREETING": "hello #{world};", "EMPTY": ""},
        }),
    )
    .await;
    assert_eq!(created["started_server"], false);
    let session = &created["session"];
    assert_eq!(session["name"], "build-1");
    assert_eq!(session["created_by_you"], true);
    assert_eq!(session["attached_clients"], 0);
    let pane = session["active_pane_id"].as_str().unwrap().to_owned();

    assert!(
        tmux.ok(&["show-options", "-t", "build-1"])
            .lines()
            .all(|l| !l.starts_with('@')),
        "ownership is the gateway's record, not a tmux option"
    );
    assert_eq!(
        tmux.ok(&[
            "list-windows",
            "-t",
            "build-1",
            "-F",
            "#{window_name} #{window_width}x#{window_height}"
        ])
        .trim(),
        "edit; it 90x20"
    );
    assert_eq!(
        tmux.ok(&["show-environment", "-t", "build-1", "GREETING"])
            .trim(),
        "GREETING=hello #{world};"
    );
    let cwd = tmux.ok(&["display-message", "-p", "-t", &pane, "#{pane_current_path}"]);
    assert_eq!(cwd.trim(), dir_path.to_str().unwrap());
    // Nobody was attached or switched: the only clients are the gateway's control clients.
    let clients = tmux.ok(&["list-clients", "-F", "#{client_termname}"]);
    assert!(
        clients.lines().all(|t| t.starts_with("muxgate-")),
        "{clients}"
    );

    // The environment may come as a JSON string.
    ok(
        &client,
        "create_session",
        json!({"name": "json-env", "environment": "{\"A\": \"1\"}"}),
    )
    .await;
    assert_eq!(
        tmux.ok(&["show-environment", "-t", "json-env", "A"]).trim(),
        "A=1"
    );

    // A taken name is a conflict, and the existing session does not become the caller's.
    tmux.ok(&["new-session", "-d", "-s", "human"]);
    let taken = err(&client, "create_session", json!({"name": "human"})).await;
    assert_eq!(taken["kind"], "conflict", "{taken}");
    let human = ok(
        &client,
        "list_sessions",
        json!({"filters": {"name": "human"}}),
    )
    .await;
    // `created_by_you` is shown only when true.
    assert!(
        human["sessions"][0].get("created_by_you").is_none(),
        "a failed create made someone else's session the caller's: {human}"
    );

    for (args, needle) in [
        (json!({"name": "a.b"}), "session name"),
        (json!({"name": "x", "width": 0}), "width"),
        (json!({"name": "x", "height": 10_001}), "height"),
        (
            json!({"name": "x", "start_directory": "relative"}),
            "absolute",
        ),
        (
            json!({"name": "x", "start_directory": "/nonexistent/dir"}),
            "existing",
        ),
        (
            json!({"name": "x", "window_name": "#{pane_id}"}),
            "window_name",
        ),
        (
            json!({"name": "x", "environment": {"BAD-NAME": "1"}}),
            "BAD-NAME",
        ),
        (
            json!({"name": "x", "environment": {"A": "nul\u{0}"}}),
            "NUL",
        ),
        (json!({"name": "x", "attach": true}), "attach"),
        (json!({}), "name"),
    ] {
        err_kind(&client, "create_session", args, "invalid_arguments", needle).await;
    }
    let sessions = tmux.ok(&["list-sessions", "-F", "#{session_name}"]);
    assert!(
        !sessions.lines().any(|name| name == "x"),
        "a refused create created something: {sessions}"
    );

    // Policy: a client limited to ci-* may only create ci-* sessions.
    let ci = admin_limited_to(&gateway, "ci", &["ci-*"]);
    let limited = legacy(&gateway, &ci).await;
    err_kind(
        &limited,
        "create_session",
        json!({"name": "prod"}),
        "forbidden",
        "prod",
    )
    .await;
    ok(&limited, "create_session", json!({"name": "ci-ok"})).await;

    // In own-sessions mode, what a client creates stays visible to it, and only to it.
    let own = token(&gateway, "agent-a", &["mux:write"], None, true);
    let own_client = legacy(&gateway, &own).await;
    ok(
        &own_client,
        "create_session",
        json!({"name": "agent-a-work"}),
    )
    .await;
    let seen = ok(&own_client, "list_sessions", json!({})).await;
    assert_eq!(names(&seen), ["agent-a-work"]);
    let other = token(&gateway, "agent-b", &["mux:write"], None, true);
    let other_client = legacy(&gateway, &other).await;
    let seen = ok(&other_client, "list_sessions", json!({})).await;
    assert!(names(&seen).is_empty(), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_session_starts_a_server_that_is_not_running() {
    let socket = unique_socket_name();
    let gateway = spawn_gateway(config_with_server("fresh", &socket, true)).await;
    let client = legacy(&gateway, &gateway.token).await;
    // Dropped at the end: kills the server this test starts.
    let mut tmux = TestTmux {
        socket: socket.clone(),
        socket_path: std::path::PathBuf::new(),
    };

    // No server running: there are no sessions (an empty list, not an error).
    let before = ok(&client, "list_sessions", json!({})).await;
    assert_eq!(before["sessions"], json!([]), "{before}");
    let created = ok(
        &client,
        "create_session",
        json!({
            "name": "first",
            "window_name": "w;",
            "environment": {"ENDS": "semi;", "ESC": "back\\;"},
        }),
    )
    .await;
    assert_eq!(created["started_server"], true);
    tmux.socket_path = tmux
        .ok(&["display-message", "-p", "#{socket_path}"])
        .trim()
        .into();
    assert_eq!(created["session"]["name"], "first");
    assert!(created["session"]["id"].as_str().unwrap().starts_with('$'));

    // The engine reaches the new server right away.
    let listed = ok(&client, "list_sessions", json!({})).await;
    assert_eq!(names(&listed), ["first"]);
    assert_eq!(listed["sessions"][0]["created_by_you"], true);
    // Values ending in `;` survive tmux's argv parsing.
    assert_eq!(
        tmux.ok(&["list-windows", "-t", "first", "-F", "#{window_name}"])
            .trim(),
        "w;"
    );
    assert_eq!(
        tmux.ok(&["show-environment", "-t", "first", "ENDS"]).trim(),
        "ENDS=semi;"
    );
    assert_eq!(
        tmux.ok(&["show-environment", "-t", "first", "ESC"]).trim(),
        "ESC=back\\;"
    );
    // The server's environment holds only what a shell needs, nothing of the gateway's.
    let global = tmux.ok(&["show-environment", "-g"]);
    assert!(global.lines().any(|l| l.starts_with("PATH=")), "{global}");
    assert!(
        !global.contains("CARGO_MANIFEST_DIR"),
        "the gateway's environment leaked into the new server: {global}"
    );
    // A second session goes through the engine.
    let second = ok(&client, "create_session", json!({"name": "second"})).await;
    assert_eq!(second["started_server"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_and_rename_sessions() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "doomed"]);
    tmux.ok(&["new-session", "-d", "-s", "ci-a"]);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = legacy(&gateway, &gateway.token).await;

    let renamed = ok(
        &client,
        "rename_session",
        json!({"target": "doomed", "new_name": "renamed"}),
    )
    .await;
    assert_eq!(renamed["old_name"], "doomed");
    assert_eq!(renamed["new_name"], "renamed");
    let id = renamed["id"].as_str().unwrap().to_owned();
    assert_eq!(
        tmux.ok(&["display-message", "-p", "-t", &id, "#{session_name}"])
            .trim(),
        "renamed"
    );
    err_kind(
        &client,
        "rename_session",
        json!({"target": "renamed", "new_name": "main"}),
        "conflict",
        "main",
    )
    .await;
    err_kind(
        &client,
        "rename_session",
        json!({"target": "renamed", "new_name": "bad name"}),
        "invalid_arguments",
        "bad name",
    )
    .await;
    err_kind(
        &client,
        "rename_session",
        json!({"target": "@0", "new_name": "x"}),
        "invalid_arguments",
        "window",
    )
    .await;

    let killed = ok(&client, "kill_session", json!({"target": id})).await;
    assert_eq!(killed["name"], "renamed");
    let sessions = tmux.ok(&["list-sessions", "-F", "#{session_name}"]);
    assert!(!sessions.contains("renamed"), "{sessions}");
    let pane = tmux.pane_id("main").to_string();
    err_kind(
        &client,
        "kill_session",
        json!({"target": pane}),
        "invalid_arguments",
        "pane",
    )
    .await;
    err_kind(
        &client,
        "kill_session",
        json!({"target": "gone"}),
        "not_found",
        "gone",
    )
    .await;

    // Limited to ci-*: main is hidden (like a missing one), renaming out of the pattern is refused.
    let ci = admin_limited_to(&gateway, "ci", &["ci-*"]);
    let limited = legacy(&gateway, &ci).await;
    err_kind(
        &limited,
        "kill_session",
        json!({"target": "main"}),
        "not_found",
        "main",
    )
    .await;
    err_kind(
        &limited,
        "rename_session",
        json!({"target": "main", "new_name": "ci-main"}),
        "not_found",
        "main",
    )
    .await;
    err_kind(
        &limited,
        "rename_session",
        json!({"target": "ci-a", "new_name": "prod"}),
        "forbidden",
        "prod",
    )
    .await;
    assert!(tmux.ok(&["list-sessions"]).contains("main"));
    // A read-only token cannot call the destructive tool at all.
    let reader = token(&gateway, "r", &["mux:read"], None, false);
    let reader = legacy(&gateway, &reader).await;
    err_kind(
        &reader,
        "kill_session",
        json!({"target": "main"}),
        "forbidden",
        "mux:admin",
    )
    .await;
}

/// On a shared server every pane can run `tmux set`: ownership must not be a tmux option.
/// Alice's own shell tries the adoption trick on bob's session, on every untagged session
/// (`set -g`) and on a human's session, then alice lists what she sees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ownership_cannot_be_rewritten_from_inside_a_pane() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "human"]);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let writer = ["mux:read", "mux:write"];
    let alice = legacy(&gateway, &token(&gateway, "alice", &writer, None, true)).await;
    let bob = legacy(&gateway, &token(&gateway, "bob", &writer, None, true)).await;
    ok(&bob, "create_session", json!({"name": "b-1"})).await;
    let created = ok(&alice, "create_session", json!({"name": "a-1"})).await;
    let pane = created["session"]["active_pane_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let attack = "tmux set -t b-1 @muxgate_owner alice; tmux set -t human @muxgate_owner alice; \
                  tmux set -g @muxgate_owner alice; tmux show -v -t b-1 @muxgate_owner";
    let ran = ok(
        &alice,
        "run_command",
        json!({"target": pane, "command": attack, "timeout": 20}),
    )
    .await;
    assert_eq!(ran["exit_status"], 0, "the shell can set options: {ran}");
    assert_eq!(ran["output"], "alice\n", "{ran}");

    let seen = ok(&alice, "list_sessions", json!({})).await;
    assert_eq!(names(&seen), ["a-1"], "the tags changed nothing: {seen}");
    let hidden = err(&alice, "capture_pane", json!({"target": "b-1"})).await;
    assert_eq!(hidden["kind"], "not_found", "{hidden}");
    let seen = ok(&bob, "list_sessions", json!({})).await;
    assert_eq!(names(&seen), ["b-1"]);
    assert_eq!(seen["sessions"][0]["created_by_you"], true);
}

/// A shared server with configured namespaces: `bob` is limited to `b-*`, `carol` sees only
/// what she creates and has no namespace. Carol can neither plant a session into bob's
/// namespace nor squat his names, nor rename into them; a token claim (`sessions: ['*']`) does
/// not widen her access; and a session bob cannot see is not confirmed to exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_client_plants_or_squats_sessions_in_another_ones_namespace() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "b-human"]);
    let mut config = config_with_server("work", &tmux.socket, false);
    config
        .clients
        .insert("bob".into(), toml::from_str("sessions = ['b-*']").unwrap());
    config.clients.insert(
        "carol".into(),
        toml::from_str("own_sessions = true").unwrap(),
    );
    let gateway = spawn_gateway(config).await;
    let writer = ["mux:read", "mux:write"];
    let bob = legacy(&gateway, &token(&gateway, "bob", &writer, None, false)).await;
    let carol = legacy(
        &gateway,
        &token(&gateway, "carol", &writer, Some(&["*"]), false),
    )
    .await;

    let planted = err(&carol, "create_session", json!({"name": "b-planted"})).await;
    assert_eq!(planted["kind"], "forbidden", "{planted}");
    assert!(
        planted["message"].as_str().unwrap().contains("reserved"),
        "{planted}"
    );
    ok(&carol, "create_session", json!({"name": "c-1"})).await;
    let renamed = err(
        &carol,
        "rename_session",
        json!({"target": "c-1", "new_name": "b-1"}),
    )
    .await;
    assert_eq!(renamed["kind"], "forbidden", "{renamed}");
    let seen = ok(&carol, "list_sessions", json!({})).await;
    assert_eq!(
        names(&seen),
        ["c-1"],
        "the claim `*` opened nothing: {seen}"
    );
    let seen = ok(&bob, "list_sessions", json!({})).await;
    assert_eq!(
        names(&seen),
        ["b-human"],
        "a human's session in bob's namespace is his to see"
    );

    // An unlisted client whose token is its whole policy may name `b-*` (its claim is its
    // authority); the session it makes there stays hidden from bob, and bob's attempt to use
    // the name confirms nothing about it.
    let dave = legacy(
        &gateway,
        &token(&gateway, "dave", &writer, Some(&["b-*"]), false),
    )
    .await;
    ok(&dave, "create_session", json!({"name": "b-x"})).await;
    let seen = ok(&bob, "list_sessions", json!({})).await;
    assert_eq!(
        names(&seen),
        ["b-human"],
        "planted by another client: {seen}"
    );
    let taken = err(&bob, "create_session", json!({"name": "b-x"})).await;
    assert_eq!(taken["kind"], "conflict", "{taken}");
    assert_eq!(
        taken["message"],
        "the session name \"b-x\" is not available"
    );
    let hidden = err(&bob, "capture_pane", json!({"target": "b-x"})).await;
    let missing = err(&bob, "capture_pane", json!({"target": "b-nope"})).await;
    assert_eq!(
        hidden["message"].as_str().unwrap().replace("b-x", "N"),
        missing["message"].as_str().unwrap().replace("b-nope", "N"),
        "hidden reads exactly like missing"
    );
    // A name bob can see is reported as existing.
    let visible = err(&bob, "create_session", json!({"name": "b-human"})).await;
    assert_eq!(
        visible["message"],
        "a session named \"b-human\" already exists"
    );
}
