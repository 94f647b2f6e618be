//! JWT verification: from a compact token to [`VerifiedToken`] or a [`RejectReason`].
//!
//! Order of checks (each failure has its own reason, so metrics can tell attacks from clock
//! skew from misconfigured clients): shape → header `alg` (must equal the one configured
//! algorithm; `none` never does) → `kid` → signature → `exp`/`nbf` (with leeway) → `iss` →
//! `aud` → the gateway's own claims. Claims are only looked at once the signature holds.
//! Header fields that point elsewhere for keys (`jku`, `jwk`, `x5u`, `x5c`) are ignored: keys
//! come from configuration only.
//!
//! Claims read (others are ignored):
//! - `sub` (required, 1–256 characters, no control characters);
//! - `scope` (space-separated string or array) and/or `scp` (same): united;
//! - `muxgate` (optional object, unknown fields refused so a typo cannot silently widen
//!   access): `servers` and `sessions` (lists of name patterns) and `own_sessions` (bool).

use std::collections::BTreeSet;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::Validation;
use jsonwebtoken::errors::ErrorKind;
use serde::{Deserialize, Serialize};

use super::config::{AuthConfig, AuthConfigError, MAX_LEEWAY_SECONDS};
use super::keys::{KeySet, load_verification_keys};
use super::pattern::{NamePattern, compile_patterns};
use super::toolset::Toolsets;

/// Longest token accepted, in bytes; real tokens are far smaller.
pub(crate) const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// Longest `sub` accepted, in characters.
pub(crate) const MAX_SUB_CHARS: usize = 256;
/// Most scopes read from one token.
const MAX_SCOPES: usize = 64;

/// Why a request was not authenticated. Each reason has a stable name for metrics and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectReason {
    /// No `Authorization` header.
    Missing,
    /// An `Authorization` header that is not `Bearer <token>`.
    MalformedHeader,
    /// A bearer credential that is not a well-formed JWT.
    MalformedToken,
    /// The header's `alg` is not the configured algorithm (includes `none`).
    AlgNotAllowed,
    /// The header's `kid` names no configured key.
    UnknownKid,
    /// No configured key verifies the signature.
    BadSignature,
    /// `exp` is in the past (beyond the leeway).
    Expired,
    /// `nbf` is in the future (beyond the leeway).
    NotYetValid,
    /// `iss` is missing or not the configured issuer.
    BadIssuer,
    /// `aud` is missing or does not include the configured audience.
    BadAudience,
    /// Required claims missing or malformed (`sub`, `exp`, `scope`, `muxgate`).
    BadClaims,
    /// A `sub` with no `[clients.<sub>]` entry, where unlisted clients are refused.
    UnknownClient,
    /// In workspace mode, a `workspace` claim naming neither the token's own `sub` nor a team
    /// `[workspaces] teams` lists (a claim may not move a client into another's workspace).
    WorkspaceNotAllowed,
    /// The source address failed to authenticate too often lately, and this request's token
    /// did not verify either (answered 429, see [`super::throttle`]).
    Throttled,
    /// A host's token (`muxgate host token`), which lets that host dial in and nothing else;
    /// or, where a host dials in, any other token.
    HostToken,
}

impl RejectReason {
    /// Every reason, for pre-registering metric labels.
    pub const ALL: [Self; 15] = [
        Self::Missing,
        Self::MalformedHeader,
        Self::MalformedToken,
        Self::AlgNotAllowed,
        Self::UnknownKid,
        Self::BadSignature,
        Self::Expired,
        Self::NotYetValid,
        Self::BadIssuer,
        Self::BadAudience,
        Self::BadClaims,
        Self::UnknownClient,
        Self::WorkspaceNotAllowed,
        Self::Throttled,
        Self::HostToken,
    ];

    /// Stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::MalformedHeader => "malformed_header",
            Self::MalformedToken => "malformed_token",
            Self::AlgNotAllowed => "alg_not_allowed",
            Self::UnknownKid => "unknown_kid",
            Self::BadSignature => "bad_signature",
            Self::Expired => "expired",
            Self::NotYetValid => "not_yet_valid",
            Self::BadIssuer => "bad_issuer",
            Self::BadAudience => "bad_audience",
            Self::BadClaims => "bad_claims",
            Self::UnknownClient => "unknown_client",
            Self::WorkspaceNotAllowed => "workspace_not_allowed",
            Self::Throttled => "throttled",
            Self::HostToken => "host_token",
        }
    }

    /// A short explanation for the client; never contains token material.
    pub fn message(self) -> &'static str {
        match self {
            Self::Missing => "an Authorization: Bearer token is required",
            Self::MalformedHeader => "the Authorization header must be `Bearer <token>`",
            Self::MalformedToken => "the bearer token is not a well-formed JWT",
            Self::AlgNotAllowed => "the token's signature algorithm is not accepted",
            Self::UnknownKid => "the token's key id (kid) is not known",
            Self::BadSignature => "the token's signature does not verify",
            Self::Expired => "the token has expired",
            Self::NotYetValid => "the token is not valid yet (nbf)",
            Self::BadIssuer => "the token's issuer (iss) is not accepted",
            Self::BadAudience => "the token's audience (aud) does not include this resource",
            Self::BadClaims => "the token's claims are missing or malformed",
            Self::UnknownClient => "this gateway does not know the token's client (sub)",
            Self::WorkspaceNotAllowed => {
                "the token's workspace claim names neither its own sub nor a team listed in \
                 workspaces.teams"
            }
            Self::Throttled => {
                "too many failed authentications from this address; retry after Retry-After seconds"
            }
            Self::HostToken => {
                "a host's token lets that host dial in at /hosts/connect and grants nothing else; \
                 a host dials in only with its own"
            }
        }
    }

    /// The RFC 6750 `error` code for `WWW-Authenticate`, if any (none when no credentials
    /// were sent).
    pub fn oauth_error(self) -> Option<&'static str> {
        match self {
            Self::Missing => None,
            Self::MalformedHeader => Some("invalid_request"),
            _ => Some("invalid_token"),
        }
    }
}

impl std::fmt::Display for RejectReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a verified token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    /// Subject.
    pub sub: String,
    /// All scopes from `scope` and `scp`.
    pub scopes: BTreeSet<String>,
    /// Server patterns from the `muxgate` claim.
    pub servers: Option<Vec<NamePattern>>,
    /// Session patterns from the `muxgate` claim.
    pub sessions: Option<Vec<NamePattern>>,
    /// `own_sessions` from the `muxgate` claim.
    pub own_sessions: bool,
    /// `workspace` from the `muxgate` claim.
    pub workspace: Option<String>,
    /// `toolsets` from the `muxgate` claim.
    pub toolsets: Option<Toolsets>,
    /// `host` from the `muxgate` claim: a host's token, for that host to dial in.
    pub host: Option<String>,
    /// `exp`, seconds since the Unix epoch.
    pub expires_at: u64,
}

/// The gateway's private claim, shared by verification and minting.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MuxgateClaim {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own_sessions: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolsets: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScopeClaim {
    Text(String),
    List(Vec<String>),
}

impl ScopeClaim {
    fn into_scopes(self) -> Vec<String> {
        match self {
            Self::Text(s) => s.split_whitespace().map(str::to_owned).collect(),
            Self::List(v) => v,
        }
    }
}

#[derive(Deserialize)]
struct Claims {
    sub: String,
    exp: serde_json::Number,
    #[serde(default)]
    scope: Option<ScopeClaim>,
    #[serde(default)]
    scp: Option<ScopeClaim>,
    #[serde(default)]
    muxgate: Option<MuxgateClaim>,
}

/// Whether a `sub` is acceptable: it ends up in logs, audit lines and tmux option values.
pub(crate) fn valid_sub(sub: &str) -> bool {
    let chars = sub.chars().count();
    (1..=MAX_SUB_CHARS).contains(&chars) && !sub.chars().any(char::is_control)
}

#[derive(Deserialize)]
struct RawHeader {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    crit: Option<serde_json::Value>,
}

/// Verifies bearer tokens against the configured keys and claims.
pub struct TokenVerifier {
    keys: KeySet,
    validation: Validation,
}

impl std::fmt::Debug for TokenVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenVerifier")
            .field("algorithm", &self.keys.algorithm)
            .field("keys", &self.keys.keys.len())
            .finish_non_exhaustive()
    }
}

impl TokenVerifier {
    /// Loads keys and builds the claim checks from `[auth]`.
    pub fn from_config(cfg: &AuthConfig) -> Result<Self, AuthConfigError> {
        if cfg.leeway_seconds > MAX_LEEWAY_SECONDS {
            return Err(AuthConfigError::Invalid {
                field: "auth.leeway_seconds".into(),
                reason: format!("{} is more than {MAX_LEEWAY_SECONDS}", cfg.leeway_seconds),
            });
        }
        for (field, value) in [
            ("auth.issuer", &cfg.issuer),
            ("auth.audience", &cfg.audience),
        ] {
            if value.trim().is_empty() {
                return Err(AuthConfigError::Invalid {
                    field: field.into(),
                    reason: "must not be empty".into(),
                });
            }
        }
        let keys = load_verification_keys(cfg)?;
        let mut validation = Validation::new(keys.algorithm.to_jsonwebtoken());
        validation.leeway = cfg.leeway_seconds;
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.validate_aud = true;
        validation.set_issuer(&[cfg.issuer.as_str()]);
        validation.set_audience(&[cfg.audience.as_str()]);
        validation.set_required_spec_claims(&["exp", "sub", "iss", "aud"]);
        Ok(Self { keys, validation })
    }

    pub(crate) fn keys(&self) -> &KeySet {
        &self.keys
    }

    /// Verifies a compact JWT.
    pub fn verify(&self, token: &str) -> Result<VerifiedToken, RejectReason> {
        let header = parse_header(token)?;
        if header.alg != self.keys.algorithm.as_str() {
            return Err(RejectReason::AlgNotAllowed);
        }
        if header.crit.is_some() {
            // No critical extension is understood, so RFC 7515 §4.1.11 says refuse.
            return Err(RejectReason::MalformedToken);
        }
        let has_kids = self.keys.has_kids();
        let candidates: Vec<_> = self
            .keys
            .keys
            .iter()
            .filter(|k| match (&header.kid, has_kids) {
                (Some(kid), true) => k.kid.as_deref() == Some(kid.as_str()),
                _ => true,
            })
            .collect();
        if candidates.is_empty() {
            return Err(RejectReason::UnknownKid);
        }
        for candidate in candidates {
            match jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(
                token,
                &candidate.key,
                &self.validation,
            ) {
                Ok(data) => return claims_to_token(data.claims),
                Err(e) if matches!(e.kind(), ErrorKind::InvalidSignature) => continue,
                Err(e) => return Err(map_error(e.kind())),
            }
        }
        Err(RejectReason::BadSignature)
    }
}

fn is_base64url(segment: &str) -> bool {
    segment
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn parse_header(token: &str) -> Result<RawHeader, RejectReason> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(RejectReason::MalformedToken);
    }
    let segments: Vec<&str> = token.split('.').collect();
    let [header, payload, _signature] = segments.as_slice() else {
        return Err(RejectReason::MalformedToken);
    };
    if header.is_empty() || payload.is_empty() || !segments.iter().all(|s| is_base64url(s)) {
        return Err(RejectReason::MalformedToken);
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| RejectReason::MalformedToken)?;
    serde_json::from_slice(&bytes).map_err(|_| RejectReason::MalformedToken)
}

fn map_error(kind: &ErrorKind) -> RejectReason {
    match kind {
        ErrorKind::InvalidToken
        | ErrorKind::Base64(_)
        | ErrorKind::Json(_)
        | ErrorKind::Utf8(_) => RejectReason::MalformedToken,
        ErrorKind::InvalidSignature => RejectReason::BadSignature,
        ErrorKind::ExpiredSignature => RejectReason::Expired,
        ErrorKind::ImmatureSignature => RejectReason::NotYetValid,
        ErrorKind::InvalidIssuer => RejectReason::BadIssuer,
        ErrorKind::InvalidAudience => RejectReason::BadAudience,
        ErrorKind::MissingRequiredClaim(claim) => match claim.as_str() {
            "iss" => RejectReason::BadIssuer,
            "aud" => RejectReason::BadAudience,
            _ => RejectReason::BadClaims,
        },
        ErrorKind::InvalidClaimFormat(_) | ErrorKind::InvalidSubject => RejectReason::BadClaims,
        ErrorKind::InvalidAlgorithm
        | ErrorKind::MissingAlgorithm
        | ErrorKind::UnsupportedAlgorithm
        | ErrorKind::InvalidAlgorithmName => RejectReason::AlgNotAllowed,
        other => {
            // Key problems surface here only if a key passed the load-time checks but cannot
            // verify: a gateway fault, not the client's. The token is still refused.
            tracing::warn!(error = ?other, "token verification failed on a configured key");
            RejectReason::BadSignature
        }
    }
}

fn claims_to_token(
    claims: serde_json::Map<String, serde_json::Value>,
) -> Result<VerifiedToken, RejectReason> {
    let claims: Claims = serde_json::from_value(serde_json::Value::Object(claims))
        .map_err(|_| RejectReason::BadClaims)?;
    if !valid_sub(&claims.sub) {
        return Err(RejectReason::BadClaims);
    }
    let expires_at = claims
        .exp
        .as_u64()
        .or_else(|| claims.exp.as_f64().map(|f| f as u64))
        .ok_or(RejectReason::BadClaims)?;
    let mut scopes = BTreeSet::new();
    for claim in [claims.scope, claims.scp].into_iter().flatten() {
        scopes.extend(claim.into_scopes());
    }
    if scopes.len() > MAX_SCOPES || scopes.iter().any(|s| s.is_empty() || s.len() > 128) {
        return Err(RejectReason::BadClaims);
    }
    let muxgate = claims.muxgate.unwrap_or_default();
    if muxgate.workspace.as_deref().is_some_and(|w| !valid_sub(w))
        || muxgate.host.as_deref().is_some_and(|h| !valid_sub(h))
    {
        return Err(RejectReason::BadClaims);
    }
    let toolsets = muxgate
        .toolsets
        .as_deref()
        .map(Toolsets::parse)
        .transpose()
        .map_err(|_| RejectReason::BadClaims)?;
    let compile = |list: Option<Vec<String>>| {
        list.map(|l| compile_patterns(&l).map_err(|_| RejectReason::BadClaims))
            .transpose()
    };
    Ok(VerifiedToken {
        sub: claims.sub,
        scopes,
        servers: compile(muxgate.servers)?,
        sessions: compile(muxgate.sessions)?,
        own_sessions: muxgate.own_sessions,
        workspace: muxgate.workspace,
        toolsets,
        host: muxgate.host,
        expires_at,
    })
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Signing helpers for tests: tokens with arbitrary headers and claims.
    use super::*;
    use crate::auth::keys::test_keys::path;
    use jsonwebtoken::{EncodingKey, Header};

    pub(crate) const SECRET: &str = "t8Rq2Vx5Kz9Wm3Pb7Lc1Nf4Hd6Js0Gy-test";

    pub(crate) fn now() -> u64 {
        jsonwebtoken::get_current_timestamp()
    }

    /// Claims that pass with [`AuthConfig::hs256`] defaults.
    pub(crate) fn good_claims() -> serde_json::Value {
        serde_json::json!({
            "sub": "alice",
            "iss": "muxgate",
            "aud": "muxgate",
            "exp": now() + 600,
            "iat": now(),
            "scope": "mux:read mux:write",
        })
    }

    pub(crate) fn hs256(claims: &serde_json::Value, secret: &str) -> String {
        jsonwebtoken::encode(
            &Header::new(jsonwebtoken::Algorithm::HS256),
            claims,
            &EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap()
    }

    pub(crate) fn private_key(alg: jsonwebtoken::Algorithm, file: &str) -> EncodingKey {
        let pem = std::fs::read(path(file)).unwrap();
        match alg {
            jsonwebtoken::Algorithm::RS256 => EncodingKey::from_rsa_pem(&pem),
            jsonwebtoken::Algorithm::ES256 => EncodingKey::from_ec_pem(&pem),
            jsonwebtoken::Algorithm::EdDSA => EncodingKey::from_ed_pem(&pem),
            other => panic!("no PEM signing for {other:?}"),
        }
        .unwrap()
    }

    pub(crate) fn signed(
        alg: jsonwebtoken::Algorithm,
        file: &str,
        kid: Option<&str>,
        claims: &serde_json::Value,
    ) -> String {
        let mut header = Header::new(alg);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &private_key(alg, file)).unwrap()
    }

    /// A token with a hand-written header and an arbitrary signature segment.
    pub(crate) fn raw(
        header: &serde_json::Value,
        claims: &serde_json::Value,
        signature: &str,
    ) -> String {
        format!(
            "{}.{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string()),
            signature
        )
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::auth::config::JwtAlgorithm;
    use crate::auth::keys::test_keys::{asym, path};
    use jsonwebtoken::Algorithm;
    use serde_json::json;

    fn hs_verifier() -> TokenVerifier {
        TokenVerifier::from_config(&AuthConfig::hs256(SECRET)).unwrap()
    }

    fn verifier(alg: JwtAlgorithm, keys: &[(&str, Option<&str>)]) -> TokenVerifier {
        TokenVerifier::from_config(&asym(alg, keys)).unwrap()
    }

    fn with(
        mut claims: serde_json::Value,
        key: &str,
        value: serde_json::Value,
    ) -> serde_json::Value {
        claims[key] = value;
        claims
    }

    fn without(mut claims: serde_json::Value, key: &str) -> serde_json::Value {
        claims.as_object_mut().unwrap().remove(key);
        claims
    }

    #[test]
    fn a_good_hs256_token_verifies() {
        let token = hs256(&good_claims(), SECRET);
        let verified = hs_verifier().verify(&token).unwrap();
        assert_eq!(verified.sub, "alice");
        assert_eq!(
            verified.scopes,
            BTreeSet::from(["mux:read".to_owned(), "mux:write".to_owned()])
        );
        assert_eq!(verified.servers, None);
        assert!(!verified.own_sessions);
    }

    #[test]
    fn each_asymmetric_algorithm_verifies_and_refuses_the_other_key() {
        for (jalg, alg, a, b) in [
            (JwtAlgorithm::RS256, Algorithm::RS256, "rsa_a", "rsa_b"),
            (JwtAlgorithm::ES256, Algorithm::ES256, "ec_a", "ec_b"),
            (JwtAlgorithm::EdDSA, Algorithm::EdDSA, "ed_a", "ed_b"),
        ] {
            let v = verifier(jalg, &[(&format!("{a}.pub.pem"), None)]);
            let good = signed(alg, &format!("{a}.key.pem"), None, &good_claims());
            assert_eq!(v.verify(&good).unwrap().sub, "alice", "{jalg}");
            let wrong = signed(alg, &format!("{b}.key.pem"), None, &good_claims());
            assert_eq!(v.verify(&wrong), Err(RejectReason::BadSignature), "{jalg}");
        }
    }

    #[test]
    fn expired_and_not_yet_valid_respect_the_leeway() {
        let v = hs_verifier(); // leeway 30 s
        let t = |c| hs256(&c, SECRET);
        assert_eq!(
            v.verify(&t(with(good_claims(), "exp", json!(now() - 120)))),
            Err(RejectReason::Expired)
        );
        assert!(
            v.verify(&t(with(good_claims(), "exp", json!(now() - 5))))
                .is_ok()
        );
        assert_eq!(
            v.verify(&t(with(good_claims(), "nbf", json!(now() + 120)))),
            Err(RejectReason::NotYetValid)
        );
        assert!(
            v.verify(&t(with(good_claims(), "nbf", json!(now() + 5))))
                .is_ok()
        );
    }

    #[test]
    fn issuer_audience_and_claims_are_checked() {
        let v = hs_verifier();
        let t = |c| hs256(&c, SECRET);
        assert_eq!(
            v.verify(&t(with(good_claims(), "iss", json!("evil")))),
            Err(RejectReason::BadIssuer)
        );
        assert_eq!(
            v.verify(&t(without(good_claims(), "iss"))),
            Err(RejectReason::BadIssuer)
        );
        assert_eq!(
            v.verify(&t(with(good_claims(), "aud", json!("other")))),
            Err(RejectReason::BadAudience)
        );
        assert!(
            v.verify(&t(with(good_claims(), "aud", json!(["other", "muxgate"]))))
                .is_ok()
        );
        assert_eq!(
            v.verify(&t(without(good_claims(), "aud"))),
            Err(RejectReason::BadAudience)
        );
        assert_eq!(
            v.verify(&t(without(good_claims(), "sub"))),
            Err(RejectReason::BadClaims)
        );
        assert_eq!(
            v.verify(&t(without(good_claims(), "exp"))),
            Err(RejectReason::BadClaims)
        );
        assert_eq!(
            v.verify(&t(with(good_claims(), "sub", json!("a\nb")))),
            Err(RejectReason::BadClaims)
        );
        assert_eq!(
            v.verify(&t(with(good_claims(), "sub", json!("")))),
            Err(RejectReason::BadClaims)
        );
        assert_eq!(
            v.verify(&t(with(good_claims(), "exp", json!("tomorrow")))),
            Err(RejectReason::BadClaims)
        );
        assert_eq!(
            v.verify(&t(with(good_claims(), "scope", json!(42)))),
            Err(RejectReason::BadClaims)
        );
    }

    #[test]
    fn scopes_from_scope_and_scp_and_the_muxgate_claim() {
        let v = hs_verifier();
        let claims = with(
            with(good_claims(), "scp", json!(["mux:admin"])),
            "muxgate",
            json!({ "servers": ["build"], "sessions": ["ci-*"], "own_sessions": true }),
        );
        let verified = v.verify(&hs256(&claims, SECRET)).unwrap();
        assert!(verified.scopes.contains("mux:admin") && verified.scopes.contains("mux:read"));
        assert_eq!(verified.servers.unwrap()[0].to_string(), "build");
        assert_eq!(verified.sessions.unwrap()[0].to_string(), "ci-*");
        assert!(verified.own_sessions);

        let typo = with(good_claims(), "muxgate", json!({ "sesions": ["x"] }));
        assert_eq!(
            v.verify(&hs256(&typo, SECRET)),
            Err(RejectReason::BadClaims)
        );
        let empty_pattern = with(good_claims(), "muxgate", json!({ "sessions": [""] }));
        assert_eq!(
            v.verify(&hs256(&empty_pattern, SECRET)),
            Err(RejectReason::BadClaims)
        );
    }

    #[test]
    fn wrong_secret_is_a_bad_signature() {
        let token = hs256(&good_claims(), "another-secret-another-secret-another!");
        assert_eq!(
            hs_verifier().verify(&token),
            Err(RejectReason::BadSignature)
        );
    }

    #[test]
    fn claims_are_not_judged_before_the_signature() {
        let expired = with(good_claims(), "exp", json!(1));
        let token = hs256(&expired, "another-secret-another-secret-another!");
        assert_eq!(
            hs_verifier().verify(&token),
            Err(RejectReason::BadSignature)
        );
    }

    #[test]
    fn malformed_tokens() {
        let v = hs_verifier();
        let good = hs256(&good_claims(), SECRET);
        let parts: Vec<&str> = good.split('.').collect();
        for bad in [
            "".to_owned(),
            "abc".to_owned(),
            "a.b".to_owned(),
            format!("{good}.x"),
            format!("{}.{}", parts[0], parts[1]),
            format!("..{}", parts[2]),
            format!("{}!.{}.{}", parts[0], parts[1], parts[2]),
            format!(
                "{}.{}.{}",
                URL_SAFE_NO_PAD.encode("not json"),
                parts[1],
                parts[2]
            ),
            format!("{}.{}.{}", URL_SAFE_NO_PAD.encode("{}"), parts[1], parts[2]),
            "a".repeat(MAX_TOKEN_BYTES + 1),
        ] {
            assert_eq!(
                v.verify(&bad),
                Err(RejectReason::MalformedToken),
                "{bad:.60}"
            );
        }
        // A validly signed token whose payload is not a JSON object.
        let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256"}"#);
        let payload = URL_SAFE_NO_PAD.encode("[1,2]");
        let signing_input = format!("{header}.{payload}");
        let sig = jsonwebtoken::crypto::sign(
            signing_input.as_bytes(),
            &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
            Algorithm::HS256,
        )
        .unwrap();
        assert_eq!(
            v.verify(&format!("{signing_input}.{sig}")),
            Err(RejectReason::MalformedToken)
        );
    }

    #[test]
    fn alg_none_is_refused_in_every_spelling() {
        let v = hs_verifier();
        for alg in ["none", "None", "NONE", "nOnE"] {
            let token = raw(&json!({ "alg": alg, "typ": "JWT" }), &good_claims(), "");
            assert_eq!(v.verify(&token), Err(RejectReason::AlgNotAllowed), "{alg}");
        }
        let rsa = verifier(JwtAlgorithm::RS256, &[("rsa_a.pub.pem", None)]);
        let token = raw(&json!({ "alg": "none" }), &good_claims(), "");
        assert_eq!(rsa.verify(&token), Err(RejectReason::AlgNotAllowed));
    }

    #[test]
    fn hs_rs_confusion_is_refused() {
        // The classic attack: HMAC-sign with the server's RSA *public key* as the secret.
        let public_pem = std::fs::read(path("rsa_a.pub.pem")).unwrap();
        let token = jsonwebtoken::encode(
            &jsonwebtoken::Header::new(Algorithm::HS256),
            &good_claims(),
            &jsonwebtoken::EncodingKey::from_secret(&public_pem),
        )
        .unwrap();
        let rsa = verifier(JwtAlgorithm::RS256, &[("rsa_a.pub.pem", None)]);
        assert_eq!(rsa.verify(&token), Err(RejectReason::AlgNotAllowed));
        // And the other way round: an RS256 token on an HS256 gateway.
        let token = signed(Algorithm::RS256, "rsa_a.key.pem", None, &good_claims());
        assert_eq!(
            hs_verifier().verify(&token),
            Err(RejectReason::AlgNotAllowed)
        );
        // A sibling algorithm of the configured family is refused as well.
        let token = jsonwebtoken::encode(
            &jsonwebtoken::Header::new(Algorithm::PS256),
            &good_claims(),
            &private_key(Algorithm::RS256, "rsa_a.key.pem"),
        )
        .unwrap();
        assert_eq!(rsa.verify(&token), Err(RejectReason::AlgNotAllowed));
    }

    #[test]
    fn kids_select_keys() {
        let v = verifier(
            JwtAlgorithm::ES256,
            &[("ec_a.pub.pem", Some("a")), ("ec_b.pub.pem", Some("b"))],
        );
        let by_a = signed(Algorithm::ES256, "ec_a.key.pem", Some("a"), &good_claims());
        assert!(v.verify(&by_a).is_ok());
        let by_b = signed(Algorithm::ES256, "ec_b.key.pem", Some("b"), &good_claims());
        assert!(v.verify(&by_b).is_ok());
        let unknown = signed(
            Algorithm::ES256,
            "ec_a.key.pem",
            Some("zzz"),
            &good_claims(),
        );
        assert_eq!(v.verify(&unknown), Err(RejectReason::UnknownKid));
        // Key a's signature presented under kid b does not verify with key b.
        let swapped = signed(Algorithm::ES256, "ec_a.key.pem", Some("b"), &good_claims());
        assert_eq!(v.verify(&swapped), Err(RejectReason::BadSignature));
        // Without a kid every key is tried.
        let no_kid = signed(Algorithm::ES256, "ec_b.key.pem", None, &good_claims());
        assert!(v.verify(&no_kid).is_ok());
    }

    #[test]
    fn crit_header_is_refused() {
        let token = raw(
            &json!({ "alg": "HS256", "crit": ["exp"] }),
            &good_claims(),
            "AAAA",
        );
        assert_eq!(
            hs_verifier().verify(&token),
            Err(RejectReason::MalformedToken)
        );
    }

    #[test]
    fn reasons_have_distinct_names_and_oauth_codes() {
        let names: BTreeSet<_> = RejectReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(names.len(), RejectReason::ALL.len());
        assert_eq!(RejectReason::Missing.oauth_error(), None);
        assert_eq!(
            RejectReason::MalformedHeader.oauth_error(),
            Some("invalid_request")
        );
        assert_eq!(RejectReason::Expired.oauth_error(), Some("invalid_token"));
    }

    #[test]
    fn config_values_are_checked() {
        let mut cfg = AuthConfig::hs256(SECRET);
        cfg.leeway_seconds = 301;
        assert!(
            TokenVerifier::from_config(&cfg)
                .unwrap_err()
                .to_string()
                .contains("leeway_seconds")
        );
        let mut cfg = AuthConfig::hs256(SECRET);
        cfg.audience = " ".into();
        assert!(
            TokenVerifier::from_config(&cfg)
                .unwrap_err()
                .to_string()
                .contains("auth.audience")
        );
    }
}
