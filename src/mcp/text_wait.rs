//! A wait for text in a pane's new output, whichever backend serves it: what the wait asks
//! ([`TextWait`]), how it ended ([`TextWaitEnd`]), and each backend's way to follow the pane
//! until then, which [`super::pane_access::PaneAccess::wait_for_text`] picks.
//!
//! On tmux ([`on_tmux`]) the wait is the tmux crate's
//! ([`muxgate_tmux::follow::text_wait`]); this file reads `since` and words what went wrong.
//! The wait subscribes to the pane's output stream and sleeps until tmux sends output: while the pane is quiet the gateway sends tmux nothing and uses no CPU. Each
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

use muxgate_mux::echo::EchoFilter;
use muxgate_mux::lines::tail_of;
use muxgate_mux::screen_mark::ScreenMark;
use muxgate_mux::text_match::{HitKind, WaitMatcher};
use muxgate_tmux::follow::text::Decision;
use muxgate_tmux::follow::text_wait::{
    TextWaitEnd as TmuxEnd, TextWaitError, TextWaitRequest, TextWaited, TmuxTextWaits,
};
use muxgate_tmux::{EngineError, OutputSubscription, PaneId, StreamEnd};
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
use super::tools::since::since_error;
use super::tools::watch::{cancelled, missing_pane, state_error, until_client_cancels};
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

/// Waits for text in a tmux pane until `deadline`; the caller holds the wait budget. The wait
/// itself is [`TmuxTextWaits::wait`]; here: `since` read and checked, and what went wrong
/// worded for the model.
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
    let (since, typed) = match since {
        Some(position) => (Some(position.cursor), position.typed),
        None => (None, Vec::new()),
    };
    let request = TextWaitRequest {
        matcher: wait.matcher,
        typed: typed.into_iter().chain(wait.echo).collect(),
        since,
        include_screen: wait.include_screen,
        subscription: wait.subscription,
    };
    let waited = TmuxTextWaits::new(tmux.server.clone(), tmux.caller.clone())
        .wait(pane, request, deadline, cancel)
        .await
        .map_err(|e| text_wait_error(tmux, pane, e))?;
    finish(tmux.server_name(), pane, waited)
}

/// A tmux text wait's end as the answer tells it; an error when the server or the output
/// connection went away.
fn finish(server: &str, pane: PaneId, waited: TextWaited) -> Result<TextWaitEnd, ToolError> {
    let TextWaited { end, watch } = waited;
    let (outcome, decision, exit_status) = match end {
        TmuxEnd::Decided(decision) => {
            let outcome = match &decision {
                Decision::Hit(hit) if hit.kind == HitKind::Stop => WaitOutcome::Stopped,
                Decision::Hit(_) => WaitOutcome::Matched,
                Decision::AnyOutput(_) => WaitOutcome::AnyOutput,
            };
            (outcome, Some(decision), None)
        }
        TmuxEnd::Timeout => (WaitOutcome::Timeout, None, None),
        TmuxEnd::AlternateScreen => (WaitOutcome::AlternateScreen, None, None),
        TmuxEnd::PaneExited(status) => (WaitOutcome::PaneExited, None, status),
        TmuxEnd::Ended(end) => (
            WaitOutcome::PaneExited,
            None,
            stream_end(server, pane, end)?,
        ),
    };
    let (matched_line, matched_pattern) = match decision {
        Some(Decision::Hit(hit)) => {
            let pattern = watch.matcher().source(&hit).to_owned();
            (Some(hit.line), Some(pattern))
        }
        Some(Decision::AnyOutput(line)) => (Some(line), None),
        None => (None, None),
    };
    Ok(TextWaitEnd {
        outcome,
        matched_line,
        matched_pattern,
        tail: watch.tail(),
        saw_new_output: watch.saw_output(),
        alternate_screen: watch.alternate_screen(),
        resynced: watch.resynced(),
        exit_status,
    })
}

/// Why a tmux text wait ended without an answer, as an error for the model.
fn text_wait_error(tmux: &TmuxAccess<'_>, pane: PaneId, error: TextWaitError) -> ToolError {
    let server = tmux.server_name();
    match error {
        TextWaitError::Subscribe(e) => tmux.error(e, PANES_HINT),
        TextWaitError::State(e) => state_error(tmux, e),
        TextWaitError::SinceOtherPane { made_for } => ToolError::invalid_arguments(
            format!("since: it was made for {made_for}, not {pane}"),
            "pass the output_position of input typed into this pane, or omit since",
        ),
        TextWaitError::Since(e) => {
            let mut error = since_error(tmux, pane, e);
            error.message = format!("since: {}", error.message);
            error
        }
        TextWaitError::Screen(e) => match tmux.error(e, PANES_HINT) {
            e if e.kind == ToolErrorKind::NotFound => missing_pane(pane),
            e => e,
        },
        TextWaitError::TimedOut { after } => {
            let timeout = EngineError::Timeout {
                server: server.to_owned(),
                after,
            };
            tmux.error(timeout, "")
        }
        TextWaitError::Cancelled => cancelled(),
    }
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
        StreamEnd::Lost(reason) => Err(ToolError::new(
            ToolErrorKind::Unavailable,
            format!(
                "the link to tmux server {server:?} was lost while waiting on {pane}: {reason}"
            ),
            "wait again with the same since once list_servers shows the host's link up: \
             rows printed meanwhile are read from the pane's history",
        )),
    }
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
    let waited = async {
        z.backend
            .wait_for_new_lines(session, pane.pane, mark, deadline, check)
            .await
            .map_err(|e| z.error(e))
    };
    let waited = until_client_cancels(cancel, waited).await?;
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
