//! Workspace mode at scale: many tenants, each with a sandboxed tmux server of its own.
//!
//! [`workspaces`] starts `count` workspaces one after another (the first call of each tenant
//! is a `create_session` in a workspace that does not run yet: that call's latency is the
//! start time), gives each `sessions` sessions with a `wait_for_text` in flight on every one,
//! then measures: gateway memory and the helpers' memory (sandboxes, tmux servers, jailed tmux
//! clients; PSS), the tmux servers' CPU while idle, and `capture_pane` latency in one quiet
//! workspace, first while all is idle and then while another workspace floods.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::fixture::BenchTmux;
use crate::procfs;
use crate::servers::{Agent, Call, Muxgate};
use crate::stats::micros;

pub(crate) struct WorkspaceScale {
    pub workspaces: usize,
    /// The first call of each tenant (its sandbox started, then its first session), µs.
    pub first_calls: Vec<f64>,
    /// The other `create_session` calls, µs.
    pub later_creates: Vec<f64>,
    /// From the last wait started until every wait runs with its window watched.
    pub settled: Duration,
    pub gateway_rss_baseline_kib: u64,
    pub gateway_rss_kib: u64,
    /// PSS of every process under the gateway (sandboxes, tmux servers, shells, jailed
    /// clients).
    pub helpers_pss_kib: u64,
    pub helper_processes: usize,
    /// CPU of all workspaces' tmux servers while idle, ms per second.
    pub tmux_cpu_ms_per_s: f64,
    /// `capture_pane` in a quiet workspace, µs: idle, then while another workspace floods.
    pub quiet_idle: Vec<f64>,
    pub quiet_flood: Vec<f64>,
}

pub(crate) async fn workspaces(count: usize, sessions: usize, secs: f64) -> Result<WorkspaceScale> {
    let tmux = BenchTmux::start("workspaces", None)?;
    let gateway = Muxgate::start_with(
        tmux.socket(),
        None,
        // Homes of 64 MiB: as root each home is an image reserved on disk, and 64 of the
        // default 2 GiB would need 128 GiB free.
        "\n[state]\ndir = \"{dir}/state\"\n[workspaces]\nenabled = true\n\
         [workspaces.limits]\nhome_bytes = 67108864\n",
    )
    .await?;
    let result = run(&gateway, count, sessions, secs).await;
    stop_workspaces(&gateway).await;
    gateway.stop().await;
    result
}

async fn run(
    gateway: &Muxgate,
    count: usize,
    sessions: usize,
    secs: f64,
) -> Result<WorkspaceScale> {
    let gateway_rss_baseline_kib = procfs::rss_kib(gateway.pid())?;
    let mut agents = Vec::new();
    let mut panes: Vec<Vec<String>> = Vec::new();
    let mut first_calls = Vec::new();
    let mut later_creates = Vec::new();
    for w in 0..count {
        let agent = Arc::new(gateway.agent(w).await?);
        let mut own = Vec::new();
        for s in 0..sessions {
            let start = Instant::now();
            let created = agent
                .call_tool("create_session", json!({"name": format!("s{s}")}))
                .await
                .with_context(|| format!("workspace {w}: create session {s}"))?;
            let us = micros(start.elapsed());
            if s == 0 {
                first_calls.push(us);
            } else {
                later_creates.push(us);
            }
            own.push(
                created["session"]["active_pane_id"]
                    .as_str()
                    .context("the new session's pane")?
                    .to_owned(),
            );
        }
        agents.push(agent);
        panes.push(own);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let mut waiters = Vec::new();
    for (agent, own) in agents.iter().zip(&panes) {
        for pane in own {
            let (agent, pane, stop) = (agent.clone(), pane.clone(), stop.clone());
            waiters.push(tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let wait = Call::WaitForText {
                        pane: &pane,
                        pattern: "text that never appears",
                        timeout_secs: 60.0,
                    };
                    if agent.call(&wait).await.is_err() {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }));
        }
    }
    let started = Instant::now();
    let total = count * sessions;
    loop {
        let waits = gateway.metric("muxgate_waits_active").await?;
        let watched = gateway.metric("muxgate_tmux_watched_windows").await?;
        // Every session's window linked into its workspace's watch session.
        if waits >= total as f64 && watched >= total as f64 {
            break;
        }
        if started.elapsed() > Duration::from_secs(300) {
            bail!("{waits} waits and {watched} watched windows for {total} sessions after 300 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let settled = started.elapsed();

    let helpers = procfs::descendants(gateway.pid());
    let tmux_servers: Vec<u32> = helpers
        .iter()
        .copied()
        .filter(|&pid| procfs::comm(pid).starts_with("tmux: server"))
        .collect();
    let cpu = |pids: &[u32]| -> Duration {
        pids.iter()
            .filter_map(|&pid| procfs::cpu_time(pid).ok())
            .sum()
    };
    let quiet = &agents[0];
    let quiet_pane = panes[0][0].clone();
    let before = cpu(&tmux_servers);
    let idle_start = Instant::now();
    let quiet_idle = captures(quiet, &quiet_pane, secs).await?;
    let tmux_cpu_ms_per_s = cpu(&tmux_servers).saturating_sub(before).as_secs_f64() * 1000.0
        / idle_start.elapsed().as_secs_f64();
    let gateway_rss_kib = procfs::rss_kib(gateway.pid())?;
    let helpers_pss_kib = helpers
        .iter()
        .filter_map(|&pid| procfs::pss_kib(pid).ok())
        .sum();

    // Another workspace floods one of its panes (its waits on that pane are woken by every
    // line and never match) while the quiet one keeps calling.
    let flooding = agents.get(1).unwrap_or(quiet);
    let flood_pane = panes.get(1).unwrap_or(&panes[0])[1 % sessions].clone();
    flooding
        .call(&Call::SendKeys {
            pane: &flood_pane,
            keys: &format!("timeout {} yes 'flood flood flood'", secs + 2.0),
            enter: true,
        })
        .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let quiet_flood = captures(quiet, &quiet_pane, secs).await?;

    stop.store(true, Ordering::Relaxed);
    for waiter in waiters {
        waiter.abort();
    }
    Ok(WorkspaceScale {
        workspaces: count,
        first_calls,
        later_creates,
        settled,
        gateway_rss_baseline_kib,
        gateway_rss_kib,
        helpers_pss_kib,
        helper_processes: helpers.len(),
        tmux_cpu_ms_per_s,
        quiet_idle,
        quiet_flood,
    })
}

/// `capture_pane` on `pane` every 20 ms for `secs`, each call's latency in µs.
async fn captures(agent: &Agent, pane: &str, secs: f64) -> Result<Vec<f64>> {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut latencies = Vec::new();
    while Instant::now() < end {
        let start = Instant::now();
        agent.call(&Call::CapturePane { pane }).await?;
        latencies.push(micros(start.elapsed()));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(latencies)
}

/// Workspaces outlive their gateway on purpose: stop them, as `muxgate workspace stop` does.
async fn stop_workspaces(gateway: &Muxgate) {
    let state = gateway.dir().join("state");
    for workspace in muxgate::workspace::admin::list(&state).unwrap_or_default() {
        let _ = muxgate::workspace::admin::stop(&state, &workspace.meta.name).await;
    }
}
