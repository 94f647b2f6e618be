//! Policy decisions: pure functions of a [`Principal`] and a target. No I/O, so every rule is
//! unit-tested here and the tool layer only has to ask.
//!
//! Rules:
//! - **Tools.** A tool declares a [`Tier`]; the principal may call it if its tier is at least
//!   that high. `tools/list` must show exactly the tools for which [`can_call`] succeeds, and
//!   every `tools/call` asks again. A refused call is answered with an **`isError` tool result**
//!   whose text is [`Denied`]'s message naming the missing scope (not HTTP 403: the HTTP layer
//!   does not parse JSON-RPC, and the listing already hides what a client cannot call).
//! - **Servers.** In workspace mode, the principal's own workspace always, and a configured
//!   server when the server patterns grant it explicitly, which only the configuration does
//!   there (a configured server runs outside every sandbox; a token's `servers` claim only
//!   narrows); otherwise a configured server when the server patterns allow its name.
//! - **Sessions.** A session is visible if its server is, and:
//!   - the principal created it (through the gateway); or
//!   - another client created it, and the principal's access is unlimited (no session
//!     patterns, not `own_sessions`), or its patterns name the session *literally* (a glob
//!     such as `b-*` does not open another client's `b-planted`); or
//!   - it was created outside the gateway (a human's), and the patterns grant its name
//!     explicitly (`own_sessions`) or allow it (otherwise).
//!
//!   Windows and panes follow their session. Invisible objects are reported exactly like
//!   missing ones, so a client cannot probe for what it may not see.
//! - **Naming.** A client may create or rename a session only to a name its patterns allow,
//!   and not to a name another configured client's patterns reserve unless its own grant it
//!   explicitly (so nobody squats the names a client is limited to).
//! - **Ownership** is the gateway's own record ([`super::owners`]): nothing a pane runs can
//!   change it.

use super::principal::{Principal, Tier};

/// A session as policy sees it: its name and the client that created it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionRef<'a> {
    /// The session name.
    pub name: &'a str,
    /// The `sub` that created it through the gateway, if one did.
    pub owner: Option<&'a str>,
}

/// A refused call or target. `Display` is the text of the `isError` result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    /// The tool's tier needs a scope the token does not grant.
    #[error(
        "permission denied: this tool is {tier} and needs scope `{needed}`; the token grants {}",
        granted_text(granted)
    )]
    MissingScope {
        /// The scope that would allow the call.
        needed: &'static str,
        /// The tool's tier.
        tier: Tier,
        /// Scopes the principal holds that the gateway knows.
        granted: Vec<String>,
    },
    /// The server is outside the ACL (worded like an unknown server).
    #[error("unknown server `{server}`; call list_servers to see the servers you can use")]
    ServerNotVisible {
        /// The requested server name.
        server: String,
    },
    /// The session is outside the ACL (worded like a missing session).
    #[error("session `{session}` not found; call list_sessions to see the sessions you can use")]
    SessionNotVisible {
        /// The requested session.
        session: String,
    },
    /// A new session name (create or rename) is outside the client's session patterns.
    #[error(
        "session name `{name}` is not allowed for this client: it matches none of the session-name patterns granted to it"
    )]
    SessionNameNotAllowed {
        /// The refused name.
        name: String,
    },
    /// A new session name is reserved by another client's configured patterns.
    #[error(
        "session name `{name}` is reserved: it matches the session patterns configured for other clients"
    )]
    SessionNameReserved {
        /// The refused name.
        name: String,
    },
}

fn granted_text(granted: &[String]) -> String {
    if granted.is_empty() {
        "no mux scope".to_owned()
    } else {
        granted.join(" ")
    }
}

impl Denied {
    /// The scope to request for step-up, when that is what is missing.
    pub fn missing_scope(&self) -> Option<&'static str> {
        match self {
            Self::MissingScope { needed, .. } => Some(needed),
            _ => None,
        }
    }

    /// Stable snake_case name for audit `error_kind` and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::MissingScope { .. } => "missing_scope",
            Self::ServerNotVisible { .. } => "server_not_visible",
            Self::SessionNotVisible { .. } => "session_not_visible",
            Self::SessionNameNotAllowed { .. } => "session_name_not_allowed",
            Self::SessionNameReserved { .. } => "session_name_reserved",
        }
    }
}

/// Whether the principal may call a tool of `tool_tier`.
pub fn can_call(principal: &Principal, tool_tier: Tier) -> Result<(), Denied> {
    if principal.tier.is_some_and(|t| t >= tool_tier) {
        return Ok(());
    }
    Err(Denied::MissingScope {
        needed: tool_tier.scope(),
        tier: tool_tier,
        granted: principal
            .scopes
            .iter()
            .filter(|s| Tier::from_scope(s).is_some())
            .cloned()
            .collect(),
    })
}

/// Whether the principal may see and use the server `server`: its own workspace always (in
/// workspace mode); a configured server when the server patterns allow it — explicitly in
/// workspace mode (by the configuration: see [`super::Authenticator::principal_for`]), since
/// a configured server is shared with everyone granted it and runs outside every sandbox.
pub fn can_see_server(principal: &Principal, server: &str) -> bool {
    match principal.acl.own_server {
        Some(own) => server == own || principal.acl.servers.grants_explicitly(server),
        None => principal.acl.servers.allows(server),
    }
}

/// [`can_see_server`] as a `Result` for tool code.
pub fn check_server(principal: &Principal, server: &str) -> Result<(), Denied> {
    if can_see_server(principal, server) {
        Ok(())
    } else {
        Err(Denied::ServerNotVisible {
            server: server.to_owned(),
        })
    }
}

/// Whether the principal may see (list, read, and — tier permitting — act on) a session of
/// `server`, and everything inside it.
pub fn can_see_session(principal: &Principal, server: &str, session: SessionRef<'_>) -> bool {
    if !can_see_server(principal, server) {
        return false;
    }
    let acl = &principal.acl;
    let limited = acl.own_sessions || !acl.sessions.is_unrestricted();
    match session.owner {
        Some(owner) if owner == principal.sub => true,
        Some(_) if limited => acl.sessions.names_literally(session.name),
        _ if acl.own_sessions => acl.sessions.grants_explicitly(session.name),
        _ => acl.sessions.allows(session.name),
    }
}

/// [`can_see_session`] as a `Result` for tool code.
pub fn check_session(
    principal: &Principal,
    server: &str,
    session: SessionRef<'_>,
) -> Result<(), Denied> {
    check_server(principal, server)?;
    if can_see_session(principal, server, session) {
        Ok(())
    } else {
        Err(Denied::SessionNotVisible {
            session: session.name.to_owned(),
        })
    }
}

/// Whether the principal may give a session this name (create or rename). The session will
/// be recorded as its own, so in `own_sessions` mode it stays visible to it.
pub fn can_name_session(principal: &Principal, name: &str) -> Result<(), Denied> {
    let acl = &principal.acl;
    if !acl.sessions.allows(name) {
        return Err(Denied::SessionNameNotAllowed {
            name: name.to_owned(),
        });
    }
    if acl.reserved.iter().any(|p| p.matches(name)) && !acl.sessions.grants_explicitly(name) {
        return Err(Denied::SessionNameReserved {
            name: name.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::pattern::NamePattern;
    use crate::auth::principal::{SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE};

    fn principal(scopes: &[&str]) -> Principal {
        Principal::new("alice", scopes.iter().copied())
    }

    /// A session with an owner (`""`: created outside the gateway).
    fn session<'a>(name: &'a str, owner: &'a str) -> SessionRef<'a> {
        SessionRef {
            name,
            owner: (!owner.is_empty()).then_some(owner),
        }
    }

    fn pats(list: &[&str]) -> Vec<NamePattern> {
        list.iter().map(|p| NamePattern::new(p).unwrap()).collect()
    }

    #[test]
    fn tiers_gate_tools_and_name_the_missing_scope() {
        let reader = principal(&[SCOPE_READ, "openid"]);
        assert_eq!(can_call(&reader, Tier::ReadOnly), Ok(()));
        let err = can_call(&reader, Tier::Mutating).unwrap_err();
        assert_eq!(err.missing_scope(), Some(SCOPE_WRITE));
        assert_eq!(err.kind(), "missing_scope");
        assert_eq!(
            err.to_string(),
            "permission denied: this tool is mutating and needs scope `mux:write`; the token grants mux:read"
        );
        let err = can_call(&reader, Tier::Destructive).unwrap_err();
        assert_eq!(err.missing_scope(), Some(SCOPE_ADMIN));

        let admin = principal(&[SCOPE_ADMIN]);
        for tier in [Tier::ReadOnly, Tier::Mutating, Tier::Destructive] {
            assert_eq!(can_call(&admin, tier), Ok(()));
        }

        let nobody = principal(&["openid"]);
        let err = can_call(&nobody, Tier::ReadOnly).unwrap_err();
        assert!(
            err.to_string().ends_with("the token grants no mux scope"),
            "{err}"
        );
    }

    #[test]
    fn server_acl() {
        let mut p = principal(&[SCOPE_READ]);
        assert!(can_see_server(&p, "anything"));
        p.acl.servers.restrict(pats(&["build", "ci-*"]));
        assert!(can_see_server(&p, "build"));
        assert!(can_see_server(&p, "ci-2"));
        assert!(!can_see_server(&p, "prod"));
        let err = check_server(&p, "prod").unwrap_err();
        assert_eq!(err.kind(), "server_not_visible");
        assert!(err.to_string().starts_with("unknown server `prod`"));
        // A session on an invisible server is invisible whatever its name or owner.
        assert!(!can_see_session(&p, "prod", session("x", "alice")));
        assert_eq!(check_session(&p, "prod", session("x", "")), Err(err));
    }

    #[test]
    fn session_patterns_without_ownership_mode() {
        let mut p = principal(&[SCOPE_WRITE]);
        assert!(can_see_session(&p, "s", session("any", "")));
        assert!(can_see_session(&p, "s", session("any", "bob")));
        p.acl.sessions.restrict(pats(&["ci-*", "ci-shared"]));
        assert!(
            can_see_session(&p, "s", session("ci-1", "")),
            "a human's, by pattern"
        );
        assert!(!can_see_session(&p, "s", session("prod", "")));
        // Another client's session needs its name, not a glob: nobody can plant a session
        // into a namespace a client is limited to.
        assert!(!can_see_session(&p, "s", session("ci-1", "bob")));
        assert!(can_see_session(&p, "s", session("ci-shared", "bob")));
        // Its own sessions stay visible even if renamed outside the patterns.
        assert!(can_see_session(&p, "s", session("prod", "alice")));
        let err = check_session(&p, "s", session("prod", "bob")).unwrap_err();
        assert_eq!(err.kind(), "session_not_visible");
    }

    #[test]
    fn unlimited_access_sees_every_session() {
        let p = principal(&[SCOPE_WRITE]);
        assert!(can_see_session(&p, "s", session("any", "")));
        assert!(can_see_session(&p, "s", session("any", "bob")));
    }

    #[test]
    fn own_sessions_mode_hides_what_others_created() {
        let mut p = principal(&[SCOPE_WRITE]);
        p.acl.own_sessions = true;
        assert!(can_see_session(&p, "s", session("mine", "alice")));
        assert!(!can_see_session(&p, "s", session("theirs", "bob")));
        assert!(!can_see_session(&p, "s", session("human", "")));
        // An explicit grant opens sessions made outside the gateway; another client's only
        // by name.
        p.acl.sessions.restrict(pats(&["shared-*", "pair"]));
        assert!(can_see_session(&p, "s", session("shared-2", "")));
        assert!(!can_see_session(&p, "s", session("shared-1", "bob")));
        assert!(can_see_session(&p, "s", session("pair", "bob")));
        assert!(!can_see_session(&p, "s", session("theirs", "bob")));
        assert!(can_see_session(&p, "s", session("mine", "alice")));
    }

    #[test]
    fn owner_tag_must_match_exactly() {
        let mut p = principal(&[SCOPE_WRITE]);
        p.acl.own_sessions = true;
        assert!(!can_see_session(&p, "s", session("x", "alice2")));
        assert!(!can_see_session(&p, "s", session("x", "Alice")));
        assert!(!can_see_session(&p, "s", session("x", "alic")));
    }

    #[test]
    fn naming_sessions_follows_patterns() {
        let mut p = principal(&[SCOPE_WRITE]);
        assert_eq!(can_name_session(&p, "whatever"), Ok(()));
        p.acl.sessions.restrict(pats(&["ci-*"]));
        assert_eq!(can_name_session(&p, "ci-9"), Ok(()));
        let err = can_name_session(&p, "prod").unwrap_err();
        assert_eq!(err.kind(), "session_name_not_allowed");
    }

    #[test]
    fn names_other_clients_are_limited_to_are_reserved() {
        let mut p = principal(&[SCOPE_WRITE]);
        p.acl.own_sessions = true;
        p.acl.reserved = pats(&["b-*"]).into();
        let err = can_name_session(&p, "b-1").unwrap_err();
        assert_eq!(err.kind(), "session_name_reserved");
        assert_eq!(can_name_session(&p, "mine-1"), Ok(()));
        // Its own explicit grant overrides the reservation (overlap is the operator's choice).
        p.acl.sessions.restrict(pats(&["b-shared"]));
        assert_eq!(can_name_session(&p, "b-shared"), Ok(()));
    }
}
