//! The tool catalog, one file per group of tools, grouped by what they act on.
//!
//! Adding a group: create `tools/<group>.rs` with a
//! `#[tool_router(router = <group>_tools, vis = "pub(crate)")] impl McpServer { … }` block and add
//! its router in [`router`]. Each tool: input struct with `#[serde(deny_unknown_fields)]`,
//! output `Result<Json<T>, ToolError>`, all four annotation hints set explicitly, and a
//! description whose first line is a one-line summary (it is what `muxgate tools` prints).

pub mod agent_report;
pub mod batch;
pub mod buffer;
pub mod channel;
pub mod commands;
pub mod copy_mode;
pub mod hook;
pub mod input;
pub mod option;
pub mod pane;
pub mod pane_lifecycle;
pub mod pipe;
pub mod prompt;
pub mod recording;
pub mod run;
pub mod search;
pub mod secret;
pub mod server;
pub mod session;
pub mod since;
pub mod state;
pub mod state_wait;
pub(crate) mod support;
pub mod view;
pub mod wait;
pub mod watch;
pub mod window;
pub mod zellij_io;
mod zellij_objects;
pub mod zellij_pane;
pub mod zellij_session;
pub mod zellij_tab;

use rmcp::handler::server::tool::ToolRouter;

use super::McpServer;

/// Every tool the gateway serves.
pub(crate) fn router() -> ToolRouter<McpServer> {
    McpServer::server_tools()
        + McpServer::session_tools()
        + McpServer::window_tools()
        + McpServer::option_tools()
        + McpServer::hook_tools()
        + McpServer::pane_tools()
        + McpServer::pane_lifecycle_tools()
        + McpServer::copy_mode_tools()
        + McpServer::pipe_tools()
        + McpServer::search_tools()
        + McpServer::input_tools()
        + McpServer::buffer_tools()
        + McpServer::wait_tools()
        + McpServer::run_tools()
        + McpServer::since_tools()
        + McpServer::commands_tools()
        + McpServer::state_tools()
        + McpServer::state_wait_tools()
        + McpServer::prompt_tools()
        + McpServer::agent_report_tools()
        + McpServer::batch_tools()
        + McpServer::channel_tools()
        + McpServer::secret_tools()
        + McpServer::recording_tools()
        + McpServer::view_tools()
        + McpServer::zellij_session_tools()
        + McpServer::zellij_tab_tools()
        + McpServer::zellij_pane_tools()
        + McpServer::zellij_io_tools()
}
