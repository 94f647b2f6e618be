//! Configuration of authentication (`[auth]`) and of per-client policy (`[clients.<sub>]`).
//!
//! These are plain serde structs that reject unknown keys; turning them into working objects
//! (loading keys, compiling patterns) happens in [`super::Authenticator::new`] and
//! [`super::TokenMinter::from_config`], which report every problem as an [`AuthConfigError`].
//!
//! ```toml
//! [auth]
//! issuer = "muxgate"                 # tokens must carry exactly this `iss`
//! audience = "muxgate"               # ... and this `aud`
//! leeway_seconds = 30                # clock skew allowed on `exp` / `nbf` (at most 300)
//! algorithm = "HS256"                # the ONLY algorithm accepted: HS256 | RS256 | ES256 | EdDSA
//! secret = "…"                       # HS256: at least 32 bytes (or `secret_file = "path"`)
//! # RS256 / ES256 / EdDSA instead: public keys from PEM files and/or a JWKS file
//! # public_keys = [{ file = "keys/idp.pem", kid = "2026-08" }]
//! # jwks_file = "keys/jwks.json"
//! # signing_key_file = "keys/idp.key.pem"   # private key, only for `muxgate token`
//! resource = "https://gw.example.com/mcp"  # RFC 9728 resource identifier (default: from listen address)
//! authorization_servers = ["https://idp.example.com"]
//!
//! [clients.ci-bot]                   # keyed by the token's `sub`
//! scopes = ["mux:read", "mux:write"] # ceiling: token scopes outside it are ignored
//! servers = ["build"]                # server-name patterns this client may use
//! sessions = ["ci-*"]                # session-name patterns this client may see
//! own_sessions = true                # see only the sessions it created (plus `sessions` grants)
//! toolsets = ["inspect", "run"]      # tool families listed (default: inspect, run, manage, zellij)
//! [clients.ci-bot.limits]            # per-client overrides of `[limits]`
//! tool_calls_per_second = 5
//! ```

use std::fmt;
use std::path::PathBuf;

use serde::Deserialize;

/// The default `iss` and `aud` when the configuration names none.
pub const DEFAULT_ISSUER: &str = "muxgate";
/// The default audience; see [`DEFAULT_ISSUER`].
pub const DEFAULT_AUDIENCE: &str = "muxgate";
/// Largest accepted `leeway_seconds`: more would make `exp` meaningless.
pub const MAX_LEEWAY_SECONDS: u64 = 300;

/// `[auth]`: how bearer tokens are verified (and minted).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// Required `iss` claim.
    pub issuer: String,
    /// Required `aud` claim (one of the token's audiences must equal it).
    pub audience: String,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    pub leeway_seconds: u64,
    /// The one signature algorithm accepted. Tokens with any other `alg` are refused, which
    /// rules out `alg: none` and HS/RS key confusion by construction.
    pub algorithm: JwtAlgorithm,
    /// HS256 shared secret (its UTF-8 bytes are the key).
    pub secret: Option<SecretString>,
    /// HS256 shared secret read from a file (surrounding whitespace trimmed).
    pub secret_file: Option<PathBuf>,
    /// Asymmetric algorithms: public keys in PEM (SPKI `PUBLIC KEY`, or `RSA PUBLIC KEY`).
    pub public_keys: Vec<PublicKeyConfig>,
    /// Asymmetric algorithms: a JWKS document (RFC 7517) on disk. Keys of another type or
    /// algorithm, and encryption keys, are skipped.
    pub jwks_file: Option<PathBuf>,
    /// Asymmetric algorithms: the private key (PKCS#8 PEM) used by `muxgate token`. It must
    /// match one of the configured public keys.
    pub signing_key_file: Option<PathBuf>,
    /// RFC 9728 resource identifier (absolute `http(s)` URL of the MCP endpoint).
    pub resource: Option<String>,
    /// Authorization servers advertised in the protected-resource metadata.
    pub authorization_servers: Vec<String>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            issuer: DEFAULT_ISSUER.to_owned(),
            audience: DEFAULT_AUDIENCE.to_owned(),
            leeway_seconds: 30,
            algorithm: JwtAlgorithm::HS256,
            secret: None,
            secret_file: None,
            public_keys: Vec::new(),
            jwks_file: None,
            signing_key_file: None,
            resource: None,
            authorization_servers: Vec::new(),
        }
    }
}

impl AuthConfig {
    /// An HS256 configuration with the default issuer and audience (the embedded default).
    pub fn hs256(secret: impl Into<String>) -> Self {
        Self {
            secret: Some(SecretString::new(secret)),
            ..Self::default()
        }
    }
}

/// The signature algorithms a deployment can choose from (exactly one at a time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum JwtAlgorithm {
    /// HMAC-SHA256 with a shared secret.
    #[default]
    HS256,
    /// RSASSA-PKCS1-v1_5 with SHA-256; keys of at least 2048 bits.
    RS256,
    /// ECDSA on P-256 with SHA-256.
    ES256,
    /// Ed25519.
    EdDSA,
}

impl JwtAlgorithm {
    /// The `alg` header value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HS256 => "HS256",
            Self::RS256 => "RS256",
            Self::ES256 => "ES256",
            Self::EdDSA => "EdDSA",
        }
    }

    /// Whether the algorithm uses a shared secret rather than a key pair.
    pub fn is_symmetric(self) -> bool {
        self == Self::HS256
    }

    pub(crate) fn to_jsonwebtoken(self) -> jsonwebtoken::Algorithm {
        match self {
            Self::HS256 => jsonwebtoken::Algorithm::HS256,
            Self::RS256 => jsonwebtoken::Algorithm::RS256,
            Self::ES256 => jsonwebtoken::Algorithm::ES256,
            Self::EdDSA => jsonwebtoken::Algorithm::EdDSA,
        }
    }
}

impl fmt::Display for JwtAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One public key file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublicKeyConfig {
    /// PEM file holding the public key.
    pub file: PathBuf,
    /// Key id matched against the token header's `kid`.
    pub kid: Option<String>,
}

/// `[clients.<sub>]`: what one client (token subject) may do, merged with its token's claims.
///
/// Merge rule: **both must allow**. The configuration is a ceiling on the token and the token a
/// ceiling on the configuration: scopes are intersected, server and session patterns must both
/// match, `own_sessions` is on if either turns it on. Neither source can widen the other.
/// An absent key means "no restriction from this source"; an empty list means "nothing".
///
/// Its `limits` table is not authentication's: `L` is the type the configuration reads it as
/// (`crate::config::Config`), and nothing here looks at it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    bound(deserialize = "L: Deserialize<'de> + Default")
)]
pub struct ClientPolicyConfig<L> {
    /// Scopes this client may use (intersected with the token's).
    pub scopes: Option<Vec<String>>,
    /// Server-name patterns (`*` and `?` wildcards).
    pub servers: Option<Vec<String>>,
    /// Session-name patterns (`*` and `?` wildcards).
    pub sessions: Option<Vec<String>>,
    /// Hide sessions this client did not create unless `sessions` grants them by name.
    #[serde(default)]
    pub own_sessions: bool,
    /// The workspace (team) this client works in, in workspace mode; default: its own,
    /// named by its `sub`. It wins over the token's `workspace` claim and, unlike the claim,
    /// needs no `[workspaces] teams` entry.
    #[serde(default)]
    pub workspace: Option<String>,
    /// The toolsets this client is shown (see [`super::Toolsets`]); a token's claim wins.
    #[serde(default)]
    pub toolsets: Option<Vec<String>>,
    /// Per-client overrides of the global `[limits]`.
    #[serde(default)]
    pub limits: L,
}

/// `[clients_default]`: the policy of a token whose `sub` has no `[clients.<sub>]` entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultClientConfig {
    /// Whether such tokens are accepted at all. Default: yes with an HS256 secret (whoever
    /// holds it mints the tokens), no with public keys (an identity provider's every user
    /// would otherwise get in).
    pub allow: Option<bool>,
    /// Scopes such a client may use (intersected with the token's).
    pub scopes: Option<Vec<String>>,
    /// Server-name patterns.
    pub servers: Option<Vec<String>>,
    /// Session-name patterns.
    pub sessions: Option<Vec<String>>,
    /// See only the sessions it created (plus `sessions` grants).
    #[serde(default)]
    pub own_sessions: bool,
    /// The toolsets such a client is shown.
    #[serde(default)]
    pub toolsets: Option<Vec<String>>,
}

impl DefaultClientConfig {
    /// Whether unlisted clients are accepted with `algorithm`.
    pub fn allows_unlisted(&self, algorithm: JwtAlgorithm) -> bool {
        self.allow.unwrap_or(algorithm.is_symmetric())
    }

    /// The policy as a client entry, when it restricts anything (else the token decides).
    pub fn as_client(&self) -> Option<ClientPolicyConfig<()>> {
        let restricts = self.scopes.is_some()
            || self.servers.is_some()
            || self.sessions.is_some()
            || self.own_sessions
            || self.toolsets.is_some();
        restricts.then(|| ClientPolicyConfig {
            scopes: self.scopes.clone(),
            servers: self.servers.clone(),
            sessions: self.sessions.clone(),
            own_sessions: self.own_sessions,
            toolsets: self.toolsets.clone(),
            ..ClientPolicyConfig::default()
        })
    }
}

/// A secret string whose `Debug` output never shows the value.
#[derive(Clone, Deserialize)]
#[serde(transparent)]
pub struct SecretString(String);

impl SecretString {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The secret itself; call only where the key material is needed.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretString(<redacted>)")
    }
}

/// A configuration problem found while building the authentication objects.
#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    /// No usable key.
    #[error("auth: no verification key: {0}")]
    NoKey(String),
    /// Keys given that do not fit the configured algorithm.
    #[error("auth: {0}")]
    Conflict(String),
    /// The HS256 secret is too short to resist guessing.
    #[error(
        "auth: the HS256 secret has {0} bytes; use at least 32 (`muxgate token` can generate one)"
    )]
    WeakSecret(usize),
    /// The HS256 secret is obviously not random (a placeholder left in place, say).
    #[error(
        "auth: the HS256 secret is not random: {0}; generate one, e.g. `head -c 32 /dev/urandom | base64`"
    )]
    GuessableSecret(&'static str),
    /// A key file could not be read.
    #[error("auth: cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A key could not be parsed or is unsuitable.
    #[error("auth: bad key in {origin}: {reason}")]
    BadKey {
        /// Where the key came from (file name, JWKS entry).
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// Another value is invalid.
    #[error("auth: {field}: {reason}")]
    Invalid {
        /// The config key, e.g. `auth.resource` or `clients.bot.sessions`.
        field: String,
        /// What is wrong.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::IgnoredAny;

    #[test]
    fn full_auth_section_parses() {
        let cfg: AuthConfig = toml::from_str(
            r#"
            issuer = "idp"
            audience = "https://gw/mcp"
            leeway_seconds = 10
            algorithm = "RS256"
            public_keys = [{ file = "a.pem", kid = "a" }, { file = "b.pem" }]
            jwks_file = "jwks.json"
            signing_key_file = "a.key.pem"
            resource = "https://gw/mcp"
            authorization_servers = ["https://idp"]
            "#,
        )
        .unwrap();
        assert_eq!(cfg.algorithm, JwtAlgorithm::RS256);
        assert_eq!(cfg.public_keys.len(), 2);
        assert_eq!(cfg.public_keys[0].kid.as_deref(), Some("a"));
        assert_eq!(cfg.leeway_seconds, 10);
    }

    #[test]
    fn defaults_apply_to_an_empty_section() {
        let cfg: AuthConfig = toml::from_str("").unwrap();
        assert_eq!(cfg.issuer, DEFAULT_ISSUER);
        assert_eq!(cfg.audience, DEFAULT_AUDIENCE);
        assert_eq!(cfg.algorithm, JwtAlgorithm::HS256);
        assert!(cfg.secret.is_none());
    }

    #[test]
    fn unknown_keys_and_algorithms_are_refused() {
        let err = toml::from_str::<AuthConfig>("disabled = true").unwrap_err();
        assert!(
            err.to_string().contains("unknown field `disabled`"),
            "{err}"
        );
        let err = toml::from_str::<AuthConfig>(r#"algorithm = "none""#).unwrap_err();
        assert!(err.to_string().contains("unknown variant"), "{err}");
        let err =
            toml::from_str::<ClientPolicyConfig<IgnoredAny>>(r#"sesions = ["x"]"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `sesions`"), "{err}");
    }

    #[test]
    fn client_section_parses_and_leaves_its_limits_to_the_caller() {
        let cfg: ClientPolicyConfig<IgnoredAny> = toml::from_str(
            r#"
            scopes = ["mux:read"]
            servers = ["build"]
            sessions = ["ci-*"]
            own_sessions = true
            [limits]
            tool_calls_per_second = 5
            "#,
        )
        .unwrap();
        assert!(cfg.own_sessions);
        assert_eq!(cfg.sessions, Some(vec!["ci-*".to_owned()]));
    }

    #[test]
    fn secret_debug_is_redacted() {
        let cfg = AuthConfig::hs256("super-secret-value-that-must-not-leak");
        let shown = format!("{cfg:?}");
        assert!(!shown.contains("super-secret"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }
}
