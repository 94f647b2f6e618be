//! `run_command`: type a command into a shell pane and return its output and exit status, one
//! body for both backends. Here: the arguments, their checks and the call; whether the pane is
//! ready and how each backend runs the command is [`crate::mcp::command_run`].

use std::time::Duration;

use muxgate_mux::shell::Shell;
use muxgate_mux::shell_run::RunRequest;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::command_run::RunCommandOutput;
use crate::mcp::error::ToolError;
use crate::mcp::pane_access::PaneAccess;
use crate::mcp::shared_tool::{MuxTool, Reply};

/// `run_command`'s timeout when the client gives none.
pub(crate) const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(30);
/// Output lines kept when the client gives no `max_lines`.
pub(crate) const DEFAULT_MAX_LINES: u32 = 500;
/// Most output lines a client may ask for.
pub(crate) const MAX_MAX_LINES: u32 = 10_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunCommandInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Shell pane `%N`; a window or session: its active pane. Zellij: `[SESSION:]terminal_N`.
    pub target: String,
    /// The command as typed (multi-line ok; no tabs or control characters); at most 16 KiB.
    pub command: String,
    /// Seconds to wait (default 30, capped by your max_wait_seconds); then it keeps running.
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Most lines returned, the last kept (default 500, max 10000).
    #[serde(default)]
    pub max_lines: Option<u32>,
    /// The shell if undetectable (e.g. via ssh); skips the idle-at-prompt check.
    #[serde(default)]
    pub shell: Option<Shell>,
}

#[tool_router(router = run_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "run_command",
        description = "Run a shell command in a pane and return its output and exit status.\n\n\
            Needs a shell idle at its prompt; the command is typed there visibly and `output` is \
            only what it printed. Under bash/zsh/sh it runs in a subshell: `cd`, variables and \
            `exit` do not persist (use send_keys). On timeout: `timed_out: true`, output so far; \
            it keeps running (read on: get_command_output; stop: send_keys C-c).",
        annotations(
            title = "Run a shell command",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn run_command(
        &self,
        Extension(call): Extension<CallContext>,
        cancel: CancellationToken,
        Parameters(input): Parameters<RunCommandInput>,
    ) -> Result<Json<RunCommandOutput>, ToolError> {
        let max_lines = input.max_lines.unwrap_or(DEFAULT_MAX_LINES);
        if !(1..=MAX_MAX_LINES).contains(&max_lines) {
            return Err(ToolError::invalid_arguments(
                format!("max_lines must be between 1 and {MAX_MAX_LINES}, got {max_lines}"),
                "pass a smaller max_lines, or read more with capture_since",
            ));
        }
        self.serve(
            &call,
            RunCommand {
                input,
                max_lines,
                cancel,
            },
        )
        .await
        .map(Json)
    }
}

/// `run_command`'s call: its input, its output cap (checked) and the client's cancellation.
struct RunCommand {
    input: RunCommandInput,
    max_lines: u32,
    cancel: CancellationToken,
}

impl MuxTool for RunCommand {
    type Answer = RunCommandOutput;

    fn server(&self) -> Option<&str> {
        self.input.server.as_deref()
    }

    async fn act<A: PaneAccess>(self, gateway: &McpServer, access: A) -> Reply<Self> {
        let budget = access
            .budget()
            .wait(self.input.timeout, DEFAULT_RUN_TIMEOUT)?;
        // Finding the pane ends by the run's deadline too, should tmux stall.
        let pane = access.pane_by(&self.input.target, budget.deadline).await?;
        let request = RunRequest {
            command: self.input.command,
            max_lines: self.max_lines as usize,
            shell: self.input.shell,
        };
        let run = access.run_command(&pane, request, &budget, &self.cancel);
        gateway.state().until_shutdown(run).await
    }
}
