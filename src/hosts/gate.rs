//! `muxgate host-gate`: the forced command of the gateway's key on a host (`authorized_keys`:
//! `restrict,command="muxgate host-gate"`). sshd runs it instead of whatever the connection
//! asked for, with the request in `SSH_ORIGINAL_COMMAND`; it runs that request only when it is
//! one the gateway makes (tmux, as the link starts it, or the host probe), directly and without
//! a shell, and refuses anything else: a shell, another program, a word it cannot read.
//!
//! The gateway's requests are the lines [`muxgate_tmux::client::remote::command_line`] writes:
//! `env 'TERM=muxgate-<pid>' '<tmux>' '<arg>'…`, every word single-quoted (`'\''` for a quote,
//! `'\\'` for a backslash), `muxgate doctor`'s `'<tmux>' -V`, and the host probe's
//! `'<muxgate>' host-probe`, which the gate runs in its own process (it reads `/proc` and
//! terminals, nothing else: see [`super::probe`]). [`check`] reads exactly that language, so a request
//! that leans on any other shell syntax (`$(…)`, `;`, a glob, a redirection) is refused rather
//! than interpreted. What tmux itself can do is not narrowed here: the key can do what the
//! host's user can do through tmux, so that user should own only what agents may reach.

/// A request the gate lets through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowed {
    /// The host's tmux, with these arguments and `TERM`.
    Tmux {
        /// `TERM=…` for tmux, when the request set one.
        term: Option<String>,
        /// tmux's arguments.
        args: Vec<String>,
    },
    /// The host probe (`<muxgate> host-probe`), which the gate runs itself: it is muxgate.
    Probe,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// sshd passed no request: an interactive login.
    #[error("this key only runs tmux for muxgate; no shell")]
    NoCommand,
    /// A word the gate does not read (shell syntax beyond single quotes).
    #[error("the request is not a plain command line: {0}")]
    Unreadable(&'static str),
    /// Another program than the host's tmux.
    #[error("this key only runs {tmux}, not {program:?}")]
    NotTmux {
        /// The tmux the gate allows.
        tmux: String,
        /// What was asked for.
        program: String,
    },
    /// A `TERM` that is not a muxgate client's marker.
    #[error("TERM must be muxgate-<number>")]
    BadTerm,
}

/// Reads `request` and allows it when it runs `tmux`, or muxgate's host probe.
pub fn check(request: Option<&str>, tmux: &str) -> Result<Allowed, Refusal> {
    let words = words(request.ok_or(Refusal::NoCommand)?)?;
    let (term, rest) = match words.split_first() {
        Some((env, rest)) if env == "env" => {
            let Some((assignment, rest)) = rest.split_first() else {
                return Err(Refusal::Unreadable("env without a command"));
            };
            let term = assignment
                .strip_prefix("TERM=")
                .filter(|value| {
                    value.strip_prefix("muxgate-").is_some_and(|pid| {
                        !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())
                    })
                })
                .ok_or(Refusal::BadTerm)?;
            (Some(term.to_owned()), rest)
        }
        _ => (None, &words[..]),
    };
    match rest.split_first() {
        Some((program, args)) if program == tmux => Ok(Allowed::Tmux {
            term,
            args: args.to_vec(),
        }),
        Some((program, [probe]))
            if term.is_none()
                && probe == "host-probe"
                && std::path::Path::new(program).file_name() == Some("muxgate".as_ref()) =>
        {
            Ok(Allowed::Probe)
        }
        Some((program, _)) => Err(Refusal::NotTmux {
            tmux: tmux.to_owned(),
            program: program.chars().take(64).collect(),
        }),
        None => Err(Refusal::NoCommand),
    }
}

/// The words of `line`: separated by spaces; each a run of plain characters, single-quoted
/// parts, and `\'` or `\\` outside quotes (what [`shell_word`] writes for `'` and `\`).
///
/// [`shell_word`]: muxgate_tmux::client::remote::shell_word
fn words(line: &str) -> Result<Vec<String>, Refusal> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        // Read differently by POSIX shells and fish: never written so.
                        Some('\\') => return Err(Refusal::Unreadable("a backslash inside quotes")),
                        Some(c) => word.push(c),
                        None => return Err(Refusal::Unreadable("an unterminated quote")),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c @ ('\'' | '\\')) => {
                    in_word = true;
                    word.push(c);
                }
                _ => return Err(Refusal::Unreadable("a backslash before other than ' or \\")),
            },
            c if c.is_ascii_alphanumeric() || "_-./=:,@%+".contains(c) => {
                in_word = true;
                word.push(c);
            }
            _ => return Err(Refusal::Unreadable("shell syntax outside quotes")),
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::*;
    use muxgate_tmux::client::remote::command_line;

    #[test]
    fn every_line_the_gateway_writes_is_let_through_unchanged() {
        let args = [
            "-u",
            "-L",
            "ci",
            "-C",
            "new-session",
            "--",
            "it's $(x); `y`",
            "a  b",
            "",
        ];
        let line = command_line("/usr/bin/tmux", "muxgate-42", args.iter().map(OsStr::new));
        let allowed = check(Some(&line), "/usr/bin/tmux").expect("allowed");
        assert_eq!(
            allowed,
            Allowed::Tmux {
                term: Some("muxgate-42".into()),
                args: args.map(str::to_owned).to_vec()
            }
        );
        assert_eq!(
            check(Some("'tmux' -V"), "tmux"),
            Ok(Allowed::Tmux {
                term: None,
                args: vec!["-V".to_owned()]
            })
        );
        for probe in ["'muxgate' host-probe", "'/opt/bin/muxgate' host-probe"] {
            assert_eq!(check(Some(probe), "tmux"), Ok(Allowed::Probe), "{probe}");
        }
    }

    #[test]
    fn anything_else_is_refused() {
        for (line, refusal) in [
            ("sh -c id", "not \"sh\""),
            ("'tmux2' ls", "not \"tmux2\""),
            ("tmux ls; id", "shell syntax"),
            ("tmux $(id)", "shell syntax"),
            ("tmux `id`", "shell syntax"),
            ("tmux ls > /tmp/x", "shell syntax"),
            ("tmux 'ls", "unterminated"),
            ("tmux \\x", "backslash"),
            ("tmux '\\'", "backslash inside"),
            ("env TERM=xterm tmux ls", "TERM must be"),
            ("env TERM=muxgate-1x tmux ls", "TERM must be"),
            ("env 'TERM=muxgate-1' sh", "not \"sh\""),
            ("env", "env without"),
            ("muxgate host-gate", "not \"muxgate\""),
            ("muxgate host-probe x", "not \"muxgate\""),
            ("/bin/sh host-probe", "not \"/bin/sh\""),
            ("env 'TERM=muxgate-1' muxgate host-probe", "not \"muxgate\""),
            ("", "no shell"),
        ] {
            let error = check(Some(line), "tmux").expect_err(line).to_string();
            assert!(error.contains(refusal), "{line}: {error}");
        }
        assert_eq!(check(None, "tmux"), Err(Refusal::NoCommand));
    }
}
