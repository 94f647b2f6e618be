//! The pane-level operations every multiplexer backend offers, as one trait: [`PaneIo`].
//!
//! Code that only needs "a pane to type into and read from" is written once against this
//! trait and runs on tmux (`muxgate_tmux::typed::panes::TmuxPanes`) and on Zellij
//! (`muxgate::mux::zellij::panes::ZellijPanes`) alike. What it covers:
//! - listing the terminal panes in scope, with backend-neutral facts ([`PaneSummary`]);
//! - typing literal text into a pane;
//! - pressing keys, named in the backend's own key syntax (tmux `C-c`, Zellij `Ctrl c`);
//! - reading a pane's screen, visible part or with its scrollback ([`ScreenScope`]);
//! - waiting, without polling, until a line on a pane's screen matches a [`Pattern`]:
//!   woken by the backend's output events (tmux control-mode `%output`, Zellij `subscribe`).
//!
//! What it does not cover, because the backends differ too much to share a shape: creating,
//! closing and arranging panes (tmux windows vs Zellij tabs, floating panes), focus, sizes,
//! sessions and ownership tags, running commands with their exit status (tmux has pane exit
//! notifications and `remain-on-exit`, Zellij held command panes and `--block-until-exit`),
//! pastes and buffers, copy mode. The MCP tools for those stay backend-specific.
//!
//! Every operation targets a pane by its id and leaves every human's focus where it was.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use crate::error::BackendError;
use crate::text_match::Pattern;

/// How much of a pane's text to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScreenScope {
    /// The lines currently shown.
    Visible,
    /// The scrollback and the visible lines.
    Full,
}

/// One end of a range of a pane's lines, numbered as tmux numbers them (Zellij reads a pane
/// whole, so only the screen, `Line(0)`, and the edges make sense there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineBound {
    /// A line number: 0 is the top visible line, negative lines are history.
    Line(i64),
    /// The start of the history (as a range's start) or the bottom of the screen (as its end).
    Edge,
}

/// A terminal pane, as both backends can describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneSummary<P> {
    /// Its id in the backend (`%N`, `terminal_N`).
    pub id: P,
    /// What holds it: the tmux window id (`@N`) or the Zellij tab id (`N`).
    pub container: String,
    /// Its title.
    pub title: String,
    /// The program running in it, when the backend knows.
    pub command: Option<String>,
    /// Its working directory, when the backend knows.
    pub cwd: Option<String>,
    /// Its height in cells.
    pub rows: usize,
    /// Its width in cells.
    pub columns: usize,
    /// Its program exited and the pane stayed (tmux `remain-on-exit`, Zellij held panes).
    pub exited: bool,
}

/// A satisfied [`PaneIo::wait_for_screen`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenMatch {
    /// The first matching line and its index in `screen`.
    pub line: String,
    /// The index of `line` in `screen`.
    pub line_index: usize,
    /// The visible lines in which it was found.
    pub screen: Vec<String>,
}

/// Pane I/O on one backend's scope (a tmux server, a Zellij session).
pub trait PaneIo: Send + Sync {
    /// The backend's pane id (`%N`, `terminal_N`).
    type PaneId: Clone + Display + Send + Sync + 'static;
    /// The backend's error: its message names the pane, its kind says what the caller can do.
    type Error: BackendError;

    /// The backend's name (`tmux`, `zellij`).
    fn backend(&self) -> &'static str;

    /// The terminal panes in scope (plugin panes are left out).
    fn list_panes(
        &self,
    ) -> impl Future<Output = Result<Vec<PaneSummary<Self::PaneId>>, Self::Error>> + Send;

    /// Types `text` into the pane exactly (a `\n` or `\r` presses Enter in a shell).
    fn send_text(
        &self,
        pane: &Self::PaneId,
        text: &str,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Presses `keys` in order; names are in the backend's key syntax and validated by it.
    fn send_keys(
        &self,
        pane: &Self::PaneId,
        keys: &[String],
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// The pane's text, one entry per line, trailing blank lines dropped.
    fn read_screen(
        &self,
        pane: &Self::PaneId,
        scope: ScreenScope,
    ) -> impl Future<Output = Result<Vec<String>, Self::Error>> + Send;

    /// Waits until a visible line matches `pattern` (text already shown matches at once),
    /// woken by the pane's output events; fails after `timeout`.
    fn wait_for_screen(
        &self,
        pane: &Self::PaneId,
        pattern: &Pattern,
        timeout: Duration,
    ) -> impl Future<Output = Result<ScreenMatch, Self::Error>> + Send;
}
