//! An rmcp client connected to a test gateway, and calls that assert their outcome.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig};
use rmcp::service::RunningService;
use serde_json::Value;

use super::TestGateway;

pub(crate) type Client = RunningService<rmcp::RoleClient, ClientConfig>;

/// A client with the gateway's full-access token.
pub(crate) async fn connect(gateway: &TestGateway) -> Client {
    ClientConfig::default()
        .serve(gateway.transport())
        .await
        .expect("MCP client connects")
}

/// A client with `token`.
pub(crate) async fn connect_with(gateway: &TestGateway, token: &str) -> Client {
    ClientConfig::default()
        .serve(gateway.transport_with(token))
        .await
        .expect("MCP client connects")
}

/// Calls a tool; `args` must be a JSON object.
pub(crate) async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    let args = args.as_object().expect("arguments are an object").clone();
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .expect("tools/call")
}

/// Calls a tool that must succeed; returns its structured content.
pub(crate) async fn ok(client: &Client, name: &str, args: Value) -> Value {
    let result = call(client, name, args.clone()).await;
    assert_eq!(
        result.is_error,
        Some(false),
        "{name}({args}) failed: {:?}",
        result.content
    );
    result
        .structured_content
        .unwrap_or_else(|| panic!("{name}: no structured content"))
}

/// Calls a tool that must fail with `kind`; returns the error object (kind, message,
/// suggestion).
pub(crate) async fn fails(client: &Client, name: &str, args: Value, kind: &str) -> Value {
    let result = call(client, name, args.clone()).await;
    assert_eq!(
        result.is_error,
        Some(true),
        "{name}({args}) should fail: {:?}",
        result.structured_content
    );
    let error = super::tool_error(&result);
    assert_eq!(error["kind"], kind, "{name}({args}): {error}");
    assert!(
        !error["suggestion"].as_str().unwrap_or("").is_empty(),
        "{name}: error without a suggestion: {error}"
    );
    error
}
