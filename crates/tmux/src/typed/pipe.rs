//! A pane's output piped to a file, as one caller: `pipe-pane` appending to a
//! [`PipePath`], or stopping.
//!
//! This module owns the command line; callers get the engine's own [`EngineError`].

use crate::ops::pipe::{PipePath, pipe_pane_command};
use crate::{Caller, EngineError, PaneId, TmuxServer};

/// Piping panes' output on one server, as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxPipes {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxPipes {
    /// Piping `server`'s panes, as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// Starts appending `pane`'s output to `path` (replacing any pipe the pane had), or with
    /// `None` stops piping it.
    pub async fn pipe(&self, pane: PaneId, path: Option<&PipePath>) -> Result<(), EngineError> {
        let command = pipe_pane_command(pane, path)?;
        self.server.run(&self.caller, command).await.map(|_| ())
    }
}
