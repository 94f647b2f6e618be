//! `-F` formats and the rows tmux prints for them.
//!
//! Listing commands (`list-sessions`, `list-panes -a`, …) print one row per object for a format
//! of `#{field}`s. muxgate joins fields with the ASCII unit separator (0x1f), which tmux never
//! puts in names it prints (it escapes control characters in session and window names), and
//! puts free text (titles, option values) last so a stray separator there cannot shift the
//! other fields: [`split_row`] splits into at most the expected number of fields.
//!
//! One listing command answers for every object at once, so listings cost one tmux command
//! however many objects they return.

/// The separator between fields of a row.
pub const FIELD_SEP: char = '\x1f';

/// `#{a}<sep>#{b}<sep>…` for the given tmux format variables.
pub fn row_format(fields: &[&str]) -> String {
    let mut out = String::new();
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(FIELD_SEP);
        }
        out.push_str("#{");
        out.push_str(field);
        out.push('}');
    }
    out
}

/// Splits a row into exactly `n` fields (the last keeps any further separators); `None` when
/// the row has fewer. Bytes that are not UTF-8 are replaced, as names are text.
pub fn split_row(line: &[u8], n: usize) -> Option<Vec<String>> {
    let text = String::from_utf8_lossy(line);
    let fields: Vec<String> = text.splitn(n, FIELD_SEP).map(str::to_owned).collect();
    (fields.len() == n).then_some(fields)
}

/// tmux's boolean format values (`1` / `0` or empty).
pub fn flag(value: &str) -> bool {
    value == "1"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_splits_rows() {
        assert_eq!(
            row_format(&["pane_id", "pane_title"]),
            "#{pane_id}\u{1f}#{pane_title}"
        );
        let row = b"%1\x1f0\x1ftitle with \x1f inside";
        assert_eq!(
            split_row(row, 3),
            Some(vec![
                "%1".into(),
                "0".into(),
                "title with \u{1f} inside".into()
            ])
        );
        assert_eq!(split_row(b"%1\x1f0", 3), None);
        assert!(flag("1") && !flag("0") && !flag(""));
    }
}
