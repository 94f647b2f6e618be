//! The JSON-RPC answers the gateway writes itself, before a request reaches rmcp: a body that
//! is not one JSON-RPC message ([`error`]), and a `tools/call` refused by the request rate
//! ([`tool_result`]).
//!
//! rmcp shapes its own results for the protocol version the request speaks (2026-07-28 results
//! carry `resultType`, older ones do not); answers written here go through the same model and
//! the same shaping, so every client reads them as it reads rmcp's (a 2026-07-28 client refuses
//! a result without `resultType` and drops its session).

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use rmcp::model::{CallToolResult, ContentBlock, ProtocolVersion, ServerResult};
use serde_json::{Map, Value, json};

/// The `_meta` key a 2026-07-28 request names its protocol version with.
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The header every request after the first names its protocol version with.
const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// The protocol version a request speaks, read as rmcp reads it: the request's own `_meta`
/// field, else its `MCP-Protocol-Version` header, else 2025-03-26 (a request with neither).
pub(crate) fn request_version(meta_version: Option<&str>, headers: &HeaderMap) -> ProtocolVersion {
    let from_header = headers
        .get(PROTOCOL_VERSION_HEADER)
        .and_then(|v| v.to_str().ok());
    meta_version
        .or(from_header)
        .and_then(|v| serde_json::from_value(Value::String(v.to_owned())).ok())
        .unwrap_or(ProtocolVersion::V_2025_03_26)
}

/// The protocol version a request's params name in their `_meta`, if any.
pub(crate) fn meta_version(params: &Map<String, Value>) -> Option<&str> {
    params.get("_meta")?.get(META_PROTOCOL_VERSION)?.as_str()
}

/// A `tools/call` answered with an error result holding `text` (the model reads it), shaped
/// for `version`.
pub(crate) fn tool_result(id: &Value, text: String, version: &ProtocolVersion) -> Response {
    let mut result =
        ServerResult::CallToolResult(CallToolResult::error(vec![ContentBlock::text(text)]));
    if *version < ProtocolVersion::V_2026_07_28 {
        result.strip_result_type_for_legacy_peer();
    }
    match serde_json::to_value(&result) {
        Ok(result) => {
            axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
        }
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            id,
            INTERNAL_ERROR,
            format!("the answer could not be written: {e}"),
        ),
    }
}

/// JSON-RPC's code for a fault of the server's own.
const INTERNAL_ERROR: i64 = -32603;

/// A JSON-RPC error answering `id` (null when the request's id is unknown) with HTTP `status`.
/// Error objects have one shape in every protocol version.
pub(crate) fn error(status: StatusCode, id: &Value, code: i64, message: String) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    });
    (status, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(response: Response) -> Value {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn the_version_comes_from_meta_then_the_header_then_the_oldest_default() {
        let mut headers = HeaderMap::new();
        assert_eq!(
            request_version(None, &headers),
            ProtocolVersion::V_2025_03_26
        );
        headers.insert(PROTOCOL_VERSION_HEADER, "2025-11-25".parse().unwrap());
        assert_eq!(
            request_version(None, &headers),
            ProtocolVersion::V_2025_11_25
        );
        let params = json!({"name": "t", "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}});
        let meta = params.as_object().and_then(meta_version);
        assert_eq!(
            request_version(meta, &headers),
            ProtocolVersion::V_2026_07_28
        );
    }

    #[tokio::test]
    async fn a_refused_call_has_result_type_only_from_2026_07_28() {
        let new = body(tool_result(
            &json!(4),
            "error (busy)".into(),
            &ProtocolVersion::V_2026_07_28,
        ))
        .await;
        assert_eq!(new["result"]["resultType"], "complete");
        assert_eq!(new["result"]["isError"], true);
        assert_eq!(new["id"], 4);
        let old = body(tool_result(
            &json!("a"),
            "error (busy)".into(),
            &ProtocolVersion::V_2025_11_25,
        ))
        .await;
        assert!(old["result"].get("resultType").is_none(), "{old}");
        assert_eq!(old["result"]["content"][0]["text"], "error (busy)");
    }
}
