//! Calling tools over MCP in tests: an rmcp client and helpers to read results.

use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig};
use rmcp::service::RunningService;
use serde_json::{Value, json};

use super::tmux::{StoppedServer, TestTmux};
use super::{TestGateway, config_with_server, spawn_gateway};

pub(crate) type Client = RunningService<rmcp::RoleClient, ClientConfig>;

/// A connected client with the gateway's full-access token.
pub(crate) async fn client(gateway: &TestGateway) -> Client {
    ClientConfig::default()
        .serve(gateway.transport())
        .await
        .expect("MCP client connects")
}

/// Calls `name` with `args` (a JSON object).
pub(crate) async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    client
        .call_tool(
            CallToolRequestParams::new(name.to_owned())
                .with_arguments(args.as_object().expect("arguments object").clone()),
        )
        .await
        .expect("tools/call")
}

/// The structured result of a successful call (panics with the result otherwise).
pub(crate) fn ok(result: CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(false), "expected success: {result:?}");
    result.structured_content.expect("structured content")
}

/// The error (kind, message, suggestion) of a failed call (panics with the result otherwise).
pub(crate) fn err(result: CallToolResult) -> Value {
    super::tool_error(&result)
}

/// Calls a tool and returns its structured success.
pub(crate) async fn call_ok(client: &Client, name: &str, args: Value) -> Value {
    ok(call(client, name, args).await)
}

/// Calls a tool as an agent does right after its tmux server was restarted: again while it
/// answers `unavailable` (the gateway found the server down moments before, and says to retry),
/// for up to 10 s; returns the structured success.
pub(crate) async fn call_ok_once_up(client: &Client, name: &str, args: Value) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let result = call(client, name, args.clone()).await;
        if result.is_error != Some(true)
            || err(result.clone())["kind"] != "unavailable"
            || Instant::now() > deadline
        {
            return ok(result);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Calls a tool and returns its error object.
pub(crate) async fn call_err(client: &Client, name: &str, args: Value) -> Value {
    err(call(client, name, args).await)
}

/// Types `text` and Enter into `pane` with a tmux subprocess (the test's own hands, not the
/// gateway's).
pub(crate) fn type_line(tmux: &super::tmux::TestTmux, pane: &str, text: &str) {
    tmux.ok(&["send-keys", "-t", pane, "-l", "--", text]);
    tmux.ok(&["send-keys", "-t", pane, "Enter"]);
}

/// The visible screen of `pane`.
pub(crate) fn screen(tmux: &super::tmux::TestTmux, pane: &str) -> String {
    tmux.ok(&["capture-pane", "-p", "-t", pane])
}

/// Waits (polling the screen, test side only) until `pane` shows `needle`.
pub(crate) async fn wait_for_screen(tmux: &super::tmux::TestTmux, pane: &str, needle: &str) {
    let found = super::wait_until(Duration::from_secs(10), || {
        screen(tmux, pane).contains(needle)
    })
    .await;
    assert!(found, "{needle:?} never appeared:\n{}", screen(tmux, pane));
}

/// A connected client with `token`.
pub(crate) async fn client_with(gateway: &TestGateway, token: &str) -> Client {
    ClientConfig::default()
        .serve(gateway.transport_with(token))
        .await
        .expect("MCP client connects")
}

/// A connected client of the gateway at `url` (a [`super::serve::ServeProcess`]), with `token`.
pub(crate) async fn client_at(url: &str, token: &str) -> Client {
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
            .auth_header(token),
    );
    ClientConfig::default()
        .serve(transport)
        .await
        .expect("MCP client connects")
}

/// A token with every tool scope for `sub`, signed with [`super::TEST_SECRET`] (what a
/// gateway whose config names that secret accepts).
pub(crate) fn full_token(sub: &str) -> String {
    let mut config = muxgate::config::Config::from_toml_str("").expect("the default");
    config.auth.secret = Some(muxgate::auth::config::SecretString::new(super::TEST_SECRET));
    muxgate::gateway::mint_full_access(&config, sub, Duration::from_secs(600)).expect("a token")
}

/// A token for `sub` with `scopes`, limited to sessions matching `sessions`.
pub(crate) fn session_limited_token(
    gateway: &TestGateway,
    sub: &str,
    scopes: &[&str],
    sessions: &[&str],
) -> String {
    muxgate::auth::TokenMinter::from_config(&gateway.config.auth)
        .expect("minter")
        .mint(&muxgate::auth::MintRequest {
            sub: sub.to_owned(),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            ttl: Duration::from_secs(600),
            servers: None,
            sessions: Some(sessions.iter().map(|s| (*s).to_owned()).collect()),
            own_sessions: false,
            workspace: None,
            toolsets: None,
        })
        .expect("mint")
}

/// Waits until `pane`'s foreground program is `command_line`: it runs, and the terminal's
/// foreground is its process group, so a `C-c` typed now reaches it. (Once its output shows it
/// may not be: between a shell's fork and the child taking the terminal, `C-c` goes to the
/// shell, which lets the child run on.)
pub(crate) async fn foreground_is(client: &Client, pane: &str, command_line: &str) -> Value {
    call_until(client, "get_pane_state", pane, |state| {
        state["foreground_command_line"] == command_line
    })
    .await
}

/// Calls `tool` on `pane` until `done` holds for its answer (10 s at most).
pub(crate) async fn call_until(
    client: &Client,
    tool: &str,
    pane: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let answer = call_ok(client, tool, serde_json::json!({"target": pane})).await;
        if done(&answer) {
            return answer;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{tool} never settled: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A gateway (and a client of it) on `tmux`'s server whose tmux commands may each take 60 s:
/// far from a call's own timeout of 1 s, so that a slow machine cannot blur the two. Its
/// command connection is attached.
pub(crate) async fn gateway_with_slow_commands(tmux: &TestTmux) -> (TestGateway, Client) {
    let mut config = config_with_server("work", &tmux.socket, false);
    config.engine.command_timeout_ms = 60_000;
    let gateway = spawn_gateway(config).await;
    let client = client(&gateway).await;
    call_ok(&client, "list_panes", json!({})).await;
    (gateway, client)
}

/// Calls `tool` with `arguments(target)` while `tmux`'s server answers nothing (stopped), by
/// the session name `main` (resolving it needs tmux) and by its pane id `pane` (following the
/// pane needs tmux): each call must end with `timeout` long before one tmux command's 60 s
/// (see [`gateway_with_slow_commands`]). The server runs again afterwards.
pub(crate) async fn assert_stalled_calls_end_at_their_own_timeout(
    client: &Client,
    tmux: &TestTmux,
    pane: &str,
    tool: &str,
    arguments: impl Fn(&str) -> Value,
) {
    let _stopped = StoppedServer::new(tmux);
    for target in ["main", pane] {
        let asked = Instant::now();
        let stalled = call_err(client, tool, arguments(target)).await;
        let took = asked.elapsed();
        assert_eq!(stalled["kind"], "timeout", "{tool} on {target}: {stalled}");
        assert!(
            took < Duration::from_secs(30),
            "{tool} on {target} took {took:?}, as long as a tmux command may"
        );
    }
}

/// `list_agents`' row of `id`, once its state is `state` (20 s at most).
pub(crate) async fn until_listed(client: &Client, id: &str, state: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let list = call_ok(client, "list_agents", json!({})).await;
        let row = list["agents"]
            .as_array()
            .expect("agents")
            .iter()
            .find(|row| row["agent_id"] == id)
            .cloned();
        if let Some(row) = &row
            && row["state"] == state
        {
            return row.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{id} never listed as {state}: {list}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
