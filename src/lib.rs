//! muxgate: a Streamable-HTTP MCP gateway that lets many AI agents drive terminal multiplexers.
//!
//! The crate is laid out along the data path (see `ARCHITECTURE.md`):
//! - [`config`]: typed configuration (embedded default, TOML file, `MUXGATE_*` overrides);
//! - [`http`]: the axum router, Host/Origin guard, health endpoints, graceful shutdown;
//! - [`auth`]: JWT bearer authentication, principals, scopes → tiers, target ACLs, session binding;
//! - [`limits`]: per-client rate limits and budgets;
//! - [`mcp`]: the MCP server handler, tool groups, tool errors and the tool catalog;
//! - [`audit`]: the redacted, hash-chained audit log;
//! - [`recordings`]: panes' output as asciinema `.cast` files, by policy or on request;
//! - [`mux`]: what the programs in panes report and when they take a prompt (the tmux engine is
//!   the `muxgate_tmux` crate, the Zellij backend `muxgate_zellij`, what both share
//!   `muxgate_mux`);
//! - [`telemetry`]: metrics (`/metrics`), OpenTelemetry traces, structured logs;
//! - [`secret_entry`]: one-time links a human types a secret into a pane through;
//! - [`inbox`]: the approver's page for a phone, and its one-time sign-in links;
//! - [`state`]: the state directory (session owners, workspaces);
//! - [`workspace`]: a sandboxed tmux server per tenant (workspace mode);
//! - [`hosts`]: other machines' tmux servers, each host one SSH connection;
//! - [`gateway`]: assembling all of the above from a config;
//! - `conformance` (cargo feature `conformance`, tests only): auth off, loopback only, and the
//!   MCP conformance suite's fixtures;
//! - [`utc`]: calendar timestamps the gateway writes itself;
//! - [`cli`]: the `muxgate` commands; [`doctor`] and [`tmux_cli`]: host diagnostics with one-shot
//!   tmux commands.
//!
//! Everything is `pub(crate)` unless the binary, a test, a bench or a fuzz target needs it
//! (the `unreachable_pub` lint keeps it so), and what is public is documented (`missing_docs`).

pub mod approvals;
pub mod audit;
pub mod auth;
pub mod cli;
pub mod config;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod doctor;
pub mod fleet;
pub mod gateway;
pub mod hosts;
pub mod http;
pub mod inbox;
pub mod limits;
pub mod mcp;
pub(crate) mod mux;
pub mod notify;
pub mod recordings;
pub(crate) mod secret_entry;
pub(crate) mod state;
pub(crate) mod telemetry;
pub(crate) mod tls_client;
pub(crate) mod tmux_cli;
pub(crate) mod utc;
pub mod view;
pub mod workspace;
