//! The recordings directory: file names, private files, the listing, and the total size cap.
//!
//! Files are `<server>-p<pane>-<UTC time>.cast`, created `0600` (never replacing one) in a
//! `0700` directory. [`Store::enforce_cap`] deletes closed files while the directory holds more
//! than `max_total_bytes`, the oldest of the pane taking the most room first, so one flooding
//! pane spends its own share; files being written are never deleted (each is bounded by
//! `max_file_bytes` and rotated), so the directory can pass the cap by at most one file per
//! recorded pane.

use std::collections::{HashMap, HashSet};
use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::utc::Utc;
use muxgate_tmux::PaneId;

/// The extension of recordings; nothing else in the directory is listed or deleted.
pub const EXTENSION: &str = "cast";

/// One recording file, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its file name.
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// When it was last written.
    pub modified: SystemTime,
}

/// The directory and its caps; cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    max_total_bytes: u64,
    /// Files being written (never deleted by the cap).
    open: Arc<Mutex<HashSet<String>>>,
}

impl Store {
    /// The recordings in `dir`, capped at `max_total_bytes` together.
    pub fn new(dir: PathBuf, max_total_bytes: u64) -> Self {
        Self {
            dir,
            max_total_bytes,
            open: Arc::default(),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates a new file for `pane` of `server`, `0600`, and marks it open. The name is the
    /// time; a second file in the same millisecond gets a counter (`_01`, …).
    pub fn create(
        &self,
        server: &str,
        pane: PaneId,
        now: SystemTime,
    ) -> io::Result<(File, String)> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let stem = format!(
            "{}-p{}-{}",
            safe_name(server),
            pane.0,
            Utc::from(now).basic()
        );
        for attempt in 0..100u32 {
            let name = match attempt {
                0 => format!("{stem}.{EXTENSION}"),
                // `_` sorts after `.`: a listing by name keeps the files in order.
                n => format!("{stem}_{n:02}.{EXTENSION}"),
            };
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(self.dir.join(&name))
            {
                Ok(file) => {
                    self.open_set().insert(name.clone());
                    return Ok((file, name));
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{stem}: 100 files in the same millisecond"),
        ))
    }

    /// Marks a file closed: the cap may delete it from now on.
    pub fn closed(&self, name: &str) {
        self.open_set().remove(name);
    }

    fn open_set(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        // Only ever inserted into and removed from whole, so a poisoned set is consistent.
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Deletes closed recordings while the directory holds more than the cap (see
    /// [`over_cap`]). Returns the names deleted.
    pub fn enforce_cap(&self) -> io::Result<Vec<String>> {
        let files = list(&self.dir)?;
        let open = self.open_set().clone();
        let doomed = over_cap(files, &open, self.max_total_bytes);
        for name in &doomed {
            match std::fs::remove_file(self.dir.join(name)) {
                Ok(()) => {}
                // Someone else removed it first: it no longer counts either way.
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        Ok(doomed)
    }
}

/// Which closed files to delete so that `files` fit in `cap` bytes: each time, the oldest
/// closed file of the pane whose recordings take the most room. A pane that floods its
/// terminal thus spends its own share first, and cannot push out the other panes' recordings
/// while it holds more than they do. Files in `open` are never chosen.
fn over_cap(files: Vec<Listed>, open: &HashSet<String>, cap: u64) -> Vec<String> {
    let mut total: u64 = files.iter().map(|f| f.bytes).sum();
    // Per pane: its bytes on disk, and its closed files, oldest first.
    let mut panes: HashMap<&str, (u64, Vec<&Listed>)> = HashMap::new();
    for file in &files {
        let pane = panes.entry(pane_key(&file.name)).or_default();
        pane.0 += file.bytes;
        if !open.contains(&file.name) {
            pane.1.push(file);
        }
    }
    for (_, closed) in panes.values_mut() {
        closed.sort_by(|a, b| b.modified.cmp(&a.modified).then(b.name.cmp(&a.name)));
    }
    let mut doomed = Vec::new();
    while total > cap {
        let largest = panes
            .iter_mut()
            .filter(|(_, (_, closed))| !closed.is_empty())
            .max_by(|(a_key, (a, _)), (b_key, (b, _))| a.cmp(b).then(b_key.cmp(a_key)));
        let Some((_, (bytes, closed))) = largest else {
            break;
        };
        let Some(oldest) = closed.pop() else {
            break;
        };
        *bytes = bytes.saturating_sub(oldest.bytes);
        total = total.saturating_sub(oldest.bytes);
        doomed.push(oldest.name.clone());
    }
    doomed
}

/// The pane a file records: its name up to the time (`work-p3` of `work-p3-2026….cast`).
fn pane_key(name: &str) -> &str {
    name.rsplit_once('-').map_or(name, |(pane, _)| pane)
}

/// The recordings in `dir`, by name.
pub fn list(dir: &Path) -> io::Result<Vec<Listed>> {
    let mut files = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(files),
        Err(error) => return Err(error),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some(EXTENSION) {
            continue;
        }
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        files.push(Listed {
            name: entry.file_name().to_string_lossy().into_owned(),
            bytes: meta.len(),
            modified: meta.modified().unwrap_or(UNIX_EPOCH),
        });
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

/// A server name as part of a file name: letters, digits, `-` and `_` kept, the rest `_`.
fn safe_name(name: &str) -> String {
    name.chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    use std::time::Duration;

    #[test]
    fn names_are_safe_sortable_and_never_reused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("rec"), 1 << 20);
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let (_, first) = store.create("my server/../x", PaneId(3), at).unwrap();
        assert_eq!(first, "my_server____x-p3-20231114T221320123Z.cast");
        let (_, second) = store.create("my server/../x", PaneId(3), at).unwrap();
        assert_eq!(second, "my_server____x-p3-20231114T221320123Z_01.cast");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("rec")), 0o700);
        assert_eq!(mode(&dir.path().join("rec").join(&first)), 0o600);
        let names: Vec<String> = list(store.dir())
            .unwrap()
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(names, [first, second]);
        assert!(list(&dir.path().join("missing")).unwrap().is_empty());
    }

    fn listed(name: &str, bytes: u64, secs: u64) -> Listed {
        Listed {
            name: name.into(),
            bytes,
            modified: UNIX_EPOCH + Duration::from_secs(secs),
        }
    }

    #[test]
    fn a_flooding_pane_spends_its_own_share_first() {
        let files = vec![
            listed("work-p1-20261101T000000000Z.cast", 100, 1),
            listed("work-p2-20261101T000001000Z.cast", 100, 2),
            listed("work-p3-20261101T000002000Z.cast", 300, 3),
            listed("work-p3-20261101T000003000Z.cast", 300, 4),
            listed("work-p3-20261101T000004000Z.cast", 300, 5),
            listed("work-p3-20261101T000005000Z.cast", 300, 6),
        ];
        let open: HashSet<String> = ["work-p3-20261101T000005000Z.cast".to_owned()].into();
        // 1,400 bytes, cap 700: the flooding pane's three closed files go, oldest first; the
        // quiet panes' older files stay.
        assert_eq!(
            over_cap(files.clone(), &open, 700),
            [
                "work-p3-20261101T000002000Z.cast",
                "work-p3-20261101T000003000Z.cast",
                "work-p3-20261101T000004000Z.cast",
            ]
        );
        // Once it holds no more than the others, the largest pane gives way in turn.
        assert_eq!(over_cap(files.clone(), &open, 400).len(), 4);
        assert!(over_cap(files, &open, 10_000).is_empty());
        assert_eq!(
            pane_key("my-server-p12-20261101T000000000Z_01.cast"),
            "my-server-p12"
        );
    }

    #[test]
    fn the_cap_deletes_the_oldest_closed_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().to_path_buf(), 250);
        let mut names = Vec::new();
        for i in 0..4u64 {
            let at = UNIX_EPOCH + Duration::from_secs(1_700_000_000 + i);
            let (mut file, name) = store.create("s", PaneId(1), at).unwrap();
            file.write_all(&[b'x'; 100]).unwrap();
            let when = std::fs::FileTimes::new().set_modified(at);
            file.set_times(when).unwrap();
            names.push(name);
        }
        std::fs::write(dir.path().join("notes.txt"), [b'y'; 1000]).unwrap();
        // All open: nothing may go, however far over the cap.
        assert!(store.enforce_cap().unwrap().is_empty());
        for name in &names[1..] {
            store.closed(name);
        }
        // 400 bytes, cap 250: the two oldest closed files go (the oldest is still open).
        assert_eq!(
            store.enforce_cap().unwrap(),
            [names[1].clone(), names[2].clone()]
        );
        let left: Vec<String> = list(dir.path())
            .unwrap()
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(left, [names[0].clone(), names[3].clone()]);
        assert!(
            dir.path().join("notes.txt").exists(),
            "only recordings are touched"
        );
    }
}
