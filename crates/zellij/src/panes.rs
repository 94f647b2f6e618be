//! [`Multiplexer`] for one Zellij session: the backend-neutral pane operations on
//! [`ZellijBackend`]. Every call goes through the session's queue like any other backend call.

use std::time::Duration;

use muxgate_mux::screen_mark::ScreenMark;
use muxgate_mux::text_match::Pattern;

use super::backend::{InputStep, ReadScope, ZellijBackend};
use super::error::ZellijError;
use super::ids::{PaneId, SessionName, TabId};
use super::keys::{Key, from_tmux_name};
use super::listing::{Pane, Tab, TabRow};
use muxgate_mux::error::Unsupported;
use muxgate_mux::multiplexer::{
    CaptureRange, CapturedText, ClosedHolder, FocusMove, Focused, InputPiece, LineBound,
    Multiplexer, PaneResize, PaneSummary, ScreenMatch, ScreenScope, WindowMove,
};

use crate::unsupported;

/// The panes of one Zellij session.
#[derive(Clone)]
pub struct ZellijPanes {
    backend: ZellijBackend,
    session: SessionName,
}

impl ZellijPanes {
    /// The panes of `session`, reached through `backend`.
    pub fn new(backend: ZellijBackend, session: SessionName) -> Self {
        Self { backend, session }
    }

    /// `tab`'s row, with its active pane from a listing of the session's panes.
    async fn tab_row(&self, tab: Tab) -> Result<TabRow, ZellijError> {
        let panes = self.backend.list_panes(&self.session).await?;
        Ok(TabRow::new(tab, &panes))
    }

    /// The session the panes are in.
    pub fn session(&self) -> &SessionName {
        &self.session
    }
}

/// Zellij's key names, validated.
pub fn parse_keys(keys: &[String]) -> Result<Vec<Key>, ZellijError> {
    keys.iter()
        .map(|k| {
            Key::parse(k).map_err(|e| ZellijError::InvalidArgument {
                what: "keys",
                reason: e.to_string(),
            })
        })
        .collect()
}

/// The Zellij steps that deliver `input`: tmux key names become Zellij keys (`C-c` is
/// `Ctrl c`; adjacent keys are one step), text is typed as it is, a paste is bracketed or
/// typed. Zellij has no keypad keys and types only UTF-8 text: those are refused.
pub fn input_steps(input: &[InputPiece]) -> Result<Vec<InputStep>, Unsupported> {
    let utf8 = |text: &[u8]| String::from_utf8(text.to_vec()).map_err(|_| unsupported::NOT_UTF8);
    let mut steps: Vec<InputStep> = Vec::new();
    for piece in input {
        let step = match piece {
            InputPiece::Key(name) => InputStep::Keys(vec![from_tmux_name(name)?]),
            InputPiece::Text(text) => InputStep::Text(utf8(text)?),
            InputPiece::Paste {
                text,
                bracket: true,
            } => InputStep::Paste(utf8(text)?),
            InputPiece::Paste {
                text,
                bracket: false,
            } => InputStep::Text(utf8(text)?),
        };
        match (steps.last_mut(), step) {
            (Some(InputStep::Keys(before)), InputStep::Keys(more)) => before.extend(more),
            (_, step) => steps.push(step),
        }
    }
    Ok(steps)
}

/// What part of a pane a capture of `range` reads. Zellij reads a pane whole, as plain text
/// with wrapped lines joined: the screen (`start` absent or 0) or the scrollback and the screen
/// (`start` at the edge), to the last line; any other range, and escape sequences, it refuses.
pub fn capture_scope(range: &CaptureRange) -> Result<ScreenScope, Unsupported> {
    if range.escape_sequences {
        return Err(unsupported::ESCAPE_SEQUENCES);
    }
    if !matches!(range.end, None | Some(LineBound::Edge)) {
        return Err(unsupported::CAPTURE_END);
    }
    match range.start {
        None | Some(LineBound::Line(0)) => Ok(ScreenScope::Visible),
        Some(LineBound::Edge) => Ok(ScreenScope::Full),
        Some(LineBound::Line(_)) => Err(unsupported::CAPTURE_START),
    }
}

impl From<ScreenScope> for ReadScope {
    fn from(scope: ScreenScope) -> Self {
        match scope {
            ScreenScope::Visible => ReadScope::Viewport,
            ScreenScope::Full => ReadScope::Full,
        }
    }
}

impl Multiplexer for ZellijPanes {
    type PaneId = PaneId;
    type PaneRow = Pane;
    type InputMark = ScreenMark;
    type WindowId = TabId;
    type WindowRow = TabRow;
    type Error = ZellijError;

    fn backend(&self) -> &'static str {
        "zellij"
    }

    async fn list_panes(&self) -> Result<Vec<PaneSummary<PaneId>>, ZellijError> {
        let panes = self.backend.list_panes(&self.session).await?;
        Ok(panes
            .into_iter()
            .filter(|p| p.is_user_terminal())
            .map(|p| PaneSummary {
                id: p.id,
                container: p.tab_id.to_string(),
                title: p.title,
                command: p.running_command.or(p.terminal_command),
                cwd: p.cwd,
                rows: p.geometry.content_rows,
                columns: p.geometry.content_columns,
                exited: p.exited,
            })
            .collect())
    }

    async fn capture(
        &self,
        pane: &PaneId,
        range: &CaptureRange,
        max_lines: usize,
    ) -> Result<CapturedText, ZellijError> {
        let lines = self.read_screen(pane, capture_scope(range)?).await?;
        Ok(CapturedText::tail(&lines, max_lines))
    }

    /// Renames the pane without focusing it.
    async fn set_title(&self, pane: &PaneId, title: &str) -> Result<(), ZellijError> {
        self.backend
            .rename_pane(&self.session, *pane, title)
            .await
            .map(drop)
    }

    /// `Zoom` is fullscreen within the pane's tab; cells are reached in Zellij's own steps
    /// ([`ZellijBackend::resize_pane`]).
    async fn resize(&self, pane: &PaneId, change: PaneResize) -> Result<Pane, ZellijError> {
        match change {
            PaneResize::Zoom(zoom) => {
                self.backend
                    .set_fullscreen(&self.session, *pane, zoom)
                    .await
            }
            PaneResize::Cells { width, height } => {
                let cells = |n: Option<u32>| n.map(|n| n as usize);
                self.backend
                    .resize_pane(&self.session, *pane, cells(width), cells(height))
                    .await
            }
        }
    }

    /// Shows the pane to every attached client (its tab, and the pane focused there). Zellij
    /// focuses a pane by its id only, so any move to a neighbour is refused.
    async fn focus(&self, pane: &PaneId, towards: FocusMove) -> Result<Focused<Pane>, ZellijError> {
        if towards != FocusMove::Here {
            return Err(ZellijError::Unsupported(unsupported::DIRECTION));
        }
        let focused = self.backend.focus_pane(&self.session, *pane).await?;
        Ok(Focused {
            pane: focused.pane,
            clients: Some(focused.clients),
            clients_focused: Some(focused.clients_focused),
        })
    }

    async fn rename_window(&self, tab: &TabId, name: &str) -> Result<TabRow, ZellijError> {
        let tab = self.backend.rename_tab(&self.session, *tab, name).await?;
        self.tab_row(tab).await
    }

    /// Switches every attached client to the tab. Zellij switches by tab id only, so a move
    /// to a neighbour or an index is refused.
    async fn select_window(&self, tab: &TabId, towards: WindowMove) -> Result<TabRow, ZellijError> {
        if towards != WindowMove::Here {
            return Err(ZellijError::Unsupported(unsupported::STEP_AND_INDEX));
        }
        let tab = self.backend.go_to_tab(&self.session, *tab).await?;
        self.tab_row(tab).await
    }

    /// The session's last tab is refused ([`ZellijError::WouldEndSession`]), so the session
    /// never ends with it.
    async fn kill_window(&self, tab: &TabId) -> Result<bool, ZellijError> {
        self.backend.close_tab(&self.session, *tab).await?;
        Ok(false)
    }

    /// A tab closes with its last pane; the session's last pane is refused
    /// ([`ZellijError::WouldEndSession`]), as closing it would end the session.
    async fn kill_pane(&self, pane: &PaneId) -> Result<Option<ClosedHolder>, ZellijError> {
        let closed = self.backend.close_pane(&self.session, *pane).await?;
        Ok(Some(ClosedHolder {
            id: closed.tab.0,
            closed: closed.tab_closed,
        }))
    }

    async fn send_text(&self, pane: &PaneId, text: &str) -> Result<(), ZellijError> {
        self.backend.write_chars(&self.session, *pane, text).await
    }

    async fn send_keys(&self, pane: &PaneId, keys: &[String]) -> Result<(), ZellijError> {
        let keys = parse_keys(keys)?;
        self.backend.send_keys(&self.session, *pane, &keys).await
    }

    /// Steps in one queued batch ([`ZellijBackend::input_batch`]) after a mark of the screen;
    /// input Zellij cannot deliver ([`input_steps`]) is refused before anything is read.
    async fn deliver(
        &self,
        pane: &PaneId,
        input: &[InputPiece],
    ) -> Result<Option<ScreenMark>, ZellijError> {
        let steps = input_steps(input)?;
        let mark = self.backend.screen_mark(&self.session, *pane).await?;
        self.backend
            .input_batch(&self.session, *pane, steps)
            .await?;
        Ok(Some(mark))
    }

    async fn read_screen(
        &self,
        pane: &PaneId,
        scope: ScreenScope,
    ) -> Result<Vec<String>, ZellijError> {
        let text = self
            .backend
            .read_pane(&self.session, *pane, scope.into())
            .await?;
        Ok(text.lines)
    }

    async fn wait_for_screen(
        &self,
        pane: &PaneId,
        pattern: &Pattern,
        timeout: Duration,
    ) -> Result<ScreenMatch, ZellijError> {
        let found = self
            .backend
            .wait_for_text(&self.session, *pane, pattern, timeout)
            .await?;
        Ok(ScreenMatch {
            line: found.line,
            line_index: found.line_index,
            screen: found.viewport,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: Option<LineBound>, end: Option<LineBound>) -> CaptureRange {
        CaptureRange {
            start,
            end,
            ..CaptureRange::visible()
        }
    }

    #[test]
    fn tool_input_becomes_zellij_steps_in_order() {
        let key = |name: &str| from_tmux_name(name).unwrap();
        let input = [
            InputPiece::Key("C-c".into()),
            InputPiece::Key("Enter".into()),
            InputPiece::Text(b"ls".to_vec()),
            InputPiece::Paste {
                text: b"a\nb".to_vec(),
                bracket: true,
            },
            InputPiece::Paste {
                text: b"c".to_vec(),
                bracket: false,
            },
            InputPiece::Key("Enter".into()),
        ];
        assert_eq!(
            input_steps(&input).unwrap(),
            vec![
                InputStep::Keys(vec![key("C-c"), key("Enter")]),
                InputStep::Text("ls".into()),
                InputStep::Paste("a\nb".into()),
                InputStep::Text("c".into()),
                InputStep::Keys(vec![key("Enter")]),
            ]
        );
    }

    #[test]
    fn input_zellij_cannot_deliver_is_refused_as_unsupported() {
        let keypad = input_steps(&[InputPiece::Key("KP0".into())]).unwrap_err();
        assert_eq!(keypad, unsupported::key("KP0"));
        let bytes = input_steps(&[InputPiece::Text(vec![0xff, 0xfe])]);
        assert_eq!(bytes, Err(unsupported::NOT_UTF8));
    }

    #[test]
    fn a_capture_reads_the_screen_or_the_whole_pane() {
        assert_eq!(capture_scope(&range(None, None)), Ok(ScreenScope::Visible));
        let screen = range(Some(LineBound::Line(0)), Some(LineBound::Edge));
        assert_eq!(capture_scope(&screen), Ok(ScreenScope::Visible));
        let whole = range(Some(LineBound::Edge), None);
        assert_eq!(capture_scope(&whole), Ok(ScreenScope::Full));
    }

    #[test]
    fn a_capture_zellij_cannot_read_is_refused_as_unsupported() {
        let from_history = range(Some(LineBound::Line(-20)), None);
        assert_eq!(
            capture_scope(&from_history),
            Err(unsupported::CAPTURE_START)
        );
        let above_bottom = range(None, Some(LineBound::Line(5)));
        assert_eq!(capture_scope(&above_bottom), Err(unsupported::CAPTURE_END));
        let coloured = CaptureRange {
            escape_sequences: true,
            ..CaptureRange::visible()
        };
        assert_eq!(capture_scope(&coloured), Err(unsupported::ESCAPE_SEQUENCES));
    }
}
