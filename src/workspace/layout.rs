//! Where workspaces live in the state directory, who owns what there, and each workspace's
//! record (`meta.json`).
//!
//! ```text
//! <state>/workspaces/                 the gateway's (0700; 0711 when workspaces have own uids)
//! <state>/workspaces/<dir>/           the gateway's: meta.json, server.pid, cgroup (0600) and
//!                                     home.img, the home's file system (see super::disk)
//! <state>/workspaces/<dir>/home       the workspace's home, `/workspace` inside  (0700, its uid)
//! <state>/workspaces/<dir>/run        its tmux socket directory                  (0700, its uid)
//! ```
//!
//! (A workspace's `/tmp` and `/dev/shm` are memory file systems of the sandbox's own; nothing
//! of them is on disk.)
//!
//! When the gateway runs as root, every workspace gets a uid of its own (`uid_base` and up,
//! recorded in `meta.json`), and the gateway's directories are `0711` so that a workspace's
//! sandbox, started as that uid, can reach its own three directories and nothing else there.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::config::LOCAL_HOST;
use super::name::WorkspaceName;
use super::sandbox::WorkspaceDirs;
use crate::state::write_private;
use muxgate_tmux::RunAs;

/// The workspace's record, in its directory.
pub(crate) const META_FILE: &str = "meta.json";

/// A workspace's record, written when it is created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceMeta {
    /// The workspace's name (its directory name may be a digest of it).
    pub name: String,
    /// The user its sandbox runs as, when workspaces have uids of their own.
    pub run_as: Option<RunAsRecord>,
    /// Creation time, seconds since the Unix epoch.
    pub created: u64,
    /// The host it runs on (`workspaces.hosts`); absent: this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// [`RunAs`] as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunAsRecord {
    pub uid: u32,
    pub gid: u32,
}

impl From<RunAsRecord> for RunAs {
    fn from(record: RunAsRecord) -> Self {
        RunAs {
            uid: record.uid,
            gid: record.gid,
        }
    }
}

/// The workspaces directory of a state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    root: PathBuf,
    /// Whether workspaces run as uids of their own (the gateway is root).
    own_uids: bool,
}

impl Layout {
    pub(crate) fn new(state_dir: &Path, own_uids: bool) -> Self {
        Self {
            root: state_dir.join("workspaces"),
            own_uids,
        }
    }

    /// The directory of `name`.
    pub(crate) fn dir(&self, name: &WorkspaceName) -> PathBuf {
        self.root.join(name.dir_name())
    }

    /// The sandbox directories of the workspace in `dir`.
    pub(crate) fn dirs(dir: &Path) -> WorkspaceDirs {
        WorkspaceDirs {
            home: dir.join("home"),
            run: dir.join("run"),
        }
    }

    /// Mode of the gateway's own directories.
    fn gateway_dir_mode(&self) -> u32 {
        if self.own_uids { 0o711 } else { 0o700 }
    }

    /// Creates the workspaces directory (and the state directory above it) if missing, and
    /// sets their modes.
    pub(crate) fn prepare(&self) -> io::Result<()> {
        let mode = self.gateway_dir_mode();
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.root)?;
        if let Some(state) = self.root.parent() {
            fs::set_permissions(state, fs::Permissions::from_mode(mode))?;
        }
        fs::set_permissions(&self.root, fs::Permissions::from_mode(mode))
    }

    /// As root, the first directory above the workspaces directory that workspaces cannot pass
    /// through: they run as uids of their own, and their sandbox is set up as that uid, from
    /// their directories here. `None` when every one can be passed (or workspaces run as the
    /// gateway's own uid).
    pub(crate) fn unreachable_parent(&self) -> Option<PathBuf> {
        if !self.own_uids {
            return None;
        }
        // The state directory itself is made passable by `prepare`.
        let above_state = self.root.parent()?.parent()?;
        above_state
            .ancestors()
            .find(|dir| fs::metadata(dir).is_ok_and(|meta| meta.permissions().mode() & 0o001 == 0))
            .map(Path::to_owned)
    }

    /// The records of every workspace on disk, with their directories.
    pub(crate) fn list(&self) -> io::Result<Vec<(PathBuf, WorkspaceMeta)>> {
        let entries = match fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut found = Vec::new();
        for entry in entries {
            let dir = entry?.path();
            if let Ok(meta) = read_meta(&dir) {
                found.push((dir, meta));
            }
        }
        found.sort_by(|a, b| a.1.name.cmp(&b.1.name));
        Ok(found)
    }

    /// Creates the workspace's directories (its record, placed on one of `places` by
    /// [`choose_place`], with a free uid from `uid_base` when it runs here and workspaces have
    /// their own; at most `max` workspaces), or reads the record of an existing one.
    pub(crate) fn open(
        &self,
        name: &WorkspaceName,
        places: &[String],
        uid_base: u32,
        max: u32,
        now: u64,
    ) -> Result<(PathBuf, WorkspaceMeta), OpenError> {
        let dir = self.dir(name);
        if let Ok(meta) = read_meta(&dir) {
            if meta.name != name.as_str() {
                return Err(OpenError::Io(io::Error::other(format!(
                    "{} belongs to another workspace",
                    dir.display()
                ))));
            }
            return Ok((dir, meta));
        }
        let existing = self.list()?;
        if existing.len() >= max as usize {
            return Err(OpenError::TooMany(max));
        }
        let host = choose_place(places, existing.iter().map(|(_, meta)| meta));
        let run_as = if self.own_uids && host.is_none() {
            // This gateway's workspaces, and whatever else runs on the host or has an account
            // (another gateway's workspaces, given the same `uid_base`, would otherwise share
            // uids with these: a tenant of one could signal and read the other's).
            let mut used: Vec<u32> = existing
                .iter()
                .filter_map(|(_, m)| m.run_as.map(|r| r.uid))
                .collect();
            used.extend(uids_in_use(Path::new("/proc"), Path::new("/etc/passwd")));
            let uid = free_uid(&used, uid_base, max).ok_or(OpenError::TooMany(max))?;
            Some(RunAsRecord { uid, gid: uid })
        } else {
            None
        };
        let meta = WorkspaceMeta {
            name: name.as_str().to_owned(),
            run_as,
            created: now,
            host,
        };
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .or_else(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    Ok(())
                } else {
                    Err(e)
                }
            })?;
        fs::set_permissions(&dir, fs::Permissions::from_mode(self.gateway_dir_mode()))?;
        let dirs = Self::dirs(&dir);
        for sub in [&dirs.home, &dirs.run] {
            make_private_dir(sub, run_as)?;
        }
        write_private(&dir.join(META_FILE), &serde_json::to_vec_pretty(&meta)?)?;
        Ok((dir, meta))
    }
}

/// Where a new workspace runs: the one of `places` (`local` or a host's name) holding the
/// fewest of the `existing` workspaces, the first of them on a tie. `None`: this machine.
pub(crate) fn choose_place<'a>(
    places: &[String],
    existing: impl Iterator<Item = &'a WorkspaceMeta>,
) -> Option<String> {
    let existing: Vec<&WorkspaceMeta> = existing.collect();
    let held = |place: &String| {
        existing
            .iter()
            .filter(|meta| meta.host.as_deref().unwrap_or(LOCAL_HOST) == place)
            .count()
    };
    places
        .iter()
        .min_by_key(|place| held(place))
        .filter(|place| *place != LOCAL_HOST)
        .cloned()
}

/// Why a workspace could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("this gateway already has {0} workspaces (workspaces.max_workspaces)")]
    TooMany(u32),
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl From<serde_json::Error> for OpenError {
    fn from(error: serde_json::Error) -> Self {
        Self::Io(io::Error::other(error))
    }
}

/// The real uids of the processes in `proc_root` and the accounts in `passwd`.
fn uids_in_use(proc_root: &Path, passwd: &Path) -> Vec<u32> {
    let mut uids: Vec<u32> = fs::read_to_string(passwd)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split(':').nth(2)?.parse().ok())
        .collect();
    let processes = fs::read_dir(proc_root).into_iter().flatten().flatten();
    for process in processes {
        let Ok(status) = fs::read_to_string(process.path().join("status")) else {
            continue;
        };
        let uid: Option<u32> = status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().next()?.parse().ok());
        uids.extend(uid);
    }
    uids
}

/// The lowest of `base .. base + max` not in `used`.
fn free_uid(used: &[u32], base: u32, max: u32) -> Option<u32> {
    (0..max)
        .filter_map(|i| base.checked_add(i))
        .find(|uid| !used.contains(uid))
}

/// Reads `dir/meta.json`.
pub(crate) fn read_meta(dir: &Path) -> io::Result<WorkspaceMeta> {
    let text = fs::read(dir.join(META_FILE))?;
    serde_json::from_slice(&text).map_err(io::Error::other)
}

/// A directory only `owner` (or the gateway) can enter.
fn make_private_dir(path: &Path, owner: Option<RunAsRecord>) -> io::Result<()> {
    match fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    if let Some(owner) = owner {
        std::os::unix::fs::chown(path, Some(owner.uid), Some(owner.gid))?;
    }
    fs::set_permissions(path, fs::Permissions::from_mode(0o700))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Workspaces on this machine only.
    fn here() -> Vec<String> {
        vec![LOCAL_HOST.to_owned()]
    }

    #[test]
    fn a_new_workspace_goes_where_the_fewest_are_and_stays() {
        let places: Vec<String> = ["local", "build-1", "build-2"].map(str::to_owned).to_vec();
        let meta = |host: Option<&str>| WorkspaceMeta {
            name: "x".into(),
            run_as: None,
            created: 0,
            host: host.map(str::to_owned),
        };
        assert_eq!(choose_place(&places, [].iter()), None);
        let one_here = [meta(None)];
        assert_eq!(
            choose_place(&places, one_here.iter()).as_deref(),
            Some("build-1")
        );
        let spread = [meta(None), meta(Some("build-1")), meta(Some("build-2"))];
        assert_eq!(choose_place(&places, spread.iter()), None);
        // A host no longer listed holds no place's count.
        let gone = [meta(Some("old")), meta(None)];
        assert_eq!(
            choose_place(&places, gone.iter()).as_deref(),
            Some("build-1")
        );
        let remote_only = ["build-1".to_owned()];
        assert_eq!(
            choose_place(&remote_only, spread.iter()).as_deref(),
            Some("build-1")
        );

        // Recorded when made, and kept whatever the places are later.
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path(), false);
        layout.prepare().unwrap();
        let (_, alice) = layout.open(&name("alice"), &remote_only, 0, 8, 1).unwrap();
        assert_eq!(alice.host.as_deref(), Some("build-1"));
        let (_, again) = layout.open(&name("alice"), &here(), 0, 8, 2).unwrap();
        assert_eq!(again, alice);
        let (_, bob) = layout.open(&name("bob"), &here(), 0, 8, 3).unwrap();
        assert_eq!(bob.host, None);
    }

    fn name(text: &str) -> WorkspaceName {
        WorkspaceName::parse(text).unwrap()
    }

    #[test]
    fn a_workspace_is_created_once_with_private_directories() {
        let state = tempfile::tempdir().unwrap();
        let layout = Layout::new(state.path(), false);
        layout.prepare().unwrap();
        let (dir, meta) = layout.open(&name("alice"), &here(), 600_000, 8, 7).unwrap();
        assert_eq!(dir, state.path().join("workspaces/alice"));
        assert_eq!(meta.run_as, None);
        for sub in ["home", "run"] {
            let mode = fs::metadata(dir.join(sub)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{sub}");
        }
        let mode = fs::metadata(dir.join("meta.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let (_, again) = layout
            .open(&name("alice"), &here(), 600_000, 8, 99)
            .unwrap();
        assert_eq!(again.created, 7, "the record is read, not rewritten");
        assert_eq!(layout.list().unwrap().len(), 1);
    }

    #[test]
    fn own_uids_are_the_lowest_free_ones_in_range() {
        assert_eq!(free_uid(&[], 600_000, 4), Some(600_000));
        assert_eq!(free_uid(&[600_000, 600_002], 600_000, 4), Some(600_001));
        assert_eq!(free_uid(&[600_000, 600_001], 600_000, 2), None);
        assert_eq!(free_uid(&[], u32::MAX, 4), Some(u32::MAX));
        assert_eq!(free_uid(&[u32::MAX], u32::MAX, 4), None);
    }

    #[test]
    fn a_parent_other_uids_cannot_pass_is_found() {
        let base = tempfile::tempdir().unwrap();
        let locked = base.path().join("locked");
        fs::create_dir_all(locked.join("inner/state")).unwrap();
        fs::set_permissions(base.path(), fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o700)).unwrap();
        let state = locked.join("inner/state");
        assert_eq!(
            Layout::new(&state, true).unreachable_parent(),
            Some(locked.clone())
        );
        assert_eq!(Layout::new(&state, false).unreachable_parent(), None);
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o711)).unwrap();
        assert_eq!(Layout::new(&state, true).unreachable_parent(), None);
    }

    #[test]
    fn uids_of_processes_and_accounts_count_as_used() {
        let root = tempfile::tempdir().unwrap();
        for (pid, uid) in [("1", 0), ("4242", 600_001)] {
            let dir = root.path().join(pid);
            fs::create_dir(&dir).unwrap();
            fs::write(
                dir.join("status"),
                format!("Name:\tbash\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"),
            )
            .unwrap();
        }
        fs::create_dir(root.path().join("self-less")).unwrap();
        let passwd = root.path().join("passwd");
        fs::write(
            &passwd,
            "root:x:0:0::/root:/bin/sh\nci:x:600000:600000::/:/bin/sh\n",
        )
        .unwrap();
        let mut used = uids_in_use(root.path(), &passwd);
        used.sort_unstable();
        used.dedup();
        assert_eq!(used, [0, 600_000, 600_001]);
        assert_eq!(free_uid(&used, 600_000, 4), Some(600_002));
    }

    #[test]
    fn the_number_of_workspaces_is_capped() {
        let state = tempfile::tempdir().unwrap();
        let layout = Layout::new(state.path(), false);
        layout.prepare().unwrap();
        layout.open(&name("a"), &here(), 0, 2, 0).unwrap();
        layout.open(&name("b/c"), &here(), 0, 2, 0).unwrap();
        assert!(matches!(
            layout.open(&name("c"), &here(), 0, 2, 0),
            Err(OpenError::TooMany(2))
        ));
        assert!(
            layout.open(&name("a"), &here(), 0, 2, 0).is_ok(),
            "an existing one still opens"
        );
    }
}
