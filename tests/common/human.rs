//! A human-like tmux client: `tmux attach` on a real pty, and what that human sees.

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

/// An attached `tmux attach -t session` on a pty (TERM xterm-256color); killed on drop.
pub(crate) struct Human {
    child: Child,
}

impl Human {
    /// Attaches to `session` on a `cols`x`rows` terminal; the terminal's output is drained.
    pub(crate) fn attach(tmux: &TestTmux, session: &str, cols: u16, rows: u16) -> Self {
        let (master, slave) = open_pty(cols, rows);
        let child = Command::new("tmux")
            .args(["-L", &tmux.socket, "attach-session", "-t", session])
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
        Self { child }
    }
}

impl Drop for Human {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the human sees: their client's size, session and current window, every window's size
/// and active flag, and the session environment.
pub(crate) fn human_view(tmux: &TestTmux, session: &str) -> (String, String, String) {
    let clients = tmux.ok(&[
        "list-clients",
        "-F",
        "#{client_termname} #{client_width}x#{client_height} #{session_name} #{window_id}",
    ]);
    let human: Vec<_> = clients.lines().filter(|l| l.starts_with("xterm")).collect();
    assert_eq!(human.len(), 1, "{clients}");
    let windows = tmux.ok(&[
        "list-windows",
        "-t",
        session,
        "-F",
        "#{window_id} #{window_width}x#{window_height} #{window_active}",
    ]);
    let env = tmux.ok(&["show-environment", "-t", session]);
    (human[0].to_string(), windows, env)
}

/// Whether a human client is attached.
pub(crate) fn human_attached(tmux: &TestTmux) -> bool {
    tmux.ok(&["list-clients", "-F", "#{client_termname}"])
        .contains("xterm")
}
