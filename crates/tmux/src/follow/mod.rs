//! The follow-up algorithms: what the tools do with a pane's output stream once they have
//! checked who may wait on which pane.
//!
//! - [`text`]: following a pane's output until a line matches (`wait_for_text`), and
//!   [`text_wait`]: the steps of such a wait on one server, as one caller;
//! - [`state`]: following panes until one, or all, reach a state (`wait_for_state`), and
//!   [`state_wait`]: the start of each pane's watch;
//! - [`run`]: typing a command into a shell pane and following it until it ends
//!   (`run_command`), and [`command_run`]: the steps of such a run on one server, as one
//!   caller (claim, keep, readiness, type, follow);
//! - [`reaction`]: how a pane's output went after an input (`send_prompt`).
//!
//! Each ends when the caller cancels ([`Cancelled`]), besides its own ends.

pub mod command_run;
pub mod reaction;
pub mod run;
pub mod state;
pub mod state_wait;
pub mod text;
pub mod text_wait;

/// The caller cancelled the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;
