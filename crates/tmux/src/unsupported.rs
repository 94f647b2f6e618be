//! What tmux does not offer that a tool both backends serve can ask for, as data
//! ([`Unsupported`]): the gateway refuses these before anything runs (an `unsupported` error)
//! and never ignores them silently.

use std::borrow::Cow;

use muxgate_mux::error::Unsupported;

/// A new window laid out by a Zellij (KDL) layout.
pub const LAYOUT: Unsupported = Unsupported {
    backend: "tmux",
    what: Cow::Borrowed("layout"),
    why: "a KDL layout is Zellij's; tmux lays a window out with select_layout",
};
