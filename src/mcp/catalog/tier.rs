//! A tool's tier, from its annotations: the one source of truth that clients read and that
//! policy maps scopes onto. Kept apart from the catalog so that admitting a call needs only this.

use rmcp::model::Tool;

use crate::auth::Tier;

/// The tier a tool's annotations put it in. Missing hints take MCP's defaults (not read-only,
/// destructive), so an unannotated tool lands in the strictest tier.
pub fn tier_of(tool: &Tool) -> Tier {
    let annotations = tool.annotations.as_ref();
    let read_only = annotations.and_then(|a| a.read_only_hint).unwrap_or(false);
    let destructive = annotations.and_then(|a| a.destructive_hint).unwrap_or(true);
    match (read_only, destructive) {
        (true, _) => Tier::ReadOnly,
        (false, false) => Tier::Mutating,
        (false, true) => Tier::Destructive,
    }
}
