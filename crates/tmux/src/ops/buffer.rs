//! Paste buffers muxgate creates: their names, and reading one back exactly.
//!
//! tmux paste buffers are server-wide and may hold a human's clipboard history, so muxgate
//! only ever names buffers it made:
//! - **owned** buffers hold what a client loaded (`load_buffer`): `muxgate_<h>_<logical>`,
//!   where `<h>` is derived from the client's identity, so one client's names can never reach
//!   another client's buffers, and the client only ever supplies the logical part;
//! - **transient** buffers carry one paste (`muxgate_tmp_<random>`) and are deleted by the
//!   `paste-buffer -d` that uses them.
//!
//! Reading a buffer back: over control mode `show-buffer` prints the content as body lines.
//! tmux 3.3 and older escape it first (`strvisx` with `VIS_OCTAL|VIS_CSTYLE|VIS_TAB`: `\\`,
//! `\t`, `\r`, `\033`, `\377`…, newlines left as they are); 3.4 and later print it raw.
//! [`decode_show_buffer`] undoes either, given the server's version.
//!
//! Pure: no I/O.

/// Prefix of every buffer muxgate creates.
pub const BUFFER_PREFIX: &str = "muxgate_";

/// Longest logical name.
pub const MAX_LOGICAL_LEN: usize = 64;

/// A client's name for one of its buffers: 1–64 of `A-Z a-z 0-9 _ . -`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LogicalBufferName(String);

impl LogicalBufferName {
    /// `name` as a logical name, if it is 1–64 of `A-Z a-z 0-9 _ . -`.
    pub fn parse(name: &str) -> Result<Self, BufferNameError> {
        let valid = (1..=MAX_LOGICAL_LEN).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if valid {
            Ok(Self(name.to_owned()))
        } else {
            Err(BufferNameError(name.chars().take(64).collect()))
        }
    }

    /// The logical name, as the client gave it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The tmux buffer name for this logical name, owned by `owner` (a client identity).
    pub fn tmux_name(&self, owner: &str) -> String {
        format!(
            "{BUFFER_PREFIX}{}_{}",
            crate::ops::client_tag(owner),
            self.0
        )
    }
}

/// Why a logical buffer name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("buffer name {0:?} is not valid: use 1-64 characters from A-Z a-z 0-9 _ . -")]
pub struct BufferNameError(String);

/// A fresh name for a transient buffer (cannot collide with owned names: `tmp` is not hex).
pub fn transient_buffer_name() -> String {
    format!("{BUFFER_PREFIX}tmp_{:016x}", rand::random::<u64>())
}

/// Whether `show-buffer` output over control mode is escaped on a server reporting `version`
/// (`#{version}`, e.g. `3.3a`, `next-3.5`). Unrecognised versions are taken as recent.
pub fn show_buffer_escaped(version: &str) -> bool {
    let digits = version.trim().rsplit('-').next().unwrap_or("");
    let mut parts = digits.split('.');
    let major = parts.next().and_then(|m| m.parse::<u32>().ok());
    let minor = parts.next().map(|m| {
        m.bytes()
            .take_while(u8::is_ascii_digit)
            .fold(0u32, |acc, d| {
                acc.saturating_mul(10).saturating_add(u32::from(d - b'0'))
            })
    });
    match (major, minor) {
        (Some(major), Some(minor)) => (major, minor) < (3, 4),
        _ => false,
    }
}

/// The buffer's bytes from `show-buffer`'s body lines.
pub fn decode_show_buffer(lines: &[Vec<u8>], escaped: bool) -> Vec<u8> {
    let joined = lines.join(&b'\n');
    if escaped { unvis(&joined) } else { joined }
}

/// Undoes `strvis(VIS_OCTAL|VIS_CSTYLE|…)`: `\\`, C-style letters, `\s`, and 1–3 digit
/// octal escapes. Anything else after a backslash is kept as it is.
pub fn unvis(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if b != b'\\' || i + 1 == text.len() {
            out.push(b);
            i += 1;
            continue;
        }
        let next = text[i + 1];
        let simple = match next {
            b'\\' => Some(b'\\'),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'b' => Some(8),
            b'a' => Some(7),
            b'v' => Some(11),
            b'f' => Some(12),
            b's' => Some(b' '),
            b'E' => Some(27),
            _ => None,
        };
        if let Some(decoded) = simple {
            out.push(decoded);
            i += 2;
            continue;
        }
        let digits = text[i + 1..]
            .iter()
            .take(3)
            .take_while(|d| (b'0'..=b'7').contains(d))
            .count();
        if digits == 0 {
            out.push(b);
            i += 1;
            continue;
        }
        let value = text[i + 1..i + 1 + digits]
            .iter()
            .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
        // Three octal digits can exceed a byte (\777); tmux never writes those, keep the text.
        match u8::try_from(value) {
            Ok(byte) => out.push(byte),
            Err(_) => out.extend_from_slice(&text[i..i + 1 + digits]),
        }
        i += 1 + digits;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logical_names_are_checked_and_owned() {
        let name = LogicalBufferName::parse("build.log-1_A").unwrap();
        let mine = name.tmux_name("agent-1");
        assert!(mine.starts_with("muxgate_") && mine.ends_with("_build.log-1_A"));
        assert_eq!(
            mine.len(),
            "muxgate_".len() + 16 + 1 + "build.log-1_A".len()
        );
        assert_ne!(mine, name.tmux_name("agent-2"));
        assert_eq!(mine, name.tmux_name("agent-1"));
        for bad in ["", "a b", "x;y", "é", "a/b", &"a".repeat(65)] {
            assert!(LogicalBufferName::parse(bad).is_err(), "{bad:?}");
        }
        let transient = transient_buffer_name();
        assert!(transient.starts_with("muxgate_tmp_") && transient.len() == 28);
        assert_ne!(transient, transient_buffer_name());
    }

    #[test]
    fn versions_before_3_4_escape() {
        for old in ["3.3a", "3.3", "3.2a", "2.9", "next-3.3", "1.8"] {
            assert!(show_buffer_escaped(old), "{old}");
        }
        for new in [
            "3.4",
            "3.5a",
            "3.6",
            "next-3.7",
            "4.0",
            "master",
            "openbsd-7.5",
            "",
        ] {
            assert!(!show_buffer_escaped(new), "{new}");
        }
    }

    #[test]
    fn unvis_undoes_tmux_escapes() {
        // As tmux 3.3a printed `a\b<TAB>c<0xff><CR>é"<LF>%end<ESC>z` (measured).
        let mut first = br"a\\b\tc\377\r".to_vec();
        first.extend_from_slice("é\"".as_bytes());
        let second = br"%end\033z".to_vec();
        let decoded = decode_show_buffer(&[first, second], true);
        assert_eq!(decoded, b"a\\b\tc\xff\r\xc3\xa9\"\n%end\x1bz");
        assert_eq!(decode_show_buffer(&[b"a\\tb".to_vec()], false), b"a\\tb");
        assert_eq!(
            unvis(br"\s\a\b\v\f\n\E\0\00\1x\9\"),
            b" \x07\x08\x0b\x0c\n\x1b\0\0\x01x\\9\\"
        );
        assert_eq!(unvis(br"\777"), br"\777");
    }

    #[test]
    fn lines_join_with_newlines() {
        assert_eq!(
            decode_show_buffer(&[b"a".to_vec(), Vec::new()], false),
            b"a\n"
        );
        assert_eq!(decode_show_buffer(&[], true), b"");
    }
}
