//! Whether a secret typed into a pane now would stay unseen: not drawn on its screen, where the
//! agent reads it, not kept in a history, and not delivered anywhere but the program asking.
//!
//! The evidence, all read just before typing:
//! - tmux's view of the pane ([`PaneTerminal`]): in copy mode the keys would drive copy mode; with
//!   input off they go nowhere; with `synchronize-panes` tmux types them into every pane of the
//!   window too;
//! - the terminal's modes ([`muxgate_mux::tty_modes`]): a terminal that echoes shows every key; one
//!   out of canonical mode belongs to a line editor (a shell's prompt, a REPL, an editor) that
//!   draws every key itself;
//! - what runs in the foreground ([`muxgate_mux::foreground`]): a shell waiting at its own prompt
//!   draws the line and keeps it in its history; a program running, sleeping or waiting for a
//!   child is not reading, so the keys would wait for whatever reads next (a shell between two
//!   commands even discards them when it sets the terminal up again).
//!
//! A program reading with echo off in canonical mode (`sudo`, `ssh`, `passwd`, `read -s`) is
//! where a secret belongs. When the terminal and the processes cannot be read (a workspace's
//! panes live in another pid namespace), only tmux's view is checked. None of this can tell a
//! genuine password prompt from a program that only looks like one: the page names the program
//! that will receive the secret so that the human can judge.

use std::fmt;

use muxgate_mux::foreground::{Blocked, Foreground};
use muxgate_mux::shell::Shell;
use muxgate_mux::tty_modes::TermModes;

use muxgate_tmux::typed::panes::PaneTerminal;

/// Why a secret is not typed now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsafe {
    /// The pane is in copy mode (or another mode): the keys would drive it.
    InMode,
    /// The pane's input is off (`select-pane -d`).
    InputOff,
    /// The window types into all its panes at once (`synchronize-panes`).
    Synchronized,
    /// The terminal echoes what is typed.
    Echoes,
    /// A shell waits at its prompt: its line editor draws what is typed.
    ShellPrompt,
    /// The terminal is out of canonical mode: a line editor draws what is typed.
    LineEditor,
    /// The foreground program is not reading the terminal.
    NotReading,
}

impl fmt::Display for Unsafe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unsafe::InMode => "the pane is in copy mode: the keys would drive copy mode",
            Unsafe::InputOff => "the pane's input is off",
            Unsafe::Synchronized => {
                "the pane's window has synchronize-panes on: the secret would be typed into \
                 every pane of it"
            }
            Unsafe::Echoes => {
                "the pane's terminal echoes what is typed, so the secret would show on its screen"
            }
            Unsafe::ShellPrompt => {
                "the pane's shell is at its prompt: it would show the secret and keep it in its \
                 history"
            }
            Unsafe::LineEditor => {
                "the program in the pane edits its input itself (a shell, a REPL, an editor) and \
                 would draw the secret on the screen"
            }
            Unsafe::NotReading => {
                "the pane's program is busy, not reading input: the secret would go to whatever \
                 reads next"
            }
        })
    }
}

/// `Err` when a secret typed now would show or go astray; see the module docs.
pub(crate) fn judge(
    pane: &PaneTerminal,
    modes: Option<TermModes>,
    foreground: Option<&Foreground>,
) -> Result<(), Unsafe> {
    if pane.in_mode {
        return Err(Unsafe::InMode);
    }
    if pane.input_off {
        return Err(Unsafe::InputOff);
    }
    if pane.synchronized {
        return Err(Unsafe::Synchronized);
    }
    if modes.is_some_and(|m| m.echo) {
        return Err(Unsafe::Echoes);
    }
    if let Some(foreground) = foreground
        && foreground.blocked == Blocked::Polling
        && foreground.is_pane_program
        && Shell::detect(&foreground.pane_program).is_some()
    {
        return Err(Unsafe::ShellPrompt);
    }
    if modes.is_some_and(|m| !m.canonical) {
        return Err(Unsafe::LineEditor);
    }
    match foreground.map(|f| f.blocked) {
        Some(Blocked::Running | Blocked::Sleeping | Blocked::WaitingForChild) => {
            Err(Unsafe::NotReading)
        }
        // Reading the terminal or something else (`sudo` and `ssh` read `/dev/tty`, which is
        // not the pane's tty by name), polling, or not known.
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pane() -> PaneTerminal {
        PaneTerminal {
            pane_pid: 10,
            tty: "/dev/pts/3".into(),
            server_pid: 1,
            dead: false,
            in_mode: false,
            input_off: false,
            synchronized: false,
        }
    }

    const PASSWORD_PROMPT: Option<TermModes> = Some(TermModes {
        echo: false,
        canonical: true,
    });
    const RAW: Option<TermModes> = Some(TermModes {
        echo: false,
        canonical: false,
    });
    const COOKED: Option<TermModes> = Some(TermModes {
        echo: true,
        canonical: true,
    });

    fn foreground(program: &str, own: bool, blocked: Blocked) -> Foreground {
        Foreground {
            group: 7,
            pid: 7,
            is_pane_program: own,
            pane_program: program.into(),
            command_line: program.into(),
            blocked,
        }
    }

    #[test]
    fn keys_that_would_go_elsewhere_are_refused_whatever_reads() {
        let sudo = foreground("bash", false, Blocked::ReadingTerminal);
        for (flags, why) in [
            (
                PaneTerminal {
                    in_mode: true,
                    ..pane()
                },
                Unsafe::InMode,
            ),
            (
                PaneTerminal {
                    input_off: true,
                    ..pane()
                },
                Unsafe::InputOff,
            ),
            (
                PaneTerminal {
                    synchronized: true,
                    ..pane()
                },
                Unsafe::Synchronized,
            ),
        ] {
            assert_eq!(judge(&flags, PASSWORD_PROMPT, Some(&sudo)), Err(why));
            assert_eq!(
                judge(&flags, None, None),
                Err(why),
                "a workspace's pane too"
            );
        }
    }

    #[test]
    fn an_echoing_terminal_exposes_whatever_runs() {
        let sudo = foreground("bash", false, Blocked::ReadingTerminal);
        assert_eq!(judge(&pane(), COOKED, Some(&sudo)), Err(Unsafe::Echoes));
        assert_eq!(judge(&pane(), COOKED, None), Err(Unsafe::Echoes));
    }

    #[test]
    fn a_shell_at_its_prompt_exposes_even_with_echo_off() {
        for shell in ["bash", "zsh", "fish", "dash"] {
            let prompt = foreground(shell, true, Blocked::Polling);
            assert_eq!(judge(&pane(), RAW, Some(&prompt)), Err(Unsafe::ShellPrompt));
        }
    }

    #[test]
    fn a_line_editor_exposes_wherever_it_runs() {
        // A nested shell (`su -`), a REPL or an editor: raw mode, whoever leads the pane.
        for program in ["bash", "python3", "vim"] {
            let editor = foreground(program, false, Blocked::Polling);
            assert_eq!(judge(&pane(), RAW, Some(&editor)), Err(Unsafe::LineEditor));
        }
        assert_eq!(judge(&pane(), RAW, None), Err(Unsafe::LineEditor));
    }

    #[test]
    fn a_program_reading_a_line_with_echo_off_is_where_a_secret_goes() {
        // `sudo` in the foreground, the shell's own `read -s` (blocked in read(2)), and `ssh`
        // reading `/dev/tty`, which is not the pane's tty by name.
        for (program, own, blocked) in [
            ("bash", false, Blocked::ReadingTerminal),
            ("bash", true, Blocked::ReadingTerminal),
            ("bash", false, Blocked::Reading),
        ] {
            let reader = foreground(program, own, blocked);
            assert_eq!(judge(&pane(), PASSWORD_PROMPT, Some(&reader)), Ok(()));
        }
    }

    #[test]
    fn a_program_that_is_not_reading_gets_nothing() {
        for blocked in [
            Blocked::Running,
            Blocked::Sleeping,
            Blocked::WaitingForChild,
        ] {
            let busy = foreground("bash", true, blocked);
            assert_eq!(
                judge(&pane(), PASSWORD_PROMPT, Some(&busy)),
                Err(Unsafe::NotReading)
            );
        }
    }

    #[test]
    fn without_processes_to_read_only_tmux_and_the_terminal_decide() {
        assert_eq!(judge(&pane(), None, None), Ok(()));
        assert_eq!(judge(&pane(), PASSWORD_PROMPT, None), Ok(()));
    }
}
