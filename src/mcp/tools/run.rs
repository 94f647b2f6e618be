//! `run_command`: type a command into a shell pane and return its output and exit status.
//!
//! Typing the command and following it until it ends is `muxgate_tmux::follow::run` (between
//! markers, or as the ledger's next record where the shell marks its own commands). No tmux
//! client runs in the pane, and nothing polls: the call subscribes to the pane's output before
//! typing and sleeps until the run ends, the timeout or cancellation. Here: the arguments,
//! whether the pane is ready, and the answer.
//!
//! Before typing, the pane must be a shell waiting at its prompt: its foreground program is a
//! known shell (`#{pane_current_command}`), it is the pane's own process (the terminal's
//! foreground job is the shell, as the server's `Host` tells it, so a command still running
//! from an earlier call is not typed into; a host that cannot tell, such as a workspace's
//! sandbox, skips this check), the pane is not in copy mode, not on the alternate
//! screen, and no other run owns it. A caller who knows better (a shell behind `ssh`, a
//! wrapper) names the shell with `shell`, which skips the detection and the foreground check.

use std::time::Duration;

use muxgate_mux::foreground::Foreground;
use muxgate_mux::lines::excerpt;
use muxgate_mux::shell::Shell;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::watch::{cancelled, elapsed_ms, keep};
use crate::mcp::McpServer;
use crate::mcp::access::{TmuxAccess, engine_error};
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mcp::shared_tool::{Reply, SharedTool};
use crate::mcp::text_wait::stream_end;
use crate::mcp::tools::watch::{foreground_of_state, read_state};
use crate::mcp::zellij_access::ZellijAccess;
use muxgate_tmux::PaneId;
use muxgate_tmux::follow::Cancelled;
use muxgate_tmux::follow::run::{self, RunReader, StartError, Stopped};
use muxgate_tmux::typed::op_error::OpError;
use muxgate_tmux::typed::pane_state::PaneState;

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

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct RunCommandOutput {
    pub pane_id: String,
    /// Zellij: the pane's session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The shell flavour the command was typed for: bash, zsh, sh or fish.
    pub shell: String,
    /// The command's exit status; null when it timed out (or ended unseen).
    pub exit_status: Option<i32>,
    /// The timeout passed; the command is still running in the pane.
    pub timed_out: bool,
    /// The shell started the command (false after a timeout means it never began: the pane
    /// may not be at a prompt).
    pub started: bool,
    /// What the command printed (stdout and stderr as the terminal showed them), escape
    /// sequences removed; not the typed line, not the prompt.
    pub output: String,
    /// Lines were dropped from the start (`max_lines`), bytes cut (your output budget) or
    /// output lost on the way (see the `[... ...]` marker lines).
    pub output_truncated: bool,
    pub truncated_lines: u64,
    pub truncated_bytes: u64,
    /// Some output never reached the gateway (the pane printed faster than it was read); the
    /// place is marked `[... output lost ...]` when it is within the lines returned.
    pub output_lost: bool,
    /// The pane's shell itself ended (e.g. `exit` under fish); `exit_status` is then the
    /// shell's status when tmux knows it.
    pub pane_exited: bool,
    pub elapsed_ms: u64,
    /// The timeout applied, in seconds.
    pub effective_timeout: f64,
}

/// A run, whoever asked for it.
#[derive(Debug, Clone)]
pub(crate) struct RunRequest {
    pub target: String,
    pub command: String,
    pub max_lines: u32,
    pub shell: Option<Shell>,
}

/// Runs a command in a shell pane until `deadline`. The caller holds the wait budget.
pub(crate) async fn run_command(
    tmux: &TmuxAccess<'_>,
    request: &RunRequest,
    deadline: Instant,
    effective_timeout: f64,
    cancel: &CancellationToken,
) -> Result<RunCommandOutput, ToolError> {
    let started = Instant::now();
    let pane = tmux.pane_named(&request.target).await?;
    let Some(_claim) = tmux.server.claims().claim(pane) else {
        return Err(ToolError::new(
            ToolErrorKind::Conflict,
            format!("another run_command is still running in {pane}"),
            "wait for it to finish, or interrupt it with send_keys C-c",
        ));
    };
    // Subscribe before typing: the markers are read from output produced after this. The
    // stream is kept, so the run (and what follows) stays in the pane's command ledger.
    let stream = keep(tmux, pane, deadline).await?;
    let mut subscription = stream.subscribe();
    let state = read_state(tmux, pane).await?;
    let foreground = match request.shell {
        None => foreground_of_state(tmux, &state).await,
        Some(_) => None,
    };
    let flavor = ready_shell(&state, request.shell, foreground.as_ref())?;
    let max_lines = request.max_lines as usize;
    let mut reader = RunReader::start(
        &tmux.typing(),
        pane,
        &stream,
        &request.command,
        max_lines,
        flavor,
    )
    .await
    .map_err(|e| start_error(tmux, pane, e))?;
    let stopped = run::follow(&stream, &mut subscription, &mut reader, deadline, cancel)
        .await
        .map_err(|Cancelled| cancelled())?;
    let timed_out = stopped == Stopped::TimedOut;
    let pane_exit = match stopped {
        Stopped::StreamEnded(end) => Some(stream_end(tmux.server_name(), pane, end)?),
        Stopped::Ended | Stopped::TimedOut => None,
    };
    let ended = reader.end(&stream);
    let text = ended.text;
    let (output, cut_bytes) = tmux.budget().cap_output(&text.text);
    Ok(RunCommandOutput {
        pane_id: pane.to_string(),
        session: None,
        shell: flavor.as_str().to_owned(),
        exit_status: ended.exit_status.or(pane_exit.flatten()),
        timed_out,
        started: ended.started,
        output,
        output_truncated: text.dropped_lines > 0 || cut_bytes > 0 || text.lost,
        truncated_lines: text.dropped_lines,
        truncated_bytes: cut_bytes as u64,
        output_lost: text.lost,
        pane_exited: pane_exit.is_some(),
        elapsed_ms: elapsed_ms(started),
        effective_timeout,
    })
}

/// The pane's shell flavour, if the pane is a shell idle at its prompt (or the caller named
/// the shell); `foreground` is what the host tells of the terminal's foreground job, if it can.
fn ready_shell(
    state: &PaneState,
    forced: Option<Shell>,
    foreground: Option<&Foreground>,
) -> Result<Shell, ToolError> {
    let pane = state.pane;
    if state.dead {
        return Err(ToolError::new(
            ToolErrorKind::Conflict,
            format!("the program in {pane} has exited"),
            "respawn the pane or pick another one (list_panes)",
        ));
    }
    if state.in_mode {
        return Err(ToolError::new(
            ToolErrorKind::Conflict,
            format!("{pane} is in copy or view mode: typed keys would go to the mode"),
            "leave the mode first (send_keys q, or exit_copy_mode)",
        ));
    }
    if state.alternate_on {
        return Err(ToolError::new(
            ToolErrorKind::Conflict,
            format!(
                "{pane} shows a full-screen program ({})",
                excerpt(&state.current_command)
            ),
            "quit it first (capture_pane shows what it displays), or use send_keys",
        ));
    }
    if let Some(flavor) = forced {
        return Ok(flavor);
    }
    let Some(flavor) = Shell::detect(&state.current_command) else {
        return Err(ToolError::new(
            ToolErrorKind::Conflict,
            format!(
                "{pane} is running {:?}, not a shell run_command knows (bash, zsh, sh/dash, fish)",
                excerpt(&state.current_command)
            ),
            "if it is a shell, pass `shell`; to type into the program, use send_keys",
        ));
    };
    // The shell's own group holding the terminal is enough: while it still runs its startup
    // file it waits for children of that group, and what is typed waits for it.
    if let Some(foreground) = foreground
        && foreground.group != state.pane_pid
    {
        return Err(ToolError::new(
            ToolErrorKind::Conflict,
            format!(
                "{pane} is busy: {:?} (process {}) is running in the foreground, not the shell",
                excerpt(&foreground.command_line),
                foreground.pid
            ),
            "wait for it (wait_for_text), interrupt it (send_keys C-c), or pass `shell` if the pane runs a nested shell",
        ));
    }
    Ok(flavor)
}

/// The error for a run that could not be typed into `pane`.
fn start_error(tmux: &TmuxAccess<'_>, pane: PaneId, error: StartError) -> ToolError {
    match error {
        StartError::Command(e) => {
            ToolError::invalid_arguments(e.to_string(), "fix the command text")
        }
        StartError::Typing(OpError::Engine(e)) => {
            engine_error(tmux.server_name(), e, "call list_panes")
        }
        StartError::Typing(OpError::Quote(e)) => {
            ToolError::invalid_arguments(e.to_string(), "remove NUL bytes")
        }
        StartError::Typing(OpError::Refused(message)) => ToolError::new(
            ToolErrorKind::Conflict,
            format!("tmux refused to type into {pane}: {message}"),
            "call list_panes to check the pane",
        ),
        StartError::Typing(OpError::Unanswered) => ToolError::new(
            ToolErrorKind::Unavailable,
            format!("typing into {pane} did not complete"),
            "check the pane with capture_pane before retrying",
        ),
    }
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

impl SharedTool for RunCommand {
    type Answer = RunCommandOutput;

    fn server(&self) -> Option<&str> {
        self.input.server.as_deref()
    }

    async fn on_tmux(self, gateway: &McpServer, tmux: TmuxAccess<'_>) -> Reply<Self> {
        let budget = tmux
            .budget()
            .wait(self.input.timeout, DEFAULT_RUN_TIMEOUT)?;
        let request = RunRequest {
            target: self.input.target,
            command: self.input.command,
            max_lines: self.max_lines,
            shell: self.input.shell,
        };
        let work = run_command(
            &tmux,
            &request,
            budget.deadline,
            budget.effective_secs(),
            &self.cancel,
        );
        gateway.state().until_shutdown(work).await
    }

    async fn on_zellij(self, gateway: &McpServer, z: ZellijAccess<'_>) -> Reply<Self> {
        gateway
            .run_zellij_command(&z, &self.cancel, self.input, self.max_lines)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use muxgate_mux::foreground::Blocked;

    fn state(command: &str) -> PaneState {
        PaneState {
            pane: PaneId(1),
            server_pid: 1,
            pane_pid: 7,
            dead: false,
            in_mode: false,
            alternate_on: false,
            history_size: 0,
            history_limit: 2000,
            cursor_y: 0,
            height: 40,
            dead_status: None,
            tty: "/dev/pts/1".into(),
            current_command: command.into(),
        }
    }

    /// The terminal's foreground job as a host tells it: the shell's own group, or a command's.
    fn foreground(is_pane_program: bool) -> Foreground {
        Foreground {
            group: if is_pane_program { 7 } else { 4242 },
            pid: 4242,
            is_pane_program,
            pane_program: "bash".into(),
            command_line: if is_pane_program { "bash" } else { "sleep 60" }.into(),
            blocked: Blocked::Sleeping,
        }
    }

    #[test]
    fn only_shells_idle_at_a_prompt() {
        let at_prompt = foreground(true);
        let busy = foreground(false);
        assert_eq!(
            ready_shell(&state("bash"), None, Some(&at_prompt)).unwrap(),
            Shell::Bash
        );
        // A shell still running its startup file waits for a child of its own group: the
        // terminal is still the shell's, and what is typed waits for it.
        let startup = Foreground {
            group: 7,
            pid: 21,
            command_line: "bash pyenv-rehash".into(),
            ..foreground(false)
        };
        assert_eq!(
            ready_shell(&state("bash"), None, Some(&startup)).unwrap(),
            Shell::Bash
        );
        // A host that cannot tell (a workspace's sandbox) leaves the foreground check out.
        assert_eq!(ready_shell(&state("zsh"), None, None).unwrap(), Shell::Zsh);
        let err = ready_shell(&state("bash"), None, Some(&busy)).unwrap_err();
        assert_eq!(err.kind, ToolErrorKind::Conflict);
        assert!(
            err.message.contains("\"sleep 60\" (process 4242)"),
            "{}",
            err.message
        );
        // A named shell skips detection (its caller reads no foreground for it).
        assert_eq!(
            ready_shell(&state("python3"), Some(Shell::Bash), None).unwrap(),
            Shell::Bash
        );
        let err = ready_shell(&state("python3"), None, Some(&at_prompt)).unwrap_err();
        assert_eq!(err.kind, ToolErrorKind::Conflict);
        assert!(err.message.contains("python3"), "{}", err.message);
        let copy_mode = PaneState {
            in_mode: true,
            ..state("bash")
        };
        assert!(
            ready_shell(&copy_mode, Some(Shell::Bash), None)
                .unwrap_err()
                .message
                .contains("copy")
        );
        let dead = PaneState {
            dead: true,
            ..state("bash")
        };
        assert!(
            ready_shell(&dead, None, None)
                .unwrap_err()
                .message
                .contains("exited")
        );
        let full_screen = PaneState {
            alternate_on: true,
            ..state("vim")
        };
        assert!(
            ready_shell(&full_screen, None, None)
                .unwrap_err()
                .message
                .contains("full-screen")
        );
    }
}
