//! Workspace mode: one sandboxed tmux server per tenant, through a real gateway.

mod common;

use common::tmux::TestTmux;
use common::tools::{call_err, call_ok, client_with};
use common::workspaces::WorkspaceState;
use common::{config_with_server, spawn_gateway};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tenant_gets_its_own_server_named_workspace() {
    if !common::needs::sandbox("each_tenant_gets_its_own_server_named_workspace") {
        return;
    }
    let shared = TestTmux::start();
    let state = WorkspaceState::new();
    let gateway =
        spawn_gateway(state.config(config_with_server("shared", &shared.socket, false))).await;
    let alice = client_with(&gateway, &gateway.mint("alice", &["mux:admin"])).await;
    let bob = client_with(&gateway, &gateway.mint("bob", &["mux:admin"])).await;

    let servers = call_ok(&alice, "list_servers", json!({})).await;
    assert_eq!(
        servers["servers"],
        json!([{"name": "workspace", "backend": "tmux", "kind": "workspace", "allow_absent": false, "reachability": "no_sessions"}]),
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
        json!({"target": pane, "command": "echo hi from $HOME; pwd", "timeout": 20}),
    )
    .await;
    assert_eq!(run["exit_status"], 0, "{run}");
    assert_eq!(run["output"], "hi from /workspace\n/workspace\n", "{run}");
    // The workspace's shell is integrated: a command typed into it is recorded too.
    call_ok(
        &alice,
        "send_keys",
        json!({"target": pane, "keys": "cd /tmp; false", "literal": true}),
    )
    .await;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let typed = loop {
        let listed = call_ok(&alice, "list_commands", json!({"target": pane})).await;
        if listed["commands"][1]["exit_status"] == 1 {
            break listed;
        }
        assert!(tokio::time::Instant::now() < deadline, "{listed}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(typed["shell_integration"], true, "{typed}");
    assert_eq!(typed["commands"][1]["command"], "cd /tmp; false", "{typed}");
    // The pane's pids are the sandbox's own: the gateway reads no /proc for them, so nothing
    // a tenant runs can make it describe a process outside the workspace.
    let pane_state = call_ok(&alice, "get_pane_state", json!({"target": pane})).await;
    for field in [
        "foreground_pid",
        "foreground_command_line",
        "waiting_for_input",
    ] {
        assert!(pane_state.get(field).is_none(), "{field}: {pane_state}");
    }
    let refused = call_err(
        &alice,
        "wait_for_state",
        json!({"targets": [pane], "condition": "waiting_for_input"}),
    )
    .await;
    assert_eq!(refused["kind"], "invalid_arguments", "{refused}");

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

fn mint_for(gateway: &common::TestGateway, sub: &str, workspace: Option<&str>) -> String {
    muxgate::auth::TokenMinter::from_config(&gateway.config.auth)
        .unwrap()
        .mint(&muxgate::auth::MintRequest {
            sub: sub.into(),
            scopes: vec!["mux:read".into(), "mux:write".into(), "mux:admin".into()],
            ttl: std::time::Duration::from_secs(600),
            servers: None,
            sessions: None,
            own_sessions: false,
            workspace: workspace.map(str::to_owned),
            toolsets: None,
        })
        .unwrap()
}

/// The row of `name` in `muxgate workspace list`'s output.
fn listed_row(list: &str, name: &str) -> Option<String> {
    list.lines()
        .find(|line| line.split_whitespace().next() == Some(name))
        .map(str::to_owned)
}

fn names(listing: &serde_json::Value) -> Vec<String> {
    listing["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A team shares one workspace, named by the config (which a token's claim cannot override)
/// or by the claim when the config names none and lists the team in `[workspaces] teams`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_shares_a_workspace_by_config_or_claim() {
    if !common::needs::sandbox("a_team_shares_a_workspace_by_config_or_claim") {
        return;
    }
    let state = WorkspaceState::new();
    let config = muxgate::config::Config::from_toml_str(
        "[workspaces]\nteams = ['team']\n[clients.bob]\nworkspace = 'team'\n",
    )
    .unwrap();
    let gateway = spawn_gateway(state.config(config)).await;
    let bob = client_with(&gateway, &mint_for(&gateway, "bob", Some("elsewhere"))).await;
    let carol = client_with(&gateway, &mint_for(&gateway, "carol", Some("team"))).await;
    let dave = client_with(&gateway, &mint_for(&gateway, "dave", None)).await;

    call_ok(&bob, "create_session", json!({"name": "shared"})).await;
    let seen = call_ok(&carol, "list_sessions", json!({})).await;
    assert_eq!(
        names(&seen),
        ["shared"],
        "carol's claim puts her in bob's team"
    );
    // `created_by_you` is shown only when true.
    assert!(
        seen["sessions"][0].get("created_by_you").is_none(),
        "{seen}"
    );
    call_ok(&carol, "create_session", json!({"name": "carols"})).await;
    let seen = call_ok(&bob, "list_sessions", json!({})).await;
    assert_eq!(names(&seen), ["carols", "shared"]);
    let seen = call_ok(&dave, "list_sessions", json!({})).await;
    assert_eq!(names(&seen), Vec::<String>::new(), "dave works alone");
    assert!(state.sandbox_pid("team").is_some());
    assert!(
        state.sandbox_pid("elsewhere").is_none(),
        "bob's claim was ignored"
    );
    assert!(state.sandbox_pid("dave").is_some());
}

/// A workspace outlives the gateway: a new gateway on the same state directory finds it with
/// its sessions, screens, programs and owners.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_survives_a_gateway_restart() {
    if !common::needs::sandbox("a_workspace_survives_a_gateway_restart") {
        return;
    }
    let state = WorkspaceState::new();
    let config = state.config(muxgate::config::Config::from_toml_str("").unwrap());
    let first = spawn_gateway(config.clone()).await;
    let token = mint_for(&first, "alice", None);
    let alice = client_with(&first, &token).await;
    let created = call_ok(&alice, "create_session", json!({"name": "work"})).await;
    let pane = created["session"]["active_pane_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = call_ok(
        &alice,
        "run_command",
        json!({"target": pane, "command": "sleep 600 & echo kept-$!", "timeout": 20}),
    )
    .await;
    let background = run["output"].as_str().unwrap().trim().to_owned();
    let sandbox = state.sandbox_pid("alice").unwrap();
    drop(alice);
    first
        .stop(std::time::Duration::from_secs(15))
        .await
        .unwrap();
    assert_eq!(
        state.sandbox_pid("alice"),
        Some(sandbox),
        "the sandbox outlived the gateway"
    );

    let second = spawn_gateway(config).await;
    let alice = client_with(&second, &token).await;
    let listed = call_ok(&alice, "list_sessions", json!({})).await;
    assert_eq!(names(&listed), ["work"]);
    assert_eq!(
        listed["sessions"][0]["created_by_you"], true,
        "owners survive too"
    );
    let screen = call_ok(&alice, "capture_pane", json!({"target": pane})).await;
    assert!(
        screen["text"].as_str().unwrap().contains(&background),
        "{screen}"
    );
    let pid = background.trim_start_matches("kept-");
    let run = call_ok(
        &alice,
        "run_command",
        json!({"target": pane, "command": format!("kill -0 {pid} && echo alive"), "timeout": 20}),
    )
    .await;
    assert_eq!(run["output"], "alive\n", "{run}");
    assert_eq!(
        state.sandbox_pid("alice"),
        Some(sandbox),
        "found, not started again"
    );
}

/// Limits refuse with clear errors: sessions at create_session, processes and memory inside
/// the sandbox, whatever runs there; nothing of it reaches another workspace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_limits_refuse_clearly() {
    if !common::needs::sandbox("workspace_limits_refuse_clearly") {
        return;
    }
    let state = WorkspaceState::new();
    let config = muxgate::config::Config::from_toml_str(
        "[workspaces.limits]\nsessions = 2\nprocesses = 40\n\
         memory_per_process_bytes = 268435456\nopen_files = 256\n",
    )
    .unwrap();
    let gateway = spawn_gateway(state.config(config)).await;
    let alice = client_with(&gateway, &mint_for(&gateway, "alice", None)).await;
    let bob = client_with(&gateway, &mint_for(&gateway, "bob", None)).await;
    let created = call_ok(&alice, "create_session", json!({"name": "one"})).await;
    let pane = created["session"]["active_pane_id"]
        .as_str()
        .unwrap()
        .to_owned();
    call_ok(&alice, "create_session", json!({"name": "two"})).await;
    let refused = call_err(&alice, "create_session", json!({"name": "three"})).await;
    assert_eq!(refused["kind"], "busy", "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("limit (2)"),
        "{refused}"
    );
    call_ok(&bob, "create_session", json!({"name": "one"})).await;

    let limits = call_ok(
        &alice,
        "run_command",
        json!({"target": pane, "timeout": 30, "command":
            "ulimit -u; ulimit -n; \
             python3 -c 'bytearray(512 << 20)' 2>&1 | tail -1; \
             python3 -c 'import os,time\nn=0\ntry:\n    while True:\n        if os.fork()==0:\n            time.sleep(5); os._exit(0)\n        n+=1\nexcept OSError as e: print(\"fork refused after\", n, e.errno)'"}),
    )
    .await;
    let output = limits["output"].as_str().unwrap();
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(lines[0], "40", "{output}");
    assert_eq!(lines[1], "256", "{output}");
    assert_eq!(lines[2], "MemoryError", "{output}");
    assert!(
        lines[3].starts_with("fork refused after") && lines[3].ends_with(" 11"),
        "{output}"
    );
    // Bob's workspace (same limits, its own count) still starts programs.
    let created = call_ok(&bob, "list_sessions", json!({})).await;
    let bob_pane = created["sessions"][0]["active_pane_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = call_ok(
        &bob,
        "run_command",
        json!({"target": bob_pane, "command": "for i in 1 2 3 4 5; do sh -c true; done; echo fine", "timeout": 20}),
    )
    .await;
    assert_eq!(run["output"], "fine\n", "{run}");
}

/// A call both backends serve checks its arguments before it opens the server: bad input
/// starts no workspace, and is refused as bad input (or an option tmux does not offer), not
/// as a server that could not start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_starts_no_workspace() {
    if !common::needs::sandbox("bad_input_starts_no_workspace") {
        return;
    }
    let state = WorkspaceState::new();
    let gateway =
        spawn_gateway(state.config(muxgate::config::Config::from_toml_str("").unwrap())).await;
    let alice = client_with(&gateway, &mint_for(&gateway, "alice", None)).await;
    let bad = [
        ("kill_window", json!({"target": "%1"}), "invalid_arguments"),
        (
            "rename_window",
            json!({"target": "@1", "new_name": "a#b"}),
            "invalid_arguments",
        ),
        (
            "create_window",
            json!({"target": "work", "layout": "layout { pane; }"}),
            "unsupported",
        ),
        ("list_windows", json!({"target": "%1"}), "invalid_arguments"),
        (
            "list_sessions",
            json!({"fields": ["no_such_field"]}),
            "invalid_arguments",
        ),
        (
            "list_panes",
            json!({"filters": {"no_such_field": 1}}),
            "invalid_arguments",
        ),
        ("kill_pane", json!({"target": "@1"}), "invalid_arguments"),
    ];
    for (tool, args, kind) in bad {
        let error = call_err(&alice, tool, args).await;
        assert_eq!(error["kind"], kind, "{tool}: {error}");
    }
    assert_eq!(
        state.sandbox_pid("alice"),
        None,
        "bad input started the workspace"
    );
    call_ok(&alice, "list_sessions", json!({})).await;
    assert!(
        state.sandbox_pid("alice").is_some(),
        "a good call starts it"
    );
}

/// `muxgate workspace list|stop|delete` beside a running gateway: a stopped workspace starts
/// afresh on its tenant's next call; a deleted one loses its files too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_lists_stops_and_deletes_workspaces() {
    if !common::needs::sandbox("the_operator_lists_stops_and_deletes_workspaces") {
        return;
    }
    let state = WorkspaceState::new();
    let config_file = state.path().join("cli.toml");
    std::fs::write(
        &config_file,
        format!("[state]\ndir = '{}'\n", state.path().display()),
    )
    .unwrap();
    let cli = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_muxgate"))
            .arg("workspace")
            .arg("--config")
            .arg(&config_file)
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    assert_eq!(cli(&["list"]), "no workspaces\n");

    let gateway =
        spawn_gateway(state.config(muxgate::config::Config::from_toml_str("").unwrap())).await;
    let alice = client_with(&gateway, &mint_for(&gateway, "alice", None)).await;
    call_ok(&alice, "create_session", json!({"name": "work"})).await;
    std::fs::write(state.home("alice").join("notes.txt"), "mine").unwrap();
    let pid = state.sandbox_pid("alice").unwrap();
    let row = |name: &str, state: &str| {
        listed_row(&cli(&["list"]), name).is_some_and(|row| row.contains(state))
    };
    assert!(
        row("alice", &format!("running (pid {pid})")),
        "{}",
        cli(&["list"])
    );

    assert_eq!(cli(&["stop", "alice"]), "stopped alice\n");
    assert!(state.sandbox_pid("alice").is_none());
    assert!(row("alice", "stopped"), "{}", cli(&["list"]));
    assert_eq!(cli(&["stop", "alice"]), "alice was not running\n");
    let listed = call_ok(&alice, "list_sessions", json!({})).await;
    assert_eq!(
        names(&listed),
        Vec::<String>::new(),
        "a fresh sandbox: {listed}"
    );
    assert!(state.sandbox_pid("alice").is_some());
    assert!(state.home("alice").join("notes.txt").exists(), "files stay");

    assert_eq!(cli(&["delete", "alice"]), "deleted alice\n");
    assert!(!state.home("alice").exists());
    assert_eq!(cli(&["list"]), "no workspaces\n");
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_muxgate"))
        .args(["workspace", "--config"])
        .arg(&config_file)
        .args(["stop", "nobody"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("no workspace named \"nobody\""));
}

/// Workspace mode is switched on like every key, from the environment; where sandboxes cannot
/// run, `muxgate serve` refuses to start and says what is missing.
#[tokio::test]
async fn serve_refuses_workspace_mode_without_a_sandbox() {
    let state = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_muxgate"))
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("MUXGATE_WORKSPACES__ENABLED", "true")
        .env("MUXGATE_WORKSPACES__BWRAP", "/nonexistent/bwrap")
        .env("MUXGATE_STATE__DIR", state.path())
        .env_remove("TMUX")
        .stdin(std::process::Stdio::null())
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(30), output)
        .await
        .expect("serve exits")
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("workspaces cannot run on this host")
            && stderr.contains("apt-get install bubblewrap"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains("ready"));
}

/// Workspaces start wherever the gateway can run them. As root (workspaces run as uids of
/// their own) a state directory they cannot pass through to is refused at start, naming the
/// directory in the way; the directories the gateway makes itself (a missing
/// `XDG_STATE_HOME`) are passable, and there a workspace starts. As a normal user the locked
/// directory is no obstacle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspaces_start_wherever_the_state_directory_is() {
    if !common::needs::sandbox("workspaces_start_wherever_the_state_directory_is") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let base = tempfile::tempdir().unwrap();
    let locked = base.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
    // The gateway makes the missing `xdg` and `xdg/muxgate` itself.
    let xdg = locked.join("xdg");
    let config = base.path().join("muxgate.toml");
    std::fs::write(
        &config,
        format!(
            "[workspaces]\nenabled = true\n[workspaces.limits]\nhome_bytes = {}\n\
             [auth]\nsecret = '{}'\n",
            common::workspaces::HOME_BYTES,
            common::TEST_SECRET
        ),
    )
    .unwrap();
    let serve = |xdg: std::path::PathBuf| {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_muxgate"))
            .args(["serve", "--bind", "127.0.0.1:0", "--config"])
            .arg(&config)
            .env("XDG_STATE_HOME", xdg)
            .env_remove("TMUX")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output()
    };
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let output = tokio::time::timeout(std::time::Duration::from_secs(30), serve(xdg.clone()))
            .await
            .expect("serve exits")
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{stderr}");
        assert!(
            stderr.contains(&format!("cannot pass through {}", locked.display())),
            "{stderr}"
        );
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let log = base.path().join("serve.log");
    let gateway = common::serve::ServeProcess::start(
        &config,
        &log,
        &[("XDG_STATE_HOME", &xdg.display().to_string())],
    )
    .await;
    let workspaces = WorkspaceState::at(&xdg.join("muxgate"));
    let client =
        common::tools::client_at(&gateway.mcp_url, &common::tools::full_token("alice")).await;
    let created = call_ok(&client, "create_session", json!({"name": "one"})).await;
    assert!(
        created["session"]["active_pane_id"].is_string(),
        "{created}"
    );
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let mode = std::fs::metadata(&xdg).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o711, "a parent the gateway made must be passable");
    }
    drop(client);
    workspaces.stop_all().await;
}
