//! A pane or a window in the answer of a tool both backends serve: the backend's own row, as
//! the caller is shown it.

use muxgate_tmux::typed::windows::Window;

use super::backend::Row;
use super::pane_ops::PaneInfo;
use super::tools::zellij_objects::{ZellijPaneInfo, ZellijTabInfo};

/// A pane as the tools that change one answer it: the backend's row, shaped for the caller.
pub(crate) type AnsweredPane = Row<PaneInfo, ZellijPaneInfo>;

/// A window as the window tools answer it: a tmux window, or a Zellij tab.
pub(crate) type AnsweredWindow = Row<Window, ZellijTabInfo>;
