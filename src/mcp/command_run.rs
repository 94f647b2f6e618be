//! A command run in a shell pane as `run_command` answers it ([`RunCommandOutput`]), and each
//! backend's way to run it, which [`super::pane_access::PaneAccess::run_command`] picks.
//!
//! On tmux ([`on_tmux`]), the run is the tmux crate's
//! (`muxgate_tmux::follow::command_run::TmuxCommandRuns::run`): it claims the pane, checks it
//! can take a command, types it (between markers, or as the ledger's next record where the
//! shell marks its own commands) and follows it until it ends. No tmux client runs in the
//! pane, and nothing polls: the run subscribes to the pane's output before typing and sleeps
//! until the run ends, the timeout or cancellation. This file words what the crate answers.
//!
//! Before typing, the pane must be a shell waiting at its prompt: its foreground program is a
//! known shell (`#{pane_current_command}`), it is the pane's own process (the terminal's
//! foreground job is the shell, as the server's `Host` tells it, so a command still running
//! from an earlier call is not typed into; a host that cannot tell, such as a workspace's
//! sandbox, skips this check), the pane is not in copy mode, not on the alternate
//! screen, and no other run owns it. A caller who knows better (a shell behind `ssh`, a
//! wrapper) names the shell with `shell`, which skips the detection and the foreground check.
//! A pane just made is given a moment to start its program, which tmux names `tmux` until
//! then (`TmuxPaneStates::read_started`). What the pane shows when it cannot take a command is
//! a `NotReady` of the crate's; how it is told to the caller is [`refusal`] here.
//!
//! On Zellij ([`on_zellij`]), the command is typed into the pane's shell between per-call
//! markers ([`muxgate_mux::shell_run::screen`]); on timeout it keeps running and the answer
//! says so.

use muxgate_mux::lines::excerpt;
use muxgate_mux::shell_run::{RunCapture, RunRequest};
use muxgate_tmux::PaneId;
use muxgate_tmux::follow::command_run::{CommandRunError, NotReady};
use muxgate_tmux::follow::run::{StartError, Stopped};
use muxgate_tmux::typed::op_error::OpError;
use muxgate_zellij::backend::RunInPaneOptions;
use muxgate_zellij::panes::ZellijPanes;
use schemars::JsonSchema;
use serde::Serialize;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::access::{PANES_HINT, TmuxAccess, engine_error};
use super::budget::WaitBudget;
use super::error::{ToolError, ToolErrorKind};
use super::scoped::Scoped;
use super::text_wait::stream_end;
use super::tools::watch::{cancelled, elapsed_ms, state_error, until_client_cancels};
use super::zellij_access::ZellijAccess;

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

/// Runs a command in a tmux shell pane until `budget`'s deadline.
pub(crate) async fn on_tmux(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    request: RunRequest,
    budget: &WaitBudget,
    cancel: &CancellationToken,
) -> Result<RunCommandOutput, ToolError> {
    let started = Instant::now();
    let ran = tmux
        .command_runs()
        .run(&*tmux.host(), pane, request, budget.deadline, cancel)
        .await
        .map_err(|e| run_error(tmux, pane, e))?;
    let timed_out = ran.stopped == Stopped::TimedOut;
    let pane_exit = match ran.stopped {
        Stopped::StreamEnded(end) => Some(stream_end(tmux.server_name(), pane, end)?),
        Stopped::Ended | Stopped::TimedOut => None,
    };
    let text = ran.end.text;
    let (output, cut_bytes) = tmux.budget().cap_output(&text.text);
    Ok(RunCommandOutput {
        pane_id: pane.to_string(),
        session: None,
        shell: ran.shell.as_str().to_owned(),
        exit_status: ran.end.exit_status.or(pane_exit.flatten()),
        timed_out,
        started: ran.end.started,
        output,
        output_truncated: text.dropped_lines > 0 || cut_bytes > 0 || text.lost,
        truncated_lines: text.dropped_lines,
        truncated_bytes: cut_bytes as u64,
        output_lost: text.lost,
        pane_exited: pane_exit.is_some(),
        elapsed_ms: elapsed_ms(started),
        effective_timeout: budget.effective_secs(),
    })
}

/// A tmux run that ended without an answer, as an error for the model.
fn run_error(tmux: &TmuxAccess<'_>, pane: PaneId, error: CommandRunError) -> ToolError {
    match error {
        CommandRunError::Claimed => ToolError::new(
            ToolErrorKind::Conflict,
            format!("another run_command is still running in {pane}"),
            "wait for it to finish, or interrupt it with send_keys C-c",
        ),
        CommandRunError::Keep(e) => engine_error(tmux.server_name(), e, PANES_HINT),
        CommandRunError::State(e) => state_error(tmux, e),
        CommandRunError::NotReady(not_ready) => refusal(pane, not_ready),
        CommandRunError::Start(e) => start_error(tmux, pane, e),
        CommandRunError::Cancelled => cancelled(),
    }
}

/// Why `pane` takes no command now, and what to do instead.
fn refusal(pane: PaneId, not_ready: NotReady) -> ToolError {
    let (message, instead) = match not_ready {
        NotReady::Dead => (
            format!("the program in {pane} has exited"),
            "respawn the pane or pick another one (list_panes)",
        ),
        NotReady::InMode => (
            format!("{pane} is in copy or view mode: typed keys would go to the mode"),
            "leave the mode first (send_keys q, or exit_copy_mode)",
        ),
        NotReady::FullScreen { program } => (
            format!("{pane} shows a full-screen program ({})", excerpt(&program)),
            "quit it first (capture_pane shows what it displays), or use send_keys",
        ),
        NotReady::UnknownProgram { program } => (
            format!(
                "{pane} is running {:?}, not a shell run_command knows (bash, zsh, sh/dash, fish)",
                excerpt(&program)
            ),
            "if it is a shell, pass `shell`; to type into the program, use send_keys",
        ),
        NotReady::Busy { command_line, pid } => (
            format!(
                "{pane} is busy: {:?} (process {pid}) is running in the foreground, not the shell",
                excerpt(&command_line),
            ),
            "wait for it (wait_for_text), interrupt it (send_keys C-c), or pass `shell` if the pane runs a nested shell",
        ),
    };
    ToolError::new(ToolErrorKind::Conflict, message, instead)
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

/// Runs a command in a Zellij shell pane until `budget`'s deadline, or until the client
/// cancels.
pub(crate) async fn on_zellij(
    z: &ZellijAccess<'_>,
    pane: &Scoped<ZellijPanes>,
    request: RunRequest,
    budget: &WaitBudget,
    cancel: &CancellationToken,
) -> Result<RunCommandOutput, ToolError> {
    let session = pane.mux.session();
    let opts = RunInPaneOptions {
        shell: request.shell,
        timeout: budget.effective,
    };
    let run = async {
        z.backend
            .run_in_pane(session, pane.pane, &request.command, opts)
            .await
            .map_err(|e| z.error(e))
    };
    let run = until_client_cancels(cancel, run).await?;
    // Cut to `max_lines` as the tmux run cuts its output, then to the caller's byte cap.
    let text = RunCapture::text_of(run.output.as_bytes(), 0, request.max_lines);
    let (output, cut_bytes) = z.budget().cap_output(&text.text);
    Ok(RunCommandOutput {
        pane_id: pane.pane.to_string(),
        session: Some(session.to_string()),
        // How the command was typed: for a POSIX shell or for fish.
        shell: if run.shell.is_fish() { "fish" } else { "sh" }.to_owned(),
        exit_status: run.exit_status,
        timed_out: run.exit_status.is_none(),
        started: run.started,
        output_truncated: text.dropped_lines > 0 || cut_bytes > 0 || run.truncated,
        truncated_lines: text.dropped_lines,
        truncated_bytes: cut_bytes as u64,
        output,
        // Lines that left the scrollback are cut, not lost on the way to the gateway.
        output_lost: false,
        pane_exited: false,
        elapsed_ms: u64::try_from(run.elapsed.as_millis()).unwrap_or(u64::MAX),
        effective_timeout: budget.effective_secs(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_says_what_the_pane_shows_and_what_to_do() {
        let pane = PaneId(1);
        let cases = [
            (NotReady::Dead, "the program in %1 has exited"),
            (NotReady::InMode, "%1 is in copy or view mode"),
            (
                NotReady::FullScreen {
                    program: "vim".into(),
                },
                "%1 shows a full-screen program (vim)",
            ),
            (
                NotReady::UnknownProgram {
                    program: "python3".into(),
                },
                "%1 is running \"python3\", not a shell",
            ),
            (
                NotReady::Busy {
                    command_line: "sleep 60".into(),
                    pid: 4242,
                },
                "%1 is busy: \"sleep 60\" (process 4242)",
            ),
        ];
        for (not_ready, says) in cases {
            let error = refusal(pane, not_ready);
            assert_eq!(error.kind, ToolErrorKind::Conflict);
            assert!(error.message.starts_with(says), "{}", error.message);
            assert!(!error.suggestion.is_empty());
        }
    }
}
