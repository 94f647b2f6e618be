//! What muxgate knows about terminals, shells and their output independent of the multiplexer
//! that hosts the panes: the backend-neutral half of the contract both backends (tmux, Zellij)
//! and the tools share.
//!
//! - [`lines`]: a pane's output stream cut into lines; [`echo`]: the echo of typed input taken
//!   out of them; [`screen_mark`]: which lines of a screen are new since an earlier look.
//! - [`text_match`]: the patterns an agent waits for, compiled once and bounded.
//! - [`shell`]: the shells a pane can run; [`shell_run`]: typing a command into one and
//!   reading its output and exit status back between two markers.
//! - [`shell_integration`]: starting bash, zsh and fish so that they mark their prompts and
//!   commands; [`ledger`]: a pane's commands read back from those marks.
//! - [`foreground`]: what runs in a pane's terminal and whether it waits for input;
//!   [`tty_modes`]: whether a terminal echoes and reads lines; [`host`]: the machine a
//!   multiplexer's panes run on, which answers both (the gateway's own, or a sandbox).
//! - [`child_process`]: what every program the gateway starts gets set up before exec.
//! - [`multiplexer`]: the pane-level operations every multiplexer backend offers, as one trait;
//!   [`error`]: what went wrong in a backend, as kinds the same for every backend, and what a
//!   backend does not offer ([`error::Unsupported`]).
//!
//! Everything here but [`foreground`] and [`tty_modes`] (which read `/proc` and terminals,
//! through [`host`]) and [`child_process`] (called in a forked child) is pure: no I/O, no
//! clock.

pub mod child_process;
pub mod echo;
pub mod error;
pub mod foreground;
pub mod host;
pub mod ledger;
pub mod lines;
pub mod multiplexer;
pub mod screen_mark;
pub mod shell;
pub mod shell_integration;
pub mod shell_run;
pub mod text_match;
pub mod tty_modes;
