//! Who is calling: the [`Principal`] an authenticated request carries, its [`Tier`] and its
//! [`TargetAcl`].
//!
//! Scopes and tiers (hierarchical: each scope includes the tiers below it):
//!
//! | scope       | tier          | tools                                                     |
//! |-------------|---------------|-----------------------------------------------------------|
//! | `mux:read`  | `ReadOnly`    | listings, captures, searches, waits on output             |
//! | `mux:write` | `Mutating`    | + input, creating/renaming/selecting/resizing, options     |
//! | `mux:admin` | `Destructive` | + killing servers/sessions/windows/panes, respawn          |
//!
//! `mux:approve` is apart from the tiers: it lets a human decide calls held for approval
//! (`/approvals`) and grants no tool, so an approver's token cannot also act as an agent's
//! unless it is given a tier too (and even then it cannot decide its own calls).
//!
//! The names say `mux`, not `tmux`, because the same tiers govern every multiplexer backend.
//! Scopes the gateway does not know are kept in [`Principal::scopes`] (they may matter to
//! someone else) but grant nothing here.

use std::collections::BTreeSet;
use std::fmt;

use super::pattern::NameAllowList;
use super::toolset::Toolsets;

/// Scope granting the read-only tier.
pub const SCOPE_READ: &str = "mux:read";
/// Scope granting the mutating tier (and read-only).
pub const SCOPE_WRITE: &str = "mux:write";
/// Scope granting the destructive tier (and everything below).
pub const SCOPE_ADMIN: &str = "mux:admin";
/// Scope of a human who approves or denies held calls (`/approvals`); it grants no tool.
pub const SCOPE_APPROVE: &str = "mux:approve";
/// Every scope the gateway understands: the tiers' lowest first, then the approver's.
pub(crate) const KNOWN_SCOPES: [&str; 4] = [SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN, SCOPE_APPROVE];

/// How much a tool can change; tools declare one, principals hold one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Observes only.
    ReadOnly,
    /// Changes state that can be changed back (input, layout, names, new objects).
    Mutating,
    /// Destroys state (kills, respawns).
    Destructive,
}

impl Tier {
    /// The scope that grants this tier.
    pub fn scope(self) -> &'static str {
        match self {
            Self::ReadOnly => SCOPE_READ,
            Self::Mutating => SCOPE_WRITE,
            Self::Destructive => SCOPE_ADMIN,
        }
    }

    /// The tier a scope grants, if the gateway knows the scope.
    pub fn from_scope(scope: &str) -> Option<Self> {
        match scope {
            SCOPE_READ => Some(Self::ReadOnly),
            SCOPE_WRITE => Some(Self::Mutating),
            SCOPE_ADMIN => Some(Self::Destructive),
            _ => None,
        }
    }

    /// Short lowercase name for messages and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::Mutating => "mutating",
            Self::Destructive => "destructive",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// The highest tier a set of scopes grants.
pub(crate) fn tier_of<'a>(scopes: impl IntoIterator<Item = &'a str>) -> Option<Tier> {
    scopes.into_iter().filter_map(Tier::from_scope).max()
}

/// Which targets a principal may see and touch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetAcl {
    /// Configured tmux servers (by gateway name) the principal may use.
    pub servers: NameAllowList,
    /// Session names the principal may see.
    pub sessions: NameAllowList,
    /// Sessions created by other clients (or outside the gateway) are hidden unless
    /// [`Self::sessions`] grants them explicitly.
    pub own_sessions: bool,
    /// In workspace mode, the name under which the principal sees its own workspace's server;
    /// configured servers are then visible only when [`Self::servers`] grants them explicitly.
    pub own_server: Option<&'static str>,
    /// Session-name patterns configured for *other* clients: names this principal may not
    /// create unless its own patterns grant them explicitly.
    pub reserved: std::sync::Arc<[super::pattern::NamePattern]>,
}

/// An authenticated caller, inserted into request extensions by [`super::require_bearer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The token's subject: the client's identity for policy, limits, audit and ownership.
    pub sub: String,
    /// Effective scopes: the token's, capped by the client's configured scopes.
    pub scopes: BTreeSet<String>,
    /// Highest tier the effective scopes grant; `None` means no tool is callable.
    pub tier: Option<Tier>,
    /// Target restrictions from claims and client config.
    pub acl: TargetAcl,
    /// The workspace the principal works in, in workspace mode: `[clients.<sub>] workspace`,
    /// else the token's `workspace` claim (its `sub` or a team `[workspaces] teams` matches),
    /// else its `sub`.
    pub workspace: String,
    /// The tool families `tools/list` shows this principal.
    pub toolsets: Toolsets,
    /// The token's `exp` (seconds since the Unix epoch).
    pub expires_at: u64,
}

impl Principal {
    /// The principal an authenticated request carries, from its extensions (for the MCP
    /// handler: `ctx.extensions.get::<http::request::Parts>()` then `.extensions`).
    pub fn from_extensions(extensions: &http::Extensions) -> Option<&Self> {
        extensions.get::<Self>()
    }

    /// A principal for tests and tools that act on the gateway's own behalf.
    pub fn new(
        sub: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let scopes: BTreeSet<String> = scopes.into_iter().map(Into::into).collect();
        let tier = tier_of(scopes.iter().map(String::as_str));
        let sub = sub.into();
        Self {
            workspace: sub.clone(),
            toolsets: Toolsets::default(),
            sub,
            scopes,
            tier,
            acl: TargetAcl::default(),
            expires_at: u64::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_map_to_tiers_hierarchically() {
        assert_eq!(tier_of([SCOPE_READ]), Some(Tier::ReadOnly));
        assert_eq!(tier_of([SCOPE_READ, SCOPE_ADMIN]), Some(Tier::Destructive));
        assert_eq!(tier_of([SCOPE_WRITE, "openid"]), Some(Tier::Mutating));
        assert_eq!(tier_of(["openid", "tmux:read"]), None);
        assert!(Tier::ReadOnly < Tier::Mutating && Tier::Mutating < Tier::Destructive);
        for tier in [Tier::ReadOnly, Tier::Mutating, Tier::Destructive] {
            assert_eq!(Tier::from_scope(tier.scope()), Some(tier));
        }
    }

    #[test]
    fn principal_travels_in_extensions() {
        let mut ext = http::Extensions::new();
        assert!(Principal::from_extensions(&ext).is_none());
        ext.insert(Principal::new("bot", [SCOPE_WRITE]));
        let p = Principal::from_extensions(&ext).unwrap();
        assert_eq!(p.sub, "bot");
        assert_eq!(p.tier, Some(Tier::Mutating));
    }
}
