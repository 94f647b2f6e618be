//! A grammar for the tmux formats clients may have tmux expand.
//!
//! tmux expands client text as a format in several places: `display_message`'s format, and option
//! values (status-left, window-status-format, …) that tmux expands later, on every status
//! redraw. Formats are a small language, and much of it is unsafe for a caller who may only see
//! some sessions of a shared server:
//!
//! - `#(cmd)` runs a shell command, and `E:` / `T:` expand a value again as a format, so an
//!   option's value can smuggle in anything;
//! - `s/…/…/`, `m/r` and `C/r` go through glibc's regex, which backtracks exponentially: one
//!   expression pins the server at 100% CPU for ever;
//! - `p`/`=` widths are unbounded (`#{p200000000:pane_id}` allocates hundreds of MB);
//! - `S:`, `W:`, `P:` loop over every session, window or pane, `N:` answers whether a session or
//!   window of a given name exists, and `C:` searches a pane's contents;
//! - some variables describe the whole server (`socket_path`, `pid`, `client_*`, `server_*`,
//!   session groups, linked sessions), and tmux looks names it does not know up in the server's
//!   environment.
//!
//! [`check_format`] is therefore an allow-list: a pure parser that follows tmux 3.3a's own
//! (`format_expand1`, `format_skip`, `format_build_modifiers`, `format_replace` in format.c), and
//! accepts only the subset below. Anything else is refused with an error that names the construct
//! and its byte offset. Where later tmux versions read the same text differently, the grammar
//! refuses the text (noted below), so an upgrade of tmux does not open a hole.
//!
//! # Accepted
//!
//! - Text: any characters. `##` is a `#`, `#,` a `,`, `#}` a `}`; `#[…]` styles are text to tmux
//!   (their content is checked like any text, as tmux expands it); `#` before any other
//!   character is copied as is, except the aliases `#D #F #H #I #P #S #T #W #h` (pane id, window
//!   flags, host, window index, pane index, session name, pane title, window name, short host).
//! - `#{VARIABLE}`, where VARIABLE is an allowed variable (see below).
//! - `#{TEXT}` without a modifier list whose TEXT holds a nested `#{…}`: tmux expands TEXT as
//!   text (`#{#{pane_id}}` is `%1`), and it is checked as text.
//! - `#{?COND,A,B}`: COND is a variable name or text with nested expressions; both branches are
//!   required (tmux 3.3a stops expanding the whole format at `#{?COND,A}`: write `#{?COND,A,}`),
//!   and a third top-level comma is refused (tmux 3.4+ reads it as another condition).
//! - `#{MODIFIERS:BODY}` with `;`-separated modifiers:
//!   - comparisons `==`, `!=`, `<`, `>`, `<=`, `>=`, `||`, `&&`: BODY is `A,B`, two texts;
//!   - `m` and `m/i` (glob match, `A` is the fnmatch pattern): the pattern must be plain text
//!     (no nested expression or alias, which could bring a pattern in from a pane title) with at
//!     most [`MAX_MATCH_STARS`] `*`;
//!   - `e|OP|`, `e|OP|f|`, `e|OP|f|N|` arithmetic (OP one of `+ - * / m %% == != < > <= >=`,
//!     `m` being the modulus, N decimal places, at most [`MAX_PRECISION`]): BODY is `A,B`;
//!   - `l` (literal), `a` (character from a number), `c` (colour to RGB): BODY is text;
//!   - `b`, `d` (basename, dirname), `q`, `q/h`, `q/e` (quoting), `t`, `t/p`, `t/f/FORMAT/`
//!     (times), `n` (length), `w` (width), `=N`, `=-N`, `=/N/MARKER/` (trim), `pN`, `p-N`
//!     (pad), with |N| at most [`MAX_WIDTH`].
//!
//!   Each modifier at most once, and at most one of the modifiers that decide how BODY is read
//!   (`l a c m e` and the comparisons). Modifier arguments are literal: tmux expands them as
//!   formats, and tmux 3.4+ first turns `##` into `#` there, so they may hold no `#` except the
//!   `#:` escape (for `:` in a time format).
//!
//! # Variables
//!
//! Names made of `[A-Za-z0-9_@-]`, and one of:
//! - user options, `@name`;
//! - names starting `pane_`, `window_`, `session_`, `cursor_`, `scroll_`, `history_`,
//!   `alternate_`, `copy_`, `search_`, `selection_` or `mouse_` (lowercase);
//! - `host`, `host_short`, `version`, `start_time`, `line`, `active_window_index`,
//!   `last_window_index`, `insert_flag`, `keypad_cursor_flag`, `keypad_flag`, `origin_flag`,
//!   `wrap_flag`, `rectangle_toggle`;
//! - option-shaped names, `[a-z][a-z0-9]*(-[a-z0-9]+)*` (`status`, `mode-keys`, …): tmux formats
//!   read options by name, and option values are readable through `show_option` anyway. Unknown
//!   names of this shape expand to nothing, or to a server environment variable of that exact
//!   (lowercase, underscore-free) name, which `show_environment` shows anyway.
//!
//! except: `socket_path`, `pid`, `uid`, `user`, `config_files`, `next_session_id`,
//! `pane_marked_set`, `session_attached_list`, and anything starting `client_`, `server_`,
//! `session_group`, `window_linked`, `window_active_clients`, `window_active_sessions`, `hook_`
//! or `buffer_`: they disclose paths and pids of the server, clients, other sessions, or data
//! shared by every session. Uppercase and other underscore names are refused: tmux would look
//! them up in the server's environment.
//!
//! # Refused
//!
//! `#(`, anywhere, even as `##(` (a later `E:` or another tool could expand the `#(` it leaves);
//! the modifiers `s`, `m/r`, `C`, `N`, `E`, `T`, `S`, `W`, `P` and any other (`L`, `R`, `!`, …);
//! a `#` that ends the text (tmux 3.3a reads past the end of the string there: write `##`); a
//! modifier list not closed by `:`; unbalanced `#{`; more than [`MAX_FORMAT_BYTES`] bytes,
//! [`MAX_DEPTH`] levels of nesting or [`MAX_EXPRESSIONS`] expressions; NUL bytes.
//!
//! # strftime
//!
//! display-message and status lines pass the whole format through strftime(3) *before* tmux
//! parses it, and a conversion's output lands in the parsed text (`%T` is `12:34:56`, `%p` is
//! empty in many locales). So conversions (`%H`, `%d`, …) are allowed only outside `#{…}`, never
//! right after a `#` (`#%p(id)` would become `#(id)`), and without flags or widths (`%-H`,
//! `%10H`); inside `#{…}`, `%` must be written `%%` (as tmux's manual asks for time formats:
//! `#{t/f/%%H#:%%M:window_activity}`).
//!
//! The checker never panics, allocates at most a few small vectors per expression, and recurses
//! at most [`MAX_DEPTH`] levels (a few stack frames per level); its work is linear in the length
//! times the depth.

/// The longest format accepted, in bytes.
pub const MAX_FORMAT_BYTES: usize = 1024;

/// How deep `#{…}` may nest.
pub const MAX_DEPTH: usize = 8;

/// How many `#{…}` expressions and `#S`-style aliases one format may hold. Without loops, each is
/// expanded at most once, so this bounds the work of one expansion.
pub const MAX_EXPRESSIONS: usize = 64;

/// The largest `=` trim or `p` pad width. With [`MAX_EXPRESSIONS`], this bounds what padding can
/// add to an expansion (64 × 1000 bytes).
pub const MAX_WIDTH: u32 = 1000;

/// The most decimal places an `e|OP|f|N|` result may ask for: tmux prints it with `%.*f`, so an
/// unbounded N allocates without limit.
pub const MAX_PRECISION: u32 = 100;

/// The most `*` in an `m` pattern. glibc 2.36's fnmatch stayed linear on every adversarial
/// pattern tried, but other fnmatch implementations backtrack once per `*`.
pub const MAX_MATCH_STARS: usize = 4;

/// How much of a name or argument an error message quotes.
const SHOWN_CHARS: usize = 40;

/// Why a format is refused. Every message names the construct and the byte offset (from 0) where
/// it starts in the checked text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// The format is longer than [`MAX_FORMAT_BYTES`].
    #[error("the format is {len} bytes long; at most {max} are allowed")]
    TooLong {
        /// The format's length, in bytes.
        len: usize,
        /// The most bytes allowed ([`MAX_FORMAT_BYTES`]).
        max: usize,
    },
    /// A NUL byte.
    #[error(
        "the NUL byte at byte {offset} is not allowed: tmux would stop reading the format there"
    )]
    Nul {
        /// Byte offset of the first NUL.
        offset: usize,
    },
    /// `#(`, a shell command (refused even as `##(`).
    #[error(
        "`#(` at byte {offset} is not allowed: tmux runs the text up to `)` as a shell command (refused even as `##(`, whose output `#(` a later expansion would run)"
    )]
    ShellCommand {
        /// Byte offset of the `#(`.
        offset: usize,
    },
    /// A `%` right after a `#`, which strftime could turn into `#(` or `#{`.
    #[error(
        "the `%` at byte {offset} follows a `#`: tmux passes the format through strftime before parsing it, which could turn `#%…` into `#(` or `#{{`"
    )]
    PercentAfterHash {
        /// Byte offset of the `%`.
        offset: usize,
    },
    /// A strftime conversion with flags or a width (`%-H`, `%10H`).
    #[error(
        "the `%` at byte {offset} starts a strftime conversion with flags or a width, which tmux expands before parsing the format; write `%%` for a literal `%`"
    )]
    StrftimeFlags {
        /// Byte offset of the `%`.
        offset: usize,
    },
    /// A `%` other than `%%` inside `#{…}`.
    #[error(
        "the `%` at byte {offset} is inside `#{{…}}`: tmux passes the format through strftime before parsing it, and a conversion's output (`12:34`) would change the expression; write `%%` there (`%%H` in a `t/f/…/` time format)"
    )]
    StrftimeInExpression {
        /// Byte offset of the `%`.
        offset: usize,
    },
    /// A `#` that ends the format.
    #[error(
        "the `#` at byte {offset} ends the format: tmux 3.3a reads past the end of the string there; write `##` for a literal `#`"
    )]
    TrailingHash {
        /// Byte offset of the `#`.
        offset: usize,
    },
    /// A `#{` without its matching `}`.
    #[error("the `#{{` at byte {offset} is never closed by a matching `}}`")]
    Unbalanced {
        /// Byte offset of the `#{`.
        offset: usize,
    },
    /// `#{…}` nested more than [`MAX_DEPTH`] levels deep.
    #[error("the `#{{` at byte {offset} is nested more than {max} levels deep")]
    TooDeep {
        /// Byte offset of the first `#{` one level too deep.
        offset: usize,
        /// The most levels allowed ([`MAX_DEPTH`]).
        max: usize,
    },
    /// More than [`MAX_EXPRESSIONS`] expressions and `#S`-style aliases.
    #[error(
        "the expression at byte {offset} is one too many: at most {max} `#{{…}}` expressions and `#S`-style aliases are allowed"
    )]
    TooManyExpressions {
        /// Byte offset of the first expression or alias over the limit.
        offset: usize,
        /// The most allowed ([`MAX_EXPRESSIONS`]).
        max: usize,
    },
    /// A modifier the grammar refuses (`s`, `m/r`, `C`, `N`, `E`, `T`, `S`, `W`, `P`).
    #[error("the `{modifier}` modifier at byte {offset} is not allowed: {reason}")]
    RefusedModifier {
        /// Byte offset of the modifier.
        offset: usize,
        /// The modifier as the message names it (`s/…/`, `C/r`, `m/r`).
        modifier: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A `NAME:` that tmux did not take for a modifier list (`L`, `R`, `!`, …).
    #[error("`{modifier}` at byte {offset} is not a modifier muxgate accepts: {reason}")]
    UnknownModifier {
        /// Byte offset of the expression's content.
        offset: usize,
        /// The name as written (at most 40 characters, control characters escaped).
        modifier: String,
        /// Why it is not accepted, or which modifiers are.
        reason: &'static str,
    },
    /// An accepted modifier with arguments it does not take.
    #[error("the `{modifier}` modifier at byte {offset} {problem}")]
    BadModifier {
        /// Byte offset of the modifier.
        offset: usize,
        /// The modifier's name (`t`, `=`, `e`, …).
        modifier: String,
        /// What is wrong, as the rest of a sentence ("needs a literal whole number").
        problem: &'static str,
    },
    /// A trim or pad width, or an `e` precision, over its limit.
    #[error(
        "the `{modifier}` modifier at byte {offset} asks for {width}; at most {max} is allowed"
    )]
    WidthTooLarge {
        /// Byte offset of the modifier.
        offset: usize,
        /// The modifier's name (`=`, `p`, `e`).
        modifier: String,
        /// The number as written (at most 40 characters).
        width: String,
        /// The largest allowed ([`MAX_WIDTH`] or [`MAX_PRECISION`]).
        max: u32,
    },
    /// Two modifiers that each decide how the body is read (`l a c m e` and the comparisons).
    #[error(
        "the `{modifier}` modifier at byte {offset} cannot be combined with `{first}`: tmux would ignore one of them"
    )]
    ConflictingModifiers {
        /// Byte offset of the second one.
        offset: usize,
        /// The second one's name.
        modifier: String,
        /// The first one's name.
        first: String,
    },
    /// A modifier given twice in one list.
    #[error("the `{modifier}` modifier at byte {offset} is given twice")]
    DuplicateModifier {
        /// Byte offset of its second occurrence.
        offset: usize,
        /// The modifier's name.
        modifier: String,
    },
    /// A modifier list not closed by `:`.
    #[error(
        "the modifier list at byte {offset} is not closed by `:`: tmux would expand its arguments and then read the whole expression as one variable name"
    )]
    UnclosedModifiers {
        /// Byte offset of the list's first modifier.
        offset: usize,
    },
    /// A modifier list that ends with `;`.
    #[error(
        "the modifier list at byte {offset} ends with `;`: tmux 3.3a reads past the end of the expression there"
    )]
    TrailingSemicolon {
        /// Byte offset of the `;`.
        offset: usize,
    },
    /// An `m` pattern with more than [`MAX_MATCH_STARS`] `*`.
    #[error(
        "the pattern of the `m` modifier at byte {offset} has {stars} `*`; at most {max} are allowed, as fnmatch can backtrack on each"
    )]
    TooManyStars {
        /// Byte offset of the `m` modifier.
        offset: usize,
        /// How many `*` the pattern has.
        stars: usize,
        /// The most allowed ([`MAX_MATCH_STARS`]).
        max: usize,
    },
    /// An `m` pattern with a `#` other than the `##`, `#,`, `#}` and `#:` escapes.
    #[error(
        "the pattern of the `m` modifier at byte {offset} must be plain text (only `##`, `#,`, `#}}` and `#:` escapes): an expanded pattern could come from a pane title"
    )]
    PatternNotPlain {
        /// Byte offset of the `m` modifier.
        offset: usize,
    },
    /// A construct of the wrong shape (a conditional's branches, a pair's arguments, a name).
    #[error("the {construct} at byte {offset} {problem}")]
    Syntax {
        /// Byte offset of the construct (the `?`, the modifier, the name).
        offset: usize,
        /// The construct ("conditional `#{?…}`", "comparison", "variable name", …).
        construct: &'static str,
        /// What is wrong, as the rest of a sentence ("is empty").
        problem: &'static str,
    },
    /// A name with characters other than `[A-Za-z0-9_@-]`.
    #[error("`{text}` at byte {offset} is not a variable name (letters, digits, `_`, `-`, `@`)")]
    NotAVariable {
        /// Byte offset of the name.
        offset: usize,
        /// The text as written (at most 40 characters, control characters escaped).
        text: String,
    },
    /// A variable the grammar refuses (`socket_path`, `client_*`, `server_*`, …).
    #[error("the variable `{name}` at byte {offset} is not allowed: {reason}")]
    RefusedVariable {
        /// Byte offset of the name.
        offset: usize,
        /// The variable's name (at most 40 characters).
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A well-formed name outside the allow-list.
    #[error(
        "the variable `{name}` at byte {offset} is not one muxgate allows (pane_*, window_*, session_*, @options, tmux option names, …)"
    )]
    UnknownVariable {
        /// Byte offset of the name.
        offset: usize,
        /// The variable's name (at most 40 characters).
        name: String,
    },
}

/// Checks that tmux may expand `text` as a format: `Ok` only for the grammar in the module docs.
///
/// # Errors
///
/// The first construct, from the left, that the grammar refuses (see [`FormatError`]).
pub fn check_format(text: &str) -> Result<(), FormatError> {
    let s = text.as_bytes();
    if s.len() > MAX_FORMAT_BYTES {
        return Err(FormatError::TooLong {
            len: s.len(),
            max: MAX_FORMAT_BYTES,
        });
    }
    if let Some(offset) = s.iter().position(|&b| b == 0) {
        return Err(FormatError::Nul { offset });
    }
    // Anywhere, whatever the context: `##(` expands to `#(`, and `#{l:…}` copies its body, so
    // text a later expansion would run as a command can come from either.
    if let Some(offset) = s.windows(2).position(|w| w == b"#(") {
        return Err(FormatError::ShellCommand { offset });
    }
    let lone_percents = strftime_conversions(s)?;
    Checker {
        s,
        expressions: 0,
        lone_percents,
    }
    .text(0, s.len(), 0)
}

/// display-message and status lines pass the whole format through strftime(3) before tmux
/// parses it, so a conversion's output (`%T` is `12:34:56`; `%p` is empty in many locales) lands
/// in the text that is parsed. Outside `#{…}`, where `:` `,` `}` are plain text, that is
/// harmless unless a `#` comes right before the `%` (`#%p(id)` would become `#(id)`); inside,
/// an inserted `:` ends a modifier list early and changes what the expression means. So: no `%`
/// right after `#`, no strftime flags or widths (`%-H`, `%10H`, `%#p` span several bytes), and
/// the positions of `%` that are not `%%`, which [`Checker::expression`] refuses inside `#{…}`.
fn strftime_conversions(s: &[u8]) -> Result<Vec<usize>, FormatError> {
    let mut lone = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s.get(i) != Some(&b'%') {
            i += 1;
            continue;
        }
        if i > 0 && s.get(i - 1) == Some(&b'#') {
            return Err(FormatError::PercentAfterHash { offset: i });
        }
        match s.get(i + 1).copied() {
            Some(b'%') => {
                i += 2;
                continue;
            }
            Some(c) if c.is_ascii_digit() || b"_-+0^#".contains(&c) => {
                return Err(FormatError::StrftimeFlags { offset: i });
            }
            _ => {}
        }
        lone.push(i);
        i += 1;
    }
    Ok(lone)
}

/// Modifiers tmux 3.3a reads as one character with no argument (when `;` or `:` follows).
const NO_ARG: &[&str] = &[
    "l", "a", "b", "c", "d", "n", "w", "E", "T", "S", "W", "P", "<", ">",
];
/// Two-character modifiers (when `;` or `:` follows).
const TWO_CHAR: &[&str] = &["||", "&&", "!=", "==", "<=", ">="];
/// Modifiers that may take arguments.
const WITH_ARGS: &[&str] = &["m", "C", "N", "s", "t", "=", "p", "e", "q"];
/// Modifiers that decide how the body is read; tmux silently keeps only one of them.
const BODY_KINDS: &[&str] = &[
    "l", "a", "c", "m", "e", "<", ">", "||", "&&", "!=", "==", "<=", ">=",
];
/// Comparison modifiers: the body is two comma-separated texts.
const COMPARISONS: &[&str] = &["m", "<", ">", "||", "&&", "!=", "==", "<=", ">="];
/// Operators of `e|OP|`. A lone `%` cannot appear inside `#{…}` (see [`strftime_conversions`]):
/// `%%` is the modulus where strftime runs first (display-message, status lines), `m` everywhere.
const OPERATORS: &[&str] = &[
    "+", "-", "*", "/", "%%", "m", "==", "!=", "<", ">", "<=", ">=",
];

/// Single-letter aliases tmux 3.3a (and later) expands: `#S` is `#{session_name}`, …
const ALIASES: &[u8] = b"DFHIPSTWh";

/// Variable prefixes of objects the caller reaches through its own pane, window and session.
const ALLOWED_PREFIXES: &[&str] = &[
    "pane_",
    "window_",
    "session_",
    "cursor_",
    "scroll_",
    "history_",
    "alternate_",
    "copy_",
    "search_",
    "selection_",
    "mouse_",
];

/// Variables outside the prefixes that are harmless.
const ALLOWED_NAMES: &[&str] = &[
    "host",
    "host_short",
    "version",
    "start_time",
    "line",
    "active_window_index",
    "last_window_index",
    "insert_flag",
    "keypad_cursor_flag",
    "keypad_flag",
    "origin_flag",
    "wrap_flag",
    "rectangle_toggle",
];

/// Refused variables, checked before the allow rules: (name, is a prefix, why).
const DENIED: &[(&str, bool, &str)] = &[
    (
        "socket_path",
        false,
        "it is the path of the tmux server's socket",
    ),
    ("pid", false, "it is the tmux server's process id"),
    ("uid", false, "it is the user id the tmux server runs as"),
    ("user", false, "it is the user the tmux server runs as"),
    (
        "config_files",
        false,
        "it lists the configuration files the server loaded",
    ),
    (
        "next_session_id",
        false,
        "it tells how many sessions the server has created",
    ),
    (
        "pane_marked_set",
        false,
        "it tells whether some pane anywhere on the server is marked",
    ),
    (
        "session_attached_list",
        false,
        "it lists the clients attached to the session",
    ),
    (
        "session_group",
        true,
        "session groups include sessions the caller may not see",
    ),
    (
        "window_linked",
        true,
        "it reveals the other sessions a window is linked into",
    ),
    (
        "window_active_clients",
        true,
        "it describes clients of sessions the caller may not see",
    ),
    (
        "window_active_sessions",
        true,
        "it names sessions the caller may not see",
    ),
    (
        "client_",
        true,
        "it describes a tmux client (its tty, pid, user, session), not an object the caller owns",
    ),
    (
        "server_",
        true,
        "it describes the whole server, with sessions the caller may not see",
    ),
    (
        "hook_",
        true,
        "hook variables name the objects of hooks, which callers never run",
    ),
    (
        "buffer_",
        true,
        "paste buffers are shared by every session of the server",
    ),
];

/// One modifier as tmux's `format_build_modifiers` splits it.
struct Modifier {
    /// Offset of its first character.
    at: usize,
    name: &'static str,
    /// Byte ranges of its arguments.
    args: Vec<(usize, usize)>,
}

/// What tmux makes of the start of an expression's content.
enum Modifiers {
    /// A list closed by `:`; the body starts at `body`.
    List { list: Vec<Modifier>, body: usize },
    /// No list: tmux reads the content as a conditional, a variable name or text. `parsed` says
    /// whether tmux had already taken (and expanded the arguments of) some modifiers.
    None { parsed: bool },
}

struct Checker<'a> {
    s: &'a [u8],
    expressions: usize,
    /// Offsets of `%` that strftime may replace (all but `%%`), in order.
    lone_percents: Vec<usize>,
}

/// `format_is_end`.
fn is_end(c: u8) -> bool {
    c == b';' || c == b':'
}

/// `ispunct` in tmux's locale: ASCII punctuation (no byte of a UTF-8 sequence counts).
fn is_punct(c: u8) -> bool {
    c.is_ascii_punctuation()
}

/// Up to [`SHOWN_CHARS`] characters of `bytes`, control characters escaped, for a message.
fn shown(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == SHOWN_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// Looks a modifier name up in a table, to keep a `&'static str` for it.
fn find_name(table: &[&'static str], bytes: &[u8]) -> Option<&'static str> {
    table.iter().copied().find(|n| n.as_bytes() == bytes)
}

/// A decimal number argument (`-` first if `signed`), at most `max` in size.
fn number(m: &Modifier, text: &[u8], signed: bool, max: u32) -> Result<(), FormatError> {
    let digits = match text {
        [b'-', rest @ ..] if signed => rest,
        _ => text,
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(FormatError::BadModifier {
            offset: m.at,
            modifier: m.name.to_owned(),
            problem: "needs a literal whole number",
        });
    }
    let value = digits.iter().fold(0u64, |v, &d| {
        v.saturating_mul(10)
            .saturating_add(u64::from(d.saturating_sub(b'0')))
    });
    if value > u64::from(max) {
        return Err(FormatError::WidthTooLarge {
            offset: m.at,
            modifier: m.name.to_owned(),
            width: shown(text),
            max,
        });
    }
    Ok(())
}

impl Checker<'_> {
    /// The byte at `i` of a tmux string copy that ends at `end` (NUL from there on).
    fn at(&self, i: usize, end: usize) -> u8 {
        if i < end {
            self.s.get(i).copied().unwrap_or(0)
        } else {
            0
        }
    }

    fn bytes(&self, start: usize, end: usize) -> &[u8] {
        self.s.get(start..end).unwrap_or(&[])
    }

    /// tmux's `format_skip` over `[start, end)`: the first byte in `stops` outside nested
    /// `#{…}`, with `#` escaping the next `,#{}:`. As in tmux, only `#{` opens a level but any
    /// bare `}` closes one (the count may go negative, and then nothing stops the scan), and a
    /// level's closing `}` is itself tested as a stop once the count is back to zero. Unlike
    /// tmux 3.3a, a `#` at the very end escapes nothing (3.3a reads past the end of the string
    /// there; every such text is refused anyway).
    fn skip(&self, start: usize, end: usize, stops: &[u8]) -> Option<usize> {
        let mut depth: i64 = 0;
        let mut i = start;
        while i < end {
            let c = self.at(i, end);
            let next = self.at(i + 1, end);
            if c == b'#' && next == b'{' {
                depth += 1;
            }
            if c == b'#' && next != 0 && b",#{}:".contains(&next) {
                i += 2;
                continue;
            }
            if c == b'}' {
                depth -= 1;
            }
            if depth == 0 && stops.contains(&c) {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    fn count(&mut self, offset: usize) -> Result<(), FormatError> {
        self.expressions += 1;
        if self.expressions > MAX_EXPRESSIONS {
            return Err(FormatError::TooManyExpressions {
                offset,
                max: MAX_EXPRESSIONS,
            });
        }
        Ok(())
    }

    /// Text as `format_expand1` reads it, inside `depth` levels of `#{…}`.
    fn text(&mut self, start: usize, end: usize, depth: usize) -> Result<(), FormatError> {
        let mut i = start;
        while i < end {
            if self.at(i, end) != b'#' {
                i += 1;
                continue;
            }
            match self.at(i + 1, end) {
                // Only reachable at the end of the whole format: every inner text ends before a
                // `}` or `,`, which the `#` would have escaped instead.
                0 => return Err(FormatError::TrailingHash { offset: i }),
                b'(' => return Err(FormatError::ShellCommand { offset: i }),
                b'{' => {
                    let close = self
                        .skip(i, end, b"}")
                        .ok_or(FormatError::Unbalanced { offset: i })?;
                    self.expression(i, close, depth + 1)?;
                    i = close + 1;
                }
                c if ALIASES.contains(&c) => {
                    self.count(i)?;
                    i += 2;
                }
                // `##`, `#,`, `#}`, `#:`, `#[` and `#` before anything else are copied (`##` as
                // one `#`, and `##…#[` whole; either way, nothing is expanded).
                _ => i += 2,
            }
        }
        Ok(())
    }

    /// The expression `#{…}` whose `#` is at `hash` and whose closing `}` is at `close`.
    fn expression(&mut self, hash: usize, close: usize, depth: usize) -> Result<(), FormatError> {
        if depth > MAX_DEPTH {
            return Err(FormatError::TooDeep {
                offset: hash,
                max: MAX_DEPTH,
            });
        }
        if let Some(&offset) = self.lone_percents.iter().find(|&&p| p > hash && p < close) {
            return Err(FormatError::StrftimeInExpression { offset });
        }
        self.count(hash)?;
        let (start, end) = (hash + 2, close);
        match self.modifiers(start, end)? {
            Modifiers::List { list, body } => self.modified(&list, body, end, depth),
            Modifiers::None { parsed: true } => {
                Err(FormatError::UnclosedModifiers { offset: start })
            }
            Modifiers::None { parsed: false } => self.bare(start, end, depth),
        }
    }

    /// `format_build_modifiers`, step for step, over the content `[start, end)`.
    // Long on purpose: it follows tmux's `format_build_modifiers` step for step, to be read beside it.
    fn modifiers(&self, start: usize, end: usize) -> Result<Modifiers, FormatError> {
        let mut list = Vec::new();
        let mut cp = start;
        loop {
            let before = cp;
            let c = self.at(cp, end);
            if c == 0 || c == b':' {
                break;
            }
            if c == b';' {
                cp += 1;
                // tmux 3.3a then tests the NUL against its modifier table (strchr finds the
                // table's own terminator) and reads the byte after it.
                if self.at(cp, end) == 0 {
                    return Err(FormatError::TrailingSemicolon { offset: before });
                }
            }
            let c = self.at(cp, end);
            let next = self.at(cp + 1, end);
            if is_end(next)
                && let Some(name) = find_name(NO_ARG, &[c])
            {
                list.push(Modifier {
                    at: cp,
                    name,
                    args: Vec::new(),
                });
                cp += 1;
                continue;
            }
            if is_end(self.at(cp + 2, end))
                && let Some(name) = find_name(TWO_CHAR, &[c, next])
            {
                list.push(Modifier {
                    at: cp,
                    name,
                    args: Vec::new(),
                });
                cp += 2;
                continue;
            }
            let Some(name) = find_name(WITH_ARGS, &[c]) else {
                break;
            };
            let at = cp;
            if is_end(next) {
                list.push(Modifier {
                    at,
                    name,
                    args: Vec::new(),
                });
                cp += 1;
                continue;
            }
            if !is_punct(next) || next == b'-' {
                // One argument, up to the next `:` or `;`.
                let Some(stop) = self.skip(cp + 1, end, b":;") else {
                    break;
                };
                list.push(Modifier {
                    at,
                    name,
                    args: vec![(cp + 1, stop)],
                });
                cp = stop;
                continue;
            }
            // Arguments wrapped in the punctuation character that follows: `s/a/b/`. Each runs
            // to the next wrapper, `;` or `:`; a wrapper followed by `;` or `:` ends them.
            let stops = [next, b';', b':'];
            cp += 1;
            let mut args = Vec::new();
            loop {
                if self.at(cp, end) == next && is_end(self.at(cp + 1, end)) {
                    cp += 1;
                    break;
                }
                let Some(stop) = self.skip(cp + 1, end, &stops) else {
                    break;
                };
                args.push((cp + 1, stop));
                cp = stop;
                if is_end(self.at(cp, end)) {
                    break;
                }
            }
            list.push(Modifier { at, name, args });
            // Every step above moves on; this guards the loop should that ever change.
            if cp <= before {
                break;
            }
        }
        if self.at(cp, end) == b':' {
            Ok(Modifiers::List { list, body: cp + 1 })
        } else {
            Ok(Modifiers::None {
                parsed: !list.is_empty(),
            })
        }
    }

    /// Content without modifiers: a conditional, text holding nested expressions, or a name.
    fn bare(&mut self, start: usize, end: usize, depth: usize) -> Result<(), FormatError> {
        let content = self.bytes(start, end);
        if content.first() == Some(&b'?') {
            return self.conditional(start, end, depth);
        }
        // Something like `X:…` that tmux did not take for a modifier list: tmux 3.3a would read
        // a variable named `X:…`, later versions may know X. Name it rather than guess.
        let head = content
            .iter()
            .position(|&b| b == b'#')
            .map_or(content, |h| content.get(..h).unwrap_or(&[]));
        if let Some(p) = head.iter().position(|&b| b == b':' || b == b';') {
            let name_end = head
                .iter()
                .position(|&b| b == b':' || b == b';' || b == b'/')
                .unwrap_or(p);
            let name = if name_end == 0 {
                head.get(..1).unwrap_or(&[])
            } else {
                head.get(..name_end).unwrap_or(&[])
            };
            return Err(FormatError::UnknownModifier {
                offset: start,
                modifier: shown(name),
                reason: unknown_modifier_reason(name),
            });
        }
        if content.windows(2).any(|w| w == b"#{") {
            // tmux expands content holding `#{` as text.
            return self.text(start, end, depth);
        }
        self.variable(start, end)
    }

    /// An expression with a modifier list closed by `:`; the body is `[body, end)`.
    fn modified(
        &mut self,
        list: &[Modifier],
        body: usize,
        end: usize,
        depth: usize,
    ) -> Result<(), FormatError> {
        let mut kind: Option<&Modifier> = None;
        for (i, m) in list.iter().enumerate() {
            self.modifier(m)?;
            if list.iter().take(i).any(|earlier| earlier.name == m.name) {
                return Err(FormatError::DuplicateModifier {
                    offset: m.at,
                    modifier: m.name.to_owned(),
                });
            }
            if BODY_KINDS.contains(&m.name) {
                if let Some(first) = kind {
                    return Err(FormatError::ConflictingModifiers {
                        offset: m.at,
                        modifier: m.name.to_owned(),
                        first: first.name.to_owned(),
                    });
                }
                kind = Some(m);
            }
        }
        // The order of format_replace: literal, character, colour, comparison, conditional,
        // arithmetic, then a variable (or text holding `#{`).
        match kind {
            Some(m) if m.name == "l" || m.name == "a" || m.name == "c" => {
                // `l` copies its body as is; it is checked anyway, so that the text it leaves
                // holds nothing refused should anything expand it again.
                self.text(body, end, depth)
            }
            Some(m) if COMPARISONS.contains(&m.name) => self.pair(m, body, end, depth),
            _ if self.at(body, end) == b'?' => self.conditional(body, end, depth),
            Some(m) => self.pair(m, body, end, depth),
            None => {
                if self.bytes(body, end).windows(2).any(|w| w == b"#{") {
                    self.text(body, end, depth)
                } else {
                    self.variable(body, end)
                }
            }
        }
    }

    /// Checks one modifier and its arguments.
    // Long on purpose: one arm per tmux modifier, a table to be read against tmux's list.
    fn modifier(&self, m: &Modifier) -> Result<(), FormatError> {
        let arg = |i: usize| -> &[u8] {
            m.args
                .get(i)
                .map_or(&[][..], |&(start, end)| self.bytes(start, end))
        };
        let refused = |modifier: &str, reason: &'static str| FormatError::RefusedModifier {
            offset: m.at,
            modifier: modifier.to_owned(),
            reason,
        };
        let bad = |problem: &'static str| FormatError::BadModifier {
            offset: m.at,
            modifier: m.name.to_owned(),
            problem,
        };
        let n = m.args.len();
        match m.name {
            "s" => Err(refused(
                "s/…/",
                "tmux runs it through a regex that can backtrack for ever",
            )),
            "C" => {
                let regex = arg(0).contains(&b'r');
                Err(refused(
                    if regex { "C/r" } else { "C" },
                    "it searches the pane's contents (with `/r`, through a regex that can backtrack for ever)",
                ))
            }
            "N" => Err(refused(
                if arg(0).contains(&b's') { "N/s" } else { "N" },
                "it tells whether a session or window of a name exists, including ones the caller may not see",
            )),
            "E" => Err(refused(
                "E",
                "it expands the value again as a format, which may hold `#(…)` or any other refused construct",
            )),
            "T" => Err(refused(
                "T",
                "it expands the value again as a format, which may hold `#(…)` or any other refused construct",
            )),
            "S" => Err(refused(
                "S",
                "it loops over every session of the server, including ones the caller may not see",
            )),
            "W" => Err(refused(
                "W",
                "it loops over every window of the session, multiplying the output",
            )),
            "P" => Err(refused(
                "P",
                "it loops over every pane of the window, multiplying the output",
            )),
            "m" => {
                if n > 1 {
                    return Err(bad("takes one argument, its flags (`m/i`)"));
                }
                let flags = arg(0);
                if flags.contains(&b'r') {
                    return Err(refused(
                        "m/r",
                        "tmux runs the pattern through a regex that can backtrack for ever; use the glob forms `m` or `m/i`",
                    ));
                }
                if flags.iter().any(|&b| b != b'i') {
                    return Err(bad("takes only the flag `i` (`m/i`)"));
                }
                Ok(())
            }
            "t" => match (n, arg(0)) {
                (0, _) | (1, b"p") => Ok(()),
                (2, b"f") => self.plain_argument(m, m.args.get(1).copied()),
                _ => Err(bad("takes the forms `t`, `t/p` or `t/f/FORMAT/`")),
            },
            "q" => match (n, arg(0)) {
                (0, _) | (1, b"h" | b"e") => Ok(()),
                _ => Err(bad("takes the forms `q`, `q/h` or `q/e`")),
            },
            "=" => {
                if n == 0 || n > 2 {
                    return Err(bad("takes the forms `=N`, `=-N` or `=/N/MARKER/`"));
                }
                number(m, arg(0), true, MAX_WIDTH)?;
                if n == 2 {
                    self.plain_argument(m, m.args.get(1).copied())?;
                }
                Ok(())
            }
            "p" => {
                if n != 1 {
                    return Err(bad("takes the forms `pN` or `p-N`"));
                }
                number(m, arg(0), true, MAX_WIDTH)
            }
            "e" => {
                if n == 0 || n > 3 {
                    return Err(bad("takes the forms `e|OP|`, `e|OP|f|` or `e|OP|f|N|`"));
                }
                let op = arg(0);
                if !OPERATORS.iter().any(|o| o.as_bytes() == op) {
                    return Err(bad(
                        "needs one of the operators + - * / % %% m == != < > <= >=",
                    ));
                }
                if n >= 2 && !matches!(arg(1), b"" | b"f") {
                    return Err(bad("takes only the flag `f` after its operator"));
                }
                if n == 3 {
                    number(m, arg(2), false, MAX_PRECISION)?;
                }
                Ok(())
            }
            // The rest never carry arguments (tmux reads them only before `;` or `:`).
            _ => Ok(()),
        }
    }

    /// A text argument (a trim marker, a time format): tmux expands it as a format, and 3.4+
    /// first turns `##` into `#` and `#}` into `}` there, which can build expressions this
    /// checker never saw; so no `#` at all except the `#:` escape.
    fn plain_argument(
        &self,
        m: &Modifier,
        range: Option<(usize, usize)>,
    ) -> Result<(), FormatError> {
        let Some((start, end)) = range else {
            return Ok(());
        };
        let mut i = start;
        while i < end {
            if self.at(i, end) == b'#' {
                if self.at(i + 1, end) != b':' {
                    return Err(FormatError::BadModifier {
                        offset: m.at,
                        modifier: m.name.to_owned(),
                        problem: "takes a plain-text argument: `#` may only appear as `#:`",
                    });
                }
                i += 2;
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// A body of two comma-separated texts, for a comparison, `m` or `e`.
    fn pair(
        &mut self,
        m: &Modifier,
        start: usize,
        end: usize,
        depth: usize,
    ) -> Result<(), FormatError> {
        let construct = if m.name == "e" {
            "`e` arithmetic"
        } else if m.name == "m" {
            "`m` match"
        } else {
            "comparison"
        };
        let comma = self.skip(start, end, b",").ok_or(FormatError::Syntax {
            offset: m.at,
            construct,
            problem: "needs two comma-separated arguments",
        })?;
        if self.skip(comma + 1, end, b",").is_some() {
            return Err(FormatError::Syntax {
                offset: m.at,
                construct,
                problem: "has more than two arguments; write a literal comma as `#,`",
            });
        }
        if m.name == "m" {
            self.pattern(m, start, comma)?;
        } else {
            self.text(start, comma, depth)?;
        }
        self.text(comma + 1, end, depth)
    }

    /// The fnmatch pattern of `m`: plain text with few `*`.
    fn pattern(&self, m: &Modifier, start: usize, end: usize) -> Result<(), FormatError> {
        let mut count = 0;
        let mut i = start;
        while i < end {
            match self.at(i, end) {
                b'#' => {
                    if !b"#,}:".contains(&self.at(i + 1, end)) || self.at(i + 1, end) == 0 {
                        return Err(FormatError::PatternNotPlain { offset: m.at });
                    }
                    i += 2;
                }
                b'*' => {
                    count += 1;
                    i += 1;
                }
                _ => i += 1,
            }
        }
        if count > MAX_MATCH_STARS {
            return Err(FormatError::TooManyStars {
                offset: m.at,
                stars: count,
                max: MAX_MATCH_STARS,
            });
        }
        Ok(())
    }

    /// `?COND,A,B` with the `?` at `start`.
    fn conditional(&mut self, start: usize, end: usize, depth: usize) -> Result<(), FormatError> {
        let syntax = |problem| FormatError::Syntax {
            offset: start,
            construct: "conditional `#{?…}`",
            problem,
        };
        let first = self
            .skip(start + 1, end, b",")
            .ok_or(syntax("needs a condition and two branches: `#{?COND,A,B}`"))?;
        let second = self.skip(first + 1, end, b",").ok_or(syntax(
            "has one branch: tmux 3.3a stops expanding the format there; write `#{?COND,A,}`",
        ))?;
        if self.skip(second + 1, end, b",").is_some() {
            return Err(syntax(
                "has a third branch, which tmux 3.4+ reads as another condition; write a literal comma as `#,`",
            ));
        }
        // tmux looks the condition up as a name first, and expands it as text when no such name
        // exists.
        if self.bytes(start + 1, first).contains(&b'#') {
            self.text(start + 1, first, depth)?;
        } else {
            self.variable(start + 1, first)?;
        }
        self.text(first + 1, second, depth)?;
        self.text(second + 1, end, depth)
    }

    /// A variable name at `[start, end)`.
    fn variable(&self, start: usize, end: usize) -> Result<(), FormatError> {
        let name = self.bytes(start, end);
        if name.is_empty() {
            return Err(FormatError::Syntax {
                offset: start,
                construct: "variable name",
                problem: "is empty",
            });
        }
        let name_ok = name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'@');
        // Only ASCII from here on, so this is the whole name.
        let Ok(text) = std::str::from_utf8(name) else {
            return Err(FormatError::NotAVariable {
                offset: start,
                text: shown(name),
            });
        };
        if !name_ok {
            return Err(FormatError::NotAVariable {
                offset: start,
                text: shown(name),
            });
        }
        match variable_policy(text) {
            Ok(()) => Ok(()),
            Err(Some(reason)) => Err(FormatError::RefusedVariable {
                offset: start,
                name: shown(name),
                reason,
            }),
            Err(None) => Err(FormatError::UnknownVariable {
                offset: start,
                name: shown(name),
            }),
        }
    }
}

/// Whether a well-formed name may be read: `Err(Some(why))` for refused names, `Err(None)` for
/// names outside the allow-list.
fn variable_policy(name: &str) -> Result<(), Option<&'static str>> {
    if let Some(option) = name.strip_prefix('@') {
        let ok = !option.is_empty()
            && option
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        return if ok { Ok(()) } else { Err(None) };
    }
    for &(denied, prefix, reason) in DENIED {
        if name == denied || (prefix && name.starts_with(denied)) {
            return Err(Some(reason));
        }
    }
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(Some(
            "tmux variables are lowercase, and tmux looks other names up in the server's environment",
        ));
    }
    if ALLOWED_NAMES.contains(&name) {
        return Ok(());
    }
    for prefix in ALLOWED_PREFIXES {
        if let Some(rest) = name.strip_prefix(prefix) {
            let ok = !rest.is_empty()
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            return if ok { Ok(()) } else { Err(None) };
        }
    }
    if is_option_shaped(name) {
        return Ok(());
    }
    Err(None)
}

/// `[a-z][a-z0-9]*(-[a-z0-9]+)*`: how tmux spells its option names.
fn is_option_shaped(name: &str) -> bool {
    let mut parts = name.split('-');
    let first_ok = parts.next().is_some_and(|first| {
        first.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
            && first
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    });
    first_ok
        && parts.all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// Why an unknown modifier-like prefix is refused.
fn unknown_modifier_reason(name: &[u8]) -> &'static str {
    match name {
        b"L" => "it loops over every client in tmux 3.4+",
        b"R" => "it repeats its argument in tmux 3.6+, multiplying the output",
        b"!" | b"!!" => {
            "tmux 3.3a does not know it, and would read the whole expression as a variable name"
        }
        _ => "allowed are l a b c d n w q t m e = p and the comparisons == != < > <= >= || &&",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn refused(text: &str) -> String {
        match check_format(text) {
            Ok(()) => panic!("{text:?} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn accepts_the_safe_subset() {
        for text in [
            "#{pane_id}",
            "#{session_name}:#{window_index}.#{pane_index}",
            "#{?pane_dead,dead,alive}",
            "#{?#{==:#{pane_current_command},bash},shell,other}",
            "#{=10:pane_title}",
            "#{=/8/…/:pane_title}",
            "#{=/8/...:pane_title}",
            "#{=-5:pane_title}",
            "#{p-20:window_name}",
            "#{p20:window_name}",
            "#{t:session_created}",
            "#{t/p:session_created}",
            "#{t/f/%%H#:%%M:session_created}",
            "%H:%M %d-%b-%y #{session_name} 50% %",
            "#{b:pane_current_path}",
            "#{d:pane_current_path}",
            "#{q:pane_title}",
            "#{q/h:pane_title}",
            "#{n:window_name}#{w:window_name}",
            "#{m:*vim*,#{pane_current_command}}",
            "#{m/i:*VIM*,#{pane_current_command}}",
            "#{m:*a*a*a*a,x}",
            "#{@my-option}",
            "##{not_a_format}",
            "#[fg=red]x#[default]",
            "#{?pane_in_mode,#[fg=white#,bg=red],#[fg=red#,bg=white]}#W",
            "#S:#I",
            "#S #H #h #D #F #P #T #W",
            "text ## with #, escapes #} and #: too",
            "plain text with a # in the middle",
            "unicode: héllo wörld ✓ 日本語 #é",
            "",
            "#{status} #{mode-keys} #{status-left}",
            "#{host} #{host_short} #{version} #{start_time}",
            "#{e|+|:1,2}",
            "#{e|*|f|4:5.5,3}",
            "#{e|%%:7,3}",
            "#{a:98}",
            "#{c:red}",
            "#{l:#{pane_id}}",
            "#{||:#{pane_in_mode},#{alternate_on}}",
            "#{&&:1,#{pane_active}}",
            "#{!=:a,b}#{<:a,b}#{>:a,b}#{<=:a,b}#{>=:a,b}",
            "#{=10;p-10:pane_title}",
            "#{#{pane_id}}",
            "#{?@flag,a,}",
            "#{t:?session_created,yes,no}",
            "a } b , c : d",
        ]
        .iter()
        .filter(|t| !t.is_empty())
        {
            assert_eq!(check_format(text), Ok(()), "{text:?}");
        }
        assert_eq!(check_format(""), Ok(()));
    }

    #[test]
    fn conditional_with_empty_condition_is_refused() {
        // `#{?,a,b}` is harmless but has no variable: refused like an empty name.
        assert!(refused("#{?,a,b}x").contains("variable name at byte 3 is empty"));
    }

    #[test]
    fn refuses_the_measured_attacks() {
        let e = refused("#{l;s/^(a|a)*\\1*$/x/:aaaaaaaaaaaaaaaaaaaaaaaaaaaa}");
        assert_eq!(
            e,
            "the `s/…/` modifier at byte 4 is not allowed: tmux runs it through a regex that can backtrack for ever"
        );
        let e = refused("#{p200000000:pane_id}#{p200000000:pane_id}#{p200000000:pane_id}");
        assert!(
            e.contains("`p` modifier at byte 2 asks for 200000000; at most 1000 is allowed"),
            "{e}"
        );
        assert!(refused("#{N/s:b-1}").contains("`N/s` modifier at byte 2 is not allowed"));
        assert!(refused("#{S:#{session_name} }").contains("`S` modifier at byte 2"));
        assert!(refused("#{W:x}").contains("`W` modifier"));
        assert!(refused("#{P:x}").contains("`P` modifier"));
        assert!(refused("#{C:text}").contains("`C` modifier"));
        assert!(refused("#{C/r:a+}").contains("`C/r` modifier"));
        assert!(refused("#{m/r:^a,b}").contains("`m/r` modifier"));
        assert!(refused("#{m/ri:^a,b}").contains("`m/r` modifier"));
        assert!(refused("#{E:status-left}").contains("`E` modifier"));
        assert!(refused("#{T:x}").contains("`T` modifier"));
    }

    #[test]
    fn refuses_shell_commands() {
        assert!(refused("#(id)").contains("`#(` at byte 0"));
        assert!(refused("x #{pane_id} #(touch /tmp/x)").contains("`#(` at byte 13"));
        assert!(refused("##(id)").contains("`#(` at byte 1"));
        assert!(refused("#{l:#(id)}").contains("`#(`"));
        assert!(refused("#{=/5/#(id)/:pane_id}").contains("`#(`"));
    }

    #[test]
    fn refuses_server_wide_variables() {
        for (text, name) in [
            ("#{socket_path}", "socket_path"),
            ("#{pid}", "pid"),
            ("#{client_pid}", "client_pid"),
            ("#{session_group_list}", "session_group_list"),
            ("#{session_group}", "session_group"),
            (
                "#{window_linked_sessions_list}",
                "window_linked_sessions_list",
            ),
            ("#{window_linked_sessions}", "window_linked_sessions"),
            ("#{server_sessions}", "server_sessions"),
            ("#{config_files}", "config_files"),
            ("#{session_attached_list}", "session_attached_list"),
            (
                "#{window_active_sessions_list}",
                "window_active_sessions_list",
            ),
            ("#{buffer_sample}", "buffer_sample"),
            ("#{uid}", "uid"),
            ("#{user}", "user"),
            ("#{?socket_path,a,b}", "socket_path"),
            ("#{t:client_activity}", "client_activity"),
        ] {
            let e = refused(text);
            assert!(e.contains(&format!("variable `{name}`")), "{text}: {e}");
        }
        assert!(refused("#{HOME}").contains("environment"));
        assert!(refused("#{next_session_id}").contains("next_session_id"));
        assert!(refused("#{http_proxy}").contains("not one muxgate allows"));
        assert!(refused("#{message_text}").contains("not one muxgate allows"));
        assert!(refused("#{pane id}").contains("not a variable name"));
        assert!(refused("#{@}").contains("not one muxgate allows"));
    }

    #[test]
    fn refuses_large_widths() {
        assert!(refused("#{p1001:pane_id}").contains("asks for 1001; at most 1000"));
        assert!(refused("#{=-2000:pane_id}").contains("`=` modifier at byte 2 asks for -2000"));
        assert!(refused("#{=/99999999999999999999999/x/:pane_id}").contains("asks for 9999"));
        assert!(refused("#{=1#{pane_pid}:pane_title}").contains("literal whole number"));
        assert!(refused("#{p 5:pane_id}").contains("literal whole number"));
        assert!(refused("#{e|+|f|200000000:1,2}").contains("asks for 200000000; at most 100 is"));
        assert_eq!(check_format("#{p1000:pane_id}#{=-1000:pane_id}"), Ok(()));
    }

    #[test]
    fn bounds_match_patterns() {
        let e = refused("#{m:*a*a*a*a*a*,x}");
        assert!(
            e.contains("pattern of the `m` modifier at byte 2 has 6 `*`"),
            "{e}"
        );
        assert!(refused("#{m:#{pane_title},x}").contains("must be plain text"));
        assert!(refused("#{m:#T,x}").contains("must be plain text"));
        assert_eq!(check_format("#{m:a##b#,c,x}"), Ok(()));
    }

    #[test]
    fn refuses_malformed_structure() {
        assert!(refused("#{pane_id").contains("`#{` at byte 0 is never closed"));
        assert!(refused("x #{?a,#{b,c}").contains("`#{` at byte 2 is never closed"));
        assert!(refused("abc#").contains("`#` at byte 3 ends the format"));
        assert!(refused("#{?pane_active,yes}").contains("has one branch"));
        assert!(refused("#{?pane_active,a,b,c}").contains("third branch"));
        assert!(refused("#{==:a}").contains("comparison at byte 2 needs two"));
        assert!(refused("#{==:a,b,c}").contains("more than two"));
        assert!(refused("#{b;pane_id}").contains("not closed by `:`"));
        assert!(refused("#{b;}").contains("ends with `;`"));
        assert!(refused("#{!:pane_id}").contains("`!` at byte 2 is not a modifier"));
        assert!(refused("#{!!:pane_id}").contains("`!!` at byte 2"));
        assert!(refused("#{L:x}").contains("every client"));
        assert!(refused("#{R:x,3}").contains("repeats"));
        assert!(refused("#{x:#{pane_id}}").contains("`x` at byte 2 is not a modifier"));
        assert!(refused("#{b:}").contains("is empty"));
        assert!(refused("#{}").contains("is empty"));
        assert!(refused("#{b;b:pane_id}").contains("given twice"));
        assert!(refused("#{l;a:98}").contains("cannot be combined"));
        assert!(refused("#{e:1,2}").contains("`e|OP|`"));
        assert!(refused("#{e|^|:1,2}").contains("operators"));
        assert!(refused("#{t/x:session_created}").contains("`t/p`"));
        assert!(refused("#{q/x:pane_title}").contains("`q/h`"));
        assert!(refused("#{=/5/##{pid#}/:pane_title}").contains("plain-text argument"));
        assert!(refused("#{t/f/#S/:session_created}").contains("plain-text argument"));
        assert!(refused("#{=/5/x#/:pane_title}").contains("plain-text argument"));
        assert!(refused("a\0b").contains("NUL byte at byte 1"));
    }

    #[test]
    fn keeps_strftime_out_of_expressions() {
        // display-message runs strftime first: `%r` would put `08:20:24 PM` inside the modifier
        // list and change where it ends.
        assert!(refused("#{t/f/%H#:%M:session_created}").contains("`%` at byte 6 is inside"));
        assert!(refused("#{t/f/%H#:%rM:session_created}").contains("inside `#{…}`"));
        assert!(refused("#{=/5/%T/:pane_title}").contains("inside"));
        assert!(refused("#{e|%|:7,3}").contains("inside"));
        assert!(refused("#{?pane_active,%H,}").contains("inside"));
        // `%p` is empty in many locales: `#%p(id)` would become `#(id)`.
        assert!(refused("#%p(id)").contains("`%` at byte 1 follows a `#`"));
        assert!(refused("#%p{pid}").contains("follows a `#`"));
        assert!(refused("##%H").contains("follows a `#`"));
        assert!(refused("%-H").contains("flags or a width"));
        assert!(refused("%10H").contains("flags or a width"));
        assert!(refused("%#{pid}").contains("flags or a width"));
        assert_eq!(check_format("%H:%M #{pane_id} %% 100%"), Ok(()));
        assert_eq!(check_format("#{e|%%:7,3} #{e|m|:7,3}"), Ok(()));
    }

    #[test]
    fn bounds_depth_and_count() {
        let nested = |n: usize| format!("{}pane_id{}", "#{".repeat(n), "}".repeat(n));
        assert_eq!(check_format(&nested(8)), Ok(()));
        assert!(refused(&nested(9)).contains("`#{` at byte 16 is nested more than 8"));

        let many = |n: usize| "#{pane_id}".repeat(n);
        assert_eq!(check_format(&many(64)), Ok(()));
        assert!(refused(&many(65)).contains("at byte 640 is one too many"));
        assert!(refused(&"#S".repeat(65)).contains("one too many"));

        assert_eq!(check_format(&"x".repeat(1024)), Ok(()));
        assert_eq!(
            refused(&"x".repeat(1025)),
            "the format is 1025 bytes long; at most 1024 are allowed"
        );
    }

    #[test]
    fn messages_stay_short() {
        let long = format!("#{{{}}}", "Z".repeat(1000));
        assert!(refused(&long).len() < 300);
        let weird = format!("#{{{}:x}}", "\u{1}".repeat(500));
        assert!(refused(&weird).len() < 400);
        // The widest quoted characters: C1 controls, escaped to six bytes each.
        let widest = format!("#{{{}:x}}", "\u{85}".repeat(300));
        assert!(refused(&widest).len() < 600, "{}", refused(&widest));
        let widest = format!("#{{{}}}", "\u{85}".repeat(300));
        assert!(refused(&widest).len() < 600);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn never_panics_on_any_string(text in any::<String>()) {
            let _ = check_format(&text);
        }

        #[test]
        fn never_panics_on_format_alphabet(text in "[#{}:;,?=!/|pl*()\\[\\]a-z_0-9SWPNEmt-]{0,300}") {
            if check_format(&text).is_ok() {
                prop_assert!(!text.contains("#("));
                prop_assert!(text.len() <= MAX_FORMAT_BYTES);
            }
        }

        #[test]
        fn never_panics_on_structured_formats(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("#{".to_owned()),
                    Just("}".to_owned()),
                    Just("#".to_owned()),
                    Just("##".to_owned()),
                    Just("#,".to_owned()),
                    Just(",".to_owned()),
                    Just(":".to_owned()),
                    Just(";".to_owned()),
                    Just("?".to_owned()),
                    Just("/".to_owned()),
                    Just("|".to_owned()),
                    Just("=".to_owned()),
                    Just("p".to_owned()),
                    Just("m".to_owned()),
                    Just("e".to_owned()),
                    Just("t".to_owned()),
                    Just("pane_id".to_owned()),
                    Just("@x".to_owned()),
                    Just("5".to_owned()),
                    Just("-".to_owned()),
                    Just("*".to_owned()),
                    Just("#[".to_owned()),
                    "[a-zA-Z!<>&]".prop_map(|s| s),
                ],
                0..80,
            )
        ) {
            let text: String = parts.concat();
            let result = check_format(&text);
            if let Err(e) = &result {
                prop_assert!(e.to_string().len() < 400);
            } else {
                prop_assert!(!text.contains("#("));
            }
        }
    }
}
