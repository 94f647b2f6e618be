//! Hosts that dial in (`[hosts.<name>] dial_in = true`): a machine the gateway cannot reach
//! (behind NAT, a laptop) runs `muxgate host connect`, which opens a WebSocket to the gateway
//! (`/hosts/connect`, with the host's own token) and carries one SSH connection to its own
//! sshd over it. The gateway's link to that host is then the same OpenSSH master as for any
//! other, whose `ProxyCommand` (`muxgate host-relay`) reaches a private socket here that
//! [`relay`] joins to the host's waiting WebSocket. SSH runs end to end through it: the host's
//! key is verified against `known_hosts` and the gateway's key logs in, so the WebSocket only
//! carries bytes neither side trusts.
//!
//! Each WebSocket carries one SSH connection, then closes; the host dials again at once and
//! waits for the next. A host that has not dialled in is a link that is down, saying so.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::extract::ws::{Message, WebSocket};
use bytes::Bytes;
use futures::{Sink, SinkExt, Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Most bytes one WebSocket message may carry each way (an SSH packet is at most 256 KiB;
/// the relay and the connector send what one read gives, at most [`CHUNK_BYTES`]).
pub(crate) const MAX_MESSAGE_BYTES: usize = 512 * 1024;
/// The most bytes one read of the SSH stream forwards as one message.
pub(crate) const CHUNK_BYTES: usize = 32 * 1024;
/// Why a dial-in host's link is down while it has not dialled in.
pub(crate) const NOT_DIALLED_IN: &str =
    "the host has not dialled in (run `muxgate host connect` there with its token)";

/// One dial-in host: the WebSocket it keeps waiting, when it has dialled in.
#[derive(Debug, Default)]
pub(crate) struct DialIn {
    waiting: Mutex<Option<WebSocket>>,
    /// Woken when the host dials in, so that its link need not wait out a back-off.
    pub(crate) arrived: Notify,
}

impl DialIn {
    /// Whether the host has a WebSocket waiting for the next SSH connection.
    pub(crate) fn is_waiting(&self) -> bool {
        self.lock().is_some()
    }

    fn take(&self) -> Option<WebSocket> {
        self.lock().take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<WebSocket>> {
        // A poisoned slot still holds a socket or none.
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The dial-in hosts, by name.
#[derive(Debug, Default)]
pub struct DialIns {
    hosts: BTreeMap<String, Arc<DialIn>>,
}

impl DialIns {
    pub(crate) fn add(&mut self, name: &str) {
        self.hosts.entry(name.to_owned()).or_default();
    }

    pub(crate) fn get(&self, name: &str) -> Option<Arc<DialIn>> {
        self.hosts.get(name).cloned()
    }

    /// Whether `name` is a host that dials in.
    pub fn accepts(&self, name: &str) -> bool {
        self.hosts.contains_key(name)
    }

    /// Whether any host dials in.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Keeps `socket`, just opened by host `name`, for its link's next connection (a socket it
    /// left waiting before is closed).
    pub fn arrive(&self, name: &str, socket: WebSocket) {
        if let Some(dial_in) = self.hosts.get(name) {
            *dial_in.lock() = Some(socket);
            dial_in.arrived.notify_one();
            tracing::info!(host = name, "host dialled in");
        }
    }
}

/// Joins every connection the host's link makes to `listener` (its `ProxyCommand`) to the
/// WebSocket the host keeps waiting, until `stop`. A connection while none waits is closed at
/// once: the link fails and retries.
pub(crate) async fn relay(dial_in: Arc<DialIn>, listener: UnixListener, stop: CancellationToken) {
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!(%error, "a dial-in relay could not accept");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        if let Some(socket) = dial_in.take() {
            tokio::spawn(bridge(socket, stream, stop.child_token()));
        }
    }
}

/// Carries bytes between `stream` and `socket` until either ends.
async fn bridge(mut socket: WebSocket, stream: UnixStream, stop: CancellationToken) {
    let frame = |message| match message {
        Message::Binary(data) => Frame::Data(data),
        // Pings are answered by the WebSocket itself; text is not part of the relay.
        Message::Ping(_) | Message::Pong(_) | Message::Text(_) => Frame::Skip,
        Message::Close(_) => Frame::End,
    };
    pump(&mut socket, stream, Message::Binary, frame, &stop).await;
    let _ = socket.send(Message::Close(None)).await;
}

/// What one WebSocket message is to the byte stream it carries.
pub(crate) enum Frame {
    /// Bytes of the stream.
    Data(Bytes),
    /// Not part of the stream (a ping, a pong, text).
    Skip,
    /// The other side closed.
    End,
}

/// Carries bytes between `socket` and `stream` until either ends or `stop` fires: what
/// `stream` gives goes out as `binary` messages of at most [`CHUNK_BYTES`], and what `frame`
/// reads as data goes into `stream`. Both ends of a dial-in link run it, over their own
/// WebSocket types.
pub(crate) async fn pump<S, M, E>(
    socket: &mut S,
    stream: impl AsyncRead + AsyncWrite,
    binary: fn(Bytes) -> M,
    frame: impl Fn(M) -> Frame,
    stop: &CancellationToken,
) where
    S: Stream<Item = Result<M, E>> + Sink<M> + Unpin,
{
    let (mut read, mut write) = tokio::io::split(stream);
    let mut chunk = vec![0u8; CHUNK_BYTES];
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            got = read.read(&mut chunk) => match got {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if socket.send(binary(Bytes::copy_from_slice(&chunk[..n]))).await.is_err() {
                        break;
                    }
                }
            },
            message = socket.next() => match message.map(|m| m.map(&frame)) {
                Some(Ok(Frame::Data(data))) => {
                    if write.write_all(&data).await.is_err() {
                        break;
                    }
                }
                Some(Ok(Frame::Skip)) => {}
                Some(Ok(Frame::End) | Err(_)) | None => break,
            },
        }
    }
}

/// The `ProxyCommand` of a dial-in host's master: this gateway's own program (as the running
/// process, so an upgrade that replaces the file on disk does not break it) relaying to
/// `socket`. `%` is doubled: ssh expands `%` sequences in it (and runs it with `exec` itself).
pub(crate) fn proxy_command(socket: &Path) -> String {
    use muxgate_tmux::client::remote::shell_word;
    let program = format!("/proc/{}/exe", std::process::id());
    format!(
        "{} host-relay {}",
        shell_word(&program),
        shell_word(&socket.to_string_lossy())
    )
    .replace('%', "%%")
}

/// `muxgate host-relay SOCKET`: joins standard input and output to `socket` until either
/// side ends (the `ProxyCommand` of a dial-in host's link).
pub async fn relay_stdio(socket: &Path) -> std::io::Result<()> {
    let mut stream = UnixStream::connect(socket).await?;
    let mut stdio = tokio::io::join(tokio::io::stdin(), tokio::io::stdout());
    tokio::io::copy_bidirectional(&mut stdio, &mut stream).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxy_command_is_one_quoted_line_with_percent_doubled() {
        let line = proxy_command(Path::new("/tmp/links 100%/0.relay"));
        let exe = format!("'/proc/{}/exe'", std::process::id());
        assert_eq!(
            line,
            format!("{exe} host-relay '/tmp/links 100%%/0.relay'"),
            "ssh adds `exec` itself and expands `%`"
        );
    }
}
