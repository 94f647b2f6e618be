//! A real `muxgate serve` child process, for tests that need signals, process exit and the
//! process-wide parts (log format, trace export) that an in-process gateway does not have.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

/// A running `muxgate serve --config FILE --bind 127.0.0.1:0`; killed on drop if still running.
pub struct ServeProcess {
    child: Child,
    pub pid: libc::pid_t,
    /// `http://127.0.0.1:<port>` (or `https://…`).
    pub base: String,
    pub mcp_url: String,
    /// Where the process's stderr (its log) goes.
    pub log_path: PathBuf,
}

impl ServeProcess {
    /// Starts the process with `envs` added and waits for its banner. Its default state
    /// directory is beside the log (`XDG_STATE_HOME`), not the user's.
    pub async fn start(config: &Path, log_path: &Path, envs: &[(&str, &str)]) -> Self {
        Self::start_through(&[], config, log_path, envs).await
    }

    /// [`ServeProcess::start`] through `wrapper`, a command that ends by exec'ing the one it is
    /// given (`nsenter …`), so that the process's pid is the gateway's.
    pub async fn start_through(
        wrapper: &[&std::ffi::OsStr],
        config: &Path,
        log_path: &Path,
        envs: &[(&str, &str)],
    ) -> Self {
        let log = std::fs::File::create(log_path).expect("create the log file");
        let muxgate = std::ffi::OsStr::new(env!("CARGO_BIN_EXE_muxgate"));
        let (program, before) = match wrapper.split_first() {
            Some((program, args)) => (*program, [args, &[muxgate]].concat()),
            None => (muxgate, Vec::new()),
        };
        let mut command = tokio::process::Command::new(program);
        command
            .args(before)
            .arg("serve")
            .arg("--config")
            .arg(config)
            .args(["--bind", "127.0.0.1:0"])
            .env_remove("TMUX")
            .env_remove("MUXGATE_LOG")
            .env(
                "XDG_STATE_HOME",
                log_path.parent().unwrap_or(Path::new("/tmp")).join("state"),
            )
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn muxgate serve");
        let pid = child.id().expect("running") as libc::pid_t;
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mcp_url = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.expect("read stdout") {
                if let Some(url) = line.trim().strip_prefix("MCP endpoint: ") {
                    return url.to_owned();
                }
            }
            panic!(
                "serve exited before printing its endpoint; log:\n{}",
                std::fs::read_to_string(log_path).unwrap_or_default()
            );
        })
        .await
        .expect("banner within 30 s");
        // Keep reading stdout so the process never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            child,
            pid,
            base: mcp_url.trim_end_matches("/mcp").to_owned(),
            mcp_url,
            log_path: log_path.to_owned(),
        }
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped yet.
        assert_eq!(unsafe { libc::kill(self.pid, signal) }, 0, "kill({signal})");
    }

    /// Waits for the process to exit, at most `timeout`.
    pub async fn wait(&mut self, timeout: Duration) -> ExitStatus {
        tokio::time::timeout(timeout, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("muxgate serve still running after {timeout:?}"))
            .expect("wait for muxgate serve")
    }

    /// The log written so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }
}

/// Writes `dir/muxgate.toml` for a [`ServeProcess`]: tmux server `server` on `socket`, the test
/// secret, an audit log at `dir/audit.jsonl`, then `extra` (more TOML).
pub fn write_config(dir: &Path, server: &str, socket: &str, extra: &str) -> PathBuf {
    let path = dir.join("muxgate.toml");
    let text = format!(
        "[tmux.servers.{server}]\nsocket_name = '{socket}'\n\
         [auth]\nsecret = '{secret}'\n\
         [audit]\npath = '{audit}'\n{extra}",
        secret = super::TEST_SECRET,
        audit = dir.join("audit.jsonl").display(),
    );
    std::fs::write(&path, text).expect("write the config");
    path
}
