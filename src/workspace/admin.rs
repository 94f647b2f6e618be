//! The operator's view of workspaces (`muxgate workspace list|stop|delete`): read from the
//! state directory and the process table, so it works whether the gateway runs or not. A
//! running gateway notices a stopped workspace on its next command (its connection ends) and
//! starts a fresh sandbox on the tenant's next call.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::launch;
use super::layout::{Layout, WorkspaceMeta};
use super::name::WorkspaceName;

/// How long `stop` waits for a killed sandbox to be gone.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// One workspace as the operator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceStatus {
    pub meta: WorkspaceMeta,
    pub dir: PathBuf,
    /// The sandbox's process id, when it runs.
    pub pid: Option<i32>,
}

/// Why an operation on a workspace failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("no workspace named {0:?} (see `muxgate workspace list`)")]
    Unknown(String),
    #[error("the sandbox of {0:?} did not stop within {STOP_TIMEOUT:?}")]
    StillRunning(String),
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

/// Stops the sandbox of `name` (every program in it ends); its files stay. Returns whether it
/// was running.
pub async fn stop(state_dir: &Path, name: &str) -> Result<bool, AdminError> {
    let dir = find(state_dir, name)?;
    let Some(process) = launch::running(&dir) else {
        return Ok(false);
    };
    if launch::kill(process, STOP_TIMEOUT).await {
        Ok(true)
    } else {
        Err(AdminError::StillRunning(name.to_owned()))
    }
}

/// Stops `name` and deletes its directory (home, temporary files, record).
pub async fn delete(state_dir: &Path, name: &str) -> Result<(), AdminError> {
    stop(state_dir, name).await?;
    let dir = find(state_dir, name)?;
    tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir))
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
    Ok(())
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
