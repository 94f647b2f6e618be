//! An agent's git worktree: made from a configured repository on a branch named after the
//! agent, checked for work not yet committed, and removed (the branch stays, with whatever the
//! agent committed).
//!
//! git runs as a child process with its arguments as separate words (no shell), without a
//! terminal to ask on, without hooks or an fsmonitor (programs the agent could name in the
//! repository's configuration), for at most [`GIT_TIMEOUT`], and what it prints is read up to
//! [`OUTPUT_LIMIT`]: a worktree is the tenant's, and so is how much `git status` has to say.
//!
//! The steps that change a repository's worktrees run one at a time per configured repository
//! in this gateway ([`hold`]): git does not wait for a second `git worktree add` but fails it,
//! when it reads the first one's half-written entry (`failed to read
//! .git/worktrees/<w>/commondir`). git run by someone else (an agent in its worktree, another
//! gateway) is not held back by it.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::config::Repository;

/// The longest one git command may take, and the longest a step waits for the repository's
/// other steps.
const GIT_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest the undoing of a failed spawn waits for the repository's other steps: given up,
/// it would leave a worktree and branch that make the same id's next spawn fail.
const DISCARD_WAIT: Duration = Duration::from_secs(300);
/// The most of git's output (each stream) that is read.
const OUTPUT_LIMIT: u64 = 64 * 1024;
/// The most uncommitted paths an answer names.
pub(crate) const MAX_NAMED_CHANGES: usize = 10;

/// A worktree made for an agent.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Worktree {
    /// The `[repositories.<name>]` it was made from.
    pub(crate) repository: String,
    /// Where it is.
    pub(crate) path: PathBuf,
    /// The agent's branch.
    pub(crate) branch: String,
    /// What the branch started from.
    pub(crate) base: String,
}

/// Why a git step failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WorktreeError {
    /// git could not be run.
    #[error("git could not be run: {0}")]
    Spawn(std::io::Error),
    /// git ran past [`GIT_TIMEOUT`] and was stopped.
    #[error("git took longer than {} s and was stopped", GIT_TIMEOUT.as_secs())]
    TimedOut,
    /// Other steps on the repository held it for longer than the step would wait.
    #[error(
        "other worktrees of the repository were still being made or removed after {} s",
        .0.as_secs()
    )]
    Busy(Duration),
    /// git said no; the line that says why ([`why_git_failed`]).
    #[error("git: {0}")]
    Refused(String),
    /// The agent's worktree directory is there already.
    #[error("{0} exists already")]
    Exists(PathBuf),
    /// The worktrees directory could not be made.
    #[error("{0}")]
    Io(std::io::Error),
}

/// The branch of agent `agent`.
pub(crate) fn branch_of(agent: &str) -> String {
    format!("agent/{agent}")
}

/// Makes agent `agent`'s worktree of `repository` (named `name`) on a new branch from `base`.
pub(crate) async fn add(
    name: &str,
    repository: &Repository,
    agent: &str,
    base: &str,
) -> Result<Worktree, WorktreeError> {
    let path = repository.worktrees.join(agent);
    let _held = hold(&repository.path, GIT_TIMEOUT).await?;
    if tokio::fs::symlink_metadata(&path).await.is_ok() {
        return Err(WorktreeError::Exists(path));
    }
    tokio::fs::create_dir_all(&repository.worktrees)
        .await
        .map_err(WorktreeError::Io)?;
    let branch = branch_of(agent);
    git(
        &repository.path,
        &[
            "worktree".as_ref(),
            "add".as_ref(),
            "-b".as_ref(),
            branch.as_ref(),
            path.as_os_str(),
            base.as_ref(),
        ],
    )
    .await?;
    Ok(Worktree {
        repository: name.to_owned(),
        path,
        branch,
        base: base.to_owned(),
    })
}

/// Makes `worktree` of `repository` again on its existing branch (its directory was removed,
/// say with the machine's scratch disk): what the agent committed is there, nothing else.
pub(crate) async fn restore(
    repository: &Repository,
    worktree: &Worktree,
) -> Result<(), WorktreeError> {
    let _held = hold(&repository.path, GIT_TIMEOUT).await?;
    if tokio::fs::symlink_metadata(&worktree.path).await.is_ok() {
        return Err(WorktreeError::Exists(worktree.path.clone()));
    }
    tokio::fs::create_dir_all(&repository.worktrees)
        .await
        .map_err(WorktreeError::Io)?;
    // A worktree whose directory is gone is still registered until pruned.
    git(&repository.path, &["worktree".as_ref(), "prune".as_ref()]).await?;
    git(
        &repository.path,
        &[
            "worktree".as_ref(),
            "add".as_ref(),
            worktree.path.as_os_str(),
            worktree.branch.as_ref(),
        ],
    )
    .await
    .map(drop)
}

/// The paths with work not committed in `worktree` (changed, staged or untracked), at most
/// [`MAX_NAMED_CHANGES`], and how many there are (up to what git's bounded output holds).
pub(crate) async fn changes(worktree: &Path) -> Result<(Vec<String>, usize), WorktreeError> {
    let status = git(
        worktree,
        &[
            "status".as_ref(),
            "--porcelain".as_ref(),
            "--no-renames".as_ref(),
            "-z".as_ref(),
        ],
    )
    .await?;
    let paths: Vec<&str> = status.split('\0').filter(|entry| entry.len() > 3).collect();
    let named = paths
        .iter()
        .take(MAX_NAMED_CHANGES)
        .map(|entry| entry[3..].to_owned())
        .collect();
    Ok((named, paths.len()))
}

/// Removes `worktree` from `repository` (with `force`, whatever is in it); its branch stays.
/// A worktree already gone (removed by another call meanwhile) is no error.
pub(crate) async fn remove(
    repository: &Path,
    worktree: &Path,
    force: bool,
) -> Result<(), WorktreeError> {
    let _held = hold(repository, GIT_TIMEOUT).await?;
    if tokio::fs::symlink_metadata(worktree).await.is_err() {
        return Ok(());
    }
    remove_as(repository, worktree, force).await
}

/// [`remove`], by whoever [`hold`]s the repository.
async fn remove_as(repository: &Path, worktree: &Path, force: bool) -> Result<(), WorktreeError> {
    let mut args: Vec<&OsStr> = vec!["worktree".as_ref(), "remove".as_ref()];
    if force {
        args.push("--force".as_ref());
    }
    args.push(worktree.as_os_str());
    git(repository, &args).await.map(drop)
}

/// Undoes [`add`] after a spawn failed: the worktree and its new, empty branch go.
pub(crate) async fn discard(repository: &Path, worktree: &Worktree) {
    let discarded = async {
        let _held = hold(repository, DISCARD_WAIT).await?;
        remove_as(repository, &worktree.path, true).await?;
        git(
            repository,
            &["branch".as_ref(), "-D".as_ref(), worktree.branch.as_ref()],
        )
        .await
    };
    if let Err(error) = discarded.await {
        tracing::warn!(path = %worktree.path.display(), %error, "a failed spawn's worktree was not cleaned up");
    }
}

/// Runs `git -C dir ARGS`; its standard output, or why it failed.
async fn git(dir: &Path, args: &[&OsStr]) -> Result<String, WorktreeError> {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        // The worktree is the agent's to write, the repository's configuration included:
        // nothing in it may make the gateway's git run a program (a hook, an fsmonitor).
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
        ])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        // Its messages untranslated: `why_git_failed` looks for `fatal:` and `error:`.
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(WorktreeError::Spawn)?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(WorktreeError::Spawn(std::io::Error::other("no pipes")));
    };
    let run = async {
        let (out, err) = tokio::join!(read_bounded(stdout), read_bounded(stderr));
        let status = child.wait().await.map_err(WorktreeError::Spawn)?;
        Ok::<_, WorktreeError>((status, out, err))
    };
    let (status, out, err) = tokio::time::timeout(GIT_TIMEOUT, run)
        .await
        .map_err(|_| WorktreeError::TimedOut)??;
    if status.success() {
        Ok(out)
    } else {
        Err(WorktreeError::Refused(muxgate_mux::lines::excerpt(
            why_git_failed(&err),
        )))
    }
}

/// The line of git's standard error that says why it failed: the first `fatal:` or `error:`
/// line, else the last line. git prints progress there too (`Preparing worktree …`), before
/// the reason.
fn why_git_failed(stderr: &str) -> &str {
    let mut lines = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty());
    lines
        .clone()
        .find(|line| line.starts_with("fatal:") || line.starts_with("error:"))
        .or_else(|| lines.next_back())
        .unwrap_or("it failed without saying why")
}

/// The right to change `repository`'s worktrees, held until the guard drops; waits for the
/// repository's other steps at most `wait`.
async fn hold(
    repository: &Path,
    wait: Duration,
) -> Result<tokio::sync::OwnedMutexGuard<()>, WorktreeError> {
    // One lock per configured repository (paths come from the configuration, not from calls),
    // so the map stays as small as the `[repositories]` table.
    static HOLDERS: LazyLock<Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>> =
        LazyLock::new(Mutex::default);
    let lock = Arc::clone(
        HOLDERS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(repository.to_owned())
            .or_default(),
    );
    tokio::time::timeout(wait, lock.lock_owned())
        .await
        .map_err(|_| WorktreeError::Busy(wait))
}

/// What a stream says, up to [`OUTPUT_LIMIT`]; the rest is left unread (git stops on the
/// closed pipe).
async fn read_bounded(stream: impl tokio::io::AsyncRead + Unpin) -> String {
    let mut bytes = Vec::new();
    // A read error leaves what was read: git's status decides, not its pipe.
    let _ = stream.take(OUTPUT_LIMIT).read_to_end(&mut bytes).await;
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_is_the_fatal_line_not_the_progress_before_it() {
        let said = "Preparing worktree (new branch 'agent/w2')\n\
                    fatal: failed to read .git/worktrees/w1/commondir: Success\n";
        assert_eq!(
            why_git_failed(said),
            "fatal: failed to read .git/worktrees/w1/commondir: Success"
        );
        let hinted = "error: pathspec 'x' did not match\nhint: try this\n";
        assert_eq!(why_git_failed(hinted), "error: pathspec 'x' did not match");
        assert_eq!(why_git_failed("working...\n  done: no  \n\n"), "done: no");
        assert_eq!(why_git_failed(" \n"), "it failed without saying why");
    }

    /// A repository with one commit on `main`, made with the test's own git settings.
    fn repository(dir: &Path) -> Repository {
        let path = dir.join("app");
        std::fs::create_dir(&path).expect("the repository's directory");
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["commit", "-q", "--allow-empty", "-m", "first"],
        ] {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(&path)
                .args([
                    "-c",
                    "user.name=test",
                    "-c",
                    "user.email=test@example.invalid",
                ])
                .args(args)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .expect("git runs");
            assert!(out.status.success(), "git {args:?}: {out:?}");
        }
        Repository {
            path,
            worktrees: dir.join("worktrees"),
            base: "main".to_owned(),
        }
    }

    /// Agents spawned and stopped at once: without one step at a time per repository, git
    /// fails a `worktree add` now and then, reading another's half-made entry.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn worktrees_made_and_removed_at_once_all_succeed() {
        let dir = tempfile::tempdir().expect("a directory");
        let repository = Arc::new(repository(dir.path()));
        let mut last_round: Vec<Worktree> = Vec::new();
        for round in 0..40 {
            let mut steps = tokio::task::JoinSet::new();
            for lane in 0..6 {
                let repository = Arc::clone(&repository);
                steps.spawn(async move {
                    let agent = format!("r{round}w{lane}");
                    add("app", &repository, &agent, "main").await.map(Some)
                });
            }
            for worktree in last_round.drain(..) {
                let repository = Arc::clone(&repository);
                steps.spawn(async move {
                    remove(&repository.path, &worktree.path, false).await?;
                    assert!(
                        !worktree.path.exists(),
                        "{} is gone",
                        worktree.path.display()
                    );
                    Ok(None)
                });
            }
            while let Some(step) = steps.join_next().await {
                let made = step.expect("no panic").expect("each step succeeds");
                last_round.extend(made);
            }
            assert_eq!(last_round.len(), 6, "round {round} made its worktrees");
        }
    }

    /// Two `stop_agent` calls at once: the second finds the worktree gone, which is no error.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_worktree_removed_twice_at_once_is_removed_once() {
        let dir = tempfile::tempdir().expect("a directory");
        let repository = repository(dir.path());
        let made = add("app", &repository, "w", "main").await.expect("made");
        let (first, second) = tokio::join!(
            remove(&repository.path, &made.path, false),
            remove(&repository.path, &made.path, false)
        );
        first.expect("removed");
        second.expect("already gone");
        assert!(!made.path.exists());
    }
}
