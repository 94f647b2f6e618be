//! Running a command in a shell pane, as one caller ([`TmuxCommandRuns::run`]): the order of
//! the steps around [`crate::follow::run`].
//!
//! The run claims the pane (one run per pane at a time), keeps the pane's stream (so the run
//! and what follows stay in the pane's command ledger) and subscribes to it before typing, so
//! its markers are read from output produced after. It then reads the pane's state, giving a
//! pane just made a moment to start its program ([`TmuxPaneStates::read_started`]), and checks
//! that the pane can take a command ([`readiness`]): a shell idle at its prompt, or the shell
//! the caller names. Then it types the command ([`RunReader::start`]) and follows the output
//! until the run ends, the output ends, the deadline passes or the caller cancels. Callers get
//! how it ended ([`CommandRan`]) and a [`CommandRunError`] that says what happened, not what
//! to tell anyone.

use muxgate_mux::foreground::Foreground;
use muxgate_mux::host::Host;
use muxgate_mux::shell::Shell;
use muxgate_mux::shell_run::RunRequest;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Cancelled;
use super::run::{self, RunEnd, RunReader, StartError, Stopped};
use crate::typed::op_error::PaneOpError;
use crate::typed::pane_state::{PaneState, TmuxPaneStates};
use crate::typed::typing::TmuxTyping;
use crate::{Caller, EngineError, PaneId, TmuxServer};

/// A run that was typed, and how following it stopped.
#[derive(Debug)]
pub struct CommandRan {
    /// The shell the command was typed for.
    pub shell: Shell,
    /// How following it stopped: it ended, the deadline passed, or the pane's output ended.
    pub stopped: Stopped,
    /// What it came to: its output, status, and whether it began.
    pub end: RunEnd,
}

/// Why a pane cannot take a command now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotReady {
    /// Its program has exited.
    Dead,
    /// It is in copy or view mode: typed keys would go to the mode.
    InMode,
    /// It shows a full-screen program (the alternate screen).
    FullScreen {
        /// The pane's program.
        program: String,
    },
    /// Its program is not a shell a run knows.
    UnknownProgram {
        /// The pane's program.
        program: String,
    },
    /// Another job than the shell holds the terminal.
    Busy {
        /// That job's command line.
        command_line: String,
        /// Its process id.
        pid: u32,
    },
}

/// Why a run ended without an answer.
#[derive(Debug, thiserror::Error)]
pub enum CommandRunError {
    /// Another run owns the pane.
    #[error("another run is still running in the pane")]
    Claimed,
    /// Keeping or subscribing to the pane's output failed.
    #[error("keeping the pane's output: {0}")]
    Keep(EngineError),
    /// Reading the pane's state failed, or the pane is missing.
    #[error("reading the pane's state: {0}")]
    State(PaneOpError),
    /// The pane cannot take a command now.
    #[error("the pane cannot take a command: {0:?}")]
    NotReady(NotReady),
    /// The command could not be typed.
    #[error("typing the command: {0}")]
    Start(StartError),
    /// The caller cancelled.
    #[error("cancelled")]
    Cancelled,
}

/// Command runs in one server's panes, as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxCommandRuns {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxCommandRuns {
    /// Command runs in `server`'s panes, as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// Runs `request` in `pane` until it ends, the pane's output ends, `deadline` passes or
    /// `cancel` fires; `host` (the machine the server runs on) tells who holds the pane's
    /// terminal. The caller checked who may run in the pane.
    pub async fn run(
        &self,
        host: &dyn Host,
        pane: PaneId,
        request: RunRequest,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<CommandRan, CommandRunError> {
        let Some(_claim) = self.server.claims().claim(pane) else {
            return Err(CommandRunError::Claimed);
        };
        let stream = self
            .server
            .keep(&self.caller, pane, deadline)
            .await
            .map_err(CommandRunError::Keep)?;
        let mut subscription = stream.subscribe();
        let states = TmuxPaneStates::new(self.server.clone(), self.caller.clone());
        let state = states
            .read_started(pane, deadline)
            .await
            .map_err(CommandRunError::State)?;
        let foreground = match request.shell {
            None => state.foreground(host).await,
            Some(_) => None,
        };
        let shell = readiness(&state, request.shell, foreground.as_ref())
            .map_err(CommandRunError::NotReady)?;
        let typing = TmuxTyping::new(self.server.clone(), self.caller.clone());
        let mut reader = RunReader::start(
            &typing,
            pane,
            &stream,
            &request.command,
            request.max_lines,
            shell,
        )
        .await
        .map_err(CommandRunError::Start)?;
        let stopped = run::follow(&stream, &mut subscription, &mut reader, deadline, cancel)
            .await
            .map_err(|Cancelled| CommandRunError::Cancelled)?;
        Ok(CommandRan {
            shell,
            stopped,
            end: reader.end(&stream),
        })
    }
}

/// The shell to type for, if the pane in `state` is a shell idle at its prompt (or the caller
/// named the shell, `forced`); `foreground` is what the host tells of the terminal's
/// foreground job, if it can tell.
pub fn readiness(
    state: &PaneState,
    forced: Option<Shell>,
    foreground: Option<&Foreground>,
) -> Result<Shell, NotReady> {
    if state.dead {
        return Err(NotReady::Dead);
    }
    if state.in_mode {
        return Err(NotReady::InMode);
    }
    if state.alternate_on {
        return Err(NotReady::FullScreen {
            program: state.current_command.clone(),
        });
    }
    if let Some(shell) = forced {
        return Ok(shell);
    }
    let Some(shell) = Shell::detect(&state.current_command) else {
        return Err(NotReady::UnknownProgram {
            program: state.current_command.clone(),
        });
    };
    // The shell's own group holding the terminal is enough: while it still runs its startup
    // file it waits for children of that group, and what is typed waits for it.
    if let Some(foreground) = foreground
        && foreground.group != state.pane_pid
    {
        return Err(NotReady::Busy {
            command_line: foreground.command_line.clone(),
            pid: foreground.pid,
        });
    }
    Ok(shell)
}

#[cfg(test)]
mod tests {
    use super::*;

    use muxgate_mux::foreground::Blocked;

    fn state(command: &str) -> PaneState {
        PaneState::running(PaneId(1), command)
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
        assert_eq!(
            readiness(&state("bash"), None, Some(&at_prompt)),
            Ok(Shell::Bash)
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
            readiness(&state("bash"), None, Some(&startup)),
            Ok(Shell::Bash)
        );
        // A host that cannot tell (a workspace's sandbox) leaves the foreground check out.
        assert_eq!(readiness(&state("zsh"), None, None), Ok(Shell::Zsh));
        assert_eq!(
            readiness(&state("bash"), None, Some(&foreground(false))),
            Err(NotReady::Busy {
                command_line: "sleep 60".into(),
                pid: 4242
            })
        );
        // A named shell skips detection (its caller reads no foreground for it).
        assert_eq!(
            readiness(&state("python3"), Some(Shell::Bash), None),
            Ok(Shell::Bash)
        );
        assert_eq!(
            readiness(&state("python3"), None, Some(&at_prompt)),
            Err(NotReady::UnknownProgram {
                program: "python3".into()
            })
        );
    }

    #[test]
    fn a_pane_that_cannot_type_is_refused_even_with_a_named_shell() {
        let cases = [
            (
                PaneState {
                    in_mode: true,
                    ..state("bash")
                },
                NotReady::InMode,
            ),
            (
                PaneState {
                    dead: true,
                    ..state("bash")
                },
                NotReady::Dead,
            ),
            (
                PaneState {
                    alternate_on: true,
                    ..state("vim")
                },
                NotReady::FullScreen {
                    program: "vim".into(),
                },
            ),
        ];
        for (state, refused) in cases {
            assert_eq!(readiness(&state, Some(Shell::Bash), None), Err(refused));
        }
    }
}
