//! tmux operations as commands and parsers, shared by every tool that needs them.
//!
//! Each submodule turns one kind of operation into [`TmuxCommand`](crate::TmuxCommand)s and
//! turns tmux's answer back into data, without running anything: the MCP tools (and batches
//! of them) run the commands through the engine. Pure, so each is unit-tested on its own.
//!
//! - [`keys`]: key names `send-keys` resolves to exactly one key;
//! - [`input`]: keys, literal text and pastes for one pane, delivered byte for byte;
//! - [`capture`]: `capture-pane` ranges and the shaping (tail kept) of what they print;
//! - [`buffer`]: names of the paste buffers muxgate owns, and reading one back exactly;
//! - [`pipe`]: `pipe-pane` to a file, quoted for the shell and for tmux's expansions;
//! - [`since`]: `capture_since` cursors and finding the rows after one;
//! - [`shell`]: the server's default shell, started with shell integration;
//! - [`display`]: `display-message` in a pane's context (the snapshot row, a client's format);
//! - [`locate`]: where a client's target is (session, window, pane), for access checks;
//! - [`pane_row`]: the full row of a pane that listings read; [`pane_shape`]: its size and
//!   cursor, for the live view and recordings.

pub mod buffer;
pub mod capture;
pub mod display;
pub mod input;
pub mod keys;
pub mod locate;
pub mod pane_row;
pub mod pane_shape;
pub mod pipe;
pub mod shell;
pub mod since;

use sha2::{Digest, Sha256};

/// 16 hex digits standing for one client identity in the names of tmux objects the gateway
/// keeps apart per client on a shared server (paste buffers, `wait-for` channels).
pub fn client_tag(client: &str) -> String {
    let mut tag = hex::encode(Sha256::digest(client.as_bytes()));
    tag.truncate(16);
    tag
}
