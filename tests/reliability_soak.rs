//! Soak: a `muxgate serve` process driven by many agents with a realistic mix of calls for a
//! long time (30 minutes by default), sampling the gateway's resident memory, threads, file
//! descriptors, its own gauges (`/metrics`) and the tmux control clients, and the p99 latency
//! of every minute. Passes when nothing grows beyond fixed bounds from the steady state (the end
//! of minute 2: minute 1 includes setting up every agent's session and connection) and the last
//! minute's p99 is at most 1.5× minute 2's.
//!
//! Too long for the test suite: ignored, run by `scripts/soak` (see README, Testing).
//! Environment: `SOAK_MINUTES` (default 30), `SOAK_AGENTS` (default 32), `SOAK_REPORT` (a file
//! to write the Markdown report to), `SOAK_HISTORY_LIMIT` (the agents' panes' tmux
//! `history-limit`; default tmux's 2,000 lines: a smaller one tells whether the latency creeps
//! with the scrollback).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::calls::Client;
use common::probe::{sample, status_field};
use common::serve::ServeProcess;
use common::tmux::TestTmux;
use muxgate::auth::{MintRequest, TokenMinter};
use proptest::prelude::Rng;
use proptest::test_runner::{RngAlgorithm, TestRng};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

/// Growth allowed from the end of minute 2 to the end of the run. Each agent's pane
/// keeps a ring of recent output (`engine.output_ring_bytes`, 1 MiB by default) that fills
/// slowly over the run: up to 32 MiB for 32 agents, legitimately; the rest is slack.
const MAX_RSS_GROWTH_KIB: u64 = 48 * 1024;
const MAX_THREAD_GROWTH: u64 = 4;
const MAX_FD_GROWTH: u64 = 16;
const MAX_TMUX_CLIENT_GROWTH: u64 = 2;
const MAX_P99_RATIO: f64 = 1.5;
const SAMPLE_EVERY: Duration = Duration::from_secs(10);

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn mint(config: &Path, sub: &str) -> String {
    let loaded = muxgate::config::Config::load(Some(config), std::iter::empty()).expect("config");
    TokenMinter::from_config(&loaded.config.auth)
        .expect("minter")
        .mint(&MintRequest {
            sub: sub.to_owned(),
            scopes: vec!["mux:read".into(), "mux:write".into(), "mux:admin".into()],
            ttl: Duration::from_secs(24 * 3600),
            servers: None,
            sessions: None,
            own_sessions: false,
            workspace: None,
            toolsets: None,
        })
        .expect("mint")
}

/// Latencies (µs) of the calls that completed in each minute; waits are kept apart because
/// their duration is the shell's, not the gateway's.
#[derive(Default)]
struct Latencies {
    by_minute: Vec<Vec<u64>>,
    /// The same per tool, to tell which calls a change of latency comes from.
    by_tool: BTreeMap<String, Vec<Vec<u64>>>,
}

impl Latencies {
    fn record(&mut self, tool: &str, minute: usize, micros: u64) {
        let by_tool = self.by_tool.entry(tool.to_owned()).or_default();
        for minutes in [&mut self.by_minute, by_tool] {
            if minutes.len() <= minute {
                minutes.resize_with(minute + 1, Vec::new);
            }
            minutes[minute].push(micros);
        }
    }
}

fn p99(samples: &[u64]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let at = ((sorted.len() as f64) * 0.99).ceil() as usize;
    Duration::from_micros(sorted[at.clamp(1, sorted.len()) - 1])
}

struct Agent {
    client: Client,
    session: String,
    pane: String,
    rng: TestRng,
    step: u64,
}

struct Shared {
    started: Instant,
    stop: AtomicBool,
    latencies: Mutex<Latencies>,
    failures: AtomicU64,
    calls: AtomicU64,
    /// Waits that saw their command's output.
    matched: AtomicU64,
    /// Waits that returned without it (a timeout, or any other outcome): each one fails the run.
    missed: AtomicU64,
}

impl Agent {
    /// Calls a tool, records its latency (waits excluded) and returns its structured result.
    async fn call(&self, shared: &Shared, name: &str, args: Value) -> Option<Value> {
        let params = CallToolRequestParams::new(name.to_owned())
            .with_arguments(args.as_object().expect("object").clone());
        let started = Instant::now();
        let result = tokio::time::timeout(Duration::from_secs(60), self.client.call_tool(params))
            .await
            .unwrap_or_else(|_| panic!("{name} did not return within 60 s"));
        let micros = started.elapsed().as_micros() as u64;
        shared.calls.fetch_add(1, Ordering::Relaxed);
        if name != "wait_for_text" {
            let minute = (shared.started.elapsed().as_secs() / 60) as usize;
            shared
                .latencies
                .lock()
                .expect("not poisoned")
                .record(name, minute, micros);
        }
        match result {
            Ok(result) if result.is_error == Some(false) => result.structured_content,
            other => {
                shared.failures.fetch_add(1, Ordering::Relaxed);
                eprintln!("{name} failed: {other:?}");
                None
            }
        }
    }

    /// One turn of an agent at work: run a command and wait for its output, look at the
    /// screen, sometimes paste, inspect, or open and close a window.
    async fn turn(&mut self, shared: &Shared) {
        self.step += 1;
        let (pane, step) = (self.pane.clone(), self.step);
        let sent = self
            .call(
                shared,
                "send_keys",
                json!({"target": pane, "keys": format!("echo step-{step}-$((6*7))"),
                       "literal": true}),
            )
            .await;
        // The wait starts from the position the input was sent at, so output that came before
        // the wait subscribed is seen too.
        let since = sent.as_ref().and_then(|s| s["output_position"].as_str());
        let waited = self
            .call(
                shared,
                "wait_for_text",
                json!({"target": pane, "patterns": [format!("step-{step}-42")], "since": since,
                       "timeout": 10}),
            )
            .await;
        match waited {
            Some(w) if w["outcome"] == "matched" => {
                shared.matched.fetch_add(1, Ordering::Relaxed);
            }
            Some(w) => {
                shared.missed.fetch_add(1, Ordering::Relaxed);
                eprintln!("step {step} in {pane}: the wait missed its output: {w}");
            }
            // A failed call (send or wait) is counted as a failure already.
            None => {}
        }
        self.call(shared, "capture_pane", json!({"target": pane}))
            .await;
        match self.rng.next_u64() % 8 {
            0 => {
                self.call(
                    shared,
                    "paste_text",
                    json!({"target": pane, "text": format!("echo pasted {step}\n# a comment; $(not run)\n")}),
                )
                .await;
            }
            1 => {
                self.call(shared, "list_sessions", json!({})).await;
            }
            2 => {
                self.call(shared, "get_pane_info", json!({"target": pane}))
                    .await;
            }
            3 => {
                self.call(shared, "list_windows", json!({"target": self.session}))
                    .await;
            }
            4 if step % 5 == 0 => {
                let created = self
                    .call(shared, "create_window", json!({"target": self.session}))
                    .await;
                if let Some(id) = created.as_ref().and_then(|c| c["window"]["id"].as_str()) {
                    self.call(shared, "kill_window", json!({"target": id}))
                        .await;
                }
            }
            5 => {
                self.call(
                    shared,
                    "search_panes",
                    json!({"pattern": format!("step-{step}-")}),
                )
                .await;
            }
            6 if step % 20 == 0 => {
                self.call(shared, "clear_pane", json!({"target": pane}))
                    .await;
            }
            _ => {
                self.call(shared, "list_panes", json!({"target": self.session}))
                    .await;
            }
        }
        // Think time, as a model would take between calls.
        let think = 500 + self.rng.next_u64() % 1500;
        tokio::time::sleep(Duration::from_millis(think)).await;
    }
}

/// One sample of the gateway process.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Duration,
    rss_kib: u64,
    threads: u64,
    fds: u64,
    tmux_clients: u64,
    mcp_sessions: f64,
    waits: f64,
    output_connections: f64,
}

async fn take_sample(
    gateway: &ServeProcess,
    tmux: &TestTmux,
    http: &reqwest::Client,
    at: Duration,
) -> Sample {
    let pid = gateway.pid.to_string();
    let metrics = http
        .get(format!("{}/metrics", gateway.base))
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics body");
    Sample {
        at,
        rss_kib: status_field(&pid, "VmRSS"),
        threads: status_field(&pid, "Threads"),
        fds: std::fs::read_dir(format!("/proc/{pid}/fd"))
            .expect("read fds")
            .count() as u64,
        tmux_clients: tmux.muxgate_clients().len() as u64,
        mcp_sessions: sample(&metrics, "muxgate_mcp_sessions_active").unwrap_or(0.0),
        waits: sample(&metrics, "muxgate_waits_active").unwrap_or(0.0),
        output_connections: sample(
            &metrics,
            "muxgate_tmux_control_connections{server=\"work\",connection=\"output\"}",
        )
        .unwrap_or(0.0),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a long soak run; scripts/soak runs it"]
async fn soak() {
    let minutes = env_or("SOAK_MINUTES", 30).max(3);
    let agents = env_or("SOAK_AGENTS", 32) as usize;
    let duration = Duration::from_secs(minutes * 60);

    let tmux = TestTmux::start();
    if let Ok(lines) = std::env::var("SOAK_HISTORY_LIMIT") {
        tmux.ok(&["set-option", "-g", "history-limit", &lines]);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let config =
        common::serve::write_config(dir.path(), "work", &tmux.socket, "[log]\nlevel = 'warn'\n");
    let gateway = ServeProcess::start(&config, &dir.path().join("serve.log"), &[]).await;

    let mut workers = Vec::new();
    for i in 0..agents {
        let session = format!("agent-{i}");
        tmux.ok(&[
            "new-session",
            "-d",
            "-s",
            &session,
            "-x",
            "120",
            "-y",
            "40",
            "sh",
        ]);
        let pane = tmux.pane_id(&session).to_string();
        let token = mint(&config, &format!("agent-{i}"));
        let client = rmcp::ServiceExt::serve(
            rmcp::model::ClientConfig::default(),
            rmcp::transport::StreamableHttpClientTransport::from_config(
                rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                    gateway.mcp_url.as_str(),
                )
                .auth_header(token),
            ),
        )
        .await
        .expect("connect");
        workers.push(Agent {
            client,
            session,
            pane,
            rng: TestRng::from_seed(RngAlgorithm::ChaCha, &[i as u8; 32]),
            step: 0,
        });
    }

    let shared = Arc::new(Shared {
        started: Instant::now(),
        stop: AtomicBool::new(false),
        latencies: Mutex::new(Latencies::default()),
        failures: AtomicU64::new(0),
        calls: AtomicU64::new(0),
        matched: AtomicU64::new(0),
        missed: AtomicU64::new(0),
    });
    let mut tasks = Vec::new();
    for mut agent in workers {
        let shared = shared.clone();
        tasks.push(tokio::spawn(async move {
            while !shared.stop.load(Ordering::Relaxed) {
                agent.turn(&shared).await;
            }
            agent
        }));
    }

    let http = reqwest::Client::new();
    let mut samples = Vec::new();
    while shared.started.elapsed() < duration {
        tokio::time::sleep(SAMPLE_EVERY).await;
        let sample = take_sample(&gateway, &tmux, &http, shared.started.elapsed()).await;
        eprintln!("{sample:?}");
        samples.push(sample);
    }
    shared.stop.store(true, Ordering::Relaxed);
    let mut finished = Vec::new();
    for task in tasks {
        finished.push(task.await.expect("agent"));
    }
    drop(finished);

    let report = report(&shared, &samples, minutes, agents);
    println!("{report}");
    if let Ok(path) = std::env::var("SOAK_REPORT") {
        std::fs::write(path, &report).expect("write the report");
    }
    check(&shared, &samples, minutes as usize);
}

/// The steady state growth is measured from: the sample at the end of minute 2.
fn baseline(samples: &[Sample]) -> Sample {
    *samples
        .iter()
        .find(|s| s.at >= Duration::from_secs(120))
        .expect("a sample after minute 2")
}

fn report(shared: &Shared, samples: &[Sample], minutes: u64, agents: usize) -> String {
    let latencies = shared.latencies.lock().expect("not poisoned");
    let mut out = format!(
        "Soak: {agents} agents, {minutes} min, {} calls, {} failed, {} waits matched their \
         command's output, {} missed it.\n\n\
         | minute | calls | p50 | p99 | RSS KiB | threads | fds | tmux clients | MCP sessions | waits | output conns |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        shared.calls.load(Ordering::Relaxed),
        shared.failures.load(Ordering::Relaxed),
        shared.matched.load(Ordering::Relaxed),
        shared.missed.load(Ordering::Relaxed),
    );
    for (minute, calls) in latencies.by_minute.iter().enumerate() {
        if calls.is_empty() {
            continue;
        }
        let mut sorted = calls.clone();
        sorted.sort_unstable();
        let p50 = Duration::from_micros(sorted[sorted.len() / 2]);
        let last = samples
            .iter()
            .rev()
            .find(|s| s.at <= Duration::from_secs(60 * (minute as u64 + 1)))
            .or(samples.first());
        let Some(s) = last else { continue };
        out.push_str(&format!(
            "| {} | {} | {:.1} ms | {:.1} ms | {} | {} | {} | {} | {} | {} | {} |\n",
            minute + 1,
            calls.len(),
            p50.as_secs_f64() * 1e3,
            p99(calls).as_secs_f64() * 1e3,
            s.rss_kib,
            s.threads,
            s.fds,
            s.tmux_clients,
            s.mcp_sessions,
            s.waits,
            s.output_connections,
        ));
    }
    // Per tool: the steady state (minute 2) against the last full minute.
    let last = minutes as usize - 1;
    out.push_str(
        "\n| tool | calls | p99 minute 2 | p99 last full minute | ratio |\n|---|---:|---:|---:|---:|\n",
    );
    for (tool, by_minute) in &latencies.by_tool {
        let (Some(steady), Some(end)) = (by_minute.get(1), by_minute.get(last)) else {
            continue;
        };
        if steady.is_empty() || end.is_empty() {
            continue;
        }
        let (steady, end) = (p99(steady).as_secs_f64(), p99(end).as_secs_f64());
        out.push_str(&format!(
            "| `{tool}` | {} | {:.1} ms | {:.1} ms | {:.2}× |\n",
            by_minute.iter().map(Vec::len).sum::<usize>(),
            steady * 1e3,
            end * 1e3,
            end / steady,
        ));
    }
    out
}

fn check(shared: &Shared, samples: &[Sample], minutes: usize) {
    let base = baseline(samples);
    let end = *samples.last().expect("samples");
    let peak = |f: fn(&Sample) -> u64| samples.iter().map(f).max().unwrap_or(0);
    let growth = |f: fn(&Sample) -> u64| peak(f).saturating_sub(f(&base));
    assert!(
        growth(|s| s.rss_kib) <= MAX_RSS_GROWTH_KIB,
        "RSS grew {} KiB (from {} to peak {})",
        growth(|s| s.rss_kib),
        base.rss_kib,
        peak(|s| s.rss_kib)
    );
    assert!(
        growth(|s| s.threads) <= MAX_THREAD_GROWTH,
        "threads grew by {}",
        growth(|s| s.threads)
    );
    assert!(
        growth(|s| s.fds) <= MAX_FD_GROWTH,
        "fds grew by {}",
        growth(|s| s.fds)
    );
    assert!(
        growth(|s| s.tmux_clients) <= MAX_TMUX_CLIENT_GROWTH,
        "tmux clients grew by {}",
        growth(|s| s.tmux_clients)
    );
    assert!(end.mcp_sessions <= base.mcp_sessions, "MCP sessions grew");
    let latencies = shared.latencies.lock().expect("not poisoned");
    // Calls completing after the stop fall into minute `minutes`: the last full one is before.
    let (steady, last) = (&latencies.by_minute[1], &latencies.by_minute[minutes - 1]);
    let ratio = p99(last).as_secs_f64() / p99(steady).as_secs_f64();
    assert!(
        ratio <= MAX_P99_RATIO,
        "p99 of the last full minute is {ratio:.2}x minute 2's"
    );
    assert_eq!(shared.failures.load(Ordering::Relaxed), 0, "calls failed");
    assert_eq!(
        shared.missed.load(Ordering::Relaxed),
        0,
        "waits that did not see their command's output"
    );
    assert!(
        shared.matched.load(Ordering::Relaxed) > 0,
        "no wait saw its output"
    );
}
