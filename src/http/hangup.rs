//! Cancelling the work of a client that hangs up (sessions of 2025-era clients).
//!
//! In session mode rmcp runs a request inside the MCP session and sends its answer on the
//! SSE stream of the `POST` that carried it. When the client closes that connection before the
//! answer (a timeout, a crash, a Ctrl-C), the stream is dropped but the handler keeps running:
//! a 60 s `wait_for_text` would hold its wait slot, output subscription and connection for
//! nothing. [`CancelOnHangup`] wraps the session manager: when a request's stream is dropped
//! before it carried the request's response, it delivers `notifications/cancelled` for that
//! request to the session, exactly as if the client had sent it. Tools already end their work
//! on cancellation.
//!
//! Stateless (2026-07-28) requests are not routed through a session; rmcp cancels those itself
//! when their connection closes.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use serde_json::{Value, json};

/// A session manager that cancels a request whose client hung up (see the module docs).
pub struct CancelOnHangup<M> {
    inner: Arc<M>,
}

impl<M> CancelOnHangup<M> {
    pub fn new(inner: M) -> Self {
        Self {
            inner: Arc::new(inner),
        }
    }
}

/// The JSON-RPC id of a client request, when `message` is one.
fn request_id(message: &ClientJsonRpcMessage) -> Option<Value> {
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
struct UntilAnswered<S, M: SessionManager> {
    inner: Pin<Box<S>>,
    /// Cleared once the response went out.
    pending: Option<(Arc<M>, SessionId, Value)>,
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

impl<M: SessionManager> SessionManager for CancelOnHangup<M> {
    type Error = M::Error;
    type Transport = M::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let request = request_id(&message);
        let stream = self.inner.create_stream(id, message).await?;
        Ok(UntilAnswered {
            inner: Box::pin(stream),
            pending: request.map(|rid| (self.inner.clone(), id.clone(), rid)),
        })
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
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
