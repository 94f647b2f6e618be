//! One webhook POST: an HTTP/1.1 request over a connection of its own (TLS for https, with the
//! system's roots), its status the answer. No redirects followed, the answer's body not read.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

/// POSTs `body` with `headers` to `url` (http or https); the answer's status.
pub(crate) async fn post(
    tls: &Arc<rustls::ClientConfig>,
    url: &url::Url,
    headers: &[(&'static str, String)],
    body: Vec<u8>,
) -> Result<u16, String> {
    let host = url.host().ok_or("the url has no host")?;
    let port = url.port_or_known_default().ok_or("the url has no port")?;
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    };
    let path = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    let mut request = http::Request::post(path)
        .header(http::header::HOST, &authority)
        .header(http::header::CONTENT_LENGTH, body.len());
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| format!("cannot build the request: {e}"))?;
    let tcp = TcpStream::connect(format!("{host}:{port}"))
        .await
        .map_err(|e| format!("cannot connect to {authority}: {e}"))?;
    if url.scheme() != "https" {
        return send(TokioIo::new(tcp), request).await;
    }
    let name = match host {
        url::Host::Domain(domain) => {
            ServerName::try_from(domain.to_owned()).map_err(|e| format!("{domain}: {e}"))?
        }
        url::Host::Ipv4(ip) => ServerName::IpAddress(std::net::IpAddr::V4(ip).into()),
        url::Host::Ipv6(ip) => ServerName::IpAddress(std::net::IpAddr::V6(ip).into()),
    };
    let stream = tokio_rustls::TlsConnector::from(tls.clone())
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS with {authority}: {e}"))?;
    send(TokioIo::new(stream), request).await
}

async fn send<T>(io: T, request: http::Request<Full<Bytes>>) -> Result<u16, String>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    // Runs the connection until the answer is in and `sender` is dropped.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let answer = sender
        .send_request(request)
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    Ok(answer.status().as_u16())
}
