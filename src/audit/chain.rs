//! The audit file's keyed chain: sealing lines as they are appended (verifying them is
//! [`mod@super::verify`]'s).
//!
//! Every line is one JSON object whose first field is `seq` (1, 2, 3, … across restarts) and
//! whose last field is `"link":"<64 hex>"`. The link is HMAC-SHA256 (the chain key, see
//! [`AuditKey`]) over the previous line's link (or [`GENESIS`] for the first line), a newline
//! and the line's *body*: the line's exact bytes with `,"link":"…"` removed. So a link vouches
//! for its line and, through the previous link, for every line before it, and only the key's
//! holder can make one:
//!
//! - editing a line breaks its own link (named by line number);
//! - deleting lines breaks the link of the line after them (`seq` tells how many are missing);
//! - inserting, reordering or rewriting lines (recomputing a plain hash chain, say) breaks the
//!   first changed line's link;
//! - cutting lines off the end leaves a valid shorter chain: only the head file (see
//!   [`super::head`]) shows that.
//!
//! A line that is not a sealed record (a crash cut it short) is reported as malformed and
//! skipped: the next line links to the last sealed one, which is also what the writer does when
//! it reopens such a file.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::backlog::Backlog;
use super::key::AuditKey;

/// The link before the first line of a chain.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Hex digits of a link.
const LINK_HEX: usize = 64;

/// How far back from the end the writer looks for the last sealed records before it gives up.
const MAX_TAIL_SCAN: u64 = 16 << 20;

/// `body` (a JSON object) with `"<field>":"<link>"` added as its last field, and that link:
/// HMAC over `prev`, a newline and `body`.
pub(crate) fn seal(key: &AuditKey, field: &str, prev: &str, body: &[u8]) -> (Vec<u8>, String) {
    let link = key.link(prev, body);
    // Our bodies are serialized structs, so they end with `}`; anything else would make a
    // malformed (hence visible) line.
    let open = body.strip_suffix(b"}").unwrap_or(body);
    let mut line = Vec::with_capacity(body.len() + field.len() + LINK_HEX + 6);
    line.extend_from_slice(open);
    line.extend_from_slice(format!(r#","{field}":"{link}"}}"#).as_bytes());
    (line, link)
}

/// A sealed line taken apart: its body (what the link covers), its link, and the fields
/// `verify` looks at.
#[derive(Debug, Clone)]
pub(crate) struct Unsealed {
    pub body: Vec<u8>,
    pub link: String,
    pub seq: u64,
    pub kind: Option<String>,
    pub reason: Option<String>,
    pub count: Option<u64>,
    pub time: Option<String>,
    /// What a `continued` record names.
    pub continued: Option<Continued>,
}

/// The file a `continued` record continues, and that file's last record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Continued {
    pub file: String,
    pub seq: u64,
    pub link: String,
}

#[derive(Deserialize)]
struct Fields {
    seq: u64,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    count: Option<u64>,
    #[serde(default)]
    time: Option<String>,
    #[serde(default)]
    previous_file: Option<String>,
    #[serde(default)]
    previous_seq: Option<u64>,
    #[serde(default)]
    previous_link: Option<String>,
}

/// Splits a line sealed with `field` into body and link; `None` unless it ends exactly with
/// `,"<field>":"<64 lowercase hex>"}` and its body is a JSON object with a `seq`.
pub(crate) fn unseal(line: &[u8], field: &str) -> Option<Unsealed> {
    let rest = line.strip_suffix(b"\"}")?;
    let split = rest.len().checked_sub(LINK_HEX)?;
    let (rest, link) = rest.split_at(split);
    if !link
        .iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    {
        return None;
    }
    let open = rest.strip_suffix(format!(r#","{field}":""#).as_bytes())?;
    let mut body = open.to_vec();
    body.push(b'}');
    let fields: Fields = serde_json::from_slice(&body).ok()?;
    let continued = match (
        fields.kind.as_deref(),
        fields.previous_file,
        fields.previous_seq,
        fields.previous_link,
    ) {
        (Some("continued"), Some(file), Some(seq), Some(link)) => {
            Some(Continued { file, seq, link })
        }
        _ => None,
    };
    Some(Unsealed {
        body,
        link: String::from_utf8(link.to_vec()).ok()?,
        seq: fields.seq,
        kind: fields.kind,
        reason: fields.reason,
        count: fields.count,
        time: fields.time,
        continued,
    })
}

/// A record line of the log, unsealed.
pub(crate) fn record(line: &[u8]) -> Option<Unsealed> {
    unseal(line, "link")
}

/// Why the writer will not continue a file.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Opening, locking or reading the file failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The last record's link is wrong for this key.
    #[error(
        "its last record (seq {seq}) does not verify with the audit key: the key is not the one \
         that wrote this log, or the log was altered; run `muxgate audit verify`, then restore \
         the key or move the log aside to start a new one"
    )]
    TailUnverified {
        /// `seq` of that record.
        seq: u64,
    },
    /// Nothing near the end of a non-empty file is a sealed record.
    #[error(
        "it holds no keyed audit record near its end (a log written by an earlier muxgate, or a \
         damaged one); move it aside to start a new log"
    )]
    NoRecord,
}

/// Appends sealed lines to an audit file, holding an exclusive lock on it so that two
/// processes cannot interleave two chains.
///
/// Sealing and writing are apart: [`ChainWriter::seal`] gives a line its `seq` and link and puts
/// it in the [`Backlog`]; [`ChainWriter::write_backlog`] hands the backlog to the OS, in order.
/// A line the OS refuses stays in the backlog for the next attempt, and a line the OS took only
/// part of is cut back off the file (the writer holds the lock and knows where its last whole
/// line ends), so the file never keeps a torn line and the chain on disk never skips one.
pub(crate) struct ChainWriter {
    path: PathBuf,
    file: File,
    key: Arc<AuditKey>,
    /// `seq` and link of the last line sealed (on disk or in the backlog).
    seq: u64,
    prev: String,
    backlog: Backlog,
    /// Where the last whole line in the file ends.
    end: u64,
    /// `seq` of the last line in the file.
    written_seq: u64,
    /// A fragment could not be cut back: the file may run past `end` until it is.
    torn: bool,
}

impl ChainWriter {
    /// Opens (creating with mode 0600) and locks the file, checks that its last record is
    /// sealed with `key`, and continues its chain. A last line cut short by a crash is
    /// terminated and skipped, so `verify` shows it.
    pub(crate) fn open(path: &Path, key: Arc<AuditKey>) -> Result<Self, OpenError> {
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)?;
        // The lock keeps two chains out of one file. A device (`/dev/full` in tests, a FIFO)
        // holds no chain, and its lock would be shared by every process on the host.
        let regular = file.metadata()?.file_type().is_file();
        // SAFETY: `flock` only reads the descriptor, which `file` keeps open for the call.
        let locked =
            regular && unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0;
        if locked {
            let err = io::Error::last_os_error();
            return Err(io::Error::new(
                err.kind(),
                format!("audit log is locked by another process ({err})"),
            )
            .into());
        }
        let tail = read_tail(&mut file)?;
        let (seq, prev) = tail.verified_end(&key)?;
        if !tail.terminated {
            file.write_all(b"\n")?;
        }
        let end = file.seek(SeekFrom::End(0))?;
        Ok(Self {
            path: path.to_owned(),
            file,
            key,
            seq,
            prev,
            backlog: Backlog::default(),
            end,
            written_seq: seq,
            torn: false,
        })
    }

    /// The file being written.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// `seq` of the last line sealed.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    /// Link of the last line sealed ([`GENESIS`] for an empty file).
    pub(crate) fn head(&self) -> &str {
        &self.prev
    }

    /// Makes an empty file's chain continue after record `seq` with link `link` (of the file
    /// it was rotated from); its first record is then sealed with that link.
    pub(crate) fn continue_after(&mut self, seq: u64, link: &str) {
        if self.seq == 0 && self.end == 0 && self.backlog.is_empty() {
            self.seq = seq;
            self.written_seq = seq;
            self.prev = link.to_owned();
        }
    }

    /// Whether nothing was ever written to or sealed for this file.
    pub(crate) fn is_empty(&self) -> bool {
        self.end == 0 && self.backlog.is_empty()
    }

    /// The file was renamed to `path` (it is held open, so writing goes on).
    pub(crate) fn moved_to(&mut self, path: &Path) {
        path.clone_into(&mut self.path);
    }

    /// `seq` of the last line in the file.
    pub(crate) fn written_seq(&self) -> u64 {
        self.written_seq
    }

    /// Lines sealed but not yet in the file.
    pub(crate) fn backlog_len(&self) -> usize {
        self.backlog.len()
    }

    /// Seals one line whose body (a JSON object without the link) is `render(seq)` and puts it
    /// in the backlog; returns its `seq`. Nothing is written yet.
    pub(crate) fn seal(&mut self, render: impl FnOnce(u64) -> Vec<u8>) -> u64 {
        let seq = self.seq + 1;
        let (mut line, link) = seal(&self.key, "link", &self.prev, &render(seq));
        line.push(b'\n');
        self.backlog.push(&line);
        self.seq = seq;
        self.prev = link;
        seq
    }

    /// Hands the backlog to the OS, in order, until it is empty or the OS refuses. Returns how
    /// many lines reached the file, and the error that stopped it. Lines not written stay in
    /// the backlog; a part of a line that was written is cut off the file again.
    pub(crate) fn write_backlog(&mut self) -> (u64, io::Result<()>) {
        if self.torn {
            if let Err(e) = self.file.set_len(self.end) {
                return (0, Err(e));
            }
            self.torn = false;
        }
        let mut written = 0;
        while !self.backlog.is_empty() {
            let error = match self.file.write(self.backlog.unsent()) {
                Ok(0) => io::Error::from(io::ErrorKind::WriteZero),
                Ok(n) => {
                    let (lines, bytes) = self.backlog.advance(n);
                    self.end += bytes;
                    self.written_seq += lines;
                    written += lines;
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => e,
            };
            self.cut_back();
            return (written, Err(error));
        }
        (written, Ok(()))
    }

    /// Removes the part of a line that a stopped write left at the end of the file. If even
    /// that fails, the next write tries again first.
    fn cut_back(&mut self) {
        if self.backlog.sent() == 0 {
            return;
        }
        self.backlog.unsend();
        if let Err(error) = self.file.set_len(self.end) {
            tracing::warn!(path = %self.path.display(), %error, "cutting back a partly written audit line failed; trying again before the next write");
            self.torn = true;
        }
    }

    /// Asks the OS to persist what was written.
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// The file, to read.
    pub(crate) fn file_mut(&mut self) -> &mut File {
        &mut self.file
    }

    /// Where the last whole line in the file ends (the writer holds the only lock, and
    /// appends only).
    pub(crate) fn end_offset(&self) -> u64 {
        self.end
    }
}

/// The `seq` and link of the last record of the file at `path`, checked with `key` (as the
/// writer checks the end of a file before it continues it); `(0, GENESIS)` for an empty file.
pub(crate) fn last_record(path: &Path, key: &AuditKey) -> Result<(u64, String), OpenError> {
    read_tail(&mut File::open(path)?)?.verified_end(key)
}

/// The first sealed record of `file`, if its first line is one.
pub(crate) fn first_record(file: &mut File) -> io::Result<Option<Unsealed>> {
    file.seek(SeekFrom::Start(0))?;
    let mut line = Vec::new();
    BufReader::new(Read::by_ref(file).take(MAX_TAIL_SCAN)).read_until(b'\n', &mut line)?;
    Ok(record(line.strip_suffix(b"\n").unwrap_or(&line)))
}

/// The end of a file, as the writer needs it to continue the chain.
struct Tail {
    /// The file has no bytes.
    empty: bool,
    /// The last sealed record.
    last: Option<Unsealed>,
    /// The sealed record before it.
    before: Option<Unsealed>,
    /// Every line before `last` was read (so no `before` means `last` is the first record).
    reached_start: bool,
    /// The file ends with a newline (or is empty).
    terminated: bool,
}

impl Tail {
    /// The last record's `seq` and link, once its link verified against the record before it
    /// (or the link a `continued` first record names); `(0, GENESIS)` for an empty file.
    fn verified_end(&self, key: &AuditKey) -> Result<(u64, String), OpenError> {
        let Some(last) = &self.last else {
            return if self.empty {
                Ok((0, GENESIS.to_owned()))
            } else {
                Err(OpenError::NoRecord)
            };
        };
        let before = match (&self.before, &last.continued) {
            (Some(before), _) => before.link.clone(),
            (None, Some(from)) if self.reached_start => from.link.clone(),
            (None, None) if self.reached_start => GENESIS.to_owned(),
            (None, _) => return Err(OpenError::NoRecord),
        };
        if !key.check_link(&before, &last.body, &last.link) {
            return Err(OpenError::TailUnverified { seq: last.seq });
        }
        Ok((last.seq, last.link.clone()))
    }
}

/// The last two sealed records of a file, reading backwards in growing windows (lines that are
/// not sealed records are skipped, as `verify` skips them).
fn read_tail(file: &mut File) -> io::Result<Tail> {
    let len = file.seek(SeekFrom::End(0))?;
    let mut window: u64 = 64 * 1024;
    loop {
        let start = len.saturating_sub(window);
        file.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::with_capacity(usize::try_from(len - start).unwrap_or(0));
        Read::by_ref(file).take(len - start).read_to_end(&mut buf)?;
        let terminated = buf.is_empty() || buf.last() == Some(&b'\n');
        let text = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let mut pieces: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        if start > 0 {
            // The window began inside a line.
            pieces.remove(0);
        }
        let mut found = pieces.iter().rev().filter_map(|piece| record(piece));
        let last = found.next();
        let before = found.next();
        let done = before.is_some() || start == 0 || window >= MAX_TAIL_SCAN;
        if done {
            return Ok(Tail {
                empty: len == 0,
                last,
                before,
                reached_start: start == 0,
                terminated,
            });
        }
        window = window.saturating_mul(4);
    }
}

/// The line that ends just before byte `end` of `file` (whose byte `end - 1` is its newline),
/// without the newline; `None` if byte `end - 1` is not a newline or the line is longer than the
/// tail scan allows.
pub(crate) fn line_ending_at(file: &mut File, end: u64) -> io::Result<Option<Vec<u8>>> {
    if end == 0 {
        return Ok(None);
    }
    let mut window: u64 = 64 * 1024;
    loop {
        let start = end.saturating_sub(window);
        file.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::with_capacity(usize::try_from(end - start).unwrap_or(0));
        Read::by_ref(file).take(end - start).read_to_end(&mut buf)?;
        let Some(text) = buf.strip_suffix(b"\n") else {
            return Ok(None);
        };
        match text.iter().rposition(|&b| b == b'\n') {
            Some(i) => return Ok(Some(text[i + 1..].to_vec())),
            None if start == 0 => return Ok(Some(text.to_vec())),
            None if window >= MAX_TAIL_SCAN => return Ok(None),
            None => window = window.saturating_mul(4),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::verify::{Anchor, ChainProblem, VerifyReport, verify};
    use sha2::{Digest as _, Sha256};

    fn key() -> Arc<AuditKey> {
        Arc::new(AuditKey::from_secret(&[3; 32]))
    }

    fn append(w: &mut ChainWriter, kind: &str, i: u64) {
        w.seal(|seq| format!(r#"{{"seq":{seq},"kind":"{kind}","n":{i}}}"#).into_bytes());
        w.write_backlog().1.unwrap();
    }

    fn write_chain(path: &Path, n: u64) {
        let mut w = ChainWriter::open(path, key()).unwrap();
        for i in 0..n {
            append(&mut w, "start", i);
        }
        w.sync().unwrap();
    }

    fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn rewrite(path: &Path, lines: &[String]) {
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }

    fn check(path: &Path) -> VerifyReport {
        verify(path, &key(), None).unwrap()
    }

    #[test]
    fn an_untouched_chain_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 5);
        let report = check(&path);
        assert!(report.is_intact(), "{report}");
        assert_eq!((report.lines, report.verified, report.last_seq), (5, 5, 5));
        let l = lines(&path);
        assert!(
            l[0].starts_with(r#"{"seq":1,"kind":"start","n":0,"link":""#),
            "{}",
            l[0]
        );
        let first = record(l[0].as_bytes()).unwrap();
        assert_eq!(
            first.link,
            key().link(GENESIS, br#"{"seq":1,"kind":"start","n":0}"#)
        );
        assert_eq!(report.head, record(l[4].as_bytes()).unwrap().link);
        // Every line is JSON.
        for line in &l {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
    }

    #[test]
    fn an_empty_file_is_intact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, "").unwrap();
        let report = check(&path);
        assert!(report.is_intact());
        assert_eq!(report.head, GENESIS);
    }

    #[test]
    fn the_chain_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 3);
        write_chain(&path, 2);
        let report = check(&path);
        assert!(report.is_intact(), "{report}");
        assert_eq!(report.last_seq, 5);
    }

    #[test]
    fn an_edited_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 6);
        let mut l = lines(&path);
        l[2] = l[2].replace(r#""n":2"#, r#""n":7"#);
        rewrite(&path, &l);
        let report = check(&path);
        assert_eq!(
            report.first_problem,
            Some(ChainProblem::Altered { line: 3 })
        );
        assert_eq!(report.problems, 1, "{report}");
        assert_eq!(
            report.first_problem.unwrap().to_string(),
            "line 3 does not match the chain: it was altered, moved or forged"
        );

        // The last line too: there is no "next line" it depends on.
        let path = dir.path().join("last.jsonl");
        write_chain(&path, 6);
        let mut l = lines(&path);
        let last = l.len() - 1;
        l[last] = l[last].replace(r#""kind":"start""#, r#""kind":"other""#);
        rewrite(&path, &l);
        assert_eq!(
            check(&path).first_problem,
            Some(ChainProblem::Altered { line: 6 })
        );
    }

    #[test]
    fn an_edited_link_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 6);
        let mut l = lines(&path);
        let real = record(l[3].as_bytes()).unwrap().link;
        l[3] = l[3].replace(&real, &"a".repeat(64));
        rewrite(&path, &l);
        let report = check(&path);
        assert_eq!(
            report.first_problem,
            Some(ChainProblem::Altered { line: 4 })
        );
    }

    #[test]
    fn deleted_lines_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 6);
        let mut l = lines(&path);
        l.remove(2); // seq 3
        l.remove(2); // seq 4
        rewrite(&path, &l);
        let report = check(&path);
        assert_eq!(
            report.first_problem,
            Some(ChainProblem::Missing {
                line: 3,
                expected_seq: 3,
                found_seq: 5
            })
        );
        assert_eq!(
            report.first_problem.as_ref().unwrap().to_string(),
            "records 3..4 are missing before line 3"
        );
        assert_eq!(report.problems, 1);

        // Deleting the first lines shows as well.
        let mut l = lines(&path);
        l.remove(0);
        rewrite(&path, &l);
        assert_eq!(
            check(&path).first_problem,
            Some(ChainProblem::Missing {
                line: 1,
                expected_seq: 1,
                found_seq: 2
            })
        );
    }

    /// A cut tail is a valid shorter chain: only the head file shows it.
    #[test]
    fn deleting_the_last_lines_is_seen_with_the_head_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut w = ChainWriter::open(&path, key()).unwrap();
        for i in 0..4 {
            append(&mut w, "start", i);
        }
        append(&mut w, "checkpoint", 4);
        w.sync().unwrap();
        let link = w.head().to_owned();
        let head = Anchor {
            seq: w.seq(),
            link: &link,
        };
        append(&mut w, "start", 5);
        append(&mut w, "end", 6);
        w.sync().unwrap();
        drop(w);
        let report = verify(&path, &key(), Some(head)).unwrap();
        assert!(report.is_intact(), "{report}");
        assert_eq!(report.anchored_seq, Some(5));
        assert_eq!(report.after_checkpoint, 2);
        assert_eq!(report.last_checkpoint.as_ref().map(|c| c.line), Some(5));

        // Records after the head's checkpoint can go unseen (at most one interval of them) …
        let mut l = lines(&path);
        l.truncate(6);
        rewrite(&path, &l);
        assert!(verify(&path, &key(), Some(head)).unwrap().is_intact());
        // … but not the checkpoint and what came before it.
        l.truncate(3);
        rewrite(&path, &l);
        assert!(
            check(&path).is_intact(),
            "without the head file nothing shows"
        );
        let report = verify(&path, &key(), Some(head)).unwrap();
        assert_eq!(
            report.first_problem,
            Some(ChainProblem::CutTail {
                head_seq: 5,
                last_seq: 3
            })
        );
        assert!(!report.is_intact());

        // A log replaced by another chain as long (same key) does not hold the named record.
        let replaced = dir.path().join("replaced.jsonl");
        write_chain(&replaced, 7);
        let report = verify(&replaced, &key(), Some(head)).unwrap();
        assert_eq!(
            report.first_problem,
            Some(ChainProblem::HeadMismatch { seq: 5 })
        );
    }

    /// Someone without the key who edits a line and recomputes the links as a plain hash chain
    /// (what the unkeyed chain allowed) is caught at the first line they changed.
    #[test]
    fn a_recomputed_plain_hash_chain_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 5);
        let recompute = |from: usize, l: &mut Vec<String>| {
            let mut prev = match from {
                0 => GENESIS.to_owned(),
                n => record(l[n - 1].as_bytes()).unwrap().link,
            };
            for line in l.iter_mut().skip(from) {
                let body = record(line.as_bytes()).unwrap().body;
                let mut hasher = Sha256::new();
                hasher.update(prev.as_bytes());
                hasher.update(b"\n");
                hasher.update(&body);
                let link = hex::encode(hasher.finalize());
                let old = record(line.as_bytes()).unwrap().link;
                *line = line.replace(&old, &link);
                prev = link;
            }
        };
        let mut l = lines(&path);
        l[2] = l[2].replace(r#""n":2"#, r#""n":9"#);
        recompute(2, &mut l);
        rewrite(&path, &l);
        let report = check(&path);
        assert_eq!(
            report.first_problem,
            Some(ChainProblem::Altered { line: 3 })
        );
        assert_eq!(report.verified, 2);

        // The whole file recomputed: no line verifies.
        recompute(0, &mut l);
        rewrite(&path, &l);
        let report = check(&path);
        assert_eq!(report.first_problem, Some(ChainProblem::WrongKey));
        assert_eq!(report.verified, 0);
    }

    #[test]
    fn a_wrong_key_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 3);
        let other = AuditKey::from_secret(&[4; 32]);
        let report = verify(&path, &other, None).unwrap();
        assert_eq!(report.first_problem, Some(ChainProblem::WrongKey));
        assert!(!report.is_intact());
        // The writer will not continue it either.
        let err = ChainWriter::open(&path, Arc::new(other)).err().unwrap();
        assert!(matches!(err, OpenError::TailUnverified { seq: 3 }), "{err}");
    }

    #[test]
    fn the_writer_refuses_an_altered_or_foreign_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 3);
        let mut l = lines(&path);
        l[2] = l[2].replace(r#""n":2"#, r#""n":5"#);
        rewrite(&path, &l);
        let err = ChainWriter::open(&path, key()).err().unwrap();
        assert!(err.to_string().contains("seq 3"), "{err}");

        // A log of the earlier, unkeyed format.
        let old = dir.path().join("old.jsonl");
        std::fs::write(
            &old,
            format!("{{\"seq\":1,\"kind\":\"call\",\"prev\":\"{GENESIS}\"}}\n"),
        )
        .unwrap();
        let err = ChainWriter::open(&old, key()).err().unwrap();
        assert!(matches!(err, OpenError::NoRecord), "{err}");
    }

    #[test]
    fn malformed_and_crash_cut_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 3);
        let mut l = lines(&path);
        l[1] = "garbage".into();
        rewrite(&path, &l);
        let report = check(&path);
        assert_eq!(
            report.first_problem,
            Some(ChainProblem::Malformed { line: 2 })
        );
        assert_eq!(report.problems, 1, "{report}");

        // A crash mid-line: the writer terminates the fragment and links past it.
        let path = dir.path().join("crash.jsonl");
        write_chain(&path, 2);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(r#"{"seq":3,"kind":"st"#);
        std::fs::write(&path, text).unwrap();
        write_chain(&path, 2);
        let report = check(&path);
        assert_eq!(
            report.first_problem,
            Some(ChainProblem::Malformed { line: 3 })
        );
        assert_eq!(report.problems, 1, "{report}");
        assert_eq!((report.lines, report.verified, report.last_seq), (5, 4, 4));
        // And it continues such a file again.
        write_chain(&path, 1);
        assert_eq!(check(&path).verified, 5);
    }

    #[test]
    fn a_second_writer_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let _first = ChainWriter::open(&path, key()).unwrap();
        let err = ChainWriter::open(&path, key()).err().unwrap();
        assert!(
            err.to_string().contains("locked by another process"),
            "{err}"
        );
    }

    #[test]
    fn long_last_lines_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut w = ChainWriter::open(&path, key()).unwrap();
        append(&mut w, "start", 0);
        let big = "x".repeat(300_000);
        w.seal(|seq| format!(r#"{{"seq":{seq},"pad":"{big}"}}"#).into_bytes());
        w.write_backlog().1.unwrap();
        w.sync().unwrap();
        let head = w.head().to_owned();
        let end = w.end_offset();
        drop(w);
        let mut w = ChainWriter::open(&path, key()).unwrap();
        assert_eq!((w.seq(), w.head()), (2, head.as_str()));
        let line = line_ending_at(w.file_mut(), end).unwrap().unwrap();
        assert_eq!(record(&line).unwrap().link, head);
        assert_eq!(line_ending_at(w.file_mut(), end - 1).unwrap(), None);
    }
}
