//! Terminal multiplexer backends.
//!
//! [`tmux`] drives tmux servers through persistent control-mode connections. Backend-neutral
//! types live here so that the tool layer does not depend on one multiplexer.

pub mod lines;
pub mod shell_run;
pub mod text_match;
pub mod tmux;
pub mod zellij;
