//! Typed tmux command lines.
//!
//! A [`TmuxCommand`] is one complete, safely quoted command (`send-keys -t '%3' -l -- 'ls'`).
//! Command names and flags are `&'static str`, so only text written in this crate can become
//! syntax; every value goes through [`crate::wire::quote::quote_arg`]. Values that tmux expands as a
//! format (`#{…}`) are passed with [`CommandBuilder::format_arg`], which makes every `#` literal.
//!
//! Lines never contain `\n` and are never empty (an empty line would detach the client).

use std::fmt;

use crate::wire::quote::{QuoteError, quote_arg};

/// One command, ready to be written as (part of) a control-mode line.
#[derive(Clone, PartialEq, Eq)]
pub struct TmuxCommand {
    line: Vec<u8>,
}

impl TmuxCommand {
    /// Starts building a command; `name` is a tmux command such as `"send-keys"`. Only this
    /// crate's typed operations build commands: no other crate can write a command line.
    #[allow(clippy::new_ret_no_self)]
    pub(crate) fn new(name: &'static str) -> CommandBuilder {
        debug_assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
        CommandBuilder {
            line: name.as_bytes().to_vec(),
            error: None,
        }
    }

    /// Starts building any command, for tests and benchmarks that drive the engine with raw
    /// command lines (cargo feature `test-util`, which only dev-dependencies enable).
    #[cfg(feature = "test-util")]
    pub fn for_test(name: &'static str) -> CommandBuilder {
        Self::new(name)
    }

    /// The command's bytes, without a trailing newline.
    pub fn as_bytes(&self) -> &[u8] {
        &self.line
    }

    /// The command line as text, for tests that compare command lines.
    #[cfg(test)]
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.line).into_owned()
    }

    /// The command's name (the first word), for metrics and logs.
    pub fn name(&self) -> &str {
        let end = memchr::memchr(b' ', &self.line).unwrap_or(self.line.len());
        // Names come from `&'static str` in `new`, so they are ASCII.
        std::str::from_utf8(&self.line[..end]).unwrap_or("?")
    }
}

/// Joins commands into one line separated by ` ; `. tmux runs them in order and, when one
/// fails, drops the rest of the line without a reply block for them.
pub fn chain_line(commands: &[TmuxCommand]) -> Vec<u8> {
    let mut line = Vec::with_capacity(commands.iter().map(|c| c.line.len() + 3).sum());
    for (i, command) in commands.iter().enumerate() {
        if i > 0 {
            line.extend_from_slice(b" ; ");
        }
        line.extend_from_slice(&command.line);
    }
    line
}

/// Splits `commands` into lines of `lengths` commands each, in order; a length of zero makes no
/// line, and commands beyond the lengths' sum go on one line each.
pub fn chunk_lines<'a>(commands: &'a [TmuxCommand], lengths: &[usize]) -> Vec<&'a [TmuxCommand]> {
    let mut lines = Vec::with_capacity(lengths.len());
    let mut rest = commands;
    for &length in lengths {
        let (line, after) = rest.split_at(length.min(rest.len()));
        if !line.is_empty() {
            lines.push(line);
        }
        rest = after;
    }
    lines.extend(rest.chunks(1));
    lines
}

/// Debug output shows the command name and length only: arguments may be keystrokes or secrets.
impl fmt::Debug for TmuxCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TmuxCommand({}, {} bytes)", self.name(), self.line.len())
    }
}

/// Builder for [`TmuxCommand`]; a quoting error is kept and reported by [`Self::build`].
#[derive(Debug)]
#[must_use]
pub struct CommandBuilder {
    line: Vec<u8>,
    error: Option<QuoteError>,
}

impl CommandBuilder {
    /// A flag written verbatim, e.g. `"-p"` or `"-d"`.
    pub fn flag(mut self, flag: &'static str) -> Self {
        debug_assert!(flag.starts_with('-') && !flag.contains(' '));
        self.line.push(b' ');
        self.line.extend_from_slice(flag.as_bytes());
        self
    }

    /// A flag followed by a quoted value, e.g. `opt("-t", "%3")`.
    pub fn opt(self, flag: &'static str, value: impl AsRef<[u8]>) -> Self {
        self.flag(flag).arg(value)
    }

    /// `-t <target>` for anything that prints as a tmux target (ids print as `%3`, `@1`, `$0`).
    pub fn target(self, target: impl fmt::Display) -> Self {
        self.opt("-t", target.to_string())
    }

    /// `--`: ends option parsing so that a following value starting with `-` stays a value.
    pub fn end_of_options(mut self) -> Self {
        self.line.extend_from_slice(b" --");
        self
    }

    /// `NAME VALUE` for the `set-*` commands, or `-u NAME` (unset) when `value` is `None`;
    /// after `--`, so a name or value starting with `-` stays a value.
    pub fn set_or_unset(self, name: &str, value: Option<&str>) -> Self {
        match value {
            Some(value) => self.end_of_options().arg(name).arg(value),
            None => self.flag("-u").end_of_options().arg(name),
        }
    }

    /// A quoted positional value.
    pub fn arg(mut self, value: impl AsRef<[u8]>) -> Self {
        if self.error.is_none() {
            self.line.push(b' ');
            if let Err(e) = quote_arg(&mut self.line, value.as_ref()) {
                self.error = Some(e);
            }
        }
        self
    }

    /// A quoted value for an argument tmux expands as a format: `#` is doubled so that the
    /// value is taken literally (no `#{…}` expansion, no `#(…)` command execution).
    pub fn format_arg(self, value: impl AsRef<[u8]>) -> Self {
        self.arg(escape_format(value.as_ref()))
    }

    /// A flag followed by a [`Self::format_arg`] value.
    pub fn format_opt(self, flag: &'static str, value: impl AsRef<[u8]>) -> Self {
        self.flag(flag).format_arg(value)
    }

    /// A format string written by this crate (e.g. `"#{pane_id}"`), quoted but not escaped.
    pub fn trusted_format(self, format: &'static str) -> Self {
        self.arg(format)
    }

    /// The command, or the first quoting error (a NUL byte in a value).
    pub fn build(self) -> Result<TmuxCommand, QuoteError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(TmuxCommand { line: self.line }),
        }
    }
}

/// Doubles every `#` so tmux's format expansion yields the text unchanged.
pub fn escape_format(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len());
    for &b in value {
        if b == b'#' {
            out.push(b'#');
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_take_their_lengths_in_order() {
        let commands: Vec<TmuxCommand> = (0..6)
            .map(|i| {
                TmuxCommand::new("select-pane")
                    .opt("-t", format!("%{i}"))
                    .build()
                    .unwrap()
            })
            .collect();
        let shape = |lengths: &[usize]| -> Vec<usize> {
            chunk_lines(&commands, lengths)
                .iter()
                .map(|l| l.len())
                .collect()
        };
        assert_eq!(shape(&[2, 1, 2, 1]), [2, 1, 2, 1]);
        assert_eq!(
            shape(&[2, 0, 3]),
            [2, 3, 1],
            "no empty line; the rest one by one"
        );
        assert_eq!(shape(&[4, 4]), [4, 2], "the last line takes what is left");
        assert_eq!(shape(&[]), [1, 1, 1, 1, 1, 1]);
        let first = chunk_lines(&commands, &[1, 2]);
        assert_eq!(first[1][0].text(), "select-pane -t '%1'");
    }

    use super::*;
    use crate::wire::ids::PaneId;

    #[test]
    fn builds_quoted_lines() {
        let cmd = TmuxCommand::new("send-keys")
            .target(PaneId(3))
            .flag("-l")
            .end_of_options()
            .arg("-n; rm -rf ~ #{x}")
            .build()
            .unwrap();
        assert_eq!(
            cmd.as_bytes(),
            b"send-keys -t '%3' -l -- '-n; rm -rf ~ #{x}'"
        );
        assert_eq!(cmd.name(), "send-keys");
        assert_eq!(format!("{cmd:?}"), "TmuxCommand(send-keys, 43 bytes)");
    }

    #[test]
    fn escapes_formats_and_chains() {
        let a = TmuxCommand::new("display-message")
            .flag("-p")
            .format_arg("#(id) #{pane_id}")
            .build()
            .unwrap();
        let b = TmuxCommand::new("list-sessions")
            .flag("-F")
            .trusted_format("#{session_id}")
            .build()
            .unwrap();
        assert_eq!(
            chain_line(&[a, b]),
            b"display-message -p '##(id) ##{pane_id}' ; list-sessions -F '#{session_id}'".to_vec()
        );
    }

    #[test]
    fn reports_nul() {
        let err = TmuxCommand::new("send-keys")
            .arg("a\0")
            .arg("b")
            .build()
            .unwrap_err();
        assert_eq!(err, QuoteError::Nul { offset: 1 });
    }
}
