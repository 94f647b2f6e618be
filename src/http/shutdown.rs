//! Graceful shutdown: the sequence that runs on SIGTERM or SIGINT.
//!
//! 1. The signal cancels [`Shutdown::begin`]: the listener stops accepting, idle connections
//!    close, and everything holding a child token reacts — long-running tools (waits) end at
//!    once with an error result saying the gateway is shutting down.
//! 2. MCP requests still running (counted by [`track_in_flight`] until their response body has
//!    been sent) get up to `http.shutdown_grace_secs` to finish.
//! 3. Then MCP sessions and streams are closed ([`Shutdown::streams_token`], given to rmcp),
//!    which ends the long-lived SSE streams that would otherwise keep connections open.
//! 4. The caller then detaches the tmux control clients and flushes the audit log
//!    ([`crate::gateway::Gateway::serve`]).
//!
//! Closing rmcp's streams first would cut in-flight calls off, hence the order.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::Method;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Cancels `token` on the first SIGTERM or SIGINT. The task ends early if the token is
/// cancelled by something else.
pub(crate) fn cancel_on_signal(token: CancellationToken) -> io::Result<JoinHandle<()>> {
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(tokio::spawn(async move {
        tokio::select! {
            _ = terminate.recv() => tracing::info!("SIGTERM received, shutting down"),
            _ = interrupt.recv() => tracing::info!("SIGINT received, shutting down"),
            () = token.cancelled() => return,
        }
        token.cancel();
    }))
}

/// The handles of the shutdown sequence. Cloning shares them.
#[derive(Clone)]
pub struct Shutdown {
    begin: CancellationToken,
    streams: CancellationToken,
    in_flight: Arc<watch::Sender<usize>>,
}

impl Shutdown {
    /// A sequence started by cancelling `begin`.
    pub fn new(begin: CancellationToken) -> Self {
        Self {
            begin,
            streams: CancellationToken::new(),
            in_flight: Arc::new(watch::Sender::new(0)),
        }
    }

    /// Cancelled when shutdown begins; waits select on it (or a child).
    pub fn begin(&self) -> &CancellationToken {
        &self.begin
    }

    /// For rmcp: cancelled after in-flight requests finished or the grace ran out.
    pub fn streams_token(&self) -> CancellationToken {
        self.streams.child_token()
    }

    /// MCP requests whose response has not been fully sent yet.
    pub fn in_flight(&self) -> usize {
        *self.in_flight.borrow()
    }

    /// Once shutdown has begun: waits until no MCP request is in flight or `grace` has passed,
    /// then closes MCP sessions and streams. Returns whether every request finished.
    pub async fn drain(&self, grace: Duration) -> bool {
        self.begin.cancelled().await;
        let mut watcher = self.in_flight.subscribe();
        let drained = tokio::time::timeout(grace, watcher.wait_for(|n| *n == 0))
            .await
            .is_ok();
        if !drained {
            tracing::warn!(
                in_flight = self.in_flight(),
                ?grace,
                "requests still running after the shutdown grace period; cutting them off"
            );
        }
        self.streams.cancel();
        drained
    }

    fn enter(&self) -> InFlightGuard {
        self.in_flight.send_modify(|n| *n += 1);
        InFlightGuard {
            in_flight: self.in_flight.clone(),
        }
    }
}

struct InFlightGuard {
    in_flight: Arc<watch::Sender<usize>>,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.in_flight.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Middleware on `/mcp`: counts a request as in flight until its response body is done.
/// `GET` (the long-lived standalone SSE stream of a session) is not counted: it carries no
/// call to wait for, and it ends when the streams are closed.
pub(crate) async fn track_in_flight(
    State(shutdown): State<Shutdown>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() == Method::GET {
        return next.run(request).await;
    }
    let guard = shutdown.enter();
    super::held_body::HeldBody::wrap(next.run(request).await, guard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn drain_waits_for_in_flight_requests_then_closes_streams() {
        let shutdown = Shutdown::new(CancellationToken::new());
        let streams = shutdown.streams_token();
        let guard = shutdown.enter();
        assert_eq!(shutdown.in_flight(), 1);
        let drain = tokio::spawn({
            let shutdown = shutdown.clone();
            async move { shutdown.drain(Duration::from_secs(30)).await }
        });
        shutdown.begin().cancel();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !streams.is_cancelled(),
            "streams stay open while a call runs"
        );
        drop(guard);
        assert!(drain.await.unwrap(), "drained");
        assert!(streams.is_cancelled());
    }

    #[tokio::test]
    async fn drain_gives_up_after_the_grace_period() {
        let shutdown = Shutdown::new(CancellationToken::new());
        let _stuck = shutdown.enter();
        shutdown.begin().cancel();
        let started = tokio::time::Instant::now();
        assert!(!shutdown.drain(Duration::from_millis(100)).await);
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert!(shutdown.streams_token().is_cancelled());
    }
}
