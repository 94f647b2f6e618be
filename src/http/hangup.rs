//! Cancelling the work of a client that hangs up (sessions of 2025-era clients).
//!
//! In session mode rmcp runs a request inside the MCP session and sends its answer on the
//! SSE stream of the `POST` that carried it. When the client closes that connection before the
//! answer (a timeout, a crash, a Ctrl-C), the stream is dropped but the handler keeps running:
//! a 60 s `wait_for_text` would hold its wait slot, output subscription and connection for
//! nothing. The gateway's session manager ([`super::sessions`]) hands out each request's stream
//! as an [`UntilAnswered`]: when it is dropped before it carried the request's response, it
//! delivers `notifications/cancelled` for that request to the session, exactly as if the
//! client had sent it. Tools already end their work on cancellation.
//!
//! Stateless (2026-07-28) requests are not routed through a session; rmcp, or the direct path
//! ([`super::direct`]), cancels those itself when their connection closes.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use serde_json::{Value, json};

/// The JSON-RPC id of a client request, when `message` is one.
pub(crate) fn request_id(message: &ClientJsonRpcMessage) -> Option<Value> {
    match message {
        ClientJsonRpcMessage::Request(request) => serde_json::to_value(&request.id).ok(),
        _ => None,
    }
}

/// Whether `message` answers the request with JSON-RPC id `id`.
fn answers(message: &ServerJsonRpcMessage, id: &Value) -> bool {
    match message {
        ServerJsonRpcMessage::Response(response) => {
            serde_json::to_value(&response.id).is_ok_and(|v| v == *id)
        }
        ServerJsonRpcMessage::Error(error) => {
            serde_json::to_value(&error.id).is_ok_and(|v| v == *id)
        }
        _ => false,
    }
}

/// The notification a client sends to cancel request `id`.
fn cancellation(id: &Value) -> Option<ClientJsonRpcMessage> {
    serde_json::from_value(json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "the client closed the connection"},
    }))
    .ok()
}

/// A request's response stream that cancels the request when dropped unanswered.
pub(crate) struct UntilAnswered<S, M: SessionManager> {
    inner: Pin<Box<S>>,
    /// Cleared once the response went out.
    pending: Option<(Arc<M>, SessionId, Value)>,
}

impl<S, M: SessionManager> UntilAnswered<S, M> {
    /// The stream that carries the answer to the request `request` (its [`request_id`]) in
    /// session `session` of `manager`. Without a request (the client sent a notification or a
    /// response) there is nothing to cancel.
    pub(crate) fn new(
        stream: S,
        request: Option<Value>,
        manager: &Arc<M>,
        session: &SessionId,
    ) -> Self {
        Self {
            inner: Box::pin(stream),
            pending: request.map(|id| (manager.clone(), session.clone(), id)),
        }
    }
}

impl<S, M> Stream for UntilAnswered<S, M>
where
    S: Stream<Item = ServerSseMessage>,
    M: SessionManager,
{
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        match &polled {
            Poll::Ready(Some(event)) => {
                let answered = match (&event.message, &self.pending) {
                    (Some(message), Some((_, _, id))) => answers(message, id),
                    _ => false,
                };
                if answered {
                    self.pending = None;
                }
            }
            // The stream ended on the server's side (answered, or the session closed).
            Poll::Ready(None) => self.pending = None,
            Poll::Pending => {}
        }
        polled
    }
}

impl<S, M: SessionManager> Drop for UntilAnswered<S, M> {
    fn drop(&mut self) {
        let Some((manager, session, id)) = self.pending.take() else {
            return;
        };
        let (Some(notification), Ok(runtime)) =
            (cancellation(&id), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        runtime.spawn(async move {
            // The session may be gone already; then there is nothing left to cancel.
            let _ = manager.accept_message(&session, notification).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancellation_names_the_request_and_responses_are_matched_by_id() {
        let request: ClientJsonRpcMessage = serde_json::from_value(json!({
            "jsonrpc": "2.0", "id": 7, "method": "ping"
        }))
        .unwrap();
        let id = request_id(&request).unwrap();
        assert_eq!(id, json!(7));
        let notification = serde_json::to_value(cancellation(&id).unwrap()).unwrap();
        assert_eq!(notification["method"], "notifications/cancelled");
        assert_eq!(notification["params"]["requestId"], 7);

        let answer: ServerJsonRpcMessage =
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": 7, "result": {}})).unwrap();
        let other: ServerJsonRpcMessage =
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": 8, "result": {}})).unwrap();
        let failure: ServerJsonRpcMessage = serde_json::from_value(
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -1, "message": "x"}}),
        )
        .unwrap();
        assert!(answers(&answer, &id));
        assert!(!answers(&other, &id));
        assert!(answers(&failure, &id));
        let notification: ClientJsonRpcMessage = serde_json::from_value(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .unwrap();
        assert_eq!(request_id(&notification), None);
    }
}
