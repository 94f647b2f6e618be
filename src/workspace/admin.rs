//! The operator's view of workspaces (`muxgate workspace list|stop|delete`): read from the
//! state directory and the process table, so it works whether the gateway runs or not. A
//! running gateway notices a stopped workspace on its next command (its connection ends) and
//! starts a fresh sandbox on the tenant's next call.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::layout::{Layout, WorkspaceMeta};
use super::name::WorkspaceName;
use super::{cgroup, disk, launch};

/// How long `stop` waits for a killed sandbox to be gone.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// One workspace as the operator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceStatus {
    /// What the workspace records of itself: its name, the user it runs as, when it was made.
    pub meta: WorkspaceMeta,
    /// Its directory under the state directory.
    pub dir: PathBuf,
    /// The sandbox's process id, when it runs.
    pub pid: Option<i32>,
}

/// Why an operation on a workspace failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// No workspace has this name.
    #[error("no workspace named {0:?} (see `muxgate workspace list`)")]
    Unknown(String),
    /// It runs on another host, whose own muxgate stops it.
    #[error(
        "workspace {name:?} runs on host {host}: stop it there (`muxgate workspace --config <hosts.{host}.workspaces_config> stop {name}`)"
    )]
    OnHost {
        /// The workspace.
        name: String,
        /// Its host.
        host: String,
    },
    /// Its sandbox did not stop in time.
    #[error("the sandbox of {0:?} did not stop within {STOP_TIMEOUT:?}")]
    StillRunning(String),
    /// Its files could not be read or removed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Every workspace in `state_dir`, by name.
pub fn list(state_dir: &Path) -> std::io::Result<Vec<WorkspaceStatus>> {
    Ok(layout(state_dir)
        .list()?
        .into_iter()
        .map(|(dir, meta)| WorkspaceStatus {
            pid: launch::running(&dir).map(|p| p.pid),
            meta,
            dir,
        })
        .collect())
}

/// Stops the sandbox of `name` (every program in it ends); its files stay, its home's file
/// system is unmounted and its memory cgroup removed. Returns whether it was running.
pub async fn stop(state_dir: &Path, name: &str) -> Result<bool, AdminError> {
    let dir = find(state_dir, name)?;
    if let Some(host) = super::layout::read_meta(&dir)?.host {
        return Err(AdminError::OnHost {
            name: name.to_owned(),
            host,
        });
    }
    let was_running = match launch::running(&dir) {
        Some(process) if launch::kill(process, STOP_TIMEOUT).await => true,
        Some(_) => return Err(AdminError::StillRunning(name.to_owned())),
        None => false,
    };
    disk::detach(&Layout::dirs(&dir).home).await?;
    cgroup::remove(&dir, cgroup::EMPTYING_TIMEOUT).await?;
    Ok(was_running)
}

/// Stops `name` and deletes its directory (home, record), whatever modes its tenant left on
/// the files there. For a workspace on another host only this gateway's record goes (its next
/// use places it anew); `Some(host)`: the host whose own muxgate holds its sandbox and files.
pub async fn delete(state_dir: &Path, name: &str) -> Result<Option<String>, AdminError> {
    let dir = find(state_dir, name)?;
    let host = super::layout::read_meta(&dir)?.host;
    if host.is_none() {
        stop(state_dir, name).await?;
    }
    tokio::task::spawn_blocking(move || remove_tree(&dir))
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
    Ok(host)
}

/// Removes `dir` and everything in it. A tenant may have left directories it made unreadable
/// (`chmod 000`), which a gateway without root cannot list: each directory is made the
/// owner's to enter first. Links are removed, never followed. A failure names the path.
fn remove_tree(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let named = |path: &Path, e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("cannot remove {}: {e}", path.display()))
    };
    let meta = std::fs::symlink_metadata(dir).map_err(|e| named(dir, e))?;
    if !meta.is_dir() {
        return std::fs::remove_file(dir).map_err(|e| named(dir, e));
    }
    // Best effort: a directory of another user's stays as it is, and its listing says why.
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    for entry in std::fs::read_dir(dir).map_err(|e| named(dir, e))? {
        let entry = entry.map_err(|e| named(dir, e))?;
        remove_tree(&entry.path())?;
    }
    std::fs::remove_dir(dir).map_err(|e| named(dir, e))
}

fn layout(state_dir: &Path) -> Layout {
    Layout::new(state_dir, super::own_uids())
}

/// The directory of workspace `name`, which must exist.
fn find(state_dir: &Path, name: &str) -> Result<PathBuf, AdminError> {
    let unknown = || AdminError::Unknown(name.to_owned());
    let parsed = WorkspaceName::parse(name).map_err(|_| unknown())?;
    let dir = layout(state_dir).dir(&parsed);
    match super::layout::read_meta(&dir) {
        Ok(meta) if meta.name == name => Ok(dir),
        _ => Err(unknown()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_tree_with_locked_directories_and_links_is_removed_without_following_links() {
        let base = tempfile::tempdir().unwrap();
        let outside = base.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), "k").unwrap();
        let tree = base.path().join("tree");
        let locked = tree.join("home/locked/deeper");
        std::fs::create_dir_all(&locked).unwrap();
        std::fs::write(locked.join("file"), "x").unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("home/link")).unwrap();
        for dir in [tree.join("home/locked/deeper"), tree.join("home/locked")] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o000)).unwrap();
        }
        remove_tree(&tree).unwrap();
        assert!(!tree.exists());
        assert!(outside.join("keep").exists(), "a link was followed");
        let missing = remove_tree(&tree).unwrap_err();
        assert!(missing.to_string().contains("tree"), "{missing}");
    }
}
