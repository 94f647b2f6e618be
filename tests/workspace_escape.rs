//! The escape suite: a hostile tenant in workspace mode, attacking from inside its own pane
//! (through `run_command` and `send_keys`, as an agent would), against a real `muxgate serve`
//! started the way a service manager starts one: from the directory of its config, named
//! relatively (`--config muxgate.toml`), in a session keyring of its own, with a descriptor it
//! inherited without close-on-exec, and a secret in its environment. The config, key and audit
//! log sit in a directory the workspaces are shown (so the masks are what hides them). A second
//! tenant has a secret on its screen, a buffer, a key in its keyring and a pending channel wait.
//!
//! The suite runs three times: with the gateway as root (workspaces get uids of their own,
//! sized homes and memory cgroups), as an unprivileged user (where the gateway cannot mount or
//! make cgroups, and says so), and with the workspaces on a test host the gateway reaches over
//! SSH (`workspaces.hosts`), where the host's muxgate starts and jails them with the host's own
//! configuration, which sits in a directory its workspaces are shown. There the attacks aim at
//! the host too: its configuration, its keys, its sshd, its tmux, its other tenant. A runner
//! that is not root runs the second only.

mod common;

use std::ffi::CStr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use common::calls::client_at as client;
use common::serve::{ServeOptions, ServeProcess};
use common::ssh_host::{self, SshHost};
use common::tools::{Client, call, call_ok};
use common::workspaces::WorkspaceState;
use muxgate::config::Config;
use muxgate::workspace::admin;
use serde_json::{Value, json};

const ENV_SECRET: &str = "env-secret-5f1c9e";
const KEY_SECRET: &str = "key-secret-0123456789abcdef0123456789abcdef";
const INHERITED_SECRET: &str = "inherited-secret-77e1d0";
const BOB_TYPED: &str = "hunter2-bob-typed";
const BOB_BUFFER: &str = "bob-buffer-contents";
const BOB_KEY: &str = "bob-keyring-secret-4410";
/// A line of the test host's muxgate configuration.
const HOST_CONFIG_SECRET: &str = "host-config-secret-9d04";

/// The session keyring the gateway is started in.
const GATEWAY_KEYRING: &CStr = c"muxgate-escape-gateway";
/// Where the gateway's inherited descriptor is.
const INHERITED_FD: i32 = 50;
/// The uid (and gid) an unprivileged gateway runs as.
const UNPRIVILEGED: u32 = 61_999;

/// Sizes every workspace of the suite gets: small, so that filling them is quick.
const HOME_BYTES: u64 = 32 << 20;
const TMP_BYTES: u64 = 32 << 20;
const SHM_BYTES: u64 = 8 << 20;
const MEMORY_BYTES: u64 = 192 << 20;

/// Who the gateway runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Privilege {
    Root,
    /// A plain user: the runner itself when it is not root, else [`UNPRIVILEGED`].
    Unprivileged,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_cannot_escape_a_gateway_running_as_root() {
    if !prerequisites("a_tenant_cannot_escape_a_gateway_running_as_root") {
        return;
    }
    if !is_root() {
        eprintln!("skipping the root half of the escape suite: the test runner is not root");
        return;
    }
    escape_suite(Privilege::Root, Place::Here).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_cannot_escape_a_gateway_running_unprivileged() {
    if !prerequisites("a_tenant_cannot_escape_a_gateway_running_unprivileged") {
        return;
    }
    escape_suite(Privilege::Unprivileged, Place::Here).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_cannot_escape_a_workspace_on_a_host() {
    let what = "a_tenant_cannot_escape_a_workspace_on_a_host";
    if !prerequisites(what) || !ssh_host::available(what) {
        return;
    }
    escape_suite(Privilege::Root, Place::host()).await;
}

fn prerequisites(what: &str) -> bool {
    common::needs::sandbox(what)
        && common::needs::program("keyctl", "keyutils", what)
        && common::needs::program("setpriv", "util-linux", what)
}

fn is_root() -> bool {
    // SAFETY: geteuid(2) cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The gateway's files, in a directory every workspace is shown read-only, and a second shown
/// directory under the host's `/tmp` (a workspace's own `/tmp` must not hide it).
struct GatewayFiles {
    root: tempfile::TempDir,
    under_tmp: tempfile::TempDir,
}

impl GatewayFiles {
    fn new(state: &Path, owner: Option<u32>, place: &Place) -> Self {
        let root = tempfile::Builder::new()
            .prefix("escape-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("a directory for the gateway's files");
        let under_tmp = tempfile::Builder::new()
            .prefix("muxgate-escape-shown-")
            .tempdir_in("/tmp")
            .expect("a shown directory under /tmp");
        let exposed = root.path();
        for dir in ["muxgate", "audit"] {
            std::fs::create_dir(exposed.join(dir)).unwrap();
        }
        std::fs::write(exposed.join("muxgate/secret"), KEY_SECRET).unwrap();
        std::fs::write(exposed.join("muxgate/inherited"), INHERITED_SECRET).unwrap();
        std::fs::write(exposed.join("public.txt"), "public\n").unwrap();
        std::fs::write(under_tmp.path().join("public.txt"), "public\n").unwrap();
        // The config sits right in the shown directory, named relatively by `serve`: only a
        // mask of the file itself hides it.
        let (places, tables) = place.gateway_config();
        let config = format!(
            "[state]\ndir = '{state}'\n\
             [workspaces]\nenabled = true\nexpose = ['{exposed}', '{under_tmp}']\n{places}\
             {limits}\
             [auth]\nsecret_file = 'muxgate/secret'\n\
             [audit]\npath = 'audit/audit.jsonl'\n\
             [limits]\nrequests_per_second = 1000\nrequest_burst = 1000\n\
             tool_calls_per_second = 1000\ntool_call_burst = 1000\n{tables}",
            state = state.display(),
            exposed = exposed.display(),
            under_tmp = under_tmp.path().display(),
            limits = workspace_limits(),
        );
        std::fs::write(exposed.join("muxgate.toml"), config).unwrap();
        for dir in [exposed, under_tmp.path()] {
            open_to(dir, owner);
        }
        Self { root, under_tmp }
    }

    fn path(&self, relative: &str) -> String {
        self.root.path().join(relative).display().to_string()
    }
}

/// The `[workspaces.limits]` of the suite's workspaces, wherever they run.
fn workspace_limits() -> String {
    format!(
        "[workspaces.limits]\nhome_bytes = {HOME_BYTES}\ntmp_bytes = {TMP_BYTES}\n\
         shm_bytes = {SHM_BYTES}\nmemory_bytes = {MEMORY_BYTES}\n\
         memory_per_process_bytes = 2147483648\n"
    )
}

/// Where the suite's workspaces run.
enum Place {
    /// Beside the gateway, which starts them.
    Here,
    /// On a test host (`south`, the one place in the gateway's `workspaces.hosts`), whose
    /// muxgate starts them.
    Host(Box<HostPlace>),
}

/// A test host running the suite's workspaces, and what the suite put there.
struct HostPlace {
    host: SshHost,
    /// The directory of the host's shown to its workspaces, holding its configuration.
    shown: std::path::PathBuf,
    /// The host's state directory, looked at from the test.
    sandboxes: WorkspaceState,
}

impl HostPlace {
    /// The host's muxgate configuration.
    fn config(&self) -> std::path::PathBuf {
        self.shown.join("host.toml")
    }

    /// Runs `muxgate workspace --config <the host's> <command> <name>` on the host.
    fn workspace(&self, command: &str, name: &str) -> String {
        let config = self.config().display().to_string();
        let muxgate = env!("CARGO_BIN_EXE_muxgate");
        let ran = self
            .host
            .console(&[muxgate, "workspace", "--config", &config, command, name]);
        assert!(
            ran.status.success(),
            "{command} {name} on the host: {}",
            String::from_utf8_lossy(&ran.stderr)
        );
        String::from_utf8_lossy(&ran.stdout).into_owned()
    }
}

impl Place {
    /// A fresh test host, with a shown directory and a public file in it.
    fn host() -> Self {
        let host = SshHost::start();
        let shown = host.dir().join("shown");
        std::fs::create_dir(&shown).expect("the host's shown directory");
        std::fs::write(shown.join("public.txt"), "public\n").expect("a public file");
        let sandboxes = WorkspaceState::elsewhere(&host.workspaces_state());
        Self::Host(Box::new(HostPlace {
            host,
            shown,
            sandboxes,
        }))
    }

    /// What the gateway's configuration adds: a line of its `[workspaces]`, and tables.
    fn gateway_config(&self) -> (String, String) {
        match self {
            Self::Here => (String::new(), String::new()),
            Self::Host(at) => (
                "hosts = ['south']\n".into(),
                format!(
                    "{}workspaces_config = '{}'\n",
                    at.host.config_table("south", &["default"]),
                    at.config().display()
                ),
            ),
        }
    }

    /// Sets the host up once the gateway's files exist: its configuration (in its shown
    /// directory, showing the same directory under `/tmp` the gateway's does, with the same
    /// limits), and the gateway's key restricted to workspace requests, as the README says.
    fn set_up(&self, files: &GatewayFiles) {
        let Self::Host(at) = self else { return };
        at.host.write_workspaces_config(
            &at.config(),
            &format!(
                "# {HOST_CONFIG_SECRET}\n[workspaces]\nenabled = true\n\
                 expose = ['{shown}', '{under_tmp}']\n{limits}",
                shown = at.shown.display(),
                under_tmp = files.under_tmp.path().display(),
                limits = workspace_limits(),
            ),
        );
        open_to(&at.shown, None);
        at.host.restrict_key(&format!(
            "{} host-gate --workspaces-config {}",
            env!("CARGO_BIN_EXE_muxgate"),
            at.config().display()
        ));
    }

    /// The state directory of the sandboxes.
    fn sandboxes<'a>(&'a self, gateway: &'a WorkspaceState) -> &'a WorkspaceState {
        match self {
            Self::Here => gateway,
            Self::Host(at) => &at.sandboxes,
        }
    }

    /// The directory shown to the workspaces, with their machine's configuration or key in it.
    fn shown(&self, files: &GatewayFiles) -> std::path::PathBuf {
        match self {
            Self::Here => files.root.path().to_owned(),
            Self::Host(at) => at.shown.clone(),
        }
    }

    /// A secret file in the shown directory (masked), and a line of it.
    fn secret(&self, files: &GatewayFiles) -> (String, &'static str) {
        match self {
            Self::Here => (files.path("muxgate/secret"), KEY_SECRET),
            Self::Host(at) => (at.config().display().to_string(), HOST_CONFIG_SECRET),
        }
    }

    /// Process `pid` (as the test numbers it) as the machine of the workspaces numbers it.
    fn pid_there(&self, pid: i32) -> i32 {
        match self {
            Self::Here => pid,
            Self::Host(at) => at.host.host_pid(pid).expect("a process of the host's"),
        }
    }

    /// The machine of the workspaces' process `pid`, as the test numbers it.
    fn pid_here(&self, pid: i32) -> i32 {
        match self {
            Self::Here => pid,
            Self::Host(at) => at.host.test_pid(pid).expect("a process of the host's"),
        }
    }

    /// A tmux server of the machine's own user (of `owner` beside a gateway running as it).
    fn host_server(&self, owner: Option<u32>) -> HostServer {
        match self {
            Self::Here => HostServer::start(owner, None),
            Self::Host(at) => HostServer::start(None, Some(at.host.dir().join("tmux"))),
        }
    }

    /// The attacks on a test host's own things: its keys, its login, its sshd.
    fn attacks(&self, gateway: &WorkspaceState) -> Vec<(&'static str, String)> {
        let Self::Host(at) = self else {
            return Vec::new();
        };
        let dir = at.host.dir().display();
        vec![
            ("gateway_state", format!("ls {}", gateway.path().display())),
            (
                "host_keys",
                format!(
                    "for f in host_key id authorized_keys; do grep -qs . {dir}/$f && exit 0; done; exit 1"
                ),
            ),
            ("host_login_env", "env | grep -q '^SSH_'".into()),
            (
                "host_sshd",
                format!("exec 3<>/dev/tcp/{}/22", at.host.address()),
            ),
        ]
    }

    /// Stops workspace `name`'s sandbox where it runs (`muxgate workspace stop`).
    async fn stop(&self, gateway: &WorkspaceState, name: &str) {
        match self {
            Self::Here => assert!(admin::stop(gateway.path(), name).await.unwrap()),
            Self::Host(at) => {
                let said = at.workspace("stop", name);
                assert!(!said.contains("not running"), "{said}");
            }
        }
    }

    /// Deletes workspace `name` where it runs (`muxgate workspace delete`), beside the
    /// running gateway, as the gateway's user (`owner`).
    fn delete(&self, gateway: &WorkspaceState, config_path: &Path, owner: Option<u32>, name: &str) {
        if let Self::Host(at) = self {
            at.workspace("delete", name);
            return;
        }
        let mut command = std::process::Command::new("setpriv");
        match owner {
            Some(uid) => command.args([
                format!("--reuid={uid}"),
                format!("--regid={uid}"),
                "--clear-groups".into(),
            ]),
            None => command.arg("--"),
        };
        let deleted = command
            .arg(env!("CARGO_BIN_EXE_muxgate"))
            .args(["workspace", "--config"])
            .arg(config_path)
            .args(["delete", name])
            .current_dir(config_path.parent().unwrap())
            .env("HOME", gateway.path())
            .output()
            .expect("run muxgate workspace delete");
        assert!(
            deleted.status.success(),
            "delete failed: {}",
            String::from_utf8_lossy(&deleted.stderr)
        );
    }

    /// Stops every workspace where it runs.
    async fn stop_all(&self, gateway: &WorkspaceState) {
        match self {
            Self::Here => gateway.stop_all().await,
            Self::Host(at) => {
                for workspace in admin::list(at.sandboxes.path()).unwrap_or_default() {
                    at.workspace("stop", &workspace.meta.name);
                }
            }
        }
    }
}

/// Makes `dir` and what is in it readable by everyone (a shown directory is meant to be read),
/// and owned by `owner` when given (the unprivileged gateway must read its own files).
fn open_to(dir: &Path, owner: Option<u32>) {
    let mut stack = vec![dir.to_owned()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = if meta.is_dir() { 0o755 } else { 0o644 };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        if let Some(uid) = owner {
            std::os::unix::fs::chown(&path, Some(uid), Some(uid)).unwrap();
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                stack.push(entry.unwrap().path());
            }
        }
    }
}

fn mint(config: &Config, sub: &str) -> String {
    muxgate::gateway::mint_full_access(config, sub, Duration::from_secs(600)).unwrap()
}

async fn run(client: &Client, pane: &str, command: &str) -> Value {
    call_ok(
        client,
        "run_command",
        json!({"target": pane, "command": command, "timeout": 90}),
    )
    .await
}

/// Waits (at most 30 s) until the caller's workspace answers; meanwhile its calls may only be
/// `unavailable` (a workspace on a host, before the gateway's link to it is up).
async fn until_up(client: &Client) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let listed = call(client, "list_sessions", json!({})).await;
        if listed.is_error != Some(true) {
            return;
        }
        let error = common::tool_error(&listed);
        assert!(
            error["kind"] == "unavailable" && std::time::Instant::now() < deadline,
            "{error}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The pane of a new session `name`.
async fn new_session(client: &Client, name: &str) -> String {
    let created = call_ok(client, "create_session", json!({"name": name})).await;
    created["session"]["active_pane_id"]
        .as_str()
        .expect("a pane id")
        .to_owned()
}

/// The host pid of the first process named `name` under `root` (a sandbox's pid).
fn descendant_named(root: i32, name: &str) -> Option<i32> {
    let mut frontier = vec![root];
    while let Some(pid) = frontier.pop() {
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        for child in children
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            let comm = std::fs::read_to_string(format!("/proc/{child}/comm")).unwrap_or_default();
            if comm.trim() == name {
                return Some(child);
            }
            frontier.push(child);
        }
    }
    None
}

/// The peak resident memory of process `pid`, in bytes (`VmHWM`).
fn peak_memory(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .expect("VmHWM in /proc/<pid>/status");
    kib * 1024
}

/// Waits (at most `timeout`) until the gateway's log holds `text`.
async fn log_shows(gateway: &ServeProcess, text: &str, timeout: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if gateway.log().contains(text) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A tmux server of the machine's own user, on a socket of its own, killed when dropped: the
/// positive control of the attacks that look for the machine's servers.
struct HostServer {
    name: String,
    /// Who runs it (`None`: the test's user).
    uid: Option<u32>,
    /// Its `TMUX_TMPDIR` (`None`: tmux's default, `/tmp`).
    tmpdir: Option<std::path::PathBuf>,
}

impl HostServer {
    fn start(uid: Option<u32>, tmpdir: Option<std::path::PathBuf>) -> Self {
        let server = Self {
            name: format!("escape-host-{}", std::process::id()),
            uid,
            tmpdir,
        };
        let status = server
            .tmux()
            .args(["-f", "/dev/null", "new-session", "-d"])
            .env("HOME", "/")
            .status()
            .expect("start a host tmux server");
        assert!(status.success(), "the host's tmux server did not start");
        server
    }

    /// Its socket directory.
    fn dir(&self) -> std::path::PathBuf {
        let uid = self.uid.unwrap_or_else(|| {
            // SAFETY: getuid(2) cannot fail.
            unsafe { libc::getuid() }
        });
        self.tmpdir
            .clone()
            .unwrap_or_else(|| "/tmp".into())
            .join(format!("tmux-{uid}"))
    }

    fn socket(&self) -> std::path::PathBuf {
        self.dir().join(&self.name)
    }

    /// `tmux -L <its name>`, as its user.
    fn tmux(&self) -> std::process::Command {
        let mut command = std::process::Command::new("setpriv");
        match self.uid {
            Some(uid) => command.args([
                format!("--reuid={uid}"),
                format!("--regid={uid}"),
                "--clear-groups".into(),
            ]),
            None => command.arg("--"),
        };
        command.args(["tmux", "-L", &self.name]).env_remove("TMUX");
        if let Some(dir) = &self.tmpdir {
            command.env("TMUX_TMPDIR", dir);
        }
        command
    }
}

impl Drop for HostServer {
    fn drop(&mut self) {
        let _ = self
            .tmux()
            .arg("kill-server")
            .stderr(std::process::Stdio::null())
            .status();
    }
}

async fn escape_suite(privilege: Privilege, place: Place) {
    // Who the gateway runs as, and the uid its files must belong to.
    let owner = match privilege {
        Privilege::Unprivileged if is_root() => Some(UNPRIVILEGED),
        _ => None,
    };
    let state = WorkspaceState::new();
    let files = GatewayFiles::new(state.path(), owner, &place);
    place.set_up(&files);
    if let Some(uid) = owner {
        std::os::unix::fs::chown(state.path(), Some(uid), Some(uid)).unwrap();
    }
    let host_server = place.host_server(owner);
    let sandboxes = place.sandboxes(&state);
    let log = files.root.path().join("serve.log");
    let inherited = std::fs::File::open(files.path("muxgate/inherited")).unwrap();
    let gateway = ServeProcess::start_with(
        Path::new("muxgate.toml"),
        &log,
        &[
            ("MUXGATE_METRICS__BEARER_TOKEN", ENV_SECRET),
            ("HOME", &state.path().display().to_string()),
        ],
        ServeOptions {
            cwd: Some(files.root.path().to_owned()),
            run_as: owner.map(|uid| (uid, uid)),
            session_keyring: Some(GATEWAY_KEYRING),
            inherited_fd: Some((inherited.into(), INHERITED_FD)),
            ..ServeOptions::default()
        },
    )
    .await;
    let config_path = files.root.path().join("muxgate.toml");
    // The test mints tokens with the gateway's key; the config names it relatively.
    let mut config = Config::load(Some(&config_path), std::iter::empty())
        .unwrap()
        .config;
    config.auth.secret_file = Some(files.root.path().join("muxgate/secret"));
    let alice = client(&gateway.mcp_url, &mint(&config, "alice")).await;
    let bob = client(&gateway.mcp_url, &mint(&config, "bob")).await;

    // What the gateway says it cannot do here.
    if privilege == Privilege::Unprivileged {
        assert!(
            log_shows(
                &gateway,
                "workspace homes have no size bound",
                Duration::ZERO
            )
            .await,
            "an unprivileged gateway must say its homes are unbounded:\n{}",
            gateway.log()
        );
    }

    // A workspace on a host is unavailable until the gateway's link to the host is up.
    for tenant in [&bob, &alice] {
        until_up(tenant).await;
    }

    // Bob's world: a secret typed on his screen, a buffer, a key in his keyring, a wait on a
    // channel.
    let bob_pane = new_session(&bob, "b-1").await;
    let stored = run(
        &bob,
        &bob_pane,
        &format!("tmux set-buffer -b bobbuf {BOB_BUFFER} && keyctl add user bobkey {BOB_KEY} @s"),
    )
    .await;
    assert_eq!(stored["exit_status"], 0, "bob's setup: {stored}");
    call_ok(
        &bob,
        "send_keys",
        json!({"target": bob_pane, "keys": BOB_TYPED, "literal": true}),
    )
    .await;
    // Numbered as the machine the workspaces run on numbers them.
    let bob_sandbox = sandboxes.sandbox_pid("bob").expect("bob's sandbox runs");
    let bob_shell = descendant_named(place.pid_here(bob_sandbox), "bash")
        .map(|pid| place.pid_there(pid))
        .expect("bob's shell");

    // Alice attacks from her own shell. Her first pane is the twin of bob's: same id, same pid
    // in its sandbox.
    let pane = new_session(&alice, "a-1").await;
    agent_reports_stay_with_their_workspace(&alice, &pane, &bob, &bob_pane).await;
    let port = gateway.base.rsplit(':').next().unwrap().to_owned();
    let state_dir = state.path().display().to_string();
    let sandbox_dir = sandboxes.path().display().to_string();
    let shown = place.shown(&files).display().to_string();
    let mut attacks: Vec<(&str, String)> = vec![
        (
            "bob_socket",
            format!("tmux -S {sandbox_dir}/workspaces/bob/run/tmux.sock ls"),
        ),
        ("state_dir", format!("ls {sandbox_dir}")),
        (
            "other_sockets",
            "find / -type s 2>/dev/null | grep -v '^/run/muxgate/tmux.sock$' | grep -q .".into(),
        ),
        (
            "host_tmux_dirs",
            format!(
                "ls -d /tmp/tmux-* {dir} 2>/dev/null | grep -q .",
                dir = host_server.dir().display()
            ),
        ),
        (
            "host_server",
            format!("tmux -S {} ls", host_server.socket().display()),
        ),
        (
            "config",
            format!("grep -q secret {}", files.path("muxgate.toml")),
        ),
        (
            "key",
            format!("grep -q {KEY_SECRET} {}", files.path("muxgate/secret")),
        ),
        (
            "audit_read",
            format!("grep -q . {}", files.path("audit/audit.jsonl")),
        ),
        ("audit_key", format!("cat {state_dir}/audit.key")),
        (
            "audit_write",
            format!("echo forged >> {}", files.path("audit/audit.jsonl")),
        ),
        (
            "gateway_environ",
            format!("cat /proc/{}/environ", gateway.pid),
        ),
        ("gateway_fds", format!("ls /proc/{}/fd", gateway.pid)),
        ("signal_gateway", format!("kill -0 {}", gateway.pid)),
        ("signal_bob", format!("kill -0 {bob_shell}")),
        ("bob_sandbox", format!("kill -0 {bob_sandbox}")),
        (
            "many_processes",
            "[ $(ls /proc | grep -c '^[0-9]') -gt 12 ]".into(),
        ),
        ("env_secret", format!("env | grep -q {ENV_SECRET}")),
        ("muxgate_env", "env | grep -q MUXGATE".into()),
        ("write_usr", "touch /usr/pwned".into()),
        ("write_etc", "touch /etc/pwned".into()),
        ("user_namespace", "unshare -U true".into()),
        ("gateway_port", format!("exec 3<>/dev/tcp/127.0.0.1/{port}")),
        ("bob_buffer", "tmux show-buffer -b bobbuf".into()),
        // The gateway's session keyring, shared by every sandbox that inherits it.
        (
            "bob_keyring",
            format!(
                "keyctl show @s 2>/dev/null | grep -q bobkey || keyctl print %user:bobkey | grep -q {BOB_KEY}"
            ),
        ),
        // A descriptor the gateway inherited, read through any process's /proc entry.
        (
            "inherited_fd",
            format!(
                "for f in /proc/[0-9]*/fd/*; do [ -f \"$f\" ] && grep -qs {INHERITED_SECRET} \"$f\" && exit 0; done; exit 1"
            ),
        ),
        // A host file behind a sandbox process's standard output or error.
        (
            "server_log_file",
            "for p in /proc/[0-9]*; do [ -f $p/fd/1 ] || [ -f $p/fd/2 ] && exit 0; done; exit 1"
                .into(),
        ),
        // Memory file systems beyond their size.
        (
            "fill_tmp",
            "head -c 100000000 /dev/zero > /tmp/fill; r=$?; rm -f /tmp/fill; exit $r".into(),
        ),
        (
            "fill_shm",
            "head -c 100000000 /dev/zero > /dev/shm/fill; r=$?; rm -f /dev/shm/fill; exit $r"
                .into(),
        ),
        // The home beyond its size, and the workspace's memory beyond its bound.
        (
            "fill_home",
            "head -c 100000000 /dev/zero > /workspace/fill; r=$?; rm -f /workspace/fill; exit $r"
                .into(),
        ),
        (
            "memory_whole",
            "python3 -c \"b = b'x' * (300 << 20)\"".into(),
        ),
        // Works, on alice's own server only: bob's wait must not wake (checked below).
        ("signal_channel", "tmux wait-for -S chan".into()),
        // Sanity: the attacks are not blocked by a broken shell or an empty view.
        ("public_file", format!("cat {shown}/public.txt")),
        (
            "public_under_tmp",
            format!("cat {}/public.txt", files.under_tmp.path().display()),
        ),
        ("own_server", "tmux ls | grep -q '^a-1:'".into()),
    ];
    attacks.extend(place.attacks(&state));
    let script: String = attacks
        .iter()
        .map(|(name, command)| {
            format!("if ( {command} ) >/dev/null 2>&1; then echo {name}=REACHED; else echo {name}=blocked; fi\n")
        })
        .collect();
    // The host's server is there to be found: the attack that looks for it can fail.
    assert!(
        host_server.socket().exists(),
        "the host's tmux server has no socket"
    );
    // Bob waits on channel `chan` while alice attacks (one attack signals `chan`).
    let (ran, bob_waited) = tokio::join!(
        run(&alice, &pane, &script),
        call_ok(
            &bob,
            "wait_for_channel",
            json!({"channel": "chan", "timeout": 30})
        ),
    );
    let output = ran["output"].as_str().unwrap();
    for (name, _) in &attacks {
        let expected = match *name {
            "public_file" | "public_under_tmp" | "own_server" | "signal_channel" => "REACHED",
            // Unbounded where the gateway cannot mount or make cgroups; it says so (above).
            "fill_home" | "memory_whole" if privilege == Privilege::Unprivileged => continue,
            _ => "blocked",
        };
        assert!(
            output.lines().any(|l| l == format!("{name}={expected}")),
            "{name} should be {expected} (gateway as {privilege:?}):\n{output}"
        );
    }

    let secret = place.secret(&files);
    hook_and_alias_attacks(sandboxes, owner, &secret, &shown, &alice, &pane).await;
    // The pipes towards a host's tmux clients are its sshd's, which runs as root.
    flood_the_gateways_pipe(privilege, &gateway, &alice, &bob, &pane, &bob_pane).await;

    // Bob is untouched: his wait was not woken, his buffer, key and screen are his.
    assert_eq!(
        bob_waited["signalled"], false,
        "alice woke bob's channel: {bob_waited}"
    );
    let kept = run(
        &bob,
        &bob_pane,
        "tmux show-buffer -b bobbuf; echo; keyctl print %user:bobkey",
    )
    .await;
    assert_eq!(
        kept["output"],
        format!("{BOB_BUFFER}\n{BOB_KEY}\n"),
        "{kept}"
    );
    let screen = call_ok(&bob, "capture_pane", json!({"target": bob_pane})).await;
    assert!(
        screen["text"].as_str().unwrap().contains(BOB_TYPED),
        "{screen}"
    );
    assert!(!output.contains(BOB_TYPED) && !output.contains(KEY_SECRET));
    assert!(!output.contains(HOST_CONFIG_SECRET));

    // Nothing alice did reached the gateway's files or its audit log.
    let audit = std::fs::read_to_string(files.path("audit/audit.jsonl")).unwrap_or_default();
    assert!(
        !audit.contains("forged"),
        "the audit log was written from a pane"
    );
    assert!(!gateway.log().contains(KEY_SECRET));

    a_restarted_workspace_is_another_server(&place, &state, &alice).await;
    deleting_a_workspace_beside_a_running_gateway(&place, &state, &config_path, owner, &alice)
        .await;

    drop((alice, bob));
    place.stop_all(&state).await;
}

/// A hook run when a client attaches reads and writes files on the server's side (the
/// sandbox); a command alias turns the gateway's next one-shot client's command into a
/// `load-buffer` of the key. Neither reaches a file of the host's.
async fn hook_and_alias_attacks(
    sandboxes: &WorkspaceState,
    owner: Option<u32>,
    (secret, secret_line): &(String, &str),
    shown: &str,
    alice: &Client,
    pane: &str,
) {
    let hook = format!(
        "tmux set-hook -g client-attached 'load-buffer -b leak {secret} ; set-buffer -b w x ; save-buffer -b w {shown}/pwned-by-hook'",
    );
    run(alice, pane, &hook).await;
    let second_pane = new_session(alice, "a-2").await;
    let waited = call_ok(
        alice,
        "pane_batch",
        json!({"operations": [
            {"op": "send_keys", "target": second_pane, "keys": "echo attached-$((6*7))", "literal": true, "enter": true},
            {"op": "wait_for_text", "target": second_pane, "patterns": ["attached-42"], "timeout": 20},
        ]}),
    )
    .await;
    assert_eq!(waited["results"][1]["success"], true, "{waited}");
    let leaked = run(alice, pane, "tmux show-buffer -b leak").await;
    assert_ne!(leaked["exit_status"], 0, "the key was read: {leaked}");
    assert!(!leaked["output"].as_str().unwrap().contains(secret_line));
    assert!(
        !Path::new(&format!("{shown}/pwned-by-hook")).exists(),
        "a gateway client wrote on the host"
    );
    // That client runs one command without attaching, so tmux has the *client* open the file
    // (a control client, once attached, has the server do it): in the client's jail there is
    // no such file.
    let alias = format!(
        "tmux set -s command-alias[100] 'wait-for=load-buffer -b leak {secret} ; wait-for'",
    );
    run(alice, pane, &alias).await;
    call_ok(
        alice,
        "wait_for_channel",
        json!({"channel": "c2", "timeout": 1}),
    )
    .await;
    let buffer = sandboxes.tmux("alice", owner, &["show-buffer", "-b", "leak"]);
    assert!(
        !String::from_utf8_lossy(&buffer.stdout).contains(secret_line),
        "the gateway's tmux client read the key for alice's server"
    );
    assert!(
        String::from_utf8_lossy(&buffer.stderr).contains("no buffer"),
        "{buffer:?}"
    );
    run(
        alice,
        pane,
        "tmux set -su command-alias[100]; tmux set-hook -gu client-attached",
    )
    .await;
}

/// Alice writes an endless line into the pipes her tmux server holds towards the gateway's
/// control clients (`/proc/<server>/fd/N`, the write ends). A root gateway's pipes are root's,
/// which a workspace's own uid cannot open; an unprivileged gateway's are the tenant's uid's,
/// and there the gateway drops those connections after a bounded read and says so. Either
/// way its memory stays flat, bob never notices, and alice's next call is served again.
async fn flood_the_gateways_pipe(
    privilege: Privilege,
    gateway: &ServeProcess,
    alice: &Client,
    bob: &Client,
    pane: &str,
    bob_pane: &str,
) {
    const FLOOD_BYTES: u64 = 300 << 20;
    let before = peak_memory(gateway.pid);
    let flood = format!(
        "srv=$(grep -l '^tmux: server' /proc/[0-9]*/comm | head -1 | cut -d/ -f3); \
         for f in /proc/$srv/fd/*; do n=${{f##*/}}; \
         [ -p \"$f\" ] && grep -qE '^flags:\\s*[0-7]*1$' /proc/$srv/fdinfo/$n && \
         (head -c {FLOOD_BYTES} /dev/zero | tr '\\0' a > \"$f\" &); done; \
         echo flood-$((6*7))"
    );
    call_ok(
        alice,
        "send_keys",
        json!({"target": pane, "keys": flood, "literal": true, "enter": true}),
    )
    .await;
    match privilege {
        Privilege::Root => {
            let waited = call_ok(
                alice,
                "wait_for_text",
                json!({"target": pane, "patterns": ["flood-42"], "include_screen": true, "timeout": 30}),
            )
            .await;
            assert_eq!(waited["found"], true, "{waited}");
            let screen = call_ok(alice, "capture_pane", json!({"target": pane})).await;
            assert!(
                screen["text"]
                    .as_str()
                    .unwrap()
                    .contains("Permission denied"),
                "the tenant opened the gateway's pipes: {screen}"
            );
        }
        Privilege::Unprivileged => assert!(
            log_shows(gateway, "broke its bounds", Duration::from_secs(60)).await,
            "the gateway did not drop the flooded connection:\n{}",
            gateway.log()
        ),
    }
    let grown = peak_memory(gateway.pid).saturating_sub(before);
    assert!(
        grown < 96 << 20,
        "the gateway's peak memory grew by {} MiB while {} MiB were written at it",
        grown >> 20,
        FLOOD_BYTES >> 20
    );
    let bob_listed = call_ok(bob, "list_panes", json!({})).await;
    assert!(bob_listed.to_string().contains(bob_pane), "{bob_listed}");
    let again = call_ok(alice, "list_sessions", json!({})).await;
    assert!(again["sessions"].is_array(), "{again}");
}

/// Every workspace's server is named `workspace`, and inside its sandbox its pid and its
/// panes' ids and pids repeat: alice's agent report on her pane must not become bob's twin
/// pane's.
async fn agent_reports_stay_with_their_workspace(
    alice: &Client,
    alice_pane: &str,
    bob: &Client,
    bob_pane: &str,
) {
    let (alice_ids, bob_ids) = (
        pane_and_pid(alice, alice_pane).await,
        pane_and_pid(bob, bob_pane).await,
    );
    // The precondition of the attack: the same pane id and pid on both servers.
    assert_eq!(
        alice_ids, bob_ids,
        "the twins differ; the attack shows nothing"
    );
    call_ok(
        alice,
        "report_agent_state",
        json!({"target": alice_pane, "state": "waiting_for_input", "agent": "mallory"}),
    )
    .await;
    let own = call_ok(alice, "get_pane_state", json!({"target": alice_pane})).await;
    assert_eq!(own["agent_state"], "waiting_for_input", "{own}");
    let victim = call_ok(bob, "get_pane_state", json!({"target": bob_pane})).await;
    assert!(
        victim.get("agent_state").is_none(),
        "alice's report reached bob's pane: {victim}"
    );
}

/// `%N pid` of a pane, as its own server sees it.
async fn pane_and_pid(client: &Client, pane: &str) -> String {
    let shown = call_ok(
        client,
        "display_message",
        json!({"target": pane, "format_string": "#{pane_id} #{pane_pid}"}),
    )
    .await;
    shown["output"].as_str().unwrap_or_default().to_owned()
}

/// A view link is bound to the workspace's server process: once the workspace restarts, its
/// new pane with the same id is another pane, and the link shows nothing.
async fn a_restarted_workspace_is_another_server(
    place: &Place,
    state: &WorkspaceState,
    alice: &Client,
) {
    // From a fresh server, so that the next one numbers its panes the same way.
    place.stop(state, "alice").await;
    let pane = new_session(alice, "viewed").await;
    let link = call_ok(alice, "view_link", json!({"target": pane})).await;
    let url = link["url"]
        .as_str()
        .unwrap()
        .replace("/view?", "/view/events?");
    let status = |url: String| async move {
        let response = reqwest::Client::new()
            .get(&url)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .expect("the view answers");
        response.status().as_u16()
    };
    assert_eq!(status(url.clone()).await, 200, "the link works at first");
    place.stop(state, "alice").await;
    // The next call starts a new sandbox, whose first panes reuse the ids.
    let mut reused = false;
    for name in ["again-1", "again-2", "again-3", "again-4"] {
        if new_session(alice, name).await == pane {
            reused = true;
            break;
        }
    }
    assert!(reused, "no pane of the new server took {pane}");
    assert_eq!(
        status(url).await,
        404,
        "a link made for the old server shows the new one's pane"
    );
}

/// `muxgate workspace delete` beside a running gateway, on a workspace whose tenant locked a
/// directory of its home (`chmod 000`): the delete succeeds, and the tenant's next call gets a
/// fresh workspace without a gateway restart.
async fn deleting_a_workspace_beside_a_running_gateway(
    place: &Place,
    state: &WorkspaceState,
    config_path: &Path,
    owner: Option<u32>,
    alice: &Client,
) {
    let pane = new_session(alice, "locker").await;
    let locked = run(
        alice,
        &pane,
        "mkdir -p /workspace/locked/inner && touch /workspace/locked/inner/f && chmod 000 /workspace/locked",
    )
    .await;
    assert_eq!(locked["exit_status"], 0, "{locked}");
    place.delete(state, config_path, owner, "alice");
    assert!(
        !place
            .sandboxes(state)
            .path()
            .join("workspaces/alice")
            .exists()
    );
    let listed = call_ok(alice, "list_sessions", json!({})).await;
    assert_eq!(listed["sessions"], json!([]), "{listed}");
    let fresh = new_session(alice, "fresh").await;
    let home = run(alice, &fresh, "ls -A /workspace | grep -v '^\\.' | wc -l").await;
    assert_eq!(home["output"], "0\n", "the old home is still there: {home}");
}
