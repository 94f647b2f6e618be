//! Case 8: what muxgate knows about agents, measured (muxgate alone):
//! - wake-up of `wait_for_state` (`command_finished`) from the pane printing the end mark of a
//!   command to the call returning, beside `wait_for_text`'s from the pane printing a line, on
//!   the same pane in the same run ([`wake`]);
//! - 100 state waits idling on quiet panes, per condition, beside 100 idle `wait_for_text`
//!   waits: tmux commands the gateway sent, tmux processes started, tmux server CPU and the
//!   gateway's CPU ([`idle`]);
//! - a call held for approval: from the approver's `POST /approvals/{id}` to the agent's answer,
//!   beside the same call not held ([`approvals`]);
//! - `send_prompt` to the repo's agent-CLI stand-in (`tests/programs/agent_cli.py`) at random
//!   moments (while it starts, thinks or idles): how many prompts it took exactly once
//!   ([`prompts`]).

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

use crate::fixture::{BenchTmux, mkfifo, open_fifo_writer, path_str};
use crate::procfs::{self, SpawnCounter};
use crate::servers::{Agent, Muxgate};
use crate::stats::micros;

const AGENT_CLI: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs/agent_cli.py");
/// How long a wait is given to set up before the event.
const WAIT_SETTLE: Duration = Duration::from_millis(400);
/// From the calls to the start of the measured window: every wait set up.
const IDLE_SETTLE: Duration = Duration::from_secs(3);
pub(crate) const IDLE_WAITS: usize = 100;
const WAITS_PER_SESSION: usize = 10;

/// Wake-up samples (µs) of both kinds of wait.
pub(crate) struct Wake {
    pub state: Vec<f64>,
    pub text: Vec<f64>,
}

/// `n` wake-ups of each kind, alternating, on one pane running `cat <fifo>`.
pub(crate) async fn wake(n: usize) -> Result<Wake> {
    let tmux = BenchTmux::start("agents-wake", None)?;
    let files = tempfile::tempdir().context("create a temporary directory")?;
    let fifo = files.path().join("wake.fifo");
    mkfifo(&fifo)?;
    let pane = tmux.new_session(
        "wake",
        &["sh", "-c", "exec cat \"$1\"", "sh", path_str(&fifo)?],
    )?;
    let mut writer = open_fifo_writer(&fifo, Duration::from_secs(10))?;
    let gateway = Muxgate::start(tmux.socket(), None).await?;
    let agent = gateway.agent(0).await?;
    // Recording starts, then a command starts (OSC 133 C): each round ends it (D) and starts
    // the next.
    agent
        .call_tool("list_commands", json!({"target": pane}))
        .await?;
    writer
        .write_all(b"\x1b]133;C\x07")
        .context("write to the FIFO")?;
    let mut result = Wake {
        state: Vec::with_capacity(n),
        text: Vec::with_capacity(n),
    };
    for i in 0..n {
        let wait = agent.call_tool(
            "wait_for_state",
            json!({"targets": [pane], "condition": "command_finished", "timeout": 10}),
        );
        let (answer, at) =
            tokio::join!(wait, event(&mut writer, b"\x1b]133;D;0\x07\x1b]133;C\x07"));
        let returned = Instant::now();
        let answer = answer?;
        ensure!(answer["outcome"] == "reached", "wait_for_state: {answer}");
        result.state.push(micros(returned - at?));

        let line = format!("wake-{i}\n");
        let wait = agent.call_tool(
            "wait_for_text",
            json!({"target": pane, "patterns": [line.trim()], "timeout": 10}),
        );
        let (answer, at) = tokio::join!(wait, event(&mut writer, line.as_bytes()));
        let returned = Instant::now();
        let answer = answer?;
        ensure!(answer["outcome"] == "matched", "wait_for_text: {answer}");
        result.text.push(micros(returned - at?));
    }
    agent.close().await;
    gateway.stop().await;
    Ok(result)
}

/// Writes `bytes` to the FIFO once the wait has had time to set up; when it wrote them.
async fn event(writer: &mut std::fs::File, bytes: &[u8]) -> Result<Instant> {
    tokio::time::sleep(WAIT_SETTLE).await;
    let at = Instant::now();
    writer.write_all(bytes).context("write to the FIFO")?;
    Ok(at)
}

/// What 100 idle waits of one kind cost over the measured window.
pub(crate) struct IdleCost {
    pub label: &'static str,
    pub wall: Duration,
    pub tmux_commands: f64,
    pub tmux_spawned: usize,
    pub tmux_server_cpu: Duration,
    pub gateway_cpu: Duration,
}

/// The kinds of idle wait measured.
#[derive(Clone, Copy)]
enum IdleKind {
    Text,
    CommandFinished,
    Idle,
    WaitingForInput,
}

impl IdleKind {
    const ALL: [IdleKind; 4] = [
        IdleKind::Text,
        IdleKind::CommandFinished,
        IdleKind::Idle,
        IdleKind::WaitingForInput,
    ];

    fn label(self) -> &'static str {
        match self {
            IdleKind::Text => "wait_for_text (no match)",
            IdleKind::CommandFinished => "wait_for_state command_finished",
            IdleKind::Idle => "wait_for_state idle (never long enough)",
            IdleKind::WaitingForInput => "wait_for_state waiting_for_input (a sleeping program)",
        }
    }

    /// What the panes run.
    fn program(self) -> &'static str {
        match self {
            IdleKind::WaitingForInput => "sleep 100000",
            _ => "cat",
        }
    }

    /// The tool and arguments of one wait on `pane`.
    fn call(self, pane: &str, secs: f64) -> (&'static str, Value) {
        let state = |condition: &str| json!({"targets": [pane], "condition": condition, "idle_ms": 3_600_000, "timeout": secs});
        match self {
            IdleKind::Text => (
                "wait_for_text",
                json!({"target": pane, "patterns": ["never printed"], "timeout": secs}),
            ),
            IdleKind::CommandFinished => ("wait_for_state", state("command_finished")),
            IdleKind::Idle => ("wait_for_state", state("idle")),
            IdleKind::WaitingForInput => ("wait_for_state", state("waiting_for_input")),
        }
    }
}

/// 100 idle waits of each kind, one kind after the other, each on a fresh tmux server and
/// gateway: 10 sessions of 10 panes, one agent per pane.
pub(crate) async fn idle(secs: f64) -> Result<Vec<IdleCost>> {
    let mut costs = Vec::new();
    for kind in IdleKind::ALL {
        costs.push(idle_kind(kind, secs).await?);
    }
    Ok(costs)
}

async fn idle_kind(kind: IdleKind, secs: f64) -> Result<IdleCost> {
    let (label, program) = (kind.label(), kind.program());
    let counter = SpawnCounter::new()?;
    let path: &OsString = counter.path();
    let tmux = BenchTmux::start("agents-idle", Some(path))?;
    let mut panes = Vec::with_capacity(IDLE_WAITS);
    for s in 0..IDLE_WAITS / WAITS_PER_SESSION {
        let session = format!("idle-{s}");
        panes.push(tmux.new_session(&session, &["sh", "-c", program])?);
        tmux.run_ok(&["resize-window", "-t", &session, "-x", "200", "-y", "60"])?;
        for _ in 1..WAITS_PER_SESSION {
            let pane = tmux.run_ok(&[
                "split-window",
                "-d",
                "-t",
                &session,
                "-P",
                "-F",
                "#{pane_id}",
                "sh",
                "-c",
                program,
            ])?;
            tmux.run_ok(&["select-layout", "-t", &session, "tiled"])?;
            panes.push(pane.trim().to_owned());
        }
    }
    let gateway = Muxgate::start(tmux.socket(), Some(path)).await?;
    let mut agents: Vec<Agent> = Vec::with_capacity(IDLE_WAITS);
    for i in 0..IDLE_WAITS {
        agents.push(gateway.agent(i).await?);
    }
    let read = || -> Result<(Instant, Duration, Duration, usize)> {
        let mut gateway_cpu = procfs::cpu_time_with_children(gateway.pid())?;
        for child in procfs::children(gateway.pid()) {
            gateway_cpu += procfs::cpu_time(child).unwrap_or_default();
        }
        Ok((
            Instant::now(),
            procfs::cpu_time(tmux.server_pid())?,
            gateway_cpu,
            counter.spawns()?.len(),
        ))
    };
    let waits = agents.iter().zip(&panes).map(|(agent, pane)| {
        let (tool, args) = kind.call(pane, secs);
        agent.call_tool(tool, args)
    });
    let window = async {
        tokio::time::sleep(IDLE_SETTLE).await;
        let before = read()?;
        let commands_before = gateway.metric("muxgate_tmux_commands_total").await?;
        tokio::time::sleep(
            Duration::from_secs_f64(secs) - IDLE_SETTLE - Duration::from_millis(500),
        )
        .await;
        let after = read()?;
        let commands_after = gateway.metric("muxgate_tmux_commands_total").await?;
        anyhow::Ok((before, after, commands_after - commands_before))
    };
    let (results, window) = tokio::join!(futures::future::join_all(waits), window);
    let (before, after, tmux_commands) = window?;
    for result in results {
        let result = result?;
        ensure!(
            result["outcome"] == "timeout",
            "{label}: an idle wait ended: {result}"
        );
    }
    for agent in agents {
        agent.close().await;
    }
    gateway.stop().await;
    Ok(IdleCost {
        label,
        wall: after.0 - before.0,
        tmux_commands,
        tmux_spawned: after.3 - before.3,
        tmux_server_cpu: after.1.saturating_sub(before.1),
        gateway_cpu: after.2.saturating_sub(before.2),
    })
}

/// How `send_prompt` did over many deliveries.
pub(crate) struct Prompts {
    pub deliveries: usize,
    /// Answered `submitted` and logged by the program exactly once.
    pub exactly_once: usize,
    /// Answered `submitted` but never logged (a false success).
    pub lost: usize,
    /// Logged more than once.
    pub duplicated: usize,
    /// Answered otherwise (`not_ready`, `not_submitted`), and not logged.
    pub refused: usize,
    /// Answered otherwise, yet logged once (taken, but without evidence).
    pub unconfirmed: usize,
    /// Delivered while the program was starting (just restarted).
    pub while_starting: usize,
    /// Submitted only at the second Enter (the first was taken as a newline, or not seen).
    pub second_enter: usize,
    /// Taken by the program inside another prompt (left in its input box, sent with the next).
    pub merged: usize,
    /// Milliseconds from the call to its answer, for submitted prompts.
    pub submit_ms: Vec<f64>,
    pub wall: Duration,
}

/// `total` prompts to `panes` agent-CLI stand-ins, each agent sending its share one after the
/// other at random moments: a random pause (0–1.5 s) before each, and one delivery in six
/// right after restarting the program (so it lands during start-up).
pub(crate) async fn prompts(total: usize, panes: usize) -> Result<Prompts> {
    let tmux = BenchTmux::start("agents-prompts", None)?;
    let files = tempfile::tempdir().context("create a temporary directory")?;
    let gateway = Muxgate::start(tmux.socket(), None).await?;
    let mut lanes = Vec::with_capacity(panes);
    for p in 0..panes {
        let log = files.path().join(format!("agent-{p}.log"));
        let command = format!(
            "python3 {AGENT_CLI} --log {} --startup 1.0 --busy 0.3 1.2 --seed {p}",
            path_str(&log)?
        );
        let pane = tmux.new_session(&format!("agent-{p}"), &["sh", "-c", &command])?;
        lanes.push((gateway.agent(p).await?, pane, log, command));
    }
    let started = Instant::now();
    let per_lane = total.div_ceil(panes);
    let runs = lanes
        .iter()
        .enumerate()
        .map(|(p, (agent, pane, _, command))| {
            let tmux = &tmux;
            async move {
                let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ (p as u64 + 1));
                let mut answers = Vec::with_capacity(per_lane);
                for i in 0..per_lane {
                    let restart = rng.below(6) == 0;
                    if restart {
                        tmux.run_ok(&["respawn-pane", "-k", "-t", pane, "sh", "-c", command])?;
                    } else {
                        tokio::time::sleep(Duration::from_millis(rng.below(1500))).await;
                    }
                    let text = if rng.below(3) == 0 {
                        format!("prompt {p}-{i}\nsecond line of {p}-{i}")
                    } else {
                        format!("prompt {p}-{i}")
                    };
                    let called = Instant::now();
                    let answer = agent
                        .call_tool(
                            "send_prompt",
                            json!({"target": pane, "text": text, "timeout": 30}),
                        )
                        .await?;
                    answers.push((text, answer, restart, called.elapsed()));
                }
                anyhow::Ok(answers)
            }
        });
    let answers = futures::future::join_all(runs).await;
    let wall = started.elapsed();
    // Let the last prompts' thinking end before reading the logs.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut result = Prompts {
        deliveries: 0,
        exactly_once: 0,
        lost: 0,
        duplicated: 0,
        refused: 0,
        unconfirmed: 0,
        while_starting: 0,
        second_enter: 0,
        merged: 0,
        submit_ms: Vec::new(),
        wall,
    };
    for ((agent, _, log, _), answers) in lanes.into_iter().zip(answers) {
        let logged = logged_prompts(&log)?;
        for (text, answer, restart, took) in answers? {
            result.deliveries += 1;
            result.while_starting += usize::from(restart);
            let times = logged.iter().filter(|p| **p == text).count();
            result.merged += usize::from(times == 0 && logged.iter().any(|p| p.contains(&text)));
            let submitted = answer["outcome"] == "submitted";
            result.second_enter += usize::from(submitted && answer["enter_presses"] == 2);
            match (submitted, times) {
                (true, 1) => {
                    result.exactly_once += 1;
                    result.submit_ms.push(took.as_secs_f64() * 1e3);
                }
                (true, 0) => result.lost += 1,
                (false, 0) => result.refused += 1,
                (false, 1) => result.unconfirmed += 1,
                (_, _) => result.duplicated += 1,
            }
        }
        agent.close().await;
    }
    gateway.stop().await;
    Ok(result)
}

fn logged_prompts(log: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|line| {
            let entry: Value = serde_json::from_str(line).context("a log line is not JSON")?;
            Ok(entry["prompt"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

/// A small deterministic generator: the same moments on every run.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Round trips of calls held for approval, and of the same call not held (µs).
pub(crate) struct Approvals {
    /// From the approver's POST leaving to the agent's answer arriving.
    pub decided_to_answer: Vec<f64>,
    /// From the call to the approver seeing it in `GET /approvals`.
    pub call_to_listed: Vec<f64>,
    /// The same `send_keys` when no rule holds it.
    pub unheld: Vec<f64>,
}

/// `n` `send_keys` calls held by an `[approvals]` rule, each approved by another client over
/// HTTP as soon as it is listed (polled every millisecond), alternating with the same call not
/// held.
pub(crate) async fn approvals(n: usize) -> Result<Approvals> {
    let tmux = BenchTmux::start("agents-approvals", None)?;
    let pane = tmux.new_session("held", &["cat"])?;
    let rule =
        "[[approvals.rules]]\nname = \"bench\"\ntools = [\"send_keys\"]\npattern = \"HOLD\"\n";
    let gateway = Muxgate::start_with(tmux.socket(), None, rule).await?;
    let agent = gateway.agent(0).await?;
    let approver = gateway.approver_token()?;
    let base = gateway.mcp_url().trim_end_matches("/mcp").to_owned();
    let http = reqwest::Client::new();
    let mut result = Approvals {
        decided_to_answer: Vec::with_capacity(n),
        call_to_listed: Vec::with_capacity(n),
        unheld: Vec::with_capacity(n),
    };
    for i in 0..n {
        let started = Instant::now();
        agent
            .call_tool(
                "send_keys",
                json!({"target": pane, "keys": format!("free-{i}"), "literal": true}),
            )
            .await?;
        result.unheld.push(micros(started.elapsed()));

        let called = Instant::now();
        let held = agent.call_tool(
            "send_keys",
            json!({"target": pane, "keys": format!("HOLD-{i}"), "literal": true}),
        );
        let approve = async {
            let id = loop {
                let listed: Value = http
                    .get(format!("{base}/approvals"))
                    .bearer_auth(&approver)
                    .send()
                    .await?
                    .json()
                    .await?;
                if let Some(id) = listed["pending"][0]["id"].as_str() {
                    break id.to_owned();
                }
                ensure!(
                    called.elapsed() < Duration::from_secs(10),
                    "never held: {listed}"
                );
                tokio::time::sleep(Duration::from_millis(1)).await;
            };
            let listed = called.elapsed();
            let decided = Instant::now();
            let answer = http
                .post(format!("{base}/approvals/{id}"))
                .bearer_auth(&approver)
                .json(&json!({"decision": "approve"}))
                .send()
                .await?;
            ensure!(answer.status().is_success(), "approve: {}", answer.status());
            Ok((listed, decided))
        };
        let (answer, approved) = tokio::join!(held, approve);
        let answered = Instant::now();
        answer?;
        let (listed, decided) = approved?;
        result.call_to_listed.push(micros(listed));
        result.decided_to_answer.push(micros(answered - decided));
    }
    Ok(result)
}
