//! HTTPS: rustls (ring provider) with a certificate that can be replaced while running.
//!
//! [`CertStore`] holds the current certificate and key; rustls asks it for them at every
//! handshake, so a reload affects new connections only and open ones keep theirs.
//! [`watch`] reloads on SIGHUP and when either file changes (size, mtime or inode, checked
//! every `watch_interval_secs`; this also catches the symlink swap of a Kubernetes secret
//! volume). A replacement that does not load (unreadable, not PEM, key not matching the
//! certificate) is logged and ignored: the gateway keeps serving the previous one.
//!
//! [`TlsListener`] is an axum listener: a task per listening socket accepts TCP connections and
//! runs each handshake in its own task (bounded by [`HANDSHAKE_TIMEOUT`]), so one slow client
//! cannot hold up the others; finished handshakes are handed to axum, which serves them like
//! plain connections. At most [`MAX_HANDSHAKES`] run at once (further connections wait in the
//! kernel's backlog), so clients that open connections and never finish a handshake cost a
//! bounded number of tasks; and they end with the listener, so a shutdown leaves none running.

use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;

use super::listen::Listeners;
use crate::config::TlsConfig;

/// Longest a client may take to complete the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Most TLS handshakes in progress at once, over every listening socket.
pub const MAX_HANDSHAKES: usize = 256;

/// Why a certificate and key could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The certificate file holds no PEM certificate.
    #[error("{}: no PEM certificate found", path.display())]
    NoCertificate {
        /// The certificate file.
        path: PathBuf,
    },
    /// The certificate file holds a PEM section that does not parse.
    #[error("{}: not a PEM certificate chain: {message}", path.display())]
    BadCertificate {
        /// The certificate file.
        path: PathBuf,
        /// The PEM parser's message.
        message: String,
    },
    /// The key file holds no private key, or one the ring provider cannot load.
    #[error("{}: no usable PEM private key: {message}", path.display())]
    BadKey {
        /// The key file.
        path: PathBuf,
        /// The parser's or the provider's message.
        message: String,
    },
    /// The key does not match the public key of the leaf certificate.
    #[error("the key in {} does not match the certificate in {}: {message}", key.display(), cert.display())]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// rustls's message.
        message: String,
    },
    /// rustls refused the server configuration (its message).
    #[error("TLS setup: {0}")]
    Setup(String),
}

/// The ring provider: the only one muxgate builds with.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Loads a certificate chain and its key, checking that they belong together.
pub fn load_certified_key(cert_file: &Path, key_file: &Path) -> Result<CertifiedKey, TlsError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::Read {
            path: path.to_owned(),
            source,
        })
    };
    let cert_pem = read(cert_file)?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::BadCertificate {
            path: cert_file.to_owned(),
            message: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: cert_file.to_owned(),
        });
    }
    let key_pem = read(key_file)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| TlsError::BadKey {
        path: key_file.to_owned(),
        message: e.to_string(),
    })?;
    let signing_key =
        provider()
            .key_provider
            .load_private_key(key)
            .map_err(|e| TlsError::BadKey {
                path: key_file.to_owned(),
                message: e.to_string(),
            })?;
    let certified = CertifiedKey::new(chain, signing_key);
    certified.keys_match().map_err(|e| TlsError::Mismatch {
        cert: cert_file.to_owned(),
        key: key_file.to_owned(),
        message: e.to_string(),
    })?;
    Ok(certified)
}

/// What identifies a version of a file: replacing or rewriting it changes one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    inode: u64,
    len: u64,
    modified_nanos: i128,
}

impl FileStamp {
    fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Self {
            inode: meta.ino(),
            len: meta.len(),
            modified_nanos: i128::from(meta.mtime()) * 1_000_000_000
                + i128::from(meta.mtime_nsec()),
        })
    }
}

/// The certificate served to new connections, and where it comes from.
#[derive(Debug)]
pub struct CertStore {
    config: TlsConfig,
    current: RwLock<Arc<CertifiedKey>>,
    stamps: RwLock<(Option<FileStamp>, Option<FileStamp>)>,
}

impl CertStore {
    /// Loads the configured files; an error here stops the gateway from starting.
    pub fn load(config: &TlsConfig) -> Result<Self, TlsError> {
        let stamps = Self::stamps_of(config);
        let key = load_certified_key(&config.cert_file, &config.key_file)?;
        Ok(Self {
            config: config.clone(),
            current: RwLock::new(Arc::new(key)),
            stamps: RwLock::new(stamps),
        })
    }

    fn stamps_of(config: &TlsConfig) -> (Option<FileStamp>, Option<FileStamp>) {
        (
            FileStamp::of(&config.cert_file),
            FileStamp::of(&config.key_file),
        )
    }

    /// Reads the files again and, if they load, serves them to new connections.
    pub fn reload(&self) -> Result<(), TlsError> {
        let stamps = Self::stamps_of(&self.config);
        // Remember the stamps even on failure, so a broken file is reported once, not at
        // every check; fixing it changes the stamps again.
        *self.stamps.write().unwrap_or_else(|e| e.into_inner()) = stamps;
        let key = load_certified_key(&self.config.cert_file, &self.config.key_file)?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(key);
        Ok(())
    }

    /// Whether either file changed since the last load.
    fn changed(&self) -> bool {
        Self::stamps_of(&self.config) != *self.stamps.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The rustls server configuration resolving certificates from this store.
    pub fn server_config(self: &Arc<Self>) -> Result<Arc<ServerConfig>, TlsError> {
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Setup(e.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    fn reload_and_log(&self, why: &str) {
        match self.reload() {
            Ok(()) => tracing::info!(
                cert = %self.config.cert_file.display(),
                why,
                "TLS certificate reloaded"
            ),
            Err(error) => tracing::error!(
                %error,
                why,
                "TLS certificate not reloaded; still serving the previous one"
            ),
        }
    }
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        )
    }
}

/// Reloads `store` on SIGHUP and when its files change, until `shutdown`.
pub fn watch(store: Arc<CertStore>, shutdown: CancellationToken) -> io::Result<JoinHandle<()>> {
    let mut hangup = signal(SignalKind::hangup())?;
    let interval = store.config.watch_interval();
    Ok(tokio::spawn(async move {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = hangup.recv() => store.reload_and_log("SIGHUP"),
                () = tokio::time::sleep(interval) => {
                    if store.changed() {
                        store.reload_and_log("file changed");
                    }
                }
            }
        }
    }))
}

/// An axum listener that hands out TLS connections whose handshake has completed, from every
/// socket of [`Listeners`] (an accept loop each).
pub struct TlsListener {
    local_addr: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    acceptors: Vec<JoinHandle<()>>,
}

impl TlsListener {
    /// Starts an accept loop on every socket of `listeners`; each connection's handshake, with
    /// `config`, runs in a task of its own, bounded by [`HANDSHAKE_TIMEOUT`], at most
    /// [`MAX_HANDSHAKES`] at once.
    pub fn new(listeners: Listeners, config: Arc<ServerConfig>) -> io::Result<Self> {
        let local_addr = listeners.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        let acceptor = TlsAcceptor::from(config);
        let handshakes = Arc::new(Semaphore::new(MAX_HANDSHAKES));
        let acceptors = listeners
            .into_sockets()
            .into_iter()
            .map(|socket| {
                let handshakes = Arc::clone(&handshakes);
                tokio::spawn(accept_loop(
                    socket,
                    acceptor.clone(),
                    tx.clone(),
                    handshakes,
                ))
            })
            .collect();
        Ok(Self {
            local_addr,
            ready,
            acceptors,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        // axum drops the listener when it stops accepting (shutdown): stop with it, and with the
        // loops the handshakes they run.
        for acceptor in &self.acceptors {
            acceptor.abort();
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accept loop never ends on its own; if it did, accept nothing more.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local_addr)
    }
}

/// Accepts connections on `listener` and hands each to `ready` once its handshake is done.
/// A connection is accepted only with a permit of `handshakes`, held until its handshake ends;
/// the handshakes run in tasks the loop owns, so they end when it is aborted.
async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    ready: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
    handshakes: Arc<Semaphore>,
) {
    let mut running = JoinSet::new();
    loop {
        while running.try_join_next().is_some() {}
        // The semaphore is never closed; should it be, accept nothing more.
        let Ok(permit) = Arc::clone(&handshakes).acquire_owned().await else {
            return;
        };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(%error, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        super::tcp::send_at_once(&stream);
        let acceptor = acceptor.clone();
        let ready = ready.clone();
        running.spawn(async move {
            let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await;
            drop(permit);
            match handshake {
                Ok(Ok(tls)) => {
                    let _ = ready.send((tls, peer)).await;
                }
                Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use rustls::pki_types::{PrivatePkcs8KeyDer, ServerName};
    use tokio::io::AsyncReadExt as _;
    use tokio_rustls::TlsConnector;

    use super::*;

    /// A server config with a fresh self-signed certificate, and a client that trusts it.
    fn configs() -> (Arc<ServerConfig>, Arc<rustls::ClientConfig>) {
        let certified =
            rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("a certificate");
        let cert = certified.cert.der().clone();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            certified.signing_key.serialize_der(),
        ));
        let server = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key)
            .expect("a server config");
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).expect("a trusted root");
        let client = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        (Arc::new(server), Arc::new(client))
    }

    #[tokio::test]
    async fn handshakes_in_progress_are_capped_and_end_with_the_listener() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("its address");
        let (server, client) = configs();
        let (tx, mut ready) = mpsc::channel(4);
        let cap = Arc::new(Semaphore::new(2));
        let accepting = tokio::spawn(accept_loop(listener, TlsAcceptor::from(server), tx, cap));

        // Two clients connect and never say hello: they hold both permits.
        let mut first = TcpStream::connect(addr).await.expect("connect");
        let silent = TcpStream::connect(addr).await.expect("connect");
        let connector = TlsConnector::from(client);
        let third = tokio::spawn(async move {
            let tcp = TcpStream::connect(addr).await?;
            let name = ServerName::try_from("localhost").expect("a server name");
            connector.connect(name, tcp).await
        });
        // The third client's handshake waits while both permits are held…
        let early = tokio::time::timeout(Duration::from_secs(1), ready.recv()).await;
        assert!(early.is_err(), "a handshake ran past the cap");
        // …and runs once one of the silent clients leaves.
        drop(silent);
        let served = tokio::time::timeout(Duration::from_secs(5), ready.recv())
            .await
            .expect("the handshake ran once a permit was free");
        assert!(served.is_some());
        third
            .await
            .expect("the client task")
            .expect("the client's handshake");

        // Stopping the listener ends the handshake still waiting on the first client at once,
        // not after HANDSHAKE_TIMEOUT: the server closes its connection.
        accepting.abort();
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(5), first.read(&mut byte))
            .await
            .expect("closed before the handshake timeout");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    }
}
