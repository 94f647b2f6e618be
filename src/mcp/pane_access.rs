//! What a tool body written once for both backends needs from the server a call names:
//! [`PaneAccess`], implemented by the tmux and the Zellij access, which hands out a pane the
//! caller may act on together with the backend's [`Multiplexer`] that acts on it ([`Scoped`]),
//! or a window (a Zellij tab) the same way ([`ScopedWindow`]).
//!
//! The caller's grants are checked here, before any act: a target the caller may not see reads
//! like a missing one. What the act does is the backend's ([`Multiplexer`]); what the answer
//! says is the tool's ([`super::shared_tool::MuxTool`]).

use std::future::Future;

use muxgate_mux::error::BackendError;
use muxgate_mux::error::Unsupported;
use muxgate_mux::multiplexer::{InputPiece, Multiplexer};
use muxgate_mux::screen_mark::ScreenMark;
use muxgate_mux::shell_run::RunRequest;
use muxgate_tmux::ops::pane_row::PaneRecord;
use muxgate_tmux::ops::since::SinceCursor;
use muxgate_tmux::typed::panes::{TmuxPaneError, TmuxPanes, input_plan};
use muxgate_tmux::typed::windows::{LocatedWindow, Window};
use muxgate_tmux::wire::target::Target;
use muxgate_tmux::{EngineError, PaneId};
use muxgate_zellij::error::ZellijError;
use muxgate_zellij::listing::{Pane, TabRow};
use muxgate_zellij::panes::{ZellijPanes, input_steps};
use muxgate_zellij::unsupported;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::McpServer;
use super::access::{
    PANES_HINT, TmuxAccess, WINDOWS_HINT, engine_error, list_hint, not_found, pane_only,
    window_only,
};
use super::answers::{AnsweredPane, AnsweredWindow};
use super::backend::Backend;
use super::budget::{CallBudget, WaitBudget};
use super::command_run::{self, RunCommandOutput};
use super::error::{ToolError, ToolErrorKind};
use super::input_batch::{self, BatchInput, DeliveredBatch};
use super::listing::{ListsPanes, ListsSessions, ListsWindows};
use super::pane_ops::{PaneRow, input_error};
use super::pane_state::{self, PaneStateOutput};
use super::position::{OutputPosition, ZellijPosition};
use super::scoped::{Scoped, ScopedWindow};
use super::self_guard::Kill;
use super::text_wait::{self, TextWait, TextWaitEnd};
use super::tools::watch::by_deadline;
use super::window_creation::CreatesWindows;
use super::zellij_access::ZellijAccess;

/// What a window tool's target must name on tmux; a Zellij target always names a tab.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WindowNamed<'a> {
    /// A window (`@N`, or a path to one); the tool named in the refusal of anything else.
    Window(&'a str),
    /// A session, for a move from its current window; the tool named in a refusal.
    Session(&'a str),
}

/// One call's access to the server it names, whichever backend serves it. The listings and
/// the window creation it also answers are the tools' own knowledge of each backend, so their
/// traits are implemented beside those tools.
pub(crate) trait PaneAccess:
    ListsSessions + ListsPanes + ListsWindows + CreatesWindows + Send + Sync
{
    /// The backend's pane operations.
    type Mux: Multiplexer;

    /// The backend this access reaches.
    const BACKEND: Backend;

    /// The configured name of the server.
    fn server_name(&self) -> &str;

    /// What the caller may still spend in this call (waits, answer text).
    fn budget(&self) -> CallBudget<'_>;

    /// The pane a client's `target` names (on tmux a window or session names its active
    /// pane), if the caller may act on it.
    fn pane(
        &self,
        target: &str,
    ) -> impl Future<Output = Result<Scoped<Self::Mux>, ToolError>> + Send;

    /// [`Self::pane`] for a tool that takes a pane id only; `instead` names the tools for a
    /// window or a session.
    fn exact_pane(
        &self,
        target: &str,
        instead: &str,
    ) -> impl Future<Output = Result<Scoped<Self::Mux>, ToolError>> + Send;

    /// [`Self::pane`] for a call that must end by `deadline` (a wait with its own timeout):
    /// finding the pane fails as a step of the backend that did not finish in time.
    fn pane_by(
        &self,
        target: &str,
        deadline: Instant,
    ) -> impl Future<Output = Result<Scoped<Self::Mux>, ToolError>> + Send;

    /// Refuses to close `pane` when the gateway itself runs in it.
    fn may_kill(
        &self,
        gateway: &McpServer,
        pane: &Scoped<Self::Mux>,
    ) -> impl Future<Output = Result<(), ToolError>> + Send;

    /// `row`, the backend's row for `pane` after an act, as the caller is shown it; a row
    /// the caller may not see reads as the pane not found.
    fn answered(
        &self,
        pane: &Scoped<Self::Mux>,
        row: <Self::Mux as Multiplexer>::PaneRow,
    ) -> Result<AnsweredPane, ToolError>;

    /// The window `target` names as `named` says, if the caller may act on it.
    fn window(
        &self,
        target: &str,
        named: WindowNamed<'_>,
    ) -> impl Future<Output = Result<ScopedWindow<Self::Mux>, ToolError>> + Send;

    /// Refuses to close `window` when the gateway itself runs in it.
    fn may_kill_window(
        &self,
        gateway: &McpServer,
        window: &ScopedWindow<Self::Mux>,
    ) -> impl Future<Output = Result<(), ToolError>> + Send;

    /// `row`, the backend's row for `window` after an act, as the caller is shown it.
    fn answered_window(
        &self,
        window: &ScopedWindow<Self::Mux>,
        row: <Self::Mux as Multiplexer>::WindowRow,
    ) -> Result<AnsweredWindow, ToolError>;

    /// A failed act on a window, as an error for the model.
    fn window_error(&self, error: <Self::Mux as Multiplexer>::Error) -> ToolError;

    /// The `output_position` an input tool answers: where `pane`'s output stood before the
    /// input (`mark`), and the text the input typed (for the echo filter of a later wait).
    fn output_position(
        &self,
        pane: &Scoped<Self::Mux>,
        mark: <Self::Mux as Multiplexer>::InputMark,
        typed: &str,
    ) -> String;

    /// A failed act on `pane`, as an error for the model.
    fn error(
        &self,
        pane: &Scoped<Self::Mux>,
        error: <Self::Mux as Multiplexer>::Error,
    ) -> ToolError;

    /// Refuses `input` for `pane` when the backend cannot type it, before anything is sent.
    fn check_input(&self, pane: &Scoped<Self::Mux>, input: &[InputPiece]) -> Result<(), ToolError>;

    /// Runs a command in `pane`'s shell until it ends or `budget`'s deadline passes, or the
    /// client cancels ([`super::command_run`]).
    fn run_command(
        &self,
        pane: &Scoped<Self::Mux>,
        request: RunRequest,
        budget: &WaitBudget,
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<RunCommandOutput, ToolError>> + Send;

    /// What `pane` is doing, from the evidence the backend has ([`super::pane_state`]).
    fn pane_state(
        &self,
        gateway: &McpServer,
        pane: &Scoped<Self::Mux>,
    ) -> impl Future<Output = Result<PaneStateOutput, ToolError>> + Send;

    /// Waits until a line of `pane`'s new output matches `wait`, the pane exits, `deadline`
    /// passes or the client cancels ([`super::text_wait`]).
    fn wait_for_text(
        &self,
        pane: &Scoped<Self::Mux>,
        wait: TextWait,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<TextWaitEnd, ToolError>> + Send;

    /// Delivers a batch of input to its panes in order; under `stop` nothing after the first
    /// failure is sent; by `deadline` every operation is settled ([`super::input_batch`]).
    fn deliver_batch(
        &self,
        ops: Vec<BatchInput<Self::Mux>>,
        stop: bool,
        deadline: Instant,
    ) -> impl Future<Output = Result<DeliveredBatch, ToolError>> + Send;
}

/// The refusal of input a Zellij pane cannot type (keypad keys, text that is not UTF-8).
pub(crate) fn zellij_input_refusal(refusal: Unsupported) -> ToolError {
    let instead = if refusal == unsupported::NOT_UTF8 {
        "send UTF-8 text to a Zellij pane (base64 bytes only to tmux)"
    } else {
        "send the character or another key name"
    };
    ToolError::unsupported(refusal, instead)
}

impl TmuxAccess<'_> {
    /// The server's panes and windows, acted on as the caller.
    pub(crate) fn panes(&self) -> TmuxPanes {
        TmuxPanes::new(self.server.clone(), self.caller.clone())
    }

    fn scoped(&self, pane: PaneId, hint: &'static str) -> Scoped<TmuxPanes> {
        Scoped {
            mux: self.panes(),
            pane,
            session: None,
            hint,
        }
    }

    /// A failed act on `pane`, worded as every tmux tool words the engine's failures: a
    /// command tmux refused reads as any refusal (suggesting `hint`), one it did not answer
    /// as the pane not found, input that cannot be sent says how to fix it.
    pub(crate) fn pane_error(&self, pane: PaneId, hint: &str, error: TmuxPaneError) -> ToolError {
        self.tmux_error(hint, error, || not_found(&Target::Pane(pane)))
    }

    /// A failed act as every tmux tool words the engine's failures, suggesting `hint`; what
    /// tmux did not answer for is `unanswered`.
    fn tmux_error(
        &self,
        hint: &str,
        error: TmuxPaneError,
        unanswered: impl FnOnce() -> ToolError,
    ) -> ToolError {
        let server = TmuxAccess::server_name(self);
        match error {
            TmuxPaneError::Engine(error) => engine_error(server, error, hint),
            TmuxPaneError::Refused(message) => {
                engine_error(server, EngineError::Command(message), hint)
            }
            TmuxPaneError::Unanswered => unanswered(),
            TmuxPaneError::Input(error) => input_error(error),
            other => ToolError::new(other.kind().into(), other.to_string(), hint),
        }
    }
}

impl PaneAccess for TmuxAccess<'_> {
    type Mux = TmuxPanes;
    const BACKEND: Backend = Backend::Tmux;

    fn server_name(&self) -> &str {
        TmuxAccess::server_name(self)
    }

    fn budget(&self) -> CallBudget<'_> {
        TmuxAccess::budget(self)
    }

    async fn pane(&self, target: &str) -> Result<Scoped<TmuxPanes>, ToolError> {
        let target = self.target(target).await?;
        let pane = self.pane_of(&target).await?;
        Ok(self.scoped(pane, list_hint(&target)))
    }

    async fn exact_pane(
        &self,
        target: &str,
        instead: &str,
    ) -> Result<Scoped<TmuxPanes>, ToolError> {
        let pane = pane_only(&self.target(target).await?, instead)?;
        let pane = self.resolve(&Target::Pane(pane)).await?.pane_id;
        Ok(self.scoped(pane, PANES_HINT))
    }

    /// Resolving a target asks tmux, which may stall; the engine's own time limit for a
    /// command can be far longer than the wait.
    async fn pane_by(
        &self,
        target: &str,
        deadline: Instant,
    ) -> Result<Scoped<TmuxPanes>, ToolError> {
        by_deadline(self, deadline, PaneAccess::pane(self, target)).await
    }

    async fn may_kill(
        &self,
        gateway: &McpServer,
        pane: &Scoped<TmuxPanes>,
    ) -> Result<(), ToolError> {
        gateway.refuse_self_kill(self, Kill::Pane(pane.pane)).await
    }

    /// With `created_by_you` as the ownership table says.
    fn answered(
        &self,
        pane: &Scoped<TmuxPanes>,
        row: PaneRecord,
    ) -> Result<AnsweredPane, ToolError> {
        match PaneRow::from(row).for_caller(self) {
            Some(row) => Ok(AnsweredPane::Tmux(row.info)),
            None => Err(not_found(&Target::Pane(pane.pane))),
        }
    }

    /// A session target names its current window; the window is located in the session the
    /// target was resolved through.
    async fn window(
        &self,
        target: &str,
        named: WindowNamed<'_>,
    ) -> Result<ScopedWindow<TmuxPanes>, ToolError> {
        let target = self.target(target).await?;
        let window = match named {
            WindowNamed::Window(tool) => Some(window_only(&target, tool)?),
            WindowNamed::Session(_) if matches!(target, Target::Session(_)) => None,
            WindowNamed::Session(tool) => {
                return Err(ToolError::invalid_arguments(
                    format!(
                        "{tool} with step or index takes a session, not the {} {target}",
                        target.kind()
                    ),
                    "pass the session's name or id ($N), or pass only a window id",
                ));
            }
        };
        let resolved = self.resolve(&target).await?;
        Ok(ScopedWindow {
            mux: self.panes(),
            window: LocatedWindow {
                window: window.unwrap_or(resolved.window_id),
                session: resolved.session_id,
            },
            session: resolved.session_id.to_string(),
        })
    }

    async fn may_kill_window(
        &self,
        gateway: &McpServer,
        window: &ScopedWindow<TmuxPanes>,
    ) -> Result<(), ToolError> {
        let kill = Kill::Window(window.window.window);
        gateway.refuse_self_kill(self, kill).await
    }

    /// A window of a session the caller may not see reads as not found.
    fn answered_window(
        &self,
        _: &ScopedWindow<TmuxPanes>,
        row: Window,
    ) -> Result<AnsweredWindow, ToolError> {
        if self.can_see_window(&row) {
            Ok(AnsweredWindow::Tmux(row))
        } else {
            Err(not_found(&Target::Window(row.id)))
        }
    }

    /// As every window tool words tmux's refusals; a change tmux did not answer for is the
    /// gateway's fault, not the caller's.
    fn window_error(&self, error: TmuxPaneError) -> ToolError {
        self.tmux_error(WINDOWS_HINT, error, || {
            ToolError::new(
                ToolErrorKind::Internal,
                "tmux did not answer for every command",
                "call list_windows to check the window's state",
            )
        })
    }

    /// A row cursor of the pane's output stream, for `capture_since` and `wait_for_text`.
    fn output_position(&self, _: &Scoped<TmuxPanes>, mark: SinceCursor, typed: &str) -> String {
        OutputPosition::new(mark, typed).encode()
    }

    /// As [`TmuxAccess::pane_error`].
    fn error(&self, pane: &Scoped<TmuxPanes>, error: TmuxPaneError) -> ToolError {
        self.pane_error(pane.pane, pane.hint, error)
    }

    /// Input tmux cannot carry (a text its command line cannot quote).
    fn check_input(&self, pane: &Scoped<TmuxPanes>, input: &[InputPiece]) -> Result<(), ToolError> {
        input_plan(pane.pane, input)
            .map(drop)
            .map_err(|error| self.pane_error(pane.pane, pane.hint, error))
    }

    async fn run_command(
        &self,
        pane: &Scoped<TmuxPanes>,
        request: RunRequest,
        budget: &WaitBudget,
        cancel: &CancellationToken,
    ) -> Result<RunCommandOutput, ToolError> {
        command_run::on_tmux(self, pane.pane, request, budget, cancel).await
    }

    async fn pane_state(
        &self,
        gateway: &McpServer,
        pane: &Scoped<TmuxPanes>,
    ) -> Result<PaneStateOutput, ToolError> {
        pane_state::on_tmux(gateway, self, pane.pane).await
    }

    async fn wait_for_text(
        &self,
        pane: &Scoped<TmuxPanes>,
        wait: TextWait,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<TextWaitEnd, ToolError> {
        text_wait::on_tmux(self, pane.pane, wait, deadline, cancel).await
    }

    /// One write for the whole batch.
    async fn deliver_batch(
        &self,
        ops: Vec<BatchInput<TmuxPanes>>,
        stop: bool,
        deadline: Instant,
    ) -> Result<DeliveredBatch, ToolError> {
        input_batch::on_tmux(self, ops, stop, deadline).await
    }
}

impl PaneAccess for ZellijAccess<'_> {
    type Mux = ZellijPanes;
    const BACKEND: Backend = Backend::Zellij;

    fn server_name(&self) -> &str {
        ZellijAccess::server_name(self)
    }

    fn budget(&self) -> CallBudget<'_> {
        ZellijAccess::budget(self)
    }

    /// `terminal_N` in the server's default session, or `SESSION:terminal_N`.
    async fn pane(&self, target: &str) -> Result<Scoped<ZellijPanes>, ToolError> {
        let (session, pane) = self.pane_target(target)?;
        Ok(Scoped {
            mux: self.panes(&session),
            pane,
            session: Some(session.to_string()),
            hint: PANES_HINT,
        })
    }

    /// A Zellij target always names a pane.
    async fn exact_pane(&self, target: &str, _: &str) -> Result<Scoped<ZellijPanes>, ToolError> {
        PaneAccess::pane(self, target).await
    }

    /// A Zellij target is read without asking Zellij: nothing to wait for.
    async fn pane_by(&self, target: &str, _: Instant) -> Result<Scoped<ZellijPanes>, ToolError> {
        PaneAccess::pane(self, target).await
    }

    /// The gateway knows its own pane through tmux only ([`super::self_guard`]): nothing to
    /// refuse here.
    async fn may_kill(&self, _: &McpServer, _: &Scoped<ZellijPanes>) -> Result<(), ToolError> {
        Ok(())
    }

    /// A tab id `N` in the server's default session, or `SESSION:N`.
    async fn window(
        &self,
        target: &str,
        _: WindowNamed<'_>,
    ) -> Result<ScopedWindow<ZellijPanes>, ToolError> {
        let (session, tab) = self.tab_target(target)?;
        Ok(ScopedWindow {
            mux: self.panes(&session),
            window: tab,
            session: session.to_string(),
        })
    }

    /// As for a pane ([`PaneAccess::may_kill`]): nothing to refuse.
    async fn may_kill_window(
        &self,
        _: &McpServer,
        _: &ScopedWindow<ZellijPanes>,
    ) -> Result<(), ToolError> {
        Ok(())
    }

    /// The tab's row and its session (Zellij ids count per session).
    fn answered_window(
        &self,
        window: &ScopedWindow<ZellijPanes>,
        row: TabRow,
    ) -> Result<AnsweredWindow, ToolError> {
        Ok(AnsweredWindow::Zellij {
            session: window.session.clone(),
            row: row.into(),
        })
    }

    fn window_error(&self, error: ZellijError) -> ToolError {
        ZellijAccess::error(self, error)
    }

    /// The row and the session it is in (Zellij ids count per session).
    fn answered(&self, pane: &Scoped<ZellijPanes>, row: Pane) -> Result<AnsweredPane, ToolError> {
        Ok(AnsweredPane::Zellij {
            session: pane.mux.session().to_string(),
            row: row.into(),
        })
    }

    /// A mark of the pane's screen, for `wait_for_text`'s `since`.
    fn output_position(&self, pane: &Scoped<ZellijPanes>, mark: ScreenMark, typed: &str) -> String {
        let session = pane.mux.session().as_str();
        let pane_id = pane.pane.to_string();
        ZellijPosition::new(self.server_name(), session, &pane_id, mark, typed).encode()
    }

    fn error(&self, _: &Scoped<ZellijPanes>, error: ZellijError) -> ToolError {
        ZellijAccess::error(self, error)
    }

    /// Keys Zellij lacks, and text that is not UTF-8.
    fn check_input(&self, _: &Scoped<ZellijPanes>, input: &[InputPiece]) -> Result<(), ToolError> {
        input_steps(input).map(drop).map_err(zellij_input_refusal)
    }

    async fn run_command(
        &self,
        pane: &Scoped<ZellijPanes>,
        request: RunRequest,
        budget: &WaitBudget,
        cancel: &CancellationToken,
    ) -> Result<RunCommandOutput, ToolError> {
        command_run::on_zellij(self, pane, request, budget, cancel).await
    }

    async fn pane_state(
        &self,
        _: &McpServer,
        pane: &Scoped<ZellijPanes>,
    ) -> Result<PaneStateOutput, ToolError> {
        pane_state::on_zellij(self, pane).await
    }

    async fn wait_for_text(
        &self,
        pane: &Scoped<ZellijPanes>,
        wait: TextWait,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<TextWaitEnd, ToolError> {
        text_wait::on_zellij(self, pane, wait, deadline, cancel).await
    }

    /// One operation after the other: Zellij takes no write for several panes.
    async fn deliver_batch(
        &self,
        ops: Vec<BatchInput<ZellijPanes>>,
        stop: bool,
        deadline: Instant,
    ) -> Result<DeliveredBatch, ToolError> {
        input_batch::on_zellij(self, ops, stop, deadline).await
    }
}
