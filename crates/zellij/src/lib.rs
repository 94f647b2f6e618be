//! The Zellij backend: drives Zellij (0.44 or newer) sessions through its CLI.
//!
//! Layers, from the process up:
//! - [`ids`]: validated session names, pane ids (`terminal_N` / `plugin_N`) and tab ids;
//! - [`listing`], `events`: pure parsing of CLI output and subscribe events (the
//!   command-completion markers are `muxgate_mux::shell_run::screen`);
//! - [`keys`]: key names for `send-keys`, validated;
//! - [`cli`]: runs `zellij` subprocesses with an explicit environment and a timeout;
//! - [`attach`]: a client attached through a pty muxgate owns (sizes tabs of headless sessions);
//! - `queue`: one serialized operation queue per session;
//! - `watch`: live pane views from `zellij subscribe`, shared by waiters;
//! - [`backend`]: the API the tools use, [`backend::ZellijBackend`], with [`error::ZellijError`];
//! - [`servers`]: the configured servers by name, each backend opened on first use;
//! - [`unsupported`]: what Zellij does not offer that a shared tool can ask for, as data;
//! - [`panes`]: the backend-neutral pane operations ([`muxgate_mux::multiplexer::Multiplexer`]) for one session.
//!
//! Not here: MCP tool definitions, policy, limits and audit (they wrap this API).

pub mod attach;
pub mod backend;
pub mod cli;
pub mod error;
pub(crate) mod events;
pub mod ids;
pub mod keys;
pub mod listing;
pub mod panes;
pub(crate) mod queue;
pub mod servers;
pub mod unsupported;
pub(crate) mod watch;
