//! The gateway's own cost per call, against the cheapest thing it serves.
//!
//! One minimal client (reqwest, one keep-alive HTTP/1.1 connection, raw JSON-RPC) alternates a
//! `GET /healthz` and a `tools/call` on the same connection, so the machine's wake-up and
//! loopback costs appear in both and cancel out of the ratio. Then the same call alone, many
//! times, against the gateway process's CPU time from `/proc`: the gateway's CPU per call.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

use crate::fixture::{BenchTmux, Layout};
use crate::procfs;
use crate::servers::Muxgate;
use crate::stats::{median, micros};

/// One measured call: its name and arguments.
struct Case {
    label: &'static str,
    tool: &'static str,
    arguments: Value,
}

/// The result for one call.
pub struct CallCost {
    pub label: &'static str,
    /// Median round trip of the call, µs.
    pub call_us: f64,
    /// Median `/healthz` round trip in the same run, µs.
    pub healthz_us: f64,
    /// The gateway's CPU time per call, µs.
    pub gateway_cpu_us: f64,
}

/// A raw MCP session on one connection.
struct RawSession {
    http: reqwest::Client,
    mcp_url: String,
    healthz_url: String,
    token: String,
    session: String,
    next_id: u64,
}

impl RawSession {
    async fn open(gateway: &Muxgate) -> Result<Self> {
        // One connection, kept alive: every request below reuses it.
        let http = reqwest::Client::builder()
            .http1_only()
            .pool_max_idle_per_host(1)
            .build()
            .context("HTTP client")?;
        let mcp_url = gateway.mcp_url().to_owned();
        let healthz_url = format!("{}/healthz", mcp_url.trim_end_matches("/mcp"));
        let token = gateway.token(0)?;
        let response = http
            .post(&mcp_url)
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .json(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "cost-bench", "version": "0"}}}),
            )
            .send()
            .await
            .context("initialize")?;
        let session = response
            .headers()
            .get("mcp-session-id")
            .context("a session id")?
            .to_str()
            .context("an ASCII session id")?
            .to_owned();
        response.bytes().await.context("initialize's answer")?;
        let mut raw = Self {
            http,
            mcp_url,
            healthz_url,
            token,
            session,
            next_id: 1,
        };
        raw.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(raw)
    }

    async fn post(&mut self, body: &Value) -> Result<Vec<u8>> {
        let response = self
            .http
            .post(&self.mcp_url)
            .bearer_auth(&self.token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", "2025-06-18")
            .json(body)
            .send()
            .await
            .context("POST /mcp")?;
        ensure!(
            response.status().is_success(),
            "POST /mcp: {}",
            response.status()
        );
        Ok(response.bytes().await.context("read the answer")?.to_vec())
    }

    async fn call(&mut self, case: &Case) -> Result<Duration> {
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                          "params": {"name": case.tool, "arguments": case.arguments}});
        let started = Instant::now();
        let answer = self.post(&body).await?;
        let took = started.elapsed();
        let text = String::from_utf8_lossy(&answer);
        ensure!(
            text.contains("\"isError\":false"),
            "{} failed: {}",
            case.tool,
            text.chars().take(300).collect::<String>()
        );
        Ok(took)
    }

    async fn healthz(&self) -> Result<Duration> {
        let started = Instant::now();
        let response = self
            .http
            .get(&self.healthz_url)
            .send()
            .await
            .context("GET /healthz")?;
        ensure!(
            response.status().is_success(),
            "/healthz: {}",
            response.status()
        );
        response.bytes().await.context("read /healthz")?;
        Ok(started.elapsed())
    }
}

/// Measures each case `calls` times (after a warm-up), alternating with `/healthz`, then its
/// gateway CPU over `calls` calls alone.
pub async fn per_call_cost(calls: usize) -> Result<Vec<CallCost>> {
    let tmux = BenchTmux::start("cost", None)?;
    let layout = Layout::create(&tmux)?;
    let gateway = Muxgate::start(tmux.socket(), None).await?;
    let mut raw = RawSession::open(&gateway).await?;
    let cases = [
        Case {
            label: "list_servers",
            tool: "list_servers",
            arguments: json!({}),
        },
        Case {
            label: "send_keys",
            tool: "send_keys",
            arguments: json!({"target": layout.sink, "keys": "x", "literal": true, "enter": false}),
        },
        Case {
            label: "capture_pane",
            tool: "capture_pane",
            arguments: json!({"target": layout.screen}),
        },
        Case {
            label: "list_panes (20 panes)",
            tool: "list_panes",
            arguments: json!({"target": layout.grid_session}),
        },
    ];
    let mut results = Vec::with_capacity(cases.len());
    for case in &cases {
        for _ in 0..calls.min(20) {
            raw.call(case).await?;
            raw.healthz().await?;
        }
        let (mut call_us, mut healthz_us) = (Vec::new(), Vec::new());
        for _ in 0..calls {
            call_us.push(micros(raw.call(case).await?));
            healthz_us.push(micros(raw.healthz().await?));
        }
        let before = procfs::cpu_time(gateway.pid())?;
        for _ in 0..calls {
            raw.call(case).await?;
        }
        let cpu = procfs::cpu_time(gateway.pid())?.saturating_sub(before);
        results.push(CallCost {
            label: case.label,
            call_us: median(&call_us),
            healthz_us: median(&healthz_us),
            gateway_cpu_us: micros(cpu) / calls as f64,
        });
    }
    gateway.stop().await;
    Ok(results)
}
