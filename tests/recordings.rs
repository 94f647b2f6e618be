//! Recordings end to end: a real tmux server, the official rmcp client as the agent, the
//! `.cast` files read back as JSON line by line, the audit log, and `muxgate recordings`.

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::tmux::TestTmux;
use common::tools::{call, call_err, call_ok, client_with, wait_for_screen};
use common::{config_with_server, spawn_gateway, wait_until};
use muxgate::config::Config;
use serde_json::{Value, json};

const RULES: &str = r#"
[recordings]
enabled = true
[[recordings.rules]]
name = "ci-builds"
clients = ["ci-*"]
sessions = ["build-*"]
"#;

fn config(socket: &str, dir: &Path, audit: Option<&Path>) -> Config {
    let mut config = config_with_server("work", socket, false);
    let table: toml::Table = toml::from_str(RULES).unwrap();
    config.recordings = table["recordings"].clone().try_into().unwrap();
    config.recordings.dir = Some(dir.to_owned());
    config.audit.path = audit.map(Path::to_owned);
    config
}

/// A cast read independently of the gateway's own reader: the header, then every event line
/// as `[seconds, code, text]` with times that never go back.
#[derive(Debug)]
struct CastFile {
    header: Value,
    events: Vec<(f64, String, String)>,
}

impl CastFile {
    fn read(path: &Path) -> Self {
        let text = std::fs::read_to_string(path).unwrap();
        let mut lines = text.lines();
        let header: Value = serde_json::from_str(lines.next().expect("a header line")).unwrap();
        assert_eq!(header["version"], 2, "{header}");
        assert!(header["width"].as_u64().unwrap() > 0, "{header}");
        assert!(header["height"].as_u64().unwrap() > 0, "{header}");
        assert!(
            header["timestamp"].as_u64().unwrap() > 1_700_000_000,
            "{header}"
        );
        let mut events = Vec::new();
        let mut last = 0.0;
        for line in lines {
            let event: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}: {line:?}: {e}", path.display()));
            let fields = event.as_array().expect("an event is an array");
            assert_eq!(fields.len(), 3, "{line}");
            let secs = fields[0].as_f64().expect("a time");
            assert!(secs >= last, "time went back in {}: {line}", path.display());
            last = secs;
            events.push((
                secs,
                fields[1].as_str().unwrap().to_owned(),
                fields[2].as_str().unwrap().to_owned(),
            ));
        }
        Self { header, events }
    }

    fn output(&self) -> String {
        self.events
            .iter()
            .filter(|(_, code, _)| code == "o")
            .map(|(_, _, text)| text.as_str())
            .collect()
    }
}

/// The recordings in `dir`, by name.
fn casts(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "cast"));
    files.sort();
    files
}

fn pane_files(dir: &Path, pane: &str) -> Vec<PathBuf> {
    let marker = format!("-p{}-", pane.trim_start_matches('%'));
    casts(dir)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(&marker))
        .collect()
}

/// Waits until the recordings of `pane` hold `needle` in their output.
async fn recorded(dir: &Path, pane: &str, needle: &str) -> bool {
    wait_until(Duration::from_secs(10), || {
        pane_files(dir, pane).iter().any(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .contains(needle)
        })
    })
    .await
}

fn audit_records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn type_keys(pane: &str, keys: &str) -> Value {
    json!({"target": pane, "keys": keys, "literal": true, "enter": true})
}

/// A client a rule names, acting on a pane of a session the rule names: the pane's output is
/// in a valid v2 cast (0600) from that call on, and the audit log says which file and second
/// for that call and for a later call of another client on the same pane. The same client in
/// a session no rule names, and another client, start nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_records_the_pane_a_matching_client_acts_on_and_the_audit_names_it() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let recordings = dir.path().join("recordings");
    let log = dir.path().join("audit.jsonl");
    let gateway = spawn_gateway(config(&tmux.socket, &recordings, Some(&log))).await;
    let build = tmux.session_running("build-1", "sh");
    let scratch = tmux.session_running("scratch", "sh");
    let other_build = tmux.session_running("build-2", "sh");
    let ci = client_with(
        &gateway,
        &gateway.mint("ci-bot", &["mux:read", "mux:write"]),
    )
    .await;
    let alice = client_with(&gateway, &gateway.mint("alice", &["mux:read", "mux:write"])).await;

    call_ok(
        &ci,
        "send_keys",
        type_keys(&build, "echo RECORDED-$((6*7))"),
    )
    .await;
    assert!(
        recorded(&recordings, &build, "RECORDED-42").await,
        "the call's own output is recorded: {:?}",
        casts(&recordings)
    );
    let files = pane_files(&recordings, &build);
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    let cast = CastFile::read(file);
    assert_eq!(
        cast.header["width"], 100,
        "the pane's size: {:?}",
        cast.header
    );
    assert_eq!(cast.header["height"], 30);
    assert!(cast.output().contains("RECORDED-42"), "{cast:?}");
    let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    call_ok(&ci, "send_keys", type_keys(&scratch, "echo SCRATCH")).await;
    call_ok(&alice, "send_keys", type_keys(&other_build, "echo ALICE")).await;
    call_ok(
        &alice,
        "send_keys",
        type_keys(&build, "echo ALICE-ON-BUILD"),
    )
    .await;
    assert!(recorded(&recordings, &build, "ALICE-ON-BUILD").await);
    assert!(
        pane_files(&recordings, &scratch).is_empty(),
        "no rule names session scratch"
    );
    assert!(
        pane_files(&recordings, &other_build).is_empty(),
        "no rule names client alice"
    );

    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let found = wait_until(Duration::from_secs(10), || {
        audit_records(&log)
            .iter()
            .filter(|r| r["kind"] == "recording")
            .count()
            >= 2
    })
    .await;
    let records = audit_records(&log);
    assert!(found, "two recording records: {records:#?}");
    let starts: Vec<&Value> = records
        .iter()
        .filter(|r| r["kind"] == "start" && r["tool"] == "send_keys")
        .collect();
    let noted: Vec<&Value> = records
        .iter()
        .filter(|r| r["kind"] == "recording")
        .collect();
    assert_eq!(noted.len(), 2, "{noted:#?}");
    // The first and the last send_keys (ci-bot's and alice's on the build pane) are named.
    for (record, start) in noted.iter().zip([starts[0], starts[3]]) {
        assert_eq!(record["call"], start["call"], "{record} for {start}");
        assert_eq!(record["server"], "work");
        assert_eq!(record["pane"], build.as_str());
        assert_eq!(record["file"], name.as_str());
        assert!(record["at_secs"].as_f64().is_some(), "{record}");
    }
    let first = noted[0]["at_secs"].as_f64().unwrap();
    let second = noted[1]["at_secs"].as_f64().unwrap();
    assert!(first < 1.0 && second >= first, "{first} then {second}");
    // The second call's output comes after the second it names.
    let alice_at = cast_events_with(&CastFile::read(file), "ALICE-ON-BUILD");
    assert!(alice_at >= second - 0.01, "{alice_at} vs {second}");
}

/// The time of the first output event holding `needle`.
fn cast_events_with(cast: &CastFile, needle: &str) -> f64 {
    cast.events
        .iter()
        .find(|(_, code, text)| code == "o" && text.contains(needle))
        .map(|(secs, _, _)| *secs)
        .unwrap_or_else(|| panic!("{needle:?} not in {cast:?}"))
}

/// A flood of output: every file stays within max_file_bytes and is a valid cast of its own,
/// the directory is cut back to max_total_bytes (plus the file being written), and the end of
/// the output is kept, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recordings_rotate_and_the_oldest_files_go_beyond_the_cap() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&tmux.socket, dir.path(), None);
    config.recordings.max_file_bytes = 8192;
    config.recordings.max_total_bytes = 32768;
    let gateway = spawn_gateway(config).await;
    let build = tmux.session_running("build-flood", "sh");
    let ci = client_with(
        &gateway,
        &gateway.mint("ci-bot", &["mux:read", "mux:write"]),
    )
    .await;

    call_ok(
        &ci,
        "send_keys",
        type_keys(&build, "seq 1 30000; echo FLOOD-$((1+1))"),
    )
    .await;
    assert!(
        recorded(dir.path(), &build, "FLOOD-2").await,
        "{:?}",
        casts(dir.path())
    );
    let files = pane_files(dir.path(), &build);
    assert!(files.len() >= 3, "rotated: {files:?}");
    let sizes: Vec<u64> = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .collect();
    assert!(sizes.iter().all(|&s| s <= 8192), "{sizes:?}");
    let total: u64 = sizes.iter().sum();
    assert!(total <= 32768 + 8192, "cap: {sizes:?}");
    // 30000 numbers are ~170 KB of output: most files were deleted, the oldest first.
    let all = files
        .iter()
        .map(|f| CastFile::read(f).output())
        .collect::<String>();
    assert!(!all.contains("\n1\r\n2\r\n"), "the oldest output is gone");
    // The end, in order, whichever files it fell into (the prompt after it may begin another).
    assert!(
        all.contains("29999\r\n30000\r\nFLOOD-2"),
        "the end is kept in order"
    );
}

fn muxgate(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_muxgate"))
        .args(args)
        .env_remove("MUXGATE_CONFIG")
        .output()
        .expect("run muxgate")
}

/// On request: record_pane starts a recording of a pane no rule names, stopping it ends the
/// file with a marker, and `muxgate recordings export` cuts out a time range as a valid cast
/// with times counted from its start. A rule's recording cannot be stopped by the agent, and a
/// gateway without recordings says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_pane_on_request_and_export_a_range() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let gateway = spawn_gateway(config(&tmux.socket, dir.path(), None)).await;
    let pane = tmux.session_running("notes", "sh");
    let agent = client_with(&gateway, &gateway.mint("alice", &["mux:read", "mux:write"])).await;

    let started = call_ok(&agent, "record_pane", json!({"target": "notes"})).await;
    assert_eq!(started["recording"], true, "{started}");
    assert_eq!(started["pane"], pane.as_str());
    let name = started["file"].as_str().unwrap().to_owned();
    call_ok(
        &agent,
        "send_keys",
        type_keys(&pane, "echo BEFORE-$((1+1))"),
    )
    .await;
    assert!(recorded(dir.path(), &pane, "BEFORE-2").await);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    call_ok(
        &agent,
        "send_keys",
        type_keys(&pane, "echo WANTED-$((2+2))"),
    )
    .await;
    assert!(recorded(dir.path(), &pane, "WANTED-4").await);
    let again = call_ok(&agent, "record_pane", json!({"target": pane})).await;
    assert_eq!(
        again["file"],
        name.as_str(),
        "already recorded: the same file"
    );
    let stopped = call_ok(
        &agent,
        "record_pane",
        json!({"target": pane, "record": false}),
    )
    .await;
    assert_eq!(stopped["recording"], false);
    assert_eq!(stopped["file"], name.as_str());
    let path = dir.path().join(&name);
    let ended = wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(&path)
            .unwrap_or_default()
            .contains("end: the recording was stopped")
    })
    .await;
    let cast = CastFile::read(&path);
    assert!(ended, "{cast:?}");
    let last = cast.events.last().unwrap();
    assert_eq!(last.1, "m", "a marker ends it: {last:?}");

    let wanted = cast_events_with(&cast, "WANTED-4");
    let (from, to) = (wanted - 0.5, wanted + 0.5);
    let listed = muxgate(&["recordings", "list", "--dir", dir.path().to_str().unwrap()]);
    assert!(listed.status.success(), "{listed:?}");
    assert!(String::from_utf8_lossy(&listed.stdout).contains(&name));
    let out = dir.path().join("cut.cast.out");
    let exported = muxgate(&[
        "recordings",
        "export",
        "--dir",
        dir.path().to_str().unwrap(),
        &name,
        "--from",
        &from.to_string(),
        "--to",
        &to.to_string(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(exported.status.success(), "{exported:?}");
    let cut = CastFile::read(&out);
    assert!(cut.output().contains("WANTED-4"), "{cut:?}");
    assert!(
        !cut.output().contains("BEFORE-2"),
        "outside the range: {cut:?}"
    );
    assert!(cut.events.iter().all(|(secs, _, _)| *secs < 2.0), "{cut:?}");
    let shift =
        cut.header["timestamp"].as_u64().unwrap() - cast.header["timestamp"].as_u64().unwrap();
    assert_eq!(
        shift,
        from.floor() as u64,
        "the header moved with the range"
    );
    let bad = muxgate(&[
        "recordings",
        "export",
        "--dir",
        dir.path().to_str().unwrap(),
        &name,
        "--from",
        "5",
        "--to",
        "1",
    ]);
    assert!(!bad.status.success());

    let ci = client_with(
        &gateway,
        &gateway.mint("ci-bot", &["mux:read", "mux:write"]),
    )
    .await;
    let build = tmux.session_running("build-9", "sh");
    call_ok(&ci, "send_keys", type_keys(&build, "true")).await;
    let refused = call_err(
        &ci,
        "record_pane",
        json!({"target": build, "record": false}),
    )
    .await;
    assert_eq!(refused["kind"], "forbidden", "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("ci-builds"),
        "{refused}"
    );

    let plain = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let client = client_with(&plain, &plain.token).await;
    let off = call(&client, "record_pane", json!({"target": "main"})).await;
    assert_eq!(off.is_error, Some(true));
    let error = common::tool_error(&off);
    assert_eq!(error["kind"], "unavailable", "{error}");
}

/// A pane recorded on request that a rule then wants becomes the rule's: the agent that asked
/// (or any other) can no longer stop it with `record_pane record: false`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_takes_over_a_recording_begun_on_request() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let gateway = spawn_gateway(config(&tmux.socket, dir.path(), None)).await;
    let build = tmux.session_running("build-3", "sh");
    let alice = client_with(&gateway, &gateway.mint("alice", &["mux:read", "mux:write"])).await;
    let ci = client_with(
        &gateway,
        &gateway.mint("ci-bot", &["mux:read", "mux:write"]),
    )
    .await;

    let started = call_ok(&alice, "record_pane", json!({"target": build})).await;
    assert_eq!(started["recording"], true, "{started}");
    call_ok(&ci, "send_keys", type_keys(&build, "echo RULED")).await;
    let refused = call_err(
        &alice,
        "record_pane",
        json!({"target": build, "record": false}),
    )
    .await;
    assert_eq!(refused["kind"], "forbidden", "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("ci-builds"),
        "{refused}"
    );
    assert!(recorded(dir.path(), &build, "RULED").await);
    assert_eq!(pane_files(dir.path(), &build).len(), 1, "one recording");
}

/// A batch cannot hide a pane a rule records behind repeated targets: repeats count once, and
/// a batch of more distinct targets than the gateway checks is refused, not run half recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_many_targets_is_recorded_or_refused() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let gateway = spawn_gateway(config(&tmux.socket, dir.path(), None)).await;
    let scratch = tmux.session_running("scratch", "sh");
    let build = tmux.session_running("build-4", "sh");
    let ci = client_with(
        &gateway,
        &gateway.mint("ci-bot", &["mux:read", "mux:write"]),
    )
    .await;

    let mut ops: Vec<Value> = (0..16).map(|_| type_keys(&scratch, "true")).collect();
    ops.push(type_keys(&build, "echo HIDDEN-$((3*3))"));
    call_ok(&ci, "send_keys_batch", json!({"operations": ops})).await;
    assert!(
        recorded(dir.path(), &build, "HIDDEN-9").await,
        "the pane after 16 repeats is recorded: {:?}",
        casts(dir.path())
    );

    let mut ops: Vec<Value> = (1..=16)
        .map(|n| type_keys(&format!("%{}", 1000 + n), "true"))
        .collect();
    ops.push(type_keys(&build, "echo TOO-MANY"));
    let refused = call_err(&ci, "send_keys_batch", json!({"operations": ops})).await;
    assert_eq!(refused["kind"], "invalid_arguments", "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("at most 16"),
        "{refused}"
    );
}

/// Recordings on request take at most half of `max_panes`; a call a rule records is refused
/// (`busy`) when its recording cannot start, never run unrecorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_call_is_refused_when_its_recording_cannot_start() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&tmux.socket, dir.path(), None);
    config.recordings.max_panes = 2;
    let gateway = spawn_gateway(config).await;
    let notes = tmux.session_running("notes", "sh");
    let more = tmux.session_running("more", "sh");
    let first = tmux.session_running("build-5", "sh");
    let second = tmux.session_running("build-6", "sh");
    let alice = client_with(&gateway, &gateway.mint("alice", &["mux:read", "mux:write"])).await;
    let ci = client_with(
        &gateway,
        &gateway.mint("ci-bot", &["mux:read", "mux:write"]),
    )
    .await;

    call_ok(&alice, "record_pane", json!({"target": notes})).await;
    let full = call_err(&alice, "record_pane", json!({"target": more})).await;
    assert_eq!(full["kind"], "busy", "{full}");
    assert!(
        full["message"].as_str().unwrap().contains("on request"),
        "{full}"
    );

    call_ok(&ci, "send_keys", type_keys(&first, "echo KEPT-SLOT")).await;
    assert!(recorded(dir.path(), &first, "KEPT-SLOT").await);
    let refused = call_err(&ci, "send_keys", type_keys(&second, "echo UNRECORDED")).await;
    assert_eq!(refused["kind"], "busy", "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("ci-builds"),
        "{refused}"
    );
    // A later call that no rule records runs in the same pane and shows: had the refused
    // call been typed, it would show by now too.
    call_ok(
        &alice,
        "send_keys",
        type_keys(&second, "echo LATER-$((3+4))"),
    )
    .await;
    wait_for_screen(&tmux, &second, "LATER-7").await;
    assert!(
        !tmux
            .ok(&["capture-pane", "-p", "-t", &second])
            .contains("UNRECORDED"),
        "the refused call did not run"
    );
}
