//! Observing MCP requests: one span, one histogram observation and one log line each.
//!
//! Names follow the OpenTelemetry semantic conventions for MCP: the span is named
//! `{mcp.method.name} {target}` (`tools/call list_sessions`), has kind `server` and the
//! attributes `mcp.method.name`, `gen_ai.tool.name`, `gen_ai.operation.name`, `mcp.session.id`,
//! `mcp.protocol.version`, `jsonrpc.request.id` and, on failure, `error.type`; the histogram is
//! `mcp.server.operation.duration` (Prometheus: `mcp_server_operation_duration_seconds`).
//!
//! `error.type` is the JSON-RPC error code for a protocol error, `tool_error` for a tool result
//! with `isError`, and absent on success.
//!
//! The span's parent is the client's W3C trace context: `traceparent`/`tracestate` in the
//! request's `params._meta` (how MCP carries it), else in the HTTP headers. Spans opened inside
//! the request (the tmux command batches of a tool call) become its children. Without an OTLP
//! endpoint the spans still structure the logs and cost little.
//!
//! The log line (`target: muxgate::request`) carries method, tool, `sub`, MCP session,
//! duration and error type; never arguments, never tokens.

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use http::HeaderMap;
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use rmcp::model::{CallToolResponse, MetaObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use tracing::Instrument as _;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::Metrics;

/// Longest tool name copied into a span attribute (the name is client input when unknown).
const MAX_TOOL_ATTRIBUTE: usize = 64;

/// The tool a `tools/call` names.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolName<'a> {
    pub name: &'a str,
    /// Whether the catalog has it: only known names become metric labels.
    pub known: bool,
}

/// One MCP request being observed. Start it before handing the request context to the
/// handler, then [`run`](Self::run) the handler's future inside it.
pub(crate) struct RequestObserver {
    metrics: Arc<Metrics>,
    span: tracing::Span,
    method: &'static str,
    tool_label: Option<String>,
    tool: Option<String>,
    sub: Option<String>,
    mcp_session: Option<String>,
    started: Instant,
}

/// Who sent a request, when it was authenticated: its token's `sub` and its MCP session.
#[derive(Debug, Default)]
pub(crate) struct Requester {
    pub sub: Option<String>,
    pub mcp_session: Option<String>,
}

impl RequestObserver {
    pub(crate) fn start(
        metrics: &Arc<Metrics>,
        method: &'static str,
        tool: Option<ToolName<'_>>,
        context: &RequestContext<RoleServer>,
        who: Requester,
    ) -> Self {
        let Requester { sub, mcp_session } = who;
        let tool_attribute = tool.map(|t| truncate(t.name, MAX_TOOL_ATTRIBUTE));
        let span_name = match &tool_attribute {
            Some(tool) => format!("{method} {tool}"),
            None => method.to_owned(),
        };
        let span = tracing::info_span!(
            target: "muxgate::mcp",
            "mcp.request",
            otel.name = %span_name,
            otel.kind = "server",
            otel.status_code = Empty,
            mcp.method.name = method,
            gen_ai.tool.name = Empty,
            gen_ai.operation.name = Empty,
            mcp.session.id = Empty,
            mcp.protocol.version = Empty,
            jsonrpc.request.id = %context.id,
            error.type = Empty,
            muxgate.server = Empty,
            muxgate.host = Empty,
        );
        if let Some(tool) = &tool_attribute {
            span.record("gen_ai.tool.name", tool.as_str());
            span.record("gen_ai.operation.name", "execute_tool");
        }
        if let Some(session) = &mcp_session {
            span.record("mcp.session.id", session.as_str());
        }
        if let Some(version) = context.protocol_version() {
            span.record("mcp.protocol.version", version.as_str());
        }
        let headers = context
            .extensions
            .get::<http::request::Parts>()
            .map(|parts| &parts.headers);
        if let Some(parent) = remote_parent(&context.meta, headers) {
            // Fails only when no OpenTelemetry layer is installed: then there is no trace.
            let _ = span.set_parent(parent);
        }
        Self {
            metrics: metrics.clone(),
            span,
            method,
            tool_label: tool.filter(|t| t.known).map(|t| t.name.to_owned()),
            tool: tool_attribute,
            sub,
            mcp_session,
            started: Instant::now(),
        }
    }

    /// Runs the handler inside the span, then records its duration and outcome.
    /// `tool_error` tells whether a successful answer is a tool-level failure.
    ///
    /// The handler's future is boxed before the returned one is made, so that it is stored
    /// once, on the heap. rmcp's dispatch of a request is one future as large as its largest
    /// handler, held for as long as any request runs: unboxed, `resources/read` (22.7 KB) sized
    /// every waiting `tools/call`.
    pub(crate) fn run<T>(
        self,
        work: impl Future<Output = Result<T, ErrorData>>,
        tool_error: impl FnOnce(&T) -> bool,
    ) -> impl Future<Output = Result<T, ErrorData>> {
        let work = Box::pin(work.instrument(self.span.clone()));
        async move { self.finish(work.await, tool_error) }
    }

    /// Records a handler's duration and outcome, and hands its result on.
    fn finish<T>(
        self,
        result: Result<T, ErrorData>,
        tool_error: impl FnOnce(&T) -> bool,
    ) -> Result<T, ErrorData> {
        let error_type: Option<Cow<'static, str>> = match &result {
            Ok(answer) if tool_error(answer) => Some("tool_error".into()),
            Ok(_) => None,
            Err(error) => Some(error.code.0.to_string().into()),
        };
        let elapsed = self.started.elapsed();
        if let Some(error_type) = &error_type {
            self.span.record("error.type", error_type.as_ref());
            self.span.record("otel.status_code", "error");
        }
        self.metrics.observe_operation(
            self.method,
            self.tool_label.as_deref(),
            error_type.clone(),
            elapsed,
        );
        tracing::info!(
            target: "muxgate::request",
            method = self.method,
            tool = self.tool.as_deref(),
            sub = self.sub.as_deref(),
            mcp_session = self.mcp_session.as_deref(),
            duration_ms = elapsed.as_secs_f64() * 1000.0,
            error_type = error_type.as_deref(),
            "mcp request"
        );
        result
    }
}

/// Whether a `tools/call` answer is an `isError` result.
pub(crate) fn is_tool_error(response: &CallToolResponse) -> bool {
    matches!(response, CallToolResponse::Complete(result) if result.is_error == Some(true))
}

/// The client's trace context: from `_meta` (MCP's carrier), else from the HTTP headers.
/// `None` when neither holds a valid `traceparent`.
pub(crate) fn remote_parent(
    meta: &MetaObject,
    headers: Option<&HeaderMap>,
) -> Option<opentelemetry::Context> {
    let mut carrier = HashMap::new();
    if let Some(traceparent) = meta.get_traceparent() {
        carrier.insert("traceparent".to_owned(), traceparent.to_owned());
        if let Some(tracestate) = meta.get_tracestate() {
            carrier.insert("tracestate".to_owned(), tracestate.to_owned());
        }
    } else if let Some(headers) = headers {
        for key in ["traceparent", "tracestate"] {
            if let Some(value) = headers.get(key).and_then(|v| v.to_str().ok()) {
                carrier.insert(key.to_owned(), value.to_owned());
            }
        }
    }
    if !carrier.contains_key("traceparent") {
        return None;
    }
    let context = TraceContextPropagator::new().extract(&carrier);
    context.span().span_context().is_valid().then_some(context)
}

fn truncate(text: &str, max_chars: usize) -> String {
    text.chars().take(max_chars).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TraceId;
    use serde_json::json;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn meta(value: serde_json::Value) -> MetaObject {
        MetaObject(value.as_object().unwrap().clone())
    }

    fn trace_id(context: &opentelemetry::Context) -> TraceId {
        context.span().span_context().trace_id()
    }

    #[test]
    fn the_parent_comes_from_meta_first() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "traceparent",
            "00-11111111111111111111111111111111-2222222222222222-01"
                .parse()
                .unwrap(),
        );
        let from_meta = remote_parent(&meta(json!({"traceparent": PARENT})), Some(&headers))
            .expect("valid traceparent");
        assert_eq!(
            trace_id(&from_meta),
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap()
        );
        let from_headers = remote_parent(&meta(json!({})), Some(&headers)).expect("header");
        assert_eq!(
            trace_id(&from_headers),
            TraceId::from_hex("11111111111111111111111111111111").unwrap()
        );
    }

    #[test]
    fn invalid_or_missing_trace_context_gives_no_parent() {
        assert!(remote_parent(&meta(json!({})), None).is_none());
        assert!(remote_parent(&meta(json!({"traceparent": "garbage"})), None).is_none());
        assert!(remote_parent(&meta(json!({"traceparent": 7})), None).is_none());
        let all_zero = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
        assert!(remote_parent(&meta(json!({"traceparent": all_zero})), None).is_none());
    }
}
