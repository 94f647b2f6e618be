//! `[notify]`: where events go.
//!
//! ```toml
//! [notify.targets.ops]
//! format = "json"                         # json (HMAC-signed), slack, ntfy
//! url = "https://hooks.example/muxgate"
//! secret_file = "/etc/muxgate/notify.key" # json: the HMAC-SHA256 key
//! events = ["approval_pending"]           # default: every event
//! clients = ["team-*"]                    # whose events (subjects); default: everyone's
//! ```

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
        if let Some(patterns) = &self.clients {
            for pattern in patterns {
                if let Err(e) = crate::auth::pattern::NamePattern::new(pattern) {
                    return Some(format!("clients: {pattern:?}: {e}"));
                }
            }
        }
        None
    }
}
