//! Following panes until one, or all, reach a state: quiet for a while, waiting for input,
//! done with a command, exited, or printed a line with some text (`wait_for_state`).
//!
//! Each [`Watched`] pane has its output stream kept and subscribed; [`follow`] sleeps until a
//! pane prints, ends, or reaches the time its state could next change (an idle threshold),
//! and asks tmux nothing meanwhile. "Waiting for input" needs the [`Host`]'s evidence of the
//! foreground process, read only once a pane has been quiet for a moment and then less and
//! less often while it stays quiet (every read that says "not waiting" doubles the pause, up
//! to 2 s); new output starts that over. Text is matched in each pane's new lines as
//! `wait_for_text` matches it, decoded once per pane for every wait on it ([`LineReader`]).
//!
//! Which panes, with which baseline, and the answer's shape are the caller's; here is only
//! the following.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::select_all;
use muxgate_mux::host::Host;
use muxgate_mux::ledger::CommandRecord;
use muxgate_mux::text_match::Pattern;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Cancelled;
use crate::output::PaneStream;
use crate::typed::pane_state::PaneState;
use crate::{LineReader, OutputSubscription, PaneId, StreamEnd};

/// Quiet this long before the host is first asked whether a pane waits for input.
const QUIET_BEFORE_PROC: Duration = Duration::from_millis(100);
/// The first pause between two such questions about a pane that stays quiet.
const FIRST_PROC_PAUSE: Duration = Duration::from_millis(250);
/// The longest pause between two such questions.
const MAX_PROC_PAUSE: Duration = Duration::from_secs(2);

/// The state a wait waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// No output for this long.
    Idle(Duration),
    /// The foreground program blocked reading the terminal.
    WaitingForInput,
    /// A command the ledger records ended.
    CommandFinished,
    /// The pane's program exited or the pane closed.
    Exited,
    /// A new output line matched the pattern the panes were watched with.
    Text,
}

/// Whether the first pane to reach the state ends the wait, or the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quorum {
    /// The first.
    Any,
    /// The last.
    All,
}

/// A pane that reached the state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    /// How long after the wait began.
    pub after: Duration,
    /// The finished command's status (command finished) or the program's (exited).
    pub exit_status: Option<i32>,
    /// The finished command (command finished).
    pub command: Option<String>,
    /// The line that matched (text).
    pub line: Option<String>,
}

/// How a watched pane's output reaches the wait.
enum Feed {
    /// As bytes: only that it printed matters.
    Bytes(OutputSubscription),
    /// As lines, for a text condition.
    Lines(Box<LineReader>, Pattern),
}

impl Feed {
    /// Waits for the pane's next output; `Ok(Some(line))` when it printed a line matching the
    /// pattern (never on the alternate screen).
    async fn next(&mut self) -> Result<Option<String>, StreamEnd> {
        match self {
            Self::Bytes(subscription) => subscription.next().await.map(|_| None),
            Self::Lines(reader, pattern) => {
                let batch = reader.next().await?;
                if batch.alternate_screen {
                    // A full-screen program's drawing is no text lines (as for wait_for_text).
                    return Ok(None);
                }
                let lines = batch.lines.iter().map(|line| &**line);
                let matched = lines
                    .chain(batch.partial.as_deref())
                    .find(|line| pattern.is_match(line));
                Ok(matched.map(str::to_owned))
            }
        }
    }
}

/// One watched pane.
pub struct Watched {
    pane: PaneId,
    stream: Arc<PaneStream>,
    feed: Feed,
    /// A line matching the text condition, once one was printed.
    matched: Option<String>,
    state: PaneState,
    /// The newest record counted as seen, and whether it was still running then: a record
    /// after it, or it once finished, is news.
    baseline: Option<(u64, bool)>,
    /// When the command it reached the state with ended (command finished).
    command_ended: Option<SystemTime>,
    ended: Option<StreamEnd>,
    /// When the host may be asked next, and the pause after that.
    proc_at: Instant,
    proc_pause: Duration,
    reached: Option<Reached>,
}

impl Watched {
    /// Watches `pane` from now: its kept `stream` (matched against `pattern` for a text
    /// condition), its settled `state`, and the newest command record already seen
    /// (`baseline`; `None`: every finished record is news).
    pub fn new(
        pane: PaneId,
        stream: Arc<PaneStream>,
        pattern: Option<Pattern>,
        state: PaneState,
        baseline: Option<(u64, bool)>,
    ) -> Self {
        let feed = match pattern {
            Some(pattern) => Feed::Lines(Box::new(LineReader::new(stream.subscribe())), pattern),
            None => Feed::Bytes(stream.subscribe()),
        };
        let ended = state.dead.then_some(StreamEnd::PaneExited {
            status: state.dead_status,
        });
        Self {
            pane,
            stream,
            feed,
            matched: None,
            state,
            baseline,
            command_ended: None,
            ended,
            proc_at: Instant::now(),
            proc_pause: FIRST_PROC_PAUSE,
            reached: None,
        }
    }

    /// The pane.
    pub fn pane(&self) -> PaneId {
        self.pane
    }

    /// Its output stream.
    pub fn stream(&self) -> &PaneStream {
        &self.stream
    }

    /// The newest command record seen: the one it reached the state with, once it did.
    pub fn baseline(&self) -> Option<(u64, bool)> {
        self.baseline
    }

    /// How it reached the state, once it did.
    pub fn reached(&self) -> Option<&Reached> {
        self.reached.as_ref()
    }

    /// Checks the pane at `now`; `None`, or the time it could next reach the state without
    /// printing anything.
    async fn check(
        &mut self,
        host: &dyn Host,
        condition: Condition,
        started: Instant,
        now: Instant,
    ) -> Option<Instant> {
        let reached = |exit_status, command| Reached {
            after: now.duration_since(started),
            exit_status,
            command,
            line: None,
        };
        match condition {
            Condition::Text => {
                if let Some(line) = self.matched.take() {
                    self.reached = Some(Reached {
                        line: Some(line),
                        ..reached(None, None)
                    });
                }
                None
            }
            Condition::Exited => {
                let status = match &self.ended {
                    Some(StreamEnd::PaneExited { status }) => Some(*status),
                    Some(StreamEnd::PaneClosed) => Some(None),
                    _ => None,
                };
                if let Some(status) = status {
                    self.reached = Some(reached(status, None));
                }
                None
            }
            Condition::CommandFinished => {
                if let Some(record) = self.first_finished_news() {
                    self.baseline = Some((record.id, false));
                    self.command_ended = record.ended;
                    self.reached = Some(reached(record.exit_status, record.command));
                }
                None
            }
            Condition::Idle(idle) => {
                let at = self.stream.idle_since() + idle;
                if at <= now {
                    self.reached = Some(reached(None, None));
                    return None;
                }
                Some(at)
            }
            Condition::WaitingForInput => {
                let at = (self.stream.idle_since() + QUIET_BEFORE_PROC).max(self.proc_at);
                if at > now {
                    return Some(at);
                }
                if self.waiting_for_input(host).await == Some(true) {
                    self.reached = Some(reached(None, None));
                    return None;
                }
                self.proc_at = now + self.proc_pause;
                self.proc_pause = (self.proc_pause * 2).min(MAX_PROC_PAUSE);
                Some(self.proc_at)
            }
        }
    }

    /// Whether the host says the pane's foreground program reads the terminal (a dead pane
    /// has none).
    async fn waiting_for_input(&self, host: &dyn Host) -> Option<bool> {
        let foreground = self.state.foreground(host).await;
        foreground.and_then(|fg| fg.waiting_for_input())
    }

    /// The first finished command record after the baseline.
    fn first_finished_news(&self) -> Option<CommandRecord> {
        let baseline = self.baseline;
        self.stream.with_ledger(|ledger| {
            ledger
                .records()
                .find(|r| {
                    r.finished()
                        && match baseline {
                            Some((id, running)) => r.id > id || (running && r.id == id),
                            None => true,
                        }
                })
                .cloned()
        })
    }

    /// New output: a quiet pane's questions to the host start over.
    fn printed(&mut self) {
        self.proc_at = Instant::now();
        self.proc_pause = FIRST_PROC_PAUSE;
    }
}

/// The wait's bounds: when it began (a pane's [`Reached::after`] counts from there), when it
/// ends, and the caller's cancellation.
#[derive(Debug, Clone, Copy)]
pub struct Span<'a> {
    /// When the wait began.
    pub started: Instant,
    /// When it gives up.
    pub deadline: Instant,
    /// Fires when the caller stops waiting.
    pub cancel: &'a CancellationToken,
}

/// Checks every pane not yet there, then sleeps until one prints, ends or may reach the
/// state by time alone, until the `quorum` is met, the span's deadline passes or its `cancel`
/// fires. Returns the indices of the panes that reached the state, in the order they did.
pub async fn follow(
    host: &dyn Host,
    condition: Condition,
    quorum: Quorum,
    watched: &mut [Watched],
    span: Span<'_>,
) -> Result<Vec<usize>, Cancelled> {
    let Span {
        started,
        deadline,
        cancel,
    } = span;
    let mut order = Vec::new();
    loop {
        let now = Instant::now();
        let mut wake = deadline;
        let before = order.len();
        for (index, w) in watched.iter_mut().enumerate() {
            if w.reached.is_some() {
                continue;
            }
            if let Some(at) = w.check(host, condition, started, now).await {
                wake = wake.min(at);
            }
            if w.reached.is_some() {
                order.push(index);
            }
        }
        // Commands found ended in one look (before the wait began, or at once) are told in the
        // order they ended.
        order[before..].sort_by_key(|&index| watched[index].command_ended);
        let done = match quorum {
            Quorum::Any => !order.is_empty(),
            Quorum::All => order.len() == watched.len(),
        };
        if done || now >= deadline {
            return Ok(order);
        }
        if let Some((index, next)) = next_event(watched, wake, cancel).await? {
            let w = &mut watched[index];
            match next {
                Ok(matched) => {
                    w.printed();
                    w.matched = w.matched.take().or(matched);
                }
                Err(end) => w.ended = Some(end),
            }
        }
    }
}

/// What a pane's feed gave: a matching line, perhaps, or the end of its output.
type Event = (usize, Result<Option<String>, StreamEnd>);

/// The next pane to print or end, or `None` at `wake`.
async fn next_event(
    watched: &mut [Watched],
    wake: Instant,
    cancel: &CancellationToken,
) -> Result<Option<Event>, Cancelled> {
    let mut pending: Vec<_> = watched
        .iter_mut()
        .enumerate()
        .filter(|(_, w)| w.reached.is_none() && w.ended.is_none())
        .map(|(index, w)| Box::pin(async move { (index, w.feed.next().await) }))
        .collect();
    // `select_all` refuses an empty list: with every stream ended, only time can help.
    let output = async {
        if pending.is_empty() {
            std::future::pending().await
        } else {
            select_all(pending.iter_mut()).await.0
        }
    };
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(Cancelled),
        () = tokio::time::sleep_until(wake) => Ok(None),
        next = output => Ok(Some(next)),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use muxgate_mux::foreground::{Blocked, Foreground};
    use muxgate_mux::host::HostAnswer;
    use muxgate_mux::text_match::{PatternOptions, compile};
    use muxgate_mux::tty_modes::TermModes;

    use super::*;

    /// A host whose panes' programs wait for input once `waiting` is set; counts questions.
    #[derive(Debug, Default)]
    struct StandIn {
        waiting: std::sync::atomic::AtomicBool,
        asked: AtomicUsize,
    }

    impl Host for StandIn {
        fn foreground<'a>(&'a self, _: u32, _: u32, _: &'a str) -> HostAnswer<'a, Foreground> {
            self.asked.fetch_add(1, Ordering::SeqCst);
            let blocked = if self.waiting.load(Ordering::SeqCst) {
                Blocked::ReadingTerminal
            } else {
                Blocked::Running
            };
            Box::pin(std::future::ready(Some(Foreground {
                group: 2,
                pid: 2,
                is_pane_program: false,
                pane_program: "bash".into(),
                command_line: "make".into(),
                blocked,
            })))
        }

        fn term_modes<'a>(&'a self, _: &'a str) -> HostAnswer<'a, TermModes> {
            Box::pin(std::future::ready(None))
        }
    }

    fn state(pane: PaneId) -> PaneState {
        PaneState::running(pane, "bash")
    }

    fn watched(pane: u32, pattern: Option<&str>) -> (Arc<PaneStream>, Watched) {
        let pane = PaneId(pane);
        let stream = PaneStream::new(pane, 4096);
        let pattern = pattern.map(|text| {
            let compiled = compile("pattern", &[text.to_owned()], PatternOptions::default());
            compiled.expect("a literal pattern").remove(0)
        });
        let w = Watched::new(pane, stream.clone(), pattern, state(pane), None);
        (stream, w)
    }

    fn span(cancel: &CancellationToken, within: Duration) -> Span<'_> {
        let started = Instant::now();
        Span {
            started,
            deadline: started + within,
            cancel,
        }
    }

    /// Follows `panes` for at most `within`, not cancelled.
    async fn follow_for(
        host: &StandIn,
        condition: Condition,
        quorum: Quorum,
        panes: &mut [Watched],
        within: Duration,
    ) -> Result<Vec<usize>, Cancelled> {
        let cancel = CancellationToken::new();
        follow(host, condition, quorum, panes, span(&cancel, within)).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_line_with_the_text_ends_the_wait_and_is_told() {
        let (stream, w) = watched(1, Some("ready"));
        let mut panes = [w];
        let printer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            stream.push(b"booting\r\nserver READY on :80\r\n");
        });
        let host = StandIn::default();
        let order = follow_for(
            &host,
            Condition::Text,
            Quorum::Any,
            &mut panes,
            Duration::from_secs(5),
        )
        .await;
        printer.await.expect("the printer");
        assert_eq!(order, Ok(vec![0]));
        let reached = panes[0].reached().expect("reached");
        assert_eq!(reached.line.as_deref(), Some("server READY on :80"));
        assert_eq!(reached.after, Duration::from_millis(300));
    }

    #[tokio::test(start_paused = true)]
    async fn all_waits_for_the_last_pane_and_tells_them_in_order() {
        let (first, a) = watched(1, None);
        let (second, b) = watched(2, None);
        let mut panes = [a, b];
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            second.close(StreamEnd::PaneExited { status: Some(3) });
            tokio::time::sleep(Duration::from_millis(200)).await;
            first.close(StreamEnd::PaneClosed);
        });
        let host = StandIn::default();
        let order = follow_for(
            &host,
            Condition::Exited,
            Quorum::All,
            &mut panes,
            Duration::from_secs(5),
        )
        .await;
        assert_eq!(order, Ok(vec![1, 0]));
        assert_eq!(panes[1].reached().and_then(|r| r.exit_status), Some(3));
        assert_eq!(panes[0].reached().map(|r| r.exit_status), Some(None));
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_pane_is_asked_about_less_and_less_often() {
        let (_stream, w) = watched(1, None);
        let mut panes = [w];
        let host = StandIn::default();
        let order = follow_for(
            &host,
            Condition::WaitingForInput,
            Quorum::Any,
            &mut panes,
            Duration::from_secs(10),
        )
        .await;
        // Ten quiet seconds: asked at 0.1 s, then after pauses of 0.25, 0.5 and 1 s, then every
        // 2 s (3.85, 5.85, 7.85, 9.85): 8 questions, not one per tick.
        assert_eq!(order, Ok(vec![]));
        assert_eq!(host.asked.load(Ordering::SeqCst), 8);
    }

    #[tokio::test(start_paused = true)]
    async fn a_pane_that_reads_its_terminal_is_waiting_for_input() {
        let (_stream, w) = watched(1, None);
        let mut panes = [w];
        let host = StandIn::default();
        host.waiting.store(true, Ordering::SeqCst);
        let order = follow_for(
            &host,
            Condition::WaitingForInput,
            Quorum::Any,
            &mut panes,
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(order, Ok(vec![0]));
        assert_eq!(
            panes[0].reached().map(|r| r.after),
            Some(Duration::from_millis(100)),
            "asked once the pane was quiet for a moment"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn idle_is_reached_by_time_alone_and_output_starts_it_over() {
        let (stream, w) = watched(1, None);
        let mut panes = [w];
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(700)).await;
            stream.push(b"tick\r\n");
        });
        let host = StandIn::default();
        let idle = Condition::Idle(Duration::from_secs(1));
        let within = Duration::from_secs(10);
        let order = follow_for(&host, idle, Quorum::Any, &mut panes, within).await;
        assert_eq!(order, Ok(vec![0]));
        assert_eq!(
            panes[0].reached().map(|r| r.after),
            Some(Duration::from_millis(1700))
        );
        assert_eq!(host.asked.load(Ordering::SeqCst), 0, "idle needs no host");
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_wait_stops_at_once() {
        let (_stream, w) = watched(1, None);
        let mut panes = [w];
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            canceller.cancel();
        });
        let host = StandIn::default();
        let span = span(&cancel, Duration::from_secs(30));
        let order = follow(&host, Condition::Exited, Quorum::Any, &mut panes, span).await;
        assert_eq!(order, Err(Cancelled));
    }
}
