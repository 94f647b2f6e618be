//! Private tmux servers for tests: a unique `-L` socket per server, killed (and its socket file
//! removed — tmux leaves it behind) on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static NEXT_SOCKET: AtomicUsize = AtomicUsize::new(0);

/// A unique socket name for this test process; nothing runs on it until started.
pub(crate) fn unique_socket_name() -> String {
    format!(
        "muxgate-test-{}-{}",
        std::process::id(),
        NEXT_SOCKET.fetch_add(1, Ordering::Relaxed)
    )
}

/// A tmux server on a private socket with one session `main`, killed on drop.
pub(crate) struct TestTmux {
    pub socket: String,
    pub socket_path: PathBuf,
}

impl TestTmux {
    /// Starts a server (no tmux.conf read) with a detached 120x40 session `main` running `sh`.
    pub(crate) fn start() -> Self {
        let mut server = Self {
            socket: unique_socket_name(),
            socket_path: PathBuf::new(),
        };
        server.start_again();
        server.socket_path = server
            .ok(&["display-message", "-p", "#{socket_path}"])
            .trim()
            .into();
        server
    }

    /// (Re)starts the server after it was killed, with the same socket name.
    pub(crate) fn start_again(&self) {
        self.ok(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            "120",
            "-y",
            "40",
            "sh",
        ]);
        self.ok(&["set-option", "-g", "default-command", "sh"]);
    }

    /// The server's process id (`#{pid}`).
    pub(crate) fn server_pid(&self) -> u32 {
        let pid = self.ok(&["display-message", "-p", "#{pid}"]);
        pid.trim().parse().expect("tmux prints its pid")
    }

    /// `tmux -L <socket>` with a clean environment for tmux.
    pub(crate) fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command
            .args(["-L", &self.socket])
            .env_remove("TMUX")
            .stdin(Stdio::null());
        command
    }

    /// Runs a tmux command on this server through a subprocess (test-side checks only).
    pub(crate) fn tmux(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("run tmux")
    }

    /// Like [`Self::tmux`], asserting success; returns stdout.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.tmux(args);
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The id of the first pane of `target`.
    pub(crate) fn pane_id(&self, target: &str) -> muxgate_tmux::PaneId {
        self.ok(&["display-message", "-p", "-t", target, "#{pane_id}"])
            .trim()
            .parse()
            .expect("a pane id")
    }

    /// Splits `target`'s pane (the new pane in the background) and returns the new pane's id.
    pub(crate) fn split(&self, target: &str) -> muxgate_tmux::PaneId {
        self.ok(&["split-window", "-d", "-P", "-F", "#{pane_id}", "-t", target])
            .trim()
            .parse()
            .expect("a pane id")
    }

    /// Starts a detached 100×30 session `name` running `command` (through the default shell)
    /// and returns its pane's id (`%N`).
    pub(crate) fn session_running(&self, name: &str, command: &str) -> String {
        self.ok(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "100",
            "-y",
            "30",
            "-P",
            "-F",
            "#{pane_id}",
            command,
        ])
        .trim()
        .to_owned()
    }

    /// Splits `target`'s window with a new pane running `command` (through the default
    /// shell) and returns the new pane; focus stays.
    pub(crate) fn split_running(&self, target: &str, command: &str) -> muxgate_tmux::PaneId {
        self.ok(&[
            "split-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            target,
            command,
        ])
        .trim()
        .parse()
        .expect("a pane id")
    }

    /// Makes pane `target` record the next `len` bytes of its input into `out`, raw (no echo,
    /// no line editing, no signals), and returns the pane's id once it is ready. With
    /// `bracketed` the recorder first asks for bracketed paste.
    pub(crate) async fn record_input(
        &self,
        target: &str,
        out: &Path,
        len: usize,
        bracketed: bool,
    ) -> String {
        let enable = if bracketed {
            "printf '\\033[?2004h'; "
        } else {
            ""
        };
        let script = format!(
            "{enable}stty raw -echo; printf 'rec''ording'; head -c {len} > '{}'; sleep 600",
            out.display()
        );
        self.ok(&["respawn-pane", "-k", "-t", target, &script]);
        let pane = self
            .ok(&["display-message", "-p", "-t", target, "#{pane_id}"])
            .trim()
            .to_owned();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self
            .ok(&["capture-pane", "-p", "-t", &pane])
            .contains("recording")
        {
            assert!(Instant::now() < deadline, "the recorder did not start");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        pane
    }

    /// The muxgate control clients attached right now (`pid term` lines).
    pub(crate) fn muxgate_clients(&self) -> Vec<String> {
        let out = self.tmux(&["list-clients", "-F", "#{client_pid} #{client_termname}"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(" muxgate-"))
            .map(str::to_string)
            .collect()
    }

    /// Attaches a control-mode client whose terminal name is `term`; the child is killed when
    /// the returned guard drops.
    pub(crate) fn attach_control_client(&self, term: &str) -> ChildGuard {
        let child = self
            .command()
            .args(["-C", "attach-session", "-t", "main"])
            .env("TERM", term)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn tmux -C");
        ChildGuard(child)
    }

    /// Kills the server and waits until it has really exited (tmux exits asynchronously, and a
    /// client connecting meanwhile sees "server exited unexpectedly").
    pub(crate) fn kill_server(&self) {
        let _ = self.tmux(&["kill-server"]);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let out = self.tmux(&["list-sessions"]);
            let err = String::from_utf8_lossy(&out.stderr);
            if !out.status.success()
                && (err.contains("no server running") || err.contains("error connecting"))
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A `tmux` made in `dir` for an engine's `tmux_bin`: the shell `script`, which sees the
/// arguments as `"$@"` and runs the real tmux (found on `PATH`) itself.
pub(crate) fn tmux_wrapper(dir: &Path, script: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let wrapper = dir.join("tmux");
    std::fs::write(&wrapper, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    wrapper
}

/// An engine for `tmux`'s server with `settings`, and the token that shuts it down.
pub(crate) fn engine_for(
    tmux: &TestTmux,
    settings: muxgate_tmux::EngineSettings,
) -> (
    muxgate_tmux::TmuxServer,
    tokio_util::sync::CancellationToken,
) {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let server = muxgate_tmux::TmuxServer::start(
        "test",
        muxgate_tmux::TmuxSocket::Name(tmux.socket.clone()),
        std::sync::Arc::new(settings),
        shutdown.clone(),
    );
    (server, shutdown)
}

impl Drop for TestTmux {
    fn drop(&mut self) {
        self.kill_server();
        let _ = std::fs::remove_file(&self.socket_path);
    }
}

/// A tmux server's process stopped (SIGSTOP) until dropped, then let continue: calls on it
/// stay in flight, as on a server that stopped answering.
pub(crate) struct StoppedServer(libc::pid_t);

impl StoppedServer {
    pub(crate) fn new(tmux: &TestTmux) -> Self {
        let pid: libc::pid_t = tmux
            .ok(&["display-message", "-p", "#{pid}"])
            .trim()
            .parse()
            .unwrap();
        // SAFETY: kill(2) on the test's own tmux server process.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
        Self(pid)
    }
}

impl Drop for StoppedServer {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

/// A child process killed and reaped on drop.
pub(crate) struct ChildGuard(pub Child);

impl ChildGuard {
    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `path` holds content satisfying `done`, and returns it.
pub(crate) async fn wait_for_file(
    path: &Path,
    timeout: Duration,
    done: impl Fn(&[u8]) -> bool,
) -> Vec<u8> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(data) = std::fs::read(path)
            && done(&data)
        {
            return data;
        }
        assert!(
            Instant::now() < deadline,
            "{} never became complete",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
