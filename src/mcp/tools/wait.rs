//! Tools that wait: `wait_for_text` (text in a pane's new output), one body for both
//! backends; how each backend follows a pane until the text shows is
//! [`crate::mcp::text_wait`].

use std::time::Duration;

use muxgate_mux::text_match::{self, PatternOptions, WaitMatcher};
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::watch::elapsed_ms;
use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::pane_access::PaneAccess;
use crate::mcp::shared_tool::{MuxTool, Reply};
use crate::mcp::text_wait::{TextWait, WaitOutcome};
use muxgate_tmux::OutputSubscription;

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

impl WaitForTextInput {
    /// The wait this call asks for, with what a batch adds (see [`TextWait`]).
    pub(crate) fn text_wait(
        &self,
        echo: Vec<String>,
        subscription: Option<OutputSubscription>,
    ) -> Result<TextWait, ToolError> {
        let options = PatternOptions {
            regex: self.regex,
            match_case: self.match_case,
        };
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
            Some(list) => Some(text_match::compile("patterns", list, options).map_err(bad)?),
        };
        if self.include_screen && patterns.is_none() {
            return Err(ToolError::invalid_arguments(
                "include_screen needs patterns: any text on the screen would match",
                "pass patterns, or leave include_screen false to wait for any new output",
            ));
        }
        let stop = text_match::compile("stop", &self.stop, options).map_err(bad)?;
        Ok(TextWait {
            matcher: WaitMatcher::new(patterns, stop),
            include_screen: self.include_screen,
            since: self.since.clone(),
            echo,
            subscription,
        })
    }
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

#[tool_router(router = wait_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "wait_for_text",
        description = "Wait until text appears in a pane's new output, without polling.\n\n\
            Only output after the call (or `since`) counts. Matches each line, the one \
            being written too (prompts match). \
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

impl MuxTool for WaitForText {
    type Answer = WaitForTextOutput;

    fn server(&self) -> Option<&str> {
        self.input.server.as_deref()
    }

    async fn act<A: PaneAccess>(self, gateway: &McpServer, access: A) -> Reply<Self> {
        gateway
            .wait_for_text_on(&access, &self.cancel, &self.input, Vec::new(), None)
            .await
    }
}

impl McpServer {
    /// `wait_for_text` on the server `access` opened. `echo` is text a batch typed into the
    /// pane just before, whose echo does not count; `subscription` (tmux) one the batch took
    /// on the pane at its start, from which output counts as new.
    pub(crate) async fn wait_for_text_on<A: PaneAccess>(
        &self,
        access: &A,
        cancel: &CancellationToken,
        input: &WaitForTextInput,
        echo: Vec<String>,
        subscription: Option<OutputSubscription>,
    ) -> Result<WaitForTextOutput, ToolError> {
        let wait = input.text_wait(echo, subscription)?;
        let budget = access.budget().wait(input.timeout, DEFAULT_TEXT_TIMEOUT)?;
        let pane = access.pane_by(&input.target, budget.deadline).await?;
        let waited = access.wait_for_text(&pane, wait, budget.deadline, cancel);
        let end = self.state().until_shutdown(waited).await?;
        Ok(WaitForTextOutput {
            pane_id: pane.pane.to_string(),
            outcome: end.outcome,
            found: end.outcome == WaitOutcome::Matched,
            matched_line: end.matched_line,
            matched_pattern: end.matched_pattern,
            tail: end.tail,
            saw_new_output: end.saw_new_output,
            alternate_screen: end.alternate_screen,
            resynced: end.resynced,
            pane_exit_status: end.exit_status,
            elapsed_ms: elapsed_ms(budget.started),
            effective_timeout: budget.effective_secs(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::error::ToolErrorKind;

    fn input(args: serde_json::Value) -> WaitForTextInput {
        serde_json::from_value(args).unwrap()
    }

    fn refusal(args: serde_json::Value) -> ToolError {
        input(args).text_wait(Vec::new(), None).unwrap_err()
    }

    #[test]
    fn bad_pattern_lists_are_invalid_arguments() {
        let err = refusal(serde_json::json!({"target": "%0", "patterns": []}));
        assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
        assert!(err.message.contains("patterns is an empty list"));
        let screen_without_patterns = refusal(serde_json::json!({
            "target": "%0", "patterns": null, "include_screen": true
        }));
        assert!(
            screen_without_patterns
                .message
                .contains("include_screen needs patterns")
        );
        let bad_regex = refusal(serde_json::json!({
            "target": "%0", "patterns": ["("], "regex": true
        }));
        assert!(bad_regex.message.contains("pattern 0"));
    }
}
