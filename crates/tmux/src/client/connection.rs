//! One tmux control-mode client: the `tmux -C` child, its reader task and reply matching.
//!
//! A [`Connection`] is attached to a session (tmux requires that) with
//! `attach-session -E -f no-output|pause-after=N`:
//! - `-E` keeps muxgate's environment out of the session;
//! - no size is ever set (`refresh-client -C` is never sent): tmux leaves a control client
//!   without one out of every window-size calculation, so no human's window is resized. The
//!   `ignore-size` flag would add nothing but cost: tmux 3.3a checks each ignore-size client
//!   against every other client whenever it recalculates sizes, which with hundreds of
//!   control clients kept an idle server busy (BENCHMARKS.md, "Idle sessions");
//! - a session-id target (or none) never switches a human's current window.
//!
//! Writing: [`Connection::submit`] writes request lines back to back (pipelining) and queues one
//! pending entry per line. Reading: a task parses stdout with [`crate::wire::protocol::Parser`] and
//! answers the oldest pending entry with each flags=1 reply block (FIFO; tmux answers our lines
//! in order). A line of `n` chained commands completes after `n` blocks or the first `%error`,
//! because tmux drops the rest of a chain after an error without a block.
//!
//! When the client goes away (`%exit`, EOF), entries whose reply had begun fail with
//! [`LineError::Lost`] (they may have run), while entries tmux never started are handed back in
//! [`ConnEvent::Closed`] so the owner can send them again on a new connection: tmux flushes all
//! reply blocks before a control client exits, so a line without `%begin` was never run.
//!
//! Output (`%output`) is handed to an [`OutputSink`] on the reader task itself; the reader never
//! waits on a consumer, because a control client that falls behind makes tmux stop reading the
//! pane's program.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::client::remote::LinkDown;
use crate::client::spawn::{TmuxEndpoint, tmux_command};
use crate::wire::ids::{PaneId, SessionId};
use crate::wire::protocol::{Block, Event, MAX_BLOCK_BYTES, Parser};

/// Receives decoded pane output from a connection's reader task. Must not block.
pub trait OutputSink: Send + Sync + 'static {
    /// `data` is the next run of bytes the program in `pane` wrote.
    fn output(&self, pane: PaneId, data: &[u8]);
}

/// Whether the connection receives pane output.
#[derive(Clone)]
pub enum OutputMode {
    /// `no-output`: a command connection.
    Off,
    /// Output of every pane in the attached session goes to `sink`; tmux discards a pane's
    /// output older than `pause_after_secs` and sends `%pause` instead of buffering without bound.
    On {
        /// The `pause-after` age, in seconds.
        pause_after_secs: u32,
        /// Where the output goes.
        sink: Arc<dyn OutputSink>,
    },
}

/// What to connect to and how.
#[derive(Clone)]
pub struct ConnectOptions {
    /// The tmux binary to run.
    pub tmux_bin: PathBuf,
    /// The server to connect to.
    pub endpoint: TmuxEndpoint,
    /// The session to attach to; `None` lets tmux pick one (fine for a `no-output` client).
    pub session: Option<SessionId>,
    /// Instead of attaching, create this session and attach to it in the same command, so that
    /// it is never without its client (see [`NewSession`]).
    pub create: Option<NewSession>,
    /// Whether the client receives pane output.
    pub output: OutputMode,
    /// How long the child may take to attach.
    pub timeout: Duration,
}

/// A session a control client creates for itself (`new-session`): its name, and the program its
/// first window runs (executed without a shell).
#[derive(Debug, Clone, Copy)]
pub struct NewSession {
    /// The session's name (`new-session -s`).
    pub name: &'static str,
    /// The program its first window runs and that program's arguments.
    pub argv: &'static [&'static str],
}

/// Why a connection could not be made.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConnectError {
    /// No tmux server listens on the socket.
    #[error("no tmux server is running on {socket}")]
    NoServer {
        /// The server's socket, described for a message (e.g. `socket name "work"`).
        socket: String,
    },
    /// The server runs without any session to attach to.
    #[error("the tmux server on {socket} has no sessions")]
    NoSessions {
        /// The server's socket, described for a message.
        socket: String,
    },
    /// The server went away before the client was attached.
    #[error("the tmux server on {socket} exited while muxgate was connecting")]
    ServerExited {
        /// The server's socket, described for a message.
        socket: String,
    },
    /// The client was not attached within the connect timeout (held here).
    #[error("tmux did not attach within {0:?}")]
    Timeout(Duration),
    /// The tmux client process could not be started.
    #[error("could not start {bin}: {error}")]
    Spawn {
        /// The tmux binary.
        bin: String,
        /// Why it could not be started.
        error: String,
    },
    /// tmux refused the client, or the client ended before attaching; tmux's message, or what
    /// ended it.
    #[error("tmux refused the control client: {0}")]
    Refused(String),
    /// The server is on another machine, and the link to it is down.
    #[error(transparent)]
    LinkDown(#[from] LinkDown),
}

/// One command line to write, and where its reply goes.
#[derive(Debug)]
pub struct LineRequest {
    line: Vec<u8>,
    commands: usize,
    /// Most bytes of one command's reply kept (see [`Parser::limit_open_block`]).
    reply_limit: usize,
    reply: oneshot::Sender<LineResult>,
}

impl LineRequest {
    /// A line of `commands` `;`-chained commands (no newline; never empty).
    pub fn new(line: Vec<u8>, commands: usize) -> (Self, oneshot::Receiver<LineResult>) {
        debug_assert!(!line.is_empty() && !line.contains(&b'\n') && commands > 0);
        let (reply, rx) = oneshot::channel();
        (
            Self {
                line,
                commands,
                reply_limit: MAX_BLOCK_BYTES,
                reply,
            },
            rx,
        )
    }

    /// Keeps at most `bytes` of each command's reply: a longer reply is read and thrown away,
    /// and its block is marked oversized.
    pub fn with_reply_limit(mut self, bytes: usize) -> Self {
        self.reply_limit = bytes;
        self
    }

    /// Whether the requester still waits for the reply.
    pub fn is_wanted(&self) -> bool {
        !self.reply.is_closed()
    }

    /// Number of commands on the line.
    pub fn commands(&self) -> usize {
        self.commands
    }

    /// Answers the request without sending it.
    pub fn fail(self, reason: NotSent) {
        let _ = self.reply.send(Err(LineError::NotSent(reason)));
    }
}

/// One block per command that ran, in order; fewer than requested when a chain stopped at an
/// error (the last block is then the `%error`).
pub type LineResult = Result<Vec<Block>, LineError>;

/// Why a line got no reply.
#[derive(Debug, Clone)]
pub enum LineError {
    /// The connection ended after tmux started the line: it may or may not have run.
    Lost,
    /// The line was never written.
    NotSent(NotSent),
}

/// Why a line was never written.
#[derive(Debug, Clone)]
pub enum NotSent {
    /// No connection to the server could be made.
    Unavailable(ConnectError),
    /// The owner is shutting down.
    ShuttingDown,
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// tmux sent `%exit`, with its reason (e.g. `server exited unexpectedly`).
    Exit(Option<String>),
    /// The attach command itself failed before the client was attached, with tmux's
    /// message (e.g. `no sessions` from a server that runs without any).
    AttachFailed(String),
    /// stdout closed without `%exit`.
    Eof,
    /// Reading stdout failed.
    ReadError(String),
    /// The client's output broke a bound no tmux output reaches (a line too long outside a
    /// reply, more notifications waiting than [`MAX_QUEUED_EVENTS`]): someone who can write
    /// into the pipe — a tenant's pane, through its own server's `/proc/<pid>/fd` — is feeding
    /// it. The connection is dropped rather than read further.
    Flooded(&'static str),
}

impl CloseReason {
    /// Whether the tmux server itself went away (as opposed to the attached session).
    pub fn server_gone(&self) -> bool {
        match self {
            CloseReason::Exit(Some(reason)) => reason.contains("server exited"),
            CloseReason::Exit(None) | CloseReason::AttachFailed(_) | CloseReason::Flooded(_) => {
                false
            }
            CloseReason::Eof | CloseReason::ReadError(_) => true,
        }
    }
}

impl std::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CloseReason::Exit(Some(reason)) => write!(f, "tmux closed the client: {reason}"),
            CloseReason::Exit(None) => f.write_str("tmux closed the client"),
            CloseReason::AttachFailed(message) => write!(f, "tmux: {message}"),
            CloseReason::Eof => f.write_str("the tmux client exited"),
            CloseReason::ReadError(e) => write!(f, "reading from tmux failed: {e}"),
            CloseReason::Flooded(what) => write!(f, "dropped: {what}"),
        }
    }
}

/// Everything but replies and output that the reader reports to the connection's owner.
#[derive(Debug)]
pub enum ConnEvent {
    /// Any other notification, e.g. `%window-close @3`.
    Notification {
        /// Its name, without the `%` (e.g. `window-close`).
        name: String,
        /// The rest of its line, as tmux wrote it.
        args: Vec<u8>,
    },
    /// The client was switched to another session after it attached (`%session-changed`).
    SessionChanged {
        /// The session's id (`$N`).
        session: SessionId,
        /// The session's name, as tmux wrote it.
        name: Vec<u8>,
    },
    /// tmux dropped this pane's pending output and stopped sending it (`%pause`).
    Pause(PaneId),
    /// Output for this pane resumed (`%continue`).
    Continue(PaneId),
    /// The connection is gone; `unstarted` lines were never run and may be sent again.
    Closed {
        /// Why it ended.
        reason: CloseReason,
        /// The lines tmux never started, in the order they were written.
        unstarted: Vec<LineRequest>,
    },
}

struct Pending {
    request: LineRequest,
    begun: bool,
    blocks: Vec<Block>,
    sent_at: Instant,
}

/// State shared by the writer (the owner) and the reader task.
struct Shared {
    pending: Mutex<VecDeque<Pending>>,
    /// Set to false by the reader, under the `pending` lock, when the connection ends.
    alive: AtomicBool,
    /// Signalled whenever a pending line completes.
    progress: Notify,
    /// Cancelled by the reader once the connection has ended: a line tmux never began is then
    /// answered by nothing but its hand-back in [`ConnEvent::Closed`].
    ended: CancellationToken,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Pending>> {
        // A panic while holding this lock cannot leave the queue inconsistent (every update is
        // a single push or pop), so a poisoned lock is still usable.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// See [`Connection::progress_notifier`].
pub struct ProgressNotifier(Arc<Shared>);

impl ProgressNotifier {
    /// Waits until a pending line has been answered or the connection has ended.
    pub async fn notified(&self) {
        self.0.progress.notified().await;
    }
}

/// A live control client.
pub struct Connection {
    stdin: Option<ChildStdin>,
    shared: Arc<Shared>,
    events: mpsc::Receiver<ConnEvent>,
    session: SessionId,
    session_name: Vec<u8>,
    child: Child,
    reader: tokio::task::JoinHandle<()>,
    write_buf: Vec<u8>,
}

impl Connection {
    /// Starts a control client and waits until tmux has attached it.
    pub async fn connect(options: &ConnectOptions) -> Result<Self, ConnectError> {
        let socket_text = options.endpoint.to_string();
        let (flags, sink) = match &options.output {
            OutputMode::Off => (String::from("no-output"), None),
            OutputMode::On {
                pause_after_secs,
                sink,
            } => (
                format!("pause-after={pause_after_secs}"),
                Some(sink.clone()),
            ),
        };
        let mut command = control_command(options, &flags)?;
        let mut child = command.spawn().map_err(|e| ConnectError::Spawn {
            bin: options.tmux_bin.display().to_string(),
            error: e.to_string(),
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ConnectError::Spawn {
                bin: options.tmux_bin.display().to_string(),
                error: "child pipes missing".into(),
            });
        };
        let stderr_task = tokio::spawn(async move {
            let mut text = Vec::new();
            let _ = stderr.take(4096).read_to_end(&mut text).await;
            text
        });

        let shared = Arc::new(Shared {
            pending: Mutex::new(VecDeque::new()),
            alive: AtomicBool::new(true),
            progress: Notify::new(),
            ended: CancellationToken::new(),
        });
        let (events_tx, events) = mpsc::channel(MAX_QUEUED_EVENTS);
        let (handshake_tx, handshake_rx) = oneshot::channel();
        let reader = tokio::spawn(read_loop(
            stdout,
            shared.clone(),
            events_tx,
            sink,
            handshake_tx,
        ));

        let attached = tokio::time::timeout(options.timeout, handshake_rx).await;
        let (failure, closed) = match attached {
            Ok(Ok(Ok((session, session_name)))) => {
                return Ok(Self {
                    stdin: Some(stdin),
                    shared,
                    events,
                    session,
                    session_name,
                    child,
                    reader,
                    write_buf: Vec::new(),
                });
            }
            Err(_) => (Some(ConnectError::Timeout(options.timeout)), None),
            Ok(Ok(Err(reason))) => (None, Some(reason)),
            Ok(Err(_)) => (None, None),
        };
        let _ = child.start_kill();
        reader.abort();
        let _ = child.wait().await;
        let stderr_text = stderr_task.await.unwrap_or_default();
        Err(failure.unwrap_or_else(|| classify_refusal(&stderr_text, closed, socket_text)))
    }

    /// The session this client is attached to.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// The attached session's name at attach time.
    pub fn session_name(&self) -> &[u8] {
        &self.session_name
    }

    /// Writes `requests` in one write. If the connection has already ended, nothing is written
    /// and the requests come back untouched so they can be sent elsewhere.
    pub async fn submit(
        &mut self,
        requests: Vec<LineRequest>,
        write_timeout: Duration,
    ) -> Result<(), Vec<LineRequest>> {
        self.submit_then(requests, write_timeout, || ()).await
    }

    /// [`Self::submit`], calling `queued` once the requests are taken and before they are
    /// written: before any of their replies can be read.
    pub async fn submit_then(
        &mut self,
        requests: Vec<LineRequest>,
        write_timeout: Duration,
        queued: impl FnOnce(),
    ) -> Result<(), Vec<LineRequest>> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(requests);
        };
        let mut buf = std::mem::take(&mut self.write_buf);
        buf.clear();
        {
            let mut pending = self.shared.lock();
            if !self.shared.alive.load(Ordering::Acquire) {
                return Err(requests);
            }
            let now = Instant::now();
            for request in requests {
                buf.extend_from_slice(&request.line);
                buf.push(b'\n');
                pending.push_back(Pending {
                    request,
                    begun: false,
                    blocks: Vec::new(),
                    sent_at: now,
                });
            }
        }
        queued();
        let written = tokio::time::timeout(write_timeout, stdin.write_all(&buf)).await;
        self.write_buf = buf;
        if !matches!(written, Ok(Ok(()))) {
            // tmux stopped reading (or the pipe broke): end the client; the reader then reports
            // what was started and hands back the rest.
            tracing::warn!(session = %self.session, "writing to the tmux control client failed; closing it");
            let _ = self.child.start_kill();
        }
        Ok(())
    }

    /// Lines written and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.shared.lock().len()
    }

    /// When the oldest unanswered line was written.
    pub fn oldest_in_flight(&self) -> Option<Instant> {
        self.shared.lock().front().map(|p| p.sent_at)
    }

    /// A handle that completes when some pending line has been answered; usable while the
    /// connection itself is borrowed for [`Self::next_event`].
    pub fn progress_notifier(&self) -> ProgressNotifier {
        ProgressNotifier(self.shared.clone())
    }

    /// Completes once the connection has ended. An owner that waits for a reply without reading
    /// [`Self::next_event`] meanwhile waits on this too: a line tmux never began comes back in
    /// the close event, so no reply ever comes for it.
    pub(crate) fn ended(&self) -> WaitForCancellationFutureOwned {
        self.shared.ended.clone().cancelled_owned()
    }

    /// The next notification or the close event; `None` after the close event was taken.
    pub async fn next_event(&mut self) -> Option<ConnEvent> {
        self.events.recv().await
    }

    /// Ends the client at once (the reader then reports [`ConnEvent::Closed`]).
    pub fn kill(&mut self) {
        let _ = self.child.start_kill();
    }

    /// Detaches cleanly: closes stdin (tmux answers with `%exit`) and waits for the child,
    /// killing it if it does not leave within `timeout`.
    pub async fn close(mut self, timeout: Duration) {
        self.stdin = None;
        if tokio::time::timeout(timeout, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
        let _ = tokio::time::timeout(timeout, &mut self.reader).await;
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // `kill_on_drop` covers the child; the reader ends on EOF, but do not leave it behind
        // if the pipe somehow stays open.
        self.reader.abort();
    }
}

/// Whether tmux's error says that no server listens on the socket (as opposed to a failure
/// such as a permission problem, which an operator must fix).
pub fn is_absent_message(stderr: &str) -> bool {
    stderr.starts_with("no server running on")
        || (stderr.starts_with("error connecting to")
            && (stderr.contains("No such file or directory")
                || stderr.contains("Connection refused")))
}

fn classify_refusal(stderr: &[u8], closed: Option<CloseReason>, socket: String) -> ConnectError {
    let mut text = String::from_utf8_lossy(stderr).trim().to_string();
    if let Some(CloseReason::AttachFailed(message)) = &closed
        && text.is_empty()
    {
        text = message.clone();
    }
    if is_absent_message(&text) {
        ConnectError::NoServer { socket }
    } else if text.contains("no sessions") {
        ConnectError::NoSessions { socket }
    } else if !text.is_empty() {
        ConnectError::Refused(text)
    } else if closed.as_ref().is_some_and(CloseReason::server_gone) {
        ConnectError::ServerExited { socket }
    } else {
        let how = closed.map_or_else(|| "without a reason".to_string(), |r| r.to_string());
        ConnectError::Refused(format!("the client ended before attaching ({how})"))
    }
}

/// The `tmux -C` command line of a control client with `flags`: attach to the chosen
/// session, or create the session and attach to it in one command.
fn control_command(
    options: &ConnectOptions,
    flags: &str,
) -> Result<tokio::process::Command, LinkDown> {
    let mut args: Vec<std::ffi::OsString> = Vec::new();
    match options.create {
        Some(new) => {
            args.extend(
                ["-N", "-C", "new-session", "-E", "-f", flags, "-s", new.name].map(Into::into),
            );
            args.push("--".into());
            args.extend(new.argv.iter().map(Into::into));
        }
        None => {
            args.extend(["-N", "-C", "attach-session", "-E", "-f", flags].map(Into::into));
            if let Some(session) = options.session {
                args.extend(["-t".into(), session.to_string().into()]);
            }
        }
    }
    let mut command = tmux_command(&options.tmux_bin, &options.endpoint, args)?;
    command.stdin(std::process::Stdio::piped());
    Ok(command)
}

/// The attached session, or why the client ended before attaching.
type Handshake = oneshot::Sender<Result<(SessionId, Vec<u8>), CloseReason>>;

/// Most notifications waiting for the connection's owner. The owner takes them as they come
/// (the monitor may wait on tmux between two); a queue this long is a flood, not tmux.
pub const MAX_QUEUED_EVENTS: usize = 16 * 1024;

async fn read_loop(
    stdout: ChildStdout,
    shared: Arc<Shared>,
    events: mpsc::Sender<ConnEvent>,
    sink: Option<Arc<dyn OutputSink>>,
    handshake: Handshake,
) {
    let mut lines = Lines {
        reader: BufReader::with_capacity(256 * 1024, stdout),
        parser: Parser::new(),
        line: Vec::with_capacity(16 * 1024),
    };
    let mut handshake = Some(handshake);
    // The attach command's own error, if it fails before the client is attached (tmux
    // reports it in a block, then `%exit`).
    let mut attach_error = None;
    let reason = loop {
        let event = match lines.next_event().await {
            Ok(event) => event,
            Err(reason) => break reason,
        };
        let event = match dispatch(event, &shared, &mut lines.parser, sink.as_deref()) {
            Dispatched::Done => continue,
            Dispatched::Exit(reason) => break reason,
            Dispatched::BlockFailed(text) => {
                if handshake.is_some() {
                    attach_error = Some(text);
                }
                continue;
            }
            Dispatched::Attached { session, name } => match handshake.take() {
                Some(tx) => {
                    let _ = tx.send(Ok((session, name)));
                    continue;
                }
                None => ConnEvent::SessionChanged { session, name },
            },
            Dispatched::Owner(event) => event,
        };
        // The reader never waits on the owner (tmux would stop reading the panes' programs),
        // so a full queue ends the connection instead.
        match events.try_send(event) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                break CloseReason::Flooded("more notifications than the connection reads");
            }
        }
    };
    if let CloseReason::Flooded(what) = &reason {
        tracing::warn!(
            reason = what,
            "a tmux control client's output broke its bounds; dropping the connection"
        );
    }
    if let Some(tx) = handshake.take() {
        let _ = tx.send(Err(
            attach_error.map_or_else(|| reason.clone(), CloseReason::AttachFailed)
        ));
    }
    let unstarted = close_pending(&shared);
    shared.progress.notify_one();
    shared.ended.cancel();
    // The last event: waiting for room is fine here, the connection reads nothing more.
    let _ = events.send(ConnEvent::Closed { reason, unstarted }).await;
}

/// What the reader did with one event, and what is left to do.
enum Dispatched {
    /// Handled: a reply matched, output handed on.
    Done,
    /// A block that is not ours failed (the attach's own, before the client is attached).
    BlockFailed(String),
    /// The client is attached to this session now.
    Attached { session: SessionId, name: Vec<u8> },
    /// For the connection's owner.
    Owner(ConnEvent),
    /// tmux is closing the client.
    Exit(CloseReason),
}

/// Handles what is the reader's own to handle in `event` (replies, output).
fn dispatch(
    event: Event,
    shared: &Shared,
    parser: &mut Parser,
    sink: Option<&dyn OutputSink>,
) -> Dispatched {
    match event {
        Event::Begin { flags, .. } => {
            if flags & 1 == 1
                && let Some(front) = shared.lock().front_mut()
            {
                front.begun = true;
                parser.limit_open_block(front.request.reply_limit);
            }
            Dispatched::Done
        }
        Event::Block(block) if block.is_ours() => {
            complete_front(shared, block);
            Dispatched::Done
        }
        // The attach command's block, or a hook's.
        Event::Block(block) if !block.ok => Dispatched::BlockFailed(block_text(&block)),
        Event::Block(_) => Dispatched::Done,
        Event::Output { pane, data, .. } => {
            if let Some(sink) = sink {
                sink.output(pane, &data);
            }
            Dispatched::Done
        }
        Event::SessionChanged { session, name } => Dispatched::Attached { session, name },
        Event::Pause(pane) => Dispatched::Owner(ConnEvent::Pause(pane)),
        Event::Continue(pane) => Dispatched::Owner(ConnEvent::Continue(pane)),
        Event::Notification { name, args } => {
            Dispatched::Owner(ConnEvent::Notification { name, args })
        }
        Event::Exit { reason } => Dispatched::Exit(CloseReason::Exit(
            reason.map(|r| String::from_utf8_lossy(&r).into_owned()),
        )),
        Event::Stray(text) => {
            tracing::debug!(len = text.len(), "stray line from tmux");
            Dispatched::Done
        }
    }
}

/// The client's standard output as events: bounded lines through the parser.
struct Lines {
    reader: BufReader<ChildStdout>,
    parser: Parser,
    line: Vec<u8>,
}

impl Lines {
    /// The next event, or why the connection ends.
    async fn next_event(&mut self) -> Result<Event, CloseReason> {
        let read_failed = |e: std::io::Error| CloseReason::ReadError(e.to_string());
        loop {
            let limit = self.parser.line_limit();
            match read_line_within(&mut self.reader, &mut self.line, limit).await {
                Ok(LineRead::Eof) => return Err(CloseReason::Eof),
                Ok(LineRead::Whole) => {}
                Ok(LineRead::Cut) if self.parser.in_block() => {
                    // A reply line longer than the reply may be: its block is oversized, and
                    // the rest of the line is read and dropped to stay in step.
                    self.parser.cut_line();
                    if !skip_line(&mut self.reader).await.map_err(read_failed)? {
                        return Err(CloseReason::Eof);
                    }
                    continue;
                }
                Ok(LineRead::Cut) => {
                    return Err(CloseReason::Flooded("a line longer than tmux writes"));
                }
                Err(e) => return Err(read_failed(e)),
            }
            if let Some(event) = self.parser.feed(&self.line) {
                return Ok(event);
            }
        }
    }
}

/// How a bounded line read ended.
#[derive(Debug, PartialEq, Eq)]
enum LineRead {
    /// A whole line (or the unterminated rest before EOF) is in the buffer, without its `\n`.
    Whole,
    /// The line is longer than the limit: the buffer holds its start, the rest is unread.
    Cut,
    /// Nothing more to read.
    Eof,
}

/// Reads one line into `line` (cleared first, `\n` dropped), keeping at most `limit` bytes:
/// a longer line is [`LineRead::Cut`] as soon as it passes the limit, so whoever writes into
/// the pipe cannot make the reader hold more.
async fn read_line_within<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<LineRead> {
    line.clear();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.is_empty() {
                LineRead::Eof
            } else {
                LineRead::Whole
            });
        }
        let newline = memchr::memchr(b'\n', available);
        let chunk = &available[..newline.unwrap_or(available.len())];
        if line.len() + chunk.len() > limit {
            let room = limit - line.len();
            line.extend_from_slice(&chunk[..room]);
            reader.consume(room);
            return Ok(LineRead::Cut);
        }
        line.extend_from_slice(chunk);
        let used = chunk.len() + usize::from(newline.is_some());
        reader.consume(used);
        if newline.is_some() {
            return Ok(LineRead::Whole);
        }
    }
}

/// Reads and drops the rest of a line; `false` at EOF.
async fn skip_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<bool> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(false);
        }
        match memchr::memchr(b'\n', available) {
            Some(at) => {
                reader.consume(at + 1);
                return Ok(true);
            }
            None => {
                let len = available.len();
                reader.consume(len);
            }
        }
    }
}

/// Marks the connection dead; a request tmux began is lost with it, and the requests it never
/// began are returned to be sent again on the next connection.
fn close_pending(shared: &Shared) -> Vec<LineRequest> {
    let mut pending = shared.lock();
    shared.alive.store(false, Ordering::Release);
    let mut unstarted = Vec::new();
    for entry in pending.drain(..) {
        if entry.begun {
            let _ = entry.request.reply.send(Err(LineError::Lost));
        } else {
            unstarted.push(entry.request);
        }
    }
    unstarted
}

/// A block's lines joined by spaces, for an error message.
fn block_text(block: &Block) -> String {
    let lines: Vec<String> = block
        .body
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    lines.join(" ")
}

fn complete_front(shared: &Shared, block: Block) {
    let finished = {
        let mut pending = shared.lock();
        let Some(front) = pending.front_mut() else {
            tracing::warn!(
                number = block.number,
                "tmux replied to a command that was not sent"
            );
            return;
        };
        let failed = !block.ok;
        front.blocks.push(block);
        if failed || front.blocks.len() >= front.request.commands {
            pending.pop_front()
        } else {
            None
        }
    };
    if let Some(entry) = finished {
        let _ = entry.request.reply.send(Ok(entry.blocks));
        shared.progress.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], limit: usize) -> Vec<(LineRead, Vec<u8>)> {
        // A tiny buffer, so lines arrive in several pieces as they do from a pipe.
        let mut reader = BufReader::with_capacity(3, input);
        let mut line = Vec::new();
        let mut read = Vec::new();
        loop {
            let outcome = read_line_within(&mut reader, &mut line, limit)
                .await
                .unwrap();
            if outcome == LineRead::Eof {
                return read;
            }
            let cut = outcome == LineRead::Cut;
            read.push((outcome, line.clone()));
            if cut {
                skip_line(&mut reader).await.unwrap();
            }
        }
    }

    #[tokio::test]
    async fn lines_are_read_whole_within_the_limit_and_cut_beyond_it() {
        let read = lines(b"ab\n0123456789\n\nlast", 4).await;
        assert_eq!(
            read,
            vec![
                (LineRead::Whole, b"ab".to_vec()),
                (LineRead::Cut, b"0123".to_vec()),
                (LineRead::Whole, Vec::new()),
                (LineRead::Whole, b"last".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn a_line_exactly_at_the_limit_is_whole() {
        let read = lines(b"abcd\nabcde\n", 4).await;
        assert_eq!(read[0], (LineRead::Whole, b"abcd".to_vec()));
        assert_eq!(read[1], (LineRead::Cut, b"abcd".to_vec()));
        assert_eq!(read.len(), 2);
    }

    #[tokio::test]
    async fn an_endless_line_is_cut_without_being_read_to_its_end() {
        // 8 MiB without a newline: the reader stops after the limit and keeps no more.
        let input = vec![b'a'; 8 << 20];
        let mut reader = BufReader::with_capacity(64 * 1024, &input[..]);
        let mut line = Vec::new();
        let outcome = read_line_within(&mut reader, &mut line, 1 << 20)
            .await
            .unwrap();
        assert_eq!(outcome, LineRead::Cut);
        assert_eq!(line.len(), 1 << 20);
        assert!(line.capacity() < 4 << 20, "{}", line.capacity());
    }
}
