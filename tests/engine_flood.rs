//! A 50 MB output flood in a session nobody else is attached to: the engine reads it without
//! throttling the program (tmux stops reading a pane whose only clients fall behind) and
//! without growing its own memory.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::tmux::{TestTmux, wait_for_file};
use muxgate_tmux::{Caller, EngineSettings, PaneId, TmuxServer, TmuxSocket};
use tokio_util::sync::CancellationToken;

const FLOOD_BYTES: u64 = 50 * 1024 * 1024;

/// Runs the flood in a fresh window of session `flood`; returns the program's own wall time.
async fn timed_flood(tmux: &TestTmux, dir: &std::path::Path, name: &str) -> Duration {
    let out = dir.join(name);
    let script = format!(
        "s=$(date +%s%N); yes | head -c {FLOOD_BYTES}; e=$(date +%s%N); echo $(( (e - s) / 1000000 )) > {}; sleep 600",
        out.display()
    );
    tmux.ok(&["respawn-pane", "-k", "-t", "flood", &script]);
    let text = wait_for_file(&out, Duration::from_secs(300), |d| d.ends_with(b"\n")).await;
    let ms: u64 = String::from_utf8_lossy(&text).trim().parse().unwrap();
    Duration::from_millis(ms)
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_is_read_without_throttling_the_program() {
    let tmux = TestTmux::start();
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
    let dir = tempfile::tempdir().unwrap();

    let alone = timed_flood(&tmux, dir.path(), "alone").await;

    let shutdown = CancellationToken::new();
    let server = TmuxServer::start(
        "test",
        TmuxSocket::Name(tmux.socket.clone()),
        Arc::new(EngineSettings::default()),
        shutdown.clone(),
    );
    let pane: PaneId = tmux
        .ok(&["display-message", "-p", "-t", "flood", "#{pane_id}"])
        .trim()
        .parse()
        .unwrap();
    let rss_before = rss_kib();
    let mut sub = server
        .subscribe(&Caller::new("watcher"), pane, common::subscribe_deadline())
        .await
        .unwrap();
    // A reader that keeps up the way a waiter does: wake, take everything new, move on.
    let reader = tokio::spawn(async move {
        let mut total = 0u64;
        while let Ok(chunk) = sub.next().await {
            total += chunk.data.len() as u64 + chunk.missed_bytes;
        }
        total
    });
    let watched = timed_flood(&tmux, dir.path(), "watched").await;
    let rss_after = rss_kib();
    // The program is done when tmux has read its output; the control client gets the last of it
    // a moment later.
    let bytes_read = || {
        server
            .output()
            .stats()
            .bytes_read
            .load(std::sync::atomic::Ordering::SeqCst)
    };
    // The program is done; the engine may still be reading behind it (48 of 50 MB after 10 s
    // with a release build loading both cores), so the wait is long and ends on the count.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while bytes_read() < FLOOD_BYTES && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let read = bytes_read();
    eprintln!(
        "flood of {FLOOD_BYTES} bytes: alone {alone:?}, watched by the engine {watched:?} ({:.2}x); engine read {read} bytes; RSS {rss_before} -> {rss_after} KiB",
        watched.as_secs_f64() / alone.as_secs_f64()
    );
    assert!(
        read >= FLOOD_BYTES,
        "the engine did not see the whole flood ({read} bytes)"
    );
    assert!(
        watched.as_secs_f64() <= 2.0 * alone.as_secs_f64() + 0.5,
        "the program was throttled: {watched:?} watched vs {alone:?} alone"
    );
    assert!(
        rss_after < rss_before + 64 * 1024,
        "engine memory grew from {rss_before} to {rss_after} KiB"
    );
    shutdown.cancel();
    reader.abort();
}
