//! The head file: where the chain ended at the last checkpoint, kept outside the log.
//!
//! A log cut at its end is still a valid chain, so the writer also records its head elsewhere:
//! after every checkpoint record is written and synced, `audit.head` (in the state directory,
//! or `audit.head_file`) is replaced atomically with
//! `{"seq":12,"link":"<the checkpoint's link>","offset":<bytes up to its end>,"time":"…","mac":"…"}`,
//! sealed like a log line (HMAC with the chain key, over a fixed label instead of a previous
//! link). It names the checkpoint line; records written after it are not anchored until the
//! next checkpoint.
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

use super::chain::{Anchor, line_ending_at, seal, unseal};
use super::key::AuditKey;

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
    "the head file {head} says record {seq} ends at byte {offset} of the log, but {found}: the \
     log was cut or replaced; run `muxgate audit verify`, and to start a new log move both the \
     log and the head file aside"
)]
pub struct HeadMismatch {
    head: PathBuf,
    seq: u64,
    offset: u64,
    found: String,
}

impl Head {
    /// The record the log must still hold, for [`super::chain::verify`].
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

    /// Checks that `log` still holds the named record where it was written.
    pub(crate) fn check_log(
        &self,
        head_path: &Path,
        log: &mut File,
    ) -> Result<(), Box<HeadMismatch>> {
        let mismatch = |found: String| {
            Box::new(HeadMismatch {
                head: head_path.to_owned(),
                seq: self.seq,
                offset: self.offset,
                found,
            })
        };
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
        // Rolling the head back by hand (an earlier seq) breaks its seal.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace(r#""seq":3"#, r#""seq":2"#)).unwrap();
        assert!(matches!(
            Head::load(&path, &key),
            Err(HeadError::Unsealed { .. })
        ));
    }
}
