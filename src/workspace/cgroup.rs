//! A workspace's memory, bounded as a whole: a memory cgroup of its own, below the gateway's,
//! that its sandbox joins before anything runs in it.
//!
//! Per-process limits (`RLIMIT_AS`) do not bound a workspace: a tenant starts more processes,
//! or fills `/tmp` and `/dev/shm` (memory file systems). A cgroup counts all of it — the
//! pages of its memory file systems are charged to the processes that write them — and when
//! it is full the kernel ends a process of that workspace, never one of another.
//!
//! Both cgroup versions are used: the v1 `memory` hierarchy (`memory.limit_in_bytes`), or the
//! v2 unified one when the memory controller is delegated to the gateway's cgroup
//! (`memory.max`). [`MemoryCgroups::probe`] makes and removes a child to prove it can; a
//! gateway that cannot (not root, no delegation) says so and runs without.
//!
//! The sandbox joins in its `pre_exec`, before it runs anything, by writing `0` to the
//! cgroup's `cgroup.procs` ([`Membership`]): no process of the workspace ever runs outside it.
//! The cgroup's path is recorded in the workspace's directory ([`CGROUP_FILE`]), so that
//! `muxgate workspace stop|delete` (another process, in another cgroup) can remove it.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file recording a workspace's cgroup, in its directory.
pub const CGROUP_FILE: &str = "cgroup";

/// Where cgroup file systems are mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// Which cgroup version the memory controller is used through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// The parent of the workspaces' memory cgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryCgroups {
    parent: PathBuf,
    version: Version,
}

impl MemoryCgroups {
    /// The cgroup `group` below this process's own memory cgroup, when this process can make
    /// cgroups there and limit their memory; otherwise why not.
    pub fn probe(group: &str) -> Result<Self, String> {
        let table = fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
        let (version, own) = own_memory_cgroup(&table, Path::new(CGROUP_ROOT))
            .ok_or("this process is in no memory cgroup (no cgroup v1 `memory` hierarchy, no cgroup v2 memory controller)")?;
        let cgroups = Self {
            parent: own.join(group),
            version,
        };
        cgroups.prepare_parent()?;
        let probe = cgroups.parent.join("probe");
        make_dir(&probe).map_err(|e| cannot(&probe, &e))?;
        let limited = fs::write(probe.join(cgroups.limit_file()), b"max")
            .or_else(|_| fs::write(probe.join(cgroups.limit_file()), b"-1"));
        let _ = fs::remove_dir(&probe);
        // Made again when a workspace needs it; an empty one is not left behind.
        let _ = fs::remove_dir(&cgroups.parent);
        limited.map_err(|e| cannot(&probe.join(cgroups.limit_file()), &e))?;
        Ok(cgroups)
    }

    /// The cgroup of the workspace whose directory is `name`, made if missing, limited to
    /// `bytes` of memory.
    pub fn prepare(&self, name: &str, bytes: u64) -> io::Result<PathBuf> {
        self.prepare_parent().map_err(io::Error::other)?;
        let path = self.parent.join(name);
        make_dir(&path)?;
        fs::write(path.join(self.limit_file()), bytes.to_string())?;
        if self.version == Version::V1 {
            // Swap too, where the kernel accounts it (it must not be below the memory limit,
            // which was just set).
            let _ = fs::write(path.join("memory.memsw.limit_in_bytes"), bytes.to_string());
        } else {
            let _ = fs::write(path.join("memory.swap.max"), b"0");
        }
        Ok(path)
    }

    fn limit_file(&self) -> &'static str {
        match self.version {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        }
    }

    /// Makes the parent, and on v2 hands the memory controller down to its children.
    fn prepare_parent(&self) -> Result<(), String> {
        make_dir(&self.parent).map_err(|e| cannot(&self.parent, &e))?;
        if self.version == Version::V2 {
            for dir in [self.parent.parent(), Some(self.parent.as_path())]
                .into_iter()
                .flatten()
            {
                let control = dir.join("cgroup.subtree_control");
                let enabled = fs::read_to_string(&control).unwrap_or_default();
                if !enabled.split_whitespace().any(|c| c == "memory") {
                    fs::write(&control, b"+memory").map_err(|e| cannot(&control, &e))?;
                }
            }
        }
        Ok(())
    }
}

/// A sandbox's way into its cgroup, for its `pre_exec`: the path of `cgroup.procs`, ready
/// for a system call (no allocation after `fork`).
#[derive(Debug)]
pub struct Membership(CString);

impl Membership {
    /// Membership of the cgroup at `path`.
    pub fn of(path: &Path) -> io::Result<Self> {
        CString::new(path.join("cgroup.procs").as_os_str().as_bytes())
            .map(Self)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in a cgroup path"))
    }

    /// Moves the calling process into the cgroup. Only async-signal-safe system calls: for a
    /// `pre_exec` closure.
    pub fn join(&self) -> io::Result<()> {
        // SAFETY: open(2), write(2) and close(2) on a NUL-terminated path this value owns and
        // a one-byte static buffer.
        unsafe {
            let fd = libc::open(self.0.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // "0" is the writing process itself.
            let written = libc::write(fd, b"0".as_ptr().cast(), 1);
            let error = io::Error::last_os_error();
            libc::close(fd);
            if written != 1 {
                return Err(error);
            }
        }
        Ok(())
    }
}

/// Records the cgroup of the workspace in `dir`.
pub fn record(dir: &Path, cgroup: &Path) -> io::Result<()> {
    crate::state::write_private(&dir.join(CGROUP_FILE), cgroup.as_os_str().as_bytes())
}

/// How long the programs of a stopped sandbox may take to leave its cgroup. Killing the
/// sandbox's first process ends the others, but each leaves the cgroup only as it exits, and
/// the kernel refuses to remove a cgroup anything is still in (`EBUSY`).
pub const EMPTYING_TIMEOUT: Duration = Duration::from_secs(5);

/// How often an emptying cgroup is tried again.
const EMPTYING_POLL: Duration = Duration::from_millis(20);

/// Removes the cgroup recorded for the workspace in `dir` once nothing runs in it, waiting up
/// to `timeout` for the last programs to leave (a missing record or cgroup is not an error),
/// and its parent when that is left empty.
pub async fn remove(dir: &Path, timeout: Duration) -> io::Result<()> {
    let recorded = match fs::read(dir.join(CGROUP_FILE)) {
        Ok(bytes) => PathBuf::from(std::ffi::OsStr::from_bytes(&bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    // Only a cgroup: the record is the gateway's own file, but a path is a path.
    if !recorded.starts_with(CGROUP_ROOT) {
        return Ok(());
    }
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match fs::remove_dir(&recorded) {
            Ok(()) => break,
            Err(e) if e.kind() == io::ErrorKind::NotFound => break,
            Err(e)
                if e.kind() == io::ErrorKind::ResourceBusy
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(EMPTYING_POLL).await;
            }
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot remove the cgroup {}: {e}", recorded.display()),
                ));
            }
        }
    }
    if let Some(parent) = recorded.parent() {
        // Still holding another workspace's cgroup: kept.
        let _ = fs::remove_dir(parent);
    }
    Ok(())
}

/// This process's memory cgroup directory from `/proc/self/cgroup` (`table`): the v1 `memory`
/// hierarchy's line, else the v2 line when `memory` is among the root's controllers.
fn own_memory_cgroup(table: &str, root: &Path) -> Option<(Version, PathBuf)> {
    let lines = table.lines().filter_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        Some((controllers, path.trim_start_matches('/')))
    });
    let mut unified = None;
    for (controllers, path) in lines {
        if controllers.split(',').any(|c| c == "memory") {
            let dir = root.join("memory").join(path);
            if dir.is_dir() {
                return Some((Version::V1, dir));
            }
        } else if controllers.is_empty() {
            unified = Some(path.to_owned());
        }
    }
    let path = unified?;
    let controllers = fs::read_to_string(root.join("cgroup.controllers")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == "memory")
        .then(|| (Version::V2, root.join(path)))
}

fn make_dir(path: &Path) -> io::Result<()> {
    match fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

fn cannot(path: &Path, error: &io::Error) -> String {
    format!("cannot write {}: {error}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v1_memory_line_wins_and_v2_needs_the_controller() {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("memory/svc/gw")).unwrap();
        let table = "9:name=systemd:/\n4:memory:/svc/gw\n0::/\n";
        assert_eq!(
            own_memory_cgroup(table, root.path()),
            Some((Version::V1, root.path().join("memory/svc/gw")))
        );
        let unified = "0::/system.slice/muxgate.service\n";
        assert_eq!(own_memory_cgroup(unified, root.path()), None);
        fs::write(
            root.path().join("cgroup.controllers"),
            "cpu io memory pids\n",
        )
        .unwrap();
        assert_eq!(
            own_memory_cgroup(unified, root.path()),
            Some((
                Version::V2,
                root.path().join("system.slice/muxgate.service")
            ))
        );
    }

    #[tokio::test]
    async fn a_recorded_path_outside_the_cgroup_tree_is_never_removed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::create_dir(&victim).unwrap();
        record(dir.path(), &victim).unwrap();
        remove(dir.path(), Duration::ZERO).await.unwrap();
        assert!(victim.is_dir());
    }

    /// A stopped sandbox's last programs leave its cgroup as they exit: the removal waits for
    /// them instead of failing with `EBUSY`, and fails naming the cgroup when one stays.
    #[tokio::test]
    async fn a_cgroup_is_removed_once_its_last_program_has_left() {
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: only root makes memory cgroups here");
            return;
        }
        // As root a gateway makes them (the escape suite's sandboxes need them): a probe that
        // fails is a failure, not a skip.
        let cgroups = MemoryCgroups::probe(&format!("muxgate-test-{}", std::process::id()))
            .expect("root can make memory cgroups");
        let dir = tempfile::tempdir().unwrap();
        let cgroup = cgroups.prepare("leaving", 64 << 20).unwrap();
        record(dir.path(), &cgroup).unwrap();
        let join = |seconds: &str| {
            let child = std::process::Command::new("sleep")
                .arg(seconds)
                .spawn()
                .unwrap();
            fs::write(cgroup.join("cgroup.procs"), child.id().to_string()).unwrap();
            child
        };

        let mut staying = join("30");
        let error = remove(dir.path(), Duration::from_millis(100))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::ResourceBusy);
        assert!(error.to_string().contains("leaving"), "{error}");
        staying.kill().unwrap();
        staying.wait().unwrap();

        let mut leaving = join("0.3");
        remove(dir.path(), EMPTYING_TIMEOUT).await.unwrap();
        assert!(!cgroup.exists());
        leaving.wait().unwrap();
    }
}
