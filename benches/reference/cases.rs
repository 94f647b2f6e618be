//! The side-by-side cases: the same operation through muxgate and through the reference, in
//! alternating turns of the same rounds, so both see the same background load.
//!
//! - per-call latency, one warm agent ([`latency_round`]);
//! - 50 keystroke operations as one batch and as single calls ([`batch_round`]);
//! - `wait_for_text` wake-up: from the pane printing the text to the call returning
//!   ([`wake_round`]);
//! - idle waits: 10 agents each waiting 30 s on a quiet pane, with tmux server CPU and tmux
//!   processes started counted outside both servers ([`idle_waits`]).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use serde_json::Value;

use crate::fixture::{BenchTmux, GRID_PANES, Layout};
use crate::procfs::{self, SpawnCounter};
use crate::servers::{Agent, Call, Flavor, Muxgate, Reference};
use crate::stats::{median, micros};

/// One server under test with its own tmux server and sessions.
pub(crate) struct Side {
    pub agent: Agent,
    pub layout: Layout,
    /// Killed with the side.
    _tmux: BenchTmux,
}

/// Per-round medians of one case, in µs, and the per-round ratios reference ÷ muxgate.
#[derive(Default)]
pub(crate) struct Paired {
    pub muxgate: Vec<f64>,
    pub reference: Vec<f64>,
    pub ratios: Vec<f64>,
}

impl Paired {
    pub(crate) fn push(&mut self, muxgate: f64, reference: f64) {
        self.muxgate.push(muxgate);
        self.reference.push(reference);
        self.ratios.push(reference / muxgate);
    }
}

/// The per-call cases, by name, in report order.
pub(crate) const LATENCY_CASES: [&str; 5] = [
    "send_keys",
    "capture_pane",
    "snapshot_pane",
    "list_panes (20 panes)",
    "run_command `true`",
];

/// Calls `call` `n` times, one after the other, checking each result; returns µs per call.
async fn timed_calls(
    agent: &Agent,
    call: &Call<'_>,
    n: usize,
    check: impl Fn(&Value) -> Result<()>,
) -> Result<Vec<f64>> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        let result = agent.call(call).await?;
        samples.push(micros(start.elapsed()));
        check(&result)?;
    }
    Ok(samples)
}

fn any(_: &Value) -> Result<()> {
    Ok(())
}

/// The panes listed in a `list_panes` result (muxgate: `panes`; reference: `result`).
fn listed_panes(result: &Value) -> usize {
    result
        .get("panes")
        .or_else(|| result.get("result"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

fn check_grid(result: &Value) -> Result<()> {
    ensure!(
        listed_panes(result) == GRID_PANES,
        "list_panes listed {} panes, expected {GRID_PANES}: {result}",
        listed_panes(result)
    );
    Ok(())
}

fn check_run(result: &Value) -> Result<()> {
    ensure!(
        result.get("exit_status") == Some(&Value::from(0)),
        "run_command `true` did not exit 0: {result}"
    );
    Ok(())
}

/// The median latency of each per-call case on one side, `n` calls each.
async fn latency_side(side: &Side, n: usize) -> Result<Vec<f64>> {
    let layout = &side.layout;
    let agent = &side.agent;
    let mut medians = Vec::new();
    let send = Call::SendKeys {
        pane: &layout.sink,
        keys: "echo hello",
        enter: true,
    };
    medians.push(median(&timed_calls(agent, &send, n, any).await?));
    let capture = Call::CapturePane {
        pane: &layout.screen,
    };
    medians.push(median(&timed_calls(agent, &capture, n, any).await?));
    let snapshot = Call::SnapshotPane {
        pane: &layout.screen,
    };
    medians.push(median(&timed_calls(agent, &snapshot, n, any).await?));
    let list = Call::ListPanes {
        session: &layout.grid_session,
    };
    medians.push(median(&timed_calls(agent, &list, n, check_grid).await?));
    let run = Call::RunCommand {
        pane: &layout.shell,
        command: "true",
    };
    medians.push(median(&timed_calls(agent, &run, n, check_run).await?));
    Ok(medians)
}

/// One round of the per-call cases: `n` calls of each on each side (which side goes first
/// alternates by round).
pub(crate) async fn latency_round(
    muxgate: &Side,
    reference: &Side,
    n: usize,
    round: usize,
    results: &mut [Paired],
) -> Result<()> {
    let (m, r) = if round.is_multiple_of(2) {
        let m = latency_side(muxgate, n).await?;
        (m, latency_side(reference, n).await?)
    } else {
        let r = latency_side(reference, n).await?;
        (latency_side(muxgate, n).await?, r)
    };
    for (i, paired) in results.iter_mut().enumerate() {
        paired.push(m[i], r[i]);
    }
    Ok(())
}

/// Operations in the batch case.
pub(crate) const BATCH_OPS: usize = 50;

/// What one round of the batch case measured on one side, in µs.
pub(crate) struct BatchTimes {
    pub batch: f64,
    pub singles: f64,
}

async fn batch_side(side: &Side) -> Result<BatchTimes> {
    let sink = &side.layout.sink;
    let ops: Vec<(String, String)> = (0..BATCH_OPS)
        .map(|i| (sink.clone(), format!("echo line {i}")))
        .collect();
    let start = Instant::now();
    let result = side.agent.call(&Call::SendKeysBatch { ops: &ops }).await?;
    let batch = micros(start.elapsed());
    ensure!(
        result.get("succeeded") == Some(&Value::from(BATCH_OPS)),
        "send_keys_batch did not succeed {BATCH_OPS} times: {result}"
    );
    let start = Instant::now();
    for (pane, keys) in &ops {
        side.agent
            .call(&Call::SendKeys {
                pane,
                keys,
                enter: true,
            })
            .await?;
    }
    Ok(BatchTimes {
        batch,
        singles: micros(start.elapsed()),
    })
}

/// One round of the batch case on both sides.
pub(crate) async fn batch_round(
    muxgate: &Side,
    reference: &Side,
    round: usize,
) -> Result<(BatchTimes, BatchTimes)> {
    if round.is_multiple_of(2) {
        let m = batch_side(muxgate).await?;
        Ok((m, batch_side(reference).await?))
    } else {
        let r = batch_side(reference).await?;
        Ok((batch_side(muxgate).await?, r))
    }
}

/// How long the wake case lets a wait settle before the text appears: both servers set a wait
/// up in well under this (the reference spawns a few tmux processes first).
const WAIT_SETTLE: Duration = Duration::from_millis(400);

/// `n` waits on one side: µs from the text being written to the pane to the call returning.
async fn wake_side(side: &mut Side, n: usize, round: usize) -> Result<Vec<f64>> {
    let mut samples = Vec::with_capacity(n);
    let pane = side.layout.wake.clone();
    for i in 0..n {
        let text = format!("wake-{}-{round}-{i}", side.agent.flavor.name());
        let call = Call::WaitForText {
            pane: &pane,
            pattern: &text,
            timeout_secs: 10.0,
        };
        let layout = &mut side.layout;
        let trigger = async {
            tokio::time::sleep(WAIT_SETTLE).await;
            let at = Instant::now();
            layout.print_in_wake_pane(&text).map(|()| at)
        };
        let (result, at) = tokio::join!(side.agent.call(&call), trigger);
        let returned = Instant::now();
        let (result, at) = (result?, at?);
        ensure!(
            result.get("outcome") == Some(&Value::from("matched"))
                && result.get("matched_at_entry") != Some(&Value::Bool(true)),
            "{} wait_for_text did not match new output: {result}",
            side.agent.flavor.name()
        );
        samples.push(micros(returned - at));
    }
    Ok(samples)
}

/// One round of the wake case: `n` waits on each side.
pub(crate) async fn wake_round(
    muxgate: &mut Side,
    reference: &mut Side,
    n: usize,
    round: usize,
    results: &mut Paired,
) -> Result<()> {
    let (m, r) = if round.is_multiple_of(2) {
        let m = wake_side(muxgate, n, round).await?;
        (m, wake_side(reference, n, round).await?)
    } else {
        let r = wake_side(reference, n, round).await?;
        (wake_side(muxgate, n, round).await?, r)
    };
    results.push(median(&m), median(&r));
    Ok(())
}

/// Agents in the idle-wait case.
pub(crate) const IDLE_AGENTS: usize = 10;

/// What idle waits cost on one side, over a window of the waits.
#[derive(Default)]
pub(crate) struct WindowCost {
    pub wall: Duration,
    pub tmux_server_cpu: Duration,
    /// The server under test and its helpers (the gateway with its control clients, or the
    /// reference processes with the tmux processes they waited for).
    pub server_side_cpu: Duration,
    /// tmux processes started, by their command.
    pub spawns: BTreeMap<String, usize>,
}

impl WindowCost {
    pub(crate) fn spawned(&self) -> usize {
        self.spawns.values().sum()
    }
}

/// The idle waits from the calls to their return, and the steady state: from
/// [`IDLE_SETTLE`] after the calls (every wait set up) to their return.
pub(crate) struct IdleCost {
    pub whole: WindowCost,
    pub steady: WindowCost,
}

/// When every idle wait is surely set up.
pub(crate) const IDLE_SETTLE: Duration = Duration::from_secs(2);

/// A reading of the counters at one instant.
struct Reading {
    at: Instant,
    tmux_server_cpu: Duration,
    server_side_cpu: Duration,
    spawned: usize,
}

/// [`IDLE_AGENTS`] agents (separate MCP sessions, each on its own tmux session with a quiet
/// pane) each wait `secs` for text that never comes. A fresh tmux server and fresh server
/// processes, started with the spawn counter's `tmux` first on `PATH`.
pub(crate) async fn idle_waits(
    flavor: Flavor,
    reference: &Reference,
    secs: f64,
    label: &str,
) -> Result<IdleCost> {
    let counter = SpawnCounter::new()?;
    let path: &OsString = counter.path();
    let tmux = BenchTmux::start(label, Some(path))?;
    let mut panes = Vec::new();
    for i in 0..IDLE_AGENTS {
        panes.push(tmux.new_session(&format!("idle-{i}"), &["cat"])?);
    }
    let gateway = match flavor {
        Flavor::Muxgate => Some(Muxgate::start(tmux.socket(), Some(path)).await?),
        Flavor::Reference => None,
    };
    let mut agents = Vec::new();
    for i in 0..IDLE_AGENTS {
        agents.push(match &gateway {
            Some(gateway) => gateway.agent(i).await?,
            None => reference.agent(tmux.socket(), Some(path)).await?,
        });
    }
    let read = |agents: &[Agent]| -> Result<Reading> {
        let server_side_cpu = match &gateway {
            Some(gateway) => {
                let mut cpu = procfs::cpu_time_with_children(gateway.pid())?;
                for child in procfs::children(gateway.pid()) {
                    cpu += procfs::cpu_time(child).unwrap_or_default();
                }
                cpu
            }
            None => agents
                .iter()
                .filter_map(Agent::process_id)
                .map(|pid| procfs::cpu_time_with_children(pid).unwrap_or_default())
                .sum(),
        };
        Ok(Reading {
            at: Instant::now(),
            tmux_server_cpu: procfs::cpu_time(tmux.server_pid())?,
            server_side_cpu,
            spawned: counter.spawns()?.len(),
        })
    };
    // Every process is up: count from here.
    let before = read(&agents)?;
    let waits = agents.iter().zip(&panes).map(|(agent, pane)| async move {
        agent
            .call(&Call::WaitForText {
                pane,
                pattern: "text that never appears",
                timeout_secs: secs,
            })
            .await
    });
    let settled = async {
        tokio::time::sleep(IDLE_SETTLE).await;
        read(&agents)
    };
    let (results, settled) = tokio::join!(futures::future::join_all(waits), settled);
    let settled = settled?;
    // The reference's processes account their tmux children's CPU once they have waited
    // for them; give them a moment.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut after = read(&agents)?;
    after.at -= Duration::from_millis(200);
    for result in results {
        let result = result?;
        ensure!(
            result.get("outcome") == Some(&Value::from("timeout")),
            "{} idle wait did not time out: {result}",
            flavor.name()
        );
    }
    let spawn_lines = counter.spawns()?;
    let window = |from: &Reading, to: &Reading| WindowCost {
        wall: to.at - from.at,
        tmux_server_cpu: to.tmux_server_cpu.saturating_sub(from.tmux_server_cpu),
        server_side_cpu: to.server_side_cpu.saturating_sub(from.server_side_cpu),
        spawns: count_commands(&spawn_lines[from.spawned..to.spawned], tmux.socket()),
    };
    let cost = IdleCost {
        whole: window(&before, &after),
        steady: window(&settled, &after),
    };
    for agent in agents {
        agent.close().await;
    }
    if let Some(gateway) = gateway {
        gateway.stop().await;
    }
    Ok(cost)
}

/// Counts logged tmux command lines by their command (the first word that is neither an
/// option nor the socket name).
fn count_commands(lines: &[String], socket: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for line in lines {
        let command = line
            .split_whitespace()
            .find(|word| !word.starts_with('-') && *word != socket)
            .unwrap_or("(none)");
        *counts.entry(command.to_owned()).or_insert(0) += 1;
    }
    counts
}

/// Starts a side: a fresh tmux server with the standard layout and one agent of `flavor`.
pub(crate) async fn start_side(
    flavor: Flavor,
    gateway: Option<&Muxgate>,
    reference: &Reference,
    tmux: BenchTmux,
) -> Result<Side> {
    let layout = Layout::create(&tmux)?;
    let agent = match (flavor, gateway) {
        (Flavor::Muxgate, Some(gateway)) => gateway.agent(0).await?,
        (Flavor::Muxgate, None) => anyhow::bail!("a muxgate side needs its gateway"),
        (Flavor::Reference, _) => reference.agent(tmux.socket(), None).await?,
    };
    // Warm up: the first call pays for imports, connections and caches.
    for _ in 0..3 {
        agent
            .call(&Call::CapturePane {
                pane: &layout.screen,
            })
            .await
            .context("warm-up call")?;
    }
    Ok(Side {
        agent,
        layout,
        _tmux: tmux,
    })
}
