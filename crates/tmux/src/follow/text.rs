//! Following a pane's output for text: the core of `wait_for_text` (and of a batch's waits).
//!
//! A [`TextWatch`] matches the lines of a pane's output as [`LineReader`] decodes them, taking
//! the echo of typed input out first; [`follow`] feeds it until a line decides the wait, the
//! pane's stream ends, the deadline passes or the caller cancels, matching the visible screen
//! once after output was lost. What the wait answers (outcome, the matched line, the tail) is
//! read from the watch afterwards. Nothing here checks who may wait on which pane: the caller
//! resolved and checked the pane first.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;

use muxgate_mux::echo::EchoFilter;
use muxgate_mux::lines::{TAIL_LINES, tail_of};
use muxgate_mux::text_match::{Hit, WaitMatcher};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::output::StreamEnd;
use crate::output::shared_lines::{LineBatch, LineReader};

/// What one wake-up of a text wait decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// A pattern (or a stop pattern) matched this line.
    Hit(Hit),
    /// With no patterns (any output ends the wait): the first line of new output.
    AnyOutput(String),
}

/// The rows a pane printed since `since`, as `capture_since` reads them: complete rows, then
/// the one being written.
pub struct RowsSince {
    /// The complete rows, oldest first.
    pub lines: Vec<Arc<str>>,
    /// The row being written, if any.
    pub partial: Option<String>,
    /// Rows were missed (tmux trimmed or cleared its history before they were read).
    pub missed: bool,
}

/// The pure part of a text wait: matching decoded lines, the tail.
pub struct TextWatch {
    matcher: WaitMatcher,
    /// Takes the echo of typed input out of the lines before they are matched.
    echo: EchoFilter,
    tail: VecDeque<Arc<str>>,
    /// The line being written, as of the last new output.
    partial: Option<String>,
    alternate_screen: bool,
    saw_output: bool,
    /// Output was lost since the last check: the screen must be matched once.
    needs_resync: bool,
    resynced: bool,
}

impl TextWatch {
    /// A watch matching with `matcher`, taking the echo `echo` knows out of the lines.
    pub fn new(matcher: WaitMatcher, echo: EchoFilter) -> Self {
        Self {
            matcher,
            echo,
            tail: VecDeque::new(),
            partial: None,
            alternate_screen: false,
            saw_output: false,
            needs_resync: false,
            resynced: false,
        }
    }

    /// What the wait matches with.
    pub fn matcher(&self) -> &WaitMatcher {
        &self.matcher
    }

    /// Whether new output arrived (or was caught up) since the wait began.
    pub fn saw_output(&self) -> bool {
        self.saw_output
    }

    /// Whether the pane shows its alternate screen (a full-screen program), where lines are
    /// not matched.
    pub fn alternate_screen(&self) -> bool {
        self.alternate_screen
    }

    /// Marks the pane as on its alternate screen from the start (the stream reports only
    /// switches).
    pub fn assume_alternate_screen(&mut self) {
        self.alternate_screen = true;
    }

    /// Whether output was lost and the screen was matched instead.
    pub fn resynced(&self) -> bool {
        self.resynced
    }

    /// Notes what a wake-up says beyond its lines.
    fn begin(&mut self, batch: &LineBatch) {
        self.needs_resync |= batch.lost;
        self.alternate_screen = batch.alternate_screen;
        if batch.new_output {
            self.saw_output = true;
            self.partial.clone_from(&batch.partial);
        }
    }

    /// Matches new complete `lines`, then the line being written (`partial`).
    fn check(&mut self, lines: &[Arc<str>], partial: Option<&str>) -> Option<Decision> {
        let decision = self.decide(lines, partial);
        // Only the last lines can be in the tail.
        let kept = lines.len().saturating_sub(TAIL_LINES);
        self.tail.extend(lines[kept..].iter().cloned());
        let surplus = self.tail.len().saturating_sub(TAIL_LINES);
        self.tail.drain(..surplus);
        decision
    }

    fn decide(&mut self, lines: &[Arc<str>], partial: Option<&str>) -> Option<Decision> {
        if !self.echo.is_done() {
            let lines: Vec<Arc<str>> = lines
                .iter()
                .map(|line| Arc::from(self.echo.strip(line, true)))
                .collect();
            let partial = partial.map(|line| self.echo.strip(line, false));
            return self.decide_plain(&lines, partial.as_deref());
        }
        self.decide_plain(lines, partial)
    }

    fn decide_plain(&self, lines: &[Arc<str>], partial: Option<&str>) -> Option<Decision> {
        let candidates = lines.iter().map(|l| &**l).chain(partial);
        if self.matcher.any_output() {
            if let Some(hit) = self.matcher.check(candidates.clone()) {
                return Some(Decision::Hit(hit));
            }
            return candidates
                .into_iter()
                .find(|l| !l.is_empty())
                .map(|l| Decision::AnyOutput(l.to_owned()));
        }
        if self.alternate_screen {
            return None;
        }
        self.matcher.check(candidates).map(Decision::Hit)
    }

    /// Matches the rows printed between a `since` position and the start of the wait, taking
    /// out the echo `echo` knows (the stream's own echo filter is kept for the stream).
    pub fn catch_up(&mut self, rows: &RowsSince, echo: EchoFilter) -> Option<Decision> {
        let stream_echo = std::mem::replace(&mut self.echo, echo);
        let decision = self.catch_up_rows(rows);
        self.echo = stream_echo;
        decision
    }

    fn catch_up_rows(&mut self, rows: &RowsSince) -> Option<Decision> {
        self.resynced |= rows.missed;
        if !rows.lines.is_empty() || rows.partial.is_some() {
            self.saw_output = true;
            self.partial.clone_from(&rows.partial);
        }
        self.check(&rows.lines, rows.partial.as_deref())
    }

    /// Matches the visible screen once, after output was lost.
    fn resync(&mut self, screen: &[String]) -> Option<Decision> {
        self.needs_resync = false;
        self.resynced = true;
        self.matcher
            .check(screen.iter().map(String::as_str))
            .map(Decision::Hit)
    }

    /// The tail for the result: the last lines (and the line being written), capped in bytes.
    pub fn tail(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.tail.iter().map(|l| l.to_string()).collect();
        lines.extend(self.partial.clone());
        tail_of(lines)
    }
}

/// How [`follow`] ended, when no error ended it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Followed {
    /// A line decided the wait.
    Decided(Decision),
    /// The deadline passed.
    Timeout,
    /// The deadline passed while the pane showed its alternate screen.
    AlternateScreen,
    /// `cancel` fired.
    Cancelled,
    /// The pane's stream ended (its program exited, the pane or server went away).
    Ended(StreamEnd),
}

/// Follows a pane's output until a line decides the wait, the stream ends, `deadline` passes
/// or `cancel` fires. After output was lost the visible screen (from `screen`) is matched
/// once: what the stream dropped, the screen may still show.
pub async fn follow<E, Screen, Read>(
    reader: &mut LineReader,
    watch: &mut TextWatch,
    deadline: Instant,
    cancel: &CancellationToken,
    mut screen: Screen,
) -> Result<Followed, E>
where
    Screen: FnMut() -> Read,
    Read: Future<Output = Result<Vec<String>, E>>,
{
    loop {
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => return Ok(Followed::Cancelled),
            () = tokio::time::sleep_until(deadline) => None,
            next = reader.next() => Some(next),
        };
        let batch = match next {
            None if watch.alternate_screen => return Ok(Followed::AlternateScreen),
            None => return Ok(Followed::Timeout),
            Some(Ok(batch)) => batch,
            Some(Err(end)) => return Ok(Followed::Ended(end)),
        };
        let mut decision = check_in_slices(watch, &batch).await;
        if decision.is_none() && watch.needs_resync {
            decision = watch.resync(&screen().await?);
        }
        if let Some(decision) = decision {
            return Ok(Followed::Decided(decision));
        }
    }
}

/// Lines a wait matches between two yields to the runtime. Under a flood a waiter that fell
/// behind takes up to a whole log (about 1 MiB of text) at once; ten of them matching that in
/// one go kept the runtime's threads from every other request for tens of milliseconds.
const CHECK_SLICE: usize = 256;

/// Matches `batch` in [`CHECK_SLICE`] pieces, yielding between them; stops at the first
/// decision.
async fn check_in_slices(watch: &mut TextWatch, batch: &LineBatch) -> Option<Decision> {
    watch.begin(batch);
    let mut rest = &batch.lines[..];
    loop {
        let (piece, after) = rest.split_at(rest.len().min(CHECK_SLICE));
        // The line being written goes with the last piece.
        let partial = if after.is_empty() {
            batch.partial.as_deref()
        } else {
            None
        };
        if let Some(decision) = watch.check(piece, partial) {
            return Some(decision);
        }
        if after.is_empty() {
            return None;
        }
        rest = after;
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use muxgate_mux::lines::{LineAssembler, TAIL_BYTES};
    use muxgate_mux::text_match::{self, HitKind, PatternOptions};

    fn watch(patterns: Option<&[&str]>, stop: &[&str]) -> TextWatch {
        let list = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let options = PatternOptions::default();
        let patterns =
            patterns.map(|p| text_match::compile("patterns", &list(p), options).unwrap());
        let stop = text_match::compile("stop", &list(stop), options).unwrap();
        TextWatch::new(WaitMatcher::new(patterns, stop), EchoFilter::default())
    }

    /// One wake-up's worth of lines, matched in one go.
    fn feed(w: &mut TextWatch, batch: LineBatch) -> Option<Decision> {
        w.begin(&batch);
        w.check(&batch.lines, batch.partial.as_deref())
    }

    /// Decodes test output into the batches a wait receives.
    #[derive(Default)]
    struct Decoder(LineAssembler);

    impl Decoder {
        fn batch(&mut self, data: &[u8]) -> LineBatch {
            let mut lines: Vec<String> = Vec::new();
            self.0.feed(data, &mut lines);
            LineBatch {
                lines: lines.into_iter().map(Arc::from).collect(),
                partial: self.0.has_partial().then(|| self.0.partial()),
                lost: false,
                new_output: !data.is_empty(),
                alternate_screen: self.0.alternate_screen(),
            }
        }
    }

    fn hit_line(decision: Option<Decision>) -> (HitKind, String) {
        match decision {
            Some(Decision::Hit(hit)) => (hit.kind, hit.line),
            other => panic!("expected a hit, got {other:?}"),
        }
    }

    #[test]
    fn matches_complete_and_partial_lines() {
        let mut d = Decoder::default();
        let mut w = watch(Some(&["ready"]), &[]);
        assert_eq!(feed(&mut w, d.batch(b"starting\r\nalmost re")), None);
        assert_eq!(
            hit_line(feed(&mut w, d.batch(b"ady now"))),
            (HitKind::Pattern, "almost ready now".into())
        );
        assert_eq!(w.tail(), ["starting", "almost ready now"]);
    }

    #[test]
    fn matches_visible_text_not_escapes() {
        let mut d = Decoder::default();
        let mut w = watch(Some(&["build ok"]), &[]);
        assert_eq!(feed(&mut w, d.batch(b"\x1b[32mbuild\x1b[0m o")), None);
        assert_eq!(
            hit_line(feed(&mut w, d.batch(b"k\r\n"))),
            (HitKind::Pattern, "build ok".into())
        );
    }

    #[test]
    fn stop_patterns_win_within_one_wake() {
        let mut d = Decoder::default();
        let mut w = watch(Some(&["done"]), &["error"]);
        assert_eq!(
            hit_line(feed(&mut w, d.batch(b"error: x\r\ndone\r\n"))),
            (HitKind::Stop, "error: x".into())
        );
    }

    #[test]
    fn any_output_needs_visible_text() {
        let mut d = Decoder::default();
        let mut w = watch(None, &[]);
        assert_eq!(feed(&mut w, d.batch(b"\x1b[?2004h\r\n")), None);
        assert!(w.saw_output());
        assert_eq!(
            feed(&mut w, d.batch(b"$ ")),
            Some(Decision::AnyOutput("$".into()))
        );
    }

    #[test]
    fn nothing_matches_on_the_alternate_screen() {
        let mut d = Decoder::default();
        let mut w = watch(Some(&["ready"]), &[]);
        assert_eq!(feed(&mut w, d.batch(b"\x1b[?1049hready\r\n")), None);
        assert!(w.alternate_screen());
        assert_eq!(
            hit_line(feed(&mut w, d.batch(b"\x1b[?1049lready again\r\n"))).1,
            "ready again"
        );
    }

    #[test]
    fn lost_output_asks_for_one_resync() {
        let mut d = Decoder::default();
        let mut w = watch(Some(&["ready"]), &[]);
        let mut lost = d.batch(b"tail of a flood");
        lost.lost = true;
        assert_eq!(feed(&mut w, lost), None);
        assert!(w.needs_resync);
        let screen = vec!["server ready".to_owned(), "$".to_owned()];
        assert_eq!(hit_line(w.resync(&screen)).1, "server ready");
        assert!(!w.needs_resync && w.resynced);
    }

    #[test]
    fn the_tail_is_bounded() {
        let mut d = Decoder::default();
        let mut w = watch(Some(&["never"]), &[]);
        let mut data = Vec::new();
        for i in 0..30 {
            data.extend_from_slice(format!("line {i} {}\r\n", "x".repeat(150)).as_bytes());
        }
        assert_eq!(feed(&mut w, d.batch(&data)), None);
        let tail = w.tail();
        assert!(tail.len() <= TAIL_LINES);
        assert!(tail.iter().map(String::len).sum::<usize>() <= TAIL_BYTES);
        assert!(tail.last().unwrap().starts_with("line 29"));
    }
}
