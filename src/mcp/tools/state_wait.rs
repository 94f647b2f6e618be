//! `wait_for_state`: wait until one pane, or any or all of a set, reaches a state — quiet for a
//! while, waiting for input, done with a command, exited, printed a line with some text — and
//! say which, what and when.
//!
//! The set: panes by id, every pane of a session or window, or (no targets) every pane the
//! caller may see, at most [`MAX_TARGETS`].
//!
//! The following itself (sleeping until a pane prints, ends or may reach the state by time
//! alone; the host's evidence for "waiting for input", asked less and less often) is
//! `muxgate_tmux::follow::state`. Here: the arguments, which panes, the baseline a
//! `command_finished` wait counts from (its cursor), and the answer.

use std::time::Duration;

use muxgate_mux::text_match::{Pattern, PatternOptions, compile};
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::watch::{cancelled, state_error};
use crate::mcp::McpServer;
use crate::mcp::access::{PANES_HINT, TmuxAccess, not_found};
use crate::mcp::agent_wait::{self, AgentCondition, AgentWaitEnd};
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::pane_ops::{PaneScope, pane_rows};
use muxgate_tmux::PaneId;
use muxgate_tmux::follow::Cancelled;
use muxgate_tmux::follow::state::{self, Condition, Span, Watched};
use muxgate_tmux::follow::state_wait::{CommandSeen, WatchError};
use muxgate_tmux::output::PaneStream;
use muxgate_tmux::wire::target::Target;

const DEFAULT_IDLE: Duration = Duration::from_secs(2);
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Most panes one wait watches.
const MAX_TARGETS: usize = 64;

/// What `wait_for_state` waits for: no output for `idle_ms`; the foreground program blocked
/// reading the terminal (as get_pane_state says it); a command list_commands records ended; the
/// pane's program exited or the pane closed; a new output line holds `pattern`; the pane's
/// agent (get_pane_state's `agent_status`) blocked on a person, idle, or either or exited.
/// (Variants carry no doc comments: the schema would repeat them per value.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StateCondition {
    Idle,
    WaitingForInput,
    CommandFinished,
    Exited,
    Text,
    AgentBlocked,
    AgentIdle,
    AgentWaiting,
}

/// Whether the first pane to reach the state ends the wait, or the last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Quorum {
    #[default]
    Any,
    All,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitForStateInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Panes `%N`, sessions or windows `@N` (all their panes); absent: every pane you may see.
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
pub(crate) struct StateReached {
    pub pane_id: String,
    /// When, from the start of the wait.
    pub after_ms: u64,
    /// The finished command's (command_finished) or the program's (exited).
    pub exit_status: Option<i32>,
    /// The finished command (command_finished).
    pub command: Option<String>,
    /// The line that matched (text); the screen's last (agent_*).
    pub line: Option<String>,
    /// agent_*: blocked, idle or exited.
    pub agent_state: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct WaitForStateOutput {
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

/// Starts watching `pane` for the wait `rules` describe, until `deadline`.
async fn watch_pane(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    rules: &PaneRules,
    deadline: Instant,
) -> Result<Watched, ToolError> {
    let seen = rules
        .since
        .as_ref()
        .and_then(|since| since.get(&pane))
        .map(|seen| seen.command);
    tmux.state_waits()
        .watch(pane, rules.pattern.clone(), seen, deadline)
        .await
        .map_err(|e| match e {
            WatchError::Keep(e) => tmux.error(e, PANES_HINT),
            WatchError::State(e) => state_error(tmux, e),
        })
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
    gateway: &McpServer,
    tmux: &TmuxAccess<'_>,
    input: &WaitForStateInput,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<WaitForStateOutput, ToolError> {
    let started = Instant::now();
    let rules = WaitRules::from_input(tmux, input)?;
    let panes = panes_of(tmux, input.targets.as_deref()).await?;
    let rules = match rules.condition {
        Rule::Pane(condition) => PaneRules {
            condition,
            pattern: rules.pattern,
            since: rules.since,
        },
        Rule::Agent(condition) => {
            let all = input.mode == Quorum::All;
            let end = agent_wait::wait(gateway, tmux, panes, (condition, all), deadline, cancel)
                .await?
                .ok_or_else(cancelled)?;
            return Ok(agent_answer(input, end, started));
        }
    };
    let mut watched = Vec::with_capacity(panes.len());
    for pane in panes {
        watched.push(watch_pane(tmux, pane, &rules, deadline).await?);
    }
    let quorum = match input.mode {
        Quorum::Any => state::Quorum::Any,
        Quorum::All => state::Quorum::All,
    };
    let span = Span {
        started,
        deadline,
        cancel,
    };
    let order = state::follow(&*tmux.host(), rules.condition, quorum, &mut watched, span)
        .await
        .map_err(|Cancelled| cancelled())?;
    Ok(answer(input, &watched, &order, started))
}

/// What a wait looks for, checked before any pane is touched.
struct WaitRules {
    condition: Rule,
    pattern: Option<Pattern>,
    since: Option<std::collections::HashMap<PaneId, Seen>>,
}

/// What a pane must reach: a state of the pane, or of the agent in it.
enum Rule {
    Pane(Condition),
    Agent(AgentCondition),
}

/// A pane-state wait's rules.
struct PaneRules {
    condition: Condition,
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
        let condition = match input.condition {
            StateCondition::Idle => Rule::Pane(Condition::Idle(
                input.idle_ms.map_or(DEFAULT_IDLE, Duration::from_millis),
            )),
            StateCondition::WaitingForInput => Rule::Pane(Condition::WaitingForInput),
            StateCondition::CommandFinished => Rule::Pane(Condition::CommandFinished),
            StateCondition::Exited => Rule::Pane(Condition::Exited),
            StateCondition::Text => Rule::Pane(Condition::Text),
            StateCondition::AgentBlocked => Rule::Agent(AgentCondition::Blocked),
            StateCondition::AgentIdle => Rule::Agent(AgentCondition::Idle),
            StateCondition::AgentWaiting => Rule::Agent(AgentCondition::Waiting),
        };
        Ok(Self {
            condition,
            pattern,
            since,
        })
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
        .filter_map(|&index| {
            let w = &watched[index];
            w.reached().map(|reached| StateReached {
                pane_id: w.pane().to_string(),
                after_ms: u64::try_from(reached.after.as_millis()).unwrap_or(u64::MAX),
                exit_status: reached.exit_status,
                command: reached.command.clone(),
                line: reached.line.clone(),
                agent_state: None,
            })
        })
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
            .filter(|w| w.reached().is_none())
            .map(|w| w.pane().to_string())
            .collect(),
        reached,
        waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        cursor: (input.condition == StateCondition::CommandFinished).then(|| {
            encode_cursor(
                watched
                    .iter()
                    .map(|w| Seen::at(w.pane(), w.stream(), w.baseline())),
            )
        }),
    }
}

/// The answer of an agent wait.
fn agent_answer(
    input: &WaitForStateInput,
    end: AgentWaitEnd,
    started: Instant,
) -> WaitForStateOutput {
    let complete = !end.reached.is_empty() && (input.mode == Quorum::Any || end.pending.is_empty());
    WaitForStateOutput {
        outcome: if complete { "reached" } else { "timeout" },
        reached: end
            .reached
            .into_iter()
            .map(|reached| StateReached {
                pane_id: reached.pane.to_string(),
                after_ms: u64::try_from(reached.after.as_millis()).unwrap_or(u64::MAX),
                exit_status: None,
                command: None,
                line: reached.line,
                agent_state: Some(reached.state),
            })
            .collect(),
        pending: end.pending.iter().map(ToString::to_string).collect(),
        waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        cursor: None,
    }
}

/// One pane's entry in a `command_finished` cursor: the pane, and the newest record already
/// seen there ([`CommandSeen`]: its recording, by start time, since ledger ids start again with
/// each; its id, `0` before any; whether it was still running).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    pane: PaneId,
    command: CommandSeen,
}

impl Seen {
    fn at(pane: PaneId, stream: &PaneStream, baseline: Option<(u64, bool)>) -> Self {
        let (id, running) = baseline.unwrap_or((0, false));
        let recording = stream.since_unix_ms();
        Self {
            pane,
            command: CommandSeen {
                recording,
                id,
                running,
            },
        }
    }
}

/// A cursor: its panes' entries (`%3@1795766372011:5,%7@1795766372400:2+`). Opaque to agents.
fn encode_cursor(panes: impl Iterator<Item = Seen>) -> String {
    let entries: Vec<String> = panes
        .map(|seen| {
            let CommandSeen {
                recording,
                id,
                running,
            } = seen.command;
            let running = if running { "+" } else { "" };
            format!("{}@{recording}:{id}{running}", seen.pane)
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
            command: CommandSeen {
                recording,
                id,
                running,
            },
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
            with a command, exited, printed a line with `pattern`, or holds an agent blocked \
            or idle (agent_*).\n\n\
            Asks tmux nothing meanwhile.",
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
        let work = wait_for_state(self, &tmux, &input, budget.deadline, &cancel);
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
            command: CommandSeen {
                recording,
                id,
                running,
            },
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
