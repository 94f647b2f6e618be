//! What callers pass to the Zellij backend and what they get back.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use muxgate_mux::shell::Shell;
use serde::Serialize;

use super::checks::args;
use crate::attach::TermSize;
use crate::cli::ZellijEnv;
use crate::ids::{PaneId, TabId};
use crate::keys::Key;
use crate::listing::Pane;
#[cfg(doc)]
use crate::{backend::ZellijBackend, error::ZellijError};

/// How muxgate drives one Zellij server (socket dir + environment).
#[derive(Debug, Clone)]
pub struct ZellijServerSpec {
    /// How the `zellij` CLI is run: its binary, socket dir and environment.
    pub env: ZellijEnv,
    /// Timeout of one `zellij` CLI call.
    pub call_timeout: Duration,
    /// Timeout of one queued operation (several calls).
    pub op_timeout: Duration,
    /// Operations that may wait per session before callers get [`ZellijError::Busy`].
    pub queue_capacity: usize,
    /// Longest wait of an operation for its turn on the session queue.
    pub queue_wait: Duration,
    /// Terminal size given to sessions and tabs created while no client is attached.
    pub headless_size: TermSize,
    /// Viewport read interval for waits while a client is attached (see `watch`).
    pub poll_interval: Duration,
    /// How often a wait checks whether a client attached.
    pub client_check_interval: Duration,
}

impl ZellijServerSpec {
    /// Defaults for a server reached with `env`.
    pub fn new(env: ZellijEnv) -> Self {
        Self {
            env,
            call_timeout: Duration::from_secs(5),
            op_timeout: Duration::from_secs(15),
            queue_capacity: 64,
            queue_wait: Duration::from_secs(30),
            headless_size: TermSize {
                rows: 48,
                cols: 160,
            },
            poll_interval: Duration::from_millis(100),
            client_check_interval: Duration::from_secs(1),
        }
    }
}

/// Options of [`ZellijBackend::create_session`].
#[derive(Debug, Clone, Default)]
pub struct CreateSessionOptions {
    /// Working directory of the first pane (default: the configured session cwd).
    pub cwd: Option<PathBuf>,
}

/// Options of [`ZellijBackend::new_tab`].
#[derive(Debug, Clone, Default)]
pub struct NewTabOptions {
    /// Name of the new tab.
    pub name: Option<String>,
    /// Absolute working directory of the tab's panes.
    pub cwd: Option<PathBuf>,
    /// A KDL layout for the tab (`layout { pane split_direction="vertical" { pane; pane; } }`).
    pub layout: Option<String>,
    /// A command (argv) to run in the tab's pane instead of a shell.
    pub command: Vec<String>,
    /// Switch clients to the new tab. Default: no client's focus changes.
    pub focus: bool,
}

/// Where a tiled pane opens relative to the pane it splits.
// No variant docs: each would be schema text in every tools/list.
#[allow(missing_docs)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SplitDirection {
    Right,
    Down,
}

/// Options of [`ZellijBackend::new_pane`].
#[derive(Debug, Clone, Default)]
pub struct NewPaneOptions {
    /// The tab to open the pane in (default: the first tab).
    pub tab: Option<TabId>,
    /// Title of the new pane.
    pub name: Option<String>,
    /// Absolute working directory of the pane.
    pub cwd: Option<PathBuf>,
    /// A command (argv) to run instead of a shell; the pane is then a command pane.
    pub command: Vec<String>,
    /// Open a floating pane instead of a tiled one.
    pub floating: bool,
    /// Split direction for a tiled pane (default: where Zellij finds room).
    pub direction: Option<SplitDirection>,
    /// Close the pane when its command exits (command panes only).
    pub close_on_exit: bool,
    /// Focus the new pane. Default: no client's focus changes.
    pub focus: bool,
}

/// Options of [`ZellijBackend::edit_file`].
#[derive(Debug, Clone, Default)]
pub struct EditOptions {
    /// The tab to open the editor pane in (default: the first tab).
    pub tab: Option<TabId>,
    /// Line number to open the file at.
    pub line: Option<usize>,
    /// Open the editor in a floating pane instead of a tiled one.
    pub floating: bool,
    /// Absolute working directory of the editor pane.
    pub cwd: Option<PathBuf>,
    /// Focus the editor pane. Default: no client's focus changes.
    pub focus: bool,
}

/// Visible part only, or the scrollback too.
// No variant docs: each would be schema text in every tools/list.
#[allow(missing_docs)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ReadScope {
    Viewport,
    Full,
}

/// Text of a pane, as `dump-screen` gives it: lines wrapped by the terminal are joined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PaneText {
    /// The pane that was read.
    pub pane: PaneId,
    /// Which part was read: the viewport or the whole scrollback.
    pub scope: ReadScope,
    /// The text, one entry per line.
    pub lines: Vec<String>,
}

/// The result of [`ZellijBackend::focus_pane`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FocusedPane {
    /// The pane as listed after the focus change.
    pub pane: Pane,
    /// Clients attached to the session.
    pub clients: usize,
    /// Clients that now have the pane focused.
    pub clients_focused: usize,
}

/// The result of closing a pane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClosedPane {
    /// The closed pane.
    pub pane: PaneId,
    /// The tab the pane was in.
    pub tab: TabId,
    /// The pane was the last one of its tab, so the tab closed too.
    pub tab_closed: bool,
}

/// One step of [`ZellijBackend::input_batch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputStep {
    /// Typed text (`\n` presses Enter).
    Text(String),
    /// Keys pressed in order.
    Keys(Vec<Key>),
    /// Text pasted with bracketed paste.
    Paste(String),
}

impl InputStep {
    /// The `zellij action` that delivers this input to `pane`: its label for errors, and its
    /// arguments (the text or keys after `--`, so none is read as an option).
    pub(super) fn action(&self, pane: PaneId) -> (&'static str, Vec<OsString>) {
        let id = pane.to_string();
        match self {
            InputStep::Text(text) => (
                "action write-chars",
                args(["write-chars", "--pane-id", &id, "--", text]),
            ),
            InputStep::Paste(text) => (
                "action paste",
                args(["paste", "--pane-id", &id, "--", text]),
            ),
            InputStep::Keys(keys) => {
                let mut argv = args(["send-keys", "--pane-id", &id, "--"]);
                argv.extend(keys.iter().map(|k| OsString::from(k.as_str())));
                ("action send-keys", argv)
            }
        }
    }
}

/// Options of [`ZellijBackend::run_command`].
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Tab that hosts the command pane (default: the first tab).
    pub tab: Option<TabId>,
    /// Absolute working directory of the command.
    pub cwd: Option<PathBuf>,
    /// Pane title (default `muxgate-run-<id>`).
    pub name: Option<String>,
    /// Hidden floating pane (default) or a tiled pane, which shows in the tab's layout.
    pub floating: bool,
    /// Keep the pane after the command exited (default: closed).
    pub keep_pane: bool,
    /// Longest wait for the command to exit (default 60 s); on timeout it keeps running.
    pub timeout: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            tab: None,
            cwd: None,
            name: None,
            floating: true,
            keep_pane: false,
            timeout: Duration::from_secs(60),
        }
    }
}

/// Options of [`ZellijBackend::run_in_pane`].
#[derive(Debug, Clone)]
pub struct RunInPaneOptions {
    /// The pane's shell; detected from the pane's running command when not given.
    pub shell: Option<Shell>,
    /// Longest wait for the command to finish (default 60 s); past it, no exit status.
    pub timeout: Duration,
}

impl Default for RunInPaneOptions {
    fn default() -> Self {
        Self {
            shell: None,
            timeout: Duration::from_secs(60),
        }
    }
}

/// A command typed into a pane's shell ([`ZellijBackend::run_in_pane`]): finished, or still
/// running when the timeout passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneRun {
    /// The pane the command was typed into.
    pub pane: PaneId,
    /// The shell it was typed for (detected from the pane, or as the caller named it).
    pub shell: Shell,
    /// `None`: the timeout passed first and the command is still running.
    pub exit_status: Option<i32>,
    /// The shell began the command (its start marker was seen). False after a timeout means
    /// the typed line was never run: the pane was likely not at a prompt.
    pub started: bool,
    /// The command's output only (so far, after a timeout), as the terminal shows it.
    pub output: String,
    /// The start of the output had left the scrollback; `output` is its tail.
    pub truncated: bool,
    /// Time from the call to the answer.
    pub elapsed: Duration,
}

/// A finished command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandResult {
    /// The pane it ran in (closed afterwards for [`ZellijBackend::run_command`] unless kept).
    pub pane: PaneId,
    /// The command's exit status.
    pub exit_status: i32,
    /// The command's output only, as the terminal shows it.
    pub output: String,
    /// The start of the output had left the scrollback; `output` is its tail.
    pub truncated: bool,
    /// The pane was closed after the command finished (false when `keep_pane` was set).
    pub pane_closed: bool,
    /// Time from the call to the answer; serialized in milliseconds.
    #[serde(serialize_with = "as_millis")]
    pub elapsed: Duration,
}

/// A satisfied [`ZellijBackend::wait_for_text`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TextMatch {
    /// The pane that was watched.
    pub pane: PaneId,
    /// The first matching line and its index in `viewport`.
    pub line: String,
    /// Index of `line` in `viewport`, from 0.
    pub line_index: usize,
    /// The viewport in which the text was found.
    pub viewport: Vec<String>,
    /// Time spent waiting; serialized in milliseconds.
    #[serde(serialize_with = "as_millis")]
    pub waited: Duration,
    /// Screen snapshots that went by unexamined because the waiter fell behind; text shown
    /// only in those was not seen.
    pub missed_snapshots: u64,
}

pub(super) fn as_millis<S: serde::Serializer>(
    d: &Duration,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_input_is_one_action_with_its_text_after_the_separator() {
        let pane = PaneId::Terminal(3);
        let argv = |step: InputStep| {
            let (label, argv) = step.action(pane);
            let argv: Vec<String> = argv
                .into_iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            (label, argv)
        };
        assert_eq!(
            argv(InputStep::Text("--help".into())),
            (
                "action write-chars",
                vec!["write-chars", "--pane-id", "terminal_3", "--", "--help"]
                    .into_iter()
                    .map(String::from)
                    .collect()
            )
        );
        let (label, paste) = argv(InputStep::Paste("a\nb".into()));
        assert_eq!(
            (label, paste[0].as_str(), paste[4].as_str()),
            ("action paste", "paste", "a\nb")
        );
        let keys = vec![Key::parse("Ctrl c").unwrap(), Key::parse("Enter").unwrap()];
        let (label, sent) = argv(InputStep::Keys(keys));
        assert_eq!(label, "action send-keys");
        assert_eq!(sent[3..], ["--", "Ctrl c", "Enter"]);
    }
}

/// How a [`super::ZellijBackend::wait_for_new_lines`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewLinesEnd<T> {
    /// The check accepted the new lines; what it returned.
    Found(T),
    /// The deadline passed first.
    TimedOut,
    /// The pane closed first.
    PaneClosed,
}

/// A finished wait for new lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLinesWait<T> {
    /// How the wait ended.
    pub end: NewLinesEnd<T>,
    /// The new lines of the last screen examined (empty when none was).
    pub lines: Vec<String>,
}
