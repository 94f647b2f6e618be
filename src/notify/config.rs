//! `[notify]`: where events go.
//!
//! ```toml
//! [notify.targets.ops]
//! format = "json"                         # json (HMAC-signed), slack, ntfy
//! url = "https://hooks.example/muxgate"
//! secret_file = "/etc/muxgate/notify.key" # json: the HMAC-SHA256 key
//! events = ["approval_pending"]           # default: every event
//! clients = ["team-*"]                    # whose events (subjects); default: everyone's
//! workspaces = ["team-a"]                 # whose events (workspaces); default: every one's
//! inbox_for = "alice"                     # a one-time inbox sign-in link for this approver
//! ```
//!
//! A target with `inbox_for` carries, with each `approval_pending`, `agent_blocked` and
//! `secret_requested` event, a link that signs that approver in to the inbox once (the JSON
//! format's `inbox_url`, a line of the Slack text, ntfy's `Click`). Anyone who reads the target
//! can use it: send it only where that approver alone reads (their own ntfy topic, a direct
//! message). It needs `http.public_url`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::event::EventKind;

/// Most events waiting to be sent, by default.
const DEFAULT_QUEUE: usize = 256;

/// `[notify]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyConfig {
    /// The webhooks, by name (the name labels their metrics).
    #[serde(default)]
    pub targets: BTreeMap<String, NotifyTarget>,
    /// Most events waiting to be sent; past it an event is dropped, and counted.
    #[serde(default = "default_queue")]
    pub queue: usize,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        Self {
            targets: BTreeMap::new(),
            queue: DEFAULT_QUEUE,
        }
    }
}

fn default_queue() -> usize {
    DEFAULT_QUEUE
}

/// One webhook.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyTarget {
    /// How the event is posted.
    pub format: NotifyFormat,
    /// Where (http or https).
    pub url: url::Url,
    /// `json`: the file holding the HMAC-SHA256 key the body is signed with.
    #[serde(default)]
    pub secret_file: Option<PathBuf>,
    /// The events it takes (default: all).
    #[serde(default)]
    pub events: Option<Vec<EventKind>>,
    /// Whose events, as subject patterns (`*`, `?`); default: everyone's.
    #[serde(default)]
    pub clients: Option<Vec<String>>,
    /// Whose events, as workspace patterns: a team's events go to the team's own target (a
    /// client's workspace is its `[clients.<sub>] workspace`, its token's `workspace` claim,
    /// else its `sub`). Events of no client (host_down, host_up) go only to targets without it.
    #[serde(default)]
    pub workspaces: Option<Vec<String>>,
    /// The approver whose one-time inbox sign-in links this target carries.
    #[serde(default)]
    pub inbox_for: Option<String>,
}

/// How a target is posted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyFormat {
    /// The event as JSON, signed: `X-Muxgate-Signature: sha256=HEX` over `TIMESTAMP.BODY`.
    Json,
    /// `{"text": …}`, as Slack's (and Mattermost's, Discord's `/slack`) incoming webhooks take.
    Slack,
    /// The summary as the body of a POST to an ntfy topic URL, with a title and tags.
    Ntfy,
}

impl NotifyTarget {
    /// Why this target cannot be used, if it cannot (named under `notify.targets.<name>`).
    pub(crate) fn problem(&self) -> Option<String> {
        if !matches!(self.url.scheme(), "http" | "https") {
            return Some(format!("url: {} is not http or https", self.url));
        }
        if self.format == NotifyFormat::Json && self.secret_file.is_none() {
            return Some("secret_file: required for format \"json\" (the HMAC key)".into());
        }
        for (field, patterns) in [("clients", &self.clients), ("workspaces", &self.workspaces)] {
            for pattern in patterns.iter().flatten() {
                if let Err(e) = crate::auth::pattern::NamePattern::new(pattern) {
                    return Some(format!("{field}: {pattern:?}: {e}"));
                }
            }
        }
        if let Some(approver) = &self.inbox_for
            && (approver.trim().is_empty() || approver.chars().any(char::is_control))
        {
            return Some("inbox_for: must name an approver (a `sub`)".into());
        }
        None
    }
}
