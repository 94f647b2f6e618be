//! The audit log of a real gateway against a real tmux server:
//! - a call leaves a start record (redacted arguments, a call id) and an end record naming it;
//! - a `muxgate serve` killed (SIGKILL) during a long `wait_for_text` leaves that call's start
//!   record, and the restarted gateway continues the chain;
//! - with `audit.fail_closed`, a call whose start record cannot be written (`/dev/full`) is
//!   refused before it runs, while a gateway without it keeps serving;
//! - a string sent in a boolean or number field is not echoed into the log;
//! - `muxgate audit verify` (the real binary) passes the log, and names an edited line, a cut
//!   end (with the head file), a missing and a wrong key.

mod common;

use std::path::Path;
use std::time::Duration;

use common::serve::ServeProcess;
use common::tmux::TestTmux;
use common::tools::{call, call_err, call_ok, client, wait_for_screen};
use common::{RawMcp, config_with_server, spawn_gateway, wait_until};
use muxgate::audit::{AuditKey, Head, verify};
use serde_json::{Value, json};

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("every audit line is JSON"))
        .collect()
}

/// The end record of the call `start` began.
fn end_of<'a>(records: &'a [Value], start: &Value) -> Option<&'a Value> {
    records
        .iter()
        .find(|r| r["kind"] == "end" && r["call"] == start["call"])
}

/// `muxgate audit verify` with `args`; the state directory (key, head file) is `state`.
fn verify_cli(args: &[&std::ffi::OsStr], state: &Path) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_muxgate"))
        .args(["audit", "verify"])
        .args(args)
        .env_remove("MUXGATE_CONFIG")
        .env("XDG_STATE_HOME", state)
        .output()
        .expect("run muxgate audit verify");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_leaves_a_start_and_an_end_record() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let state = dir.path().join("state");
    let mut config = config_with_server("work", &tmux.socket, false);
    config.audit.path = Some(log.clone());
    config.state.dir = Some(state.clone());
    let gateway = spawn_gateway(config).await;
    let client = client(&gateway).await;
    let pane = tmux.pane_id("main").to_string();

    call_ok(
        &client,
        "send_keys",
        json!({"target": pane, "keys": "echo AUDIT-TYPED-SECRET", "literal": true, "enter": false}),
    )
    .await;
    drop(client);
    gateway.stop(Duration::from_secs(10)).await.unwrap();

    let records = records(&log);
    let start = records
        .iter()
        .find(|r| r["kind"] == "start" && r["tool"] == "send_keys")
        .expect("a start record");
    assert_eq!(start["sub"], "test");
    assert!(start["mcp_session"].is_string(), "{start}");
    assert_eq!(start["targets"], json!([pane]));
    assert_eq!(start["args"]["target"], pane.as_str());
    assert_eq!(start["args"]["literal"], true);
    assert_eq!(start["args"]["enter"], false);
    assert_eq!(start["args"]["keys"]["len"], 23);
    assert_eq!(start["args"]["keys"]["mac"].as_str().unwrap().len(), 12);
    let end = end_of(&records, start).expect("its end record");
    assert_eq!(end["outcome"], "ok");
    assert!(end["duration_ms"].is_u64(), "{end}");
    assert_eq!(end["error_kind"], Value::Null);
    assert!(
        start["seq"].as_u64() < end["seq"].as_u64(),
        "the start comes first"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("AUDIT-TYPED-SECRET"));
    assert_eq!(records.last().unwrap()["reason"], "close");

    let key = AuditKey::load(&state.join("audit.key")).unwrap();
    let head = Head::load(&state.join("audit.head"), &key).unwrap();
    let report = verify(&log, &key, head.as_ref().map(muxgate::audit::Head::anchor)).unwrap();
    assert!(report.is_intact(), "{report}");
    assert_eq!(report.anchored_seq, Some(report.last_seq));
}

async fn raw_client(gateway: &ServeProcess, config: &Path) -> RawMcp {
    let loaded = muxgate::config::Config::load(Some(config), std::iter::empty()).unwrap();
    let token =
        muxgate::gateway::mint_full_access(&loaded.config, "killer", Duration::from_secs(600))
            .unwrap();
    let mut mcp = RawMcp::new(&gateway.mcp_url);
    mcp.bearer = Some(token);
    mcp.initialize().await;
    mcp
}

/// The record of a call's intent is on disk before the call ends: a gateway killed mid-call
/// leaves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_killed_mid_call_leaves_the_start_record() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let config = common::serve::write_config(dir.path(), "work", &tmux.socket, "");
    let log = dir.path().join("audit.jsonl");
    let pane = tmux.pane_id("main").to_string();
    let mut gateway = ServeProcess::start(&config, &dir.path().join("serve.log"), &[]).await;
    let mcp = raw_client(&gateway, &config).await;

    let wait = tokio::spawn(async move {
        mcp.request(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "wait_for_text", "arguments": {
                "server": "work", "target": pane, "patterns": ["NEVER-PRINTED"], "timeout": 60
            }}
        }))
        .await
    });
    let started = |records: &[Value]| {
        records
            .iter()
            .find(|r| r["kind"] == "start" && r["tool"] == "wait_for_text")
            .cloned()
    };
    assert!(
        wait_until(Duration::from_secs(10), || started(&records(&log))
            .is_some())
        .await,
        "the start record is written while the call runs; log:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert!(!wait.is_finished(), "the wait is still running");
    gateway.signal(libc::SIGKILL);
    let status = gateway.wait(Duration::from_secs(10)).await;
    assert!(!status.success());
    wait.abort();

    let after_kill = records(&log);
    let start = started(&after_kill).expect("the start record survives the kill");
    assert!(start["args"]["patterns"]["mac"].is_string(), "{start}");
    assert_eq!(start["args"]["timeout"], 60);
    assert!(
        end_of(&after_kill, &start).is_none(),
        "the call never ended"
    );
    assert!(after_kill.iter().all(|r| r["reason"] != "close"));
    let state = dir.path().join("state");
    let verify_args = ["--config".as_ref(), config.as_os_str(), log.as_os_str()];
    let (ok, said) = verify_cli(&verify_args, &state);
    assert!(ok, "{said}");
    assert!(said.contains("no checkpoint"), "{said}");

    // The gateway restarts on the same log and continues its chain.
    let mut again = ServeProcess::start(&config, &dir.path().join("serve2.log"), &[]).await;
    let mcp = raw_client(&again, &config).await;
    let listed = mcp
        .request(&json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "list_sessions", "arguments": {"server": "work"}}
        }))
        .await;
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    again.signal(libc::SIGTERM);
    assert!(again.wait(Duration::from_secs(15)).await.success());
    let (ok, said) = verify_cli(&verify_args, &state);
    assert!(ok, "{said}");
    assert!(
        said.contains("ends with the checkpoint written when it was closed"),
        "{said}"
    );
    assert!(records(&log).len() > after_kill.len());
}

/// With `fail_closed`, nothing runs unrecorded; without it, a broken audit log does not stop
/// the gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_closed_refuses_calls_it_cannot_record() {
    let tmux = TestTmux::start();
    let pane = tmux.pane_id("main").to_string();
    let gateway_on_full_disk = |fail_closed: bool| {
        let mut config = config_with_server("work", &tmux.socket, false);
        config.audit.path = Some("/dev/full".into());
        config.audit.fail_closed = fail_closed;
        config
    };
    let closed = spawn_gateway(gateway_on_full_disk(true)).await;
    let open = spawn_gateway(gateway_on_full_disk(false)).await;
    let (closed_client, open_client) = (client(&closed).await, client(&open).await);

    let refused = call_err(
        &closed_client,
        "send_keys",
        json!({"target": pane, "keys": "echo REFUSED-$((40+2))", "literal": true}),
    )
    .await;
    assert_eq!(refused["kind"], "unavailable", "{refused}");
    let message = refused["message"].as_str().unwrap();
    assert!(message.contains("audit log cannot be written"), "{message}");
    assert!(message.contains("fail_closed"), "{message}");
    let refused = call_err(&closed_client, "list_sessions", json!({})).await;
    assert_eq!(refused["kind"], "unavailable", "{refused}");

    // The other gateway serves, on the same disk; what it types shows, the refused call's
    // text (sent before) never does.
    call_ok(
        &open_client,
        "send_keys",
        json!({"target": pane, "keys": "echo SERVED-$((40+2))", "literal": true}),
    )
    .await;
    wait_for_screen(&tmux, &pane, "SERVED-42").await;
    let listed = call_ok(&open_client, "list_sessions", json!({})).await;
    assert!(listed.to_string().contains("main"), "{listed}");
    let screen = common::tools::screen(&tmux, &pane);
    assert!(!screen.contains("REFUSED"), "{screen}");
}

/// Redaction goes by what the tool says a field is: a password sent where a boolean or a
/// number belongs is recorded by its shape only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_string_in_a_boolean_field_is_not_echoed() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let mut config = config_with_server("work", &tmux.socket, false);
    config.audit.path = Some(log.clone());
    let gateway = spawn_gateway(config).await;
    let client = client(&gateway).await;
    let pane = tmux.pane_id("main").to_string();

    let result = call(
        &client,
        "send_keys",
        json!({"target": pane, "keys": "x", "literal": "PASSWORD-IN-A-BOOLEAN", "enter": false}),
    )
    .await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let result = call(
        &client,
        "capture_pane",
        json!({"target": pane, "max_lines": "PASSWORD-IN-A-NUMBER"}),
    )
    .await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    drop(client);
    gateway.stop(Duration::from_secs(10)).await.unwrap();

    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("PASSWORD-IN-A"), "{text}");
    let records = records(&log);
    let send = records
        .iter()
        .find(|r| r["kind"] == "start" && r["tool"] == "send_keys")
        .expect("the send_keys start record");
    assert_eq!(
        send["args"]["literal"],
        json!({"shape": "string", "len": 21}),
        "{send}"
    );
    assert_eq!(send["args"]["enter"], false, "a real boolean is kept");
    assert_eq!(send["args"]["target"], pane.as_str());
    let capture = records
        .iter()
        .find(|r| r["kind"] == "start" && r["tool"] == "capture_pane")
        .expect("the capture_pane start record");
    assert_eq!(
        capture["args"]["max_lines"],
        json!({"shape": "string", "len": 20})
    );
    for start in [send, capture] {
        let end = end_of(&records, start).expect("an end record");
        assert_eq!(end["outcome"], "error");
        assert_eq!(end["error_kind"], "invalid_arguments");
    }
}

/// `muxgate audit verify` through the real binary: a good log passes; an edited line, a cut
/// end, a missing key and a wrong key fail with a message naming them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_verify_names_edited_lines_and_cut_ends() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let state = dir.path().join("state");
    let mut config = config_with_server("work", &tmux.socket, false);
    config.audit.path = Some(log.clone());
    config.state.dir = Some(state.clone());
    let gateway = spawn_gateway(config).await;
    let client = client(&gateway).await;
    for _ in 0..3 {
        call_ok(&client, "list_sessions", json!({})).await;
    }
    drop(client);
    gateway.stop(Duration::from_secs(10)).await.unwrap();
    let config_file = dir.path().join("muxgate.toml");
    std::fs::write(
        &config_file,
        format!(
            "[tmux.servers.work]\nsocket_name = '{}'\n[audit]\npath = '{}'\n[state]\ndir = '{}'\n",
            tmux.socket,
            log.display(),
            state.display()
        ),
    )
    .unwrap();
    let with_config = |file: &Path| -> Vec<std::ffi::OsString> {
        vec!["--config".into(), config_file.clone().into(), file.into()]
    };
    let run = |args: Vec<std::ffi::OsString>| {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        verify_cli(&args, &state)
    };
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let write = |name: &str, lines: &[String]| {
        let path = dir.path().join(name);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    };

    let (ok, said) = run(with_config(&log));
    assert!(ok, "{said}");
    assert!(said.starts_with("ok: "), "{said}");
    assert!(said.contains("the head file anchors"), "{said}");

    // An edited line is named by its number.
    let mut edited = lines.clone();
    assert!(edited[2].contains(r#""sub":"test""#), "{}", edited[2]);
    edited[2] = edited[2].replace(r#""sub":"test""#, r#""sub":"nobody""#);
    let (ok, said) = run(with_config(&write("edited.jsonl", &edited)));
    assert!(!ok, "{said}");
    assert!(said.contains("line 3 does not match the chain"), "{said}");

    // The last lines cut: a valid shorter chain, which the head file shows.
    let cut = write("cut.jsonl", &lines[..lines.len() - 2]);
    let (ok, said) = run(with_config(&cut));
    assert!(!ok, "{said}");
    assert!(said.contains("records were cut off the end"), "{said}");
    // Without the head file the cut cannot be seen, and the command says so.
    let key_only = vec![
        "--key".into(),
        state.join("audit.key").into_os_string(),
        "--config".into(),
        dir.path().join("none.toml").into_os_string(),
        cut.clone().into_os_string(),
    ];
    std::fs::write(
        dir.path().join("none.toml"),
        format!(
            "[tmux.servers.work]\nsocket_name = 'x'\n[state]\ndir = '{}'\n",
            dir.path().join("empty").display()
        ),
    )
    .unwrap();
    let (ok, said) = run(key_only);
    assert!(ok, "{said}");
    assert!(
        said.contains("records cut off the end cannot be detected"),
        "{said}"
    );

    // No key, a wrong key.
    let missing = vec![
        "--key".into(),
        dir.path().join("no.key").into_os_string(),
        log.clone().into_os_string(),
    ];
    let (ok, said) = run([missing, vec!["--config".into(), config_file.clone().into()]].concat());
    assert!(!ok, "{said}");
    assert!(
        said.contains("cannot verify the chain without the key"),
        "{said}"
    );
    let wrong = dir.path().join("wrong.key");
    std::fs::write(&wrong, "ab".repeat(32)).unwrap();
    let (ok, said) = run(vec![
        "--key".into(),
        wrong.into_os_string(),
        "--config".into(),
        dir.path().join("none.toml").into_os_string(),
        log.into_os_string(),
    ]);
    assert!(!ok, "{said}");
    assert!(said.contains("no line verifies with this key"), "{said}");
}
