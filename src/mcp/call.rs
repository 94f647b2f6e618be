//! What happens around every tool call, whatever the tool: who is calling, the audit record of
//! its start (which, with `audit.fail_closed`, must be written before anything runs), whether
//! their scopes allow the tool's tier, whether they are within their tool-call rate, and the
//! audit record of its end and the tool-call metric afterwards. The tools themselves only check targets (which server,
//! which session).
//!
//! Long-running tools (waits) also end when the gateway shuts down: they run their wait through
//! [`McpState::until_shutdown`], which answers with an `unavailable` error saying so. The span,
//! duration and log line of each request are [`crate::telemetry::mcp`]'s.
//!
//! Denials are `isError` results naming the missing scope or the limit (one rule for every
//! tool, documented in the README): `tools/list` already hides what a caller may not call, so a
//! denied call is a model's mistake it can read and correct, not a transport failure.

use std::future::Future;
use std::pin::Pin;

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResponse, Tool};
use rmcp::service::RequestContext;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::McpState;
use super::error::{ToolError, ToolErrorKind};
use crate::audit::{AuditError, CallStart, OpenCall, Outcome};
use crate::auth::{Principal, Tier, can_call};
use crate::limits::Limits;
use crate::limits::output::{self, OutputBudget};
use muxgate_tmux::Caller;

/// The caller of one request, as the tools see it (inserted into the request's extensions, so
/// a tool takes it with rmcp's `Extension<CallContext>` extractor).
#[derive(Debug, Clone)]
pub struct CallContext {
    /// Who calls, and what its token and the configuration grant it.
    pub principal: Principal,
    /// The MCP session, for clients of protocol versions that have sessions.
    pub mcp_session: Option<String>,
    /// What this request's answer may still hold (shared by its clones).
    pub output: OutputBudget,
}

impl CallContext {
    /// Reads the principal the HTTP auth layer put into the request.
    pub fn from_request(context: &RequestContext<RoleServer>) -> Option<Self> {
        let parts = context.extensions.get::<http::request::Parts>()?;
        let principal = Principal::from_extensions(&parts.extensions)?.clone();
        let mcp_session = parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Some(Self {
            principal,
            mcp_session,
            output: OutputBudget::default(),
        })
    }

    /// The engine's view of this caller: its fairness key and queue share.
    /// The caller as the engine knows it: its queue share, and its reply budget — four times
    /// its output budget, so that a reply the tool then trims (escapes, blank lines, the lines
    /// it keeps) is read whole, while no reply can make the gateway hold more.
    pub fn caller(&self, limits: &Limits) -> Caller {
        let sub = self.principal.sub.as_str();
        Caller::new(sub)
            .with_queue_share(limits.worker_queue_share(sub))
            .with_watch_share(limits.max_watched_sessions(sub))
            .with_reply_budget(
                limits
                    .max_output_bytes(sub)
                    .saturating_mul(REPLY_BUDGET_FACTOR),
            )
    }

    /// The caller's `sub`.
    pub fn sub(&self) -> &str {
        &self.principal.sub
    }
}

/// How many times its output budget a caller may receive from tmux in one reply.
const REPLY_BUDGET_FACTOR: usize = 4;

/// Checks a call before it runs: the tool's tier against the caller's scopes, then the
/// caller's tool-call rate. `Err` is the result to return instead of running the tool.
pub(crate) fn admit(call: &CallContext, tier: Tier, limits: &Limits) -> Result<(), Refusal> {
    if let Err(denied) = can_call(&call.principal, tier) {
        let suggestion = match denied.missing_scope() {
            Some(scope) => format!(
                "use a token that grants `{scope}`, or stay with the tools tools/list shows you"
            ),
            None => "use a tool from tools/list".to_owned(),
        };
        return Err(Refusal {
            error: ToolError::new(ToolErrorKind::Forbidden, denied.to_string(), suggestion),
            outcome: Outcome::Denied,
        });
    }
    if let Err(exceeded) = limits.check_tool_call(call.sub()) {
        let retry_ms = exceeded.retry_after_ms().unwrap_or(1000);
        return Err(Refusal {
            error: ToolError::new(
                ToolErrorKind::Busy,
                exceeded.to_string(),
                format!(
                    "retry after {retry_ms} ms (retry_after_ms: {retry_ms}); batch operations \
                     into one call where a batch tool exists"
                ),
            ),
            outcome: Outcome::Limited,
        });
    }
    Ok(())
}

/// A tool's answer, or in its place an error when the message would be larger than the
/// caller's `max_output_bytes` (its text was capped; its other fields, or many of them, made
/// it too large).
pub(crate) fn within_output_budget(
    response: CallToolResponse,
    call: &CallContext,
    limits: &Limits,
) -> CallToolResponse {
    let CallToolResponse::Complete(result) = &response else {
        return response;
    };
    let max = limits.max_output_bytes(call.sub());
    let size = output::answer_len(result);
    if size <= max {
        return response;
    }
    limits.output_refused(call.sub());
    ToolError::new(
        ToolErrorKind::Conflict,
        format!(
            "the answer would be {size} bytes, more than this client's max_output_bytes ({max})"
        ),
        "ask for less: fewer lines or objects, a smaller batch, a narrower pattern or page",
    )
    .into_result()
    .into()
}

/// Whether `principal` may see `tool` in `tools/list` (the same rule as calling it).
pub(crate) fn visible(principal: &Principal, tool: &Tool) -> bool {
    can_call(principal, super::catalog::tier::tier_of(tool)).is_ok()
}

/// Writes the start record of a call, before its scope and rate checks. `Err` is the result to
/// return instead of running it: with `audit.fail_closed`, a call whose start record cannot be
/// written does not run. `tool` is the catalog entry (unknown tools are refused before this);
/// its input schema decides which argument values the record may echo.
pub(crate) async fn begin<'a>(
    state: &'a McpState,
    call: &CallContext,
    request: &'a CallToolRequestParams,
    tool: &Tool,
) -> Result<RunningCall<'a>, ToolError> {
    let args = request.arguments.clone().map_or(Value::Null, Value::Object);
    let targets = targets_of(&args);
    let server = args.get("server").and_then(Value::as_str);
    let host = server.and_then(|server| state.hosts.host_of(server));
    // The request's span (`mcp.request`) names them too, for traces.
    let span = tracing::Span::current();
    if let Some(server) = server {
        span.record("muxgate.server", server);
    }
    if let Some(host) = host {
        span.record("muxgate.host", host);
    }
    let started = state
        .audit
        .start(CallStart {
            sub: call.sub(),
            mcp_session: call.mcp_session.as_deref(),
            tool: &request.name,
            server,
            host,
            targets: &targets,
            args: &args,
            schema: Some(&tool.input_schema),
        })
        .await;
    match started {
        Ok(audit) => Ok(RunningCall {
            state,
            tool: &request.name,
            audit,
        }),
        Err(error) => {
            state
                .metrics
                .record_tool_call(&request.name, Outcome::Error);
            Err(audit_unavailable(&error))
        }
    }
}

/// The error a call gets when `audit.fail_closed` is set and its start record cannot be
/// written.
pub(crate) fn audit_unavailable(error: &AuditError) -> ToolError {
    ToolError::new(
        ToolErrorKind::Unavailable,
        format!(
            "the audit log cannot be written ({error}); this gateway refuses calls it cannot \
             record (audit.fail_closed), so nothing was run"
        ),
        "retry later; the gateway's operator has to make the audit log writable again",
    )
}

/// A call refused before its tool ran, and how its end record and metric count it.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) error: ToolError,
    /// [`Outcome::Denied`] (a scope), [`Outcome::Limited`] (a rate), or [`Outcome::Error`] (a
    /// human or a rule said no, or a recording could not start).
    pub(crate) outcome: Outcome,
}

impl Refusal {
    /// The kind its end record names: the scope or the limit, else the error's kind.
    pub(crate) fn kind(&self) -> &'static str {
        match self.outcome {
            Outcome::Denied => "missing_scope",
            Outcome::Limited => "limited",
            _ => self.error.kind.as_str(),
        }
    }
}

impl From<ToolError> for Refusal {
    fn from(error: ToolError) -> Self {
        Self {
            error,
            outcome: Outcome::Error,
        }
    }
}

/// A tool call between its start record and its end: each way out ends it once, counting it
/// and writing its end record. Dropped before that (the client went away, or cancelled), the
/// audit log records it as cancelled.
pub(crate) struct RunningCall<'a> {
    state: &'a McpState,
    tool: &'a str,
    audit: OpenCall,
}

impl RunningCall<'_> {
    /// The call's audit record, for the records written while it runs (a hold, a recording).
    pub(crate) fn audit(&self) -> &OpenCall {
        &self.audit
    }

    /// Ends a call refused before its tool ran; gives the answer the caller gets.
    pub(crate) fn refused(self, refusal: Refusal) -> CallToolResponse {
        self.end(refusal.outcome, Some(refusal.kind()));
        refusal.error.into_result().into()
    }

    /// Ends a call its tool answered; `error` is the kind of an `isError` answer.
    pub(crate) fn answered(self, response: &CallToolResponse, error: Option<ToolErrorKind>) {
        match response {
            CallToolResponse::Complete(result) if result.is_error == Some(true) => {
                self.end(Outcome::Error, error.map(ToolErrorKind::as_str));
            }
            _ => self.end(Outcome::Ok, None),
        }
    }

    /// Ends a call that failed as a JSON-RPC error.
    pub(crate) fn failed(self) {
        self.end(Outcome::Error, None);
    }

    fn end(self, outcome: Outcome, kind: Option<&str>) {
        self.state.metrics.record_tool_call(self.tool, outcome);
        self.audit.end(outcome, kind);
    }
}

impl McpState {
    /// Runs a tool's long-running part (a wait for output, a channel, a command's end) until it
    /// ends or the gateway begins shutting down. On shutdown the wait is dropped and the tool
    /// answers with the `unavailable` error this returns; in-flight calls then finish within
    /// `http.shutdown_grace_secs`.
    ///
    /// ```ignore
    /// let outcome = self.state().until_shutdown(wait_for_match(stream, deadline)).await?;
    /// ```
    ///
    /// `work` is boxed once here: a future passed by value through an `async fn` is stored in
    /// that fn's own future too, and a waiting call holds all of it for as long as it waits.
    pub fn until_shutdown<'a, T: 'a>(
        &'a self,
        work: impl Future<Output = Result<T, ToolError>> + 'a,
    ) -> impl Future<Output = Result<T, ToolError>> + 'a {
        until_cancelled(&self.shutdown, Box::pin(work))
    }
}

/// `work`, or the shutdown error once `shutdown` is cancelled.
async fn until_cancelled<T>(
    shutdown: &CancellationToken,
    work: Pin<Box<impl Future<Output = Result<T, ToolError>>>>,
) -> Result<T, ToolError> {
    tokio::select! {
        biased;
        () = shutdown.cancelled() => Err(shutting_down()),
        result = work => result,
    }
}

/// The result of a wait cut short by shutdown.
pub(crate) fn shutting_down() -> ToolError {
    ToolError::new(
        ToolErrorKind::Unavailable,
        "muxgate is shutting down; the wait was cancelled before it finished",
        "retry once the gateway is back; the pane itself was not changed by the cancellation",
    )
}

/// The target-naming arguments of a call (`target`, `pane`, `session`, `window`, and the
/// per-operation targets of batches), for the audit record. Values are ids or names, which the
/// tools validate; they are still capped here because the record is written before that.
pub(crate) fn targets_of(args: &Value) -> Vec<String> {
    const KEYS: [&str; 5] = ["target", "pane", "session", "window", "tab"];
    let mut found = Vec::new();
    let mut collect = |object: &serde_json::Map<String, Value>| {
        for key in KEYS {
            if let Some(value) = object.get(key).and_then(Value::as_str) {
                found.push(value.chars().take(128).collect());
            }
        }
    };
    if let Some(object) = args.as_object() {
        collect(object);
    }
    if let Some(operations) = args.get("operations").and_then(Value::as_array) {
        for op in operations.iter().filter_map(Value::as_object).take(100) {
            collect(op);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn targets_come_from_known_keys_and_batch_operations() {
        let args = json!({
            "server": "default",
            "target": "%1",
            "keys": "secret",
            "operations": [{"target": "%2", "keys": "x"}, {"pane": "%3"}, "junk"],
        });
        assert_eq!(targets_of(&args), ["%1", "%2", "%3"]);
        assert!(targets_of(&json!("not an object")).is_empty());
    }

    #[tokio::test]
    async fn waits_end_with_a_clear_error_when_shutdown_begins() {
        let shutdown = CancellationToken::new();
        let quick = until_cancelled(&shutdown, Box::pin(async { Ok::<_, ToolError>(7) })).await;
        assert_eq!(quick.unwrap(), 7);
        let wait = tokio::spawn({
            let shutdown = shutdown.clone();
            async move {
                until_cancelled(
                    &shutdown,
                    Box::pin(std::future::pending::<Result<(), ToolError>>()),
                )
                .await
            }
        });
        shutdown.cancel();
        let result = tokio::time::timeout(std::time::Duration::from_secs(5), wait)
            .await
            .expect("the wait ends at once")
            .unwrap();
        let error = result.unwrap_err();
        assert_eq!(error.kind, ToolErrorKind::Unavailable);
        assert!(error.message.contains("shutting down"), "{}", error.message);
    }
}
