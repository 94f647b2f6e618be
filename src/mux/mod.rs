//! Terminal multiplexer backends.
//!
//! [`tmux`] drives tmux servers through persistent control-mode connections, [`zellij`] drives
//! Zellij sessions through its CLI; [`pane_io::PaneIo`] is the pane-level trait both implement.
//! What does not depend on a multiplexer (lines, patterns, shells, run markers, shell
//! integration, the command ledger, the host a pane runs on and what it tells of its foreground
//! process and terminal) is the `muxgate_mux` crate. Here besides: [`prompt`] when a program
//! is ready for a prompt and whether it took one; [`agent_report`] what agent CLIs report about
//! themselves through their hooks.

pub mod agent_report;
pub mod pane_io;
pub mod prompt;
pub mod tmux;
pub mod zellij;
