//! Where a client's target is on one tmux server, as one caller: the panes a pane, window or
//! session id covers, with their sessions and windows ([`PaneLocation`]), and the layout of a
//! session a `SESSION:WINDOW[.PANE]` path names ([`SessionLayout`]).
//!
//! The gateway reads these to resolve a target and check the caller may see it before it acts;
//! this module owns the command lines, and callers get the engine's own [`EngineError`] (tmux's
//! "can't find …" is a [`EngineError::Command`]).

use crate::ops::locate::{
    PaneLocation, locate_command, locate_everywhere_command, parse_locations,
};
use crate::wire::target::{Target, TargetPath};
use crate::wire::target_path::{SessionLayout, path_command};
use crate::{Caller, EngineError, TmuxServer};

/// Locating targets on one server, as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxLocator {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxLocator {
    /// Locating targets on `server`, as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// The panes `target` covers: a session's, a window's, or those of the window holding a
    /// pane. For a window, tmux answers in the session most recently active among those holding
    /// it (see [`Self::locate_everywhere`]).
    pub async fn locate(&self, target: &Target) -> Result<Vec<PaneLocation>, EngineError> {
        let rows = self
            .server
            .run(&self.caller, locate_command(target)?)
            .await?;
        Ok(parse_locations(&rows))
    }

    /// Every pane of the server, in every session holding it: for finding a window's own
    /// session when [`Self::locate`] answered in another.
    pub async fn locate_everywhere(&self) -> Result<Vec<PaneLocation>, EngineError> {
        let command = locate_everywhere_command()?;
        let rows = self.server.run(&self.caller, command).await?;
        Ok(parse_locations(&rows))
    }

    /// The windows and panes of the session `path` names; `None` when tmux printed nothing
    /// that reads as one.
    pub async fn layout(&self, path: &TargetPath) -> Result<Option<SessionLayout>, EngineError> {
        let rows = self.server.run(&self.caller, path_command(path)?).await?;
        Ok(SessionLayout::parse(&rows))
    }
}
