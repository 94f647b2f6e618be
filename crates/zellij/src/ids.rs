//! Validated identifiers for Zellij sessions, tabs and panes.
//!
//! Every value a client sends that ends up on a `zellij` command line passes through one of
//! these types first, so a malformed id is refused with a specific message before any process is
//! started. The types render exactly the way the Zellij CLI expects them (`terminal_3`,
//! `plugin_0`, tab `2`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Longest session name accepted.
///
/// Zellij puts the session name in a Unix socket path (limit 108 bytes) under the socket dir, so
/// long names fail late and obscurely; this bound keeps room for the directory part.
pub const MAX_SESSION_NAME_LEN: usize = 48;

/// Why an identifier was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} {value:?}: {reason}")]
pub struct InvalidId {
    /// Which kind of identifier (`session name`, `pane id`, `tab id`).
    pub kind: &'static str,
    /// The refused input, as given.
    pub value: String,
    /// What a valid value looks like.
    pub reason: &'static str,
}

/// The name of a Zellij session: 1–48 characters from `[A-Za-z0-9_.-]`, not starting with `-`
/// or `.`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct SessionName(String);

impl SessionName {
    /// Validates `name`.
    pub fn new(name: impl Into<String>) -> Result<Self, InvalidId> {
        let name = name.into();
        let refuse = |reason| InvalidId {
            kind: "session name",
            value: name.clone(),
            reason,
        };
        if name.is_empty() || name.len() > MAX_SESSION_NAME_LEN {
            return Err(refuse("expected 1 to 48 characters"));
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        {
            return Err(refuse("allowed characters are A-Z a-z 0-9 _ . -"));
        }
        if name.starts_with(['-', '.']) {
            return Err(refuse("must not start with '-' or '.'"));
        }
        Ok(Self(name))
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for SessionName {
    type Err = InvalidId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl<'de> Deserialize<'de> for SessionName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::new(s).map_err(serde::de::Error::custom)
    }
}

/// A pane id. Terminal and plugin panes are separate namespaces in Zellij, so `terminal_1` and
/// `plugin_1` are different panes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PaneId {
    /// `terminal_N`: a pane running a shell or a command.
    Terminal(u32),
    /// `plugin_N`: a pane running a WebAssembly plugin.
    Plugin(u32),
}

impl PaneId {
    /// Whether this is a terminal pane (the only kind that takes keystrokes from muxgate).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Terminal(_))
    }

    /// Builds the id from the `(id, is_plugin)` pair used in Zellij's JSON listings.
    pub fn from_parts(id: u32, is_plugin: bool) -> Self {
        if is_plugin {
            Self::Plugin(id)
        } else {
            Self::Terminal(id)
        }
    }
}

impl fmt::Display for PaneId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Terminal(n) => write!(f, "terminal_{n}"),
            Self::Plugin(n) => write!(f, "plugin_{n}"),
        }
    }
}

impl FromStr for PaneId {
    type Err = InvalidId;

    /// Accepts `terminal_N`, `plugin_N` and a bare `N` (which Zellij reads as `terminal_N`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let refuse = || InvalidId {
            kind: "pane id",
            value: s.to_owned(),
            reason: "expected terminal_N, plugin_N or N (N a number)",
        };
        let (ctor, digits): (fn(u32) -> PaneId, &str) = if let Some(n) = s.strip_prefix("terminal_")
        {
            (Self::Terminal, n)
        } else if let Some(n) = s.strip_prefix("plugin_") {
            (Self::Plugin, n)
        } else {
            (Self::Terminal, s)
        };
        parse_decimal(digits).map(ctor).ok_or_else(refuse)
    }
}

impl Serialize for PaneId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PaneId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A tab's stable id (Zellij numbers tabs 0, 1, 2… and never reuses an id in a session).
///
/// This is not the tab's position, which changes when tabs before it close.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TabId(pub u32);

impl fmt::Display for TabId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for TabId {
    type Err = InvalidId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_decimal(s).map(TabId).ok_or_else(|| InvalidId {
            kind: "tab id",
            value: s.to_owned(),
            reason: "expected a non-negative number",
        })
    }
}

/// Plain decimal digits only: no sign, no whitespace, no `0x`.
fn parse_decimal(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names() {
        for ok in ["s1", "muxgate-test_1.a", &"x".repeat(48)] {
            assert_eq!(SessionName::new(ok).unwrap().as_str(), ok);
        }
        for bad in ["", "-s", ".s", "a b", "a/b", "é", "a;b", &"x".repeat(49)] {
            let err = SessionName::new(bad).unwrap_err();
            assert_eq!(err.kind, "session name", "{bad:?}");
        }
    }

    #[test]
    fn pane_ids_round_trip() {
        assert_eq!("terminal_3".parse::<PaneId>(), Ok(PaneId::Terminal(3)));
        assert_eq!("plugin_0".parse::<PaneId>(), Ok(PaneId::Plugin(0)));
        assert_eq!("7".parse::<PaneId>(), Ok(PaneId::Terminal(7)));
        assert_eq!(PaneId::Plugin(2).to_string(), "plugin_2");
        assert_eq!(PaneId::from_parts(4, false).to_string(), "terminal_4");
        for bad in [
            "",
            "terminal_",
            "terminal_-1",
            "terminal_+1",
            "pane_1",
            " 1",
            "1 ",
            "terminal_99999999999",
            "--pane-id",
        ] {
            assert!(bad.parse::<PaneId>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn pane_id_serde_is_the_cli_spelling() {
        let json = serde_json::to_string(&PaneId::Terminal(5)).unwrap();
        assert_eq!(json, "\"terminal_5\"");
        let back: PaneId = serde_json::from_str(&json).unwrap();
        assert_eq!(back, PaneId::Terminal(5));
    }

    #[test]
    fn tab_ids() {
        assert_eq!("12".parse::<TabId>(), Ok(TabId(12)));
        for bad in ["", "-1", "1.0", "x", "0x1"] {
            assert!(bad.parse::<TabId>().is_err(), "{bad:?}");
        }
    }
}
