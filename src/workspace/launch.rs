//! A workspace's sandbox as a process: starting it, recognising it again, stopping it.
//!
//! The sandbox (`bwrap`, then `prlimit`, then `tmux -D`) is started in a session of its own
//! and without a parent-death signal, so that it outlives the gateway: a restarted gateway
//! finds it through `server.pid` in the workspace's directory, which records the process id
//! *and* its start time (a recycled pid is not mistaken for it). While the gateway runs it
//! also reaps the process when it exits.

use std::fs;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use super::host::Host;
use super::layout::Layout;
use super::sandbox::{ProcessLimits, server_command, server_env};
use crate::mux::tmux::RunAs;
use crate::mux::tmux::spawn::become_user;
use crate::state::write_private;

/// The file recording the sandbox process, in the workspace's directory.
const PID_FILE: &str = "server.pid";
/// The sandbox's standard output and error, in the workspace's directory.
const LOG_FILE: &str = "server.log";
/// The socket, in the workspace's `run` directory.
const SOCKET_FILE: &str = "tmux.sock";

/// A running process, recognisable after a pid is reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessId {
    pub pid: i32,
    /// Clock ticks after boot (`/proc/<pid>/stat` field 22).
    pub start_time: u64,
}

/// Why a sandbox did not start.
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
pub fn running(dir: &Path) -> Option<ProcessId> {
    let text = fs::read_to_string(dir.join(PID_FILE)).ok()?;
    let (pid, start) = text.trim().split_once(' ')?;
    let recorded = ProcessId {
        pid: pid.parse().ok()?,
        start_time: start.parse().ok()?,
    };
    (process_start_time(recorded.pid) == Some(recorded.start_time)).then_some(recorded)
}

/// Starts the sandbox of the workspace in `dir` and waits until its tmux server listens.
pub async fn start(
    host: &Host,
    dir: &Path,
    run_as: Option<RunAs>,
    limits: &ProcessLimits,
    timeout: Duration,
) -> Result<ProcessId, LaunchError> {
    let dirs = Layout::dirs(dir);
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(dir.join(LOG_FILE))
        .map_err(LaunchError::Spawn)?;
    let socket = dirs.run.join(SOCKET_FILE);
    let mut command = tokio::process::Command::new(&host.spec.bwrap);
    command
        .args(server_command(&host.spec, &host.view, &dirs, limits))
        .env_clear()
        .envs(server_env(std::env::var_os("TZ").as_deref()))
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(LaunchError::Spawn)?)
        .stderr(log)
        .kill_on_drop(false);
    // SAFETY: the closure runs in the forked child before exec and only makes system calls
    // that are async-signal-safe (setsid, setgroups, setgid, setuid); it does not allocate.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            match run_as {
                Some(run_as) => become_user(run_as),
                None => Ok(()),
            }
        });
    }
    let mut child = command.spawn().map_err(LaunchError::Spawn)?;
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
            return Err(LaunchError::Exited(format!(
                "{status}: {}",
                log_tail(&dir.join(LOG_FILE))
            )));
        }
        if tokio::time::Instant::now() >= deadline {
            let _ = child.start_kill();
            return Err(LaunchError::Timeout(timeout));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Reaped here while the gateway runs; after a gateway restart its new parent reaps it.
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    Ok(id)
}

/// Kills the sandbox `id` and everything in it (its init is killed, which ends its pid
/// namespace), then waits up to `timeout` for it to be gone.
pub async fn kill(id: ProcessId, timeout: Duration) -> bool {
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

/// The last line the sandbox wrote, for an error message.
fn log_tail(path: &Path) -> String {
    let text = fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no output)")
        .chars()
        .take(300)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
