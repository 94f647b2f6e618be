//! tmux servers on another machine. Their client processes run there, each started by one
//! local program that runs one shell command line on the machine over its link (`ssh` through
//! the host's connection: a channel on a connection already open, never a new one).
//!
//! The engine knows a host only as a [`RemoteHost`]: the link's program and arguments, the
//! host's tmux, and a [`LinkStatus`] it asks before it starts anything there. A link that is
//! down refuses at once, with the reason and when the next attempt comes ([`LinkDown`]), so
//! calls to a host that is gone end at once instead of hanging on a connect.
//!
//! The remote command line is built from argv words, each POSIX-quoted ([`command_line`]):
//! the remote user's shell reads it, and nothing an argument holds is special to it.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use muxgate_mux::shell_run::posix_quote;

/// Another machine whose tmux servers the engine drives.
#[derive(Debug)]
pub struct RemoteHost {
    /// The host's name in the gateway's configuration.
    pub name: Arc<str>,
    /// The local program that runs one command line on the host over the link (`ssh`).
    pub program: PathBuf,
    /// Its arguments, before the command line (which follows a `--`).
    pub args: Vec<OsString>,
    /// tmux on the host: a name its `PATH` finds, or a path there.
    pub tmux: String,
    /// Whether the link is up now.
    pub link: Arc<dyn LinkStatus>,
}

/// The state of a host's link, as the engine asks it before starting a client there.
pub trait LinkStatus: Send + Sync + fmt::Debug {
    /// `Ok` while the link is up; otherwise why not, and when it is tried again.
    fn check(&self) -> Result<(), LinkDown>;
}

/// A host whose link is down: its clients are not started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the link to host {host} is down: {reason}")]
pub struct LinkDown {
    /// The host's name.
    pub host: Arc<str>,
    /// Why: the link's last error.
    pub reason: String,
    /// When the link is tried again, from now.
    pub retry_after: Duration,
}

/// The one shell command line that runs `tmux_args` with the host's tmux, marked `term` (the
/// `TERM` that names this gateway's clients): every word POSIX-quoted. An argument that is not
/// UTF-8 is passed as its lossy text (arguments come from the configuration and from JSON).
pub fn command_line<'a>(
    tmux: &str,
    term: &str,
    tmux_args: impl IntoIterator<Item = &'a OsStr>,
) -> String {
    let mut line = format!(
        "env {} {}",
        posix_quote(&format!("TERM={term}")),
        posix_quote(tmux)
    );
    for arg in tmux_args {
        line.push(' ');
        line.push_str(&posix_quote(&arg.to_string_lossy()));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words a POSIX shell reads from `line` (single quotes and `'\''` only: what
    /// [`posix_quote`] writes).
    fn words(line: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut word = String::new();
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\'' => quoted = !quoted,
                '\\' if !quoted => word.extend(chars.next()),
                ' ' if !quoted => words.push(std::mem::take(&mut word)),
                c => word.push(c),
            }
        }
        words.push(word);
        words
    }

    #[test]
    fn every_word_reaches_the_host_as_it_was() {
        let hostile = ["-L", "x; rm -rf ~", "$(id)", "it's", "`true`", "a\nb", "--"];
        let line = command_line("tmux", "muxgate-7", hostile.iter().map(OsStr::new));
        let mut expected = vec!["env", "TERM=muxgate-7", "tmux"];
        expected.extend(hostile);
        assert_eq!(words(&line), expected);
        assert!(
            line.starts_with("env 'TERM=muxgate-7' 'tmux' '-L'"),
            "{line}"
        );
    }
}
