//! What a `muxgate serve` process writes to its log, and what it never writes: request data a
//! client sends (resource URIs, prompt names, argument strings, keystrokes, tokens) stays out
//! of stderr, with the shipped log level and with an operator's `MUXGATE_LOG=debug`. rmcp
//! logs failed requests with their error (which quotes the request) at warn and everything it
//! receives at info and below; it is kept to errors unless the filter names it.

mod common;

use std::path::Path;
use std::time::Duration;

use common::RawMcp;
use common::serve::ServeProcess;
use common::tmux::TestTmux;
use serde_json::{Value, json};

/// Requests that each carry `marker` somewhere a careless log line would copy it.
fn requests(marker: &str) -> Vec<Value> {
    let call = |id: u64, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
    };
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
               "params": {"uri": format!("tmux://main/{marker}")}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
               "params": {"uri": format!("{marker}://x")}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/get",
               "params": {"name": marker}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "prompts/get",
               "params": {"name": "run_and_wait", "arguments": {"command": marker}}}),
        call(
            5,
            "send_keys",
            json!({"server": "main", "target": "main", "keys": [marker], "literal": true}),
        ),
        call(
            6,
            "send_keys",
            json!({"server": "main", "target": "main", "keys": ["x"], "literal": marker}),
        ),
        call(7, "list_sessions", json!({"server": marker})),
        call(
            8,
            "display_message",
            json!({"server": "main", "target": "main", "format": format!("#{{{marker}")}),
        ),
        json!({"jsonrpc": "2.0", "id": 9, "method": marker, "params": {}}),
        json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "list_sessions", "arguments": marker}}),
    ]
}

async fn send_all(gateway: &ServeProcess, config: &Path, marker: &str) {
    let loaded = muxgate::config::Config::load(Some(config), std::iter::empty()).unwrap();
    let token =
        muxgate::gateway::mint_full_access(&loaded.config, "log-test", Duration::from_secs(600))
            .unwrap();
    let mut mcp = RawMcp::new(&gateway.mcp_url);
    mcp.bearer = Some(token);
    mcp.initialize().await;
    for request in requests(marker) {
        let answer = mcp.post(&request).send().await.expect("an answer");
        let _ = answer.text().await;
    }
    // A token in the wrong place, and a forged one.
    let mut forged = RawMcp::new(&format!("{}?access_token={marker}", gateway.mcp_url));
    forged.bearer = Some(format!("{marker}.{marker}.{marker}"));
    let _ = forged.post(&requests(marker)[0]).send().await;
}

async fn log_of(envs: &[(&str, &str)]) -> (String, String) {
    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let config = common::serve::write_config(dir.path(), "main", &tmux.socket, "");
    let log_path = dir.path().join("serve.log");
    let mut gateway = ServeProcess::start(&config, &log_path, envs).await;
    let marker = format!("M4rk{}", std::process::id());
    send_all(&gateway, &config, &marker).await;
    gateway.signal(libc::SIGTERM);
    gateway.wait(Duration::from_secs(20)).await;
    (std::fs::read_to_string(&log_path).unwrap(), marker)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_data_stays_out_of_the_log_at_the_shipped_level() {
    let (log, marker) = log_of(&[]).await;
    assert!(log.contains("mcp request"), "one line per request:\n{log}");
    assert!(!log.contains(&marker), "request data in the log:\n{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_data_stays_out_of_the_log_at_debug() {
    let (log, marker) = log_of(&[("MUXGATE_LOG", "debug")]).await;
    assert!(log.contains("DEBUG"), "debug lines are written:\n{log}");
    let leaks: Vec<&str> = log.lines().filter(|l| l.contains(&marker)).collect();
    assert!(
        leaks.is_empty(),
        "request data in the log:\n{}",
        leaks.join("\n")
    );
}
