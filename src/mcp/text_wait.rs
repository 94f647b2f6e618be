//! A wait for text in a pane's new output, whichever backend serves it: what the wait asks
//! ([`TextWait`]), how it ended ([`TextWaitEnd`]), and each backend's way to follow the pane
//! until then, which [`super::pane_access::PaneAccess::wait_for_text`] picks.
//!
//! On tmux ([`on_tmux`]) the wait subscribes to the pane's output stream and sleeps until tmux
//! sends output: while the pane is quiet the gateway sends tmux nothing and uses no CPU. Each
//! wake-up takes every line completed since the last one (a flood costs one check per batch,
//! not per byte). The pane's bytes become visible lines once for all its waits
//! ([`muxgate_tmux::output::shared_lines`]; escape sequences removed, carriage returns
//! applied), and each wait checks stop patterns first, then success patterns, against its new
//! complete lines and the line still being written (prompts have no newline).
//!
//! Only output that arrives after the wait began counts: text already on the screen matches
//! only with `include_screen` (the visible screen, read once after subscribing, is matched
//! first), or when the wait is given `since` (an input tool's `output_position`): then the rows
//! printed since that position are matched first, and the echo of the typed input is taken out
//! of the lines before matching ([`muxgate_mux::echo`]). When output was lost (tmux dropped some
//! under flow control, or the gateway fell behind), the pane's visible screen is captured once
//! and matched, since the lost part may have held the text; that capture may include lines
//! older than the wait.
//!
//! On Zellij ([`on_zellij`]), which streams no output, each screen Zellij renders is examined
//! for lines new since the wait began (or since the screen mark `since` carries).

use std::sync::Arc;

use muxgate_mux::echo::EchoFilter;
use muxgate_mux::lines::tail_of;
use muxgate_mux::multiplexer::CaptureRange;
use muxgate_mux::screen_mark::ScreenMark;
use muxgate_mux::text_match::{HitKind, WaitMatcher};
use muxgate_tmux::follow::text::{Decision, Followed, RowsSince, TextWatch, follow};
use muxgate_tmux::{LineReader, OutputSubscription, PaneId, StreamEnd};
use muxgate_zellij::backend::NewLinesEnd;
use muxgate_zellij::panes::ZellijPanes;
use schemars::JsonSchema;
use serde::Serialize;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::access::{PANES_HINT, TmuxAccess};
use super::error::{ToolError, ToolErrorKind};
use super::position::{OutputPosition, ZellijPosition};
use super::scoped::Scoped;
use super::tools::since::{SinceRequest, capture_since};
use super::tools::watch::{
    by_deadline, cancelled, missing_pane, read_settled_state, read_state, subscribe,
};
use super::zellij_access::ZellijAccess;

/// What a wait for text asks, whichever backend serves it.
#[derive(Debug)]
pub(crate) struct TextWait {
    /// The patterns that end it, and whether any new output does.
    pub matcher: WaitMatcher,
    /// Whether the visible screen is matched first (`include_screen`).
    pub include_screen: bool,
    /// `since` as the client gave it (an `output_position`), which the backend reads.
    pub since: Option<String>,
    /// Text typed into the pane just before (by the same batch), whose echo does not count.
    pub echo: Vec<String>,
    /// tmux: a subscription to the pane taken earlier (at the start of a batch), from which
    /// output counts as new; Zellij streams none.
    pub subscription: Option<OutputSubscription>,
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WaitOutcome {
    /// A pattern matched (`matched_line`, `matched_pattern`).
    Matched,
    /// `patterns` was null and new output appeared (`matched_line` is its first line).
    AnyOutput,
    /// A stop pattern matched (`matched_line`, `matched_pattern`).
    Stopped,
    /// The timeout passed while the pane showed a full-screen program (alternate screen),
    /// where text is not matched line by line; read it with capture_pane.
    AlternateScreen,
    /// The timeout passed without a match.
    Timeout,
    /// The pane's program exited or the pane was closed (`pane_exit_status` when known).
    PaneExited,
}

/// How a wait for text ended: what the answer tells beyond the pane and the time taken.
#[derive(Debug, Clone)]
pub(crate) struct TextWaitEnd {
    pub outcome: WaitOutcome,
    /// The line that matched (or, for `any_output`, the first new line).
    pub matched_line: Option<String>,
    /// The pattern that matched, as given.
    pub matched_pattern: Option<String>,
    /// The last lines of new output seen, oldest first.
    pub tail: Vec<String>,
    /// Whether the pane printed anything during the wait.
    pub saw_new_output: bool,
    /// Whether the pane was on the alternate screen when the wait ended.
    pub alternate_screen: bool,
    /// Output was lost (flood) and the visible screen was matched once instead.
    pub resynced: bool,
    /// For `pane_exited`: the program's exit status, when the backend knows it.
    pub exit_status: Option<i32>,
}

async fn rows_since(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    since: &OutputPosition,
) -> Result<RowsSince, ToolError> {
    if since.cursor.pane_id() != pane {
        return Err(ToolError::invalid_arguments(
            format!(
                "since: it was made for {}, not {pane}",
                since.cursor.pane_id()
            ),
            "pass the output_position of input typed into this pane, or omit since",
        ));
    }
    let request = SinceRequest {
        target: Some(pane.to_string()),
        cursor: Some(since.cursor.encode()),
        max_lines: CATCH_UP_ROWS,
    };
    let read = capture_since(tmux, &request).await.map_err(|mut e| {
        e.message = format!("since: {}", e.message);
        e
    })?;
    let lines = if read.line_count == 0 {
        Vec::new()
    } else {
        read.lines.split('\n').map(Arc::from).collect()
    };
    Ok(RowsSince {
        lines,
        partial: Some(read.partial_line).filter(|p| !p.is_empty()),
        missed: read.lines_missed,
    })
}

/// Most rows read back from a `since` position (the newest are kept).
const CATCH_UP_ROWS: usize = 2000;

/// Waits for text in a tmux pane until `deadline`; the caller holds the wait budget.
pub(crate) async fn on_tmux(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    wait: TextWait,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<TextWaitEnd, ToolError> {
    let since = wait
        .since
        .as_deref()
        .map(|text| tmux_since(tmux, text))
        .transpose()?;
    let typed: Vec<String> = since
        .iter()
        .flat_map(|p| p.typed.iter().cloned())
        .chain(wait.echo)
        .collect();
    // Subscribe before reading the state, so that no switch of screen or exit falls between.
    let subscription = match wait.subscription {
        Some(subscription) if subscription.pane() == pane => subscription,
        _ => subscribe(tmux, pane, deadline).await?,
    };
    let mut reader = LineReader::new(subscription);
    let state = by_deadline(tmux, deadline, read_state(tmux, pane)).await?;
    let mut watch = TextWatch::new(wait.matcher, EchoFilter::new(&typed));
    let end = if state.dead {
        // Dead before the wait began: tmux records how the program ended after the dead flag.
        let status = match state.dead_status {
            Some(status) => Some(status),
            None => {
                by_deadline(tmux, deadline, read_settled_state(tmux, pane))
                    .await?
                    .dead_status
            }
        };
        let mut ended = WaitEnd::outcome(WaitOutcome::PaneExited);
        ended.exit_status = status;
        ended
    } else {
        let caught_up = match &since {
            _ if state.alternate_on => {
                // The stream only reports switches; start from what the pane shows now.
                reader.assume_alternate_screen().await;
                watch.assume_alternate_screen();
                None
            }
            Some(since) => since_hit(tmux, pane, since, &typed, &mut watch, deadline).await?,
            None => None,
        };
        let before = match caught_up {
            Some(decision) => Some(decision),
            None if wait.include_screen => screen_hit(tmux, pane, &watch, deadline).await?,
            None => None,
        };
        match before {
            Some(decision) => WaitEnd::decided(decision),
            None => {
                let screen = || visible_lines(tmux, pane);
                let followed = follow(&mut reader, &mut watch, deadline, cancel, screen).await?;
                WaitEnd::followed(tmux.server_name(), pane, followed)?
            }
        }
    };
    Ok(end.finish(&watch))
}

/// A `since` given to a tmux wait: an `output_position` (or a `capture_since` cursor) made on
/// this server.
fn tmux_since(tmux: &TmuxAccess<'_>, text: &str) -> Result<OutputPosition, ToolError> {
    let position = OutputPosition::decode(text).map_err(|e| {
        ToolError::invalid_arguments(
            format!("since: {e}"),
            "pass output_position exactly as send_keys or paste_text returned it",
        )
    })?;
    if position.cursor.server != tmux.server_name() {
        return Err(ToolError::invalid_arguments(
            "since: it was made on another server",
            "pass since with the server it came from, or omit it",
        ));
    }
    Ok(position)
}

/// How a wait ended: its outcome, the decision that ended it (if one did) and the exit status
/// of a pane that exited.
struct WaitEnd {
    outcome: WaitOutcome,
    decision: Option<Decision>,
    exit_status: Option<i32>,
}

impl WaitEnd {
    fn outcome(outcome: WaitOutcome) -> Self {
        Self {
            outcome,
            decision: None,
            exit_status: None,
        }
    }

    fn decided(decision: Decision) -> Self {
        let outcome = match &decision {
            Decision::Hit(hit) if hit.kind == HitKind::Stop => WaitOutcome::Stopped,
            Decision::Hit(_) => WaitOutcome::Matched,
            Decision::AnyOutput(_) => WaitOutcome::AnyOutput,
        };
        Self {
            outcome,
            decision: Some(decision),
            exit_status: None,
        }
    }

    /// How a wait that followed the pane's output ended; an error when the client cancelled
    /// or the server or its connection went away.
    fn followed(server: &str, pane: PaneId, followed: Followed) -> Result<Self, ToolError> {
        Ok(match followed {
            Followed::Decided(decision) => Self::decided(decision),
            Followed::Timeout => Self::outcome(WaitOutcome::Timeout),
            Followed::AlternateScreen => Self::outcome(WaitOutcome::AlternateScreen),
            Followed::Cancelled => return Err(cancelled()),
            Followed::Ended(end) => {
                let mut ended = Self::outcome(WaitOutcome::PaneExited);
                ended.exit_status = stream_end(server, pane, end)?;
                ended
            }
        })
    }

    /// The end as the answer tells it, with what `watch` saw.
    fn finish(self, watch: &TextWatch) -> TextWaitEnd {
        let (matched_line, matched_pattern) = match self.decision {
            Some(Decision::Hit(hit)) => {
                let pattern = watch.matcher().source(&hit).to_owned();
                (Some(hit.line), Some(pattern))
            }
            Some(Decision::AnyOutput(line)) => (Some(line), None),
            None => (None, None),
        };
        TextWaitEnd {
            outcome: self.outcome,
            matched_line,
            matched_pattern,
            tail: watch.tail(),
            saw_new_output: watch.saw_output(),
            alternate_screen: watch.alternate_screen(),
            resynced: watch.resynced(),
            exit_status: self.exit_status,
        }
    }
}

/// With `since`: the rows printed between that position and the subscription. The stream may
/// hold some of them again, which can only repeat a match; each source has its own echo
/// filter, since the echo may be in either.
async fn since_hit(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    since: &OutputPosition,
    typed: &[String],
    watch: &mut TextWatch,
    deadline: Instant,
) -> Result<Option<Decision>, ToolError> {
    let rows = by_deadline(tmux, deadline, rows_since(tmux, pane, since)).await?;
    Ok(watch.catch_up(&rows, EchoFilter::new(typed)))
}

/// With `include_screen`: a match in what the pane shows now. Read after subscribing: what
/// the screen lacks, the stream has.
async fn screen_hit(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    watch: &TextWatch,
    deadline: Instant,
) -> Result<Option<Decision>, ToolError> {
    let screen = by_deadline(tmux, deadline, visible_lines(tmux, pane)).await?;
    Ok(watch
        .matcher()
        .check(screen.iter().map(String::as_str))
        .map(Decision::Hit))
}

/// What the end of a pane's stream means for a wait: the pane's exit status (the pane is
/// gone or dead), or an error when the server or the connection went away.
pub(crate) fn stream_end(
    server: &str,
    pane: PaneId,
    end: StreamEnd,
) -> Result<Option<i32>, ToolError> {
    match end {
        StreamEnd::PaneExited { status } => Ok(status),
        StreamEnd::PaneClosed | StreamEnd::SessionClosed => Ok(None),
        StreamEnd::ServerGone => Err(ToolError::new(
            ToolErrorKind::Unavailable,
            format!("tmux server {server:?} went away while waiting on {pane}"),
            "check with list_sessions whether the server is running again",
        )),
        StreamEnd::ConnectionClosed(reason) => Err(ToolError::new(
            ToolErrorKind::Unavailable,
            format!("the output connection for {pane} closed: {reason}"),
            "retry the wait",
        )),
    }
}

/// The visible screen of `pane`, wrapped lines joined.
async fn visible_lines(tmux: &TmuxAccess<'_>, pane: PaneId) -> Result<Vec<String>, ToolError> {
    let range = CaptureRange {
        join_wrapped: true,
        ..CaptureRange::visible()
    };
    let rows = tmux.pane_reads().capture(pane, &range).await.map_err(|e| {
        match tmux.error(e, PANES_HINT) {
            e if e.kind == ToolErrorKind::NotFound => missing_pane(pane),
            e => e,
        }
    })?;
    Ok(rows
        .iter()
        .map(|r| String::from_utf8_lossy(r).trim_end().to_owned())
        .collect())
}
/// Waits for text in a Zellij pane until `deadline`, or until the client cancels; the caller
/// holds the wait budget. Zellij streams screens, not output, so "new output" is what each
/// screen shows below where the screen stood when the wait began, at `since` (a `send_keys`
/// position) or, with `include_screen`, on a blank screen; see [`muxgate_mux::screen_mark`].
pub(crate) async fn on_zellij(
    z: &ZellijAccess<'_>,
    pane: &Scoped<ZellijPanes>,
    wait: TextWait,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<TextWaitEnd, ToolError> {
    let session = pane.mux.session();
    let since = wait
        .since
        .as_deref()
        .map(|text| {
            zellij_since(
                text,
                z.server_name(),
                session.as_str(),
                &pane.pane.to_string(),
            )
        })
        .transpose()?;
    let typed = since.as_ref().map(|p| p.typed.clone()).unwrap_or_default();
    let whole_screen = ScreenMark::of(&[]);
    let mark = if wait.include_screen {
        Some(&whole_screen)
    } else {
        since.as_ref().map(|p| &p.mark)
    };
    let check = |new: &[String]| decide(&wait.matcher, &typed, new);
    let waited = z
        .backend
        .wait_for_new_lines(session, pane.pane, mark, deadline, check);
    let waited = tokio::select! {
        () = cancel.cancelled() => return Err(cancelled()),
        waited = waited => waited.map_err(|e| z.error(e))?,
    };
    let (outcome, hit) = match waited.end {
        NewLinesEnd::Found((outcome, hit)) => (outcome, Some(hit)),
        NewLinesEnd::TimedOut => (WaitOutcome::Timeout, None),
        NewLinesEnd::PaneClosed => (WaitOutcome::PaneExited, None),
    };
    let (matched_line, matched_pattern) = match hit {
        Some((line, pattern)) => (Some(line), pattern),
        None => (None, None),
    };
    Ok(TextWaitEnd {
        outcome,
        matched_line,
        matched_pattern,
        saw_new_output: !waited.lines.is_empty(),
        tail: tail_of(waited.lines),
        alternate_screen: false,
        resynced: false,
        exit_status: None,
    })
}

/// A `since` given to a Zellij wait, checked to be a position of this very pane.
fn zellij_since(
    text: &str,
    server: &str,
    session: &str,
    pane: &str,
) -> Result<ZellijPosition, ToolError> {
    let position = ZellijPosition::decode(text).map_err(|e| {
        ToolError::invalid_arguments(
            format!("since: {e}"),
            "pass output_position exactly as send_keys returned it for this pane",
        )
    })?;
    if (
        position.server.as_str(),
        position.session.as_str(),
        position.pane.as_str(),
    ) != (server, session, pane)
    {
        return Err(ToolError::invalid_arguments(
            format!(
                "since: it was made for {}:{} on server {:?}",
                position.session, position.pane, position.server
            ),
            "pass the output_position of input typed into this pane, or omit since",
        ));
    }
    Ok(position)
}

/// What a screen's new lines decide for a Zellij text wait: the outcome and the line (with the
/// pattern) that decided it. The echo of `typed` input is taken out first, as on tmux.
fn decide(
    matcher: &WaitMatcher,
    typed: &[String],
    new: &[String],
) -> Option<(WaitOutcome, (String, Option<String>))> {
    let mut echo = EchoFilter::new(typed);
    // The last line may still be written: filtering it must not use up the echo.
    let last = new.len().saturating_sub(1);
    let lines: Vec<String> = new
        .iter()
        .enumerate()
        .map(|(i, line)| echo.strip(line, i < last))
        .collect();
    if let Some(hit) = matcher.check(lines.iter().map(String::as_str)) {
        let outcome = if hit.kind == HitKind::Stop {
            WaitOutcome::Stopped
        } else {
            WaitOutcome::Matched
        };
        let pattern = matcher.source(&hit).to_owned();
        return Some((outcome, (hit.line, Some(pattern))));
    }
    let first = lines.into_iter().find(|l| !l.trim().is_empty())?;
    matcher
        .any_output()
        .then_some((WaitOutcome::AnyOutput, (first, None)))
}
