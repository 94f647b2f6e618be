//! `wait_for_state`: wait until one pane, or any or all of a set, reaches a state — quiet for a
//! while, waiting for input, done with a command, exited, printed a line with some text — and
//! say which, what and when.
//!
//! The set: panes by id, every pane of a session or window, or (no targets) every pane the
//! caller may see, at most [`MAX_TARGETS`].
//!
//! Each pane's stream is kept (as for the ledger) and subscribed; the wait sleeps until a pane
//! prints, ends, or reaches the time its state could next change (an idle threshold), and asks
//! tmux nothing meanwhile. "Waiting for input" needs `/proc` evidence
//! ([`muxgate_mux::foreground`]), read only once a pane has been quiet for a moment and then
//! less and less often while it stays quiet (every read that says "not waiting" doubles the
//! pause, up to 2 s); new output starts that over. Text is matched in each pane's new lines as
//! `wait_for_text` matches it (literal, any case), decoded once per pane for every wait on it
//! ([`LineReader`]).

use std::sync::Arc;
use std::time::Duration;

use futures::future::select_all;
use muxgate_mux::ledger::CommandRecord;
use muxgate_mux::text_match::{Pattern, PatternOptions, compile};
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::watch::{cancelled, keep, unix_ms};
use crate::mcp::McpServer;
use crate::mcp::access::{TmuxAccess, not_found};
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::pane_ops::{PaneScope, pane_rows};
use crate::mcp::tools::watch::{foreground_of_state, read_settled_state};
use muxgate_tmux::output::PaneStream;
use muxgate_tmux::typed::pane_state::PaneState;
use muxgate_tmux::wire::target::Target;
use muxgate_tmux::{LineReader, OutputSubscription, PaneId, StreamEnd};

/// Quiet this long before `/proc` is first read for `waiting_for_input`.
const QUIET_BEFORE_PROC: Duration = Duration::from_millis(100);
/// The longest pause between `/proc` reads of a pane that stays quiet and not waiting.
const MAX_PROC_PAUSE: Duration = Duration::from_secs(2);
const DEFAULT_IDLE: Duration = Duration::from_secs(2);
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Most panes one wait watches.
const MAX_TARGETS: usize = 64;

/// What `wait_for_state` waits for: no output for `idle_ms`; the foreground program blocked
/// reading the terminal (as get_pane_state says it); a command list_commands records ended; the
/// pane's program exited or the pane closed; a new output line holds `pattern`. (Variants carry
/// no doc comments: the schema would repeat them per value.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StateCondition {
    Idle,
    WaitingForInput,
    CommandFinished,
    Exited,
    Text,
}

/// Whether the first pane to reach the state ends the wait, or the last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Quorum {
    #[default]
    Any,
    All,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitForStateInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Panes `%N`, sessions or windows `@N` (all their panes); absent: every pane you may see.
    /// At most 64 panes.
    #[serde(default)]
    pub targets: Option<Vec<String>>,
    /// idle: no output for `idle_ms`.
    pub condition: StateCondition,
    /// For `text`: text (any case) a new line must hold.
    #[serde(default)]
    pub pattern: Option<String>,
    /// For `idle`: quiet this long (default 2000).
    #[serde(default)]
    pub idle_ms: Option<u64>,
    /// Default any.
    #[serde(default)]
    pub mode: Quorum,
    /// Seconds (default 30, capped by your max_wait_seconds).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// command_finished: the last answer's `cursor`, to miss none.
    #[serde(default)]
    pub since: Option<String>,
}

/// One pane that reached the state.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StateReached {
    pub pane_id: String,
    /// When, from the start of the wait.
    pub after_ms: u64,
    /// The finished command's (command_finished) or the program's (exited).
    pub exit_status: Option<i32>,
    /// The finished command (command_finished).
    pub command: Option<String>,
    /// The line that matched (text).
    pub line: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WaitForStateOutput {
    /// reached, or timeout.
    pub outcome: &'static str,
    /// In the order they got there.
    pub reached: Vec<StateReached>,
    /// Panes that had not.
    pub pending: Vec<String>,
    pub waited_ms: u64,
    /// command_finished: pass as `since` to miss no command in the next wait.
    pub cursor: Option<String>,
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
struct Watched {
    pane: PaneId,
    stream: Arc<PaneStream>,
    feed: Feed,
    /// A line matching the text condition, once one was printed.
    matched: Option<String>,
    state: PaneState,
    /// The newest record when the wait began (or the `since` cursor says), and whether it was
    /// still running then: a record after it, or it once finished, is news.
    baseline: Option<(u64, bool)>,
    /// When the command it reached the state with ended (command_finished).
    command_ended: Option<std::time::SystemTime>,
    ended: Option<StreamEnd>,
    /// When `/proc` may be read next, and the pause after that.
    proc_at: Instant,
    proc_pause: Duration,
    reached: Option<StateReached>,
}

impl Watched {
    /// Starts watching `pane`: its output stream (kept until `deadline`), its settled state
    /// and the newest command record the wait counts from.
    async fn start(
        tmux: &TmuxAccess<'_>,
        pane: PaneId,
        rules: &WaitRules,
        started: Instant,
        deadline: Instant,
    ) -> Result<Self, ToolError> {
        let stream = keep(tmux, pane, deadline).await?;
        let feed = match &rules.pattern {
            Some(pattern) => Feed::Lines(
                Box::new(LineReader::new(stream.subscribe())),
                pattern.clone(),
            ),
            None => Feed::Bytes(stream.subscribe()),
        };
        let state = read_settled_state(tmux, pane).await?;
        let baseline = match rules.since.as_ref().and_then(|since| since.get(&pane)) {
            // The same recording: records after the one seen are news.
            Some(seen) if seen.recording == unix_ms(stream.since()) => {
                Some((seen.id, seen.running))
            }
            // A recording started since (the last one lapsed): every record of it is news.
            Some(_) => Some((0, false)),
            None => stream
                .with_ledger(|ledger| ledger.records().next_back().map(|r| (r.id, !r.finished()))),
        };
        let ended = state.dead.then_some(StreamEnd::PaneExited {
            status: state.dead_status,
        });
        Ok(Self {
            pane,
            stream,
            feed,
            matched: None,
            state,
            baseline,
            command_ended: None,
            ended,
            proc_at: started,
            proc_pause: Duration::from_millis(250),
            reached: None,
        })
    }

    /// Checks the pane at `now`; `None`, or the time it could next reach the state without
    /// printing anything.
    async fn check(
        &mut self,
        tmux: &TmuxAccess<'_>,
        condition: StateCondition,
        idle: Duration,
        started: Instant,
        now: Instant,
    ) -> Option<Instant> {
        let reached = |exit_status, command| StateReached {
            pane_id: self.pane.to_string(),
            after_ms: u64::try_from(now.duration_since(started).as_millis()).unwrap_or(u64::MAX),
            exit_status,
            command,
            line: None,
        };
        match condition {
            StateCondition::Text => {
                if let Some(line) = self.matched.take() {
                    self.reached = Some(StateReached {
                        line: Some(line),
                        ..reached(None, None)
                    });
                }
                None
            }
            StateCondition::Exited => {
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
            StateCondition::CommandFinished => {
                if let Some(record) = self.first_finished_news() {
                    self.baseline = Some((record.id, false));
                    self.command_ended = record.ended;
                    self.reached = Some(reached(record.exit_status, record.command));
                }
                None
            }
            StateCondition::Idle => {
                let at = self.stream.idle_since() + idle;
                if at <= now {
                    self.reached = Some(reached(None, None));
                    return None;
                }
                Some(at)
            }
            StateCondition::WaitingForInput => {
                let at = (self.stream.idle_since() + QUIET_BEFORE_PROC).max(self.proc_at);
                if at > now {
                    return Some(at);
                }
                let waiting = foreground_of_state(tmux, &self.state)
                    .await
                    .and_then(|fg| fg.waiting_for_input());
                if waiting == Some(true) {
                    self.reached = Some(reached(None, None));
                    return None;
                }
                self.proc_at = now + self.proc_pause;
                self.proc_pause = (self.proc_pause * 2).min(MAX_PROC_PAUSE);
                Some(self.proc_at)
            }
        }
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

    /// New output: a quiet pane's `/proc` checks start over.
    fn printed(&mut self) {
        self.proc_at = Instant::now();
        self.proc_pause = Duration::from_millis(250);
    }
}

/// The panes `targets` name, each once, in order: a pane itself, every pane of a session or
/// window, or with no targets every pane the caller may see.
async fn panes_of(
    tmux: &TmuxAccess<'_>,
    targets: Option<&[String]>,
) -> Result<Vec<PaneId>, ToolError> {
    let mut panes = Vec::new();
    match targets {
        None => panes.extend(
            pane_rows(tmux, &PaneScope::All)
                .await?
                .iter()
                .map(|r| r.pane()),
        ),
        Some(targets) => {
            for target in targets {
                match tmux.target(target).await? {
                    Target::Pane(pane) => panes.push(tmux.pane_of(&Target::Pane(pane)).await?),
                    group => {
                        let rows = pane_rows(tmux, &PaneScope::Of(group.clone())).await?;
                        if rows.is_empty() {
                            return Err(not_found(&group));
                        }
                        panes.extend(rows.iter().map(|r| r.pane()));
                    }
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    panes.retain(|pane| seen.insert(*pane));
    if panes.is_empty() {
        return Err(ToolError::not_found(
            "you may see no panes on this server",
            "create_session first, or name a server with panes",
        ));
    }
    if panes.len() > MAX_TARGETS {
        return Err(ToolError::invalid_arguments(
            format!(
                "the targets hold {} panes; one wait watches at most {MAX_TARGETS}",
                panes.len()
            ),
            "name fewer panes or one session",
        ));
    }
    Ok(panes)
}

/// The compiled `pattern` of a text condition; an error for a text condition without one, or
/// a pattern with another condition.
fn text_pattern(input: &WaitForStateInput) -> Result<Option<Pattern>, ToolError> {
    match (input.condition, &input.pattern) {
        (StateCondition::Text, Some(pattern)) => {
            let compiled = compile(
                "pattern",
                std::slice::from_ref(pattern),
                PatternOptions::default(),
            )
            .map_err(|e| {
                ToolError::invalid_arguments(e.to_string(), "pass the text to wait for")
            })?;
            Ok(compiled.into_iter().next())
        }
        (StateCondition::Text, None) => Err(ToolError::invalid_arguments(
            "condition text needs a pattern",
            "pass the text a new output line must hold as pattern",
        )),
        (_, Some(_)) => Err(ToolError::invalid_arguments(
            "pattern is only for condition text",
            "leave pattern out, or wait for condition text",
        )),
        (_, None) => Ok(None),
    }
}

/// Runs a `wait_for_state` on `targets` until `deadline`. The caller holds the wait budget.
async fn wait_for_state(
    tmux: &TmuxAccess<'_>,
    input: &WaitForStateInput,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<WaitForStateOutput, ToolError> {
    let started = Instant::now();
    let rules = WaitRules::from_input(tmux, input)?;
    let panes = panes_of(tmux, input.targets.as_deref()).await?;
    let mut watched = Vec::with_capacity(panes.len());
    for pane in panes {
        watched.push(Watched::start(tmux, pane, &rules, started, deadline).await?);
    }
    let order = watch(tmux, input, &rules, &mut watched, started, deadline, cancel).await?;
    Ok(answer(input, &watched, &order, started))
}

/// What a wait looks for, checked before any pane is touched.
struct WaitRules {
    idle: Duration,
    pattern: Option<Pattern>,
    since: Option<std::collections::HashMap<PaneId, Seen>>,
}

impl WaitRules {
    fn from_input(tmux: &TmuxAccess<'_>, input: &WaitForStateInput) -> Result<Self, ToolError> {
        let pattern = text_pattern(input)?;
        if input.condition == StateCondition::WaitingForInput && tmux.workspace.is_some() {
            return Err(ToolError::invalid_arguments(
                "waiting_for_input needs /proc evidence, which a workspace's panes do not give the gateway",
                "wait for idle, command_finished or exited instead",
            ));
        }
        let since = match (&input.since, input.condition) {
            (None, _) => None,
            (Some(cursor), StateCondition::CommandFinished) => Some(parse_cursor(cursor)?),
            (Some(_), _) => {
                return Err(ToolError::invalid_arguments(
                    "since is only for condition command_finished",
                    "leave since out, or wait for command_finished",
                ));
            }
        };
        Ok(Self {
            idle: input.idle_ms.map_or(DEFAULT_IDLE, Duration::from_millis),
            pattern,
            since,
        })
    }
}

/// Checks every pane not yet there, then sleeps until one prints, ends or may reach the
/// state by time alone, until the quorum is met or `deadline`. Returns the indices of the
/// panes that reached the state, in the order they did.
async fn watch(
    tmux: &TmuxAccess<'_>,
    input: &WaitForStateInput,
    rules: &WaitRules,
    watched: &mut [Watched],
    started: Instant,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<Vec<usize>, ToolError> {
    let mut order = Vec::new();
    loop {
        let now = Instant::now();
        let mut wake = deadline;
        let before = order.len();
        for (index, w) in watched.iter_mut().enumerate() {
            if w.reached.is_some() {
                continue;
            }
            if let Some(at) = w
                .check(tmux, input.condition, rules.idle, started, now)
                .await
            {
                wake = wake.min(at);
            }
            if w.reached.is_some() {
                order.push(index);
            }
        }
        // Commands found ended in one look (before the wait began, or at once) are told in the
        // order they ended.
        order[before..].sort_by_key(|&index| watched[index].command_ended);
        let done = match input.mode {
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

/// The next pane to print or end, or `None` at `wake`.
async fn next_event(
    watched: &mut [Watched],
    wake: Instant,
    cancel: &CancellationToken,
) -> Result<Option<(usize, Result<Option<String>, StreamEnd>)>, ToolError> {
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
        () = cancel.cancelled() => Err(cancelled()),
        () = tokio::time::sleep_until(wake) => Ok(None),
        next = output => Ok(Some(next)),
    }
}

/// The answer: the panes that reached the state in order, those still pending, and for
/// `command_finished` the cursor of the next wait.
fn answer(
    input: &WaitForStateInput,
    watched: &[Watched],
    order: &[usize],
    started: Instant,
) -> WaitForStateOutput {
    let reached: Vec<StateReached> = order
        .iter()
        .filter_map(|&index| watched[index].reached.clone())
        .collect();
    WaitForStateOutput {
        outcome: if reached.is_empty()
            || (input.mode == Quorum::All && reached.len() < watched.len())
        {
            "timeout"
        } else {
            "reached"
        },
        pending: watched
            .iter()
            .filter(|w| w.reached.is_none())
            .map(|w| w.pane.to_string())
            .collect(),
        reached,
        waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        cursor: (input.condition == StateCondition::CommandFinished).then(|| {
            encode_cursor(
                watched
                    .iter()
                    .map(|w| Seen::at(w.pane, &w.stream, w.baseline)),
            )
        }),
    }
}

/// One pane's entry in a `command_finished` cursor: which recording of the pane (its start,
/// in unix ms: ledger ids start again with each), the newest record already seen in it (`0`
/// before any) and whether that one was still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    pane: PaneId,
    recording: u64,
    id: u64,
    running: bool,
}

impl Seen {
    fn at(pane: PaneId, stream: &PaneStream, baseline: Option<(u64, bool)>) -> Self {
        let (id, running) = baseline.unwrap_or((0, false));
        Self {
            pane,
            recording: unix_ms(stream.since()),
            id,
            running,
        }
    }
}

/// A cursor: its panes' entries (`%3@1795766372011:5,%7@1795766372400:2+`). Opaque to agents.
fn encode_cursor(panes: impl Iterator<Item = Seen>) -> String {
    let entries: Vec<String> = panes
        .map(|seen| {
            let running = if seen.running { "+" } else { "" };
            format!("{}@{}:{}{running}", seen.pane, seen.recording, seen.id)
        })
        .collect();
    entries.join(",")
}

/// Reads an [`encode_cursor`] string, by pane.
fn parse_cursor(cursor: &str) -> Result<std::collections::HashMap<PaneId, Seen>, ToolError> {
    let bad = || {
        ToolError::invalid_arguments(
            "since is not a cursor wait_for_state returned",
            "pass the cursor of an earlier command_finished answer unchanged",
        )
    };
    let mut seen = std::collections::HashMap::new();
    for entry in cursor.split(',') {
        let (at, id) = entry.split_once(':').ok_or_else(bad)?;
        let (pane, recording) = at.split_once('@').ok_or_else(bad)?;
        let pane = pane.parse::<PaneId>().map_err(|_| bad())?;
        let recording = recording.parse::<u64>().map_err(|_| bad())?;
        let (id, running) = match id.strip_suffix('+') {
            Some(id) => (id, true),
            None => (id, false),
        };
        let id = id.parse::<u64>().map_err(|_| bad())?;
        let entry = Seen {
            pane,
            recording,
            id,
            running,
        };
        if seen.insert(pane, entry).is_some() || seen.len() > MAX_TARGETS {
            return Err(bad());
        }
    }
    Ok(seen)
}

#[tool_router(router = state_wait_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "wait_for_state",
        description = "Wait until any (or all) of some panes is idle, waiting for input, done \
            with a command, exited, or printed a line with `pattern`.\n\n\
            Asks tmux nothing meanwhile. Returns `reached` panes in order, with `after_ms`.",
        annotations(
            title = "Wait for pane states",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn wait_for_state(
        &self,
        Extension(call): Extension<CallContext>,
        cancel: CancellationToken,
        Parameters(input): Parameters<WaitForStateInput>,
    ) -> Result<Json<WaitForStateOutput>, ToolError> {
        if let Some(targets) = &input.targets
            && (targets.is_empty() || targets.len() > MAX_TARGETS)
        {
            return Err(ToolError::invalid_arguments(
                format!(
                    "targets must hold 1 to {MAX_TARGETS} entries, got {}",
                    targets.len()
                ),
                "pass pane ids, a session, or leave targets out for every pane you may see",
            ));
        }
        if input.idle_ms == Some(0) {
            return Err(ToolError::invalid_arguments(
                "idle_ms must be positive",
                "pass how long the pane must stay quiet, in milliseconds",
            ));
        }
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let budget = tmux.budget().wait(input.timeout, DEFAULT_TIMEOUT)?;
        let work = wait_for_state(&tmux, &input, budget.deadline, &cancel);
        self.state().until_shutdown(work).await.map(Json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_what_it_wrote() {
        let seen = |pane, recording, id, running| Seen {
            pane: PaneId(pane),
            recording,
            id,
            running,
        };
        let panes = [
            seen(3, 17, 5, false),
            seen(7, 18, 2, true),
            seen(9, 19, 0, false),
        ];
        let cursor = encode_cursor(panes.into_iter());
        assert_eq!(cursor, "%3@17:5,%7@18:2+,%9@19:0");
        let read = parse_cursor(&cursor).unwrap();
        assert_eq!(read.len(), 3);
        for entry in panes {
            assert_eq!(read[&entry.pane], entry);
        }
    }

    #[test]
    fn a_cursor_not_from_an_answer_is_refused() {
        for bad in [
            "",
            "%3",
            "%3:5",
            "%3@1:",
            "3@1:5",
            "%3@x:5",
            "%3@1:x",
            "%3@1:5-",
            "%3@1:5,%3@1:6",
            "%3@1:5;%4@1:1",
            "%3@1:+",
        ] {
            assert!(parse_cursor(bad).is_err(), "{bad:?}");
        }
        let many: Vec<String> = (0..=MAX_TARGETS).map(|i| format!("%{i}@1:1")).collect();
        assert!(parse_cursor(&many.join(",")).is_err());
    }
}
