//! The metric registry: every metric the gateway exports, by name.
//!
//! Two kinds of sources:
//! - **recorded** here, on the request path: tool calls, MCP operation durations, HTTP requests,
//!   authentication failures, limit hits, active and evicted MCP sessions;
//! - **collected** at scrape time from counters other modules already keep: the tmux engine
//!   (`WorkerStats`, `OutputStats`, queue depth, command latency), the audit log's counters and
//!   the running waits. Collectors read atomics; a scrape never waits on tmux.
//!
//! Label values are bounded: tool names come from the catalog (never from a client), reasons
//! and limits from closed enums, routes from a fixed list, servers from the configuration.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `muxgate_build_info` | gauge (1) | `version` |
//! | `muxgate_tool_calls_total` | counter | `tool`, `outcome` (ok, error, denied, limited, cancelled) |
//! | `mcp_server_operation_duration_seconds` | histogram | `mcp_method_name`, `gen_ai_tool_name`, `error_type` |
//! | `muxgate_mcp_sessions_active` | gauge | |
//! | `muxgate_mcp_sessions_evicted_total` | counter | `reason` (cap, idle) |
//! | `muxgate_waits_active` | gauge | |
//! | `muxgate_http_requests_total` | counter | `route`, `status` |
//! | `muxgate_auth_failures_total` | counter | `reason` |
//! | `muxgate_limit_hits_total` | counter | `limit` |
//! | `muxgate_audit_records_written_total`, `_dropped_total`, `muxgate_audit_write_errors_total` | counter | |
//! | `muxgate_audit_backlog` | gauge | |
//! | `muxgate_tmux_commands_total` | counter | `server` |
//! | `muxgate_tmux_command_duration_seconds` | histogram | `server` |
//! | `muxgate_tmux_queue_depth` | gauge | `server` |
//! | `muxgate_tmux_control_connections` | gauge | `server`, `connection` (command, output) |
//! | `muxgate_tmux_watched_windows` | gauge | `server` |
//! | `muxgate_tmux_connects_total` | counter | `server`, `connection` |
//! | `muxgate_tmux_reconnects_total` | counter | `server` |
//! | `muxgate_tmux_connect_failures_total`, `muxgate_tmux_connections_lost_total`, `muxgate_tmux_stalls_total` | counter | `server` |
//! | `muxgate_tmux_output_bytes_total`, `muxgate_tmux_output_pauses_total` | counter | `server` |

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::approvals::ApprovalDesk;
use crate::audit::{AuditLog, Outcome};
use crate::auth::token::RejectReason;
use crate::auth::{Eviction, EvictionHook, RejectHook};
use crate::hosts::Hosts;
use crate::hosts::link::LinkPhase;
use crate::limits::{Limit, LimitHook, Limits};
use crate::secret_entry::{PaneDestination, SecretDesk};
use crate::workspace::Workspaces;
use muxgate_tmux::{LatencySnapshot, TmuxEngine, TmuxServer};

/// Bucket bounds of `mcp_server_operation_duration_seconds`, as the OpenTelemetry MCP semantic
/// conventions recommend.
pub(crate) const OPERATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ToolCallLabels {
    tool: String,
    outcome: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OperationLabels {
    mcp_method_name: &'static str,
    gen_ai_tool_name: String,
    error_type: Cow<'static, str>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct HttpLabels {
    route: &'static str,
    status: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct EvictionLabels {
    reason: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LimitLabels {
    limit: &'static str,
}

/// The MCP session metrics: the open-session gauge and the eviction counter.
fn register_sessions(registry: &mut Registry) -> (Gauge, Family<EvictionLabels, Counter>) {
    let sessions = Gauge::default();
    registry.register(
        "muxgate_mcp_sessions_active",
        "MCP sessions open now (2025-era clients; stateless requests have none)",
        sessions.clone(),
    );
    let evictions = Family::<EvictionLabels, Counter>::default();
    for reason in Eviction::ALL {
        let _ = evictions.get_or_create(&EvictionLabels {
            reason: reason.as_str(),
        });
    }
    registry.register(
        "muxgate_mcp_sessions_evicted",
        "Idle MCP sessions the gateway closed: to make room for a new session of the same \
         client (cap) or after http.session_idle_secs (idle)",
        evictions.clone(),
    );
    (sessions, evictions)
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn operation_histogram() -> Histogram {
    Histogram::new(OPERATION_BUCKETS)
}

/// The gateway's metrics. Build it, give its hooks and gauges to the parts that report, add
/// the collectors, then share it (`Arc`) with the request path and the `/metrics` handler.
pub struct Metrics {
    registry: Registry,
    tool_calls: Family<ToolCallLabels, Counter>,
    operations: HistogramFamily<OperationLabels>,
    http_requests: Family<HttpLabels, Counter>,
    auth_failures: Family<ReasonLabels, Counter>,
    limit_hits: Family<LimitLabels, Counter>,
    sessions: Gauge,
    evictions: Family<EvictionLabels, Counter>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// The registry with every recorded metric (collectors are added separately).
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let build_info = Family::<[(&'static str, &'static str); 1], Gauge>::default();
        build_info
            .get_or_create(&[("version", env!("CARGO_PKG_VERSION"))])
            .set(1);
        registry.register(
            "muxgate_build_info",
            "Always 1; the version label says which muxgate is running",
            build_info,
        );

        let tool_calls = Family::default();
        registry.register(
            "muxgate_tool_calls",
            "Tool calls by tool and outcome (ok, error, denied, limited, cancelled)",
            tool_calls.clone(),
        );
        let operations = HistogramFamily::new_with_constructor(operation_histogram as fn() -> _);
        registry.register_with_unit(
            "mcp_server_operation_duration",
            "Duration of MCP requests as the server handled them (OpenTelemetry MCP semantic \
             conventions); error_type is empty on success, tool_error for isError results, else \
             the JSON-RPC error code",
            Unit::Seconds,
            operations.clone(),
        );
        let http_requests = Family::default();
        registry.register(
            "muxgate_http_requests",
            "HTTP requests by route and response status",
            http_requests.clone(),
        );
        let auth_failures = Family::<ReasonLabels, Counter>::default();
        // Every label value from the start, so dashboards see zeros rather than no series.
        for reason in RejectReason::ALL {
            let _ = auth_failures.get_or_create(&ReasonLabels {
                reason: reason.as_str(),
            });
        }
        registry.register(
            "muxgate_auth_failures",
            "Requests refused by bearer authentication, by reason",
            auth_failures.clone(),
        );
        let limit_hits = Family::<LimitLabels, Counter>::default();
        for limit in Limit::ALL {
            let _ = limit_hits.get_or_create(&LimitLabels {
                limit: limit.as_str(),
            });
        }
        registry.register(
            "muxgate_limit_hits",
            "Requests or calls refused or clamped by a per-client limit, by limit",
            limit_hits.clone(),
        );
        let (sessions, evictions) = register_sessions(&mut registry);
        Self {
            registry,
            tool_calls,
            operations,
            http_requests,
            auth_failures,
            limit_hits,
            sessions,
            evictions,
        }
    }

    /// Adds a collector read at every scrape.
    pub fn register_collector(&mut self, collector: impl Collector) {
        self.registry.register_collector(Box::new(collector));
    }

    /// Adds the collectors of the engine's, the audit log's and the limits' own counters.
    pub fn collect_from(
        &mut self,
        engine: TmuxEngine,
        workspaces: Option<Workspaces>,
        audit: Arc<AuditLog>,
        limits: Arc<Limits>,
    ) {
        if let Some(workspaces) = &workspaces {
            self.register_collector(WorkspacesCollector {
                workspaces: workspaces.clone(),
            });
        }
        self.register_collector(EngineCollector { engine, workspaces });
        self.register_collector(AuditCollector { audit });
        self.register_collector(WaitsCollector { limits });
    }

    /// Adds the gauge of calls held for approval and the counter of how holds ended.
    pub fn collect_approvals(&mut self, desk: ApprovalDesk) {
        self.register_collector(ApprovalsCollector { desk });
    }

    /// Adds the gauge of secret requests open and the counter of what became of them.
    pub fn collect_secrets(&mut self, desk: SecretDesk<PaneDestination>) {
        self.register_collector(SecretsCollector { desk });
    }

    /// Adds the counters of what became of `[notify]` events.
    pub(crate) fn collect_notifications(&mut self, notifier: crate::notify::Notifier) {
        self.register_collector(NotificationsCollector { notifier });
    }

    /// Adds each host's link state and the count of its lost connections (`host` label).
    pub(crate) fn collect_hosts(&mut self, hosts: Arc<Hosts>) {
        if hosts.links().next().is_some() {
            self.register_collector(HostsCollector { hosts });
        }
    }

    /// The hook the authenticator calls on every refusal.
    pub fn reject_hook(&self) -> RejectHook {
        let family = self.auth_failures.clone();
        Arc::new(move |reason: RejectReason| {
            family
                .get_or_create(&ReasonLabels {
                    reason: reason.as_str(),
                })
                .inc();
        })
    }

    /// The hook the limits call on every hit.
    pub fn limit_hook(&self) -> LimitHook {
        let family = self.limit_hits.clone();
        Arc::new(move |limit: Limit, _sub: &str| {
            family
                .get_or_create(&LimitLabels {
                    limit: limit.as_str(),
                })
                .inc();
        })
    }

    /// The hook the session table calls for every session it evicts.
    pub fn eviction_hook(&self) -> EvictionHook {
        let family = self.evictions.clone();
        Arc::new(move |why: Eviction| {
            family
                .get_or_create(&EvictionLabels {
                    reason: why.as_str(),
                })
                .inc();
        })
    }

    /// The active-session gauge, kept by [`super::sessions::Counted`].
    pub fn sessions_gauge(&self) -> Gauge {
        self.sessions.clone()
    }

    /// Counts a finished tool call. `tool` must be a catalog name (never client input).
    pub fn record_tool_call(&self, tool: &str, outcome: Outcome) {
        self.tool_calls
            .get_or_create(&ToolCallLabels {
                tool: tool.to_owned(),
                outcome: outcome_name(outcome),
            })
            .inc();
    }

    /// Observes one MCP request. `tool` must be a catalog name (never client input);
    /// `error_type` is `None` on success.
    pub fn observe_operation(
        &self,
        method: &'static str,
        tool: Option<&str>,
        error_type: Option<Cow<'static, str>>,
        elapsed: Duration,
    ) {
        self.operations
            .get_or_create(&OperationLabels {
                mcp_method_name: method,
                gen_ai_tool_name: tool.unwrap_or_default().to_owned(),
                error_type: error_type.unwrap_or_default(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Counts one HTTP response.
    pub fn record_http(&self, route: &'static str, status: u16) {
        self.http_requests
            .get_or_create(&HttpLabels { route, status })
            .inc();
    }

    /// The whole exposition in the OpenMetrics text format.
    pub fn encode_openmetrics(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail, and every collector here only formats numbers.
        if let Err(error) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!(%error, "encoding metrics failed");
        }
        out
    }
}

fn outcome_name(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Ok => "ok",
        Outcome::Error => "error",
        Outcome::Denied => "denied",
        Outcome::Limited => "limited",
        Outcome::Cancelled => "cancelled",
    }
}

/// Writes one value as a counter or a gauge.
fn encode_value(metric: MetricEncoder, kind: MetricType, value: u64) -> fmt::Result {
    match kind {
        MetricType::Counter => ConstCounter::new(value).encode(metric),
        _ => ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX)).encode(metric),
    }
}

/// Writes one metric family from `(labels, value)` rows.
fn encode_rows<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    rows: impl IntoIterator<Item = (L, u64)>,
) -> fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, kind)?;
    for (labels, value) in rows {
        encode_value(family.encode_family(&labels)?, kind, value)?;
    }
    Ok(())
}

/// Writes one metric without labels.
fn encode_single(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    value: u64,
) -> fmt::Result {
    encode_value(
        encoder.encode_descriptor(name, help, None, kind)?,
        kind,
        value,
    )
}

/// Each host's link, by the host's name.
struct HostsCollector {
    hosts: Arc<Hosts>,
}

impl fmt::Debug for HostsCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostsCollector").finish_non_exhaustive()
    }
}

impl Collector for HostsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let reports: Vec<_> = self
            .hosts
            .links()
            .map(|link| (link.name().to_owned(), link.report()))
            .collect();
        encode_rows(
            &mut encoder,
            "muxgate_host_link_up",
            "Whether the SSH link to the host is up (1) or connecting or down (0).",
            MetricType::Gauge,
            reports.iter().map(|(host, report)| {
                (
                    [("host", host.clone())],
                    u64::from(report.phase == LinkPhase::Up),
                )
            }),
        )?;
        encode_rows(
            &mut encoder,
            "muxgate_host_link_drops",
            "SSH links to the host lost after they were up.",
            MetricType::Counter,
            reports
                .iter()
                .map(|(host, report)| ([("host", host.clone())], report.drops)),
        )
    }
}

/// The tmux engine's counters, per configured server, and summed over every workspace under
/// the server name `workspace` (no tenant in a label).
struct EngineCollector {
    engine: TmuxEngine,
    workspaces: Option<Workspaces>,
}

impl fmt::Debug for EngineCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineCollector").finish_non_exhaustive()
    }
}

/// The servers reported under one `server` label.
struct ServerGroup {
    name: String,
    servers: Vec<TmuxServer>,
}

impl ServerGroup {
    fn sum(&self, read: &dyn Fn(&TmuxServer) -> u64) -> u64 {
        self.servers.iter().map(read).sum()
    }
}

impl EngineCollector {
    fn groups(&self) -> Vec<ServerGroup> {
        let mut groups: Vec<ServerGroup> = self
            .engine
            .servers()
            .map(|server| ServerGroup {
                name: server.name().to_owned(),
                servers: vec![server.clone()],
            })
            .collect();
        if let Some(workspaces) = &self.workspaces {
            groups.push(ServerGroup {
                name: crate::workspace::SERVER_NAME.to_owned(),
                servers: workspaces.servers(),
            });
        }
        groups
    }
}

impl Collector for EngineCollector {
    // Long on purpose: one metric family after another, in the order `/metrics` shows them.
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let groups = self.groups();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let per_server = |read: &dyn Fn(&TmuxServer) -> u64| {
            groups
                .iter()
                .map(|g| ([("server", g.name.clone())], g.sum(read)))
                .collect::<Vec<_>>()
        };
        encode_rows(
            &mut encoder,
            "muxgate_tmux_commands",
            "tmux commands written to the server's command connection.",
            MetricType::Counter,
            per_server(&|s| load(&s.worker().stats().commands_sent)),
        )?;
        encode_rows(
            &mut encoder,
            "muxgate_tmux_queue_depth",
            "tmux commands queued and not yet written.",
            MetricType::Gauge,
            per_server(&|s| s.worker().queued() as u64),
        )?;
        encode_rows(
            &mut encoder,
            "muxgate_tmux_watched_windows",
            "Windows linked into the server's watch session: their panes' output is streamed.",
            MetricType::Gauge,
            per_server(&|s| s.output().watched_windows() as u64),
        )?;
        let command_open =
            |s: &TmuxServer| u64::from(s.worker().stats().connected.load(Ordering::Relaxed));
        let output_open = |s: &TmuxServer| {
            u64::try_from(s.output().stats().connections_open.load(Ordering::Relaxed))
                .unwrap_or_default()
        };
        let mut connections = Vec::new();
        let mut connects = Vec::new();
        for group in &groups {
            for (kind, open, attached) in [
                (
                    "command",
                    group.sum(&command_open),
                    group.sum(&|s| load(&s.worker().stats().connects)),
                ),
                (
                    "output",
                    group.sum(&output_open),
                    group.sum(&|s| load(&s.output().stats().connects)),
                ),
            ] {
                let labels = [
                    ("server", group.name.clone()),
                    ("connection", kind.to_owned()),
                ];
                connections.push((labels.clone(), open));
                connects.push((labels, attached));
            }
        }
        encode_rows(
            &mut encoder,
            "muxgate_tmux_control_connections",
            "tmux control-mode clients open now: the command connection and per-session output \
             connections.",
            MetricType::Gauge,
            connections,
        )?;
        encode_rows(
            &mut encoder,
            "muxgate_tmux_connects",
            "tmux control-mode clients attached.",
            MetricType::Counter,
            connects,
        )?;
        encode_rows(
            &mut encoder,
            "muxgate_tmux_reconnects",
            "Command connections attached after the first (after a lost connection or a stall).",
            MetricType::Counter,
            per_server(&|s| load(&s.worker().stats().connects).saturating_sub(1)),
        )?;
        encode_rows(
            &mut encoder,
            "muxgate_tmux_connect_failures",
            "Failed attempts to attach the command connection.",
            MetricType::Counter,
            per_server(&|s| load(&s.worker().stats().connect_failures)),
        )?;
        encode_rows(
            &mut encoder,
            "muxgate_tmux_connections_lost",
            "Command connections that closed while in use.",
            MetricType::Counter,
            per_server(&|s| load(&s.worker().stats().connections_lost)),
        )?;
        encode_rows(
            &mut encoder,
            "muxgate_tmux_stalls",
            "Command connections dropped because tmux stopped answering.",
            MetricType::Counter,
            per_server(&|s| load(&s.worker().stats().stalls)),
        )?;
        encode_rows(
            &mut encoder,
            "muxgate_tmux_output_bytes",
            "Pane output bytes read from output connections.",
            MetricType::Counter,
            per_server(&|s| load(&s.output().stats().bytes_read)),
        )?;
        encode_rows(
            &mut encoder,
            "muxgate_tmux_output_pauses",
            "Times tmux paused a pane's output because it fell too far behind.",
            MetricType::Counter,
            per_server(&|s| load(&s.output().stats().pauses)),
        )?;

        let mut histogram = encoder.encode_descriptor(
            "muxgate_tmux_command_duration",
            "Time from queueing a tmux command (or batch) to its last reply.",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for group in &groups {
            let snapshot = LatencySnapshot::combine(
                group
                    .servers
                    .iter()
                    .map(|s| s.worker().stats().latency.snapshot()),
            );
            // prometheus-client marks the `+Inf` bucket with `f64::MAX`.
            let buckets: Vec<(f64, u64)> = snapshot
                .buckets
                .iter()
                .map(|&(bound, n)| (if bound.is_finite() { bound } else { f64::MAX }, n))
                .collect();
            let labels = [("server", group.name.as_str())];
            histogram
                .encode_family(&labels)?
                .encode_histogram::<NoLabelSet>(
                    snapshot.sum_seconds,
                    snapshot.count,
                    &buckets,
                    None,
                )?;
        }
        Ok(())
    }
}

/// Workspaces: how many run, and how their sandboxes started.
struct WorkspacesCollector {
    workspaces: Workspaces,
}

impl fmt::Debug for WorkspacesCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkspacesCollector")
            .finish_non_exhaustive()
    }
}

impl Collector for WorkspacesCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let stats = self.workspaces.stats();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        encode_single(
            &mut encoder,
            "muxgate_workspaces_running",
            "Workspaces served since the gateway started whose sandbox runs now.",
            MetricType::Gauge,
            self.workspaces.running() as u64,
        )?;
        encode_rows(
            &mut encoder,
            "muxgate_workspace_starts",
            "Workspace sandboxes: started by this gateway, found running (started before a \
             restart), or failed to start.",
            MetricType::Counter,
            [
                ([("outcome", "started")], load(&stats.started)),
                ([("outcome", "found")], load(&stats.found)),
                ([("outcome", "failed")], load(&stats.failed)),
            ],
        )?;
        let seconds = encoder.encode_descriptor(
            "muxgate_workspace_start_seconds",
            "Time spent starting workspace sandboxes (divide by the started count for the mean).",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(load(&stats.start_micros) as f64 / 1e6).encode(seconds)
    }
}

/// The audit log's counters.
struct AuditCollector {
    audit: Arc<AuditLog>,
}

impl fmt::Debug for AuditCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditCollector").finish_non_exhaustive()
    }
}

impl Collector for AuditCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let stats = self.audit.stats();
        encode_single(
            &mut encoder,
            "muxgate_audit_records_written",
            "Audit lines that reached the OS (calls, drop notices, checkpoints).",
            MetricType::Counter,
            stats.written,
        )?;
        encode_single(
            &mut encoder,
            "muxgate_audit_records_dropped",
            "Audit records dropped: the writer fell behind, its backlog was full, or it closed.",
            MetricType::Counter,
            stats.dropped,
        )?;
        encode_single(
            &mut encoder,
            "muxgate_audit_write_errors",
            "Failed attempts to write audit lines or the audit head file.",
            MetricType::Counter,
            stats.write_errors,
        )?;
        encode_single(
            &mut encoder,
            "muxgate_audit_backlog",
            "Audit lines held because the disk refused them, to be written again.",
            MetricType::Gauge,
            stats.backlog,
        )
    }
}

/// Calls held for approval now, and how holds ended, from the approval desk.
#[derive(Debug)]
struct ApprovalsCollector {
    desk: ApprovalDesk,
}

impl Collector for ApprovalsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let stats = self.desk.stats();
        encode_single(
            &mut encoder,
            "muxgate_approvals_pending",
            "Tool calls held now until a human approves or denies them.",
            MetricType::Gauge,
            stats.waiting,
        )?;
        encode_rows(
            &mut encoder,
            "muxgate_approval_decisions",
            "Holds for approval that ended, by decision (approved, denied, timed_out).",
            MetricType::Counter,
            [
                ([("decision", "approved")], stats.approved),
                ([("decision", "denied")], stats.denied),
                ([("decision", "timed_out")], stats.timed_out),
            ],
        )?;
        Ok(())
    }
}

/// Secret requests open now, and what became of them, from the secret desk: counts only.
struct SecretsCollector {
    desk: SecretDesk<PaneDestination>,
}

impl fmt::Debug for SecretsCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretsCollector")
    }
}

impl Collector for SecretsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let counts = self.desk.counts();
        encode_single(
            &mut encoder,
            "muxgate_secret_requests_open",
            "Secret entry links handed out and neither used nor expired.",
            MetricType::Gauge,
            counts.open,
        )?;
        encode_rows(
            &mut encoder,
            "muxgate_secret_requests",
            "Secret entry events: links handed out (requested), secrets typed, attempts refused.",
            MetricType::Counter,
            [
                ([("event", "requested")], counts.requested),
                ([("event", "typed")], counts.typed),
                ([("event", "refused")], counts.refused),
            ],
        )
    }
}

/// What became of `[notify]` events: per target delivered, retried and failed posts; events
/// dropped on a full queue and events not sent again.
#[derive(Debug)]
struct NotificationsCollector {
    notifier: crate::notify::Notifier,
}

impl Collector for NotificationsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let counts = self.notifier.counts();
        let load = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
        encode_rows(
            &mut encoder,
            "muxgate_notification_events",
            "Events not posted: dropped on a full queue, or repeated (sent once already).",
            MetricType::Counter,
            [
                ([("outcome", "dropped")], load(&counts.dropped)),
                ([("outcome", "repeated")], load(&counts.repeated)),
            ],
        )?;
        encode_rows(
            &mut encoder,
            "muxgate_notification_posts",
            "Webhook posts by target and outcome (delivered, retried, failed).",
            MetricType::Counter,
            counts.targets.iter().flat_map(|(target, c)| {
                [
                    (
                        [("target", target.as_str()), ("outcome", "delivered")],
                        load(&c.delivered),
                    ),
                    (
                        [("target", target.as_str()), ("outcome", "retried")],
                        load(&c.retried),
                    ),
                    (
                        [("target", target.as_str()), ("outcome", "failed")],
                        load(&c.failed),
                    ),
                ]
            }),
        )
    }
}

/// Waits running now, from the limits' wait permits.
#[derive(Debug)]
struct WaitsCollector {
    limits: Arc<Limits>,
}

impl Collector for WaitsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        encode_single(
            &mut encoder,
            "muxgate_waits_active",
            "Waits (wait_for_text, run_command …) running now, across clients.",
            MetricType::Gauge,
            self.limits.active_waits() as u64,
        )
    }
}
