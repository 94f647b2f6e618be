//! Who may call, and what they may touch.
//!
//! - [`config`]: `[auth]` and `[clients.<sub>]` sections;
//! - [`token`]: JWT verification ([`TokenVerifier`]) and the [`RejectReason`]s;
//! - [`bearer`]: the axum middleware [`require_bearer`] that turns a request into a
//!   [`Principal`] or a 401;
//! - [`metadata`]: RFC 9728 protected-resource metadata;
//! - [`principal`], [`policy`], [`pattern`]: scopes → tiers, target ACLs, and the pure policy
//!   decisions tools ask before acting;
//! - [`session`]: binding MCP sessions to the `sub` that opened them;
//! - [`owners`]: which client created which session (gateway state, not a tmux option);
//! - [`mint`]: minting tokens with the gateway's key;
//! - [`throttle`]: failed authentications per source address.
//!
//! There is no "authentication off" switch: every configuration verifies a key.
//!
//! What a refused client sees:
//!
//! | refusal | answer |
//! |---|---|
//! | no `Authorization` header | 401, `WWW-Authenticate: Bearer resource_metadata="…"`, `reason: missing` |
//! | not `Bearer <token>`, or two headers | 401, `error="invalid_request"`, `reason: malformed_header` |
//! | not a JWT | 401, `error="invalid_token"`, `reason: malformed_token` |
//! | `alg` other than the configured one (`none`, HS↔RS …) | 401, `invalid_token`, `alg_not_allowed` |
//! | `kid` names no key | 401, `invalid_token`, `unknown_kid` |
//! | wrong key | 401, `invalid_token`, `bad_signature` |
//! | `exp` past / `nbf` future (beyond leeway) | 401, `invalid_token`, `expired` / `not_yet_valid` |
//! | wrong or missing `iss` / `aud` | 401, `invalid_token`, `bad_issuer` / `bad_audience` |
//! | bad `sub`, `exp`, `scope` or `muxgate` claim | 401, `invalid_token`, `bad_claims` |
//! | workspace mode: a `workspace` claim naming neither the token's `sub` nor a team `[workspaces] teams` matches | 401, `invalid_token`, `workspace_not_allowed` |
//! | tool above the token's tier | `isError` result: `permission denied: this tool is mutating and needs scope `mux:write`; the token grants mux:read` |
//! | server / session outside the ACL | `isError` result worded as not found (`unknown server …`, `session … not found`) |
//! | MCP session of another client | 404 `{"error":"session_not_found"}` (logged with both subs) |
//! | a token that does not verify, from an address past `http.auth_failures_per_minute` failures | 429 + `Retry-After`, `reason: throttled` (a token that verifies still passes) |
//! | limits | see [`crate::limits`]: 429 + `Retry-After` for requests, `isError` naming the limit for budgets |
//!
//! Every 401 body is `{"error", "reason", "message"}`; `reason` is [`RejectReason::as_str`].
//!
//! Wiring, outermost layer last:
//! ```ignore
//! let resource = Arc::new(ProtectedResource::new(&cfg.auth, "http://127.0.0.1:8080/mcp")?);
//! let authn = Arc::new(Authenticator::new(&cfg.auth, &cfg.clients, &resource)?);
//! let bindings = Arc::new(SessionBindings::default());
//! let mcp = Router::new()
//!     .nest_service("/mcp", service)
//!     .layer(from_fn_with_state(bindings, bind_sessions))
//!     .layer(from_fn_with_state(limits, crate::limits::limit_requests))
//!     .layer(from_fn_with_state(authn, require_bearer));
//! let app = mcp.merge(resource.router());
//! ```

pub(crate) mod bearer;
pub mod config;
mod keys;
pub(crate) mod local_secret;
pub(crate) mod metadata;
pub(crate) mod mint;
pub(crate) mod owners;
pub(crate) mod pattern;
pub(crate) mod policy;
pub(crate) mod principal;
pub(crate) mod session;
pub(crate) mod throttle;
pub(crate) mod token;
pub(crate) mod toolset;

pub use bearer::{Authenticator, RejectHook, require_bearer};
pub use config::{
    AuthConfig, AuthConfigError, ClientPolicyConfig, DefaultClientConfig, JwtAlgorithm,
};
pub use metadata::ProtectedResource;
pub use mint::{MintError, MintRequest, TokenMinter, generate_secret, parse_ttl};
pub use policy::{
    Denied, SessionRef, can_call, can_name_session, can_see_server, can_see_session, check_server,
    check_session,
};
pub use principal::{
    Principal, SCOPE_ADMIN, SCOPE_APPROVE, SCOPE_READ, SCOPE_WRITE, TargetAcl, Tier,
};
pub use session::{
    CloseSessions, Eviction, EvictionHook, OpensSession, SessionBindings, bind_sessions,
};
pub use token::{RejectReason, TokenVerifier};
pub use toolset::{Toolset, Toolsets, UnknownToolset};
