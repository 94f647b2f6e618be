//! A workspace's sandbox as a process: starting it, recognising it again, stopping it.
//!
//! The sandbox (`bwrap`, then `prlimit`, then `tmux -D`) is started in a session of its own
//! and without a parent-death signal, so that it outlives the gateway: a restarted gateway
//! finds it through `server.pid` in the workspace's directory, which records the process id
//! *and* its start time (a recycled pid is not mistaken for it). While the gateway runs it
//! also reaps the process when it exits.
//!
//! What the sandbox inherits is chosen, not left over: before it runs anything it joins its
//! memory cgroup ([`super::cgroup`]), takes the workspace's user, gets a session keyring of
//! its own (the gateway's, which a service manager or container runtime gives it, would be
//! shared by every workspace) and marks every descriptor but its standard ones close-on-exec
//! (a descriptor the gateway inherited without that flag would reach every tenant). Its
//! standard error is a pipe the gateway reads only while the sandbox starts, at most
//! [`START_OUTPUT_BYTES`], and then closes: tmux's server keeps that descriptor, and a tenant
//! reaches it through `/proc`, so it must lead nowhere the gateway keeps reading or storing.

use std::fs;
use std::io;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use muxgate_mux::child_process::mark_inherited_fds_cloexec;
use tokio::io::AsyncReadExt;

use super::cgroup::Membership;
use super::host::Host;
use super::layout::Layout;
use super::sandbox::{MountSizes, ProcessLimits, WorkspaceDirs, server_command, server_env};
use crate::state::write_private;
use muxgate_tmux::RunAs;
use muxgate_tmux::client::spawn::become_user;

/// The file recording the sandbox process, in the workspace's directory.
const PID_FILE: &str = "server.pid";
/// The socket, in the workspace's `run` directory.
const SOCKET_FILE: &str = "tmux.sock";
/// Most bytes of the sandbox's standard error read while it starts (the rest is not read).
const START_OUTPUT_BYTES: usize = 64 * 1024;
/// How long an error message quoted from the sandbox may be, in characters.
const QUOTED_CHARS: usize = 300;

/// `keyctl(2)` operation: join a new anonymous session keyring.
const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;

/// How one sandbox is started.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The user it runs as, when workspaces have uids of their own.
    pub run_as: Option<RunAs>,
    pub limits: ProcessLimits,
    pub sizes: MountSizes,
    /// The memory cgroup it joins, when there is one.
    pub cgroup: Option<Membership>,
}

/// A running process, recognisable after a pid is reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcessId {
    pub pid: i32,
    /// Clock ticks after boot (`/proc/<pid>/stat` field 22).
    pub start_time: u64,
}

/// Why a sandbox did not start. What the sandbox printed is quoted escaped: a tenant's files
/// (its home's tmux configuration) may put any bytes there.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("could not start the sandbox: {0}")]
    Spawn(io::Error),
    #[error("the sandbox exited at once: {0}")]
    Exited(String),
    #[error("the workspace's tmux server did not come up within {0:?}")]
    Timeout(Duration),
}

/// The sandbox process of the workspace in `dir`, if it runs.
pub(crate) fn running(dir: &Path) -> Option<ProcessId> {
    let text = fs::read_to_string(dir.join(PID_FILE)).ok()?;
    let (pid, start) = text.trim().split_once(' ')?;
    let recorded = ProcessId {
        pid: pid.parse().ok()?,
        start_time: start.parse().ok()?,
    };
    (process_start_time(recorded.pid) == Some(recorded.start_time)).then_some(recorded)
}

/// Starts the sandbox of the workspace in `dir` and waits until its tmux server listens.
pub(crate) async fn start(
    host: &Host,
    dir: &Path,
    plan: Plan,
    timeout: Duration,
) -> Result<ProcessId, LaunchError> {
    let dirs = Layout::dirs(dir);
    let socket = dirs.run.join(SOCKET_FILE);
    let mut child = sandbox_process(host, &dirs, plan)
        .spawn()
        .map_err(LaunchError::Spawn)?;
    let mut output = StartOutput::new(child.stderr.take());
    let pid = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .ok_or_else(|| LaunchError::Exited("no process id".into()))?;
    let id = ProcessId {
        pid,
        start_time: process_start_time(pid).unwrap_or_default(),
    };
    write_private(
        &dir.join(PID_FILE),
        format!("{} {}\n", id.pid, id.start_time).as_bytes(),
    )
    .map_err(LaunchError::Spawn)?;
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if is_socket(&socket) {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            output.drain(Duration::from_millis(100)).await;
            return Err(LaunchError::Exited(format!(
                "{status}: {}",
                output.last_line()
            )));
        }
        if tokio::time::Instant::now() >= deadline {
            let _ = child.start_kill();
            return Err(LaunchError::Timeout(timeout));
        }
        output.read_for(Duration::from_millis(5)).await;
    }
    // From here on nothing the sandbox writes there reaches the gateway.
    drop(output);
    // Reaped here while the gateway runs; after a gateway restart its new parent reaps it.
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    Ok(id)
}

/// The sandbox's process, set up to inherit only what it is given.
fn sandbox_process(host: &Host, dirs: &WorkspaceDirs, plan: Plan) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(&host.spec.bwrap);
    command
        .args(server_command(
            &host.spec,
            &host.view,
            dirs,
            plan.sizes,
            &plan.limits,
        ))
        .env_clear()
        .envs(server_env(std::env::var_os("TZ").as_deref()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(false);
    let Plan { run_as, cgroup, .. } = plan;
    // SAFETY: the closure runs in the forked child before exec and only makes system calls
    // that are async-signal-safe (setsid, open/write/close, setgroups, setgid, setuid,
    // keyctl, close_range or fcntl); it does not allocate.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            // Joined while still privileged: cgroup.procs is root's.
            if let Some(cgroup) = &cgroup {
                cgroup.join()?;
            }
            if let Some(run_as) = run_as {
                become_user(run_as)?;
            }
            // As the workspace's user, so that the keyring is that user's.
            if libc::syscall(
                libc::SYS_keyctl,
                KEYCTL_JOIN_SESSION_KEYRING,
                std::ptr::null::<libc::c_char>(),
            ) < 0
            {
                let error = io::Error::last_os_error();
                // A container runtime's seccomp profile refuses keyring calls to the gateway
                // and so to everything the sandbox runs: no keyring to share, none to make.
                if !matches!(
                    error.raw_os_error(),
                    Some(libc::ENOSYS | libc::EPERM | libc::EACCES)
                ) {
                    return Err(error);
                }
            }
            mark_inherited_fds_cloexec()
        });
    }
    command
}

/// Kills the sandbox `id` and everything in it (its init is killed, which ends its pid
/// namespace), then waits up to `timeout` for it to be gone.
pub(crate) async fn kill(id: ProcessId, timeout: Duration) -> bool {
    for target in children(id.pid).into_iter().chain([id.pid]) {
        // SAFETY: kill(2) with a pid we just read from /proc and a valid signal.
        unsafe {
            libc::kill(target, libc::SIGKILL);
        }
    }
    let deadline = tokio::time::Instant::now() + timeout;
    while process_start_time(id.pid) == Some(id.start_time) {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// The children of `pid` (the sandbox's init, inside its pid namespace).
fn children(pid: i32) -> Vec<i32> {
    fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .map(|text| {
            text.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// A process's start time (field 22 of `/proc/<pid>/stat`; the command name, field 2, may
/// hold spaces and parentheses, so fields are counted after its closing parenthesis).
fn process_start_time(pid: i32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_time(&stat)
}

fn parse_start_time(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    // After the name: state is field 3, so start time (22) is the 20th from here.
    after_comm.split_whitespace().nth(19)?.parse().ok()
}

fn is_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

/// What the sandbox writes on its standard error while it starts: bwrap's and tmux's
/// complaints, read up to [`START_OUTPUT_BYTES`] and kept for an error message.
struct StartOutput {
    pipe: Option<tokio::process::ChildStderr>,
    kept: Vec<u8>,
}

impl StartOutput {
    fn new(pipe: Option<tokio::process::ChildStderr>) -> Self {
        Self {
            pipe,
            kept: Vec::new(),
        }
    }

    /// Reads what arrives within `wait` (or just waits, once the pipe is done).
    async fn read_for(&mut self, wait: Duration) {
        let Some(pipe) = self.pipe.as_mut() else {
            tokio::time::sleep(wait).await;
            return;
        };
        let room = START_OUTPUT_BYTES.saturating_sub(self.kept.len());
        let mut buf = vec![0; room.min(8192)];
        match tokio::time::timeout(wait, pipe.read(&mut buf)).await {
            Err(_) => {}
            Ok(Ok(n)) if n > 0 => {
                self.kept.extend_from_slice(&buf[..n]);
                if self.kept.len() >= START_OUTPUT_BYTES {
                    self.pipe = None;
                }
            }
            // End of file, an error, or a full budget: no more reading.
            Ok(_) => self.pipe = None,
        }
    }

    /// Reads what is left after the sandbox exited, for at most `wait`.
    async fn drain(&mut self, wait: Duration) {
        let deadline = tokio::time::Instant::now() + wait;
        while self.pipe.is_some() && tokio::time::Instant::now() < deadline {
            self.read_for(Duration::from_millis(10)).await;
        }
    }

    /// The last line written, escaped, for an error message.
    fn last_line(&self) -> String {
        quote(&self.kept)
    }
}

/// The last non-blank line of `bytes`, at most [`QUOTED_CHARS`] characters, with control
/// characters and invalid UTF-8 escaped: what a sandbox printed may come from a tenant's
/// files, and must not reach a log or a terminal as escape sequences.
fn quote(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let line = text
        .split(['\n', '\r'])
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no output)");
    let mut quoted = String::with_capacity(line.len().min(QUOTED_CHARS));
    for c in line.chars().take(QUOTED_CHARS) {
        if c.is_control() {
            quoted.extend(c.escape_default());
        } else {
            quoted.push(c);
        }
    }
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_output_is_quoted_by_its_last_line_escaped_and_cut() {
        assert_eq!(
            quote(b"bwrap: first\nbwrap: Can't mount: No such file\n\n"),
            "bwrap: Can't mount: No such file"
        );
        assert_eq!(quote(b""), "(no output)");
        assert_eq!(quote(b"a\x1b[2Jb\0c\xff"), "a\\u{1b}[2Jb\\u{0}c\u{fffd}");
        assert_eq!(quote(&[b'x'; 1000]).len(), QUOTED_CHARS);
    }

    #[test]
    fn start_time_is_read_after_the_command_name() {
        let stat = "4242 (tmux: server) (x) S 1 4242 4242 0 -1 4194560 94 0 0 0 0 0 0 0 20 0 1 0 987654 8343552 1016";
        assert_eq!(parse_start_time(stat), Some(987654));
        assert_eq!(parse_start_time("garbage"), None);
    }

    #[test]
    fn this_process_is_recognised_and_a_recycled_pid_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let pid = std::process::id() as i32;
        let start = process_start_time(pid).unwrap();
        fs::write(dir.path().join(PID_FILE), format!("{pid} {start}\n")).unwrap();
        assert_eq!(
            running(dir.path()),
            Some(ProcessId {
                pid,
                start_time: start
            })
        );
        fs::write(dir.path().join(PID_FILE), format!("{pid} {}\n", start + 1)).unwrap();
        assert_eq!(running(dir.path()), None);
        fs::remove_file(dir.path().join(PID_FILE)).unwrap();
        assert_eq!(running(dir.path()), None);
    }
}
