//! The typed operations on one tmux server, as one caller: each builds its commands with
//! [`crate::ops`] or its own, runs them through the server's worker in one write, and reads
//! the answers into data.
//!
//! - [`server`]: the server as a whole (probe, describe, identity, the shell new panes start,
//!   kill);
//! - [`locate`]: where a client's target is (the panes it covers, a path's session layout);
//! - [`sessions`], [`windows`], [`pane_lifecycle`]: listing and changing sessions, windows and
//!   panes; [`placement`]: which windows and sessions hold a pane;
//! - [`panes`]: `Multiplexer` for tmux, the pane operations both backends share;
//! - [`pane_reads`]: pane rows, captures, snapshots, expanded formats and sizes, for answers
//!   the gateway shapes; [`pipe`]: a pane's output piped to a file;
//! - [`pane_state`]: a pane's state in one row; [`typing`]: a line and its Enter in one write;
//! - [`since`]: the rows a pane printed since a cursor (`capture_since`);
//! - [`buffers`], [`copy_mode`], [`environment`], [`options`]: paste buffers, copy mode, the
//!   environment new panes get, options and hooks;
//! - [`claims`]: which panes a programmatic run currently owns;
//! - [`op_error`]: the error these operations share, and a batch's answers read into it.

pub mod buffers;
pub mod claims;
pub mod copy_mode;
pub mod environment;
pub mod locate;
pub mod op_error;
pub mod options;
pub mod pane_lifecycle;
pub mod pane_reads;
pub mod pane_state;
pub mod panes;
pub mod pipe;
pub mod placement;
pub mod server;
pub mod sessions;
pub mod since;
pub mod typing;
pub mod windows;
