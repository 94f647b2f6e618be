//! How muxgate starts tmux client processes: which socket, which environment, and the safety
//! settings every child gets.
//!
//! Every `tmux` child is spawned with `PR_SET_PDEATHSIG = SIGKILL`: if muxgate dies, the kernel
//! kills its control clients. Without that, a `tmux -C` whose owner died stays attached forever,
//! throttles the panes of its session and wedges `kill-server`. Note that the signal follows the
//! *thread* that spawned the child, so children must be spawned from long-lived runtime threads
//! (async tasks), never from `spawn_blocking`.
//!
//! Children get a marker `TERM` (`muxgate-<owner pid>`), visible in `#{client_termname}`, so that
//! control clients left behind by a crashed predecessor can be recognised (see [`super::stale`]).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;

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

/// Prefix of the `TERM` value muxgate gives its control clients.
pub const TERM_MARKER_PREFIX: &str = "muxgate-";

/// The `TERM` value marking control clients owned by this process.
pub fn term_marker() -> String {
    format!("{TERM_MARKER_PREFIX}{}", std::process::id())
}

/// A `tmux` command for `socket` with muxgate's environment and PDEATHSIG set.
///
/// The environment drops `TMUX`/`TMUX_PANE` so that "the default socket" means tmux's default
/// and not the server muxgate itself may be running in.
pub fn tmux_command(tmux_bin: &std::path::Path, socket: &TmuxSocket) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(tmux_bin);
    command
        .args(socket.args())
        .env("TERM", term_marker())
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // SAFETY: `getpid` is async-signal-safe and runs in the parent here.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and only calls prctl(2) and
    // getppid(2), which are async-signal-safe; it touches no memory shared with the parent.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl; then no signal would ever come.
            // (No allocation here: the forked child of a threaded process must not malloc.)
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    command
}
