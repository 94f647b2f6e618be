//! `GET /metrics`: the exposition, optionally behind a static bearer token.
//!
//! The registry encodes OpenMetrics. A scraper that asks for it (`Accept:
//! application/openmetrics-text`, as Prometheus does) gets it as is; anything else (curl,
//! `promtool check metrics`, older scrapers) gets the Prometheus text format 0.0.4, converted
//! by [`to_prometheus_text`]: the two differ only in how counters are named in `# HELP`/`# TYPE`
//! lines, in `# UNIT` lines and in the `# EOF` trailer.
//!
//! The token is compared by SHA-256 digest, so the comparison time says nothing about it.

use std::collections::HashSet;
use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, StatusCode};
use sha2::{Digest, Sha256};

use super::Metrics;
use crate::auth::config::SecretString;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What the `/metrics` handler needs.
pub struct MetricsEndpoint {
    metrics: Arc<Metrics>,
    /// SHA-256 of the token scrapes must present, when protected.
    token_digest: Option<[u8; 32]>,
}

impl MetricsEndpoint {
    pub fn new(metrics: Arc<Metrics>, token: Option<&SecretString>) -> Self {
        Self {
            metrics,
            token_digest: token.map(|t| Sha256::digest(t.expose().as_bytes()).into()),
        }
    }

    fn authorized(&self, headers: &HeaderMap) -> bool {
        let Some(expected) = &self.token_digest else {
            return true;
        };
        let presented = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        presented.is_some_and(|token| {
            let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
            digest == *expected
        })
    }
}

/// The `/metrics` handler.
pub(crate) async fn serve(
    State(endpoint): State<Arc<MetricsEndpoint>>,
    headers: HeaderMap,
) -> Response {
    if !endpoint.authorized(&headers) {
        return (
            StatusCode::UNAUTHORIZED,
            [(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))],
            "metrics need a bearer token (metrics.bearer_token)\n",
        )
            .into_response();
    }
    let openmetrics = endpoint.metrics.encode_openmetrics();
    let wants_openmetrics = headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    if wants_openmetrics {
        ([(CONTENT_TYPE, OPENMETRICS)], openmetrics).into_response()
    } else {
        (
            [(CONTENT_TYPE, PROMETHEUS_TEXT)],
            to_prometheus_text(&openmetrics),
        )
            .into_response()
    }
}

/// Converts an OpenMetrics text exposition into the Prometheus text format 0.0.4.
///
/// Counter families are named without `_total` in OpenMetrics metadata and with it in the
/// Prometheus format; `# UNIT` and `# EOF` have no Prometheus equivalent; `unknown` is
/// `untyped`. Samples are the same in both.
pub(crate) fn to_prometheus_text(openmetrics: &str) -> String {
    let counters: HashSet<&str> = openmetrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let metadata = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|prefix| line.strip_prefix(prefix).map(|rest| (prefix, rest)));
        match metadata {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                let name = if counters.contains(name) {
                    format!("{name}_total")
                } else {
                    name.to_owned()
                };
                let tail = if prefix == "# TYPE " && tail == "unknown" {
                    "untyped"
                } else {
                    tail
                };
                out.push_str(prefix);
                out.push_str(&name);
                out.push(' ');
                out.push_str(tail);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_get_their_total_name_and_openmetrics_only_lines_go() {
        let openmetrics = "\
# HELP muxgate_tool_calls Tool calls.
# TYPE muxgate_tool_calls counter
muxgate_tool_calls_total{tool=\"list_servers\",outcome=\"ok\"} 3
# HELP mcp_server_operation_duration_seconds Durations.
# TYPE mcp_server_operation_duration_seconds histogram
# UNIT mcp_server_operation_duration_seconds seconds
mcp_server_operation_duration_seconds_sum 0.5
mcp_server_operation_duration_seconds_count 1
mcp_server_operation_duration_seconds_bucket{le=\"+Inf\"} 1
# HELP muxgate_mcp_sessions_active Sessions.
# TYPE muxgate_mcp_sessions_active gauge
muxgate_mcp_sessions_active 2
# HELP odd Something untyped.
# TYPE odd unknown
odd 1
# EOF
";
        // What changes, and nothing else: a counter family's name gets `_total`, `unknown`
        // is spelled `untyped`, and the `# UNIT` and `# EOF` lines go.
        let expected = openmetrics
            .replace("muxgate_tool_calls Tool", "muxgate_tool_calls_total Tool")
            .replace(
                "muxgate_tool_calls counter",
                "muxgate_tool_calls_total counter",
            )
            .replace("odd unknown", "odd untyped")
            .replace("# UNIT mcp_server_operation_duration_seconds seconds\n", "")
            .replace("# EOF\n", "");
        assert_eq!(to_prometheus_text(openmetrics), expected);
    }

    #[test]
    fn the_registry_converts_to_a_format_with_one_help_per_sample_family() {
        let metrics = Metrics::new();
        metrics.record_tool_call("list_servers", crate::audit::Outcome::Ok);
        let text = to_prometheus_text(&metrics.encode_openmetrics());
        assert!(
            text.contains("# TYPE muxgate_tool_calls_total counter\n"),
            "{text}"
        );
        assert!(text.contains("# TYPE muxgate_auth_failures_total counter\n"));
        assert!(text.contains("muxgate_auth_failures_total{reason=\"expired\"} 0\n"));
        assert!(!text.contains("# EOF") && !text.contains("# UNIT"));
    }

    #[test]
    fn a_protected_endpoint_wants_the_exact_token() {
        let metrics = Arc::new(Metrics::new());
        let token = SecretString::new("s3cret-token");
        let endpoint = MetricsEndpoint::new(metrics.clone(), Some(&token));
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            headers
        };
        assert!(endpoint.authorized(&with("Bearer s3cret-token")));
        assert!(!endpoint.authorized(&with("Bearer s3cret-tokeN")));
        assert!(!endpoint.authorized(&with("Basic s3cret-token")));
        assert!(!endpoint.authorized(&HeaderMap::new()));
        let open = MetricsEndpoint::new(metrics, None);
        assert!(open.authorized(&HeaderMap::new()));
    }
}
