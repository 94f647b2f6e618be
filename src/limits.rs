//! Per-client limits and budgets, keyed by the token's `sub`.
//!
//! Every limit has a global value (`[limits]`) and an optional per-client override
//! (`[clients.<sub>.limits]`):
//!
//! ```toml
//! [limits]
//! requests_per_second = 20      # HTTP requests to /mcp (GCRA, governor) ...
//! request_burst = 40            # ... with this burst
//! tool_calls_per_second = 10    # tools/call ...
//! tool_call_burst = 20          # ... with this burst
//! max_batch_ops = 50            # operations in one batch tool call
//! max_concurrent_waits = 4      # waits (wait_for_text, run_command, ...) running at once
//! max_wait_seconds = 120        # longer wait requests are clamped, not refused
//! max_output_bytes = 1048576    # bytes of one answer, all of it (text cut from the front)
//! worker_queue_share = 256      # commands one client may have queued on one tmux worker
//! max_watched_sessions = 64     # output connections (watched sessions) one client may open per server
//! ```
//!
//! How each limit answers:
//! - requests/s, from [`limit_requests`]: a `tools/call` gets its `isError` result naming the
//!   limit and `retry_after_ms` ([`refused_tool_call`]); any other request HTTP `429` with
//!   `Retry-After` (whole seconds);
//! - tool calls/s, batch size, concurrent waits: a [`LimitExceeded`] whose `Display` is the
//!   text of an `isError` tool result naming the limit;
//! - longest wait and output bytes: clamped, and the result reports the clamp
//!   ([`ClampedWait`], [`ClampedOutput`]; how text is measured against the whole answer is
//!   [`output`]'s);
//! - worker queue share: just the number; the tmux worker enforces it.
//!
//! Every hit (refusal or clamp) is reported to the [`LimitHook`] with the limit's name and the
//! client's `sub`, for metrics.
//!
//! Per-client state (one rate limiter per limit, one wait semaphore) is created on a client's
//! first request and forgotten once it is idle enough that a fresh one would behave the same:
//! a rate limiter after `burst / rate` seconds unused (its bucket is full again), a wait
//! semaphore when no wait holds it. Tables are swept when they have doubled since the last
//! sweep, so an identity provider's thousands of users cost memory only while they are
//! active.

use std::collections::HashMap;
use std::fmt;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Json;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock, Reference};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use http::StatusCode;
use http::header::RETRY_AFTER;
use serde::Deserialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::Principal;

pub(crate) mod output;

use output::{Carried, OutputBudget};

/// A non-zero constant; used in `const` blocks, so a zero fails the build.
const fn nz(n: u32) -> NonZeroU32 {
    match NonZeroU32::new(n) {
        Some(v) => v,
        None => panic!("zero is not a valid limit"),
    }
}

/// `[limits]`: global values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Sustained HTTP requests per second.
    pub requests_per_second: NonZeroU32,
    /// HTTP request burst.
    pub request_burst: NonZeroU32,
    /// Sustained tool calls per second.
    pub tool_calls_per_second: NonZeroU32,
    /// Tool call burst.
    pub tool_call_burst: NonZeroU32,
    /// Most operations in one batch.
    pub max_batch_ops: NonZeroU32,
    /// Most waits running at once.
    pub max_concurrent_waits: NonZeroU32,
    /// Longest wait, in seconds.
    pub max_wait_seconds: NonZeroU32,
    /// Most bytes of one answer (a tool result or a resource), everything in it.
    pub max_output_bytes: NonZeroU32,
    /// Most commands queued at once on one tmux worker.
    pub worker_queue_share: NonZeroU32,
    /// Most sessions this client's waits watch at once, per tmux server: its share of
    /// `engine.max_watched_sessions`.
    pub max_watched_sessions: NonZeroU32,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            requests_per_second: const { nz(20) },
            request_burst: const { nz(40) },
            tool_calls_per_second: const { nz(10) },
            tool_call_burst: const { nz(20) },
            max_batch_ops: const { nz(50) },
            max_concurrent_waits: const { nz(4) },
            max_wait_seconds: const { nz(120) },
            max_output_bytes: const { nz(1 << 20) },
            worker_queue_share: const { nz(256) },
            max_watched_sessions: const { nz(64) },
        }
    }
}

/// `[clients.<sub>.limits]`: per-client overrides; unset keys take the global value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitOverrides {
    /// See [`LimitsConfig::requests_per_second`].
    pub requests_per_second: Option<NonZeroU32>,
    /// See [`LimitsConfig::request_burst`].
    pub request_burst: Option<NonZeroU32>,
    /// See [`LimitsConfig::tool_calls_per_second`].
    pub tool_calls_per_second: Option<NonZeroU32>,
    /// See [`LimitsConfig::tool_call_burst`].
    pub tool_call_burst: Option<NonZeroU32>,
    /// See [`LimitsConfig::max_batch_ops`].
    pub max_batch_ops: Option<NonZeroU32>,
    /// See [`LimitsConfig::max_concurrent_waits`].
    pub max_concurrent_waits: Option<NonZeroU32>,
    /// See [`LimitsConfig::max_wait_seconds`].
    pub max_wait_seconds: Option<NonZeroU32>,
    /// See [`LimitsConfig::max_output_bytes`].
    pub max_output_bytes: Option<NonZeroU32>,
    /// See [`LimitsConfig::worker_queue_share`].
    pub worker_queue_share: Option<NonZeroU32>,
    /// See [`LimitsConfig::max_watched_sessions`].
    pub max_watched_sessions: Option<NonZeroU32>,
}

impl LimitsConfig {
    /// These limits with a client's overrides applied.
    pub fn with_overrides(&self, o: &LimitOverrides) -> Self {
        Self {
            requests_per_second: o.requests_per_second.unwrap_or(self.requests_per_second),
            request_burst: o.request_burst.unwrap_or(self.request_burst),
            tool_calls_per_second: o
                .tool_calls_per_second
                .unwrap_or(self.tool_calls_per_second),
            tool_call_burst: o.tool_call_burst.unwrap_or(self.tool_call_burst),
            max_batch_ops: o.max_batch_ops.unwrap_or(self.max_batch_ops),
            max_concurrent_waits: o.max_concurrent_waits.unwrap_or(self.max_concurrent_waits),
            max_wait_seconds: o.max_wait_seconds.unwrap_or(self.max_wait_seconds),
            max_output_bytes: o.max_output_bytes.unwrap_or(self.max_output_bytes),
            worker_queue_share: o.worker_queue_share.unwrap_or(self.worker_queue_share),
            max_watched_sessions: o.max_watched_sessions.unwrap_or(self.max_watched_sessions),
        }
    }
}

/// The limits, by the name of their (rate or cap) config key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    /// HTTP requests per second.
    Requests,
    /// Tool calls per second.
    ToolCalls,
    /// Operations per batch.
    BatchSize,
    /// Waits at once.
    ConcurrentWaits,
    /// Wait duration (clamped).
    WaitTime,
    /// Output bytes per result (clamped).
    OutputBytes,
    /// Commands queued on one worker (enforced by the worker).
    WorkerQueue,
}

impl Limit {
    /// Every limit, for pre-registering metric labels.
    pub const ALL: [Self; 7] = [
        Self::Requests,
        Self::ToolCalls,
        Self::BatchSize,
        Self::ConcurrentWaits,
        Self::WaitTime,
        Self::OutputBytes,
        Self::WorkerQueue,
    ];

    /// Stable name (the config key).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Requests => "requests_per_second",
            Self::ToolCalls => "tool_calls_per_second",
            Self::BatchSize => "max_batch_ops",
            Self::ConcurrentWaits => "max_concurrent_waits",
            Self::WaitTime => "max_wait_seconds",
            Self::OutputBytes => "max_output_bytes",
            Self::WorkerQueue => "worker_queue_share",
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused request or call. `Display` is the text for the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct LimitExceeded {
    /// Which limit.
    pub limit: Limit,
    /// The configured value for this client.
    pub allowed: u64,
    /// What was asked for, where that is a number (batch size).
    pub requested: Option<u64>,
    /// When to try again, for rate limits.
    pub retry_after: Option<Duration>,
}

impl LimitExceeded {
    /// `retry_after` rounded up to whole seconds (at least 1), for `Retry-After`.
    pub fn retry_after_secs(&self) -> Option<u64> {
        self.retry_after.map(|d| {
            let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
            secs.max(1)
        })
    }

    /// `retry_after` rounded up to whole milliseconds (at least 1), for tool results.
    pub fn retry_after_ms(&self) -> Option<u64> {
        self.retry_after.map(|d| {
            let ms = d.as_millis() + u128::from(d.subsec_nanos() % 1_000_000 > 0);
            u64::try_from(ms).unwrap_or(u64::MAX).max(1)
        })
    }
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.limit.as_str();
        match self.limit {
            Limit::Requests | Limit::ToolCalls => write!(
                f,
                "rate limit `{name}` exceeded ({} per second for this client); retry in {} ms",
                self.allowed,
                self.retry_after_ms().unwrap_or(1000)
            ),
            Limit::BatchSize => write!(
                f,
                "limit `{name}` exceeded: the batch has {} operations, at most {} are allowed; split it",
                self.requested.unwrap_or(0),
                self.allowed
            ),
            Limit::ConcurrentWaits => write!(
                f,
                "limit `{name}` reached: {} waits are already running for this client; let one finish first",
                self.allowed
            ),
            Limit::WaitTime | Limit::OutputBytes | Limit::WorkerQueue => write!(
                f,
                "limit `{name}` exceeded (at most {} for this client)",
                self.allowed
            ),
        }
    }
}

/// A wait duration after clamping to `max_wait_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClampedWait {
    /// The duration to actually wait (report it as `effective_timeout`).
    pub effective: Duration,
    /// Whether the request was longer than allowed.
    pub clamped: bool,
}

/// Text after clamping to `max_output_bytes`: the tail is kept (on a character boundary).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClampedOutput<'a> {
    /// The kept text.
    pub text: &'a str,
    /// Bytes dropped from the front (0 when nothing was cut).
    pub dropped_bytes: usize,
}

/// A running wait's slot; the slot frees when this is dropped.
#[derive(Debug)]
pub struct WaitPermit {
    _permit: OwnedSemaphorePermit,
}

/// Called on every limit hit with the limit and the client's `sub`.
pub type LimitHook = Arc<dyn Fn(Limit, &str) + Send + Sync>;

type DirectLimiter<C> =
    RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// Per-client entries, swept of idle ones whenever the table has doubled since the last sweep.
struct ClientTable<V> {
    entries: HashMap<String, V>,
    sweep_at: usize,
}

/// The table size below which no sweep runs.
const SWEEP_MIN: usize = 256;

impl<V> Default for ClientTable<V> {
    fn default() -> Self {
        Self {
            entries: HashMap::new(),
            sweep_at: SWEEP_MIN,
        }
    }
}

impl<V> ClientTable<V> {
    /// The entry of `sub`, made by `make` when missing; before a new entry goes in, entries
    /// for which `idle` holds are dropped if the table has grown enough (amortised O(1)).
    fn entry(
        &mut self,
        sub: &str,
        make: impl FnOnce() -> V,
        idle: impl Fn(&str, &V) -> bool,
    ) -> &mut V {
        if !self.entries.contains_key(sub) && self.entries.len() >= self.sweep_at {
            self.entries.retain(|sub, value| !idle(sub, value));
            self.sweep_at = (self.entries.len() * 2).max(SWEEP_MIN);
        }
        self.entries.entry(sub.to_owned()).or_insert_with(make)
    }
}

/// Which rate and burst of a client's limits a rate limiter enforces.
type RateOf = fn(&LimitsConfig) -> (NonZeroU32, NonZeroU32);

/// A client's rate limiter and when it was last used.
struct RateEntry<C: Clock> {
    limiter: Arc<DirectLimiter<C>>,
    used: C::Instant,
}

/// All limits for all clients.
pub struct Limits<C: Clock + Clone = DefaultClock> {
    global: LimitsConfig,
    clients: HashMap<String, LimitsConfig>,
    clock: C,
    requests: Mutex<ClientTable<RateEntry<C>>>,
    tool_calls: Mutex<ClientTable<RateEntry<C>>>,
    waits: Mutex<ClientTable<Arc<Semaphore>>>,
    hook: Option<LimitHook>,
}

impl<C: Clock + Clone> fmt::Debug for Limits<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limits")
            .field("global", &self.global)
            .field("clients", &self.clients)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each critical section is a single map lookup/insert: a panic inside cannot leave the
    // map half-updated, so a poisoned lock is still sound to use.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Limits<DefaultClock> {
    /// Limits on the real clock: global values plus `(sub, overrides)` pairs.
    pub fn new<'a, K: AsRef<str>>(
        global: &LimitsConfig,
        clients: impl IntoIterator<Item = (K, &'a LimitOverrides)>,
    ) -> Self {
        Self::with_clock(global, clients, DefaultClock::default())
    }
}

impl<C: Clock + Clone> Limits<C> {
    /// Limits on a given clock (tests use governor's `FakeRelativeClock`).
    pub fn with_clock<'a, K: AsRef<str>>(
        global: &LimitsConfig,
        clients: impl IntoIterator<Item = (K, &'a LimitOverrides)>,
        clock: C,
    ) -> Self {
        Self {
            global: *global,
            clients: clients
                .into_iter()
                .map(|(sub, o)| (sub.as_ref().to_owned(), global.with_overrides(o)))
                .collect(),
            clock,
            requests: Mutex::new(ClientTable::default()),
            tool_calls: Mutex::new(ClientTable::default()),
            waits: Mutex::new(ClientTable::default()),
            hook: None,
        }
    }

    /// Reports every limit hit to `hook`.
    pub fn with_hook(mut self, hook: LimitHook) -> Self {
        self.hook = Some(hook);
        self
    }

    /// The effective limits for `sub`.
    pub fn for_client(&self, sub: &str) -> &LimitsConfig {
        self.clients.get(sub).unwrap_or(&self.global)
    }

    fn hit(&self, limit: Limit, sub: &str) {
        tracing::debug!(limit = limit.as_str(), sub, "limit hit");
        if let Some(hook) = &self.hook {
            hook(limit, sub);
        }
    }

    /// `sub`'s limiter in `table` (made on first use), marked used now. An entry unused for
    /// `burst / rate` seconds has its bucket full again, like a new one: the sweep drops it.
    fn limiter(
        &self,
        table: &Mutex<ClientTable<RateEntry<C>>>,
        sub: &str,
        rate_of: RateOf,
    ) -> Arc<DirectLimiter<C>> {
        let now = self.clock.now();
        let refill = |sub: &str| {
            let (rate, burst) = rate_of(self.for_client(sub));
            Duration::from_secs_f64(f64::from(burst.get()) / f64::from(rate.get()))
        };
        let (rate, burst) = rate_of(self.for_client(sub));
        let mut table = lock(table);
        let entry = table.entry(
            sub,
            || RateEntry {
                limiter: Arc::new(RateLimiter::direct_with_clock(
                    Quota::per_second(rate).allow_burst(burst),
                    self.clock.clone(),
                )),
                used: now,
            },
            |sub, entry| Duration::from(now.duration_since(entry.used)) >= refill(sub),
        );
        entry.used = now;
        Arc::clone(&entry.limiter)
    }

    fn check_rate(
        &self,
        limit: Limit,
        table: &Mutex<ClientTable<RateEntry<C>>>,
        sub: &str,
        rate_of: RateOf,
    ) -> Result<(), LimitExceeded> {
        let limiter = self.limiter(table, sub, rate_of);
        let (rate, _) = rate_of(self.for_client(sub));
        match limiter.check() {
            Ok(()) => Ok(()),
            Err(not_until) => {
                self.hit(limit, sub);
                Err(LimitExceeded {
                    limit,
                    allowed: u64::from(rate.get()),
                    requested: None,
                    retry_after: Some(not_until.wait_time_from(self.clock.now())),
                })
            }
        }
    }

    /// Counts one HTTP request against `requests_per_second`.
    pub fn check_request(&self, sub: &str) -> Result<(), LimitExceeded> {
        self.check_rate(Limit::Requests, &self.requests, sub, |cfg| {
            (cfg.requests_per_second, cfg.request_burst)
        })
    }

    /// Counts one tool call against `tool_calls_per_second`.
    pub fn check_tool_call(&self, sub: &str) -> Result<(), LimitExceeded> {
        self.check_rate(Limit::ToolCalls, &self.tool_calls, sub, |cfg| {
            (cfg.tool_calls_per_second, cfg.tool_call_burst)
        })
    }

    /// How many clients have rate or wait state kept (the sweeps bound it by the active ones).
    pub fn tracked_clients(&self) -> usize {
        lock(&self.requests)
            .entries
            .len()
            .max(lock(&self.tool_calls).entries.len())
            .max(lock(&self.waits).entries.len())
    }

    /// Refuses a batch of more than `max_batch_ops` operations.
    pub fn check_batch_size(&self, sub: &str, ops: usize) -> Result<(), LimitExceeded> {
        let allowed = self.for_client(sub).max_batch_ops.get();
        let ops = u64::try_from(ops).unwrap_or(u64::MAX);
        if ops <= u64::from(allowed) {
            return Ok(());
        }
        self.hit(Limit::BatchSize, sub);
        Err(LimitExceeded {
            limit: Limit::BatchSize,
            allowed: u64::from(allowed),
            requested: Some(ops),
            retry_after: None,
        })
    }

    /// Takes one of the client's `max_concurrent_waits` slots without waiting for one.
    pub fn acquire_wait(&self, sub: &str) -> Result<WaitPermit, LimitExceeded> {
        let allowed = self.for_client(sub).max_concurrent_waits.get();
        let semaphore = {
            let mut table = lock(&self.waits);
            // A semaphore no wait holds is as good as a new one.
            let free = |sub: &str, semaphore: &Arc<Semaphore>| {
                semaphore.available_permits()
                    == self.for_client(sub).max_concurrent_waits.get() as usize
            };
            Arc::clone(table.entry(sub, || Arc::new(Semaphore::new(allowed as usize)), free))
        };
        match semaphore.try_acquire_owned() {
            Ok(permit) => Ok(WaitPermit { _permit: permit }),
            Err(_) => {
                self.hit(Limit::ConcurrentWaits, sub);
                Err(LimitExceeded {
                    limit: Limit::ConcurrentWaits,
                    allowed: u64::from(allowed),
                    requested: None,
                    retry_after: None,
                })
            }
        }
    }

    /// Waits running now, across all clients (for metrics).
    pub fn active_waits(&self) -> usize {
        lock(&self.waits)
            .entries
            .iter()
            .map(|(sub, semaphore)| {
                let allowed = self.for_client(sub).max_concurrent_waits.get() as usize;
                allowed.saturating_sub(semaphore.available_permits())
            })
            .sum()
    }

    /// The client's `max_wait_seconds`.
    pub fn max_wait(&self, sub: &str) -> Duration {
        Duration::from_secs(u64::from(self.for_client(sub).max_wait_seconds.get()))
    }

    /// Clamps a requested wait to `max_wait_seconds`.
    pub fn clamp_wait(&self, sub: &str, requested: Duration) -> ClampedWait {
        let max = self.max_wait(sub);
        if requested <= max {
            return ClampedWait {
                effective: requested,
                clamped: false,
            };
        }
        self.hit(Limit::WaitTime, sub);
        ClampedWait {
            effective: max,
            clamped: true,
        }
    }

    /// The client's `max_output_bytes`, for engines that cap output before building it.
    pub fn max_output_bytes(&self, sub: &str) -> usize {
        self.for_client(sub).max_output_bytes.get() as usize
    }

    /// Keeps the tail of `text` that fits what is left of the call's `budget`.
    pub fn clamp_output<'a>(
        &self,
        sub: &str,
        text: &'a str,
        budget: &OutputBudget,
        carried: Carried,
    ) -> ClampedOutput<'a> {
        let (text, dropped_bytes) = budget.take_tail(text, self.max_output_bytes(sub), carried);
        if dropped_bytes > 0 {
            self.hit(Limit::OutputBytes, sub);
        }
        ClampedOutput {
            text,
            dropped_bytes,
        }
    }

    /// Reports an answer refused for being larger than `max_output_bytes`.
    pub fn output_refused(&self, sub: &str) {
        self.hit(Limit::OutputBytes, sub);
    }

    /// How many commands `sub` may have queued at once on one tmux worker.
    pub fn worker_queue_share(&self, sub: &str) -> usize {
        self.for_client(sub).worker_queue_share.get() as usize
    }

    /// `max_watched_sessions` of `sub`.
    pub fn max_watched_sessions(&self, sub: &str) -> usize {
        self.for_client(sub).max_watched_sessions.get() as usize
    }

    /// Reports a `worker_queue_share` refusal made by a worker (for metrics).
    pub fn report_worker_queue_full(&self, sub: &str) {
        self.hit(Limit::WorkerQueue, sub);
    }
}

/// The 429 answer for a refused request.
pub fn too_many_requests(exceeded: &LimitExceeded) -> Response {
    let retry = exceeded.retry_after_secs().unwrap_or(1);
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(RETRY_AFTER, retry.to_string())],
        Json(serde_json::json!({
            "error": "rate_limited",
            "limit": exceeded.limit.as_str(),
            "retry_after_seconds": retry,
            "message": exceeded.to_string(),
        })),
    )
        .into_response()
}

/// Put in a request's extensions (by the JSON-RPC body check, which runs first) when it is a
/// `tools/call`: a refused one is then answered as that call's result, which reaches the model,
/// rather than with an HTTP status most SDKs turn into an opaque transport error.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallRequest {
    /// The JSON-RPC id to answer.
    pub id: serde_json::Value,
    /// The protocol version the call speaks (its answer's shape depends on it).
    pub version: rmcp::model::ProtocolVersion,
}

/// The answer to a `tools/call` refused by the request rate: its JSON-RPC result, `isError`,
/// with the text a tool's own errors have (`error (busy): …`, see `mcp::error`) naming the
/// limit and when to retry.
pub fn refused_tool_call(exceeded: &LimitExceeded, call: &ToolCallRequest) -> Response {
    let retry_ms = exceeded.retry_after_ms().unwrap_or(1000);
    let text = format!(
        "error (busy): {exceeded}\nsuggestion: retry after {retry_ms} ms (retry_after_ms: \
         {retry_ms}); send fewer requests, and batch operations into one call where a batch \
         tool exists"
    );
    crate::http::answer::tool_result(&call.id, text, &call.version)
}

/// axum middleware: `from_fn_with_state(Arc<Limits>, limit_requests)`, inside (after)
/// [`crate::auth::require_bearer`] and the JSON-RPC body check: a refused `tools/call` gets
/// [`refused_tool_call`], any other request 429 ([`too_many_requests`]); a DELETE (a client
/// ending its session) is neither counted nor refused.
pub async fn limit_requests<C>(
    State(limits): State<Arc<Limits<C>>>,
    req: Request,
    next: Next,
) -> Response
where
    C: Clock + Clone + Send + Sync + 'static,
{
    let Some(principal) = Principal::from_extensions(req.extensions()) else {
        tracing::error!(
            "request limiting runs without an authenticated principal; check layer order"
        );
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    // Ending a session is never refused: a client refused its DELETE would leave the session
    // behind, counted against its cap, exactly when it is trying to go away.
    if req.method() == http::Method::DELETE {
        return next.run(req).await;
    }
    match limits.check_request(&principal.sub) {
        Ok(()) => next.run(req).await,
        Err(exceeded) => match req.extensions().get::<ToolCallRequest>() {
            Some(call) => refused_tool_call(&exceeded, call),
            None => too_many_requests(&exceeded),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::routing::post;
    use governor::clock::FakeRelativeClock;
    use std::collections::BTreeMap;
    use tower::ServiceExt;

    fn config(text: &str) -> LimitsConfig {
        toml::from_str(text).unwrap()
    }

    type Hits = Arc<Mutex<Vec<(Limit, String)>>>;

    fn counting_hook() -> (LimitHook, Hits) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        (
            Arc::new(move |limit, sub: &str| sink.lock().unwrap().push((limit, sub.to_owned()))),
            seen,
        )
    }

    fn fake(
        global: &LimitsConfig,
        clients: &BTreeMap<String, LimitOverrides>,
    ) -> (Limits<FakeRelativeClock>, FakeRelativeClock) {
        let clock = FakeRelativeClock::default();
        (Limits::with_clock(global, clients, clock.clone()), clock)
    }

    #[test]
    fn config_parses_with_defaults_and_refuses_zero_and_unknown_keys() {
        let cfg = config("tool_calls_per_second = 3");
        assert_eq!(cfg.tool_calls_per_second.get(), 3);
        assert_eq!(cfg.max_batch_ops.get(), 50);
        let err = toml::from_str::<LimitsConfig>("max_batch_ops = 0").unwrap_err();
        assert!(err.to_string().contains("nonzero"), "{err}");
        assert!(toml::from_str::<LimitsConfig>("max_batch = 5").is_err());
        assert!(toml::from_str::<LimitOverrides>("max_batch = 5").is_err());
    }

    #[test]
    fn idle_clients_are_forgotten_without_changing_what_they_may_do() {
        let global = config("requests_per_second = 2\nrequest_burst = 4");
        let (limits, clock) = fake(&global, &BTreeMap::new());
        for i in 0..1000 {
            assert_eq!(limits.check_request(&format!("user-{i}")), Ok(()));
        }
        // Not yet: their buckets are not full again, forgetting them would refill them.
        assert!(limits.tracked_clients() >= 1000);
        // Two seconds later every bucket is full again (4 cells at 2 per second): idle
        // clients go at the next sweep.
        clock.advance(Duration::from_secs(2));
        for i in 0..600 {
            assert_eq!(limits.check_request(&format!("late-{i}")), Ok(()));
        }
        assert!(
            limits.tracked_clients() < 1000,
            "{}",
            limits.tracked_clients()
        );
        let permit = limits.acquire_wait("waiter").unwrap();
        for i in 0..2000 {
            let _ = limits.acquire_wait(&format!("w-{i}")).unwrap();
        }
        // The waiter's semaphore is held, so it is kept: its limit still counts the wait.
        assert_eq!(limits.active_waits(), 1);
        drop(permit);
    }

    #[test]
    fn request_rate_allows_exactly_the_burst_then_reports_retry_after() {
        let global = config("requests_per_second = 2\nrequest_burst = 5");
        let (limits, clock) = fake(&global, &BTreeMap::new());
        let (hook, seen) = counting_hook();
        let limits = limits.with_hook(hook);
        for i in 0..5 {
            assert_eq!(limits.check_request("alice"), Ok(()), "request {i}");
        }
        let err = limits.check_request("alice").unwrap_err();
        assert_eq!(err.limit, Limit::Requests);
        assert_eq!(err.retry_after, Some(Duration::from_millis(500)));
        assert_eq!(err.retry_after_secs(), Some(1));
        // Another client has its own budget.
        assert_eq!(limits.check_request("bob"), Ok(()));
        // One cell comes back every 500 ms.
        clock.advance(Duration::from_millis(499));
        assert!(limits.check_request("alice").is_err());
        clock.advance(Duration::from_millis(1));
        assert_eq!(limits.check_request("alice"), Ok(()));
        assert!(limits.check_request("alice").is_err());
        assert_eq!(
            seen.lock().unwrap().as_slice(),
            vec![(Limit::Requests, "alice".to_owned()); 3].as_slice()
        );
    }

    #[test]
    fn tool_call_rate_uses_per_client_overrides() {
        let global = config("tool_calls_per_second = 1\ntool_call_burst = 3");
        let mut clients = BTreeMap::new();
        clients.insert(
            "slow".to_owned(),
            toml::from_str::<LimitOverrides>("tool_call_burst = 1").unwrap(),
        );
        let (limits, clock) = fake(&global, &clients);
        assert_eq!(limits.check_tool_call("slow"), Ok(()));
        let err = limits.check_tool_call("slow").unwrap_err();
        assert_eq!(err.limit, Limit::ToolCalls);
        assert_eq!(err.retry_after, Some(Duration::from_secs(1)));
        assert_eq!(
            err.to_string(),
            "rate limit `tool_calls_per_second` exceeded (1 per second for this client); retry in 1000 ms"
        );
        for _ in 0..3 {
            assert_eq!(limits.check_tool_call("fast"), Ok(()));
        }
        assert!(limits.check_tool_call("fast").is_err());
        clock.advance(Duration::from_secs(1));
        assert_eq!(limits.check_tool_call("slow"), Ok(()));
        // Requests and tool calls are separate budgets.
        assert_eq!(limits.check_request("slow"), Ok(()));
    }

    #[test]
    fn batch_size_cap() {
        let mut clients = BTreeMap::new();
        clients.insert(
            "small".to_owned(),
            toml::from_str::<LimitOverrides>("max_batch_ops = 2").unwrap(),
        );
        let (hook, seen) = counting_hook();
        let limits = Limits::new(&LimitsConfig::default(), &clients).with_hook(hook);
        assert_eq!(limits.check_batch_size("small", 2), Ok(()));
        let err = limits.check_batch_size("small", 3).unwrap_err();
        assert_eq!(
            (err.limit, err.allowed, err.requested),
            (Limit::BatchSize, 2, Some(3))
        );
        assert!(err.to_string().contains("at most 2"), "{err}");
        assert_eq!(limits.check_batch_size("other", 50), Ok(()));
        assert!(limits.check_batch_size("other", 51).is_err());
        assert_eq!(seen.lock().unwrap().len(), 2);
    }

    #[test]
    fn active_waits_count_held_permits_across_clients() {
        let global = config("max_concurrent_waits = 3");
        let limits = Limits::new(&global, &BTreeMap::<String, LimitOverrides>::new());
        assert_eq!(limits.active_waits(), 0);
        let a = limits.acquire_wait("alice").unwrap();
        let _b = limits.acquire_wait("alice").unwrap();
        let _c = limits.acquire_wait("bob").unwrap();
        assert_eq!(limits.active_waits(), 3);
        drop(a);
        assert_eq!(limits.active_waits(), 2);
    }

    #[test]
    fn concurrent_waits_are_permits_released_on_drop() {
        let global = config("max_concurrent_waits = 2");
        let (hook, seen) = counting_hook();
        let limits =
            Limits::new(&global, &BTreeMap::<String, LimitOverrides>::new()).with_hook(hook);
        let first = limits.acquire_wait("alice").unwrap();
        let _second = limits.acquire_wait("alice").unwrap();
        let err = limits.acquire_wait("alice").unwrap_err();
        assert_eq!(err.limit, Limit::ConcurrentWaits);
        assert!(limits.acquire_wait("bob").is_ok());
        drop(first);
        assert!(limits.acquire_wait("alice").is_ok());
        assert_eq!(
            seen.lock().unwrap().as_slice(),
            &[(Limit::ConcurrentWaits, "alice".to_owned())]
        );
    }

    #[test]
    fn waits_are_clamped_and_reported() {
        let global = config("max_wait_seconds = 30");
        let (hook, seen) = counting_hook();
        let limits =
            Limits::new(&global, &BTreeMap::<String, LimitOverrides>::new()).with_hook(hook);
        assert_eq!(
            limits.clamp_wait("a", Duration::from_secs(10)),
            ClampedWait {
                effective: Duration::from_secs(10),
                clamped: false
            }
        );
        assert_eq!(
            limits.clamp_wait("a", Duration::from_secs(30)),
            ClampedWait {
                effective: Duration::from_secs(30),
                clamped: false
            }
        );
        assert_eq!(
            limits.clamp_wait("a", Duration::from_secs(31)),
            ClampedWait {
                effective: Duration::from_secs(30),
                clamped: true
            }
        );
        assert_eq!(
            seen.lock().unwrap().as_slice(),
            &[(Limit::WaitTime, "a".to_owned())]
        );
    }

    #[test]
    fn output_keeps_the_tail_that_fits_the_calls_budget() {
        let global = config(&format!("max_output_bytes = {}", output::RESERVE + 8));
        let (hook, seen) = counting_hook();
        let limits =
            Limits::new(&global, &BTreeMap::<String, LimitOverrides>::new()).with_hook(hook);
        let budget = OutputBudget::default();
        let clamp = |text| limits.clamp_output("a", text, &budget, Carried::InResource);
        assert_eq!(
            clamp("abcd"),
            ClampedOutput {
                text: "abcd",
                dropped_bytes: 0
            }
        );
        assert_eq!(seen.lock().unwrap().len(), 0);
        // Four bytes are left for the rest of the call; "é" is two and is not split.
        assert_eq!(
            clamp("xxéab"),
            ClampedOutput {
                text: "éab",
                dropped_bytes: 2
            }
        );
        assert_eq!(
            clamp("z"),
            ClampedOutput {
                text: "",
                dropped_bytes: 1
            }
        );
        assert_eq!(seen.lock().unwrap().len(), 2);
    }

    #[test]
    fn worker_queue_share_is_per_client() {
        let mut clients = BTreeMap::new();
        clients.insert(
            "bulk".to_owned(),
            toml::from_str::<LimitOverrides>("worker_queue_share = 8").unwrap(),
        );
        let (hook, seen) = counting_hook();
        let limits = Limits::new(&LimitsConfig::default(), &clients).with_hook(hook);
        assert_eq!(limits.worker_queue_share("bulk"), 8);
        assert_eq!(limits.worker_queue_share("other"), 256);
        limits.report_worker_queue_full("bulk");
        assert_eq!(
            seen.lock().unwrap().as_slice(),
            &[(Limit::WorkerQueue, "bulk".to_owned())]
        );
    }

    #[test]
    fn limit_names_are_distinct() {
        let names: std::collections::BTreeSet<_> = Limit::ALL.iter().map(|l| l.as_str()).collect();
        assert_eq!(names.len(), Limit::ALL.len());
    }

    #[tokio::test]
    async fn http_layer_answers_429_with_retry_after() {
        let global = config("requests_per_second = 1\nrequest_burst = 3");
        let (limits, clock) = fake(&global, &BTreeMap::new());
        let limits = Arc::new(limits);
        let app = Router::new().route("/mcp", post(|| async { "ok" })).layer(
            axum::middleware::from_fn_with_state(Arc::clone(&limits), limit_requests),
        );
        let send = |sub: Option<&str>| {
            let mut req = Request::post("/mcp").body(Body::empty()).unwrap();
            if let Some(sub) = sub {
                req.extensions_mut()
                    .insert(Principal::new(sub, ["mux:read"]));
            }
            app.clone().oneshot(req)
        };
        for _ in 0..3 {
            assert_eq!(send(Some("alice")).await.unwrap().status(), StatusCode::OK);
        }
        let refused = send(Some("alice")).await.unwrap();
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.headers()[RETRY_AFTER], "1");
        let body = axum::body::to_bytes(refused.into_body(), 4096)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["limit"], "requests_per_second");
        assert_eq!(body["retry_after_seconds"], 1);
        clock.advance(Duration::from_secs(1));
        assert_eq!(send(Some("alice")).await.unwrap().status(), StatusCode::OK);
        assert_eq!(
            send(None).await.unwrap().status(),
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }
}
