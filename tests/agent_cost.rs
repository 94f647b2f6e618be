//! What an agent pays in bytes: `tools/list` (toolsets chosen by the client's config or its
//! token, tools of a backend without a server left out; the default listing ≤ 40.1 KB, the
//! full one ≤ 102 KB) and answers (`list_panes` for 20 panes ≤ 4 KB on the wire, its text a compact
//! rendering rather than a second JSON copy).

mod common;

use std::time::Duration;

use muxgate::auth::{MintRequest, TokenMinter};
use muxgate::config::Config;
use serde_json::{Value, json};

use common::tmux::TestTmux;
use common::{RawMcp, TestGateway, config_with_server, relaxed, spawn_gateway};

/// The default listing's budget: what every conversation pays before the agent does anything.
/// (40,000 until `get_pane_state` gained `agent_status`, whose schema costs 200 bytes; half of
/// that was paid back by cutting what the input schemas and instructions already say.)
const DEFAULT_BUDGET: usize = 40_100;
/// Every tool of both backends, the humans toolset's three (secret entry, live view,
/// recordings) included.
const FULL_BUDGET: usize = 102_000;

fn config(extra: &str) -> Config {
    relaxed(
        Config::from_toml_str(&format!(
            "[tmux.servers.main]\nsocket_name = 'muxgate-tool-list-unused'\nallow_absent = true\n\
             {extra}"
        ))
        .expect("valid test config"),
    )
}

const WITH_ZELLIJ: &str = "[zellij.servers.z]\nsocket_dir = '/nonexistent-zellij-sockets'\n";

fn token(gateway: &TestGateway, sub: &str, toolsets: Option<&[&str]>) -> String {
    TokenMinter::from_config(&gateway.config.auth)
        .expect("minter")
        .mint(&MintRequest {
            sub: sub.to_owned(),
            scopes: vec!["mux:read".into(), "mux:write".into(), "mux:admin".into()],
            ttl: Duration::from_secs(600),
            servers: None,
            sessions: None,
            own_sessions: false,
            workspace: None,
            toolsets: toolsets.map(|t| t.iter().map(|s| (*s).to_owned()).collect()),
        })
        .expect("mint")
}

/// The `tools/list` answer as sent (its JSON-RPC message, in bytes) and the tool names in it.
async fn list(gateway: &TestGateway, token: &str) -> (usize, Vec<String>) {
    let mut mcp = RawMcp::new(&gateway.mcp_url);
    mcp.bearer = Some(token.to_owned());
    mcp.initialize().await;
    let answer = mcp
        .request(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    let names = answer["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect();
    (answer.to_string().len(), names)
}

fn in_toolsets(names: &[String], toolsets: &[&str]) -> bool {
    names.iter().all(|name| {
        let toolset = muxgate::mcp::catalog::toolset::of(name).expect("a toolset");
        toolsets.contains(&toolset.name())
    })
}

#[tokio::test]
async fn the_default_listing_is_small_and_capable_and_the_full_one_fits() {
    let gateway = spawn_gateway(config(WITH_ZELLIJ)).await;

    let tmux_only = spawn_gateway(config("")).await;
    let (bytes, names) = list(&tmux_only, &token(&tmux_only, "agent", None)).await;
    eprintln!("default tools/list: {bytes} bytes, {} tools", names.len());
    assert!(bytes <= DEFAULT_BUDGET, "default listing is {bytes} bytes");
    assert!(
        in_toolsets(&names, &["inspect", "run", "manage"]),
        "{names:?}"
    );
    for everyday in [
        "list_panes",
        "capture_pane",
        "send_keys",
        "run_command",
        "wait_for_text",
        "create_session",
        "split_window",
        "kill_session",
    ] {
        assert!(names.iter().any(|n| n == everyday), "{everyday} not listed");
    }

    let (bytes, names) = list(&gateway, &token(&gateway, "agent", None)).await;
    eprintln!(
        "default tools/list with a Zellij server: {bytes} bytes, {} tools",
        names.len()
    );
    let (bytes, names) = list(&gateway, &token(&gateway, "agent", Some(&["all"]))).await;
    eprintln!("full tools/list: {bytes} bytes, {} tools", names.len());
    assert!(bytes <= FULL_BUDGET, "full listing is {bytes} bytes");
    assert_eq!(names.len(), muxgate::mcp::catalog::tools().len());
}

#[tokio::test]
async fn tools_of_a_backend_without_a_server_are_not_listed() {
    let tmux_only = spawn_gateway(config("")).await;
    let (_, names) = list(&tmux_only, &token(&tmux_only, "agent", Some(&["all"]))).await;
    assert!(!names.iter().any(|n| n.starts_with("zellij_")), "{names:?}");

    let both = spawn_gateway(config(WITH_ZELLIJ)).await;
    let (_, names) = list(&both, &token(&both, "agent", None)).await;
    assert!(
        names.iter().any(|n| n == "zellij_list_clients"),
        "{names:?}"
    );
}

#[tokio::test]
async fn the_token_claim_wins_over_the_client_config_and_unlisted_tools_stay_callable() {
    let gateway = spawn_gateway(config(
        "[clients.reader]\ntoolsets = ['inspect']\n[clients_default]\ntoolsets = ['run']\n",
    ))
    .await;
    let (_, configured) = list(&gateway, &token(&gateway, "reader", None)).await;
    assert!(in_toolsets(&configured, &["inspect"]), "{configured:?}");
    assert!(configured.iter().any(|n| n == "list_panes"));

    let (_, unlisted) = list(&gateway, &token(&gateway, "someone", None)).await;
    assert!(in_toolsets(&unlisted, &["run"]), "{unlisted:?}");

    let claimed = token(&gateway, "reader", Some(&["config", "destroy"]));
    let (_, names) = list(&gateway, &claimed).await;
    assert!(in_toolsets(&names, &["config", "destroy"]), "{names:?}");
    assert!(names.iter().any(|n| n == "get_server_info"));

    // A toolset shapes the listing only: `reader` is not shown kill_server's toolset, and its
    // scopes still let it call list_servers, which its claimed toolsets do not list.
    let mut mcp = RawMcp::new(&gateway.mcp_url);
    mcp.bearer = Some(claimed);
    mcp.initialize().await;
    let answer = mcp
        .request(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                         "params": {"name": "list_servers", "arguments": {}}}))
        .await;
    assert_eq!(answer["result"]["isError"], Value::Bool(false), "{answer}");
}

#[tokio::test]
async fn an_unknown_toolset_is_refused_with_the_known_ones() {
    let mut config = config("[clients.bot]\ntoolsets = ['inspect', 'everything']\n");
    config.auth.secret = Some(muxgate::auth::config::SecretString::new(
        common::TEST_SECRET,
    ));
    let state = tempfile::tempdir().expect("a state directory");
    config.state.dir = Some(state.path().to_owned());
    let error = muxgate::gateway::Gateway::build(
        std::sync::Arc::new(config),
        "http://127.0.0.1:1/mcp",
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    .err()
    .expect("the gateway refuses the config")
    .to_string();
    assert!(
        error.contains("clients.bot.toolsets") && error.contains("\"everything\""),
        "{error}"
    );
    assert!(error.contains("inspect, run, manage"), "{error}");
}

/// One `tools/call` as sent on the wire: the HTTP body's size and the JSON-RPC message in it.
async fn call_on_the_wire(mcp: &RawMcp, name: &str, arguments: Value) -> (usize, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments}});
    let text = mcp
        .post(&body)
        .send()
        .await
        .expect("POST /mcp")
        .text()
        .await
        .expect("body");
    let message = common::sse_events(&text)
        .into_iter()
        .filter_map(|event| serde_json::from_str::<Value>(&event.data).ok())
        .find(|m| m["id"] == 7)
        .or_else(|| serde_json::from_str(&text).ok())
        .expect("a response message");
    (text.len(), message)
}

#[tokio::test]
async fn list_panes_for_twenty_panes_is_small_and_its_text_is_no_json_copy() {
    let tmux = TestTmux::start();
    // 20 panes in typical places: a session per project directory.
    for n in 1..20 {
        tmux.ok(&[
            "new-session",
            "-d",
            "-s",
            &format!("project-{n}"),
            "-c",
            "/usr/share/doc",
        ]);
    }
    let gateway = spawn_gateway(config_with_server("main", &tmux.socket, false)).await;
    let mut mcp = gateway.raw();
    mcp.initialize().await;

    let (bytes, message) = call_on_the_wire(&mcp, "list_panes", json!({})).await;
    let result = &message["result"];
    let panes = result["structuredContent"]["panes"]
        .as_array()
        .expect("panes");
    assert_eq!(panes.len(), 20);
    let text = result["content"][0]["text"].as_str().expect("text");
    eprintln!(
        "list_panes, 20 panes: {bytes} bytes on the wire (text {} bytes)",
        text.len()
    );
    assert!(bytes <= 4_000, "list_panes is {bytes} bytes on the wire");
    assert!(
        serde_json::from_str::<Value>(text).is_err(),
        "the text is JSON:\n{text}"
    );
    // The rendering carries what the structured rows do: a header, then a row per pane.
    let header = text
        .lines()
        .find(|line| line.starts_with("id\t"))
        .expect("a table header");
    assert!(header.contains("current_command") && header.contains("current_path"));
    for pane in panes {
        let id = pane["id"].as_str().expect("id");
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{id}\t"))),
            "{id}"
        );
        assert!(
            pane.get("pid").is_none() && pane.get("tty").is_none(),
            "{pane}"
        );
    }

    let (all_bytes, message) =
        call_on_the_wire(&mcp, "list_panes", json!({"fields": ["all"]})).await;
    let every = &message["result"]["structuredContent"]["panes"][0];
    assert!(every["pid"].is_u64() && every["tty"].is_string(), "{every}");
    eprintln!("list_panes, 20 panes, every field: {all_bytes} bytes on the wire");

    let (_, message) = call_on_the_wire(&mcp, "list_panes", json!({"fields": ["colour"]})).await;
    assert_eq!(message["result"]["isError"], true, "{message}");
}
