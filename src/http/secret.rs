//! `/secret`: the page behind a secret entry link, where a human types a secret into an
//! agent's pane (see [`crate::secret_entry`]).
//!
//! - `GET /secret?t=<token>` → the form, naming the program that would receive the secret now
//!   (the link is not spent by looking at it: link previews and reloads must not burn it);
//! - `POST /secret` with the form's `t` and `secret` → typed into the pane, and the link is
//!   spent. A secret that would show on the pane's screen (its terminal echoes, or a shell waits
//!   at its prompt) is not typed and the link stays good: the page says why, and the human can
//!   try again once the program that asks for it runs.
//!
//! Behind the Host/Origin guard (a browser on another site cannot post here) but not bearer
//! authentication: the link's token is the credential, and the human has no gateway token. The
//! token travels in the query string only on the first `GET`, which the request span never logs
//! (it logs the path alone); the form posts it in the body. Pages are HTML with the headers of
//! [`page::HEADERS`]; the secret is in no log line, answer, metric or audit record (its length
//! is, in the audit record).

use std::sync::Arc;

use axum::Form;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

use crate::audit::{AuditLog, SecretRecord};
use crate::secret_entry::page::{self, FormFacts, Receiving};
use crate::secret_entry::{DeliverError, OpenRequest, PaneDestination, Receiver, SecretDesk};

/// What the secret routes reach.
#[derive(Clone)]
pub struct SecretApi {
    pub desk: SecretDesk<PaneDestination>,
    pub audit: Arc<AuditLog>,
}

/// `GET /secret`'s query.
#[derive(Deserialize)]
pub(crate) struct LinkQuery {
    #[serde(default)]
    t: Option<String>,
}

/// The form as posted. No `Debug`: nothing may print the secret.
#[derive(Deserialize)]
pub(crate) struct Submitted {
    t: String,
    secret: String,
}

/// `GET /secret?t=…`.
pub(crate) async fn show(State(api): State<SecretApi>, Query(query): Query<LinkQuery>) -> Response {
    let Some(token) = query.t.filter(|t| !t.is_empty()) else {
        return refusal(
            StatusCode::BAD_REQUEST,
            "No link token",
            "This address needs the token of the link you were given: open the whole link.",
        );
    };
    let Some(request) = api.desk.find(&token) else {
        return invalid_link();
    };
    // The page names who would receive the secret, and says so when typing would be refused now.
    match request.destination.check().await {
        Ok(receiver) => respond(
            StatusCode::OK,
            page::form(&facts(&request, receiving(&receiver)), &token, None),
        ),
        Err(DeliverError::Unsafe(why)) => respond(
            StatusCode::OK,
            page::form(
                &facts(&request, Receiving::Unsaid),
                &token,
                Some(&format!(
                    "Right now {why}. Type the secret once the program that asks for it waits."
                )),
            ),
        ),
        Err(error) => failed(&api, &token, &request, &error),
    }
}

/// `POST /secret`.
pub(crate) async fn submit(State(api): State<SecretApi>, Form(form): Form<Submitted>) -> Response {
    let Some(request) = api.desk.find(&form.t) else {
        return invalid_link();
    };
    let again = |status, problem: &str| {
        respond(
            status,
            page::form(&facts(&request, Receiving::Unsaid), &form.t, Some(problem)),
        )
    };
    if let Err(error) = page::check_secret(&form.secret) {
        return again(StatusCode::BAD_REQUEST, &format!("Not typed: {error}."));
    }
    let destination = &request.destination;
    match destination.check().await {
        Ok(_) => {}
        Err(DeliverError::Unsafe(why)) => {
            record(&api, &request, "refused", None);
            return again(
                StatusCode::CONFLICT,
                &format!(
                    "Not typed: {why}. Ask the agent to start the program that asks for it \
                     (sudo, ssh, a password prompt), then type it here again."
                ),
            );
        }
        Err(error) => return failed(&api, &form.t, &request, &error),
    }
    // Spent now: of two posts racing with the same link, one types.
    let Some((request, waiter)) = api.desk.take(&form.t) else {
        return invalid_link();
    };
    match destination.type_in(&form.secret).await {
        Ok(()) => {
            record(&api, &request, "typed", Some(form.secret.len()));
            if let Some(waiter) = waiter {
                // The call that offered the link may have stopped waiting; the secret is typed.
                let _ = waiter.send(());
            }
            respond(StatusCode::OK, page::delivered())
        }
        Err(error) => {
            record(&api, &request, "refused", None);
            refusal(
                StatusCode::BAD_GATEWAY,
                "Not typed",
                &format!("{error}. The link is spent: ask the agent for a new one."),
            )
        }
    }
}

/// The pane is gone or tmux failed before anything was typed: the link is spent, since it can
/// never work again (a gone pane) or the human should not retry blindly.
fn failed(
    api: &SecretApi,
    token: &str,
    request: &OpenRequest<PaneDestination>,
    error: &DeliverError,
) -> Response {
    api.desk.take(token);
    record(api, request, "refused", None);
    let status = match error {
        DeliverError::Gone(_) => StatusCode::GONE,
        _ => StatusCode::BAD_GATEWAY,
    };
    refusal(
        status,
        "Not typed",
        &format!("{error}. The link is spent: ask the agent for a new one."),
    )
}

fn receiving(receiver: &Receiver) -> Receiving<'_> {
    receiver
        .program
        .as_deref()
        .map_or(Receiving::Unseen, Receiving::Program)
}

fn facts<'a>(request: &'a OpenRequest<PaneDestination>, receiver: Receiving<'a>) -> FormFacts<'a> {
    FormFacts {
        label: &request.label,
        client: &request.client,
        place: &request.place,
        expires_at: request.expires_at,
        enter: request.destination.enter,
        receiver,
    }
}

/// Writes the audit record of what became of `request`.
/// Records an attempt's outcome: counted for metrics, and written to the audit log.
fn record(
    api: &SecretApi,
    request: &OpenRequest<PaneDestination>,
    event: &'static str,
    bytes: Option<usize>,
) {
    match event {
        "typed" => api.desk.count_typed(),
        _ => api.desk.count_refused(),
    }
    api.audit.secret(SecretRecord {
        request: &request.id,
        sub: &request.client,
        server: request.destination.panes.server_name(),
        pane: &request.destination.pane.to_string(),
        event,
        bytes,
    });
}

fn invalid_link() -> Response {
    refusal(
        StatusCode::NOT_FOUND,
        "Link not valid",
        "This link was used, has expired or never existed. Ask the agent for a new one.",
    )
}

fn refusal(status: StatusCode, title: &str, why: &str) -> Response {
    respond(status, page::refused(title, why))
}

fn respond(status: StatusCode, html: String) -> Response {
    let mut response = (status, Html(html)).into_response();
    let headers = response.headers_mut();
    for (name, value) in page::HEADERS {
        headers.insert(name, http::HeaderValue::from_static(value));
    }
    response
}
