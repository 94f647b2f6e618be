//! muxgate: a Streamable-HTTP MCP gateway that lets many AI agents drive terminal multiplexers.
//!
//! The crate is laid out along the data path (see `ARCHITECTURE.md`):
//! - [`config`]: typed configuration (embedded default, TOML file, `MUXGATE_*` overrides);
//! - [`mux`]: backend-neutral multiplexer types and, under [`mux::tmux`], the control-mode engine;
//! - [`auth`]: JWT bearer authentication, principals, scopes → tiers, target ACLs, session binding;
//! - [`limits`]: per-client rate limits and budgets;
//! - [`audit`]: the redacted, hash-chained audit log.

pub mod audit;
pub mod auth;
pub mod config;
pub mod limits;
pub mod mux;
