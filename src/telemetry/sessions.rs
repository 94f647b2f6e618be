//! Counting open MCP sessions: [`Counted`] wraps a session's transport.
//!
//! A session is counted from its creation until its transport is dropped, which happens
//! however it ends: `DELETE`, eviction by the gateway (idle, or to make room for another
//! session of its client), or shutdown. rmcp keeps no such count itself. The gateway's session
//! manager (`crate::http::sessions`) wraps every transport it creates or restores.

use prometheus_client::metrics::gauge::Gauge;
use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// A session's transport; the gauge goes down when rmcp drops it.
pub struct Counted<T> {
    inner: T,
    active: Gauge,
}

impl<T> Counted<T> {
    /// Counts the session of `transport` as open.
    pub fn new(transport: T, active: &Gauge) -> Self {
        active.inc();
        Self {
            inner: transport,
            active: active.clone(),
        }
    }
}

impl<T> Drop for Counted<T> {
    fn drop(&mut self) {
        self.active.dec();
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Counted<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
