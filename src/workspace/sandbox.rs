//! The sandboxes, as `bwrap` (bubblewrap) command lines. Pure: what the host shows inside is
//! decided by [`HostView`] (built by [`super::host`] from the real file system), and this module
//! only turns it into arguments. Unit-tested.
//!
//! Two sandboxes:
//! - **the workspace** ([`server_command`]): the tenant's tmux server and everything its panes
//!   run. New user, PID, IPC, UTS and cgroup namespaces (and network, unless the host's is
//!   shared); a file system of the host's system directories read-only (with the gateway's
//!   secrets masked), a fresh `/proc` and `/dev`, and what is the workspace's own, writable:
//!   its home (`/workspace`), the socket directory (`/run/muxgate`), and `/tmp` and `/dev/shm`
//!   as memory file systems of a fixed size. The host directories it is shown (`expose`) are
//!   mounted after those, so one under `/tmp` is seen too. It is its own session leader and
//!   does not die with the gateway: a gateway restart finds it running. Resource limits are
//!   set by `prlimit` *inside* the new user namespace, so the process limit counts only the
//!   workspace's own processes.
//! - **a client jail** ([`client_wrapper`]): every tmux client process the gateway starts for a
//!   workspace (its control connections, `wait-for` clients, one-shot commands). A tenant can
//!   make such a client open files for reading and writing (a command alias turns the
//!   gateway's command into `load-buffer`/`save-buffer`; see [`muxgate_tmux::client::spawn`]); in
//!   the jail there is nothing to read and nowhere to write that matters: `/usr` read-only, an empty `/tmp`, the socket directory read-only, no
//!   network, no `/proc`, and it dies with the gateway.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The workspace's home inside its sandbox (also the panes' starting directory).
pub(crate) const INSIDE_HOME: &str = "/workspace";
/// The socket directory inside both sandboxes.
pub(crate) const INSIDE_RUN: &str = "/run/muxgate";
/// The tmux socket inside both sandboxes.
pub(crate) const INSIDE_SOCKET: &str = "/run/muxgate/tmux.sock";

/// Where a workspace's own mounts are, inside: a host directory shown there would be hidden
/// by them (or, for `/tmp`, mounted over them).
pub(crate) const OWN_MOUNTS: &[&str] = &["/proc", "/dev", "/tmp", INSIDE_HOME, INSIDE_RUN];

/// What the host shows inside a workspace, read-only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HostView {
    /// System directories bound at the same path (`/usr`, `/etc`).
    pub read_only: Vec<PathBuf>,
    /// Configured host directories (`workspaces.expose`), bound at the same path after the
    /// workspace's own mounts.
    pub exposed: Vec<PathBuf>,
    /// Top-level symbolic links reproduced as they are on the host (`/bin` → `usr/bin` on a
    /// merged-/usr system): `(link, target)`.
    pub symlinks: Vec<(PathBuf, PathBuf)>,
    /// Directories inside `read_only` or `exposed` shown empty (they hold the gateway's
    /// secrets).
    pub masked_dirs: Vec<PathBuf>,
    /// Files inside `read_only` or `exposed` shown empty.
    pub masked_files: Vec<PathBuf>,
    /// A tmux binary outside every `read_only` directory, bound at its own path.
    pub extra_binary: Option<PathBuf>,
}

/// The host directories of one workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkspaceDirs {
    /// Its home, `/workspace` inside.
    pub home: PathBuf,
    /// Its socket directory, `/run/muxgate` inside.
    pub run: PathBuf,
}

/// Sizes of a workspace's memory file systems, in bytes (0: the kernel's default, half the
/// machine's memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MountSizes {
    /// `/tmp`.
    pub tmp: u64,
    /// `/dev/shm`.
    pub shm: u64,
}

/// Whether a workspace shares the host's network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// Its own empty network namespace: no network at all (loopback only).
    None,
    /// The host's network: the internet, and every port listening on the host, other
    /// workspaces' included.
    Host,
}

/// Per-process and per-workspace resource limits, applied inside the sandbox (0: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessLimits {
    /// Processes (and threads) of the workspace at once (`RLIMIT_NPROC`, counted in its own
    /// user namespace).
    pub processes: u64,
    /// Address space of each process in bytes (`RLIMIT_AS`).
    pub memory_per_process: u64,
    /// Open files per process (`RLIMIT_NOFILE`).
    pub open_files: u64,
}

/// The fixed parts of every sandbox command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SandboxSpec {
    /// The `bwrap` binary.
    pub bwrap: PathBuf,
    /// Whether this `bwrap` knows `--disable-userns` (0.8.0 and newer): a sandboxed process
    /// may then not create user namespaces of its own.
    pub disable_userns: bool,
    /// The tmux binary, as an absolute path.
    pub tmux_bin: PathBuf,
    /// The `prlimit` binary, as an absolute path.
    pub prlimit: PathBuf,
    pub network: Network,
}

/// The `bwrap` arguments (after the program) that start a workspace's tmux server in its
/// sandbox, in the foreground (`tmux -D`: the sandbox lives as long as the server).
pub(crate) fn server_command(
    spec: &SandboxSpec,
    host: &HostView,
    dirs: &WorkspaceDirs,
    sizes: MountSizes,
    limits: &ProcessLimits,
) -> Vec<OsString> {
    let mut args = Args(workspace_sandbox(spec, host, dirs, sizes));
    args.value(&spec.prlimit);
    for (name, value) in [
        ("nproc", limits.processes),
        ("as", limits.memory_per_process),
        ("nofile", limits.open_files),
    ] {
        if value > 0 {
            args.value(format!("--{name}={value}:{value}"));
        }
    }
    args.flag("--");
    args.value(&spec.tmux_bin);
    args.flags(&["-S", INSIDE_SOCKET, "-D"]);
    args.0
}

/// The `bwrap` arguments of a workspace's sandbox, ending in `--`: the command it runs follows.
/// (The gateway's start-up check runs `true` in the same sandbox.)
pub(crate) fn workspace_sandbox(
    spec: &SandboxSpec,
    host: &HostView,
    dirs: &WorkspaceDirs,
    sizes: MountSizes,
) -> Vec<OsString> {
    let mut args = Args::default();
    args.flags(&[
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]);
    if spec.network == Network::None {
        args.flag("--unshare-net");
    }
    args.flag("--new-session");
    if spec.disable_userns {
        args.flag("--disable-userns");
    }
    host_view(&mut args, host);
    args.pair("--proc", "/proc");
    args.pair("--dev", "/dev");
    args.sized_tmpfs(sizes.shm, "/dev/shm");
    args.sized_tmpfs(sizes.tmp, "/tmp");
    args.triple("--bind", &dirs.home, INSIDE_HOME);
    args.triple("--bind", &dirs.run, INSIDE_RUN);
    // After the workspace's own mounts, so that a directory shown under /tmp is not hidden by
    // them; then the masks, over whatever they cover.
    for dir in &host.exposed {
        args.triple("--ro-bind", dir, dir);
    }
    for dir in &host.masked_dirs {
        args.pair("--tmpfs", dir);
        args.pair("--remount-ro", dir);
    }
    for file in &host.masked_files {
        args.triple("--ro-bind", "/dev/null", file);
    }
    args.pair("--chdir", INSIDE_HOME);
    args.pair("--cap-drop", "ALL");
    args.flag("--");
    args.0
}

/// The `bwrap` arguments (after the program, ending in `--`) of the jail a workspace's tmux
/// client processes run in; the tmux command line follows them.
pub(crate) fn client_wrapper(spec: &SandboxSpec, host: &HostView, run_dir: &Path) -> Vec<OsString> {
    let mut args = Args::default();
    args.flags(&[
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
    ]);
    if spec.disable_userns {
        args.flag("--disable-userns");
    }
    // Only /usr (the tmux binary and its libraries) of the host: no /etc, no /proc.
    let client_view = HostView {
        read_only: host
            .read_only
            .iter()
            .filter(|dir| dir.as_path() == Path::new("/usr"))
            .cloned()
            .collect(),
        symlinks: host.symlinks.clone(),
        extra_binary: host.extra_binary.clone(),
        ..HostView::default()
    };
    host_view(&mut args, &client_view);
    args.pair("--dev", "/dev");
    args.pair("--tmpfs", "/tmp");
    args.triple("--ro-bind", run_dir, INSIDE_RUN);
    // tmux starts a client's new sessions in the client's directory: the workspace's home
    // (an empty directory here, the real one in the server's sandbox).
    args.pair("--dir", INSIDE_HOME);
    args.pair("--chdir", INSIDE_HOME);
    args.pair("--cap-drop", "ALL");
    args.flag("--");
    args.0
}

/// The environment a workspace's tmux server starts with (its panes inherit it): a login
/// shell's basics and nothing of the gateway's. `tz` is the host's `TZ`, when set.
pub(crate) fn server_env(tz: Option<&std::ffi::OsStr>) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = [
        ("HOME", INSIDE_HOME),
        ("USER", "workspace"),
        ("LOGNAME", "workspace"),
        ("SHELL", "/bin/bash"),
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("LANG", "C.UTF-8"),
        ("TMPDIR", "/tmp"),
    ]
    .into_iter()
    .map(|(k, v)| (k.into(), v.into()))
    .collect();
    if let Some(tz) = tz {
        env.push(("TZ".into(), tz.to_owned()));
    }
    env
}

/// Read-only binds and symbolic links of the host.
fn host_view(args: &mut Args, host: &HostView) {
    for dir in &host.read_only {
        args.triple("--ro-bind", dir, dir);
    }
    for (link, target) in &host.symlinks {
        args.triple("--symlink", target, link);
    }
    if let Some(binary) = &host.extra_binary {
        args.triple("--ro-bind", binary, binary);
    }
}

/// A growing argument list.
#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn flag(&mut self, flag: &str) {
        self.0.push(flag.into());
    }

    fn flags(&mut self, flags: &[&str]) {
        for flag in flags {
            self.flag(flag);
        }
    }

    fn value(&mut self, value: impl Into<OsString>) {
        self.0.push(value.into());
    }

    /// A memory file system at `path`, of `bytes` unless 0.
    fn sized_tmpfs(&mut self, bytes: u64, path: &str) {
        if bytes > 0 {
            self.pair("--size", bytes.to_string());
        }
        self.pair("--tmpfs", path);
    }

    fn pair(&mut self, flag: &str, value: impl AsRef<std::ffi::OsStr>) {
        self.flag(flag);
        self.value(value.as_ref());
    }

    fn triple(
        &mut self,
        flag: &str,
        from: impl AsRef<std::ffi::OsStr>,
        to: impl AsRef<std::ffi::OsStr>,
    ) {
        self.pair(flag, from);
        self.value(to.as_ref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(network: Network) -> SandboxSpec {
        SandboxSpec {
            bwrap: "/usr/bin/bwrap".into(),
            disable_userns: true,
            tmux_bin: "/usr/bin/tmux".into(),
            prlimit: "/usr/bin/prlimit".into(),
            network,
        }
    }

    fn host() -> HostView {
        HostView {
            read_only: vec!["/usr".into(), "/etc".into()],
            exposed: vec!["/srv/data".into(), "/tmp/shared".into()],
            symlinks: vec![("/bin".into(), "usr/bin".into())],
            masked_dirs: vec!["/etc/muxgate".into()],
            masked_files: vec!["/etc/muxgate.toml".into()],
            extra_binary: None,
        }
    }

    fn dirs() -> WorkspaceDirs {
        WorkspaceDirs {
            home: "/state/ws/alice/home".into(),
            run: "/state/ws/alice/run".into(),
        }
    }

    fn text(args: &[OsString]) -> String {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The index of `needle` as a run of consecutive arguments.
    fn find(args: &[OsString], needle: &[&str]) -> Option<usize> {
        args.windows(needle.len())
            .position(|w| w.iter().zip(needle).all(|(a, b)| a == b))
    }

    #[test]
    fn the_server_runs_in_every_namespace_with_only_its_own_directories_writable() {
        let limits = ProcessLimits {
            processes: 256,
            memory_per_process: 1 << 30,
            open_files: 0,
        };
        let sizes = MountSizes {
            tmp: 1 << 20,
            shm: 0,
        };
        let args = server_command(&spec(Network::None), &host(), &dirs(), sizes, &limits);
        let line = text(&args);
        for flag in [
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-net",
            "--new-session",
            "--disable-userns",
        ] {
            assert!(args.iter().any(|a| a == flag), "{flag} missing: {line}");
        }
        assert!(!line.contains("--die-with-parent"), "{line}");
        for bind in [
            ["--ro-bind", "/usr", "/usr"],
            ["--ro-bind", "/etc", "/etc"],
            ["--symlink", "usr/bin", "/bin"],
            ["--bind", "/state/ws/alice/home", "/workspace"],
            ["--size", "1048576", "--tmpfs"],
            ["--bind", "/state/ws/alice/run", "/run/muxgate"],
            ["--ro-bind", "/dev/null", "/etc/muxgate.toml"],
        ] {
            assert!(find(&args, &bind).is_some(), "{bind:?} missing: {line}");
        }
        // /tmp is a memory file system of the size given; /dev/shm (size 0) the default one.
        assert!(find(&args, &["--size", "1048576", "--tmpfs", "/tmp"]).is_some());
        let shm = find(&args, &["--tmpfs", "/dev/shm"]).unwrap();
        assert_ne!(args[shm - 2], "--size", "{line}");
        // Exposed directories come after the workspace's own mounts (one under /tmp would be
        // hidden otherwise), and masks after every bind they may cover.
        let tmp = find(&args, &["--tmpfs", "/tmp"]).unwrap();
        let shared = find(&args, &["--ro-bind", "/tmp/shared", "/tmp/shared"]).unwrap();
        let data = find(&args, &["--ro-bind", "/srv/data", "/srv/data"]).unwrap();
        assert!(shared > tmp && data > tmp, "{line}");
        // Masks come after the binds they cover.
        let etc = find(&args, &["--ro-bind", "/etc", "/etc"]).unwrap();
        let mask = find(
            &args,
            &["--tmpfs", "/etc/muxgate", "--remount-ro", "/etc/muxgate"],
        )
        .unwrap();
        assert!(mask > etc && mask > shared && mask > data);
        // Only the workspace's own directories are writable.
        let writable: Vec<_> = args
            .iter()
            .enumerate()
            .filter(|(_, a)| *a == "--bind")
            .map(|(i, _)| args[i + 1].clone())
            .collect();
        assert_eq!(writable.len(), 2);
        assert!(
            writable
                .iter()
                .all(|p| p.to_string_lossy().starts_with("/state/ws/alice/"))
        );
        assert!(line.ends_with(
            "-- /usr/bin/prlimit --nproc=256:256 --as=1073741824:1073741824 -- /usr/bin/tmux -S /run/muxgate/tmux.sock -D"
        ), "{line}");
    }

    #[test]
    fn a_shared_network_is_not_unshared() {
        let limits = ProcessLimits {
            processes: 0,
            memory_per_process: 0,
            open_files: 0,
        };
        let sizes = MountSizes { tmp: 0, shm: 0 };
        let args = server_command(&spec(Network::Host), &host(), &dirs(), sizes, &limits);
        assert!(!args.iter().any(|a| a == "--unshare-net"));
        assert!(
            text(&args)
                .ends_with("-- /usr/bin/prlimit -- /usr/bin/tmux -S /run/muxgate/tmux.sock -D")
        );
    }

    #[test]
    fn a_client_jail_sees_only_usr_and_the_socket_directory_read_only() {
        let mut host = host();
        host.extra_binary = Some("/opt/tmux/bin/tmux".into());
        let args = client_wrapper(
            &spec(Network::Host),
            &host,
            Path::new("/state/ws/alice/run"),
        );
        let line = text(&args);
        for needle in [
            &["--unshare-all", "--unshare-user", "--die-with-parent"][..],
            &["--ro-bind", "/usr", "/usr"],
            &["--ro-bind", "/opt/tmux/bin/tmux", "/opt/tmux/bin/tmux"],
            &["--ro-bind", "/state/ws/alice/run", "/run/muxgate"],
            &["--tmpfs", "/tmp"],
        ] {
            assert!(find(&args, needle).is_some(), "{needle:?} missing: {line}");
        }
        assert!(!line.contains("/etc"), "{line}");
        assert!(!line.contains("--proc"), "{line}");
        assert!(!args.iter().any(|a| a == "--bind"), "{line}");
        assert_eq!(args.last().map(|a| a.as_os_str()), Some("--".as_ref()));
    }
}
