//! Holding a call for a human: after its scope and rate checks, a call the `[approvals]`
//! policy matches waits on the [`crate::approvals::ApprovalDesk`] until an approver decides, its deadline passes
//! (a denial) or its client cancels it.
//!
//! The wait is a wait like any other: it takes one of the caller's wait slots and lasts at
//! most `approvals.timeout_secs`, clamped to the caller's `max_wait_seconds`. A client that
//! sent a `progressToken` learns at once that the call is held and under which id, then hears
//! every `http.progress_interval_secs`. The audit log gets an `approval` record (rule,
//! decision, approver, time waited) between the call's start and end; an approved call's
//! result says who approved it in `_meta["muxgate/approval"]`.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResponse, MetaObject, ProgressToken};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::McpState;
use super::budget::CallBudget;
use super::call::CallContext;
use super::error::{ToolError, ToolErrorKind};
use super::heartbeat::Heartbeat;
use crate::approvals::{CallFacts, HeldCall, Ticket, Verdict};
use crate::audit::OpenCall;
use crate::auth::Tier;

/// The `_meta` key of an approved call's result.
pub(crate) const META_KEY: &str = "muxgate/approval";

/// The request a held call belongs to: where progress goes (when the client asked for it)
/// and the token its cancellation (or its client hanging up) cancels.
pub(crate) struct HeldRequest {
    pub token: Option<ProgressToken>,
    pub peer: Peer<RoleServer>,
    pub cancelled: CancellationToken,
}

/// Largest arguments, as JSON text, a call may be held with: an approver must see all of a
/// call, so a larger one is refused rather than shown cut.
const MAX_HELD_ARGS_BYTES: usize = 64 * 1024;

/// A call an approver let through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Approved {
    pub id: String,
    pub rule: String,
    pub by: String,
    pub waited_ms: u64,
}

impl Approved {
    /// Tells the caller, in the result's `_meta`, who approved the call and under which rule.
    pub(crate) fn annotate(&self, response: &mut CallToolResponse) {
        let CallToolResponse::Complete(result) = response else {
            return;
        };
        let meta = result
            .meta
            .get_or_insert_with(|| MetaObject(Default::default()));
        meta.0.insert(
            META_KEY.to_owned(),
            json!({
                "id": self.id,
                "decision": "approved",
                "rule": self.rule,
                "by": self.by,
                "waited_ms": self.waited_ms,
            }),
        );
    }
}

/// Holds the call if a rule says so. `Ok(None)`: no rule holds it; `Ok(Some)`: approved, run
/// it; `Err`: denied, timed out, refused a wait slot or cut short by shutdown — answer with it.
pub(crate) async fn hold_if_needed(
    state: &McpState,
    caller: &CallContext,
    request: &CallToolRequestParams,
    tier: Tier,
    open: &OpenCall,
    held: HeldRequest,
) -> Result<Option<Approved>, ToolError> {
    // Most gateways hold nothing: no copy of the arguments for them.
    if state.approval_policy.is_empty() {
        return Ok(None);
    }
    let args = request.arguments.clone().map_or(Value::Null, Value::Object);
    let facts = CallFacts {
        tool: &request.name,
        tier,
        sub: caller.sub(),
        args: &args,
    };
    let Some(rule) = state.approval_policy.rule_for(facts).map(str::to_owned) else {
        return Ok(None);
    };
    let shown = args.to_string().len();
    if shown > MAX_HELD_ARGS_BYTES {
        return Err(ToolError::invalid_arguments(
            format!(
                "this call needs a human's approval (rule {rule}), and its arguments \
                 ({shown} bytes) are more than an approver can be shown \
                 ({MAX_HELD_ARGS_BYTES}); nothing was run"
            ),
            "send less in one call",
        ));
    }
    let timeout = Duration::from_secs(state.config.approvals.timeout_secs);
    let budget = CallBudget::new(&state.limits, caller).wait(None, timeout)?;
    let ticket = put_on_desk(
        state,
        caller,
        &request.name,
        &rule,
        args,
        open,
        budget.deadline,
    );
    let id = ticket.id().to_owned();
    let _shown = state
        .held_targets
        .register(&id, caller, args_target(request));
    let heartbeat = Heartbeat::for_approval(
        format!("held for approval {id} (rule {rule}): waiting for a human approver to decide"),
        held.token,
        held.peer,
        state.config.http.progress_interval(),
        budget.effective,
    );
    let cancelled = held.cancelled;
    let waiting = async {
        tokio::select! {
            verdict = ticket.verdict() => Ok(verdict),
            // Dropping the ticket takes the call off the desk: it can no longer be approved.
            () = cancelled.cancelled() => Err(super::tools::watch::cancelled()),
        }
    };
    let verdict = match heartbeat {
        Some(heartbeat) => state.until_shutdown(heartbeat.around(waiting)).await,
        None => state.until_shutdown(waiting).await,
    };
    let waited_ms = u64::try_from(budget.started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let verdict = verdict.inspect_err(|_| open.approval(&rule, "cancelled", None, waited_ms))?;
    open.approval(&rule, verdict.decision(), verdict.approver(), waited_ms);
    answer(verdict, id, rule, waited_ms).map(Some)
}

/// The server and pane a call's arguments name at their top level, if they name a pane.
fn args_target(request: &CallToolRequestParams) -> Option<(Option<String>, String)> {
    let args = request.arguments.as_ref()?;
    let target = args.get("target")?.as_str()?.to_owned();
    let server = args
        .get("server")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Some((server, target))
}

/// The pane each held call names, and whose call it is, while it waits: the inbox shows that
/// pane's screen to the approver.
#[derive(Default)]
pub(crate) struct HeldTargets(Mutex<HashMap<String, HeldTarget>>);

/// The pane a held call names.
#[derive(Clone)]
pub(crate) struct HeldTarget {
    /// The caller, as whom the pane is read (the approver sees what the caller may).
    pub(crate) call: CallContext,
    pub(crate) server: Option<String>,
    pub(crate) target: String,
}

/// A held call's entry in [`HeldTargets`], removed when its wait ends.
pub(crate) struct Registered<'a> {
    targets: &'a HeldTargets,
    id: String,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.targets.lock().remove(&self.id);
    }
}

impl HeldTargets {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, HeldTarget>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn register<'a>(
        &'a self,
        id: &str,
        caller: &CallContext,
        named: Option<(Option<String>, String)>,
    ) -> Option<Registered<'a>> {
        let (server, target) = named?;
        self.lock().insert(
            id.to_owned(),
            HeldTarget {
                call: caller.clone(),
                server,
                target,
            },
        );
        Some(Registered {
            targets: self,
            id: id.to_owned(),
        })
    }

    /// The pane held call `id` names, while it waits.
    pub(crate) fn get(&self, id: &str) -> Option<HeldTarget> {
        self.lock().get(id).cloned()
    }
}

/// Puts the call (`tool` with `args`, held by `rule`) on the approval desk until `deadline`,
/// and tells `[notify]`'s targets; its ticket.
fn put_on_desk(
    state: &McpState,
    caller: &CallContext,
    tool: &str,
    rule: &str,
    args: Value,
    open: &OpenCall,
    deadline: tokio::time::Instant,
) -> Ticket {
    let server = args
        .get("server")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let ticket = state.approvals.hold(HeldCall {
        sub: caller.sub().to_owned(),
        tool: tool.to_owned(),
        server: server.clone(),
        rule: rule.to_owned(),
        args,
        audit_call: open.id().to_owned(),
        deadline,
    });
    let id = ticket.id();
    tracing::info!(id, rule, sub = caller.sub(), tool, "call held for approval");
    state.notifier.send(
        crate::notify::Event::approval_pending(id, caller.sub(), tool, server.as_deref(), rule)
            .in_workspace(&caller.principal.workspace),
    );
    ticket
}

/// What the caller gets for a verdict: leave to run, or the error it answers with.
fn answer(
    verdict: Verdict,
    id: String,
    rule: String,
    waited_ms: u64,
) -> Result<Approved, ToolError> {
    match verdict {
        Verdict::Approved { by } => {
            tracing::info!(id, rule, by, "held call approved");
            Ok(Approved {
                id,
                rule,
                by,
                waited_ms,
            })
        }
        Verdict::Denied { by, reason } => {
            tracing::info!(id, rule, by, "held call denied");
            let reason = reason.map_or_else(String::new, |r| format!(": {r}"));
            Err(ToolError::new(
                ToolErrorKind::Forbidden,
                format!(
                    "{by} denied this call (approval {id}, rule {rule}){reason}; nothing was run"
                ),
                "do not retry the same call; change the plan or ask the human why",
            ))
        }
        Verdict::TimedOut { after } => Err(ToolError::new(
            ToolErrorKind::Timeout,
            format!(
                "no approver decided within {} s (approval {id}, rule {rule}); the call counts \
                 as denied and nothing was run",
                after.as_secs()
            ),
            "ask the human to watch for approvals (muxgate approvals list), then call again",
        )),
    }
}
