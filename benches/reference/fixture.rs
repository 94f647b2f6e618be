//! The tmux servers the benchmark drives: one private `-L` socket per server under test,
//! started with `-f /dev/null` and killed (socket file removed) when the [`BenchTmux`] is
//! dropped, so an error or panic anywhere leaves nothing running.
//!
//! [`Layout`] puts the same sessions on each server, so that muxgate and the reference
//! server do exactly the same work:
//! - `sink`: a pane running `cat > /dev/null` with echo off, so typed input is consumed and
//!   nothing redraws;
//! - `screen`: a 120x40 pane showing 40 full lines of text, which captures read;
//! - `shell`: a bash pane for `run_command`;
//! - `grid`: one session with 20 panes, which `list_panes` lists;
//! - `wake`: a pane running `cat <fifo>`, so the benchmark decides when text appears.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use tempfile::TempDir;

pub(crate) const SCREEN_COLS: usize = 120;
pub(crate) const SCREEN_ROWS: usize = 40;
pub(crate) const GRID_PANES: usize = 20;

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

/// One private tmux server.
pub(crate) struct BenchTmux {
    socket: String,
    socket_path: PathBuf,
    server_pid: u32,
}

impl BenchTmux {
    /// Starts a server on a socket unique to this process and `label`, with one session
    /// `base`. `path` replaces `PATH` for the server and every pane (the spawn counter puts its
    /// `tmux` first on it).
    pub(crate) fn start(label: &str, path: Option<&OsString>) -> Result<Self> {
        let socket = format!("muxgate-vs-ref-{}-{label}", std::process::id());
        let mut command = tmux_command(&socket);
        if let Some(path) = path {
            command.env("PATH", path);
        }
        let output = command
            .args(["-f", "/dev/null", "new-session", "-d", "-s", "base"])
            .args(["-x", "120", "-y", "40", "cat"])
            .output()
            .context("start tmux (is it on PATH?)")?;
        ensure!(
            output.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        let mut tmux = Self {
            socket,
            socket_path: PathBuf::new(),
            server_pid: 0,
        };
        tmux.socket_path = tmux.display("base", "#{socket_path}")?.into();
        tmux.server_pid = tmux
            .display("base", "#{pid}")?
            .parse()
            .context("tmux printed a bad server pid")?;
        // Large scrollback is the reference's and muxgate's problem alike; keep it small so
        // that 1,024 sessions stay cheap for the server.
        tmux.run_ok(&["set-option", "-g", "history-limit", "2000"])?;
        Ok(tmux)
    }

    pub(crate) fn socket(&self) -> &str {
        &self.socket
    }

    pub(crate) fn server_pid(&self) -> u32 {
        self.server_pid
    }

    /// Runs a tmux command through a subprocess (setup only) and returns its stdout.
    pub(crate) fn run_ok(&self, args: &[&str]) -> Result<String> {
        let output = tmux_command(&self.socket)
            .args(args)
            .output()
            .context("run tmux")?;
        ensure!(
            output.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        String::from_utf8(output.stdout).context("tmux printed non-UTF-8 text")
    }

    /// Expands `format` for `target`, trimmed.
    pub(crate) fn display(&self, target: &str, format: &str) -> Result<String> {
        Ok(self
            .run_ok(&["display-message", "-p", "-t", target, format])?
            .trim()
            .to_owned())
    }

    /// Creates a detached 120x40 session running `command` and returns its pane id.
    pub(crate) fn new_session(&self, name: &str, command: &[&str]) -> Result<String> {
        let mut args = vec![
            "new-session",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-s",
            name,
            "-x",
            "120",
            "-y",
            "40",
        ];
        args.extend_from_slice(command);
        Ok(self.run_ok(&args)?.trim().to_owned())
    }

    /// Waits until `pane` shows `needle` (setup only).
    pub(crate) fn wait_for_screen(
        &self,
        pane: &str,
        needle: &str,
        timeout: Duration,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let screen = self.run_ok(&["capture-pane", "-p", "-t", pane])?;
            if screen.contains(needle) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!("pane {pane} never showed {needle:?}; it shows:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for BenchTmux {
    fn drop(&mut self) {
        let _ = tmux_command(&self.socket)
            .arg("kill-server")
            .stderr(Stdio::null())
            .status();
        // tmux leaves its socket file behind when killed.
        let _ = std::fs::remove_file(&self.socket_path);
    }
}

/// The panes of the standard sessions on one server.
pub(crate) struct Layout {
    pub sink: String,
    pub screen: String,
    pub shell: String,
    /// The session holding [`GRID_PANES`] panes.
    pub grid_session: String,
    pub wake: String,
    /// Lines written here appear in the `wake` pane at once.
    pub wake_writer: File,
    _files: TempDir,
}

impl Layout {
    /// Creates the standard sessions on `tmux` and waits until they are ready.
    pub(crate) fn create(tmux: &BenchTmux) -> Result<Self> {
        let files = tempfile::tempdir().context("create a temporary directory")?;
        let screen_file = files.path().join("screen.txt");
        std::fs::write(&screen_file, screen_text()).context("write the screen text")?;
        let fifo = files.path().join("wake.fifo");
        mkfifo(&fifo)?;

        let sink = tmux.new_session("sink", &["sh", "-c", "stty -echo; exec cat > /dev/null"])?;
        let screen = tmux.new_session(
            "screen",
            &[
                "sh",
                "-c",
                "cat \"$1\"; exec sleep 2147483647",
                "sh",
                path_str(&screen_file)?,
            ],
        )?;
        let shell = tmux.new_session("shell", &["bash", "--norc", "--noprofile"])?;
        tmux.run_ok(&["send-keys", "-t", &shell, "-l", "--", "PS1='$ '; clear"])?;
        tmux.run_ok(&["send-keys", "-t", &shell, "Enter"])?;

        tmux.new_session("grid", &["cat"])?;
        tmux.run_ok(&["resize-window", "-t", "grid", "-x", "240", "-y", "80"])?;
        for _ in 1..GRID_PANES {
            tmux.run_ok(&["split-window", "-d", "-t", "grid", "cat"])?;
            tmux.run_ok(&["select-layout", "-t", "grid", "tiled"])?;
        }

        let wake = tmux.new_session(
            "wake",
            &["sh", "-c", "exec cat \"$1\"", "sh", path_str(&fifo)?],
        )?;
        // Opening the FIFO for writing waits for `cat` to open it for reading.
        let wake_writer = open_fifo_writer(&fifo, Duration::from_secs(10))?;

        tmux.wait_for_screen(&screen, ".", Duration::from_secs(10))?;
        tmux.wait_for_screen(&shell, "$", Duration::from_secs(10))?;
        let panes = tmux.run_ok(&["list-panes", "-s", "-t", "grid", "-F", "#{pane_id}"])?;
        ensure!(
            panes.lines().count() == GRID_PANES,
            "the grid session has {} panes, expected {GRID_PANES}",
            panes.lines().count()
        );
        Ok(Self {
            sink,
            screen,
            shell,
            grid_session: "grid".to_owned(),
            wake,
            wake_writer,
            _files: files,
        })
    }

    /// Makes `line` appear in the `wake` pane.
    pub(crate) fn print_in_wake_pane(&mut self, line: &str) -> Result<()> {
        writeln!(self.wake_writer, "{line}").context("write to the wake FIFO")
    }
}

pub(crate) fn path_str(path: &Path) -> Result<&str> {
    path.to_str()
        .context("the temporary directory's path is not UTF-8")
}

pub(crate) fn mkfifo(path: &Path) -> Result<()> {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .context("run mkfifo")?;
    ensure!(status.success(), "mkfifo {} failed", path.display());
    Ok(())
}

/// Opens the FIFO for writing in a thread, so that a reader that never comes is an error
/// rather than a hang.
pub(crate) fn open_fifo_writer(path: &Path, timeout: Duration) -> Result<File> {
    let path = path.to_owned();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(std::fs::OpenOptions::new().write(true).open(path));
    });
    receiver
        .recv_timeout(timeout)
        .context("the wake pane never opened its FIFO")?
        .context("open the wake FIFO")
}

/// [`SCREEN_ROWS`] lines of exactly [`SCREEN_COLS`] characters, like a busy build log, with no
/// newline after the last one so the screen does not scroll it away.
fn screen_text() -> String {
    let lines: Vec<String> = (0..SCREEN_ROWS)
        .map(|row| {
            let mut line = format!(
                "{row:>3} | Compiling module_{row:02} v0.{row}.0 (crates/module_{row:02}) warning: unused variable `x{row}` -> "
            );
            while line.len() < SCREEN_COLS {
                line.push_str("lorem ipsum dolor sit amet, consectetur adipiscing elit; ");
            }
            line.truncate(SCREEN_COLS - 1);
            line.push('.');
            line
        })
        .collect();
    lines.join("\n")
}
