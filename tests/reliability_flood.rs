//! A 100 MB output flood in one pane while 10 agents wait on that pane and another agent works
//! on a quiet pane of the same tmux server: the quiet agent's median latency stays within a
//! bound of its idle median (see [`MAX_SLOWDOWN`]), the gateway's memory stays bounded, the
//! flooding program is not slowed to a crawl, and every waiter gets its answer.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::calls::{Client, legacy, ok};
use common::probe::own_rss_kib;
use common::tmux::{TestTmux, wait_for_file};
use common::{config_with_server, spawn_gateway, wait_until};
use serde_json::json;

const FLOOD_BYTES: u64 = 100 * 1024 * 1024;
/// Agents waiting on the flooding pane; `MUXGATE_FLOOD_WAITERS` changes it to see what the
/// waiters cost (BENCHMARKS.md, Flood).
fn waiter_count() -> usize {
    std::env::var("MUXGATE_FLOOD_WAITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}
/// The quiet agent's median latency during the flood, relative to its idle median, beyond
/// which it counts as starved. The goal of 5× is a benchmark's (BENCHMARKS.md, Flood: 3.1–4.2×
/// on an idle 2-core machine, read from this test's printed ratio); with a release build
/// loading both cores beside it the test measured 8.2×. Starvation looked like 23× (before
/// waits yielded between slices), so the bound sits between the two.
const MAX_SLOWDOWN: f64 = 15.0;
/// The benchmark's goal for the same ratio (with 10 waiters), printed with its verdict.
const GOAL_SLOWDOWN: f64 = 5.0;
/// Growth of this process's resident memory (gateway and test) over the flood.
const MAX_RSS_GROWTH_KIB: u64 = 64 * 1024;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// One unit of the quiet agent's work, timed: a capture and a listing of its pane.
async fn quiet_step(client: &Client, pane: &str) -> Duration {
    let started = Instant::now();
    ok(client, "capture_pane", json!({"target": pane})).await;
    ok(client, "list_panes", json!({"target": "quiet"})).await;
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_mb_flood_does_not_starve_a_quiet_agent() {
    let tmux = TestTmux::start();
    tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "quiet",
        "-x",
        "120",
        "-y",
        "40",
        "sh",
    ]);
    tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "flood",
        "-x",
        "120",
        "-y",
        "40",
        "sh",
    ]);
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let quiet = legacy(&gateway, &gateway.token).await;
    let quiet_pane = tmux.pane_id("quiet").to_string();
    let flood_pane = tmux.pane_id("flood").to_string();
    let server = gateway.engine.server("work").expect("configured").clone();

    // Idle latency after a warm-up: half of the samples now, half after the flood.
    for _ in 0..5 {
        quiet_step(&quiet, &quiet_pane).await;
    }
    let mut idle = Vec::new();
    for _ in 0..30 {
        idle.push(quiet_step(&quiet, &quiet_pane).await);
    }
    let rss_before = own_rss_kib();

    // Ten agents wait on the flood pane for the line printed after the flood (repeated, so a
    // waiter that lost output to flow control still sees a later copy).
    let mut waiters = Vec::new();
    let waiter_count = waiter_count();
    for i in 0..waiter_count {
        let token = gateway.mint(&format!("waiter-{i}"), &["mux:read"]);
        let client = legacy(&gateway, &token).await;
        let pane = flood_pane.clone();
        waiters.push(tokio::spawn(async move {
            ok(
                &client,
                "wait_for_text",
                json!({"target": pane, "patterns": ["flood-done"], "timeout": 120}),
            )
            .await
        }));
    }
    let subscribed = wait_until(Duration::from_secs(20), || {
        server.output().subscriptions() == waiter_count
    })
    .await;
    if !subscribed {
        for waiter in waiters {
            if waiter.is_finished() {
                panic!("a waiter ended early: {:?}", waiter.await);
            }
        }
        panic!(
            "the waiters never subscribed: {} subscriptions",
            server.output().subscriptions()
        );
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let timing = dir.path().join("flood-ms");
    let line = "build step 0042: compiling module reliability::flood with optimisations [ok]";
    let script = format!(
        "s=$(date +%s%N); yes '{line}' | head -c {FLOOD_BYTES}; e=$(date +%s%N); \
         echo $(( (e - s) / 1000000 )) > {}; while :; do echo FLOOD-''DONE; sleep 0.2; done",
        timing.display()
    );
    let flood_started = Instant::now();
    tmux.ok(&["respawn-pane", "-k", "-t", &flood_pane, &script]);

    // The quiet agent keeps working while the flood runs.
    let flooding = Arc::new(AtomicBool::new(true));
    let watcher = {
        let flooding = flooding.clone();
        let timing = timing.clone();
        tokio::spawn(async move {
            let text =
                wait_for_file(&timing, Duration::from_secs(300), |d| d.ends_with(b"\n")).await;
            flooding.store(false, Ordering::Relaxed);
            String::from_utf8_lossy(&text)
                .trim()
                .parse::<u64>()
                .expect("ms")
        })
    };
    let mut busy = Vec::new();
    let mut peak_rss = rss_before;
    while flooding.load(Ordering::Relaxed) || busy.len() < 10 {
        busy.push(quiet_step(&quiet, &quiet_pane).await);
        peak_rss = peak_rss.max(own_rss_kib());
        assert!(
            flood_started.elapsed() < Duration::from_secs(300),
            "the flood never finished"
        );
    }
    let flood_ms = watcher.await.expect("watcher");
    for waiter in waiters {
        let result = waiter.await.expect("waiter");
        assert_eq!(result["outcome"], "matched", "{result}");
    }
    // Idle again once the flood pane is quiet: the idle median moves by a third from one
    // stretch of time to another on a shared machine, so the baseline spans both sides.
    tmux.ok(&["respawn-pane", "-k", "-t", &flood_pane, "cat"]);
    for _ in 0..30 {
        idle.push(quiet_step(&quiet, &quiet_pane).await);
    }
    let idle = median(idle);
    let samples = busy.len();
    let busy = median(busy);
    let ratio = busy.as_secs_f64() / idle.as_secs_f64();
    let growth = peak_rss.saturating_sub(rss_before);
    eprintln!(
        "flood of {FLOOD_BYTES} bytes, {waiter_count} waiters, took {flood_ms} ms; quiet agent median {idle:?} idle, \
         {busy:?} during the flood ({samples} samples, {ratio:.2}x); RSS {rss_before} KiB -> \
         peak {peak_rss} KiB (+{growth} KiB)\ngoal: the quiet agent at most {GOAL_SLOWDOWN}x slower \
         with 10 waiters; value {ratio:.2}x with {waiter_count}: {}",
        if ratio <= GOAL_SLOWDOWN {
            "met"
        } else {
            "missed"
        }
    );
    assert!(
        ratio <= MAX_SLOWDOWN,
        "the quiet agent slowed down {ratio:.2}x (idle {idle:?}, during the flood {busy:?})"
    );
    assert!(
        growth <= MAX_RSS_GROWTH_KIB,
        "memory grew by {growth} KiB during the flood"
    );
    assert!(
        flood_ms < 120_000,
        "the flooding program took {flood_ms} ms for {FLOOD_BYTES} bytes"
    );
}
