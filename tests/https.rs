//! HTTPS with a certificate generated at test time, and a real TLS client (hyper over
//! tokio-rustls, trusting only the generated certificates) that reports which certificate the
//! server presented: `/healthz` and MCP over TLS, replacing the files (picked up by the file
//! watch, and by SIGHUP in a `muxgate serve` process) while an open connection keeps working,
//! and a broken replacement that is refused.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::serve::ServeProcess;
use common::{LEGACY_VERSION, TEST_SECRET, spawn_gateway};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use muxgate::config::Config;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A self-signed certificate for `localhost` and `127.0.0.1`, as PEM, and its DER.
struct TestCert {
    cert_pem: String,
    key_pem: String,
    der: CertificateDer<'static>,
}

fn generate() -> TestCert {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
            .expect("generate a certificate");
    TestCert {
        cert_pem: certified.cert.pem(),
        key_pem: certified.signing_key.serialize_pem(),
        der: certified.cert.der().clone(),
    }
}

/// Writes the pair the way a deployment replaces it: new files renamed over the old ones.
fn install(cert: &TestCert, dir: &Path) {
    for (name, text) in [("tls.crt", &cert.cert_pem), ("tls.key", &cert.key_pem)] {
        let tmp = dir.join(format!("{name}.new"));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, dir.join(name)).unwrap();
    }
}

/// A TLS connection to `addr` trusting only `trusted`; returns the HTTP/1.1 sender and the
/// certificate the server presented.
async fn connect(
    addr: SocketAddr,
    trusted: &[&TestCert],
) -> (SendRequest<Full<Bytes>>, CertificateDer<'static>) {
    let mut roots = RootCertStore::empty();
    for cert in trusted {
        roots.add(cert.der.clone()).unwrap();
    }
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .expect("TLS handshake with a trusted certificate");
    let presented = tls.get_ref().1.peer_certificates().unwrap()[0].clone();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .expect("HTTP/1.1 handshake");
    tokio::spawn(connection);
    (sender, presented)
}

async fn send(
    sender: &mut SendRequest<Full<Bytes>>,
    request: http::Request<Full<Bytes>>,
) -> (http::response::Parts, String) {
    sender.ready().await.expect("connection ready");
    let response = sender.send_request(request).await.expect("HTTP exchange");
    let (parts, body) = response.into_parts();
    let body = tokio::time::timeout(Duration::from_secs(10), body.collect())
        .await
        .expect("body within 10 s")
        .expect("read body")
        .to_bytes();
    (parts, String::from_utf8_lossy(&body).into_owned())
}

fn get(path: &str) -> http::Request<Full<Bytes>> {
    http::Request::get(path)
        .header("host", "localhost")
        .body(Full::default())
        .unwrap()
}

/// Polls new connections until the server presents `expected` (or fails after 10 s).
async fn wait_for_certificate(addr: SocketAddr, trusted: &[&TestCert], expected: &TestCert) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (_, presented) = connect(addr, trusted).await;
        if presented == expected.der {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the new certificate was not served within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn tls_config(dir: &Path, watch_interval_secs: u64) -> String {
    format!(
        "[http.tls]\ncert_file = '{}'\nkey_file = '{}'\nwatch_interval_secs = {watch_interval_secs}\n",
        dir.join("tls.crt").display(),
        dir.join("tls.key").display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_serves_health_and_mcp_and_picks_up_a_replaced_certificate() {
    let logs = common::logs::captured("muxgate::http::tls=info");
    let dir = tempfile::tempdir().unwrap();
    let first = generate();
    install(&first, dir.path());
    let config = Config::from_toml_str(&format!(
        "[http]\nauth_failures_per_minute = 1\n{}",
        tls_config(dir.path(), 1)
    ))
    .unwrap();
    let gateway = spawn_gateway(common::relaxed(config)).await;

    let (mut kept, presented) = connect(gateway.addr, &[&first]).await;
    assert_eq!(presented, first.der);
    let (health, body) = send(&mut kept, get("/healthz")).await;
    assert_eq!(health.status, 200, "{body}");
    // Over TLS too, the gateway's end of a connection sends each write at once.
    let raw = TcpStream::connect(gateway.addr).await.unwrap();
    let local = raw.local_addr().unwrap();
    assert!(common::sockets::gateway_end_sends_at_once(local).await);

    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "https-test", "version": "0"}
        }
    });
    let request = http::Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {}", gateway.token))
        .body(Full::new(Bytes::from(initialize.to_string())))
        .unwrap();
    let (mcp, body) = send(&mut kept, request).await;
    assert_eq!(mcp.status, 200, "{body}");
    assert!(mcp.headers.contains_key("mcp-session-id"));
    assert!(body.contains(r#""serverInfo""#), "{body}");

    // Failed authentications are counted by the TLS peer's address too: the second failure
    // spends the budget of one, the next request is throttled.
    for expected in [401, 401, 429] {
        let forged = http::Request::post("/mcp")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", "Bearer not-a-token")
            .body(Full::new(Bytes::from(initialize.to_string())))
            .unwrap();
        let (answer, body) = send(&mut kept, forged).await;
        assert_eq!(answer.status, expected, "{body}");
    }

    // Replace the pair: new connections get the new certificate…
    let second = generate();
    install(&second, dir.path());
    wait_for_certificate(gateway.addr, &[&first, &second], &second).await;
    // …and the connection opened before keeps working.
    let (health, _) = send(&mut kept, get("/healthz")).await;
    assert_eq!(health.status, 200);
    // A client that trusts only the old certificate is now refused by its own TLS check.
    let tcp = TcpStream::connect(gateway.addr).await.unwrap();
    let mut roots = RootCertStore::empty();
    roots.add(first.der.clone()).unwrap();
    let old_only =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    assert!(
        TlsConnector::from(Arc::new(old_only))
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .is_err()
    );

    // A broken replacement is refused (the watcher says so); the last good certificate stays.
    let broken = dir.path().join("tls.crt");
    std::fs::write(&broken, "not a certificate").unwrap();
    let broken = broken.display().to_string();
    let refused = || {
        common::logs::text(&logs)
            .lines()
            .any(|line| line.contains("TLS certificate not reloaded") && line.contains(&broken))
    };
    assert!(
        common::wait_until(Duration::from_secs(10), refused).await,
        "the watcher never looked at the broken certificate:\n{}",
        common::logs::text(&logs)
    );
    let (_, presented) = connect(gateway.addr, &[&second]).await;
    assert_eq!(presented, second.der);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_certificate_of_a_serve_process() {
    let dir = tempfile::tempdir().unwrap();
    let first = generate();
    install(&first, dir.path());
    let config = dir.path().join("muxgate.toml");
    std::fs::write(
        &config,
        format!(
            "{}[auth]\nsecret = '{TEST_SECRET}'\n[tmux.servers.work]\nsocket_name = '{}'\nallow_absent = true\n",
            // A watch interval that never fires during the test: only SIGHUP reloads.
            tls_config(dir.path(), 3600),
            common::tmux::unique_socket_name()
        ),
    )
    .unwrap();
    let mut gateway = ServeProcess::start(&config, &dir.path().join("serve.log"), &[]).await;
    assert!(
        gateway.mcp_url.starts_with("https://127.0.0.1:"),
        "{}",
        gateway.mcp_url
    );
    let addr: SocketAddr = gateway.base.trim_start_matches("https://").parse().unwrap();
    let (mut sender, presented) = connect(addr, &[&first]).await;
    assert_eq!(presented, first.der);
    assert_eq!(send(&mut sender, get("/healthz")).await.0.status, 200);

    let second = generate();
    install(&second, dir.path());
    let (_, presented) = connect(addr, &[&first, &second]).await;
    assert_eq!(presented, first.der, "nothing reloads without the signal");
    gateway.signal(libc::SIGHUP);
    wait_for_certificate(addr, &[&first, &second], &second).await;
    assert!(
        gateway.log().contains("TLS certificate reloaded"),
        "{}",
        gateway.log()
    );

    // The container probe speaks TLS too.
    let probe = std::process::Command::new(env!("CARGO_BIN_EXE_muxgate"))
        .args(["healthcheck", "--url", &format!("{}/healthz", gateway.base)])
        .output()
        .unwrap();
    assert!(probe.status.success(), "{probe:?}");

    gateway.signal(libc::SIGTERM);
    assert!(gateway.wait(Duration::from_secs(20)).await.success());
}
