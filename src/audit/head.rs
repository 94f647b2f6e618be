//! The head file: where the chain ended at the last checkpoint, kept outside the log.
//!
//! A log cut at its end is still a valid chain, so the writer also records its head elsewhere:
//! after every checkpoint record is written and synced (and after the first record of a file
//! started by a rotation), the log's head file is replaced atomically with
//! `{"seq":12,"link":"<the record's link>","offset":<bytes up to its end>,"time":"…",
//! "log":"/var/log/muxgate/audit.jsonl","file":"audit.jsonl","first":"<link>","mac":"…"}`,
//! sealed like a log line (HMAC with the chain key, over a fixed label instead of a previous
//! link). It names that record; records written after it are not anchored until the next
//! checkpoint.
//!
//! The head file names the log it seals: `log`, the live file's absolute path; `file`, the
//! file in that directory holding the record (the live file, or the file it was just rotated
//! to); and `first`, the link of that file's first record, which tells that file apart from any
//! other (a log moved to another path is still recognised by it). Each log has its own head
//! file by default ([`super::files::default_head`]), so logs that share a state directory never
//! share one. A head file that names another log (`audit.path` changed while `audit.head_file`
//! stayed, or one `audit.head_file` set for two logs) says nothing about this log: the gateway
//! starts, warns, seals a `head_reset` record naming the other log as the first record of this
//! start, and the head file seals this log from then on. Head files
//! written before heads named their log (`audit.head` in the state directory) are still read,
//! and replaced by the log's own head file once they verified.
//!
//! The writer checks the head file when it opens the log, and refuses to continue a log that no
//! longer holds the named record at its offset (cut, truncated, replaced), since its next
//! checkpoint would overwrite the evidence. `muxgate audit verify --head` checks the same.
//!
//! What it cannot show: records cut after the last checkpoint (at most one checkpoint interval
//! of them, plus whatever was written before a crash), and a log and head file both rolled back
//! to an older copy of each. Shipping the head elsewhere (a log collector, a second host) closes
//! the latter.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::chain::{first_record, line_ending_at, seal, unseal};
use super::files::name_of;
use super::key::AuditKey;
use super::verify::Anchor;

/// What the head file's seal covers instead of a previous link.
const HEAD_LABEL: &str = "muxgate audit head v1";

/// The head file's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Head {
    /// `seq` of the checkpoint record.
    pub seq: u64,
    /// Its link.
    pub link: String,
    /// The log's length once that line was written: its newline is the byte before.
    pub offset: u64,
    /// When it was written.
    pub time: String,
    /// The absolute path of the live log this head file seals (none in head files written
    /// before heads named their log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
    /// The file, in the log's directory, that holds the record: the live file or a file
    /// rotated out of it (none: the live file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The link of that file's first record: which file it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
}

/// Why a head file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    /// Reading or writing it failed.
    #[error("audit head file {path}: {source}")]
    Io {
        /// The head file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Its content is not a head sealed with this key.
    #[error(
        "audit head file {path} is not a head sealed with this audit key (altered, or written \
         with another key)"
    )]
    Unsealed {
        /// The head file.
        path: PathBuf,
    },
}

/// Why the log does not hold what the head file names.
#[derive(Debug, thiserror::Error)]
#[error(
    "the head file {head} says record {seq} ends at byte {offset} of {file}, but {found}: the \
     log was cut or replaced; run `muxgate audit verify`, and to start a new log move both the \
     log and the head file aside{hint}"
)]
pub struct HeadMismatch {
    head: PathBuf,
    seq: u64,
    offset: u64,
    file: String,
    found: String,
    hint: &'static str,
}

/// Whose head file it is, as [`Head::check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sealing {
    /// It seals this log, and the log holds what it names.
    ThisLog,
    /// It seals another log, at this path: it says nothing about this one (`audit.path`
    /// changed, or `audit.head_file` is set to the same file for two logs).
    AnotherLog(PathBuf),
}

/// The hint a mismatch of a head file that names no log gets: it may be another log's.
pub(crate) const LEGACY_HINT: &str = ". This head file was written before head files named \
     their log: if it belongs to another log that shares this state directory, move it aside \
     instead";

impl Head {
    /// The record the log must still hold, for [`super::verify::verify`].
    pub fn anchor(&self) -> Anchor<'_> {
        Anchor {
            seq: self.seq,
            link: &self.link,
        }
    }

    /// Reads and checks the head file; `None` if there is none.
    pub fn load(path: &Path, key: &AuditKey) -> Result<Option<Self>, HeadError> {
        let text = match std::fs::read(path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(HeadError::Io {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let unsealed = || HeadError::Unsealed {
            path: path.to_owned(),
        };
        let line = text.strip_suffix(b"\n").unwrap_or(&text);
        let sealed = unseal(line, "mac").ok_or_else(unsealed)?;
        if !key.check_link(HEAD_LABEL, &sealed.body, &sealed.link) {
            return Err(unsealed());
        }
        serde_json::from_slice(&sealed.body)
            .map(Some)
            .map_err(|_| unsealed())
    }

    /// Replaces the head file (`0600`, atomically).
    pub fn save(&self, path: &Path, key: &AuditKey) -> io::Result<()> {
        let body = serde_json::to_vec(self).map_err(io::Error::other)?;
        let (mut line, _) = seal(key, "mac", HEAD_LABEL, &body);
        line.push(b'\n');
        crate::state::write_private(path, &line)
    }

    /// Checks that this head file seals the log whose live file is `live` (its first record's
    /// link `live_first`), and that the file it names still holds the named record where it
    /// was written. A head file that names no log is taken to be this log's, as before; one
    /// that names another log is not checked.
    pub(crate) fn check(
        &self,
        head_path: &Path,
        live: &Path,
        live_first: Option<&str>,
    ) -> Result<Sealing, Box<HeadMismatch>> {
        let live_abs = std::path::absolute(live).unwrap_or_else(|_| live.to_owned());
        let live_name = name_of(live);
        let named = self.file.clone().unwrap_or_else(|| live_name.clone());
        if let Some(sealed) = &self.log
            && *sealed != live_abs
        {
            // The same live file at a new path is still this log: its first record says so.
            let moved = named == name_of(sealed)
                && self.first.is_some()
                && self.first.as_deref() == live_first;
            if !moved {
                return Ok(Sealing::AnotherLog(sealed.clone()));
            }
        }
        let file = live.with_file_name(&named);
        let mut result = self.check_file(head_path, &file);
        if result.is_err() && named != live_name && !file.exists() {
            // The head names the file a rotation was about to rename the live file to; the
            // rename did not happen, so the live file holds the record.
            result = self.check_file(head_path, live);
        }
        result.map(|()| Sealing::ThisLog)
    }

    /// Checks that the file at `path` holds the named record where it was written.
    fn check_file(&self, head_path: &Path, path: &Path) -> Result<(), Box<HeadMismatch>> {
        let file = name_of(path);
        let mismatch = |found: String| {
            Box::new(HeadMismatch {
                head: head_path.to_owned(),
                seq: self.seq,
                offset: self.offset,
                file: file.clone(),
                found,
                hint: if self.log.is_none() { LEGACY_HINT } else { "" },
            })
        };
        let mut log = match File::open(path) {
            Ok(log) => log,
            Err(e) => return Err(mismatch(format!("it cannot be opened ({e})"))),
        };
        let log = &mut log;
        if let Some(first) = &self.first {
            let found =
                first_record(log).map_err(|e| mismatch(format!("it cannot be read ({e})")))?;
            if found.is_some_and(|r| r.link != *first) {
                return Err(mismatch(
                    "its first record is not the one the head file names (another file)".into(),
                ));
            }
        }
        let len = log
            .metadata()
            .map_err(|e| mismatch(format!("its length cannot be read ({e})")))?
            .len();
        if len < self.offset {
            return Err(mismatch(format!("the log has only {len} bytes")));
        }
        let line = line_ending_at(log, self.offset)
            .map_err(|e| mismatch(format!("it cannot be read ({e})")))?;
        match line.as_deref().and_then(|l| unseal(l, "link")) {
            Some(found) if found.seq == self.seq && found.link == self.link => Ok(()),
            Some(found) => Err(mismatch(format!(
                "the record there is seq {} with another link",
                found.seq
            ))),
            None => Err(mismatch("no record ends there".to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head() -> Head {
        Head {
            seq: 3,
            link: "ab".repeat(32),
            offset: 100,
            time: "2026-01-01T00:00:00.000Z".into(),
            log: Some("/var/log/muxgate/audit.jsonl".into()),
            file: Some("audit.jsonl".into()),
            first: Some("cd".repeat(32)),
        }
    }

    #[test]
    fn a_saved_head_loads_with_its_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.head");
        let key = AuditKey::from_secret(&[7; 32]);
        assert_eq!(Head::load(&path, &key).unwrap(), None);
        head().save(&path, &key).unwrap();
        assert_eq!(Head::load(&path, &key).unwrap(), Some(head()));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);

        let other = AuditKey::from_secret(&[8; 32]);
        assert!(matches!(
            Head::load(&path, &other),
            Err(HeadError::Unsealed { .. })
        ));
        // A head file written before heads named their log still loads.
        let legacy = br#"{"seq":3,"link":"ab","offset":100,"time":"t"}"#;
        let (mut line, _) = seal(&key, "mac", HEAD_LABEL, legacy);
        line.push(b'\n');
        let old = dir.path().join("audit.head.old");
        std::fs::write(&old, line).unwrap();
        let loaded = Head::load(&old, &key).unwrap().unwrap();
        assert_eq!((loaded.seq, loaded.log, loaded.file), (3, None, None));

        // Rolling the head back by hand (an earlier seq) breaks its seal.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace(r#""seq":3"#, r#""seq":2"#)).unwrap();
        assert!(matches!(
            Head::load(&path, &key),
            Err(HeadError::Unsealed { .. })
        ));
    }
}
