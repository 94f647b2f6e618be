//! `/approvals`: where a human with the `mux:approve` scope sees the calls held for approval
//! and decides them.
//!
//! - `GET /approvals` → `{"pending": [PendingApproval…]}`, longest-waiting first;
//! - `POST /approvals/{id}` with `{"decision": "approve"}` or `{"decision": "deny", "reason":
//!   "…"}` → `{"id", "decision": "approved"|"denied", "by"}`;
//! - `GET /approvals/secrets` → `{"pending": [HeldRequest…]}`: the secret entry requests whose
//!   link reached no client's user (what each is for, never its link), soonest to expire first;
//! - `POST /approvals/secrets/{id}` → `{"id", "url", "expires_in_seconds"}`: a fresh one-time
//!   link to that request, for the approver to open and type the secret at (the link is built
//!   like the agent's would be: `http.public_url`, else this request's scheme and `Host`).
//!
//! - `POST /approvals/link` → `{"url", "expires_in_seconds"}`: a one-time link that signs the
//!   caller in to the inbox (`/inbox`, [`super::inbox`]), for a phone.
//!
//! Behind the same Host/Origin guard and bearer authentication as `/mcp`. Refusals are JSON
//! `{"error", "message"}`: 403 without the scope, with a tool scope besides, for a `sub` not
//! among `approvals.approvers` or for one's own call or secret request, 404 for an id
//! that waits no more (decided, timed out, cancelled; typed, expired), 400 for a body that is not a decision, 413
//! for one over 4 KiB.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use std::sync::Arc;

use crate::approvals::{ApprovalDesk, ApprovalPolicy, DecideError, Decision};
use crate::auth::{Principal, SCOPE_APPROVE};
use crate::config::HttpConfig;
use crate::secret_entry::{IssueError, PaneDestination, SecretDesk};

/// What the approval routes reach: the desks, the policy that says who may decide, and where
/// links point.
#[derive(Clone)]
pub struct ApprovalsApi {
    pub desk: ApprovalDesk,
    pub policy: Arc<ApprovalPolicy>,
    pub secrets: SecretDesk<PaneDestination>,
    pub http: Arc<HttpConfig>,
    pub(crate) sign_ins: Arc<crate::inbox::signin::SignIns>,
}

/// Longest reason an approver may give (it reaches the agent, not the audit log).
const MAX_REASON_CHARS: usize = 500;

/// `GET /approvals`.
pub(crate) async fn list(
    State(api): State<ApprovalsApi>,
    principal: Extension<Principal>,
) -> Response {
    if let Some(refused) = not_an_approver(&api.policy, &principal) {
        return refused;
    }
    Json(json!({ "pending": api.desk.pending() })).into_response()
}

/// `POST /approvals/{id}`.
pub(crate) async fn decide(
    State(api): State<ApprovalsApi>,
    principal: Extension<Principal>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if let Some(refused) = not_an_approver(&api.policy, &principal) {
        return refused;
    }
    // A body over the limit (413) or cut off is refused in JSON like the rest.
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            let message = format!(
                "the body could not be read whole ({}); a decision is at most {} bytes",
                rejection.body_text(),
                super::APPROVAL_BODY_LIMIT
            );
            return refusal(rejection.status(), "invalid_body", &message);
        }
    };
    let request: DecisionRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(error) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                "invalid_body",
                &format!(
                    "the body must be {{\"decision\": \"approve\"}} or {{\"decision\": \"deny\", \
                     \"reason\": \"…\"}} ({error})"
                ),
            );
        }
    };
    if request
        .reason
        .as_ref()
        .is_some_and(|r| r.chars().count() > MAX_REASON_CHARS)
    {
        return refusal(
            StatusCode::BAD_REQUEST,
            "invalid_body",
            &format!("the reason may be at most {MAX_REASON_CHARS} characters"),
        );
    }
    let approve = matches!(request.decision, Verdict::Approve);
    let decision = Decision {
        approve,
        by: principal.sub.clone(),
        reason: request.reason,
    };
    match api.desk.decide(&id, decision) {
        Ok(()) => Json(json!({
            "id": id,
            "decision": if approve { "approved" } else { "denied" },
            "by": principal.sub,
        }))
        .into_response(),
        Err(error @ DecideError::NotFound(_)) => {
            refusal(StatusCode::NOT_FOUND, "not_found", &error.to_string())
        }
        Err(error @ DecideError::OwnCall(_)) => {
            refusal(StatusCode::FORBIDDEN, "own_call", &error.to_string())
        }
    }
}

/// `GET /approvals/secrets`.
pub(crate) async fn secrets(
    State(api): State<ApprovalsApi>,
    principal: Extension<Principal>,
) -> Response {
    if let Some(refused) = not_an_approver(&api.policy, &principal) {
        return refused;
    }
    Json(json!({ "pending": api.secrets.held() })).into_response()
}

/// `POST /approvals/secrets/{id}`.
pub(crate) async fn secret_link(
    State(api): State<ApprovalsApi>,
    principal: Extension<Principal>,
    Path(id): Path<String>,
    parts: axum::http::request::Parts,
) -> Response {
    if let Some(refused) = not_an_approver(&api.policy, &principal) {
        return refused;
    }
    let base = match crate::mcp::links::base(&api.http, &parts) {
        Ok(base) => base,
        Err(error) => return unavailable(&error),
    };
    match api.secrets.issue(&id, &principal.sub) {
        Ok((link, left)) => Json(json!({
            "id": link.id,
            "url": format!("{base}/secret?t={}", link.token),
            "expires_in_seconds": left.as_secs(),
        }))
        .into_response(),
        Err(error @ IssueError::NotFound(_)) => {
            refusal(StatusCode::NOT_FOUND, "not_found", &error.to_string())
        }
        Err(error @ IssueError::OwnRequest(_)) => {
            refusal(StatusCode::FORBIDDEN, "own_request", &error.to_string())
        }
    }
}

/// `POST /approvals/link`.
pub(crate) async fn inbox_link(
    State(api): State<ApprovalsApi>,
    principal: Extension<Principal>,
    parts: axum::http::request::Parts,
) -> Response {
    if let Some(refused) = not_an_approver(&api.policy, &principal) {
        return refused;
    }
    let base = match crate::mcp::links::base(&api.http, &parts) {
        Ok(base) => base,
        Err(error) => return unavailable(&error),
    };
    // Neither the link nor the session it opens outlives the token that asked for it.
    let left = match crate::mcp::links::within_token(std::time::Duration::MAX, &principal) {
        Ok(left) => left,
        Err(error) => return unavailable(&error),
    };
    let link = api.sign_ins.issue_link(&principal.sub, Some(left));
    Json(json!({
        "url": format!("{base}/inbox/signin?t={}", link.token),
        "expires_in_seconds": link.ttl.as_secs(),
    }))
    .into_response()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionRequest {
    decision: Verdict,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Verdict {
    Approve,
    Deny,
}

/// The refusal for a principal that may not decide: its token lacks the approver's scope,
/// also grants a tool tier (an agent's token is never an approver's), or `approvals.approvers`
/// does not name it.
fn not_an_approver(policy: &ApprovalPolicy, principal: &Principal) -> Option<Response> {
    let why = if !principal.scopes.contains(SCOPE_APPROVE) {
        format!("deciding approvals needs scope `{SCOPE_APPROVE}`, which this token lacks")
    } else if let Some(tier) = principal.tier {
        format!(
            "an approver's token must grant `{SCOPE_APPROVE}` alone; this one also grants the \
             {tier} tools (`{}`), as an agent's would",
            tier.scope()
        )
    } else if !policy.may_decide(&principal.sub) {
        format!("{:?} is not among approvals.approvers", principal.sub)
    } else {
        return None;
    };
    Some(refusal(StatusCode::FORBIDDEN, "forbidden", &why))
}

/// A link that could not be made (no trusted base, an expired token), as a 503 naming why.
fn unavailable(error: &crate::mcp::error::ToolError) -> Response {
    let message = format!("{} ({})", error.message, error.suggestion);
    refusal(StatusCode::SERVICE_UNAVAILABLE, "unavailable", &message)
}

fn refusal(status: StatusCode, error: &str, message: &str) -> Response {
    (status, Json(json!({ "error": error, "message": message }))).into_response()
}
