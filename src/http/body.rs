//! The JSON-RPC body check in front of rmcp on `POST /mcp`.
//!
//! rmcp answers a body it cannot decode with `415 Unsupported Media Type` (whatever the actual
//! fault: truncated JSON, invalid UTF-8, not JSON-RPC at all), a body that outgrows the size
//! limit while streaming with `500`, and a `tools/call` whose params have the wrong shape with
//! "method not found". This layer reads a JSON body first (within `http.max_body_bytes`,
//! `413` beyond it, streamed or declared) and answers what is not a JSON-RPC message with
//! `400` and a JSON-RPC error: `-32700` for bytes that are not JSON, `-32600` for JSON that is
//! not one JSON-RPC message (batches included: MCP has none), `-32602` for params that are not
//! an object. Everything else reaches rmcp unchanged; requests with other content types too
//! (rmcp refuses those with 415).
//!
//! It does not know methods or their schemas (that is rmcp's and the tools' job) beyond the
//! shape of `tools/call`'s params. What it read ([`Checked`]) rides on in the request's
//! extensions for the layers after it.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::{HeaderMap, Method, StatusCode, header};
use serde_json::{Value, json};

/// JSON-RPC error codes used here.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// Why a body is refused: a JSON-RPC error code and message, and the request id when known.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BodyFault {
    pub code: i64,
    pub message: String,
    pub id: Value,
}

impl BodyFault {
    fn new(code: i64, message: impl Into<String>, id: Value) -> Self {
        Self {
            code,
            message: message.into(),
            id,
        }
    }
}

impl IntoResponse for BodyFault {
    fn into_response(self) -> Response {
        super::answer::error(StatusCode::BAD_REQUEST, &self.id, self.code, self.message)
    }
}

/// A request or notification that passed the check.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Checked {
    pub method: String,
    /// Null for a notification.
    pub id: Value,
    /// The protocol version its params' `_meta` names (2026-07-28 requests carry one).
    pub meta_version: Option<String>,
    /// What it acts on, when its params name it: `name` (a tool, a prompt) or `uri` (a
    /// resource).
    pub target: Option<String>,
    /// It proposes a protocol version in `params.protocolVersion`: an `initialize` handshake
    /// of the session era (a 2026-07-28-style request of that method carries none).
    pub handshake: bool,
}

/// Checks that `bytes` are one JSON-RPC 2.0 message (request, notification or response);
/// returns a request or notification (a response passes as `None`).
pub(crate) fn check_message(bytes: &[u8]) -> Result<Option<Checked>, BodyFault> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| BodyFault::new(PARSE_ERROR, format!("parse error: {e}"), Value::Null))?;
    let Value::Object(message) = value else {
        let what = if value.is_array() {
            "a batch (an array); MCP messages are sent one per request"
        } else {
            "not a JSON object"
        };
        return Err(BodyFault::new(
            INVALID_REQUEST,
            format!("invalid request: the body is {what}"),
            Value::Null,
        ));
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(BodyFault::new(
            INVALID_REQUEST,
            "invalid request: `jsonrpc` must be \"2.0\"",
            id,
        ));
    }
    let checked = |method: &String, params: Option<&serde_json::Map<String, Value>>| Checked {
        method: method.clone(),
        id: id.clone(),
        meta_version: params
            .and_then(super::answer::meta_version)
            .map(str::to_owned),
        target: params
            .and_then(|p| p.get("name").or_else(|| p.get("uri")))
            .and_then(Value::as_str)
            .map(str::to_owned),
        handshake: params
            .and_then(|p| p.get("protocolVersion"))
            .is_some_and(Value::is_string),
    };
    match message.get("method") {
        Some(Value::String(method)) => match message.get("params") {
            None | Some(Value::Null) if method != "tools/call" => Ok(Some(checked(method, None))),
            Some(Value::Object(params)) if method != "tools/call" => {
                Ok(Some(checked(method, Some(params))))
            }
            None | Some(Value::Null) => Err(BodyFault::new(
                INVALID_PARAMS,
                "invalid params: tools/call needs params with a tool `name`",
                id,
            )),
            Some(Value::Object(params)) => {
                check_tool_call(params, id.clone()).map(|()| Some(checked(method, Some(params))))
            }
            Some(_) => Err(BodyFault::new(
                INVALID_PARAMS,
                "invalid params: `params` must be an object",
                id,
            )),
        },
        Some(_) => Err(BodyFault::new(
            INVALID_REQUEST,
            "invalid request: `method` must be a string",
            id,
        )),
        None if message.contains_key("result") || message.contains_key("error") => Ok(None),
        None => Err(BodyFault::new(
            INVALID_REQUEST,
            "invalid request: neither a request (`method`) nor a response (`result`/`error`)",
            id,
        )),
    }
}

/// `tools/call` params: a string `name` and, when present, object `arguments`.
fn check_tool_call(params: &serde_json::Map<String, Value>, id: Value) -> Result<(), BodyFault> {
    if !params.get("name").is_some_and(Value::is_string) {
        return Err(BodyFault::new(
            INVALID_PARAMS,
            "invalid params: tools/call needs a string `name`",
            id,
        ));
    }
    match params.get("arguments") {
        None | Some(Value::Object(_)) => Ok(()),
        Some(_) => Err(BodyFault::new(
            INVALID_PARAMS,
            "invalid params: tools/call `arguments` must be an object",
            id,
        )),
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

fn too_large(limit: usize) -> Response {
    let body = json!({
        "error": "payload_too_large",
        "message": format!("the request body is larger than http.max_body_bytes ({limit} bytes)"),
    });
    (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(body)).into_response()
}

/// Middleware (state: `http.max_body_bytes`): reads a JSON `POST` body within the limit and
/// refuses what is not one JSON-RPC message; passes everything else through.
pub(crate) async fn check_jsonrpc_body(
    State(limit): State<usize>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST || !is_json(request.headers()) {
        return next.run(request).await;
    }
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return too_large(limit);
    }
    let (parts, body) = request.into_parts();
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0) as usize);
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            let body =
                json!({"error": "bad_request", "message": "the request body could not be read"});
            return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
        };
        if bytes.len() + chunk.len() > limit {
            return too_large(limit);
        }
        bytes.extend_from_slice(&chunk);
    }
    let mut parts = parts;
    match check_message(&bytes) {
        Err(fault) => return fault.into_response(),
        Ok(Some(request)) => {
            if request.method == "initialize" {
                parts.extensions.insert(crate::auth::OpensSession);
            }
            if request.method == "tools/call" {
                let version =
                    super::answer::request_version(request.meta_version.as_deref(), &parts.headers);
                parts.extensions.insert(crate::limits::ToolCallRequest {
                    id: request.id.clone(),
                    version,
                });
            }
            parts.extensions.insert(request);
        }
        Ok(None) => {}
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &[u8]) -> Option<i64> {
        check_message(body).err().map(|f| f.code)
    }

    #[test]
    fn one_message_of_any_kind_passes() {
        for ok in [
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#.as_slice(),
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","id":"a","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"}}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t"}}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":{}}}"#,
        ] {
            assert_eq!(code(ok), None, "{}", String::from_utf8_lossy(ok));
        }
    }

    #[test]
    fn faults_get_the_matching_code_and_keep_the_id() {
        for (body, expected) in [
            (b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"meth".as_slice(), PARSE_ERROR),
            (b"", PARSE_ERROR),
            (b"{\"jsonrpc\":\"2.0\",\"method\":\"a\xff\"}", PARSE_ERROR),
            (br#"{"jsonrpc":"2.0","id":1,"method":"\ud800"}"#, PARSE_ERROR),
            (b"42", INVALID_REQUEST),
            (b"[]", INVALID_REQUEST),
            (br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, INVALID_REQUEST),
            (br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, INVALID_REQUEST),
            (br#"{"jsonrpc":"2.0","id":1,"method":7}"#, INVALID_REQUEST),
            (br#"{"jsonrpc":"2.0","id":1}"#, INVALID_REQUEST),
            (br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#, INVALID_PARAMS),
            (br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#, INVALID_PARAMS),
            (br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}"#, INVALID_PARAMS),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":[1]}}"#,
                INVALID_PARAMS,
            ),
        ] {
            assert_eq!(code(body), Some(expected), "{}", String::from_utf8_lossy(body));
        }
        let fault = check_message(br#"{"jsonrpc":"2.0","id":"x-9","method":"ping","params":3}"#)
            .unwrap_err();
        assert_eq!(fault.id, json!("x-9"));
    }

    #[test]
    fn deep_nesting_is_a_parse_error_not_a_crash() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(code(deep.as_bytes()), Some(PARSE_ERROR));
    }
}
