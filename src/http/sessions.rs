//! The MCP session manager: rmcp's in-memory one, with what the gateway adds to it.
//!
//! [`McpSessions`] hands every call to rmcp's [`LocalSessionManager`] and adds two things:
//! - each session's transport is [`Counted`] while it lives (the active-session gauge);
//! - each request's stream cancels the request when the client hangs up before its answer
//!   ([`UntilAnswered`], see [`super::hangup`]).

use std::sync::Arc;

use futures::Stream;
use prometheus_client::metrics::gauge::Gauge;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

use super::hangup::{UntilAnswered, request_id};
use crate::telemetry::sessions::Counted;

/// rmcp's in-memory sessions, counted, whose requests end when their client hangs up.
pub struct McpSessions {
    inner: Arc<LocalSessionManager>,
    active: Gauge,
}

impl McpSessions {
    pub fn new(inner: LocalSessionManager, active: Gauge) -> Self {
        Self {
            inner: Arc::new(inner),
            active,
        }
    }
}

impl SessionManager for McpSessions {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = Counted<<LocalSessionManager as SessionManager>::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        Ok((id, Counted::new(transport, &self.active)))
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
        Ok(UntilAnswered::new(stream, request, &self.inner, id))
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
        Ok(match self.inner.restore_session(id).await? {
            RestoreOutcome::Restored(transport) => {
                RestoreOutcome::Restored(Counted::new(transport, &self.active))
            }
            RestoreOutcome::AlreadyPresent => RestoreOutcome::AlreadyPresent,
            // `NotSupported`, the in-memory manager's answer, and anything rmcp adds later.
            _ => RestoreOutcome::NotSupported,
        })
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}
