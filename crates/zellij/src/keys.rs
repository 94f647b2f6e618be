//! Key names for `zellij action send-keys`, validated before they reach the CLI.
//!
//! Zellij spells a key as optional modifiers then a key, separated by spaces: `"Ctrl c"`,
//! `"Alt Shift b"`, `"F5"`, `"Enter"`. Zellij silently ignores what it cannot parse, so muxgate
//! checks the grammar itself and says what is wrong.

use std::fmt;

use muxgate_mux::error::Unsupported;

use crate::unsupported;

/// Named keys Zellij accepts (matched case-insensitively), besides single characters.
const NAMED_KEYS: &[&str] = &[
    "PageDown",
    "PageUp",
    "Left",
    "Down",
    "Up",
    "Right",
    "Home",
    "End",
    "Backspace",
    "Delete",
    "Del",
    "Insert",
    "F1",
    "F2",
    "F3",
    "F4",
    "F5",
    "F6",
    "F7",
    "F8",
    "F9",
    "F10",
    "F11",
    "F12",
    "Tab",
    "Esc",
    "Enter",
    "CapsLock",
    "ScrollLock",
    "NumLock",
    "PrintScreen",
    "Pause",
    "Menu",
    "Space",
];

const MODIFIERS: &[&str] = &["Ctrl", "Alt", "Shift", "Super"];

/// A key with modifiers, in Zellij's canonical spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key(String);

/// Why a key name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid key {given:?}: {reason}")]
pub struct InvalidKey {
    /// The key name as given.
    pub given: String,
    /// What is wrong with it.
    pub reason: String,
}

impl Key {
    /// Parses `"Ctrl c"`, `"alt shift B"`, `"enter"`, `"x"`.
    pub fn parse(given: &str) -> Result<Self, InvalidKey> {
        let refuse = |reason: String| InvalidKey {
            given: given.to_owned(),
            reason,
        };
        let mut words: Vec<&str> = given.split_ascii_whitespace().collect();
        let Some(key) = words.pop() else {
            return Err(refuse("empty key".to_owned()));
        };
        if MODIFIERS.iter().any(|m| m.eq_ignore_ascii_case(key)) {
            return Err(refuse(
                "a key must follow the modifiers, e.g. \"Ctrl c\"".to_owned(),
            ));
        }
        let mut out = String::new();
        for word in words {
            let Some(m) = MODIFIERS.iter().find(|m| m.eq_ignore_ascii_case(word)) else {
                return Err(refuse(format!(
                    "unknown modifier {word:?}; modifiers are Ctrl, Alt, Shift, Super and come before the key"
                )));
            };
            out.push_str(m);
            out.push(' ');
        }
        if let Some(named) = NAMED_KEYS.iter().find(|k| k.eq_ignore_ascii_case(key)) {
            out.push_str(named);
        } else if key.chars().count() == 1 && !key.chars().all(char::is_control) {
            out.push_str(key);
        } else {
            return Err(refuse(format!(
                "unknown key {key:?}; use one character or a name such as Enter, Tab, Esc, Backspace, Up, F5, PageDown, Space"
            )));
        }
        Ok(Self(out))
    }

    /// The key as Zellij spells it (`Ctrl c`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The Zellij key for a key named in tmux's spelling (`C-c`, `^d`, `M-x`, `S-Up`, `Escape`,
/// `BSpace`, `PPage`, `BTab`, `F5`, `y`), so that a tool both backends serve takes one key
/// syntax. Refused when Zellij has no such key (tmux's keypad keys) or the name is not a key.
pub fn from_tmux_name(name: &str) -> Result<Key, Unsupported> {
    modifiers_and_key(name).ok_or_else(|| unsupported::key(name))
}

fn modifiers_and_key(name: &str) -> Option<Key> {
    let mut words: Vec<&str> = Vec::new();
    let mut rest = name;
    if let Some(after) = rest.strip_prefix('^')
        && !after.is_empty()
    {
        words.push("Ctrl");
        rest = after;
    }
    while let [first, b'-', _, ..] = rest.as_bytes() {
        words.push(match first {
            b'C' | b'c' => "Ctrl",
            b'M' | b'm' => "Alt",
            b'S' | b's' => "Shift",
            _ => return None,
        });
        rest = &rest[2..];
    }
    let key = match rest.to_ascii_lowercase().as_str() {
        "escape" => "Esc",
        "bspace" => "Backspace",
        "ppage" | "pgup" => "PageUp",
        "npage" | "pgdn" => "PageDown",
        "ic" => "Insert",
        "dc" => "Delete",
        "btab" => {
            words.push("Shift");
            "Tab"
        }
        _ => rest,
    };
    words.push(key);
    Key::parse(&words.join(" ")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_spelling() {
        assert_eq!(Key::parse("Ctrl c").unwrap().as_str(), "Ctrl c");
        assert_eq!(Key::parse("ctrl   c").unwrap().as_str(), "Ctrl c");
        assert_eq!(Key::parse("alt shift B").unwrap().as_str(), "Alt Shift B");
        assert_eq!(Key::parse("enter").unwrap().as_str(), "Enter");
        assert_eq!(Key::parse("f12").unwrap().as_str(), "F12");
        assert_eq!(Key::parse("é").unwrap().as_str(), "é");
    }

    #[test]
    fn tmux_key_names_become_zellij_keys() {
        let zellij = |name: &str| from_tmux_name(name).map(|k| k.as_str().to_owned());
        for (tmux, expected) in [
            ("C-c", "Ctrl c"),
            ("^d", "Ctrl d"),
            ("M-x", "Alt x"),
            ("C-M-a", "Ctrl Alt a"),
            ("S-Up", "Shift Up"),
            ("Enter", "Enter"),
            ("Escape", "Esc"),
            ("BSpace", "Backspace"),
            ("PPage", "PageUp"),
            ("PageDown", "PageDown"),
            ("IC", "Insert"),
            ("DC", "Delete"),
            ("BTab", "Shift Tab"),
            ("F5", "F5"),
            ("Space", "Space"),
            ("y", "y"),
            ("-", "-"),
        ] {
            assert_eq!(zellij(tmux).as_deref(), Ok(expected), "{tmux}");
        }
        for none in ["KP0", "KPEnter", "X-c", "C-", "", "ls -la"] {
            assert_eq!(zellij(none), Err(unsupported::key(none)), "{none}");
        }
        assert_eq!(
            unsupported::key("KP0").to_string(),
            "Zellij does not offer the key \"KP0\": it has no such key (no keypad keys)"
        );
    }

    #[test]
    fn refusals_name_the_problem() {
        assert!(Key::parse("").unwrap_err().reason.contains("empty"));
        assert!(
            Key::parse("C-c")
                .unwrap_err()
                .reason
                .contains("unknown key")
        );
        assert!(
            Key::parse("Hyper x")
                .unwrap_err()
                .reason
                .contains("unknown modifier")
        );
        assert!(
            Key::parse("c Ctrl")
                .unwrap_err()
                .reason
                .contains("must follow")
        );
        assert!(Key::parse("F13").is_err());
        assert!(Key::parse("\u{1b}").is_err());
    }
}
