//! [`Multiplexer`] for one tmux server, as one caller: the backend-neutral pane and window
//! operations built from the engine's commands ([`crate::ops`], [`crate::typed`]) and output
//! streams ([`crate::output`]).
//!
//! Waiting subscribes to the pane's output first, then checks the screen, and checks again
//! only when new output arrived: no polling, and nothing written between the check and the
//! subscription can be missed.

mod delivery;

use std::time::Duration;

use muxgate_mux::error::{BackendError, ErrorKind};
use muxgate_mux::text_match::Pattern;

use crate::ops::buffer::transient_buffer_name;
use crate::ops::capture::{capture_command, shape_capture};
use crate::ops::input::{InputError, InputPlan};
use crate::ops::keys::{KeyError, KeyName};
use crate::ops::pane_row::{PaneRecord, list_command};
use crate::ops::since::SinceCursor;
use crate::typed::op_error::{OpError, first_failure};
use crate::typed::pane_lifecycle::{PaneSelection, TmuxPaneLifecycle};
use crate::typed::windows::{LocatedWindow, Selection, TmuxWindows, Window};
use crate::wire::format::{flag, row_format, split_row};
use crate::wire::target::Target;

use crate::{
    BatchMode, Caller, EngineError, PaneId, SessionId, StreamEnd, TmuxCommand, TmuxServer, WindowId,
};
pub use delivery::{BatchDelivered, Delivered, VisibleScreen};
use muxgate_mux::multiplexer::{
    CaptureRange, CapturedText, ClosedHolder, FocusMove, Focused, InputPiece, LineBound,
    Multiplexer, PaneResize, PaneSummary, ScreenMatch, ScreenScope, WindowMove,
};

/// `-F` fields of a pane row; the title (free text) last.
const PANE_FIELDS: [&str; 8] = [
    "pane_id",
    "window_id",
    "pane_dead",
    "pane_height",
    "pane_width",
    "pane_current_command",
    "pane_current_path",
    "pane_title",
];

/// `-F` fields of a pane's terminal row.
const TERMINAL_FIELDS: [&str; 8] = [
    "pane_id",
    "pane_pid",
    "pane_tty",
    "pid",
    "pane_dead",
    "pane_in_mode",
    "pane_input_off",
    "synchronize-panes",
];

/// A pane's terminal and the processes around it, as tmux reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneTerminal {
    /// The pane's program (its terminal's session leader).
    pub pane_pid: u32,
    /// Its terminal device (`/dev/pts/3`).
    pub tty: String,
    /// The tmux server's pid.
    pub server_pid: u32,
    /// The pane's program has exited (`remain-on-exit`).
    pub dead: bool,
    /// In copy mode (or another mode): keys drive the mode, not the program.
    pub in_mode: bool,
    /// Input disabled (`select-pane -d`).
    pub input_off: bool,
    /// Its window's `synchronize-panes` is on: keys go to every pane of the window.
    pub synchronized: bool,
}

/// Why a pane operation failed.
#[derive(Debug, thiserror::Error)]
pub enum TmuxPaneError {
    /// The engine could not run the command.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The input cannot be turned into commands.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A key name was refused.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// tmux refused a command; its message.
    #[error("tmux refused the command: {0}")]
    Refused(String),
    /// tmux did not answer for the command: the pane is not there (any more).
    #[error("tmux did not answer for every command")]
    Unanswered,
    /// The window was not among its session's windows listed right after the change.
    #[error("window {window} is no longer in session {session}")]
    WindowGone {
        /// The window changed.
        window: WindowId,
        /// The session it was named through.
        session: SessionId,
    },
    /// No window of the session has the index asked for.
    #[error("session {session} has no window at index {index}")]
    NoWindowAt {
        /// The session.
        session: SessionId,
        /// The index asked for.
        index: u32,
    },
    /// No line matched before the wait timed out.
    #[error("no line matched in pane {pane} within {} ms", after.as_millis())]
    Timeout {
        /// The pane watched.
        pane: PaneId,
        /// How long the wait lasted.
        after: Duration,
    },
    /// The pane's output ended and no line matched.
    #[error("pane {pane} gives no more output ({reason}) and no line matched")]
    Ended {
        /// The pane watched.
        pane: PaneId,
        /// Why its output ended.
        reason: StreamEnd,
    },
}

impl BackendError for TmuxPaneError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::Engine(error) => error.kind(),
            Self::Input(_) | Self::Key(_) => ErrorKind::InvalidInput,
            Self::Refused(_) | Self::Ended { .. } => ErrorKind::Conflict,
            Self::Unanswered | Self::WindowGone { .. } | Self::NoWindowAt { .. } => {
                ErrorKind::NotFound
            }
            Self::Timeout { .. } => ErrorKind::Timeout,
        }
    }
}

impl From<OpError> for TmuxPaneError {
    fn from(error: OpError) -> Self {
        match error {
            OpError::Engine(error) => Self::Engine(error),
            OpError::Quote(error) => Self::Engine(error.into()),
            OpError::Refused(message) => Self::Refused(message),
            OpError::Unanswered => Self::Unanswered,
        }
    }
}

/// The panes and windows of one tmux server, acted on as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxPanes {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxPanes {
    /// The panes of `server`, acted on as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// Which server process these panes belong to now.
    pub fn instance(&self) -> crate::ServerInstance {
        self.server.instance()
    }

    /// The configured name of the server.
    pub fn server_name(&self) -> &str {
        self.server.name()
    }

    fn lifecycle(&self) -> TmuxPaneLifecycle {
        TmuxPaneLifecycle::new(self.server.clone(), self.caller.clone())
    }

    fn windows(&self) -> TmuxWindows {
        TmuxWindows::new(self.server.clone(), self.caller.clone())
    }

    async fn run(&self, command: TmuxCommand) -> Result<Vec<Vec<u8>>, TmuxPaneError> {
        Ok(self.server.run(&self.caller, command).await?)
    }

    /// `pane`'s terminal; `None` when the pane does not exist.
    pub async fn terminal(&self, pane: PaneId) -> Result<Option<PaneTerminal>, TmuxPaneError> {
        let command = TmuxCommand::new("list-panes")
            .target(pane)
            .opt("-F", row_format(&TERMINAL_FIELDS))
            .build()
            .map_err(EngineError::from)?;
        match self.server.run(&self.caller, command).await {
            Ok(rows) => Ok(parse_terminal_row(&rows, pane)),
            // tmux refuses a target that names no pane.
            Err(EngineError::Command(_)) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// The rows of the panes in `pane`'s window; a pane that is gone reads as unanswered.
    async fn window_rows(&self, pane: PaneId) -> Result<Vec<PaneRecord>, TmuxPaneError> {
        let command = list_command(Some(&Target::Pane(pane))).map_err(EngineError::from)?;
        match self.server.run(&self.caller, command).await {
            Ok(rows) => Ok(rows.iter().filter_map(|r| PaneRecord::parse(r)).collect()),
            // tmux refuses a target that names no pane.
            Err(EngineError::Command(_)) => Err(TmuxPaneError::Unanswered),
            Err(error) => Err(error.into()),
        }
    }

    /// `pane`'s row.
    async fn row(&self, pane: PaneId) -> Result<PaneRecord, TmuxPaneError> {
        self.window_rows(pane)
            .await?
            .into_iter()
            .find(|r| r.pane == pane)
            .ok_or(TmuxPaneError::Unanswered)
    }

    /// Types `text` exactly, then presses Enter if `enter`, in one write.
    pub async fn type_text(
        &self,
        pane: PaneId,
        text: &str,
        enter: bool,
    ) -> Result<(), TmuxPaneError> {
        let mut plan = InputPlan::new(pane);
        // `&str` is UTF-8, so no transient buffer is ever named.
        plan.literal(text.as_bytes(), String::new)?;
        if enter {
            plan.keys(&[KeyName::enter()])?;
        }
        self.deliver(plan).await
    }

    /// Runs the commands of an input plan as one `;`-chained line.
    async fn deliver(&self, plan: InputPlan) -> Result<(), TmuxPaneError> {
        let outcomes = self
            .server
            .run_batch(
                &self.caller,
                plan.into_commands(),
                BatchMode::StopOnError,
                None,
            )
            .await?;
        Ok(first_failure(&outcomes)?)
    }
}

/// The row of `pane` among rows printed with [`TERMINAL_FIELDS`].
fn parse_terminal_row(rows: &[Vec<u8>], pane: PaneId) -> Option<PaneTerminal> {
    rows.iter().find_map(|row| {
        let f = split_row(row, TERMINAL_FIELDS.len())?;
        (f[0].parse::<PaneId>().ok()? == pane).then_some(())?;
        Some(PaneTerminal {
            pane_pid: f[1].parse().ok()?,
            tty: f[2].clone(),
            server_pid: f[3].parse().ok()?,
            dead: flag(&f[4]),
            in_mode: flag(&f[5]),
            input_off: flag(&f[6]),
            synchronized: flag(&f[7]),
        })
    })
}

/// The plan that delivers `input` to `pane` in order, keys pressed together until text or a
/// paste comes between them.
pub fn input_plan(pane: PaneId, input: &[InputPiece]) -> Result<InputPlan, TmuxPaneError> {
    let mut plan = InputPlan::new(pane);
    let mut keys: Vec<KeyName> = Vec::new();
    for piece in input {
        match piece {
            InputPiece::Key(name) => keys.push(KeyName::parse(name)?),
            InputPiece::Text(text) => {
                plan.keys(&std::mem::take(&mut keys))?;
                plan.literal(text, transient_buffer_name)?;
            }
            InputPiece::Paste { text, bracket } => {
                plan.keys(&std::mem::take(&mut keys))?;
                plan.paste(text, *bracket, transient_buffer_name)?;
            }
        }
    }
    plan.keys(&keys)?;
    Ok(plan)
}

/// The pane after (`forward`) or before the active one among `window`'s panes, in the window's
/// order, wrapping; the first pane when none is active.
fn cycle(window: &[PaneRecord], forward: bool) -> Option<PaneId> {
    let mut panes: Vec<&PaneRecord> = window.iter().collect();
    panes.sort_by_key(|r| r.index);
    let n = panes.len();
    if n == 0 {
        return None;
    }
    let active = panes.iter().position(|r| r.active).unwrap_or(0);
    let next = if forward { active + 1 } else { active + n - 1 };
    Some(panes[next % n].pane)
}

/// A pane row printed with [`PANE_FIELDS`].
fn parse_pane_row(row: &[u8]) -> Option<PaneSummary<PaneId>> {
    let f = split_row(row, PANE_FIELDS.len())?;
    let known = |s: &String| (!s.is_empty()).then(|| s.clone());
    Some(PaneSummary {
        id: f[0].parse().ok()?,
        container: f[1].clone(),
        exited: flag(&f[2]),
        rows: f[3].parse().ok()?,
        columns: f[4].parse().ok()?,
        command: known(&f[5]),
        cwd: known(&f[6]),
        title: f[7].clone(),
    })
}

impl Multiplexer for TmuxPanes {
    type PaneId = PaneId;
    type PaneRow = PaneRecord;
    type InputMark = SinceCursor;
    type WindowId = LocatedWindow;
    type WindowRow = Window;
    type Error = TmuxPaneError;

    fn backend(&self) -> &'static str {
        "tmux"
    }

    async fn capture(
        &self,
        pane: &PaneId,
        range: &CaptureRange,
        max_lines: usize,
    ) -> Result<CapturedText, TmuxPaneError> {
        let command = capture_command(range, *pane).map_err(EngineError::from)?;
        let raw = self.run(command).await?;
        Ok(shape_capture(&raw, max_lines, range.join_wrapped))
    }

    async fn set_title(&self, pane: &PaneId, title: &str) -> Result<(), TmuxPaneError> {
        Ok(self.lifecycle().set_title(*pane, title).await?)
    }

    /// A zoom fills the pane's window (tmux toggles, so the pane is read first); a size in
    /// cells unzooms the window.
    async fn resize(&self, pane: &PaneId, change: PaneResize) -> Result<PaneRecord, TmuxPaneError> {
        let lifecycle = self.lifecycle();
        match change {
            PaneResize::Zoom(zoom) => {
                let current = self.row(*pane).await?;
                if current.zoomed == zoom {
                    return Ok(current);
                }
                lifecycle.toggle_zoom(*pane).await?;
            }
            PaneResize::Cells { width, height } => lifecycle.resize(*pane, width, height).await?,
        }
        self.row(*pane).await
    }

    /// Selects the pane and lists its window on the same line; tmux counts no clients.
    async fn focus(
        &self,
        pane: &PaneId,
        towards: FocusMove,
    ) -> Result<Focused<PaneRecord>, TmuxPaneError> {
        let from = *pane;
        let selection = match towards {
            FocusMove::Here => PaneSelection::Pane(from),
            FocusMove::Up => PaneSelection::Above(from),
            FocusMove::Down => PaneSelection::Below(from),
            FocusMove::Left => PaneSelection::LeftOf(from),
            FocusMove::Right => PaneSelection::RightOf(from),
            FocusMove::Last => PaneSelection::LastIn(from),
            FocusMove::Next | FocusMove::Previous => {
                let window = self.window_rows(from).await?;
                let forward = towards == FocusMove::Next;
                PaneSelection::Pane(cycle(&window, forward).ok_or(TmuxPaneError::Unanswered)?)
            }
        };
        let rows = self.lifecycle().select(selection, from).await?;
        let active = rows.into_iter().find(|r| r.active);
        Ok(Focused {
            pane: active.ok_or(TmuxPaneError::Unanswered)?,
            clients: None,
            clients_focused: None,
        })
    }

    async fn rename_window(
        &self,
        window: &LocatedWindow,
        name: &str,
    ) -> Result<Window, TmuxPaneError> {
        let windows = self
            .windows()
            .rename(window.window, window.session, name)
            .await?;
        windows
            .into_iter()
            .find(|w| w.id == window.window)
            .ok_or(TmuxPaneError::WindowGone {
                window: window.window,
                session: window.session,
            })
    }

    /// Moves go by index within the window's session, as tmux's `next-window`,
    /// `previous-window` and `last-window` do.
    async fn select_window(
        &self,
        window: &LocatedWindow,
        towards: WindowMove,
    ) -> Result<Window, TmuxPaneError> {
        let session = window.session;
        let selection = match towards {
            WindowMove::Here => Selection::Window(window.window),
            WindowMove::Next => Selection::Next,
            WindowMove::Previous => Selection::Previous,
            WindowMove::Last => Selection::Last,
            WindowMove::Index(index) => {
                let windows = self.windows().list(Some(&session.to_string())).await?;
                let at = windows.iter().find(|w| w.index == index);
                Selection::Window(at.ok_or(TmuxPaneError::NoWindowAt { session, index })?.id)
            }
        };
        let windows = self.windows().select(selection, session).await?;
        let current = windows.into_iter().find(|w| w.active);
        current.ok_or(TmuxPaneError::Unanswered)
    }

    /// The session ends with its last window.
    async fn kill_window(&self, window: &LocatedWindow) -> Result<bool, TmuxPaneError> {
        Ok(self.windows().kill(window.window, window.session).await?)
    }

    /// tmux closes the window with its last pane, and the session with its last window; what
    /// closed is not reported.
    async fn kill_pane(&self, pane: &PaneId) -> Result<Option<ClosedHolder>, TmuxPaneError> {
        self.lifecycle().kill(*pane).await?;
        Ok(None)
    }

    async fn list_panes(&self) -> Result<Vec<PaneSummary<PaneId>>, TmuxPaneError> {
        let command = TmuxCommand::new("list-panes")
            .flag("-a")
            .opt("-F", row_format(&PANE_FIELDS))
            .build()
            .map_err(EngineError::from)?;
        let rows = self.run(command).await?;
        Ok(rows.iter().filter_map(|r| parse_pane_row(r)).collect())
    }

    async fn send_text(&self, pane: &PaneId, text: &str) -> Result<(), TmuxPaneError> {
        self.type_text(*pane, text, false).await
    }

    async fn send_keys(&self, pane: &PaneId, keys: &[String]) -> Result<(), TmuxPaneError> {
        let keys = keys
            .iter()
            .map(|k| KeyName::parse(k))
            .collect::<Result<Vec<_>, _>>()?;
        let mut plan = InputPlan::new(*pane);
        plan.keys(&keys)?;
        self.deliver(plan).await
    }

    /// One `;`-chained line: the reading, then the input (adjacent keys in one `send-keys`).
    async fn deliver(
        &self,
        pane: &PaneId,
        input: &[InputPiece],
    ) -> Result<Option<SinceCursor>, TmuxPaneError> {
        let delivered = self.deliver_marked(input_plan(*pane, input)?).await?;
        Ok(delivered.position)
    }

    async fn read_screen(
        &self,
        pane: &PaneId,
        scope: ScreenScope,
    ) -> Result<Vec<String>, TmuxPaneError> {
        let range = CaptureRange {
            start: (scope == ScreenScope::Full).then_some(LineBound::Edge),
            join_wrapped: true,
            ..CaptureRange::default()
        };
        let raw = self
            .run(capture_command(&range, *pane).map_err(EngineError::from)?)
            .await?;
        let shaped = shape_capture(&raw, usize::MAX, true);
        if shaped.lines == 0 {
            return Ok(Vec::new());
        }
        Ok(shaped.text.split('\n').map(str::to_owned).collect())
    }

    async fn wait_for_screen(
        &self,
        pane: &PaneId,
        pattern: &Pattern,
        timeout: Duration,
    ) -> Result<ScreenMatch, TmuxPaneError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut output = self.server.subscribe(&self.caller, *pane, deadline).await?;
        loop {
            let screen = self.read_screen(pane, ScreenScope::Visible).await?;
            if let Some(line_index) = pattern.first_match(&screen) {
                return Ok(ScreenMatch {
                    line: screen[line_index].clone(),
                    line_index,
                    screen,
                });
            }
            match tokio::time::timeout_at(deadline, output.next()).await {
                Err(_) => {
                    return Err(TmuxPaneError::Timeout {
                        pane: *pane,
                        after: timeout,
                    });
                }
                Ok(Err(reason)) => {
                    // The last output may have been drawn after the previous check.
                    let screen = self.read_screen(pane, ScreenScope::Visible).await?;
                    return match pattern.first_match(&screen) {
                        Some(line_index) => Ok(ScreenMatch {
                            line: screen[line_index].clone(),
                            line_index,
                            screen,
                        }),
                        None => Err(TmuxPaneError::Ended {
                            pane: *pane,
                            reason,
                        }),
                    };
                }
                Ok(Ok(_)) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::pane_row::sample_row;
    use crate::wire::format::encode_row;

    /// Panes of one window: `(id, index, active)`.
    fn window(panes: &[(u32, u32, bool)]) -> Vec<PaneRecord> {
        let sample = PaneRecord::parse(&sample_row()).unwrap();
        panes
            .iter()
            .map(|&(id, index, active)| PaneRecord {
                pane: PaneId(id),
                index,
                active,
                ..sample.clone()
            })
            .collect()
    }

    #[test]
    fn next_and_previous_cycle_from_the_active_pane_in_window_order() {
        let panes = window(&[(7, 2, false), (5, 0, false), (6, 1, true)]);
        assert_eq!(cycle(&panes, true), Some(PaneId(7)));
        assert_eq!(cycle(&panes, false), Some(PaneId(5)));
        let last_active = window(&[(5, 0, false), (7, 2, true)]);
        assert_eq!(cycle(&last_active, true), Some(PaneId(5)));
        let first_active = window(&[(5, 0, true), (7, 2, false)]);
        assert_eq!(cycle(&first_active, false), Some(PaneId(7)));
    }

    #[test]
    fn a_window_without_an_active_pane_cycles_from_its_first() {
        let panes = window(&[(5, 0, false), (6, 1, false)]);
        assert_eq!(cycle(&panes, true), Some(PaneId(6)));
        assert_eq!(cycle(&window(&[(5, 0, false)]), true), Some(PaneId(5)));
        assert_eq!(cycle(&[], true), None);
    }

    #[test]
    fn pane_rows() {
        let row = encode_row(&[
            "%3",
            "@1",
            "0",
            "24",
            "80",
            "bash",
            "/srv",
            "title|with sep",
        ]);
        let pane = parse_pane_row(&row).unwrap();
        assert_eq!(pane.id, PaneId(3));
        assert_eq!(pane.container, "@1");
        assert!(!pane.exited);
        assert_eq!((pane.rows, pane.columns), (24, 80));
        assert_eq!(pane.command.as_deref(), Some("bash"));
        assert_eq!(pane.title, "title|with sep");
        let dead = encode_row(&["%4", "@1", "1", "24", "80", "", "", ""]);
        let pane = parse_pane_row(&dead).unwrap();
        assert!(pane.exited);
        assert_eq!(pane.command, None);
        assert!(parse_pane_row(b"%5").is_none());
    }
}
