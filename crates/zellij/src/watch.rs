//! Live views of panes, fed by `zellij subscribe --format json`.
//!
//! One long-lived `subscribe` child runs per watched pane and is shared by every waiter on that
//! pane (see [`WatchRegistry`]). A reader task parses its NDJSON into [`PaneEvent`]s and publishes
//! each viewport snapshot through a `tokio::sync::watch` channel; waiters sleep on the channel and
//! wake on the next render. Nothing polls and nothing sleeps on a timer.
//!
//! The last few snapshots are kept, so a waiter that wakes late still sees text that was on
//! screen only briefly. The child is killed when the last handle is dropped (and by
//! `PR_SET_PDEATHSIG` if muxgate dies).
//!
//! Where Zellij cannot push: with no client attached, Zellij sends events for every subscribed
//! pane. Once a client is attached it sends them only for panes on that client's screen
//! (zellij-server 0.45.1 `Screen::render` delivers from the first client's render report; panes
//! in background tabs and hidden floating panes are not rendered). A watch therefore checks
//! every second whether a client is attached and, while one is, also reads the viewport with
//! `dump-screen` at a short interval ([`FallbackPolling`]). Headless sessions stay purely
//! event-driven.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Child;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::cli::{ZellijCli, first_lines, is_session_probe_failure};
use super::error::{PANE_CLOSED, Result, ZellijError};
use super::events::{PaneEvent, parse_event};
use super::ids::{PaneId, SessionName};

/// Snapshots kept per pane for late waiters.
const HISTORY: usize = 32;

/// One viewport snapshot.
#[derive(Debug, Clone)]
pub(crate) struct PaneView {
    /// Increases by one per snapshot of this watch.
    pub seq: u64,
    /// Visible lines, top to bottom, trailing blank lines removed.
    pub lines: Arc<Vec<String>>,
}

/// Why a watch stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
enum End {
    PaneClosed,
    /// The child exited without `pane_closed`; its stderr (may be empty).
    Lost(String),
    Failed(String),
}

#[derive(Debug, Default)]
struct State {
    recent: VecDeque<PaneView>,
    next_seq: u64,
    end: Option<End>,
}

impl State {
    fn push(&mut self, lines: Vec<String>) {
        if self.recent.len() == HISTORY {
            self.recent.pop_front();
        }
        self.recent.push_back(PaneView {
            seq: self.next_seq,
            lines: Arc::new(lines),
        });
        self.next_seq += 1;
    }
}

struct Inner {
    session: SessionName,
    pane: PaneId,
    state: watch::Receiver<State>,
    reader: JoinHandle<()>,
    poller: Option<JoinHandle<()>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The reader owns the child; aborting it drops the child, which kills it.
        self.reader.abort();
        if let Some(poller) = &self.poller {
            poller.abort();
        }
    }
}

/// Reading the viewport directly while a client is attached (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct FallbackPolling {
    pub cli: ZellijCli,
    /// Interval between viewport reads while a client is attached.
    pub poll_interval: Duration,
    /// Interval between checks whether a client is attached.
    pub client_check_interval: Duration,
    /// Timeout of each read.
    pub call_timeout: Duration,
}

/// A shared live view of one pane. Clones share the same `subscribe` child.
#[derive(Clone)]
pub(crate) struct PaneWatch {
    inner: Arc<Inner>,
}

/// A wait that was satisfied.
#[derive(Debug, Clone)]
pub(crate) struct Matched<T> {
    pub value: T,
    /// The snapshot that satisfied it.
    pub view: PaneView,
    /// Snapshots the waiter could not examine because it fell behind by more than the history.
    pub missed: u64,
}

impl PaneWatch {
    /// Starts `zellij subscribe` for `pane`, and the fallback reader if given. Use
    /// [`PaneWatch::ready`] before relying on it.
    pub(crate) fn start(
        cli: &ZellijCli,
        session: &SessionName,
        pane: PaneId,
        fallback: Option<FallbackPolling>,
    ) -> Result<Self> {
        let resubscribe = Resubscribe {
            cli: cli.clone(),
            session: session.clone(),
            pane,
        };
        let child = resubscribe.spawn()?;
        Ok(Self::with_child(
            session,
            pane,
            child,
            Some(resubscribe),
            fallback,
        ))
    }

    /// Wraps a started `subscribe` child (stdout and stderr piped).
    fn with_child(
        session: &SessionName,
        pane: PaneId,
        child: Child,
        resubscribe: Option<Resubscribe>,
        fallback: Option<FallbackPolling>,
    ) -> Self {
        let (tx, rx) = watch::channel(State::default());
        let poller = fallback
            .map(|fb| tokio::spawn(poll_while_attached(fb, session.clone(), pane, tx.clone())));
        let reader = tokio::spawn(async move {
            let end = follow(child, resubscribe, &tx, pane).await;
            tx.send_modify(|s| s.end = Some(end));
        });
        Self {
            inner: Arc::new(Inner {
                session: session.clone(),
                pane,
                state: rx,
                reader,
                poller,
            }),
        }
    }

    fn ended(&self) -> bool {
        self.inner.state.borrow().end.is_some()
    }

    /// The newest snapshot, if any arrived yet.
    pub(crate) fn latest(&self) -> Option<PaneView> {
        self.inner.state.borrow().recent.back().cloned()
    }

    /// Waits for the first snapshot: from then on every render of the pane is seen.
    pub(crate) async fn ready(&self, timeout: Duration) -> Result<PaneView> {
        let deadline = Instant::now() + timeout;
        self.wait_for(0, deadline, "first pane snapshot", |_| Some(()))
            .await
            .map(|m| m.view)
    }

    /// Waits until `check` accepts a snapshot numbered `from_seq` or later, examining every
    /// snapshot still in the history in order, then each new one as it arrives.
    pub(crate) async fn wait_for<T>(
        &self,
        from_seq: u64,
        deadline: Instant,
        what: &str,
        mut check: impl FnMut(&[String]) -> Option<T>,
    ) -> Result<Matched<T>> {
        let mut rx = self.inner.state.clone();
        let started = Instant::now();
        let mut next = from_seq;
        let mut missed = 0;
        loop {
            {
                let state = rx.borrow_and_update();
                if let Some(oldest) = state.recent.front()
                    && oldest.seq > next
                {
                    missed += oldest.seq - next;
                    next = oldest.seq;
                }
                for view in &state.recent {
                    if view.seq < next {
                        continue;
                    }
                    next = view.seq + 1;
                    if let Some(value) = check(&view.lines) {
                        return Ok(Matched {
                            value,
                            view: view.clone(),
                            missed,
                        });
                    }
                }
                if let Some(end) = &state.end {
                    return Err(self.end_error(end));
                }
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                // The reader publishes `end` before it drops the sender, so this is not reached
                // without an `end`; loop once more to report it.
                Ok(Err(_)) if rx.borrow().end.is_some() => {}
                Ok(Err(_)) => {
                    return Err(self.end_error(&End::Failed("reader stopped".to_owned())));
                }
                Err(_) => {
                    return Err(ZellijError::Timeout {
                        what: format!(
                            "waiting for {what} in pane {} of session {}",
                            self.inner.pane, self.inner.session
                        ),
                        after: deadline.saturating_duration_since(started),
                    });
                }
            }
        }
    }

    fn end_error(&self, end: &End) -> ZellijError {
        let reason = match end {
            End::PaneClosed => PANE_CLOSED.to_owned(),
            End::Lost(stderr) => format!("the subscription ended: {}", first_lines(stderr)),
            End::Failed(reason) => reason.clone(),
        };
        ZellijError::WatchEnded {
            session: self.inner.session.clone(),
            pane: self.inner.pane,
            reason,
        }
    }
}

/// Restarts of a subscription in a row without an event in between before giving up.
const MAX_RESUBSCRIBES: u32 = 5;

/// How to start the `subscribe` child again.
struct Resubscribe {
    cli: ZellijCli,
    session: SessionName,
    pane: PaneId,
}

impl Resubscribe {
    fn spawn(&self) -> Result<Child> {
        let pane_arg = self.pane.to_string();
        self.cli.spawn(
            "subscribe",
            [
                "--session",
                self.session.as_str(),
                "subscribe",
                "--format",
                "json",
                "--pane-id",
                pane_arg.as_str(),
            ],
        )
    }
}

/// Reads the subscription until the pane closes or it fails for good.
///
/// Zellij 0.45.1 reuses the lowest free client id at once, so a late removal of a client that
/// just left can drop a newer connection with the same id: the `subscribe` child then exits
/// with no message although the pane lives on. Such an end (or the transient session probe
/// failure) starts a new child; its first event is the full viewport again, so waiters lose
/// nothing that is still on screen.
async fn follow(
    mut child: Child,
    resubscribe: Option<Resubscribe>,
    tx: &watch::Sender<State>,
    pane: PaneId,
) -> End {
    let mut retries_left = MAX_RESUBSCRIBES;
    loop {
        let (end, had_events) = match (child.stdout.take(), child.stderr.take()) {
            (Some(out), Some(err)) => read_events(out, err, tx, pane).await,
            _ => (
                End::Failed("subscribe child has no pipes".to_owned()),
                false,
            ),
        };
        // Dropping the child kills it if it still runs (kill_on_drop).
        drop(child);
        if had_events {
            retries_left = MAX_RESUBSCRIBES;
        }
        let transient = match &end {
            End::Lost(reason) => reason.is_empty() || is_session_probe_failure(reason),
            _ => false,
        };
        match &resubscribe {
            Some(again) if transient && retries_left > 0 => match again.spawn() {
                Ok(next) => {
                    retries_left -= 1;
                    child = next;
                }
                Err(e) => return End::Failed(e.to_string()),
            },
            _ => return end,
        }
    }
}

/// Reads one child's events; returns how it ended and whether any event arrived.
async fn read_events(
    stdout: tokio::process::ChildStdout,
    mut stderr: tokio::process::ChildStderr,
    tx: &watch::Sender<State>,
    pane: PaneId,
) -> (End, bool) {
    let mut lines = BufReader::new(stdout).lines();
    let mut had_events = false;
    loop {
        match lines.next_line().await {
            Ok(Some(line)) if line.trim().is_empty() => {}
            // Not an event: the CLI printing the session list after failing its session probe
            // (see `ZellijCli::action`); the reason follows on stderr.
            Ok(Some(line)) if !line.trim_start().starts_with('{') => {}
            Ok(Some(line)) => match parse_event(&line) {
                Ok(PaneEvent::Update { viewport, .. }) => {
                    had_events = true;
                    tx.send_modify(|s| s.push(normalize(viewport)));
                }
                Ok(PaneEvent::Closed { pane: closed }) if closed == pane => {
                    return (End::PaneClosed, had_events);
                }
                Ok(PaneEvent::Closed { .. }) => {}
                Err(e) => return (End::Failed(e.to_string()), had_events),
            },
            Ok(None) => break,
            Err(e) => {
                return (
                    End::Failed(format!("reading subscribe output: {e}")),
                    had_events,
                );
            }
        }
    }
    // EOF without `pane_closed`: the reason, if any, is on stderr ("Pane terminal_9 not found",
    // "Session s1 not found"…).
    let mut buf = Vec::new();
    let mut limited = (&mut stderr).take(8 << 10);
    let _ = tokio::time::timeout(Duration::from_secs(1), limited.read_to_end(&mut buf)).await;
    let reason = String::from_utf8_lossy(&buf).trim().to_owned();
    (End::Lost(reason), had_events)
}

/// Trailing spaces (Zellij pads rows to the pane width while a client is attached) and
/// trailing blank lines removed, so snapshots compare equal across sources.
pub(crate) fn normalize(mut lines: Vec<String>) -> Vec<String> {
    for line in &mut lines {
        let len = line.trim_end().len();
        line.truncate(len);
    }
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// The fallback of [`FallbackPolling`]: reads the viewport while a client is attached.
async fn poll_while_attached(
    fb: FallbackPolling,
    session: SessionName,
    pane: PaneId,
    tx: watch::Sender<State>,
) {
    let pane_arg = pane.to_string();
    let mut attached = false;
    let mut last_client_check: Option<Instant> = None;
    let mut last_read: Option<Vec<String>> = None;
    loop {
        if tx.borrow().end.is_some() {
            return;
        }
        if last_client_check.is_none_or(|at| at.elapsed() >= fb.client_check_interval) {
            let clients = fb
                .cli
                .action(
                    &session,
                    "action list-clients",
                    ["list-clients"],
                    fb.call_timeout,
                )
                .await;
            match clients {
                Ok(out) if out.status.success() => {
                    last_client_check = Some(Instant::now());
                    attached =
                        super::listing::parse_clients(&out.stdout).is_ok_and(|c| !c.is_empty());
                }
                // Unknown: read anyway and ask again at the next tick. If the session is gone
                // the subscription reports why.
                _ => {
                    last_client_check = None;
                    attached = true;
                }
            }
        }
        if attached {
            let read = fb
                .cli
                .action(
                    &session,
                    "action dump-screen",
                    ["dump-screen", "--pane-id", pane_arg.as_str()],
                    fb.call_timeout,
                )
                .await;
            if let Ok(out) = read
                && out.status.success()
            {
                let lines = normalize(out.stdout.lines().map(str::to_owned).collect());
                if last_read.as_ref() != Some(&lines) {
                    last_read = Some(lines.clone());
                    tx.send_modify(|s| s.push(lines));
                }
            }
            tokio::time::sleep(fb.poll_interval).await;
        } else {
            tokio::time::sleep(fb.client_check_interval).await;
        }
    }
}

type WatchKey = (SessionName, PaneId);

/// Shares one [`PaneWatch`] per pane among concurrent waiters.
#[derive(Default)]
pub(crate) struct WatchRegistry {
    watches: Mutex<HashMap<WatchKey, Weak<Inner>>>,
}

impl WatchRegistry {
    /// The live watch of `pane`, starting one if none runs.
    pub(crate) fn get_or_start(
        &self,
        cli: &ZellijCli,
        session: &SessionName,
        pane: PaneId,
        fallback: Option<FallbackPolling>,
    ) -> Result<PaneWatch> {
        // A poisoned lock only means another caller panicked mid-insert; the map stays valid.
        let mut map = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, weak| weak.strong_count() > 0);
        let key = (session.clone(), pane);
        if let Some(inner) = map.get(&key).and_then(Weak::upgrade) {
            let watch = PaneWatch { inner };
            if !watch.ended() {
                return Ok(watch);
            }
        }
        let watch = PaneWatch::start(cli, session, pane, fallback)?;
        map.insert(key, Arc::downgrade(&watch.inner));
        Ok(watch)
    }

    /// Live watches (for metrics and tests).
    pub(crate) fn active(&self) -> usize {
        let map = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        map.values().filter(|w| w.strong_count() > 0).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    /// A stand-in for `zellij subscribe`: a shell script printing NDJSON lines.
    fn scripted(script: &str) -> (PaneWatch, u32) {
        let child = tokio::process::Command::new("/bin/sh")
            .args(["-c", script])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let pid = child.id().unwrap();
        let watch = PaneWatch::with_child(
            &SessionName::new("s").unwrap(),
            PaneId::Terminal(1),
            child,
            None,
            None,
        );
        (watch, pid)
    }

    /// Whether `pid` is still a running (not zombie) process.
    fn is_running(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| {
                let state = stat.rsplit_once(") ").map(|(_, rest)| rest.as_bytes()[0]);
                state != Some(b'Z')
            })
            .unwrap_or(false)
    }

    fn update(lines: &str) -> String {
        format!(
            r#"{{"event":"pane_update","pane_id":"terminal_1","viewport":[{lines}],"scrollback":null,"is_initial":false}}"#
        )
    }

    #[test]
    fn normalize_trims_padding_and_blank_tail() {
        let lines = vec![
            "a  ".to_owned(),
            "".to_owned(),
            " b ".to_owned(),
            "  ".to_owned(),
        ];
        assert_eq!(normalize(lines), ["a", "", " b"]);
        assert!(normalize(vec![" ".to_owned()]).is_empty());
    }

    #[tokio::test]
    async fn waiter_sees_every_snapshot_in_order() {
        let script = format!(
            "echo '{}'; echo '{}'; echo '{}'; sleep 5",
            update(r#""a""#),
            update(r#""b""#),
            update(r#""c""#)
        );
        let (watch, _) = scripted(&script);
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut seen = Vec::new();
        let m = watch
            .wait_for(0, deadline, "c", |lines| {
                seen.push(lines[0].clone());
                (lines[0] == "c").then_some(())
            })
            .await
            .unwrap();
        assert_eq!(seen, ["a", "b", "c"]);
        assert_eq!(m.view.seq, 2);
        assert_eq!(m.missed, 0);
    }

    #[tokio::test]
    async fn closed_pane_and_stderr_end_the_wait() {
        let (closed, _) = scripted(&format!(
            "echo '{}'; echo '{{\"event\":\"pane_closed\",\"pane_id\":\"terminal_1\"}}'; sleep 5",
            update(r#""x""#)
        ));
        let deadline = Instant::now() + Duration::from_secs(5);
        let err = closed
            .wait_for(0, deadline, "y", |l| (l[0] == "y").then_some(()))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "watching pane terminal_1 in session s ended: the pane closed"
        );

        let (failed, _) = scripted("echo 'Pane terminal_1 not found' >&2; exit 2");
        let err = failed.ready(Duration::from_secs(5)).await.unwrap_err();
        assert!(
            err.to_string()
                .ends_with("the subscription ended: Pane terminal_1 not found"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_silently_dropped_subscription_is_restarted() {
        // A stand-in `zellij`: the first `subscribe` prints one event, then fails like
        // Zellij's transient session probe (a session list on stdout, exit 0); the second
        // prints the awaited text.
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("zellij");
        let count = dir.path().join("count");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho x >> '{}'\nif [ $(wc -l < '{}') -eq 1 ]; then echo '{}'; echo 's [Created 1s ago]'; echo \"Session 's' not found. The following sessions are active:\" >&2; exit 0; fi\necho '{}'\nexec sleep 30\n",
                count.display(),
                count.display(),
                update(r#""first""#),
                update(r#""second""#),
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let cli = ZellijCli::new(crate::cli::ZellijEnv::new(&script));
        let session = SessionName::new("s").unwrap();
        let watch = PaneWatch::start(&cli, &session, PaneId::Terminal(1), None).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let m = watch
            .wait_for(0, deadline, "second", |l| (l[0] == "second").then_some(()))
            .await
            .unwrap();
        assert_eq!(m.view.seq, 1);
        assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 2);
    }

    #[tokio::test]
    async fn wait_times_out_and_drop_kills_the_child() {
        let (watch, pid) = scripted("exec sleep 30");
        let started = Instant::now();
        let err = watch
            .wait_for(0, Instant::now() + Duration::from_millis(50), "x", |_| {
                Some(())
            })
            .await
            .unwrap_err();
        assert!(matches!(err, ZellijError::Timeout { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(is_running(pid));
        drop(watch);
        let gone_by = Instant::now() + Duration::from_secs(5);
        while is_running(pid) {
            assert!(
                Instant::now() < gone_by,
                "subscribe child {pid} survived its watch"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
