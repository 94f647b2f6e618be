//! The control-mode wire protocol: a pure, byte-based line parser.
//!
//! tmux in control mode (`tmux -C`) writes one line per event. Three kinds matter:
//! - reply blocks: `%begin <time> <number> <flags>`, body lines, then `%end`/`%error` with the
//!   SAME number. The number is a server-wide counter with gaps, and a body line may itself look
//!   like `%end 1 2 1`, so a block closes only on a terminator carrying its own number.
//!   `flags` is 1 for commands this client wrote and 0 for the attach command and for commands
//!   run by hooks; callers match their commands FIFO over flags=1 blocks only.
//! - `%output %<pane> <data>` / `%extended-output %<pane> <age> : <data>`: pane output with bytes
//!   below 0x20 and `\` written as three-digit octal escapes; everything else raw, including
//!   invalid UTF-8. Lines are therefore bytes, never `String`.
//! - other notifications (`%exit`, `%session-changed`, `%pause`, `%window-close`, …).
//!
//! Anything else outside a block is a stray line (tmux 3.5 prints `run-shell` output after
//! `%end`) and is reported as such rather than treated as an error.
//!
//! This module does no I/O: feed it lines (without the trailing `\n`) and it returns events.
//! It never panics, whatever the input (see the fuzz target and the property tests).

use crate::wire::ids::{PaneId, SessionId, parse_decimal};

/// One complete reply block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The server-wide command number tmux gave the block.
    pub number: u64,
    /// 1 for commands this client wrote, 0 for the attach and hook-run commands.
    pub flags: u32,
    /// `true` for `%end`, `false` for `%error`.
    pub ok: bool,
    /// The body lines, raw (none when `oversized`).
    pub body: Vec<Vec<u8>>,
    /// The body grew beyond the block's limit ([`Parser::limit_open_block`]): its lines were
    /// read and thrown away, not kept.
    pub oversized: bool,
}

impl Block {
    /// Whether this block answers a command this client wrote (as opposed to a hook's).
    pub fn is_ours(&self) -> bool {
        self.flags & 1 == 1
    }
}

/// What one line of control-mode output means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A reply block began. Sent so that a connection knows which command tmux has started.
    Begin {
        /// The server-wide command number tmux gave the block.
        number: u64,
        /// 1 for commands this client wrote, 0 for the attach and hook-run commands.
        flags: u32,
    },
    /// A reply block ended.
    Block(Block),
    /// Pane output, decoded to the bytes the program wrote.
    Output {
        /// The pane (`%N`) the output is from.
        pane: PaneId,
        /// Milliseconds the data waited in tmux (only with `pause-after`; 0 otherwise).
        age_ms: u64,
        /// The bytes, octal escapes decoded.
        data: Vec<u8>,
    },
    /// tmux discarded this pane's pending output and stopped sending it (`pause-after`).
    Pause(PaneId),
    /// Output for the pane resumed.
    Continue(PaneId),
    /// The client is now attached to this session.
    SessionChanged {
        /// The session's id (`$N`).
        session: SessionId,
        /// The session's name, raw.
        name: Vec<u8>,
    },
    /// The client is going away; nothing follows but EOF.
    Exit {
        /// The reason tmux gave, raw; `None` when it gave none.
        reason: Option<Vec<u8>>,
    },
    /// Any other notification, e.g. `window-close` with args `@3`.
    Notification {
        /// The notification's name, without its `%` (`window-close`).
        name: String,
        /// The rest of the line after the name, raw (empty when none).
        args: Vec<u8>,
    },
    /// A line outside any block that is not a notification.
    Stray(Vec<u8>),
}

/// Longest body a reply to one of our commands may have unless a smaller limit is set for it:
/// beyond it the body is dropped and the block marked oversized, so a misbehaving server cannot
/// grow memory without limit.
pub const MAX_BLOCK_BYTES: usize = 64 * 1024 * 1024;

/// Longest line accepted outside a reply block. tmux writes a pane's output in pieces of a few
/// KiB (a byte is at most four when escaped) and its notifications are short, so a longer line
/// is not tmux's: whoever can write into the client's pipe (a tenant's pane can, through its own
/// server's `/proc/<pid>/fd`) must not make the reader keep it.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// Body kept of a block that answers no command of ours (the attach's, a hook's): such a body
/// is never read, only kept in step with.
const UNCLAIMED_BLOCK_BYTES: usize = 64 * 1024;

/// Room always left for a block's terminator line, however full its body.
const TERMINATOR_BYTES: usize = 256;

/// Incremental parser state: whether a block is open, and its body so far.
#[derive(Debug, Default)]
pub struct Parser {
    open: Option<OpenBlock>,
}

#[derive(Debug)]
struct OpenBlock {
    number: u64,
    flags: u32,
    body: Vec<Vec<u8>>,
    bytes: usize,
    limit: usize,
    oversized: bool,
}

impl Parser {
    /// A parser with no block open.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a reply block is open (its terminator not seen yet).
    pub fn in_block(&self) -> bool {
        self.open.is_some()
    }

    /// How long the next line may be: what the open block may still keep (and room for its
    /// terminator), or [`MAX_LINE_BYTES`] outside a block. A longer line is not fed whole:
    /// inside a block, report it with [`Parser::cut_line`]; outside, it is not tmux's.
    pub fn line_limit(&self) -> usize {
        match &self.open {
            Some(open) => open.limit.saturating_sub(open.bytes).max(TERMINATOR_BYTES),
            None => MAX_LINE_BYTES,
        }
    }

    /// A body line of the open block was longer than [`Parser::line_limit`] and was read and
    /// thrown away: the block is oversized.
    pub fn cut_line(&mut self) {
        if let Some(open) = &mut self.open {
            open.oversized = true;
            open.body = Vec::new();
        }
    }

    /// Caps the body of the open block at `limit` bytes: a longer body is read to its end and
    /// thrown away (the block is then `oversized`), so the connection stays in step.
    pub fn limit_open_block(&mut self, limit: usize) {
        if let Some(open) = &mut self.open {
            open.limit = limit.min(MAX_BLOCK_BYTES);
        }
    }

    /// Parses one line (without its `\n`). Returns `None` for body lines of an open block.
    pub fn feed(&mut self, line: &[u8]) -> Option<Event> {
        if let Some(open) = &mut self.open {
            if let Some((ok, number, _flags)) = parse_guard(line, b"%end", b"%error")
                && number == open.number
            {
                let open = self.open.take()?;
                return Some(Event::Block(Block {
                    number: open.number,
                    flags: open.flags,
                    ok,
                    body: open.body,
                    oversized: open.oversized,
                }));
            }
            if open.oversized {
                return None;
            }
            open.bytes = open.bytes.saturating_add(line.len());
            if open.bytes > open.limit {
                open.oversized = true;
                open.body = Vec::new();
            } else {
                open.body.push(line.to_vec());
            }
            return None;
        }
        Some(self.feed_outside_block(line))
    }

    fn feed_outside_block(&mut self, line: &[u8]) -> Event {
        if let Some((_, number, flags)) = parse_guard(line, b"%begin", b"%begin") {
            self.open = Some(OpenBlock {
                number,
                flags,
                body: Vec::new(),
                bytes: 0,
                limit: UNCLAIMED_BLOCK_BYTES,
                oversized: false,
            });
            return Event::Begin { number, flags };
        }
        let Some(rest) = line.strip_prefix(b"%") else {
            return Event::Stray(line.to_vec());
        };
        let (name, args) = split_word(rest);
        match name {
            b"output" => parse_output(args).unwrap_or_else(|| stray(line)),
            b"extended-output" => parse_extended_output(args).unwrap_or_else(|| stray(line)),
            b"pause" => PaneId::from_bytes(args).map_or_else(|| stray(line), Event::Pause),
            b"continue" => PaneId::from_bytes(args).map_or_else(|| stray(line), Event::Continue),
            b"session-changed" => {
                let (id, name) = split_word(args);
                match SessionId::from_bytes(id) {
                    Some(session) => Event::SessionChanged {
                        session,
                        name: name.to_vec(),
                    },
                    None => stray(line),
                }
            }
            // A guard line that did not parse, or a terminator outside any block.
            b"begin" | b"end" | b"error" => stray(line),
            b"exit" => Event::Exit {
                reason: (!args.is_empty()).then(|| args.to_vec()),
            },
            _ if !name.is_empty() && name.iter().all(|b| b.is_ascii_lowercase() || *b == b'-') => {
                Event::Notification {
                    // Checked ASCII above, so this conversion is lossless.
                    name: String::from_utf8_lossy(name).into_owned(),
                    args: args.to_vec(),
                }
            }
            _ => stray(line),
        }
    }
}

fn stray(line: &[u8]) -> Event {
    Event::Stray(line.to_vec())
}

/// Parses `<tag> <time> <number> <flags>` where tag is `a` or `b`; returns (tag == a, number, flags).
fn parse_guard(line: &[u8], a: &[u8], b: &[u8]) -> Option<(bool, u64, u32)> {
    let (tag, rest) = split_word(line);
    let is_a = tag == a;
    if !is_a && tag != b {
        return None;
    }
    let mut fields = rest.split(|&c| c == b' ');
    let _time = parse_u64(fields.next()?)?;
    let number = parse_u64(fields.next()?)?;
    let flags = parse_decimal(fields.next()?)?;
    if fields.next().is_some() {
        return None;
    }
    Some((is_a, number, flags))
}

fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &d| {
        acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

/// Splits at the first space: (`word`, `rest`); `rest` is empty when there is no space.
fn split_word(line: &[u8]) -> (&[u8], &[u8]) {
    match memchr::memchr(b' ', line) {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => (line, &[]),
    }
}

fn parse_output(args: &[u8]) -> Option<Event> {
    let (pane, data) = split_word(args);
    Some(Event::Output {
        pane: PaneId::from_bytes(pane)?,
        age_ms: 0,
        data: decode_output(data),
    })
}

fn parse_extended_output(args: &[u8]) -> Option<Event> {
    // `%<pane> <age> [reserved…] : <data>`; the data starts after the first " : ".
    let (pane, rest) = split_word(args);
    let (age, _) = split_word(rest);
    let sep = memchr::memmem::find(rest, b" : ")?;
    Some(Event::Output {
        pane: PaneId::from_bytes(pane)?,
        age_ms: parse_u64(age)?,
        data: decode_output(&rest[sep + 3..]),
    })
}

/// A `%subscription-changed` notification (`refresh-client -B`), from its args:
/// `<name> $<session> @<window> <index> %<pane> : <value>`; window and pane fields are `-`
/// for session-level subscriptions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionChange<'a> {
    /// The subscription's name, raw.
    pub name: &'a [u8],
    /// The pane (`%N`); `None` when the field is not a pane id (`-` for session-level ones).
    pub pane: Option<PaneId>,
    /// What the subscribed format expanded to, raw: everything after ` : `.
    pub value: &'a [u8],
}

impl<'a> SubscriptionChange<'a> {
    /// Reads the notification's args; `None` when a field or the ` : ` separator is missing.
    pub fn parse(args: &'a [u8]) -> Option<Self> {
        let sep = memchr::memmem::find(args, b" : ")?;
        let mut fields = args[..sep].split(|&b| b == b' ');
        let name = fields.next()?;
        let _session = fields.next()?;
        let _window = fields.next()?;
        let _index = fields.next()?;
        let pane = fields.next()?;
        Some(Self {
            name,
            pane: PaneId::from_bytes(pane),
            value: &args[sep + 3..],
        })
    }
}

/// Decodes the octal escapes tmux applies to `%output` data (`\ooo` for bytes below 0x20 and
/// for `\`). A backslash not followed by three octal digits is kept as is.
pub fn decode_output(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    decode_output_into(data, &mut out);
    out
}

/// [`decode_output`] into an existing buffer (the hot path of a flood: no allocation).
pub fn decode_output_into(mut data: &[u8], out: &mut Vec<u8>) {
    while let Some(i) = memchr::memchr(b'\\', data) {
        out.extend_from_slice(&data[..i]);
        match data.get(i + 1..i + 4) {
            Some(&[a, b, c]) if is_octal(a) && is_octal(b) && is_octal(c) => {
                let value =
                    (u32::from(a - b'0') << 6) | (u32::from(b - b'0') << 3) | u32::from(c - b'0');
                // Three octal digits can reach 0o777; tmux only writes values below 0o400.
                out.push(u8::try_from(value).unwrap_or(b'?'));
                data = &data[i + 4..];
            }
            _ => {
                out.push(b'\\');
                data = &data[i + 1..];
            }
        }
    }
    out.extend_from_slice(data);
}

fn is_octal(b: u8) -> bool {
    (b'0'..=b'7').contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(lines: &[&[u8]]) -> Vec<Event> {
        let mut parser = Parser::new();
        lines.iter().filter_map(|l| parser.feed(l)).collect()
    }

    /// Recorded from tmux 3.3a: the attach handshake, two replies, a hook block and an exit.
    #[test]
    fn parses_a_recorded_session() {
        let events = feed_all(&[
            b"%begin 1795330213 330 0",
            b"%end 1795330213 330 0",
            b"%session-changed $0 one",
            b"%begin 1795330213 334 1",
            b"muxgate-test 8842 $0",
            b"%end 1795330213 334 1",
            b"%begin 1795330213 336 1",
            b"parse error: unknown command: nosuch",
            b"%error 1795330213 336 1",
            b"%sessions-changed",
            b"%exit",
        ]);
        assert_eq!(
            events,
            vec![
                Event::Begin {
                    number: 330,
                    flags: 0
                },
                Event::Block(Block {
                    number: 330,
                    flags: 0,
                    ok: true,
                    body: vec![],
                    oversized: false
                }),
                Event::SessionChanged {
                    session: SessionId(0),
                    name: b"one".to_vec()
                },
                Event::Begin {
                    number: 334,
                    flags: 1
                },
                Event::Block(Block {
                    number: 334,
                    flags: 1,
                    ok: true,
                    body: vec![b"muxgate-test 8842 $0".to_vec()],
                    oversized: false,
                }),
                Event::Begin {
                    number: 336,
                    flags: 1
                },
                Event::Block(Block {
                    number: 336,
                    flags: 1,
                    ok: false,
                    body: vec![b"parse error: unknown command: nosuch".to_vec()],
                    oversized: false,
                }),
                Event::Notification {
                    name: "sessions-changed".into(),
                    args: vec![]
                },
                Event::Exit { reason: None },
            ]
        );
    }

    #[test]
    fn a_body_over_its_limit_is_read_to_its_end_and_dropped() {
        let mut parser = Parser::new();
        assert_eq!(
            parser.feed(b"%begin 1 7 1"),
            Some(Event::Begin {
                number: 7,
                flags: 1
            })
        );
        parser.limit_open_block(10);
        for line in [&b"12345"[..], b"67890", b"x", b"%end 1 8 1", b"more"] {
            assert_eq!(parser.feed(line), None);
        }
        let Some(Event::Block(block)) = parser.feed(b"%end 1 7 1") else {
            panic!("the block ends at its own terminator");
        };
        assert!(block.oversized && block.body.is_empty());
        // The next block is read in step, with the default limit again.
        parser.feed(b"%begin 1 9 1");
        parser.feed(b"fine");
        let Some(Event::Block(next)) = parser.feed(b"%end 1 9 1") else {
            panic!("the next block");
        };
        assert_eq!((next.oversized, next.body), (false, vec![b"fine".to_vec()]));
    }

    #[test]
    fn a_terminator_with_another_number_is_body() {
        let events = feed_all(&[
            b"%begin 1 7 1",
            b"%end 1 2 1",
            b"%error 1 8 1",
            b"%output %1 not a notification inside a block",
            b"%end 1 7 1",
        ]);
        let Event::Block(block) = &events[1] else {
            panic!("{events:?}")
        };
        assert_eq!(block.body.len(), 3);
        assert_eq!(block.body[0], b"%end 1 2 1");
        assert!(block.ok);
    }

    #[test]
    fn decodes_output_escapes_and_keeps_raw_bytes() {
        let events = feed_all(&[
            b"%output %3 a\\015\\012b\\134c\\033[0m",
            b"%output %4 \xff\xfe raw \x7f",
            b"%output %5 bad\\9\\12x\\",
        ]);
        assert_eq!(
            events,
            vec![
                Event::Output {
                    pane: PaneId(3),
                    age_ms: 0,
                    data: b"a\r\nb\\c\x1b[0m".to_vec()
                },
                Event::Output {
                    pane: PaneId(4),
                    age_ms: 0,
                    data: b"\xff\xfe raw \x7f".to_vec()
                },
                Event::Output {
                    pane: PaneId(5),
                    age_ms: 0,
                    data: b"bad\\9\\12x\\".to_vec()
                },
            ]
        );
    }

    #[test]
    fn parses_flow_control_notifications() {
        let events = feed_all(&[
            b"%extended-output %2 1500 : x : y\\012",
            b"%pause %2",
            b"%continue %2",
            b"%exit server exited unexpectedly",
        ]);
        assert_eq!(
            events,
            vec![
                Event::Output {
                    pane: PaneId(2),
                    age_ms: 1500,
                    data: b"x : y\n".to_vec()
                },
                Event::Pause(PaneId(2)),
                Event::Continue(PaneId(2)),
                Event::Exit {
                    reason: Some(b"server exited unexpectedly".to_vec())
                },
            ]
        );
    }

    #[test]
    fn tolerates_stray_and_malformed_lines() {
        let events = feed_all(&[
            b"hello from run-shell",
            b"%output nopane data",
            b"%begin x 1 1",
            b"%pause",
            b"%",
            b"",
            b"%window-close @4",
        ]);
        assert!(matches!(events[0], Event::Stray(_)));
        assert!(matches!(events[1], Event::Stray(_)));
        assert!(matches!(events[2], Event::Stray(_)));
        assert!(matches!(events[3], Event::Stray(_)));
        assert!(matches!(events[4], Event::Stray(_)));
        assert!(matches!(events[5], Event::Stray(_)));
        assert_eq!(
            events[6],
            Event::Notification {
                name: "window-close".into(),
                args: b"@4".to_vec()
            }
        );
    }

    #[test]
    fn parses_subscription_changes() {
        let change = SubscriptionChange::parse(b"muxgate_dead $0 @0 0 %1 : 1:3").unwrap();
        assert_eq!(change.name, b"muxgate_dead");
        assert_eq!(change.pane, Some(PaneId(1)));
        assert_eq!(change.value, b"1:3");
        let session_level = SubscriptionChange::parse(b"s $0 - - - : x : y").unwrap();
        assert_eq!(session_level.pane, None);
        assert_eq!(session_level.value, b"x : y");
        assert_eq!(SubscriptionChange::parse(b"broken"), None);
    }

    #[test]
    fn hook_blocks_are_not_ours() {
        let events = feed_all(&[b"%begin 1 5 0", b"%end 1 5 0"]);
        let Event::Block(block) = &events[1] else {
            panic!()
        };
        assert!(!block.is_ours());
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        fn escape(data: &[u8]) -> Vec<u8> {
            let mut out = Vec::new();
            for &b in data {
                if b < b' ' || b == b'\\' {
                    out.extend_from_slice(format!("\\{b:03o}").as_bytes());
                } else {
                    out.push(b);
                }
            }
            out
        }

        proptest! {
            #[test]
            fn never_panics_on_arbitrary_lines(lines in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..64)) {
                let mut parser = Parser::new();
                for line in &lines {
                    let _ = parser.feed(line);
                }
            }

            #[test]
            fn output_round_trips(data in prop::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..512)) {
                let mut line = b"%output %9 ".to_vec();
                line.extend(escape(&data));
                let event = Parser::new().feed(&line);
                prop_assert_eq!(event, Some(Event::Output { pane: PaneId(9), age_ms: 0, data }));
            }

            #[test]
            fn blocks_keep_any_body(body in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..20), number in 0u64..1_000_000) {
                let mut parser = Parser::new();
                prop_assert_eq!(parser.feed(format!("%begin 1 {number} 1").as_bytes()), Some(Event::Begin { number, flags: 1 }));
                for line in &body {
                    // A body line that happens to be this block's own terminator would end it:
                    // tmux never writes that (the number is unique), so skip it here too.
                    let own_end = parse_guard(line, b"%end", b"%error").is_some_and(|(_, n, _)| n == number);
                    prop_assume!(!own_end);
                    prop_assert_eq!(parser.feed(line), None);
                }
                let end = parser.feed(format!("%end 1 {number} 1").as_bytes());
                prop_assert_eq!(end, Some(Event::Block(Block { number, flags: 1, ok: true, body, oversized: false })));
            }
        }
    }
}
