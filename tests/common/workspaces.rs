//! Gateways in workspace mode for tests: a state directory of their own whose workspace
//! sandboxes (which outlive a gateway on purpose) are killed when the test ends.

use std::path::{Path, PathBuf};
use std::time::Duration;

use muxgate::config::Config;
use muxgate::workspace::admin;

/// A state directory; every workspace sandbox started in it is killed on drop.
pub struct WorkspaceState {
    pub dir: tempfile::TempDir,
}

impl WorkspaceState {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a state directory"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `config` in workspace mode with this state directory.
    pub fn config(&self, config: Config) -> Config {
        let mut config = super::relaxed(config);
        config.state.dir = Some(self.path().to_owned());
        config.workspaces.enabled = true;
        config
    }

    /// The host directory of workspace `name`'s home (as `/workspace` inside).
    pub fn home(&self, name: &str) -> PathBuf {
        self.path().join("workspaces").join(name).join("home")
    }

    /// The pid of workspace `name`'s sandbox, when it runs.
    pub fn sandbox_pid(&self, name: &str) -> Option<i32> {
        admin::list(self.path())
            .ok()?
            .into_iter()
            .find(|w| w.meta.name == name)
            .and_then(|w| w.pid)
    }

    /// Runs `tmux args` on workspace `name`'s server from the host, as its user: the test's own
    /// look inside, not the gateway's.
    pub fn tmux(&self, name: &str, args: &[&str]) -> std::process::Output {
        let workspace = admin::list(self.path())
            .expect("workspaces")
            .into_iter()
            .find(|w| w.meta.name == name)
            .expect("the workspace exists");
        let socket = workspace.dir.join("run/tmux.sock");
        let mut command = match workspace.meta.run_as {
            Some(user) => {
                let mut command = std::process::Command::new("setpriv");
                command.args([
                    format!("--reuid={}", user.uid),
                    format!("--regid={}", user.gid),
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
    pub async fn stop_all(&self) {
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
        for workspace in admin::list(self.path()).unwrap_or_default() {
            if let Some(pid) = workspace.pid {
                kill_tree(pid);
            }
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
