//! A human-like tmux client: `tmux attach` on a real pseudo-terminal of a given size, its
//! output drained so it never blocks. Killed when dropped.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};

use super::tmux::TestTmux;

/// A pty pair sized `cols`x`rows`; returns (master, slave).
pub(crate) fn open_pty(cols: u16, rows: u16) -> (OwnedFd, OwnedFd) {
    let mut master = 0;
    let mut slave = 0;
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two fds into the provided integers; the size pointer is valid.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty failed");
    // SAFETY: openpty returned two fresh descriptors that nothing else owns.
    unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}

/// An attached `tmux attach-session -t main` with TERM xterm-256color.
pub(crate) struct Human(Child);

impl Drop for Human {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Attaches a human-like client to session `main` of `tmux` on a `cols`x`rows` terminal.
pub(crate) fn attach_human(tmux: &TestTmux, cols: u16, rows: u16) -> Human {
    let (master, slave) = open_pty(cols, rows);
    let child = Command::new("tmux")
        .args(["-L", &tmux.socket, "attach-session", "-t", "main"])
        .env("TERM", "xterm-256color")
        .env_remove("TMUX")
        .stdin(Stdio::from(slave.try_clone().expect("dup pty")))
        .stdout(Stdio::from(slave.try_clone().expect("dup pty")))
        .stderr(Stdio::from(slave))
        .spawn()
        .expect("spawn tmux attach");
    let mut reader = std::fs::File::from(master);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while matches!(reader.read(&mut buf), Ok(n) if n > 0) {}
    });
    Human(child)
}
