//! Running a command typed into an interactive shell, and reading its output and exit status
//! back from the pane's output stream.
//!
//! The command is typed as one wrapper line (`eval` of the quoted command, so quotes, newlines,
//! here-documents and comments in it are the shell's business, not ours) between two invisible
//! markers the shell prints itself, OSC 133 sequences carrying a per-run id:
//!
//! ```text
//!  (trap 'exit 130' INT; printf '\033]133;C;muxgate=%s\007' ID; eval 'CMD'); printf '\033]133;D;%s;muxgate=%s\007' "$?" ID
//! ```
//!
//! - The shell's echo of the typed line contains `\033` as four printable characters and
//!   `muxgate=%s`, never an ESC byte followed by `muxgate=<id>`, so the markers cannot match the
//!   echo; the id is fresh per run, so a marker of another run (or another pane) never matches.
//! - Everything between the start marker (printed when the command starts) and the end marker
//!   (printed after it, with `$?`) is the command's output: the echo, the prompt and the
//!   wrapper never are.
//! - POSIX shells run the command in a subshell with an INT trap: a C-c that kills the command
//!   makes the subshell exit 130 instead of making the interactive shell abandon the rest of
//!   the line (which bash, dash and zsh do when a foreground job dies of SIGINT), so the end
//!   marker is always printed. `exit` in the command ends the subshell only. Changes of
//!   directory or variables do not outlive the command.
//! - fish has no subshells: the command runs in a `begin … end` block of the shell itself (fish
//!   continues after a C-c'd block and reports 130), so changes persist and `exit` closes the
//!   shell. fish reports the status as `$status` and its quotes escape `\` and `'`.
//! - The line starts with a space, which keeps it out of the history of shells configured for
//!   that (bash `HISTCONTROL=ignorespace`, zsh `HIST_IGNORE_SPACE`, fish).
//!
//! Both markers are OSC sequences, which terminals and tmux do not display, so the pane shows
//! the typed line and the command's output only.
//!
//! [`RunCapture`] consumes the pane's output stream in chunks cut anywhere and keeps a bounded
//! tail of the output lines (via [`LineAssembler`]) until the end marker arrives.
//!
//! The same runs on a backend that shows rendered screens instead of a stream use visible
//! markers: [`screen`].
//!
//! Pure: no I/O.

pub mod screen;

use std::collections::VecDeque;

use crate::lines::LineAssembler;
use crate::shell::Shell;

/// Longest command accepted, in bytes.
pub const MAX_COMMAND_BYTES: usize = 16 * 1024;

/// Longest typed line a shell reading in canonical (cooked) terminal mode receives: the
/// terminal drops characters beyond 4095 on one line. Shells with their own line editor
/// (bash, zsh, fish) have no such limit.
pub const COOKED_LINE_MAX: usize = 4000;

/// A command to run in a shell pane, whichever backend runs it.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The command as typed.
    pub command: String,
    /// Most output lines kept, the last ones.
    pub max_lines: usize,
    /// The shell the caller names, which skips detecting it (and, on tmux, the check that the
    /// shell holds its terminal).
    pub shell: Option<Shell>,
}

/// Why a command cannot be typed into a shell.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// Nothing to type.
    #[error("the command is empty")]
    Empty,
    #[error("the command is {len} bytes long; at most {MAX_COMMAND_BYTES} are accepted")]
    /// Longer than [`MAX_COMMAND_BYTES`].
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    #[error(
        "the command contains the control character U+{code:04X} at byte {offset}; typed into a shell it would act as a key (a tab, for example, triggers completion): write it with printf escapes or $'...' instead"
    )]
    /// A control character, which the terminal would take as a key.
    ControlCharacter {
        /// Where it is, in bytes.
        offset: usize,
        /// Its code point.
        code: u32,
    },
    #[error(
        "line {line} of the typed command is {len} bytes long; this shell reads from the terminal line by line and the terminal drops characters beyond {COOKED_LINE_MAX} on one line: split the command into shorter lines"
    )]
    /// A line longer than the terminal keeps in canonical mode.
    LineTooLong {
        /// The line's number, from 1.
        line: usize,
        /// Its length in bytes.
        len: usize,
    },
}

/// The markers of one run, identified by a fresh random id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunMarkers {
    id: String,
}

/// `ESC ] 133 ; C ; muxgate=` — the start marker before the id.
const START_PREFIX: &[u8] = b"\x1b]133;C;muxgate=";
/// `ESC ] 133 ; D ;` — the end marker before the status.
const END_PREFIX: &[u8] = b"\x1b]133;D;";
/// Most digits of an exit status.
const MAX_STATUS_DIGITS: usize = 10;

impl RunMarkers {
    /// Markers with a random 64-bit id.
    pub fn random() -> Self {
        Self::with_id(rand::random::<u64>())
    }

    /// Markers with a given id (tests).
    pub fn with_id(id: u64) -> Self {
        Self {
            id: format!("{id:016x}"),
        }
    }

    /// The run's id, as its markers carry it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The exact bytes of the start marker.
    pub fn start_marker(&self) -> Vec<u8> {
        let mut marker = START_PREFIX.to_vec();
        marker.extend_from_slice(self.id.as_bytes());
        marker.push(0x07);
        marker
    }

    /// `;muxgate=<id>BEL`, the fixed tail of the end marker.
    fn end_suffix(&self) -> Vec<u8> {
        let mut suffix = b";muxgate=".to_vec();
        suffix.extend_from_slice(self.id.as_bytes());
        suffix.push(0x07);
        suffix
    }

    /// The longest end marker (for how many trailing bytes may be a marker cut in two).
    fn end_marker_max_len(&self) -> usize {
        END_PREFIX.len() + MAX_STATUS_DIGITS + self.end_suffix().len()
    }

    /// The text to type (without the final Enter) to run `command` in a `flavor` shell.
    pub fn typed_text(&self, command: &str, flavor: Shell) -> Result<String, CommandError> {
        check_command(command)?;
        let id = &self.id;
        let text = match flavor {
            Shell::Bash | Shell::Zsh | Shell::Sh => format!(
                " (trap 'exit 130' INT; printf '\\033]133;C;muxgate=%s\\007' {id}; eval {}); \
                 printf '\\033]133;D;%s;muxgate=%s\\007' \"$?\" {id}",
                posix_quote(command)
            ),
            Shell::Fish => format!(
                " begin; printf '\\033]133;C;muxgate=%s\\007' {id}; eval {}; end; \
                 printf '\\033]133;D;%s;muxgate=%s\\007' $status {id}",
                fish_quote(command)
            ),
        };
        fits_the_terminal(text, flavor)
    }
}

/// The text to type (without the final Enter) to run `command` in a `flavor` shell that marks
/// its own commands (OSC 133, read by the ledger): the same subshell (POSIX shells) or block
/// (fish) as [`RunMarkers::typed_text`], without the markers. A C-c that ends the command
/// still ends it with the shell's own end mark (status 130).
pub fn unmarked_typed_text(command: &str, flavor: Shell) -> Result<String, CommandError> {
    check_command(command)?;
    let text = match flavor {
        Shell::Bash | Shell::Zsh | Shell::Sh => {
            format!(" (eval {})", posix_quote(command))
        }
        Shell::Fish => format!(" begin; eval {}; end", fish_quote(command)),
    };
    fits_the_terminal(text, flavor)
}

/// `text`, unless a shell reading in cooked mode would receive a line of it cut short.
fn fits_the_terminal(text: String, flavor: Shell) -> Result<String, CommandError> {
    if flavor == Shell::Sh
        && let Some((index, line)) = text
            .split('\n')
            .enumerate()
            .find(|(_, l)| l.len() > COOKED_LINE_MAX)
    {
        return Err(CommandError::LineTooLong {
            line: index + 1,
            len: line.len(),
        });
    }
    Ok(text)
}

/// Whether `command` may be typed into a shell: not empty, at most [`MAX_COMMAND_BYTES`], and
/// no control character but newline (a typed control character acts as a key).
pub fn check_command(command: &str) -> Result<(), CommandError> {
    if command.trim().is_empty() {
        return Err(CommandError::Empty);
    }
    if command.len() > MAX_COMMAND_BYTES {
        return Err(CommandError::TooLong { len: command.len() });
    }
    match command
        .char_indices()
        .find(|(_, c)| c.is_control() && *c != '\n')
    {
        Some((offset, c)) => Err(CommandError::ControlCharacter {
            offset,
            code: u32::from(c),
        }),
        None => Ok(()),
    }
}

/// POSIX single quotes: nothing inside is special; `'` is written `'\''`.
pub fn posix_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// fish single quotes: `\\` and `\'` are the only escapes.
pub fn fish_quote(text: &str) -> String {
    format!("'{}'", text.replace('\\', r"\\").replace('\'', r"\'"))
}

/// Where a run is in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the start marker: echo, prompt redraws.
    BeforeStart,
    /// Between the markers: the command's output.
    Output,
    /// The end marker was seen.
    Done,
}

/// A run's output, read from the pane's stream: the tail of the command's output lines and,
/// once the end marker arrived, its exit status.
#[derive(Debug)]
pub struct RunCapture {
    start: Vec<u8>,
    end_suffix: Vec<u8>,
    /// Trailing bytes held back because they may be the beginning of a marker.
    hold: usize,
    phase: Phase,
    /// The start marker was seen.
    saw_start: bool,
    carry: Vec<u8>,
    /// Output was lost (tmux dropped some, or the reader fell behind), so the start marker may
    /// be gone: bytes seen before the start marker are kept tentatively as output.
    lost: bool,
    assembler: LineAssembler,
    lines: VecDeque<String>,
    max_lines: usize,
    dropped_lines: u64,
    exit_status: Option<i32>,
}

/// The text of a run's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunText {
    /// The output lines joined with `\n` (a final `\n` when the output ended with one), led by
    /// a `[... N lines truncated ...]` line when lines were dropped.
    pub text: String,
    /// Lines dropped from the start to keep `max_lines`.
    pub dropped_lines: u64,
    /// Some output never reached the gateway (see the `[... output lost ...]` lines).
    pub lost: bool,
}

impl RunCapture {
    /// A capture for `markers`, keeping the last `max_lines` lines (at least 1).
    pub fn new(markers: &RunMarkers, max_lines: usize) -> Self {
        let start = markers.start_marker();
        let hold = markers.end_marker_max_len().max(start.len()) - 1;
        Self {
            start,
            end_suffix: markers.end_suffix(),
            hold,
            phase: Phase::BeforeStart,
            saw_start: false,
            carry: Vec::new(),
            lost: false,
            assembler: LineAssembler::new(),
            lines: VecDeque::new(),
            max_lines: max_lines.max(1),
            dropped_lines: 0,
            exit_status: None,
        }
    }

    /// The text of a run read from the ledger instead of markers: `output` is the command's
    /// own output as the stream holds it, `lost` how many bytes before it the stream no
    /// longer holds. Shaped as [`Self::text`] shapes a marked run's.
    pub fn text_of(output: &[u8], lost: u64, max_lines: usize) -> RunText {
        let mut capture = Self::new(&RunMarkers::with_id(0), max_lines);
        capture.phase = Phase::Done;
        if lost > 0 {
            capture.push_line(format!("[... output lost: {lost} bytes ...]"));
            capture.lost = true;
        }
        capture.output(output);
        capture.text()
    }

    /// Whether the shell has started the command (its start marker was seen).
    pub fn started(&self) -> bool {
        self.saw_start
    }

    /// The exit status, once the end marker was seen.
    pub fn exit_status(&self) -> Option<i32> {
        self.exit_status
    }

    /// Reads the next bytes of the stream. Returns the exit status when they hold the end marker.
    pub fn feed(&mut self, data: &[u8]) -> Option<i32> {
        if self.phase == Phase::Done {
            return None;
        }
        let mut buf = std::mem::take(&mut self.carry);
        buf.extend_from_slice(data);
        let mut from = 0;
        if self.phase == Phase::BeforeStart {
            match memchr::memmem::find(&buf, &self.start) {
                Some(at) => {
                    if self.lost {
                        // What we kept after the loss preceded the start: not output after all.
                        self.lines.clear();
                        self.dropped_lines = 0;
                        self.assembler = LineAssembler::new();
                    }
                    self.phase = Phase::Output;
                    self.saw_start = true;
                    from = at + self.start.len();
                }
                None if !self.lost => {
                    let keep = buf.len().min(self.hold);
                    self.carry = buf[buf.len() - keep..].to_vec();
                    return None;
                }
                None => {}
            }
        }
        let rest = &buf[from..];
        if let Some((at, status)) = self.find_end(rest) {
            self.output(&rest[..at]);
            self.phase = Phase::Done;
            self.exit_status = Some(status);
            return Some(status);
        }
        let keep = rest.len().min(self.hold);
        self.output(&rest[..rest.len() - keep]);
        self.carry = rest[rest.len() - keep..].to_vec();
        None
    }

    /// Records that output was lost before the bytes fed next: `bytes` is how much, when known.
    ///
    /// Before the start marker the loss is marked too: the bytes after it are kept as output
    /// in case the marker was among the lost ones (they are dropped, mark and all, if the
    /// marker still comes), and each later loss among them must show where it fell.
    pub fn lost_output(&mut self, bytes: Option<u64>) {
        if self.phase == Phase::Done {
            return;
        }
        // Bytes kept after an earlier loss are output; before the start otherwise, the held
        // bytes are the tail of what preceded it (perhaps half the marker): not output.
        let kept_as_output = self.phase == Phase::Output || self.lost;
        self.lost = true;
        let carry = std::mem::take(&mut self.carry);
        if kept_as_output {
            self.output(&carry);
        }
        if self.assembler.has_partial() {
            let partial = self.assembler.partial();
            self.push_line(partial);
        }
        self.assembler.reset();
        self.push_line(match bytes {
            Some(n) => format!("[... output lost: {n} bytes ...]"),
            None => "[... output lost: tmux dropped some ...]".to_owned(),
        });
    }

    /// Finds the end marker: `END_PREFIX digits end_suffix`. Returns where it starts and the
    /// status.
    fn find_end(&self, buf: &[u8]) -> Option<(usize, i32)> {
        let finder = memchr::memmem::Finder::new(&self.end_suffix);
        for suffix_at in finder.find_iter(buf) {
            let before = &buf[..suffix_at];
            let digits = before
                .iter()
                .rev()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits == 0 || digits > MAX_STATUS_DIGITS {
                continue;
            }
            let digits_at = suffix_at - digits;
            if !before[..digits_at].ends_with(END_PREFIX) {
                continue;
            }
            let Some(status) = std::str::from_utf8(&buf[digits_at..suffix_at])
                .ok()
                .and_then(|d| d.parse::<i32>().ok())
            else {
                continue;
            };
            return Some((digits_at - END_PREFIX.len(), status));
        }
        None
    }

    fn output(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let mut completed = Vec::new();
        self.assembler.feed(data, &mut completed);
        for line in completed {
            self.push_line(line);
        }
    }

    fn push_line(&mut self, line: String) {
        self.lines.push_back(line);
        if self.lines.len() > self.max_lines {
            self.lines.pop_front();
            self.dropped_lines += 1;
        }
    }

    /// The output so far (all of it once the end marker was seen). Held-back bytes that turned
    /// out not to be a marker are included.
    pub fn text(&self) -> RunText {
        let mut assembler = self.assembler.clone();
        let mut lines: Vec<String> = self.lines.iter().cloned().collect();
        let mut dropped = self.dropped_lines;
        if self.phase != Phase::Done && (self.phase == Phase::Output || self.lost) {
            let mut more = Vec::new();
            assembler.feed(&self.carry, &mut more);
            lines.extend(more);
        }
        let partial = assembler.partial();
        let total = lines.len() + usize::from(!partial.is_empty());
        if total > self.max_lines {
            let cut = (total - self.max_lines).min(lines.len());
            lines.drain(..cut);
            dropped += cut as u64;
        }
        let mut text = String::new();
        if dropped > 0 {
            text.push_str(&format!("[... {dropped} lines truncated ...]\n"));
        }
        for line in &lines {
            text.push_str(line);
            text.push('\n');
        }
        text.push_str(&partial);
        RunText {
            text,
            dropped_lines: dropped,
            lost: self.lost,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_read_from_the_ledger_is_shaped_like_a_marked_one() {
        let text = RunCapture::text_of(b"a\r\nb\r\nc\r\n", 0, 2);
        assert_eq!(text.text, "[... 1 lines truncated ...]\nb\nc\n");
        assert_eq!(text.dropped_lines, 1);
        let text = RunCapture::text_of(b"tail", 7, 10);
        assert_eq!(text.text, "[... output lost: 7 bytes ...]\ntail");
        assert!(text.lost);
    }

    #[test]
    fn an_unmarked_run_keeps_the_subshell() {
        assert_eq!(
            unmarked_typed_text("echo 'hi'", Shell::Bash).unwrap(),
            r#" (eval 'echo '\''hi'\''')"#
        );
        assert_eq!(
            unmarked_typed_text(r"echo \'", Shell::Fish).unwrap(),
            r" begin; eval 'echo \\\''; end"
        );
        assert_eq!(
            unmarked_typed_text(" ", Shell::Zsh),
            Err(CommandError::Empty)
        );
    }

    fn markers() -> RunMarkers {
        RunMarkers::with_id(0xfeed)
    }

    fn end(status: &str) -> Vec<u8> {
        let mut m = END_PREFIX.to_vec();
        m.extend_from_slice(status.as_bytes());
        m.extend_from_slice(b";muxgate=000000000000feed\x07");
        m
    }

    fn stream(echo: &str, output: &[u8], status: &str) -> Vec<u8> {
        let mut s = echo.as_bytes().to_vec();
        s.extend_from_slice(b"\r\n");
        s.extend_from_slice(&markers().start_marker());
        s.extend_from_slice(output);
        s.extend_from_slice(&end(status));
        s.extend_from_slice(b"\x1b[?2004h$ ");
        s
    }

    #[test]
    fn typed_text_per_flavor() {
        let m = markers();
        let posix = m.typed_text("echo 'hi'", Shell::Bash).unwrap();
        assert_eq!(
            posix,
            " (trap 'exit 130' INT; printf '\\033]133;C;muxgate=%s\\007' 000000000000feed; \
             eval 'echo '\\''hi'\\'''); printf '\\033]133;D;%s;muxgate=%s\\007' \"$?\" 000000000000feed"
        );
        let fish = m.typed_text(r"echo 'a\b'", Shell::Fish).unwrap();
        assert!(fish.contains(r"eval 'echo \'a\\b\''; end;"), "{fish}");
        assert!(fish.contains("$status 000000000000feed"));
    }

    #[test]
    fn the_echo_of_the_typed_text_never_matches() {
        let m = markers();
        for flavor in [Shell::Bash, Shell::Fish] {
            let typed = m.typed_text("printf done", flavor).unwrap();
            let mut capture = RunCapture::new(&m, 100);
            assert_eq!(capture.feed(typed.as_bytes()), None);
            assert!(!capture.started());
        }
    }

    #[test]
    fn bad_commands_are_refused() {
        let m = markers();
        assert_eq!(m.typed_text(" \n ", Shell::Bash), Err(CommandError::Empty));
        assert_eq!(
            m.typed_text("a\tb", Shell::Bash),
            Err(CommandError::ControlCharacter { offset: 1, code: 9 })
        );
        assert_eq!(
            m.typed_text(&"x".repeat(MAX_COMMAND_BYTES + 1), Shell::Bash),
            Err(CommandError::TooLong {
                len: MAX_COMMAND_BYTES + 1
            })
        );
        let long_line = "y".repeat(COOKED_LINE_MAX);
        assert!(m.typed_text(&long_line, Shell::Bash).is_ok());
        assert!(matches!(
            m.typed_text(&long_line, Shell::Sh),
            Err(CommandError::LineTooLong { line: 1, .. })
        ));
        let split = format!("{}\n{}", "y".repeat(3000), "z".repeat(3000));
        assert!(m.typed_text(&split, Shell::Sh).is_ok());
    }

    #[test]
    fn output_between_the_markers_only() {
        let m = markers();
        let data = stream("$ typed junk", b"hello\r\nworld\r\n", "0");
        let mut capture = RunCapture::new(&m, 100);
        assert_eq!(capture.feed(&data), Some(0));
        assert_eq!(capture.text().text, "hello\nworld\n");
        // Nothing after the end counts.
        assert_eq!(capture.feed(b"more"), None);
        assert_eq!(capture.text().text, "hello\nworld\n");
    }

    #[test]
    fn every_split_point_gives_the_same_result() {
        let m = markers();
        let data = stream("$ x", "ünï\r\npartial".as_bytes(), "130");
        for cut in 0..data.len() {
            let mut capture = RunCapture::new(&m, 100);
            let first = capture.feed(&data[..cut]);
            let second = capture.feed(&data[cut..]);
            assert_eq!(first.or(second), Some(130), "cut at {cut}");
            assert_eq!(capture.text().text, "ünï\npartial", "cut at {cut}");
        }
    }

    #[test]
    fn empty_output_and_other_ids() {
        let m = markers();
        let mut capture = RunCapture::new(&m, 100);
        let mut data = m.start_marker();
        // Another run's end marker, then ours.
        data.extend_from_slice(b"\x1b]133;D;5;muxgate=000000000000beef\x07");
        data.extend_from_slice(&end("127"));
        assert_eq!(capture.feed(&data), Some(127));
        assert_eq!(capture.text().text, "");
    }

    #[test]
    fn near_misses_are_output() {
        let m = markers();
        let mut capture = RunCapture::new(&m, 100);
        let mut data = m.start_marker();
        data.extend_from_slice(b"\x1b]133;D;;muxgate=000000000000feed\x07");
        data.extend_from_slice(b"\x1b]133;D;99999999999;muxgate=000000000000feed\x07");
        data.extend_from_slice(b"text\x1b]133;D;x1;muxgate=000000000000feed\x07");
        assert_eq!(capture.feed(&data), None);
        assert!(capture.started());
        assert_eq!(capture.text().text, "text");
    }

    #[test]
    fn keeps_the_tail_of_long_output() {
        let m = markers();
        let mut capture = RunCapture::new(&m, 3);
        let mut data = m.start_marker();
        for i in 0..10 {
            data.extend_from_slice(format!("line {i}\r\n").as_bytes());
        }
        data.extend_from_slice(&end("0"));
        assert_eq!(capture.feed(&data), Some(0));
        let text = capture.text();
        assert_eq!(
            text.text,
            "[... 7 lines truncated ...]\nline 7\nline 8\nline 9\n"
        );
        assert_eq!(text.dropped_lines, 7);
    }

    #[test]
    fn lost_output_is_marked_and_the_end_still_found() {
        let m = markers();
        let mut capture = RunCapture::new(&m, 100);
        let mut data = m.start_marker();
        data.extend_from_slice(b"first\r\nhal");
        assert_eq!(capture.feed(&data), None);
        capture.lost_output(Some(4096));
        let mut rest = b"f\r\nlast\r\n".to_vec();
        rest.extend_from_slice(&end("0"));
        assert_eq!(capture.feed(&rest), Some(0));
        let text = capture.text();
        assert!(text.lost);
        assert_eq!(
            text.text,
            "first\nhal\n[... output lost: 4096 bytes ...]\nf\nlast\n"
        );
    }

    #[test]
    fn a_start_marker_lost_with_the_output_still_ends_the_run() {
        let m = markers();
        let mut capture = RunCapture::new(&m, 100);
        capture.feed(b"$ typed");
        capture.lost_output(None);
        let mut data = b"tail of output\r\n".to_vec();
        data.extend_from_slice(&end("2"));
        assert_eq!(capture.feed(&data), Some(2));
        assert!(!capture.started());
        assert_eq!(capture.exit_status(), Some(2));
        let text = capture.text();
        assert!(text.lost);
        assert_eq!(
            text.text,
            "[... output lost: tmux dropped some ...]\ntail of output\n"
        );
        // When the start marker does arrive after a loss, what came before it is dropped.
        let mut capture = RunCapture::new(&m, 100);
        capture.lost_output(None);
        let mut data = b"echo junk\r\n".to_vec();
        data.extend_from_slice(&m.start_marker());
        data.extend_from_slice(b"real\r\n");
        data.extend_from_slice(&end("0"));
        assert_eq!(capture.feed(&data), Some(0));
        assert_eq!(capture.text().text, "real\n");
    }

    /// A run whose start marker was lost, then more output: every loss shows where it fell,
    /// and no line is joined across one.
    #[test]
    fn each_loss_after_a_lost_start_is_marked_where_it_fell() {
        let m = markers();
        let mut capture = RunCapture::new(&m, 100);
        capture.lost_output(Some(900));
        assert_eq!(capture.feed(b"1\r\n1212\r\n12"), None);
        capture.lost_output(Some(700));
        let mut data = b"34\r\n1300\r\n".to_vec();
        data.extend_from_slice(&end("0"));
        assert_eq!(capture.feed(&data), Some(0));
        let text = capture.text();
        assert!(text.lost && !capture.started());
        assert_eq!(
            text.text,
            "[... output lost: 900 bytes ...]\n1\n1212\n12\n\
             [... output lost: 700 bytes ...]\n34\n1300\n"
        );
    }

    #[test]
    fn text_before_the_end_includes_held_back_bytes() {
        let m = markers();
        let mut capture = RunCapture::new(&m, 100);
        let mut data = m.start_marker();
        data.extend_from_slice(b"still running: 42%");
        assert_eq!(capture.feed(&data), None);
        assert_eq!(capture.text().text, "still running: 42%");
    }
}
