//! The sockets the gateway listens on.
//!
//! Usually one: `http.bind`. A workspace with `network = "host"` shares the host's network and
//! can listen on any address and port nobody holds. A client told `localhost` may try `[::1]`
//! before `127.0.0.1` (or the reverse), so a tenant listening on the loopback address of the
//! other family, on the gateway's port, would receive that client's requests, bearer token
//! included. In that mode [`bind`] therefore holds the other family's address on the same port
//! too (`127.0.0.1` ⇄ `[::1]`; `0.0.0.0` → `[::]` IPv6-only; `[::]` → `0.0.0.0` when the
//! system made it IPv6-only), and the gateway serves on both. Where the host has no such
//! address (no IPv6), nobody can listen there either, and the gateway goes on with one;
//! any other failure refuses to start, naming the address.
//!
//! [`Listeners::accept`] takes connections from all of them, in turn, so that a flood on one
//! does not starve the other.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use axum::serve::Listener;
use socket2::SockRef;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// Connections waiting to be accepted, per socket (as `TcpListener::bind` has it).
const BACKLOG: u32 = 1024;

/// How often a random port (`http.bind` port 0) is tried again when the other address is
/// taken on the port the first bind got.
const RANDOM_PORT_TRIES: usize = 8;

/// Why the gateway cannot listen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ListenError {
    /// The configured address.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        address: SocketAddr,
        source: io::Error,
    },
    /// The other loopback address, held so that no workspace sharing the host's network can
    /// listen there.
    #[error(
        "cannot listen on {address}, the other loopback address on the gateway's port, which the \
         gateway holds so that no workspace with network = \"host\" can listen there and receive \
         clients' requests: {source}"
    )]
    OtherLoopback {
        address: SocketAddr,
        source: io::Error,
    },
}

/// One or more listening sockets on the same port; the first is the configured address.
#[derive(Debug)]
pub struct Listeners {
    first: TcpListener,
    others: Vec<TcpListener>,
    /// Which socket's accept is polled first next time.
    turn: usize,
}

impl Listeners {
    /// The configured address, with the port the system chose for port 0.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.first.local_addr()
    }

    /// Every address listened on, the configured one first.
    pub fn addresses(&self) -> io::Result<Vec<SocketAddr>> {
        std::iter::once(&self.first)
            .chain(&self.others)
            .map(TcpListener::local_addr)
            .collect()
    }

    /// The sockets, for a listener that accepts from each in a task of its own.
    pub fn into_sockets(self) -> Vec<TcpListener> {
        std::iter::once(self.first).chain(self.others).collect()
    }

    /// The next connection on any of the sockets. axum's accept of each logs and retries
    /// failed accepts (with a back-off when file descriptors run out); which socket is polled
    /// first rotates, so that each gets its turn under load.
    pub async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        if self.others.is_empty() {
            return Listener::accept(&mut self.first).await;
        }
        let mut sockets: Vec<&mut TcpListener> = std::iter::once(&mut self.first)
            .chain(&mut self.others)
            .collect();
        let count = sockets.len();
        sockets.rotate_left(self.turn % count);
        self.turn = self.turn.wrapping_add(1);
        let accepts = sockets
            .into_iter()
            .map(|socket| Box::pin(Listener::accept(socket)));
        futures::future::select_all(accepts).await.0
    }
}

impl From<TcpListener> for Listeners {
    fn from(first: TcpListener) -> Self {
        Self {
            first,
            others: Vec::new(),
            turn: 0,
        }
    }
}

/// Listens on `address`; with `other_loopback`, also on the other family's address that
/// reaches this host on the same port (see the module docs).
pub(crate) async fn bind(
    address: SocketAddr,
    other_loopback: bool,
) -> Result<Listeners, ListenError> {
    let tries = if other_loopback && address.port() == 0 {
        RANDOM_PORT_TRIES
    } else {
        1
    };
    let mut tried = 0;
    loop {
        tried += 1;
        let mut listeners = Listeners::from(
            TcpListener::bind(address)
                .await
                .map_err(|source| ListenError::Bind { address, source })?,
        );
        if !other_loopback {
            return Ok(listeners);
        }
        let Some(other) = other_address(&listeners.first)
            .map_err(|source| ListenError::Bind { address, source })?
        else {
            return Ok(listeners);
        };
        match bind_v6_only(other) {
            Ok(socket) => {
                listeners.others.push(socket);
                return Ok(listeners);
            }
            Err(error) if absent_here(&error) => {
                tracing::info!(
                    address = %other,
                    %error,
                    "this host has no such address, so no workspace can listen there either"
                );
                return Ok(listeners);
            }
            Err(error) if error.kind() == io::ErrorKind::AddrInUse && tried < tries => {
                tracing::debug!(address = %other, "taken on the random port; trying another");
            }
            Err(source) => {
                return Err(ListenError::OtherLoopback {
                    address: other,
                    source,
                });
            }
        }
    }
}

/// The address of the other family on the port `first` got, if it reaches this host where
/// the configured one does.
fn other_address(first: &TcpListener) -> io::Result<Option<SocketAddr>> {
    let bound = first.local_addr()?;
    let ip = match bound.ip() {
        IpAddr::V4(ip) if ip.is_loopback() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_loopback() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        // A dual-stack `[::]` (the system's default) takes IPv4 too.
        IpAddr::V6(ip) if ip.is_unspecified() && SockRef::from(first).only_v6()? => {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        }
        _ => return Ok(None),
    };
    Ok(Some(SocketAddr::new(ip, bound.port())))
}

/// A listening socket on `address`; an IPv6 one takes IPv6 only, so that `[::]` beside
/// `0.0.0.0` does not collide with it.
fn bind_v6_only(address: SocketAddr) -> io::Result<TcpListener> {
    let socket = match address {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => {
            let socket = TcpSocket::new_v6()?;
            SockRef::from(&socket).set_only_v6(true)?;
            socket
        }
    };
    // As `TcpListener::bind` does: a restart binds while old connections are in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(BACKLOG)
}

/// Whether `error` says the address does not exist here (no IPv6 at all, or no such address).
fn absent_here(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::AddrNotAvailable
        || error.raw_os_error() == Some(libc::EAFNOSUPPORT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn has_ipv6_loopback() -> bool {
        std::net::TcpListener::bind("[::1]:0").is_ok()
    }

    #[tokio::test]
    async fn alone_it_listens_on_the_configured_address_only() {
        let listeners = bind("127.0.0.1:0".parse().unwrap(), false).await.unwrap();
        assert_eq!(
            listeners.addresses().unwrap(),
            [listeners.local_addr().unwrap()]
        );
    }

    #[tokio::test]
    async fn the_other_loopback_address_is_held_on_the_same_port_and_served() {
        if !has_ipv6_loopback() {
            eprintln!("skipped: no IPv6 loopback address on this host");
            return;
        }
        let mut listeners = bind("127.0.0.1:0".parse().unwrap(), true).await.unwrap();
        let v4 = listeners.local_addr().unwrap();
        assert!(v4.ip().is_loopback() && v4.is_ipv4(), "{v4}");
        let v6 = SocketAddr::from((Ipv6Addr::LOCALHOST, v4.port()));
        assert_eq!(listeners.addresses().unwrap(), [v4, v6]);
        let squatter = std::net::TcpListener::bind(v6).unwrap_err();
        assert_eq!(squatter.kind(), io::ErrorKind::AddrInUse);
        // Both addresses are served, whichever is asked first.
        for address in [v6, v4, v6, v4] {
            let mut client = TcpStream::connect(address).await.unwrap();
            let (mut accepted, peer) = listeners.accept().await;
            assert_eq!(peer.is_ipv6(), address.is_ipv6());
            client.write_all(b"x").await.unwrap();
            let mut byte = [0; 1];
            accepted.read_exact(&mut byte).await.unwrap();
        }
    }

    #[tokio::test]
    async fn a_taken_other_address_refuses_to_start_naming_it() {
        if !has_ipv6_loopback() {
            eprintln!("skipped: no IPv6 loopback address on this host");
            return;
        }
        // A port whose IPv4 loopback is free and whose IPv6 loopback someone holds.
        for _ in 0..16 {
            let squatter = std::net::TcpListener::bind("[::1]:0").unwrap();
            let port = squatter.local_addr().unwrap().port();
            match bind(SocketAddr::from(([127, 0, 0, 1], port)), true).await {
                Err(ListenError::OtherLoopback { address, source }) => {
                    assert_eq!(address, squatter.local_addr().unwrap());
                    assert_eq!(source.kind(), io::ErrorKind::AddrInUse);
                    let message = ListenError::OtherLoopback { address, source }.to_string();
                    assert!(
                        message.starts_with(&format!("cannot listen on [::1]:{port}, the other")),
                        "{message}"
                    );
                    return;
                }
                Err(ListenError::Bind { .. }) => continue,
                Ok(listeners) => panic!("listened beside a squatter: {listeners:?}"),
            }
        }
        panic!("no port with a free IPv4 loopback found");
    }

    #[tokio::test]
    async fn the_wildcard_holds_the_ipv6_wildcard_too() {
        let listeners = bind("0.0.0.0:0".parse().unwrap(), true).await.unwrap();
        let v4 = listeners.local_addr().unwrap();
        if has_ipv6_loopback() {
            let v6 = SocketAddr::from((Ipv6Addr::UNSPECIFIED, v4.port()));
            assert_eq!(listeners.addresses().unwrap(), [v4, v6]);
            assert!(std::net::TcpListener::bind((Ipv6Addr::LOCALHOST, v4.port())).is_err());
        }
    }
}
