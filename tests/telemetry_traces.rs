//! Trace export end to end: a `muxgate serve` process exports over OTLP/HTTP to a receiver in
//! this test (decoding protobuf as a collector would); a tool call carrying a W3C
//! `traceparent` in `params._meta` becomes a server span in the client's trace, with the MCP
//! semantic-convention attributes, and the tmux command batch it runs is its child.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use common::serve::ServeProcess;
use common::tmux::TestTmux;
use common::{RawMcp, TEST_SECRET};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::json;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN_ID: &str = "00f067aa0ba902b7";

/// What the receiver got: `(service.name, span)` pairs.
type Received = Arc<Mutex<Vec<(String, Span)>>>;

async fn receive(State(received): State<Received>, body: Bytes) -> Vec<u8> {
    let request = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
    let mut received = received.lock().unwrap();
    for resource_spans in request.resource_spans {
        let service = resource_spans
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .and_then(|kv| kv.value.as_ref()?.value.as_ref())
            .map(|v| match v {
                AnyValue::StringValue(s) => s.clone(),
                other => format!("{other:?}"),
            })
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                received.push((service.clone(), span));
            }
        }
    }
    ExportTraceServiceResponse::default().encode_to_vec()
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .map(|v| match v {
            AnyValue::StringValue(s) => s.clone(),
            AnyValue::IntValue(i) => i.to_string(),
            other => format!("{other:?}"),
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_is_a_span_in_the_clients_trace_and_its_tmux_batch_a_child() {
    let received: Received = Arc::default();
    let receiver = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let receiver_addr = receiver.local_addr().unwrap();
    let app = Router::new()
        .route("/v1/traces", post(receive))
        .with_state(received.clone());
    tokio::spawn(async move { axum::serve(receiver, app).await });

    let tmux = TestTmux::start();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("muxgate.toml");
    std::fs::write(
        &config,
        format!(
            "[tmux.servers.work]\nsocket_name = '{}'\n\
             [auth]\nsecret = '{TEST_SECRET}'\n\
             [otel]\nendpoint = 'http://{receiver_addr}'\nservice_name = 'muxgate-trace-test'\n",
            tmux.socket
        ),
    )
    .unwrap();
    let mut gateway = ServeProcess::start(&config, &dir.path().join("serve.log"), &[]).await;
    let loaded = muxgate::config::Config::load(Some(&config), std::iter::empty()).unwrap();
    let token =
        muxgate::gateway::mint_full_access(&loaded.config, "tracer", Duration::from_secs(600))
            .unwrap();

    let mut mcp = RawMcp::new(&gateway.mcp_url);
    mcp.bearer = Some(token);
    mcp.initialize().await;
    let answer = mcp
        .request(&json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {
                "name": "list_sessions",
                "arguments": {"server": "work"},
                "_meta": {
                    "traceparent": format!("00-{TRACE_ID}-{PARENT_SPAN_ID}-01"),
                    "tracestate": "vendor=value"
                }
            }
        }))
        .await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");

    // Spans are batched; shutdown flushes them.
    gateway.signal(libc::SIGTERM);
    let status = gateway.wait(Duration::from_secs(20)).await;
    assert!(status.success(), "{status}; log:\n{}", gateway.log());

    let received = received.lock().unwrap().clone();
    assert!(
        received
            .iter()
            .all(|(service, _)| service == "muxgate-trace-test"),
        "{:?}",
        received.iter().map(|(s, _)| s).collect::<Vec<_>>()
    );
    let spans: Vec<&Span> = received.iter().map(|(_, span)| span).collect();
    let call = spans
        .iter()
        .find(|s| s.name == "tools/call list_sessions")
        .unwrap_or_else(|| {
            panic!(
                "no tools/call span among {:?}",
                spans.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        });
    assert_eq!(hex::encode(&call.trace_id), TRACE_ID, "the client's trace");
    assert_eq!(
        hex::encode(&call.parent_span_id),
        PARENT_SPAN_ID,
        "the client's span"
    );
    assert_eq!(call.trace_state, "vendor=value");
    assert_eq!(call.kind, SpanKind::Server as i32);
    assert_eq!(
        attribute(call, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(
        attribute(call, "gen_ai.tool.name").as_deref(),
        Some("list_sessions")
    );
    assert_eq!(
        attribute(call, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(attribute(call, "mcp.session.id"), mcp.session_id);
    assert_eq!(attribute(call, "jsonrpc.request.id").as_deref(), Some("7"));
    assert_eq!(
        attribute(call, "mcp.protocol.version").as_deref(),
        Some("2025-11-25")
    );
    assert_eq!(attribute(call, "error.type"), None);
    // The server the call addresses; a server of this machine has no host.
    assert_eq!(attribute(call, "muxgate.server").as_deref(), Some("work"));
    assert_eq!(attribute(call, "muxgate.host"), None);

    let batch = spans
        .iter()
        .find(|s| s.name == "tmux batch" && s.parent_span_id == call.span_id)
        .unwrap_or_else(|| panic!("no tmux batch under the call: {spans:#?}"));
    assert_eq!(batch.trace_id, call.trace_id);
    assert_eq!(attribute(batch, "tmux.server").as_deref(), Some("work"));
    // list_sessions reads sessions and clients in one pipelined batch.
    assert_eq!(attribute(batch, "tmux.commands").as_deref(), Some("2"));

    // A request without trace context starts its own trace.
    let initialize = spans
        .iter()
        .find(|s| s.name == "initialize")
        .expect("an initialize span");
    assert_ne!(hex::encode(&initialize.trace_id), TRACE_ID);
    assert!(initialize.parent_span_id.is_empty());
}
