//! SIGTERM on a real `muxgate serve` process while calls are running.
//!
//! A call is kept in flight by stopping the tmux server (SIGSTOP) under it. Then:
//! - the listener stops accepting at once;
//! - the in-flight call finishes (its tmux server resumes) and its answer reaches the client;
//! - the session's long-lived SSE stream is closed;
//! - the process exits 0 within the grace period, the audit log is complete and its hash chain
//!   verifies, and no muxgate control client is left on the tmux server;
//! - the JSON log has one line per request with sub, tool and duration, and no token.
//!
//! A call that outlives the grace period is cut off and the process still exits in time, and a
//! running wait is answered at once with an error saying the gateway is shutting down.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::serve::ServeProcess;
use common::tmux::{StoppedServer, TestTmux};
use common::{RawMcp, TEST_SECRET, wait_until_async};
use serde_json::{Value, json};

fn write_config(dir: &Path, tmux: &TestTmux, grace_secs: u64) -> std::path::PathBuf {
    let path = dir.join("muxgate.toml");
    std::fs::write(
        &path,
        format!(
            "[http]\nshutdown_grace_secs = {grace_secs}\n\
             [tmux.servers.work]\nsocket_name = '{}'\n\
             [engine]\ncommand_timeout_ms = 30000\n\
             [auth]\nsecret = '{TEST_SECRET}'\n\
             [audit]\npath = '{}'\n\
             [log]\nformat = 'json'\n",
            tmux.socket,
            dir.join("audit.jsonl").display()
        ),
    )
    .unwrap();
    path
}

async fn client(gateway: &ServeProcess, config: &Path) -> (RawMcp, String) {
    let loaded = muxgate::config::Config::load(Some(config), std::iter::empty()).unwrap();
    let token = muxgate::gateway::mint_full_access(
        &loaded.config,
        "shutdown-test",
        Duration::from_secs(600),
    )
    .unwrap();
    let mut mcp = RawMcp::new(&gateway.mcp_url);
    mcp.bearer = Some(token.clone());
    mcp.initialize().await;
    (mcp, token)
}

fn list_sessions(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "list_sessions", "arguments": {"server": "work"}}
    })
}

/// The tmux commands the gateway has written to `work`'s command connection (`/metrics`).
async fn commands_sent(gateway: &ServeProcess) -> f64 {
    common::probe::metric(
        &gateway.base,
        "muxgate_tmux_commands_total{server=\"work\"}",
    )
    .await
}

/// Until the gateway has written a command to the stopped tmux server after `before` were: a
/// call that sent it cannot end before the server resumes.
async fn until_sent_after(gateway: &ServeProcess, before: f64) {
    assert!(
        wait_until_async(Duration::from_secs(30), || async {
            commands_sent(gateway).await > before
        })
        .await,
        "the call never reached tmux"
    );
}

/// A second handle on the same session (RawMcp is not `Clone`).
fn same_session(mcp: &RawMcp) -> RawMcp {
    let mut other = RawMcp::new(&mcp.url);
    other.bearer = mcp.bearer.clone();
    other.session_id = mcp.session_id.clone();
    other.protocol_version = mcp.protocol_version.clone();
    other
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_in_flight_calls_finish_then_flushes_and_detaches() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &tmux, 10);
    let mut gateway = ServeProcess::start(&config, &dir.path().join("serve.log"), &[]).await;
    let (mcp, token) = client(&gateway, &config).await;
    let first = mcp.request(&list_sessions(1)).await;
    assert_eq!(first["result"]["isError"], false, "{first}");
    assert_eq!(
        tmux.muxgate_clients().len(),
        1,
        "the command connection is attached"
    );

    // The session's standalone SSE stream: it must be closed by the shutdown.
    let stream = mcp
        .http
        .get(&mcp.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", mcp.session_id.clone().unwrap())
        .header(
            "mcp-protocol-version",
            mcp.protocol_version.clone().unwrap(),
        )
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), reqwest::StatusCode::OK);
    let stream_ended = tokio::spawn(async move {
        let mut stream = stream;
        while let Ok(Some(_)) = stream.chunk().await {}
    });

    // A call in flight: its tmux server is stopped under it.
    let before = commands_sent(&gateway).await;
    let stopped = StoppedServer::new(&tmux);
    let in_flight = {
        let mcp = same_session(&mcp);
        tokio::spawn(async move { mcp.request(&list_sessions(2)).await })
    };
    until_sent_after(&gateway, before).await;
    assert!(!in_flight.is_finished());

    let addr = gateway.base.trim_start_matches("http://").to_owned();
    assert!(
        tokio::net::TcpStream::connect(&addr).await.is_ok(),
        "the listener accepts before the shutdown"
    );
    let sigterm_at = Instant::now();
    gateway.signal(libc::SIGTERM);
    assert!(
        wait_until_async(Duration::from_secs(5), || async {
            tokio::net::TcpStream::connect(&addr).await.is_err()
        })
        .await,
        "the listener stops accepting once shutdown begins"
    );
    assert!(!in_flight.is_finished(), "the call is still running");
    assert!(
        !stream_ended.is_finished(),
        "streams stay open while a call runs"
    );

    drop(stopped);
    let answer = tokio::time::timeout(Duration::from_secs(10), in_flight)
        .await
        .expect("the in-flight call is answered")
        .unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    tokio::time::timeout(Duration::from_secs(5), stream_ended)
        .await
        .expect("the SSE stream is closed")
        .unwrap();

    let status = gateway.wait(Duration::from_secs(15)).await;
    let took = sigterm_at.elapsed();
    assert!(status.success(), "{status}; log:\n{}", gateway.log());
    assert!(took < Duration::from_secs(10), "took {took:?}");

    // Audit: both calls recorded, chain intact.
    let audit = dir.path().join("audit.jsonl");
    let records: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let started: Vec<&Value> = records
        .iter()
        .filter(|r| r["kind"] == "start" && r["tool"] == "list_sessions")
        .collect();
    assert_eq!(started.len(), 2, "both calls are in the audit log");
    for start in started {
        assert!(
            records
                .iter()
                .any(|r| r["kind"] == "end" && r["call"] == start["call"] && r["outcome"] == "ok"),
            "{start} ended"
        );
    }
    assert_eq!(records.last().unwrap()["reason"], "close");
    // Its key and head file are in the state directory `ServeProcess` gave it.
    let verify = std::process::Command::new(env!("CARGO_BIN_EXE_muxgate"))
        .args(["audit", "verify", "--config"])
        .arg(&config)
        .arg(&audit)
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .env_remove("MUXGATE_CONFIG")
        .output()
        .unwrap();
    assert!(verify.status.success(), "{verify:?}");
    let said = String::from_utf8_lossy(&verify.stdout);
    assert!(said.contains("the head file anchors"), "{said}");

    // No control client left behind.
    assert!(
        tmux.muxgate_clients().is_empty(),
        "{:?}",
        tmux.muxgate_clients()
    );

    // JSON logs: one line per request with sub, tool and duration; no secrets.
    let log = gateway.log();
    assert!(!log.contains(&token), "the token is never logged");
    assert!(!log.contains(TEST_SECRET));
    let requests: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("every log line is JSON"))
        .filter(|line| line["target"] == "muxgate::request")
        .collect();
    let calls: Vec<&Value> = requests
        .iter()
        .filter(|r| r["fields"]["tool"] == "list_sessions")
        .collect();
    assert_eq!(calls.len(), 2, "{requests:#?}");
    for call in calls {
        assert_eq!(call["fields"]["sub"], "shutdown-test");
        assert_eq!(call["fields"]["method"], "tools/call");
        assert!(call["fields"]["duration_ms"].as_f64().is_some(), "{call}");
        assert_eq!(
            call["fields"]["mcp_session"],
            mcp.session_id.clone().unwrap()
        );
    }
    assert!(
        requests
            .iter()
            .any(|r| r["fields"]["method"] == "initialize"),
        "{requests:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_outlives_the_grace_period_is_cut_off_in_time() {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &tmux, 2);
    let mut gateway = ServeProcess::start(&config, &dir.path().join("serve.log"), &[]).await;
    let (mcp, _) = client(&gateway, &config).await;
    mcp.request(&list_sessions(1)).await;

    let before = commands_sent(&gateway).await;
    let _stopped = StoppedServer::new(&tmux);
    let stuck = {
        let mcp = same_session(&mcp);
        tokio::spawn(async move { mcp.post(&list_sessions(2)).send().await })
    };
    until_sent_after(&gateway, before).await;
    let sigterm_at = Instant::now();
    gateway.signal(libc::SIGTERM);
    let status = gateway.wait(Duration::from_secs(20)).await;
    let took = sigterm_at.elapsed();
    assert!(status.success(), "{status}; log:\n{}", gateway.log());
    // Grace (2 s), closing streams (≤ 2 s), detaching from a stopped server (≤ 5 s).
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(
        took >= Duration::from_secs(2),
        "the grace period was given: {took:?}"
    );
    assert!(
        gateway.log().contains("cutting them off"),
        "{}",
        gateway.log()
    );
    stuck.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_a_running_wait_with_a_clear_result() {
    let tmux = TestTmux::start();
    let pane = tmux.pane_id("main").to_string();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &tmux, 10);
    let mut gateway = ServeProcess::start(&config, &dir.path().join("serve.log"), &[]).await;
    let (mcp, _) = client(&gateway, &config).await;

    // A wait on a quiet pane that would last 60 s.
    let waiting = {
        let mcp = same_session(&mcp);
        tokio::spawn(async move {
            mcp.request(&json!({
                "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "wait_for_text", "arguments": {
                    "server": "work", "target": pane, "patterns": ["never-printed"], "timeout": 60
                }}
            }))
            .await
        })
    };
    assert!(
        wait_until_async(Duration::from_secs(30), || async {
            common::probe::metric(&gateway.base, "muxgate_waits_active").await == 1.0
        })
        .await,
        "the wait never started"
    );
    assert!(!waiting.is_finished(), "the wait is running");

    let sigterm_at = Instant::now();
    gateway.signal(libc::SIGTERM);
    let answer = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the wait is answered at shutdown")
        .unwrap();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("shutting down"), "{text}");
    let status = gateway.wait(Duration::from_secs(15)).await;
    assert!(status.success(), "{status}; log:\n{}", gateway.log());
    assert!(
        sigterm_at.elapsed() < Duration::from_secs(10),
        "a cancelled wait does not hold the shutdown for the grace period"
    );
}
