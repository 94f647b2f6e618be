//! What the gateway knows of the programs in panes.
//!
//! The tmux control-mode engine is the `muxgate_tmux` crate; what does not depend on a
//! multiplexer (lines, patterns, shells, run markers, shell integration, the command ledger,
//! the host a pane runs on, and `Multiplexer`, the pane-level trait both backends implement) is the
//! `muxgate_mux` crate; the Zellij backend is the `muxgate_zellij` crate. Here: [`prompt`]
//! when a program is ready for a prompt and whether it took one; [`agent_report`] what agent
//! CLIs report about themselves through their hooks; [`agent_kind`] which agent CLI a program
//! is and what its screens show; [`agent_status`] an agent's state weighed from all of it;
//! [`screen_digest`] what names a screen an answer was read from; [`idempotency`] the keys
//! that make a retried call act once.

pub(crate) mod agent_kind;
pub(crate) mod agent_report;
pub(crate) mod agent_status;
pub(crate) mod idempotency;
pub(crate) mod prompt;
pub(crate) mod screen_digest;
