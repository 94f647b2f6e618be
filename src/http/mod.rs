//! The HTTP front: router, Host/Origin guard, health endpoints, graceful shutdown.

pub mod allowlist;
