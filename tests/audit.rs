//! The audit log of a real gateway against a real tmux server:
//! - a call leaves a start record (redacted arguments, a call id) and an end record naming it;
//! - a `muxgate serve` killed (SIGKILL) during a long `wait_for_text` leaves that call's start
//!   record, and the restarted gateway continues the chain;
//! - with `audit.fail_closed`, a call whose start record cannot be written (`/dev/full`) is
//!   refused before it runs, while a gateway without it keeps serving;
//! - a string sent in a boolean or number field is not echoed into the log;
//! - `muxgate audit verify` (the real binary) passes the log, and names an edited line, a cut
//!   end (with the head file), a missing and a wrong key;
//! - on a real disk that fills up (a small tmpfs) and is freed again, no record is lost
//!   silently: with a large enough backlog every call's start and end are in the log, and with
//!   a small one `muxgate audit verify` reports exactly how many were lost, and fails;
//! - two gateways that share a state directory but write different logs both start and stop,
//!   again and again, each log anchored by its own head file;
//! - a gateway whose `audit.path` changed starts on the new log; with one `audit.head_file`
//!   for both, the new log begins with a `head_reset` record naming the old one;
//! - a log the gateway rotated verifies as one set through `muxgate audit verify` (the
//!   configured log, a directory, files in order), which names a missing, reordered or edited
//!   file; a log and head file of an earlier version verify as they are.

mod common;

use std::ffi::{OsStr, OsString};
use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::serve::ServeProcess;
use common::tmux::TestTmux;
use common::tools::{call, call_err, call_ok, client, wait_for_screen};
use common::{RawMcp, config_with_server, spawn_gateway, wait_until};
use muxgate::audit::files::default_head;
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
    // A tool's own error: its kind reaches the end record as data.
    call_err(&client, "capture_pane", json!({"target": "%9999"})).await;
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
    let missing = records
        .iter()
        .find(|r| r["kind"] == "start" && r["tool"] == "capture_pane")
        .expect("the capture_pane start record");
    let missing_end = end_of(&records, missing).expect("its end record");
    assert_eq!(missing_end["outcome"], "error", "{missing_end}");
    assert_eq!(missing_end["error_kind"], "not_found", "{missing_end}");
    assert!(
        start["seq"].as_u64() < end["seq"].as_u64(),
        "the start comes first"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("AUDIT-TYPED-SECRET"));
    assert_eq!(records.last().unwrap()["reason"], "close");

    let key = AuditKey::load(&state.join("audit.key")).unwrap();
    let head = Head::load(&default_head(&state, &log), &key).unwrap();
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

/// A small tmpfs on `dir`, mounted in a user and mount namespace of its own (so the test needs
/// no privilege, and runs as root the same way), kept by a holder process that is killed on
/// drop. Programs run inside it through [`SmallDisk::enter`]; the test reaches its files
/// through `/proc/<holder>/root`, which shows that namespace's view.
struct SmallDisk {
    holder: std::process::Child,
    dir: PathBuf,
}

impl SmallDisk {
    fn mount(dir: &Path, size: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let mut holder = std::process::Command::new("unshare")
            .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
            .arg(r#"mount -t tmpfs -o size="$1" tmpfs "$2" && echo mounted && exec sleep 600"#)
            .args([OsStr::new("sh"), OsStr::new(size), dir.as_os_str()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run unshare");
        // The shell either says so or exits (and the read ends).
        let mut said = String::new();
        let _ = std::io::BufReader::new(holder.stdout.take().expect("stdout")).read_line(&mut said);
        if said.trim() != "mounted" {
            let out = holder.wait_with_output().expect("wait for unshare");
            panic!(
                "cannot mount a tmpfs in a user namespace: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Self {
            holder,
            dir: dir.to_owned(),
        }
    }

    /// `path`, inside the mount, as the test reaches it.
    fn outside(&self, path: &Path) -> PathBuf {
        Path::new(&format!("/proc/{}/root", self.holder.id()))
            .join(path.strip_prefix("/").expect("an absolute path"))
    }

    /// The command that runs what follows it inside the namespace.
    fn enter(&self) -> Vec<OsString> {
        ["nsenter", "--target", &self.holder.id().to_string()]
            .into_iter()
            .chain(["--user", "--mount", "--preserve-credentials", "--"])
            .map(OsString::from)
            .collect()
    }

    /// Writes a filler file until the disk refuses even one more byte; returns its path.
    fn fill(&self) -> PathBuf {
        let path = self.outside(&self.dir.join("filler"));
        let mut file = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        for size in [chunk.len(), 4096, 1] {
            loop {
                match file.write(&chunk[..size]) {
                    Ok(n) => assert!(n > 0, "a zero-length write"),
                    Err(e) => {
                        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
                        break;
                    }
                }
            }
        }
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

/// One sample of the gateway's `/metrics`; 0 when absent.
fn sample(text: &str, name: &str) -> u64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .map_or(0, |value| {
            value.trim().parse::<f64>().expect("a number") as u64
        })
}

/// The audit log's counters: written, dropped, held in the backlog.
async fn audit_counters(gateway: &ServeProcess) -> (u64, u64, u64) {
    let text = reqwest::get(format!("{}/metrics", gateway.base))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("the metrics");
    (
        sample(&text, "muxgate_audit_records_written_total"),
        sample(&text, "muxgate_audit_records_dropped_total"),
        sample(&text, "muxgate_audit_backlog"),
    )
}

/// Polls the audit counters (at most 10 s) until `done` holds; panics with `what` otherwise.
async fn until_counters(
    gateway: &ServeProcess,
    what: &str,
    mut done: impl FnMut((u64, u64, u64)) -> bool,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let counters = audit_counters(gateway).await;
        if done(counters) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}; (written, dropped, backlog) = {counters:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Calls made before the disk fills, while it is full, and after it is freed.
const BEFORE: u64 = 5;
const WHILE_FULL: u64 = 100;
const AFTER: u64 = 20;

/// What a gateway whose audit log and state directory are on a disk that fills up did.
struct FullDiskRun {
    /// Its log's records.
    records: Vec<Value>,
    /// `muxgate_audit_records_dropped_total` before it stopped.
    dropped: u64,
    /// `muxgate audit verify`: success, and what it said.
    verified: (bool, String),
}

impl FullDiskRun {
    /// The start and end records of the `list_servers` calls.
    fn call_records(&self) -> (Vec<&Value>, Vec<&Value>) {
        let calls = |kind: &str| {
            self.records
                .iter()
                .filter(|r| r["kind"] == kind && (kind == "end" || r["tool"] == "list_servers"))
                .collect::<Vec<_>>()
        };
        (calls("start"), calls("end"))
    }
}

/// Runs a real `muxgate serve` with its audit log and state directory on a 1 MiB tmpfs and
/// `audit_extra` in `[audit]`: [`BEFORE`] calls, then the disk is filled, [`WHILE_FULL`] calls
/// (waiting until the gateway has accounted for every record they made: written, held or
/// dropped), the filler removed, [`AFTER`] calls, a clean stop (SIGTERM), and `muxgate audit
/// verify` on what is left. `None` where `unshare` or `nsenter` is missing.
async fn run_on_a_disk_that_fills(audit_extra: &str) -> Option<FullDiskRun> {
    let what = "the full-disk audit test";
    if !common::needs::program("unshare", "util-linux", what)
        || !common::needs::program("nsenter", "util-linux", what)
    {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = SmallDisk::mount(&dir.path().join("disk"), "1m");
    let log = dir.path().join("disk/audit.jsonl");
    let state = dir.path().join("disk/state");
    let config = dir.path().join("muxgate.toml");
    let many = "requests_per_second = 100000\nrequest_burst = 100000\n\
                tool_calls_per_second = 100000\ntool_call_burst = 100000\n";
    std::fs::write(
        &config,
        format!(
            "[tmux.servers.work]\nsocket_name = '{socket}'\nallow_absent = true\n\
             [auth]\nsecret = '{secret}'\n\
             [audit]\npath = '{log}'\ncheckpoint_interval_secs = 3600\n{audit_extra}\n\
             [state]\ndir = '{state}'\n[limits]\n{many}",
            socket = common::tmux::unique_socket_name(),
            secret = common::TEST_SECRET,
            log = log.display(),
            state = state.display(),
        ),
    )
    .unwrap();
    let enter = disk.enter();
    let enter: Vec<&OsStr> = enter.iter().map(OsString::as_os_str).collect();
    let serve_log = dir.path().join("serve.log");
    let mut gateway = ServeProcess::start_through(&enter, &config, &serve_log, &[]).await;
    let mcp = raw_client(&gateway, &config).await;
    let mut id = 0;
    let mut list_servers = async |n: u64| {
        for _ in 0..n {
            id += 1;
            let answer = mcp
                .request(&json!({
                    "jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "list_servers", "arguments": {}}
                }))
                .await;
            assert_eq!(answer["result"]["isError"], false, "{answer}");
        }
    };

    list_servers(BEFORE).await;
    until_counters(&gateway, "the first calls' records are written", |c| {
        c.0 == 2 * BEFORE
    })
    .await;
    let filler = disk.fill();
    list_servers(WHILE_FULL).await;
    until_counters(
        &gateway,
        "every record made while the disk was full is written, held or counted as dropped",
        |(written, dropped, backlog)| written - 2 * BEFORE + dropped + backlog == 2 * WHILE_FULL,
    )
    .await;
    std::fs::remove_file(filler).unwrap();
    list_servers(AFTER).await;
    let (_, dropped, _) = audit_counters(&gateway).await;
    gateway.signal(libc::SIGTERM);
    assert!(
        gateway.wait(Duration::from_secs(15)).await.success(),
        "{}",
        gateway.log()
    );

    let outside_state = disk.outside(&state);
    let verified = verify_cli(
        &[
            "--key".as_ref(),
            outside_state.join("audit.key").as_os_str(),
            "--head".as_ref(),
            disk.outside(&default_head(&state, &log)).as_os_str(),
            disk.outside(&log).as_os_str(),
        ],
        &outside_state,
    );
    Some(FullDiskRun {
        records: records(&disk.outside(&log)),
        dropped,
        verified,
    })
}

/// With a backlog larger than what the calls made while the disk was full, every call's start
/// and end record is in the log once the disk is freed, in one verified chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_loses_no_record() {
    let Some(run) = run_on_a_disk_that_fills("").await else {
        return;
    };
    let (starts, ends) = run.call_records();
    let calls = BEFORE + WHILE_FULL + AFTER;
    assert_eq!(starts.len() as u64, calls, "every call's start record");
    for start in &starts {
        let ended = ends
            .iter()
            .filter(|end| end["call"] == start["call"])
            .count();
        assert_eq!(ended, 1, "one end record for {start}");
    }
    assert_eq!(ends.len() as u64, calls);
    assert_eq!(run.dropped, 0);
    assert!(run.records.iter().all(|r| r["kind"] != "dropped"));
    let (ok, said) = run.verified;
    assert!(ok, "{said}");
    assert!(said.starts_with("ok: "), "{said}");
    assert!(
        said.contains("ends with the checkpoint written when it was closed"),
        "{said}"
    );
}

/// With a backlog smaller than what the calls made while the disk was full, the records that
/// did not fit are lost, and the log says exactly how many: `muxgate audit verify` reports the
/// gap and fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_with_a_small_backlog_leaves_a_reported_gap() {
    let Some(run) = run_on_a_disk_that_fills("backlog_capacity = 50").await else {
        return;
    };
    let (starts, ends) = run.call_records();
    let made = 2 * (BEFORE + WHILE_FULL + AFTER);
    let lost = made - (starts.len() + ends.len()) as u64;
    assert!(lost >= 2 * WHILE_FULL - 50 - 20, "{lost} lost");
    assert_eq!(run.dropped, lost, "the metric counts every lost record");
    let gaps: Vec<&Value> = run
        .records
        .iter()
        .filter(|r| r["kind"] == "dropped")
        .collect();
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0]["count"], lost);
    assert_eq!(gaps[0]["reason"], "write_failed");
    let (ok, said) = run.verified;
    assert!(!ok, "a log with a gap fails verification: {said}");
    assert!(
        said.starts_with(&format!("INCOMPLETE: {lost} record(s) lost in 1 gap(s)")),
        "{said}"
    );
    let line = run
        .records
        .iter()
        .position(|r| r["kind"] == "dropped")
        .map(|i| i + 1)
        .unwrap();
    assert!(
        said.contains(&format!(
            "gap: line {line}: {lost} record(s) lost (write_failed: the disk refused writes"
        )),
        "{said}"
    );
}

/// Writes `dir/<name>.toml`: a gateway with an absent tmux server, the test secret, its audit
/// log at `log` with `audit_extra` in `[audit]`, and its state in `state`.
fn audit_config(dir: &Path, name: &str, log: &Path, state: &Path, audit_extra: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "[tmux.servers.work]\nsocket_name = '{socket}'\nallow_absent = true\n\
             [auth]\nsecret = '{secret}'\n\
             [audit]\npath = '{log}'\n{audit_extra}\n\
             [state]\ndir = '{state}'\n\
             [limits]\ntool_calls_per_second = 10000\ntool_call_burst = 10000\n\
             requests_per_second = 10000\nrequest_burst = 10000\n",
            socket = common::tmux::unique_socket_name(),
            secret = common::TEST_SECRET,
            log = log.display(),
            state = state.display(),
        ),
    )
    .unwrap();
    path
}

/// Starts `muxgate serve` with `config`, makes `calls` `list_servers` calls and stops it with
/// SIGTERM, which must end it cleanly.
async fn serve_and_call(config: &Path, serve_log: &Path, calls: u64) {
    let mut gateway = ServeProcess::start(config, serve_log, &[]).await;
    let mcp = raw_client(&gateway, config).await;
    for id in 1..=calls {
        let answer = mcp
            .request(&json!({
                "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "list_servers", "arguments": {}}
            }))
            .await;
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    gateway.signal(libc::SIGTERM);
    assert!(
        gateway.wait(Duration::from_secs(15)).await.success(),
        "{}",
        gateway.log()
    );
}

fn os(args: &[&Path]) -> Vec<OsString> {
    args.iter().map(|a| a.as_os_str().to_owned()).collect()
}

fn verify_with(config: &Path, files: &[&Path], state: &Path) -> (bool, String) {
    let mut args = os(&[Path::new("--config"), config]);
    args.extend(os(files));
    let args: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
    verify_cli(&args, state)
}

/// Two gateways that share a state directory but write different audit logs: each starts
/// (again), and each log verifies against its own head file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateways_sharing_a_state_directory_keep_their_own_head_files() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let logs = [dir.path().join("a.jsonl"), dir.path().join("b.jsonl")];
    let configs = [
        audit_config(dir.path(), "a", &logs[0], &state, ""),
        audit_config(dir.path(), "b", &logs[1], &state, ""),
    ];
    for (round, which) in [0, 1, 0, 1].into_iter().enumerate() {
        let serve_log = dir.path().join(format!("serve-{round}.log"));
        serve_and_call(&configs[which], &serve_log, 2).await;
    }
    for (config, log) in configs.iter().zip(&logs) {
        let (ok, said) = verify_with(config, &[log], &state);
        assert!(ok, "{said}");
        assert!(
            said.contains("the head file anchors the log up to record 10; 0 record(s)"),
            "{said}"
        );
    }
}

/// A log rotated by size verifies as one set: the configured log (no file given), its
/// directory, or its files in order; a set with a file missing, two files swapped or a line
/// edited in a rotated file does not, and the command names the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_log_verifies_as_a_set() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let log = logs.join("audit.jsonl");
    let state = dir.path().join("state");
    let config = audit_config(dir.path(), "muxgate", &log, &state, "rotate_bytes = 3000");
    let mut gateway = ServeProcess::start(&config, &dir.path().join("serve.log"), &[]).await;
    let mcp = raw_client(&gateway, &config).await;
    let mut id = 0;
    // Each round writes more than 3000 bytes; the writer rotates once it has written them.
    for round in 0..4 {
        for _ in 0..8 {
            id += 1;
            let answer = mcp
                .request(&json!({
                    "jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "list_servers", "arguments": {}}
                }))
                .await;
            assert_eq!(answer["result"]["isError"], false, "{answer}");
        }
        let rotated = wait_until(Duration::from_secs(10), || {
            muxgate::audit::files::rotated_files(&log).is_ok_and(|f| f.len() > round)
        })
        .await;
        assert!(rotated, "round {round} was not rotated:\n{}", gateway.log());
    }
    gateway.signal(libc::SIGTERM);
    assert!(gateway.wait(Duration::from_secs(15)).await.success());
    let files = muxgate::audit::files::log_files(&log).unwrap();
    assert!(files.len() >= 5, "{files:?}");
    let n = files.len();

    for given in [vec![], vec![logs.as_path()]] {
        let (ok, said) = verify_with(&config, &given, &state);
        assert!(ok, "{said}");
        assert!(said.starts_with("ok: "), "{said}");
        assert!(
            said.contains(&format!(" in {n} files, last seq ")),
            "{said}"
        );
        assert!(said.contains("the head file anchors the log"), "{said}");
    }
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let (ok, said) = verify_with(&config, &paths, &state);
    assert!(ok, "{said}");

    let missing: Vec<&Path> = [&paths[..1], &paths[2..]].concat();
    let (ok, said) = verify_with(&config, &missing, &state);
    assert!(!ok, "{said}");
    assert!(said.contains("a file of the log is missing"), "{said}");

    let mut swapped = paths.clone();
    swapped.swap(1, 2);
    let (ok, said) = verify_with(&config, &swapped, &state);
    assert!(!ok, "{said}");
    assert!(said.contains("the files are out of order"), "{said}");

    let name = |i: usize| files[i].file_name().unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(&files[1]).unwrap();
    assert!(text.contains(r#""sub":"killer""#), "{text}");
    std::fs::write(
        &files[1],
        text.replacen(r#""sub":"killer""#, r#""sub":"nobody""#, 1),
    )
    .unwrap();
    let (ok, said) = verify_with(&config, &[], &state);
    assert!(!ok, "{said}");
    assert!(
        said.starts_with(&format!("BROKEN: {}: line ", name(1))),
        "{said}"
    );
}

/// A log and head file as an earlier version wrote them (`tests/fixtures/audit-v1`; its head
/// file is `audit.head` in the state directory and names no log) verify as they are.
#[test]
fn a_log_of_an_earlier_version_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/audit-v1");
    let log = dir.path().join("audit.jsonl");
    std::fs::copy(fixture.join("audit.jsonl"), &log).unwrap();
    for name in ["audit.head", "audit.key"] {
        std::fs::copy(fixture.join(name), state.join(name)).unwrap();
    }
    let config = audit_config(dir.path(), "muxgate", &log, &state, "");
    let (ok, said) = verify_with(&config, &[&log], &state);
    assert!(ok, "{said}");
    assert!(
        said.starts_with("ok: 7 records verified, last seq 7"),
        "{said}"
    );
    assert!(
        said.contains("the head file anchors the log up to record 7"),
        "{said}"
    );
}

/// A gateway whose `audit.path` changed starts on the new log, whether the head file is the
/// default (each log has its own) or set in `audit.head_file` (it sealed the old log: the new
/// log begins with a `head_reset` record naming it); both logs verify against their head file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_audit_path_starts_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let logs = [
        dir.path().join("a.jsonl"),
        dir.path().join("b.jsonl"),
        dir.path().join("c.jsonl"),
    ];
    let configs = [
        audit_config(dir.path(), "a", &logs[0], &state, ""),
        audit_config(dir.path(), "b", &logs[1], &state, ""),
    ];
    serve_and_call(&configs[0], &dir.path().join("serve-a.log"), 1).await;
    serve_and_call(&configs[1], &dir.path().join("serve-b.log"), 1).await;
    assert_eq!(
        records(&logs[1])[0]["kind"],
        "start",
        "its own head file: nothing to say"
    );
    for (config, log) in configs.iter().zip(&logs) {
        let (ok, said) = verify_with(config, &[log], &state);
        assert!(ok, "{said}");
    }

    // One head_file for the old log and the new one.
    let head = dir.path().join("muxgate.head");
    let extra = format!("head_file = '{}'", head.display());
    let with_head = [
        audit_config(dir.path(), "a-head", &logs[0], &state, &extra),
        audit_config(dir.path(), "c-head", &logs[2], &state, &extra),
    ];
    serve_and_call(&with_head[0], &dir.path().join("serve-a2.log"), 1).await;
    let serve_log = dir.path().join("serve-c.log");
    serve_and_call(&with_head[1], &serve_log, 1).await;
    let first = &records(&logs[2])[0];
    assert_eq!(first["kind"], "head_reset", "{first}");
    assert_eq!(first["head_file"], head.display().to_string());
    assert_eq!(first["sealed_log"], logs[0].display().to_string());
    let said = std::fs::read_to_string(&serve_log).unwrap();
    assert!(said.contains("the head file seals another log"), "{said}");
    let (ok, said) = verify_with(&with_head[1], &[&logs[2]], &state);
    assert!(ok, "{said}");
    assert!(said.contains("the head file anchors the log"), "{said}");
}
