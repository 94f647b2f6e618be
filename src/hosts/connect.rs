//! `muxgate host connect URL`: the host's end of a dial-in link (see [`super::dial_in`]). It
//! opens a WebSocket to the gateway's `/hosts/connect` with the host's token, waits there
//! until the gateway's link starts an SSH connection, then carries that connection to this
//! machine's sshd and, when it ends, dials again. It opens no port here and reaches nothing but
//! the gateway and the sshd it is given; everything it carries is SSH, authenticated end to
//! end.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Bytes, Message};

use super::dial_in::{Frame, MAX_MESSAGE_BYTES, pump};

/// The first wait after a failed dial; doubled after each, up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_millis(500);
const MAX_RETRY: Duration = Duration::from_secs(30);
/// How often a waiting WebSocket is pinged, so that no middlebox drops it as idle.
const PING_EVERY: Duration = Duration::from_secs(25);
/// The longest a dial (TCP, TLS, the upgrade) may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(15);

/// What `muxgate host connect` was given.
#[derive(Debug, Clone)]
pub struct Dial {
    /// The gateway: its base URL (`https://gateway.example:8080`) or `/hosts/connect` there.
    pub url: url::Url,
    /// The host's token (`muxgate host token NAME` on the gateway).
    pub token: String,
    /// This machine's sshd.
    pub sshd: String,
    /// A PEM file of the certificates that may sign the gateway's, besides the system's.
    pub ca_file: Option<PathBuf>,
}

/// Why dialling stopped for good.
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    /// The gateway refused the token or the host: dialling again would not help.
    #[error("the gateway refused this host ({0}): check its token and the gateway's [hosts] entry")]
    Refused(u16),
    /// The URL cannot be dialled.
    #[error("{0}")]
    BadUrl(String),
}

/// One dial's failure that a later dial may not meet.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Failed(String);

impl Dial {
    /// Checks and completes `url`: http(s), with `/hosts/connect` as its path when it has none.
    pub fn url(mut url: url::Url) -> Result<url::Url, DialError> {
        match url.scheme() {
            "http" | "https" => {}
            other => {
                return Err(DialError::BadUrl(format!(
                    "the gateway's URL must be http or https, not {other}"
                )));
            }
        }
        if url.host_str().is_none() {
            return Err(DialError::BadUrl("the gateway's URL has no host".into()));
        }
        if url.path() == "/" || url.path().is_empty() {
            url.set_path("/hosts/connect");
        }
        Ok(url)
    }

    /// Dials until the gateway refuses this host: each WebSocket carries one SSH connection;
    /// a failed dial is retried after a back-off.
    pub async fn run(&self) -> Result<(), DialError> {
        let tls = self.tls()?;
        // A request that cannot be made now never can.
        self.request()?;
        let mut wait = FIRST_RETRY;
        loop {
            match self.once(tls.clone()).await {
                Ok(()) => wait = FIRST_RETRY,
                Err(Outcome::Refused(status)) => return Err(DialError::Refused(status)),
                Err(Outcome::Failed(Failed(why))) => {
                    tracing::warn!(%why, retry_in = ?wait, "could not reach the gateway");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(MAX_RETRY);
                }
            }
        }
    }

    /// The upgrade request: the URL as `ws`/`wss`, with the host's token.
    fn request(&self) -> Result<tungstenite::handshake::client::Request, DialError> {
        let mut url = self.url.clone();
        let scheme = if url.scheme() == "https" { "wss" } else { "ws" };
        url.set_scheme(scheme)
            .map_err(|()| DialError::BadUrl(format!("cannot dial {}", self.url)))?;
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|e| DialError::BadUrl(e.to_string()))?;
        let bearer = format!("Bearer {}", self.token)
            .parse()
            .map_err(|_| DialError::BadUrl("the token is not header text".into()))?;
        request.headers_mut().insert("authorization", bearer);
        Ok(request)
    }

    /// One WebSocket: dialled, kept until the gateway starts a connection, then carrying it.
    async fn once(&self, tls: Option<Arc<rustls::ClientConfig>>) -> Result<(), Outcome> {
        let request = self.request().map_err(|e| failed(&e.to_string()))?;
        let tcp = tokio::time::timeout(DIAL_TIMEOUT, TcpStream::connect(self.authority()))
            .await
            .map_err(|_| failed("the gateway did not answer in time"))?
            .map_err(|e| failed(&format!("cannot reach the gateway: {e}")))?;
        match tls {
            None => self.carry(request, tcp).await,
            Some(config) => {
                let name = rustls::pki_types::ServerName::try_from(
                    self.url.host_str().unwrap_or_default().to_owned(),
                )
                .map_err(|e| failed(&e.to_string()))?;
                let stream = tokio_rustls::TlsConnector::from(config)
                    .connect(name, tcp)
                    .await
                    .map_err(|e| failed(&format!("TLS with the gateway: {e}")))?;
                self.carry(request, stream).await
            }
        }
    }

    /// Upgrades `stream` to the WebSocket and carries one SSH connection over it.
    async fn carry<S>(
        &self,
        request: tungstenite::handshake::client::Request,
        stream: S,
    ) -> Result<(), Outcome>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE_BYTES))
            .max_frame_size(Some(MAX_MESSAGE_BYTES));
        let upgraded = tokio::time::timeout(
            DIAL_TIMEOUT,
            tokio_tungstenite::client_async_with_config(request, stream, Some(config)),
        )
        .await
        .map_err(|_| failed("the gateway did not upgrade in time"))?;
        let (mut socket, _) = match upgraded {
            Ok(upgraded) => upgraded,
            // A refusal (a bad token, a host not let in, no such route) is final; a busy or
            // failing gateway is tried again.
            Err(tungstenite::Error::Http(answer))
                if answer.status().is_client_error()
                    && !matches!(answer.status().as_u16(), 408 | 429) =>
            {
                return Err(Outcome::Refused(answer.status().as_u16()));
            }
            Err(error) => return Err(failed(&format!("the upgrade failed: {error}"))),
        };
        tracing::info!(gateway = %self.url, "dialled in; waiting for the gateway's link");
        let first = first_bytes(&mut socket).await?;
        let sshd = TcpStream::connect(&self.sshd).await.map_err(|e| {
            failed(&format!(
                "cannot reach this machine's sshd at {}: {e}",
                self.sshd
            ))
        })?;
        pipe(socket, sshd, &first).await;
        Ok(())
    }

    /// `host:port` of the gateway.
    fn authority(&self) -> String {
        // An IPv6 host comes bracketed, as an authority needs it.
        let host = self.url.host_str().unwrap_or_default();
        let port = self.url.port_or_known_default().unwrap_or(80);
        format!("{host}:{port}")
    }

    /// The TLS configuration for an https gateway: the system's roots and `ca_file`'s.
    fn tls(&self) -> Result<Option<Arc<rustls::ClientConfig>>, DialError> {
        if self.url.scheme() != "https" {
            return Ok(None);
        }
        crate::tls_client::client_config(self.ca_file.as_deref())
            .map(Some)
            .map_err(DialError::BadUrl)
    }
}

/// The first bytes the gateway's link sends (its SSH client speaks first: its version line);
/// until then the socket is kept alive with pings.
async fn first_bytes<S>(socket: &mut WebSocketStream<S>) -> Result<Bytes, Outcome>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    loop {
        tokio::select! {
            _ = ping.tick() => {
                if socket.send(Message::Ping(Bytes::new())).await.is_err() {
                    return Err(failed("the gateway closed the connection"));
                }
            }
            message = socket.next() => match message {
                Some(Ok(Message::Binary(data))) => return Ok(data),
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Text(_) | Message::Frame(_))) => {}
                Some(Ok(Message::Close(_)) | Err(_)) | None => {
                    return Err(failed("the gateway closed the connection"));
                }
            },
        }
    }
}

/// Carries bytes between `socket` and `sshd` (after writing `first` to `sshd`) until either
/// ends.
async fn pipe<S>(mut socket: WebSocketStream<S>, mut sshd: TcpStream, first: &[u8])
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if sshd.write_all(first).await.is_err() {
        return;
    }
    let frame = |message| match message {
        Message::Binary(data) => Frame::Data(data),
        Message::Close(_) => Frame::End,
        Message::Ping(_) | Message::Pong(_) | Message::Text(_) | Message::Frame(_) => Frame::Skip,
    };
    let never = tokio_util::sync::CancellationToken::new();
    pump(&mut socket, sshd, Message::Binary, frame, &never).await;
    let _ = socket.close(None).await;
}

/// How one dial ended badly.
enum Outcome {
    Refused(u16),
    Failed(Failed),
}

fn failed(why: &str) -> Outcome {
    Outcome::Failed(Failed(why.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Result<String, String> {
        Dial::url(url::Url::parse(text).map_err(|e| e.to_string())?)
            .map(|u| u.to_string())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_gateways_base_url_is_dialled_at_hosts_connect() {
        assert_eq!(
            url("https://gw.example:8443").as_deref(),
            Ok("https://gw.example:8443/hosts/connect")
        );
        assert_eq!(
            url("http://[::1]:8080/hosts/connect").as_deref(),
            Ok("http://[::1]:8080/hosts/connect")
        );
        assert!(url("ftp://gw").unwrap_err().contains("http or https"));
        let dial = Dial {
            url: Dial::url(url::Url::parse("https://gw.example").unwrap()).unwrap(),
            token: "t".into(),
            sshd: "127.0.0.1:22".into(),
            ca_file: None,
        };
        assert_eq!(dial.authority(), "gw.example:443");
        let request = dial.request().unwrap();
        assert_eq!(request.uri().to_string(), "wss://gw.example/hosts/connect");
        assert_eq!(request.headers()["authorization"], "Bearer t");
        let bad = Dial {
            token: "a\nb".into(),
            ..dial
        };
        assert!(bad.request().is_err(), "a token that is not header text");
    }
}
