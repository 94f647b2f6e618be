//! muxgate alone at scale (the reference is one process per stdio agent, so its scale is
//! its per-process cost times the agents; see [`reference_process_rss`]):
//! - [`busy_agents`]: many concurrent agents, each with its own MCP session and tmux session,
//!   doing a realistic mix for a while;
//! - [`idle_sessions`]: hundreds to thousands of mostly idle sessions, each with a wait in
//!   flight: memory per session;
//! - [`send_keys_ceiling`]: the gateway's `send_keys` call rate against a bare control-mode
//!   client's pipelined command rate on the same tmux server.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

use crate::cost::Era;
use crate::fixture::{BenchTmux, mkfifo, open_fifo_writer, path_str};
use crate::procfs;
use crate::raw;
use crate::servers::{Agent, Call, Muxgate, Reference};
use crate::stats::micros;

/// Latencies collected by one agent of the busy case, in µs.
#[derive(Default)]
struct AgentLog {
    /// send_keys, capture_pane, snapshot_pane, list_panes.
    quick: Vec<f64>,
    run_command: Vec<f64>,
    /// wait_for_text, from the call to its return (includes the shell's 0.3 s sleep).
    waits: Vec<f64>,
    waits_missed: usize,
    calls: usize,
    errors: usize,
}

pub(crate) struct BusyResult {
    pub agents: usize,
    pub wall: Duration,
    pub calls: usize,
    pub errors: usize,
    pub quick: Vec<f64>,
    pub run_command: Vec<f64>,
    pub waits: Vec<f64>,
    pub waits_missed: usize,
    pub gateway_rss_peak_kib: u64,
    pub gateway_cpu: Duration,
    pub control_clients: usize,
    pub control_clients_cpu: Duration,
    pub tmux_server_cpu: Duration,
    pub bench_cpu: Duration,
}

/// One agent's loop until `stop`: type a command whose output comes 0.3 s later and wait for
/// it, read the screen, snapshot it, list the session's panes, run a command.
async fn agent_loop(
    agent: Agent,
    pane: String,
    session: String,
    stop: Arc<AtomicBool>,
) -> AgentLog {
    let mut log = AgentLog::default();
    let mut n: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let marker = format!("done-{}", n + 1_000_000);
        let keys = format!("sleep 0.3; echo done-$(({n} + 1000000))");
        timed(
            &agent,
            &Call::SendKeys {
                pane: &pane,
                keys: &keys,
                enter: true,
            },
            &mut log,
            Kind::Quick,
        )
        .await;
        timed(
            &agent,
            &Call::WaitForText {
                pane: &pane,
                pattern: &marker,
                timeout_secs: 10.0,
            },
            &mut log,
            Kind::Wait,
        )
        .await;
        timed(
            &agent,
            &Call::CapturePane { pane: &pane },
            &mut log,
            Kind::Quick,
        )
        .await;
        timed(
            &agent,
            &Call::SnapshotPane { pane: &pane },
            &mut log,
            Kind::Quick,
        )
        .await;
        timed(
            &agent,
            &Call::ListPanes { session: &session },
            &mut log,
            Kind::Quick,
        )
        .await;
        timed(
            &agent,
            &Call::RunCommand {
                pane: &pane,
                command: "echo ok",
            },
            &mut log,
            Kind::Run,
        )
        .await;
    }
    agent.close().await;
    log
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Quick,
    Wait,
    Run,
}

async fn timed(agent: &Agent, call: &Call<'_>, log: &mut AgentLog, kind: Kind) {
    let start = Instant::now();
    let result = agent.call(call).await;
    let us = micros(start.elapsed());
    log.calls += 1;
    match result {
        Ok(value) => match kind {
            Kind::Quick => log.quick.push(us),
            Kind::Run => log.run_command.push(us),
            Kind::Wait => {
                if value.get("outcome") == Some(&Value::from("matched")) {
                    log.waits.push(us);
                } else {
                    log.waits_missed += 1;
                }
            }
        },
        Err(_) => log.errors += 1,
    }
}

/// `agents` agents (separate MCP sessions with tokens of their own, separate tmux sessions
/// each with a bash pane) run [`agent_loop`] for `secs`; the gateway's RSS, CPU and control
/// clients and the tmux server's CPU are sampled from `/proc`.
pub(crate) async fn busy_agents(agents: usize, secs: f64) -> Result<BusyResult> {
    let tmux = BenchTmux::start("busy", None)?;
    let mut panes = Vec::new();
    for i in 0..agents {
        let session = format!("agent-{i}");
        let pane = tmux.new_session(&session, &["bash", "--norc", "--noprofile"])?;
        tmux.run_ok(&["send-keys", "-t", &pane, "-l", "--", "PS1='$ '"])?;
        tmux.run_ok(&["send-keys", "-t", &pane, "Enter"])?;
        panes.push((pane, session));
    }
    let gateway = Muxgate::start(tmux.socket(), None).await?;
    let mut clients = Vec::new();
    for i in 0..agents {
        clients.push(gateway.agent(i).await?);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let gateway_cpu_before = procfs::cpu_time(gateway.pid())?;
    let tmux_cpu_before = procfs::cpu_time(tmux.server_pid())?;
    let bench_cpu_before = procfs::self_cpu_time();
    let start = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .zip(panes)
        .map(|(agent, (pane, session))| {
            tokio::spawn(agent_loop(agent, pane, session, stop.clone()))
        })
        .collect();
    let mut rss_peak = 0;
    let deadline = start + Duration::from_secs_f64(secs);
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        rss_peak = rss_peak.max(procfs::rss_kib(gateway.pid())?);
    }
    stop.store(true, Ordering::Relaxed);
    let control = procfs::children(gateway.pid());
    let control_clients_cpu = control
        .iter()
        .map(|&pid| procfs::cpu_time(pid).unwrap_or_default())
        .sum();
    let gateway_cpu = procfs::cpu_time(gateway.pid())? - gateway_cpu_before;
    let tmux_server_cpu = procfs::cpu_time(tmux.server_pid())? - tmux_cpu_before;
    let bench_cpu = procfs::self_cpu_time() - bench_cpu_before;
    let mut result = BusyResult {
        agents,
        wall: start.elapsed(),
        calls: 0,
        errors: 0,
        quick: Vec::new(),
        run_command: Vec::new(),
        waits: Vec::new(),
        waits_missed: 0,
        gateway_rss_peak_kib: rss_peak,
        gateway_cpu,
        control_clients: control.len(),
        control_clients_cpu,
        tmux_server_cpu,
        bench_cpu,
    };
    // Calls in flight at the stop finish (a wait at most its 10 s) and are counted; the wall
    // time is taken at the stop, so throughput errs low.
    for task in tasks {
        let log = task.await.context("an agent task panicked")?;
        result.calls += log.calls;
        result.errors += log.errors;
        result.quick.extend(log.quick);
        result.run_command.extend(log.run_command);
        result.waits.extend(log.waits);
        result.waits_missed += log.waits_missed;
    }
    gateway.stop().await;
    Ok(result)
}

pub(crate) struct IdleStep {
    /// Sessions watched (0: the same gateway before any wait, for comparison).
    pub sessions: usize,
    pub gateway_rss_kib: u64,
    /// PSS of the gateway and every process it started (its tmux control clients).
    pub gateway_and_helpers_pss_kib: u64,
    pub control_clients: usize,
    /// Control clients the gateway attached so far (`muxgate_tmux_connects_total`).
    pub attaches: f64,
    pub tmux_server_rss_kib: u64,
    /// CPU time the tmux server used per second of wall time, everything idle.
    pub tmux_server_idle_cpu_ms_per_s: f64,
    /// From the step's first wait call, and from its last, to every window being watched.
    pub settled_from_first: Duration,
    pub settled_from_last: Duration,
    /// What was spent from the step's first wait call to every window being watched.
    pub settling: Settling,
    /// capture_pane latencies of the trickle of activity while the waits idle, in µs.
    pub trickle: Vec<f64>,
    /// µs from a line reaching an unwatched pane to a wait on it returning.
    pub wakes: Vec<f64>,
}

/// What attaching a step's waits cost, and who spent it: what says whether tmux or the
/// gateway is the bottleneck of attaching thousands of waits.
pub(crate) struct Settling {
    pub tmux_server_cpu: Duration,
    /// The gateway process alone (its tmux control clients are not counted).
    pub gateway_cpu: Duration,
    /// Commands the gateway wrote to tmux meanwhile (`muxgate_tmux_commands_total`).
    pub tmux_commands: f64,
}

pub(crate) struct IdleSessions {
    pub baseline_rss_kib: u64,
    pub steps: Vec<IdleStep>,
}

/// Wake-ups measured per step.
pub(crate) const WAKES: usize = 10;

/// Grows to each of `steps` sessions (tmux session with a quiet pane, MCP session with a
/// token of its own, one `wait_for_text` in flight that never matches), then measures the
/// tmux server's idle CPU, memory, a trickle of `capture_pane` calls (one every 20 ms, round
/// robin) for a few seconds, and the wake-up of a wait on one more pane. A step of 0 sessions
/// first gives the same measures with nothing watched.
pub(crate) async fn idle_sessions(steps: &[usize], era: Era) -> Result<IdleSessions> {
    let tmux = BenchTmux::start("idle-sessions", None)?;
    let most = steps.iter().copied().max().unwrap_or(0);
    let mut panes: Vec<String> = Vec::new();
    while panes.len() < most {
        panes.push(tmux.new_session(&format!("idle-{}", panes.len()), &["cat"])?);
    }
    let files = tempfile::tempdir().context("create a temporary directory")?;
    let fifo = files.path().join("wake.fifo");
    mkfifo(&fifo)?;
    let wake_pane = tmux.new_session(
        "wake",
        &["sh", "-c", "exec cat \"$1\"", "sh", path_str(&fifo)?],
    )?;
    let mut wake_writer = open_fifo_writer(&fifo, Duration::from_secs(10))?;
    let gateway = Muxgate::start(tmux.socket(), None).await?;
    // The baseline: the gateway with one agent that has made one call.
    let first = gateway.agent(usize::MAX).await?;
    first
        .call(&Call::ListPanes { session: "base" })
        .await
        .context("baseline call")?;
    let baseline_rss_kib = procfs::rss_kib(gateway.pid())?;
    first.close().await;
    let waker = gateway.agent(usize::MAX - 1).await?;

    let stop = Arc::new(AtomicBool::new(false));
    let mut agents: Vec<Arc<Agent>> = vec![Arc::new(gateway.agent(usize::MAX - 2).await?)];
    let mut waiters = Vec::new();
    let mut result = IdleSessions {
        baseline_rss_kib,
        steps: Vec::new(),
    };
    for target in std::iter::once(0).chain(steps.iter().copied()) {
        let first_wait = Instant::now();
        let tmux_cpu_before = procfs::cpu_time(tmux.server_pid())?;
        let gateway_cpu_before = procfs::cpu_time(gateway.pid())?;
        let commands_before = gateway.metric("muxgate_tmux_commands_total").await?;
        let mut last_wait = first_wait;
        while waiters.len() < target {
            let i = waiters.len();
            let pane = panes[i].clone();
            let agent = Arc::new(gateway.agent_speaking(i, era).await?);
            let (waiter, waiting_pane, waiting_stop) = (agent.clone(), pane.clone(), stop.clone());
            last_wait = Instant::now();
            waiters.push(tokio::spawn(async move {
                while !waiting_stop.load(Ordering::Relaxed) {
                    let wait = Call::WaitForText {
                        pane: &waiting_pane,
                        pattern: "text that never appears",
                        timeout_secs: 3600.0,
                    };
                    if waiter.call(&wait).await.is_err() {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }));
            agents.push(agent);
        }
        loop {
            let watched = gateway.metric("muxgate_tmux_watched_windows").await?;
            if watched >= target as f64 {
                break;
            }
            if first_wait.elapsed() > Duration::from_secs(600) {
                bail!("only {watched} of {target} windows watched after 600 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (settled_from_first, settled_from_last) = (first_wait.elapsed(), last_wait.elapsed());
        let settling = Settling {
            tmux_server_cpu: procfs::cpu_time(tmux.server_pid())?.saturating_sub(tmux_cpu_before),
            gateway_cpu: procfs::cpu_time(gateway.pid())?.saturating_sub(gateway_cpu_before),
            tmux_commands: gateway.metric("muxgate_tmux_commands_total").await? - commands_before,
        };

        let idle_start = Instant::now();
        let idle_cpu_before = procfs::cpu_time(tmux.server_pid())?;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let idle_cpu = procfs::cpu_time(tmux.server_pid())?.saturating_sub(idle_cpu_before);
        let tmux_server_idle_cpu_ms_per_s =
            idle_cpu.as_secs_f64() * 1000.0 / idle_start.elapsed().as_secs_f64();

        let mut trickle = Vec::new();
        let trickle_end = Instant::now() + Duration::from_secs(5);
        let mut k = 0;
        while Instant::now() < trickle_end {
            let start = Instant::now();
            agents[k % agents.len()]
                .call(&Call::CapturePane {
                    pane: &panes[k % panes.len().max(1)],
                })
                .await
                .context("trickle capture")?;
            trickle.push(micros(start.elapsed()));
            k += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        let mut wakes = Vec::with_capacity(WAKES);
        for i in 0..WAKES {
            let text = format!("wake-{target}-{i}");
            let call = Call::WaitForText {
                pane: &wake_pane,
                pattern: &text,
                timeout_secs: 20.0,
            };
            let writer = &mut wake_writer;
            let trigger = async {
                tokio::time::sleep(Duration::from_millis(400)).await;
                let at = Instant::now();
                writeln!(writer, "{text}")
                    .context("write to the wake FIFO")
                    .map(|()| at)
            };
            let (answer, at) = tokio::join!(waker.call(&call), trigger);
            let returned = Instant::now();
            let (answer, at) = (answer?, at?);
            ensure!(
                answer.get("outcome") == Some(&Value::from("matched")),
                "the wake wait did not match: {answer}"
            );
            wakes.push(micros(returned - at));
        }

        let helpers = procfs::descendants(gateway.pid());
        let mut pss = procfs::pss_kib(gateway.pid())?;
        for pid in &helpers {
            pss += procfs::pss_kib(*pid).unwrap_or(0);
        }
        result.steps.push(IdleStep {
            sessions: target,
            gateway_rss_kib: procfs::rss_kib(gateway.pid())?,
            gateway_and_helpers_pss_kib: pss,
            control_clients: procfs::children(gateway.pid()).len(),
            attaches: gateway.metric("muxgate_tmux_connects_total").await?,
            tmux_server_rss_kib: procfs::rss_kib(tmux.server_pid())?,
            tmux_server_idle_cpu_ms_per_s,
            settled_from_first,
            settled_from_last,
            settling,
            trickle,
            wakes,
        });
    }
    stop.store(true, Ordering::Relaxed);
    for waiter in waiters {
        waiter.abort();
    }
    drop(agents);
    gateway.stop().await;
    drop(files);
    Ok(result)
}

/// RSS of one reference server process after a few calls (one per stdio agent).
pub(crate) async fn reference_process_rss(reference: &Reference) -> Result<u64> {
    let tmux = BenchTmux::start("ref-rss", None)?;
    let agent = reference.agent(tmux.socket(), None).await?;
    for _ in 0..3 {
        agent.call(&Call::ListPanes { session: "base" }).await?;
        agent
            .call(&Call::CapturePane {
                pane: &tmux.display("base", "#{pane_id}")?,
            })
            .await?;
    }
    let pid = agent.process_id().context("the reference's pid")?;
    let rss = procfs::rss_kib(pid)?;
    agent.close().await;
    Ok(rss)
}

pub(crate) struct CeilingRound {
    /// Bare control client, all commands written at once: commands per second.
    pub raw_rate: f64,
    /// muxgate `send_keys` calls per second from the concurrent agents.
    pub muxgate_rate: f64,
    /// Of which the bench process (the agents' rmcp clients) used this much CPU per call.
    pub bench_cpu_per_call: Duration,
    pub gateway_cpu_per_call: Duration,
}

/// `rounds` rounds of: `raw_ops` `send-keys -l x` commands through a bare control client
/// pipelined, then `agents` concurrent agents calling `send_keys` (literal `x`, no Enter) for
/// `secs`, on the same pane of the same tmux server.
pub(crate) async fn send_keys_ceiling(
    agents: usize,
    secs: f64,
    raw_ops: usize,
    rounds: usize,
) -> Result<Vec<CeilingRound>> {
    let tmux = BenchTmux::start("ceiling", None)?;
    let sink = tmux.new_session("sink", &["sh", "-c", "stty -echo; exec cat > /dev/null"])?;
    let gateway = Muxgate::start(tmux.socket(), None).await?;
    let mut clients = Vec::new();
    for i in 0..agents {
        clients.push(Arc::new(gateway.agent(i).await?));
    }
    let command = format!("send-keys -t {sink} -l -- x");
    let mut results = Vec::new();
    for _ in 0..rounds {
        let socket = tmux.socket().to_owned();
        let (raw_command, ops) = (command.clone(), raw_ops);
        let raw_time =
            tokio::task::spawn_blocking(move || raw::pipelined(&socket, &raw_command, ops))
                .await
                .context("the raw client thread panicked")??;
        let raw_rate = raw_ops as f64 / raw_time.as_secs_f64();

        let gateway_cpu_before = procfs::cpu_time(gateway.pid())?;
        let bench_cpu_before = procfs::self_cpu_time();
        let start = Instant::now();
        let deadline = start + Duration::from_secs_f64(secs);
        let tasks: Vec<_> = clients
            .iter()
            .map(|agent| {
                let (agent, sink) = (agent.clone(), sink.clone());
                tokio::spawn(async move {
                    let mut calls = 0_usize;
                    while Instant::now() < deadline {
                        agent
                            .call(&Call::TypeText {
                                pane: &sink,
                                text: "x",
                            })
                            .await?;
                        calls += 1;
                    }
                    anyhow::Ok(calls)
                })
            })
            .collect();
        let mut calls = 0;
        for task in tasks {
            calls += task.await.context("an agent task panicked")??;
        }
        let elapsed = start.elapsed();
        ensure!(calls > 0, "no send_keys call completed");
        let per_call = |cpu: Duration| cpu / u32::try_from(calls).unwrap_or(u32::MAX);
        results.push(CeilingRound {
            raw_rate,
            muxgate_rate: calls as f64 / elapsed.as_secs_f64(),
            bench_cpu_per_call: per_call(procfs::self_cpu_time() - bench_cpu_before),
            gateway_cpu_per_call: per_call(procfs::cpu_time(gateway.pid())? - gateway_cpu_before),
        });
    }
    drop(clients);
    gateway.stop().await;
    Ok(results)
}
