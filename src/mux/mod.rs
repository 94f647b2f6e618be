//! Terminal multiplexer backends.
//!
//! [`tmux`] drives tmux servers through persistent control-mode connections, [`zellij`] drives
//! Zellij sessions through its CLI. Backend-neutral types live here so that the tool layer does
//! not depend on one multiplexer; [`pane_io::PaneIo`] is the pane-level trait both implement.
//! [`ledger`] reads a pane's commands from the shell-integration marks in its output, which
//! [`shell_integration`] makes the shells the gateway starts print;
//! [`foreground`] what runs in a pane's terminal and whether it waits for input; [`prompt`]
//! when a program is ready for a prompt and whether it took one; [`agent_report`] what agent
//! CLIs report about themselves through their hooks.

pub mod agent_report;
pub(crate) mod child_process;
pub mod echo;
pub mod foreground;
pub mod ledger;
pub mod lines;
pub mod pane_io;
pub mod prompt;
pub mod screen_mark;
pub mod shell_integration;
pub mod shell_run;
pub mod text_match;
pub mod tmux;
pub mod tty_modes;
pub mod zellij;
