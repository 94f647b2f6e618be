//! The tmux server the benchmark drives: a private `-L` socket started with `-f /dev/null`,
//! killed (and its socket file removed) when the [`BenchTmux`] is dropped.
//!
//! It holds two detached 120x40 sessions:
//! - `typing`: a pane running `cat > /dev/null` with echo off, so `send-keys` input is consumed
//!   and nothing is redrawn;
//! - `screen`: a pane showing 40 full lines of text, which `capture-pane` reads.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use muxgate_tmux::PaneId;
use tempfile::NamedTempFile;

pub(crate) const SCREEN_COLS: usize = 120;
pub(crate) const SCREEN_ROWS: usize = 40;

/// A `tmux -L <socket>` command with the environment of a tool started outside tmux.
pub(crate) fn tmux_command(socket: &str) -> Command {
    let mut command = Command::new("tmux");
    command
        .args(["-L", socket])
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null());
    command
}

/// Kills the server on drop, so that an error or panic anywhere leaves nothing running.
struct ServerGuard {
    socket: String,
    socket_path: Option<PathBuf>,
}

impl Drop for ServerGuard {
    fn drop(&mut self) {
        let _ = tmux_command(&self.socket)
            .arg("kill-server")
            .stderr(Stdio::null())
            .status();
        // tmux leaves its socket file behind when killed.
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The benchmark's private tmux server.
pub(crate) struct BenchTmux {
    guard: ServerGuard,
    server_pid: u32,
    typing_pane: PaneId,
    screen_pane: PaneId,
    /// The text shown in the screen pane; kept until the server is gone.
    _screen_file: NamedTempFile,
}

impl BenchTmux {
    /// Starts the server with its two sessions and waits until the screen pane is full.
    pub(crate) fn start() -> Result<Self> {
        let socket = format!("muxgate-bench-{}", std::process::id());
        let screen_file = write_screen_text()?;
        run_ok(
            &socket,
            &[
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "typing",
                "-x",
                "120",
                "-y",
                "40",
                "sh",
                "-c",
                "stty -echo; exec cat > /dev/null",
            ],
        )
        .context("start the benchmark's tmux server")?;
        let mut guard = ServerGuard {
            socket,
            socket_path: None,
        };
        let screen_path = screen_file
            .path()
            .to_str()
            .context("the temporary file's path is not UTF-8")?;
        run_ok(
            &guard.socket,
            &[
                "new-session",
                "-d",
                "-s",
                "screen",
                "-x",
                "120",
                "-y",
                "40",
                "sh",
                "-c",
                "cat \"$1\"; exec sleep 2147483647",
                "sh",
                screen_path,
            ],
        )?;
        guard.socket_path = Some(display(&guard.socket, "typing", "#{socket_path}")?.into());
        let server_pid = display(&guard.socket, "typing", "#{pid}")?
            .parse()
            .context("tmux printed a bad server pid")?;
        let tmux = Self {
            typing_pane: pane_of(&guard.socket, "typing")?,
            screen_pane: pane_of(&guard.socket, "screen")?,
            server_pid,
            guard,
            _screen_file: screen_file,
        };
        tmux.wait_for_full_screen(Duration::from_secs(10))?;
        Ok(tmux)
    }

    pub(crate) fn socket(&self) -> &str {
        &self.guard.socket
    }

    pub(crate) fn server_pid(&self) -> u32 {
        self.server_pid
    }

    /// The pane that consumes `send-keys` input.
    pub(crate) fn typing_pane(&self) -> PaneId {
        self.typing_pane
    }

    /// The pane with a full screen of text.
    pub(crate) fn screen_pane(&self) -> PaneId {
        self.screen_pane
    }

    /// Runs a tmux command through a subprocess (setup only) and returns its stdout.
    pub(crate) fn run_ok(&self, args: &[&str]) -> Result<String> {
        run_ok(self.socket(), args)
    }

    /// The pids of this process's control clients (they carry a `TERM` marker with our pid).
    pub(crate) fn control_client_pids(&self) -> Result<Vec<u32>> {
        let marker = muxgate_tmux::client::spawn::term_marker();
        let clients = self.run_ok(&["list-clients", "-F", "#{client_pid} #{client_termname}"])?;
        clients
            .lines()
            .filter_map(|line| line.split_once(' '))
            .filter(|(_, term)| *term == marker)
            .map(|(pid, _)| pid.parse().context("tmux printed a bad client pid"))
            .collect()
    }

    fn wait_for_full_screen(&self, timeout: Duration) -> Result<()> {
        let size = display(self.socket(), "screen", "#{pane_width}x#{pane_height}")?;
        ensure!(
            size == format!("{SCREEN_COLS}x{SCREEN_ROWS}"),
            "the screen pane is {size}, expected {SCREEN_COLS}x{SCREEN_ROWS}"
        );
        let target = self.screen_pane.to_string();
        let deadline = Instant::now() + timeout;
        loop {
            let screen = self.run_ok(&["capture-pane", "-p", "-t", &target])?;
            let full = screen.lines().count() == SCREEN_ROWS
                && screen.lines().all(|line| line.len() == SCREEN_COLS);
            if full {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!("the screen pane never filled up; it shows:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn run_ok(socket: &str, args: &[&str]) -> Result<String> {
    let output = tmux_command(socket)
        .args(args)
        .output()
        .context("run tmux (is it on PATH?)")?;
    ensure!(
        output.status.success(),
        "tmux {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    String::from_utf8(output.stdout).context("tmux printed non-UTF-8 text")
}

/// Expands `format` for `target`, trimmed.
fn display(socket: &str, target: &str, format: &str) -> Result<String> {
    Ok(
        run_ok(socket, &["display-message", "-p", "-t", target, format])?
            .trim()
            .to_owned(),
    )
}

fn pane_of(socket: &str, session: &str) -> Result<PaneId> {
    let id = display(socket, session, "#{pane_id}")?;
    id.parse()
        .with_context(|| format!("pane of session {session}"))
}

/// Writes the screen pane's text to a temporary file: [`SCREEN_ROWS`] lines of exactly
/// [`SCREEN_COLS`] characters, like a busy build log, with no newline after the last one so the
/// screen does not scroll it away.
fn write_screen_text() -> Result<NamedTempFile> {
    let mut file = NamedTempFile::new().context("create a temporary file")?;
    let lines: Vec<String> = (0..SCREEN_ROWS).map(screen_line).collect();
    file.write_all(lines.join("\n").as_bytes())
        .context("write the screen text")?;
    Ok(file)
}

fn screen_line(row: usize) -> String {
    let mut line = format!(
        "{row:>3} | Compiling module_{row:02} v0.{row}.0 (crates/module_{row:02}) warning: unused variable `x{row}` -> "
    );
    while line.len() < SCREEN_COLS {
        line.push_str("lorem ipsum dolor sit amet, consectetur adipiscing elit; ");
    }
    line.truncate(SCREEN_COLS - 1);
    // capture-pane drops trailing spaces; end every line on a visible character.
    line.push('.');
    line
}
