//! The files of one audit log: the live file (`audit.path`) and the files rotated out of it,
//! and where the log's head file is by default.
//!
//! With `audit.rotate_bytes` or `audit.rotate_secs` set, the writer rotates the live file once
//! it is that large or its first record that old: it writes a `checkpoint` (`"reason":"rotate"`)
//! as the file's last record, renames the file to `<name>.<UTC time>` (`audit.jsonl.
//! 20261127T211500123Z`, a `-N` suffix if that name is taken) in the same directory, and starts
//! a new live file whose first record is `continued`: it names the rotated file and that file's
//! last `seq` and link, and its own link chains to that last record. So the chain runs on across
//! files, each file verifies on its own (its first record says which link it starts from), and
//! a missing, reordered or edited file breaks the chain where it was.
//!
//! The names sort in the order the files were written; [`log_files`] lists a log's files that
//! way, the live file last. The gateway never deletes a rotated file: how long audit records are
//! kept is the operator's decision (and often a legal one), made where they are shipped.

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest as _, Sha256};

use crate::utc::Utc;

/// The head file's name in the state directory before head files were kept per log; still read
/// (and replaced by the log's own once it verified) when the log has no head file of its own.
pub const LEGACY_HEAD_FILE: &str = "audit.head";

/// The default head file of the log at `log`: one per log in the state directory,
/// `<log file name>.<8 hex digits of the SHA-256 of the log's absolute path>.head`, so that
/// gateways that share a state directory but write different logs (or a gateway whose
/// `audit.path` changed) never share one.
pub fn default_head(state_dir: &Path, log: &Path) -> PathBuf {
    let absolute = std::path::absolute(log).unwrap_or_else(|_| log.to_owned());
    let digest = Sha256::digest(absolute.as_os_str().as_encoded_bytes());
    let name = log
        .file_name()
        .map_or_else(|| "audit".into(), |n| n.to_string_lossy());
    state_dir.join(format!("{name}.{}.head", hex::encode(&digest[..4])))
}

/// The name a file rotated out of `live` at `now` gets: `<name>.<YYYYMMDDTHHMMSSmmmZ>`, with
/// `-1`, `-2` … added while such a file exists.
pub fn rotated_name(live: &Path, now: SystemTime) -> PathBuf {
    let name = live.file_name().unwrap_or_default().to_string_lossy();
    let stamp = Utc::from(now).basic();
    let first = live.with_file_name(format!("{name}.{stamp}"));
    if !first.exists() {
        return first;
    }
    (1u32..)
        .map(|n| live.with_file_name(format!("{name}.{stamp}-{n}")))
        .find(|candidate| !candidate.exists())
        .unwrap_or(first)
}

/// Where a file rotated out of `live_name` sorts: its time stamp and suffix; `None` for any
/// other name.
fn rotated_order(live_name: &str, name: &str) -> Option<(String, u32)> {
    let rest = name.strip_prefix(live_name)?.strip_prefix('.')?;
    let (stamp, n) = match rest.split_once('-') {
        Some((stamp, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            (stamp, n.parse().ok()?)
        }
        Some(_) => return None,
        None => (rest, 0),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let well_formed = stamp.len() == 19
        && digits(&stamp[..8])
        && &stamp[8..9] == "T"
        && digits(&stamp[9..18])
        && &stamp[18..] == "Z";
    well_formed.then(|| (stamp.to_owned(), n))
}

/// The files rotated out of `live`, oldest first.
pub fn rotated_files(live: &Path) -> io::Result<Vec<PathBuf>> {
    let dir = match live.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let live_name = live.file_name().unwrap_or_default().to_string_lossy();
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if let Some(order) = rotated_order(&live_name, &name.to_string_lossy()) {
            found.push((order, live.with_file_name(name)));
        }
    }
    found.sort();
    Ok(found.into_iter().map(|(_, path)| path).collect())
}

/// Every file of the log whose live file is `live`, in the order they were written: the
/// rotated files, then the live file (if it exists).
pub fn log_files(live: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files = rotated_files(live)?;
    if live.exists() {
        files.push(live.to_owned());
    }
    Ok(files)
}

/// The name of `path` (its last component), as records name files.
pub fn name_of(path: &Path) -> String {
    path.file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rotated_files_sort_in_the_order_they_were_written() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("audit.jsonl");
        let at = |ms: u64| UNIX_EPOCH + Duration::from_millis(ms);
        let first = rotated_name(&live, at(1_700_000_000_000));
        assert_eq!(name_of(&first), "audit.jsonl.20231114T221320000Z");
        std::fs::write(&first, "").unwrap();
        // The same millisecond again: a suffix, which sorts after it and before later times.
        let again = rotated_name(&live, at(1_700_000_000_000));
        assert_eq!(name_of(&again), "audit.jsonl.20231114T221320000Z-1");
        std::fs::write(&again, "").unwrap();
        let later = rotated_name(&live, at(1_700_000_000_001));
        std::fs::write(&later, "").unwrap();
        for other in [
            "audit.jsonl.1",
            "audit.jsonl.20231114T221320000Z.gz",
            "audit.jsonl.2023111XT221320000Z",
            "other.jsonl.20231114T221320000Z",
            "audit.jsonl.20231114T221320000Z-x",
        ] {
            std::fs::write(dir.path().join(other), "").unwrap();
        }
        assert_eq!(
            log_files(&live).unwrap(),
            [&first, &again, &later].map(Clone::clone)
        );
        std::fs::write(&live, "").unwrap();
        assert_eq!(
            log_files(&live).unwrap(),
            [&first, &again, &later, &live].map(Clone::clone)
        );
        // Ten files rotated in one millisecond still sort by their number.
        for _ in 0..10 {
            std::fs::write(rotated_name(&live, at(1_700_000_000_000)), "").unwrap();
        }
        let names: Vec<String> = rotated_files(&live)
            .unwrap()
            .iter()
            .map(|p| name_of(p))
            .collect();
        assert_eq!(names[10], "audit.jsonl.20231114T221320000Z-10");
        assert_eq!(names[11], "audit.jsonl.20231114T221320000Z-11");
        assert_eq!(names[12], "audit.jsonl.20231114T221320001Z");
    }

    #[test]
    fn each_log_has_its_own_default_head_file() {
        let state = Path::new("/state");
        let a = default_head(state, Path::new("/var/log/a/audit.jsonl"));
        let b = default_head(state, Path::new("/var/log/b/audit.jsonl"));
        assert_ne!(a, b);
        assert_eq!(a.parent(), Some(state));
        let name = name_of(&a);
        assert!(
            name.starts_with("audit.jsonl.") && name.ends_with(".head"),
            "{name}"
        );
        assert_eq!(a, default_head(state, Path::new("/var/log/a/audit.jsonl")));
    }
}
