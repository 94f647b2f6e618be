//! `-F` formats and the rows tmux prints for them.
//!
//! Listing commands (`list-sessions`, `list-panes -a`, …) print one row per object for a format
//! of fields. Every field is written `#{q:field}`: tmux's shell quoting puts a backslash before
//! `|`, `\` and the other shell metacharacters in the value, so the `|` between fields is the
//! only bare `|` in a row and a row splits into exactly its fields, whatever a title, a path or
//! a name holds. tmux 3.4 and later also escape control characters in everything a command
//! prints (`\012`, `\n`: octal or C style, backslashes left alone); `split_row` decodes both
//! (tmux 3.3 prints them raw, which it reads as they are).
//!
//! One listing command answers for every object at once, so listings cost one tmux command
//! however many objects they return.

/// The separator between fields of a row.
const FIELD_SEP: char = '|';

/// `#{q:a}|#{q:b}|…` for the given tmux format variables.
pub(crate) fn row_format(fields: &[&str]) -> String {
    let mut out = String::new();
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(FIELD_SEP);
        }
        out.push_str("#{q:");
        out.push_str(field);
        out.push('}');
    }
    out
}

/// Splits a row of [`row_format`] into exactly its `n` fields, undoing tmux's escapes; `None`
/// when it does not hold `n`. Bytes that are not UTF-8 are replaced, as names are text.
///
/// A listing splits every row of the server, so each field is copied once: found first (an
/// escaped `|` is not a separator), then decoded only if it holds an escape.
pub(crate) fn split_row(line: &[u8], n: usize) -> Option<Vec<String>> {
    let mut fields = Vec::with_capacity(n);
    let (mut start, mut escaped, mut at) = (0, false, 0);
    while let Some(&byte) = line.get(at) {
        at += 1;
        match byte {
            b'|' => {
                fields.push(field_text(&line[start..at - 1], escaped));
                (start, escaped) = (at, false);
            }
            b'\\' => {
                escaped = true;
                at += unescape(&line[at..]).1;
            }
            _ => {}
        }
    }
    fields.push(field_text(&line[start..], escaped));
    (fields.len() == n).then_some(fields)
}

/// One field of a row as text: `raw` as it is, or decoded when it holds an escape.
fn field_text(raw: &[u8], escaped: bool) -> String {
    if !escaped {
        return String::from_utf8_lossy(raw).into_owned();
    }
    let mut decoded = Vec::with_capacity(raw.len());
    let mut at = 0;
    while let Some(&byte) = raw.get(at) {
        at += 1;
        if byte == b'\\' {
            let (byte, used) = unescape(&raw[at..]);
            decoded.push(byte);
            at += used;
        } else {
            decoded.push(byte);
        }
    }
    String::from_utf8(decoded)
        .unwrap_or_else(|invalid| String::from_utf8_lossy(invalid.as_bytes()).into_owned())
}

/// The byte an escape stands for, given what follows its backslash, and how many bytes of that
/// it took: three octal digits or a C-style letter (tmux's escape of a control character), or
/// one character (a `q:` escape of a shell metacharacter). A backslash at the end stands for
/// itself.
fn unescape(rest: &[u8]) -> (u8, usize) {
    let octal = |b: &u8| (b'0'..=b'7').contains(b);
    if rest.len() >= 3 && rest[..3].iter().all(octal) {
        let value = rest[..3]
            .iter()
            .fold(0u32, |value, digit| value * 8 + u32::from(digit - b'0'));
        if let Ok(byte) = u8::try_from(value) {
            return (byte, 3);
        }
    }
    match rest.first() {
        None => (b'\\', 0),
        Some(b'n') => (b'\n', 1),
        Some(b'r') => (b'\r', 1),
        Some(b't') => (b'\t', 1),
        Some(b'a') => (0x07, 1),
        Some(b'b') => (0x08, 1),
        Some(b'v') => (0x0b, 1),
        Some(b'f') => (0x0c, 1),
        Some(&other) => (other, 1),
    }
}

/// A row as tmux prints it for [`row_format`] (tests build rows with it).
#[cfg(any(test, feature = "test-util"))]
pub fn encode_row(fields: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b'|');
        }
        for &byte in field.as_bytes() {
            if b"|&;<>()$`\\\"'*?[# =%".contains(&byte) {
                out.push(b'\\');
            }
            out.push(byte);
        }
    }
    out
}

/// tmux's boolean format values (`1` / `0` or empty).
pub fn flag(value: &str) -> bool {
    value == "1"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_quoted_and_joined() {
        assert_eq!(
            row_format(&["pane_id", "pane_title"]),
            "#{q:pane_id}|#{q:pane_title}"
        );
    }

    #[test]
    fn rows_split_into_exactly_their_fields() {
        // As tmux 3.3 prints `%1`, `0`, `a | b\c d` and an empty field: `q:` escapes only.
        let row = br"%1|0|a\ \|\ b\\c\ d|";
        assert_eq!(
            split_row(row, 4),
            Some(vec![
                "%1".into(),
                "0".into(),
                r"a | b\c d".into(),
                "".into()
            ])
        );
        assert_eq!(split_row(row, 3), None);
        assert_eq!(split_row(b"%1|0", 3), None);
        assert_eq!(split_row(b"", 1), Some(vec![String::new()]));
    }

    #[test]
    fn control_characters_escaped_by_newer_tmux_are_decoded() {
        // tmux 3.4+: a control character in a value is printed `\ooo` or C style; a backslash
        // of the value is `\\` (from `q:`), so `\\037` is text and `\037` a byte.
        let row = br"/tmp/a\012b\037c|\\037|x\ny\t|caf\303\251";
        assert_eq!(
            split_row(row, 4),
            Some(vec![
                "/tmp/a\nb\u{1f}c".into(),
                r"\037".into(),
                "x\ny\t".into(),
                "café".into()
            ])
        );
        assert_eq!(split_row(br"end\", 1), Some(vec![r"end\".into()]));
        assert_eq!(split_row(br"\777", 1), Some(vec!["777".into()]));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_replaced_raw_or_escaped() {
        assert_eq!(
            split_row(b"a\xffb|\\377\\ c", 2),
            Some(vec!["a\u{fffd}b".into(), "\u{fffd} c".into()])
        );
    }

    proptest::proptest! {
        #[test]
        fn any_fields_split_back_from_their_row(
            fields in proptest::collection::vec(".*", 1..8)
        ) {
            let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
            let row = encode_row(&fields);
            proptest::prop_assert_eq!(split_row(&row, fields.len()), Some(fields.iter().map(|f| (*f).to_owned()).collect()));
        }
    }

    #[test]
    fn encoded_rows_round_trip() {
        let fields = ["%3", "my | title", r"C:\path", "$HOME #{x}", ""];
        let row = encode_row(&fields);
        assert_eq!(split_row(&row, fields.len()).unwrap(), fields);
    }

    #[test]
    fn flags() {
        assert!(flag("1") && !flag("0") && !flag(""));
    }
}
