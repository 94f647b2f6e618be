//! tmux on other machines: the gateway drives test hosts of its own making (network and pid
//! namespaces, each with its own sshd; `common::ssh_host`) over one SSH connection per host.
//! An agent's workflow on two hosts at once, a host that presents the wrong key, a token
//! scoped to one host, and a host killed and booted again in the middle of a wait.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::calls::{Client, err, legacy, ok};
use common::serve::ServeProcess;
use common::ssh_host::{self, SshHost};
use common::{TestGateway, relaxed, spawn_gateway};
use muxgate::config::Config;
use serde_json::{Value, json};

/// A gateway with no local server, reaching the hosts whose `[hosts.*]` tables are given.
async fn gateway(tables: &[String]) -> TestGateway {
    let text = format!("[tmux.servers]\n{}", tables.concat());
    spawn_gateway(relaxed(
        Config::from_toml_str(&text).expect("valid test config"),
    ))
    .await
}

/// Runs `command` in `pane` of `server` with `run_command`; it must succeed.
async fn run_ok(client: &Client, server: &str, pane: &str, command: &str) {
    let ran = ok(
        client,
        "run_command",
        json!({"server": server, "target": pane, "command": command}),
    )
    .await;
    assert_eq!(ran["exit_status"], 0, "{ran}");
}

/// `list_commands` of `pane` on `server`.
async fn commands_of(client: &Client, server: &str, pane: &str) -> Value {
    ok(
        client,
        "list_commands",
        json!({"server": server, "target": pane}),
    )
    .await
}

/// Starts recording `pane` of `server`; the path of its cast file in `dir`.
async fn record(client: &Client, server: &str, pane: &str, dir: &Path) -> PathBuf {
    let recording = ok(
        client,
        "record_pane",
        json!({"server": server, "target": pane}),
    )
    .await;
    dir.join(recording["file"].as_str().expect("a cast file"))
}

/// The `[recordings]` table that keeps casts in `dir`.
fn recordings_table(dir: &Path) -> String {
    format!("[recordings]\nenabled = true\ndir = '{}'\n", dir.display())
}

/// Whether the cast at `path` holds `needle` within `within`.
async fn cast_holds(path: &Path, needle: &str, within: Duration) -> bool {
    common::wait_until(within, || {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .contains(needle)
    })
    .await
}

/// The command lines of a `list_commands` answer, oldest first.
fn command_lines(listed: &Value) -> Vec<&str> {
    listed["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .filter_map(|c| c["command"].as_str())
        .collect()
}

/// `list_servers`'s entry for `server`.
async fn listed(client: &Client, server: &str) -> Option<Value> {
    let servers = ok(client, "list_servers", json!({})).await;
    servers["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .find(|s| s["name"] == server)
        .cloned()
}

/// Waits until `server`'s host link reads `phase`; its `list_servers` entry then.
async fn link_reaches(client: &Client, server: &str, phase: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let entry = listed(client, server).await.expect("the server is listed");
        if entry["host"]["link"] == phase {
            return entry;
        }
        assert!(
            Instant::now() < deadline,
            "the link of {server} did not reach {phase} within {within:?}: {entry}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts a session on `server` (the host's login shell, in a `HOME` of the test's); its
/// first pane's id.
async fn new_session(client: &Client, server: &str, name: &str) -> String {
    ok(
        client,
        "create_session",
        json!({"server": server, "name": name}),
    )
    .await;
    let panes = ok(
        client,
        "list_panes",
        json!({"server": server, "target": name}),
    )
    .await;
    panes["panes"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no pane: {panes}"))
        .to_owned()
}

/// A 60 s `wait_for_text` on `pane` of `server` while `meanwhile` runs after a second: how long
/// the wait took and its result.
async fn wait_while(
    client: &Client,
    server: &str,
    pane: &str,
    meanwhile: impl FnOnce(),
) -> (Duration, rmcp::model::CallToolResult) {
    let waiting = async {
        let started = Instant::now();
        let result = common::calls::call(
            client,
            "wait_for_text",
            json!({"server": server, "target": pane, "patterns": ["never-printed"], "timeout": 60}),
        )
        .await;
        (started.elapsed(), result)
    };
    let later = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        meanwhile();
    };
    tokio::join!(waiting, later).0
}

/// `get_pane_state` of `pane` on `server` once `done` holds of it (within 20 s).
async fn state_until(
    client: &Client,
    server: &str,
    pane: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let state = ok(
            client,
            "get_pane_state",
            json!({"server": server, "target": pane}),
        )
        .await;
        if done(&state) {
            return state;
        }
        assert!(Instant::now() < deadline, "{server} {pane}: {state}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The first pane of the `work` session on `north`.
async fn north_pane(client: &Client) -> String {
    let panes = ok(
        client,
        "list_panes",
        json!({"server": "north", "target": "work"}),
    )
    .await;
    panes["panes"][0]["id"].as_str().expect("a pane").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_works_on_two_hosts_at_once() {
    if !ssh_host::available("the two-host workflow") {
        return;
    }
    let (north, south) = (SshHost::start(), SshHost::start());
    let gateway = gateway(&[
        north.config_table("north", &["default"]),
        south.config_table("south", &["default", "ci"]),
    ])
    .await;
    let client = legacy(&gateway, &gateway.token).await;
    for server in ["north", "south", "south/ci"] {
        link_reaches(&client, server, "up", Duration::from_secs(20)).await;
    }

    // The same steps on both hosts at once; each runs where its server is.
    let work = |server: &'static str, host: &SshHost| {
        let client = &client;
        let tmux_dir = host.dir().join("tmux").display().to_string();
        async move {
            let pane = new_session(client, server, "work").await;
            let ran = ok(
                client,
                "run_command",
                json!({"server": server, "target": pane, "command": "echo \"$TMUX_TMPDIR\"", "timeout": 20}),
            )
            .await;
            assert_eq!(ran["exit_status"], 0, "{server}: {ran}");
            assert_eq!(
                ran["output"].as_str().map(str::trim),
                Some(tmux_dir.as_str()),
                "{server}: the command ran on its own host: {ran}"
            );
            let sent = ok(
                client,
                "send_keys",
                json!({"server": server, "target": pane, "keys": [format!("echo done-on-{server}"), "Enter"]}),
            )
            .await;
            let waited = ok(
                client,
                "wait_for_text",
                json!({"server": server, "target": pane, "patterns": [format!("^done-on-{server}$")],
                       "regex": true, "since": sent["output_position"], "timeout": 20}),
            )
            .await;
            assert_eq!(waited["outcome"], "matched", "{server}: {waited}");
            let screen = ok(
                client,
                "capture_pane",
                json!({"server": server, "target": pane}),
            )
            .await;
            assert!(
                screen["text"]
                    .as_str()
                    .unwrap_or_default()
                    .contains(&format!("done-on-{server}")),
                "{server}: {screen}"
            );
        }
    };
    tokio::join!(work("north", &north), work("south", &south));

    // Each host's servers are its own: a second server on the same host, and the sessions
    // listed per server.
    new_session(&client, "south/ci", "build").await;
    let sessions = |server: &'static str| {
        let client = &client;
        async move {
            let listed = ok(client, "list_sessions", json!({"server": server})).await;
            let mut names: Vec<String> = listed["sessions"]
                .as_array()
                .expect("sessions")
                .iter()
                .map(|s| s["name"].as_str().unwrap_or_default().to_owned())
                .collect();
            names.sort();
            names
        }
    };
    assert_eq!(sessions("south/ci").await, ["build"]);
    assert_eq!(sessions("south").await, ["work"]);
    assert!(
        north.ssh("tmux ls").contains("work"),
        "the session is on the north host itself"
    );

    // The pane's program, as tmux names it on the host.
    let state = ok(
        &client,
        "get_pane_state",
        json!({"server": "north", "target": north_pane(&client).await}),
    )
    .await;
    assert_eq!(state["current_command"], "bash", "{state}");

    let entry = listed(&client, "south/ci").await.expect("listed");
    assert_eq!(entry["host"]["name"], "south", "{entry}");
    assert_eq!(entry["reachability"], "running", "{entry}");
    assert!(entry["host"]["rtt_ms"].as_f64().is_some(), "{entry}");
    assert!(entry["host"].get("last_error").is_none(), "{entry}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_presenting_another_key_is_refused() {
    if !ssh_host::available("the host-key check") {
        return;
    }
    let host = SshHost::start();
    let table = host.config_table("impostor", &["default"]).replace(
        &host.known_hosts().display().to_string(),
        &host.wrong_known_hosts().display().to_string(),
    );
    let gateway = gateway(&[table]).await;
    let client = legacy(&gateway, &gateway.token).await;
    let entry = link_reaches(&client, "impostor", "down", Duration::from_secs(20)).await;
    assert_eq!(
        entry["host"]["last_error"], "Host key verification failed.",
        "{entry}"
    );
    assert_eq!(entry["reachability"], "unreachable", "{entry}");

    // A call is refused at once, naming the host, with when to retry.
    let started = Instant::now();
    let refused = err(
        &client,
        "create_session",
        json!({"server": "impostor", "name": "x"}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(refused["kind"], "unavailable", "{refused}");
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("\"impostor\"") && message.contains("Host key verification failed"),
        "{refused}"
    );
    assert!(
        refused["suggestion"]
            .as_str()
            .unwrap_or_default()
            .contains("retry_after_ms: "),
        "{refused}"
    );
    // The gateway never logged in: no key of its was offered to the impostor.
    assert!(
        !host.sshd_log().contains("Accepted publickey"),
        "{}",
        host.sshd_log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_scoped_to_one_host_is_refused_on_the_other() {
    if !ssh_host::available("host-scoped tokens") {
        return;
    }
    let (build, prod) = (SshHost::start(), SshHost::start());
    let gateway = gateway(&[
        build.config_table("build-1", &["default", "ci"]),
        prod.config_table("prod", &["default"]),
    ])
    .await;
    let token = common::mint_for(
        &gateway.config,
        "builder",
        &["mux:read", "mux:write", "mux:admin"],
        Some(&["build-*"]),
    );
    let client = legacy(&gateway, &token).await;
    let servers = ok(&client, "list_servers", json!({})).await;
    let names: Vec<&str> = servers["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["build-1", "build-1/ci"], "{servers}");
    link_reaches(&client, "build-1/ci", "up", Duration::from_secs(20)).await;
    new_session(&client, "build-1/ci", "mine").await;
    let refused = err(
        &client,
        "create_session",
        json!({"server": "prod", "name": "theirs"}),
    )
    .await;
    assert_eq!(refused["kind"], "not_found", "{refused}");
    assert!(
        !prod.ssh("tmux ls 2>&1 || true").contains("theirs"),
        "nothing was started on the other host"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_mid_wait_ends_the_wait_and_comes_back() {
    if !ssh_host::available("a host killed mid-wait") {
        return;
    }
    let mut host = SshHost::start();
    let casts = tempfile::tempdir().expect("a recordings directory");
    let tables = [
        host.config_table("flaky", &["default"]),
        recordings_table(casts.path()),
    ];
    let gateway = gateway(&tables).await;
    let client = legacy(&gateway, &gateway.token).await;
    link_reaches(&client, "flaky", "up", Duration::from_secs(20)).await;
    let pane = new_session(&client, "flaky", "w").await;
    // Recorded, with a command in its ledger, before the host dies with its tmux server.
    let cast = record(&client, "flaky", &pane, casts.path()).await;
    run_ok(&client, "flaky", &pane, "echo old-server").await;

    let (elapsed, result) = wait_while(&client, "flaky", &pane, || host.kill()).await;
    // The wait ends with its reason once the link is lost (keepalives every second, three
    // missed), long before its own 60 s.
    assert!(
        elapsed < Duration::from_secs(15),
        "the wait took {elapsed:?}"
    );
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let error = common::tool_error(&result);
    assert_eq!(error["kind"], "unavailable", "{error}");

    // While it is down, calls are refused at once.
    link_reaches(&client, "flaky", "down", Duration::from_secs(15)).await;
    let started = Instant::now();
    let refused = err(&client, "list_sessions", json!({"server": "flaky"})).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(refused["kind"], "unavailable", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("\"flaky\""),
        "{refused}"
    );

    // Booted again: the link comes back by itself, and the host serves again (its tmux server
    // died with it).
    host.boot();
    link_reaches(&client, "flaky", "up", Duration::from_secs(40)).await;
    let again = new_session(&client, "flaky", "again").await;
    // The new server's first pane has the old one's id, and none of its past: another
    // server process, so nothing of the old stream is continued into it.
    assert_eq!(again, pane, "a new server numbers its panes from the start");
    let listed = commands_of(&client, "flaky", &again).await;
    assert!(command_lines(&listed).is_empty(), "{listed}");
    assert!(listed.get("unseen_since_ms").is_none(), "{listed}");
    // The recording ends instead of going on with another pane's output.
    assert!(
        cast_holds(&cast, "\"end: ", Duration::from_secs(30)).await,
        "the recording of the killed pane did not end"
    );
    let text = std::fs::read_to_string(&cast).expect("the cast");
    assert!(!text.contains("gap: the link"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_link_ends_its_waits_and_the_hosts_sessions_live_on() {
    if !ssh_host::available("a cut link") {
        return;
    }
    let host = SshHost::start();
    // The operator's webhook hears of the link's edges.
    let received: common::webhook::Received = std::sync::Arc::default();
    let hooks = common::webhook::receiver(received.clone()).await;
    let key = tempfile::NamedTempFile::new().expect("a key file");
    std::fs::write(key.path(), "ops-key-1\n").expect("the key");
    let notify = format!(
        "[notify.targets.ops]\nformat = 'json'\nurl = '{hooks}/ops'\nsecret_file = '{}'\n\
         events = ['host_down', 'host_up']\n",
        key.path().display()
    );
    let casts = tempfile::tempdir().expect("a recordings directory");
    let recordings = recordings_table(casts.path());
    let gateway = gateway(&[host.config_table("far", &["default"]), notify, recordings]).await;
    let told = || common::webhook::json_posts(&received, "ops");
    let client = legacy(&gateway, &gateway.token).await;
    link_reaches(&client, "far", "up", Duration::from_secs(20)).await;
    let pane = new_session(&client, "far", "kept").await;
    // The pane is recorded, and its ledger holds a command, before the cut.
    let cast = record(&client, "far", &pane, casts.path()).await;
    run_ok(&client, "far", &pane, "echo ledger-before").await;
    let before = ok(
        &client,
        "send_keys",
        json!({"server": "far", "target": pane, "keys": ["echo before-the-cut", "Enter"]}),
    )
    .await;

    // The network goes; the host's processes do not. The wait ends once the keepalives go
    // unanswered (three, a second apart), with the link's reason.
    let (elapsed, result) = wait_while(&client, "far", &pane, || host.set_link(false)).await;
    assert!(
        elapsed < Duration::from_secs(15),
        "the wait took {elapsed:?}"
    );
    let error = common::tool_error(&result);
    assert_eq!(error["kind"], "unavailable", "{error}");
    let down = link_reaches(&client, "far", "down", Duration::from_secs(15)).await;
    assert!(down["host"]["last_error"].is_string(), "{down}");
    // Printed while the gateway cannot see it (typed on the host itself).
    host.tmux(&["send-keys", "-t", &pane, "echo during-the-cut", "Enter"]);
    // Down past its grace: told once, with why.
    let deadline = Instant::now() + Duration::from_secs(20);
    while told().is_empty() {
        assert!(Instant::now() < deadline, "no host_down within 20 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let down_told = told();
    assert_eq!(down_told[0]["event"], "host_down", "{down_told:?}");
    assert_eq!(down_told[0]["host"], "far", "{down_told:?}");
    assert!(down_told[0]["reason"].is_string(), "{down_told:?}");

    // Back: the link returns by itself, the session is still there, and the pane's output
    // flows again.
    host.set_link(true);
    link_reaches(&client, "far", "up", Duration::from_secs(40)).await;
    let sessions = ok(&client, "list_sessions", json!({"server": "far"})).await;
    assert_eq!(sessions["sessions"][0]["name"], "kept", "{sessions}");
    // The recording goes on by itself, saying what went unseen.
    let went_on = cast_holds(
        &cast,
        "gap: the link to the pane's host was lost",
        Duration::from_secs(30),
    )
    .await;
    assert!(went_on, "the recording did not go on after the cut");
    // The ledger goes on too: the commands from before the cut are still listed, and since
    // when output went unseen is said.
    let listed = commands_of(&client, "far", &pane).await;
    assert_eq!(
        command_lines(&listed),
        ["echo ledger-before", "echo before-the-cut"],
        "{listed}"
    );
    let unseen = listed["unseen_since_ms"].as_u64().expect("unseen_since_ms");
    assert!(
        unseen
            >= listed["recording_since_ms"]
                .as_u64()
                .expect("recording_since_ms"),
        "{listed}"
    );
    let sent = ok(
        &client,
        "send_keys",
        json!({"server": "far", "target": pane, "keys": ["echo after-the-cut", "Enter"]}),
    )
    .await;
    let waited = ok(
        &client,
        "wait_for_text",
        json!({"server": "far", "target": pane, "patterns": ["^after-the-cut$"], "regex": true,
               "since": sent["output_position"], "timeout": 20}),
    )
    .await;
    assert_eq!(waited["outcome"], "matched", "{waited}");
    // From a position taken before the cut, what was printed while no stream ran is found,
    // not skipped.
    let resumed = ok(
        &client,
        "wait_for_text",
        json!({"server": "far", "target": pane, "patterns": ["^during-the-cut$"], "regex": true,
               "since": before["output_position"], "timeout": 5}),
    )
    .await;
    assert_eq!(resumed["matched_line"], "during-the-cut", "{resumed}");
    run_ok(&client, "far", &pane, "echo ledger-after").await;
    let listed = commands_of(&client, "far", &pane).await;
    // What ran while the link was down is missing, as `unseen_since_ms` warned. The first
    // command after the cut was typed at a prompt printed while unseen: its status is known,
    // its line is not.
    let commands = listed["commands"].as_array().expect("commands");
    assert_eq!(commands.len(), 4, "{listed}");
    assert!(commands[2].get("command").is_none(), "{listed}");
    assert_eq!(commands[2]["exit_status"], 0, "{listed}");
    assert_eq!(
        command_lines(&listed),
        [
            "echo ledger-before",
            "echo before-the-cut",
            "echo ledger-after"
        ],
        "{listed}"
    );
    // One recording: before the cut, the gap's marker, after it; stopped by request.
    ok(
        &client,
        "record_pane",
        json!({"server": "far", "target": pane, "record": false}),
    )
    .await;
    let ended = cast_holds(
        &cast,
        "end: the recording was stopped",
        Duration::from_secs(10),
    )
    .await;
    assert!(ended, "the recording did not end");
    let text = std::fs::read_to_string(&cast).expect("the cast");
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in {text}"))
    };
    assert!(at("before-the-cut") < at("gap: the link"), "{text}");
    assert!(at("gap: the link") < at("after-the-cut"), "{text}");
    // Its return, once; the failed attempts in between were no news.
    let deadline = Instant::now() + Duration::from_secs(10);
    while told().len() < 2 {
        assert!(Instant::now() < deadline, "no host_up: {:?}", told());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let kinds: Vec<Value> = told().iter().map(|e| e["event"].clone()).collect();
    assert_eq!(kinds, ["host_down", "host_up"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_each_host() {
    if !ssh_host::available("doctor's host checks") {
        return;
    }
    let host = SshHost::start();
    let good = host.config_table("good", &["default"]);
    let impostor = host.config_table("impostor", &["default"]).replace(
        &host.known_hosts().display().to_string(),
        &host.wrong_known_hosts().display().to_string(),
    );
    let bare = host
        .config_table("bare", &["default"])
        .replace(env!("CARGO_BIN_EXE_muxgate"), "/nowhere/muxgate");
    let config = Config::from_toml_str(&format!("[tmux.servers]\n{good}{impostor}{bare}"))
        .expect("valid config");
    let report = muxgate::doctor::run(&config).await;
    let line = |subject: &str| {
        report
            .checks
            .iter()
            .find(|c| c.subject == subject)
            .unwrap_or_else(|| panic!("no {subject} line: {}", report.render()))
            .clone()
    };
    let good = line("host good");
    assert_eq!(good.outcome, muxgate::doctor::Outcome::Ok, "{good:?}");
    assert!(good.detail.starts_with("tmux "), "{good:?}");
    assert_eq!(
        line("host good probe").outcome,
        muxgate::doctor::Outcome::Ok
    );
    // A host without muxgate works, but its panes' process state is unknown: a warning.
    let bare = line("host bare probe");
    assert_eq!(bare.outcome, muxgate::doctor::Outcome::Warn, "{bare:?}");
    assert!(bare.detail.contains("hosts.bare.muxgate"), "{bare:?}");
    let impostor = line("host impostor");
    assert_eq!(
        impostor.outcome,
        muxgate::doctor::Outcome::Fail,
        "{impostor:?}"
    );
    assert!(
        impostor.detail.contains("Host key verification failed"),
        "{impostor:?}"
    );
    assert!(
        !report
            .checks
            .iter()
            .any(|c| c.subject == "host impostor probe")
    );
}

#[tokio::test]
async fn a_host_whose_files_are_missing_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("a directory");
    let known = dir.path().join("known_hosts");
    std::fs::write(&known, "").expect("known_hosts");
    let table = |key: &str, known: &std::path::Path| {
        format!(
            "[tmux.servers]\n[hosts.build-1]\nssh = 'agent@192.0.2.1'\nidentity_file = '{}'\n\
             known_hosts = '{}'\n",
            dir.path().join(key).display(),
            known.display()
        )
    };
    let start = |text: String| async move {
        let config = relaxed(Config::from_toml_str(&text).expect("valid config"));
        muxgate::gateway::Gateway::build(
            std::sync::Arc::new(config),
            "http://127.0.0.1:1/mcp",
            tokio_util::sync::CancellationToken::new(),
        )
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
    };
    let no_key = start(table("missing_key", &known)).await;
    assert!(
        no_key.starts_with("hosts.build-1.identity_file: cannot read"),
        "{no_key}"
    );
    std::fs::write(dir.path().join("id"), "a key").expect("a key file");
    let no_known = start(table("id", &dir.path().join("nothing"))).await;
    assert!(
        no_known.starts_with("hosts.build-1.known_hosts: cannot read"),
        "{no_known}"
    );
    // A host named like a local server: refused when the configuration is read.
    let clash = Config::from_toml_str(
        "[tmux.servers.build-1]\nsocket_name = 'b'\n[hosts.build-1]\nssh = 'a@h'\n\
         identity_file = '/k'\nknown_hosts = '/kh'\n",
    )
    .expect_err("a clash");
    assert!(clash.to_string().contains("hosts.build-1"), "{clash}");
    assert!(
        clash.to_string().contains("already used by tmux.servers"),
        "{clash}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restricted_key_runs_tmux_for_the_gateway_and_nothing_else() {
    if !ssh_host::available("the restricted key") {
        return;
    }
    let host = SshHost::start();
    // authorized_keys as the README says: `restrict`, and `muxgate host-gate` forced.
    host.restrict_key(&format!("{} host-gate", env!("CARGO_BIN_EXE_muxgate")));
    let audit_dir = tempfile::tempdir().expect("a directory");
    let audit = audit_dir.path().join("audit.jsonl");
    let gateway = gateway(&[
        host.config_table("gated", &["default", "ci"]),
        format!("[audit]\npath = '{}'\n", audit.display()),
    ])
    .await;
    let client = legacy(&gateway, &gateway.token).await;
    link_reaches(&client, "gated/ci", "up", Duration::from_secs(20)).await;
    let pane = new_session(&client, "gated/ci", "work").await;
    let ran = ok(
        &client,
        "run_command",
        json!({"server": "gated/ci", "target": pane, "command": "echo through-the-gate", "timeout": 20}),
    )
    .await;
    assert_eq!(ran["output"], "through-the-gate\n", "{ran}");
    // The audit log names the host of every call to one of its servers.
    let started = common::wait_until(Duration::from_secs(5), || {
        std::fs::read_to_string(&audit).is_ok_and(|text| {
            text.lines().any(|line| {
                line.contains(r#""tool":"run_command""#)
                    && line.contains(r#""server":"gated/ci","host":"gated""#)
            })
        })
    })
    .await;
    assert!(
        started,
        "{}",
        std::fs::read_to_string(&audit).unwrap_or_default()
    );
    let report = muxgate::doctor::run(
        &Config::from_toml_str(&format!(
            "[tmux.servers]\n{}",
            host.config_table("gated", &["default"])
        ))
        .expect("valid config"),
    )
    .await;
    assert!(!report.failed(), "{}", report.render());

    // The same key, asked for anything else: a shell command, a tunnel, a login shell.
    let shell = host.try_ssh(&[], &["--", "id"]);
    assert!(!shell.status.success());
    let said = String::from_utf8_lossy(&shell.stderr);
    assert!(said.contains("refused: this key only runs tmux"), "{said}");
    let tunnel = host.try_ssh(&["-W", "127.0.0.1:22"], &[]);
    assert!(!tunnel.status.success());
    assert!(
        String::from_utf8_lossy(&tunnel.stderr).contains("prohibited"),
        "{}",
        String::from_utf8_lossy(&tunnel.stderr)
    );
    let login = host.try_ssh(&[], &[]);
    assert!(!login.status.success());
    assert!(String::from_utf8_lossy(&login.stderr).contains("no shell"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_on_a_hosts_channel_leaves_nothing_running_there() {
    if !ssh_host::available("remote channel waits") {
        return;
    }
    let host = SshHost::start();
    let gateway = gateway(&[host.config_table("chan", &["default"])]).await;
    let client = legacy(&gateway, &gateway.token).await;
    link_reaches(&client, "chan", "up", Duration::from_secs(20)).await;
    new_session(&client, "chan", "w").await;
    let channel = format!("leakcheck-{}", std::process::id());
    let waited = ok(
        &client,
        "wait_for_channel",
        json!({"server": "chan", "channel": channel, "timeout": 1}),
    )
    .await;
    assert_eq!(waited["timed_out"], true, "{waited}");
    // The host's `tmux wait-for` client left with the wait (the host shares this machine's
    // process table, so it is looked for here).
    let running = |needle: &str| {
        std::fs::read_dir("/proc")
            .expect("/proc")
            .flatten()
            .any(|entry| {
                let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                String::from_utf8_lossy(&cmdline).contains(needle)
            })
    };
    let gone = common::wait_until(Duration::from_secs(5), || !running(&channel)).await;
    assert!(
        gone,
        "a wait-for client of {channel} still runs on the host"
    );

    // And a signal still wakes a wait.
    let (waited, ()) = tokio::join!(
        ok(
            &client,
            "wait_for_channel",
            json!({"server": "chan", "channel": channel, "timeout": 20}),
        ),
        async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            ok(
                &client,
                "signal_channel",
                json!({"server": "chan", "channel": channel}),
            )
            .await;
        }
    );
    assert_eq!(waited["signalled"], true, "{waited}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_panes_process_state_is_read_on_its_host() {
    if !ssh_host::available("remote process state") {
        return;
    }
    let open = SshHost::start();
    let gated = SshHost::start();
    gated.restrict_key(&format!("{} host-gate", env!("CARGO_BIN_EXE_muxgate")));
    // The open host once more, as a host without muxgate.
    let bare = open
        .config_table("bare", &["bare"])
        .replace(env!("CARGO_BIN_EXE_muxgate"), "/nowhere/muxgate");
    let gateway = gateway(&[
        open.config_table("open", &["default"]),
        gated.config_table("gated", &["default"]),
        bare,
    ])
    .await;
    let client = legacy(&gateway, &gateway.token).await;
    for server in ["open", "gated"] {
        link_reaches(&client, server, "up", Duration::from_secs(20)).await;
        let pane = new_session(&client, server, "work").await;
        // The shell at its prompt waits for input (bash's readline polls the terminal).
        let prompt = state_until(&client, server, &pane, |s| s["waiting_for_input"] == true).await;
        assert_eq!(prompt["blocked_in"], "poll", "{server}: {prompt}");
        ok(
            &client,
            "send_keys",
            json!({"server": server, "target": pane, "keys": ["sleep 30", "Enter"]}),
        )
        .await;
        // Just after its exec the sleep still runs (it loads itself before it sleeps), for
        // longer on a loaded machine: what it blocks in is read once it has stopped running.
        let busy = state_until(&client, server, &pane, |s| {
            s["foreground_command_line"] == "sleep 30" && s["blocked_in"] != "running"
        })
        .await;
        assert_eq!(busy["waiting_for_input"], false, "{server}: {busy}");
        assert_eq!(busy["blocked_in"], "sleep", "{server}: {busy}");
        // A wait on that state ends when the shell is back at its prompt.
        let (waited, ()) = tokio::join!(
            ok(
                &client,
                "wait_for_state",
                json!({"server": server, "targets": [pane], "condition": "waiting_for_input", "timeout": 20}),
            ),
            async {
                tokio::time::sleep(Duration::from_millis(500)).await;
                ok(
                    &client,
                    "send_keys",
                    json!({"server": server, "target": pane, "keys": ["C-c"]}),
                )
                .await;
            }
        );
        assert_eq!(waited["outcome"], "reached", "{server}: {waited}");
        // The host's shell was started integrated (its scripts travel as arguments): the
        // command typed there is in the pane's ledger with how it ended.
        let commands = ok(
            &client,
            "list_commands",
            json!({"server": server, "target": pane}),
        )
        .await;
        assert_eq!(commands["shell_integration"], true, "{server}: {commands}");
        assert!(
            commands["commands"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["command"] == "sleep 30")),
            "{server}: {commands}"
        );

        // Secret entry judges the pane by what the host says: not at the shell's prompt (the
        // screen would show what is typed), but once a program reads a line without echo.
        let secret = json!({"server": server, "target": pane, "label": "password"});
        state_until(&client, server, &pane, |s| s["waiting_for_input"] == true).await;
        let at_prompt = err(&client, "request_secret_input", secret.clone()).await;
        assert_eq!(at_prompt["kind"], "conflict", "{server}: {at_prompt}");
        ok(
            &client,
            "send_keys",
            json!({"server": server, "target": pane, "keys": ["read -rs X", "Enter"]}),
        )
        .await;
        state_until(&client, server, &pane, |s| {
            s["blocked_in"] == "read_terminal"
        })
        .await;
        let asked = ok(&client, "request_secret_input", secret).await;
        assert_eq!(asked["status"], "pending", "{server}: {asked}");
    }

    // A host without muxgate tells nothing of its processes, and says nothing wrong.
    link_reaches(&client, "bare/bare", "up", Duration::from_secs(20)).await;
    let pane = new_session(&client, "bare/bare", "work").await;
    let state = ok(
        &client,
        "get_pane_state",
        json!({"server": "bare/bare", "target": pane}),
    )
    .await;
    assert_eq!(state["current_command"], "bash", "{state}");
    for field in [
        "foreground_command_line",
        "foreground_pid",
        "waiting_for_input",
    ] {
        assert!(
            state.get(field).is_none_or(Value::is_null),
            "{field}: {state}"
        );
    }
}

/// The `[hosts.laptop]` table of a host that dials in: the gateway knows it only by name
/// (its key listed under `laptop` in a `known_hosts` written to `dir`), never by an address.
fn dial_in_table(host: &SshHost, dir: &std::path::Path) -> String {
    let known = dir.join("known_hosts");
    let listed = std::fs::read_to_string(host.known_hosts()).expect("known_hosts");
    std::fs::write(&known, listed.replacen(host.address(), "laptop", 1)).expect("known_hosts");
    let table = host
        .config_table("laptop", &["default"])
        .replace(&format!("root@{}:22", host.address()), "root@laptop:22")
        .replace(
            &host.known_hosts().display().to_string(),
            &known.display().to_string(),
        );
    format!("{table}dial_in = true\n")
}

/// A `muxgate host connect` process, killed when dropped.
struct Connector(std::process::Child);

impl Connector {
    /// Dials `base` with the token in `token_file` (trusting `ca_file`, when given), carrying
    /// the link to `host`'s sshd.
    fn start(
        base: &str,
        token_file: &std::path::Path,
        ca_file: Option<&std::path::Path>,
        host: &SshHost,
        log: &std::path::Path,
    ) -> Self {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_muxgate"));
        command
            .args(["host", "connect", base, "--token-file"])
            .arg(token_file)
            .args(["--sshd", &format!("{}:22", host.address())]);
        if let Some(ca_file) = ca_file {
            command.arg("--ca-file").arg(ca_file);
        }
        let child = command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(log).expect("the connector's log"))
            .spawn()
            .expect("muxgate host connect");
        Self(child)
    }
}

impl Drop for Connector {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `muxgate host connect base` with `token` until it gives up; its exit and what it said.
async fn connect_refused(base: &str, token: &str) -> (bool, String) {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_muxgate"))
        .args(["host", "connect", base, "--sshd", "127.0.0.1:9"])
        .env("MUXGATE_HOST_TOKEN", token)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(30), output)
        .await
        .expect("a refused host gives up")
        .expect("muxgate host connect");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_dials_in_is_driven_through_its_own_connection() {
    if !ssh_host::available("hosts that dial in") {
        return;
    }
    let host = SshHost::start();
    let dir = tempfile::tempdir().expect("a directory");
    // The gateway knows the host only by name: it never connects to an address of it.
    let table = dial_in_table(&host, dir.path());
    let text = format!(
        "[tmux.servers]\n[auth]\nsecret = '{}'\n{table}",
        common::TEST_SECRET
    );
    let config_path = dir.path().join("muxgate.toml");
    std::fs::write(&config_path, &text).expect("the config");
    let config = Config::from_toml_str(&text).expect("valid config");
    let gateway = ServeProcess::start(&config_path, &dir.path().join("serve.log"), &[]).await;
    let agent_token =
        muxgate::gateway::mint_full_access(&config, "agent", Duration::from_secs(600))
            .expect("a token");
    let agent = common::calls::client_at(&gateway.mcp_url, &agent_token).await;

    // Until it dials in, its link is down, saying so, and calls to it are answered at once.
    let entry = link_reaches(&agent, "laptop", "down", Duration::from_secs(10)).await;
    assert!(
        entry["host"]["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("has not dialled in")),
        "{entry}"
    );
    let error = err(&agent, "list_sessions", json!({"server": "laptop"})).await;
    assert_eq!(error["kind"], "unavailable", "{error}");

    // Its token, from the gateway's CLI: good for dialling in as that host and nothing else.
    let minted = std::process::Command::new(env!("CARGO_BIN_EXE_muxgate"))
        .args(["host", "token", "laptop", "--config"])
        .arg(&config_path)
        .output()
        .expect("muxgate host token");
    assert!(
        minted.status.success(),
        "{}",
        String::from_utf8_lossy(&minted.stderr)
    );
    let host_token = String::from_utf8_lossy(&minted.stdout).trim().to_owned();
    let token_file = dir.path().join("host-token");
    std::fs::write(&token_file, &host_token).expect("the token file");
    let as_agent = reqwest::Client::new()
        .post(&gateway.mcp_url)
        .bearer_auth(&host_token)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .expect("a request");
    assert_eq!(as_agent.status(), 401);
    let challenge = as_agent.headers()["www-authenticate"]
        .to_str()
        .unwrap_or_default()
        .to_owned();
    assert!(challenge.contains("host's token"), "{challenge}");
    // An agent's token cannot dial in, nor can a host the configuration does not let.
    let (ok_exit, said) = connect_refused(&gateway.base, &agent_token).await;
    assert!(
        !ok_exit && said.contains("refused this host (401)"),
        "{said}"
    );
    let stranger = muxgate::auth::TokenMinter::from_config(&config.auth)
        .expect("a minter")
        .mint_host("stranger", Duration::from_secs(60))
        .expect("a token");
    let (ok_exit, said) = connect_refused(&gateway.base, &stranger).await;
    assert!(
        !ok_exit && said.contains("refused this host (403)"),
        "{said}"
    );

    // Dialled in: the agent works there as on any host.
    let connector_log = dir.path().join("connect.log");
    let connector = Connector::start(&gateway.base, &token_file, None, &host, &connector_log);
    link_reaches(&agent, "laptop", "up", Duration::from_secs(20)).await;
    let pane = new_session(&agent, "laptop", "work").await;
    let ran = ok(
        &agent,
        "run_command",
        json!({"server": "laptop", "target": pane, "command": "echo through-the-dial-in", "timeout": 20}),
    )
    .await;
    assert_eq!(ran["output"], "through-the-dial-in\n", "{ran}");

    // The host goes away: its link goes down; it dials in again and the session is still there.
    drop(connector);
    link_reaches(&agent, "laptop", "down", Duration::from_secs(20)).await;
    let _connector = Connector::start(&gateway.base, &token_file, None, &host, &connector_log);
    link_reaches(&agent, "laptop", "up", Duration::from_secs(30)).await;
    let sessions = ok(&agent, "list_sessions", json!({"server": "laptop"})).await;
    assert_eq!(sessions["sessions"][0]["name"], "work", "{sessions}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_dials_in_over_https() {
    if !ssh_host::available("hosts that dial in over https") {
        return;
    }
    let host = SshHost::start();
    let dir = tempfile::tempdir().expect("a directory");
    // A certificate of the gateway's own, which the host trusts by --ca-file.
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
            .expect("a certificate");
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).expect("the certificate");
    std::fs::write(&key, certified.signing_key.serialize_pem()).expect("the key");
    let table = dial_in_table(&host, dir.path());
    let text = format!(
        "[tmux.servers]\n[auth]\nsecret = '{}'\n[http.tls]\ncert_file = '{}'\nkey_file = '{}'\n{table}",
        common::TEST_SECRET,
        cert.display(),
        key.display(),
    );
    let config_path = dir.path().join("muxgate.toml");
    std::fs::write(&config_path, &text).expect("the config");
    let config = Config::from_toml_str(&text).expect("valid config");
    let gateway = ServeProcess::start(&config_path, &dir.path().join("serve.log"), &[]).await;
    assert!(gateway.base.starts_with("https://"), "{}", gateway.base);
    let token_file = dir.path().join("host-token");
    let token = muxgate::auth::TokenMinter::from_config(&config.auth)
        .expect("a minter")
        .mint_host("laptop", Duration::from_secs(600))
        .expect("a token");
    std::fs::write(&token_file, token).expect("the token file");
    let _connector = Connector::start(
        &gateway.base,
        &token_file,
        Some(&cert),
        &host,
        &dir.path().join("connect.log"),
    );
    // The link logs in over the host's wss connection: the gateway says so.
    let up = common::wait_until(Duration::from_secs(20), || {
        gateway.log().contains("host link up")
    })
    .await;
    assert!(
        up,
        "gateway:\n{}\nhost:\n{}",
        gateway.log(),
        std::fs::read_to_string(dir.path().join("connect.log")).unwrap_or_default()
    );
}
