//! `/inbox`: the approver's page (see [`crate::inbox`]), reached from a notification's
//! one-time sign-in link, with no token to paste.
//!
//! - `GET /inbox/signin?t=…` → a page with one button (looking does not spend the link);
//! - `POST /inbox/signin` with the form's `t` → the link is spent, an HttpOnly session cookie
//!   (`SameSite=Lax`, `Secure` behind HTTPS) that expires with `inbox.session_ttl_secs`, and a
//!   redirect to the inbox;
//! - `GET /inbox` → what waits: held calls (arguments decoded, the rule's match marked, the
//!   target's screen), agents blocked on a human (screen and answer box), secret requests;
//! - `POST /inbox/decide` (`id`, `decision`, `reason`), `POST /inbox/answer` (`scope`,
//!   `agent`, `digest`, `nonce`, `text`, `then`), `POST /inbox/secret` (`id`: redirected to a
//!   fresh secret entry link), `POST /inbox/signout`; each action redirects back to the inbox
//!   with a notice (`?n=…`) naming what it did.
//!
//! Links are made for an approver by `POST /approvals/link` (bearer, see [`super::approvals`];
//! `muxgate approvals link`) and by `[notify]` targets with `inbox_for`. Every request checks
//! that the session's approver is still among `approvals.approvers`. Behind the Host/Origin
//! guard, so a page on another site can post nothing here; the session cookie is not sent
//! with another site's posts either (`SameSite=Lax`).

use std::sync::Arc;

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

use crate::approvals::{ApprovalDesk, ApprovalPolicy, DecideError, Decision};
use crate::config::HttpConfig;
use crate::inbox::page::{self, AgentCard, ApprovalCard, InboxView, Notice, SecretCard};
use crate::inbox::signin::SignIns;
use crate::mcp::McpServer;
use crate::mcp::inbox_desk::{AnswerRefused, InboxAnswer};
use crate::secret_entry::page::HEADERS;
use crate::secret_entry::{IssueError, PaneDestination, SecretDesk};
use muxgate_tmux::ops::keys::KeyName;

/// The session cookie's name.
const COOKIE: &str = "muxgate_inbox";
/// Longest denial reason, in characters (as `/approvals` takes it).
const MAX_REASON_CHARS: usize = 500;

/// What the inbox routes reach.
#[derive(Clone)]
pub struct InboxApi {
    pub(crate) sign_ins: Arc<SignIns>,
    pub(crate) desk: ApprovalDesk,
    pub(crate) policy: Arc<ApprovalPolicy>,
    pub(crate) secrets: SecretDesk<PaneDestination>,
    pub(crate) http: Arc<HttpConfig>,
    pub(crate) mcp: McpServer,
}

impl InboxApi {
    /// The approver whose open session the request's cookie names.
    fn approver(&self, headers: &HeaderMap) -> Option<String> {
        let token = session_cookie(headers)?;
        self.sign_ins
            .session(token)
            .filter(|sub| self.policy.may_decide(sub))
    }

    /// Whether the browser reaches the gateway over HTTPS (the cookie is then `Secure`).
    fn secure(&self) -> bool {
        self.http.tls.is_some()
            || self
                .http
                .public_url
                .as_ref()
                .is_some_and(|url| url.join("").starts_with("https:"))
    }
}

/// The session token in a request's `Cookie` headers.
fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
        .filter(|token| !token.is_empty())
}

#[derive(Deserialize)]
pub(crate) struct LinkQuery {
    #[serde(default)]
    t: Option<String>,
}

/// `GET /inbox/signin?t=…`.
pub(crate) async fn sign_in_page(
    State(api): State<InboxApi>,
    Query(query): Query<LinkQuery>,
) -> Response {
    let token = query.t.unwrap_or_default();
    match api.sign_ins.link_holder(&token) {
        Some(approver) => html(StatusCode::OK, page::sign_in(&approver, &token)),
        None => spent(),
    }
}

/// The form of the sign-in page. No `Debug`: it holds a credential.
#[derive(Deserialize)]
pub(crate) struct SignInForm {
    t: String,
}

/// `POST /inbox/signin`.
pub(crate) async fn sign_in(
    State(api): State<InboxApi>,
    form: Result<Form<SignInForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return spent();
    };
    let Some(signed) = api.sign_ins.sign_in(&form.t) else {
        return spent();
    };
    if !api.policy.may_decide(&signed.sub) {
        return html(
            StatusCode::FORBIDDEN,
            page::signed_out("This link's approver is no longer among the approvers."),
        );
    }
    tracing::info!(approver = %signed.sub, "signed in to the inbox");
    let secure = if api.secure() { "; Secure" } else { "" };
    let cookie = format!(
        "{COOKIE}={}; Max-Age={}; HttpOnly; SameSite=Lax{secure}",
        signed.session.token,
        signed.session.ttl.as_secs()
    );
    let mut response = back_to_inbox(None);
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// `POST /inbox/signout`.
pub(crate) async fn sign_out(State(api): State<InboxApi>, headers: HeaderMap) -> Response {
    if let Some(token) = session_cookie(&headers) {
        api.sign_ins.sign_out(token);
    }
    let mut response = back_to_inbox(None);
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("muxgate_inbox=; Max-Age=0; HttpOnly; SameSite=Lax"),
    );
    response
}

#[derive(Deserialize)]
pub(crate) struct InboxQuery {
    #[serde(default)]
    n: Option<String>,
}

/// `GET /inbox`.
pub(crate) async fn show(
    State(api): State<InboxApi>,
    headers: HeaderMap,
    Query(query): Query<InboxQuery>,
) -> Response {
    let Some(approver) = api.approver(&headers) else {
        return html(
            StatusCode::UNAUTHORIZED,
            page::signed_out("Your session ended, or this browser never signed in."),
        );
    };
    let view = InboxView {
        notice: query.n.as_deref().and_then(Notice::from_code),
        approvals: approval_cards(&api, &approver).await,
        agents: agent_cards(&api.mcp).await,
        secrets: secret_cards(&api, &approver),
        approver,
    };
    html(StatusCode::OK, page::inbox(&view))
}

/// The held calls, with their targets' screens; an approver's own calls are not theirs to
/// decide and are left out.
/// The screens are read side by side.
async fn approval_cards(api: &InboxApi, approver: &str) -> Vec<ApprovalCard> {
    let cards = api
        .desk
        .pending()
        .into_iter()
        .filter(|pending| pending.call.sub != approver)
        .map(|pending| async move {
            let pattern = api.policy.pattern_of(&pending.call.rule);
            let shown = crate::approvals::shown::shown_fields(&pending.call.args, pattern);
            ApprovalCard {
                fields: shown.fields,
                whole: shown.whole,
                screen: api.mcp.held_call_screen(&pending.id).await,
                id: pending.id,
                tool: pending.call.tool,
                client: pending.call.sub,
                server: pending.call.server,
                rule: pending.call.rule,
                waiting_secs: pending.waiting_ms / 1000,
                expires_in_secs: pending.expires_in_ms / 1000,
            }
        });
    futures::future::join_all(cards).await
}

async fn agent_cards(mcp: &McpServer) -> Vec<AgentCard> {
    mcp.blocked_agents()
        .await
        .into_iter()
        .map(|blocked| AgentCard {
            scope: blocked.agent.scope.as_str().to_owned(),
            server: blocked.agent.server.clone(),
            id: blocked.agent.id.clone(),
            kind: blocked.agent.kind.clone(),
            client: blocked.agent.call.sub().to_owned(),
            pane: blocked.agent.pane.to_string(),
            blocked_on: blocked.edge.blocked_on.map(str::to_owned),
            why: blocked.edge.why,
            since_secs: blocked.edge.since.elapsed().as_secs(),
            screen: blocked.screen,
            digest: blocked.digest,
            nonce: hex::encode(rand::random::<[u8; 16]>()),
        })
        .collect()
}

fn secret_cards(api: &InboxApi, approver: &str) -> Vec<SecretCard> {
    api.secrets
        .held()
        .into_iter()
        .filter(|held| held.sub != approver)
        .map(|held| SecretCard {
            id: held.id,
            client: held.sub,
            label: held.label,
            place: held.place,
            expires_in_secs: held.expires_in_secs,
        })
        .collect()
}

/// The decision form.
#[derive(Deserialize)]
pub(crate) struct DecideForm {
    id: String,
    decision: String,
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /inbox/decide`.
pub(crate) async fn decide(
    State(api): State<InboxApi>,
    headers: HeaderMap,
    form: Result<Form<DecideForm>, FormRejection>,
) -> Response {
    let Some(approver) = api.approver(&headers) else {
        return back_to_inbox(None);
    };
    let Ok(Form(form)) = form else {
        return back_to_inbox(Some(Notice::Gone));
    };
    let approve = match form.decision.as_str() {
        "approve" => true,
        "deny" => false,
        _ => return back_to_inbox(Some(Notice::Gone)),
    };
    let reason = form.reason.filter(|r| !r.trim().is_empty());
    if reason
        .as_ref()
        .is_some_and(|r| r.chars().count() > MAX_REASON_CHARS)
    {
        return back_to_inbox(Some(Notice::BadReason));
    }
    // A call the page could not show whole was offered no Approve button: a crafted post is
    // refused the same.
    let shown_whole = |id: &str| {
        api.desk
            .pending()
            .into_iter()
            .find(|p| p.id == id)
            .is_none_or(|pending| {
                let pattern = api.policy.pattern_of(&pending.call.rule);
                crate::approvals::shown::shown_fields(&pending.call.args, pattern).whole
            })
    };
    if approve && !shown_whole(&form.id) {
        return back_to_inbox(Some(Notice::NotShownWhole));
    }
    let decision = Decision {
        approve,
        by: approver,
        reason,
    };
    let notice = match api.desk.decide(&form.id, decision) {
        Ok(()) if approve => Notice::Approved,
        Ok(()) => Notice::Denied,
        Err(DecideError::NotFound(_)) => Notice::Gone,
        Err(DecideError::OwnCall(_)) => Notice::OwnCall,
    };
    back_to_inbox(Some(notice))
}

/// The answer form. `then`: the key pressed after the text (`Enter`, `Escape`) or `none`.
#[derive(Deserialize)]
pub(crate) struct AnswerForm {
    scope: String,
    agent: String,
    digest: String,
    nonce: String,
    #[serde(default)]
    text: String,
    then: String,
}

/// `POST /inbox/answer`.
pub(crate) async fn answer(
    State(api): State<InboxApi>,
    headers: HeaderMap,
    form: Result<Form<AnswerForm>, FormRejection>,
) -> Response {
    let Some(approver) = api.approver(&headers) else {
        return back_to_inbox(None);
    };
    let Ok(Form(form)) = form else {
        return back_to_inbox(Some(Notice::Gone));
    };
    let then = match form.then.as_str() {
        "Enter" | "Escape" => KeyName::parse(&form.then).ok(),
        "none" => None,
        _ => return back_to_inbox(Some(Notice::BadAnswer)),
    };
    if form.text.is_empty() && then.is_none() {
        return back_to_inbox(Some(Notice::NothingToType));
    }
    let answer = InboxAnswer {
        scope: form.scope,
        agent: form.agent,
        digest: form.digest,
        text: form.text,
        then,
        nonce: form.nonce,
    };
    let notice = match api.mcp.answer_from_inbox(&approver, answer).await {
        Ok("answered") => Notice::Answered,
        Ok("screen_changed") => Notice::ScreenChanged,
        Ok(_) => Notice::NotTaken,
        Err(AnswerRefused::Gone) => Notice::Gone,
        Err(AnswerRefused::Invalid) => Notice::BadAnswer,
        Err(AnswerRefused::Unreachable) => Notice::Failed,
    };
    back_to_inbox(Some(notice))
}

#[derive(Deserialize)]
pub(crate) struct SecretForm {
    id: String,
}

/// `POST /inbox/secret`: on to a fresh one-time link to the secret's page (relative, like
/// every redirect here: no `Host` is trusted to build it).
pub(crate) async fn secret(
    State(api): State<InboxApi>,
    headers: HeaderMap,
    form: Result<Form<SecretForm>, FormRejection>,
) -> Response {
    let Some(approver) = api.approver(&headers) else {
        return back_to_inbox(None);
    };
    let Ok(Form(form)) = form else {
        return back_to_inbox(Some(Notice::Gone));
    };
    match api.secrets.issue(&form.id, &approver) {
        Ok((link, _)) => redirect(&format!("../secret?t={}", link.token)),
        Err(IssueError::NotFound(_)) => back_to_inbox(Some(Notice::Gone)),
        Err(IssueError::OwnRequest(_)) => back_to_inbox(Some(Notice::OwnCall)),
    }
}

/// A redirect to the inbox (relative: the routes posting here are one level under it).
fn back_to_inbox(notice: Option<Notice>) -> Response {
    match notice {
        Some(notice) => redirect(&format!("../inbox?n={}", notice.code())),
        None => redirect("../inbox"),
    }
}

fn redirect(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    with_headers(response)
}

fn spent() -> Response {
    html(
        StatusCode::NOT_FOUND,
        page::signed_out("This sign-in link was used already, has expired, or was never made."),
    )
}

fn html(status: StatusCode, body: String) -> Response {
    with_headers((status, Html(body)).into_response())
}

fn with_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in HEADERS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; muxgate_inbox=tok; b=2"),
        );
        assert_eq!(session_cookie(&headers), Some("tok"));
        let mut other = HeaderMap::new();
        other.append(
            header::COOKIE,
            HeaderValue::from_static("muxgate_inboxx=tok"),
        );
        other.append(header::COOKIE, HeaderValue::from_static("muxgate_inbox="));
        assert_eq!(session_cookie(&other), None);
    }
}
