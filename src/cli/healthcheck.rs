//! `muxgate healthcheck`: one `GET /healthz`, exit 0 on `200`. It is the container's
//! HEALTHCHECK (the runtime image has no curl), so it is a plain blocking HTTP/1.1 request with
//! timeouts, over TLS when the gateway serves HTTPS.
//!
//! Over TLS the certificate is not verified: the probe talks to the local process, sends
//! nothing secret and only reads the status line, and the certificate's names usually do not
//! include the loopback address it dials.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, ToSocketAddrs};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme, StreamOwned};

use super::HealthcheckArgs;
use crate::config::{self, Config};

pub fn run(args: &HealthcheckArgs) -> anyhow::Result<ExitCode> {
    let url = match &args.url {
        Some(url) => url.clone(),
        None => {
            let loaded = Config::load(args.config.config.as_deref(), config::process_env()?)?;
            default_url(&loaded.config)
        }
    };
    let timeout = Duration::from_secs(args.timeout.max(1));
    let status = get_status(&url, timeout).with_context(|| format!("GET {url}"))?;
    if status == 200 {
        println!("ok: {url} answered 200");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("unhealthy: {url} answered {status}");
        Ok(ExitCode::FAILURE)
    }
}

/// `/healthz` on the configured port, over loopback when the bind address is unspecified.
pub fn default_url(config: &Config) -> String {
    let bind = config.http.bind;
    let ip = match bind.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    let scheme = if config.http.tls.is_some() {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{}/healthz", SocketAddr::new(ip, bind.port()))
}

/// A parsed `http[s]://host[:port]/path`.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    tls: bool,
    host: String,
    port: u16,
    path: String,
}

fn parse_url(url: &str) -> anyhow::Result<Target> {
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
    let default_port = if tls { 443 } else { 80 };
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

/// Sends the request and returns the response's status code.
fn get_status(url: &str, timeout: Duration) -> anyhow::Result<u16> {
    let target = parse_url(url)?;
    let addr = (target.host.as_str(), target.port)
        .to_socket_addrs()?
        .next()
        .context("the host has no address")?;
    let stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let host_header = if target.host.contains(':') {
        format!("[{}]", target.host)
    } else {
        target.host.clone()
    };
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {host_header}\r\nUser-Agent: muxgate-healthcheck\r\nConnection: close\r\n\r\n",
        target.path
    );
    let mut response = Vec::new();
    if target.tls {
        let name = ServerName::try_from(target.host.clone())?;
        let connection = ClientConnection::new(any_certificate_config(), name)?;
        let mut tls = StreamOwned::new(connection, stream);
        tls.write_all(request.as_bytes())?;
        read_head(&mut tls, &mut response)?;
    } else {
        let mut stream = stream;
        stream.write_all(request.as_bytes())?;
        read_head(&mut stream, &mut response)?;
    }
    parse_status(&response)
}

/// Reads until the end of the status line (or the connection closes).
fn read_head(reader: &mut impl Read, into: &mut Vec<u8>) -> anyhow::Result<()> {
    let mut chunk = [0u8; 512];
    while !into.contains(&b'\n') && into.len() < 8192 {
        let n = reader.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        into.extend_from_slice(&chunk[..n]);
    }
    Ok(())
}

fn parse_status(response: &[u8]) -> anyhow::Result<u16> {
    let line = response.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some(version), Some(code)) if version.starts_with("HTTP/") => code
            .parse()
            .with_context(|| format!("bad status line {line:?}")),
        _ => bail!("no HTTP status line in the answer ({line:?})"),
    }
}

/// A client configuration that accepts any certificate but still checks the handshake
/// signatures (see the module docs for why that is enough here).
fn any_certificate_config() -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(AnyCertificate {
        algorithms: provider.signature_verification_algorithms,
    });
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        // The ring provider supports the default protocol versions.
        .expect("ring supports TLS 1.2 and 1.3")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Arc::new(config)
}

#[derive(Debug)]
struct AnyCertificate {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
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
    fn status_lines_are_read() {
        assert_eq!(parse_status(b"HTTP/1.1 200 OK\r\n").unwrap(), 200);
        assert_eq!(
            parse_status(b"HTTP/1.1 503 Service Unavailable\r\nx").unwrap(),
            503
        );
        assert!(parse_status(b"").is_err());
        assert!(parse_status(b"garbage\r\n").is_err());
    }

    #[test]
    fn the_default_url_follows_bind_and_tls() {
        let mut config = Config::embedded_default();
        config.http.bind = "0.0.0.0:9000".parse().unwrap();
        assert_eq!(default_url(&config), "http://127.0.0.1:9000/healthz");
        config.http.tls = Some(crate::config::TlsConfig {
            cert_file: "/c".into(),
            key_file: "/k".into(),
            watch_interval_secs: 10,
        });
        assert_eq!(default_url(&config), "https://127.0.0.1:9000/healthz");
    }
}
