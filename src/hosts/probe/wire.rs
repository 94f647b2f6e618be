//! The host probe's language: one question per line from the gateway, one JSON line back.
//!
//! ```text
//! foreground <server_pid> <pane_pid> <tty>   →  {"group":…,"pid":…,…} or null
//! modes <tty>                                →  {"echo":…,"canonical":…} or null
//! ```
//!
//! `null` means the host cannot tell, exactly as a local read that finds nothing. A terminal is
//! named only as a path under `/dev/` of letters, digits and `/`, so a question can make the
//! probe open nothing but a terminal device. An answer's command line is cut to
//! [`COMMAND_LINE_CHARS`]: a process on the host chooses its own, and the gateway bounds what
//! it reads of an answer ([`ANSWER_BYTES`]).

use muxgate_mux::foreground::Foreground;
use muxgate_mux::tty_modes::TermModes;

/// The longest question line, in bytes (newline included).
pub(crate) const QUESTION_BYTES: usize = 256;
/// The longest answer line the gateway reads, in bytes (newline included).
pub(crate) const ANSWER_BYTES: usize = 64 * 1024;
/// The most characters of a command line an answer carries.
pub(crate) const COMMAND_LINE_CHARS: usize = 4096;

/// A question to the host probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Question {
    /// The foreground process of terminal `tty`, whose session leader `pane_pid` is a child of
    /// the tmux server `server_pid`.
    Foreground {
        server_pid: u32,
        pane_pid: u32,
        tty: String,
    },
    /// The input modes of terminal `tty`.
    Modes { tty: String },
}

impl Question {
    /// The question as its line, without the newline; `None` when `tty` is not a terminal's
    /// path the probe would open.
    pub(crate) fn line(&self) -> Option<String> {
        match self {
            Self::Foreground {
                server_pid,
                pane_pid,
                tty,
            } => is_terminal_path(tty).then(|| format!("foreground {server_pid} {pane_pid} {tty}")),
            Self::Modes { tty } => is_terminal_path(tty).then(|| format!("modes {tty}")),
        }
    }

    /// The question a line asks; `None` for anything else.
    pub(crate) fn parse(line: &str) -> Option<Self> {
        let words: Vec<&str> = line.split(' ').collect();
        let question = match words[..] {
            ["foreground", server_pid, pane_pid, tty] => Self::Foreground {
                server_pid: server_pid.parse().ok()?,
                pane_pid: pane_pid.parse().ok()?,
                tty: tty.to_owned(),
            },
            ["modes", tty] => Self::Modes {
                tty: tty.to_owned(),
            },
            _ => return None,
        };
        let tty = match &question {
            Self::Foreground { tty, .. } | Self::Modes { tty } => tty,
        };
        is_terminal_path(tty).then_some(question)
    }
}

/// Whether `path` names a terminal device as tmux reports one (`/dev/pts/3`, `/dev/ttys003`):
/// under `/dev/`, of ASCII letters, digits and `/`, with no empty or parent component.
pub(crate) fn is_terminal_path(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/dev/") else {
        return false;
    };
    path.len() < 64
        && !rest.is_empty()
        && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'/')
        && rest.split('/').all(|part| !part.is_empty())
}

/// The answer line to a foreground question, without the newline.
pub(crate) fn foreground_answer(foreground: Option<Foreground>) -> String {
    let foreground = foreground.map(|mut found| {
        if found.command_line.chars().count() > COMMAND_LINE_CHARS {
            found.command_line = found
                .command_line
                .chars()
                .take(COMMAND_LINE_CHARS)
                .collect();
        }
        found
    });
    serde_json::to_string(&foreground).unwrap_or_else(|_| "null".to_owned())
}

/// The answer line to a modes question, without the newline.
pub(crate) fn modes_answer(modes: Option<TermModes>) -> String {
    serde_json::to_string(&modes).unwrap_or_else(|_| "null".to_owned())
}

/// What an answer line says; `None` for `null` or a line that is not an answer of that kind.
pub(crate) fn read_answer<T: serde::de::DeserializeOwned>(line: &[u8]) -> Option<T> {
    serde_json::from_slice::<Option<T>>(line).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use muxgate_mux::foreground::Blocked;

    #[test]
    fn questions_round_trip_through_their_lines() {
        for question in [
            Question::Foreground {
                server_pid: 7,
                pane_pid: 4_000_000,
                tty: "/dev/pts/12".into(),
            },
            Question::Modes {
                tty: "/dev/ttys003".into(),
            },
        ] {
            let line = question.line().expect("a terminal");
            assert!(line.len() < QUESTION_BYTES);
            assert_eq!(Question::parse(&line), Some(question));
        }
    }

    #[test]
    fn only_terminal_paths_are_asked_about() {
        for tty in [
            "/etc/shadow",
            "/dev/../etc/shadow",
            "/dev/pts//1",
            "/dev/",
            "/dev/pts/1 x",
            "dev/pts/1",
            "/dev/pts/1\n",
            "/dev/pts/\u{e9}",
        ] {
            assert!(!is_terminal_path(tty), "{tty:?}");
            assert_eq!(Question::Modes { tty: tty.into() }.line(), None);
            assert_eq!(Question::parse(&format!("modes {tty}")), None, "{tty:?}");
        }
        for line in [
            "",
            "modes",
            "foreground 1 2",
            "foreground -1 2 /dev/pts/1",
            "foreground 1 2 /dev/pts/1 extra",
            "modes  /dev/pts/1",
            "shell /dev/pts/1",
        ] {
            assert_eq!(Question::parse(line), None, "{line:?}");
        }
    }

    #[test]
    fn answers_are_one_line_and_cut_to_size() {
        let found = Foreground {
            group: 10,
            pid: 11,
            is_pane_program: false,
            pane_program: "bash".into(),
            command_line: format!("evil\nline {}", "x".repeat(3 * COMMAND_LINE_CHARS)),
            blocked: Blocked::ReadingTerminal,
        };
        let line = foreground_answer(Some(found.clone()));
        assert!(!line.contains('\n'));
        assert!(line.len() < ANSWER_BYTES);
        let read: Foreground = read_answer(line.as_bytes()).expect("an answer");
        assert_eq!(read.command_line.chars().count(), COMMAND_LINE_CHARS);
        assert_eq!(
            (read.pid, read.blocked, read.pane_program.as_str()),
            (11, Blocked::ReadingTerminal, "bash")
        );
        assert_eq!(foreground_answer(None), "null");
        assert_eq!(read_answer::<Foreground>(b"null"), None);
        assert_eq!(read_answer::<Foreground>(b"{\"echo\":true}"), None);
        let modes = TermModes {
            echo: false,
            canonical: true,
        };
        assert_eq!(
            read_answer::<TermModes>(modes_answer(Some(modes)).as_bytes()),
            Some(modes)
        );
    }
}
