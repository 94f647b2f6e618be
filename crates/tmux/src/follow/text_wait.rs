//! Waiting for text in a pane's new output, as one caller ([`TmuxTextWaits::wait`]): the order
//! of the steps around [`crate::follow::text::follow`].
//!
//! The wait subscribes to the pane's output before it reads the pane's state, so that no
//! switch of screen or exit falls between; a pane already dead ends it at once, with the exit
//! status tmux records a moment after the dead flag. Text already there counts only when the
//! request says so: the rows printed since an input's cursor (`since`, read with
//! [`crate::typed::since`] and matched with the echo of the typed input taken out), then, with
//! `include_screen`, the visible screen. Then the wait sleeps on the stream. Every step that
//! asks tmux ends by the wait's deadline. Callers get the watch that saw it all (the matched
//! line, the tail) and a [`TextWaitError`] that says what happened, not what to tell anyone.

use std::time::Duration;

use muxgate_mux::echo::EchoFilter;
use muxgate_mux::multiplexer::CaptureRange;
use muxgate_mux::text_match::WaitMatcher;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::follow::text::{Decision, Followed, RowsSince, TextWatch, follow};
use crate::ops::capture::shape_capture;
use crate::ops::since::SinceCursor;
use crate::typed::op_error::PaneOpError;
use crate::typed::pane_reads::TmuxPaneReads;
use crate::typed::pane_state::TmuxPaneStates;
use crate::typed::since::{SinceError, TmuxSince};
use crate::{Caller, EngineError, LineReader, OutputSubscription, PaneId, StreamEnd, TmuxServer};

/// Most rows read back from a `since` cursor (the newest are kept).
const CATCH_UP_ROWS: usize = 2000;

/// What a text wait on a tmux pane asks.
pub struct TextWaitRequest {
    /// The patterns that end it, and whether any new output does.
    pub matcher: WaitMatcher,
    /// Lines typed into the pane just before, whose echo does not count.
    pub typed: Vec<String>,
    /// Where the wait starts when earlier than now: the cursor an input answered.
    pub since: Option<SinceCursor>,
    /// Whether the visible screen is matched first.
    pub include_screen: bool,
    /// A subscription to the pane taken earlier (at the start of a batch), from which output
    /// counts as new.
    pub subscription: Option<OutputSubscription>,
}

/// How a text wait ended, when no error ended it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextWaitEnd {
    /// A line decided it.
    Decided(Decision),
    /// The deadline passed.
    Timeout,
    /// The deadline passed while the pane showed its alternate screen.
    AlternateScreen,
    /// The pane's program had exited before the wait began; the exit status when tmux knows
    /// it.
    PaneExited(Option<i32>),
    /// The pane's stream ended during the wait: its program exited, the pane or its session
    /// closed, or the server or the output connection went away.
    Ended(StreamEnd),
}

/// A text wait that ended: how, and the watch that followed the pane (what matched, the
/// tail, whether output was seen or lost).
pub struct TextWaited {
    /// How it ended.
    pub end: TextWaitEnd,
    /// What it saw.
    pub watch: TextWatch,
}

/// Why a text wait ended without an answer.
#[derive(Debug, thiserror::Error)]
pub enum TextWaitError {
    /// Subscribing to the pane's output failed.
    #[error("subscribing to the pane's output: {0}")]
    Subscribe(EngineError),
    /// Reading the pane's state failed, or the pane is missing.
    #[error("reading the pane's state: {0}")]
    State(PaneOpError),
    /// The `since` cursor was made for another pane.
    #[error("the cursor was made for {made_for}")]
    SinceOtherPane {
        /// The pane it was made for.
        made_for: PaneId,
    },
    /// Reading the rows since the cursor failed.
    #[error("reading the rows since the cursor: {0}")]
    Since(SinceError),
    /// Reading the visible screen failed.
    #[error("reading the screen: {0}")]
    Screen(EngineError),
    /// A step that asks tmux did not finish by the wait's deadline.
    #[error("tmux did not answer within {after:?}")]
    TimedOut {
        /// How long the step had run.
        after: Duration,
    },
    /// The caller cancelled.
    #[error("cancelled")]
    Cancelled,
}

/// Text waits on one server's panes, as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxTextWaits {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxTextWaits {
    /// Text waits on `server`'s panes, as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// Waits until a line of `pane`'s new output matches `request`, the pane exits, `deadline`
    /// passes or `cancel` fires. The caller checked who may wait on the pane.
    pub async fn wait(
        &self,
        pane: PaneId,
        request: TextWaitRequest,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<TextWaited, TextWaitError> {
        let subscription = match request.subscription {
            Some(subscription) if subscription.pane() == pane => subscription,
            _ => self
                .server
                .subscribe(&self.caller, pane, deadline)
                .await
                .map_err(TextWaitError::Subscribe)?,
        };
        let mut reader = LineReader::new(subscription);
        let states = TmuxPaneStates::new(self.server.clone(), self.caller.clone());
        let state = by_deadline(deadline, states.read(pane), TextWaitError::State).await?;
        let mut watch = TextWatch::new(request.matcher, EchoFilter::new(&request.typed));
        if state.dead {
            let status = match state.dead_status {
                Some(status) => Some(status),
                None => {
                    by_deadline(deadline, states.read_settled(pane), TextWaitError::State)
                        .await?
                        .dead_status
                }
            };
            let end = TextWaitEnd::PaneExited(status);
            return Ok(TextWaited { end, watch });
        }
        let caught_up = match &request.since {
            _ if state.alternate_on => {
                // The stream only reports switches; start from what the pane shows now.
                reader.assume_alternate_screen().await;
                watch.assume_alternate_screen();
                None
            }
            Some(cursor) => {
                let rows = by_deadline(deadline, self.rows_since(pane, cursor), |e| e).await?;
                watch.catch_up(&rows, EchoFilter::new(&request.typed))
            }
            None => None,
        };
        let before = match caught_up {
            Some(decision) => Some(decision),
            None if request.include_screen => {
                let screen = by_deadline(deadline, self.screen(pane), |e| e).await?;
                watch
                    .matcher()
                    .check(screen.iter().map(String::as_str))
                    .map(Decision::Hit)
            }
            None => None,
        };
        let end = match before {
            Some(decision) => TextWaitEnd::Decided(decision),
            None => {
                let screen = || self.screen(pane);
                match follow(&mut reader, &mut watch, deadline, cancel, screen).await? {
                    Followed::Decided(decision) => TextWaitEnd::Decided(decision),
                    Followed::Timeout => TextWaitEnd::Timeout,
                    Followed::AlternateScreen => TextWaitEnd::AlternateScreen,
                    Followed::Cancelled => return Err(TextWaitError::Cancelled),
                    Followed::Ended(end) => TextWaitEnd::Ended(end),
                }
            }
        };
        Ok(TextWaited { end, watch })
    }

    /// The rows `pane` printed since `cursor`, the newest [`CATCH_UP_ROWS`] kept (behind a
    /// marker line when more were printed).
    async fn rows_since(
        &self,
        pane: PaneId,
        cursor: &SinceCursor,
    ) -> Result<RowsSince, TextWaitError> {
        if cursor.pane_id() != pane {
            return Err(TextWaitError::SinceOtherPane {
                made_for: cursor.pane_id(),
            });
        }
        let read = TmuxSince::new(self.server.clone(), self.caller.clone())
            .rows_since(pane, Some(cursor))
            .await
            .map_err(TextWaitError::Since)?;
        let shaped = shape_capture(&read.rows, CATCH_UP_ROWS, false);
        let lines = if shaped.lines == 0 {
            Vec::new()
        } else {
            shaped.text.split('\n').map(Into::into).collect()
        };
        Ok(RowsSince {
            lines,
            partial: Some(read.partial_line).filter(|p| !p.is_empty()),
            missed: read.lines_missed,
        })
    }

    /// The visible screen of `pane`, wrapped lines joined, line ends trimmed.
    async fn screen(&self, pane: PaneId) -> Result<Vec<String>, TextWaitError> {
        let range = CaptureRange {
            join_wrapped: true,
            ..CaptureRange::visible()
        };
        let rows = TmuxPaneReads::new(self.server.clone(), self.caller.clone())
            .capture(pane, &range)
            .await
            .map_err(TextWaitError::Screen)?;
        Ok(rows
            .iter()
            .map(|r| String::from_utf8_lossy(r).trim_end().to_owned())
            .collect())
    }
}

/// Runs one of a wait's steps that ask tmux, giving up at the wait's own deadline.
async fn by_deadline<T, E>(
    deadline: Instant,
    step: impl Future<Output = Result<T, E>>,
    error: impl FnOnce(E) -> TextWaitError,
) -> Result<T, TextWaitError> {
    let started = Instant::now();
    match tokio::time::timeout_at(deadline, step).await {
        Ok(done) => done.map_err(error),
        Err(_) => Err(TextWaitError::TimedOut {
            after: started.elapsed(),
        }),
    }
}
