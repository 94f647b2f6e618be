//! Whether a secret typed into a pane now would stay unseen: not shown on its screen, where the
//! agent reads it, and not lost to a program that is not asking for it.
//!
//! Two pieces of evidence, both from the pane's terminal: its `ECHO` flag
//! ([`crate::mux::tty_echo`]) and what runs in its foreground ([`crate::mux::foreground`]). A
//! terminal that echoes shows every key. A shell waiting at its own prompt has the flag off but
//! its line editor draws every key (and keeps the line in its history), so it shows the secret
//! too. A program that is running, sleeping or waiting for a child is not reading: what is typed
//! would wait for whatever reads next (a shell between two commands even discards it when it
//! sets the terminal up again). A program reading the terminal with the flag off (`sudo`,
//! `ssh`, `read -s`) is the place a secret belongs. When neither piece can be read (a
//! workspace's panes live in another pid namespace, a dead pane), nothing is claimed and the
//! secret is typed.

use std::fmt;

use crate::mux::foreground::{Blocked, Foreground};
use crate::mux::shell_run::ShellFlavor;

/// Why a secret is not typed now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsafe {
    /// The terminal echoes what is typed.
    Echoes,
    /// A shell waits at its prompt: its line editor draws what is typed.
    ShellPrompt,
    /// The foreground program is not reading the terminal.
    NotReading,
}

impl fmt::Display for Unsafe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unsafe::Echoes => {
                "the pane's terminal echoes what is typed, so the secret would show on its screen"
            }
            Unsafe::ShellPrompt => {
                "the pane's shell is at its prompt: it would show the secret and keep it in its \
                 history"
            }
            Unsafe::NotReading => {
                "the pane's program is busy, not reading input: the secret would go to whatever \
                 reads next"
            }
        })
    }
}

/// `Err` when a secret typed now would show or go astray; see the module docs.
pub fn judge(echo: Option<bool>, foreground: Option<&Foreground>) -> Result<(), Unsafe> {
    if echo == Some(true) {
        return Err(Unsafe::Echoes);
    }
    let Some(foreground) = foreground else {
        return Ok(());
    };
    match foreground.blocked {
        Blocked::Polling
            if foreground.is_pane_program
                && ShellFlavor::detect(&foreground.pane_program).is_some() =>
        {
            Err(Unsafe::ShellPrompt)
        }
        Blocked::Running | Blocked::Sleeping | Blocked::WaitingForChild => Err(Unsafe::NotReading),
        // Reading the terminal or something else (`sudo` and `ssh` read `/dev/tty`, which is
        // not the pane's tty by name), polling, or not known.
        Blocked::ReadingTerminal | Blocked::Reading | Blocked::Polling | Blocked::Unknown => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn foreground(program: &str, own: bool, blocked: Blocked) -> Foreground {
        Foreground {
            pid: 7,
            is_pane_program: own,
            pane_program: program.into(),
            command_line: program.into(),
            blocked,
        }
    }

    #[test]
    fn an_echoing_terminal_exposes_whatever_runs() {
        let sudo = foreground("bash", false, Blocked::ReadingTerminal);
        assert_eq!(judge(Some(true), Some(&sudo)), Err(Unsafe::Echoes));
        assert_eq!(judge(Some(true), None), Err(Unsafe::Echoes));
    }

    #[test]
    fn a_shell_at_its_prompt_exposes_even_with_echo_off() {
        for shell in ["bash", "zsh", "fish", "dash"] {
            let prompt = foreground(shell, true, Blocked::Polling);
            assert_eq!(judge(Some(false), Some(&prompt)), Err(Unsafe::ShellPrompt));
        }
    }

    #[test]
    fn a_program_reading_with_echo_off_is_where_a_secret_goes() {
        // `sudo` in the foreground, or the shell's own `read -s` (blocked in read(2)).
        let sudo = foreground("bash", false, Blocked::ReadingTerminal);
        assert_eq!(judge(Some(false), Some(&sudo)), Ok(()));
        let read_s = foreground("bash", true, Blocked::ReadingTerminal);
        assert_eq!(judge(Some(false), Some(&read_s)), Ok(()));
        // `ssh` asking for a password reads `/dev/tty`, which is not the pane's tty by name.
        let ssh = foreground("bash", false, Blocked::Reading);
        assert_eq!(judge(Some(false), Some(&ssh)), Ok(()));
    }

    #[test]
    fn a_program_that_is_not_reading_gets_nothing() {
        for blocked in [
            Blocked::Running,
            Blocked::Sleeping,
            Blocked::WaitingForChild,
        ] {
            let busy = foreground("bash", true, blocked);
            assert_eq!(judge(Some(false), Some(&busy)), Err(Unsafe::NotReading));
        }
    }

    #[test]
    fn without_evidence_nothing_is_claimed() {
        assert_eq!(judge(None, None), Ok(()));
        let editor = foreground("vim", true, Blocked::Polling);
        assert_eq!(judge(Some(false), Some(&editor)), Ok(()));
    }
}
