//! Conformance mode, for the official MCP conformance suite only: `muxgate serve --conformance`
//! in a build with the `conformance` cargo feature.
//!
//! The suite cannot send an Authorization header and calls fixture tools, prompts and resources
//! by fixed names. In this mode the gateway therefore
//! - accepts every request as the one principal [`PRINCIPAL_SUB`] with every scope (see
//!   [`crate::auth::Authenticator::without_authentication`]), and
//! - serves the fixtures ([`fixtures`]) beside muxgate's own catalog ([`ConformanceServer`]).
//!
//! Everything else — transport, sessions, Host/Origin checks, limits, the real tools — is the
//! production code under test.
//!
//! Guard rails: the feature is off by default, so release builds and the container image do not
//! contain this module; with it compiled in, the mode must still be asked for on the command
//! line, binds loopback addresses only ([`ensure_loopback`]) and announces itself loudly.
//!
//! Not here: the suite's runner and its expected-failures baseline (`tests/interop/`).

mod fixtures;
mod server;

use std::net::SocketAddr;

use crate::auth::{Principal, SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE};

pub use server::ConformanceServer;

/// The identity every request gets in conformance mode.
pub const PRINCIPAL_SUB: &str = "conformance-suite";

/// The principal of every request: every scope, every server and session.
pub fn principal() -> Principal {
    Principal::new(PRINCIPAL_SUB, [SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN])
}

/// Refuses any address but loopback: without authentication, anyone who can connect can
/// drive the multiplexers.
pub fn ensure_loopback(addr: SocketAddr) -> Result<(), NotLoopback> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(NotLoopback(addr))
    }
}

/// Conformance mode was asked to listen beyond loopback.
#[derive(Debug, thiserror::Error)]
#[error(
    "conformance mode turns authentication off and therefore listens on loopback only; \
     refusing to bind {0} (use 127.0.0.1 or [::1])"
)]
pub struct NotLoopback(pub SocketAddr);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_binds() {
        assert!(ensure_loopback("127.0.0.1:8080".parse().unwrap()).is_ok());
        assert!(ensure_loopback("[::1]:0".parse().unwrap()).is_ok());
        for addr in ["0.0.0.0:8080", "[::]:8080", "10.0.0.5:80"] {
            let err = ensure_loopback(addr.parse().unwrap()).unwrap_err();
            assert!(err.to_string().contains("refusing to bind"), "{err}");
        }
    }

    #[test]
    fn the_principal_may_call_everything() {
        let p = principal();
        assert_eq!(p.tier, Some(crate::auth::Tier::Destructive));
        assert_eq!(p.acl, crate::auth::TargetAcl::default());
    }
}
