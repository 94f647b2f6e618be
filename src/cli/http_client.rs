//! A small blocking HTTP/1.1 client for the commands that talk to a running gateway
//! (`healthcheck`, `approvals`): one request per connection, over TCP or TLS, with timeouts.
//!
//! The CLI runs no async runtime for these one-shot requests and the runtime image has no curl,
//! so this is a plain request written by hand: `Connection: close`, and the answer read whole
//! (status, headers, and a body framed by `Content-Length`, `Transfer-Encoding: chunked`, or
//! the end of the connection), at most [`MAX_BODY`] bytes of it.
//!
//! TLS is whatever [`ClientConfig`] the caller passes: [`verifying_tls`] checks the server's
//! certificate and name against a CA file, for requests that carry a token; the healthcheck
//! brings one that accepts any certificate (see its module docs).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

/// Largest body read, as sent (chunk framing included): the gateway's answers are small, and a
/// wrong URL must not fill memory.
pub(super) const MAX_BODY: usize = 1024 * 1024;

/// Largest status line and headers read.
const MAX_HEAD: usize = 64 * 1024;

/// A parsed `http[s]://host[:port]/path`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Target {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    pub path: String,
}

pub(super) fn parse_url(url: &str) -> anyhow::Result<Target> {
    let (tls, rest) = if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else {
        bail!("the URL must start with http:// or https://");
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let default_port = default_port(tls);
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, tail) = v6.split_once(']').context("unclosed [ in the host")?;
        let port = match tail.strip_prefix(':') {
            Some(port) => port.parse().context("bad port")?,
            None => default_port,
        };
        (host.to_owned(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), port.parse().context("bad port")?),
            None => (authority.to_owned(), default_port),
        }
    };
    if host.is_empty() {
        bail!("the URL has no host");
    }
    Ok(Target {
        tls,
        host,
        port,
        path: path.to_owned(),
    })
}

fn default_port(tls: bool) -> u16 {
    if tls { 443 } else { 80 }
}

/// What to send; `Host`, `Connection: close` and (with a body) `Content-Length` are added.
pub(super) struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub body: Option<&'a [u8]>,
}

/// The whole answer.
#[derive(Debug)]
pub(super) struct Response {
    pub status: u16,
    /// Names as sent; look them up with [`Response::header`].
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of a header, its name compared without case.
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The ring provider: the only one muxgate builds with.
pub(super) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A TLS configuration that trusts only the certificates in `ca_file` (PEM: the gateway's own
/// certificate when self-signed, or the CA that issued it), and checks the server's name.
pub(super) fn verifying_tls(ca_file: &Path) -> anyhow::Result<Arc<ClientConfig>> {
    let pem =
        std::fs::read(ca_file).with_context(|| format!("cannot read {}", ca_file.display()))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert =
            cert.with_context(|| format!("{}: not a PEM certificate file", ca_file.display()))?;
        roots
            .add(cert)
            .with_context(|| format!("{}: unusable certificate", ca_file.display()))?;
    }
    if roots.is_empty() {
        bail!("{}: no PEM certificate found", ca_file.display());
    }
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS setup")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Sends one request and reads the whole answer. `tls` is required for an `https` target.
/// Connecting, and then the exchange, each take at most `timeout`.
pub(super) fn send(
    target: &Target,
    tls: Option<Arc<ClientConfig>>,
    request: &Request,
    timeout: Duration,
) -> anyhow::Result<Response> {
    let message = encode_request(target, request)?;
    let stream = connect(target, timeout)?;
    // The TLS handshake reads while the request is written, before the reads that follow the
    // deadline.
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let deadline = Instant::now() + timeout;
    if target.tls {
        let config = tls.context("https needs a TLS configuration")?;
        let name = ServerName::try_from(target.host.clone())
            .with_context(|| format!("{:?} is not a valid TLS server name", target.host))?;
        let connection = ClientConnection::new(config, name).context("TLS setup")?;
        exchange(
            &mut StreamOwned::new(connection, stream),
            &message,
            deadline,
        )
    } else {
        let mut stream = stream;
        exchange(&mut stream, &message, deadline)
    }
}

/// Tries each address the host resolves to (`localhost` may be `::1` and `127.0.0.1`).
fn connect(target: &Target, timeout: Duration) -> anyhow::Result<TcpStream> {
    let addrs: Vec<SocketAddr> = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {}", target.host))?
        .collect();
    let mut last_error = None;
    for addr in &addrs {
        match TcpStream::connect_timeout(addr, timeout) {
            Ok(stream) => return Ok(stream),
            Err(error) => last_error = Some((addr, error)),
        }
    }
    match last_error {
        Some((addr, error)) => Err(error).with_context(|| format!("cannot connect to {addr}")),
        None => bail!("{} has no address", target.host),
    }
}

/// The request's bytes. Line breaks in any part would let it smuggle headers or a second
/// request, so they are refused.
fn encode_request(target: &Target, request: &Request) -> anyhow::Result<Vec<u8>> {
    let parts = [request.method, request.path]
        .into_iter()
        .chain(request.headers.iter().flat_map(|(n, v)| [*n, *v]));
    for part in parts {
        if part.contains(['\r', '\n']) {
            bail!("a line break in the request's method, path or headers");
        }
    }
    let host = if target.host.contains(':') {
        format!("[{}]", target.host)
    } else {
        target.host.clone()
    };
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {host}",
        request.method, request.path
    );
    if target.port != default_port(target.tls) {
        head.push_str(&format!(":{}", target.port));
    }
    head.push_str("\r\nConnection: close\r\n");
    for (name, value) in request.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = request.body {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut message = head.into_bytes();
    message.extend_from_slice(request.body.unwrap_or_default());
    Ok(message)
}

/// A stream over a TCP socket, whose read timeout can follow the deadline.
trait OverTcp: Read + Write {
    fn socket(&self) -> &TcpStream;
}

impl OverTcp for TcpStream {
    fn socket(&self) -> &TcpStream {
        self
    }
}

impl OverTcp for StreamOwned<ClientConnection, TcpStream> {
    fn socket(&self) -> &TcpStream {
        &self.sock
    }
}

fn exchange(
    stream: &mut impl OverTcp,
    message: &[u8],
    deadline: Instant,
) -> anyhow::Result<Response> {
    stream
        .write_all(message)
        .and_then(|()| stream.flush())
        .context("cannot send the request")?;
    read_response(&mut Reader { stream, deadline })
}

/// Reads with the time left until the deadline.
struct Reader<'a, S> {
    stream: &'a mut S,
    deadline: Instant,
}

impl<S: OverTcp> Reader<'_, S> {
    /// Appends what the next read returns; 0 at the end of the stream.
    fn read_into(&mut self, buf: &mut Vec<u8>) -> anyhow::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("no complete answer in time");
            }
            self.stream.socket().set_read_timeout(Some(left))?;
            match self.stream.read(&mut chunk) {
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    return Ok(n);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                // A TLS peer that closes without close_notify: the framing below still tells a
                // complete body from a cut one.
                Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(error)
                    if matches!(
                        error.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    bail!("no complete answer in time")
                }
                Err(error) => return Err(error).context("cannot read the answer"),
            }
        }
    }
}

/// How the body of an answer ends.
#[derive(Debug, PartialEq, Eq)]
enum Framing {
    /// No body (1xx, 204, 304).
    Empty,
    Length(usize),
    Chunked,
    /// Everything until the server closes the connection.
    UntilClose,
}

fn read_response<S: OverTcp>(reader: &mut Reader<'_, S>) -> anyhow::Result<Response> {
    let mut buf = Vec::new();
    let (head_len, body_start) = loop {
        if let Some(end) = head_end(&buf) {
            break end;
        }
        if buf.len() > MAX_HEAD {
            bail!("the answer's headers are longer than {MAX_HEAD} bytes");
        }
        if reader.read_into(&mut buf)? == 0 {
            if buf.is_empty() {
                bail!("the server closed the connection without answering");
            }
            bail!("the connection closed in the answer's headers");
        }
    };
    let (status, headers) = parse_head(&buf[..head_len])?;
    let mut response = Response {
        status,
        headers,
        body: buf.split_off(body_start),
    };
    let too_large = || anyhow::anyhow!("the answer's body is larger than {MAX_BODY} bytes");
    match framing(&response)? {
        Framing::Empty => response.body.clear(),
        Framing::Length(len) => {
            if len > MAX_BODY {
                return Err(too_large());
            }
            while response.body.len() < len {
                if reader.read_into(&mut response.body)? == 0 {
                    bail!(
                        "the connection closed after {} of the body's {len} bytes",
                        response.body.len()
                    );
                }
            }
            response.body.truncate(len);
        }
        Framing::Chunked => loop {
            // A complete chunked body ends with a line break: only then can decoding succeed.
            if response.body.ends_with(b"\n") {
                match decode_chunked(&response.body) {
                    Ok(body) => {
                        response.body = body;
                        break;
                    }
                    Err(ChunkedError::Truncated) => {}
                    Err(error) => return Err(error.into()),
                }
            }
            if response.body.len() > MAX_BODY {
                return Err(too_large());
            }
            if reader.read_into(&mut response.body)? == 0 {
                return Err(ChunkedError::Truncated.into());
            }
        },
        Framing::UntilClose => {
            while reader.read_into(&mut response.body)? > 0 {
                if response.body.len() > MAX_BODY {
                    return Err(too_large());
                }
            }
        }
    }
    Ok(response)
}

/// Where the headers end: (length of the head without its last line break, start of the body).
/// Lines may end in CRLF or a bare LF.
fn head_end(buf: &[u8]) -> Option<(usize, usize)> {
    buf.iter().enumerate().find_map(|(i, byte)| {
        if *byte != b'\n' {
            return None;
        }
        match &buf[i + 1..] {
            [b'\n', ..] => Some((i, i + 2)),
            [b'\r', b'\n', ..] => Some((i, i + 3)),
            _ => None,
        }
    })
}

/// The status code and headers of an answer's head (the status line and header lines).
fn parse_head(head: &[u8]) -> anyhow::Result<(u16, Vec<(String, String)>)> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line));
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.split_whitespace();
    let status = match (parts.next(), parts.next()) {
        (Some(version), Some(code))
            if version.starts_with("HTTP/")
                && code.len() == 3
                && code.bytes().all(|b| b.is_ascii_digit()) =>
        {
            code.parse()
                .with_context(|| format!("bad status line {status_line:?}"))?
        }
        _ => bail!("no HTTP status line in the answer ({status_line:?})"),
    };
    let mut headers = Vec::new();
    for line in lines {
        let header = line
            .split_once(':')
            .filter(|(name, _)| !name.is_empty() && !name.contains(char::is_whitespace));
        let Some((name, value)) = header else {
            bail!("bad header line {line:?} in the answer");
        };
        headers.push((name.to_owned(), value.trim().to_owned()));
    }
    Ok((status, headers))
}

fn framing(response: &Response) -> anyhow::Result<Framing> {
    if matches!(response.status, 100..=199 | 204 | 304) {
        return Ok(Framing::Empty);
    }
    if let Some(coding) = response.header("transfer-encoding") {
        if coding.eq_ignore_ascii_case("chunked") {
            return Ok(Framing::Chunked);
        }
        bail!("unsupported Transfer-Encoding {coding:?} in the answer");
    }
    match response.header("content-length") {
        Some(len) => len
            .parse()
            .map(Framing::Length)
            .with_context(|| format!("bad Content-Length {len:?} in the answer")),
        None => Ok(Framing::UntilClose),
    }
}

/// Why a chunked body could not be decoded.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum ChunkedError {
    #[error("the chunked body ends early")]
    Truncated,
    #[error("bad chunk size line {0:?} in the chunked body")]
    BadSize(String),
    #[error("a chunk of the chunked body does not end with a line break")]
    MissingLineBreak,
}

/// Decodes a `Transfer-Encoding: chunked` body (RFC 9112 §7.1): chunk extensions and trailers
/// are skipped; anything after the final empty line is ignored. Lines may end in CRLF or LF.
pub(super) fn decode_chunked(data: &[u8]) -> Result<Vec<u8>, ChunkedError> {
    let mut body = Vec::new();
    let mut rest = data;
    loop {
        let (line, after) = split_line(rest).ok_or(ChunkedError::Truncated)?;
        rest = after;
        let size = chunk_size(line).ok_or_else(|| {
            ChunkedError::BadSize(muxgate_mux::lines::excerpt(&String::from_utf8_lossy(line)))
        })?;
        if size == 0 {
            // Trailer fields, up to the empty line.
            loop {
                let (line, after) = split_line(rest).ok_or(ChunkedError::Truncated)?;
                rest = after;
                if line.is_empty() {
                    return Ok(body);
                }
            }
        }
        let chunk = rest.get(..size).ok_or(ChunkedError::Truncated)?;
        body.extend_from_slice(chunk);
        rest = match &rest[size..] {
            [b'\r', b'\n', after @ ..] | [b'\n', after @ ..] => after,
            [] | [b'\r'] => return Err(ChunkedError::Truncated),
            _ => return Err(ChunkedError::MissingLineBreak),
        };
    }
}

/// The line before the first LF (without a CR ending it) and what follows.
fn split_line(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = data.iter().position(|b| *b == b'\n')?;
    let line = &data[..end];
    Some((line.strip_suffix(b"\r").unwrap_or(line), &data[end + 1..]))
}

/// A chunk size line's size: hex digits, then optionally whitespace and `;extensions`.
fn chunk_size(line: &[u8]) -> Option<usize> {
    let digits = line.split(|b| *b == b';').next().unwrap_or_default();
    let digits = digits.trim_ascii_end();
    if digits.is_empty() || digits.len() > 16 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let size = u64::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()?;
    usize::try_from(size).ok()
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::thread;

    use super::*;

    #[test]
    fn urls_parse_with_default_and_explicit_ports() {
        assert_eq!(
            parse_url("http://127.0.0.1:8767/healthz").unwrap(),
            Target {
                tls: false,
                host: "127.0.0.1".into(),
                port: 8767,
                path: "/healthz".into()
            }
        );
        let v6 = parse_url("https://[::1]/healthz").unwrap();
        assert_eq!((v6.tls, v6.host.as_str(), v6.port), (true, "::1", 443));
        assert_eq!(parse_url("http://h").unwrap().path, "/");
        assert!(parse_url("ftp://h/").is_err());
        assert!(parse_url("http://:80/").is_err());
        assert!(parse_url("http://h:port/").is_err());
    }

    #[test]
    fn requests_carry_host_close_and_length() {
        let target = parse_url("http://[::1]:9000/approvals").unwrap();
        let request = Request {
            method: "POST",
            path: "/approvals/a1",
            headers: &[("Content-Type", "application/json")],
            body: Some(b"{}"),
        };
        assert_eq!(
            String::from_utf8(encode_request(&target, &request).unwrap()).unwrap(),
            "POST /approvals/a1 HTTP/1.1\r\nHost: [::1]:9000\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        );
        let default_port = parse_url("https://gw.example/healthz").unwrap();
        let get = Request {
            method: "GET",
            path: "/healthz",
            headers: &[],
            body: None,
        };
        let text = String::from_utf8(encode_request(&default_port, &get).unwrap()).unwrap();
        assert!(text.starts_with("GET /healthz HTTP/1.1\r\nHost: gw.example\r\n"));
        let smuggled = Request {
            headers: &[("X", "a\r\nEvil: 1")],
            ..get
        };
        assert!(encode_request(&default_port, &smuggled).is_err());
    }

    #[test]
    fn heads_give_status_and_headers() {
        let (status, headers) =
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nX-Empty:\r\nA: b: c").unwrap();
        assert_eq!(status, 200);
        assert_eq!(
            headers,
            [
                ("Content-Length".to_owned(), "12".to_owned()),
                ("X-Empty".to_owned(), String::new()),
                ("A".to_owned(), "b: c".to_owned()),
            ]
        );
        assert_eq!(
            parse_head(b"HTTP/1.1 503 Service Unavailable").unwrap().0,
            503
        );
        assert_eq!(parse_head(b"HTTP/1.0 404\nServer: x").unwrap().0, 404);
        assert!(parse_head(b"").is_err());
        assert!(parse_head(b"garbage").is_err());
        assert!(parse_head(b"HTTP/1.1 20 OK").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nno colon").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\n folded: line").is_err());
    }

    #[test]
    fn the_head_ends_at_the_first_empty_line() {
        assert_eq!(
            head_end(b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody"),
            Some((22, 25))
        );
        assert_eq!(head_end(b"HTTP/1.1 200 OK\n\nbody"), Some((15, 17)));
        assert_eq!(head_end(b"HTTP/1.1 200 OK\r\nA: b\r\n"), None);
    }

    fn response_with(headers: &[(&str, &str)], status: u16) -> Response {
        Response {
            status,
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            body: Vec::new(),
        }
    }

    #[test]
    fn framing_follows_the_headers() {
        let framing_of = |headers, status| framing(&response_with(headers, status)).unwrap();
        assert_eq!(
            framing_of(&[("content-length", "5")], 200),
            Framing::Length(5)
        );
        assert_eq!(
            framing_of(
                &[("Content-Length", "5"), ("Transfer-Encoding", "Chunked")],
                200
            ),
            Framing::Chunked
        );
        assert_eq!(framing_of(&[], 200), Framing::UntilClose);
        assert_eq!(framing_of(&[("Content-Length", "5")], 204), Framing::Empty);
        assert!(framing(&response_with(&[("Content-Length", "-1")], 200)).is_err());
        assert!(
            framing(&response_with(
                &[("Transfer-Encoding", "gzip, chunked")],
                200
            ))
            .is_err()
        );
    }

    #[test]
    fn chunked_bodies_decode() {
        assert_eq!(
            decode_chunked(b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n").unwrap(),
            b"hello, world"
        );
        // Hex sizes of either case, extensions, trailers, bare LF line ends, and bytes after
        // the end are all taken in stride.
        let body = [b'x'; 26];
        let mut data = b"1A;name=value\r\n".to_vec();
        data.extend_from_slice(&body);
        data.extend_from_slice(b"\r\n1a ; ext\n");
        data.extend_from_slice(&body);
        data.extend_from_slice(b"\n0\r\nTrailer: yes\r\n\r\nleftover");
        assert_eq!(decode_chunked(&data).unwrap(), [b'x'; 52]);
        assert_eq!(decode_chunked(b"0\r\n\r\n").unwrap(), b"");
    }

    #[test]
    fn cut_or_malformed_chunked_bodies_are_refused() {
        let whole = b"5\r\nhello\r\n0\r\n\r\n";
        for cut in 0..whole.len() {
            assert_eq!(
                decode_chunked(&whole[..cut]),
                Err(ChunkedError::Truncated),
                "cut at {cut}"
            );
        }
        assert!(matches!(
            decode_chunked(b"zz\r\nhello\r\n0\r\n\r\n"),
            Err(ChunkedError::BadSize(_))
        ));
        assert!(matches!(
            decode_chunked(b"+5\r\nhello\r\n0\r\n\r\n"),
            Err(ChunkedError::BadSize(_))
        ));
        assert!(matches!(
            decode_chunked(b"11111111111111111\r\n"),
            Err(ChunkedError::BadSize(_))
        ));
        assert_eq!(
            decode_chunked(b"3\r\nhello\r\n0\r\n\r\n"),
            Err(ChunkedError::MissingLineBreak)
        );
    }

    /// Serves one connection with `answer` (in pieces, to exercise reading across packets) and
    /// returns the URL and the request it received.
    fn serve_once(answer: &'static [u8]) -> (String, thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/approvals", listener.local_addr().unwrap());
        let server = thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            while head_end(&request).is_none() {
                let mut chunk = [0u8; 1024];
                let n = stream.read(&mut chunk).unwrap();
                assert!(n > 0, "the request ended early");
                request.extend_from_slice(&chunk[..n]);
            }
            for piece in answer.chunks(7) {
                stream.write_all(piece).unwrap();
                stream.flush().unwrap();
                thread::sleep(Duration::from_millis(1));
            }
            String::from_utf8(request).unwrap()
        });
        (url, server)
    }

    fn get(url: &str) -> anyhow::Result<Response> {
        let request = Request {
            method: "GET",
            path: "/approvals",
            headers: &[("Authorization", "Bearer t")],
            body: None,
        };
        send(&parse_url(url)?, None, &request, Duration::from_secs(5))
    }

    #[test]
    fn answers_are_read_whole_with_either_framing() {
        let (url, server) =
            serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n{\"pending\":[]}");
        let response = get(&url).unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(response.header("content-length"), Some("14"));
        assert_eq!(response.body, b"{\"pending\":[]}");
        let request = server.join().unwrap();
        assert!(
            request.starts_with("GET /approvals HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(
            request.contains("\r\nAuthorization: Bearer t\r\n"),
            "{request}"
        );

        let (url, server) = serve_once(
            b"HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n\
              9\r\n{\"error\":\r\n12\r\n\"forbidden\",\"x\":1}\r\n0\r\n\r\n",
        );
        let response = get(&url).unwrap();
        assert_eq!(response.status, 403);
        assert_eq!(response.body, b"{\"error\":\"forbidden\",\"x\":1}");
        server.join().unwrap();

        let (url, server) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort");
        let error = get(&url).unwrap_err().to_string();
        assert!(error.contains("after 5 of the body's 50 bytes"), "{error}");
        server.join().unwrap();
    }

    /// Serves one TLS connection with a certificate for 127.0.0.1, answering `204`.
    fn serve_tls_once(
        cert: &rcgen::CertifiedKey<rcgen::KeyPair>,
    ) -> (String, thread::JoinHandle<()>) {
        let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(
            cert.signing_key.serialize_pem().as_bytes(),
        )
        .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}/approvals", listener.local_addr().unwrap());
        let server = thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let connection = rustls::ServerConnection::new(Arc::new(config)).unwrap();
            let mut tls = StreamOwned::new(connection, stream);
            // A client that refuses the certificate ends the handshake: nothing to answer.
            let mut request = Vec::new();
            while head_end(&request).is_none() {
                let mut chunk = [0u8; 1024];
                match tls.read(&mut chunk) {
                    Ok(n) if n > 0 => request.extend_from_slice(&chunk[..n]),
                    _ => return,
                }
            }
            let _ = tls.write_all(b"HTTP/1.1 204 No Content\r\n\r\n");
            tls.conn.send_close_notify();
            let _ = tls.flush();
        });
        (url, server)
    }

    #[test]
    fn https_verifies_the_certificate_against_the_ca_file() {
        let generate = || rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
        let served = generate();
        let dir = tempfile::tempdir().unwrap();
        let trusted = dir.path().join("trusted.pem");
        std::fs::write(&trusted, served.cert.pem()).unwrap();
        let other = dir.path().join("other.pem");
        std::fs::write(&other, generate().cert.pem()).unwrap();
        let request = Request {
            method: "GET",
            path: "/approvals",
            headers: &[],
            body: None,
        };
        let timeout = Duration::from_secs(5);

        let (url, server) = serve_tls_once(&served);
        let config = verifying_tls(&trusted).unwrap();
        let response = send(&parse_url(&url).unwrap(), Some(config), &request, timeout).unwrap();
        assert_eq!(response.status, 204);
        server.join().unwrap();

        let (url, server) = serve_tls_once(&served);
        let config = verifying_tls(&other).unwrap();
        let error = send(&parse_url(&url).unwrap(), Some(config), &request, timeout).unwrap_err();
        assert!(format!("{error:#}").contains("certificate"), "{error:#}");
        server.join().unwrap();

        let not_pem = dir.path().join("not.pem");
        std::fs::write(&not_pem, "no certificate here").unwrap();
        assert!(verifying_tls(&not_pem).is_err());
    }
}
