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
//! terminals, nothing else: see [`super::probe`]), and on a host that runs the gateway's
//! workspaces (`host-gate --workspaces-config FILE`) the workspace requests
//! `'<muxgate>' 'host-workspace' '--config' '…' 'start'|'client' …`, which the gate runs itself
//! with its own FILE, whatever the request names. [`check`] reads exactly that language, so a request
//! that leans on any other shell syntax (`$(…)`, `;`, a glob, a redirection) is refused rather
//! than interpreted. What tmux itself can do is not narrowed here: the key can do what the
//! host's user can do through tmux, so that user should own only what agents may reach.

use muxgate_tmux::client::spawn::is_term_marker;

/// What the gate lets through on this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy<'a> {
    /// tmux as the gateway names it (`[hosts.<name>] tmux`).
    pub tmux: &'a str,
    /// The host runs the gateway's workspaces (`host-gate --workspaces-config`): its key runs
    /// workspace requests and the probe only, never tmux itself (the key of a workspace host
    /// is root's, and tmux would run anything as root).
    pub workspaces: bool,
}

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
    /// Start a workspace's sandbox (`<muxgate> host-workspace --config F start NAME`).
    WorkspaceStart {
        /// The workspace's name.
        name: String,
    },
    /// A workspace's jailed tmux client (`… client NAME -- ARGS`).
    WorkspaceClient {
        /// `TERM=…` for tmux, when the request set one.
        term: Option<String>,
        /// The workspace's name.
        name: String,
        /// tmux's arguments.
        args: Vec<String>,
    },
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
    /// Another program, or a request of muxgate's this host does not take.
    #[error("this key only runs {allowed}, not {program:?}")]
    NotAllowed {
        /// What the gate allows.
        allowed: String,
        /// What was asked for.
        program: String,
    },
    /// A `TERM` that is not a muxgate client's marker.
    #[error("TERM must be muxgate-<number>")]
    BadTerm,
}

/// Reads `request` and allows it when `policy` lets it through: tmux (on a host without
/// workspaces), workspace requests (on a host with them), and the probe.
pub fn check(request: Option<&str>, policy: Policy<'_>) -> Result<Allowed, Refusal> {
    let words = words(request.ok_or(Refusal::NoCommand)?)?;
    let (term, rest) = match words.split_first() {
        Some((env, rest)) if env == "env" => {
            let Some((assignment, rest)) = rest.split_first() else {
                return Err(Refusal::Unreadable("env without a command"));
            };
            let term = assignment
                .strip_prefix("TERM=")
                .filter(|value| is_term_marker(value))
                .ok_or(Refusal::BadTerm)?;
            (Some(term.to_owned()), rest)
        }
        _ => (None, &words[..]),
    };
    let Some((program, args)) = rest.split_first() else {
        return Err(Refusal::NoCommand);
    };
    let is_muxgate = std::path::Path::new(program).file_name() == Some("muxgate".as_ref());
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match (words.as_slice(), policy.workspaces) {
        _ if program == policy.tmux && !policy.workspaces => Ok(Allowed::Tmux {
            term,
            args: args.to_vec(),
        }),
        // `muxgate doctor` asks every host's tmux for its version; that much runs anywhere.
        (["-V"], true) if program == policy.tmux && term.is_none() => Ok(Allowed::Tmux {
            term,
            args: args.to_vec(),
        }),
        (["host-probe"], _) if is_muxgate && term.is_none() => Ok(Allowed::Probe),
        (["host-workspace", "--config", _, "start", name], true)
            if is_muxgate && term.is_none() =>
        {
            Ok(Allowed::WorkspaceStart {
                name: (*name).to_owned(),
            })
        }
        (
            [
                "host-workspace",
                "--config",
                _,
                "client",
                name,
                "--",
                tmux_args @ ..,
            ],
            true,
        ) if is_muxgate => Ok(Allowed::WorkspaceClient {
            term,
            name: (*name).to_owned(),
            args: tmux_args.iter().map(|arg| (*arg).to_owned()).collect(),
        }),
        _ => Err(Refusal::NotAllowed {
            allowed: if policy.workspaces {
                "muxgate's workspace requests".to_owned()
            } else {
                policy.tmux.to_owned()
            },
            program: program.chars().take(64).collect(),
        }),
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

    const TMUX: Policy<'static> = Policy {
        tmux: "tmux",
        workspaces: false,
    };
    const WORKSPACES: Policy<'static> = Policy {
        tmux: "tmux",
        workspaces: true,
    };

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
        let line = command_line(
            &["/usr/bin/tmux".into()],
            "muxgate-42",
            args.iter().map(OsStr::new),
        );
        let allowed = check(
            Some(&line),
            Policy {
                tmux: "/usr/bin/tmux",
                workspaces: false,
            },
        )
        .expect("allowed");
        assert_eq!(
            allowed,
            Allowed::Tmux {
                term: Some("muxgate-42".into()),
                args: args.map(str::to_owned).to_vec()
            }
        );
        assert_eq!(
            check(Some("'tmux' -V"), TMUX),
            Ok(Allowed::Tmux {
                term: None,
                args: vec!["-V".to_owned()]
            })
        );
        for probe in ["'muxgate' host-probe", "'/opt/bin/muxgate' host-probe"] {
            assert_eq!(check(Some(probe), TMUX), Ok(Allowed::Probe), "{probe}");
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
            let error = check(Some(line), TMUX).expect_err(line).to_string();
            assert!(error.contains(refusal), "{line}: {error}");
        }
        assert_eq!(check(None, TMUX), Err(Refusal::NoCommand));
    }

    #[test]
    fn a_workspace_hosts_key_runs_workspace_requests_and_the_probe_only() {
        let client = command_line(
            &[
                "muxgate".into(),
                "host-workspace".into(),
                "--config".into(),
                "/etc/muxgate/host.toml".into(),
                "client".into(),
                "alice".into(),
                "--".into(),
            ],
            "muxgate-9",
            ["-u", "-S", "/run/muxgate/tmux.sock", "-C", "attach"]
                .iter()
                .map(OsStr::new),
        );
        assert_eq!(
            check(Some(&client), WORKSPACES),
            Ok(Allowed::WorkspaceClient {
                term: Some("muxgate-9".into()),
                name: "alice".into(),
                args: ["-u", "-S", "/run/muxgate/tmux.sock", "-C", "attach"]
                    .map(str::to_owned)
                    .to_vec(),
            })
        );
        assert_eq!(
            check(
                Some("'/usr/local/bin/muxgate' 'host-workspace' '--config' '/x' 'start' 'bob'"),
                WORKSPACES
            ),
            Ok(Allowed::WorkspaceStart { name: "bob".into() })
        );
        assert_eq!(
            check(Some("'muxgate' host-probe"), WORKSPACES),
            Ok(Allowed::Probe)
        );
        assert!(matches!(
            check(Some("'tmux' -V"), WORKSPACES),
            Ok(Allowed::Tmux { .. })
        ));
        for line in [
            "tmux ls",
            "tmux -V ls",
            "env 'TERM=muxgate-1' tmux -V",
            "muxgate host-workspace --config /x delete bob",
            "muxgate host-workspace --config /x client bob ls",
            "muxgate host-workspace start bob",
            "muxgate serve",
        ] {
            let error = check(Some(line), WORKSPACES).expect_err(line).to_string();
            assert!(
                error.contains("only runs muxgate's workspace requests"),
                "{line}: {error}"
            );
        }
        // And a host without workspaces takes none.
        let error = check(Some(&client), TMUX)
            .expect_err("no workspaces")
            .to_string();
        assert!(error.contains("only runs tmux"), "{error}");
    }
}
