//! Visible text lines from a terminal byte stream.
//!
//! A pane's output stream is what its program wrote: text mixed with escape sequences, `\r\n`
//! line ends, carriage returns that redraw a line (progress bars), backspaces. Waiting for text
//! and returning a command's output both need the text a person would read, line by line. A
//! [`LineAssembler`] turns the byte stream into that, incrementally: feed it chunks cut anywhere
//! (inside a UTF-8 character or an escape sequence) and it hands back each completed line.
//!
//! What a line is, exactly:
//! - bytes are decoded as UTF-8; invalid bytes become U+FFFD;
//! - escape sequences (CSI, OSC, DCS/SOS/PM/APC strings, two-byte escapes) are removed;
//! - `\n` (and VT, FF) ends the line; `\r` returns to its start, so later text overwrites
//!   earlier text; backspace moves back one character; tab moves to the next multiple of 8;
//! - cursor movement within the line is followed (`CSI n C`, `CSI n D`, `CSI n G`), erasing
//!   is applied (`CSI K`, `CSI X`, `CSI P`, `CSI @`); other movement (up, down, absolute
//!   positioning) is ignored, so full-screen programs do not come out as readable lines;
//! - trailing spaces are removed; a line longer than [`MAX_LINE_CHARS`] is cut there (the rest
//!   continues on a new line, like a terminal wrapping), which bounds the work per line;
//! - one character is one column (wide characters are not counted twice).
//!
//! It also tracks whether the program switched to the alternate screen (`CSI ?1049h`, `?1047h`,
//! `?47h`), where full-screen programs draw and line-based matching means nothing.
//!
//! Pure: no I/O, no allocation beyond the current line and the lines it returns.

/// The marker line that stands for `n` lines cut from a text (the same for every backend).
pub fn truncation_marker(n: usize) -> String {
    format!("[... {n} lines truncated ...]")
}

/// The first 64 characters of a text, `…` marking a cut: how an error quotes a value a client
/// or tmux gave, so that a long one cannot flood the answer.
pub fn excerpt(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Longest line kept before it is cut.
pub const MAX_LINE_CHARS: usize = 16 * 1024;

/// Longest CSI parameter text kept; longer sequences are still skipped, their parameters ignored.
const MAX_CSI_LEN: usize = 32;

/// Incremental terminal-stream-to-lines decoder. See the module docs for what it produces.
#[derive(Debug, Clone)]
pub struct LineAssembler {
    state: State,
    /// A UTF-8 character being decoded: bytes so far and how many it needs.
    utf8: [u8; 4],
    utf8_len: usize,
    utf8_need: usize,
    csi: Vec<u8>,
    line: Vec<char>,
    col: usize,
    alternate_screen: bool,
    max_line_chars: usize,
    /// Index, in the data being fed, of the byte being decoded (where a line ends).
    at: usize,
}

/// Where a [`LineAssembler`] hands the lines it completes.
pub trait LineSink {
    /// A completed line; `end` is the index, in the data passed to that `feed`, just past the
    /// line's last byte (for a line cut for length: the byte that did not fit).
    fn line(&mut self, text: String, end: usize);
}

impl LineSink for Vec<String> {
    fn line(&mut self, text: String, _end: usize) {
        self.push(text);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    Escape,
    EscapeIntermediate,
    Csi,
    /// An OSC or a DCS/SOS/PM/APC string: skipped until BEL or ST.
    String,
    StringEscape,
}

impl Default for LineAssembler {
    fn default() -> Self {
        Self::new()
    }
}

impl LineAssembler {
    /// An assembler cutting lines at the default length.
    pub fn new() -> Self {
        Self::with_max_line_chars(MAX_LINE_CHARS)
    }

    /// An assembler cutting lines at `max` characters (at least 1).
    pub fn with_max_line_chars(max: usize) -> Self {
        Self {
            state: State::Ground,
            utf8: [0; 4],
            utf8_len: 0,
            utf8_need: 0,
            csi: Vec::new(),
            line: Vec::new(),
            col: 0,
            alternate_screen: false,
            max_line_chars: max.max(1),
            at: 0,
        }
    }

    /// Whether the program is drawing on the alternate screen.
    pub fn alternate_screen(&self) -> bool {
        self.alternate_screen
    }

    /// The line being written (not yet ended), trailing spaces removed.
    pub fn partial(&self) -> String {
        trimmed(&self.line)
    }

    /// The visible lines of a whole range of output at once: its complete lines, then the
    /// unfinished last one if anything was written on it.
    pub fn lines_of(data: &[u8]) -> Vec<String> {
        let mut assembler = Self::new();
        let mut lines = Vec::new();
        assembler.feed(data, &mut lines);
        if assembler.has_partial() {
            lines.push(assembler.partial());
        }
        lines
    }

    /// Whether anything has been written on the current line.
    pub fn has_partial(&self) -> bool {
        self.line.iter().any(|c| *c != ' ')
    }

    /// Forgets the current line and any half-read sequence (after output was lost, the next
    /// bytes start somewhere unknown). The alternate-screen state is kept.
    pub fn reset(&mut self) {
        self.state = State::Ground;
        self.utf8_len = 0;
        self.utf8_need = 0;
        self.csi.clear();
        self.line.clear();
        self.col = 0;
    }

    /// Decodes `data`, handing each line it completes to `lines` (a `Vec<String>` collects
    /// them).
    pub fn feed(&mut self, data: &[u8], lines: &mut impl LineSink) {
        let mut rest = data;
        while let Some((&first, tail)) = rest.split_first() {
            self.at = data.len() - rest.len();
            // Plain text is most of any stream: take a run of printable ASCII in one step
            // instead of one state-machine turn per byte.
            if self.state == State::Ground && self.utf8_need == 0 && is_printable_ascii(first) {
                let run = rest
                    .iter()
                    .position(|b| !is_printable_ascii(*b))
                    .unwrap_or(rest.len());
                let (text, after) = rest.split_at(run);
                self.print_ascii(text, lines);
                rest = after;
                continue;
            }
            self.byte(first, lines);
            rest = tail;
        }
    }

    fn byte(&mut self, b: u8, lines: &mut impl LineSink) {
        if self.utf8_need > 0 {
            if (0x80..=0xbf).contains(&b) {
                self.utf8[self.utf8_len] = b;
                self.utf8_len += 1;
                if self.utf8_len == self.utf8_need {
                    let decoded = std::str::from_utf8(&self.utf8[..self.utf8_len])
                        .ok()
                        .and_then(|s| s.chars().next())
                        .unwrap_or(char::REPLACEMENT_CHARACTER);
                    self.utf8_need = 0;
                    self.utf8_len = 0;
                    // C1 controls (U+0080-U+009F) are not text.
                    if !decoded.is_control() {
                        self.print(decoded, lines);
                    }
                }
                return;
            }
            // A character cut short: replace it, then read this byte afresh.
            self.utf8_need = 0;
            self.utf8_len = 0;
            self.print(char::REPLACEMENT_CHARACTER, lines);
        }
        match self.state {
            State::Ground => self.ground(b, lines),
            State::Escape => self.escape(b, lines),
            State::EscapeIntermediate => {
                if !(0x20..=0x2f).contains(&b) {
                    self.state = State::Ground;
                }
            }
            State::Csi => match b {
                0x20..=0x3f if self.csi.len() < MAX_CSI_LEN => self.csi.push(b),
                0x20..=0x3f => {}
                0x40..=0x7e => {
                    self.state = State::Ground;
                    self.csi_dispatch(b);
                }
                0x1b => self.state = State::Escape,
                0x18 | 0x1a => self.state = State::Ground,
                _ => {}
            },
            State::String => match b {
                0x07 | 0x18 | 0x1a => self.state = State::Ground,
                0x1b => self.state = State::StringEscape,
                _ => {}
            },
            State::StringEscape => {
                if b == b'\\' {
                    self.state = State::Ground;
                } else {
                    self.state = State::Escape;
                    self.escape(b, lines);
                }
            }
        }
    }

    fn ground(&mut self, b: u8, lines: &mut impl LineSink) {
        match b {
            0x1b => self.state = State::Escape,
            b'\n' | 0x0b | 0x0c => self.end_line(lines, self.at + 1),
            b'\r' => self.col = 0,
            0x08 => self.col = self.col.saturating_sub(1),
            b'\t' => self.col = ((self.col / 8) + 1) * 8,
            0x00..=0x1f | 0x7f => {}
            0x20..=0x7e => self.print(char::from(b), lines),
            0xc2..=0xdf => self.start_utf8(b, 2),
            0xe0..=0xef => self.start_utf8(b, 3),
            0xf0..=0xf4 => self.start_utf8(b, 4),
            _ => self.print(char::REPLACEMENT_CHARACTER, lines),
        }
    }

    fn start_utf8(&mut self, b: u8, need: usize) {
        self.utf8[0] = b;
        self.utf8_len = 1;
        self.utf8_need = need;
    }

    fn escape(&mut self, b: u8, lines: &mut impl LineSink) {
        self.state = match b {
            b'[' => {
                self.csi.clear();
                State::Csi
            }
            b']' | b'P' | b'X' | b'^' | b'_' => State::String,
            0x20..=0x2f => State::EscapeIntermediate,
            0x1b => State::Escape,
            b'\n' | b'\r' | 0x08 => {
                self.ground(b, lines);
                State::Ground
            }
            _ => State::Ground,
        };
    }

    fn csi_dispatch(&mut self, fin: u8) {
        let private = self.csi.first() == Some(&b'?');
        let params: Vec<usize> = self
            .csi
            .split(|b| *b == b';')
            .map(|p| {
                p.iter()
                    .filter(|b| b.is_ascii_digit())
                    .fold(0usize, |n, d| {
                        n.saturating_mul(10).saturating_add(usize::from(d - b'0'))
                    })
            })
            .collect();
        let first = params.first().copied().unwrap_or(0);
        // Movement counts of 0 mean 1; counts are bounded by the line length cap.
        let count = first.clamp(1, self.max_line_chars);
        let on_line = self.col < self.line.len();
        match (private, fin) {
            (true, b'h' | b'l') if params.iter().any(|p| matches!(p, 47 | 1047 | 1049)) => {
                self.alternate_screen = fin == b'h';
            }
            (true, _) => {}
            (false, b'C' | b'a') => self.col = (self.col + count).min(self.max_line_chars - 1),
            (false, b'D') => self.col = self.col.saturating_sub(count),
            (false, b'G' | b'`') => self.col = (count - 1).min(self.max_line_chars - 1),
            (false, b'K') => match first {
                0 => self.line.truncate(self.col),
                1 => {
                    let end = (self.col + 1).min(self.line.len());
                    self.line[..end].fill(' ');
                }
                _ => self.line.clear(),
            },
            (false, b'X') if on_line => {
                let end = (self.col + count).min(self.line.len());
                self.line[self.col..end].fill(' ');
            }
            (false, b'P') if on_line => {
                let end = (self.col + count).min(self.line.len());
                self.line.drain(self.col..end);
            }
            (false, b'@') if on_line => {
                let room = self.max_line_chars.saturating_sub(self.line.len());
                self.line.splice(
                    self.col..self.col,
                    std::iter::repeat_n(' ', count.min(room)),
                );
            }
            _ => {}
        }
    }

    fn print(&mut self, c: char, lines: &mut impl LineSink) {
        if self.col >= self.max_line_chars {
            self.end_line(lines, self.at);
        }
        if self.col < self.line.len() {
            self.line[self.col] = c;
        } else {
            self.line.resize(self.col, ' ');
            self.line.push(c);
        }
        self.col += 1;
    }

    /// Prints a run of printable ASCII: the same as [`Self::print`] per byte, a slice at a time.
    fn print_ascii(&mut self, text: &[u8], lines: &mut impl LineSink) {
        let mut rest = text;
        while !rest.is_empty() {
            if self.col >= self.max_line_chars {
                self.end_line(lines, self.at + (text.len() - rest.len()));
            }
            let (now, later) = rest.split_at((self.max_line_chars - self.col).min(rest.len()));
            if self.line.len() < self.col {
                self.line.resize(self.col, ' ');
            }
            let overwritten = (self.line.len() - self.col).min(now.len());
            for (cell, &b) in self.line[self.col..self.col + overwritten]
                .iter_mut()
                .zip(now)
            {
                *cell = char::from(b);
            }
            self.line
                .extend(now[overwritten..].iter().map(|&b| char::from(b)));
            self.col += now.len();
            rest = later;
        }
    }

    /// Ends the current line; `end` is the index in the data being fed just past its last byte.
    fn end_line(&mut self, lines: &mut impl LineSink, end: usize) {
        lines.line(trimmed(&self.line), end);
        self.line.clear();
        self.col = 0;
    }
}

fn is_printable_ascii(b: u8) -> bool {
    (0x20..=0x7e).contains(&b)
}

fn trimmed(line: &[char]) -> String {
    let end = line.iter().rposition(|c| *c != ' ').map_or(0, |i| i + 1);
    let line = &line[..end];
    // Most lines are ASCII: narrowing each char to a byte is far cheaper than encoding it.
    if line.iter().all(char::is_ascii) {
        let bytes: Vec<u8> = line.iter().map(|&c| c as u8).collect();
        if let Ok(text) = String::from_utf8(bytes) {
            return text;
        }
    }
    line.iter().collect()
}

/// Lines kept for a result's `tail`.
pub const TAIL_LINES: usize = 20;
/// Bytes kept for a result's `tail`.
pub const TAIL_BYTES: usize = 2000;

/// The last lines of new output a wait answers with: at most [`TAIL_LINES`] lines and
/// [`TAIL_BYTES`] bytes.
pub fn tail_of(mut lines: Vec<String>) -> Vec<String> {
    let start = lines.len().saturating_sub(TAIL_LINES);
    cap_tail(lines.split_off(start), TAIL_BYTES)
}

/// Keeps the last lines whose total length fits `budget` bytes (the oldest kept line may be
/// cut at its start).
fn cap_tail(lines: Vec<String>, budget: usize) -> Vec<String> {
    let mut kept = Vec::new();
    let mut left = budget;
    for line in lines.into_iter().rev() {
        if line.len() <= left {
            left -= line.len();
            kept.push(line);
            continue;
        }
        if left > 0 {
            let mut start = line.len() - left;
            while !line.is_char_boundary(start) {
                start += 1;
            }
            kept.push(line[start..].to_owned());
        }
        break;
    }
    kept.reverse();
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_excerpt_marks_its_cut_and_never_splits_a_character() {
        assert_eq!(excerpt("short"), "short");
        let exact = "é".repeat(64);
        assert_eq!(excerpt(&exact), exact);
        let long = format!("{exact}x");
        assert_eq!(excerpt(&long), format!("{exact}…"));
    }

    #[test]
    fn lines_of_a_range_keep_an_unfinished_last_line_with_text() {
        assert_eq!(LineAssembler::lines_of(b"a\r\nb\x1b[31mc"), ["a", "bc"]);
        assert_eq!(LineAssembler::lines_of(b"a\r\n   "), ["a"]);
        assert!(LineAssembler::lines_of(b"").is_empty());
    }

    fn lines_of(data: &[u8]) -> (Vec<String>, String) {
        let mut asm = LineAssembler::new();
        let mut lines = Vec::new();
        asm.feed(data, &mut lines);
        (lines, asm.partial())
    }

    #[test]
    fn crlf_lines_and_a_partial_line() {
        let (lines, partial) = lines_of(b"hello\r\nworld\r\n$ ");
        assert_eq!(lines, ["hello", "world"]);
        assert_eq!(partial, "$");
    }

    #[test]
    fn escapes_are_removed() {
        let data = b"\x1b[1;31mred\x1b[0m plain \x1b]0;title\x07\x1b]133;C\x1b\\done\x1bPdcs\x1b\\\x1b(B!\r\n";
        assert_eq!(lines_of(data).0, ["red plain done!"]);
    }

    #[test]
    fn carriage_return_overwrites_like_a_progress_bar() {
        let (lines, _) = lines_of(b"10%\r50%\r100%\r\nab\rX\r\nlong line\r\x1b[Kshort\r\n");
        assert_eq!(lines, ["100%", "Xb", "short"]);
    }

    #[test]
    fn backspace_tab_and_cursor_moves() {
        let (lines, _) = lines_of(b"abc\x08\x08X\r\na\tb\r\nab\x1b[3Cc\x1b[2Dd\r\n\x1b[5Gx\r\n");
        assert_eq!(lines, ["aXc", "a       b", "ab  dc", "    x"]);
    }

    #[test]
    fn erase_delete_and_insert() {
        let (lines, _) =
            lines_of(b"abcdef\x1b[3G\x1b[2X\r\nabcdef\x1b[2G\x1b[2P\r\nabc\x1b[2G\x1b[2@\r\n");
        assert_eq!(lines, ["ab  ef", "adef", "a  bc"]);
        let (lines, _) = lines_of(b"abcdef\x1b[3G\x1b[1K\r\nabc\x1b[2K\r\n");
        assert_eq!(lines, ["   def", ""]);
    }

    #[test]
    fn utf8_split_across_chunks_and_invalid_bytes() {
        let text = "ünï€😀".as_bytes();
        let mut asm = LineAssembler::new();
        let mut lines = Vec::new();
        for b in text {
            asm.feed(std::slice::from_ref(b), &mut lines);
        }
        asm.feed(b"\xff\xe2\x82x\r\n", &mut lines);
        assert_eq!(lines, ["ünï€😀\u{fffd}\u{fffd}x"]);
    }

    #[test]
    fn escape_split_across_chunks() {
        let data = b"a\x1b[31mb\x1b]0;t\x07c\r\n";
        for cut in 0..data.len() {
            let mut asm = LineAssembler::new();
            let mut lines = Vec::new();
            asm.feed(&data[..cut], &mut lines);
            asm.feed(&data[cut..], &mut lines);
            assert_eq!(lines, ["abc"], "cut at {cut}");
        }
    }

    #[test]
    fn alternate_screen_is_tracked() {
        let mut asm = LineAssembler::new();
        let mut lines = Vec::new();
        asm.feed(b"\x1b[?1049h", &mut lines);
        assert!(asm.alternate_screen());
        asm.feed(b"\x1b[?25l\x1b[?1049l", &mut lines);
        assert!(!asm.alternate_screen());
        asm.feed(b"\x1b[?1;47h", &mut lines);
        assert!(asm.alternate_screen());
    }

    #[test]
    fn long_lines_are_cut() {
        let mut asm = LineAssembler::with_max_line_chars(4);
        let mut lines = Vec::new();
        asm.feed(b"abcdefghij\r\n", &mut lines);
        assert_eq!(lines, ["abcd", "efgh", "ij"]);
        asm.feed(b"\x1b[999999999999Cx", &mut lines);
        assert_eq!(asm.partial(), "   x");
    }

    #[test]
    fn reset_forgets_the_partial_line() {
        let mut asm = LineAssembler::new();
        let mut lines = Vec::new();
        asm.feed(b"half\x1b[3", &mut lines);
        assert!(asm.has_partial());
        asm.reset();
        asm.feed(b"1mnew\r\n", &mut lines);
        assert_eq!(lines, ["1mnew"]);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn any_bytes_any_cuts_same_result(data in prop::collection::vec(any::<u8>(), 0..400), cut in 0usize..400) {
                let whole = lines_of(&data);
                let cut = cut.min(data.len());
                let mut asm = LineAssembler::with_max_line_chars(64);
                let mut lines = Vec::new();
                asm.feed(&data[..cut], &mut lines);
                asm.feed(&data[cut..], &mut lines);
                let mut reference = LineAssembler::with_max_line_chars(64);
                let mut expected = Vec::new();
                reference.feed(&data, &mut expected);
                prop_assert_eq!(&lines, &expected);
                prop_assert!(lines.iter().all(|l| l.chars().count() <= 64));
                prop_assert!(lines.iter().all(|l| !l.contains(|c: char| c.is_control())));
                prop_assert!(whole.1.chars().all(|c| !c.is_control()));
            }

            #[test]
            fn text_runs_decode_as_byte_by_byte(
                pieces in prop::collection::vec(prop_oneof![
                    "[ -~]{0,24}".prop_map(String::into_bytes),
                    prop::sample::select(vec![
                        &b"\r"[..], b"\n", b"\x08", b"\t", b"\x1b[3D", b"\x1b[2C", b"\x1b[5G",
                        b"\x1b[K", b"\x1b[2P", b"\x1b[3@", b"\x1b[31m", "é".as_bytes(), b"\xe2",
                    ]).prop_map(<[u8]>::to_vec),
                    any::<u8>().prop_map(|b| vec![b]),
                ], 0..40),
                max in 1usize..12,
            ) {
                let data = pieces.concat();
                let mut fast = LineAssembler::with_max_line_chars(max);
                let mut fast_lines = Vec::new();
                fast.feed(&data, &mut fast_lines);
                let mut slow = LineAssembler::with_max_line_chars(max);
                let mut slow_lines = Vec::new();
                for &b in &data {
                    slow.byte(b, &mut slow_lines);
                }
                prop_assert_eq!(fast_lines, slow_lines);
                prop_assert_eq!(fast.partial(), slow.partial());
                prop_assert_eq!(fast.col, slow.col);
                prop_assert_eq!(fast.line, slow.line);
            }
        }
    }

    #[test]
    fn tail_cap_cuts_on_char_boundaries() {
        let capped = cap_tail(vec!["ééé".into(), "ab".into()], 5);
        assert_eq!(capped, ["é", "ab"]);
    }
}
