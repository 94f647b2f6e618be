//! A real `muxgate serve` child process, for tests that need signals, process exit and the
//! process-wide parts (log format, trace export) that an in-process gateway does not have.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

/// A running `muxgate serve --config FILE --bind 127.0.0.1:0`; killed on drop if still running.
pub(crate) struct ServeProcess {
    child: Child,
    pub pid: libc::pid_t,
    /// `http://127.0.0.1:<port>` (or `https://…`).
    pub base: String,
    pub mcp_url: String,
    /// Where the process's stderr (its log) goes.
    pub log_path: PathBuf,
}

/// How a [`ServeProcess`] is started beyond its config, log and environment: the circumstances
/// a service manager or container runtime gives a real gateway.
#[derive(Default)]
pub(crate) struct ServeOptions {
    /// The working directory (a relative `--config` is read from it).
    pub cwd: Option<PathBuf>,
    /// The user and group it runs as (the test runs as root).
    pub run_as: Option<(u32, u32)>,
    /// Starts it in a session keyring of its own, named so (systemd services and container
    /// runtimes give their processes one).
    pub session_keyring: Option<&'static std::ffi::CStr>,
    /// A descriptor it inherits at this number, without close-on-exec (as from a parent that
    /// did not set the flag).
    pub inherited_fd: Option<(std::os::fd::OwnedFd, i32)>,
    /// A command it is started through, one that ends by exec'ing the one it is given
    /// (`nsenter …`), so that the process's pid is the gateway's.
    pub wrapper: Vec<std::ffi::OsString>,
}

impl ServeProcess {
    /// Starts the process with `envs` added and waits for its banner. Its default state
    /// directory is beside the log (`XDG_STATE_HOME`), not the user's.
    pub(crate) async fn start(config: &Path, log_path: &Path, envs: &[(&str, &str)]) -> Self {
        Self::start_with(config, log_path, envs, ServeOptions::default()).await
    }

    /// [`ServeProcess::start`] through `wrapper`, a command that ends by exec'ing the one it is
    /// given (`nsenter …`), so that the process's pid is the gateway's.
    pub(crate) async fn start_through(
        wrapper: &[&std::ffi::OsStr],
        config: &Path,
        log_path: &Path,
        envs: &[(&str, &str)],
    ) -> Self {
        let options = ServeOptions {
            wrapper: wrapper.iter().map(|arg| arg.to_os_string()).collect(),
            ..ServeOptions::default()
        };
        Self::start_with(config, log_path, envs, options).await
    }

    /// [`Self::start`] in the circumstances `options` describe.
    pub(crate) async fn start_with(
        config: &Path,
        log_path: &Path,
        envs: &[(&str, &str)],
        options: ServeOptions,
    ) -> Self {
        let log = std::fs::File::create(log_path).expect("create the log file");
        let muxgate = std::ffi::OsStr::new(env!("CARGO_BIN_EXE_muxgate"));
        let (program, before) = match options.wrapper.split_first() {
            Some((program, args)) => (program.as_os_str(), [args, &[muxgate.into()]].concat()),
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
        if let Some(cwd) = &options.cwd {
            command.current_dir(cwd);
        }
        let ServeOptions {
            run_as,
            session_keyring,
            inherited_fd,
            ..
        } = options;
        let inherited = inherited_fd.as_ref().map(|(fd, at)| {
            use std::os::fd::AsRawFd;
            (fd.as_raw_fd(), *at)
        });
        // SAFETY: the closure runs in the forked child before exec and makes only
        // async-signal-safe system calls (dup2, setgroups, setgid, setuid, keyctl).
        unsafe {
            command.pre_exec(move || {
                if let Some((fd, at)) = inherited {
                    // dup2 leaves the new descriptor without close-on-exec.
                    if libc::dup2(fd, at) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if let Some((uid, gid)) = run_as
                    && (libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setgid(gid) != 0
                        || libc::setuid(uid) != 0)
                {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(name) = session_keyring {
                    // KEYCTL_JOIN_SESSION_KEYRING
                    if libc::syscall(libc::SYS_keyctl, 1, name.as_ptr()) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let mut child = command.spawn().expect("spawn muxgate serve");
        drop(inherited_fd);
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
    pub(crate) fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped yet.
        assert_eq!(unsafe { libc::kill(self.pid, signal) }, 0, "kill({signal})");
    }

    /// Waits for the process to exit, at most `timeout`.
    pub(crate) async fn wait(&mut self, timeout: Duration) -> ExitStatus {
        tokio::time::timeout(timeout, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("muxgate serve still running after {timeout:?}"))
            .expect("wait for muxgate serve")
    }

    /// The log written so far.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }
}

/// A test that fails beside a gateway shows the gateway's log: the cause of an `unavailable` or
/// `internal` answer is written there, not sent to the client.
impl Drop for ServeProcess {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- the gateway's log ({}) ---\n{}",
                self.log_path.display(),
                self.log()
            );
        }
    }
}

/// Writes `dir/muxgate.toml` for a [`ServeProcess`]: tmux server `server` on `socket`, the test
/// secret, an audit log at `dir/audit.jsonl`, then `extra` (more TOML).
pub(crate) fn write_config(dir: &Path, server: &str, socket: &str, extra: &str) -> PathBuf {
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
