//! Targets as clients name them, validated before any command is built.
//!
//! A client names a tmux object by id (`%3` pane, `@1` window, `$0` session) or a session by
//! name. Nothing else is accepted: tmux's own target syntax (`sess:win.pane`, `{last}`, `-`,
//! fnmatch patterns, prefixes) resolves relative to "the current client" and can pick an object
//! the caller did not mean, or switch what a human sees. Session names are matched exactly
//! (rendered as `=name` for tmux).
//!
//! Pure: parsing and rendering only; which session a target belongs to is asked of tmux by
//! the tool layer.

use crate::mux::lines::excerpt;
use std::fmt;

use super::ids::{PaneId, SessionId, WindowId};

/// Longest session name accepted.
pub const MAX_NAME_LEN: usize = 64;

/// A session name muxgate accepts: 1–64 of `A-Z a-z 0-9 _ -`. (tmux itself turns `.` and `:`
/// into `_`, and other characters make names that are hard to target safely.)
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionName(String);

impl SessionName {
    pub fn parse(name: &str) -> Result<Self, TargetError> {
        let valid = (1..=MAX_NAME_LEN).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid {
            Err(TargetError::BadSessionName(excerpt(name)))
        } else if super::watch_session::is_watch_session(name) {
            Err(TargetError::ReservedSessionName(name.to_owned()))
        } else {
            Ok(Self(name.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A session, by id or exact name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SessionSel {
    Id(SessionId),
    Name(SessionName),
}

impl SessionSel {
    /// The `-t` value: the id, or `=name` for an exact name match.
    pub fn tmux_target(&self) -> String {
        match self {
            SessionSel::Id(id) => id.to_string(),
            SessionSel::Name(name) => format!("={name}"),
        }
    }
}

impl fmt::Display for SessionSel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionSel::Id(id) => write!(f, "{id}"),
            SessionSel::Name(name) => write!(f, "{name}"),
        }
    }
}

/// Any object a tool can act on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    Pane(PaneId),
    Window(WindowId),
    Session(SessionSel),
}

impl Target {
    /// Parses a client's target: `%N`, `@N`, `$N` or a session name.
    pub fn parse(text: &str) -> Result<Self, TargetError> {
        match text.as_bytes().first() {
            Some(b'%') => text.parse().map(Target::Pane).map_err(|_| bad_id(text)),
            Some(b'@') => text.parse().map(Target::Window).map_err(|_| bad_id(text)),
            Some(b'$') => text
                .parse()
                .map(|id| Target::Session(SessionSel::Id(id)))
                .map_err(|_| bad_id(text)),
            _ => SessionName::parse(text)
                .map(|name| Target::Session(SessionSel::Name(name)))
                .map_err(|e| match e {
                    TargetError::ReservedSessionName(_) => e,
                    _ => TargetError::Unrecognized(excerpt(text)),
                }),
        }
    }

    /// The `-t` value for tmux.
    pub fn tmux_target(&self) -> String {
        match self {
            Target::Pane(id) => id.to_string(),
            Target::Window(id) => id.to_string(),
            Target::Session(session) => session.tmux_target(),
        }
    }

    /// What kind of object this names, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Target::Pane(_) => "pane",
            Target::Window(_) => "window",
            Target::Session(_) => "session",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Pane(id) => write!(f, "{id}"),
            Target::Window(id) => write!(f, "{id}"),
            Target::Session(session) => write!(f, "{session}"),
        }
    }
}

/// Why a target string was refused. Messages quote (escaped) at most 40 characters of the
/// input, so a hostile target cannot make an error message large.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error(
        "target {0:?} is not valid: use a pane id like %3, a window id like @1, a session id like $0, or a session name"
    )]
    Unrecognized(String),
    #[error(
        "target {0:?} is not a valid id: ids are a sigil (% pane, @ window, $ session) and digits"
    )]
    BadId(String),
    #[error("session name {0:?} is not valid: use 1-64 characters from A-Z a-z 0-9 _ -")]
    BadSessionName(String),
    #[error("session name {0:?} is reserved: muxgate's watch session has it")]
    ReservedSessionName(String),
}

fn bad_id(text: &str) -> TargetError {
    TargetError::BadId(excerpt(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ids_and_names() {
        assert_eq!(Target::parse("%3"), Ok(Target::Pane(PaneId(3))));
        assert_eq!(Target::parse("@1"), Ok(Target::Window(WindowId(1))));
        assert_eq!(
            Target::parse("$0"),
            Ok(Target::Session(SessionSel::Id(SessionId(0))))
        );
        let named = Target::parse("build-1_a").unwrap();
        assert_eq!(named.tmux_target(), "=build-1_a");
        assert_eq!(named.kind(), "session");
        assert_eq!(Target::parse("%12").unwrap().tmux_target(), "%12");
    }

    #[test]
    fn refuses_tmux_syntax_and_odd_names() {
        for bad in [
            "",
            "main:1",
            "main.0",
            "{last}",
            "a b",
            "x;y",
            "~",
            "#{pane_id}",
            "é",
        ] {
            assert!(
                matches!(Target::parse(bad), Err(TargetError::Unrecognized(_))),
                "{bad:?}"
            );
        }
        for bad in ["%", "%x", "@-1", "$01"] {
            assert!(
                matches!(Target::parse(bad), Err(TargetError::BadId(_))),
                "{bad:?}"
            );
        }
        assert!(SessionName::parse(&"a".repeat(65)).is_err());
        assert_eq!(
            Target::parse("_muxgate"),
            Err(TargetError::ReservedSessionName("_muxgate".into()))
        );
        let message = Target::parse(&"y".repeat(500)).unwrap_err().to_string();
        assert!(message.len() < 250, "{message}");
    }
}
