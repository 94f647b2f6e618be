//! What every multiplexer backend does to a pane, as one trait: [`Multiplexer`].
//!
//! A tool both backends serve is written once against this trait and runs on tmux
//! (`muxgate_tmux::typed::panes::TmuxPanes`) and on Zellij (`muxgate_zellij::panes::ZellijPanes`)
//! alike. What it covers:
//! - listing the terminal panes in scope, with backend-neutral facts ([`PaneSummary`]);
//! - typing literal text into a pane, and pressing keys named in the backend's own key syntax
//!   (tmux `C-c`, Zellij `Ctrl c`);
//! - delivering the tools' input ([`InputPiece`]: keys in the one key vocabulary the tools
//!   take, text, pastes) after reading where the pane's output stood
//!   ([`Multiplexer::InputMark`], what a later follow of the output starts from);
//! - reading a pane's screen, visible part or with its scrollback ([`ScreenScope`]), and a
//!   range of its lines shaped for an answer ([`CaptureRange`], [`CapturedText`]);
//! - waiting, without polling, until a line on a pane's screen matches a [`Pattern`]:
//!   woken by the backend's output events (tmux control-mode `%output`, Zellij `subscribe`);
//! - titling a pane, resizing or zooming it ([`PaneResize`]), focusing it or a neighbour
//!   ([`FocusMove`], [`Focused`]) and closing it ([`ClosedHolder`]: what became of its window
//!   or tab). Acts that change a pane answer with the backend's own row for it
//!   ([`Multiplexer::PaneRow`]), which the gateway shapes into its answer;
//! - renaming a window (a Zellij tab), making it or a neighbour current ([`WindowMove`]) and
//!   closing it; these answer the backend's own row for the window ([`Multiplexer::WindowRow`]).
//!
//! What a backend cannot do of these it refuses as data: its error's kind is
//! [`crate::error::ErrorKind::Unsupported`], carrying an [`crate::error::Unsupported`].
//! Creating and listing windows and panes (tmux windows vs Zellij tabs, floating panes), sessions and
//! ownership tags, commands run with their exit status and copy mode are not here yet: their
//! tools still keep one half per backend in the gateway.
//!
//! Every operation targets a pane by its id and, but for [`Multiplexer::focus`], leaves every
//! human's focus where it was.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use crate::error::BackendError;
use crate::lines::truncation_marker;
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

/// A satisfied [`Multiplexer::wait_for_screen`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenMatch {
    /// The first matching line and its index in `screen`.
    pub line: String,
    /// The index of `line` in `screen`.
    pub line_index: usize,
    /// The visible lines in which it was found.
    pub screen: Vec<String>,
}

/// What part of a pane a capture reads, in tmux's line numbers ([`LineBound`]), and how.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaptureRange {
    /// First line (default: the top of the visible screen).
    pub start: Option<LineBound>,
    /// Last line (default: the bottom of the visible screen).
    pub end: Option<LineBound>,
    /// Join lines the terminal wrapped into one line each.
    pub join_wrapped: bool,
    /// Keep colours and attributes as escape sequences.
    pub escape_sequences: bool,
}

impl CaptureRange {
    /// The visible screen, plain text.
    pub fn visible() -> Self {
        Self::default()
    }
}

/// Captured text, shaped for an answer: the most recent lines are what a caller needs, so when
/// more than `max_lines` were captured the tail is kept behind a marker line
/// `[... N lines truncated ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedText {
    /// The kept lines joined with `\n`, behind a marker line when lines were cut.
    pub text: String,
    /// Lines kept (the marker not counted).
    pub lines: usize,
    /// Lines the capture had after dropping trailing blank lines.
    pub total_lines: usize,
    /// Lines cut from the top to respect `max_lines`.
    pub truncated_lines: usize,
}

impl CapturedText {
    /// Keeps the last `max_lines` (at least one) of `lines`, whose trailing blank lines the
    /// backend has already dropped.
    pub fn tail(lines: &[String], max_lines: usize) -> Self {
        let total_lines = lines.len();
        let truncated_lines = total_lines.saturating_sub(max_lines.max(1));
        let kept = &lines[truncated_lines..];
        let mut text = String::new();
        if truncated_lines > 0 {
            text.push_str(&truncation_marker(truncated_lines));
            text.push('\n');
        }
        text.push_str(&kept.join("\n"));
        Self {
            text,
            lines: kept.len(),
            total_lines,
            truncated_lines,
        }
    }

    /// Whether lines were cut from the top.
    pub fn truncated(&self) -> bool {
        self.truncated_lines > 0
    }
}

/// What became of the window or tab that held a closed pane, where the backend says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClosedHolder {
    /// Its number: a Zellij tab id.
    pub id: u32,
    /// It closed with its last pane.
    pub closed: bool,
}

/// A change to a pane's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaneResize {
    /// Fill its window (tmux zoom, Zellij fullscreen within the tab), or stop filling it.
    Zoom(bool),
    /// A size in cells; an absent side stays as it is.
    Cells {
        /// Columns.
        width: Option<u32>,
        /// Rows.
        height: Option<u32>,
    },
}

/// Which pane to focus, seen from a pane of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FocusMove {
    /// That pane.
    Here,
    /// The pane above it (none there leaves the focus where it is).
    Up,
    /// The pane below it.
    Down,
    /// The pane left of it.
    Left,
    /// The pane right of it.
    Right,
    /// The pane focused before the current one in its window.
    Last,
    /// The pane after the window's focused one, in the window's order (wrapping).
    Next,
    /// The pane before the window's focused one (wrapping).
    Previous,
}

/// Which window to make current, seen from a window of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowMove {
    /// That window.
    Here,
    /// The next in the session, by index (wrapping).
    Next,
    /// The previous in the session, by index (wrapping).
    Previous,
    /// The one current before the session's current one.
    Last,
    /// The session's window at this index.
    Index(u32),
}

/// One piece of a tool's input for a pane, delivered in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputPiece {
    /// A key named in tmux's spelling (`C-c`, `Enter`, `BSpace`, `F5`): the one key vocabulary
    /// the tools take; each backend presses its own equivalent, or refuses a key it lacks.
    Key(String),
    /// Bytes typed exactly.
    Text(Vec<u8>),
    /// Text pasted as one paste, bracketed when `bracket` (and the program asked for it).
    Paste {
        /// The text.
        text: Vec<u8>,
        /// Bracketed paste: shells and editors take multi-line text whole.
        bracket: bool,
    },
}

/// What became of one operation of a batch of input (several panes' input, in order, each
/// as a single input would be delivered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOutcome<E> {
    /// Delivered.
    Delivered,
    /// Not delivered: `E` says why (input the backend cannot type, a command it refused, a
    /// pane gone).
    Failed(E),
    /// Not sent: an earlier operation failed, and the batch stops at the first failure.
    NotRun,
    /// The batch's time ran out before the operation was settled: it may have arrived.
    TimedOut,
}

/// A pane focused by [`Multiplexer::focus`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Focused<R> {
    /// The window's focused pane afterwards.
    pub pane: R,
    /// The clients attached, where the backend counts them (Zellij).
    pub clients: Option<usize>,
    /// The clients that now show the pane, where the backend counts them (Zellij).
    pub clients_focused: Option<usize>,
}

/// The panes and windows of one backend's scope (a tmux server, a Zellij session), acted on as
/// one caller.
pub trait Multiplexer: Send + Sync {
    /// The backend's pane id (`%N`, `terminal_N`).
    type PaneId: Clone + Display + Send + Sync + 'static;
    /// The backend's own row for a pane, as its listings show it: what an act that changes a
    /// pane answers with.
    type PaneRow: Send;
    /// Where a pane's output stood just before an input: what a later follow of the output
    /// starts from (a tmux row cursor, a mark of a Zellij screen).
    type InputMark: Send;
    /// The backend's id of a window (a tmux window in its session, a Zellij tab id).
    type WindowId: Clone + Display + Send + Sync + 'static;
    /// The backend's own row for a window, as its listings show it.
    type WindowRow: Send;
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

    /// Delivers `input` in order (in one write where the backend has one), after reading where
    /// the pane's output stood; the mark is `None` where the backend keeps nothing to follow
    /// (tmux's alternate screen).
    fn deliver(
        &self,
        pane: &Self::PaneId,
        input: &[InputPiece],
    ) -> impl Future<Output = Result<Option<Self::InputMark>, Self::Error>> + Send;

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

    /// Reads `range` of the pane, keeping the last `max_lines` lines ([`CapturedText::tail`]).
    fn capture(
        &self,
        pane: &Self::PaneId,
        range: &CaptureRange,
        max_lines: usize,
    ) -> impl Future<Output = Result<CapturedText, Self::Error>> + Send;

    /// Sets the pane's title, leaving focus where it was.
    fn set_title(
        &self,
        pane: &Self::PaneId,
        title: &str,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Resizes or zooms the pane; answers its row afterwards. Zooming a pane already zoomed
    /// changes nothing.
    fn resize(
        &self,
        pane: &Self::PaneId,
        change: PaneResize,
    ) -> impl Future<Output = Result<Self::PaneRow, Self::Error>> + Send;

    /// Focuses the pane `towards` names from `pane`, in its window, for every human watching;
    /// answers the window's focused pane afterwards.
    fn focus(
        &self,
        pane: &Self::PaneId,
        towards: FocusMove,
    ) -> impl Future<Output = Result<Focused<Self::PaneRow>, Self::Error>> + Send;

    /// Renames the window; answers its row afterwards.
    fn rename_window(
        &self,
        window: &Self::WindowId,
        name: &str,
    ) -> impl Future<Output = Result<Self::WindowRow, Self::Error>> + Send;

    /// Makes the window `towards` names, from `window`, its session's current one for every
    /// human watching; answers that window's row.
    fn select_window(
        &self,
        window: &Self::WindowId,
        towards: WindowMove,
    ) -> impl Future<Output = Result<Self::WindowRow, Self::Error>> + Send;

    /// Closes the window and every pane in it; whether its session ended with it.
    fn kill_window(
        &self,
        window: &Self::WindowId,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Closes the pane, ending its program; says what became of its window or tab where the
    /// backend reports it.
    fn kill_pane(
        &self,
        pane: &Self::PaneId,
    ) -> impl Future<Output = Result<Option<ClosedHolder>, Self::Error>> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("line {i}")).collect()
    }

    #[test]
    fn a_capture_keeps_its_tail_behind_a_marker() {
        let kept = CapturedText::tail(&lines(5), 2);
        assert_eq!(kept.text, "[... 3 lines truncated ...]\nline 4\nline 5");
        assert_eq!(
            (kept.lines, kept.total_lines, kept.truncated_lines),
            (2, 5, 3)
        );
        assert!(kept.truncated());
    }

    #[test]
    fn a_short_capture_is_whole_and_keeps_at_least_one_line() {
        let whole = CapturedText::tail(&lines(2), 500);
        assert_eq!(whole.text, "line 1\nline 2");
        assert!(!whole.truncated());
        assert_eq!(CapturedText::tail(&lines(3), 0).lines, 1);
        assert_eq!(CapturedText::tail(&[], 5).text, "");
    }
}
