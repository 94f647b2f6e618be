//! `request_secret_input`: a one-time link a human opens to type a secret (a password, a token)
//! into a pane, so that the model never sees it (see [`crate::secret_entry`]).
//!
//! The link never goes into the tool's result. It goes to the user through the client, where
//! the client can show a link (URL-mode elicitation):
//!
//! - on 2025-11-25 sessions as an `elicitation/create` request, and the call waits until the
//!   secret is typed, the user declines, or the wait ends;
//! - on 2026-07-28 (stateless) as an `InputRequiredResult` whose `inputRequests` hold the URL
//!   elicitation and whose `requestState` names the request; the client's retry carries the
//!   user's answer, and that round waits like the 2025 call.
//!
//! Otherwise (the client cannot show a link, refuses the request, or answers without the
//! user's response) the request is held for the gateway's approvers: the result says so and
//! how they take it (`muxgate approvals secrets`, `/approvals/secrets`), and carries the
//! request's id and status for the agent to follow up on, never the link.

use std::time::Duration;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::tool::{InputResponses, RequestState, schema_for_output};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CallToolResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, InputRequest, InputRequests, InputRequiredResult, ProtocolVersion,
};
use rmcp::service::{ElicitationError, RequestContext, ServiceError};
use rmcp::{Peer, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::mcp::McpServer;
use crate::mcp::budget::CallBudget;
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mcp::links;
use crate::secret_entry::{DeliverError, NewRequest, PaneDestination};
use muxgate_tmux::typed::panes::TmuxPanes;

/// How long a link works unless asked otherwise, and at most.
const DEFAULT_TTL: Duration = Duration::from_secs(300);
const MAX_TTL_SECS: u64 = 3600;
/// Longest label, in characters.
const MAX_LABEL_CHARS: usize = 200;
/// The key of the link's elicitation in an `InputRequiredResult`'s `inputRequests`.
const INPUT_KEY: &str = "secret_link";

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RequestSecretInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane `%N`; a window or session: its active pane.
    pub target: String,
    /// What the human is asked for, shown on the page.
    pub label: String,
    /// Press Enter after it.
    #[serde(default = "yes")]
    pub enter: bool,
    /// Link lifetime (default 300, max 3600).
    #[serde(default)]
    pub expires_in_seconds: Option<u64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct RequestSecretOutput {
    pub server: String,
    pub pane_id: String,
    pub request_id: String,
    /// typed, declined, or pending (a human takes it at the gateway; see next_step).
    pub status: &'static str,
    pub expires_in_seconds: u64,
    /// What happens next, for a pending request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
}

#[tool_router(router = secret_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "request_secret_input",
        description = "Ask a human to type a secret (password, token) into a pane via a \
            one-time link; you never see the link or the secret.\n\n\
            Call it once the program asking (sudo, ssh, read -s) waits: a pane that would show \
            it is refused.",
        output_schema = schema_for_output::<RequestSecretOutput>(),
        annotations(
            title = "Request secret input",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    pub(crate) async fn request_secret_input(
        &self,
        Extension(call): Extension<CallContext>,
        Extension(parts): Extension<http::request::Parts>,
        context: RequestContext<RoleServer>,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        Parameters(input): Parameters<RequestSecretInput>,
    ) -> Result<CallToolResponse, ToolError> {
        if let Some(id) = state {
            let answer = self.resume(&call, &context.ct, &id, responses).await?;
            return complete(answer);
        }
        let opened = self.open_request(&call, &parts, &input).await?;
        let rounds = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        if !rounds {
            let answer = self.offer_by_elicitation(&call, &context, opened).await?;
            return complete(answer);
        }
        let url_mode = context
            .client_capabilities()
            .and_then(|capabilities| capabilities.elicitation)
            .is_some_and(|elicitation| elicitation.url.is_some());
        if !url_mode {
            return complete(self.hold_for_approvers(opened.answer));
        }
        let id = opened.answer.request_id.clone();
        let ttl = Duration::from_secs(opened.answer.expires_in_seconds);
        let request = input_request(&opened.label, &opened.url, &id);
        self.state().secrets.park(&id, ttl, opened.delivered);
        let requests = InputRequests::from([(INPUT_KEY.to_owned(), request)]);
        Ok(InputRequiredResult::new(Some(requests), Some(id)).into())
    }
}

/// A request just opened: the answer so far, and what offering its link takes.
struct Opened {
    answer: RequestSecretOutput,
    label: String,
    url: String,
    delivered: oneshot::Receiver<()>,
}

impl McpServer {
    /// Checks the request, binds the pane's program and opens the request on the desk.
    async fn open_request(
        &self,
        call: &CallContext,
        parts: &http::request::Parts,
        input: &RequestSecretInput,
    ) -> Result<Opened, ToolError> {
        let label = check_label(&input.label)?;
        let ttl = links::within_token(ttl_of(input.expires_in_seconds)?, &call.principal)?;
        let base = links::base(&self.state().config.http, parts)?;
        let tmux = self.tmux_access(call, input.server.as_deref()).await?;
        let pane = tmux.pane_of(&tmux.target(&input.target).await?).await?;
        let destination = PaneDestination {
            panes: TmuxPanes::new(tmux.server.clone(), tmux.caller.clone()),
            pane,
            enter: input.enter,
            host: tmux.host(),
            bound: None,
        };
        let (destination, _) = destination.bind().await.map_err(refused)?;
        let server = tmux.server_name().to_owned();
        let (link, delivered) = self
            .state()
            .secrets
            .open(NewRequest {
                client: call.sub().to_owned(),
                label: label.clone(),
                place: format!("{server}:{pane}"),
                ttl,
                destination,
            })
            .map_err(|e| {
                ToolError::new(
                    ToolErrorKind::Busy,
                    e.to_string(),
                    "let an open request be used or expire first",
                )
            })?;
        self.state().audit.secret(crate::audit::SecretRecord {
            request: &link.id,
            sub: call.sub(),
            server: &server,
            pane: &pane.to_string(),
            event: "requested",
            bytes: None,
        });
        self.state().notifier.send(
            crate::notify::Event::secret_requested(
                &link.id,
                call.sub(),
                &label,
                &format!("{server}:{pane}"),
            )
            .in_workspace(&call.principal.workspace),
        );
        Ok(Opened {
            answer: RequestSecretOutput {
                server,
                pane_id: pane.to_string(),
                request_id: link.id.clone(),
                status: "pending",
                expires_in_seconds: ttl.as_secs(),
                next_step: None,
            },
            label,
            url: format!("{base}/secret?t={}", link.token),
            delivered,
        })
    }

    /// 2025-11-25: offers the link by an `elicitation/create` request and waits for the typing.
    async fn offer_by_elicitation(
        &self,
        call: &CallContext,
        context: &RequestContext<RoleServer>,
        opened: Opened,
    ) -> Result<RequestSecretOutput, ToolError> {
        let Opened {
            mut answer,
            label,
            url,
            delivered,
        } = opened;
        let id = answer.request_id.clone();
        let ttl = Duration::from_secs(answer.expires_in_seconds);
        match offer(&context.peer, &label, &url, &id, ttl).await {
            Offered::NotSupported => return Ok(self.hold_for_approvers(answer)),
            Offered::Declined => {
                self.state().secrets.revoke(&id);
                answer.status = "declined";
            }
            Offered::Lost(error) => {
                self.state().secrets.revoke(&id);
                return Err(error);
            }
            Offered::Accepted => {
                self.wait_until_typed(call, &id, ttl, delivered, &context.ct)
                    .await?;
                answer.status = "typed";
            }
        }
        Ok(answer)
    }

    /// 2026-07-28: the client's retry, carrying the user's answer to the link's elicitation.
    async fn resume(
        &self,
        call: &CallContext,
        cancel: &CancellationToken,
        id: &str,
        responses: Option<rmcp::model::InputResponses>,
    ) -> Result<RequestSecretOutput, ToolError> {
        let Some(unparked) = self.state().secrets.unpark(id, call.sub()) else {
            return Err(ToolError::new(
                ToolErrorKind::NotFound,
                format!("no secret request {id} of yours waits for an answer"),
                "call request_secret_input again",
            ));
        };
        let (delivered, left) = (unparked.delivered, unparked.left);
        let (server, pane_id) = split_place(&unparked.place);
        let mut answer = RequestSecretOutput {
            server,
            pane_id,
            request_id: id.to_owned(),
            status: "pending",
            expires_in_seconds: left.as_secs(),
            next_step: None,
        };
        let action = responses
            .and_then(|mut responses| responses.remove(INPUT_KEY))
            .and_then(|response| serde_json::from_value::<ElicitResult>(response).ok())
            .map(|result| result.action);
        match action {
            Some(ElicitationAction::Accept) => {
                self.wait_until_typed(call, id, left, delivered, cancel)
                    .await?;
                answer.status = "typed";
            }
            None => return Ok(self.hold_for_approvers(answer)),
            // Decline, cancel, and any action a later protocol adds: nothing was accepted.
            Some(_) => {
                self.state().secrets.revoke(id);
                answer.status = "declined";
            }
        }
        Ok(answer)
    }

    /// Waits for the typing; a wait that ends otherwise withdraws the link.
    async fn wait_until_typed(
        &self,
        call: &CallContext,
        id: &str,
        ttl: Duration,
        delivered: oneshot::Receiver<()>,
        cancel: &CancellationToken,
    ) -> Result<(), ToolError> {
        let budget = CallBudget::new(&self.state().limits, call);
        let typed = wait_for_typing(&budget, ttl, delivered, cancel);
        let typed = self.state().until_shutdown(typed).await;
        if typed.is_err() {
            self.state().secrets.revoke(id);
        }
        typed
    }

    /// The fallback where no client's user can take the link: the approvers can.
    fn hold_for_approvers(&self, mut answer: RequestSecretOutput) -> RequestSecretOutput {
        self.state().secrets.hand_to_approvers(&answer.request_id);
        answer.status = "pending";
        answer.next_step = Some(format!(
            "Your client cannot show the link to its user, so it was not given to you: request \
             {id} waits at the gateway for {secs} s for an approver (a human with a mux:approve \
             token), who lists it with `muxgate approvals secrets` (GET /approvals/secrets), \
             takes its link with `muxgate approvals secret-link {id}` and types the secret \
             there. Tell your human that request {id} ({pane}) waits for them; then wait for the \
             pane's program to go on (wait_for_text or wait_for_idle).",
            id = answer.request_id,
            secs = answer.expires_in_seconds,
            pane = answer.pane_id,
        ));
        answer
    }
}

/// The answer as a complete result (structured content, and its text).
fn complete(answer: RequestSecretOutput) -> Result<CallToolResponse, ToolError> {
    let value = serde_json::to_value(answer).map_err(|error| {
        ToolError::new(
            ToolErrorKind::Internal,
            format!("the answer could not be written: {error}"),
            "report this to the gateway's operator",
        )
    })?;
    Ok(CallToolResult::structured(value).into())
}

/// `server:%3` as the server and the pane (a pane id has no `:`).
fn split_place(place: &str) -> (String, String) {
    match place.rsplit_once(':') {
        Some((server, pane)) => (server.to_owned(), pane.to_owned()),
        None => (String::new(), place.to_owned()),
    }
}

/// The link as a URL-mode elicitation, for an `InputRequiredResult`.
fn input_request(label: &str, url: &str, id: &str) -> InputRequest {
    InputRequest::Elicitation(ElicitRequest::new(
        ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: message(label),
            url: url.to_owned(),
            elicitation_id: id.to_owned(),
        },
    ))
}

fn message(label: &str) -> String {
    format!("The agent asks you to type a secret: {label}")
}

/// What came of offering the link by URL elicitation.
enum Offered {
    /// The client cannot (no URL mode, or it or the protocol refused the request as such):
    /// the approvers get the request.
    NotSupported,
    Accepted,
    Declined,
    /// The offer was made and then lost (the human did not answer in time, the client went
    /// away): the link is withdrawn.
    Lost(ToolError),
}

async fn offer(
    peer: &Peer<RoleServer>,
    label: &str,
    url: &str,
    id: &str,
    ttl: Duration,
) -> Offered {
    let Ok(url) = url::Url::parse(url) else {
        return Offered::NotSupported;
    };
    match peer
        .elicit_url_with_timeout(message(label), url, id, Some(ttl))
        .await
    {
        Ok(ElicitationAction::Accept) => Offered::Accepted,
        // Decline, cancel, and any action a later protocol adds: nothing was accepted.
        Ok(_) | Err(ElicitationError::UserDeclined | ElicitationError::UserCancelled) => {
            Offered::Declined
        }
        Err(ElicitationError::CapabilityNotSupported)
        | Err(ElicitationError::Service(ServiceError::McpError(_))) => Offered::NotSupported,
        Err(ElicitationError::Service(ServiceError::Timeout { .. })) => {
            Offered::Lost(ToolError::new(
                ToolErrorKind::Timeout,
                "the human did not answer before the link expired; it is withdrawn",
                "call request_secret_input again",
            ))
        }
        Err(error) => Offered::Lost(ToolError::new(
            ToolErrorKind::Unavailable,
            format!("the client could not show the link ({error}); it is withdrawn"),
            "call request_secret_input again",
        )),
    }
}

/// Waits (a wait like any other: a slot, at most the caller's `max_wait_seconds`) until the
/// secret was typed.
async fn wait_for_typing(
    budget: &CallBudget<'_>,
    ttl: Duration,
    delivered: oneshot::Receiver<()>,
    cancel: &CancellationToken,
) -> Result<(), ToolError> {
    let budget = budget.wait(None, ttl)?;
    tokio::select! {
        typed = delivered => typed.map_err(|_| {
            ToolError::new(
                ToolErrorKind::Timeout,
                "the link expired before the secret was typed",
                "call request_secret_input again",
            )
        }),
        () = tokio::time::sleep_until(budget.deadline) => Err(ToolError::new(
            ToolErrorKind::Timeout,
            format!(
                "the secret was not typed within {:.0} s; the link is withdrawn",
                budget.effective_secs()
            ),
            "call request_secret_input again",
        )),
        () = cancel.cancelled() => Err(ToolError::new(
            ToolErrorKind::Cancelled,
            "cancelled; the link is withdrawn",
            "call request_secret_input again",
        )),
    }
}

fn check_label(label: &str) -> Result<String, ToolError> {
    let label = label.trim();
    let count = label.chars().count();
    if label.is_empty() || count > MAX_LABEL_CHARS || label.chars().any(char::is_control) {
        return Err(ToolError::invalid_arguments(
            format!("label must be 1 to {MAX_LABEL_CHARS} characters on one line (got {count})"),
            "say what the human is asked for, e.g. \"sudo password on build-1\"",
        ));
    }
    Ok(label.to_owned())
}

fn ttl_of(requested: Option<u64>) -> Result<Duration, ToolError> {
    match requested {
        None => Ok(DEFAULT_TTL),
        Some(secs @ 1..=MAX_TTL_SECS) => Ok(Duration::from_secs(secs)),
        Some(secs) => Err(ToolError::invalid_arguments(
            format!("expires_in_seconds must be 1 to {MAX_TTL_SECS} (got {secs})"),
            "omit it for 300 s",
        )),
    }
}

/// A pane the secret cannot go to now.
fn refused(error: DeliverError) -> ToolError {
    match error {
        DeliverError::Unsafe(why) => ToolError::new(
            ToolErrorKind::Conflict,
            format!("{why}; no link was made"),
            "start the program that asks for the secret (sudo, ssh, read -s), wait for its \
             prompt, then call again",
        ),
        DeliverError::Gone(pane) => super::watch::missing_pane(pane),
        DeliverError::Failed(error) => ToolError::new(
            ToolErrorKind::Unavailable,
            error.to_string(),
            "retry shortly",
        ),
    }
}
