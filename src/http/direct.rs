//! 2026-07-28 requests answered directly: `tools/call`, `tools/list` and `server/discover`
//! without rmcp's transport in between.
//!
//! For a request of the per-request era rmcp builds a whole service per request: a service
//! loop and a spawned task, a channel, a second copy of the tool's schema to check
//! `Mcp-Param-*` headers against, and an SSE stream for the answer. That costs more than most
//! tools do (`docs/internals/transport-cost.md` has the figures). The plain cases do not need
//! any of it, so this layer serves them with one typed parse of the body, one task for the
//! handler (called as rmcp's service loop calls it) and one write.
//!
//! What it takes ([`takes`]): a `POST` without a session whose body (already checked by
//! [`super::body`]) is one request of [`DIRECT_METHODS`] naming 2026-07-28 in its `_meta`, whose
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers say what its body says, with no
//! `Mcp-Param-*` header (nor a tool whose schema asks for one), and whose `_meta` holds every key
//! 2026-07-28 requires. Everything else goes on to rmcp unchanged, so every refusal stays
//! rmcp's own and reads the same.
//!
//! How it answers: an answer ready within [`JSON_WITHIN`] is one `application/json` body (with
//! any progress sent just before it, an SSE stream, as rmcp sends it). A call that takes longer,
//! or reports progress first, answers on an SSE stream: its progress notifications, its answer, and a keep-alive comment every
//! `http.progress_interval_secs` meanwhile (as rmcp's streams). A client that hangs up cancels
//! the request's token, as it does under rmcp; shutdown closes the stream.
//!
//! Progress: handlers report it through an rmcp `Peer`, and rmcp makes a peer only for a running
//! service. All direct requests share one ([`Relay`]), whose transport hands each progress
//! notification to its request's answer by its token: the client's own, or a random one while
//! another request in flight has the same (the client's is put back on the way out).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, GetExtensions, GetMeta, JsonRpcRequest,
    NumberOrString, ProgressToken, ProtocolVersion, RequestId, ServerJsonRpcMessage,
    ServerNotification, ServerResult,
};
use rmcp::service::{RequestContext, RunningService, serve_directly};
use rmcp::transport::Transport;
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, Service};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::Instrument;

use super::body::Checked;

/// The methods served here; every other goes to rmcp.
const DIRECT_METHODS: [&str; 3] = ["tools/call", "tools/list", "server/discover"];

/// How long a call may take and still be answered as one JSON body; past it the answer comes
/// on an SSE stream, which keeps the connection visibly alive while the call waits.
pub(crate) const JSON_WITHIN: Duration = Duration::from_secs(1);

/// Progress notifications a slow reader may leave unread before the call's next one waits.
const PROGRESS_BUFFER: usize = 16;

/// A message on its way to a direct request's client. Boxed: a channel allocates room for 32
/// of its messages when it is made, and a message is 496 bytes, so each waiting call held
/// 15.9 KB of room for progress it rarely sends.
type Outgoing = Box<ServerJsonRpcMessage>;

/// The state of the direct path: the handler prototype, where progress goes, how the streams
/// behave.
pub(crate) struct Direct<H: ServerHandler> {
    handler: H,
    max_body_bytes: usize,
    keep_alive: Duration,
    /// Cancelled when shutdown closes the MCP streams.
    streams: CancellationToken,
    relay: Arc<Relay>,
    /// The shared peer, started with the first direct request (it needs a runtime).
    peer: OnceLock<RunningService<RoleServer, H>>,
    /// Whether a tool's input schema binds arguments to `Mcp-Param-*` headers, by tool name
    /// (only tools that exist: the handler's, so bounded).
    param_headers: RwLock<HashMap<String, bool>>,
}

impl<H: ServerHandler + Clone> Direct<H> {
    pub(crate) fn new(
        handler: H,
        max_body_bytes: usize,
        keep_alive: Duration,
        streams: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Self {
            handler,
            max_body_bytes,
            keep_alive,
            streams,
            relay: Arc::default(),
            peer: OnceLock::new(),
            param_headers: RwLock::default(),
        })
    }

    /// Whether a call of `tool` needs rmcp's check of `Mcp-Param-*` headers: its input schema
    /// binds an argument to one (`x-mcp-header`), which the client must then send. Unknown
    /// tools need none (the handler refuses them).
    fn binds_param_headers(&self, tool: &str) -> bool {
        let known = self
            .param_headers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tool)
            .copied();
        if let Some(binds) = known {
            return binds;
        }
        let Some(found) = self.handler.get_tool(tool) else {
            return false;
        };
        let binds = names_param_header(&Value::Object((*found.input_schema).clone()));
        self.param_headers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(tool.to_owned(), binds);
        binds
    }

    fn peer(&self) -> Peer<RoleServer> {
        self.peer
            .get_or_init(|| {
                let (refusals, refused) = mpsc::channel(PROGRESS_BUFFER);
                let transport = RelayTransport {
                    relay: self.relay.clone(),
                    refusals,
                    refused,
                    closed: self.streams.clone(),
                };
                serve_directly(self.handler.clone(), transport, None)
            })
            .peer()
            .clone()
    }

    /// Runs `request` on a task of its own and answers it: JSON when done within
    /// [`JSON_WITHIN`], else SSE. A client that hangs up cancels the call's token (the call
    /// ends as its tools end on cancellation, with its audit record), as under rmcp.
    async fn answer(&self, parts: Parts, request: JsonRpcRequest<ClientRequest>) -> Response {
        let JsonRpcRequest {
            id, mut request, ..
        } = request;
        let mut meta = std::mem::take(request.get_meta_mut());
        let mut extensions = std::mem::take(request.extensions_mut());
        extensions.insert(parts);
        let (sender, mut progress) = mpsc::channel::<Outgoing>(PROGRESS_BUFFER);
        let route = meta.get_progress_token().map(|client| {
            let (token, route) = self.relay.open(client, sender.clone());
            meta.set_progress_token(token);
            route
        });
        let cancelled = CancellationToken::new();
        let hang_up = cancelled.clone().drop_guard();
        let mut context = RequestContext::new(id.clone(), self.peer());
        context.ct = cancelled;
        context.meta = meta;
        context.extensions = extensions;
        let handler = self.handler.clone();
        let running = async move {
            let outcome = handler.handle_request(request, context).await;
            drop(route);
            outcome
        };
        let mut call = tokio::spawn(running.instrument(tracing::Span::current()));
        let first = tokio::select! {
            biased;
            joined = &mut call => {
                let answer = message(id, joined.unwrap_or_else(failed));
                // Progress sent just before the answer goes with it, as rmcp sends it.
                let mut told = Vec::new();
                while let Ok(note) = progress.try_recv() {
                    told.push(note);
                }
                if told.is_empty() {
                    return json_answer(answer);
                }
                told.push(Box::new(answer));
                return self.sse_answer(futures::stream::iter(told), None);
            }
            first = progress.recv() => first,
            () = tokio::time::sleep(JSON_WITHIN) => None,
        };
        tokio::spawn(async move {
            let outcome = call.await.unwrap_or_else(failed);
            // The receiver is gone when the client hung up; the answer has nowhere to go.
            let _ = sender.send(Box::new(message(id, outcome))).await;
        });
        let rest = futures::stream::poll_fn(move |cx| progress.poll_recv(cx));
        self.sse_answer(futures::stream::iter(first).chain(rest), Some(hang_up))
    }

    /// The SSE answer of a call: `messages`, its answer last, with a keep-alive comment every
    /// `http.progress_interval_secs` meanwhile; `hang_up` cancels the call when the stream is
    /// dropped before its end.
    fn sse_answer(
        &self,
        messages: impl futures::Stream<Item = Outgoing> + Send + 'static,
        hang_up: Option<DropGuard>,
    ) -> Response {
        let events = messages
            .map(move |message| {
                let _ = &hang_up;
                let data = serde_json::to_string(&message).unwrap_or_else(|e| {
                    tracing::error!(error = %e, "an MCP message could not be written");
                    String::new()
                });
                Ok::<_, Infallible>(Event::default().data(data))
            })
            .take_until(self.streams.clone().cancelled_owned());
        let mut response = Sse::new(events)
            .keep_alive(KeepAlive::new().interval(self.keep_alive))
            .into_response();
        // As rmcp's streams: a proxy that buffers would hold back keep-alives and progress.
        response.headers_mut().insert(
            HeaderName::from_static("x-accel-buffering"),
            HeaderValue::from_static("no"),
        );
        response
    }
}

/// The outcome of a call whose task panicked or was aborted.
fn failed(error: tokio::task::JoinError) -> Result<ServerResult, ErrorData> {
    tracing::error!(%error, "a direct MCP call failed");
    Err(ErrorData::internal_error(
        "the call failed inside the gateway",
        None,
    ))
}

/// Whether a request is one this layer serves, by its headers and the body check's reading.
pub(crate) fn takes(method: &Method, headers: &HeaderMap, checked: Option<&Checked>) -> bool {
    let version = ProtocolVersion::V_2026_07_28.as_str();
    let Some(checked) = checked else {
        return false;
    };
    let header_is = |name: &str, value: &str| {
        headers.get_all(name).iter().count() == 1
            && headers.get(name).and_then(|v| v.to_str().ok()) == Some(value)
    };
    // A name in the header's encoded form (`=?base64?…?=`) is rmcp's to decode and compare.
    let named = checked.method != "tools/call"
        || checked
            .target
            .as_deref()
            .is_some_and(|name| !name.starts_with("=?") && header_is("mcp-name", name));
    method == Method::POST
        && !headers.contains_key("mcp-session-id")
        && !headers
            .keys()
            .any(|name| name.as_str().starts_with("mcp-param-"))
        && DIRECT_METHODS.contains(&checked.method.as_str())
        && checked.meta_version.as_deref() == Some(version)
        && header_is("mcp-protocol-version", version)
        && header_is("mcp-method", &checked.method)
        && named
}

/// The layer: serves what [`takes`] accepts, passes on everything else.
pub(crate) async fn serve<H: ServerHandler + Clone>(
    State(direct): State<Arc<Direct<H>>>,
    request: Request,
    next: Next,
) -> Response {
    let checked = request.extensions().get::<Checked>();
    let binds_headers = |checked: &Checked| {
        checked.method == "tools/call"
            && checked
                .target
                .as_deref()
                .is_some_and(|tool| direct.binds_param_headers(tool))
    };
    if !takes(request.method(), request.headers(), checked) || checked.is_some_and(binds_headers) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, direct.max_body_bytes).await else {
        let id = Value::Null;
        let text = "the request body could not be read".to_owned();
        return super::answer::error(
            StatusCode::BAD_REQUEST,
            &id,
            ErrorCode::INVALID_REQUEST.0.into(),
            text,
        );
    };
    match serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) {
        Ok(ClientJsonRpcMessage::Request(request))
            if request
                .request
                .get_meta()
                .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty() =>
        {
            direct.answer(parts, request).await
        }
        // Not one this path serves after all: rmcp reads it (and refuses it in its words).
        _ => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
    }
}

/// Whether a JSON schema binds any property to a header (`x-mcp-header`, anywhere in it).
fn names_param_header(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            map.contains_key("x-mcp-header") || map.values().any(names_param_header)
        }
        Value::Array(items) => items.iter().any(names_param_header),
        _ => false,
    }
}

/// The JSON-RPC message answering request `id`.
fn message(id: RequestId, outcome: Result<ServerResult, ErrorData>) -> ServerJsonRpcMessage {
    match outcome {
        Ok(result) => ServerJsonRpcMessage::response(result, id),
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    }
}

/// An answer as one JSON body, with the status rmcp gives the same answer (a 2026-07-28 error
/// the client must act on is not a `200`).
fn json_answer(message: ServerJsonRpcMessage) -> Response {
    match serde_json::to_vec(&message) {
        Ok(body) => (
            status_of(&message),
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(e) => super::answer::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &Value::Null,
            ErrorCode::INTERNAL_ERROR.0.into(),
            format!("the answer could not be written: {e}"),
        ),
    }
}

/// The HTTP status of an answer, as rmcp maps a per-request era's errors.
fn status_of(message: &ServerJsonRpcMessage) -> StatusCode {
    let ServerJsonRpcMessage::Error(error) = message else {
        return StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// Where the direct requests' progress goes: one route per request that asked for progress,
/// keyed by the token its handler uses. That is the client's own token, unless another request
/// in flight already has it (clients choose tokens freely, and may choose alike): then a
/// random one, so that no request's progress reaches another's client.
#[derive(Default)]
struct Relay {
    routes: Mutex<HashMap<ProgressToken, Route>>,
}

/// One request's progress: the token its client chose, and its answer's channel.
struct Route {
    client: ProgressToken,
    to: mpsc::Sender<Outgoing>,
}

/// A route, removed when the call ends.
struct OpenRoute {
    relay: Arc<Relay>,
    key: ProgressToken,
}

impl Drop for OpenRoute {
    fn drop(&mut self) {
        self.relay.routes().remove(&self.key);
    }
}

impl Relay {
    fn routes(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, Route>> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens a route for a request whose client chose `client`: the token the handler uses.
    fn open(
        self: &Arc<Self>,
        client: ProgressToken,
        to: mpsc::Sender<Outgoing>,
    ) -> (ProgressToken, OpenRoute) {
        let mut routes = self.routes();
        let mut key = client.clone();
        while routes.contains_key(&key) {
            let unique = format!("muxgate-{:016x}", rand::random::<u64>());
            key = ProgressToken(NumberOrString::String(unique.into()));
        }
        routes.insert(key.clone(), Route { client, to });
        let route = OpenRoute {
            relay: self.clone(),
            key: key.clone(),
        };
        (key, route)
    }

    /// Where `message` goes, with its client's token put back; `None` for anything but the
    /// progress of an open route (direct requests send nothing else).
    fn deliver(&self, message: ServerJsonRpcMessage) -> Option<(mpsc::Sender<Outgoing>, Outgoing)> {
        let ServerJsonRpcMessage::Notification(mut notification) = message else {
            return None;
        };
        let ServerNotification::ProgressNotification(progress) = &mut notification.notification
        else {
            return None;
        };
        let routes = self.routes();
        let route = routes.get(&progress.params.progress_token)?;
        progress.params.progress_token = route.client.clone();
        Some((
            route.to.clone(),
            Box::new(ServerJsonRpcMessage::Notification(notification)),
        ))
    }
}

/// The shared peer's transport: it delivers progress to the relay's routes, and answers a
/// request to the client with the refusal rmcp gives one at 2026-07-28 (that version has no
/// server-to-client requests; the tools ask in their results instead), so that a handler
/// never waits for an answer no client will send. It receives nothing else, until shutdown
/// ends it.
struct RelayTransport {
    relay: Arc<Relay>,
    refusals: mpsc::Sender<ClientJsonRpcMessage>,
    refused: mpsc::Receiver<ClientJsonRpcMessage>,
    closed: CancellationToken,
}

impl Transport<RoleServer> for RelayTransport {
    type Error = Infallible;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let refusal = match &item {
            ServerJsonRpcMessage::Request(request) => Some(ClientJsonRpcMessage::error(
                ErrorData::invalid_request(
                    "server-to-client requests are not allowed on protocol 2026-07-28 or later; \
                     return InputRequiredResult instead",
                    None,
                ),
                Some(request.id.clone()),
            )),
            _ => None,
        };
        let delivery = self.relay.deliver(item);
        let refusals = self.refusals.clone();
        async move {
            if let Some(refusal) = refusal {
                // Gone only at shutdown, when the peer's waits end anyway.
                let _ = refusals.send(refusal).await;
            }
            if let Some((to, message)) = delivery {
                // The request ended meanwhile: its progress has nowhere to go.
                let _ = to.send(message).await;
            }
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        let closed = self.closed.clone();
        let refused = &mut self.refused;
        async move {
            tokio::select! {
                () = closed.cancelled() => None,
                refusal = refused.recv() => refusal,
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        std::future::ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ProgressNotificationParam, ServerNotification};

    use super::*;

    fn checked(method: &str, target: Option<&str>) -> Checked {
        Checked {
            method: method.to_owned(),
            id: Value::from(1),
            meta_version: Some("2026-07-28".to_owned()),
            target: target.map(str::to_owned),
            handshake: false,
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, value.parse().unwrap());
        }
        headers
    }

    const PLAIN: [(&str, &str); 3] = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "list_servers"),
    ];

    #[test]
    fn it_takes_only_plain_requests_whose_headers_say_what_their_body_says() {
        let call = checked("tools/call", Some("list_servers"));
        assert!(takes(&Method::POST, &headers(&PLAIN), Some(&call)));
        assert!(!takes(&Method::GET, &headers(&PLAIN), Some(&call)));
        assert!(!takes(&Method::POST, &headers(&PLAIN), None));

        let with = |extra: (&'static str, &str)| {
            let mut pairs = PLAIN.to_vec();
            pairs.push(extra);
            headers(&pairs)
        };
        for extra in [
            ("mcp-session-id", "s"),
            ("mcp-param-target", "%1"),
            ("mcp-name", "list_servers"),
            ("mcp-protocol-version", "2026-07-28"),
        ] {
            assert!(
                !takes(&Method::POST, &with(extra), Some(&call)),
                "{extra:?}"
            );
        }
        let without = |name: &str| {
            let pairs: Vec<_> = PLAIN.iter().copied().filter(|(n, _)| *n != name).collect();
            headers(&pairs)
        };
        for name in ["mcp-protocol-version", "mcp-method", "mcp-name"] {
            assert!(!takes(&Method::POST, &without(name), Some(&call)), "{name}");
        }

        let other_name = checked("tools/call", Some("list_sessions"));
        assert!(!takes(&Method::POST, &headers(&PLAIN), Some(&other_name)));
        let mut older = call.clone();
        older.meta_version = Some("2025-06-18".to_owned());
        assert!(!takes(&Method::POST, &headers(&PLAIN), Some(&older)));

        let list = checked("tools/list", None);
        let list_headers = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ]);
        assert!(takes(&Method::POST, &list_headers, Some(&list)));
        let read = checked("resources/read", Some("tmux://fleet"));
        let read_headers = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "resources/read"),
            ("mcp-name", "tmux://fleet"),
        ]);
        assert!(!takes(&Method::POST, &read_headers, Some(&read)));
    }

    #[test]
    fn a_schema_binding_an_argument_to_a_header_is_found_at_any_depth() {
        let plain = serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert!(!names_param_header(&plain));
        let nested = serde_json::json!({"type": "object", "properties": {"outer": {
            "type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}}});
        assert!(names_param_header(&nested));
    }

    #[derive(Clone)]
    struct Idle;
    impl ServerHandler for Idle {}

    /// Through the shared peer: progress reaches its route under the client's token, and a
    /// request to the client is refused at once instead of waiting for an answer.
    #[tokio::test]
    async fn the_shared_peer_relays_progress_and_refuses_requests_to_the_client() {
        let direct = Direct::new(Idle, 1024, Duration::from_secs(1), CancellationToken::new());
        let peer = direct.peer();
        let (to, mut progress) = mpsc::channel(1);
        let client = ProgressToken(NumberOrString::Number(1));
        let (token, _route) = direct.relay.open(client, to);
        peer.notify_progress(ProgressNotificationParam::new(token, 2.0))
            .await
            .unwrap();
        let delivered = tokio::time::timeout(Duration::from_secs(5), progress.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(token_of(&delivered), 1);

        let ping = rmcp::model::ServerRequest::PingRequest(rmcp::model::PingRequest::default());
        let asked = tokio::time::timeout(Duration::from_secs(5), peer.send_request(ping)).await;
        match asked.expect("answered at once") {
            Err(rmcp::ServiceError::McpError(error)) => {
                assert_eq!(error.code, ErrorCode::INVALID_REQUEST, "{error:?}");
            }
            other => panic!("not the refusal: {other:?}"),
        }
    }

    /// A tool that reports progress under the call's token and answers at once.
    #[derive(Clone)]
    struct Quick;
    impl ServerHandler for Quick {
        async fn call_tool(
            &self,
            _: rmcp::model::CallToolRequestParams,
            context: RequestContext<RoleServer>,
        ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
            if let Some(token) = context.meta.get_progress_token() {
                let note = ProgressNotificationParam::new(token, 1.0);
                context.peer.notify_progress(note).await.map_err(|e| {
                    ErrorData::internal_error(format!("progress not sent: {e}"), None)
                })?;
            }
            Ok(rmcp::model::CallToolResult::success(Vec::new()).into())
        }
    }

    /// A tool whose task panics.
    #[derive(Clone)]
    struct Panicking;
    impl ServerHandler for Panicking {
        async fn call_tool(
            &self,
            _: rmcp::model::CallToolRequestParams,
            _: RequestContext<RoleServer>,
        ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
            panic!("a tool that fails inside the gateway")
        }
    }

    /// A `tools/call` request, with a progress token when `token` is given.
    fn call(token: Option<&str>) -> JsonRpcRequest<ClientRequest> {
        let mut meta = serde_json::json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        if let Some(token) = token {
            meta["progressToken"] = token.into();
        }
        let message = serde_json::json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "t", "arguments": {}, "_meta": meta},
        });
        match serde_json::from_value(message).unwrap() {
            ClientJsonRpcMessage::Request(request) => request,
            other => panic!("not a request: {other:?}"),
        }
    }

    async fn answered<H: ServerHandler + Clone>(
        handler: H,
        request: JsonRpcRequest<ClientRequest>,
    ) -> (Option<HeaderValue>, String) {
        let direct = Direct::new(
            handler,
            1024,
            Duration::from_secs(1),
            CancellationToken::new(),
        );
        let parts = http::Request::new(()).into_parts().0;
        let response = tokio::time::timeout(Duration::from_secs(5), direct.answer(parts, request))
            .await
            .expect("answered");
        let kind = response.headers().get(header::CONTENT_TYPE).cloned();
        let body = axum::body::to_bytes(response.into_body(), 1 << 16);
        let body = tokio::time::timeout(Duration::from_secs(5), body)
            .await
            .expect("the answer ends")
            .unwrap();
        (kind, String::from_utf8(body.to_vec()).unwrap())
    }

    /// Progress sent just before a quick answer is not lost: both go out, as SSE, the progress
    /// first and under the client's token.
    #[tokio::test]
    async fn progress_just_before_a_quick_answer_goes_with_it() {
        let (kind, body) = answered(Quick, call(Some("mine"))).await;
        assert_eq!(kind.unwrap(), "text/event-stream", "{body}");
        let progress = body.find("notifications/progress").expect(&body);
        let answer = body.find("\"result\"").expect(&body);
        assert!(progress < answer, "{body}");
        assert!(body.contains("\"progressToken\":\"mine\""), "{body}");

        let (kind, body) = answered(Quick, call(None)).await;
        assert_eq!(kind.unwrap(), "application/json", "{body}");
        assert!(body.contains("\"result\""), "{body}");
    }

    /// A call whose task fails is answered with a JSON-RPC internal error, not a dropped
    /// connection.
    #[tokio::test]
    async fn a_call_that_fails_inside_the_gateway_is_an_internal_error() {
        let (kind, body) = answered(Panicking, call(None)).await;
        assert_eq!(kind.unwrap(), "application/json", "{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["id"], 7, "{body}");
        assert_eq!(
            answer["error"]["code"],
            ErrorCode::INTERNAL_ERROR.0,
            "{body}"
        );
    }

    fn progress(token: ProgressToken) -> ServerJsonRpcMessage {
        ServerJsonRpcMessage::notification(ServerNotification::ProgressNotification(
            rmcp::model::Notification::new(ProgressNotificationParam::new(token, 1.0)),
        ))
    }

    fn token_of(message: &ServerJsonRpcMessage) -> Value {
        serde_json::to_value(message).unwrap()["params"]["progressToken"].clone()
    }

    #[test]
    fn progress_reaches_its_own_request_under_its_clients_token() {
        let relay = Arc::new(Relay::default());
        let same = ProgressToken(NumberOrString::String("same".into()));
        let (first_to, _first) = mpsc::channel(1);
        let (second_to, _second) = mpsc::channel(1);
        let (first_token, first_route) = relay.open(same.clone(), first_to.clone());
        let (second_token, _second_route) = relay.open(same, second_to.clone());
        assert_ne!(first_token, second_token);

        let (to, message) = relay.deliver(progress(second_token)).expect("delivered");
        assert!(to.same_channel(&second_to));
        assert_eq!(token_of(&message), "same");

        drop(first_route);
        assert!(relay.deliver(progress(first_token)).is_none());
        let unknown = ProgressToken(NumberOrString::String("7".into()));
        assert!(relay.deliver(progress(unknown)).is_none());
    }
}
