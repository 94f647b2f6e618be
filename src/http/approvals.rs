//! `/approvals`: where a human with the `mux:approve` scope sees the calls held for approval
//! and decides them.
//!
//! - `GET /approvals` → `{"pending": [PendingApproval…]}`, longest-waiting first;
//! - `POST /approvals/{id}` with `{"decision": "approve"}` or `{"decision": "deny", "reason":
//!   "…"}` → `{"id", "decision": "approved"|"denied", "by"}`.
//!
//! Behind the same Host/Origin guard and bearer authentication as `/mcp`. Refusals are JSON
//! `{"error", "message"}`: 403 without the scope or for one's own call, 404 for an id that
//! waits no more (decided, timed out, cancelled), 400 for a body that is not a decision.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::approvals::{ApprovalDesk, DecideError, Decision};
use crate::auth::{Principal, SCOPE_APPROVE};

/// Longest reason an approver may give (it reaches the agent, not the audit log).
const MAX_REASON_CHARS: usize = 500;

/// `GET /approvals`.
pub async fn list(State(desk): State<ApprovalDesk>, principal: Extension<Principal>) -> Response {
    if let Some(refused) = not_an_approver(&principal) {
        return refused;
    }
    Json(json!({ "pending": desk.pending() })).into_response()
}

/// `POST /approvals/{id}`.
pub async fn decide(
    State(desk): State<ApprovalDesk>,
    principal: Extension<Principal>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    if let Some(refused) = not_an_approver(&principal) {
        return refused;
    }
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
    match desk.decide(&id, decision) {
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

/// The refusal for a principal without the approver's scope.
fn not_an_approver(principal: &Principal) -> Option<Response> {
    (!principal.scopes.contains(SCOPE_APPROVE)).then(|| {
        refusal(
            StatusCode::FORBIDDEN,
            "forbidden",
            &format!("deciding approvals needs scope `{SCOPE_APPROVE}`, which this token lacks"),
        )
    })
}

fn refusal(status: StatusCode, error: &str, message: &str) -> Response {
    (status, Json(json!({ "error": error, "message": message }))).into_response()
}
