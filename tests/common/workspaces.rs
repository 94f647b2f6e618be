//! Gateways in workspace mode for tests: a state directory of their own whose workspace
//! sandboxes (which outlive a gateway on purpose) are killed when the test ends.

use std::path::{Path, PathBuf};
use std::time::Duration;

use muxgate::config::Config;
use muxgate::workspace::admin;

/// The size of a test workspace's home.
pub(crate) const HOME_BYTES: u64 = 64 << 20;

/// A state directory; every workspace sandbox started in it is killed on drop (unless it is
/// another machine's).
pub(crate) struct WorkspaceState {
    dir: PathBuf,
    _temp: Option<tempfile::TempDir>,
    /// A test host's: its pids are the host's numbers, and its sandboxes die with the host.
    elsewhere: bool,
}

impl WorkspaceState {
    pub(crate) fn new() -> Self {
        let temp = tempfile::tempdir().expect("a state directory");
        Self {
            dir: temp.path().to_owned(),
            _temp: Some(temp),
            elsewhere: false,
        }
    }

    /// The state directory `dir`, made elsewhere: its workspaces are cleaned up all the same.
    pub(crate) fn at(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            _temp: None,
            elsewhere: false,
        }
    }

    /// The state directory `dir` of a test host's muxgate, to look at only: the pids
    /// [`Self::sandbox_pid`] reads are the host's numbers, and its sandboxes die with the host.
    pub(crate) fn elsewhere(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            _temp: None,
            elsewhere: true,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }

    /// `config` in workspace mode with this state directory, and homes of [`HOME_BYTES`] (a
    /// home is reserved on disk whole, where the gateway can mount it).
    pub(crate) fn config(&self, config: Config) -> Config {
        let mut config = super::relaxed(config);
        config.state.dir = Some(self.path().to_owned());
        config.workspaces.enabled = true;
        config.workspaces.limits.home_bytes = HOME_BYTES;
        config
    }

    /// The host directory of workspace `name`'s home (as `/workspace` inside).
    pub(crate) fn home(&self, name: &str) -> PathBuf {
        self.path().join("workspaces").join(name).join("home")
    }

    /// The pid of workspace `name`'s sandbox, when it runs (another machine's: the pid it
    /// recorded, whose process this machine cannot check).
    pub(crate) fn sandbox_pid(&self, name: &str) -> Option<i32> {
        let workspace = admin::list(self.path())
            .ok()?
            .into_iter()
            .find(|w| w.meta.name == name)?;
        if !self.elsewhere {
            return workspace.pid;
        }
        let recorded = std::fs::read_to_string(workspace.dir.join("server.pid")).ok()?;
        recorded.split_whitespace().next()?.parse().ok()
    }

    /// Runs `tmux args` on workspace `name`'s server from the host, as its user (the
    /// gateway's, `gateway_uid`, when workspaces have no uids of their own): the test's own
    /// look inside, not the gateway's.
    pub(crate) fn tmux(
        &self,
        name: &str,
        gateway_uid: Option<u32>,
        args: &[&str],
    ) -> std::process::Output {
        let workspace = admin::list(self.path())
            .expect("workspaces")
            .into_iter()
            .find(|w| w.meta.name == name)
            .expect("the workspace exists");
        let socket = workspace.dir.join("run/tmux.sock");
        let user = workspace
            .meta
            .run_as
            .map(|user| (user.uid, user.gid))
            .or(gateway_uid.map(|uid| (uid, uid)));
        let mut command = match user {
            Some((uid, gid)) => {
                let mut command = std::process::Command::new("setpriv");
                command.args([
                    format!("--reuid={uid}"),
                    format!("--regid={gid}"),
                    "--clear-groups".into(),
                    "tmux".into(),
                ]);
                command
            }
            None => std::process::Command::new("tmux"),
        };
        command
            .arg("-S")
            .arg(socket)
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("run tmux")
    }

    /// Stops every workspace (as `muxgate workspace stop` does).
    pub(crate) async fn stop_all(&self) {
        assert!(
            !self.elsewhere,
            "another machine's workspaces are stopped there"
        );
        for workspace in admin::list(self.path()).unwrap_or_default() {
            let _ = tokio::time::timeout(
                Duration::from_secs(10),
                admin::stop(self.path(), &workspace.meta.name),
            )
            .await;
        }
    }
}

impl Drop for WorkspaceState {
    fn drop(&mut self) {
        if self.elsewhere {
            return;
        }
        let workspaces = admin::list(self.path()).unwrap_or_default();
        for workspace in &workspaces {
            if let Some(pid) = workspace.pid {
                kill_tree(pid);
            }
        }
        // A sized home is a mount of the host's, and a memory cgroup outlives its processes:
        // neither may outlive the test.
        for workspace in &workspaces {
            if let Some(pid) = workspace.pid {
                let deadline = std::time::Instant::now() + Duration::from_secs(5);
                while Path::new(&format!("/proc/{pid}")).exists()
                    && std::time::Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            let home = workspace.dir.join("home");
            if muxgate::workspace::disk::is_mounted(&home).unwrap_or(false) {
                let _ = std::process::Command::new("umount")
                    .arg("-l")
                    .arg(&home)
                    .status();
            }
            // On a thread of its own: this may run inside the test's runtime.
            let dir = workspace.dir.clone();
            let _ = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()?;
                runtime.block_on(muxgate::workspace::cgroup::remove(
                    &dir,
                    muxgate::workspace::cgroup::EMPTYING_TIMEOUT,
                ))
            })
            .join();
        }
    }
}

/// SIGKILLs `pid` and its children (a sandbox's init ends its pid namespace with it).
fn kill_tree(pid: i32) {
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    for target in children
        .split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
        .chain([pid])
    {
        // SAFETY: kill(2) on a pid read from a pid file of this test's own sandbox.
        unsafe {
            libc::kill(target, libc::SIGKILL);
        }
    }
}
