//! `send_prompt`: deliver text to an interactive program — an agent CLI, a REPL, a shell — so
//! that it is submitted exactly once.
//!
//! The path, one stage after another:
//! 1. **ready**: wait (bounded) until the program is ready for input ([`prompt::readiness`]):
//!    `/proc` evidence where the gateway may read it, else the pane quiet for `quiet_ms`. The
//!    pane's output stream wakes the wait; tmux is asked nothing meanwhile.
//! 2. **paste**: the text as one bracketed paste, then wait until its echo settles, so the Enter
//!    cannot arrive in the same burst (programs that detect pastes by timing would take it as a
//!    newline inside the paste).
//! 3. **submit**: Enter as a separate key; then the evidence ([`prompt`]): the newline a
//!    line-reading program echoes, or a full-screen program staying busy or no longer showing
//!    the text at its cursor. Without evidence, Enter is pressed once more (an empty input box
//!    ignores it) and checked again.

use std::time::Duration;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::watch::{cancelled, elapsed_ms, keep};
use crate::mcp::McpServer;
use crate::mcp::access::{PANES_HINT, TmuxAccess};
use crate::mcp::call::CallContext;
use crate::mcp::error::ToolError;
use crate::mcp::once::{self, Once};
use crate::mcp::pane_ops;
use crate::mcp::position::OutputPosition;
use crate::mcp::tools::watch::{foreground_of_state, read_state};
use crate::mux::agent_report::{AgentReports, PaneInstance};
use crate::mux::prompt::{self, Ready};
use muxgate_tmux::follow::Cancelled;
use muxgate_tmux::follow::reaction::{Reaction, Timing, react};
use muxgate_tmux::ops::input::InputPlan;
use muxgate_tmux::ops::keys::KeyName;
use muxgate_tmux::output::PaneStream;
use muxgate_tmux::typed::pane_state::PaneState;
use muxgate_tmux::{OutputSubscription, PaneId};

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_QUIET: Duration = Duration::from_millis(500);
/// The first and the longest pause between `/proc` reads of a program that is plainly busy.
const BUSY_PAUSE: Duration = Duration::from_millis(50);
const MAX_BUSY_PAUSE: Duration = Duration::from_millis(500);
/// After the paste: how long its echo may take to start, the quiet that ends it, and (as long
/// again as its start) how long it may flow before it counts as busy.
const ECHO: Timing = Timing {
    within: Duration::from_secs(2),
    quiet: Duration::from_millis(100),
    busy_after: Duration::from_secs(2),
};
/// After Enter: how long a reaction may take to start, the quiet that ends it, and how long
/// output must keep coming (no quiet) to show the program busy with the prompt.
const REACTION: Timing = Timing {
    within: Duration::from_millis(1500),
    quiet: Duration::from_millis(150),
    busy_after: Duration::from_millis(600),
};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SendPromptInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane.
    pub target: String,
    /// The prompt; may span lines. Trailing newlines are dropped.
    pub text: String,
    /// Without /proc evidence, ready once quiet this long (default 500).
    #[serde(default)]
    pub quiet_ms: Option<u64>,
    /// Seconds (default 30, capped by your max_wait_seconds).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// A retry with it types nothing.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct SendPromptOutput {
    pub pane_id: String,
    /// submitted; not_ready (nothing typed); not_submitted.
    pub outcome: &'static str,
    /// read_terminal, shell_prompt, agent_report or quiet.
    pub ready_by: Option<&'static str>,
    /// newline_echoed, busy_output, input_cleared; or busy, agent_working, printing,
    /// pane_exited, lines_would_split, paste_not_shown, input_still_shown, no_newline_echoed.
    pub evidence: &'static str,
    pub enter_presses: u32,
    pub waited_ms: u64,
    /// Pass as wait_for_text `since`.
    pub output_position: Option<String>,
    pub replayed: bool,
}

/// The result of a delivery, before the pane and timing are added.
struct Delivery {
    outcome: &'static str,
    ready: Option<Ready>,
    evidence: &'static str,
    enter_presses: u32,
    position: Option<String>,
}

impl Delivery {
    fn not_ready(evidence: &'static str) -> Self {
        Self {
            outcome: "not_ready",
            ready: None,
            evidence,
            enter_presses: 0,
            position: None,
        }
    }
}

/// One `send_prompt` on one pane.
struct Prompter<'a> {
    tmux: &'a TmuxAccess<'a>,
    pane: PaneId,
    stream: std::sync::Arc<PaneStream>,
    output: OutputSubscription,
    /// When waiting for readiness ends: early enough that pasting and checking (each bounded
    /// on its own) fit in the call's time.
    ready_until: Instant,
    reports: &'a AgentReports,
    cancel: &'a CancellationToken,
}

impl Prompter<'_> {
    /// Waits until the program is ready for input, or says why it was not by the deadline.
    async fn until_ready(
        &mut self,
        state: &PaneState,
        quiet: Duration,
    ) -> Result<Result<Ready, &'static str>, ToolError> {
        let deadline = self.ready_until;
        let instance = PaneInstance {
            server: state.server_pid,
            pane: self.pane,
            program: state.pane_pid,
        };
        let mut pause = BUSY_PAUSE;
        // When to read `/proc` and the reports next: output moves it no closer than
        // BUSY_PAUSE, so a program printing fast is not read after every chunk.
        let mut look_at = Instant::now();
        loop {
            let now = Instant::now();
            if now >= look_at || now >= deadline {
                let foreground = foreground_of_state(self.tmux, state).await;
                let idle_since = self.stream.idle_since();
                let report = self.reports.latest(&self.tmux.instance(), instance);
                let agent = prompt::agent_says(report.as_ref(), idle_since, now);
                let not_ready = match prompt::readiness(
                    foreground.as_ref(),
                    agent,
                    now.duration_since(idle_since),
                    quiet,
                ) {
                    Ok(ready) => return Ok(Ok(ready)),
                    Err(why) => why,
                };
                if now >= deadline {
                    return Ok(Err(not_ready.as_str()));
                }
                // A busy program, or an agent reporting work, is looked at again after a
                // pause; a printing one once it could have been quiet long enough.
                look_at = if not_ready == prompt::NotReady::Printing {
                    idle_since + quiet
                } else {
                    let at = now + pause;
                    pause = (pause * 2).min(MAX_BUSY_PAUSE);
                    at
                };
            }
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Err(cancelled()),
                () = tokio::time::sleep_until(look_at.min(deadline)) => {}
                next = self.output.next() => match next {
                    Ok(_) => {
                        pause = BUSY_PAUSE;
                        look_at = look_at.min(Instant::now() + BUSY_PAUSE);
                    }
                    Err(_) => return Ok(Err("pane_exited")),
                },
            }
        }
    }

    /// Whether the prompt's text still ends at the pane's cursor, and whether the cursor is in
    /// a bordered input box.
    async fn shows(&self, tail: &str) -> Result<(bool, bool), ToolError> {
        let screen = self.tmux.panes().visible_screen(self.pane).await;
        let screen = screen.map_err(|e| self.tmux.pane_error(self.pane, PANES_HINT, e))?;
        Ok(screen.map_or((false, false), |screen| {
            (
                prompt::still_in_input(&screen.rows, screen.cursor_row, tail),
                prompt::in_input_box(&screen.rows, screen.cursor_row),
            )
        }))
    }

    /// Presses Enter; what the pane printed before it is left out of what follows.
    async fn press_enter(&mut self) -> Result<(), ToolError> {
        self.output.take().ok();
        let mut plan = InputPlan::new(self.pane);
        plan.keys(&[KeyName::enter()])
            .map_err(pane_ops::input_error)?;
        pane_ops::deliver(self.tmux, plan).await.map(|_| ())
    }

    /// Pastes `text` into a program that is `ready`, presses Enter, and checks it was taken.
    async fn submit(&mut self, text: &str, ready: Ready) -> Result<Delivery, ToolError> {
        if ready == Ready::ReadingTerminal && text.contains('\n') {
            // A plain line read takes each line as it comes: it would get several prompts.
            return Ok(Delivery {
                outcome: "not_submitted",
                ready: Some(ready),
                evidence: "lines_would_split",
                enter_presses: 0,
                position: None,
            });
        }
        let tail = prompt::visible_tail(text).unwrap_or_default();
        self.output.take().ok();
        let pasted = pane_ops::paste_text(self.tmux, self.pane, text.as_bytes(), true).await?;
        let mut delivery = Delivery {
            outcome: "not_submitted",
            ready: Some(ready),
            evidence: "paste_not_shown",
            enter_presses: 0,
            position: pasted
                .position
                .map(|cursor| OutputPosition::new(cursor, text).encode()),
        };
        let (echo, _) = react(&mut self.output, ECHO, self.cancel)
            .await
            .map_err(|Cancelled| cancelled())?;
        if echo == Reaction::Ended {
            delivery.evidence = "pane_exited";
            return Ok(delivery);
        }
        let boxed = if ready.reads_lines() {
            false
        } else {
            let (shown, boxed) = self.shows(&tail).await?;
            if !shown {
                return Ok(delivery);
            }
            boxed
        };
        self.press_enter_until_taken(ready, boxed, &tail, delivery)
            .await
    }

    /// Presses Enter (twice where an extra one is harmless) until the program shows it took
    /// the pasted input.
    async fn press_enter_until_taken(
        &mut self,
        ready: Ready,
        boxed: bool,
        tail: &str,
        mut delivery: Delivery,
    ) -> Result<Delivery, ToolError> {
        // A second Enter only where an empty input ignores it: a shell prompt, an agent CLI
        // (its hook reported) or a bordered input box. A program reading lines would take it as
        // an empty line (an answer to `input()`, say).
        let presses = match ready {
            Ready::ShellPrompt | Ready::AgentReport => 2,
            Ready::Quiet if boxed => 2,
            Ready::ReadingTerminal | Ready::Quiet => 1,
        };
        for _ in 0..presses {
            self.press_enter().await?;
            delivery.enter_presses += 1;
            let (reaction, bytes) = react(&mut self.output, REACTION, self.cancel)
                .await
                .map_err(|Cancelled| cancelled())?;
            let evidence = if reaction == Reaction::Ended {
                delivery.evidence = "pane_exited";
                return Ok(delivery);
            } else if ready.reads_lines() {
                prompt::line_taken(&bytes).then_some("newline_echoed")
            } else if reaction == Reaction::Busy {
                Some("busy_output")
            } else {
                (!self.shows(tail).await?.0).then_some("input_cleared")
            };
            if let Some(evidence) = evidence {
                delivery.outcome = "submitted";
                delivery.evidence = evidence;
                return Ok(delivery);
            }
        }
        delivery.evidence = if ready.reads_lines() {
            "no_newline_echoed"
        } else {
            "input_still_shown"
        };
        Ok(delivery)
    }
}

/// The most that pasting, waiting for the echo and checking two Enters can take.
const SUBMIT_TIME: Duration = Duration::from_millis(
    (ECHO.within.as_millis() + 2 * (REACTION.within.as_millis() + REACTION.busy_after.as_millis()))
        as u64,
);

/// When waiting for readiness ends, for a call ending at `deadline` after `timeout`: early
/// enough that the submission fits, but never before half the timeout.
fn ready_until(deadline: Instant, timeout: Duration) -> Instant {
    deadline - SUBMIT_TIME.min(timeout / 2)
}

#[tool_router(router = prompt_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "send_prompt",
        description = "Submit a prompt to an interactive program (agent CLI, REPL, shell) \
            exactly once: waits until it is ready, pastes the text, presses Enter separately and \
            checks it was taken (else once more).\n\n\
            `outcome`: submitted, not_ready (nothing typed) or not_submitted.",
        annotations(
            title = "Send a prompt",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    pub(crate) async fn send_prompt(
        &self,
        Extension(call): Extension<CallContext>,
        cancel: CancellationToken,
        Parameters(input): Parameters<SendPromptInput>,
    ) -> Result<Json<SendPromptOutput>, ToolError> {
        let Some(text) = prompt::prompt_text(&input.text) else {
            return Err(ToolError::invalid_arguments(
                "text has nothing visible: no prompt to send",
                "pass the prompt's text (to press Enter alone, use send_keys)",
            ));
        };
        super::input::check_text_len(text.len())?;
        if input.quiet_ms == Some(0) {
            return Err(ToolError::invalid_arguments(
                "quiet_ms must be positive",
                "pass how long the pane must stay quiet, in milliseconds",
            ));
        }
        let quiet = input.quiet_ms.map_or(DEFAULT_QUIET, Duration::from_millis);
        once::check(input.idempotency_key.as_deref())?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let budget = tmux.budget().wait(input.timeout, DEFAULT_TIMEOUT)?;
        let work = async {
            let pane = tmux.pane_named(&input.target).await?;
            let request = once::request_digest((tmux.server_name(), pane.0, text));
            let keys = &self.state().prompts;
            let claim =
                match once::claim(keys, call.sub(), input.idempotency_key.as_deref(), request)? {
                    Once::Act(claim) => claim,
                    Once::Replay(answer) => {
                        return Ok(SendPromptOutput {
                            replayed: true,
                            ..answer
                        });
                    }
                };
            let until = PromptTime {
                deadline: budget.deadline,
                timeout: budget.effective,
                quiet,
            };
            let reports = &self.state().agent_reports;
            let answer = deliver_prompt(&tmux, pane, text, until, reports, &cancel).await?;
            // Nothing typed, nothing kept: a retry once the program is ready may act.
            if let Some(claim) = claim
                && answer.outcome != "not_ready"
            {
                claim.finish(answer.clone());
            }
            Ok(answer)
        };
        self.state().until_shutdown(work).await.map(Json)
    }
}

/// How long a delivery may take: until `deadline`, `timeout` after it began; `quiet` is how
/// long a pane without other evidence must be quiet to count as ready.
pub(crate) struct PromptTime {
    pub(crate) deadline: Instant,
    pub(crate) timeout: Duration,
    pub(crate) quiet: Duration,
}

/// Delivers `text` to `pane` as `send_prompt` does: once the program is ready, pasted, then
/// Enter until the program shows it took it.
pub(crate) async fn deliver_prompt(
    tmux: &TmuxAccess<'_>,
    pane: PaneId,
    text: &str,
    until: PromptTime,
    reports: &AgentReports,
    cancel: &CancellationToken,
) -> Result<SendPromptOutput, ToolError> {
    let started = Instant::now();
    let state = read_state(tmux, pane).await?;
    if state.in_mode {
        return Err(ToolError::invalid_arguments(
            format!("pane {pane} is in copy mode: keys would go to copy mode"),
            "call exit_copy_mode first",
        ));
    }
    let stream = keep(tmux, pane, until.deadline).await?;
    let mut prompter = Prompter {
        tmux,
        pane,
        output: stream.subscribe(),
        stream,
        ready_until: ready_until(until.deadline, until.timeout),
        reports,
        cancel,
    };
    let delivery = if state.dead {
        Delivery::not_ready("pane_exited")
    } else {
        match prompter.until_ready(&state, until.quiet).await? {
            Ok(ready) => prompter.submit(text, ready).await?,
            Err(why) => Delivery::not_ready(why),
        }
    };
    Ok(SendPromptOutput {
        pane_id: pane.to_string(),
        outcome: delivery.outcome,
        ready_by: delivery.ready.map(Ready::as_str),
        evidence: delivery.evidence,
        enter_presses: delivery.enter_presses,
        waited_ms: elapsed_ms(started),
        output_position: delivery.position,
        replayed: false,
    })
}
