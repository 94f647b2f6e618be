//! `pipe-pane` to a file: the shell command tmux runs, quoted for both the shell and tmux.
//!
//! tmux runs a pipe-pane command with `sh -c` after expanding it twice: first `strftime`
//! (`%Y`, `%%`), then formats (`#{…}`, `##`, `#(…)`). A path is therefore single-quoted for the
//! shell (`'` written as `'\''`), then every `%` is doubled and every `#` doubled, so that after
//! both expansions the shell receives exactly `cat >> '<path>'`. Measured on tmux 3.3a: a path
//! with spaces, quotes, `#{…}`, `%Y` and `$HOME` is written literally.
//!
//! Pure: builds commands; runs nothing.

use crate::wire::command::TmuxCommand;
use crate::wire::ids::PaneId;
use crate::wire::quote::QuoteError;

/// Longest path accepted (tmux expands the command into an 8 KiB buffer).
pub const MAX_PIPE_PATH_LEN: usize = 1024;

/// An absolute file path output may be appended to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipePath(String);

impl PipePath {
    /// `path` if it is absolute, names no directory (no trailing `/`), holds no control
    /// character and is at most [`MAX_PIPE_PATH_LEN`] bytes.
    pub fn parse(path: &str) -> Result<Self, PipePathError> {
        if !path.starts_with('/') {
            return Err(PipePathError::NotAbsolute);
        }
        if path.len() > MAX_PIPE_PATH_LEN {
            return Err(PipePathError::TooLong);
        }
        if path.chars().any(char::is_control) {
            return Err(PipePathError::ControlCharacter);
        }
        if path.ends_with('/') {
            return Err(PipePathError::Directory);
        }
        Ok(Self(path.to_owned()))
    }

    /// The path, as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a pipe path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PipePathError {
    /// The path does not start with `/`.
    #[error("output_path must be an absolute path (starting with /)")]
    NotAbsolute,
    /// The path is longer than [`MAX_PIPE_PATH_LEN`] bytes.
    #[error("output_path is longer than {MAX_PIPE_PATH_LEN} bytes")]
    TooLong,
    /// The path holds a control character.
    #[error("output_path must not contain control characters (newlines, tabs, escapes)")]
    ControlCharacter,
    /// The path ends with `/`.
    #[error("output_path names a directory; name a file")]
    Directory,
}

/// `text` as one single-quoted POSIX shell word.
pub fn shell_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// Escapes text for an argument tmux expands with `strftime` and then as a format.
fn escape_time_and_format(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '%' => out.push_str("%%"),
            '#' => out.push_str("##"),
            c => out.push(c),
        }
    }
    out
}

/// The shell command that appends a pane's output to `path`, before tmux's escaping.
pub fn append_command(path: &PipePath) -> String {
    format!("cat >> {}", shell_quote(path.as_str()))
}

/// `pipe-pane` for `pane`: start appending its output to `path` (replacing any pipe the pane
/// had), or with `None` stop piping.
pub(crate) fn pipe_pane_command(
    pane: PaneId,
    path: Option<&PipePath>,
) -> Result<TmuxCommand, QuoteError> {
    let command = TmuxCommand::new("pipe-pane").target(pane);
    match path {
        Some(path) => command
            .end_of_options()
            .arg(escape_time_and_format(&append_command(path)))
            .build(),
        None => command.build(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_be_plain_absolute_files() {
        assert!(PipePath::parse("/tmp/out.log").is_ok());
        assert!(PipePath::parse("/tmp/a b/#{x} %Y $HOME 'q'\"").is_ok());
        assert_eq!(PipePath::parse("out.log"), Err(PipePathError::NotAbsolute));
        assert_eq!(PipePath::parse("~/x"), Err(PipePathError::NotAbsolute));
        assert_eq!(
            PipePath::parse("/tmp/a\nb"),
            Err(PipePathError::ControlCharacter)
        );
        assert_eq!(PipePath::parse("/tmp/"), Err(PipePathError::Directory));
        let long = format!("/{}", "a".repeat(MAX_PIPE_PATH_LEN));
        assert_eq!(PipePath::parse(&long), Err(PipePathError::TooLong));
    }

    #[test]
    fn quotes_for_the_shell_then_for_tmux() {
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        let path = PipePath::parse("/tmp/a b/it's #{pane_id} 100%").unwrap();
        assert_eq!(
            append_command(&path),
            r"cat >> '/tmp/a b/it'\''s #{pane_id} 100%'"
        );
        assert_eq!(
            escape_time_and_format(&append_command(&path)),
            r"cat >> '/tmp/a b/it'\''s ##{pane_id} 100%%'"
        );
        let command = pipe_pane_command(PaneId(2), Some(&path)).unwrap();
        assert!(
            command
                .as_bytes()
                .starts_with(b"pipe-pane -t '%2' -- 'cat >> '")
        );
        let stop = pipe_pane_command(PaneId(2), None).unwrap();
        assert_eq!(stop.as_bytes(), b"pipe-pane -t '%2'");
    }
}
