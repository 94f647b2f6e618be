//! Delivering a prompt to an interactive program so that it is submitted exactly once: when
//! the program is ready for input, and whether an Enter was taken as a submission.
//!
//! The decisions here are pure; the caller gathers the evidence (the foreground process from
//! `/proc`, how long the pane has been quiet, the output after a key, the visible screen).
//!
//! Readiness, strongest evidence first: the program is blocked reading its terminal, or it is a
//! shell with no job running (both from [`Foreground::waiting_for_input`]); otherwise (a
//! full-screen program or agent CLI polling many inputs, or no `/proc` to read) the pane has
//! been quiet for a while, which a busy program with a spinner or streamed output never is.
//! A program plainly doing something else (running, sleeping, waiting for a child) is not
//! ready, however quiet.
//!
//! Submission: a program that reads whole lines (a shell, a REPL, a line read) echoes the
//! newline when it takes the line. A full-screen program shows no such sign, so either it
//! stays busy (output keeps coming) or its input area no longer ends with the prompt's text;
//! an Enter taken as a newline inside the input (a TUI that saw it as part of the paste) leaves
//! the text right above the cursor, which is what [`still_in_input`] looks for.

use std::time::Duration;

use super::foreground::{Blocked, Foreground};

/// Why a program was judged ready for input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ready {
    /// Blocked in `read` on its terminal.
    ReadingTerminal,
    /// A shell with no job running, waiting for its next command line.
    ShellPrompt,
    /// Quiet for the time asked, and not plainly busy.
    Quiet,
}

impl Ready {
    pub fn as_str(self) -> &'static str {
        match self {
            Ready::ReadingTerminal => "read_terminal",
            Ready::ShellPrompt => "shell_prompt",
            Ready::Quiet => "quiet",
        }
    }

    /// Whether the program reads whole lines, so that a newline echoed after Enter shows the
    /// line was taken.
    pub fn reads_lines(self) -> bool {
        matches!(self, Ready::ReadingTerminal | Ready::ShellPrompt)
    }
}

/// Whether the pane's program is ready for input: `foreground` is what `/proc` says (`None`
/// where it cannot be read), `quiet_for` how long the pane has printed nothing.
pub fn readiness(
    foreground: Option<&Foreground>,
    quiet_for: Duration,
    quiet_needed: Duration,
) -> Option<Ready> {
    let waiting = foreground.and_then(Foreground::waiting_for_input);
    match (waiting, foreground) {
        (Some(true), Some(fg)) if fg.blocked == Blocked::ReadingTerminal => {
            Some(Ready::ReadingTerminal)
        }
        (Some(true), _) => Some(Ready::ShellPrompt),
        (Some(false), _) => None,
        (None, _) => (quiet_for >= quiet_needed).then_some(Ready::Quiet),
    }
}

/// The text a prompt ends with, as a screen would show it: the last visible characters of its
/// last non-blank line, without whitespace or box-drawing characters (a bordered input box
/// wraps long lines between borders). `None` for a prompt with nothing visible.
pub fn visible_tail(text: &str) -> Option<String> {
    const TAIL_CHARS: usize = 8;
    let line = text.lines().rev().find(|line| !line.trim().is_empty())?;
    let kept: Vec<char> = squeeze(line).chars().collect();
    let from = kept.len().saturating_sub(TAIL_CHARS);
    Some(kept[from..].iter().collect())
}

/// Whether the prompt whose [`visible_tail`] is `tail` still ends right at the cursor: on the
/// cursor's row or the row above it (`rows` is the visible screen, `cursor_y` the cursor's
/// row). Rows are joined, so a tail wrapped over the two rows is found too.
pub fn still_in_input(rows: &[String], cursor_y: usize, tail: &str) -> bool {
    let at = |y: usize| rows.get(y).map_or(String::new(), |row| squeeze(row));
    let near = match cursor_y.checked_sub(1) {
        Some(above) => at(above) + &at(cursor_y),
        None => at(cursor_y),
    };
    near.contains(tail)
}

/// `text` without whitespace, box-drawing characters and `|`.
fn squeeze(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && !('\u{2500}'..='\u{257f}').contains(c) && *c != '|')
        .collect()
}

/// Whether output printed after an Enter shows a line-reading program took the line: the
/// newline it echoes.
pub fn line_taken(output: &[u8]) -> bool {
    output.iter().any(|&b| b == b'\n' || b == b'\r')
}

/// A prompt as it is pasted: trailing newlines dropped (the Enter that submits it is pressed
/// separately); `None` when nothing visible is left.
pub fn prompt_text(text: &str) -> Option<&str> {
    let text = text.trim_end_matches(['\n', '\r']);
    visible_tail(text).map(|_| text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fg(blocked: Blocked, is_pane_program: bool, program: &str) -> Foreground {
        Foreground {
            pid: 42,
            is_pane_program,
            pane_program: program.to_owned(),
            command_line: program.to_owned(),
            blocked,
        }
    }

    const QUIET: Duration = Duration::from_millis(500);

    #[test]
    fn a_program_reading_its_terminal_or_an_idle_shell_is_ready_at_once() {
        let zero = Duration::ZERO;
        let python = fg(Blocked::ReadingTerminal, false, "bash");
        assert_eq!(
            readiness(Some(&python), zero, QUIET),
            Some(Ready::ReadingTerminal)
        );
        let shell = fg(Blocked::Polling, true, "bash");
        assert_eq!(
            readiness(Some(&shell), zero, QUIET),
            Some(Ready::ShellPrompt)
        );
    }

    #[test]
    fn a_busy_program_is_not_ready_however_quiet() {
        let long = Duration::from_secs(60);
        for blocked in [
            Blocked::Running,
            Blocked::Sleeping,
            Blocked::WaitingForChild,
            Blocked::Reading,
        ] {
            assert_eq!(
                readiness(Some(&fg(blocked, false, "bash")), long, QUIET),
                None
            );
        }
    }

    #[test]
    fn a_polling_program_or_an_unreadable_one_is_ready_once_quiet() {
        let tui = fg(Blocked::Polling, false, "bash");
        assert_eq!(
            readiness(Some(&tui), Duration::from_millis(499), QUIET),
            None
        );
        assert_eq!(readiness(Some(&tui), QUIET, QUIET), Some(Ready::Quiet));
        assert_eq!(readiness(None, Duration::from_millis(10), QUIET), None);
        assert_eq!(readiness(None, QUIET, QUIET), Some(Ready::Quiet));
    }

    #[test]
    fn the_tail_is_the_end_of_the_last_visible_line_squeezed() {
        assert_eq!(
            visible_tail("first line\nfix the build please\n\n  "),
            Some("ldplease".to_owned())
        );
        assert_eq!(visible_tail("hi"), Some("hi".to_owned()));
        assert_eq!(visible_tail(" \n\t\n"), None);
        assert_eq!(visible_tail(""), None);
    }

    fn screen(rows: &[&str]) -> Vec<String> {
        rows.iter().map(|row| (*row).to_owned()).collect()
    }

    #[test]
    fn text_left_in_a_bordered_box_is_found_even_when_wrapped() {
        let tail = visible_tail("please fix the build").expect("tail");
        let rows = screen(&[
            "> earlier prompt",
            "╭──────────────╮",
            "│ please fix th │",
            "│ e build       │",
            "│               │",
            "╰──────────────╯",
        ]);
        assert!(still_in_input(&rows, 3, &tail), "cursor after the text");
        assert!(still_in_input(&rows, 4, &tail), "an Enter taken as newline");
        assert!(!still_in_input(&rows, 1, &tail));
    }

    #[test]
    fn a_cleared_box_with_the_prompt_in_the_transcript_above_is_not_input() {
        let tail = visible_tail("please fix the build").expect("tail");
        let rows = screen(&[
            "> please fix the build",
            "⠋ thinking",
            "╭──────────────╮",
            "│               │",
            "╰──────────────╯",
        ]);
        assert!(!still_in_input(&rows, 3, &tail));
        assert!(still_in_input(&rows, 0, &tail), "row 0 has no row above");
        assert!(!still_in_input(&[], 0, &tail), "an empty screen");
    }

    #[test]
    fn a_newline_after_enter_means_the_line_was_taken() {
        assert!(line_taken(b"\r\n$ "));
        assert!(line_taken(b"x\n"));
        assert!(!line_taken(b""));
        assert!(!line_taken(b"\x1b[K"));
    }

    #[test]
    fn trailing_newlines_are_dropped_and_blank_prompts_refused() {
        assert_eq!(prompt_text("run it\n\n"), Some("run it"));
        assert_eq!(prompt_text("a\nb\r\n"), Some("a\nb"));
        assert_eq!(prompt_text("\n \n"), None);
    }
}
