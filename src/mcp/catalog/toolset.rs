//! Which toolset each tool belongs to.

use crate::auth::Toolset;

/// The toolset `tool` belongs to; `None` for a name that is no tool (a test checks that every
/// tool has one).
pub fn of(tool: &str) -> Option<Toolset> {
    if tool.starts_with("zellij_") {
        return Some(Toolset::Zellij);
    }
    Some(match tool {
        "list_servers" | "list_sessions" | "list_windows" | "list_panes" | "get_pane_info"
        | "capture_pane" | "snapshot_pane" | "search_panes" | "list_commands"
        | "get_command_output" | "get_pane_state" => Toolset::Inspect,
        "send_keys" | "send_keys_batch" | "paste_text" | "send_prompt" | "run_command"
        | "wait_for_text" | "wait_for_state" | "pane_batch" | "capture_since" => Toolset::Run,
        "create_session" | "create_window" | "split_window" | "select_window" | "select_pane"
        | "kill_session" | "kill_window" | "kill_pane" => Toolset::Manage,
        "rename_session"
        | "rename_window"
        | "resize_pane"
        | "resize_window"
        | "select_layout"
        | "move_window"
        | "swap_pane"
        | "set_pane_title"
        | "find_pane_by_position" => Toolset::Layout,
        "get_server_info" | "get_session_info" | "get_window_info" | "display_message"
        | "show_option" | "set_option" | "show_environment" | "set_environment" | "show_hooks"
        | "show_hook" => Toolset::Config,
        "load_buffer" | "show_buffer" | "paste_buffer" | "delete_buffer" | "enter_copy_mode"
        | "exit_copy_mode" | "pipe_pane" => Toolset::Buffers,
        "wait_for_channel" | "signal_channel" | "report_agent_state" => Toolset::Channels,
        "kill_server" | "respawn_pane" | "clear_pane" => Toolset::Destroy,
        "request_secret_input" | "record_pane" | "view_link" => Toolset::Humans,
        "spawn_agent" | "list_agents" | "stop_agent" | "answer_agent" => Toolset::Fleet,
        _ => return None,
    })
}
