//! What an operator sees of a running gateway: metrics, traces and logs.
//!
//! - [`metrics`]: the metric registry ([`Metrics`]): counters and histograms the request path
//!   updates, plus collectors that read the engine's, the audit log's and the limits' own
//!   counters at scrape time (nothing is counted twice);
//! - [`exposition`]: `/metrics` in the Prometheus text format (or OpenMetrics when asked),
//!   optionally behind a static bearer token;
//! - [`http`]: the tower layer counting HTTP requests by route and status;
//! - [`mcp`]: one span, one histogram observation and one log line per MCP request, with the
//!   OpenTelemetry MCP semantic-convention names and the client's W3C trace context taken from
//!   `params._meta`;
//! - [`sessions`]: an MCP session's transport, counted by the active-session gauge while it lives;
//! - [`subscriber`]: the process's `tracing` subscriber: text or JSON logs on stderr and, when
//!   `[otel] endpoint` is set, an OTLP/HTTP span exporter.
//!
//! Not here: what is logged or counted by each module for its own purposes (the engine's
//! `WorkerStats`/`OutputStats`, the audit log's counters, the limits' wait permits); this module
//! only reads them.

pub(crate) mod exposition;
pub(crate) mod http;
pub(crate) mod mcp;
pub(crate) mod metrics;
pub(crate) mod sessions;
pub(crate) mod subscriber;

use std::path::PathBuf;

use serde::Deserialize;

use crate::auth::config::SecretString;
pub(crate) use metrics::Metrics;

/// `[log]`: the log lines on stderr.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    pub format: LogFormat,
    /// `tracing` filter directives (`info`, `muxgate=debug,warn`); `MUXGATE_LOG` wins when set.
    pub level: String,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// Human-readable lines (colours on a terminal).
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// `[metrics]`: the `/metrics` endpoint.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Serve `/metrics`.
    pub enabled: bool,
    /// When set (inline or from a file), scrapes must send `Authorization: Bearer <token>`.
    #[serde(default)]
    pub bearer_token: Option<SecretString>,
    #[serde(default)]
    pub bearer_token_file: Option<PathBuf>,
}

/// `[otel]`: OpenTelemetry trace export.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtelConfig {
    /// Base URL of an OTLP/HTTP receiver (`http://collector:4318`); spans go to
    /// `<endpoint>/v1/traces`. Unset: no spans are exported.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// `service.name` of the exported spans.
    pub service_name: String,
    /// Fraction of new traces recorded (a client's sampled trace context is always followed).
    pub sample_ratio: f64,
    /// How long one export may take.
    pub export_timeout_ms: u64,
}

/// Why the metrics token could not be used.
#[derive(Debug, thiserror::Error)]
pub enum MetricsTokenError {
    #[error("metrics.bearer_token_file: cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("metrics bearer token is empty")]
    Empty,
}

impl MetricsConfig {
    /// The token scrapes must present, if any (a file's content is trimmed).
    pub fn bearer_token(&self) -> Result<Option<SecretString>, MetricsTokenError> {
        let token = match (&self.bearer_token, &self.bearer_token_file) {
            (Some(token), _) => token.expose().trim().to_owned(),
            (None, Some(path)) => std::fs::read_to_string(path)
                .map_err(|source| MetricsTokenError::Read {
                    path: path.clone(),
                    source,
                })?
                .trim()
                .to_owned(),
            (None, None) => return Ok(None),
        };
        if token.is_empty() {
            return Err(MetricsTokenError::Empty);
        }
        Ok(Some(SecretString::new(token)))
    }
}
