//! Tools that wait: `wait_for_text` (text in a pane's new output).
//!
//! `wait_for_text` subscribes to the pane's output stream and sleeps until tmux sends output:
//! while the pane is quiet the gateway sends tmux nothing and uses no CPU. Each wake-up takes
//! every line completed since the last one (a flood costs one check per batch, not per byte).
//! The pane's bytes become visible lines once for all its waits
//! ([`muxgate_tmux::output::shared_lines`]; escape sequences removed, carriage returns applied),
//! and each wait checks stop patterns first, then success patterns, against its new complete
//! lines and the line still being written (prompts have no newline).
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
//! On a Zellij server the same tool runs through [`McpServer::wait_for_zellij_text`].

use std::sync::Arc;
use std::time::Duration;

use muxgate_mux::echo::EchoFilter;
use muxgate_mux::text_match::{self, HitKind, PatternOptions, WaitMatcher};
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::since::{SinceRequest, capture_since};
use super::watch::{by_deadline, cancelled, elapsed_ms, missing_pane, subscribe};
use crate::mcp::McpServer;
use crate::mcp::access::{PANES_HINT, TmuxAccess};
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mcp::position::OutputPosition;
use crate::mcp::shared_tool::{Reply, SharedTool};
use crate::mcp::tools::watch::{read_settled_state, read_state};
use crate::mcp::zellij_access::ZellijAccess;
use muxgate_mux::multiplexer::CaptureRange;
use muxgate_tmux::follow::text::{Decision, Followed, RowsSince, TextWatch, follow};
use muxgate_tmux::{LineReader, OutputSubscription, PaneId, StreamEnd};

/// `wait_for_text`'s timeout when the client gives none.
pub(crate) const DEFAULT_TEXT_TIMEOUT: Duration = Duration::from_secs(8);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitForTextInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane.
    pub target: String,
    /// Text to wait for (any of them); null or absent: any new output ends the wait.
    #[serde(default)]
    pub patterns: Option<Vec<String>>,
    /// Failure markers (e.g. `error`), checked first: a match ends it as `stopped`.
    #[serde(default)]
    pub stop: Vec<String>,
    /// Patterns are regular expressions (Rust syntax), not literal text.
    #[serde(default)]
    pub regex: bool,
    /// Match case exactly.
    #[serde(default)]
    pub match_case: bool,
    /// Seconds to wait (default 8, capped by your max_wait_seconds).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// `output_position` from send_keys/paste_text (or a capture_since `cursor`): output since
    /// then counts (not the typed text's echo).
    #[serde(default)]
    pub since: Option<String>,
    /// Text already on screen counts too.
    #[serde(default)]
    pub include_screen: bool,
}

/// A text wait, whoever asked for it (the tool or a batch operation).
#[derive(Debug, Clone)]
pub(crate) struct TextWaitRequest {
    pub target: String,
    pub patterns: Option<Vec<String>>,
    pub stop: Vec<String>,
    pub options: PatternOptions,
    /// Where the wait starts, when earlier than now.
    pub since: Option<OutputPosition>,
    /// Text typed into the pane just before (by the same batch), whose echo does not count.
    pub echo: Vec<String>,
    /// Whether the visible screen is matched first (`include_screen`).
    pub include_screen: bool,
}

impl TextWaitRequest {
    /// The wait a `wait_for_text` call asks for, starting at `since` and ignoring the echo of
    /// `echo` (on Zellij, both come from a Zellij position instead, so they are none here).
    pub(crate) fn from_input(
        input: WaitForTextInput,
        since: Option<OutputPosition>,
        echo: Vec<String>,
    ) -> Self {
        Self {
            target: input.target,
            patterns: input.patterns,
            stop: input.stop,
            options: PatternOptions {
                regex: input.regex,
                match_case: input.match_case,
            },
            since,
            echo,
            include_screen: input.include_screen,
        }
    }

    /// Every typed line whose echo the wait ignores.
    fn typed(&self) -> Vec<String> {
        let since = self.since.iter().flat_map(|p| p.typed.iter().cloned());
        since.chain(self.echo.iter().cloned()).collect()
    }

    pub(crate) fn matcher(&self) -> Result<WaitMatcher, ToolError> {
        let bad = |e: text_match::PatternError| {
            ToolError::invalid_arguments(e.to_string(), "fix the pattern, or pass regex: false")
        };
        let patterns = match &self.patterns {
            None => None,
            Some(list) if list.is_empty() => {
                return Err(ToolError::invalid_arguments(
                    "patterns is an empty list",
                    "pass at least one pattern, or null to wait for any new output",
                ));
            }
            Some(list) => Some(text_match::compile("patterns", list, self.options).map_err(bad)?),
        };
        if self.include_screen && patterns.is_none() {
            return Err(ToolError::invalid_arguments(
                "include_screen needs patterns: any text on the screen would match",
                "pass patterns, or leave include_screen false to wait for any new output",
            ));
        }
        let stop = text_match::compile("stop", &self.stop, self.options).map_err(bad)?;
        Ok(WaitMatcher::new(patterns, stop))
    }
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

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct WaitForTextOutput {
    pub pane_id: String,
    pub outcome: WaitOutcome,
    /// Whether the wait ended with a pattern match (`matched`).
    pub found: bool,
    /// The line that matched (or, for `any_output`, the first new line).
    pub matched_line: Option<String>,
    /// The pattern that matched, as given.
    pub matched_pattern: Option<String>,
    /// The last lines of new output seen (at most 20 lines / 2000 bytes), oldest first.
    pub tail: Vec<String>,
    /// Whether the pane printed anything during the wait.
    pub saw_new_output: bool,
    /// Whether the pane was on the alternate screen when the wait ended.
    pub alternate_screen: bool,
    /// Output was lost (flood) and the visible screen was matched once instead.
    pub resynced: bool,
    /// For `pane_exited`: the program's exit status, when tmux knows it.
    pub pane_exit_status: Option<i32>,
    pub elapsed_ms: u64,
    /// The timeout applied, in seconds (the request clamped to your `max_wait_seconds`).
    pub effective_timeout: f64,
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

/// Waits for text in a pane until `deadline`. The caller holds the wait budget. With
/// `subscription` (taken earlier on the same pane, e.g. at the start of a batch), output since
/// that subscription counts as new.
pub(crate) async fn wait_for_text(
    tmux: &TmuxAccess<'_>,
    request: &TextWaitRequest,
    deadline: Instant,
    effective_timeout: f64,
    cancel: &CancellationToken,
    subscription: Option<OutputSubscription>,
) -> Result<WaitForTextOutput, ToolError> {
    let started = Instant::now();
    let matcher = request.matcher()?;
    let pane = by_deadline(tmux, deadline, tmux.pane_named(&request.target)).await?;
    // Subscribe before reading the state, so that no switch of screen or exit falls between.
    let subscription = match subscription {
        Some(subscription) if subscription.pane() == pane => subscription,
        _ => subscribe(tmux, pane, deadline).await?,
    };
    let mut reader = LineReader::new(subscription);
    let state = by_deadline(tmux, deadline, read_state(tmux, pane)).await?;
    let mut watch = TextWatch::new(matcher, EchoFilter::new(&request.typed()));
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
        let caught_up = if state.alternate_on {
            // The stream only reports switches; start from what the pane shows now.
            reader.assume_alternate_screen().await;
            watch.assume_alternate_screen();
            None
        } else {
            since_hit(tmux, pane, request, &mut watch, deadline).await?
        };
        let before = match caught_up {
            Some(decision) => Some(decision),
            None => screen_hit(tmux, pane, request, &watch, deadline).await?,
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
    Ok(end.answer(&watch, pane, started, effective_timeout))
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

    fn answer(
        self,
        watch: &TextWatch,
        pane: PaneId,
        started: Instant,
        effective_timeout: f64,
    ) -> WaitForTextOutput {
        let (matched_line, matched_pattern) = match self.decision {
            Some(Decision::Hit(hit)) => {
                let pattern = watch.matcher().source(&hit).to_owned();
                (Some(hit.line), Some(pattern))
            }
            Some(Decision::AnyOutput(line)) => (Some(line), None),
            None => (None, None),
        };
        WaitForTextOutput {
            pane_id: pane.to_string(),
            outcome: self.outcome,
            found: self.outcome == WaitOutcome::Matched,
            matched_line,
            matched_pattern,
            tail: watch.tail(),
            saw_new_output: watch.saw_output(),
            alternate_screen: watch.alternate_screen(),
            resynced: watch.resynced(),
            pane_exit_status: self.exit_status,
            elapsed_ms: elapsed_ms(started),
            effective_timeout,
        }
    }
}

/// With `since`: the rows printed between that position and the subscription. The stream may
/// hold some of them again, which can only repeat a match; each source has its own echo
/// filter, since the echo may be in either.
async fn since_hit(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    request: &TextWaitRequest,
    watch: &mut TextWatch,
    deadline: Instant,
) -> Result<Option<Decision>, ToolError> {
    let Some(since) = &request.since else {
        return Ok(None);
    };
    let rows = by_deadline(tmux, deadline, rows_since(tmux, pane, since)).await?;
    Ok(watch.catch_up(&rows, EchoFilter::new(&request.typed())))
}

/// With `include_screen`: a match in what the pane shows now. Read after subscribing: what
/// the screen lacks, the stream has.
async fn screen_hit(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    request: &TextWaitRequest,
    watch: &TextWatch,
    deadline: Instant,
) -> Result<Option<Decision>, ToolError> {
    if !request.include_screen {
        return Ok(None);
    }
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

#[tool_router(router = wait_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "wait_for_text",
        description = "Wait until text appears in a pane's new output, without polling.\n\n\
            Only output after the call (or `since`) counts. Matches line by line, the line \
            being written included (prompts match). \
            `outcome` says why it ended (alternate_screen: a full-screen program shows, use \
            capture_pane).",
        annotations(
            title = "Wait for text",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn wait_for_text(
        &self,
        Extension(call): Extension<CallContext>,
        cancel: CancellationToken,
        Parameters(input): Parameters<WaitForTextInput>,
    ) -> Result<Json<WaitForTextOutput>, ToolError> {
        self.serve(&call, WaitForText { input, cancel })
            .await
            .map(Json)
    }
}

/// `wait_for_text`'s call: its input and the client's cancellation.
struct WaitForText {
    input: WaitForTextInput,
    cancel: CancellationToken,
}

impl SharedTool for WaitForText {
    type Answer = WaitForTextOutput;

    fn server(&self) -> Option<&str> {
        self.input.server.as_deref()
    }

    async fn on_tmux(self, gateway: &McpServer, tmux: TmuxAccess<'_>) -> Reply<Self> {
        gateway
            .wait_for_text_from(&tmux, &self.cancel, self.input, None, Vec::new())
            .await
    }

    async fn on_zellij(self, gateway: &McpServer, z: ZellijAccess<'_>) -> Reply<Self> {
        gateway
            .wait_for_zellij_text(&z, &self.cancel, self.input)
            .await
    }
}

impl McpServer {
    /// `wait_for_text` on a tmux server, optionally on a subscription taken earlier (see
    /// [`wait_for_text`]).
    pub(crate) async fn wait_for_text_from(
        &self,
        tmux: &TmuxAccess<'_>,
        cancel: &CancellationToken,
        input: WaitForTextInput,
        subscription: Option<OutputSubscription>,
        echo: Vec<String>,
    ) -> Result<WaitForTextOutput, ToolError> {
        let since = input
            .since
            .as_deref()
            .map(|text| {
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
            })
            .transpose()?;
        let budget = tmux.budget().wait(input.timeout, DEFAULT_TEXT_TIMEOUT)?;
        let request = TextWaitRequest::from_input(input, since, echo);
        let work = wait_for_text(
            tmux,
            &request,
            budget.deadline,
            budget.effective_secs(),
            cancel,
            subscription,
        );
        self.state().until_shutdown(work).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_pattern_lists_are_invalid_arguments() {
        let request = TextWaitRequest {
            target: "%0".into(),
            patterns: Some(Vec::new()),
            stop: Vec::new(),
            options: PatternOptions::default(),
            since: None,
            echo: Vec::new(),
            include_screen: false,
        };
        let err = request.matcher().unwrap_err();
        assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
        let screen_without_patterns = TextWaitRequest {
            patterns: None,
            include_screen: true,
            ..request.clone()
        };
        assert!(
            screen_without_patterns
                .matcher()
                .unwrap_err()
                .message
                .contains("include_screen needs patterns")
        );
        let request = TextWaitRequest {
            patterns: Some(vec!["(".into()]),
            options: PatternOptions {
                regex: true,
                match_case: false,
            },
            ..request
        };
        assert!(request.matcher().unwrap_err().message.contains("pattern 0"));
    }
}
