//! `muxgate doctor`: checks the host for what the gateway needs and reports what it finds.
//!
//! Checks: tmux is installed (and its version); every configured server is running or allowed
//! to be absent; no stale muxgate control clients are attached; every configured Zellij server's
//! binary runs and its default session is live; every host is reached over SSH (its key
//! listed in its `known_hosts`, the gateway's key accepted, its tmux's version); in workspace mode, that sandboxes start here
//! (bubblewrap, user namespaces), how many workspaces there are, and whether configured
//! servers remain beside them (they run unsandboxed); without it, whether clients that can
//! type share a configured server. A muxgate control client is
//! recognized by its terminal name `muxgate-<owner pid>` (the engine sets `TERM` so); it is
//! stale when that owner is no longer its parent process, i.e. the gateway that spawned it is
//! gone. Stale clients throttle output and can wedge `kill-server`, so doctor reports them with
//! the command that removes them. Doctor only reads; it changes nothing.
//!
//! Recognising muxgate's clients is shared with the engine ([`muxgate_tmux::client::stale`]); the
//! checks run one-shot tmux commands through [`crate::tmux_cli`].

use std::fmt::{self, Write as _};

use crate::config::{Config, ServerName, TmuxServer};
use crate::tmux_cli::{self, PROBE_TIMEOUT, ServerProbe};
use crate::workspace::host::Host;
use muxgate_tmux::client::stale::{self, ControlClientState};
use muxgate_zellij::backend::ZellijBackend;

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It holds.
    Ok,
    /// It holds, with a caveat the detail names.
    Warn,
    /// It does not hold: the gateway will not work as configured.
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
    /// How it came out.
    pub outcome: Outcome,
    /// What was checked, e.g. `server default`.
    pub subject: String,
    /// What was found, or what to do about it.
    pub detail: String,
}

/// Everything doctor found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The checks, in the order they ran.
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
        Ok(tmux) => {
            report.push(
                Outcome::Ok,
                "tmux",
                format!("{} ({})", tmux.version, tmux.path.display()),
            );
            for (name, server) in &config.tmux.servers {
                check_server(&mut report, name, server).await;
            }
        }
        Err(err) => report.push(Outcome::Fail, "tmux", err.to_string()),
    }
    for (name, server) in &config.zellij.servers {
        check_zellij_server(&mut report, config, name, server).await;
    }
    for (name, host) in &config.hosts {
        if host.dial_in {
            // Reached only through the gateway while the host is dialled in.
            let outcome = match crate::hosts::check_files(name, host) {
                Ok(()) => (
                    Outcome::Ok,
                    "dials in (muxgate host connect); list_servers shows its link".to_owned(),
                ),
                Err(why) => (Outcome::Fail, why),
            };
            report.push(outcome.0, format!("host {name}"), outcome.1);
            continue;
        }
        match crate::hosts::check(name, host).await {
            Ok(version) => {
                report.push(
                    Outcome::Ok,
                    format!("host {name}"),
                    format!("{version} at {}; host key known, key accepted", host.ssh),
                );
                check_host_probe(&mut report, name, host).await;
            }
            Err(why) => report.push(Outcome::Fail, format!("host {name}"), why),
        }
    }
    if config.workspaces.enabled {
        check_workspaces(&mut report, config).await;
    }
    let warning = config
        .shared_server_warning()
        .or_else(|| config.servers_beside_workspaces_warning());
    if let Some(warning) = warning {
        report.push(Outcome::Warn, "isolation", warning);
    }
    report
}

/// Whether a reachable host runs its process probe; without it the host's panes work, but
/// their foreground processes and whether they wait for input are unknown.
async fn check_host_probe(
    report: &mut Report,
    name: &str,
    host: &crate::hosts::config::HostConfig,
) {
    match crate::hosts::check_probe(host).await {
        Ok(()) => report.push(
            Outcome::Ok,
            format!("host {name} probe"),
            format!("{} host-probe runs there: its panes' process state is read", host.muxgate),
        ),
        Err(why) => report.push(
            Outcome::Warn,
            format!("host {name} probe"),
            format!(
                "{why}: its panes' foreground processes and whether they wait for input are unknown; install muxgate on the host or set hosts.{name}.muxgate"
            ),
        ),
    }
}

/// Workspace mode: the state directory, a test sandbox, and the workspaces there.
async fn check_workspaces(report: &mut Report, config: &Config) {
    let state = match config.state.resolve(|var| std::env::var_os(var)) {
        Ok(state) => state,
        Err(why) => {
            report.push(Outcome::Fail, "state", why);
            return;
        }
    };
    let settings = &config.workspaces;
    let probe = Host::probe(
        &settings.bwrap,
        &config.engine.tmux_bin,
        settings.network,
        &settings.expose,
        &config.secret_paths(),
    )
    .await;
    match probe {
        Ok(host) => {
            let users = if crate::workspace::own_uids() {
                format!("each as its own uid from {}", settings.uid_base)
            } else {
                "as the gateway's uid".to_owned()
            };
            report.push(
                Outcome::Ok,
                "sandbox",
                format!(
                    "{} starts a sandbox here; workspaces run {users}, network {:?}",
                    host.spec.bwrap.display(),
                    settings.network
                ),
            );
        }
        Err(error) => report.push(Outcome::Fail, "sandbox", error.to_string()),
    }
    check_workspace_bounds(report, config, &state).await;
    match crate::workspace::admin::list(&state) {
        Ok(workspaces) => {
            let running = workspaces.iter().filter(|w| w.pid.is_some()).count();
            report.push(
                Outcome::Ok,
                "workspaces",
                format!(
                    "{} in {}, {running} running",
                    workspaces.len(),
                    state.display()
                ),
            );
        }
        Err(error) => report.push(
            Outcome::Fail,
            "workspaces",
            format!("cannot read {}: {error}", state.display()),
        ),
    }
}

/// What the gateway will do when it starts workspaces from `state`: whether their uids can
/// reach their directories (a failure: no workspace would start), and whether homes get their
/// size and workspaces their memory bound (warnings: they run without, and a tenant can fill
/// the disk or the memory those would hold).
async fn check_workspace_bounds(report: &mut Report, config: &Config, state: &std::path::Path) {
    use crate::workspace::{cgroup, disk, layout};
    let own_uids = crate::workspace::own_uids();
    match layout::Layout::new(state, own_uids).unreachable_parent() {
        Some(dir) => report.push(
            Outcome::Fail,
            "state",
            format!(
                "workspaces run as uids of their own and cannot pass through {} to {}: choose \
                 a state directory every user may pass through, or `chmod o+x {}`",
                dir.display(),
                state.display(),
                dir.display()
            ),
        ),
        None => report.push(
            Outcome::Ok,
            "state",
            format!("{} is reachable by every workspace", state.display()),
        ),
    }
    let limits = &config.workspaces.limits;
    if limits.home_bytes > 0 {
        let homes = match disk::HomeDisks::probe() {
            Ok(disks) => disks
                .prove(disk::MIN_HOME_BYTES)
                .await
                .map_err(|e| e.to_string()),
            Err(why) => Err(why),
        };
        match homes {
            Ok(()) => report.push(
                Outcome::Ok,
                "homes",
                format!(
                    "each workspace's home is a file system of {} bytes",
                    limits.home_bytes
                ),
            ),
            Err(why) => report.push(
                Outcome::Warn,
                "homes",
                format!(
                    "homes have no size bound ({why}): a tenant can fill the disk {} is on",
                    state.display()
                ),
            ),
        }
    }
    if limits.memory_bytes > 0 {
        match cgroup::MemoryCgroups::probe(&crate::workspace::cgroup_group(state)) {
            Ok(_) => report.push(
                Outcome::Ok,
                "memory",
                format!(
                    "each workspace's memory is bounded as a whole ({} bytes)",
                    limits.memory_bytes
                ),
            ),
            Err(why) => report.push(
                Outcome::Warn,
                "memory",
                format!("memory is bounded per process only: no memory cgroup ({why})"),
            ),
        }
    }
}

/// A configured Zellij server: the binary runs and is recent enough, and its default session
/// (if any) is live. A missing session is a warning: it may be started later.
async fn check_zellij_server(
    report: &mut Report,
    config: &Config,
    name: &ServerName,
    server: &crate::config::ZellijServer,
) {
    let subject = format!("zellij server {name}");
    let backend = match ZellijBackend::open(config.zellij.spec(server)).await {
        Ok(backend) => backend,
        Err(err) => {
            report.push(Outcome::Fail, &subject, err.to_string());
            return;
        }
    };
    let sessions = match backend.list_sessions().await {
        Ok(sessions) => sessions,
        Err(err) => {
            report.push(Outcome::Fail, &subject, err.to_string());
            return;
        }
    };
    let live = sessions.iter().filter(|s| !s.exited).count();
    let summary = format!("zellij {}, {live} live session(s)", backend.version());
    match &server.session {
        Some(session) if !sessions.iter().any(|s| &s.name == session && !s.exited) => report.push(
            Outcome::Warn,
            &subject,
            format!(
                "{summary}; its session {session} is not running (calls that name no \
                     session fail until it is)"
            ),
        ),
        _ => report.push(Outcome::Ok, &subject, summary),
    }
}

async fn check_server(report: &mut Report, name: &ServerName, server: &TmuxServer) {
    if server_is_running(report, name, server).await {
        check_clients(report, name, server).await;
    }
}

/// Whether the server runs (reported either way; absent is fine when allowed).
async fn server_is_running(report: &mut Report, name: &ServerName, server: &TmuxServer) -> bool {
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
            return false;
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
            return false;
        }
        ServerProbe::Unreachable(reason) => {
            report.push(
                Outcome::Fail,
                &subject,
                format!("cannot be reached on {}: {reason}", server.socket),
            );
            return false;
        }
    }
    true
}

/// The muxgate control clients attached to the server: live, stale or unknown.
async fn check_clients(report: &mut Report, name: &ServerName, server: &TmuxServer) {
    let subject = format!("clients {name}");
    let listing = match tmux_cli::run(
        &server.socket,
        &["list-clients", "-F", stale::CLIENT_FORMAT],
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
    let clients = stale::muxgate_clients(&stale::parse_clients(listing.lines()), stale::parent_pid);
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

#[cfg(test)]
mod tests {
    use super::*;

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
