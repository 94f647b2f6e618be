//! tmux servers on another machine. Their client processes run there, each started by one
//! local program that runs one shell command line on the machine over its link (`ssh` through
//! the host's connection: a channel on a connection already open, never a new one).
//!
//! The engine knows a host only as a [`RemoteHost`]: the link's program and arguments, the
//! host's tmux, and a [`LinkStatus`] it asks before it starts anything there. A link that is
//! down refuses at once, with the reason and when the next attempt comes ([`LinkDown`]), so
//! calls to a host that is gone end at once instead of hanging on a connect.
//!
//! The remote command line is built from argv words, each quoted ([`shell_word`]) so that the
//! remote user's login shell reads it back unchanged, whether it is a POSIX shell (sh, bash,
//! dash, zsh, ksh) or fish: nothing an argument holds is special to either.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Another machine whose tmux servers the engine drives.
#[derive(Debug)]
pub struct RemoteHost {
    /// The host's name in the gateway's configuration.
    pub name: Arc<str>,
    /// The local program that runs one command line on the host over the link (`ssh`).
    pub program: PathBuf,
    /// Its arguments, before the command line (which follows a `--`).
    pub args: Vec<OsString>,
    /// The words that run tmux on the host: its tmux (a name its `PATH` finds, or a path
    /// there), or a program that runs tmux for the gateway (a workspace's jail) and its
    /// arguments before tmux's.
    pub tmux: Vec<String>,
    /// Whether the link is up now.
    pub link: Arc<dyn LinkStatus>,
    /// The host's processes and terminals, read there and asked over the link.
    pub processes: Arc<dyn muxgate_mux::host::Host>,
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

/// The one shell command line that runs `tmux_args` with the host's tmux (the words `tmux`),
/// marked `term` (the `TERM` that names this gateway's clients): every word quoted by
/// [`shell_word`]. An argument that is not UTF-8 is passed as its lossy text (arguments come
/// from the configuration and from JSON).
pub fn command_line<'a>(
    tmux: &[String],
    term: &str,
    tmux_args: impl IntoIterator<Item = &'a OsStr>,
) -> String {
    let mut line = format!("env {}", shell_word(&format!("TERM={term}")));
    for word in tmux {
        line.push(' ');
        line.push_str(&shell_word(word));
    }
    for arg in tmux_args {
        line.push(' ');
        line.push_str(&shell_word(&arg.to_string_lossy()));
    }
    line
}

/// `text` as one word that POSIX shells and fish read back alike: runs of it in single quotes,
/// and every `'` and `\` outside them, as `\'` and `\\`. (Inside single quotes fish reads
/// `\'` and `\\` as escapes and POSIX shells do not, so neither may appear there; outside,
/// both read a backslash as quoting the next character.)
pub fn shell_word(text: &str) -> String {
    let mut word = String::with_capacity(text.len() + 2);
    let mut quoted = false;
    for c in text.chars() {
        if c == '\'' || c == '\\' {
            if quoted {
                word.push('\'');
                quoted = false;
            }
            word.push('\\');
            word.push(c);
        } else {
            if !quoted {
                word.push('\'');
                quoted = true;
            }
            word.push(c);
        }
    }
    if quoted {
        word.push('\'');
    }
    if word.is_empty() {
        word.push_str("''");
    }
    word
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
        let hostile = [
            "-L",
            "x; rm -rf ~",
            "$(id)",
            "it's",
            "`true`",
            "a\nb",
            "--",
            "x\\",
            "\\'; id #",
            "",
        ];
        let line = command_line(
            &["tmux".into()],
            "muxgate-7",
            hostile.iter().map(OsStr::new),
        );
        let mut expected = vec!["env", "TERM=muxgate-7", "tmux"];
        expected.extend(hostile);
        assert_eq!(words(&line), expected);
        assert!(
            line.starts_with("env 'TERM=muxgate-7' 'tmux' '-L'"),
            "{line}"
        );
    }

    /// What `shell` makes of `line`'s words after `printf`: one per line.
    fn read_back(shell: &str, words: &[&str]) -> Option<Vec<String>> {
        let quoted: Vec<String> = words.iter().map(|w| shell_word(w)).collect();
        let output = std::process::Command::new(shell)
            .arg("-c")
            .arg(format!("printf '%s\\0' {}", quoted.join(" ")))
            .output()
            .ok()?;
        assert!(output.status.success(), "{shell}: {output:?}");
        let text = String::from_utf8(output.stdout).expect("UTF-8");
        Some(text.split_terminator('\0').map(str::to_owned).collect())
    }

    #[test]
    fn posix_shells_and_fish_read_every_word_back_unchanged() {
        let hostile = [
            "plain",
            "it's",
            "x\\",
            "\\'; id #",
            "a\\\\b",
            "'",
            "\\",
            "$HOME",
            "a b",
            "",
        ];
        let read = read_back("sh", &hostile).expect("sh runs");
        assert_eq!(read, hostile);
        // fish reads `\\` and `\'` inside single quotes as escapes: the words keep both out.
        match read_back("fish", &hostile) {
            Some(read) => assert_eq!(read, hostile),
            None => assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "fish is required under CI (apt-get install fish)"
            ),
        }
    }
}
