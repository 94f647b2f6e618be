//! Calling tools through rmcp's client in both protocol eras, with assertions on the result
//! shape, and tokens with limited access.

use std::time::Duration;

use muxgate::auth::{MintRequest, TokenMinter};
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, ProtocolVersion};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::Value;

use super::TestGateway;

pub(crate) type Client = RunningService<RoleClient, ClientConfig>;

/// A 2025-11-25 client with an MCP session, authenticated with `token`.
pub(crate) async fn legacy(gateway: &TestGateway, token: &str) -> Client {
    ClientConfig::default()
        .serve(gateway.transport_with(token))
        .await
        .expect("initialize with rmcp's client")
}

/// A 2026-07-28 client (stateless, `server/discover`), authenticated with `token`.
/// A legacy-session client of the gateway at `mcp_url` (a `muxgate serve` process).
pub(crate) async fn client_at(mcp_url: &str, token: &str) -> Client {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(mcp_url).auth_header(token),
    );
    ClientConfig::default()
        .serve(transport)
        .await
        .expect("initialize with rmcp's client")
}

pub(crate) async fn stateless(gateway: &TestGateway, token: &str) -> Client {
    ClientConfig::default()
        .serve_with_lifecycle(
            gateway.transport_with(token),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discover with rmcp's client")
}

/// Calls a tool; `args` must be a JSON object.
pub(crate) async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    let arguments = args.as_object().expect("arguments are an object").clone();
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("tools/call {name}: {e}"))
}

/// Calls a tool that must succeed; returns its structured content.
pub(crate) async fn ok(client: &Client, name: &str, args: Value) -> Value {
    let result = call(client, name, args.clone()).await;
    assert_eq!(
        result.is_error,
        Some(false),
        "{name} {args} failed: {:?}",
        result.content
    );
    result
        .structured_content
        .unwrap_or_else(|| panic!("{name}: no structured content"))
}

/// Calls a tool that must fail; returns its error (kind, message, suggestion).
pub(crate) async fn err(client: &Client, name: &str, args: Value) -> Value {
    let result = call(client, name, args.clone()).await;
    assert_eq!(
        result.is_error,
        Some(true),
        "{name} {args} should have failed: {:?}",
        result.structured_content
    );
    let error = super::tool_error(&result);
    assert!(
        !error["suggestion"].as_str().unwrap_or_default().is_empty(),
        "{name}: error without a suggestion: {error}"
    );
    error
}

/// Asserts an error of `kind` whose message contains `needle`.
pub(crate) async fn err_kind(client: &Client, name: &str, args: Value, kind: &str, needle: &str) {
    let error = err(client, name, args.clone()).await;
    assert_eq!(error["kind"], kind, "{name} {args}: {error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains(needle),
        "{name} {args}: message lacks {needle:?}: {error}"
    );
}

/// A token for `sub` with `scopes`, limited to sessions matching `sessions` (if given) and,
/// with `own_sessions`, to the sessions it creates.
pub(crate) fn token(
    gateway: &TestGateway,
    sub: &str,
    scopes: &[&str],
    sessions: Option<&[&str]>,
    own_sessions: bool,
) -> String {
    TokenMinter::from_config(&gateway.config.auth)
        .expect("minter")
        .mint(&MintRequest {
            sub: sub.to_owned(),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            ttl: Duration::from_secs(3600),
            servers: None,
            sessions: sessions.map(|s| s.iter().map(|p| (*p).to_owned()).collect()),
            own_sessions,
            workspace: None,
            toolsets: None,
        })
        .expect("mint")
}

/// Every scope, limited to sessions matching `sessions`.
pub(crate) fn admin_limited_to(gateway: &TestGateway, sub: &str, sessions: &[&str]) -> String {
    token(
        gateway,
        sub,
        &["mux:read", "mux:write", "mux:admin"],
        Some(sessions),
        false,
    )
}
