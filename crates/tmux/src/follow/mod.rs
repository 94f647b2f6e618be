//! The follow-up algorithms: what the tools do with a pane's output stream once they have
//! checked who may wait on which pane.
//!
//! - [`text`]: following a pane's output until a line matches (`wait_for_text`);
//! - [`state`]: following panes until one, or all, reach a state (`wait_for_state`);
//! - [`run`]: typing a command into a shell pane and following it until it ends
//!   (`run_command`);
//! - [`reaction`]: how a pane's output went after an input (`send_prompt`).
//!
//! Each ends when the caller cancels ([`Cancelled`]), besides its own ends.

pub mod reaction;
pub mod run;
pub mod state;
pub mod text;

/// The caller cancelled the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;
