//! `muxgate healthcheck`: one `GET /healthz` with [`super::http_client`], exit 0 on `200`. It
//! is the container's HEALTHCHECK (the runtime image has no curl), over TLS when the gateway
//! serves HTTPS.
//!
//! Over TLS the certificate is not verified: the probe talks to the local process, sends
//! nothing secret and only looks at the status, and the certificate's names usually do not
//! include the loopback address it dials.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

use super::HealthcheckArgs;
use super::http_client::{Request, parse_url, provider, send};

pub(super) fn run(args: &HealthcheckArgs) -> anyhow::Result<ExitCode> {
    let url = super::url_or_configured(args.url.as_deref(), &args.config, "/healthz")?;
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

/// Sends the request and returns the response's status code.
fn get_status(url: &str, timeout: Duration) -> anyhow::Result<u16> {
    let target = parse_url(url)?;
    let tls = target.tls.then(any_certificate_config);
    let request = Request {
        method: "GET",
        path: &target.path,
        headers: &[("User-Agent", "muxgate-healthcheck")],
        body: None,
    };
    Ok(send(&target, tls, &request, timeout)?.status)
}

/// A client configuration that accepts any certificate but still checks the handshake
/// signatures (see the module docs for why that is enough here).
fn any_certificate_config() -> Arc<ClientConfig> {
    let provider = provider();
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
