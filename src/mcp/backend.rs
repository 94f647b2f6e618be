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
/// with its session. The rows' fields differ (`docs/tools.md` says how); the schema is the tmux
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
