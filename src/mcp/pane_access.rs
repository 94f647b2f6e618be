//! What a tool body written once for both backends needs from the server a call names:
//! [`PaneAccess`], implemented by the tmux and the Zellij access, which hands out a pane the
//! caller may act on together with the backend's [`Multiplexer`] that acts on it ([`Scoped`]).
//!
//! The caller's grants are checked here, before any act: a target the caller may not see reads
//! like a missing one. What the act does is the backend's ([`Multiplexer`]); what the answer
//! says is the tool's ([`super::shared_tool::MuxTool`]).

use std::future::Future;

use muxgate_mux::error::BackendError;
use muxgate_mux::multiplexer::Multiplexer;
use muxgate_tmux::EngineError;
use muxgate_tmux::ops::pane_row::PaneRecord;
use muxgate_tmux::typed::panes::{TmuxPaneError, TmuxPanes};
use muxgate_tmux::wire::target::Target;
use muxgate_zellij::listing::Pane;
use muxgate_zellij::panes::ZellijPanes;

use super::McpServer;
use super::access::{PANES_HINT, TmuxAccess, engine_error, list_hint, not_found, pane_only};
use super::backend::Row;
use super::budget::CallBudget;
use super::error::ToolError;
use super::pane_ops::{PaneInfo, PaneRow};
use super::self_guard::Kill;
use super::tools::zellij_objects::ZellijPaneInfo;
use super::zellij_access::ZellijAccess;

/// A pane as the tools that change one answer it: the backend's row, shaped for the caller.
pub(crate) type AnsweredPane = Row<PaneInfo, ZellijPaneInfo>;

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

/// One call's access to the server it names, whichever backend serves it.
pub(crate) trait PaneAccess: Send + Sync {
    /// The backend's pane operations.
    type Mux: Multiplexer;

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

    /// A failed act on `pane`, as an error for the model.
    fn error(
        &self,
        pane: &Scoped<Self::Mux>,
        error: <Self::Mux as Multiplexer>::Error,
    ) -> ToolError;
}

impl TmuxAccess<'_> {
    fn scoped(&self, pane: muxgate_tmux::PaneId, hint: &'static str) -> Scoped<TmuxPanes> {
        Scoped {
            mux: TmuxPanes::new(self.server.clone(), self.caller.clone()),
            pane,
            session: None,
            hint,
        }
    }
}

impl PaneAccess for TmuxAccess<'_> {
    type Mux = TmuxPanes;

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

    /// Worded as every tmux tool words the engine's failures; a command tmux refused reads as
    /// any refusal for the pane, one it did not answer as the pane not found.
    fn error(&self, pane: &Scoped<TmuxPanes>, error: TmuxPaneError) -> ToolError {
        let server = TmuxAccess::server_name(self);
        match error {
            TmuxPaneError::Engine(error) => engine_error(server, error, pane.hint),
            TmuxPaneError::Refused(message) => {
                engine_error(server, EngineError::Command(message), pane.hint)
            }
            TmuxPaneError::Unanswered => not_found(&Target::Pane(pane.pane)),
            other => ToolError::new(other.kind().into(), other.to_string(), pane.hint),
        }
    }
}

impl PaneAccess for ZellijAccess<'_> {
    type Mux = ZellijPanes;

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

    /// The gateway knows its own pane through tmux only ([`super::self_guard`]): nothing to
    /// refuse here.
    async fn may_kill(&self, _: &McpServer, _: &Scoped<ZellijPanes>) -> Result<(), ToolError> {
        Ok(())
    }

    /// The row and the session it is in (Zellij ids count per session).
    fn answered(&self, pane: &Scoped<ZellijPanes>, row: Pane) -> Result<AnsweredPane, ToolError> {
        Ok(AnsweredPane::Zellij {
            session: pane.mux.session().to_string(),
            row: row.into(),
        })
    }

    fn error(
        &self,
        _: &Scoped<ZellijPanes>,
        error: muxgate_zellij::error::ZellijError,
    ) -> ToolError {
        ZellijAccess::error(self, error)
    }
}
