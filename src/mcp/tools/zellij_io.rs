//! Zellij terminal I/O tools: batches of text, keys and pastes, waits for text, and commands
//! run with their output and exit status; and the Zellij halves of `capture_pane` and
//! `send_keys`.
//!
//! Everything targets a pane by id and never moves anyone's focus. Typing, keys, reads and
//! waits go through the backend-neutral [`PaneIo`] trait; waits are woken by Zellij's pane
//! events (no polling, no sleeps) and reads come from stdout (no temp files).

use std::path::PathBuf;
use std::time::Duration;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::pane::{CapturePaneInput, CapturePaneOutput};
use super::watch::cancelled;
use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::pane_ops::check_max_lines;
use crate::mcp::zellij_access::{ZellijAccess, parse_pane, parse_tab, parse_target};
use crate::mux::lines::truncation_marker;
use crate::mux::pane_io::{PaneIo, ScreenPattern, ScreenScope};
use crate::mux::tmux::ops::capture::LineBound;
use crate::mux::zellij::backend::{CommandResult, InputStep, RunInPaneOptions, RunOptions};
use crate::mux::zellij::panes::parse_keys;

/// Default `max_lines` of reads and command output (as the tmux tools).
const DEFAULT_MAX_LINES: usize = 500;
/// Default timeout of `zellij_wait_for_text`.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);
/// Default timeout of the run tools.
const DEFAULT_RUN: Duration = Duration::from_secs(60);

#[derive(Debug, Serialize, JsonSchema)]
pub struct ZellijInputOutput {
    pub server: String,
    pub session: String,
    pub pane_id: String,
    /// Steps delivered (1 for single-input tools).
    pub steps: usize,
}

/// One step of a batch: exactly one of `text`, `keys`, `paste`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijBatchStep {
    /// Text typed exactly (`\n` presses Enter).
    #[serde(default)]
    pub text: Option<String>,
    /// Keys pressed in order (Zellij spelling, e.g. `"Ctrl c"`, `"Enter"`).
    #[serde(default)]
    pub keys: Option<Vec<String>>,
    /// Text sent as one bracketed paste (not typed keys).
    #[serde(default)]
    pub paste: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijSendKeysBatchInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// Pane `terminal_N`.
    pub pane: String,
    /// The inputs, delivered in order.
    pub steps: Vec<ZellijBatchStep>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijWaitForTextInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// Pane `terminal_N`.
    pub pane: String,
    /// Text to find in one screen line (case-sensitive substring, or regex with `regex`).
    pub pattern: String,
    /// `pattern` is a regex (Rust syntax).
    #[serde(default)]
    pub regex: bool,
    /// Seconds (default 30, capped by your max_wait_seconds).
    #[serde(default)]
    pub timeout: Option<f64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ZellijWaitForTextOutput {
    pub server: String,
    pub session: String,
    pub pane_id: String,
    /// The first matching line and its index in `screen`.
    pub line: String,
    pub line_index: usize,
    /// The visible lines in which it was found.
    pub screen: Vec<String>,
    pub waited_ms: u64,
    /// The timeout applied, in seconds (after clamping).
    pub effective_timeout: f64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijRunCommandInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// A `/bin/sh` command line, e.g. `cargo test 2>&1 | tail -5`.
    pub command: String,
    /// Tab id (zellij_list_tabs); default: the first tab.
    #[serde(default)]
    pub tab: Option<String>,
    /// Absolute working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Run in a hidden floating pane; false: a tiled pane humans see in the layout.
    #[serde(default = "yes")]
    pub floating: bool,
    /// Keep the pane after the command exits.
    #[serde(default)]
    pub keep_pane: bool,
    /// Seconds (default 60, capped by your max_wait_seconds).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Most lines returned, the last kept (default 500).
    #[serde(default)]
    pub max_lines: Option<usize>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZellijRunInPaneInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Session; omit for the default.
    #[serde(default)]
    pub session: Option<String>,
    /// Pane `terminal_N` running a shell.
    pub pane: String,
    /// One command line for that shell (bash, zsh, sh or fish), without a trailing newline.
    pub command: String,
    /// Seconds (default 60, capped by your max_wait_seconds).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Most lines returned, the last kept (default 500).
    #[serde(default)]
    pub max_lines: Option<usize>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ZellijRunOutput {
    pub server: String,
    pub session: String,
    /// The pane the command ran in.
    pub pane_id: String,
    /// The command's exit status.
    pub exit_status: i32,
    /// Its output only (not the prompt or the typed line), as the terminal showed it.
    pub output: String,
    /// Output lines returned and produced.
    pub lines: usize,
    pub total_lines: usize,
    /// Output was cut (lines beyond `max_lines`, bytes beyond your limit, or lines that had
    /// left the scrollback).
    pub truncated: bool,
    /// The pane was closed afterwards.
    pub pane_closed: bool,
    pub elapsed_ms: u64,
}

/// Lines shaped for an answer: the last `max_lines` behind a marker line, then the caller's
/// byte cap.
struct Shaped {
    text: String,
    /// Lines kept (the marker not counted).
    lines: usize,
    /// Lines cut from the start by `max_lines`.
    truncated_lines: usize,
    /// Bytes cut from the front by the caller's output budget.
    dropped_bytes: usize,
}

impl Shaped {
    fn new(z: &ZellijAccess<'_>, lines: &[String], max_lines: usize) -> Self {
        let keep = max_lines.max(1);
        let cut = lines.len().saturating_sub(keep);
        let mut text = String::new();
        if cut > 0 {
            text.push_str(&truncation_marker(cut));
            text.push('\n');
        }
        text.push_str(&lines[cut..].join("\n"));
        let (text, dropped_bytes) = z.cap_output(&text);
        Self {
            text,
            lines: lines.len() - cut,
            truncated_lines: cut,
            dropped_bytes,
        }
    }

    fn truncated(&self) -> bool {
        self.truncated_lines > 0 || self.dropped_bytes > 0
    }
}

/// What part of a Zellij pane a `capture_pane` call reads: the screen (`start` absent or 0),
/// or the scrollback and the screen (`start: "-"`); `end` is the screen's bottom either way.
fn zellij_scope(input: &CapturePaneInput) -> Result<ScreenScope, ToolError> {
    if input.escape_sequences {
        return Err(ToolError::invalid_arguments(
            "escape_sequences is tmux-only: Zellij reads a pane as plain text",
            "omit escape_sequences for a Zellij pane",
        ));
    }
    if !matches!(input.end.map(|e| e.0), None | Some(LineBound::Edge)) {
        return Err(ToolError::invalid_arguments(
            "a Zellij pane is read to its last line: end must be omitted or \"-\"",
            "omit end, and cut the answer with max_lines",
        ));
    }
    match input.start.map(|s| s.0) {
        None | Some(LineBound::Line(0)) => Ok(ScreenScope::Visible),
        Some(LineBound::Edge) => Ok(ScreenScope::Full),
        Some(LineBound::Line(_)) => Err(ToolError::invalid_arguments(
            "a Zellij pane is read whole: start must be 0 (the screen) or \"-\" (with scrollback)",
            "pass start \"-\" and cut the answer with max_lines",
        )),
    }
}

/// A run's result as the tool returns it.
fn run_output(
    z: &ZellijAccess<'_>,
    session: &str,
    result: CommandResult,
    max_lines: usize,
) -> ZellijRunOutput {
    // The output ends with the newline before the end marker; it is not an extra line.
    let output = result.output.trim_end_matches('\n');
    let lines: Vec<String> = if output.is_empty() {
        Vec::new()
    } else {
        output.split('\n').map(str::to_owned).collect()
    };
    let shaped = Shaped::new(z, &lines, max_lines);
    ZellijRunOutput {
        server: z.server_name().to_owned(),
        session: session.to_owned(),
        pane_id: result.pane.to_string(),
        exit_status: result.exit_status,
        truncated: shaped.truncated() || result.truncated,
        output: shaped.text,
        lines: shaped.lines,
        total_lines: lines.len(),
        pane_closed: result.pane_closed,
        elapsed_ms: u64::try_from(result.elapsed.as_millis()).unwrap_or(u64::MAX),
    }
}

impl McpServer {
    /// `capture_pane` on a Zellij server: the visible screen, or (`start: "-"`) the scrollback
    /// too. Zellij reads whole screens only and always joins wrapped lines, so the tmux-only
    /// range and escape-sequence options are refused rather than ignored.
    pub(crate) async fn capture_zellij_pane(
        &self,
        call: &CallContext,
        input: CapturePaneInput,
    ) -> Result<CapturePaneOutput, ToolError> {
        let z = self.zellij_access(call, input.server.as_deref()).await?;
        let (session, pane) = parse_target(&input.target)?;
        let session = z.session(session)?;
        let scope = zellij_scope(&input)?;
        let max_lines = check_max_lines(input.max_lines)?;
        let lines = z
            .panes(&session)
            .read_screen(&pane, scope)
            .await
            .map_err(|e| z.error(e))?;
        let shaped = Shaped::new(&z, &lines, max_lines);
        Ok(CapturePaneOutput {
            server: z.server_name().to_owned(),
            session: Some(session.to_string()),
            pane_id: pane.to_string(),
            truncated: shaped.truncated(),
            lines: shaped.lines,
            total_lines: lines.len(),
            truncated_lines: shaped.truncated_lines,
            dropped_bytes: shaped.dropped_bytes,
            text: shaped.text,
        })
    }

    /// Input for a Zellij pane from a tool both backends serve (`send_keys`), delivered in
    /// one batch. Returns the server, session and pane it went to.
    pub(crate) async fn send_zellij_input(
        &self,
        call: &CallContext,
        server: Option<&str>,
        target: &str,
        steps: Vec<InputStep>,
    ) -> Result<(String, String, String), ToolError> {
        let z = self.zellij_access(call, server).await?;
        let (session, pane) = parse_target(target)?;
        let session = z.session(session)?;
        z.backend
            .input_batch(&session, pane, steps)
            .await
            .map_err(|e| z.error(e))?;
        Ok((
            z.server_name().to_owned(),
            session.to_string(),
            pane.to_string(),
        ))
    }

    /// Runs a wait until it ends, the client cancels, or the gateway shuts down.
    async fn zellij_wait<T>(
        &self,
        cancel: &CancellationToken,
        work: impl Future<Output = Result<T, ToolError>>,
    ) -> Result<T, ToolError> {
        self.state()
            .until_shutdown(async {
                tokio::select! {
                    () = cancel.cancelled() => Err(cancelled()),
                    result = work => result,
                }
            })
            .await
    }
}

#[tool_router(router = zellij_io_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "zellij_send_keys_batch",
        description = "Send text, keys and pastes to one Zellij terminal pane in one call.\n\n\
            Steps run back to back, all validated first. A failing step stops the batch; earlier \
            ones were delivered.",
        annotations(
            title = "Send input batch to Zellij pane",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn zellij_send_keys_batch(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ZellijSendKeysBatchInput>,
    ) -> Result<Json<ZellijInputOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let pane = parse_pane(&input.pane)?;
        z.limits
            .check_batch_size(call.sub(), input.steps.len())
            .map_err(|e| {
                ToolError::invalid_arguments(e.to_string(), "split the steps over several calls")
            })?;
        let steps = input
            .steps
            .into_iter()
            .enumerate()
            .map(|(i, step)| match (step.text, step.keys, step.paste) {
                (Some(text), None, None) => Ok(InputStep::Text(text)),
                (None, Some(keys), None) => parse_keys(&keys).map(InputStep::Keys).map_err(|e| {
                    ToolError::invalid_arguments(
                        format!("steps[{i}]: {e}"),
                        "use key names like \"Ctrl c\", \"Enter\", \"Esc\", \"F5\"",
                    )
                }),
                (None, None, Some(paste)) => Ok(InputStep::Paste(paste)),
                _ => Err(ToolError::invalid_arguments(
                    format!("steps[{i}] must have exactly one of text, keys, paste"),
                    "split it into one step per kind of input",
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let count = steps.len();
        z.backend
            .input_batch(&session, pane, steps)
            .await
            .map_err(|e| z.error(e))?;
        Ok(Json(ZellijInputOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            pane_id: pane.to_string(),
            steps: count,
        }))
    }

    #[tool(
        name = "zellij_wait_for_text",
        description = "Wait until a line on a Zellij pane's screen matches (woken by pane events, no polling).\n\n\
            Text already on screen matches at once: wait for something new. Returns the line and \
            the screen; error on timeout.",
        annotations(
            title = "Wait for text in Zellij pane",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn zellij_wait_for_text(
        &self,
        Extension(call): Extension<CallContext>,
        cancel: CancellationToken,
        Parameters(input): Parameters<ZellijWaitForTextInput>,
    ) -> Result<Json<ZellijWaitForTextOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let pane = parse_pane(&input.pane)?;
        if input.pattern.is_empty() {
            return Err(ToolError::invalid_arguments(
                "pattern is empty",
                "pass the text to wait for",
            ));
        }
        let pattern = if input.regex {
            regex::RegexBuilder::new(&input.pattern)
                .size_limit(1 << 20)
                .build()
                .map(ScreenPattern::Regex)
                .map_err(|e| {
                    ToolError::invalid_arguments(
                        format!("invalid regex: {e}"),
                        "fix the expression, or pass regex false for a literal",
                    )
                })?
        } else {
            ScreenPattern::Literal(input.pattern)
        };
        let budget = z.wait_budget(input.timeout, DEFAULT_WAIT)?;
        let panes = z.panes(&session);
        let found = self
            .zellij_wait(&cancel, async {
                panes
                    .wait_for_screen(&pane, &pattern, budget.effective)
                    .await
                    .map_err(|e| z.error(e))
            })
            .await?;
        let screen_text = found.screen.join("\n");
        let (capped, dropped) = z.cap_output(&screen_text);
        let screen = if dropped > 0 {
            capped.split('\n').map(str::to_owned).collect()
        } else {
            found.screen
        };
        Ok(Json(ZellijWaitForTextOutput {
            server: z.server_name().to_owned(),
            session: session.to_string(),
            pane_id: pane.to_string(),
            line: found.line,
            line_index: found.line_index,
            screen,
            waited_ms: u64::try_from(budget.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            effective_timeout: budget.effective.as_secs_f64(),
        }))
    }

    #[tool(
        name = "zellij_run_command",
        description = "Run a one-off shell command in a new Zellij pane and return its output and exit status.\n\n\
            The pane floats hidden unless `floating` is false (no view changes) and closes at exit \
            unless `keep_pane`. On timeout the command keeps running; the error names its pane.",
        annotations(
            title = "Run command in Zellij",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn zellij_run_command(
        &self,
        Extension(call): Extension<CallContext>,
        cancel: CancellationToken,
        Parameters(input): Parameters<ZellijRunCommandInput>,
    ) -> Result<Json<ZellijRunOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let tab = input.tab.as_deref().map(parse_tab).transpose()?;
        let budget = z.wait_budget(input.timeout, DEFAULT_RUN)?;
        let opts = RunOptions {
            tab,
            cwd: input.cwd.map(PathBuf::from),
            name: None,
            floating: input.floating,
            keep_pane: input.keep_pane,
            timeout: budget.effective,
        };
        let result = self
            .zellij_wait(&cancel, async {
                z.backend
                    .run_command(&session, &input.command, opts)
                    .await
                    .map_err(|e| z.error(e))
            })
            .await?;
        let max_lines = input.max_lines.unwrap_or(DEFAULT_MAX_LINES);
        Ok(Json(run_output(&z, session.as_str(), result, max_lines)))
    }

    #[tool(
        name = "zellij_run_in_pane",
        description = "Run a command in the interactive shell of an existing Zellij pane and return its output and exit status.\n\n\
            Typed into the shell between markers; returns only its output. Viewers see it run. On \
            timeout it keeps running (interrupt: send_keys [\"C-c\"]).",
        annotations(
            title = "Run command in Zellij pane",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn zellij_run_in_pane(
        &self,
        Extension(call): Extension<CallContext>,
        cancel: CancellationToken,
        Parameters(input): Parameters<ZellijRunInPaneInput>,
    ) -> Result<Json<ZellijRunOutput>, ToolError> {
        let z = self.zellij_access(&call, input.server.as_deref()).await?;
        let session = z.session(input.session.as_deref())?;
        let pane = parse_pane(&input.pane)?;
        let budget = z.wait_budget(input.timeout, DEFAULT_RUN)?;
        let opts = RunInPaneOptions {
            shell: None,
            timeout: budget.effective,
        };
        let result = self
            .zellij_wait(&cancel, async {
                z.backend
                    .run_in_pane(&session, pane, &input.command, opts)
                    .await
                    .map_err(|e| z.error(e))
            })
            .await?;
        let max_lines = input.max_lines.unwrap_or(DEFAULT_MAX_LINES);
        Ok(Json(run_output(&z, session.as_str(), result, max_lines)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_steps_take_exactly_one_kind() {
        let step: ZellijBatchStep =
            serde_json::from_value(serde_json::json!({"keys": ["Ctrl c"]})).unwrap();
        assert!(step.keys.is_some() && step.text.is_none());
        let err =
            serde_json::from_value::<ZellijBatchStep>(serde_json::json!({"txt": "a"})).unwrap_err();
        assert!(err.to_string().contains("unknown field `txt`"), "{err}");
    }
}
