//! Sessions that recycle: one client opening MCP sessions in a row and never ending them.
//!
//! A raw client (reqwest, a connection of its own per session, as separate runs of an agent
//! have) opens sessions one after another with the same token: `initialize`,
//! `notifications/initialized` and one `tools/call` (`list_servers`), then leaves the session
//! without `DELETE`. Every `initialize` must be answered 200: at the per-client cap (the
//! default, 32) the gateway closes the client's least recently used idle session to make room.
//! The gateway's RSS is read from `/proc` after [`EARLY`] sessions, after half of them and after
//! the last one, each time once the open-session gauge shows the evicted sessions closed; every
//! round starts a fresh gateway.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde_json::json;

use crate::fixture::BenchTmux;
use crate::procfs;
use crate::servers::{Muxgate, session_id};
use crate::stats::micros;

const VERSION: &str = "2025-06-18";

/// No single request may take longer: a stall fails the run instead of hanging it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The early point RSS is compared against.
pub(crate) const EARLY: usize = 20;

/// The gateway's default `http.max_sessions_per_client`.
const CAP: usize = 32;

/// One round on a fresh gateway.
pub(crate) struct RecycleRound {
    /// `initialize` requests answered 200, of all sent.
    pub initialized: usize,
    pub rss_early_kib: u64,
    /// After half the sessions: from there on the gateway holds the cap all along.
    pub rss_half_kib: u64,
    pub rss_end_kib: u64,
    /// `muxgate_mcp_sessions_active` at the end.
    pub open_at_end: f64,
    /// `muxgate_mcp_sessions_evicted_total` at the end.
    pub evicted: f64,
    /// Round trip of each `initialize`, µs.
    pub initialize_us: Vec<f64>,
}

/// `rounds` rounds of `sessions` sessions opened in a row by one client.
pub(crate) async fn recycle(sessions: usize, rounds: usize) -> Result<Vec<RecycleRound>> {
    ensure!(sessions > EARLY, "more than {EARLY} sessions are needed");
    let tmux = BenchTmux::start("recycle", None)?;
    let mut results = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let gateway = Muxgate::start(tmux.socket(), None).await?;
        let token = gateway.token(0)?;
        let mut round = RecycleRound {
            initialized: 0,
            rss_early_kib: 0,
            rss_half_kib: 0,
            rss_end_kib: 0,
            open_at_end: 0.0,
            evicted: 0.0,
            initialize_us: Vec::with_capacity(sessions),
        };
        for n in 1..=sessions {
            round
                .initialize_us
                .push(open_and_leave(gateway.mcp_url(), &token).await?);
            round.initialized += 1;
            if n == EARLY {
                round.rss_early_kib = settled_rss(&gateway, n).await?;
            }
            if n == sessions / 2 {
                round.rss_half_kib = settled_rss(&gateway, n).await?;
            }
        }
        round.rss_end_kib = settled_rss(&gateway, sessions).await?;
        round.open_at_end = gateway.metric("muxgate_mcp_sessions_active").await?;
        round.evicted = gateway.metric("muxgate_mcp_sessions_evicted_total").await?;
        gateway.stop().await;
        results.push(round);
    }
    Ok(results)
}

/// The gateway's RSS once `opened` sessions have been opened and all but the last [`CAP`]
/// closed (at most 10 s later).
async fn settled_rss(gateway: &Muxgate, opened: usize) -> Result<u64> {
    let open = opened.min(CAP) as f64;
    let deadline = Instant::now() + Duration::from_secs(10);
    while gateway.metric("muxgate_mcp_sessions_active").await? > open {
        if Instant::now() > deadline {
            bail!("more than {open} sessions still open after 10 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    procfs::rss_kib(gateway.pid())
}

/// Opens a session, makes one call in it and leaves it open; the `initialize` round trip, µs.
async fn open_and_leave(mcp_url: &str, token: &str) -> Result<f64> {
    // A client of its own: a connection of its own, closed when it is dropped.
    let http = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .context("HTTP client")?;
    let post = |session: Option<&str>, body: serde_json::Value| {
        let mut request = http
            .post(mcp_url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", VERSION);
        }
        request.send()
    };
    let started = Instant::now();
    let response = post(
        None,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "recycle-bench", "version": "0"}}}),
    )
    .await
    .context("POST initialize")?;
    ensure!(
        response.status() == reqwest::StatusCode::OK,
        "initialize answered {}",
        response.status()
    );
    let session = session_id(&response)?;
    response.bytes().await.context("initialize's answer")?;
    let took = micros(started.elapsed());
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let notified = post(Some(&session), initialized).await?;
    ensure!(
        notified.status().is_success(),
        "initialized: {}",
        notified.status()
    );
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "list_servers", "arguments": {}}});
    let answer = post(Some(&session), call).await?;
    let text = answer.text().await.context("list_servers' answer")?;
    ensure!(
        text.contains("\"isError\":false"),
        "list_servers failed: {}",
        text.chars().take(300).collect::<String>()
    );
    Ok(took)
}
