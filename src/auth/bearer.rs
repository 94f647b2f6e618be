//! The bearer-token gate in front of `/mcp`: reads `Authorization: Bearer`, verifies the JWT,
//! merges its claims with the client's `[clients.<sub>]` entry into a [`Principal`], and puts
//! that into the request extensions. Anything else gets a 401 with an RFC 6750/9728 challenge.
//!
//! Tokens are read from the header only (never a query string or body), and the header is
//! removed once verified so nothing downstream can log or forward it.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header::{AUTHORIZATION, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, StatusCode};

use super::config::{
    AuthConfig, AuthConfigError, ClientPolicyConfig, DefaultClientConfig, JwtAlgorithm,
};
use super::metadata::ProtectedResource;
use super::pattern::{NamePattern, compile_patterns};
use super::principal::{KNOWN_SCOPES, Principal, TargetAcl, tier_of};
use super::throttle::{FailureThrottle, PeerAddr};
use super::token::{RejectReason, TokenVerifier, VerifiedToken, valid_sub};
use super::toolset::Toolsets;

/// Called once per rejected request with its reason (for metrics).
pub type RejectHook = Arc<dyn Fn(RejectReason) + Send + Sync>;

/// A client's configured policy, compiled.
#[derive(Debug, Clone)]
struct ClientPolicy {
    scopes: Option<BTreeSet<String>>,
    servers: Option<Vec<NamePattern>>,
    sessions: Option<Vec<NamePattern>>,
    own_sessions: bool,
    workspace: Option<String>,
    toolsets: Option<Toolsets>,
}

/// Workspace mode, as authentication sees it.
#[derive(Debug, Clone)]
struct WorkspaceMode {
    /// The name under which every client sees its own workspace's server.
    server: &'static str,
    /// `[workspaces] teams`: the workspaces a token's `workspace` claim may name besides its
    /// own `sub`.
    teams: Vec<NamePattern>,
}

/// Verifies requests and builds their [`Principal`].
pub struct Authenticator {
    verifier: TokenVerifier,
    clients: HashMap<String, ClientPolicy>,
    /// The policy of subs without an entry (`[clients_default]`), if it restricts anything.
    default_client: Option<ClientPolicy>,
    /// Whether subs without an entry are accepted at all.
    unlisted_allowed: bool,
    /// Session patterns configured for every client: for a configured sub, the others'; for
    /// an unlisted one, all of them (see [`TargetAcl::reserved`]).
    reserved: HashMap<String, Arc<[NamePattern]>>,
    reserved_all: Arc<[NamePattern]>,
    metadata_url: String,
    on_reject: Option<RejectHook>,
    /// Failed authentications per source address (none: not counted).
    throttle: Option<FailureThrottle>,
    /// In workspace mode: what the configuration lets claims choose.
    workspaces: Option<WorkspaceMode>,
    /// Conformance mode only: every request is this principal, no token checked.
    #[cfg(feature = "conformance")]
    anonymous: Option<Principal>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("verifier", &self.verifier)
            .field("clients", &self.clients.len())
            .field("metadata_url", &self.metadata_url)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// Builds the authenticator from `[auth]` and the `[clients.*]` table.
    pub fn new<'a, K: AsRef<str>, L: 'a>(
        auth: &AuthConfig,
        clients: impl IntoIterator<Item = (K, &'a ClientPolicyConfig<L>)>,
        resource: &ProtectedResource,
    ) -> Result<Self, AuthConfigError> {
        let verifier = TokenVerifier::from_config(auth)?;
        let mut compiled = HashMap::new();
        for (sub, cfg) in clients {
            let sub = sub.as_ref();
            compiled.insert(sub.to_owned(), compile_client(sub, cfg)?);
        }
        let patterns_of = |client: &ClientPolicy| client.sessions.clone().unwrap_or_default();
        let reserved_all: Arc<[NamePattern]> = compiled.values().flat_map(patterns_of).collect();
        let reserved = compiled
            .keys()
            .map(|sub| {
                let others: Arc<[NamePattern]> = compiled
                    .iter()
                    .filter(|(other, _)| *other != sub)
                    .flat_map(|(_, client)| patterns_of(client))
                    .collect();
                (sub.clone(), others)
            })
            .collect();
        Ok(Self {
            verifier,
            clients: compiled,
            default_client: None,
            unlisted_allowed: auth.algorithm.is_symmetric(),
            reserved,
            reserved_all,
            metadata_url: resource.metadata_url().to_owned(),
            on_reject: None,
            throttle: None,
            workspaces: None,
            #[cfg(feature = "conformance")]
            anonymous: None,
        })
    }

    /// Conformance mode only (see [`crate::conformance`]): accepts every request as
    /// `principal` without looking at any token.
    #[cfg(feature = "conformance")]
    pub fn without_authentication(mut self, principal: Principal) -> Self {
        self.anonymous = Some(principal);
        self
    }

    /// Applies `[clients_default]`: whether unlisted subs are accepted with `algorithm`, and
    /// the policy they get.
    pub fn with_default_client(
        mut self,
        config: &DefaultClientConfig,
        algorithm: JwtAlgorithm,
    ) -> Result<Self, AuthConfigError> {
        self.unlisted_allowed = config.allows_unlisted(algorithm);
        self.default_client = config
            .as_client()
            .map(|client| compile_client("clients_default", &client))
            .transpose()?;
        Ok(self)
    }

    /// Workspace mode: every principal sees its own workspace's server as `server`, and a
    /// configured server only when its configuration grants it; a `workspace` claim may name
    /// the token's own `sub` or a workspace that matches one of `teams` (`[workspaces] teams`).
    pub fn with_workspaces(
        mut self,
        server: &'static str,
        teams: &[String],
    ) -> Result<Self, AuthConfigError> {
        let teams =
            compile_patterns(teams).map_err(|(pattern, error)| AuthConfigError::Invalid {
                field: "workspaces.teams".into(),
                reason: format!("`{pattern}`: {error}"),
            })?;
        self.workspaces = Some(WorkspaceMode { server, teams });
        Ok(self)
    }

    /// Refuses sources with more than `per_minute` failed authentications a minute (0: no
    /// limit).
    pub fn with_failure_throttle(mut self, per_minute: u32) -> Self {
        self.throttle = std::num::NonZeroU32::new(per_minute).map(FailureThrottle::new);
        self
    }

    /// Reports every rejection to `hook`.
    pub fn with_reject_hook(mut self, hook: RejectHook) -> Self {
        self.on_reject = Some(hook);
        self
    }

    /// The token verifier (shared with token minting's self-check).
    pub fn verifier(&self) -> &TokenVerifier {
        &self.verifier
    }

    /// Authenticates request headers.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, RejectReason> {
        #[cfg(feature = "conformance")]
        if let Some(principal) = &self.anonymous {
            return Ok(principal.clone());
        }
        let token = bearer_token(headers)?;
        let verified = self.verifier.verify(token)?;
        if verified.host.is_some() {
            return Err(RejectReason::HostToken);
        }
        let listed = self.clients.get(&verified.sub);
        if !self.unlisted_allowed && listed.is_none() {
            return Err(RejectReason::UnknownClient);
        }
        if !self.workspace_claim_allowed(&verified, listed) {
            return Err(RejectReason::WorkspaceNotAllowed);
        }
        Ok(self.principal_for(verified))
    }

    /// Authenticates a host dialling in: its token must be a host's (`muxgate host token`).
    /// `Ok`: the host it names.
    pub fn authenticate_host(&self, headers: &HeaderMap) -> Result<String, RejectReason> {
        let token = bearer_token(headers)?;
        self.verifier
            .verify(token)?
            .host
            .ok_or(RejectReason::HostToken)
    }

    /// In workspace mode, whether the token's `workspace` claim, where it decides (the client's
    /// configuration names no workspace), chooses what the configuration allows: the token's
    /// own `sub`, or a team `[workspaces] teams` matches. Anything else would move the client
    /// into another tenant's workspace.
    fn workspace_claim_allowed(
        &self,
        token: &VerifiedToken,
        listed: Option<&ClientPolicy>,
    ) -> bool {
        let (Some(mode), Some(claimed)) = (&self.workspaces, &token.workspace) else {
            return true;
        };
        listed.is_some_and(|c| c.workspace.is_some())
            || *claimed == token.sub
            || mode.teams.iter().any(|team| team.matches(claimed))
    }

    /// Merges a verified token with its client's configuration ("both must allow"). The
    /// configuration (the sub's entry, else `[clients_default]`) is the authority: the
    /// token's claims narrow it and never widen it. Without either, the claims decide, except
    /// for configured servers in workspace mode: they run outside every sandbox, so only the
    /// configuration grants them and a `servers` claim only narrows.
    pub fn principal_for(&self, token: VerifiedToken) -> Principal {
        let listed = self.clients.get(&token.sub);
        let client = listed.or(self.default_client.as_ref());
        let scopes: BTreeSet<String> = match client.and_then(|c| c.scopes.as_ref()) {
            Some(ceiling) => token.scopes.intersection(ceiling).cloned().collect(),
            None => token.scopes,
        };
        let reserved = match listed {
            Some(_) => self.reserved.get(&token.sub).cloned().unwrap_or_default(),
            None => self.reserved_all.clone(),
        };
        let own_server = self.workspaces.as_ref().map(|mode| mode.server);
        let mut acl = TargetAcl {
            own_sessions: token.own_sessions || client.is_some_and(|c| c.own_sessions),
            own_server,
            reserved,
            ..TargetAcl::default()
        };
        let claims_decide = client.is_none();
        for (allow, configured, claimed, claim_grants) in [
            (
                &mut acl.servers,
                client.and_then(|c| c.servers.clone()),
                token.servers,
                claims_decide && own_server.is_none(),
            ),
            (
                &mut acl.sessions,
                client.and_then(|c| c.sessions.clone()),
                token.sessions,
                claims_decide,
            ),
        ] {
            if let Some(list) = configured {
                allow.restrict(list);
            }
            if let Some(list) = claimed {
                if claim_grants {
                    allow.restrict(list);
                } else {
                    allow.narrow(list);
                }
            }
        }
        // A configured workspace wins over the claim; where the claim decides, `authenticate`
        // has checked that the configuration allows it.
        let workspace = listed
            .and_then(|c| c.workspace.clone())
            .or(token.workspace)
            .unwrap_or_else(|| token.sub.clone());
        // Toolsets grant nothing (scopes do), so the token's choice wins over the config's.
        let toolsets = token
            .toolsets
            .or_else(|| client.and_then(|c| c.toolsets))
            .unwrap_or_default();
        Principal {
            toolsets,
            tier: tier_of(scopes.iter().map(String::as_str)),
            workspace,
            sub: token.sub,
            scopes,
            acl,
            expires_at: token.expires_at,
        }
    }

    /// The 401 answer for `reason`, reported to the hook.
    pub fn reject(&self, reason: RejectReason) -> Response {
        if let Some(hook) = &self.on_reject {
            hook(reason);
        }
        tracing::debug!(
            reason = reason.as_str(),
            "request refused: not authenticated"
        );
        unauthorized(reason, &self.metadata_url)
    }

    /// A request from `peer`: its principal, or why it is refused. The token is verified
    /// first, whatever the source's record: a token that verifies is admitted even from a
    /// throttled source, since the clients behind one address (a proxy, a host) share its
    /// record. A failure from a throttled source is answered 429 (and reported to the hook
    /// here); any other failure counts against the source's budget.
    fn admit(&self, peer: Option<PeerAddr>, headers: &HeaderMap) -> Result<Principal, Refusal> {
        let reason = match self.authenticate(headers) {
            Ok(principal) => return Ok(principal),
            Err(reason) => reason,
        };
        let source = peer.map(|PeerAddr(addr)| addr.ip());
        let Some((throttle, source)) = self.throttle.as_ref().zip(source) else {
            return Err(Refusal::Unauthenticated(reason));
        };
        if let Some(wait) = throttle.check(source) {
            if let Some(hook) = &self.on_reject {
                hook(RejectReason::Throttled);
            }
            tracing::debug!(%source, "request refused: too many failed authentications");
            return Err(Refusal::Throttled(wait));
        }
        throttle.fail(source);
        Err(Refusal::Unauthenticated(reason))
    }
}

fn compile_client<L>(
    sub: &str,
    cfg: &ClientPolicyConfig<L>,
) -> Result<ClientPolicy, AuthConfigError> {
    let field = |name: &str| format!("clients.{sub}.{name}");
    if !valid_sub(sub) {
        return Err(AuthConfigError::Invalid {
            field: format!("clients.{sub:?}"),
            reason: "a client key must be a valid `sub` (1-256 characters, no control characters)"
                .into(),
        });
    }
    if let Some(scopes) = &cfg.scopes
        && let Some(unknown) = scopes.iter().find(|s| !KNOWN_SCOPES.contains(&s.as_str()))
    {
        return Err(AuthConfigError::Invalid {
            field: field("scopes"),
            reason: format!(
                "unknown scope `{unknown}`; known scopes: {}",
                KNOWN_SCOPES.join(", ")
            ),
        });
    }
    let compile = |name: &str, list: &Option<Vec<String>>| {
        list.as_deref()
            .map(|l| {
                compile_patterns(l).map_err(|(p, e)| AuthConfigError::Invalid {
                    field: field(name),
                    reason: format!("pattern {p:?}: {e}"),
                })
            })
            .transpose()
    };
    Ok(ClientPolicy {
        scopes: cfg.scopes.as_ref().map(|s| s.iter().cloned().collect()),
        servers: compile("servers", &cfg.servers)?,
        sessions: compile("sessions", &cfg.sessions)?,
        own_sessions: cfg.own_sessions,
        workspace: match &cfg.workspace {
            Some(name) if !valid_sub(name) => {
                return Err(AuthConfigError::Invalid {
                    field: field("workspace"),
                    reason: "a workspace name has 1-256 characters and no control characters"
                        .into(),
                });
            }
            other => other.clone(),
        },
        toolsets: cfg
            .toolsets
            .as_deref()
            .map(Toolsets::parse)
            .transpose()
            .map_err(|e| AuthConfigError::Invalid {
                field: field("toolsets"),
                reason: e.to_string(),
            })?,
    })
}

/// The bearer credential of a request: exactly one `Authorization` header, scheme `Bearer`
/// (any case), one token.
pub(crate) fn bearer_token(headers: &HeaderMap) -> Result<&str, RejectReason> {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let value = values.next().ok_or(RejectReason::Missing)?;
    if values.next().is_some() {
        return Err(RejectReason::MalformedHeader);
    }
    let value = value.to_str().map_err(|_| RejectReason::MalformedHeader)?;
    let (scheme, token) = value.split_once(' ').ok_or(RejectReason::MalformedHeader)?;
    let token = token.trim_matches(' ');
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.contains(' ') {
        return Err(RejectReason::MalformedHeader);
    }
    Ok(token)
}

/// A 401 with `WWW-Authenticate: Bearer …resource_metadata="…"` and a JSON body
/// `{"error", "reason", "message"}`.
pub(crate) fn unauthorized(reason: RejectReason, metadata_url: &str) -> Response {
    let mut challenge = String::from("Bearer ");
    if let Some(error) = reason.oauth_error() {
        challenge.push_str(&format!(
            "error=\"{error}\", error_description=\"{}\", ",
            reason.message()
        ));
    }
    challenge.push_str(&format!("resource_metadata=\"{metadata_url}\""));
    let body = serde_json::json!({
        "error": reason.oauth_error().unwrap_or("unauthorized"),
        "reason": reason.as_str(),
        "message": reason.message(),
    });
    let mut response = (StatusCode::UNAUTHORIZED, Json(body)).into_response();
    // Both parts are validated ASCII without quotes (see `ProtectedResource::new`), so the
    // header value is always valid; fall back to a bare challenge rather than panic.
    let value = HeaderValue::from_str(&challenge).unwrap_or(HeaderValue::from_static("Bearer"));
    response.headers_mut().insert(WWW_AUTHENTICATE, value);
    response
}

/// Why a request is not let through.
enum Refusal {
    /// 401: see the reason.
    Unauthenticated(RejectReason),
    /// 429: the source spent its failed authentications; it may try again after this long.
    Throttled(std::time::Duration),
}

/// A 429 for a source that spent its failed authentications: `Retry-After` and
/// `{"error": "rate_limited", "reason": "throttled", "message", "retry_after_seconds"}`.
fn throttled(wait: std::time::Duration) -> Response {
    let retry = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
    let reason = RejectReason::Throttled;
    let body = serde_json::json!({
        "error": "rate_limited",
        "reason": reason.as_str(),
        "message": reason.message(),
        "retry_after_seconds": retry,
    });
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(RETRY_AFTER, retry.to_string())],
        Json(body),
    )
        .into_response()
}

/// axum middleware: `from_fn_with_state(Arc<Authenticator>, require_bearer)`. Behind
/// [`crate::http::serve`] each request carries its connection's [`PeerAddr`], by which failed
/// authentications are throttled.
pub async fn require_bearer(
    State(auth): State<Arc<Authenticator>>,
    mut req: Request,
    next: Next,
) -> Response {
    let peer = req
        .extensions()
        .get::<ConnectInfo<PeerAddr>>()
        .map(|ConnectInfo(peer)| *peer);
    match auth.admit(peer, req.headers()) {
        Ok(principal) => {
            req.headers_mut().remove(AUTHORIZATION);
            req.extensions_mut().insert(principal);
            next.run(req).await
        }
        Err(Refusal::Unauthenticated(reason)) => auth.reject(reason),
        Err(Refusal::Throttled(wait)) => throttled(wait),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::principal::{SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Tier};
    use crate::auth::token::test_support::*;
    use axum::Router;
    use axum::body::Body;
    use axum::routing::post;
    use serde::de::IgnoredAny;
    use serde_json::json;
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    use tower::ServiceExt;

    #[test]
    fn a_hosts_token_dials_in_and_does_nothing_else() {
        let auth = authenticator(&BTreeMap::new());
        let bearer = |token: String| {
            let mut headers = HeaderMap::new();
            headers.insert(AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
            headers
        };
        let mut host = good_claims();
        host["scope"] = json!("mux:admin");
        host["muxgate"] = json!({"host": "laptop"});
        let host = bearer(hs256(&host, SECRET));
        assert_eq!(auth.authenticate_host(&host), Ok("laptop".to_owned()));
        assert_eq!(
            auth.authenticate(&host).err(),
            Some(RejectReason::HostToken)
        );
        let agent = bearer(hs256(&good_claims(), SECRET));
        assert!(auth.authenticate(&agent).is_ok());
        assert_eq!(auth.authenticate_host(&agent), Err(RejectReason::HostToken));
    }

    fn resource() -> ProtectedResource {
        ProtectedResource::new(&AuthConfig::default(), "http://127.0.0.1:8080/mcp").unwrap()
    }

    fn authenticator(clients: &BTreeMap<String, ClientPolicyConfig<IgnoredAny>>) -> Authenticator {
        Authenticator::new(&AuthConfig::hs256(SECRET), clients, &resource()).unwrap()
    }

    fn client(toml_text: &str) -> ClientPolicyConfig<IgnoredAny> {
        toml::from_str(toml_text).unwrap()
    }

    async fn echo_principal(req: Request) -> Json<serde_json::Value> {
        let p = Principal::from_extensions(req.extensions()).cloned();
        Json(json!({
            "sub": p.as_ref().map(|p| p.sub.clone()),
            "saw_authorization": req.headers().contains_key(AUTHORIZATION),
        }))
    }

    fn app(auth: Authenticator) -> Router {
        Router::new().route("/mcp", post(echo_principal)).layer(
            axum::middleware::from_fn_with_state(Arc::new(auth), require_bearer),
        )
    }

    async fn call(app: &Router, auth: Option<&str>) -> (StatusCode, HeaderMap, serde_json::Value) {
        let mut req = Request::post("/mcp");
        if let Some(value) = auth {
            req = req.header(AUTHORIZATION, value);
        }
        let resp = app
            .clone()
            .oneshot(req.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, headers, serde_json::from_slice(&body).unwrap())
    }

    #[tokio::test]
    async fn good_token_passes_and_the_header_is_stripped() {
        let app = app(authenticator(&BTreeMap::new()));
        let token = hs256(&good_claims(), SECRET);
        let (status, _, body) = call(&app, Some(&format!("Bearer {token}"))).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, json!({ "sub": "alice", "saw_authorization": false }));
        let (status, _, _) = call(&app, Some(&format!("bearer  {token} "))).await;
        assert_eq!(status, StatusCode::OK);
    }

    #[tokio::test]
    async fn missing_token_gets_a_bare_challenge() {
        let app = app(authenticator(&BTreeMap::new()));
        let (status, headers, body) = call(&app, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(
            headers[WWW_AUTHENTICATE],
            "Bearer resource_metadata=\"http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp\""
        );
        assert_eq!(body["reason"], "missing");
        assert_eq!(body["error"], "unauthorized");
    }

    #[tokio::test]
    async fn every_rejection_names_its_reason() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let hook_seen = Arc::clone(&seen);
        let auth = authenticator(&BTreeMap::new()).with_reject_hook(Arc::new(move |r| {
            hook_seen.lock().unwrap().push(r);
        }));
        let app = app(auth);
        let good = good_claims();
        let mut expired = good.clone();
        expired["exp"] = json!(now() - 3600);
        let mut early = good.clone();
        early["nbf"] = json!(now() + 3600);
        let mut issuer = good.clone();
        issuer["iss"] = json!("someone-else");
        let mut audience = good.clone();
        audience["aud"] = json!("another-service");
        let mut no_sub = good.clone();
        no_sub.as_object_mut().unwrap().remove("sub");
        let none = raw(&json!({ "alg": "none" }), &good, "");
        let cases: Vec<(String, RejectReason, &str)> = vec![
            (
                "Basic dXNlcjpwYXNz".into(),
                RejectReason::MalformedHeader,
                "invalid_request",
            ),
            (
                "Bearer".into(),
                RejectReason::MalformedHeader,
                "invalid_request",
            ),
            (
                "Bearer a b".into(),
                RejectReason::MalformedHeader,
                "invalid_request",
            ),
            (
                "Bearer not-a-jwt".into(),
                RejectReason::MalformedToken,
                "invalid_token",
            ),
            (
                format!("Bearer {none}"),
                RejectReason::AlgNotAllowed,
                "invalid_token",
            ),
            (
                format!(
                    "Bearer {}",
                    hs256(&good, "wrong-secret-wrong-secret-wrong-secret")
                ),
                RejectReason::BadSignature,
                "invalid_token",
            ),
            (
                format!("Bearer {}", hs256(&expired, SECRET)),
                RejectReason::Expired,
                "invalid_token",
            ),
            (
                format!("Bearer {}", hs256(&early, SECRET)),
                RejectReason::NotYetValid,
                "invalid_token",
            ),
            (
                format!("Bearer {}", hs256(&issuer, SECRET)),
                RejectReason::BadIssuer,
                "invalid_token",
            ),
            (
                format!("Bearer {}", hs256(&audience, SECRET)),
                RejectReason::BadAudience,
                "invalid_token",
            ),
            (
                format!("Bearer {}", hs256(&no_sub, SECRET)),
                RejectReason::BadClaims,
                "invalid_token",
            ),
        ];
        for (header, reason, error) in &cases {
            let (status, headers, body) = call(&app, Some(header)).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{reason}");
            assert_eq!(body["reason"], reason.as_str());
            assert_eq!(body["error"], *error);
            assert_eq!(body["message"], reason.message());
            let challenge = headers[WWW_AUTHENTICATE].to_str().unwrap();
            assert!(
                challenge.starts_with(&format!("Bearer error=\"{error}\"")),
                "{challenge}"
            );
            assert!(challenge.contains("resource_metadata=\""), "{challenge}");
        }
        let reported: Vec<_> = seen.lock().unwrap().clone();
        let expected: Vec<_> = cases.iter().map(|(_, r, _)| *r).collect();
        assert_eq!(reported, expected);
    }

    #[tokio::test]
    async fn token_in_query_or_twice_is_not_accepted() {
        let app = app(authenticator(&BTreeMap::new()));
        let token = hs256(&good_claims(), SECRET);
        let resp = app
            .clone()
            .oneshot(
                Request::post(format!("/mcp?access_token={token}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        let resp = app
            .clone()
            .oneshot(
                Request::post("/mcp")
                    .header(AUTHORIZATION, format!("Bearer {token}"))
                    .header(AUTHORIZATION, format!("Bearer {token}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    }

    #[test]
    fn messages_are_safe_inside_a_quoted_string() {
        for reason in RejectReason::ALL {
            assert!(!reason.message().contains(['"', '\\']), "{reason}");
        }
    }

    #[test]
    fn config_caps_token_scopes_and_acls_intersect() {
        let mut clients = BTreeMap::new();
        clients.insert(
            "alice".to_owned(),
            client(
                r#"
                scopes = ["mux:read"]
                servers = ["build", "ci-*"]
                sessions = ["ci-*"]
                "#,
            ),
        );
        let auth = authenticator(&clients);
        let mut claims = good_claims();
        claims["scope"] = json!("mux:read mux:admin openid");
        claims["muxgate"] = json!({ "servers": ["ci-*"], "sessions": ["*-1"] });
        let p = auth.authenticate(&bearer(&hs256(&claims, SECRET))).unwrap();
        assert_eq!(p.scopes, BTreeSet::from([SCOPE_READ.to_owned()]));
        assert_eq!(p.tier, Some(Tier::ReadOnly));
        assert!(p.acl.servers.allows("ci-7"));
        assert!(!p.acl.servers.allows("build"), "token narrows config");
        assert!(p.acl.sessions.allows("ci-1"));
        assert!(!p.acl.sessions.allows("ci-2"));
        assert!(!p.acl.own_sessions);
    }

    #[test]
    fn config_can_not_widen_the_token() {
        let mut clients = BTreeMap::new();
        clients.insert(
            "alice".to_owned(),
            client(r#"scopes = ["mux:read", "mux:write", "mux:admin"]"#),
        );
        let auth = authenticator(&clients);
        let mut claims = good_claims();
        claims["scope"] = json!(SCOPE_READ);
        let p = auth.authenticate(&bearer(&hs256(&claims, SECRET))).unwrap();
        assert_eq!(p.tier, Some(Tier::ReadOnly));
    }

    #[test]
    fn without_client_entry_the_token_alone_decides() {
        let auth = authenticator(&BTreeMap::new());
        let mut claims = good_claims();
        claims["scope"] = json!(format!("{SCOPE_WRITE} {SCOPE_ADMIN}"));
        claims["muxgate"] = json!({ "own_sessions": true });
        let p = auth.authenticate(&bearer(&hs256(&claims, SECRET))).unwrap();
        assert_eq!(p.tier, Some(Tier::Destructive));
        assert!(p.acl.servers.is_unrestricted());
        assert!(p.acl.own_sessions);
    }

    /// `muxgate token --sub carol --sessions '*'` for a configured `own_sessions` client: the
    /// claim narrows the configuration and never opens anything it does not grant.
    #[test]
    fn claims_only_narrow_the_configuration() {
        use crate::auth::{SessionRef, can_see_session};
        let mut clients = BTreeMap::new();
        clients.insert("alice".to_owned(), client("own_sessions = true"));
        clients.insert("bob".to_owned(), client("sessions = ['b-*']"));
        let auth = authenticator(&clients);
        let mut claims = good_claims();
        claims["muxgate"] = json!({ "sessions": ["*"], "servers": ["*"] });
        let p = auth.authenticate(&bearer(&hs256(&claims, SECRET))).unwrap();
        let seen = |name, owner| can_see_session(&p, "default", SessionRef { name, owner });
        assert!(!seen("human", None), "a claim grants nothing explicitly");
        assert!(!seen("b-1", Some("bob")));
        assert!(seen("mine", Some("alice")));
        // Under a configuration, claimed patterns narrow: alice's claim `b-*` lets her name
        // nothing outside it, but grants her nothing either.
        claims["muxgate"] = json!({ "sessions": ["a-*"] });
        let p = auth.authenticate(&bearer(&hs256(&claims, SECRET))).unwrap();
        assert!(!p.acl.sessions.allows("b-1"));
        // And a configured workspace is not moved by a claim.
        clients.insert("carol".to_owned(), client("workspace = 'team'"));
        let auth = authenticator(&clients);
        claims["sub"] = json!("carol");
        claims["muxgate"] = json!({ "workspace": "other" });
        let p = auth.authenticate(&bearer(&hs256(&claims, SECRET))).unwrap();
        assert_eq!(p.workspace, "team");
    }

    #[test]
    fn unlisted_clients_follow_the_default_policy() {
        let mut clients = BTreeMap::new();
        clients.insert("alice".to_owned(), client("sessions = ['a-*']"));
        let token = |sub: &str| {
            let mut claims = good_claims();
            claims["sub"] = json!(sub);
            bearer(&hs256(&claims, SECRET))
        };
        // HS256: unlisted subs are accepted by default (the secret's holder mints tokens).
        let auth = authenticator(&clients);
        let p = auth.authenticate(&token("dave")).unwrap();
        assert!(p.acl.sessions.is_unrestricted());
        assert!(
            p.acl.reserved.iter().any(|r| r.matches("a-1")),
            "alice's names"
        );
        // Refused when the operator says so, or by default with public keys.
        let denying: DefaultClientConfig = toml::from_str("allow = false").unwrap();
        let auth = authenticator(&clients)
            .with_default_client(&denying, JwtAlgorithm::HS256)
            .unwrap();
        assert_eq!(
            auth.authenticate(&token("dave")),
            Err(RejectReason::UnknownClient)
        );
        assert!(auth.authenticate(&token("alice")).is_ok());
        let auth = authenticator(&clients)
            .with_default_client(&DefaultClientConfig::default(), JwtAlgorithm::RS256)
            .unwrap();
        assert_eq!(
            auth.authenticate(&token("dave")),
            Err(RejectReason::UnknownClient)
        );
        // A default policy applies to them, and is the authority their claims narrow.
        let limited: DefaultClientConfig = toml::from_str(
            "sessions = ['guest-*']
scopes = ['mux:read']",
        )
        .unwrap();
        let auth = authenticator(&clients)
            .with_default_client(&limited, JwtAlgorithm::HS256)
            .unwrap();
        let p = auth.authenticate(&token("dave")).unwrap();
        assert!(p.acl.sessions.allows("guest-1") && !p.acl.sessions.allows("a-1"));
        assert_eq!(p.tier, Some(Tier::ReadOnly));
    }

    #[test]
    fn own_sessions_from_config_applies() {
        let mut clients = BTreeMap::new();
        clients.insert("alice".to_owned(), client("own_sessions = true"));
        let p = authenticator(&clients)
            .authenticate(&bearer(&hs256(&good_claims(), SECRET)))
            .unwrap();
        assert!(p.acl.own_sessions);
    }

    #[test]
    fn bad_client_config_is_refused() {
        let check = |sub: &str, text: &str, needle: &str| {
            let mut clients = BTreeMap::new();
            clients.insert(sub.to_owned(), client(text));
            let err = Authenticator::new(&AuthConfig::hs256(SECRET), &clients, &resource())
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{err}");
        };
        check(
            "bot",
            r#"scopes = ["tmux:read"]"#,
            "unknown scope `tmux:read`",
        );
        check("bot", r#"sessions = [""]"#, "clients.bot.sessions");
        check("bot", r#"servers = ["a\nb"]"#, "clients.bot.servers");
        check("", "", "valid `sub`");
    }

    /// Workspace mode: configured servers run outside every sandbox, so a `servers` claim
    /// (here of an unlisted sub, where claims otherwise decide) grants none of them; only the
    /// configuration does, and the claim still narrows it.
    #[test]
    fn in_workspace_mode_only_the_configuration_grants_configured_servers() {
        use crate::auth::can_see_server;
        let mut clients = BTreeMap::new();
        clients.insert("ops".to_owned(), client("servers = ['default']"));
        let auth = authenticator(&clients)
            .with_workspaces("workspace", &[])
            .unwrap();
        let token = |sub: &str, servers: Option<&[&str]>| {
            let mut claims = good_claims();
            claims["sub"] = json!(sub);
            if let Some(servers) = servers {
                claims["muxgate"] = json!({ "servers": servers });
            }
            bearer(&hs256(&claims, SECRET))
        };
        for claim in [&["default"][..], &["def*"], &["*"]] {
            let p = auth.authenticate(&token("mallory", Some(claim))).unwrap();
            assert!(can_see_server(&p, "workspace"));
            assert!(!can_see_server(&p, "default"), "claim {claim:?}");
        }
        let p = auth.authenticate(&token("ops", None)).unwrap();
        assert!(can_see_server(&p, "default"));
        let p = auth.authenticate(&token("ops", Some(&["other"]))).unwrap();
        assert!(!can_see_server(&p, "default"), "the claim narrows");
        // `[clients_default] servers` is configuration too.
        let granting: DefaultClientConfig = toml::from_str("servers = ['default']").unwrap();
        let auth = authenticator(&clients)
            .with_workspaces("workspace", &[])
            .unwrap()
            .with_default_client(&granting, JwtAlgorithm::HS256)
            .unwrap();
        let p = auth
            .authenticate(&token("mallory", Some(&["default"])))
            .unwrap();
        assert!(can_see_server(&p, "default"));
        // Without workspaces, an unlisted sub's claim still decides (every client runs as the
        // servers' user there anyway; see `Config::shared_server_warning`).
        let p = authenticator(&clients)
            .authenticate(&token("mallory", Some(&["def*"])))
            .unwrap();
        assert!(can_see_server(&p, "default") && !can_see_server(&p, "build"));
    }

    #[test]
    fn a_workspace_claim_names_only_its_own_sub_or_a_listed_team() {
        let mut clients = BTreeMap::new();
        clients.insert("bob".to_owned(), client("workspace = 'team-a'"));
        clients.insert("carol".to_owned(), client("scopes = ['mux:read']"));
        let teams = ["team-*".to_owned()];
        let auth = authenticator(&clients)
            .with_workspaces("workspace", &teams)
            .unwrap();
        let claim = |sub: &str, workspace: &str| {
            let mut claims = good_claims();
            claims["sub"] = json!(sub);
            claims["muxgate"] = json!({ "workspace": workspace });
            auth.authenticate(&bearer(&hs256(&claims, SECRET)))
                .map(|p| p.workspace)
        };
        assert_eq!(claim("dave", "team-b"), Ok("team-b".to_owned()));
        assert_eq!(claim("dave", "dave"), Ok("dave".to_owned()));
        assert_eq!(
            claim("dave", "alice"),
            Err(RejectReason::WorkspaceNotAllowed)
        );
        assert_eq!(
            claim("dave", "team"),
            Err(RejectReason::WorkspaceNotAllowed)
        );
        // A listed client without a configured workspace is held to the same rule.
        assert_eq!(
            claim("carol", "bob"),
            Err(RejectReason::WorkspaceNotAllowed)
        );
        // A configured workspace wins; the claim decides nothing there.
        assert_eq!(claim("bob", "elsewhere"), Ok("team-a".to_owned()));
        // Without workspaces the claim means nothing and is not checked.
        let mut claims = good_claims();
        claims["muxgate"] = json!({ "workspace": "bob" });
        assert!(
            authenticator(&clients)
                .authenticate(&bearer(&hs256(&claims, SECRET)))
                .is_ok()
        );
        let err = authenticator(&clients)
            .with_workspaces("workspace", &["".to_owned()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("workspaces.teams"), "{err}");
    }

    /// Clients behind one address share its failure record: the bad tokens of one of them
    /// must not turn away another's good token.
    #[test]
    fn a_throttled_source_is_still_admitted_with_a_token_that_verifies() {
        let throttled = Arc::new(Mutex::new(0));
        let seen = Arc::clone(&throttled);
        let auth = authenticator(&BTreeMap::new())
            .with_failure_throttle(2)
            .with_reject_hook(Arc::new(move |reason| {
                if reason == RejectReason::Throttled {
                    *seen.lock().unwrap() += 1;
                }
            }));
        let peer = Some(PeerAddr("192.0.2.7:4000".parse().unwrap()));
        let bad = bearer("not-a-jwt");
        let good = bearer(&hs256(&good_claims(), SECRET));
        for _ in 0..3 {
            assert!(matches!(
                auth.admit(peer, &bad),
                Err(Refusal::Unauthenticated(RejectReason::MalformedToken))
            ));
        }
        assert!(matches!(auth.admit(peer, &bad), Err(Refusal::Throttled(_))));
        assert!(auth.admit(peer, &good).is_ok());
        assert!(matches!(auth.admit(peer, &bad), Err(Refusal::Throttled(_))));
        assert_eq!(*throttled.lock().unwrap(), 2);
    }

    fn bearer(token: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        headers
    }
}
