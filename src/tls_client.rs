//! The TLS configuration of the connections the gateway and its host connector open (a host
//! dialling in, a webhook): rustls on ring, the system's roots and an optional CA file.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

/// A client's TLS configuration (rustls on ring): the system's roots, and `ca_file`'s
/// certificates (PEM) when given. For the connections the gateway and its host connector
/// open: a host dialling in, a webhook.
pub(crate) fn client_config(ca_file: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    if let Some(file) = ca_file {
        let failed = |e: &dyn std::fmt::Display| format!("{}: {e}", file.display());
        for cert in CertificateDer::pem_file_iter(file).map_err(|e| failed(&e))? {
            let cert = cert.map_err(|e| failed(&e))?;
            roots.add(cert).map_err(|e| failed(&e))?;
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(Arc::new(config))
}
