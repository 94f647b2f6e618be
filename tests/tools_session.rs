//! Session tools over MCP against a real tmux server.

mod common;

use common::tmux::TestTmux;
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
    assert_eq!(unknown.is_error, Some(true));
    assert_eq!(
        unknown.structured_content.unwrap()["error"]["kind"],
        "not_found"
    );
}
