//! Minting tokens with the gateway's own key (`muxgate token`, and the ready token printed
//! for the embedded default), plus random HS256 secrets.
//!
//! HS256 mints with the configured secret. Asymmetric configurations mint only with
//! `auth.signing_key_file` (a PKCS#8 PEM private key), which must match one of the configured
//! public keys; the token carries that key's `kid`. Every minter checks itself at construction
//! by verifying a probe token with the gateway's own verifier, so it never hands out a token
//! the gateway would refuse.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{EncodingKey, Header};
use rand::RngCore;
use serde::Serialize;

use super::config::{AuthConfig, AuthConfigError, JwtAlgorithm};
use super::keys::{load_secret, read_file};
use super::pattern::compile_patterns;
use super::principal::{KNOWN_SCOPES, SCOPE_READ};
use super::token::{MuxgateClaim, TokenVerifier, valid_sub};
use super::toolset::Toolsets;

/// Longest lifetime a minted token may have.
pub(crate) const MAX_TTL: Duration = Duration::from_secs(366 * 24 * 3600);

/// A token to mint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MintRequest {
    /// Subject (client identity).
    pub sub: String,
    /// Scopes; each must be one of [`KNOWN_SCOPES`].
    pub scopes: Vec<String>,
    /// Lifetime.
    pub ttl: Duration,
    /// Server-name patterns (none: unrestricted by the token).
    pub servers: Option<Vec<String>>,
    /// Session-name patterns (none: unrestricted by the token).
    pub sessions: Option<Vec<String>>,
    /// Restrict the client to the sessions it creates.
    pub own_sessions: bool,
    /// The workspace the client works in (none: its own, named by `sub`).
    pub workspace: Option<String>,
    /// The toolsets the client is shown (none: its configured ones).
    pub toolsets: Option<Vec<String>>,
}

/// Why a token could not be minted.
#[derive(Debug, thiserror::Error)]
pub enum MintError {
    /// The configuration cannot sign.
    #[error(
        "cannot mint {0} tokens without a private key: set `auth.signing_key_file` to the PEM private key \
         matching one of the configured public keys, or have your authorization server issue tokens"
    )]
    NoSigningKey(JwtAlgorithm),
    /// The signing key does not belong to any configured public key.
    #[error("auth.signing_key_file does not match any configured public key")]
    KeyMismatch,
    /// The key or configuration is unusable.
    #[error(transparent)]
    Config(#[from] AuthConfigError),
    /// The request is invalid.
    #[error("{0}")]
    BadRequest(String),
    /// Signing failed.
    #[error("signing failed: {0}")]
    Signing(String),
}

#[derive(Serialize)]
struct MintClaims<'a> {
    iss: &'a str,
    aud: &'a str,
    sub: &'a str,
    iat: u64,
    nbf: u64,
    exp: u64,
    scope: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    muxgate: Option<MuxgateClaim>,
}

/// The `sub` of host `name`'s token.
fn host_sub(name: &str) -> String {
    format!("host:{name}")
}

/// Signs tokens for this gateway.
pub struct TokenMinter {
    key: EncodingKey,
    algorithm: JwtAlgorithm,
    kid: Option<String>,
    issuer: String,
    audience: String,
}

impl std::fmt::Debug for TokenMinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenMinter")
            .field("algorithm", &self.algorithm)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl TokenMinter {
    /// A minter for `[auth]`, checked against the gateway's own verifier.
    pub fn from_config(cfg: &AuthConfig) -> Result<Self, MintError> {
        let verifier = TokenVerifier::from_config(cfg)?;
        let algorithm = cfg.algorithm;
        let (key, kid) = if algorithm.is_symmetric() {
            (EncodingKey::from_secret(&load_secret(cfg)?), None)
        } else {
            let path = cfg
                .signing_key_file
                .as_ref()
                .ok_or(MintError::NoSigningKey(algorithm))?;
            let pem = read_file(path)?;
            let origin = path.display().to_string();
            let parsed = match algorithm {
                JwtAlgorithm::RS256 => EncodingKey::from_rsa_pem(&pem),
                JwtAlgorithm::ES256 => EncodingKey::from_ec_pem(&pem),
                JwtAlgorithm::EdDSA => EncodingKey::from_ed_pem(&pem),
                JwtAlgorithm::HS256 => return Err(MintError::NoSigningKey(algorithm)),
            };
            let key = parsed.map_err(|e| AuthConfigError::BadKey {
                origin: origin.clone(),
                reason: format!("not a {algorithm} private key in PKCS#8 PEM ({e})"),
            })?;
            let public = Jwk::from_encoding_key(&key, algorithm.to_jsonwebtoken())
                .map_err(|e| AuthConfigError::BadKey {
                    origin,
                    reason: format!("cannot derive the public key ({e})"),
                })?
                .algorithm;
            let matching = verifier
                .keys()
                .keys
                .iter()
                .find(|k| k.public.as_ref() == Some(&public))
                .ok_or(MintError::KeyMismatch)?;
            (key, matching.kid.clone())
        };
        let minter = Self {
            key,
            algorithm,
            kid,
            issuer: cfg.issuer.clone(),
            audience: cfg.audience.clone(),
        };
        let probe = minter.mint(&MintRequest {
            sub: "muxgate-self-check".into(),
            scopes: vec![SCOPE_READ.into()],
            ttl: Duration::from_secs(60),
            servers: None,
            sessions: None,
            own_sessions: false,
            workspace: None,
            toolsets: None,
        })?;
        verifier
            .verify(&probe)
            .map_err(|_| MintError::KeyMismatch)?;
        Ok(minter)
    }

    /// Mints host `name`'s token: it lets that host dial in (`muxgate host connect`) and
    /// grants nothing else (no scope; the gateway refuses it everywhere but `/hosts/connect`).
    pub fn mint_host(&self, name: &str, ttl: Duration) -> Result<String, MintError> {
        if !valid_sub(name) {
            return Err(MintError::BadRequest(
                "a host name is 1-256 characters without control characters".into(),
            ));
        }
        if ttl.is_zero() || ttl > MAX_TTL {
            return Err(MintError::BadRequest(
                "ttl must be between 1 second and 366 days".into(),
            ));
        }
        let now = jsonwebtoken::get_current_timestamp();
        let sub = host_sub(name);
        let claims = MintClaims {
            iss: &self.issuer,
            aud: &self.audience,
            sub: &sub,
            iat: now,
            nbf: now,
            exp: now + ttl.as_secs(),
            scope: String::new(),
            muxgate: Some(MuxgateClaim {
                host: Some(name.to_owned()),
                ..MuxgateClaim::default()
            }),
        };
        let mut header = Header::new(self.algorithm.to_jsonwebtoken());
        header.kid = self.kid.clone();
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| MintError::Signing(e.to_string()))
    }

    /// Mints a token.
    pub fn mint(&self, req: &MintRequest) -> Result<String, MintError> {
        let bad = |m: String| MintError::BadRequest(m);
        if !valid_sub(&req.sub) {
            return Err(bad(
                "sub must be 1-256 characters without control characters".into(),
            ));
        }
        if req.scopes.is_empty() {
            return Err(bad(format!(
                "at least one scope is needed ({})",
                KNOWN_SCOPES.join(", ")
            )));
        }
        if let Some(unknown) = req
            .scopes
            .iter()
            .find(|s| !KNOWN_SCOPES.contains(&s.as_str()))
        {
            return Err(bad(format!(
                "unknown scope `{unknown}`; known scopes: {}",
                KNOWN_SCOPES.join(", ")
            )));
        }
        if req.ttl.is_zero() || req.ttl > MAX_TTL {
            return Err(bad("ttl must be between 1 second and 366 days".into()));
        }
        for (name, list) in [("servers", &req.servers), ("sessions", &req.sessions)] {
            if let Some(list) = list {
                compile_patterns(list)
                    .map_err(|(p, e)| bad(format!("{name}: pattern {p:?}: {e}")))?;
            }
        }
        if let Some(workspace) = &req.workspace
            && !valid_sub(workspace)
        {
            return Err(bad(
                "workspace must be 1-256 characters without control characters".into(),
            ));
        }
        if let Some(toolsets) = &req.toolsets {
            Toolsets::parse(toolsets).map_err(|e| bad(format!("toolsets: {e}")))?;
        }
        let now = jsonwebtoken::get_current_timestamp();
        let muxgate = MuxgateClaim {
            servers: req.servers.clone(),
            sessions: req.sessions.clone(),
            own_sessions: req.own_sessions,
            workspace: req.workspace.clone(),
            toolsets: req.toolsets.clone(),
            host: None,
        };
        let claims = MintClaims {
            iss: &self.issuer,
            aud: &self.audience,
            sub: &req.sub,
            iat: now,
            nbf: now,
            exp: now + req.ttl.as_secs(),
            scope: req.scopes.join(" "),
            muxgate: (muxgate != MuxgateClaim::default()).then_some(muxgate),
        };
        let mut header = Header::new(self.algorithm.to_jsonwebtoken());
        header.kid = self.kid.clone();
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| MintError::Signing(e.to_string()))
    }
}

/// A fresh random HS256 secret: 32 bytes from the OS-seeded CSPRNG, base64url (43 characters).
pub fn generate_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Parses a lifetime such as `90s`, `30m`, `24h` or `7d` (a bare number is seconds).
pub fn parse_ttl(text: &str) -> Result<Duration, MintError> {
    let text = text.trim();
    let bad = || {
        MintError::BadRequest(format!(
            "invalid ttl {text:?}: use e.g. 90s, 30m, 24h or 7d"
        ))
    };
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        "d" => n.checked_mul(86_400),
        _ => None,
    }
    .ok_or_else(bad)?;
    Ok(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::config::PublicKeyConfig;
    use crate::auth::keys::test_keys::path;
    use crate::auth::principal::{SCOPE_ADMIN, SCOPE_WRITE};
    use crate::auth::token::test_support::SECRET;

    fn request() -> MintRequest {
        MintRequest {
            sub: "ci-bot".into(),
            scopes: vec![SCOPE_READ.into(), SCOPE_WRITE.into()],
            ttl: Duration::from_secs(3600),
            servers: Some(vec!["build".into()]),
            sessions: Some(vec!["ci-*".into()]),
            own_sessions: true,
            workspace: None,
            toolsets: None,
        }
    }

    fn asym(
        alg: JwtAlgorithm,
        public: &str,
        kid: Option<&str>,
        private: Option<&str>,
    ) -> AuthConfig {
        AuthConfig {
            algorithm: alg,
            public_keys: vec![PublicKeyConfig {
                file: path(public),
                kid: kid.map(str::to_owned),
            }],
            signing_key_file: private.map(path),
            ..AuthConfig::default()
        }
    }

    #[test]
    fn hs256_minted_tokens_verify_with_every_claim() {
        let cfg = AuthConfig::hs256(SECRET);
        let token = TokenMinter::from_config(&cfg)
            .unwrap()
            .mint(&request())
            .unwrap();
        let verified = TokenVerifier::from_config(&cfg)
            .unwrap()
            .verify(&token)
            .unwrap();
        assert_eq!(verified.sub, "ci-bot");
        assert!(verified.scopes.contains(SCOPE_WRITE));
        assert_eq!(verified.servers.unwrap()[0].to_string(), "build");
        assert_eq!(verified.sessions.unwrap()[0].to_string(), "ci-*");
        assert!(verified.own_sessions);
        let now = jsonwebtoken::get_current_timestamp();
        assert!((now + 3590..=now + 3610).contains(&verified.expires_at));
    }

    #[test]
    fn asymmetric_minting_uses_the_matching_kid() {
        for (alg, public, private) in [
            (JwtAlgorithm::RS256, "rsa_a.pub.pem", "rsa_a.key.pem"),
            (JwtAlgorithm::ES256, "ec_a.pub.pem", "ec_a.key.pem"),
            (JwtAlgorithm::EdDSA, "ed_a.pub.pem", "ed_a.key.pem"),
        ] {
            let cfg = asym(alg, public, Some("k1"), Some(private));
            let token = TokenMinter::from_config(&cfg)
                .unwrap()
                .mint(&request())
                .unwrap();
            assert_eq!(
                jsonwebtoken::decode_header(&token).unwrap().kid.as_deref(),
                Some("k1")
            );
            assert!(
                TokenVerifier::from_config(&cfg)
                    .unwrap()
                    .verify(&token)
                    .is_ok(),
                "{alg}"
            );
        }
    }

    #[test]
    fn asymmetric_minting_needs_a_matching_private_key() {
        let err = TokenMinter::from_config(&asym(JwtAlgorithm::EdDSA, "ed_a.pub.pem", None, None))
            .unwrap_err();
        assert!(err.to_string().contains("signing_key_file"), "{err}");
        let err = TokenMinter::from_config(&asym(
            JwtAlgorithm::EdDSA,
            "ed_a.pub.pem",
            None,
            Some("ed_b.key.pem"),
        ))
        .unwrap_err();
        assert!(matches!(err, MintError::KeyMismatch), "{err}");
        let err = TokenMinter::from_config(&asym(
            JwtAlgorithm::ES256,
            "ec_a.pub.pem",
            None,
            Some("rsa_a.key.pem"),
        ))
        .unwrap_err();
        assert!(err.to_string().contains("not a ES256 private key"), "{err}");
    }

    #[test]
    fn toolsets_travel_in_the_claim_and_unknown_ones_are_refused() {
        let cfg = AuthConfig::hs256(SECRET);
        let minter = TokenMinter::from_config(&cfg).unwrap();
        let verifier = TokenVerifier::from_config(&cfg).unwrap();
        let token = minter
            .mint(&MintRequest {
                toolsets: Some(vec!["inspect".into(), "layout".into()]),
                ..request()
            })
            .unwrap();
        let toolsets = verifier.verify(&token).unwrap().toolsets.unwrap();
        assert!(toolsets.contains(crate::auth::Toolset::Layout));
        assert!(!toolsets.contains(crate::auth::Toolset::Run));
        let refused = minter.mint(&MintRequest {
            toolsets: Some(vec!["everything".into()]),
            ..request()
        });
        assert!(refused.unwrap_err().to_string().contains("everything"));
        // A token signed elsewhere that names a toolset this gateway does not know.
        let now = jsonwebtoken::get_current_timestamp();
        let claims = serde_json::json!({"iss": "muxgate", "aud": "muxgate", "sub": "x",
            "iat": now, "exp": now + 60, "scope": "mux:read",
            "muxgate": {"toolsets": ["everything"]}});
        let forged = jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
        )
        .unwrap();
        assert!(matches!(
            verifier.verify(&forged),
            Err(crate::auth::RejectReason::BadClaims)
        ));
    }

    #[test]
    fn bad_requests_are_refused() {
        let minter = TokenMinter::from_config(&AuthConfig::hs256(SECRET)).unwrap();
        let cases: Vec<(MintRequest, &str)> = vec![
            (
                MintRequest {
                    sub: String::new(),
                    ..request()
                },
                "sub must be",
            ),
            (
                MintRequest {
                    scopes: vec![],
                    ..request()
                },
                "at least one scope",
            ),
            (
                MintRequest {
                    scopes: vec!["tmux:read".into()],
                    ..request()
                },
                "unknown scope",
            ),
            (
                MintRequest {
                    ttl: Duration::ZERO,
                    ..request()
                },
                "ttl",
            ),
            (
                MintRequest {
                    ttl: MAX_TTL + Duration::from_secs(1),
                    ..request()
                },
                "ttl",
            ),
            (
                MintRequest {
                    sessions: Some(vec![String::new()]),
                    ..request()
                },
                "sessions",
            ),
        ];
        for (req, needle) in cases {
            let err = minter.mint(&req).unwrap_err().to_string();
            assert!(err.contains(needle), "{err}");
        }
        let admin = MintRequest {
            scopes: vec![SCOPE_ADMIN.into()],
            servers: None,
            sessions: None,
            own_sessions: false,
            workspace: None,
            toolsets: None,
            ..request()
        };
        let token = minter.mint(&admin).unwrap();
        let payload = token.split('.').nth(1).unwrap();
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        assert!(
            claims.get("muxgate").is_none(),
            "no empty private claim: {claims}"
        );
    }

    #[test]
    fn secrets_are_random_and_long_enough() {
        let a = generate_secret();
        let b = generate_secret();
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        assert!(TokenMinter::from_config(&AuthConfig::hs256(a)).is_ok());
    }

    #[test]
    fn ttl_parsing() {
        assert_eq!(parse_ttl("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_ttl("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_ttl("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_ttl("24h").unwrap(), Duration::from_secs(86_400));
        assert_eq!(parse_ttl(" 7d ").unwrap(), Duration::from_secs(604_800));
        for bad in ["", "h", "1w", "-1h", "1.5h", "99999999999999999999d", "1hh"] {
            assert!(parse_ttl(bad).is_err(), "{bad}");
        }
    }
}
