//! Graceful shutdown: one [`CancellationToken`] for the whole process.
//!
//! SIGTERM or SIGINT cancels the token. The HTTP server stops accepting, rmcp ends its sessions
//! and streams (its token is a child), and whatever else holds a child token (engine workers,
//! waits) winds down. In-flight requests get the configured grace period.

use std::io;

use tokio::signal::unix::{SignalKind, signal};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Cancels `token` on the first SIGTERM or SIGINT. The task ends early if the token is
/// cancelled by something else.
pub fn cancel_on_signal(token: CancellationToken) -> io::Result<JoinHandle<()>> {
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
