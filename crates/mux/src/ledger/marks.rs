//! Shell-integration marks in a pane's output: OSC 133 (semantic prompts) and OSC 7 (working
//! directory).
//!
//! Shells integrated with a terminal print invisible OSC sequences around each prompt and
//! command (FinalTerm's protocol, used by iTerm2, kitty, WezTerm, VS Code, Windows Terminal and
//! fish 4 natively):
//!
//! ```text
//! ESC ] 133 ; A ST                 the prompt starts
//! ESC ] 133 ; B ST                 the prompt ends: what follows is typed input
//! ESC ] 133 ; C [; key=value] ST   the command runs: what follows is its output
//! ESC ] 133 ; D [; status] ST      the command ended, with its exit status
//! ESC ] 7 ; file://host/path ST    the working directory (percent-encoded)
//! ```
//!
//! `ST` is `ESC \` or BEL. Of C's and D's parameters two are read: `cmdline_url=` (the command
//! line, percent-encoded, as kitty's integration sends it and muxgate's own does) and
//! `muxgate=` (the id of a `run_command` run, see [`crate::shell_run`]).
//!
//! [`MarkScanner`] finds them in output cut anywhere, with the absolute stream offsets where
//! each sequence starts and ends. It keeps at most [`MAX_PAYLOAD`] bytes of one sequence and
//! skips the payload of every other OSC (window titles, hyperlinks) as soon as its number
//! shows. Pure: no I/O; fuzzed (`fuzz/fuzz_targets/ledger_marks.rs`).

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

/// The longest OSC 133 or OSC 7 payload kept; longer ones are skipped whole.
pub const MAX_PAYLOAD: usize = 8 * 1024;

/// One mark and where it is in the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// Absolute offset of the sequence's ESC.
    pub start: u64,
    /// Absolute offset just past its terminator.
    pub end: u64,
    /// Which mark it is.
    pub kind: MarkKind,
}

/// What a mark says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkKind {
    /// `133;A`: the shell starts printing its prompt.
    PromptStart,
    /// `133;B`: the prompt is printed; the user types from here.
    InputStart,
    /// `133;C`: the command runs.
    OutputStart {
        /// The command line, when the shell sent it (`cmdline_url=`).
        command: Option<String>,
        /// The `run_command` run this marks (`muxgate=`).
        run: Option<String>,
    },
    /// `133;D`: the command ended.
    CommandEnd {
        /// The exit status the shell reported, if any.
        status: Option<i32>,
        /// The `run_command` run this marks (`muxgate=`).
        run: Option<String>,
    },
    /// OSC 7: the shell's working directory.
    Cwd(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    /// After an ESC.
    Escape,
    /// Inside an OSC payload.
    Payload,
    /// After an ESC inside an OSC payload (`ESC \` ends it).
    PayloadEscape,
}

/// Incremental finder of [`Mark`]s. See the module docs.
#[derive(Debug, Clone)]
pub struct MarkScanner {
    state: State,
    payload: Vec<u8>,
    /// The payload is not kept: too long, or not an OSC 133 / OSC 7.
    skipping: bool,
    /// Absolute offset of the current sequence's ESC.
    start: u64,
}

impl Default for MarkScanner {
    fn default() -> Self {
        Self::new()
    }
}

impl MarkScanner {
    /// A scanner at the start of a stream.
    pub fn new() -> Self {
        Self {
            state: State::Ground,
            payload: Vec::new(),
            skipping: false,
            start: 0,
        }
    }

    /// Forgets a half-read sequence (after output was lost, the next bytes start anywhere).
    pub fn reset(&mut self) {
        self.state = State::Ground;
        self.payload.clear();
        self.skipping = false;
    }

    /// Scans `data`, whose first byte is at absolute offset `base`, appending the marks it
    /// completes to `marks`.
    pub fn feed(&mut self, data: &[u8], base: u64, marks: &mut Vec<Mark>) {
        let mut i = 0;
        while i < data.len() {
            let at = base + i as u64;
            match self.state {
                State::Ground => match memchr::memchr(ESC, &data[i..]) {
                    // Plain output, the common case: one search per chunk.
                    None => return,
                    Some(k) => {
                        self.start = base + (i + k) as u64;
                        self.state = State::Escape;
                        i += k + 1;
                    }
                },
                State::Escape => {
                    match data[i] {
                        b']' => {
                            self.state = State::Payload;
                            self.payload.clear();
                            self.skipping = false;
                        }
                        ESC => self.start = at,
                        _ => self.state = State::Ground,
                    }
                    i += 1;
                }
                State::Payload => {
                    let rest = &data[i..];
                    let Some(k) = memchr::memchr2(BEL, ESC, rest) else {
                        self.keep(rest);
                        return;
                    };
                    self.keep(&rest[..k]);
                    i += k + 1;
                    if rest[k] == BEL {
                        self.finish(base + i as u64, marks);
                    } else {
                        self.state = State::PayloadEscape;
                    }
                }
                State::PayloadEscape => {
                    if data[i] == b'\\' {
                        i += 1;
                        self.finish(base + i as u64, marks);
                    } else {
                        // An ESC that is not ST aborts the OSC and starts a new sequence;
                        // this byte is read again as the one after that ESC.
                        self.start = at - 1;
                        self.state = State::Escape;
                    }
                }
            }
        }
    }

    fn keep(&mut self, bytes: &[u8]) {
        if self.skipping {
            return;
        }
        self.payload.extend_from_slice(bytes);
        let wanted = |prefix: &[u8]| {
            let n = prefix.len().min(self.payload.len());
            self.payload[..n] == prefix[..n]
        };
        if self.payload.len() > MAX_PAYLOAD || !(wanted(b"133;") || wanted(b"7;")) {
            self.skipping = true;
            self.payload = Vec::new();
        }
    }

    fn finish(&mut self, end: u64, marks: &mut Vec<Mark>) {
        self.state = State::Ground;
        if !self.skipping
            && let Some(kind) = parse_payload(&self.payload)
        {
            marks.push(Mark {
                start: self.start,
                end,
                kind,
            });
        }
        self.payload.clear();
        self.skipping = false;
    }
}

/// What an OSC payload (between `ESC ]` and the terminator) says, if it is a mark.
pub fn parse_payload(payload: &[u8]) -> Option<MarkKind> {
    if let Some(url) = payload.strip_prefix(b"7;") {
        return parse_cwd(url).map(MarkKind::Cwd);
    }
    let rest = payload.strip_prefix(b"133;")?;
    let mut fields = rest.split(|&b| b == b';');
    let letter = fields.next()?;
    let params: Vec<&[u8]> = fields.collect();
    match letter {
        b"A" => Some(MarkKind::PromptStart),
        b"B" => Some(MarkKind::InputStart),
        b"C" => Some(MarkKind::OutputStart {
            command: param(&params, b"cmdline_url=").and_then(percent_decode),
            run: param(&params, b"muxgate=").and_then(run_id),
        }),
        b"D" => Some(MarkKind::CommandEnd {
            status: params
                .first()
                .and_then(|p| std::str::from_utf8(p).ok())
                .and_then(|p| p.parse().ok()),
            run: param(&params, b"muxgate=").and_then(run_id),
        }),
        _ => None,
    }
}

fn param<'a>(params: &[&'a [u8]], key: &[u8]) -> Option<&'a [u8]> {
    params.iter().find_map(|p| p.strip_prefix(key))
}

/// A run id as `run_command` prints it: hex digits only.
fn run_id(value: &[u8]) -> Option<String> {
    (!value.is_empty() && value.len() <= 32 && value.iter().all(u8::is_ascii_hexdigit))
        .then(|| String::from_utf8_lossy(value).into_owned())
}

/// The path of an OSC 7 `file://host/path` URL (the host is not checked: a pane's shell runs on
/// the gateway's host or in its workspace).
fn parse_cwd(url: &[u8]) -> Option<String> {
    let rest = url.strip_prefix(b"file://")?;
    let slash = memchr::memchr(b'/', rest)?;
    percent_decode(&rest[slash..])
}

/// Percent-decodes `bytes` as UTF-8 (invalid sequences replaced); `None` for a malformed escape.
fn percent_decode(bytes: &[u8]) -> Option<String> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(chunks: &[&[u8]]) -> Vec<Mark> {
        let mut scanner = MarkScanner::new();
        let mut marks = Vec::new();
        let mut base = 0;
        for chunk in chunks {
            scanner.feed(chunk, base, &mut marks);
            base += chunk.len() as u64;
        }
        marks
    }

    #[test]
    fn finds_each_mark_with_its_offsets() {
        let data = b"\x1b]133;A\x07$ \x1b]133;B\x1b\\ls\r\n\x1b]133;C\x07a b\r\n\x1b]133;D;2\x07";
        let kinds: Vec<MarkKind> = scan(&[data]).into_iter().map(|m| m.kind).collect();
        assert_eq!(
            kinds,
            [
                MarkKind::PromptStart,
                MarkKind::InputStart,
                MarkKind::OutputStart {
                    command: None,
                    run: None
                },
                MarkKind::CommandEnd {
                    status: Some(2),
                    run: None
                },
            ]
        );
        let marks = scan(&[data]);
        assert_eq!((marks[0].start, marks[0].end), (0, 8));
        assert_eq!((marks[1].start, marks[1].end), (10, 19));
        assert_eq!(
            &data[marks[2].end as usize..marks[3].start as usize],
            b"a b\r\n"
        );
    }

    #[test]
    fn marks_cut_anywhere_are_found_the_same() {
        let data: &[u8] = b"x\x1b]7;file://h/tmp/a%20b\x1b\\y\x1b]133;C;cmdline_url=ls%20-l;muxgate=00ff\x07z\x1b]133;D;0;muxgate=00ff\x1b\\";
        let whole = scan(&[data]);
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[0].kind, MarkKind::Cwd("/tmp/a b".into()));
        assert_eq!(
            whole[1].kind,
            MarkKind::OutputStart {
                command: Some("ls -l".into()),
                run: Some("00ff".into())
            }
        );
        for cut in 0..data.len() {
            let (a, b) = data.split_at(cut);
            assert_eq!(scan(&[a, b]), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = data.chunks(1).collect();
        assert_eq!(scan(&bytes), whole);
    }

    #[test]
    fn other_sequences_and_broken_ones_are_not_marks() {
        let marks = scan(&[
            b"\x1b]0;title\x07\x1b[31mred\x1b]133;Z\x07\x1b]133;D;x\x07",
            b"\x1b]133;A\x1b[m\x1b]133;B\x07",
        ]);
        let kinds: Vec<MarkKind> = marks.into_iter().map(|m| m.kind).collect();
        // `133;A` aborted by an ESC that is not ST; the next sequence is still read.
        assert_eq!(
            kinds,
            [
                MarkKind::CommandEnd {
                    status: None,
                    run: None
                },
                MarkKind::InputStart
            ]
        );
    }

    #[test]
    fn an_oversized_payload_is_skipped_whole() {
        let mut data = b"\x1b]133;C;cmdline_url=".to_vec();
        data.extend(std::iter::repeat_n(b'a', MAX_PAYLOAD));
        data.extend_from_slice(b"\x07\x1b]133;D;0\x07");
        let marks = scan(&[&data]);
        assert_eq!(marks.len(), 1);
        assert!(matches!(marks[0].kind, MarkKind::CommandEnd { .. }));
    }

    #[test]
    fn run_ids_and_urls_are_checked() {
        assert_eq!(
            parse_payload(b"133;C;muxgate=zz"),
            Some(MarkKind::OutputStart {
                command: None,
                run: None
            })
        );
        assert_eq!(parse_payload(b"7;file://host"), None);
        assert_eq!(parse_payload(b"7;http://host/x"), None);
        assert_eq!(
            parse_payload(b"133;C;cmdline_url=%zz"),
            Some(MarkKind::OutputStart {
                command: None,
                run: None
            })
        );
    }
}
