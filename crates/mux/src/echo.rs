//! The echo of typed input, taken out of a pane's lines before a wait matches them.
//!
//! A shell (or any line-editing program) shows what is typed into it: after `send_keys "sleep 2;
//! echo DONE"`, the pane's next line reads `$ sleep 2; echo DONE`, and a wait for `DONE` that
//! follows the input would match the command instead of its output. An [`EchoFilter`] knows the
//! lines that were typed, in order, and removes the first appearance of each from the lines that
//! follow: within a line (after a prompt), and across lines when the terminal wrapped a long one.
//! Everything else on those lines still counts, so output on the same line as the echo matches.

use std::collections::VecDeque;

/// Shortest end of a line taken for the start of a wrapped echo: a shorter one could be output
/// that happens to look like the command's first characters.
const MIN_WRAPPED_PREFIX: usize = 8;

/// Removes the echo of typed lines from the lines that follow them.
#[derive(Debug, Clone, Default)]
pub struct EchoFilter {
    /// Typed lines whose echo has not been seen yet, oldest first.
    pending: VecDeque<String>,
    /// Bytes of `pending[0]` already seen at the end of an earlier (wrapped) line.
    seen: usize,
}

impl EchoFilter {
    /// A filter for `typed` text, in the order it was typed; each line of it is one echo.
    pub fn new<S: AsRef<str>>(typed: &[S]) -> Self {
        let pending = typed
            .iter()
            .flat_map(|text| text.as_ref().lines())
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect();
        Self { pending, seen: 0 }
    }

    /// Whether every typed line's echo was seen (or nothing was typed).
    pub fn is_done(&self) -> bool {
        self.pending.is_empty()
    }

    /// `line` without the echo in it. A `complete` line moves the filter on; the line still
    /// being written (`complete: false`) is filtered without moving it, since it will come
    /// again once complete.
    pub fn strip(&mut self, line: &str, complete: bool) -> String {
        if complete {
            self.strip_in_place(line)
        } else {
            self.clone().strip_in_place(line)
        }
    }

    fn strip_in_place(&mut self, line: &str) -> String {
        let mut kept = String::new();
        let mut rest = line;
        while let Some(front) = self.pending.front() {
            let unseen = &front[self.seen..];
            if self.seen > 0 {
                // The echo of a wrapped line goes on at the start of this one.
                if let Some(after) = rest.strip_prefix(unseen) {
                    rest = after;
                    self.next();
                    continue;
                }
                if unseen.starts_with(rest) {
                    self.seen += rest.len();
                    return kept;
                }
                self.seen = 0;
                continue;
            }
            if let Some(at) = rest.find(unseen) {
                kept.push_str(&rest[..at]);
                rest = &rest[at + unseen.len()..];
                self.next();
                continue;
            }
            if let Some(len) = wrapped_start(rest, unseen) {
                kept.push_str(&rest[..rest.len() - len]);
                self.seen = len;
                return kept;
            }
            break;
        }
        kept.push_str(rest);
        kept
    }

    fn next(&mut self) {
        self.pending.pop_front();
        self.seen = 0;
    }
}

/// The length of the longest end of `line` that starts `typed` (at least
/// [`MIN_WRAPPED_PREFIX`] bytes, or all of `typed` minus one), if any.
fn wrapped_start(line: &str, typed: &str) -> Option<usize> {
    let shortest = MIN_WRAPPED_PREFIX.min(typed.len().saturating_sub(1)).max(1);
    (shortest..typed.len().min(line.len() + 1))
        .rev()
        .filter(|&len| line.is_char_boundary(line.len() - len) && typed.is_char_boundary(len))
        .find(|&len| line.ends_with(&typed[..len]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_echo_after_a_prompt_goes_and_the_output_stays() {
        let mut filter = EchoFilter::new(&["sleep 2; echo DONE"]);
        assert_eq!(filter.strip("$ sleep 2; echo DONE", true), "$ ");
        assert!(filter.is_done());
        assert_eq!(filter.strip("DONE", true), "DONE");
    }

    #[test]
    fn a_line_still_being_written_is_filtered_without_moving_on() {
        let mut filter = EchoFilter::new(&["echo DONE"]);
        assert_eq!(filter.strip("$ echo DONE", false), "$ ");
        assert!(!filter.is_done());
        assert_eq!(filter.strip("$ echo DONE", true), "$ ");
        assert!(filter.is_done());
    }

    #[test]
    fn a_wrapped_echo_is_followed_across_lines() {
        let typed = "printf 'a long command that the terminal wraps'; echo DONE";
        let mut filter = EchoFilter::new(&[typed]);
        assert_eq!(filter.strip("$ printf 'a long command th", true), "$ ");
        assert_eq!(filter.strip("at the terminal wraps'; echo ", true), "");
        assert_eq!(filter.strip("DONE", true), "");
        assert!(filter.is_done());
        assert_eq!(filter.strip("DONE", true), "DONE");
    }

    #[test]
    fn several_typed_lines_each_lose_one_echo_in_order() {
        let mut filter = EchoFilter::new(&["cd /tmp", "echo DONE\n"]);
        assert_eq!(filter.strip("$ cd /tmp", true), "$ ");
        assert_eq!(filter.strip("$ echo DONE", true), "$ ");
        assert_eq!(filter.strip("DONE", true), "DONE");
    }

    #[test]
    fn output_that_never_echoes_is_left_alone() {
        let mut filter = EchoFilter::new(&["secret-typed-without-echo"]);
        assert_eq!(filter.strip("Password:", true), "Password:");
        assert_eq!(filter.strip("DONE", true), "DONE");
        let mut nothing = EchoFilter::new::<&str>(&[]);
        assert!(nothing.is_done());
        assert_eq!(nothing.strip("$ echo DONE", true), "$ echo DONE");
    }

    #[test]
    fn a_short_end_of_line_is_not_taken_for_a_wrapped_echo() {
        let mut filter = EchoFilter::new(&["make test && echo DONE"]);
        assert_eq!(filter.strip("building make", true), "building make");
        assert!(!filter.is_done());
    }
}
