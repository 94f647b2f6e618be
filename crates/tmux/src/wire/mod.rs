//! What crosses a control-mode line, all pure (no I/O, no clock): bytes to events, values to
//! quoted arguments, command lines, formats and their rows, ids and targets.
//!
//! - [`protocol`]: the parser of control-mode output (replies, notifications, pane output);
//! - [`quote`]: quoting of arguments for control-mode command lines;
//! - [`command`]: typed command lines built from quoted arguments (only this crate builds them);
//! - [`format`](mod@format): `-F` formats and the rows tmux prints for them;
//! - [`format_check`]: the grammar of the tmux formats a client may have tmux expand;
//! - [`ids`]: `%N` panes, `@N` windows, `$N` sessions;
//! - [`target`]: targets as clients name them, validated; [`target_path`]: tmux's
//!   `SESSION:WINDOW.PANE` resolved to an id exactly.

pub mod command;
pub mod format;
pub mod format_check;
pub mod ids;
pub mod protocol;
pub mod quote;
pub mod target;
pub mod target_path;
