//! Private tmux servers for tests: a unique socket name per server, killed on drop.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A tmux server on a private `-L` socket with one session `main`, killed on drop.
pub struct TestTmux {
    pub socket: String,
}

impl TestTmux {
    /// Starts a server with a detached 120x40 session named `main` running `sh`.
    pub fn start() -> Self {
        let socket = format!(
            "muxgate-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let server = Self { socket };
        server.start_again();
        server
    }

    /// (Re)starts the server after it was killed, with the same socket name.
    pub fn start_again(&self) {
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
        // Keep the default shell quiet and predictable for tests that read the screen.
        self.ok(&["set-option", "-g", "default-command", "sh"]);
    }

    /// Runs a tmux command on this server through a subprocess (test-side checks only).
    pub fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("run tmux")
    }

    /// Like [`Self::tmux`], asserting success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.tmux(args);
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The muxgate control clients attached right now (`pid term` lines).
    pub fn muxgate_clients(&self) -> Vec<String> {
        let out = self.tmux(&["list-clients", "-F", "#{client_pid} #{client_termname}"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(" muxgate-"))
            .map(str::to_string)
            .collect()
    }

    /// Kills the server and waits until it has really exited (tmux exits asynchronously, and a
    /// client connecting meanwhile sees "server exited unexpectedly").
    pub fn kill_server(&self) {
        let _ = self.tmux(&["kill-server"]);
        Self::eventually(Duration::from_secs(5), || {
            let out = self.tmux(&["list-sessions"]);
            let err = String::from_utf8_lossy(&out.stderr);
            !out.status.success()
                && (err.contains("no server running") || err.contains("error connecting"))
        });
    }

    /// Polls `check` (a test-side observation, not product code) until it holds or `timeout`.
    pub fn eventually(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if check() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        check()
    }
}

impl Drop for TestTmux {
    fn drop(&mut self) {
        self.kill_server();
    }
}

/// Waits until `path` exists and its content satisfies `done`, returning the content.
pub fn wait_for_file(path: &Path, timeout: Duration, done: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let start = Instant::now();
    loop {
        if let Ok(data) = std::fs::read(path)
            && (done(&data) || start.elapsed() > timeout)
        {
            return data;
        }
        assert!(
            start.elapsed() < timeout,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
