//! The MCP session manager: rmcp's in-memory one, with what the gateway adds to it.
//!
//! [`McpSessions`] hands every call to rmcp's [`LocalSessionManager`] and adds:
//! - each session's transport is [`Counted`] while it lives (the active-session gauge);
//! - each request's stream cancels the request when the client hangs up before its answer
//!   ([`UntilAnswered`], see [`super::hangup`]);
//! - sessions are closed from outside: the ones the session table evicts ([`CloseSessions`],
//!   see [`crate::auth::session`]), and by [`recycle`], which runs for the gateway's life.
//!
//! rmcp's own idle timeout is off: it counts a quiet `GET` stream, or a long wait without
//! progress notifications, as idle, where the gateway counts them as busy. [`recycle`] evicts
//! sessions idle for `http.session_idle_secs` instead, and closes the sessions rmcp holds
//! that no client is bound to (an `initialize` whose client hung up before its answer) once
//! they have been so for [`ORPHAN_GRACE`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::Stream;
use futures::future::BoxFuture;
use prometheus_client::metrics::gauge::Gauge;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

use tokio_util::sync::CancellationToken;

use super::hangup::{UntilAnswered, request_id};
use crate::auth::{CloseSessions, SessionBindings};
use crate::telemetry::sessions::Counted;

/// How long a session rmcp holds may stay bound to no client before it is closed: far longer
/// than an `initialize` takes between rmcp creating the session and the binding layer seeing
/// its id.
pub(crate) const ORPHAN_GRACE: Duration = Duration::from_secs(60);

/// rmcp's in-memory sessions, counted, whose requests end when their client hangs up.
pub struct McpSessions {
    inner: Arc<LocalSessionManager>,
    active: Gauge,
    /// Sessions found bound to no client, and since when.
    unbound_since: Mutex<HashMap<SessionId, Instant>>,
}

impl McpSessions {
    /// rmcp's session manager without its idle timeout (see the module docs), counted in
    /// `active`.
    pub fn new(active: Gauge) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = None;
        Self {
            inner: Arc::new(inner),
            active,
            unbound_since: Mutex::new(HashMap::new()),
        }
    }

    /// Closes the sessions that have been bound to no client for [`ORPHAN_GRACE`].
    async fn close_orphans(&self, bindings: &SessionBindings) {
        let held: Vec<SessionId> = self.inner.sessions.read().await.keys().cloned().collect();
        let now = Instant::now();
        let orphans: Vec<SessionId> = {
            // Every update is a single insert or retain: a poisoned lock is still consistent.
            let mut since = self.unbound_since.lock().unwrap_or_else(|e| e.into_inner());
            let unbound: Vec<&SessionId> =
                held.iter().filter(|id| !bindings.is_bound(id)).collect();
            since.retain(|id, _| unbound.contains(&id));
            for id in unbound {
                since.entry(id.clone()).or_insert(now);
            }
            since
                .iter()
                .filter(|(_, at)| now.saturating_duration_since(**at) >= ORPHAN_GRACE)
                .map(|(id, _)| id.clone())
                .collect()
        };
        for id in orphans {
            tracing::info!(mcp_session = %id, "MCP session bound to no client closed");
            let _ = self.inner.close_session(&id).await;
        }
    }
}

impl CloseSessions for McpSessions {
    fn close(&self, id: String) -> BoxFuture<'static, ()> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            if let Err(error) = inner.close_session(&SessionId::from(id)).await {
                tracing::debug!(%error, "closing an evicted MCP session");
            }
        })
    }
}

/// Until `stop`: every [`SessionBindings::sweep_period`], evicts the sessions idle for the
/// idle time and closes those bound to no client.
pub(crate) async fn recycle(
    bindings: Arc<SessionBindings>,
    sessions: Arc<McpSessions>,
    stop: CancellationToken,
) {
    let period = bindings.sweep_period();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(period) => {}
        }
        bindings.evict_idle().await;
        sessions.close_orphans(&bindings).await;
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
