//! The `ssh` command lines of a host's link: the master that holds its one connection, and
//! the clients that each open a channel on it. Pure, so that every option a link relies on is
//! pinned by a test; [`process`] makes one of them a process of the gateway.
//!
//! Both ignore every `ssh_config` (`-F /dev/null`): a link runs with the options here and the
//! files the host's configuration names, nothing from the gateway user's home. They never
//! prompt, never forward an agent, X11 or a port, and check the host's key against the host's
//! own `known_hosts` only. A client reaches the host through the master's socket alone: were
//! the master gone, its fallback to a connection of its own fails at once (its proxy command
//! is `false`), so a client never opens a second connection.

use std::ffi::OsString;
use std::path::Path;

use muxgate_mux::child_process;

use super::config::HostConfig;

/// What the master prints on its standard output once its connection is up and its control
/// socket listens (its `LocalCommand`, which ssh runs after both).
pub(crate) const UP_LINE: &str = "muxgate-link-up";

/// `PATH` of the `ssh` processes.
pub(crate) const SSH_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// `ssh` with `args` as a process of the gateway: only `PATH` in its environment, killed when
/// dropped or when the gateway dies, and given only its standard streams (all three piped
/// unless the caller says otherwise).
pub(crate) fn process(
    program: &Path,
    args: impl IntoIterator<Item = impl AsRef<std::ffi::OsStr>>,
) -> tokio::process::Command {
    use std::process::Stdio;
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .env_clear()
        .env("PATH", SSH_PATH)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // SAFETY: `getpid` is async-signal-safe and runs in the parent here.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and only calls prctl(2),
    // getppid(2) and close_range(2) or fcntl(2): async-signal-safe, no allocation.
    unsafe {
        command.pre_exec(move || {
            child_process::die_with_parent(parent)?;
            child_process::mark_inherited_fds_cloexec()
        });
    }
    command
}

/// Three keepalives without an answer end a link.
const KEEPALIVE_COUNT: u32 = 3;

/// The master: logs in, listens on `control`, runs nothing on the host. Through `proxy` (a
/// `ProxyCommand`) when the host dials in.
pub(crate) fn master(host: &HostConfig, control: &Path, proxy: Option<&str>) -> Vec<OsString> {
    let mut args = common();
    args.extend(login(host));
    if let Some(proxy) = proxy {
        args.extend(options(&[("ProxyCommand", proxy)]));
    }
    args.extend(options(&[
        ("ControlPath", &control.to_string_lossy()),
        ("ControlMaster", "yes"),
        ("ControlPersist", "no"),
        ("ServerAliveInterval", &host.keepalive_secs.to_string()),
        ("ServerAliveCountMax", &KEEPALIVE_COUNT.to_string()),
        ("PermitLocalCommand", "yes"),
        ("LocalCommand", &format!("echo {UP_LINE}")),
    ]));
    args.push("-N".into());
    args.extend(destination(host));
    args
}

/// A client: one channel on the master's connection, running the command line that follows
/// these arguments (after a `--`).
pub(crate) fn client(host: &HostConfig, control: &Path) -> Vec<OsString> {
    let mut args = common();
    args.extend(options(&[
        ("ControlPath", &control.to_string_lossy()),
        ("ControlMaster", "no"),
        ("ProxyCommand", "false"),
        ("PermitLocalCommand", "no"),
    ]));
    args.extend(destination(host));
    args
}

/// A connection of its own that runs one command and ends (`muxgate doctor`'s check), logging
/// in exactly as the master does.
pub(crate) fn probe(host: &HostConfig) -> Vec<OsString> {
    let mut args = common();
    args.extend(login(host));
    args.extend(options(&[
        ("ControlPath", "none"),
        ("ControlMaster", "no"),
        ("PermitLocalCommand", "no"),
    ]));
    args.extend(destination(host));
    args
}

/// What master and clients share: no configuration file, no prompt, nothing forwarded.
fn common() -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["-F".into(), "/dev/null".into(), "-T".into()];
    args.extend(options(&[
        ("BatchMode", "yes"),
        ("IdentitiesOnly", "yes"),
        ("IdentityAgent", "none"),
        ("GlobalKnownHostsFile", "/dev/null"),
        ("CheckHostIP", "no"),
        ("UpdateHostKeys", "no"),
        ("ForwardAgent", "no"),
        ("ForwardX11", "no"),
        ("ClearAllForwardings", "yes"),
        ("LogLevel", "ERROR"),
    ]));
    args
}

/// How a connection logs in: the host's key, its known keys, the connect timeout.
fn login(host: &HostConfig) -> Vec<OsString> {
    let checking = if host.trust_on_first_use {
        "accept-new"
    } else {
        "yes"
    };
    options(&[
        ("IdentityFile", &host.identity_file.to_string_lossy()),
        ("UserKnownHostsFile", &host.known_hosts.to_string_lossy()),
        ("StrictHostKeyChecking", checking),
        ("ConnectTimeout", &host.connect_timeout_secs.to_string()),
    ])
}

fn options(pairs: &[(&str, &str)]) -> Vec<OsString> {
    pairs
        .iter()
        .flat_map(|(key, value)| ["-o".into(), format!("{key}={value}").into()])
        .collect()
}

/// `-l user -p port host`: the target is checked when the configuration is read (no part of it
/// can read as an option).
fn destination(host: &HostConfig) -> Vec<OsString> {
    vec![
        "-l".into(),
        host.ssh.user.clone().into(),
        "-p".into(),
        host.ssh.port.to_string().into(),
        host.ssh.host.clone().into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::config::SshTarget;

    fn host() -> HostConfig {
        HostConfig {
            ssh: SshTarget::try_from("agent@build-1:2222".to_owned()).unwrap(),
            identity_file: "/etc/muxgate/id".into(),
            known_hosts: "/etc/muxgate/known_hosts".into(),
            trust_on_first_use: false,
            servers: vec!["default".into()],
            tmux: "tmux".into(),
            muxgate: "muxgate".into(),
            workspaces_config: None,
            dial_in: false,
            connect_timeout_secs: 10,
            keepalive_secs: 15,
        }
    }

    fn text(args: &[OsString]) -> Vec<String> {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// The `-o` options of `args`, as `Key=value`.
    fn has(args: &[String], option: &str) -> bool {
        args.windows(2).any(|w| w[0] == "-o" && w[1] == option)
    }

    #[test]
    fn the_master_checks_the_host_key_and_forwards_nothing() {
        let args = text(&master(&host(), Path::new("/run/link/build-1"), None));
        for option in [
            "ControlMaster=yes",
            "StrictHostKeyChecking=yes",
            "UserKnownHostsFile=/etc/muxgate/known_hosts",
            "GlobalKnownHostsFile=/dev/null",
            "IdentityFile=/etc/muxgate/id",
            "IdentitiesOnly=yes",
            "IdentityAgent=none",
            "ForwardAgent=no",
            "ClearAllForwardings=yes",
            "BatchMode=yes",
            "ServerAliveInterval=15",
            "ControlPath=/run/link/build-1",
        ] {
            assert!(has(&args, option), "{option} missing from {args:?}");
        }
        assert_eq!(&args[..2], ["-F", "/dev/null"]);
        assert!(args.contains(&"-N".to_owned()), "runs nothing on the host");
        assert_eq!(
            &args[args.len() - 5..],
            ["-l", "agent", "-p", "2222", "build-1"]
        );
        let mut tofu = host();
        tofu.trust_on_first_use = true;
        let args = text(&master(&tofu, Path::new("/c"), None));
        assert!(has(&args, "StrictHostKeyChecking=accept-new"));
        assert!(!args.iter().any(|a| a.starts_with("ProxyCommand")));
        // A host that dials in is reached through the relay, its key checked all the same.
        let args = text(&master(&host(), Path::new("/c"), Some("exec relay")));
        assert!(has(&args, "ProxyCommand=exec relay"), "{args:?}");
        assert!(has(&args, "StrictHostKeyChecking=yes"), "{args:?}");
    }

    #[test]
    fn a_client_only_ever_uses_the_masters_connection() {
        let args = text(&client(&host(), Path::new("/run/link/build-1")));
        for option in ["ControlMaster=no", "ProxyCommand=false", "ForwardAgent=no"] {
            assert!(has(&args, option), "{option} missing from {args:?}");
        }
        assert!(
            !args.iter().any(|a| a.starts_with("IdentityFile")),
            "{args:?}"
        );
        assert_eq!(args.last().map(String::as_str), Some("build-1"));
    }
}
