//! A Zellij client attached through a pseudo-terminal that muxgate owns.
//!
//! Zellij sizes a new tab from the size of a connected client; with none connected the tab is
//! 0×0 and dies (see `backend::ZellijBackend::new_tab` for the root cause). A short-lived client
//! attached through a pty of a chosen size gives new tabs a real size without a human. Tests also
//! use it as a stand-in for a human's terminal to check that muxgate does not move focus.
//!
//! The client is killed with SIGKILL, never SIGTERM/SIGHUP: those make the client send the user's
//! `on_force_close` action, which may be `quit` and would end the session.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::process::Child;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::cli::ZellijCli;
use super::error::{Result, ZellijError};
use super::ids::SessionName;
use super::listing::parse_clients;

/// A terminal size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermSize {
    /// Lines.
    pub rows: u16,
    /// Columns.
    pub cols: u16,
}

/// A `zellij attach` client running on a pty; killed on drop.
pub struct PtyClient {
    child: Child,
    drain: JoinHandle<()>,
    output: Arc<Notify>,
}

impl PtyClient {
    /// Attaches a client of `size` to `session` and returns once the server lists a client.
    ///
    /// Readiness is checked with `list-clients` each time the client writes to its terminal:
    /// the server renders to a client only after registering it, so the render that follows
    /// registration always triggers a check that sees it. No timer polling.
    ///
    /// A client that exits before being listed is started again, twice at most: `zellij
    /// attach` can hit the transient session probe failure described at `ZellijCli::action`.
    pub async fn attach(
        cli: &ZellijCli,
        session: &SessionName,
        size: TermSize,
        timeout: Duration,
    ) -> Result<Self> {
        let deadline = Instant::now() + timeout;
        let mut attempt = 1;
        loop {
            match Self::attach_once(cli, session, size, timeout, deadline).await {
                Err(ZellijError::NoEffect { .. }) if attempt < 3 => attempt += 1,
                other => return other,
            }
        }
    }

    async fn attach_once(
        cli: &ZellijCli,
        session: &SessionName,
        size: TermSize,
        timeout: Duration,
        deadline: Instant,
    ) -> Result<Self> {
        let io_err = |source| ZellijError::Io {
            command: "attach".to_owned(),
            source,
        };
        let (master, slave) = open_pty(size).map_err(io_err)?;
        let mut cmd = cli.command();
        cmd.args(["attach", session.as_str()])
            .env("TERM", "xterm-256color")
            .stdin(Stdio::from(slave.try_clone().map_err(io_err)?))
            .stdout(Stdio::from(slave.try_clone().map_err(io_err)?))
            .stderr(Stdio::from(slave));
        // SAFETY: setsid and ioctl are async-signal-safe; nothing is allocated.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(io_err)?;
        // `cmd` still holds the parent's copies of the slave; close them so EOF is seen.
        drop(cmd);

        let output = Arc::new(Notify::new());
        let drain = tokio::spawn(drain(master, output.clone()));
        let mut client = Self {
            child,
            drain,
            output: output.clone(),
        };

        loop {
            // notify_one stores a permit, so output that arrived before this await is not lost.
            if tokio::time::timeout_at(deadline, output.notified())
                .await
                .is_err()
            {
                return Err(ZellijError::Timeout {
                    what: format!("attaching a sizing client to session {session}"),
                    after: timeout,
                });
            }
            if client_count(cli, session, deadline).await? > 0 {
                // Zellij 0.45.1 can drop a client that connected just after a CLI call's
                // session probe (it removes the probe's client id twice, and ids are reused at
                // once). A second look after one more round trip catches that.
                let still_listed = client_count(cli, session, deadline).await? > 0;
                let running = matches!(client.child.try_wait(), Ok(None));
                if still_listed && running {
                    return Ok(client);
                }
            }
            if client.drain.is_finished() {
                return Err(ZellijError::NoEffect {
                    session: session.clone(),
                    what: "attach a client",
                    detail: "the client exited before the server listed it".to_owned(),
                });
            }
        }
    }

    /// Waits until the client writes to its terminal again (the server rendered to it), or
    /// until `deadline`; false at the deadline or once the client is gone.
    pub async fn next_render(&self, deadline: Instant) -> bool {
        if self.drain.is_finished() {
            return false;
        }
        tokio::time::timeout_at(deadline, self.output.notified())
            .await
            .is_ok()
    }

    /// The client's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Kills the client (SIGKILL) and reaps it. The server drops the client when it notices the
    /// closed socket, which may be a moment after this returns.
    pub async fn detach(mut self) {
        let _ = self.child.kill().await;
        self.drain.abort();
    }
}

impl Drop for PtyClient {
    fn drop(&mut self) {
        // kill_on_drop on the child sends SIGKILL; the drain ends on EIO or here.
        self.drain.abort();
    }
}

/// Clients the server lists for `session`; an empty reply is asked once more (see
/// `parse_clients`).
async fn client_count(cli: &ZellijCli, session: &SessionName, deadline: Instant) -> Result<usize> {
    let mut attempt = 1;
    loop {
        let listed = cli
            .action(
                session,
                "action list-clients",
                ["list-clients"],
                deadline.saturating_duration_since(Instant::now()),
            )
            .await?
            .success("action list-clients")?;
        match parse_clients(&listed.stdout) {
            Err(_) if attempt == 1 && listed.stdout.trim().is_empty() => attempt += 1,
            parsed => return Ok(parsed?.len()),
        }
    }
}

/// Reads and discards what the client writes to its terminal (it blocks on a full pty
/// otherwise), signalling each chunk and the end.
async fn drain(master: OwnedFd, output: Arc<Notify>) {
    drain_until_closed(master, &output).await;
    output.notify_one();
}

async fn drain_until_closed(master: OwnedFd, output: &Notify) {
    // SAFETY: an OwnedFd always reports the descriptor it owns, as `register` requires.
    let Ok(fd) = (unsafe { AsyncFd::register_with_interest(master, Interest::READABLE) }) else {
        return;
    };
    let mut buf = vec![0u8; 16 << 10];
    loop {
        let Ok(mut ready) = fd.readable().await else {
            return;
        };
        let read = ready.try_io(|inner| {
            // SAFETY: buf is valid for buf.len() bytes; fd is open for the lifetime of `inner`.
            let n = unsafe { libc::read(inner.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
        });
        match read {
            Ok(Ok(0)) | Ok(Err(_)) => return, // EOF or EIO: the client is gone
            Ok(Ok(_)) => output.notify_one(),
            Err(_would_block) => {}
        }
    }
}

/// Opens a pty pair of `size`: a non-blocking master and its slave.
fn open_pty(size: TermSize) -> std::io::Result<(OwnedFd, OwnedFd)> {
    let check = |ret: libc::c_int| {
        if ret < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(ret)
        }
    };
    // SAFETY: plain syscalls on descriptors this function owns; each returned descriptor is
    // wrapped in an OwnedFd right away so it is closed on every path.
    unsafe {
        let master = check(libc::posix_openpt(
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC | libc::O_NONBLOCK,
        ))?;
        let master = OwnedFd::from_raw_fd(master);
        let m: RawFd = master.as_raw_fd();
        check(libc::grantpt(m))?;
        check(libc::unlockpt(m))?;
        let slave = check(libc::ioctl(
            m,
            libc::TIOCGPTPEER,
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        ))?;
        let slave = OwnedFd::from_raw_fd(slave);
        let winsize = libc::winsize {
            ws_row: size.rows,
            ws_col: size.cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        check(libc::ioctl(m, libc::TIOCSWINSZ, &winsize))?;
        Ok((master, slave))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pty_has_the_requested_size() {
        let (_master, slave) = open_pty(TermSize {
            rows: 33,
            cols: 111,
        })
        .unwrap();
        let mut ws = libc::winsize {
            ws_row: 0,
            ws_col: 0,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: valid descriptor and out-pointer.
        assert_eq!(
            unsafe { libc::ioctl(slave.as_raw_fd(), libc::TIOCGWINSZ, &mut ws) },
            0
        );
        assert_eq!((ws.ws_row, ws.ws_col), (33, 111));
    }
}
