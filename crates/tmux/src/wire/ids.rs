//! tmux object ids: `%N` panes, `@N` windows, `$N` sessions.
//!
//! Ids are the only way muxgate names tmux objects on a command line: they are unique for the
//! life of a server, never reused, and — unlike `session:window` targets — resolving them never
//! changes which window a human sees. Parsing is strict (no sign, no whitespace, no leading
//! zeros beyond `0` itself) so that an id that parses is exactly the id tmux printed.

use std::fmt;
use std::str::FromStr;

/// Why a string is not a tmux object id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a tmux {kind} id (expected {prefix} followed by digits, e.g. {prefix}3)")]
pub struct IdParseError {
    input: String,
    kind: &'static str,
    prefix: char,
}

macro_rules! tmux_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            /// The one-character prefix tmux prints before the number.
            pub const PREFIX: char = $prefix;

            /// Parses the id from raw bytes as they appear on the control-mode wire.
            pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
                let (&first, digits) = bytes.split_first()?;
                if char::from(first) != $prefix {
                    return None;
                }
                parse_decimal(digits).map($name)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}", $prefix, self.0)
            }
        }

        /// Serialized as tmux prints it (`%12`), a string.
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                <String as schemars::JsonSchema>::json_schema(generator)
            }

            fn inline_schema() -> bool {
                true
            }
        }

        impl FromStr for $name {
            type Err = IdParseError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::from_bytes(s.as_bytes()).ok_or_else(|| IdParseError {
                    input: s.chars().take(64).collect(),
                    kind: $kind,
                    prefix: $prefix,
                })
            }
        }
    };
}

tmux_id!(
    /// A pane id such as `%12`.
    PaneId,
    '%',
    "pane"
);
tmux_id!(
    /// A window id such as `@3`.
    WindowId,
    '@',
    "window"
);
tmux_id!(
    /// A session id such as `$0`.
    SessionId,
    '$',
    "session"
);

/// Parses a canonical unsigned decimal (`0`, `17`; not `007`, `+1`, or an overflow).
pub(crate) fn parse_decimal(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || digits.len() > 10 || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    let mut value: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value * 10 + u64::from(d - b'0');
    }
    u32::try_from(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_ids() {
        assert_eq!("%12".parse::<PaneId>(), Ok(PaneId(12)));
        assert_eq!("@0".parse::<WindowId>(), Ok(WindowId(0)));
        assert_eq!("$4294967295".parse::<SessionId>(), Ok(SessionId(u32::MAX)));
        assert_eq!(PaneId(7).to_string(), "%7");
        assert_eq!(SessionId(3).to_string(), "$3");
    }

    #[test]
    fn rejects_anything_not_canonical() {
        for bad in [
            "",
            "%",
            "12",
            "@1",
            "%-1",
            "%+1",
            "%01",
            "% 1",
            "%1 ",
            "%1a",
            "%4294967296",
            "%1;",
        ] {
            assert!(bad.parse::<PaneId>().is_err(), "{bad:?} must not parse");
        }
        let err = "x".parse::<SessionId>().unwrap_err().to_string();
        assert!(err.contains("session id") && err.contains("$3"), "{err}");
    }
}
