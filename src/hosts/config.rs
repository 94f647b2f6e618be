//! `[hosts.<name>]`: another machine whose tmux servers the gateway drives over SSH, and the
//! server names they get. Pure: parsing and naming; the files named are checked when the
//! gateway starts ([`super::preflight`]).

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use muxgate_tmux::TmuxSocket;

/// One host, as configured.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// Where to log in: `user@host`, `user@host:port`, `user@[v6]:port`.
    pub ssh: SshTarget,
    /// The private key the gateway logs in with (readable by the gateway only).
    pub identity_file: PathBuf,
    /// The host keys the host may present, in OpenSSH's `known_hosts` format. Required: a key
    /// not in it is refused.
    pub known_hosts: PathBuf,
    /// Accept and record the key of a host not yet in `known_hosts` (trust on first use) rather
    /// than refuse it. Off by default; a key that differs from a recorded one is always refused.
    #[serde(default)]
    pub trust_on_first_use: bool,
    /// The host's tmux servers: `default` (tmux's default socket) or a socket name (`tmux -L`).
    /// They are named `<host>` and `<host>/<socket name>` to clients.
    #[serde(default = "default_servers")]
    pub servers: Vec<String>,
    /// tmux on the host: a name its `PATH` finds, or an absolute path there.
    #[serde(default = "default_tmux")]
    pub tmux: String,
    /// muxgate on the host (a name its `PATH` finds, or an absolute path there), run there as
    /// `muxgate host-probe` to read what tmux does not tell: a pane's foreground process and
    /// whether it waits for input. A host without it answers those as unknown.
    #[serde(default = "default_muxgate")]
    pub muxgate: String,
    /// The muxgate configuration on the host (a path there) whose `[workspaces]` and `[state]`
    /// the workspaces the gateway places there use; needed when `workspaces.hosts` lists the
    /// host.
    #[serde(default)]
    pub workspaces_config: Option<PathBuf>,
    /// The host dials in (`muxgate host connect` there, with `muxgate host token NAME`'s
    /// token) instead of the gateway connecting to it; `ssh` then names the user and the name
    /// its key is listed under in `known_hosts`.
    #[serde(default)]
    pub dial_in: bool,
    /// The longest a connection attempt may take, in seconds.
    #[serde(default = "default_connect_timeout_secs")]
    pub connect_timeout_secs: u64,
    /// Seconds between keepalives on a quiet link; three unanswered end it.
    #[serde(default = "default_keepalive_secs")]
    pub keepalive_secs: u64,
}

fn default_servers() -> Vec<String> {
    vec![DEFAULT_SERVER.to_owned()]
}

fn default_tmux() -> String {
    "tmux".to_owned()
}

fn default_muxgate() -> String {
    "muxgate".to_owned()
}

fn default_connect_timeout_secs() -> u64 {
    10
}

fn default_keepalive_secs() -> u64 {
    15
}

/// The entry of `servers` naming tmux's default socket.
pub const DEFAULT_SERVER: &str = "default";

impl HostConfig {
    /// The host's servers: the name clients use for each, and its socket on the host.
    pub fn server_names(&self, host: &str) -> Vec<(String, TmuxSocket)> {
        self.servers
            .iter()
            .map(|server| {
                if server == DEFAULT_SERVER {
                    (host.to_owned(), TmuxSocket::Default)
                } else {
                    (format!("{host}/{server}"), TmuxSocket::Name(server.clone()))
                }
            })
            .collect()
    }

    /// The longest a connection attempt may take.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs(self.connect_timeout_secs)
    }

    /// Rules serde cannot express: the key (under `hosts.<name>`) and what is wrong.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.servers.is_empty() {
            return Err(("servers", "must name at least one server".into()));
        }
        let mut seen = BTreeSet::new();
        for server in &self.servers {
            if !TmuxSocket::is_valid_name(server) {
                return Err((
                    "servers",
                    format!(
                        "`{server}` is not a socket name: use `default` or 1-64 characters \
                         from A-Z a-z 0-9 _ . -"
                    ),
                ));
            }
            if !seen.insert(server) {
                return Err(("servers", format!("`{server}` is named twice")));
            }
        }
        if self.tmux.is_empty() || self.tmux.chars().any(char::is_control) {
            return Err(("tmux", "must be a program name or a path".into()));
        }
        if self.muxgate.is_empty() || self.muxgate.chars().any(char::is_control) {
            return Err(("muxgate", "must be a program name or a path".into()));
        }
        if let Some(path) = &self.workspaces_config
            && (!path.is_absolute() || path.to_string_lossy().chars().any(char::is_control))
        {
            return Err((
                "workspaces_config",
                "must be an absolute path on the host".into(),
            ));
        }
        if !(1..=600).contains(&self.connect_timeout_secs) {
            return Err(("connect_timeout_secs", "must be from 1 to 600".into()));
        }
        if !(1..=3600).contains(&self.keepalive_secs) {
            return Err(("keepalive_secs", "must be from 1 to 3600".into()));
        }
        for (key, path) in [
            ("identity_file", &self.identity_file),
            ("known_hosts", &self.known_hosts),
        ] {
            check_path(path).map_err(|why| (key, why))?;
        }
        Ok(())
    }
}

/// A file ssh is handed in an option (`-o Key=value`): absolute, and free of what ssh reads
/// specially there (whitespace splits a list, `%` and `~` are expanded, quotes are taken away).
fn check_path(path: &std::path::Path) -> Result<(), String> {
    let text = path.to_str().ok_or("must be UTF-8")?;
    if !path.is_absolute() {
        return Err(format!("`{text}` must be an absolute path"));
    }
    if let Some(c) = text
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '%' | '~' | '"' | '\''))
    {
        return Err(format!("`{text}` holds {c:?}, which ssh reads specially"));
    }
    Ok(())
}

/// Where the gateway logs in on a host.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct SshTarget {
    /// The user.
    pub user: String,
    /// The host name or address (an IPv6 address without its brackets).
    pub host: String,
    /// The port.
    pub port: u16,
}

impl TryFrom<String> for SshTarget {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        let bad = |why: &str| format!("`{text}` is not user@host[:port]: {why}");
        let (user, rest) = text.split_once('@').ok_or_else(|| bad("no user"))?;
        let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or_else(|| bad("no closing `]`"))?;
            match after {
                "" => (host, None),
                port => (
                    host,
                    Some(
                        port.strip_prefix(':')
                            .ok_or_else(|| bad("junk after `]`"))?,
                    ),
                ),
            }
        } else {
            match rest.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (rest, None),
            }
        };
        let port = match port {
            None => 22,
            Some(port) => match port.parse::<u16>() {
                Ok(port) if port > 0 => port,
                _ => return Err(bad("the port must be a number from 1 to 65535")),
            },
        };
        // Nothing here may read as an option of ssh's, or hold a character a shell or ssh
        // would treat specially.
        let plain = |s: &str| {
            !s.is_empty()
                && !s.starts_with('-')
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b':'))
        };
        if !plain(user) || user.contains(':') {
            return Err(bad("the user must be letters, digits, `_`, `.` or `-`"));
        }
        if !plain(host) {
            return Err(bad("the host must be a name or an address"));
        }
        Ok(Self {
            user: user.to_owned(),
            host: host.to_owned(),
            port,
        })
    }
}

impl fmt::Display for SshTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}@[{}]:{}", self.user, self.host, self.port)
        } else {
            write!(f, "{}@{}:{}", self.user, self.host, self.port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(text: &str) -> Result<SshTarget, String> {
        SshTarget::try_from(text.to_owned())
    }

    #[test]
    fn targets_are_user_host_and_port() {
        let plain = target("agent@build-1.internal").unwrap();
        assert_eq!(
            (plain.user.as_str(), plain.host.as_str(), plain.port),
            ("agent", "build-1.internal", 22)
        );
        let port = target("agent@10.0.0.2:2222").unwrap();
        assert_eq!((port.host.as_str(), port.port), ("10.0.0.2", 2222));
        let v6 = target("agent@[fd00::2]:22").unwrap();
        assert_eq!(v6.host, "fd00::2");
        assert_eq!(v6.to_string(), "agent@[fd00::2]:22");
        assert_eq!(target("a@[::1]").unwrap().port, 22);
    }

    #[test]
    fn a_target_that_ssh_or_a_shell_would_misread_is_refused() {
        for bad in [
            "build-1",
            "@host",
            "agent@",
            "agent@-oProxyCommand=x",
            "-l@host",
            "agent@host:0",
            "agent@host:99999",
            "agent@host:22x",
            "agent@ho st",
            "agent@host;id",
            "ag:ent@host",
            "agent@[::1",
            "agent@[::1]x",
        ] {
            assert!(target(bad).is_err(), "{bad}");
        }
    }

    fn host(servers: &[&str]) -> HostConfig {
        HostConfig {
            ssh: target("agent@build").unwrap(),
            identity_file: "/k".into(),
            known_hosts: "/kh".into(),
            trust_on_first_use: false,
            servers: servers.iter().map(|s| s.to_string()).collect(),
            tmux: default_tmux(),
            muxgate: default_muxgate(),
            workspaces_config: None,
            dial_in: false,
            connect_timeout_secs: 10,
            keepalive_secs: 15,
        }
    }

    #[test]
    fn a_hosts_servers_are_named_after_it() {
        assert_eq!(
            host(&["default", "ci"]).server_names("build-1"),
            [
                ("build-1".to_owned(), TmuxSocket::Default),
                ("build-1/ci".to_owned(), TmuxSocket::Name("ci".into()))
            ]
        );
        assert_eq!(host(&["default", "ci"]).validate(), Ok(()));
    }

    #[test]
    fn bad_server_lists_name_the_key() {
        for (servers, needle) in [
            (&[][..], "at least one"),
            (&["ci", "ci"][..], "twice"),
            (&["a/b"][..], "not a socket name"),
            (&[".."][..], "not a socket name"),
        ] {
            let (key, message) = host(servers).validate().unwrap_err();
            assert_eq!(key, "servers");
            assert!(message.contains(needle), "{message}");
        }
    }

    #[test]
    fn files_ssh_would_misread_are_refused() {
        for (path, needle) in [
            ("keys/id", "absolute"),
            ("/etc/my keys/id", "' '"),
            ("/etc/%h/id", "'%'"),
            ("/etc/~/id", "'~'"),
        ] {
            let mut bad = host(&["default"]);
            bad.known_hosts = path.into();
            let (key, message) = bad.validate().unwrap_err();
            assert_eq!(key, "known_hosts");
            assert!(message.contains(needle), "{path}: {message}");
        }
        let mut slow = host(&["default"]);
        slow.connect_timeout_secs = u64::MAX;
        assert_eq!(slow.validate().unwrap_err().0, "connect_timeout_secs");
    }
}
