//! Live view: a read-only page per pane, behind a signed, expiring link.
//!
//! A browser opens `/view?t=TOKEN` ([`link`]) and receives the page ([`page`]), whose script
//! reads `/view/events?t=TOKEN`: Server-Sent Events carrying the pane's screen as HTML
//! ([`render`]), kept by a terminal emulator fed the gateway's own output stream of the pane
//! (no tmux client is attached for it). Nothing the viewer does reaches the pane: there is no
//! route that takes input. The HTTP side is [`crate::http::view`].
//!
//! Links are minted by the `view_link` tool (for a pane the client may see) or by
//! `muxgate view-link` (an operator), signed with the gateway's key ([`key`]). [`viewers`]
//! counts the streams open, on the gateway and per link.

pub mod key;
pub mod link;
pub(crate) mod page;
pub(crate) mod render;
pub(crate) mod viewers;

use std::time::Duration;

use serde::Deserialize;

/// `[view]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewConfig {
    /// Whether `/view` is served and links can be minted.
    #[serde(default = "default_enabled")]
    pub enabled: bool,
    /// A link's lifetime when its minter names none, in minutes.
    #[serde(default = "default_link_minutes")]
    pub default_link_minutes: u64,
    /// The longest lifetime a link may be given, in minutes.
    #[serde(default = "default_max_link_minutes")]
    pub max_link_minutes: u64,
    /// Event streams open at once, all links together; one more is answered 503. Each costs
    /// an emulator and a render per update.
    #[serde(default = "default_max_viewers")]
    pub max_viewers: u32,
    /// Event streams open at once on one link; one more is answered 429.
    #[serde(default = "default_max_viewers_per_link")]
    pub max_viewers_per_link: u32,
}

impl Default for ViewConfig {
    fn default() -> Self {
        Self {
            enabled: default_enabled(),
            default_link_minutes: default_link_minutes(),
            max_link_minutes: default_max_link_minutes(),
            max_viewers: default_max_viewers(),
            max_viewers_per_link: default_max_viewers_per_link(),
        }
    }
}

fn default_enabled() -> bool {
    true
}

fn default_link_minutes() -> u64 {
    15
}

fn default_max_link_minutes() -> u64 {
    24 * 60
}

fn default_max_viewers() -> u32 {
    32
}

fn default_max_viewers_per_link() -> u32 {
    4
}

impl ViewConfig {
    /// The lifetime of a link asked for `minutes` (the default when `None`), or why not.
    pub fn link_ttl(&self, minutes: Option<u64>) -> Result<Duration, String> {
        let minutes = minutes.unwrap_or(self.default_link_minutes.min(self.max_link_minutes));
        if minutes == 0 {
            return Err("a link must live at least 1 minute".into());
        }
        if minutes > self.max_link_minutes {
            return Err(format!(
                "a link may live at most {} minutes (view.max_link_minutes)",
                self.max_link_minutes
            ));
        }
        Ok(Duration::from_secs(minutes * 60))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_lifetimes_are_capped() {
        let config = ViewConfig::default();
        assert_eq!(config.link_ttl(None), Ok(Duration::from_secs(15 * 60)));
        assert_eq!(config.link_ttl(Some(60)), Ok(Duration::from_secs(3600)));
        assert!(config.link_ttl(Some(0)).is_err());
        let error = config.link_ttl(Some(24 * 60 + 1)).unwrap_err();
        assert!(error.contains("view.max_link_minutes"), "{error}");
    }
}
