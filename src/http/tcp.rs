//! Accepted TCP connections, set up for request/response traffic.
//!
//! Nagle's algorithm holds back a small write while an earlier one is unacknowledged, and a
//! client that has nothing to send acknowledges late (delayed ACK: up to 40 ms on Linux). An MCP
//! answer sent as SSE leaves in several small writes (headers, priming event, message), so on a
//! kept-alive connection every call waited for the client's delayed ACK: 40 ms for a call the
//! gateway answers in well under one. Every connection the gateway accepts, plain or TLS,
//! therefore sends each write at once ([`send_at_once`]).

use std::io;
use std::net::SocketAddr;

use axum::serve::Listener;
use tokio::net::TcpStream;

use super::listen::Listeners;

/// TCP listeners whose connections have `TCP_NODELAY` set.
pub(crate) struct NoDelayListener(Listeners);

impl NoDelayListener {
    pub(crate) fn new(listeners: Listeners) -> Self {
        Self(listeners)
    }
}

impl Listener for NoDelayListener {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        // axum's accept retries failed accepts with a back-off; only the option is added here.
        let (stream, peer) = self.0.accept().await;
        send_at_once(&stream);
        (stream, peer)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// Turns Nagle's algorithm off for `stream`. A failure only costs latency, so it is logged and
/// the connection served anyway.
pub(crate) fn send_at_once(stream: &TcpStream) {
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%error, "could not set TCP_NODELAY on a connection");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    #[tokio::test]
    async fn accepted_connections_send_at_once() -> io::Result<()> {
        let mut listener = NoDelayListener::new(TcpListener::bind("127.0.0.1:0").await?.into());
        let address = listener.local_addr()?;
        let _client = TcpStream::connect(address).await?;
        let (accepted, _) = listener.accept().await;
        assert!(
            accepted.nodelay()?,
            "TCP_NODELAY is off on an accepted connection"
        );
        Ok(())
    }
}
