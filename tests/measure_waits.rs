//! Measurements for BENCHMARKS.md ("Waits and batches over HTTP"), not checks: run with
//! `cargo test --test measure_waits -- --ignored --nocapture`. Prints
//! - wait_for_text wake-up latency: from a program writing the awaited text to the MCP call
//!   returning (median and p90 of 50);
//! - the cost of 10 idle waits for 10 s: tmux commands sent and tmux server CPU;
//! - a 50-op send_keys_batch against the same 50 operations as single send_keys calls.

mod common;

use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::tmux::TestTmux;
use common::tools::{call, call_ok, client};
use common::{config_with_server, relaxed, spawn_gateway, wait_until};
use serde_json::json;

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc stat");
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn median(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    (samples[samples.len() / 2], samples[samples.len() * 9 / 10])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run with --ignored --nocapture"]
async fn waits_and_batches_over_http() {
    let tmux = TestTmux::start();
    let mut config = relaxed(config_with_server("work", &tmux.socket, false));
    config.limits.max_concurrent_waits = std::num::NonZeroU32::new(16).unwrap();
    let gateway = spawn_gateway(config).await;
    let client = client(&gateway).await;
    let engine = gateway.engine.server("work").unwrap().clone();
    let dir = tempfile::tempdir().unwrap();

    // Wake-up: `cat` copies what the test writes into its FIFO to the pane at once.
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let pane = tmux
        .ok(&[
            "new-session",
            "-d",
            "-s",
            "wake",
            "-P",
            "-F",
            "#{pane_id}",
            &format!("cat '{}'", fifo.display()),
        ])
        .trim()
        .to_owned();
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let mut wake = Vec::new();
    for i in 0..50 {
        let text = format!("wake-{i}");
        let waiting = call(
            &client,
            "wait_for_text",
            json!({"target": pane, "patterns": [text], "timeout": 10}),
        );
        let trigger = async {
            assert!(
                wait_until(Duration::from_secs(5), || engine.output().subscriptions()
                    == 1)
                .await
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
            let at = Instant::now();
            writeln!(writer, "{text}").unwrap();
            at
        };
        let (result, at) = tokio::join!(waiting, trigger);
        let returned = Instant::now();
        assert_eq!(common::tools::ok(result)["outcome"], "matched");
        wake.push(returned - at);
        assert!(
            wait_until(Duration::from_secs(5), || engine.output().subscriptions()
                == 0)
            .await
        );
    }
    let (p50, p90) = median(wake);
    println!("wait_for_text wake-up: median {p50:?}, p90 {p90:?} (50 waits)");

    // Idle: 10 waits on a quiet pane for 10 s.
    let quiet = tmux.pane_id("main").to_string();
    let server_pid: u32 = tmux
        .ok(&["display-message", "-p", "#{pid}"])
        .trim()
        .parse()
        .unwrap();
    let waits: Vec<_> = (0..10)
        .map(|_| {
            call(
                &client,
                "wait_for_text",
                json!({"target": quiet, "patterns": ["never"], "timeout": 12}),
            )
        })
        .collect();
    let probe = async {
        assert!(
            wait_until(Duration::from_secs(5), || engine.output().subscriptions()
                == 10)
            .await
        );
        let commands = engine
            .worker()
            .stats()
            .commands_sent
            .load(Ordering::Relaxed);
        let cpu = cpu_ticks(server_pid);
        tokio::time::sleep(Duration::from_secs(10)).await;
        (
            engine
                .worker()
                .stats()
                .commands_sent
                .load(Ordering::Relaxed)
                - commands,
            cpu_ticks(server_pid) - cpu,
        )
    };
    let (results, (commands, cpu)) = tokio::join!(futures::future::join_all(waits), probe);
    for result in results {
        assert_eq!(common::tools::ok(result)["outcome"], "timeout");
    }
    println!(
        "10 idle waits for 10 s: {commands} tmux commands, tmux server CPU {cpu} ticks of 10 ms"
    );

    // Batch against single calls, into a pane that discards its input.
    let sink = tmux
        .ok(&[
            "new-session",
            "-d",
            "-s",
            "sink",
            "-P",
            "-F",
            "#{pane_id}",
            "cat > /dev/null",
        ])
        .trim()
        .to_owned();
    let ops: Vec<_> = (0..50)
        .map(|i| json!({"target": sink, "keys": format!("line {i}"), "literal": true}))
        .collect();
    let (mut batch, mut singles) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        let at = Instant::now();
        let done = call_ok(&client, "send_keys_batch", json!({"operations": ops})).await;
        batch.push(at.elapsed());
        assert_eq!(done["succeeded"], 50);
        let at = Instant::now();
        for op in &ops {
            call_ok(&client, "send_keys", op.clone()).await;
        }
        singles.push(at.elapsed());
    }
    let (batch, _) = median(batch);
    let (singles, _) = median(singles);
    println!(
        "50 operations: send_keys_batch median {batch:?}, 50 single send_keys median {singles:?} ({:.1}x)",
        singles.as_secs_f64() / batch.as_secs_f64()
    );
}
