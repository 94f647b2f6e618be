//! Zellij terminal I/O tools: batches of text, keys and pastes, and commands run with their
//! output and exit status.
//!
//! Everything targets a pane by id and never moves anyone's focus. Output comes from stdout
//! (no temp files), woken by Zellij's pane events (no polling, no sleeps).

use std::path::PathBuf;
use std::time::Duration;

use muxgate_mux::multiplexer::CapturedText;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::watch::until_client_cancels;
use super::zellij_pane::PaneSpot;
use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::zellij_access::ZellijAccess;
use muxgate_zellij::backend::{CommandResult, RunOptions};

/// Default `max_lines` of reads and command output (as the tmux tools).
const DEFAULT_MAX_LINES: usize = 500;
/// Default timeout of the run tools.
const DEFAULT_RUN: Duration = Duration::from_secs(60);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ZellijRunCommandInput {
    #[serde(flatten)]
    pub spot: PaneSpot,
    /// A `/bin/sh` command line, e.g. `cargo test 2>&1 | tail -5`.
    pub command: String,
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

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ZellijRunOutput {
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
    let shaped = CapturedText::tail(&lines, max_lines);
    let (text, dropped_bytes) = z.budget().cap_output(&shaped.text);
    ZellijRunOutput {
        server: z.server_name().to_owned(),
        session: session.to_owned(),
        pane_id: result.pane.to_string(),
        exit_status: result.exit_status,
        truncated: shaped.truncated() || dropped_bytes > 0 || result.truncated,
        output: text,
        lines: shaped.lines,
        total_lines: lines.len(),
        pane_closed: result.pane_closed,
        elapsed_ms: u64::try_from(result.elapsed.as_millis()).unwrap_or(u64::MAX),
    }
}

impl McpServer {
    /// Runs a wait until it ends, the client cancels, or the gateway shuts down.
    async fn zellij_wait<T>(
        &self,
        cancel: &CancellationToken,
        work: impl Future<Output = Result<T, ToolError>>,
    ) -> Result<T, ToolError> {
        self.state()
            .until_shutdown(until_client_cancels(cancel, work))
            .await
    }
}

#[tool_router(router = zellij_io_tools, vis = "pub(crate)")]
impl McpServer {
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
        let (z, session, tab) = input.spot.open(self, &call).await?;
        let budget = z.budget().wait(input.timeout, DEFAULT_RUN)?;
        let opts = RunOptions {
            tab,
            cwd: input.spot.cwd.map(PathBuf::from),
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
}
