//! A hostile tenant in workspace mode at the gateway's front door: what its token's claims can
//! reach (a configured server, another tenant's workspace), and what it can take from the
//! network it shares with the host (`network = "host"`: the gateway's other loopback address).
//! Each runs against a real gateway over real HTTP with real sandboxes.

mod common;

use std::path::Path;
use std::time::Duration;

use common::serve::ServeProcess;
use common::tmux::TestTmux;
use common::tools::{Client, call_err, call_ok, client_with};
use common::workspaces::WorkspaceState;
use common::{RawMcp, TEST_SECRET, spawn_gateway};
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

/// `run_command` in `pane`, and its output.
async fn run(client: &Client, pane: &str, command: &str) -> String {
    let ran = call_ok(
        client,
        "run_command",
        json!({"target": pane, "command": command, "timeout": 60}),
    )
    .await;
    ran["output"].as_str().expect("output").to_owned()
}

/// Whether this host has an IPv6 loopback address to bind (without one, nothing can listen on
/// `[::1]` and no client reaches it: there is nothing to squat).
fn host_has_ipv6_loopback() -> bool {
    std::net::TcpListener::bind("[::1]:0").is_ok()
}

/// With `network = "host"` a tenant shares the host's network. The gateway listens on
/// 127.0.0.1; a client that says `localhost` may well try `[::1]` first. A tenant that could
/// listen there on the gateway's port would receive that client's requests, bearer token
/// included. So the gateway holds the other loopback address too: from inside its pane the
/// tenant cannot bind it (alone or through the IPv6 wildcard), and a client that reaches the
/// gateway over `[::1]` is answered by the gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_network_tenant_cannot_listen_on_the_gateways_other_loopback_address() {
    let test = "a_host_network_tenant_cannot_listen_on_the_gateways_other_loopback_address";
    if !common::needs::sandbox(test) || !common::needs::program("python3", "python3", test) {
        return;
    }
    if !host_has_ipv6_loopback() {
        eprintln!("skipping {test}: this host has no IPv6 loopback address to squat");
        return;
    }
    let state = WorkspaceState::new();
    let config_path = state.path().join("muxgate.toml");
    std::fs::write(
        &config_path,
        format!(
            "[state]\ndir = '{state}'\n\
             [workspaces]\nenabled = true\nnetwork = 'host'\n\
             [workspaces.limits]\nhome_bytes = {home_bytes}\n\
             [auth]\nsecret = '{TEST_SECRET}'\n\
             [audit]\npath = '{state}/audit.jsonl'\n\
             [limits]\nrequests_per_second = 1000\nrequest_burst = 1000\n\
             tool_calls_per_second = 1000\ntool_call_burst = 1000\n",
            state = state.path().display(),
            // A home's image is reserved whole: the default 2 GiB would make the test depend
            // on the free disk.
            home_bytes = common::workspaces::HOME_BYTES,
        ),
    )
    .expect("write the config");
    let log = state.path().join("serve.log");
    let gateway = ServeProcess::start(&config_path, &log, &[]).await;
    let config = Config::load(Some(Path::new(&config_path)), std::iter::empty())
        .expect("the config loads")
        .config;
    let port: u16 = gateway
        .base
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("the gateway's port");
    let tenant = client_with_url(&gateway.mcp_url, &mint(&config, "mallory", None, None)).await;
    let created = call_ok(&tenant, "create_session", json!({"name": "m-1"})).await;
    let pane = created["session"]["active_pane_id"]
        .as_str()
        .expect("a pane")
        .to_owned();
    let squat = |address: &str, v6_only: u8| {
        format!(
            "python3 -c \"import socket; s = socket.socket(socket.AF_INET6); \
             s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, {v6_only}); \
             s.bind(('{address}', {port})); s.listen(); print('LISTENING')\" 2>&1 | tail -n 1"
        )
    };
    for (address, v6_only) in [("::1", 1), ("::", 1), ("::", 0)] {
        let output = run(&tenant, &pane, &squat(address, v6_only)).await;
        assert!(
            !output.contains("LISTENING") && output.contains("Address already in use"),
            "the tenant listens on [{address}]:{port} (v6only {v6_only}): {output}"
        );
    }
    // Sanity: the tenant does share the host's network (it can listen on another port).
    let output = run(
        &tenant,
        &pane,
        "python3 -c \"import socket; s = socket.socket(socket.AF_INET6); \
         s.bind(('::1', 0)); s.listen(); print('LISTENING')\"",
    )
    .await;
    assert!(output.contains("LISTENING"), "{output}");

    // A client that reaches the gateway over [::1] is answered by the gateway itself.
    let over_v6 = format!("http://[::1]:{port}/mcp");
    let client = client_with_url(&over_v6, &mint(&config, "mallory", None, None)).await;
    let seen = call_ok(&client, "list_sessions", json!({})).await;
    assert_eq!(session_names(&seen), ["m-1"], "{seen}");

    // The shipped default's server stays beside the workspaces here: serve says so.
    assert!(
        gateway
            .log()
            .contains("configured tmux server(s) default beside workspaces"),
        "{}",
        gateway.log()
    );
}

/// An MCP client of the gateway at `url`.
async fn client_with_url(url: &str, token: &str) -> Client {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
    );
    tokio::time::timeout(
        Duration::from_secs(30),
        rmcp::model::ClientConfig::default().serve(transport),
    )
    .await
    .expect("connected within 30 s")
    .expect("MCP client connects")
}
