//! The inbox: one page where an approver settles, from a phone, what waits for a person —
//! calls held for approval, spawned agents blocked on a human, secrets to type.
//!
//! - [`signin`]: one-time sign-in links bound to an approver, and the sessions they open;
//! - [`page`]: the pages, as HTML (pure: what to show in, the page out);
//! - [`crate::approvals::shown`]: a held call's arguments as they would be typed, with what
//!   its rule matched marked.
//!
//! The routes are [`crate::http::inbox`]; the screens and blocked agents they show are read
//! by [`crate::mcp::inbox_desk`].

pub(crate) mod page;
pub(crate) mod signin;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

/// A held call's arguments as the inbox shows an approver them (HTML `<dt>`/`<dd>` pairs),
/// marked where `pattern` matches.
pub fn held_call_html(args: &Value, pattern: Option<&Regex>) -> String {
    page::fields(&crate::approvals::shown::shown_fields(args, pattern).fields)
}

/// `[inbox]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InboxConfig {
    /// How long a sign-in link stays good, in seconds (it is spent by its first sign-in).
    #[serde(default = "default_link_ttl_secs")]
    pub link_ttl_secs: u64,
    /// How long a signed-in session lasts, in seconds.
    #[serde(default = "default_session_ttl_secs")]
    pub session_ttl_secs: u64,
}

impl Default for InboxConfig {
    fn default() -> Self {
        Self {
            link_ttl_secs: default_link_ttl_secs(),
            session_ttl_secs: default_session_ttl_secs(),
        }
    }
}

/// The bounds of `link_ttl_secs`: a minute to a day.
pub(crate) const LINK_TTL_SECS: std::ops::RangeInclusive<u64> = 60..=86_400;
/// The bounds of `session_ttl_secs`: five minutes to a week.
pub(crate) const SESSION_TTL_SECS: std::ops::RangeInclusive<u64> = 300..=604_800;

fn default_link_ttl_secs() -> u64 {
    15 * 60
}

fn default_session_ttl_secs() -> u64 {
    12 * 3600
}
