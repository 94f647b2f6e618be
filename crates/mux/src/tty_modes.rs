//! How a terminal treats what is typed into it: whether it echoes it (`ECHO`) and whether it
//! hands it over a line at a time (`ICANON`), read with `tcgetattr(3)`.
//!
//! Programs that ask for a secret (`sudo`, `ssh`, `passwd`, `getpass(3)`, `read -s`) turn echo
//! off and keep canonical mode: they read a line the terminal does not show. Line editors
//! (a shell's prompt, a REPL, an editor) turn both off and draw every key themselves, so echo
//! off alone does not mean "not shown" (the gateway's secret entry judges both).

use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// A terminal's input modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TermModes {
    /// The terminal shows what is typed.
    pub echo: bool,
    /// Input is handed over a line at a time (no program edits it key by key).
    pub canonical: bool,
}

/// The modes of the terminal at `tty`; `None` when it cannot be opened or is not a terminal.
pub fn modes(tty: &Path) -> Option<TermModes> {
    // O_NOCTTY: opening a terminal must never make it the gateway's controlling terminal;
    // O_NONBLOCK: opening one never waits.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(tty)
        .ok()?;
    let mut termios = std::mem::MaybeUninit::<libc::termios>::uninit();
    // SAFETY: the descriptor stays open for the call, and `tcgetattr` fills the whole struct
    // when it returns 0; it is read only then.
    let termios = unsafe {
        if libc::tcgetattr(file.as_raw_fd(), termios.as_mut_ptr()) != 0 {
            return None;
        }
        termios.assume_init()
    };
    Some(TermModes {
        echo: termios.c_lflag & libc::ECHO != 0,
        canonical: termios.c_lflag & libc::ICANON != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_a_terminal_says_nothing() {
        assert_eq!(modes(Path::new("/dev/null")), None);
        assert_eq!(modes(Path::new("/nonexistent/tty")), None);
    }
}
