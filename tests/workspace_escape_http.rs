//! A hostile tenant in workspace mode at the gateway's front door: what its token's claims can
//! reach (a configured server, another tenant's workspace). Each runs against a real gateway
//! over real HTTP with real sandboxes.

mod common;

use std::time::Duration;

use common::tmux::TestTmux;
use common::tools::{call_err, call_ok, client_with};
use common::workspaces::WorkspaceState;
use common::{RawMcp, spawn_gateway};
use muxgate::auth::{MintRequest, TokenMinter};
use muxgate::config::Config;
use serde_json::{Value, json};

/// A token for `sub` with every tool scope and the given `servers` and `workspace` claims.
fn mint(config: &Config, sub: &str, servers: Option<&[&str]>, workspace: Option<&str>) -> String {
    TokenMinter::from_config(&config.auth)
        .expect("a minter")
        .mint(&MintRequest {
            sub: sub.into(),
            scopes: vec!["mux:read".into(), "mux:write".into(), "mux:admin".into()],
            ttl: Duration::from_secs(600),
            servers: servers.map(|list| list.iter().map(|s| (*s).to_owned()).collect()),
            sessions: None,
            own_sessions: false,
            workspace: workspace.map(str::to_owned),
            toolsets: None,
        })
        .expect("mint")
}

fn server_names(listing: &Value) -> Vec<&str> {
    listing["servers"]
        .as_array()
        .expect("a server list")
        .iter()
        .map(|s| s["name"].as_str().expect("a name"))
        .collect()
}

fn session_names(listing: &Value) -> Vec<&str> {
    listing["sessions"]
        .as_array()
        .expect("a session list")
        .iter()
        .map(|s| s["name"].as_str().expect("a name"))
        .collect()
}

/// The shipped default keeps `[tmux.servers.default]` beside workspaces. It runs outside every
/// sandbox, so only the configuration may grant it: a `servers` claim in the token of a `sub`
/// without a client entry (`muxgate token --servers default`, or `def*`) only narrows, and
/// neither lists nor reaches it, while a client whose `[clients.<sub>] servers` names it
/// does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_claim_never_grants_a_configured_server_beside_workspaces() {
    if !common::needs::sandbox("a_servers_claim_never_grants_a_configured_server_beside_workspaces")
    {
        return;
    }
    let shared = TestTmux::start();
    let state = WorkspaceState::new();
    let config = Config::from_toml_str(&format!(
        "[tmux.servers.default]\nsocket_name = '{}'\n[clients.ops]\nservers = ['default']\n",
        shared.socket
    ))
    .expect("a valid config");
    let gateway = spawn_gateway(state.config(config)).await;

    for claim in [["default"], ["def*"]] {
        let token = mint(&gateway.config, "mallory", Some(&claim), None);
        let mallory = client_with(&gateway, &token).await;
        let listed = call_ok(&mallory, "list_servers", json!({})).await;
        assert_eq!(
            server_names(&listed),
            ["workspace"],
            "claim {claim:?} lists the configured server: {listed}"
        );
        let refused = call_err(&mallory, "list_sessions", json!({"server": "default"})).await;
        assert_eq!(
            refused["kind"], "not_found",
            "claim {claim:?} reaches the configured server: {refused}"
        );
        let refused = call_err(
            &mallory,
            "create_session",
            json!({"server": "default", "name": "planted"}),
        )
        .await;
        assert_eq!(refused["kind"], "not_found", "{refused}");
    }
    assert_eq!(
        shared.ok(&["list-sessions", "-F", "#{session_name}"]),
        "main\n",
        "nothing was created on the configured server"
    );

    // Granted by the configuration, the server is there; the claim still narrows.
    let ops = client_with(&gateway, &mint(&gateway.config, "ops", None, None)).await;
    let listed = call_ok(&ops, "list_servers", json!({})).await;
    assert_eq!(server_names(&listed), ["workspace", "default"], "{listed}");
    let seen = call_ok(&ops, "list_sessions", json!({"server": "default"})).await;
    assert_eq!(session_names(&seen), ["main"], "{seen}");
    let narrowed = mint(&gateway.config, "ops", Some(&["other"]), None);
    let narrowed = client_with(&gateway, &narrowed).await;
    let refused = call_err(&narrowed, "list_sessions", json!({"server": "default"})).await;
    assert_eq!(refused["kind"], "not_found", "{refused}");
}

/// The answer to an `initialize` carrying `token`: status and body.
async fn initialize(mcp_url: &str, token: &str) -> (reqwest::StatusCode, Value, String) {
    let mut raw = RawMcp::new(mcp_url);
    raw.bearer = Some(token.to_owned());
    let response = raw
        .post(&json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": common::LEGACY_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "escape-test", "version": "0"}
            }
        }))
        .send()
        .await
        .expect("an answer");
    let status = response.status();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = if status.is_success() {
        Value::Null
    } else {
        response.json().await.expect("a JSON refusal")
    };
    (status, body, challenge)
}

/// A token's `workspace` claim chooses only among the teams `[workspaces] teams` lists (or
/// the token's own `sub`): naming another tenant's workspace is refused at authentication
/// with a reason of its own, and a client's configured workspace still wins over its claim.
/// The gateway here configures no tmux server at all: workspaces only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_claim_names_only_a_configured_team() {
    if !common::needs::sandbox("a_workspace_claim_names_only_a_configured_team") {
        return;
    }
    let state = WorkspaceState::new();
    let config = Config::from_toml_str(
        "[tmux.servers]\n[workspaces]\nenabled = true\nteams = ['team-*']\n[clients.bob]\nworkspace = 'team-a'\n",
    )
    .expect("a valid config");
    let gateway = spawn_gateway(state.config(config)).await;
    let config = &gateway.config;

    let alice = client_with(&gateway, &mint(config, "alice", None, None)).await;
    call_ok(&alice, "create_session", json!({"name": "alice-secret"})).await;

    // Mallory names alice's workspace: refused before anything runs.
    let (status, body, challenge) = initialize(
        &gateway.mcp_url,
        &mint(config, "mallory", None, Some("alice")),
    )
    .await;
    assert_eq!(status, reqwest::StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["reason"], "workspace_not_allowed", "{body}");
    assert_eq!(body["error"], "invalid_token", "{body}");
    let message = body["message"].as_str().expect("a message");
    assert!(message.contains("workspaces.teams"), "{message}");
    assert!(
        challenge.contains("error=\"invalid_token\"") && challenge.contains(message),
        "{challenge}"
    );
    assert!(state.sandbox_pid("mallory").is_none());
    let seen = call_ok(&alice, "list_sessions", json!({})).await;
    assert_eq!(session_names(&seen), ["alice-secret"], "{seen}");

    // A team the configuration lists: carol joins bob's team by her claim; bob's configured
    // team wins over his own claim; dave names his own workspace.
    let carol = client_with(&gateway, &mint(config, "carol", None, Some("team-a"))).await;
    call_ok(&carol, "create_session", json!({"name": "carols"})).await;
    let bob = client_with(&gateway, &mint(config, "bob", None, Some("elsewhere"))).await;
    let seen = call_ok(&bob, "list_sessions", json!({})).await;
    assert_eq!(session_names(&seen), ["carols"], "{seen}");
    assert!(state.sandbox_pid("elsewhere").is_none(), "bob's claim lost");
    let dave = client_with(&gateway, &mint(config, "dave", None, Some("dave"))).await;
    let seen = call_ok(&dave, "list_sessions", json!({})).await;
    assert_eq!(session_names(&seen), Vec::<&str>::new(), "{seen}");
}
