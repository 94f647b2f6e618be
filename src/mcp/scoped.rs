//! A pane or a window a tool may act on for its caller ([`Scoped`], [`ScopedWindow`]): what
//! [`super::pane_access::PaneAccess`] hands out once the caller's grants allow the target,
//! together with the backend's [`Multiplexer`] that acts on it.

use muxgate_mux::multiplexer::Multiplexer;

/// A pane the caller may act on, and the backend that acts on it.
pub(crate) struct Scoped<M: Multiplexer> {
    /// The panes of the pane's scope (a tmux server, a Zellij session), as the caller.
    pub mux: M,
    /// The pane.
    pub pane: M::PaneId,
    /// The session answers name: a Zellij pane's, whose ids count per session; none on tmux,
    /// whose pane ids are the server's.
    pub session: Option<String>,
    /// Where to find valid targets, should the act find none.
    pub hint: &'static str,
}

/// A window (a Zellij tab) the caller may act on, and the backend that acts on it.
pub(crate) struct ScopedWindow<M: Multiplexer> {
    /// The windows of the window's scope, as the caller.
    pub mux: M,
    /// The window.
    pub window: M::WindowId,
    /// Its session as answers name it: tmux's id (`$N`), Zellij's name.
    pub session: String,
}
