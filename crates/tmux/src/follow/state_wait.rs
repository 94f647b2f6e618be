//! Watching panes for `wait_for_state`, as one caller ([`TmuxStateWaits::watch`]): a pane's
//! kept output stream, its settled state and the command record the wait counts from, made
//! into the [`Watched`] that [`crate::follow::state::follow`] follows.
//!
//! The record a wait counts from is the ledger's newest when the wait begins; a cursor of an
//! earlier wait ([`CommandSeen`]) names another: the records after it are news, and every
//! record of a recording begun since (the one the cursor named lapsed). Callers get a
//! [`WatchError`] that says what happened, not what to tell anyone.

use muxgate_mux::text_match::Pattern;
use tokio::time::Instant;

use crate::follow::state::Watched;
use crate::typed::op_error::PaneOpError;
use crate::typed::pane_state::TmuxPaneStates;
use crate::{Caller, EngineError, PaneId, TmuxServer};

/// The newest command record an earlier wait saw on a pane, as its cursor tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSeen {
    /// The recording it was in: when it began, in Unix milliseconds
    /// ([`crate::output::PaneStream::since_unix_ms`]).
    pub recording: u64,
    /// The record's id in that recording (`0` before any).
    pub id: u64,
    /// Whether it was still running then.
    pub running: bool,
}

/// Why a pane could not be watched.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// Its output stream could not be kept.
    #[error("keeping the pane's output stream: {0}")]
    Keep(EngineError),
    /// Its state could not be read, or the pane is missing.
    #[error("reading the pane's state: {0}")]
    State(PaneOpError),
}

/// State waits on one server's panes, as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxStateWaits {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxStateWaits {
    /// State waits on `server`'s panes, as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// Starts watching `pane`: its output stream (kept until `deadline`, matched against
    /// `pattern` for a text condition), its settled state and the record the wait counts
    /// from (after `seen`, when an earlier wait's cursor names one).
    pub async fn watch(
        &self,
        pane: PaneId,
        pattern: Option<Pattern>,
        seen: Option<CommandSeen>,
        deadline: Instant,
    ) -> Result<Watched, WatchError> {
        let stream = self
            .server
            .keep(&self.caller, pane, deadline)
            .await
            .map_err(WatchError::Keep)?;
        let state = TmuxPaneStates::new(self.server.clone(), self.caller.clone())
            .read_settled(pane)
            .await
            .map_err(WatchError::State)?;
        let baseline = match seen {
            // The same recording: records after the one seen are news.
            Some(seen) if seen.recording == stream.since_unix_ms() => Some((seen.id, seen.running)),
            // A recording started since (the last one lapsed): every record of it is news.
            Some(_) => Some((0, false)),
            None => stream
                .with_ledger(|ledger| ledger.records().next_back().map(|r| (r.id, !r.finished()))),
        };
        Ok(Watched::new(pane, stream, pattern, state, baseline))
    }
}
