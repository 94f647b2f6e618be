//! A command run in a shell pane as `run_command` answers it ([`RunCommandOutput`]), and each
//! backend's way to run it, which [`super::pane_access::PaneAccess::run_command`] picks.
//!
//! On tmux ([`on_tmux`]), typing the command and following it until it ends is
//! `muxgate_tmux::follow::run` (between markers, or as the ledger's next record where the
//! shell marks its own commands). No tmux client runs in the pane, and nothing polls: the run
//! subscribes to the pane's output before typing and sleeps until the run ends, the timeout
//! or cancellation.
//!
//! Before typing, the pane must be a shell waiting at its prompt: its foreground program is a
//! known shell (`#{pane_current_command}`), it is the pane's own process (the terminal's
//! foreground job is the shell, as the server's `Host` tells it, so a command still running
//! from an earlier call is not typed into; a host that cannot tell, such as a workspace's
//! sandbox, skips this check), the pane is not in copy mode, not on the alternate
//! screen, and no other run owns it. A caller who knows better (a shell behind `ssh`, a
//! wrapper) names the shell with `shell`, which skips the detection and the foreground check.
//! A pane just made is given a moment to start its program, which tmux names `tmux` until
//! then (`TmuxPaneStates::read_started`).
//!
//! On Zellij ([`on_zellij`]), the command is typed into the pane's shell between per-call
//! markers ([`muxgate_mux::shell_run::screen`]); on timeout it keeps running and the answer
//! says so.

use muxgate_mux::foreground::Foreground;
use muxgate_mux::lines::excerpt;
use muxgate_mux::shell::Shell;
use muxgate_mux::shell_run::RunCapture;
use muxgate_tmux::PaneId;
use muxgate_tmux::follow::Cancelled;
use muxgate_tmux::follow::run::{self, RunReader, StartError, Stopped};
use muxgate_tmux::typed::op_error::OpError;
use muxgate_tmux::typed::pane_state::PaneState;
use muxgate_zellij::backend::RunInPaneOptions;
use muxgate_zellij::panes::ZellijPanes;
use schemars::JsonSchema;
use serde::Serialize;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::access::{TmuxAccess, engine_error};
use super::budget::WaitBudget;
use super::error::{ToolError, ToolErrorKind};
use super::scoped::Scoped;
use super::text_wait::stream_end;
use super::tools::watch::{
    cancelled, elapsed_ms, foreground_of_state, keep, state_error, until_client_cancels,
};
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

/// A command to run in a shell pane, whichever backend serves it.
#[derive(Debug, Clone)]
pub(crate) struct RunRequest {
    /// The command as typed.
    pub command: String,
    /// Most output lines answered, the last kept.
    pub max_lines: u32,
    /// The shell the caller names, which skips detecting it.
    pub shell: Option<Shell>,
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
    let deadline = budget.deadline;
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
    let state = tmux
        .pane_states()
        .read_started(pane, deadline)
        .await
        .map_err(|e| state_error(tmux, e))?;
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
        effective_timeout: budget.effective_secs(),
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
    let text = RunCapture::text_of(run.output.as_bytes(), 0, request.max_lines as usize);
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
