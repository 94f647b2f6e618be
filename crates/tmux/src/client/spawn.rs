//! How muxgate starts tmux client processes: which server, which environment, under which
//! wrapper and user, and the safety settings every child gets.
//!
//! Every `tmux` child is spawned with `PR_SET_PDEATHSIG = SIGKILL`: if muxgate dies, the kernel
//! kills its control clients. Without that, a `tmux -C` whose owner died stays attached forever,
//! throttles the panes of its session and wedges `kill-server`. Note that the signal follows the
//! *thread* that spawned the child, so children must be spawned from long-lived runtime threads
//! (async tasks), never from `spawn_blocking`.
//!
//! Children get a marker `TERM` (`muxgate-<owner pid>`), visible in `#{client_termname}`, so that
//! control clients left behind by a crashed predecessor can be recognised (see [`crate::client::stale`]).
//!
//! **Environment.** A child gets only [`INHERITED_ENV`] from muxgate's environment: muxgate's
//! own may hold secrets (`MUXGATE_AUTH__SECRET`), and a tmux client hands its environment to
//! the server it starts (which every pane inherits) and runs whatever the server tells it to
//! with it (see below).
//!
//! **A tmux client obeys its server.** A client that runs a command without being attached (a
//! one-shot `tmux wait-for`, `tmux new-session`) opens the files that command names itself,
//! with its own rights, and whoever runs code on the server can turn any command into one that
//! names a file (`set -s command-alias[N] 'wait-for=load-buffer /etc/… ; wait-for'`: measured
//! on tmux 3.3a; an attached control client has the server open files instead). A client of a
//! server someone else controls must therefore run with no more rights than that someone: a
//! server with a [`ClientWrapper`] (a workspace's sandbox) gets every client process started
//! inside the wrapper, as its user.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use muxgate_mux::child_process;

use crate::client::remote::{self, LinkDown, RemoteHost};

/// Which tmux server to talk to: tmux's own notion of a socket. (Ordered so that a config
/// naming one socket twice can be found.)
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TmuxSocket {
    /// The user's default server, as plain `tmux` would use it (`$TMUX_TMPDIR` or `/tmp`,
    /// `tmux-<uid>/default`). An inherited `$TMUX` must not redirect it: every child gets
    /// `TMUX` removed from its environment.
    Default,
    /// A named socket in tmux's socket directory (`tmux -L NAME`).
    Name(String),
    /// A socket at an explicit path (`tmux -S PATH`).
    Path(PathBuf),
}

impl TmuxSocket {
    /// Whether `name` may be a socket name muxgate passes as `tmux -L NAME`: 1-64 characters
    /// from `A-Z a-z 0-9 _ . -`, and not `.` or `..` (tmux makes it a file name in its socket
    /// directory).
    pub fn is_valid_name(name: &str) -> bool {
        (1..=64).contains(&name.len())
            && name != "."
            && name != ".."
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    }

    /// Where tmux puts this socket, by tmux's own rule: an explicit path as given; a name (or
    /// `default`) in `<tmpdir>/tmux-<uid>/`, where `tmpdir` is `$TMUX_TMPDIR` if set and not
    /// empty, else `/tmp`.
    pub fn path_for(&self, tmux_tmpdir: Option<&std::ffi::OsStr>, uid: u32) -> PathBuf {
        let name = match self {
            TmuxSocket::Path(path) => return path.clone(),
            TmuxSocket::Default => "default",
            TmuxSocket::Name(name) => name,
        };
        let tmpdir = tmux_tmpdir
            .filter(|dir| !dir.is_empty())
            .unwrap_or_else(|| std::ffi::OsStr::new("/tmp"));
        std::path::Path::new(tmpdir)
            .join(format!("tmux-{uid}"))
            .join(name)
    }

    /// The `-L`/`-S` arguments selecting this socket.
    pub fn args(&self) -> Vec<OsString> {
        match self {
            TmuxSocket::Default => Vec::new(),
            TmuxSocket::Name(name) => vec!["-L".into(), name.into()],
            TmuxSocket::Path(path) => vec!["-S".into(), path.into()],
        }
    }
}

impl std::fmt::Display for TmuxSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TmuxSocket::Default => f.write_str("the default socket"),
            TmuxSocket::Name(name) => write!(f, "socket name {name:?}"),
            TmuxSocket::Path(path) => write!(f, "socket path {}", path.display()),
        }
    }
}

/// A user and group a child process runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RunAs {
    /// The user id.
    pub uid: u32,
    /// The group id (every supplementary group is dropped).
    pub gid: u32,
}

/// A program every tmux client process of one server starts through (e.g. `bwrap … --`), and
/// the user it runs as. The engine treats it as opaque: the tmux command line follows `args`,
/// and the socket is the path as seen inside the wrapper.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientWrapper {
    /// The wrapper program (e.g. `bwrap`).
    pub program: PathBuf,
    /// Its arguments, before the tmux command line.
    pub args: Vec<OsString>,
    /// The user client processes run as; `None`: muxgate's own.
    pub run_as: Option<RunAs>,
}

/// How the client processes of one server start.
#[derive(Debug, Clone, Default)]
pub enum ClientLaunch {
    /// As tmux itself, on the gateway's machine, as the gateway's user: a server of the
    /// gateway's own trust domain.
    #[default]
    Direct,
    /// Through a wrapper on the gateway's machine (a workspace's sandbox).
    Wrapped(Arc<ClientWrapper>),
    /// On another machine, over its link.
    Remote(Arc<RemoteHost>),
}

/// How muxgate reaches one tmux server: its socket, and how its client processes start.
#[derive(Debug, Clone)]
pub struct TmuxEndpoint {
    /// The server's socket, as seen where its clients run (inside the wrapper, on the host).
    pub socket: TmuxSocket,
    /// How its client processes start.
    pub launch: ClientLaunch,
}

impl TmuxEndpoint {
    /// The socket's path as this process sees it; `None` when the server is reached through a
    /// wrapper (a sandbox, whose sockets live in a namespace of their own) or on another host.
    pub fn local_socket_path(&self) -> Option<PathBuf> {
        if !matches!(self.launch, ClientLaunch::Direct) {
            return None;
        }
        // SAFETY: getuid(2) cannot fail and touches no memory.
        let uid = unsafe { libc::getuid() };
        Some(
            self.socket
                .path_for(std::env::var_os("TMUX_TMPDIR").as_deref(), uid),
        )
    }

    /// Whether client pids tmux reports are pids of this host's processes (not of a wrapper's
    /// own pid namespace, nor of another machine), so that stale clients can be found and
    /// killed by pid.
    pub fn pids_are_local(&self) -> bool {
        matches!(self.launch, ClientLaunch::Direct)
    }

    /// The host the server runs on, when it is another machine.
    pub fn remote_host(&self) -> Option<&Arc<RemoteHost>> {
        match &self.launch {
            ClientLaunch::Remote(host) => Some(host),
            ClientLaunch::Direct | ClientLaunch::Wrapped(_) => None,
        }
    }
}

impl From<TmuxSocket> for TmuxEndpoint {
    fn from(socket: TmuxSocket) -> Self {
        Self {
            socket,
            launch: ClientLaunch::Direct,
        }
    }
}

impl std::fmt::Display for TmuxEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.socket.fmt(f)?;
        match self.remote_host() {
            Some(host) => write!(f, " on host {}", host.name),
            None => Ok(()),
        }
    }
}

/// Variables of muxgate's environment a tmux child gets (so the panes of a server it starts):
/// what a login shell needs and where tmux keeps its sockets. Nothing else, in particular
/// nothing `MUXGATE_*`. Children in a [`ClientWrapper`] get none of them (see
/// [`WRAPPED_PATH`]).
pub const INHERITED_ENV: &[&str] = &[
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_COLLATE",
    "LC_NUMERIC",
    "LC_TIME",
    "TZ",
    "TMPDIR",
    "TMUX_TMPDIR",
    "XDG_RUNTIME_DIR",
];

/// `PATH` of a child in a [`ClientWrapper`].
pub const WRAPPED_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Prefix of the `TERM` value muxgate gives its control clients.
pub const TERM_MARKER_PREFIX: &str = "muxgate-";

/// The `TERM` value marking control clients owned by this process.
pub fn term_marker() -> String {
    format!("{TERM_MARKER_PREFIX}{}", std::process::id())
}

/// Whether `term` is a `TERM` value marking some gateway's control clients (`muxgate-<pid>`).
pub fn is_term_marker(term: &str) -> bool {
    term.strip_prefix(TERM_MARKER_PREFIX)
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// The `tmux` command running `args` against `endpoint`, with muxgate's environment and
/// PDEATHSIG set: inside the endpoint's wrapper when it has one, on its host over the link when
/// it is remote. A remote host whose link is down starts nothing: [`LinkDown`].
///
/// The environment drops `TMUX`/`TMUX_PANE` so that "the default socket" means tmux's default
/// and not the server muxgate itself may be running in.
pub fn tmux_command<I, S>(
    tmux_bin: &Path,
    endpoint: &TmuxEndpoint,
    args: I,
) -> Result<tokio::process::Command, LinkDown>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    // `-u`: without a UTF-8 client flag (no LANG in its environment) tmux 3.3a replaces
    // every non-ASCII byte of a reply with `_`, row separators included.
    let mut tmux_args: Vec<OsString> = vec!["-u".into()];
    tmux_args.extend(endpoint.socket.args());
    let mut command = match &endpoint.launch {
        ClientLaunch::Direct => {
            let mut command = tokio::process::Command::new(tmux_bin);
            command.env_clear();
            for name in INHERITED_ENV {
                if let Some(value) = std::env::var_os(name) {
                    command.env(name, value);
                }
            }
            command.env("TERM", term_marker());
            command
        }
        ClientLaunch::Wrapped(wrapper) => {
            // A wrapped client must never start a server: inside its jail the server would die
            // with it, and a wrapped server is started by whoever set up the wrapper.
            tmux_args.push("-N".into());
            let mut command = tokio::process::Command::new(&wrapper.program);
            command
                .args(&wrapper.args)
                .arg(tmux_bin)
                .env_clear()
                .env("PATH", WRAPPED_PATH)
                .env("TERM", term_marker());
            command
        }
        ClientLaunch::Remote(host) => {
            host.link.check()?;
            let mut command = tokio::process::Command::new(&host.program);
            command
                .args(&host.args)
                .env_clear()
                .env("PATH", WRAPPED_PATH);
            command
        }
    };
    tmux_args.extend(args.into_iter().map(|arg| arg.as_ref().to_owned()));
    match &endpoint.launch {
        ClientLaunch::Remote(host) => {
            let line = remote::command_line(
                &host.tmux,
                &term_marker(),
                tmux_args.iter().map(OsString::as_os_str),
            );
            command.arg("--").arg(line);
        }
        ClientLaunch::Direct | ClientLaunch::Wrapped(_) => {
            command.args(tmux_args);
        }
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let run_as = match &endpoint.launch {
        ClientLaunch::Wrapped(wrapper) => wrapper.run_as,
        ClientLaunch::Direct | ClientLaunch::Remote(_) => None,
    };
    die_with_gateway(&mut command, run_as);
    Ok(command)
}

/// Sets up `command`'s child to die with the gateway, run as `run_as` when given, and get only
/// its standard streams.
fn die_with_gateway(command: &mut tokio::process::Command, run_as: Option<RunAs>) {
    // SAFETY: `getpid` is async-signal-safe and runs in the parent here.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and only calls setgroups(2),
    // setgid(2), setuid(2), prctl(2), getppid(2) and close_range(2) or fcntl(2), which are
    // async-signal-safe; it touches no memory shared with the parent.
    unsafe {
        command.pre_exec(move || {
            // Credentials first: changing them clears the parent-death signal.
            if let Some(run_as) = run_as {
                become_user(run_as)?;
            }
            // (No allocation here: the forked child of a threaded process must not malloc.)
            child_process::die_with_parent(parent)?;
            child_process::mark_inherited_fds_cloexec()
        });
    }
}

/// Drops every supplementary group and switches to `run_as`. For `pre_exec` closures: only
/// async-signal-safe calls, no allocation.
pub fn become_user(run_as: RunAs) -> std::io::Result<()> {
    // SAFETY: plain system calls on integers; a null list with size 0 is valid for setgroups.
    unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0
            || libc::setgid(run_as.gid) != 0
            || libc::setuid(run_as.uid) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_paths_follow_tmux_rule() {
        let name = TmuxSocket::Name("work".into());
        assert_eq!(
            name.path_for(None, 1000),
            PathBuf::from("/tmp/tmux-1000/work")
        );
        assert_eq!(
            name.path_for(Some(std::ffi::OsStr::new("")), 1000),
            PathBuf::from("/tmp/tmux-1000/work")
        );
        assert_eq!(
            TmuxSocket::Default.path_for(Some(std::ffi::OsStr::new("/run/t")), 0),
            PathBuf::from("/run/t/tmux-0/default")
        );
        let explicit = TmuxSocket::Path("/srv/tmux.sock".into());
        assert_eq!(
            explicit.path_for(Some(std::ffi::OsStr::new("/run/t")), 0),
            PathBuf::from("/srv/tmux.sock")
        );
    }

    #[test]
    fn secrets_are_not_inherited() {
        assert!(INHERITED_ENV.iter().all(|v| !v.starts_with("MUXGATE")));
        assert!(!INHERITED_ENV.contains(&"TMUX"));
    }

    #[test]
    fn a_wrapped_client_runs_tmux_after_the_wrapper() {
        let endpoint = TmuxEndpoint {
            socket: TmuxSocket::Path("/run/ws/tmux.sock".into()),
            launch: ClientLaunch::Wrapped(Arc::new(ClientWrapper {
                program: "/usr/bin/bwrap".into(),
                args: vec!["--unshare-all".into(), "--".into()],
                run_as: None,
            })),
        };
        let command = tmux_command(Path::new("/usr/bin/tmux"), &endpoint, ["list-sessions"])
            .expect("a wrapped client has no link");
        let std = command.as_std();
        assert_eq!(std.get_program(), "/usr/bin/bwrap");
        let args: Vec<_> = std.get_args().collect();
        assert_eq!(
            args,
            [
                "--unshare-all",
                "--",
                "/usr/bin/tmux",
                "-u",
                "-S",
                "/run/ws/tmux.sock",
                "-N",
                "list-sessions"
            ]
        );
        let env: Vec<_> = std.get_envs().filter_map(|(k, v)| Some((k, v?))).collect();
        assert!(env.iter().any(|(k, _)| *k == "TERM"));
        assert!(
            env.iter().all(|(k, _)| *k == "TERM" || *k == "PATH"),
            "{env:?}"
        );
        assert!(!endpoint.pids_are_local());
    }

    /// A link whose state the test sets.
    #[derive(Debug)]
    struct FixedLink(Option<LinkDown>);

    impl remote::LinkStatus for FixedLink {
        fn check(&self) -> Result<(), LinkDown> {
            self.0.clone().map_or(Ok(()), Err)
        }
    }

    fn remote(link: Option<LinkDown>) -> TmuxEndpoint {
        TmuxEndpoint {
            socket: TmuxSocket::Name("ci".into()),
            launch: ClientLaunch::Remote(Arc::new(RemoteHost {
                name: "build-1".into(),
                program: "/usr/bin/ssh".into(),
                args: vec!["-S".into(), "/run/link.sock".into(), "build-1".into()],
                tmux: vec!["tmux".into()],
                link: Arc::new(FixedLink(link)),
                processes: Arc::new(muxgate_mux::host::SandboxHost),
            })),
        }
    }

    #[test]
    fn a_remote_client_is_one_quoted_line_over_the_link() {
        let endpoint = remote(None);
        let command = tmux_command(
            Path::new("/usr/bin/tmux"),
            &endpoint,
            ["has-session", "-t", "a b"],
        )
        .expect("the link is up");
        let std = command.as_std();
        assert_eq!(std.get_program(), "/usr/bin/ssh");
        let args: Vec<_> = std.get_args().collect();
        let line = format!(
            "env 'TERM={}' 'tmux' '-u' '-L' 'ci' 'has-session' '-t' 'a b'",
            term_marker()
        );
        assert_eq!(
            args,
            ["-S", "/run/link.sock", "build-1", "--", line.as_str()]
        );
        // The local link program gets no secret of the gateway's environment.
        let env: Vec<_> = std.get_envs().filter_map(|(k, v)| Some((k, v?))).collect();
        assert_eq!(env, [(OsStr::new("PATH"), OsStr::new(WRAPPED_PATH))]);
        assert!(!endpoint.pids_are_local() && endpoint.local_socket_path().is_none());
        assert_eq!(endpoint.to_string(), "socket name \"ci\" on host build-1");
    }

    #[test]
    fn a_remote_client_is_not_started_while_the_link_is_down() {
        let down = LinkDown {
            host: "build-1".into(),
            reason: "Connection refused".into(),
            retry_after: std::time::Duration::from_secs(2),
        };
        let refused = tmux_command(Path::new("tmux"), &remote(Some(down.clone())), ["ls"]);
        assert_eq!(refused.err(), Some(down));
    }

    #[test]
    fn a_plain_client_gets_only_the_inherited_environment() {
        let command = tmux_command(
            Path::new("tmux"),
            &TmuxSocket::Name("x".into()).into(),
            [OsStr::new("list-sessions")],
        )
        .expect("a direct client has no link");
        let std = command.as_std();
        for (name, value) in std.get_envs() {
            let name = name.to_string_lossy();
            assert!(
                name == "TERM" || INHERITED_ENV.contains(&name.as_ref()),
                "{name} passed on"
            );
            assert!(value.is_some(), "{name} is set, not removed");
        }
    }
}
