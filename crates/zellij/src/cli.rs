//! Runs `zellij` subprocesses: one short-lived CLI client per call, plus long-lived streaming
//! children for `subscribe`.
//!
//! Rules every child follows:
//! - arguments go as argv, never through a shell;
//! - the environment is explicit: `ZELLIJ`, `ZELLIJ_SESSION_NAME` and `ZELLIJ_PANE_ID` are removed
//!   (a gateway started inside a Zellij pane would otherwise act on "its" pane or session), and
//!   the configured socket dir, `HOME`, `TMPDIR` and config file are set;
//! - stdin is `/dev/null`; stdout and stderr are read with a size cap;
//! - every call has a timeout; a child outliving its call is killed (`kill_on_drop`), and
//!   `PR_SET_PDEATHSIG` kills it if muxgate itself dies.
//!
//! This module knows nothing of what the commands mean; see `backend` for that.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use muxgate_mux::child_process;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};

use super::error::{Result, ZellijError};
use super::ids::SessionName;

/// Variables a process inside a Zellij pane inherits and the CLI would obey.
const INHERITED_ZELLIJ_VARS: [&str; 3] = ["ZELLIJ", "ZELLIJ_SESSION_NAME", "ZELLIJ_PANE_ID"];

/// Where and how `zellij` processes run.
#[derive(Debug, Clone)]
pub struct ZellijEnv {
    /// The `zellij` executable (a bare name is looked up on `PATH`).
    pub binary: PathBuf,
    /// `ZELLIJ_SOCKET_DIR`: only sessions whose sockets live here are visible.
    pub socket_dir: Option<PathBuf>,
    /// `HOME` for Zellij (its config, cache and plugin data live below it). Setting it also
    /// removes the `XDG_*_HOME` variables so that nothing escapes to the caller's home.
    pub home: Option<PathBuf>,
    /// `TMPDIR` (Zellij writes its log below it).
    pub tmp_dir: Option<PathBuf>,
    /// `ZELLIJ_CONFIG_FILE`.
    pub config_file: Option<PathBuf>,
    /// Working directory of new sessions (their first pane starts there).
    pub session_cwd: Option<PathBuf>,
    /// Cap on the stdout of one CLI call (full scrollback dumps can be large).
    pub max_output_bytes: usize,
}

impl ZellijEnv {
    /// Default settings for `binary`: inherit everything except the Zellij pane variables.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        Self {
            binary: binary.into(),
            socket_dir: None,
            home: None,
            tmp_dir: None,
            config_file: None,
            session_cwd: None,
            max_output_bytes: 32 << 20,
        }
    }
}

/// What a finished CLI call produced.
#[derive(Debug)]
pub struct CliOutput {
    /// How the process ended.
    pub status: ExitStatus,
    /// What it printed on its standard output.
    pub stdout: String,
    /// What it printed on its standard error.
    pub stderr: String,
}

impl CliOutput {
    /// `Ok(self)` when the process exited 0, else [`ZellijError::CommandFailed`].
    pub fn success(self, label: &str) -> Result<Self> {
        if self.status.success() {
            Ok(self)
        } else {
            Err(ZellijError::CommandFailed {
                command: label.to_owned(),
                status: describe_status(self.status),
                stderr: first_lines(&self.stderr),
            })
        }
    }
}

/// Builds and runs `zellij` commands for one configured server.
#[derive(Debug, Clone)]
pub struct ZellijCli {
    env: ZellijEnv,
}

impl ZellijCli {
    /// Only this crate runs `zellij`: a raw argument list is the crate's to write.
    pub(crate) fn new(env: ZellijEnv) -> Self {
        Self { env }
    }

    /// A client for tests and benchmarks, which drive a session directly; only with the
    /// crate's `test-util` feature, which only dev-dependencies enable.
    #[cfg(feature = "test-util")]
    pub fn for_test(env: ZellijEnv) -> Self {
        Self::new(env)
    }

    /// A `zellij` command with the isolation rules applied and no arguments yet.
    pub fn command(&self) -> Command {
        let env = &self.env;
        let mut cmd = Command::new(&env.binary);
        for var in INHERITED_ZELLIJ_VARS {
            cmd.env_remove(var);
        }
        if let Some(dir) = &env.socket_dir {
            cmd.env("ZELLIJ_SOCKET_DIR", dir);
        }
        if let Some(home) = &env.home {
            cmd.env("HOME", home);
            for var in [
                "XDG_CONFIG_HOME",
                "XDG_CACHE_HOME",
                "XDG_DATA_HOME",
                "XDG_RUNTIME_DIR",
            ] {
                cmd.env_remove(var);
            }
        }
        if let Some(tmp) = &env.tmp_dir {
            cmd.env("TMPDIR", tmp);
        }
        if let Some(config) = &env.config_file {
            cmd.env("ZELLIJ_CONFIG_FILE", config);
        }
        if let Some(cwd) = &env.session_cwd {
            cmd.current_dir(cwd);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // A command that starts a session starts the Zellij server, and every pane inherits
        // its signal dispositions: none ignored, or Ctrl-C interrupts nothing there.
        // SAFETY: the closure makes only async-signal-safe calls (signal, close_range or
        // fcntl, getrlimit) and allocates nothing.
        unsafe {
            cmd.pre_exec(|| {
                child_process::restore_default_signals()?;
                child_process::mark_inherited_fds_cloexec()
            });
        }
        set_parent_death_signal(&mut cmd);
        cmd
    }

    /// Runs `zellij <args>` to completion within `timeout`.
    ///
    /// `label` names the call in errors and must not contain client text (keystrokes are never
    /// echoed into error messages or logs).
    pub async fn run<I, S>(&self, label: &str, args: I, timeout: Duration) -> Result<CliOutput>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.command();
        cmd.args(args);
        let fut = run_to_end(cmd, label, &self.env, self.env.max_output_bytes);
        match tokio::time::timeout(timeout, fut).await {
            Ok(result) => result,
            // Dropping the future dropped the child, and `kill_on_drop` killed it.
            Err(_) => Err(ZellijError::Timeout {
                what: format!("`zellij {label}`"),
                after: timeout,
            }),
        }
    }

    /// Runs `zellij --session <session> action <args>`.
    ///
    /// Before sending an action the CLI probes every session's socket, and under load Zellij
    /// 0.45.1 sometimes fails that probe for a live session (it reuses client ids at once, see
    /// `watch`): the CLI then prints "There is no active session!" or "Session … not found",
    /// sometimes with exit code 0, and sends nothing. Such a call is retried at once, twice at
    /// most, so a retry cannot repeat an action; if it persists the session is reported missing.
    pub async fn action<I, S>(
        &self,
        session: &SessionName,
        label: &str,
        args: I,
        timeout: Duration,
    ) -> Result<CliOutput>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut full: Vec<OsString> =
            vec!["--session".into(), session.as_str().into(), "action".into()];
        full.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        for _ in 0..3 {
            let out = self.run(label, &full, timeout).await?;
            if !is_session_probe_failure(&out.stderr) {
                return Ok(out);
            }
        }
        Err(ZellijError::NoSuchSession {
            session: session.clone(),
        })
    }

    /// Starts a long-running `zellij <args>` whose stdout the caller reads (e.g. `subscribe`).
    pub fn spawn<I, S>(&self, label: &str, args: I) -> Result<Child>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.command();
        cmd.args(args);
        cmd.spawn().map_err(|e| spawn_error(label, &self.env, e))
    }
}

async fn run_to_end(
    mut cmd: Command,
    label: &str,
    env: &ZellijEnv,
    limit: usize,
) -> Result<CliOutput> {
    let mut child = cmd.spawn().map_err(|e| spawn_error(label, env, e))?;
    let io_err = |source| ZellijError::Io {
        command: label.to_owned(),
        source,
    };
    // Invariant: both pipes were requested in `command()`.
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let (out, err) = tokio::try_join!(read_capped(stdout, limit), read_capped(stderr, 64 << 10))
        .map_err(io_err)?;
    let status = child.wait().await.map_err(io_err)?;
    let Some(stdout) = out else {
        return Err(ZellijError::OutputTooLarge {
            command: label.to_owned(),
            limit,
        });
    };
    Ok(CliOutput {
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        // A truncated stderr is still useful in an error message.
        stderr: String::from_utf8_lossy(&err.unwrap_or_default()).into_owned(),
    })
}

/// Reads to EOF; `None` if the stream had more than `limit` bytes.
async fn read_capped(
    reader: impl AsyncRead + Unpin,
    limit: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    let mut limited = reader.take(cap);
    limited.read_to_end(&mut buf).await?;
    if buf.len() > limit {
        // Drain the rest so the child is not blocked on a full pipe before it is reaped.
        tokio::io::copy(&mut limited.into_inner(), &mut tokio::io::sink()).await?;
        return Ok(None);
    }
    Ok(Some(buf))
}

fn spawn_error(label: &str, env: &ZellijEnv, source: std::io::Error) -> ZellijError {
    if source.kind() == std::io::ErrorKind::NotFound {
        ZellijError::NotInstalled {
            binary: env.binary.clone(),
            source,
        }
    } else {
        ZellijError::Io {
            command: label.to_owned(),
            source,
        }
    }
}

/// Whether a failed CLI call reported that it found no (such) session, which it prints before
/// sending any action.
pub fn is_session_probe_failure(stderr: &str) -> bool {
    stderr.contains("There is no active session!")
        || stderr.contains("not found. The following sessions are active")
}

/// `exit 3`, `signal 9`.
pub fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code.to_string(),
        (None, Some(sig)) => format!("signal {sig}"),
        (None, None) => "unknown".to_owned(),
    }
}

/// The first few lines of a diagnostic, enough for an error message.
pub fn first_lines(text: &str) -> String {
    let mut out: String = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(4)
        .collect::<Vec<_>>()
        .join(" | ");
    if out.len() > 500 {
        let cut = (0..=500)
            .rev()
            .find(|&i| out.is_char_boundary(i))
            .unwrap_or(0);
        out.truncate(cut);
        out.push('…');
    }
    if out.is_empty() {
        out.push_str("(no message)");
    }
    out
}

/// Kill the child if muxgate dies, so no `zellij` client outlives the gateway.
///
/// The signal fires when the *thread* that forked exits; tokio spawns from runtime threads that
/// live as long as the runtime, which is the lifetime wanted here.
fn set_parent_death_signal(cmd: &mut Command) {
    // SAFETY: `getpid` is async-signal-safe and runs in the parent here.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and only calls async-signal-safe functions
    // (prctl, getppid); it allocates nothing on the success path.
    unsafe {
        cmd.pre_exec(move || child_process::die_with_parent(parent));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_lines_is_short_and_never_empty() {
        assert_eq!(first_lines(""), "(no message)");
        assert_eq!(first_lines("a\n\nb\nc\nd\ne"), "a | b | c | d");
        let long = "é".repeat(400);
        let cut = first_lines(&long);
        assert!(cut.len() <= 504 && cut.ends_with('…'));
    }

    #[tokio::test]
    async fn missing_binary_is_not_installed() {
        let cli = ZellijCli::new(ZellijEnv::new("/nonexistent/zellij-binary"));
        let err = cli
            .run("--version", ["--version"], Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(err, ZellijError::NotInstalled { .. }), "{err}");
        assert!(err.to_string().contains("scripts/install-zellij"));
    }

    #[tokio::test]
    async fn output_cap_and_timeout_apply() {
        // Any program stands in for zellij here: the runner does not interpret arguments.
        let mut env = ZellijEnv::new("/bin/sh");
        env.max_output_bytes = 10;
        let cli = ZellijCli::new(env);
        let err = cli
            .run("sh", ["-c", "printf 0123456789ABC"], Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ZellijError::OutputTooLarge { limit: 10, .. }),
            "{err}"
        );

        let out = cli
            .run(
                "sh",
                ["-c", "printf 0123456789; echo oops >&2; exit 3"],
                Duration::from_secs(5),
            )
            .await
            .unwrap();
        assert_eq!(out.stdout, "0123456789");
        let err = out.success("sh").unwrap_err();
        assert_eq!(err.to_string(), "`zellij sh` failed (exit 3): oops");

        let started = std::time::Instant::now();
        let err = cli
            .run("sh", ["-c", "sleep 10"], Duration::from_millis(100))
            .await
            .unwrap_err();
        assert!(matches!(err, ZellijError::Timeout { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn inherited_zellij_variables_are_removed() {
        let cli = ZellijCli::new(ZellijEnv {
            socket_dir: Some("/sock".into()),
            ..ZellijEnv::new("/bin/sh")
        });
        let cmd = cli.command();
        let envs: Vec<_> = cmd.as_std().get_envs().collect();
        for var in INHERITED_ZELLIJ_VARS {
            assert!(
                envs.iter()
                    .any(|(k, v)| *k == OsStr::new(var) && v.is_none()),
                "{var} is not removed"
            );
        }
        assert!(envs.contains(&(OsStr::new("ZELLIJ_SOCKET_DIR"), Some(OsStr::new("/sock")))));
    }
}
