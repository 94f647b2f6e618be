//! The multiplexers behind the tools, and which tools serve which.
//!
//! Server names are shared by `[tmux.servers]` and `[zellij.servers]` (the config refuses a
//! name in both), so a tool whose act both backends offer ([`SHARED_TOOLS`]) takes one
//! `server` argument and the name picks the backend (`McpServer::backend_of`); how a call
//! reaches its backend is [`super::shared_tool`]. Acts only one backend has keep their
//! own tools: the `zellij_*` tools, and the rest of the tmux ones.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;

/// A multiplexer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// tmux, driven in control mode.
    Tmux,
    /// Zellij, driven through its CLI.
    Zellij,
}

/// A row in the answer of a tool both backends serve: the tmux row `T`, or the Zellij row `Z`
/// with its session. The rows' fields differ (see [`DIFFERENCES`]); the schema is the tmux
/// row's, whose fields listings already treat as optional, so a Zellij row fits it too.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Row<T, Z> {
    /// A tmux row.
    Tmux(T),
    /// A Zellij row.
    Zellij {
        /// The session it is in (Zellij ids count per session).
        session: String,
        /// The row.
        #[serde(flatten)]
        row: Z,
    },
}

impl<T: JsonSchema, Z> JsonSchema for Row<T, Z> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

/// The tools both backends serve, under one name and one set of arguments.
pub const SHARED_TOOLS: &[&str] = &[
    "list_servers",
    "list_sessions",
    "list_panes",
    "capture_pane",
    "send_keys",
    "paste_text",
    "send_keys_batch",
    "pane_batch",
    "wait_for_text",
    "get_pane_state",
    "run_command",
    "set_pane_title",
    "resize_pane",
    "select_pane",
    "kill_pane",
    "list_windows",
    "create_window",
    "rename_window",
    "select_window",
    "kill_window",
];

/// What differs between the backends in the shared tools, and why (docs/tools.md).
pub const DIFFERENCES: &str = "## Tools both backends serve\n\n\
`list_servers`, `list_sessions`, `list_panes`, `capture_pane`, `send_keys`, `paste_text`, \
`send_keys_batch`, `pane_batch`, `wait_for_text`, `get_pane_state`, `run_command`, \
`set_pane_title`, `resize_pane`, `select_pane`, `kill_pane`, `list_windows`, \
`create_window`, `rename_window`, `select_window` and `kill_window` serve tmux and Zellij servers alike: the \
server a call names (`server`) picks the backend, and without it the tmux server is used (the \
Zellij one when you may use no tmux server). A Zellij pane `target` is `terminal_N` (in the \
server's default session) or `SESSION:terminal_N`; a Zellij server's windows are its tabs, \
and a window `target` is a tab's stable `tab_id` `N` (not its position) or `SESSION:N`. \
Answers name the pane's or tab's `session`. Options one backend \
cannot honour are `unsupported` errors, never silently ignored. What differs, and why:\n\n\
- `list_sessions`: a Zellij row is the session's `name`, `created_ago` and `exited` (a \
session kept for resurrection, which takes no actions). Zellij tags no owner and counts no \
clients per session, so `created_by_you` is false for all, and `attached` and `fields` are \
refused.\n\
- `list_panes`: `target` is a session name (default: the server's). A Zellij row is the \
pane's `pane_id`, `tab_id`, `tab_name`, `title`, `focused`, `floating`, `fullscreen`, \
`plugin`, `exited`, `exit_status`, `rows`, `columns`, `command` and `cwd`; `filters` match \
these (one tab: `{\"tab_id\": 2}`), plugin panes (tab bar, status bar) are left out unless a \
filter names `plugin`, and `fields` is refused.\n\
- `capture_pane`: Zellij reads a pane whole, so `start` is 0 (the screen) or `\"-\"` (with \
the scrollback) and `end` stays at the bottom; it gives plain text with wrapped lines joined, \
so `escape_sequences` is refused.\n\
- `send_keys`: the same key names on both (tmux's: `C-c`, `M-x`, `Escape`, `BSpace`…; \
Zellij is sent its own spelling of each), and text typed exactly. Zellij has no keypad keys \
and types only UTF-8 text, so `KP0` or base64 bytes that are not UTF-8 are refused. Its \
`output_position` is a mark of the screen before the input, for `wait_for_text`'s `since`.\n\
- `paste_text`: Zellij pastes UTF-8 text only; `bracket` sends it as Zellij's bracketed paste, \
`bracket: false` types it. Its `output_position` is a screen mark, as `send_keys`' is.\n\
- `send_keys_batch`: all operations are checked first, as on tmux, but Zellij takes no single \
write for several panes, so they are delivered one after the other, each as `send_keys` \
delivers it.\n\
- `pane_batch`: `capture_since` is tmux-only (Zellij streams screens, not rows). A wait \
without `since` counts what its pane showed after the batch's first input into it (a mark of \
the screen before that input), where tmux watches the pane from the batch's start.\n\
- `wait_for_text`: the same arguments, defaults (8 s, case ignored), outcomes and echo rule. \
Zellij streams screens, not output, so new output is what a screen shows below where the \
screen stood at the call (or at `since`); output that scrolls past between two screens is \
not seen, and `alternate_screen`, `resynced` and `pane_exit_status` stay unset.\n\
- `get_pane_state`: Zellij reports a pane's program and command line and whether its command \
exited (`dead`, `dead_status`), nothing of the foreground process, the pane's output times, \
prompt, modes or screen, and no agent hook reports on Zellij panes: those fields are left \
out, as for any field without evidence.\n\
- `run_command`: the same arguments, default (30 s) and answer, `timed_out` included. Zellij \
reports no foreground process or output stream, so the command is typed between printed \
markers (`shell` fish or, for any other shell, sh quoting) without checking that the shell \
is idle at its prompt; a run that never began shows as `started: false` after the timeout. \
Its output is read from the screen and scrollback: lines that left the scrollback are cut \
(`output_truncated`), and `output_lost` and `pane_exited` stay false.\n\
- `resize_pane`: `zoom` is Zellij's fullscreen within the pane's tab. Zellij resizes a pane \
by a step of its own (a share of the tab), not to a number of cells, so `width` and `height` \
are approached step by step: the pane stops at the first step that reaches or passes the \
size, or where it can grow or shrink no further; the answer says where it stopped \
(`columns`, `rows`). A Zellij answer is the pane's `list_panes` row and its `session`.\n\
- `select_pane`: shows the pane to every attached human (its tab, and the pane focused \
there) and answers how many clients there are (`clients`) and now focus it \
(`clients_focused`). Zellij focuses a pane by id only, so `direction` is refused.\n\
- `kill_pane`: a Zellij pane's tab closes with its last pane (`tab_id`, `tab_closed`); the \
session's last pane is refused, where tmux would end the session.\n\
- `list_windows`: `target` is a session name (default: the server's). A Zellij row is the \
tab's `tab_id`, `position`, `name`, `active` (in an attached human's view), \
`fullscreen_active`, `floating_panes_visible`, `rows`, `columns`, `tiled_panes`, \
`floating_panes` and `active_pane_id` (its focused tiled terminal pane); `filters` (`name`, `active`) match as for tmux, and `fields` is refused.\n\
- `create_window`: `target` is a session name, and the tab goes last (`position` is \
refused); Zellij sets no pane environment, so `environment` is refused. `shell` runs as a \
command pane, held after the command exits where a tmux window closes. `layout` (a KDL \
layout) is Zellij's alone. The answer is the tab's `list_windows` row, whose \
`active_pane_id` is where to send input.\n\
- `rename_window`: Zellij takes a tab name of up to 256 bytes, `#` included. A Zellij answer \
is the tab's `list_windows` row and its `session`, as for `select_window`.\n\
- `select_window`: switches every attached human to the tab. Zellij switches by tab id only, \
so `step` and `index` are refused.\n\
- `kill_window`: the tab's panes and their programs end; the session's last tab is refused \
(`session_closed` is always false), where tmux would end the session. `id` is the tab id and \
`session_id` the session's name.\n\
- `list_servers`: each server has a `backend`. A Zellij server has no process apart from its \
sessions, so it is `running` while a session lives and `no_sessions` otherwise, never \
`not_running`; it also names its `default_session`.\n\n\
Every other tool serves one backend. The tmux ones include those built on tmux's output \
stream and command ledger (`wait_for_state`, `capture_since`, `list_commands`, \
`get_command_output`, `send_prompt`, `search_panes`, `snapshot_pane`); the `zellij_*` ones \
open panes (Zellij splits no given pane), show floating panes, list clients, dump the \
layout, open the editor and run one-off commands.\n";

impl Backend {
    /// The backends that serve `tool`.
    pub fn serving(tool: &str) -> &'static [Backend] {
        if SHARED_TOOLS.contains(&tool) {
            &[Backend::Tmux, Backend::Zellij]
        } else if tool.starts_with("zellij_") {
            &[Backend::Zellij]
        } else {
            &[Backend::Tmux]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_is_served_by_its_backends() {
        assert_eq!(
            Backend::serving("capture_pane"),
            [Backend::Tmux, Backend::Zellij]
        );
        assert_eq!(
            Backend::serving("list_windows"),
            [Backend::Tmux, Backend::Zellij]
        );
        assert_eq!(Backend::serving("zellij_new_pane"), [Backend::Zellij]);
        assert_eq!(Backend::serving("split_window"), [Backend::Tmux]);
    }
}
