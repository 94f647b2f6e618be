//! Tool errors a model can act on.
//!
//! A tool returns `Result<Json<T>, ToolError>`. A [`ToolError`] becomes an MCP tool result with
//! `isError: true`: one text block the model reads, `error (<kind>): <message>` and a one-line
//! suggestion of what to do instead. The kind also travels as data to the call's end record
//! and metric ([`noting_kinds`]), never read back out of the text.
//!
//! Not for protocol failures: a request that cannot be routed at all (unknown tool, broken
//! JSON-RPC) stays a JSON-RPC error (`rmcp::ErrorData`), which clients usually hide from the
//! model.

use std::cell::Cell;
use std::future::Future;

use futures::FutureExt;
use muxgate_mux::error::{ErrorKind, Unsupported};
use rmcp::ErrorData;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use schemars::JsonSchema;
use serde::Serialize;

/// What went wrong, for programs; the message and suggestion are for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    /// The arguments do not fit the tool's input schema or its rules.
    InvalidArguments,
    /// A named server, session, window, pane or buffer does not exist.
    NotFound,
    /// The caller may not do this (tier, target ACL, self-protection).
    Forbidden,
    /// The target is in a state that does not allow the operation.
    Conflict,
    /// A limit or queue is full; retrying later can succeed.
    Busy,
    /// The operation did not finish within its time limit.
    Timeout,
    /// The multiplexer cannot be reached (or, with `audit.fail_closed`, the audit log cannot be
    /// written).
    Unavailable,
    /// The backend the call reaches does not offer this act or option at all (another backend
    /// may): no other value and no retry makes it work there.
    Unsupported,
    /// The client cancelled the call (a wait stopped early; the client does not read this).
    Cancelled,
    /// A fault inside the gateway.
    Internal,
}

impl ToolErrorKind {
    /// Its name in the text the model reads (`error (<kind>): …`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArguments => "invalid_arguments",
            Self::NotFound => "not_found",
            Self::Forbidden => "forbidden",
            Self::Conflict => "conflict",
            Self::Busy => "busy",
            Self::Timeout => "timeout",
            Self::Unavailable => "unavailable",
            Self::Unsupported => "unsupported",
            Self::Cancelled => "cancelled",
            Self::Internal => "internal",
        }
    }
}

/// A backend's kind of failure, as the model reads it: the one place the backends' kinds meet
/// the gateway's.
impl From<ErrorKind> for ToolErrorKind {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::InvalidInput => Self::InvalidArguments,
            ErrorKind::NotFound => Self::NotFound,
            ErrorKind::Conflict => Self::Conflict,
            ErrorKind::Busy => Self::Busy,
            ErrorKind::Timeout => Self::Timeout,
            ErrorKind::Unavailable => Self::Unavailable,
            ErrorKind::Unsupported => Self::Unsupported,
            ErrorKind::Internal => Self::Internal,
        }
    }
}

/// An error a tool reports to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema, thiserror::Error)]
#[error("{kind:?}: {message}")]
pub struct ToolError {
    /// What kind of failure, and so what the model can do about it.
    pub kind: ToolErrorKind,
    /// What went wrong, naming the offending argument or target.
    pub message: String,
    /// One line: what to call or change instead.
    pub suggestion: String,
}

impl ToolError {
    /// An error of `kind`.
    pub fn new(
        kind: ToolErrorKind,
        message: impl Into<String>,
        suggestion: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            message: message.into(),
            suggestion: suggestion.into(),
        }
    }

    /// Bad input: the message names the argument.
    pub fn invalid_arguments(message: impl Into<String>, suggestion: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::InvalidArguments, message, suggestion)
    }

    /// A target that does not exist, or that the caller may not see (they read the same).
    pub fn not_found(message: impl Into<String>, suggestion: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::NotFound, message, suggestion)
    }

    /// A backend's refusal of an act or option it does not offer; `suggestion` says what to do
    /// instead.
    pub fn unsupported(refusal: Unsupported, suggestion: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::Unsupported, refusal.to_string(), suggestion)
    }

    /// The MCP result: `isError` and the text `error (<kind>): <message>\nsuggestion: <…>`.
    ///
    /// No `structuredContent`: clients validate it against the tool's `outputSchema`, which
    /// describes success (the TypeScript SDK turns a mismatch into a JSON-RPC error and the
    /// model never sees the message). The kind stays machine-readable in the text's prefix,
    /// and is noted for the call's end record ([`noting_kinds`]).
    pub fn into_result(self) -> CallToolResult {
        // Outside a call's scope (an answer written before rmcp) there is nothing to note.
        let _ = LAST_KIND.try_with(|last| last.set(Some(self.kind)));
        let text = format!(
            "{ERROR_PREFIX}{}): {}\nsuggestion: {}",
            self.kind.as_str(),
            self.message,
            self.suggestion
        );
        CallToolResult::error(vec![ContentBlock::text(text)])
    }
}

/// How the text of every [`ToolError`] result begins, before its kind.
const ERROR_PREFIX: &str = "error (";

tokio::task_local! {
    /// The kind of the last [`ToolError`] this call turned into a result.
    static LAST_KIND: Cell<Option<ToolErrorKind>>;
}

/// Runs `call`, noting the kind of every [`ToolError`] it turns into a result; gives its
/// output and the last kind noted (the kind of an `isError` answer, which is built last).
///
/// A combinator, not an `async` block: a future moved into one is stored twice (as what it
/// captured and as what it awaits), which made a waiting call's state three times the tool's.
pub(crate) fn noting_kinds<F: Future>(
    call: F,
) -> impl Future<Output = (F::Output, Option<ToolErrorKind>)> {
    // The closure runs within the scope's poll, where the call's notes are still readable.
    LAST_KIND.scope(
        Cell::new(None),
        call.map(|output| (output, LAST_KIND.with(Cell::get))),
    )
}

impl IntoCallToolResult for ToolError {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        Ok(self.into_result().into())
    }
}

/// The prefix rmcp puts on argument deserialization failures (it turns them into `isError`
/// results itself, as plain text).
const RMCP_ARGUMENT_ERROR_PREFIX: &str = "failed to deserialize parameters: ";

/// Rewrites rmcp's plain-text argument errors into the [`ToolError`] shape, so every tool error
/// a client sees has the same structure. Other results pass through unchanged.
pub(crate) fn normalize_argument_error(response: CallToolResponse) -> CallToolResponse {
    let CallToolResponse::Complete(result) = &response else {
        return response;
    };
    if result.is_error != Some(true) {
        return response;
    }
    let detail = result
        .content
        .first()
        .and_then(|block| block.as_text())
        .and_then(|text| text.text.strip_prefix(RMCP_ARGUMENT_ERROR_PREFIX));
    match detail {
        Some(detail) => ToolError::invalid_arguments(
            format!("invalid arguments: {detail}"),
            "call tools/list and pass exactly the fields of this tool's inputSchema",
        )
        .into_result()
        .into(),
        None => response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(result: &CallToolResult) -> &str {
        &result.content[0].as_text().expect("text block").text
    }

    #[test]
    fn a_tool_error_is_an_is_error_result_with_text_only() {
        let result = ToolError::not_found(
            "no tmux server named `x`",
            "call list_servers for valid names",
        )
        .into_result();
        assert_eq!(result.is_error, Some(true));
        assert_eq!(
            text_of(&result),
            "error (not_found): no tmux server named `x`\nsuggestion: call list_servers for valid names"
        );
        assert_eq!(result.structured_content, None);
    }

    #[tokio::test]
    async fn a_call_notes_the_kind_of_its_last_error_as_data() {
        let (result, kind) = noting_kinds(async {
            let _inner = ToolError::not_found("a", "b").into_result();
            tokio::task::yield_now().await;
            ToolError::new(ToolErrorKind::Busy, "c", "d").into_result()
        })
        .await;
        assert_eq!(kind, Some(ToolErrorKind::Busy));
        assert_eq!(result.is_error, Some(true));
        // Text that merely looks like an error notes nothing.
        let (_, kind) = noting_kinds(async {
            CallToolResult::error(vec![ContentBlock::text("error (not_found): x")])
        })
        .await;
        assert_eq!(kind, None);
        // Outside a call, turning an error into a result notes nothing and does not fail.
        let _ = ToolError::not_found("a", "b").into_result();
    }

    #[test]
    fn rmcp_argument_errors_are_rewritten() {
        let rmcp_result = CallToolResult::error(vec![ContentBlock::text(
            "failed to deserialize parameters: unknown field `bogus`, there are no fields",
        )]);
        let CallToolResponse::Complete(result) = normalize_argument_error(rmcp_result.into())
        else {
            panic!("expected a complete result");
        };
        assert_eq!(result.is_error, Some(true));
        assert_eq!(
            text_of(&result),
            "error (invalid_arguments): invalid arguments: unknown field `bogus`, there are no \
             fields\nsuggestion: call tools/list and pass exactly the fields of this tool's \
             inputSchema"
        );
    }

    #[test]
    fn other_results_pass_through() {
        let plain_error = CallToolResult::error(vec![ContentBlock::text("something else")]);
        let success = CallToolResult::success(vec![ContentBlock::text(
            "failed to deserialize parameters: but not an error",
        )]);
        for result in [plain_error, success] {
            let CallToolResponse::Complete(out) = normalize_argument_error(result.clone().into())
            else {
                panic!("expected a complete result");
            };
            assert_eq!(out, result);
        }
    }
}
