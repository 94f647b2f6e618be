//! One host's link: the `ssh` master that holds the host's one connection, kept up by a task
//! that restarts it with bounded back-off ([`keep_up`]), and the state every call to the host
//! asks first ([`HostLink`], the engine's [`LinkStatus`]).
//!
//! A call never waits for a link: while it is connecting or down, the engine starts nothing on
//! the host and the call is refused at once with the link's last error and when it is tried
//! again. When a master ends (the host went away, a keepalive went unanswered, sshd
//! restarted), every channel on it ends with it: the host's control clients close, and the
//! engine reconnects them through the next master, as after a tmux client lost locally.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Child;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use muxgate_mux::child_process;
use muxgate_tmux::{LinkDown, LinkStatus};

use super::config::HostConfig;
use super::dial_in::{DialIn, NOT_DIALLED_IN};
use super::ssh_args;

/// The first wait after a failed attempt, doubled after each further failure.
const FIRST_RETRY: Duration = Duration::from_millis(500);

/// The longest wait between two attempts.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// How long a link must stay up before a loss counts as a new trouble (its next attempt comes
/// after [`FIRST_RETRY`] again) rather than more of the same (the wait keeps doubling).
const STABLE: Duration = Duration::from_secs(30);

/// How long a call is told to wait while the link is being made.
const CONNECTING_RETRY: Duration = Duration::from_millis(500);

/// The most of an `ssh` master's error output kept: its last bytes.
const MAX_STDERR_BYTES: usize = 4096;
/// How often a link that waits for its host to dial in renews its `retry_after`.
const DIAL_IN_RECHECK: Duration = Duration::from_secs(5);

/// The state of one host's link, shared by its keeper and every call to the host.
#[derive(Debug)]
pub(crate) struct HostLink {
    name: Arc<str>,
    state: Mutex<LinkState>,
    /// Masters lost after they were up.
    drops: AtomicU64,
    /// The phase, for whoever follows its edges ([`HostLink::phases`]).
    phase: tokio::sync::watch::Sender<LinkPhase>,
}

#[derive(Debug, Clone)]
enum LinkState {
    /// An attempt is under way (`last_error`: why the one before failed, if one did).
    Connecting {
        last_error: Option<String>,
    },
    Up,
    Down {
        reason: String,
        retry_at: Instant,
    },
}

/// A link's state as an operator or agent reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LinkReport {
    /// `connecting`, `up` or `down`.
    pub phase: LinkPhase,
    /// The last error, while not up.
    pub last_error: Option<String>,
    /// When it is tried again, while down.
    pub retry_after: Option<Duration>,
    /// Masters lost after they were up, since the gateway started.
    pub drops: u64,
}

/// The phase of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LinkPhase {
    /// Logging in.
    Connecting,
    /// Calls reach the host.
    Up,
    /// The last attempt failed or the connection was lost; another follows.
    Down,
}

impl HostLink {
    /// A link not yet tried.
    pub(crate) fn new(name: &str) -> Self {
        Self {
            name: name.into(),
            state: Mutex::new(LinkState::Connecting { last_error: None }),
            drops: AtomicU64::new(0),
            phase: tokio::sync::watch::Sender::new(LinkPhase::Connecting),
        }
    }

    /// The link's phase as it changes.
    pub(crate) fn phases(&self) -> tokio::sync::watch::Receiver<LinkPhase> {
        self.phase.subscribe()
    }

    /// The host's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    fn state(&self) -> MutexGuard<'_, LinkState> {
        // A poisoned lock only means a panic elsewhere mid-assignment of a plain value.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, state: LinkState) {
        let phase = match &state {
            LinkState::Connecting { .. } => LinkPhase::Connecting,
            LinkState::Up => LinkPhase::Up,
            LinkState::Down { .. } => LinkPhase::Down,
        };
        *self.state() = state;
        self.phase
            .send_if_modified(|now| std::mem::replace(now, phase) != phase);
    }

    /// The link's state now.
    pub(crate) fn report(&self) -> LinkReport {
        let now = Instant::now();
        let drops = self.drops.load(Ordering::Relaxed);
        match self.state().clone() {
            LinkState::Connecting { last_error } => LinkReport {
                phase: LinkPhase::Connecting,
                last_error,
                retry_after: None,
                drops,
            },
            LinkState::Up => LinkReport {
                phase: LinkPhase::Up,
                last_error: None,
                retry_after: None,
                drops,
            },
            LinkState::Down { reason, retry_at } => LinkReport {
                phase: LinkPhase::Down,
                last_error: Some(reason),
                retry_after: Some(retry_at.saturating_duration_since(now)),
                drops,
            },
        }
    }
}

impl LinkStatus for HostLink {
    fn check(&self) -> Result<(), LinkDown> {
        let report = self.report();
        let (reason, retry_after) = match report.phase {
            LinkPhase::Up => return Ok(()),
            LinkPhase::Connecting => (
                match report.last_error {
                    Some(error) => format!("connecting again after: {error}"),
                    None => "connecting".to_owned(),
                },
                CONNECTING_RETRY,
            ),
            LinkPhase::Down => (
                report.last_error.unwrap_or_default(),
                report.retry_after.unwrap_or(FIRST_RETRY),
            ),
        };
        Err(LinkDown {
            host: self.name.clone(),
            reason,
            retry_after: retry_after.max(Duration::from_millis(1)),
        })
    }
}

/// How a keeper starts the host's master.
#[derive(Debug, Clone)]
pub(crate) struct MasterCommand {
    /// Logins under way at once, shared by every host's keeper: a key exchange is CPU work,
    /// and many at once on a small machine run past their connect timeout and back off
    /// together (measured: 64 hosts on 2 cores).
    pub logins: Arc<tokio::sync::Semaphore>,
    /// The `ssh` program.
    pub program: PathBuf,
    /// The host, as configured.
    pub host: HostConfig,
    /// The master's control socket.
    pub control: PathBuf,
    /// Its `ProxyCommand` and the host's dial-in, when the host dials in.
    pub proxy: Option<String>,
    pub dial_in: Option<Arc<DialIn>>,
}

/// Keeps `link` up until `stop` fires: starts the master, and after it fails or ends starts
/// another, waiting [`FIRST_RETRY`] and twice as long after each failure, up to [`MAX_RETRY`];
/// a link that stays up for [`STABLE`] starts over at [`FIRST_RETRY`], one that drops sooner
/// does not (a host that accepts and then drops every connection is not hammered).
pub(crate) async fn keep_up(link: Arc<HostLink>, master: MasterCommand, stop: CancellationToken) {
    let mut wait = FIRST_RETRY;
    let mut last_error = None;
    loop {
        if let Some(dial_in) = &master.dial_in
            && !dial_in.is_waiting()
        {
            // Nothing to connect through until the host dials in: down, saying why, and
            // woken when it does.
            link.set(LinkState::Down {
                reason: NOT_DIALLED_IN.into(),
                retry_at: Instant::now() + DIAL_IN_RECHECK,
            });
            tokio::select! {
                () = stop.cancelled() => return,
                () = dial_in.arrived.notified() => {}
                () = tokio::time::sleep(DIAL_IN_RECHECK) => {}
            }
            continue;
        }
        link.set(LinkState::Connecting {
            last_error: last_error.take(),
        });
        let attempt = tokio::select! {
            () = stop.cancelled() => return,
            attempt = async {
                // The semaphore is never closed; were it, logins would just not be limited.
                let _turn = master.logins.acquire().await.ok();
                connect(&master).await
            } => attempt,
        };
        let reason = match attempt {
            Ok(mut up) => {
                tracing::info!(host = link.name(), "host link up");
                let up_since = Instant::now();
                link.set(LinkState::Up);
                let reason = tokio::select! {
                    () = stop.cancelled() => {
                        up.stop().await;
                        return;
                    }
                    reason = up.ended() => reason,
                };
                link.drops.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(host = link.name(), %reason, "host link lost");
                if up_since.elapsed() >= STABLE {
                    wait = FIRST_RETRY;
                }
                reason
            }
            Err(reason) => {
                tracing::warn!(host = link.name(), %reason, retry_in = ?wait, "host link failed");
                reason
            }
        };
        link.set(LinkState::Down {
            reason: reason.clone(),
            retry_at: Instant::now() + wait,
        });
        last_error = Some(reason);
        let dialled_in = async {
            match &master.dial_in {
                Some(dial_in) => dial_in.arrived.notified().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
            // A host that dials in again is tried at once.
            () = dialled_in => {}
        }
        wait = (wait * 2).min(MAX_RETRY);
    }
}

/// A master whose connection is up.
struct Master {
    child: Child,
    stderr: tokio::task::JoinHandle<String>,
    /// Its standard output, kept open so that a late write does not meet a closed pipe.
    _stdout: tokio::io::Lines<BufReader<tokio::io::Take<tokio::process::ChildStdout>>>,
}

impl Master {
    /// Waits until the master ends; why, in ssh's words.
    async fn ended(&mut self) -> String {
        let status = self.child.wait().await;
        let said = (&mut self.stderr).await.unwrap_or_default();
        last_words(&said).unwrap_or_else(|| match status {
            Ok(status) => format!("the connection ended ({status})"),
            Err(error) => format!("the connection ended ({error})"),
        })
    }

    /// Ends the master: every channel on it closes.
    async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// Starts a master and waits until its connection is up, within the host's connect timeout.
async fn connect(master: &MasterCommand) -> Result<Master, String> {
    remove_stale_socket(&master.control)?;
    let mut command = ssh_args::process(
        &master.program,
        ssh_args::master(&master.host, &master.control, master.proxy.as_deref()),
    );
    command.stdin(Stdio::null());
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", master.program.display()))?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err("the ssh process has no pipes".into());
    };
    let stderr = tokio::spawn(async move {
        String::from_utf8_lossy(&child_process::read_tail(stderr, MAX_STDERR_BYTES).await)
            .into_owned()
    });
    // ssh's own connect timeout covers the TCP connect; this one the login after it too.
    let limit = master.host.connect_timeout() + Duration::from_secs(1);
    let mut lines = BufReader::new(stdout.take(256)).lines();
    let up = tokio::time::timeout(limit, lines.next_line()).await;
    match up {
        Ok(Ok(Some(line))) if line.trim() == ssh_args::UP_LINE => Ok(Master {
            child,
            stderr,
            _stdout: lines,
        }),
        Ok(_) => {
            let _ = child.start_kill();
            let status = child.wait().await;
            let said = stderr.await.unwrap_or_default();
            Err(last_words(&said).unwrap_or_else(|| match status {
                Ok(status) => format!("ssh exited ({status}) before the connection was up"),
                Err(error) => format!("ssh failed: {error}"),
            }))
        }
        Err(_) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            stderr.abort();
            Err(format!("the connection was not up within {limit:?}"))
        }
    }
}

/// A control socket left by a master that died with its gateway would make a new master give
/// up multiplexing: it goes before every start.
fn remove_stale_socket(control: &Path) -> Result<(), String> {
    match std::fs::remove_file(control) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(format!(
            "cannot remove the old control socket {}: {error}",
            control.display()
        )),
    }
}

/// The last line ssh wrote that says something (the one naming the failure: `Host key
/// verification failed.`, `Connection refused`), without its program prefix.
pub(crate) fn last_words(said: &str) -> Option<String> {
    said.lines()
        .map(str::trim)
        .rfind(|line| !line.is_empty())
        .map(|line| {
            line.strip_prefix("ssh: ")
                .unwrap_or(line)
                .chars()
                .take(300)
                .collect()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_naming_the_failure_is_kept() {
        let banner = "@@@@@\n@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @\n\
                      Offending ED25519 key in /kh:1\nHost key verification failed.\n\n";
        assert_eq!(
            last_words(banner).as_deref(),
            Some("Host key verification failed.")
        );
        assert_eq!(
            last_words("ssh: connect to host 10.0.0.2 port 22: Connection refused\r\n").as_deref(),
            Some("connect to host 10.0.0.2 port 22: Connection refused")
        );
        assert_eq!(last_words(" \n"), None);
    }

    #[test]
    fn a_link_refuses_calls_until_it_is_up() {
        let link = HostLink::new("build-1");
        let refused = link.check().unwrap_err();
        assert_eq!(&*refused.host, "build-1");
        assert_eq!(refused.reason, "connecting");
        link.set(LinkState::Up);
        assert_eq!(link.check(), Ok(()));
        link.set(LinkState::Down {
            reason: "Connection refused".into(),
            retry_at: Instant::now() + Duration::from_secs(4),
        });
        let refused = link.check().unwrap_err();
        assert_eq!(refused.reason, "Connection refused");
        assert!(refused.retry_after > Duration::from_secs(3), "{refused:?}");
        assert_eq!(link.report().phase, LinkPhase::Down);
    }
}
