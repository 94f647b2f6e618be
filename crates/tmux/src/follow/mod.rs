//! The follow-up algorithms: what the tools do with a pane's output stream once they have
//! checked who may wait on which pane.
//!
//! - [`text`]: following a pane's output until a line matches (`wait_for_text`);
//! - [`state`]: following panes until one, or all, reach a state (`wait_for_state`).

pub mod state;
pub mod text;
