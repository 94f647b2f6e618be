//! `muxgate doctor`: checks the host for what the gateway needs and reports what it finds.
//!
//! Checks: tmux is installed (and its version); every configured server is running or allowed
//! to be absent; no stale muxgate control clients are attached. A muxgate control client is
//! recognized by its terminal name `muxgate-<owner pid>` (the engine sets `TERM` so); it is
//! stale when that owner is no longer its parent process, i.e. the gateway that spawned it is
//! gone. Stale clients throttle output and can wedge `kill-server`, so doctor reports them with
//! the command that removes them. Doctor only reads; it changes nothing.
//!
//! The parsing (client lines, `/proc/<pid>/stat`) is pure and tested on its own; the checks
//! run one-shot tmux commands through [`crate::tmux_cli`].

use std::fmt::{self, Write as _};

use crate::config::{Config, ServerName, TmuxServer};
use crate::tmux_cli::{self, PROBE_TIMEOUT, ServerProbe};

/// Terminal-name prefix of the engine's control clients: `TERM=muxgate-<owner pid>`.
pub const CONTROL_CLIENT_TERM_PREFIX: &str = "muxgate-";

/// `list-clients` format doctor parses with [`parse_client_lines`].
pub const CLIENT_LIST_FORMAT: &str = "#{client_pid} #{client_termname}";

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Warn,
    Fail,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Outcome::Ok => "ok",
            Outcome::Warn => "warn",
            Outcome::Fail => "FAIL",
        })
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub outcome: Outcome,
    /// What was checked, e.g. `server default`.
    pub subject: String,
    pub detail: String,
}

/// Everything doctor found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    fn push(&mut self, outcome: Outcome, subject: impl Into<String>, detail: impl Into<String>) {
        self.checks.push(Check {
            outcome,
            subject: subject.into(),
            detail: detail.into(),
        });
    }

    /// Whether any check failed (doctor then exits non-zero).
    pub fn failed(&self) -> bool {
        self.checks.iter().any(|c| c.outcome == Outcome::Fail)
    }

    /// The report as aligned text lines.
    pub fn render(&self) -> String {
        let width = self
            .checks
            .iter()
            .map(|c| c.subject.len())
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        for check in &self.checks {
            // Writing to a String cannot fail.
            let _ = writeln!(
                out,
                "[{:>4}] {:width$}  {}",
                check.outcome, check.subject, check.detail
            );
        }
        let failures = self
            .checks
            .iter()
            .filter(|c| c.outcome == Outcome::Fail)
            .count();
        let _ = writeln!(
            out,
            "{}",
            match failures {
                0 => "all checks passed".to_string(),
                1 => "1 check failed".to_string(),
                n => format!("{n} checks failed"),
            }
        );
        out
    }
}

/// Runs every check against the configured servers.
pub async fn run(config: &Config) -> Report {
    let mut report = Report::default();
    match tmux_cli::find_tmux().await {
        Ok(tmux) => report.push(
            Outcome::Ok,
            "tmux",
            format!("{} ({})", tmux.version, tmux.path.display()),
        ),
        Err(err) => {
            report.push(Outcome::Fail, "tmux", err.to_string());
            return report;
        }
    }
    for (name, server) in &config.tmux.servers {
        check_server(&mut report, name, server).await;
    }
    report
}

async fn check_server(report: &mut Report, name: &ServerName, server: &TmuxServer) {
    let subject = format!("server {name}");
    match tmux_cli::probe_server(&server.socket, PROBE_TIMEOUT).await {
        ServerProbe::Running { sessions } => report.push(
            Outcome::Ok,
            &subject,
            format!("running on {}, {sessions} session(s)", server.socket),
        ),
        ServerProbe::Absent if server.allow_absent => {
            report.push(
                Outcome::Ok,
                &subject,
                format!("not running on {} (allowed absent)", server.socket),
            );
            return;
        }
        ServerProbe::Absent => {
            report.push(
                Outcome::Fail,
                &subject,
                format!(
                    "not running on {}; start it, or set allow_absent = true for it",
                    server.socket
                ),
            );
            return;
        }
        ServerProbe::Unreachable(reason) => {
            report.push(
                Outcome::Fail,
                &subject,
                format!("cannot be reached on {}: {reason}", server.socket),
            );
            return;
        }
    }
    let subject = format!("clients {name}");
    let listing = match tmux_cli::run(
        &server.socket,
        &["list-clients", "-F", CLIENT_LIST_FORMAT],
        PROBE_TIMEOUT,
    )
    .await
    {
        Ok(listing) => listing,
        Err(err) => {
            report.push(
                Outcome::Fail,
                &subject,
                format!("cannot list clients: {err}"),
            );
            return;
        }
    };
    let clients = muxgate_clients(&parse_client_lines(&listing), parent_pid);
    if clients.is_empty() {
        report.push(Outcome::Ok, &subject, "no muxgate control clients");
    }
    for client in clients {
        match client.state {
            ControlClientState::Live => report.push(
                Outcome::Ok,
                &subject,
                format!(
                    "muxgate control client pid {} owned by running gateway pid {}",
                    client.pid, client.owner_pid
                ),
            ),
            ControlClientState::Stale { parent } => report.push(
                Outcome::Fail,
                &subject,
                format!(
                    "stale muxgate control client pid {}: its gateway pid {} is gone \
                     (parent is now {parent}); remove it with `kill {}`",
                    client.pid, client.owner_pid, client.pid
                ),
            ),
            ControlClientState::Unknown => report.push(
                Outcome::Warn,
                &subject,
                format!(
                    "muxgate control client pid {} (gateway pid {}): no such process here, \
                     probably in another PID namespace; cannot tell whether it is stale",
                    client.pid, client.owner_pid
                ),
            ),
        }
    }
}

/// One line of `list-clients -F '#{client_pid} #{client_termname}'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientLine {
    pub pid: u32,
    pub termname: String,
}

/// Parses `list-clients` output in [`CLIENT_LIST_FORMAT`]; lines that do not fit are skipped.
pub fn parse_client_lines(output: &str) -> Vec<ClientLine> {
    output
        .lines()
        .filter_map(|line| {
            let (pid, termname) = line.split_once(' ').unwrap_or((line, ""));
            Some(ClientLine {
                pid: pid.parse().ok()?,
                termname: termname.to_owned(),
            })
        })
        .collect()
}

/// A muxgate control client attached to a tmux server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MuxgateClient {
    pub pid: u32,
    /// The gateway process that spawned it (from its terminal name).
    pub owner_pid: u32,
    pub state: ControlClientState,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlClientState {
    /// Its owner is still its parent.
    Live,
    /// Its owner is gone: the parent is another process (typically 1 after reparenting).
    Stale { parent: u32 },
    /// Its process is not visible here, so its parent cannot be read.
    Unknown,
}

/// Picks the muxgate control clients out of `clients` and classifies them, reading a
/// process's parent with `parent_of` (in production [`parent_pid`]).
pub fn muxgate_clients(
    clients: &[ClientLine],
    parent_of: impl Fn(u32) -> Option<u32>,
) -> Vec<MuxgateClient> {
    clients
        .iter()
        .filter_map(|client| {
            let owner_pid: u32 = client
                .termname
                .strip_prefix(CONTROL_CLIENT_TERM_PREFIX)?
                .parse()
                .ok()?;
            let state = match parent_of(client.pid) {
                Some(parent) if parent == owner_pid => ControlClientState::Live,
                Some(parent) => ControlClientState::Stale { parent },
                None => ControlClientState::Unknown,
            };
            Some(MuxgateClient {
                pid: client.pid,
                owner_pid,
                state,
            })
        })
        .collect()
}

/// The parent of process `pid`, from `/proc/<pid>/stat`.
pub fn parent_pid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_ppid(&stat)
}

/// The parent pid field of a `/proc/<pid>/stat` line. The command name in parentheses may
/// contain spaces and parentheses, so fields are counted after its last `)`.
pub fn parse_stat_ppid(stat: &str) -> Option<u32> {
    let (_, after_comm) = stat.rsplit_once(')')?;
    let mut fields = after_comm.split_whitespace();
    let _state = fields.next()?;
    fields.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_lines_parse_pid_and_termname() {
        let lines = parse_client_lines(
            "123 muxgate-77\n456 xterm-256color\n789 \nnot-a-pid x\n\n1011 screen 256\n",
        );
        assert_eq!(
            lines,
            [
                ClientLine {
                    pid: 123,
                    termname: "muxgate-77".into()
                },
                ClientLine {
                    pid: 456,
                    termname: "xterm-256color".into()
                },
                ClientLine {
                    pid: 789,
                    termname: String::new()
                },
                ClientLine {
                    pid: 1011,
                    termname: "screen 256".into()
                },
            ]
        );
    }

    #[test]
    fn muxgate_clients_are_live_stale_or_unknown() {
        let lines = parse_client_lines(
            "10 muxgate-100\n11 muxgate-100\n12 muxgate-200\n13 xterm\n14 muxgate-x\n15 muxgate-\n",
        );
        let parents = |pid| match pid {
            10 => Some(100),
            11 => Some(1),
            _ => None,
        };
        assert_eq!(
            muxgate_clients(&lines, parents),
            [
                MuxgateClient {
                    pid: 10,
                    owner_pid: 100,
                    state: ControlClientState::Live
                },
                MuxgateClient {
                    pid: 11,
                    owner_pid: 100,
                    state: ControlClientState::Stale { parent: 1 }
                },
                MuxgateClient {
                    pid: 12,
                    owner_pid: 200,
                    state: ControlClientState::Unknown
                },
            ]
        );
    }

    #[test]
    fn stat_parent_survives_odd_command_names() {
        assert_eq!(
            parse_stat_ppid("4242 (tmux) S 4200 4242 4242 0 -1 4194560 ..."),
            Some(4200)
        );
        assert_eq!(
            parse_stat_ppid("4242 (a) b (c) S 17 4242 4242 0 -1"),
            Some(17)
        );
        assert_eq!(parse_stat_ppid("4242 (x y) R 1"), Some(1));
        assert_eq!(parse_stat_ppid("garbage"), None);
        assert_eq!(parse_stat_ppid("1 (x) S notanumber"), None);
    }

    #[test]
    fn this_process_parent_is_readable() {
        let me = std::process::id();
        let parent = parent_pid(me).expect("own /proc entry");
        assert_eq!(Some(parent), Some(std::os::unix::process::parent_id()));
    }

    #[test]
    fn report_fails_when_any_check_fails_and_renders_aligned() {
        let mut report = Report::default();
        report.push(Outcome::Ok, "tmux", "tmux 3.3a");
        assert!(!report.failed());
        report.push(Outcome::Fail, "server build", "not running");
        assert!(report.failed());
        assert_eq!(
            report.render(),
            "[  ok] tmux          tmux 3.3a\n[FAIL] server build  not running\n1 check failed\n"
        );
    }
}
