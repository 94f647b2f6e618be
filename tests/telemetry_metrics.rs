//! `/metrics` on a live gateway driving a real tmux server: what the request path and the
//! engine report, `promtool check metrics` on the scrape, the optional bearer token, and the
//! Grafana dashboard in `deploy/` using only metric names the gateway exports.

mod common;

use std::collections::BTreeSet;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::tmux::TestTmux;
use common::{RawMcp, TestGateway, config_with_server, spawn_gateway};
use serde_json::{Value, json};

/// The exposition as a plain scraper (curl, promtool) gets it.
async fn scrape(gateway: &TestGateway) -> String {
    let response = reqwest::get(format!("{}/metrics", gateway.base))
        .await
        .expect("GET /metrics");
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    response.text().await.unwrap()
}

/// The value of the sample `series` (name plus labels exactly as exported), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|value| value.trim().parse().expect("numeric sample"))
}

fn tool_call(id: u64, name: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}
    })
}

/// Runs `promtool check metrics` on `text`: required under CI, skipped (with a note) where
/// promtool is not installed.
fn promtool_check(text: &str) {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(error) if std::env::var_os("CI").is_none() => {
            eprintln!("promtool not runnable ({error}); install the `prometheus` package to lint");
            return;
        }
        Err(error) => panic!("promtool is required under CI: {error}"),
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_follow_calls_sessions_refusals_and_the_engine() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;

    let mut mcp = gateway.raw();
    mcp.initialize().await;
    let listed = mcp
        .request(&tool_call(1, "list_sessions", json!({"server": "work"})))
        .await;
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    let bad = mcp
        .request(&tool_call(2, "list_sessions", json!({"bogus": 1})))
        .await;
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    let unknown = mcp.request(&tool_call(3, "no_such_tool", json!({}))).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    mcp.request(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}))
        .await;
    let refused = RawMcp::new(&gateway.mcp_url)
        .post(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), reqwest::StatusCode::UNAUTHORIZED);

    let text = scrape(&gateway).await;
    let value =
        |series: &str| sample(&text, series).unwrap_or_else(|| panic!("no {series} in\n{text}"));
    assert_eq!(
        value(r#"muxgate_tool_calls_total{tool="list_sessions",outcome="ok"}"#),
        1.0
    );
    assert_eq!(
        value(r#"muxgate_tool_calls_total{tool="list_sessions",outcome="error"}"#),
        1.0
    );
    assert!(
        !text.contains("no_such_tool"),
        "client-chosen names never become labels"
    );
    let op = |labels: &str| {
        value(&format!(
            "mcp_server_operation_duration_seconds_count{{{labels}}}"
        ))
    };
    assert_eq!(
        op(r#"mcp_method_name="tools/call",gen_ai_tool_name="list_sessions",error_type="""#),
        1.0
    );
    assert_eq!(
        op(
            r#"mcp_method_name="tools/call",gen_ai_tool_name="list_sessions",error_type="tool_error""#
        ),
        1.0
    );
    assert_eq!(
        op(r#"mcp_method_name="tools/call",gen_ai_tool_name="",error_type="-32602""#),
        1.0
    );
    assert_eq!(
        op(r#"mcp_method_name="initialize",gen_ai_tool_name="",error_type="""#),
        1.0
    );
    assert_eq!(
        op(r#"mcp_method_name="tools/list",gen_ai_tool_name="",error_type="""#),
        1.0
    );
    assert_eq!(
        value(r#"muxgate_auth_failures_total{reason="missing"}"#),
        1.0
    );
    assert_eq!(
        value(r#"muxgate_auth_failures_total{reason="expired"}"#),
        0.0
    );
    assert_eq!(
        value(r#"muxgate_http_requests_total{route="/mcp",status="401"}"#),
        1.0
    );
    assert_eq!(
        value(r#"muxgate_limit_hits_total{limit="tool_calls_per_second"}"#),
        0.0
    );
    assert_eq!(value("muxgate_mcp_sessions_active"), 1.0);
    assert_eq!(value("muxgate_waits_active"), 0.0);
    assert!(value(r#"muxgate_tmux_commands_total{server="work"}"#) >= 1.0);
    assert!(value(r#"muxgate_tmux_command_duration_seconds_count{server="work"}"#) >= 1.0);
    assert_eq!(
        value(r#"muxgate_tmux_control_connections{server="work",connection="command"}"#),
        1.0
    );
    assert_eq!(value(r#"muxgate_tmux_queue_depth{server="work"}"#), 0.0);
    assert_eq!(
        value(r#"muxgate_tmux_reconnects_total{server="work"}"#),
        0.0
    );
    assert_eq!(
        value(&format!(
            r#"muxgate_build_info{{version="{}"}}"#,
            env!("CARGO_PKG_VERSION")
        )),
        1.0
    );
    promtool_check(&text);

    // The session ends: the gauge follows.
    let deleted = mcp
        .http
        .delete(&gateway.mcp_url)
        .bearer_auth(&gateway.token)
        .header("mcp-session-id", mcp.session_id.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = scrape(&gateway).await;
        if sample(&text, "muxgate_mcp_sessions_active") == Some(0.0) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "session gauge stuck:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_session_closed_for_idleness_leaves_the_gauge() {
    let mut config = common::relaxed(muxgate::config::Config::embedded_default());
    config.http.session_idle_secs = 1;
    let gateway = spawn_gateway(config).await;
    let mut mcp = gateway.raw();
    mcp.initialize().await;
    assert_eq!(
        sample(&scrape(&gateway).await, "muxgate_mcp_sessions_active"),
        Some(1.0)
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while sample(&scrape(&gateway).await, "muxgate_mcp_sessions_active") != Some(0.0) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the idle session is still counted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn openmetrics_is_served_to_scrapers_that_ask_for_it() {
    let gateway = spawn_gateway(common::relaxed(muxgate::config::Config::embedded_default())).await;
    let response = reqwest::Client::new()
        .get(format!("{}/metrics", gateway.base))
        .header(
            "accept",
            "application/openmetrics-text;version=1.0.0,text/plain;q=0.5",
        )
        .send()
        .await
        .unwrap();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    let text = response.text().await.unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(
        text.contains("# TYPE muxgate_auth_failures counter\n"),
        "{text}"
    );
}

#[tokio::test]
async fn metrics_can_require_a_bearer_token_or_be_off() {
    let protected =
        muxgate::config::Config::from_toml_str("[metrics]\nbearer_token = 'scrape-secret-123'\n")
            .unwrap();
    let gateway = spawn_gateway(protected).await;
    let url = format!("{}/metrics", gateway.base);
    let client = reqwest::Client::new();
    let anonymous = client.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), reqwest::StatusCode::UNAUTHORIZED);
    let wrong = client.get(&url).bearer_auth("nope").send().await.unwrap();
    assert_eq!(wrong.status(), reqwest::StatusCode::UNAUTHORIZED);
    let right = client
        .get(&url)
        .bearer_auth("scrape-secret-123")
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), reqwest::StatusCode::OK);
    // The MCP token is not a metrics token.
    let mcp_token = client
        .get(&url)
        .bearer_auth(&gateway.token)
        .send()
        .await
        .unwrap();
    assert_eq!(mcp_token.status(), reqwest::StatusCode::UNAUTHORIZED);

    let off = muxgate::config::Config::from_toml_str("[metrics]\nenabled = false\n").unwrap();
    let gateway = spawn_gateway(off).await;
    let response = reqwest::get(format!("{}/metrics", gateway.base))
        .await
        .unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::NOT_FOUND);
}

/// Metric names a scrape exports: sample names, and the sample names implied by each family's
/// `# TYPE` (so a histogram with no observation yet still counts).
fn exported_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            names.insert(name.to_owned());
            if kind == "histogram" {
                for suffix in ["_bucket", "_sum", "_count"] {
                    names.insert(format!("{name}{suffix}"));
                }
            }
        } else if !line.starts_with('#') && !line.is_empty() {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            names.insert(line[..end].to_owned());
        }
    }
    names
}

/// The metric names a PromQL expression uses: identifiers with the gateway's prefixes, after
/// label matchers and grouping clauses (which hold label names such as `mcp_method_name`) are
/// removed.
fn promql_metric_names(expr: &str) -> BTreeSet<String> {
    let matchers = regex::Regex::new(r"\{[^}]*\}").unwrap();
    let grouping =
        regex::Regex::new(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
            .unwrap();
    let metric = regex::Regex::new(r"\b(?:muxgate|mcp)_[a-zA-Z0-9_:]*").unwrap();
    let stripped = matchers.replace_all(expr, " ");
    let stripped = grouping.replace_all(&stripped, " ");
    let stripped = regex::Regex::new(r"label_values\(([a-zA-Z0-9_:]+)\s*,[^)]*\)")
        .unwrap()
        .replace_all(&stripped, "$1");
    metric
        .find_iter(&stripped)
        .map(|m| m.as_str().to_owned())
        .collect()
}

/// Every PromQL query of a Grafana dashboard: the targets of its panels (rows included) and
/// its query variables.
fn dashboard_queries(dashboard: &Value) -> Vec<String> {
    fn panel_queries(panels: &Value, out: &mut Vec<String>) {
        for panel in panels.as_array().into_iter().flatten() {
            for target in panel["targets"].as_array().into_iter().flatten() {
                out.push(target["expr"].as_str().expect("a PromQL target").to_owned());
            }
            panel_queries(&panel["panels"], out);
        }
    }
    let mut queries = Vec::new();
    panel_queries(&dashboard["panels"], &mut queries);
    for variable in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if variable["type"] == "query" {
            let query = &variable["query"];
            let text = query["query"]
                .as_str()
                .or(query.as_str())
                .expect("query text");
            queries.push(text.to_owned());
        }
    }
    queries
}

#[test]
fn promql_names_skip_labels_and_grouping() {
    let names = promql_metric_names(
        r#"sum by (mcp_method_name, gen_ai_tool_name) (rate(mcp_server_operation_duration_seconds_count{error_type!="", mcp_method_name="tools/call"}[5m])) / on (server) muxgate_tmux_queue_depth"#,
    );
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        [
            "mcp_server_operation_duration_seconds_count",
            "muxgate_tmux_queue_depth"
        ]
    );
    assert_eq!(
        promql_metric_names("label_values(muxgate_tmux_commands_total, server)")
            .into_iter()
            .collect::<Vec<_>>(),
        ["muxgate_tmux_commands_total"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_queries_only_metrics_the_gateway_exports() {
    let tmux = TestTmux::start();
    let gateway = spawn_gateway(config_with_server("work", &tmux.socket, false)).await;
    let mut mcp = gateway.raw();
    mcp.initialize().await;
    mcp.request(&tool_call(1, "list_sessions", json!({}))).await;
    let exported = exported_names(&scrape(&gateway).await);

    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/grafana/dashboards/muxgate.json"
    );
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("read the dashboard"))
            .expect("dashboard JSON");
    let queries = dashboard_queries(&dashboard);
    assert!(
        queries.len() >= 10,
        "the dashboard has its panels: {queries:?}"
    );
    for query in &queries {
        let used = promql_metric_names(query);
        assert!(
            !used.is_empty(),
            "a query that uses no gateway metric: {query}"
        );
        let missing: Vec<_> = used.difference(&exported).collect();
        assert!(
            missing.is_empty(),
            "the dashboard queries {missing:?}, which the gateway does not export ({query})"
        );
    }
}
