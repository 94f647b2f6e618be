//! tmux key names: which strings `send-keys` presses as one key.
//!
//! `send-keys` treats each argument as a key name and, when the name is unknown, types it
//! character by character (through its own parser: a leading `-` is an option, a trailing `;`
//! ends the command). muxgate keeps tmux's rule but not the mangling: a string [`KeyName::parse`]
//! accepts is pressed, and any other string is typed with `send-keys -l`, byte for byte. A key
//! name is what tmux itself resolves to one key (`key_string_lookup_string` in tmux's
//! key-string.c, 3.3a–3.5a):
//! - optional modifiers `C-` (or a leading `^`), `M-`, `S-` (any order, either case);
//! - then a named key (case-insensitive): `Enter`, `Escape`, `Tab`, `BTab`, `Space`, `BSpace`,
//!   `Up`/`Down`/`Left`/`Right`, `Home`, `End`, `PageUp`/`PgUp`/`PPage`,
//!   `PageDown`/`PgDn`/`NPage`, `IC`/`Insert`, `DC`/`Delete`, `F1`–`F12`, keypad `KP0`–`KP9`,
//!   `KP/ KP* KP- KP+ KP. KPEnter`;
//! - or exactly one printable character (`a`, `;`, `é`), where `C-` applies only to the
//!   characters tmux can turn into a control code (`C-a`, `C-@` = NUL, `C-[`, `C-?`).
//!
//! Deliberately refused although tmux knows them: mouse events, `UserN`, `None`, `Any` and
//! `0x…` code points (none of them is a key a program in a pane reads as typed input).
//! Pure: no I/O.

use std::fmt;

/// Longest key name accepted (the longest real one, `C-M-S-PageDown`, is 14 bytes).
pub const MAX_KEY_NAME_LEN: usize = 32;

/// Examples for error messages.
pub const KEY_EXAMPLES: &str =
    "Enter, C-c, C-d, M-x, S-Up, Escape, Tab, BSpace, Up, PageDown, F5, Space, y";

/// Named keys, as tmux spells them (matched case-insensitively).
const NAMED_KEYS: &[&str] = &[
    "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12", "IC", "Insert",
    "DC", "Delete", "Home", "End", "NPage", "PageDown", "PgDn", "PPage", "PageUp", "PgUp", "Tab",
    "BTab", "Space", "BSpace", "Enter", "Escape", "Up", "Down", "Left", "Right", "KP/", "KP*",
    "KP-", "KP7", "KP8", "KP9", "KP+", "KP4", "KP5", "KP6", "KP1", "KP2", "KP3", "KPEnter", "KP0",
    "KP.",
];

/// Named keys whose code is an ASCII control character, which tmux's `C-` conversion skips.
const ASCII_NAMED: &[(&str, u8)] = &[("Tab", 9), ("Space", b' '), ("Enter", 13), ("Escape", 27)];

/// Characters that keep the `C-` modifier as a flag instead of becoming a control code.
const CTRL_KEEPS: &[u8] = b"!#()+,-.0123456789:;<=>'\r\t\x7f`/";

/// A key name tmux resolves to exactly one key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyName(String);

impl KeyName {
    /// `name` as a key name, if tmux resolves it to exactly one key and it is at most
    /// [`MAX_KEY_NAME_LEN`] bytes.
    pub fn parse(name: &str) -> Result<Self, KeyError> {
        if name.is_empty() {
            return Err(KeyError::Empty);
        }
        if name.len() <= MAX_KEY_NAME_LEN && is_key_name(name) {
            Ok(Self(name.to_owned()))
        } else {
            Err(KeyError::Unknown(name.chars().take(40).collect()))
        }
    }

    /// The key name, as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `Enter`.
    pub fn enter() -> Self {
        Self("Enter".to_owned())
    }

    /// `C-@`, which types a NUL byte.
    pub fn nul() -> Self {
        Self("C-@".to_owned())
    }
}

impl fmt::Display for KeyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a key name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The name is empty.
    #[error("an empty key name is not a key; valid names look like: {KEY_EXAMPLES}")]
    Empty,
    /// tmux does not resolve the name to one key; its first 40 characters.
    #[error("{0:?} is not a tmux key name; valid names look like: {KEY_EXAMPLES}")]
    Unknown(String),
}

fn is_key_name(name: &str) -> bool {
    let mut rest = name;
    let mut ctrl = false;
    if let Some(after) = rest.strip_prefix('^')
        && !after.is_empty()
    {
        ctrl = true;
        rest = after;
    }
    while let [first, b'-', ..] = rest.as_bytes() {
        match first {
            b'C' | b'c' => ctrl = true,
            b'M' | b'm' | b'S' | b's' => {}
            _ => return false,
        }
        rest = &rest[2..];
    }
    let mut chars = rest.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    if chars.next().is_none() {
        // One character: ASCII goes through the control conversion, other characters are keys
        // as they are.
        return match u8::try_from(first) {
            Ok(byte) if byte.is_ascii() => byte >= 0x20 && (!ctrl || ctrl_applies(byte)),
            _ => !first.is_control(),
        };
    }
    let Some(named) = NAMED_KEYS.iter().find(|k| k.eq_ignore_ascii_case(rest)) else {
        return false;
    };
    match ASCII_NAMED.iter().find(|(k, _)| k == named) {
        Some(&(_, code)) => !ctrl || ctrl_applies(code),
        None => true,
    }
}

/// Whether tmux accepts `C-` on this ASCII key (it either keeps it as a flag or turns the key
/// into a control code; anything else is "unknown key").
fn ctrl_applies(key: u8) -> bool {
    CTRL_KEEPS.contains(&key)
        || matches!(key, 9 | 13 | 27)
        || key.is_ascii_lowercase()
        || (64..=95).contains(&key)
        || key == b' '
        || key == b'?'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_tmux_resolves_to_one_key() {
        for name in [
            "Enter",
            "enter",
            "ENTER",
            "C-c",
            "c-c",
            "^C",
            "^c",
            "C-@",
            "C-Space",
            "M-x",
            "S-Up",
            "C-M-S-PageDown",
            "M-Enter",
            "Escape",
            "Tab",
            "BTab",
            "BSpace",
            "Up",
            "Down",
            "Left",
            "Right",
            "Home",
            "End",
            "PageUp",
            "PgUp",
            "PPage",
            "PageDown",
            "PgDn",
            "NPage",
            "IC",
            "Insert",
            "DC",
            "Delete",
            "F1",
            "F12",
            "KP0",
            "KP9",
            "KP/",
            "KP*",
            "KP-",
            "KP+",
            "KP.",
            "KPEnter",
            "Space",
            "a",
            "Z",
            "1",
            ";",
            "-",
            "^",
            "#",
            "'",
            "\"",
            "~",
            "é",
            "😀",
            "M-é",
            "C-[",
            "C-?",
            "C-1",
            "C--",
            "C-Tab",
            "C-Enter",
            "C-Escape",
            "\x7f",
        ] {
            assert!(KeyName::parse(name).is_ok(), "{name:?} should be a key");
        }
    }

    #[test]
    fn refuses_text_and_names_tmux_would_type_literally() {
        for name in [
            "ls -la",
            "ctrl+c",
            "Ctrl-C",
            "C-",
            "M-",
            "--",
            "a-b",
            "F13",
            "Return",
            "Esc",
            "ab",
            "éa",
            "C-~",
            "C-é-",
            "\n",
            "\t",
            "\x1b",
            "MouseDown1Pane",
            "WheelUp",
            "User0",
            "None",
            "Any",
            "0x1b",
            "X-a",
        ] {
            assert!(KeyName::parse(name).is_err(), "{name:?} should be refused");
        }
        let long = "C-".repeat(20) + "a";
        assert!(KeyName::parse(&long).is_err());
    }

    #[test]
    fn errors_show_examples_and_a_short_quote() {
        let err = KeyName::parse(&"x".repeat(100)).unwrap_err().to_string();
        assert!(err.contains("Enter, C-c"), "{err}");
        assert!(err.len() < 200, "{err}");
        assert_eq!(KeyName::parse(""), Err(KeyError::Empty));
        assert_eq!(KeyName::nul().as_str(), "C-@");
        assert_eq!(KeyName::enter().to_string(), "Enter");
    }
}
