//! Whether a terminal shows what is typed into it: its `ECHO` flag, read with `tcgetattr(3)`.
//!
//! Programs that ask for a secret (`sudo`, `ssh`, `passwd`, `read -s`) turn the flag off while
//! they read it; a shell's line editor turns it off too but draws every key itself, which is
//! why the flag alone does not tell a safe place to type a secret (see
//! [`crate::secret_entry::exposure`]).

use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// `Some(true)` when the terminal at `tty` echoes input, `Some(false)` when it does not, `None`
/// when it cannot be opened or is not a terminal.
pub fn echoes(tty: &Path) -> Option<bool> {
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
    Some(termios.c_lflag & libc::ECHO != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_a_terminal_says_nothing() {
        assert_eq!(echoes(Path::new("/dev/null")), None);
        assert_eq!(echoes(Path::new("/nonexistent/tty")), None);
    }
}
