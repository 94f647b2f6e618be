//! The process's `tracing` subscriber for `muxgate serve`: log lines on stderr (text or JSON)
//! and, when `[otel] endpoint` is set, spans exported over OTLP/HTTP (protobuf).
//!
//! The two outputs filter independently: logs by `MUXGATE_LOG` or `[log] level`, spans by
//! target (muxgate's own spans at `info`: MCP requests and tmux command batches), so quieting
//! the logs does not silence the traces.
//!
//! Spans are batched and exported from a background thread; [`TelemetryGuard::shutdown`]
//! flushes what is left. Call it after the async runtime has stopped (it blocks).

use std::io::IsTerminal as _;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _, Registry};

use super::{LogConfig, LogFormat, OtelConfig};

/// The environment variable that overrides `[log] level`.
pub(crate) const LOG_ENV: &str = "MUXGATE_LOG";

/// Why the subscriber could not be installed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TelemetryError {
    #[error("log level {level:?}: {message}")]
    Filter { level: String, message: String },
    #[error("otel: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    #[error("a tracing subscriber is already installed: {0}")]
    AlreadyInstalled(#[from] tracing_subscriber::util::TryInitError),
}

/// Keeps the span exporter alive; flush it with [`Self::shutdown`].
#[must_use = "dropping the guard without shutdown loses the spans not yet exported"]
pub(crate) struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
}

impl TelemetryGuard {
    /// Exports the spans still queued and stops the exporter. Blocks; call it outside the
    /// async runtime.
    pub(crate) fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(error) = provider.shutdown()
        {
            tracing::warn!(%error, "flushing the remaining spans failed");
        }
    }
}

/// `directives` with rmcp kept to errors unless they name it: rmcp logs every request it
/// receives (debug), every answer (debug) and every failed one with its error, which quotes the
/// request (warn), so its lines carry resource URIs, prompt names and tool arguments.
fn quiet_rmcp(directives: &str) -> String {
    let names_rmcp = directives
        .split(',')
        .any(|directive| directive.trim().starts_with("rmcp"));
    match (names_rmcp, directives.trim().is_empty()) {
        (true, _) => directives.to_owned(),
        (false, true) => "rmcp=error".to_owned(),
        (false, false) => format!("{directives},rmcp=error"),
    }
}

/// Installs the global subscriber for `serve`.
pub(crate) fn init(log: &LogConfig, otel: &OtelConfig) -> Result<TelemetryGuard, TelemetryError> {
    let directives = std::env::var(LOG_ENV).unwrap_or_else(|_| log.level.clone());
    let filter =
        EnvFilter::try_new(quiet_rmcp(&directives)).map_err(|e| TelemetryError::Filter {
            level: directives.clone(),
            message: e.to_string(),
        })?;
    let logs = match log.format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .with_current_span(true)
            .with_span_list(false)
            .boxed(),
    }
    .with_filter(filter);

    let provider = otel
        .endpoint
        .as_deref()
        .map(|endpoint| tracer_provider(endpoint, otel));
    let provider = provider.transpose()?;
    let spans = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("muxgate"))
            .with_filter(Targets::new().with_target("muxgate", Level::INFO))
    });
    Registry::default().with(logs).with(spans).try_init()?;
    Ok(TelemetryGuard { provider })
}

/// The OTLP/HTTP exporter behind a batch processor.
fn tracer_provider(
    endpoint: &str,
    otel: &OtelConfig,
) -> Result<SdkTracerProvider, opentelemetry_otlp::ExporterBuildError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(traces_url(endpoint))
        .with_timeout(Duration::from_millis(otel.export_timeout_ms))
        .build()?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            otel.sample_ratio,
        ))))
        .with_resource(
            Resource::builder()
                .with_service_name(otel.service_name.clone())
                .build(),
        )
        .build())
}

/// `<endpoint>/v1/traces`, the OTLP/HTTP path for spans.
pub(crate) fn traces_url(endpoint: &str) -> String {
    format!("{}/v1/traces", endpoint.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmcp_logs_only_errors_unless_named() {
        assert_eq!(quiet_rmcp("info"), "info,rmcp=error");
        assert_eq!(quiet_rmcp("debug"), "debug,rmcp=error");
        assert_eq!(quiet_rmcp(""), "rmcp=error");
        assert_eq!(quiet_rmcp("info,rmcp=debug"), "info,rmcp=debug");
        assert_eq!(
            quiet_rmcp("muxgate=debug, rmcp::service=info"),
            "muxgate=debug, rmcp::service=info"
        );
    }

    #[test]
    fn spans_go_to_the_traces_path() {
        assert_eq!(
            traces_url("http://collector:4318"),
            "http://collector:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://collector:4318/"),
            "http://collector:4318/v1/traces"
        );
    }
}
