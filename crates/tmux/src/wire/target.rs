//! Targets as clients name them, validated before any command is built.
//!
//! A client names a tmux object by id (`%3` pane, `@1` window, `$0` session), a session by
//! name, or a pane or window by tmux's path `SESSION:WINDOW[.PANE]` ([`TargetPath`]), WINDOW an
//! index or an exact window name and PANE an index. Ids and session names go to tmux as they
//! are (names matched exactly, rendered as `=name`). A path never does: the gateway resolves it
//! to an id itself, exactly ([`crate::wire::target_path`]), because tmux's own resolution of such
//! targets falls back to prefixes and fnmatch patterns and reads a missing part relative to
//! "the current client", which can pick an object the caller did not mean. For the same reason
//! tmux's relative forms (`{last}`, `-`, `+1`, `!`, `:1`, `1.0` without a session) are refused.
//!
//! Pure: parsing and rendering only; which session a target belongs to is asked of tmux by
//! the tool layer.

use std::fmt;

use muxgate_mux::lines::excerpt;

use crate::wire::ids::{PaneId, SessionId, WindowId};

/// Longest session name accepted.
pub const MAX_NAME_LEN: usize = 64;

/// A session name muxgate accepts: 1–64 of `A-Z a-z 0-9 _ -`. (tmux itself turns `.` and `:`
/// into `_`, and other characters make names that are hard to target safely.)
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionName(String);

impl SessionName {
    /// Validates a session name; the watch session's name is refused as reserved.
    pub fn parse(name: &str) -> Result<Self, TargetError> {
        let valid = (1..=MAX_NAME_LEN).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid {
            Err(TargetError::BadSessionName(excerpt(name)))
        } else if crate::output::watch_session::is_watch_session(name) {
            Err(TargetError::ReservedSessionName(name.to_owned()))
        } else {
            Ok(Self(name.to_owned()))
        }
    }

    /// The name.
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
    /// A session id, `$N`.
    Id(SessionId),
    /// An exact session name.
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
    /// A pane, `%N`.
    Pane(PaneId),
    /// A window, `@N`.
    Window(WindowId),
    /// A session, by id or exact name.
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

/// Longest text accepted after a path's colon (`WINDOW` or `WINDOW.PANE`): a window name of
/// 64 characters, a dot and a pane index.
pub const MAX_PATH_TAIL_CHARS: usize = 76;

/// A target as a client wrote it: one tmux is given as it is (an id, an exact session name), or
/// a path the gateway resolves to an id before any command is built.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClientTarget {
    /// An id or an exact session name, given to tmux as it is.
    Direct(Target),
    /// A `SESSION:WINDOW[.PANE]` path, resolved to an id by the gateway.
    Path(TargetPath),
}

impl ClientTarget {
    /// Parses `%N`, `@N`, `$N`, a session name, or `SESSION:WINDOW[.PANE]`.
    pub fn parse(text: &str) -> Result<Self, TargetError> {
        match text.split_once(':') {
            Some((session, tail)) => TargetPath::parse(text, session, tail).map(Self::Path),
            None => Target::parse(text).map(Self::Direct).map_err(|e| match e {
                TargetError::Unrecognized(_) if is_tmux_token(text) || text.contains('.') => {
                    TargetError::Relative(excerpt(text))
                }
                e => e,
            }),
        }
    }
}

impl fmt::Display for ClientTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientTarget::Direct(target) => write!(f, "{target}"),
            ClientTarget::Path(path) => write!(f, "{path}"),
        }
    }
}

/// tmux's `SESSION:WINDOW[.PANE]`: a session (by id or exact name) and, as written, what
/// follows the colon. WINDOW is a window index or an exact window name, PANE a pane index;
/// a name may hold dots, so the text after the colon can be read two ways
/// ([`Self::readings`]), and resolving it says which one names an object.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TargetPath {
    /// The session before the colon, by id or exact name.
    pub session: SessionSel,
    tail: String,
}

/// One way to read what follows a path's colon: a window (index or exact name) and maybe a
/// pane index in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathReading<'a> {
    /// The window: an index or an exact window name.
    pub window: &'a str,
    /// The pane index in it, if this reading has one.
    pub pane: Option<u32>,
}

impl TargetPath {
    fn parse(text: &str, session: &str, tail: &str) -> Result<Self, TargetError> {
        if session.is_empty() || tail.is_empty() {
            return Err(TargetError::Relative(excerpt(text)));
        }
        let session = match Target::parse(session) {
            Ok(Target::Session(session)) => session,
            Ok(_) | Err(TargetError::Unrecognized(_) | TargetError::BadId(_)) => {
                return Err(TargetError::BadPathSession(excerpt(text)));
            }
            Err(e) => return Err(e),
        };
        if tail.chars().count() > MAX_PATH_TAIL_CHARS || tail.chars().any(char::is_control) {
            return Err(TargetError::BadWindow(excerpt(text)));
        }
        // tmux's relative and special forms, for the window and after the last dot for the
        // pane: `{last}`, `!`, `+1`, `@3` (an id is given alone), `.1` (the current window),
        // `1.{top}`.
        let pane_part = tail.rsplit_once('.').map(|(_, pane)| pane);
        if is_tmux_token(tail) || pane_part.is_some_and(is_tmux_token) {
            return Err(TargetError::Relative(excerpt(text)));
        }
        Ok(Self {
            session,
            tail: tail.to_owned(),
        })
    }

    /// What follows the colon, as written.
    pub fn tail(&self) -> &str {
        &self.tail
    }

    /// The ways to read what follows the colon: all of it as a window, and, when it ends in a
    /// dot and digits, what comes before as a window and the digits as a pane index. (Only the
    /// last dot can be followed by digits alone, so there are at most two.)
    pub fn readings(&self) -> Vec<PathReading<'_>> {
        let mut readings = vec![PathReading {
            window: &self.tail,
            pane: None,
        }];
        if let Some((window, pane)) = self.tail.rsplit_once('.')
            && let Some(index) = crate::wire::ids::parse_decimal(pane.as_bytes())
            && !window.is_empty()
        {
            readings.push(PathReading {
                window,
                pane: Some(index),
            });
        }
        readings
    }
}

impl fmt::Display for TargetPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.session, self.tail)
    }
}

/// Whether a target, or the window or pane part of a path, is one of tmux's relative or special
/// forms (`{last}`, `{top}`, `!`, `^`, `$`, `+`, `-1`, `~`, `=name`), an id, or empty.
fn is_tmux_token(part: &str) -> bool {
    let signed = part
        .strip_prefix(['+', '-'])
        .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
    part.is_empty()
        || signed
        || part.starts_with(['{', '@', '%', '.', '=', '~'])
        || matches!(part, "!" | "^" | "$")
}

/// Why a target string was refused. Messages quote (escaped) at most 64 characters of the
/// input, so a hostile target cannot make an error message large.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Not an id, a session name or a path.
    #[error(
        "target {0:?} is not valid: use a pane id like %3, a window id like @1, a session id like $0, a session name, or SESSION:WINDOW.PANE"
    )]
    Unrecognized(String),
    /// One of tmux's relative or special forms (`{last}`, `:1`, `1.0`, …).
    #[error(
        "target {0:?} is relative (tmux reads it against a client's current session or window, which the gateway does not use): write SESSION:WINDOW.PANE with indexes, or an id"
    )]
    Relative(String),
    /// A path whose part before the colon is not a session id or name.
    #[error(
        "target {0:?}: the part before the first colon must be a session id ($N) or a session name of A-Z a-z 0-9 _ - (tmux makes no session names with '.' or ':')"
    )]
    BadPathSession(String),
    /// A path whose text after the colon is too long or holds control characters.
    #[error(
        "target {0:?}: WINDOW must be an index or an exact window name (at most 64 characters, no control characters)"
    )]
    BadWindow(String),
    /// A sigil (`%`, `@`, `$`) not followed by a valid id.
    #[error(
        "target {0:?} is not a valid id: ids are a sigil (% pane, @ window, $ session) and digits"
    )]
    BadId(String),
    /// A session name that is not 1–64 of `A-Z a-z 0-9 _ -`.
    #[error("session name {0:?} is not valid: use 1-64 characters from A-Z a-z 0-9 _ -")]
    BadSessionName(String),
    /// The name of muxgate's watch session.
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
        for bad in ["", "a b", "x;y", "~", "#{pane_id}", "é"] {
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

    fn path(text: &str) -> TargetPath {
        match ClientTarget::parse(text) {
            Ok(ClientTarget::Path(path)) => path,
            other => panic!("{text:?} is not a path: {other:?}"),
        }
    }

    #[test]
    fn client_targets_are_ids_names_or_paths() {
        assert_eq!(
            ClientTarget::parse("%3"),
            Ok(ClientTarget::Direct(Target::Pane(PaneId(3))))
        );
        assert_eq!(
            ClientTarget::parse("main"),
            Ok(ClientTarget::Direct(Target::parse("main").unwrap()))
        );
        let p = path("work:1.0");
        assert_eq!(
            p.session,
            SessionSel::Name(SessionName::parse("work").unwrap())
        );
        assert_eq!(p.tail(), "1.0");
        assert_eq!(p.to_string(), "work:1.0");
        assert_eq!(path("$2:logs").session, SessionSel::Id(SessionId(2)));
        // A window name may hold colons and dots.
        assert_eq!(path("work:a:b.c").tail(), "a:b.c");
    }

    #[test]
    fn a_path_reads_as_a_window_and_maybe_a_pane_in_it() {
        let readings = |text: &str| -> Vec<(String, Option<u32>)> {
            path(text)
                .readings()
                .iter()
                .map(|r| (r.window.to_owned(), r.pane))
                .collect()
        };
        assert_eq!(readings("w:1"), [("1".into(), None)]);
        assert_eq!(
            readings("w:1.0"),
            [("1.0".into(), None), ("1".into(), Some(0))]
        );
        assert_eq!(
            readings("w:v1.2.10"),
            [("v1.2.10".into(), None), ("v1.2".into(), Some(10))]
        );
        // Not a pane index: leading zeros, too large, not digits.
        for text in ["w:a.01", "w:a.99999999999", "w:a.b"] {
            assert_eq!(readings(text).len(), 1, "{text}");
        }
    }

    #[test]
    fn relative_and_special_forms_are_refused() {
        for bad in [
            "1.0",
            ":1",
            ":1.0",
            "main.0",
            "{last}",
            "!",
            "work:",
            "work:{last}",
            "work:!",
            "work:+1",
            "work:-",
            "work:^",
            "work:$",
            "work:.1",
            "work:1.",
            "work:1.{top}",
            "work:1.+",
            "work:1.-2",
            "work:@3",
            "work:%4",
            "work:=x",
            "work:~",
        ] {
            assert!(
                matches!(ClientTarget::parse(bad), Err(TargetError::Relative(_))),
                "{bad:?}: {:?}",
                ClientTarget::parse(bad)
            );
        }
        for bad in ["%3:1", "@1:0", "a b:1", "$x:1", "main.x:1"] {
            assert!(
                matches!(
                    ClientTarget::parse(bad),
                    Err(TargetError::BadPathSession(_) | TargetError::BadSessionName(_))
                ),
                "{bad:?}: {:?}",
                ClientTarget::parse(bad)
            );
        }
        assert_eq!(
            ClientTarget::parse("_muxgate:0"),
            Err(TargetError::ReservedSessionName("_muxgate".into()))
        );
        for bad in ["w:a\nb", "w:a\tb"] {
            assert!(
                matches!(ClientTarget::parse(bad), Err(TargetError::BadWindow(_))),
                "{bad:?}"
            );
        }
        let long = format!("w:{}", "x".repeat(MAX_PATH_TAIL_CHARS + 1));
        assert!(matches!(
            ClientTarget::parse(&long),
            Err(TargetError::BadWindow(_))
        ));
        let message = ClientTarget::parse(&format!("{}.0", "y".repeat(500)))
            .unwrap_err()
            .to_string();
        assert!(message.len() < 300, "{message}");
    }
}
