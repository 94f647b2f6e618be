//! Workspaces on other hosts (`workspaces.hosts`): each tenant's workspace is placed on one
//! host at its first start, recorded, and stays there; on a host it is that host's sandbox,
//! started and jailed by the host's own muxgate over the gateway's link. And a hostile tenant
//! in a workspace on a host, attacking from inside its pane: the host's login (sshd, the gate,
//! the probe, the gateway's connection), the host's files, and the other tenant on that host
//! stay out of reach (the full escape suite runs against a workspace on a host too, in
//! `workspace_escape.rs`). And what a host cannot bound is said in the gateway's log.

mod common;

use std::path::Path;
use std::time::Duration;

use common::calls::{Client, call, legacy, ok};
use common::serve::ServeProcess;
use common::ssh_host::{self, SshHost};
use common::workspaces::WorkspaceState;
use common::{TestGateway, spawn_gateway};
use muxgate::config::Config;
use serde_json::{Value, json};

/// A gateway in workspace mode with its state in `state`, placing workspaces on `places`, and
/// reaching `host` as `south`.
async fn gateway(state: &WorkspaceState, host: &SshHost, places: &[&str]) -> TestGateway {
    let table = host.config_table("south", &["default"]);
    let places: Vec<String> = places.iter().map(|p| format!("'{p}'")).collect();
    let text = format!(
        "[workspaces]\nhosts = [{}]\n\n{table}workspaces_config = '{}'\n",
        places.join(", "),
        host.workspaces_config().display()
    );
    let config = Config::from_toml_str(&text).expect("valid test config");
    spawn_gateway(state.config(config)).await
}

/// A client of tenant `sub`.
async fn tenant(gateway: &TestGateway, sub: &str) -> Client {
    legacy(gateway, &gateway.mint(sub, &["mux:admin"])).await
}

/// Creates session `name` in the caller's workspace; its first pane.
async fn session(client: &Client, name: &str) -> String {
    let created = ok(client, "create_session", json!({"name": name})).await;
    created["session"]["active_pane_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no pane: {created}"))
        .to_owned()
}

/// Runs `command` in `pane` of the caller's workspace; its output.
async fn run(client: &Client, pane: &str, command: &str) -> String {
    let ran = ok(
        client,
        "run_command",
        json!({"target": pane, "command": command, "timeout": 30}),
    )
    .await;
    ran["output"].as_str().unwrap_or_default().to_owned()
}

/// The host a workspace's record in `state` names (`None`: the gateway's machine).
fn recorded_host(state: &Path, name: &str) -> Option<String> {
    let record = std::fs::read(state.join("workspaces").join(name).join("meta.json"))
        .unwrap_or_else(|e| panic!("no record of {name}: {e}"));
    let record: Value = serde_json::from_slice(&record).expect("a record");
    record["host"].as_str().map(str::to_owned)
}

fn available(what: &str) -> bool {
    ssh_host::available(what) && common::needs::sandbox(what)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_runs_on_its_host_and_stays_there() {
    if !available("workspaces on hosts") {
        return;
    }
    let host = SshHost::start();
    let state = WorkspaceState::new();
    let gateway = gateway(&state, &host, &["local", "south"]).await;
    let alice = tenant(&gateway, "alice").await;
    let bob = tenant(&gateway, "bob").await;
    let alice_pane = session(&alice, "a").await;
    let bob_pane = session(&bob, "b").await;

    // Alice went where none were (here), Bob then to the host.
    assert_eq!(recorded_host(state.path(), "alice"), None);
    assert_eq!(recorded_host(state.path(), "bob").as_deref(), Some("south"));
    assert!(
        host.workspaces_state()
            .join("workspaces/bob/meta.json")
            .exists(),
        "Bob's sandbox is the host's"
    );
    assert!(!host.workspaces_state().join("workspaces/alice").exists());
    // In a sandbox of the host's, as a workspace user of its own, with the home of one.
    let said = run(
        &bob,
        &bob_pane,
        "id -u; echo $HOME; echo bob-was-here > ~/mark",
    )
    .await;
    assert_eq!(said, "600000\n/workspace\n", "{said}");
    // (Its home is a sized file system mounted on the host, seen from a login there.)
    let mark = host.workspaces_state().join("workspaces/bob/home/mark");
    assert_eq!(
        host.ssh(&format!("cat {}", mark.display())),
        "bob-was-here\n"
    );
    assert_eq!(run(&alice, &alice_pane, "echo $HOME").await, "/workspace\n");

    // The operator sees where each runs.
    let gateway_config = state.path().join("list.toml");
    std::fs::write(
        &gateway_config,
        format!("[state]\ndir = '{}'\n", state.path().display()),
    )
    .expect("a config for the list");
    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_muxgate"))
        .arg("workspace")
        .arg("--config")
        .arg(&gateway_config)
        .arg("list")
        .output()
        .expect("muxgate workspace list");
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let listed = String::from_utf8_lossy(&listed.stdout);
    let line = |name: &str| {
        listed
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name}: {listed}"))
            .to_owned()
    };
    assert!(line("bob").contains("south"), "{listed}");
    assert!(line("alice").contains("local"), "{listed}");

    // A restarted gateway, listing the places the other way round: each stays where it is,
    // and Bob's session lived on in his sandbox on the host.
    drop((alice, bob));
    gateway
        .stop(Duration::from_secs(10))
        .await
        .expect("the gateway stops");
    let gateway = self::gateway(&state, &host, &["south", "local"]).await;
    let bob = tenant(&gateway, "bob").await;
    // Until the new gateway's link to the host is up, the workspace is unavailable, saying
    // when to retry.
    let sessions = loop {
        let listed = call(&bob, "list_sessions", json!({})).await;
        if listed.is_error != Some(true) {
            break listed.structured_content.expect("sessions");
        }
        let error = common::tool_error(&listed);
        assert_eq!(error["kind"], "unavailable", "{error}");
        assert!(
            error["suggestion"]
                .as_str()
                .is_some_and(|s| s.contains("retry_after_ms")),
            "{error}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(sessions["sessions"][0]["name"], "b", "{sessions}");
    assert_eq!(run(&bob, &bob_pane, "cat ~/mark").await, "bob-was-here\n");
    assert_eq!(recorded_host(state.path(), "bob").as_deref(), Some("south"));
    let carol = tenant(&gateway, "carol").await;
    session(&carol, "c").await;
    assert_eq!(
        recorded_host(state.path(), "carol").as_deref(),
        Some("south"),
        "a tie: the first place"
    );
}

/// Creates session `name` in the caller's workspace once its host can be reached; its first
/// pane.
async fn session_when_up(client: &Client, name: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let created = call(client, "create_session", json!({"name": name})).await;
        if created.is_error != Some(true) {
            let created = created.structured_content.expect("a session");
            return created["session"]["active_pane_id"]
                .as_str()
                .unwrap_or_else(|| panic!("no pane: {created}"))
                .to_owned();
        }
        let error = common::tool_error(&created);
        assert!(
            error["kind"] == "unavailable" && std::time::Instant::now() < deadline,
            "{error}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_cannot_escape_a_workspace_on_a_host() {
    if !available("the escape suite on a host") {
        return;
    }
    let host = SshHost::start();
    let host_config = host.workspaces_config();
    // The key of a workspace host as the README sets it up: the gate, taking workspace
    // requests (and the probe) only.
    host.restrict_key(&format!(
        "{} host-gate --workspaces-config {}",
        env!("CARGO_BIN_EXE_muxgate"),
        host_config.display()
    ));
    let state = WorkspaceState::new();
    let gateway = gateway(&state, &host, &["south"]).await;
    let carol = tenant(&gateway, "carol").await;
    let bob = tenant(&gateway, "bob").await;
    let carol_pane = session_when_up(&carol, "c").await;
    let bob_pane = session_when_up(&bob, "b").await;
    let carol_says = run(
        &carol,
        &carol_pane,
        "echo carol-file-secret > ~/secret; echo carol-screen-secret; id -u",
    )
    .await;
    assert_eq!(carol_says, "carol-screen-secret\n600000\n");

    // Processes: the sandbox's own only (its init is bwrap's); nothing of the host's login
    // (sshd, the gate, the probe, the gateway's clients) and nothing of Carol's.
    let seen = run(
        &bob,
        &bob_pane,
        "cat /proc/[0-9]*/comm | sort -u; awk '/^Uid:/ {print \"uid\", $2}' /proc/[0-9]*/status | sort -u",
    )
    .await;
    for name in ["sshd", "muxgate", "unshare"] {
        assert!(!seen.lines().any(|l| l.contains(name)), "{name}: {seen}");
    }
    let uids: Vec<&str> = seen.lines().filter(|l| l.starts_with("uid ")).collect();
    assert_eq!(uids, ["uid 600001"], "{seen}");

    // Nothing of the SSH login in the pane's environment or the server's.
    let env = run(
        &bob,
        &bob_pane,
        "env | grep -c '^SSH_'; tmux -S /run/muxgate/tmux.sock show-environment -g | grep -c '^SSH_'",
    )
    .await;
    assert_eq!(env, "0\n0\n", "{env}");

    // The host's files: its configuration, its state directory, Carol's home.
    let state_dir = host.workspaces_state();
    let files = run(
        &bob,
        &bob_pane,
        &format!(
            "cat {config} 2>&1; ls {state} 2>&1; cat {state}/workspaces/carol/home/secret 2>&1; ls /run/muxgate",
            config = host_config.display(),
            state = state_dir.display(),
        ),
    )
    .await;
    assert!(!files.contains("carol-file-secret"), "{files}");
    assert!(!files.contains("[state]"), "{files}");
    assert_eq!(
        files.matches("No such file or directory").count(),
        3,
        "{files}"
    );

    // The only socket anywhere in reach is its own server's: none of the host's (sshd's, the
    // gateway's channels, Carol's server).
    let sockets = run(&bob, &bob_pane, "find / -type s 2>/dev/null").await;
    assert_eq!(sockets, "/run/muxgate/tmux.sock\n", "{sockets}");

    // Every descriptor any process there holds leads to the sandbox's own things.
    let descriptors = run(
        &bob,
        &bob_pane,
        "for f in /proc/[0-9]*/fd/*; do readlink \"$f\"; done 2>/dev/null | sort -u",
    )
    .await;
    for line in descriptors.lines() {
        let own = [
            "/dev/",
            "socket:[",
            "pipe:[",
            "anon_inode:",
            "/workspace",
            "/tmp",
            "/run/muxgate",
            "/proc/",
        ]
        .iter()
        .any(|prefix| line.starts_with(prefix));
        assert!(
            own,
            "a descriptor leads out of the sandbox: {line}\n{descriptors}"
        );
    }

    // The network: neither the host's sshd nor the gateway.
    let port = gateway.addr.port();
    let net = run(
        &bob,
        &bob_pane,
        &format!(
            "(exec 3<>/dev/tcp/{addr}/22) 2>/dev/null && echo REACHED-SSHD; (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo REACHED-GATEWAY; echo done",
            addr = host.address(),
        ),
    )
    .await;
    assert_eq!(net, "done\n", "{net}");

    // The key itself runs no shell and no tmux of the host's user (root).
    for command in ["id", "tmux ls"] {
        let refused = host.try_ssh(&[], &["--", command]);
        assert!(!refused.status.success(), "{command}");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(
            said.contains("only runs muxgate's workspace requests"),
            "{command}: {said}"
        );
    }

    // Killing everything it may: only Bob's own processes end. Carol works on, and Bob's next
    // call gets a fresh sandbox from the host. The kill takes Bob's tmux server with it, at
    // times before the server has answered the keys that typed it: then the call is told its
    // server is gone, which is as true.
    let killed = call(
        &bob,
        "send_keys",
        json!({"target": bob_pane, "keys": ["kill -9 -1", "Enter"]}),
    )
    .await;
    if killed.is_error == Some(true) {
        let error = common::tool_error(&killed);
        assert_eq!(error["kind"], "unavailable", "{error}");
    }
    assert_eq!(
        run(&carol, &carol_pane, "echo carol-still-here").await,
        "carol-still-here\n"
    );
    let fresh = session_when_up(&bob, "again").await;
    assert_eq!(run(&bob, &fresh, "id -u").await, "600001\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_host_cannot_bound_is_said_in_the_gateways_log() {
    if !available("a host's warnings") {
        return;
    }
    let host = SshHost::start();
    // A host without memory cgroups: its muxgate bounds a workspace's memory per process
    // only, and says so as it starts one.
    let hidden = host.console(&["umount", "-l", "/sys/fs/cgroup"]);
    assert!(
        hidden.status.success(),
        "{}",
        String::from_utf8_lossy(&hidden.stderr)
    );
    let state = WorkspaceState::new();
    let text = format!(
        "[state]\ndir = '{state}'\n[workspaces]\nenabled = true\nhosts = ['south']\n\
         [auth]\nsecret = '{secret}'\n{table}workspaces_config = '{config}'\n",
        state = state.path().display(),
        secret = common::TEST_SECRET,
        table = host.config_table("south", &["default"]),
        config = host.workspaces_config().display(),
    );
    let config_path = state.path().join("muxgate.toml");
    std::fs::write(&config_path, &text).expect("the config");
    let config = Config::from_toml_str(&text).expect("valid config");
    let gateway = ServeProcess::start(&config_path, &state.path().join("serve.log"), &[]).await;
    let token = muxgate::gateway::mint_full_access(&config, "dora", Duration::from_secs(600))
        .expect("a token");
    let dora = common::calls::client_at(&gateway.mcp_url, &token).await;
    session_when_up(&dora, "d").await;
    let log = gateway.log();
    let warned = log
        .lines()
        .find(|line| line.contains("the host warned as it started a workspace"))
        .unwrap_or_else(|| panic!("no warning of the host's relayed:\n{log}"));
    for part in [
        "host=\"south\"",
        "workspace=dora",
        "bounded per process only",
    ] {
        assert!(warned.contains(part), "{part}: {warned}");
    }
}
