//! The gateway's own cost per call, against the cheapest thing it serves.
//!
//! One minimal client (reqwest, one keep-alive HTTP/1.1 connection, raw JSON-RPC) alternates a
//! `GET /healthz` and a `tools/call` on the same connection, so the machine's wake-up and
//! loopback costs appear in both and cancel out of the ratio. Then the same call alone, many
//! times, against the gateway process's CPU time from `/proc`: the gateway's CPU per call.
//! Both protocol eras are measured: a 2025-06-18 session (answers on a per-request SSE
//! stream, routed through the session's worker) and stateless 2026-07-28 requests, the latter
//! both on the gateway's direct path and through rmcp's transport.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

use crate::fixture::{BenchTmux, Layout};
use crate::procfs;
use crate::servers::{Muxgate, session_id};
use crate::stats::{median, micros};

const SESSION_VERSION: &str = "2025-06-18";
const STATELESS_VERSION: &str = "2026-07-28";

/// No single request may take longer: a stall fails the run instead of hanging it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// One measured request: a tool's name and arguments, or (no tool) an MCP `ping`, the
/// cheapest request there is: no tool, no tmux.
struct Case {
    label: &'static str,
    tool: Option<&'static str>,
    arguments: Value,
}

/// How the client speaks MCP.
#[derive(Clone, Copy)]
pub(crate) enum Era {
    /// `initialize`, then every request in the session (`Mcp-Session-Id`).
    Session,
    /// No session: each request carries its protocol version in `_meta` and headers.
    Stateless,
    /// The same requests, each with an `Mcp-Param-*` header no tool reads: the gateway's
    /// direct path leaves such a request to rmcp's transport, which serves it as it serves
    /// any stateless request. Side by side with [`Era::Stateless`], this is what the direct
    /// path saves.
    StatelessThroughRmcp,
}

impl Era {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Era::Session => "session (2025-06-18)",
            Era::Stateless => "stateless (2026-07-28)",
            Era::StatelessThroughRmcp => "stateless, through rmcp's transport",
        }
    }

    fn stateless(self) -> bool {
        matches!(self, Era::Stateless | Era::StatelessThroughRmcp)
    }
}

/// The goal for a call's round trip, as a multiple of a `/healthz` round trip on the same
/// connection; `ping` has none (it is the floor the others are read against).
pub(crate) fn ratio_goal(label: &str) -> Option<f64> {
    match label {
        "list_servers" => Some(2.5),
        "send_keys" | "capture_pane" => Some(4.0),
        "list_panes (20 panes)" => Some(6.0),
        _ => None,
    }
}

/// The goal for the gateway's CPU time per call, µs; `ping` has none.
pub(crate) fn cpu_goal_us(label: &str) -> Option<f64> {
    match label {
        "list_servers" => Some(100.0),
        "send_keys" | "capture_pane" | "list_panes (20 panes)" => Some(150.0),
        _ => None,
    }
}

/// The result for one call in one era.
pub(crate) struct CallCost {
    pub label: &'static str,
    pub era: Era,
    /// Median round trip of the call, µs.
    pub call_us: f64,
    /// Median `/healthz` round trip in the same run, µs.
    pub healthz_us: f64,
    /// The gateway's CPU time per call, µs.
    pub gateway_cpu_us: f64,
}

/// The whole run: every call, and what a `/healthz` alone costs the gateway.
pub(crate) struct Costs {
    pub calls: Vec<CallCost>,
    pub healthz_cpu_us: f64,
}

/// A raw MCP client on one connection.
struct RawClient {
    http: reqwest::Client,
    mcp_url: String,
    healthz_url: String,
    token: String,
    era: Era,
    session: Option<String>,
    next_id: u64,
}

impl RawClient {
    async fn open(gateway: &Muxgate, era: Era) -> Result<Self> {
        // One connection, kept alive: every request below reuses it.
        let http = reqwest::Client::builder()
            .http1_only()
            .pool_max_idle_per_host(1)
            .timeout(REQUEST_TIMEOUT)
            .build()
            .context("HTTP client")?;
        let mcp_url = gateway.mcp_url().to_owned();
        let healthz_url = format!("{}/healthz", mcp_url.trim_end_matches("/mcp"));
        let mut client = Self {
            http,
            mcp_url,
            healthz_url,
            token: gateway.token(0)?,
            era,
            session: None,
            next_id: 0,
        };
        if let Era::Session = era {
            let response = client
                .send(
                    &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": SESSION_VERSION, "capabilities": {},
                    "clientInfo": {"name": "cost-bench", "version": "0"}}}),
                )
                .await?;
            let session = session_id(&response)?;
            response.bytes().await.context("initialize's answer")?;
            client.session = Some(session);
            client
                .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await?
                .bytes()
                .await
                .context("initialized")?;
        }
        Ok(client)
    }

    async fn send(&self, body: &Value) -> Result<reqwest::Response> {
        let mut request = self
            .http
            .post(&self.mcp_url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        match (self.era, &self.session) {
            (Era::Session, Some(session)) => {
                request = request
                    .header("mcp-session-id", session)
                    .header("mcp-protocol-version", SESSION_VERSION);
            }
            (Era::Session, None) => {}
            (Era::Stateless | Era::StatelessThroughRmcp, _) => {
                if let Era::StatelessThroughRmcp = self.era {
                    request = request.header("mcp-param-bench", "rmcp");
                }
                request = request
                    .header("mcp-protocol-version", STATELESS_VERSION)
                    .header("mcp-method", body["method"].as_str().unwrap_or_default());
                if let Some(name) = body["params"]["name"].as_str() {
                    request = request.header("mcp-name", name);
                }
            }
        }
        let response = request.send().await.context("POST /mcp")?;
        ensure!(
            response.status().is_success(),
            "POST /mcp: {}",
            response.status()
        );
        Ok(response)
    }

    /// One request, its answer read to the end; the time it took.
    async fn call(&mut self, case: &Case) -> Result<Duration> {
        self.next_id += 1;
        let (method, mut params) = match case.tool {
            Some(tool) => (
                "tools/call",
                json!({"name": tool, "arguments": case.arguments}),
            ),
            None => ("ping", json!({})),
        };
        if self.era.stateless() {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
                "io.modelcontextprotocol/clientInfo": {"name": "cost-bench", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {}
            });
        }
        let body = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                          "params": params});
        let started = Instant::now();
        let answer = self
            .send(&body)
            .await?
            .bytes()
            .await
            .context("read the answer")?;
        let took = started.elapsed();
        let text = String::from_utf8_lossy(&answer);
        let succeeded = match case.tool {
            Some(_) => text.contains("\"isError\":false"),
            None => text.contains("\"result\""),
        };
        ensure!(
            succeeded,
            "{} failed: {}",
            case.label,
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

/// CPU samples are clock ticks (10 ms): this many calls per figure keep its error near 1 %.
const CPU_CALLS_PER_ROUND_TRIP_CALL: usize = 3;

/// Measures each case in each era `calls` times (after a warm-up), alternating with
/// `/healthz`, then its gateway CPU over more calls alone.
pub(crate) async fn per_call_cost(calls: usize) -> Result<Costs> {
    let tmux = BenchTmux::start("cost", None)?;
    let layout = Layout::create(&tmux)?;
    let gateway = Muxgate::start(tmux.socket(), None).await?;
    let cases = [
        Case {
            label: "ping",
            tool: None,
            arguments: json!({}),
        },
        Case {
            label: "list_servers",
            tool: Some("list_servers"),
            arguments: json!({}),
        },
        Case {
            label: "send_keys",
            tool: Some("send_keys"),
            arguments: json!({"target": layout.sink, "keys": "x", "literal": true, "enter": false}),
        },
        Case {
            label: "capture_pane",
            tool: Some("capture_pane"),
            arguments: json!({"target": layout.screen}),
        },
        Case {
            label: "list_panes (20 panes)",
            tool: Some("list_panes"),
            arguments: json!({"target": layout.grid_session}),
        },
    ];
    let cpu_calls = calls * CPU_CALLS_PER_ROUND_TRIP_CALL;
    let mut results = Vec::with_capacity(cases.len() * 2);
    let mut healthz_cpu_us = 0.0;
    for era in [Era::Session, Era::Stateless, Era::StatelessThroughRmcp] {
        let mut raw = RawClient::open(&gateway, era).await?;
        if let Era::Session = era {
            let before = procfs::cpu_time(gateway.pid())?;
            for _ in 0..cpu_calls {
                raw.healthz().await?;
            }
            let cpu = procfs::cpu_time(gateway.pid())?.saturating_sub(before);
            healthz_cpu_us = micros(cpu) / cpu_calls as f64;
        }
        for case in &cases {
            if era.stateless() && case.tool.is_none() {
                // 2026-07-28 dropped `ping` (an HTTP round trip is its own liveness check).
                continue;
            }
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
            for _ in 0..cpu_calls {
                raw.call(case).await?;
            }
            let cpu = procfs::cpu_time(gateway.pid())?.saturating_sub(before);
            results.push(CallCost {
                label: case.label,
                era,
                call_us: median(&call_us),
                healthz_us: median(&healthz_us),
                gateway_cpu_us: micros(cpu) / cpu_calls as f64,
            });
        }
    }
    gateway.stop().await;
    Ok(Costs {
        calls: results,
        healthz_cpu_us,
    })
}
