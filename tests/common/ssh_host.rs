//! Test hosts: machines a test makes itself, for the gateway to reach over SSH.
//!
//! Each [`SshHost`] is a network namespace of its own, joined to the test's by a veth pair
//! with addresses of the test's choosing (nothing is routed beyond it), with its own `sshd`
//! (host key, client key and `authorized_keys` in the test's temp dir) started as the first
//! process of a pid namespace of its own: every process of the host (its sshd, its sessions,
//! its tmux servers) dies when the host is killed. Its sessions get a `HOME` and a tmux socket
//! directory of their own, so nothing of the machine's user reaches them.
//!
//! Needs root (namespaces), `ip` (iproute2), `sshd` (openssh-server), `unshare` and
//! `nsenter` (util-linux); see [`available`].

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::needs;

/// Hosts made by this test process so far (their addresses and names differ by it).
static HOSTS: AtomicU32 = AtomicU32::new(0);

/// Whether test hosts can be made here: as root, with `ip`, `sshd` and `unshare`. Outside CI a
/// missing piece skips the test with a note; under `CI=true` it fails it.
pub(crate) fn available(what: &str) -> bool {
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "test hosts need root (network namespaces)"
        );
        eprintln!("skipping {what}: test hosts need root");
        return false;
    }
    needs::program("ip", "iproute2", what)
        && needs::program("sshd", "openssh-server", what)
        && needs::program("ssh", "openssh-client", what)
        && needs::program("unshare", "util-linux", what)
        && needs::program("nsenter", "util-linux", what)
}

/// A machine of the test's own, reached over SSH at [`SshHost::addr`] port 22.
pub(crate) struct SshHost {
    dir: tempfile::TempDir,
    netns: String,
    /// The test's end of the veth pair.
    veth: String,
    /// The host's address.
    pub addr: String,
    /// `unshare … sshd`: the host's first process.
    sshd: Option<Child>,
}

/// A /24 for host `n` of test process `pid`: 10.(100 + pid % 100).(n).0/24, unique per test
/// process and host, or the next one up that no interface of this machine holds (one left by a
/// test process that was killed before it could clean up would take the connections).
fn free_subnet(pid: u32, n: u32) -> String {
    let held = Command::new("ip")
        .args(["-o", "-4", "addr"])
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default();
    (0..100)
        .map(|k| format!("10.{}.{}", 100 + (pid + k) % 100, n % 256))
        .find(|subnet| !held.contains(&format!("inet {subnet}.")))
        .unwrap_or_else(|| panic!("no free 10.1xx.{n}.0/24 subnet for a test host"))
}

impl SshHost {
    /// Makes a host and waits until its sshd accepts connections.
    pub(crate) fn start() -> Self {
        let n = HOSTS.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let subnet = free_subnet(pid, n);
        let tag = format!("{:x}{n}", pid % 0xfffff);
        let host = Self {
            dir: tempfile::tempdir().expect("a host directory"),
            netns: format!("mgh-{tag}"),
            veth: format!("mgh{tag}a"),
            addr: format!("{subnet}.2"),
            sshd: None,
        };
        let peer = format!("mgh{tag}b");
        ip(&["netns", "add", &host.netns]);
        ip(&[
            "link", "add", &host.veth, "type", "veth", "peer", "name", &peer,
        ]);
        ip(&["link", "set", &peer, "netns", &host.netns]);
        ip(&["addr", "add", &format!("{subnet}.1/24"), "dev", &host.veth]);
        ip(&["link", "set", &host.veth, "up"]);
        host.inside(&[
            "ip",
            "addr",
            "add",
            &format!("{}/24", host.addr),
            "dev",
            &peer,
        ]);
        host.inside(&["ip", "link", "set", &peer, "up"]);
        host.inside(&["ip", "link", "set", "lo", "up"]);
        host.make_keys();
        let mut host = host;
        host.boot();
        host
    }

    /// The host's address on the test's network.
    pub(crate) fn address(&self) -> &str {
        &self.addr
    }

    /// The directory of the host's keys and files.
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The key the gateway logs in with.
    pub(crate) fn identity_file(&self) -> PathBuf {
        self.dir().join("id")
    }

    /// A `known_hosts` listing the host's real key.
    pub(crate) fn known_hosts(&self) -> PathBuf {
        self.dir().join("known_hosts")
    }

    /// A `known_hosts` listing another key for the host's address (a host impersonated).
    pub(crate) fn wrong_known_hosts(&self) -> PathBuf {
        self.dir().join("wrong_known_hosts")
    }

    /// The `[hosts.<name>]` table of a gateway config reaching this host, with `servers`,
    /// keepalives every second (a lost link is noticed within about 3 s) and this build's
    /// muxgate as the host's (for its process probe).
    pub(crate) fn config_table(&self, name: &str, servers: &[&str]) -> String {
        let servers: Vec<String> = servers.iter().map(|s| format!("'{s}'")).collect();
        format!(
            "[hosts.{name}]\nssh = 'root@{addr}:22'\nidentity_file = '{id}'\n\
             known_hosts = '{known}'\nservers = [{servers}]\nkeepalive_secs = 1\n\
             connect_timeout_secs = 3\nmuxgate = '{muxgate}'\n",
            muxgate = env!("CARGO_BIN_EXE_muxgate"),
            addr = self.addr,
            id = self.identity_file().display(),
            known = self.known_hosts().display(),
            servers = servers.join(", "),
        )
    }

    /// Sets the host up to run a gateway's workspaces: a muxgate configuration of its own (its
    /// state directory in the host's directory, small limits), which the returned path names.
    pub(crate) fn workspaces_config(&self) -> PathBuf {
        let path = self.dir().join("host.toml");
        self.write_workspaces_config(
            &path,
            &format!(
                "[workspaces.limits]\nhome_bytes = {}\nmemory_bytes = {}\n",
                32u64 << 20,
                192u64 << 20,
            ),
        );
        path
    }

    /// Writes the host's muxgate configuration to `path`: its state directory (see
    /// [`Self::workspaces_state`]), then `tables` (its `[workspaces]`).
    pub(crate) fn write_workspaces_config(&self, path: &Path, tables: &str) {
        use std::os::unix::fs::PermissionsExt;
        // Workspace users pass through the host's directory to their own (their files there
        // stay private: keys are 0600, workspace directories 0700).
        std::fs::set_permissions(self.dir(), std::fs::Permissions::from_mode(0o711))
            .expect("the host directory's mode");
        std::fs::write(
            path,
            format!(
                "[state]\ndir = '{}'\n\n{tables}",
                self.workspaces_state().display()
            ),
        )
        .expect("the host's configuration");
    }

    /// The state directory of the workspaces the host runs (see [`Self::workspaces_config`]).
    pub(crate) fn workspaces_state(&self) -> PathBuf {
        self.dir().join("state")
    }

    /// Logs in with the gateway's key, with ssh `options`, asking to run `command` (none: a
    /// login shell).
    pub(crate) fn try_ssh(&self, options: &[&str], command: &[&str]) -> std::process::Output {
        Command::new("ssh")
            .args([
                "-F",
                "/dev/null",
                "-T",
                "-o",
                "BatchMode=yes",
                "-o",
                "IdentitiesOnly=yes",
            ])
            .arg("-o")
            .arg(format!(
                "UserKnownHostsFile={}",
                self.known_hosts().display()
            ))
            .arg("-i")
            .arg(self.identity_file())
            .args(options)
            .arg(format!("root@{}", self.addr))
            .args(command)
            .stdin(Stdio::null())
            .output()
            .expect("run ssh")
    }

    /// Lets the gateway's key run only `command` (sshd's forced command), with `restrict`.
    pub(crate) fn restrict_key(&self, command: &str) {
        let key = std::fs::read_to_string(self.dir().join("id.pub")).expect("the key");
        std::fs::write(
            self.dir().join("authorized_keys"),
            format!("restrict,command=\"{command}\" {key}"),
        )
        .expect("authorized_keys");
    }

    /// Runs `command` (a shell command line) on the host over SSH; its standard output.
    pub(crate) fn ssh(&self, command: &str) -> String {
        let output = self.try_ssh(&[], &["--", command]);
        assert!(
            output.status.success(),
            "on the host: {command}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Runs tmux `args` against the host's default server directly (not over the network):
    /// for what the host's own user does while the gateway cannot see it.
    pub(crate) fn tmux(&self, args: &[&str]) {
        run(Command::new("tmux")
            .env("TMUX_TMPDIR", self.dir().join("tmux"))
            .env_remove("TMUX")
            .args(args));
    }

    /// Kills every process of the host (sshd, its sessions, its tmux servers): the machine is
    /// gone, as after a power loss.
    pub(crate) fn kill(&mut self) {
        if let Some(mut sshd) = self.sshd.take() {
            let _ = sshd.kill();
            let _ = sshd.wait();
        }
    }

    /// Starts the host again after [`SshHost::kill`]: a fresh sshd, no tmux server.
    pub(crate) fn boot(&mut self) {
        assert!(self.sshd.is_none(), "the host is running");
        let log = std::fs::File::create(self.dir().join("sshd.log")).expect("sshd log");
        // Not `ip netns exec`, which mounts a `/sys` of its own and with it hides the
        // machine's cgroups: a host has them (its workspaces' memory cgroups).
        let sshd = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{}", self.netns))
            // A pid namespace with its own `/proc`: the host's process numbers (which tmux
            // reports) are read there, as on a machine of its own.
            .args(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc"])
            .args(["/usr/sbin/sshd", "-D", "-e", "-f"])
            .arg(self.dir().join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start sshd");
        self.sshd = Some(sshd);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.accepts() {
            assert!(
                Instant::now() < deadline,
                "the host's sshd did not start: {}",
                self.sshd_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs `command` on the host as root from its console, not over SSH: in its pid, mount and
    /// network namespaces, so that the process numbers it reads and writes are the host's.
    pub(crate) fn console(&self, command: &[&str]) -> std::process::Output {
        let init = self.init_pid().to_string();
        Command::new("nsenter")
            .args(["--target", &init, "--pid", "--mount", "--net", "--"])
            .args(command)
            .stdin(Stdio::null())
            .output()
            .expect("run nsenter")
    }

    /// The number the host gives process `pid` (as the test numbers it), if it is the host's.
    pub(crate) fn host_pid(&self, pid: i32) -> Option<i32> {
        descendants(self.init_pid())
            .contains(&pid)
            .then(|| nested_pid(pid))
            .flatten()
    }

    /// The host's process `host_pid`, as the test numbers it.
    pub(crate) fn test_pid(&self, host_pid: i32) -> Option<i32> {
        descendants(self.init_pid())
            .into_iter()
            .find(|&pid| nested_pid(pid) == Some(host_pid))
    }

    /// The host's first process (its sshd), as the test numbers it.
    fn init_pid(&self) -> i32 {
        // `nsenter` execs `unshare`, whose one child is the namespace's first process.
        let unshare = self.sshd.as_ref().expect("the host is running").id();
        std::fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children"))
            .ok()
            .and_then(|children| children.split_whitespace().next()?.parse().ok())
            .expect("the host's first process")
    }

    /// Cuts the host's network (its processes go on), or restores it.
    pub(crate) fn set_link(&self, up: bool) {
        ip(&["link", "set", &self.veth, if up { "up" } else { "down" }]);
    }

    /// What the host's sshd logged.
    pub(crate) fn sshd_log(&self) -> String {
        std::fs::read_to_string(self.dir().join("sshd.log")).unwrap_or_default()
    }

    fn accepts(&self) -> bool {
        let addr = format!("{}:22", self.addr).parse().expect("an address");
        std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
    }

    fn inside(&self, command: &[&str]) {
        let mut args = vec!["netns", "exec", &self.netns];
        args.extend(command);
        ip(&args);
    }

    fn make_keys(&self) {
        let dir = self.dir();
        for key in ["host_key", "id", "other_key"] {
            run(Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", ""])
                .arg("-f")
                .arg(dir.join(key)));
        }
        let public = |key: &str| {
            let text = std::fs::read_to_string(dir.join(format!("{key}.pub"))).expect("a key");
            text.split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
        };
        std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).expect("authorized_keys");
        std::fs::write(
            self.known_hosts(),
            format!("{} {}\n", self.addr, public("host_key")),
        )
        .expect("known_hosts");
        std::fs::write(
            self.wrong_known_hosts(),
            format!("{} {}\n", self.addr, public("other_key")),
        )
        .expect("wrong known_hosts");
        let home = dir.join("home");
        let tmux_dir = dir.join("tmux");
        for made in [&home, &tmux_dir] {
            std::fs::create_dir(made).expect("a host directory");
        }
        std::fs::create_dir_all("/run/sshd").expect("sshd's privilege separation directory");
        std::fs::write(
            dir.join("sshd_config"),
            format!(
                "ListenAddress {addr}\nPort 22\nHostKey {dir}/host_key\n\
                 AuthorizedKeysFile {dir}/authorized_keys\nPidFile none\nUsePAM no\n\
                 StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PermitRootLogin prohibit-password\nMaxSessions 1000\nMaxStartups 1000\n\
                 SetEnv HOME={home} TMUX_TMPDIR={tmux}\n",
                addr = self.addr,
                dir = dir.display(),
                home = home.display(),
                tmux = tmux_dir.display(),
            ),
        )
        .expect("sshd_config");
    }
}

impl Drop for SshHost {
    fn drop(&mut self) {
        self.kill();
        // Deleting the namespace deletes its end of the pair, and with it the test's end.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.netns])
            .status();
    }
}

/// `root` and every process below it, as the test numbers them.
fn descendants(root: i32) -> Vec<i32> {
    let mut found = vec![root];
    let mut next = 0;
    while let Some(&pid) = found.get(next) {
        next += 1;
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        found.extend(
            children
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    found
}

/// Process `pid`'s number one pid namespace down from the test's (`NSpid`'s second field).
fn nested_pid(pid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let numbers = status.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
    numbers.split_whitespace().nth(1)?.parse().ok()
}

fn ip(args: &[&str]) {
    run(Command::new("ip").args(args));
}

fn run(command: &mut Command) {
    let output = command.output().expect("run a setup command");
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
