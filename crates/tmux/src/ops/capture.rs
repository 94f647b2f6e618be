//! Reading a pane's text: the `capture-pane` command and the shaping of what it prints.
//!
//! Lines are numbered as tmux numbers them: `0` is the first visible line, negative numbers
//! reach back into the scrollback (history), and `-` ([`LineBound::Edge`]) means the start of
//! the history (for `start`) or the end of the visible screen (for `end`).
//!
//! Captured text can be long (a full history is thousands of lines), so it is shaped before it
//! is returned: trailing blank lines are dropped (the unused bottom of the screen), and when more
//! than `max_lines` remain the TAIL is kept behind a visible marker line
//! `[... N lines truncated ...]` — the most recent output is what a caller needs.
//!
//! Pure: builds the command and shapes its output; runs nothing.

use crate::wire::command::TmuxCommand;
use crate::wire::ids::PaneId;
use crate::wire::quote::QuoteError;
use muxgate_mux::multiplexer::{CaptureRange, CapturedText, LineBound};

/// Default `max_lines` of captures (as the reference server).
pub const DEFAULT_MAX_LINES: usize = 500;

/// A bound as `capture-pane -S`/`-E` takes it: the line number, or `-` for the edge.
fn bound_arg(bound: LineBound) -> String {
    match bound {
        LineBound::Line(n) => n.to_string(),
        LineBound::Edge => "-".to_owned(),
    }
}

/// `capture-pane -p` for `pane` with `range`.
pub(crate) fn capture_command(
    range: &CaptureRange,
    pane: PaneId,
) -> Result<TmuxCommand, QuoteError> {
    let mut command = TmuxCommand::new("capture-pane").flag("-p");
    if range.join_wrapped {
        command = command.flag("-J");
    }
    if range.escape_sequences {
        command = command.flag("-e");
    }
    if let Some(start) = range.start {
        command = command.opt("-S", bound_arg(start));
    }
    if let Some(end) = range.end {
        command = command.opt("-E", bound_arg(end));
    }
    command.target(pane).build()
}

/// Shapes `capture-pane` output: drops trailing blank lines (and, with `trim_line_ends`, the
/// spaces `-J` keeps at line ends), keeps the last `max_lines` (at least one).
pub fn shape_capture(raw: &[Vec<u8>], max_lines: usize, trim_line_ends: bool) -> CapturedText {
    let mut lines: Vec<String> = raw
        .iter()
        .map(|line| {
            let text = String::from_utf8_lossy(line);
            if trim_line_ends {
                text.trim_end_matches(' ').to_owned()
            } else {
                text.into_owned()
            }
        })
        .collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    CapturedText::tail(&lines, max_lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(lines: &[&str]) -> Vec<Vec<u8>> {
        lines.iter().map(|l| l.as_bytes().to_vec()).collect()
    }

    #[test]
    fn builds_capture_commands() {
        let line = |range: CaptureRange| capture_command(&range, PaneId(5)).unwrap().text();
        assert_eq!(line(CaptureRange::visible()), "capture-pane -p -t '%5'");
        let joined = CaptureRange {
            join_wrapped: true,
            ..CaptureRange::visible()
        };
        assert_eq!(line(joined), "capture-pane -p -J -t '%5'");
        let all = CaptureRange {
            start: Some(LineBound::Edge),
            end: Some(LineBound::Line(-3)),
            join_wrapped: true,
            escape_sequences: true,
        };
        assert_eq!(line(all), "capture-pane -p -J -e -S '-' -E '-3' -t '%5'");
        let screen_to_bottom = CaptureRange {
            start: Some(LineBound::Line(0)),
            end: Some(LineBound::Edge),
            ..CaptureRange::visible()
        };
        assert_eq!(
            line(screen_to_bottom),
            "capture-pane -p -S '0' -E '-' -t '%5'"
        );
    }

    #[test]
    fn drops_trailing_blank_lines_and_keeps_the_tail() {
        let shaped = shape_capture(&raw(&["a", "b", "c", "", "  "]), 2, false);
        assert_eq!(shaped.text, "[... 1 lines truncated ...]\nb\nc");
        assert_eq!((shaped.lines, shaped.total_lines), (2, 3));
        assert!(shaped.truncated());
        let whole = shape_capture(&raw(&["x  ", "", "y"]), 500, true);
        assert_eq!(whole.text, "x\n\ny");
        assert!(!whole.truncated());
        let empty = shape_capture(&raw(&["", ""]), 500, false);
        assert_eq!((empty.text.as_str(), empty.lines), ("", 0));
    }

    #[test]
    fn keeps_at_least_one_line_and_replaces_bad_bytes() {
        let shaped = shape_capture(&[b"a".to_vec(), b"\xffz".to_vec()], 0, false);
        assert_eq!(shaped.text, "[... 1 lines truncated ...]\n\u{fffd}z");
    }
}
