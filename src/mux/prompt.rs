//! Delivering a prompt to an interactive program so that it is submitted exactly once: when
//! the program is ready for input, and whether an Enter was taken as a submission.
//!
//! The decisions here are pure; the caller gathers the evidence (the foreground process from
//! `/proc`, how long the pane has been quiet, the output after a key, the visible screen).
//!
//! Readiness, strongest evidence first: the program is blocked reading its terminal, or it is a
//! shell with no job running (both from [`Foreground::waiting_for_input`]); a program plainly
//! doing something else (running, sleeping, waiting for a child) is not ready, whatever else is
//! said. Otherwise (a full-screen program or agent CLI polling many inputs, or no `/proc` to
//! read): what the agent's own hook last reported ([`agent_says`]), else the pane quiet for a
//! while, which a busy program with a spinner or streamed output never is.
//!
//! Submission: a program that reads whole lines (a shell, a REPL, a line read) echoes the
//! newline when it takes the line. A full-screen program shows no such sign, so either it
//! stays busy (output keeps coming) or its input area no longer ends with the prompt's text;
//! an Enter taken as a newline inside the input (a TUI that saw it as part of the paste) leaves
//! the text right above the cursor, which is what [`still_in_input`] looks for.

use std::time::Duration;

use muxgate_mux::foreground::{Blocked, Foreground};
use tokio::time::Instant;

use super::agent_report::{AgentReport, AgentState};

/// Why a program was judged ready for input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ready {
    /// Blocked in `read` on its terminal.
    ReadingTerminal,
    /// A shell with no job running, waiting for its next command line.
    ShellPrompt,
    /// Its hook reported it waiting for input or idle, and it printed nothing since.
    AgentReport,
    /// Quiet for the time asked, and not plainly busy.
    Quiet,
}

/// Why a program was judged not ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotReady {
    /// `/proc` shows it running, sleeping or waiting for a child.
    Busy,
    /// Its hook reported it working.
    AgentWorking,
    /// It printed something less than the quiet time ago.
    Printing,
}

impl NotReady {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            NotReady::Busy => "busy",
            NotReady::AgentWorking => "agent_working",
            NotReady::Printing => "printing",
        }
    }
}

impl Ready {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Ready::ReadingTerminal => "read_terminal",
            Ready::ShellPrompt => "shell_prompt",
            Ready::AgentReport => "agent_report",
            Ready::Quiet => "quiet",
        }
    }

    /// Whether the program reads whole lines, so that a newline echoed after Enter shows the
    /// line was taken.
    pub(crate) fn reads_lines(self) -> bool {
        matches!(self, Ready::ReadingTerminal | Ready::ShellPrompt)
    }
}

/// Whether the pane's program is ready for input: `foreground` is what `/proc` says (`None`
/// where it cannot be read), `agent` what its hook says ([`agent_says`]), `quiet_for` how long
/// the pane has printed nothing.
pub(crate) fn readiness(
    foreground: Option<&Foreground>,
    agent: Option<AgentState>,
    quiet_for: Duration,
    quiet_needed: Duration,
) -> Result<Ready, NotReady> {
    let waiting = foreground.and_then(Foreground::waiting_for_input);
    match (waiting, foreground, agent) {
        (Some(true), Some(fg), _) if fg.blocked == Blocked::ReadingTerminal => {
            Ok(Ready::ReadingTerminal)
        }
        (Some(true), _, _) => Ok(Ready::ShellPrompt),
        (Some(false), _, _) => Err(NotReady::Busy),
        (None, _, Some(state)) if state.takes_input() => Ok(Ready::AgentReport),
        (None, _, Some(_)) => Err(NotReady::AgentWorking),
        (None, _, None) if quiet_for >= quiet_needed => Ok(Ready::Quiet),
        (None, _, None) => Err(NotReady::Printing),
    }
}

/// How long a pane may stay quiet, after its agent reported "working", before the report is no
/// longer believed (an agent interrupted by its user may never report again).
pub(crate) const WORKING_EXPIRES: std::time::Duration = std::time::Duration::from_secs(60);

/// What an agent's latest hook report says at `now`: waiting or idle only while the pane has
/// printed nothing since (`idle_since`: its last output); working until it reports otherwise,
/// or until the pane has been quiet for [`WORKING_EXPIRES`] since the report and its output.
pub(crate) fn agent_says(
    report: Option<&AgentReport>,
    idle_since: Instant,
    now: Instant,
) -> Option<AgentState> {
    let report = report?;
    let believed = if report.state.takes_input() {
        report.at >= idle_since
    } else {
        now.duration_since(report.at.max(idle_since)) < WORKING_EXPIRES
    };
    believed.then_some(report.state)
}

/// The text a prompt ends with, as a screen would show it: the last visible characters of its
/// last non-blank line, without whitespace or box-drawing characters (a bordered input box
/// wraps long lines between borders). `None` for a prompt with nothing visible.
pub(crate) fn visible_tail(text: &str) -> Option<String> {
    const TAIL_CHARS: usize = 8;
    let kept: Vec<char> = text
        .lines()
        .map(squeeze)
        .rfind(|line| !line.is_empty())?
        .chars()
        .collect();
    let from = kept.len().saturating_sub(TAIL_CHARS);
    Some(kept[from..].iter().collect())
}

/// Whether the prompt whose [`visible_tail`] is `tail` still ends right at the cursor (`rows`
/// is the visible screen, `cursor_y` the cursor's row): on the cursor's row or the row above;
/// when the cursor is on an empty row of an input box (an Enter taken as a newline there), on
/// the two rows above it. Rows are joined, so a tail wrapped over two rows is found too.
pub(crate) fn still_in_input(rows: &[String], cursor_y: usize, tail: &str) -> bool {
    let squeezed = |y: usize| rows.get(y).map(|row| squeeze(row)).unwrap_or_default();
    let new_box_row = squeezed(cursor_y).is_empty() && in_input_box(rows, cursor_y);
    let from = if new_box_row { 2 } else { 1 };
    let near: String = (cursor_y.saturating_sub(from)..=cursor_y)
        .map(squeezed)
        .collect();
    near.contains(tail)
}

/// Whether the cursor's row is inside a bordered input box (it begins with a box-drawing
/// character or `|`): there an Enter on an empty input does nothing, so a second one is safe.
pub(crate) fn in_input_box(rows: &[String], cursor_y: usize) -> bool {
    rows.get(cursor_y)
        .and_then(|row| row.trim_start().chars().next())
        .is_some_and(is_border)
}

fn is_border(c: char) -> bool {
    ('\u{2500}'..='\u{259f}').contains(&c) || c == '|'
}

/// `text` without whitespace, box-drawing and block characters, and `|`.
fn squeeze(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && !is_border(*c))
        .collect()
}

/// Whether output printed after an Enter shows a line-reading program took the line: the
/// newline it echoes (a bare carriage return is also what redraws print, so it is not enough).
pub(crate) fn line_taken(output: &[u8]) -> bool {
    output.contains(&b'\n')
}

/// A prompt as it is pasted: trailing newlines dropped (the Enter that submits it is pressed
/// separately); `None` when nothing visible is left.
pub(crate) fn prompt_text(text: &str) -> Option<&str> {
    let text = text.trim_end_matches(['\n', '\r']);
    visible_tail(text).map(|_| text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fg(blocked: Blocked, is_pane_program: bool, program: &str) -> Foreground {
        Foreground {
            group: 42,
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
        let working = Some(AgentState::Working);
        assert_eq!(
            readiness(Some(&python), working, zero, QUIET),
            Ok(Ready::ReadingTerminal)
        );
        let shell = fg(Blocked::Polling, true, "bash");
        assert_eq!(
            readiness(Some(&shell), None, zero, QUIET),
            Ok(Ready::ShellPrompt)
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
            let agent = Some(AgentState::WaitingForInput);
            assert_eq!(
                readiness(Some(&fg(blocked, false, "bash")), agent, long, QUIET),
                Err(NotReady::Busy)
            );
        }
    }

    #[test]
    fn a_polling_program_or_an_unreadable_one_is_ready_once_quiet() {
        let tui = fg(Blocked::Polling, false, "bash");
        let short = Duration::from_millis(499);
        assert_eq!(
            readiness(Some(&tui), None, short, QUIET),
            Err(NotReady::Printing)
        );
        assert_eq!(readiness(Some(&tui), None, QUIET, QUIET), Ok(Ready::Quiet));
        assert_eq!(
            readiness(None, None, Duration::from_millis(10), QUIET),
            Err(NotReady::Printing)
        );
        assert_eq!(readiness(None, None, QUIET, QUIET), Ok(Ready::Quiet));
    }

    #[test]
    fn an_agents_own_report_decides_where_proc_cannot() {
        let tui = fg(Blocked::Polling, false, "bash");
        let zero = Duration::ZERO;
        let long = Duration::from_secs(60);
        for state in [AgentState::WaitingForInput, AgentState::Idle] {
            assert_eq!(
                readiness(Some(&tui), Some(state), zero, QUIET),
                Ok(Ready::AgentReport)
            );
        }
        assert_eq!(
            readiness(None, Some(AgentState::Working), long, QUIET),
            Err(NotReady::AgentWorking)
        );
    }

    #[test]
    fn a_waiting_report_counts_only_while_the_pane_stays_quiet() {
        let report = |state, at| AgentReport {
            state,
            agent: None,
            at,
        };
        let then = Instant::now();
        let later = then + Duration::from_secs(1);
        let waiting = report(AgentState::WaitingForInput, then);
        let says =
            |report: &AgentReport, idle_since, now| agent_says(Some(report), idle_since, now);
        assert_eq!(
            says(&waiting, then, later),
            Some(AgentState::WaitingForInput)
        );
        assert_eq!(says(&waiting, later, later), None, "it printed since");
        let working = report(AgentState::Working, then);
        assert_eq!(says(&working, later, later), Some(AgentState::Working));
        // Quiet for a minute after saying "working": interrupted, not believed any more.
        assert_eq!(says(&working, later, later + WORKING_EXPIRES), None);
        assert_eq!(agent_says(None, then, then), None);
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
        assert_eq!(
            visible_tail("a\n|"),
            Some("a".to_owned()),
            "a line of borders only"
        );
        assert_eq!(visible_tail("│ ─ |"), None);
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
        assert!(!still_in_input(&rows, 5, &tail), "three rows below");
        assert!(in_input_box(&rows, 4) && in_input_box(&rows, 1));
        assert!(!in_input_box(&rows, 0) && !in_input_box(&rows, 9));
    }

    #[test]
    fn a_repl_that_took_the_line_is_not_input_unless_it_printed_nothing() {
        let tail = visible_tail("print(6*7)").expect("tail");
        let answered = screen(&[">>> print(6*7)", "42", ">>> "]);
        assert!(!still_in_input(&answered, 2, &tail));
        // `input()` waiting on an empty row below the line looks like a newline in a box: it
        // is not a box, so no second Enter is pressed there.
        let tail = visible_tail("name = input()").expect("tail");
        let silent = screen(&[">>> name = input()", ""]);
        assert!(still_in_input(&silent, 1, &tail));
        assert!(!in_input_box(&silent, 1));
    }

    #[test]
    fn a_cleared_box_with_the_prompt_in_the_transcript_above_is_not_input() {
        let tail = visible_tail("please fix the build").expect("tail");
        let rows = screen(&[
            "> please fix the build",
            "",
            "⠋ thinking",
            "╭──────────────╮",
            "│               │",
            "╰──────────────╯",
        ]);
        assert!(!still_in_input(&rows, 4, &tail));
        assert!(still_in_input(&rows, 0, &tail), "row 0 has no row above");
        assert!(!still_in_input(&[], 0, &tail), "an empty screen");
    }

    #[test]
    fn a_newline_after_enter_means_the_line_was_taken() {
        assert!(line_taken(b"\r\n$ "));
        assert!(line_taken(b"x\n"));
        assert!(!line_taken(b""));
        assert!(!line_taken(b"\x1b[K"));
        assert!(
            !line_taken(b"\r\x1b[2Kredrawn"),
            "a redraw's carriage return"
        );
    }

    #[test]
    fn trailing_newlines_are_dropped_and_blank_prompts_refused() {
        assert_eq!(prompt_text("run it\n\n"), Some("run it"));
        assert_eq!(prompt_text("a\nb\r\n"), Some("a\nb"));
        assert_eq!(prompt_text("\n \n"), None);
    }
}
