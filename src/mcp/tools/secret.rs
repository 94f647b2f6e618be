//! `request_secret_input`: a one-time link a human opens to type a secret (a password, a token)
//! into a pane, so that the model never sees it (see [`crate::secret_entry`]).
//!
//! Where the client supports URL-mode elicitation, the link goes to the user that way, and the
//! call waits until the secret is typed (or the user declines, or the wait ends): the model sees
//! neither the secret nor the link. Otherwise the answer carries the link for the agent to show
//! its human, and the call returns at once.

use std::time::Duration;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::ElicitationAction;
use rmcp::service::{ElicitationError, ServiceError};
use rmcp::{Peer, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::mcp::McpServer;
use crate::mcp::access::TmuxAccess;
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mcp::links;
use crate::mux::tmux::panes::TmuxPanes;
use crate::secret_entry::{DeliverError, NewRequest, PaneDestination};

/// How long a link works unless asked otherwise, and at most.
const DEFAULT_TTL: Duration = Duration::from_secs(300);
const MAX_TTL_SECS: u64 = 3600;
/// Longest label, in characters.
const MAX_LABEL_CHARS: usize = 200;

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestSecretInput {
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

#[derive(Debug, Serialize, JsonSchema)]
pub struct RequestSecretOutput {
    pub server: String,
    pub pane_id: String,
    pub request_id: String,
    /// link (show url to your human), typed or declined.
    pub status: &'static str,
    /// One-time link for a human.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub expires_in_seconds: u64,
}

#[tool_router(router = secret_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "request_secret_input",
        description = "Ask a human to type a secret (password, token) into a pane via a \
            one-time link; you never see it.\n\n\
            Call it once the program asking (sudo, ssh, read -s) waits: a pane that would show \
            it is refused.",
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
        peer: Peer<RoleServer>,
        cancel: CancellationToken,
        Parameters(input): Parameters<RequestSecretInput>,
    ) -> Result<Json<RequestSecretOutput>, ToolError> {
        let label = check_label(&input.label)?;
        let ttl = links::within_token(ttl_of(input.expires_in_seconds)?, &call.principal)?;
        let base = links::base(&self.state().config.http, &parts)?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let pane = tmux.pane_of(&tmux.target(&input.target).await?).await?;
        let destination = PaneDestination {
            panes: TmuxPanes::new(tmux.server.clone(), tmux.caller.clone()),
            pane,
            enter: input.enter,
            local: tmux.workspace.is_none(),
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
        let url = format!("{base}/secret?t={}", link.token);
        let mut answer = RequestSecretOutput {
            server,
            pane_id: pane.to_string(),
            request_id: link.id.clone(),
            status: "link",
            url: None,
            expires_in_seconds: ttl.as_secs(),
        };
        let offered = offer(&peer, &label, &url, &link.id, ttl).await;
        match offered {
            Offered::NotSupported => answer.url = Some(url),
            Offered::Declined => {
                self.state().secrets.revoke(&link.id);
                answer.status = "declined";
            }
            Offered::Lost(error) => {
                self.state().secrets.revoke(&link.id);
                return Err(error);
            }
            Offered::Accepted => {
                let typed = wait_for_typing(&tmux, ttl, delivered, &cancel);
                let typed = self.state().until_shutdown(typed).await;
                if typed.is_err() {
                    self.state().secrets.revoke(&link.id);
                }
                typed?;
                answer.status = "typed";
            }
        }
        Ok(Json(answer))
    }
}

/// What came of offering the link by URL elicitation.
enum Offered {
    /// The client cannot (no URL mode, or it or the protocol refused the request as such):
    /// the agent gets the link.
    NotSupported,
    Accepted,
    Declined,
    /// The offer was made and then lost (the human did not answer in time, the client went
    /// away): the link is withdrawn rather than handed to the model the client kept it from.
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
    let message = format!("The agent asks you to type a secret: {label}");
    match peer
        .elicit_url_with_timeout(message, url, id, Some(ttl))
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
    tmux: &TmuxAccess<'_>,
    ttl: Duration,
    delivered: tokio::sync::oneshot::Receiver<()>,
    cancel: &CancellationToken,
) -> Result<(), ToolError> {
    let budget = tmux.budget().wait(None, ttl)?;
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
