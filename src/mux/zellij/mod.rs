//! The Zellij backend: drives Zellij (0.44 or newer) sessions through its CLI.
//!
//! Layers, from the process up:
//! - [`ids`]: validated session names, pane ids (`terminal_N` / `plugin_N`) and tab ids;
//! - [`listing`], [`events`], [`marker`]: pure parsing of CLI output, subscribe events and
//!   command-completion markers;
//! - [`cli`]: runs `zellij` subprocesses with an explicit environment and a timeout;
//! - [`queue`]: one serialized operation queue per session;
//! - [`watch`]: live pane views from `zellij subscribe`, shared by waiters.

pub mod attach;
pub mod backend;
pub mod cli;
pub mod error;
pub mod events;
pub mod ids;
pub mod keys;
pub mod listing;
pub mod marker;
pub mod queue;
pub mod watch;
