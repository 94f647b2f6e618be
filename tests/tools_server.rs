//! Server tools over MCP against real tmux servers, and self-protection proven with the real
//! binary: `muxgate serve` runs inside a pane of the tmux server it drives.

mod common;

use std::time::Duration;

use common::calls::{Client, admin_limited_to, err, err_kind, legacy, ok, stateless};
use common::tmux::{TestTmux, unique_socket_name};
use common::{TEST_SECRET, relaxed, spawn_gateway, wait_until};
use muxgate::auth::{MintRequest, TokenMinter};
use muxgate::config::Config;
use rmcp::ServiceExt;
use rmcp::model::ClientConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

fn config(servers: &[(&str, &str)]) -> Config {
    let mut text = String::new();
    for (name, socket) in servers {
        text.push_str(&format!(
            "[tmux.servers.{name}]\nsocket_name = '{socket}'\nallow_absent = true\n"
        ));
    }
    relaxed(Config::from_toml_str(&text).expect("valid test config"))
}

fn by_name<'a>(servers: &'a Value, name: &str) -> &'a Value {
    servers["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed: {servers}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_servers_reports_reachability_and_hides_servers_outside_the_acl() {
    let tmux = TestTmux::start();
    let absent = unique_socket_name();
    let gateway = spawn_gateway(config(&[("work", &tmux.socket), ("idle", &absent)])).await;
    let client = legacy(&gateway, &gateway.token).await;

    let listed = ok(&client, "list_servers", json!({})).await;
    assert_eq!(by_name(&listed, "work")["reachability"], "running");
    assert_eq!(by_name(&listed, "idle")["reachability"], "not_running");
    assert_eq!(by_name(&listed, "work")["kind"], "configured");
    assert!(
        !listed.to_string().contains(&tmux.socket),
        "no socket names or paths reach clients: {listed}"
    );
    err_kind(
        &client,
        "list_servers",
        json!({"x": 1}),
        "invalid_arguments",
        "`x`",
    )
    .await;
    // Several servers: `server` must be given.
    err_kind(
        &client,
        "list_sessions",
        json!({}),
        "invalid_arguments",
        "server",
    )
    .await;

    let only_work = TokenMinter::from_config(&gateway.config.auth)
        .unwrap()
        .mint(&MintRequest {
            sub: "w".into(),
            scopes: vec!["mux:admin".into()],
            ttl: Duration::from_secs(60),
            servers: Some(vec!["work".into()]),
            sessions: None,
            own_sessions: false,
            workspace: None,
            toolsets: None,
        })
        .unwrap();
    let limited = stateless(&gateway, &only_work).await;
    let listed = ok(&limited, "list_servers", json!({})).await;
    assert_eq!(listed["servers"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["servers"][0]["name"], "work");
    let hidden = err(&limited, "get_server_info", json!({"server": "idle"})).await;
    let missing = err(&limited, "get_server_info", json!({"server": "nope"})).await;
    assert_eq!(hidden["kind"], "not_found");
    assert_eq!(
        hidden["message"].as_str().unwrap().replace("idle", "X"),
        missing["message"].as_str().unwrap().replace("nope", "X")
    );
    // With one visible server, `server` may be omitted.
    ok(&limited, "list_sessions", json!({})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_server_info_describes_running_and_absent_servers() {
    let tmux = TestTmux::start();
    tmux.ok(&["new-session", "-d", "-s", "ci-1"]);
    let absent = unique_socket_name();
    let gateway = spawn_gateway(config(&[("work", &tmux.socket), ("idle", &absent)])).await;
    let client = legacy(&gateway, &gateway.token).await;

    let info = ok(&client, "get_server_info", json!({"server": "work"})).await;
    assert_eq!(info["alive"], true);
    assert_eq!(info["reachability"], "running");
    let version = tmux.ok(&["display-message", "-p", "#{version}"]);
    assert_eq!(info["version"], version.trim());
    // Neither the server's pid nor its socket reaches a client.
    assert_eq!(info.get("pid"), None, "{info}");
    assert_eq!(info.get("socket_path"), None, "{info}");
    assert!(!info.to_string().contains(&tmux.socket), "{info}");
    assert_eq!(info["sessions"], 2);
    assert!(info["started"].as_u64().unwrap() > 1_600_000_000);

    let down = ok(&client, "get_server_info", json!({"server": "idle"})).await;
    let prefix = info["channel_prefix"].clone();
    assert!(prefix.as_str().unwrap().starts_with("muxgate_"), "{info}");
    assert_eq!(
        down,
        // Nothing is known of a server that is not running; answers leave out nulls.
        json!({"server": "idle", "alive": false, "reachability": "not_running",
               "sessions": 0, "channel_prefix": prefix})
    );

    let ci = admin_limited_to(&gateway, "ci", &["ci-*"]);
    let limited = legacy(&gateway, &ci).await;
    let seen = ok(&limited, "get_server_info", json!({"server": "work"})).await;
    assert_eq!(
        seen["sessions"], 1,
        "sessions outside the ACL are not counted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_server_needs_access_to_every_session() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config(&[("work", &tmux.socket)])).await;
    let ci = admin_limited_to(&gateway, "ci", &["ci-*"]);
    let limited = legacy(&gateway, &ci).await;
    err_kind(
        &limited,
        "kill_server",
        json!({}),
        "forbidden",
        "every session",
    )
    .await;
    assert!(tmux.tmux(&["list-sessions"]).status.success());

    let client = legacy(&gateway, &gateway.token).await;
    let killed = ok(&client, "kill_server", json!({"server": "work"})).await;
    assert_eq!(killed, json!({"server": "work", "killed": true}));
    // When kill_server answers, the server is gone.
    let probe = tmux.tmux(&["list-sessions"]);
    assert!(!probe.status.success(), "the server still runs");
    let after = ok(&client, "list_servers", json!({})).await;
    assert_eq!(after["servers"][0]["reachability"], "not_running");
    err_kind(
        &client,
        "kill_server",
        json!({}),
        "unavailable",
        "no tmux server",
    )
    .await;
}

/// `muxgate serve` started inside a pane of `tmux`, configured to drive that same server (and
/// `other`); stops when the pane dies.
struct GatewayInPane {
    url: String,
    token: String,
    _dir: tempfile::TempDir,
}

impl GatewayInPane {
    async fn start(tmux: &TestTmux, other: &TestTmux) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config_text = format!(
            "[auth]\nsecret = '{TEST_SECRET}'\n\
             [tmux.servers.work]\nsocket_name = '{}'\n\
             [tmux.servers.other]\nsocket_name = '{}'\n",
            tmux.socket, other.socket
        );
        let config_path = dir.path().join("muxgate.toml");
        std::fs::write(&config_path, &config_text).unwrap();
        let out = dir.path().join("serve.out");
        // A variable the gateway's own environment has and sessions it creates must not get.
        let command = format!(
            "SSH_AUTH_SOCK=/muxgate-must-not-leak exec {} serve --config {} --bind 127.0.0.1:0 > {} 2>&1",
            env!("CARGO_BIN_EXE_muxgate"),
            config_path.display(),
            out.display()
        );
        tmux.ok(&[
            "new-session",
            "-d",
            "-s",
            "gw",
            "-n",
            "gateway",
            "sh",
            "-c",
            &command,
        ]);
        tmux.ok(&["new-window", "-d", "-t", "gw", "-n", "spare"]);
        let mut url = None;
        let found = wait_until(Duration::from_secs(30), || {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            url = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("MCP endpoint: "))
                .map(str::to_owned);
            url.is_some()
        })
        .await;
        assert!(
            found,
            "muxgate serve in the pane did not start: {}",
            std::fs::read_to_string(&out).unwrap_or_default()
        );
        let config = Config::from_toml_str(&config_text).unwrap();
        let token = TokenMinter::from_config(&config.auth)
            .unwrap()
            .mint(&MintRequest {
                sub: "agent".into(),
                scopes: vec!["mux:admin".into()],
                ttl: Duration::from_secs(600),
                servers: None,
                sessions: None,
                own_sessions: false,
                workspace: None,
                toolsets: None,
            })
            .unwrap();
        Self {
            url: url.unwrap(),
            token,
            _dir: dir,
        }
    }

    async fn client(&self) -> Client {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.url.as_str())
                .auth_header(&self.token),
        );
        ClientConfig::default()
            .serve(transport)
            .await
            .expect("connect to the gateway in the pane")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_inside_tmux_never_kills_what_holds_its_own_pane() {
    let tmux = TestTmux::start();
    let other = TestTmux::start();
    let gateway = GatewayInPane::start(&tmux, &other).await;
    let client = gateway.client().await;
    let own_window = tmux
        .ok(&["display-message", "-p", "-t", "gw:0", "#{window_id}"])
        .trim()
        .to_owned();
    let spare = tmux
        .ok(&["display-message", "-p", "-t", "gw:1", "#{window_id}"])
        .trim()
        .to_owned();
    let own_session = tmux
        .ok(&["display-message", "-p", "-t", "gw:", "#{session_id}"])
        .trim()
        .to_owned();

    for (tool, args, needle) in [
        (
            "kill_window",
            json!({"server": "work", "target": own_window}),
            "window",
        ),
        (
            "kill_session",
            json!({"server": "work", "target": "gw"}),
            "session",
        ),
        (
            "kill_session",
            json!({"server": "work", "target": own_session}),
            "session",
        ),
        (
            "kill_server",
            json!({"server": "work"}),
            "server muxgate itself runs in",
        ),
    ] {
        let refused = err(&client, tool, args.clone()).await;
        assert_eq!(refused["kind"], "forbidden", "{tool} {args}: {refused}");
        assert!(
            refused["message"].as_str().unwrap().contains(needle),
            "{tool}: {refused}"
        );
    }
    let sessions = tmux.ok(&["list-sessions", "-F", "#{session_name}"]);
    assert!(
        sessions.contains("gw") && sessions.contains("main"),
        "{sessions}"
    );

    // What does not hold the gateway's pane can go.
    let killed = ok(
        &client,
        "kill_window",
        json!({"server": "work", "target": spare}),
    )
    .await;
    assert_eq!(killed["session_closed"], false);
    ok(
        &client,
        "kill_session",
        json!({"server": "work", "target": "main"}),
    )
    .await;
    let sessions = tmux.ok(&["list-sessions", "-F", "#{session_name}"]);
    assert_eq!(sessions.trim(), "gw");
    ok(&client, "kill_server", json!({"server": "other"})).await;
    assert!(
        wait_until(Duration::from_secs(5), || {
            !other.tmux(&["list-sessions"]).status.success()
        })
        .await
    );

    // Sessions it creates do not inherit the gateway's own environment.
    ok(
        &client,
        "create_session",
        json!({"server": "work", "name": "made"}),
    )
    .await;
    let env = tmux.ok(&["show-environment", "-t", "made"]);
    assert!(!env.contains("must-not-leak"), "{env}");
    // The gateway is still alive and well.
    let info = ok(&client, "get_server_info", json!({"server": "work"})).await;
    assert_eq!(info["sessions"], 2);
}
