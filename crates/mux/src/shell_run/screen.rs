//! The run markers for a backend that shows screens, not an output stream: visible text.
//!
//! A backend that hands over rendered screens (Zellij: its pane events and screen dumps carry
//! no exit status, and no escape sequence survives rendering) cannot see the invisible OSC
//! markers of the stream protocol ([`super`]), so the command is wrapped to print markers a
//! watcher recognises on the screen:
//!
//! ```text
//! __MGS_<id>__            before the command (only when typed into an interactive shell)
//! <command output>
//! __MGE_<id>_<status>__   after it, always at the start of a line
//! ```
//!
//! `<id>` is fresh per call, so a marker from an earlier run never matches. The wrapper is written
//! with `printf` formats (`'__MGE_%s_%d__'`), so the shell's echo of the typed line never
//! contains a complete marker and cannot match itself. The end marker is preceded by a newline
//! the wrapper adds; extraction removes exactly that newline, so output that does not end with
//! a newline comes back unchanged.
//!
//! Pure functions only: no process is started here.

use super::{CommandError, check_command, fish_quote, posix_quote};
use crate::shell::Shell;

/// The shell of a pane, from the command line the backend reports for it (`bash`, `/usr/bin/fish -l`…);
/// a POSIX shell when it names none.
pub fn shell_of(running_command: Option<&str>) -> Shell {
    running_command
        .map(program_name)
        .and_then(Shell::detect)
        .unwrap_or(Shell::Sh)
}

/// The program a command line runs, as a name: `/usr/bin/fish -l` → `fish`, a login shell's
/// `-bash` → `bash`.
pub fn program_name(command_line: &str) -> &str {
    let program = command_line.split_whitespace().next().unwrap_or_default();
    program
        .rsplit('/')
        .next()
        .unwrap_or(program)
        .trim_start_matches('-')
}

/// One marked run, identified by a fresh id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkedRun {
    id: String,
}

/// What a finished run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    /// The command's exit status.
    pub exit_status: i32,
    /// The command's output as the terminal shows it (rows joined with `\n`).
    pub output: String,
    /// The start of the output had left the scrollback, so `output` is its tail only.
    pub truncated: bool,
}

impl MarkedRun {
    /// A run with a random 8-hex-digit id.
    pub fn random() -> Self {
        Self::with_id(rand::random::<u32>())
    }

    /// A run with a given id (tests).
    pub fn with_id(id: u32) -> Self {
        Self {
            id: format!("{id:08x}"),
        }
    }

    /// The run's id, as its markers carry it.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn start_marker(&self) -> String {
        format!("__MGS_{}__", self.id)
    }

    /// The text to type into an interactive shell, Enter included.
    pub fn typed_line(&self, command: &str, shell: Shell) -> Result<String, CommandError> {
        check_command(command)?;
        let id = &self.id;
        // Leading space: shells with HISTCONTROL=ignorespace keep it out of the history.
        let line = if shell.is_fish() {
            format!(
                " printf '__MGS_%s__\\n' {id}; eval {}; printf '\\n__MGE_%s_%d__\\n' {id} $status\n",
                fish_quote(command)
            )
        } else {
            format!(
                " printf '__MGS_%s__\\n' {id}; eval {}; printf '\\n__MGE_%s_%d__\\n' {id} \"$?\"\n",
                posix_quote(command)
            )
        };
        Ok(line)
    }

    /// The argv of a command pane that runs `command` with `/bin/sh` and then prints the end
    /// marker. The pane shows only the command's output and the marker. The command runs in a
    /// subshell so that an `exit` in it still reaches the marker.
    ///
    /// Before the command starts, the wrapper asks the terminal for its cursor position and
    /// waits (3 s at most) for the reply. Zellij can apply the first bytes a new pane prints
    /// after later ones (seen about once in 200 runs under load: the first line shown below
    /// the next two); the reply proves the pane took the query, so all the command prints
    /// lands in order. Off a terminal, or without `stty` or `dd`, the command starts at once.
    pub fn pane_argv(&self, command: &str) -> Result<Vec<String>, CommandError> {
        if command.trim().is_empty() {
            return Err(CommandError::Empty);
        }
        Ok(vec![
            "/bin/sh".to_owned(),
            "-c".to_owned(),
            concat!(
                r#"if [ -t 0 ]; then t=$(stty -g); stty -echo -icanon min 0 time 30; "#,
                r#"printf '\033[6n'; dd bs=64 count=1 >/dev/null; stty "$t"; fi 2>/dev/null; "#,
                r#"(eval "$2"); rc=$?; printf '\n__MGE_%s_%d__\n' "$1" "$rc"; exit "$rc""#
            )
            .to_owned(),
            "muxgate-run".to_owned(),
            self.id.clone(),
            command.to_owned(),
        ])
    }

    /// Whether `line` is this run's end marker; returns the exit status.
    fn end_status(&self, line: &str) -> Option<i32> {
        let rest = line.trim_end().strip_prefix("__MGE_")?;
        let rest = rest.strip_prefix(self.id.as_str())?.strip_prefix('_')?;
        let digits = rest.strip_suffix("__")?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    }

    /// The exit status, if the end marker is among `lines`.
    pub fn find_end(&self, lines: &[String]) -> Option<i32> {
        lines.iter().rev().find_map(|l| self.end_status(l))
    }

    /// Output and status from a screen dump (`dump-screen --full`).
    ///
    /// `expect_start`: the run printed a start marker (typed into a shell); the output is what
    /// lies between it and the end marker. Otherwise (command pane) it is everything above the
    /// end marker. `None` if the end marker is missing.
    pub fn extract(&self, lines: &[String], expect_start: bool) -> Option<RunOutput> {
        let (end, exit_status) = lines
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, l)| self.end_status(l).map(|s| (i, s)))?;
        let start_marker = self.start_marker();
        let (first, truncated) = if expect_start {
            match lines[..end]
                .iter()
                .rposition(|l| l.trim_end() == start_marker)
            {
                Some(s) => (s + 1, false),
                None => (0, true),
            }
        } else {
            (0, false)
        };
        let rows = &lines[first..end];
        Some(RunOutput {
            exit_status,
            output: rows.join("\n"),
            truncated,
        })
    }

    /// What an unfinished run printed so far: the rows below its start marker, when the start
    /// marker is among `lines` (the shell began the command); `None` otherwise.
    pub fn output_so_far(&self, lines: &[String]) -> Option<String> {
        let start_marker = self.start_marker();
        let start = lines.iter().rposition(|l| l.trim_end() == start_marker)?;
        Some(lines[start + 1..].join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn typed_line_never_contains_its_own_markers() {
        let run = MarkedRun::with_id(0xabc);
        let line = run.typed_line("echo hi", Shell::Sh).unwrap();
        assert_eq!(
            line,
            " printf '__MGS_%s__\\n' 00000abc; eval 'echo hi'; printf '\\n__MGE_%s_%d__\\n' 00000abc \"$?\"\n"
        );
        assert!(!line.contains("__MGS_00000abc__"));
        assert_eq!(run.find_end(&lines(&line)), None);
        // Even wrapped at any width, no piece of the echo is a marker.
        let echo = line.trim_end();
        for width in 1..echo.len() {
            let rows: Vec<String> = echo
                .as_bytes()
                .chunks(width)
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect();
            assert_eq!(run.find_end(&rows), None, "width {width}");
            assert!(run.extract(&rows, true).is_none());
        }
    }

    #[test]
    fn quoting_survives_hostile_commands() {
        let run = MarkedRun::with_id(1);
        let line = run.typed_line("echo 'a'\"b\"$x\\", Shell::Sh).unwrap();
        assert!(line.contains(r#"eval 'echo '\''a'\''"b"$x\'"#), "{line}");
        let fish = run.typed_line(r"echo 'a'\", Shell::Fish).unwrap();
        assert!(fish.contains(r"eval 'echo \'a\'\\'"), "{fish}");
        assert!(fish.contains("$status"));
    }

    #[test]
    fn control_characters_and_empty_commands_are_refused() {
        let run = MarkedRun::with_id(1);
        assert_eq!(run.typed_line("  ", Shell::Sh), Err(CommandError::Empty));
        assert_eq!(
            run.typed_line("a\tb", Shell::Sh),
            Err(CommandError::ControlCharacter { offset: 1, code: 9 })
        );
        assert_eq!(
            run.typed_line("a\u{3}", Shell::Sh),
            Err(CommandError::ControlCharacter { offset: 1, code: 3 })
        );
        assert!(
            run.typed_line("for i in 1 2\ndo echo $i; done", Shell::Sh)
                .is_ok()
        );
        assert_eq!(run.pane_argv(""), Err(CommandError::Empty));
    }

    /// Off a terminal the wrapper skips its wait for the terminal's reply: it neither hangs
    /// on a silent stdin nor prints anything but the command's output and the end marker.
    #[test]
    fn the_pane_wrapper_runs_the_command_once_and_marks_its_status() {
        let run = MarkedRun::with_id(0x2a);
        let argv = run.pane_argv("echo out; echo err >&2; exit 3").unwrap();
        let out = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(std::process::Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        let shown = String::from_utf8(out.stdout).unwrap();
        assert_eq!(shown, "out\n\n__MGE_0000002a_3__\n");
        let extracted = run.extract(&lines(&shown), false).unwrap();
        assert_eq!(
            (extracted.exit_status, extracted.output.as_str()),
            (3, "out\n")
        );
    }

    #[test]
    fn extraction_between_markers() {
        let run = MarkedRun::with_id(0x2a);
        let screen = lines(
            "$ echo old\n__MGS_0000002a__\nstale\n\n__MGE_0000002a_1__\n\
             $  printf '__MGS_%s__\\n' 0000002a; eval 'ls'; printf ...\n\
             __MGS_0000002a__\na\nb\n\n__MGE_0000002a_0__\n$ ",
        );
        assert_eq!(run.find_end(&screen), Some(0));
        let out = run.extract(&screen, true).unwrap();
        assert_eq!(out.exit_status, 0);
        assert_eq!(out.output, "a\nb\n");
        assert!(!out.truncated);
    }

    #[test]
    fn output_without_trailing_newline_and_empty_output() {
        let run = MarkedRun::with_id(7);
        let no_nl = lines("__MGS_00000007__\npartial\n__MGE_00000007_3__");
        assert_eq!(run.extract(&no_nl, true).unwrap().output, "partial");
        let empty = lines("__MGS_00000007__\n\n__MGE_00000007_0__");
        assert_eq!(run.extract(&empty, true).unwrap().output, "");
    }

    #[test]
    fn lost_start_is_reported_as_truncated() {
        let run = MarkedRun::with_id(7);
        let tail = lines("line 9998\nline 9999\n\n__MGE_00000007_0__");
        let out = run.extract(&tail, true).unwrap();
        assert!(out.truncated);
        assert_eq!(out.output, "line 9998\nline 9999\n");
        // A command pane never prints a start marker; nothing is truncated.
        let pane = run.extract(&tail, false).unwrap();
        assert!(!pane.truncated);
    }

    #[test]
    fn other_ids_and_near_misses_do_not_match() {
        let run = MarkedRun::with_id(7);
        for l in [
            "__MGE_00000008_0__",
            "__MGE_00000007___",
            "__MGE_00000007_x__",
            "__MGE_00000007_0",
            "x__MGE_00000007_0__",
        ] {
            assert_eq!(run.find_end(&lines(l)), None, "{l}");
        }
        assert_eq!(run.find_end(&lines("__MGE_00000007_255__   ")), Some(255));
    }

    #[test]
    fn shell_detection() {
        assert_eq!(shell_of(Some("/usr/bin/fish -l")), Shell::Fish);
        assert_eq!(shell_of(Some("-fish")), Shell::Fish);
        assert_eq!(shell_of(Some("bash")), Shell::Bash);
        assert_eq!(shell_of(Some("python3 -m http.server")), Shell::Sh);
        assert_eq!(shell_of(None), Shell::Sh);
        assert_eq!(program_name("/usr/bin/python3 -m http.server"), "python3");
        assert_eq!(program_name(""), "");
    }

    #[test]
    fn an_unfinished_run_shows_what_it_printed_since_it_began() {
        let run = MarkedRun::with_id(9);
        let typed = run.typed_line("sleep 30", Shell::Sh).unwrap();
        // Typed but not begun: only the echo of the typed line, which holds no marker.
        assert_eq!(run.output_so_far(&lines(&format!("$ {typed}"))), None);
        let begun = lines("$ printf …\n__MGS_00000009__\nstep 1\nstep 2");
        assert_eq!(run.output_so_far(&begun).as_deref(), Some("step 1\nstep 2"));
        let silent = lines("__MGS_00000009__");
        assert_eq!(run.output_so_far(&silent).as_deref(), Some(""));
        assert_eq!(run.output_so_far(&lines("__MGS_00000008__\nother")), None);
    }
}
