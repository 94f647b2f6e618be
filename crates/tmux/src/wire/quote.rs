//! Quoting of arguments for control-mode command lines.
//!
//! Every argument muxgate puts on a command line goes through [`quote_arg`], so that what tmux's
//! command parser hands to the command is byte for byte what the caller gave. The rules, measured
//! against tmux 3.3a and 3.5a:
//! - inside single quotes nothing is special (`#`, `;`, `$`, `~`, `{`, `"` are literal), so
//!   printable ASCII and valid UTF-8 go there;
//! - a single quote cannot appear inside single quotes: it is written as `\'` between two quoted
//!   runs;
//! - control bytes (which would end or corrupt the line) and bytes that are not valid UTF-8 (which
//!   tmux's lexer splits words on) are written outside the quotes as three-digit octal escapes
//!   `\ooo`, which the parser turns back into the raw byte;
//! - a NUL byte cannot be represented at all (tmux stores arguments as C strings), so it is an
//!   error rather than a silent truncation.
//!
//! Adjacent quoted and escaped pieces join into one argument, exactly like in a shell.
//! This module only builds bytes; it does not know which commands expand formats (`#{…}`) in
//! which arguments — see [`crate::wire::command`] for that.

/// Why an argument cannot be put on a tmux command line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuoteError {
    /// The argument holds a NUL byte.
    #[error(
        "the text contains a NUL byte at offset {offset}, which tmux cannot receive in an argument"
    )]
    Nul {
        /// Byte offset of the first NUL.
        offset: usize,
    },
}

/// Appends `arg` to `out` as one tmux argument that parses back to exactly `arg`.
pub fn quote_arg(out: &mut Vec<u8>, arg: &[u8]) -> Result<(), QuoteError> {
    if let Some(offset) = memchr::memchr(0, arg) {
        return Err(QuoteError::Nul { offset });
    }
    if arg.is_empty() {
        out.extend_from_slice(b"''");
        return Ok(());
    }
    let mut quoted = false;
    for chunk in arg.utf8_chunks() {
        for ch in chunk.valid().chars() {
            let mut utf8 = [0u8; 4];
            let bytes = ch.encode_utf8(&mut utf8).as_bytes();
            match ch {
                '\'' => {
                    close(out, &mut quoted);
                    out.extend_from_slice(b"\\'");
                }
                c if c.is_ascii_control() => {
                    close(out, &mut quoted);
                    octal(out, bytes[0]);
                }
                _ => {
                    if !quoted {
                        out.push(b'\'');
                        quoted = true;
                    }
                    out.extend_from_slice(bytes);
                }
            }
        }
        if !chunk.invalid().is_empty() {
            close(out, &mut quoted);
            for &b in chunk.invalid() {
                octal(out, b);
            }
        }
    }
    close(out, &mut quoted);
    Ok(())
}

fn close(out: &mut Vec<u8>, quoted: &mut bool) {
    if *quoted {
        out.push(b'\'');
        *quoted = false;
    }
}

fn octal(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(&[
        b'\\',
        b'0' + (b >> 6),
        b'0' + ((b >> 3) & 7),
        b'0' + (b & 7),
    ]);
}

/// A model of tmux's lexer for exactly the syntax [`quote_arg`] produces (single-quoted runs,
/// `\ooo` and `\'` escapes): what tmux makes of a quoted argument. The unit tests and the fuzz
/// target check round trips against it; the integration tests check the same against a real
/// tmux. `None` for anything outside that syntax.
pub fn unquote(line: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'\'' => {
                let end = i + 1 + memchr::memchr(b'\'', &line[i + 1..])?;
                out.extend_from_slice(&line[i + 1..end]);
                i = end + 1;
            }
            b'\\' if line.get(i + 1) == Some(&b'\'') => {
                out.push(b'\'');
                i += 2;
            }
            b'\\' => {
                let digits = line.get(i + 1..i + 4)?;
                let v = digits.iter().try_fold(0u32, |acc, d| {
                    (b'0'..=b'7')
                        .contains(d)
                        .then(|| acc * 8 + u32::from(d - b'0'))
                })?;
                out.push(u8::try_from(v).ok()?);
                i += 4;
            }
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(arg: &[u8]) -> String {
        let mut out = Vec::new();
        quote_arg(&mut out, arg).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn quotes_each_kind_of_byte() {
        assert_eq!(quoted(b""), "''");
        assert_eq!(quoted(b"plain text"), "'plain text'");
        assert_eq!(quoted(b"it's"), r"'it'\''s'");
        assert_eq!(quoted(b"'"), r"\'");
        assert_eq!(quoted(b"a\nb\tc\x1b"), r"'a'\012'b'\011'c'\033");
        assert_eq!(
            quoted(b"#{pane_id} ; $HOME ~ \"x\""),
            "'#{pane_id} ; $HOME ~ \"x\"'"
        );
        assert_eq!(quoted("é€😀".as_bytes()), "'é€😀'");
        assert_eq!(quoted(b"a\xff\xfeb"), r"'a'\377\376'b'");
        assert_eq!(quoted(b"\x7f"), r"\177");
        assert_eq!(quoted(b"-n"), "'-n'");
    }

    #[test]
    fn refuses_nul() {
        let mut out = Vec::new();
        assert_eq!(
            quote_arg(&mut out, b"ab\0c"),
            Err(QuoteError::Nul { offset: 2 })
        );
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn round_trips_and_stays_on_one_line(arg in prop::collection::vec(1u8..=255, 0..300)) {
                let mut out = Vec::new();
                quote_arg(&mut out, &arg).unwrap();
                prop_assert!(!out.contains(&b'\n') && !out.contains(&b'\r') && !out.contains(&0));
                prop_assert!(!out.contains(&b' ') || arg.contains(&b' '));
                prop_assert_eq!(unquote(&out), Some(arg));
            }

            #[test]
            fn round_trips_text(arg in "\\PC*") {
                let mut out = Vec::new();
                quote_arg(&mut out, arg.as_bytes()).unwrap();
                prop_assert_eq!(unquote(&out), Some(arg.into_bytes()));
            }
        }
    }
}
