//! The tool catalog, one file per group of tools, grouped by what they act on.
//!
//! Adding a group: create `tools/<group>.rs` with a
//! `#[tool_router(router = <group>_tools, vis = "pub(crate)")] impl McpServer { … }` block and add
//! its router in [`router`]. Each tool: input struct with `#[serde(deny_unknown_fields)]`,
//! output `Result<Json<T>, ToolError>`, all four annotation hints set explicitly, and a
//! description whose first line is a one-line summary (it is what `muxgate tools` prints).

pub(crate) mod agent_answer;
pub(crate) mod agent_fleet;
pub(crate) mod agent_report;
mod agent_resume;
pub(crate) mod agent_spawn;
pub(crate) mod batch;
pub(crate) mod buffer;
pub(crate) mod channel;
pub(crate) mod commands;
pub(crate) mod copy_mode;
pub(crate) mod hook;
pub(crate) mod input;
pub(crate) mod option;
pub(crate) mod pane;
pub(crate) mod pane_lifecycle;
pub(crate) mod pipe;
pub(crate) mod prompt;
pub(crate) mod recording;
pub(crate) mod run;
pub(crate) mod search;
pub(crate) mod secret;
pub(crate) mod server;
pub(crate) mod session;
pub(crate) mod since;
pub(crate) mod state;
pub(crate) mod state_wait;
pub(crate) mod support;
pub(crate) mod view;
pub(crate) mod wait;
pub(crate) mod watch;
pub(crate) mod window;
pub(crate) mod zellij_io;
pub(crate) mod zellij_objects;
pub(crate) mod zellij_pane;
pub(crate) mod zellij_session;
pub(crate) mod zellij_tab;

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
        + McpServer::agent_spawn_tools()
        + McpServer::agent_fleet_tools()
        + McpServer::agent_answer_tools()
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
