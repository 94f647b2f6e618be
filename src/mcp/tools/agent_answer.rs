//! `answer_agent`: answer what an agent asks (a permission dialog, a question) with a few
//! keys, bound to the screen the caller read.
//!
//! The path, one stage after another:
//! 1. **key**: a call with an `idempotency_key` claims it ([`crate::mux::idempotency`]); a
//!    retry gets the first call's answer and types nothing.
//! 2. **screen**: the pane's visible screen is read and its digest compared with the one the
//!    caller names (`list_agents` gives it): a screen that changed since is not answered
//!    (`screen_changed`, with the digest and last line of the screen now), so keys meant for
//!    one dialog never land in another, or in the agent's input box.
//! 3. **keys**: typed at once after the read, in one write.
//! 4. **evidence**: the pane's reaction, then its screen and the agent's state again: the
//!    answer was taken when the screen changed.

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::watch::{KEEP_WAIT, cancelled, keep};
use crate::mcp::McpServer;
use crate::mcp::access::{PANES_HINT, TmuxAccess};
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::once::{self, Once};
use crate::mcp::pane_ops;
use crate::mcp::pane_state::{self, ScreenRead};
use muxgate_mux::multiplexer::CaptureRange;
use muxgate_tmux::PaneId;
use muxgate_tmux::follow::Cancelled;
use muxgate_tmux::follow::reaction::{Timing, react};
use muxgate_tmux::ops::input::InputPlan;
use muxgate_tmux::ops::keys::KeyName;

/// Most keys and texts one answer holds.
const MAX_KEYS: usize = 8;
/// Longest text in an answer, in characters: an answer, not a prompt (send_prompt).
const MAX_TEXT_CHARS: usize = 200;
/// How long the agent may take to react, the quiet that ends its reaction, and how long
/// output must flow to count as busy.
const REACTION: Timing = Timing {
    within: std::time::Duration::from_millis(1500),
    quiet: std::time::Duration::from_millis(150),
    busy_after: std::time::Duration::from_millis(600),
};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnswerAgentInput {
    #[serde(default)]
    pub server: Option<String>,
    /// The agent's pane `%N`.
    pub target: String,
    /// The screen_digest of the screen you read (list_agents).
    pub screen_digest: String,
    /// Key names pressed (Enter, Escape, Down) or text typed, in order, e.g. ["1"] or ["y", "Enter"].
    pub keys: Vec<String>,
    /// A retry with the same key types nothing and gets the first answer.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct AnswerAgentOutput {
    pub pane_id: String,
    /// answered; screen_changed (nothing typed); not_taken (typed, the screen did not change).
    pub outcome: &'static str,
    /// The agent's state after the answer.
    pub state: Option<&'static str>,
    /// The screen now: pass it to answer again.
    pub screen_digest: String,
    pub last_line: Option<String>,
    /// A retry: the first call's answer, nothing typed.
    pub replayed: bool,
}

/// One piece of an answer: a key pressed or text typed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    Key(KeyName),
    Text(String),
}

/// Reads `keys` as an answer: key names tmux knows are pressed, other strings typed; a few,
/// short, without control characters.
pub(crate) fn answer_pieces(keys: &[String]) -> Result<Vec<Piece>, ToolError> {
    if keys.is_empty() || keys.len() > MAX_KEYS {
        return Err(ToolError::invalid_arguments(
            format!("keys must hold 1 to {MAX_KEYS} entries"),
            "pass the dialog's answer, e.g. [\"1\"] or [\"y\", \"Enter\"]",
        ));
    }
    keys.iter()
        .map(|item| match KeyName::parse(item) {
            Ok(key) => Ok(Piece::Key(key)),
            Err(_) if item.is_empty()
                || item.chars().count() > MAX_TEXT_CHARS
                || item.chars().any(char::is_control) =>
            {
                Err(ToolError::invalid_arguments(
                    format!(
                        "each text in keys must be 1 to {MAX_TEXT_CHARS} characters without control characters"
                    ),
                    "pass a short answer; a longer task goes by send_prompt",
                ))
            }
            Err(_) => Ok(Piece::Text(item.clone())),
        })
        .collect()
}

/// An answer typed as `text` (literally: `C-c` is three characters), then `key` if any.
pub(crate) fn typed_then(text: &str, key: Option<KeyName>) -> Result<Vec<Piece>, ToolError> {
    if text.chars().count() > MAX_TEXT_CHARS || text.chars().any(char::is_control) {
        return Err(ToolError::invalid_arguments(
            format!(
                "the text must be at most {MAX_TEXT_CHARS} characters without control characters"
            ),
            "type a short answer",
        ));
    }
    let text = (!text.is_empty()).then(|| Piece::Text(text.to_owned()));
    let pieces: Vec<Piece> = text.into_iter().chain(key.map(Piece::Key)).collect();
    if pieces.is_empty() {
        return Err(ToolError::invalid_arguments(
            "nothing to type",
            "type an answer or press a key",
        ));
    }
    Ok(pieces)
}

/// The lines of `pane`'s visible screen, as text.
pub(crate) async fn visible_lines(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
) -> Result<Vec<String>, ToolError> {
    let lines = tmux
        .pane_reads()
        .capture(pane, &CaptureRange::visible())
        .await
        .map_err(|e| tmux.error(e, PANES_HINT))?;
    Ok(lines
        .iter()
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .collect())
}

/// The visible screen of `pane`: its digest and last line with anything on it.
async fn read_screen(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
) -> Result<(String, Option<String>), ToolError> {
    let read = ScreenRead::of(&visible_lines(tmux, pane).await?);
    Ok((read.digest.unwrap_or_default(), read.last_line))
}

impl McpServer {
    /// Checks the screen, types the answer and reads what followed.
    pub(crate) async fn answer(
        &self,
        tmux: &TmuxAccess<'_>,
        pane: PaneId,
        seen: &str,
        pieces: Vec<Piece>,
        cancel: &CancellationToken,
    ) -> Result<AnswerAgentOutput, ToolError> {
        let stream = keep(tmux, pane, Instant::now() + KEEP_WAIT).await?;
        let mut output = stream.subscribe();
        let (digest, last_line) = read_screen(tmux, pane).await?;
        if digest != seen {
            return Ok(AnswerAgentOutput {
                pane_id: pane.to_string(),
                outcome: "screen_changed",
                state: None,
                screen_digest: digest,
                last_line,
                replayed: false,
            });
        }
        let mut plan = InputPlan::new(pane);
        for piece in pieces {
            match piece {
                Piece::Key(key) => plan.keys(&[key]),
                // Checked text (no NUL, valid UTF-8) never needs a transient buffer.
                Piece::Text(text) => plan.literal(text.as_bytes(), String::new),
            }
            .map_err(pane_ops::input_error)?;
        }
        output.take().ok();
        pane_ops::deliver(tmux, plan).await?;
        react(&mut output, REACTION, cancel)
            .await
            .map_err(|Cancelled| cancelled())?;
        let (state, screen) = pane_state::with_screen(self, tmux, pane).await?;
        let (digest, last_line) = match screen.digest {
            Some(digest) => (digest, screen.last_line),
            None => read_screen(tmux, pane).await?,
        };
        Ok(AnswerAgentOutput {
            pane_id: pane.to_string(),
            outcome: if digest == seen {
                "not_taken"
            } else {
                "answered"
            },
            state: state.agent_status.map(|status| status.state),
            screen_digest: digest,
            last_line,
            replayed: false,
        })
    }
}

#[tool_router(router = agent_answer_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "answer_agent",
        description = "Answer an agent's dialog or question with a few keys, only if its \
            screen is still the one you read (screen_digest from list_agents).\n\n\
            `outcome`: answered, screen_changed (nothing typed) or not_taken. With an \
            idempotency_key a retry types nothing.",
        annotations(
            title = "Answer an agent",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn answer_agent(
        &self,
        Extension(call): Extension<CallContext>,
        cancel: CancellationToken,
        Parameters(input): Parameters<AnswerAgentInput>,
    ) -> Result<Json<AnswerAgentOutput>, ToolError> {
        let pieces = answer_pieces(&input.keys)?;
        once::check(input.idempotency_key.as_deref())?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let pane = tmux.pane_named(&input.target).await?;
        let request = once::request_digest((
            tmux.server_name(),
            pane.0,
            &input.screen_digest,
            &input.keys,
        ));
        let keys = &self.state().answers;
        let claim = match once::claim(keys, call.sub(), input.idempotency_key.as_deref(), request)?
        {
            Once::Act(claim) => claim,
            Once::Replay(answer) => {
                return Ok(Json(AnswerAgentOutput {
                    replayed: true,
                    ..answer
                }));
            }
        };
        let work = self.answer(&tmux, pane, &input.screen_digest, pieces, &cancel);
        let answer = self.state().until_shutdown(work).await?;
        // Nothing typed, nothing kept: a retry after reading the screen again may act.
        if let Some(guard) = claim
            && answer.outcome != "screen_changed"
        {
            guard.finish(answer.clone());
        }
        Ok(Json(answer))
    }
}
