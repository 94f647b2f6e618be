//! What `create_window` asks a backend for: [`CreateWindowInput`], and [`CreatesWindows`],
//! which each backend answers with the window it made.
//!
//! The tool is written once; the two acts share nothing but their answer. A tmux window is
//! placed by session or beside a window and runs the integrated shell; a Zellij tab goes last
//! in its session and may take a KDL layout. Each backend's act is implemented beside the
//! tool's other knowledge of that backend (`tools/window.rs`, `tools/zellij_tab.rs`).

use std::collections::BTreeMap;
use std::future::Future;

use schemars::JsonSchema;
use serde::Deserialize;

use super::McpServer;
use super::answers::AnsweredWindow;
use super::args::ObjectArg;
use super::error::ToolError;

/// Where a new or moved window goes relative to a target window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Position {
    Before,
    After,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateWindowInput {
    #[serde(default)]
    pub server: Option<String>,
    /// A session (`$N` or exact name; next free index), or a window `@N` with `position`.
    /// Zellij: a session name; the tab goes last.
    pub target: String,
    /// With a window target: `before` or `after` it.
    #[serde(default)]
    pub position: Option<Position>,
    /// Command run instead of the shell (`sh -c`); the window ends with it. Zellij: the pane is
    /// held after it exits.
    #[serde(default)]
    pub shell: Option<String>,
    /// Zellij: a KDL layout for the tab, e.g. `layout { pane split_direction="vertical" { pane; pane; } }`.
    #[serde(default)]
    pub layout: Option<String>,
    /// Window name (1-64 chars, no `#` or control chars); default: its program's.
    #[serde(default)]
    pub name: Option<String>,
    /// Absolute path of an existing directory; default: the session's.
    #[serde(default)]
    pub start_directory: Option<String>,
    /// Environment variables for its pane (`NAME: value`).
    #[serde(default)]
    pub environment: Option<ObjectArg<BTreeMap<String, String>>>,
    /// Make it the session's current window (changes what attached humans see).
    #[serde(default)]
    pub select: bool,
}

/// A backend's way to make a window (a Zellij tab), for `create_window`.
pub(crate) trait CreatesWindows {
    /// Creates the window `input` asks for, its arguments already checked for this backend,
    /// and answers its row as the caller is shown it.
    fn create_window(
        &self,
        gateway: &McpServer,
        input: CreateWindowInput,
    ) -> impl Future<Output = Result<AnsweredWindow, ToolError>> + Send;
}
