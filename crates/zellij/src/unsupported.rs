//! What Zellij does not offer that a tool both backends serve can ask for, as data
//! ([`Unsupported`]): the gateway refuses these before anything runs (an `unsupported` error)
//! and never ignores them silently.

use std::borrow::Cow;

use muxgate_mux::error::Unsupported;

/// An act or option Zellij does not offer, and why.
const fn zellij(what: &'static str, why: &'static str) -> Unsupported {
    Unsupported {
        backend: "Zellij",
        what: Cow::Borrowed(what),
        why,
    }
}

/// A capture with the screen's colours and attributes.
pub const ESCAPE_SEQUENCES: Unsupported =
    zellij("escape_sequences", "it reads a pane as plain text");

/// A capture from a line of the history or screen.
pub const CAPTURE_START: Unsupported = zellij(
    "a start other than 0 or \"-\"",
    "it reads a pane whole, the screen (0) or with its scrollback (\"-\")",
);

/// A capture that ends above the screen's bottom.
pub const CAPTURE_END: Unsupported = zellij(
    "an end other than \"-\"",
    "it reads a pane to its last line",
);

/// Input or a paste that is not UTF-8.
pub const NOT_UTF8: Unsupported = zellij(
    "text that is not UTF-8",
    "it types and pastes UTF-8 text only",
);

/// Rows of a pane's output since a position (a tmux command ledger and output stream).
pub const CAPTURE_SINCE: Unsupported = zellij("capture_since", "it streams screens, not rows");

/// A choice of a listing's columns.
pub const FIELDS: Unsupported = zellij("fields", "its rows are always whole");

/// Moving focus to a neighbouring pane.
pub const DIRECTION: Unsupported = zellij("direction", "it focuses a pane by its id");

/// Where a new tab goes, and its panes' environment.
pub const POSITION_AND_ENVIRONMENT: Unsupported = zellij(
    "position and environment",
    "a new tab goes last and its panes inherit the session's environment",
);

/// Selecting a tab by a step or an index.
pub const STEP_AND_INDEX: Unsupported = zellij("step and index", "it selects a tab by its id");

/// Filtering sessions by attached clients.
pub const ATTACHED_FILTER: Unsupported =
    zellij("the attached filter", "it lists no clients per session");

/// A key tmux has and Zellij does not (tmux's keypad keys), named as the caller named it.
pub fn key(name: &str) -> Unsupported {
    Unsupported {
        backend: "Zellij",
        what: Cow::Owned(format!("the key {name:?}")),
        why: "it has no such key (no keypad keys)",
    }
}
