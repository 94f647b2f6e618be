//! The audit file's hash chain: appending linked lines, and verifying a file.
//!
//! Every line is one JSON object with a `seq` number (1, 2, 3, … across restarts) and a
//! `prev` field holding the SHA-256 (lowercase hex) of the previous line's exact bytes, without
//! its newline. The first line's `prev` is [`GENESIS`]. Editing, inserting or deleting a line
//! breaks the link after it; `seq` tells a deletion from an edit. Cutting lines off the end
//! cannot be seen from inside the file: compare [`VerifyReport::head`] with a copy kept
//! elsewhere (the writer logs the head when it closes).

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// `prev` of the first line of a chain.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// SHA-256 of a line's bytes (without the newline), lowercase hex.
pub fn line_hash(line: &[u8]) -> String {
    hex::encode(Sha256::digest(line))
}

#[derive(Deserialize)]
struct Links {
    seq: u64,
    prev: String,
}

fn links(line: &[u8]) -> Option<Links> {
    serde_json::from_slice(line).ok()
}

/// Appends linked lines to an audit file, holding an exclusive lock on it so that two
/// processes cannot interleave two chains.
#[derive(Debug)]
pub(crate) struct ChainWriter {
    path: PathBuf,
    out: BufWriter<File>,
    seq: u64,
    prev: String,
}

impl ChainWriter {
    /// Opens (creating with mode 0600) and locks the file, and continues its chain. A last
    /// line cut short by a crash is terminated and linked to as it is, so `verify` shows it.
    pub fn open(path: &Path) -> io::Result<Self> {
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)?;
        // SAFETY: `flock` only reads the descriptor, which `file` keeps open for the call.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if locked != 0 {
            let err = io::Error::last_os_error();
            return Err(io::Error::new(
                err.kind(),
                format!("audit log is locked by another process ({err})"),
            ));
        }
        let tail = read_tail(&mut file)?;
        let (seq, prev) = match tail {
            None => (0, GENESIS.to_owned()),
            Some(tail) => {
                if !tail.terminated {
                    file.write_all(b"\n")?;
                }
                let seq = match links(&tail.line) {
                    Some(l) => l.seq,
                    None => count_lines(path)?,
                };
                (seq, line_hash(&tail.line))
            }
        };
        Ok(Self {
            path: path.to_owned(),
            out: BufWriter::new(file),
            seq,
            prev,
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `seq` of the last line written.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Hash of the last line written ([`GENESIS`] for an empty file).
    pub fn head(&self) -> &str {
        &self.prev
    }

    /// Appends one line built by `render(seq, prev)`; the chain advances only if the line was
    /// handed to the buffer.
    pub fn append(&mut self, render: impl FnOnce(u64, &str) -> Vec<u8>) -> io::Result<()> {
        let seq = self.seq + 1;
        let mut line = render(seq, &self.prev);
        let hash = line_hash(&line);
        line.push(b'\n');
        self.out.write_all(&line)?;
        self.seq = seq;
        self.prev = hash;
        Ok(())
    }

    /// Pushes buffered lines to the OS.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and asks the OS to persist the data.
    pub fn sync(&mut self) -> io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_data()
    }
}

struct Tail {
    line: Vec<u8>,
    terminated: bool,
}

/// The last line of a file (without its newline), reading backwards in growing windows.
fn read_tail(file: &mut File) -> io::Result<Option<Tail>> {
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(None);
    }
    let mut window: u64 = 64 * 1024;
    loop {
        let start = len.saturating_sub(window);
        file.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::with_capacity((len - start) as usize);
        Read::by_ref(file).take(len - start).read_to_end(&mut buf)?;
        let terminated = buf.last() == Some(&b'\n');
        let body = if terminated {
            &buf[..buf.len() - 1]
        } else {
            &buf[..]
        };
        match body.iter().rposition(|&b| b == b'\n') {
            Some(i) => {
                return Ok(Some(Tail {
                    line: body[i + 1..].to_vec(),
                    terminated,
                }));
            }
            None if start == 0 => {
                return Ok(Some(Tail {
                    line: body.to_vec(),
                    terminated,
                }));
            }
            None => window = window.saturating_mul(4),
        }
    }
}

fn count_lines(path: &Path) -> io::Result<u64> {
    let mut reader = BufReader::new(File::open(path)?);
    let mut count = 0;
    let mut buf = Vec::new();
    while reader.read_until(b'\n', &mut buf)? > 0 {
        count += 1;
        buf.clear();
    }
    Ok(count)
}

/// A defect found by [`verify`]. Line numbers start at 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainProblem {
    /// The line is not a JSON object with `seq` and `prev`.
    #[error("line {line} is not a valid audit record")]
    Malformed {
        /// The line.
        line: u64,
    },
    /// The line's content no longer matches the hash chain: it was edited or replaced.
    #[error("line {line} was altered: its hash no longer matches the chain")]
    Altered {
        /// The altered line.
        line: u64,
    },
    /// Records are missing before this line (deleted).
    #[error("records {expected_seq}..{} are missing before line {line}", found_seq - 1)]
    Missing {
        /// The first line after the gap.
        line: u64,
        /// The `seq` that should have come next.
        expected_seq: u64,
        /// The `seq` found instead.
        found_seq: u64,
    },
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Lines read.
    pub lines: u64,
    /// `seq` of the last valid line (0 if none).
    pub last_seq: u64,
    /// Hash of the last line ([`GENESIS`] for an empty file): anchor it elsewhere to detect
    /// truncation.
    pub head: String,
    /// The first problem, if any.
    pub first_problem: Option<ChainProblem>,
    /// How many problems were found in total.
    pub problems: u64,
}

impl VerifyReport {
    /// Whether the chain is unbroken.
    pub fn is_intact(&self) -> bool {
        self.problems == 0
    }
}

impl std::fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.first_problem {
            None => write!(
                f,
                "ok: {} lines, last seq {}, head {}",
                self.lines, self.last_seq, self.head
            ),
            Some(problem) => write!(
                f,
                "BROKEN: {problem} ({} problem(s) in {} lines; head {})",
                self.problems, self.lines, self.head
            ),
        }
    }
}

/// Checks an audit file's hash chain and reports the first broken or missing link.
pub fn verify(path: &Path) -> io::Result<VerifyReport> {
    let mut reader = BufReader::new(File::open(path)?);
    let mut report = VerifyReport {
        lines: 0,
        last_seq: 0,
        head: GENESIS.to_owned(),
        first_problem: None,
        problems: 0,
    };
    let record = |report: &mut VerifyReport, problem: ChainProblem| {
        report.problems += 1;
        report.first_problem.get_or_insert(problem);
    };
    // `seq` of the previous line, when it could be read.
    let mut prev_seq: Option<u64> = Some(0);
    // The previous line was reported (malformed or altered), which explains a broken link
    // from this line to it.
    let mut explained = false;
    // A line whose link to its predecessor is broken while its `seq` is in order: either the
    // predecessor or the line itself was altered; the next line's link tells which.
    let mut pending: Option<u64> = None;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        report.lines += 1;
        let line = report.lines;
        let hash = line_hash(&buf);
        let parsed = links(&buf);
        let link_ok = parsed.as_ref().is_some_and(|l| l.prev == report.head);

        if let Some(j) = pending.take() {
            if link_ok {
                record(&mut report, ChainProblem::Altered { line: j - 1 });
            } else {
                record(&mut report, ChainProblem::Altered { line: j });
                explained = true;
            }
        }

        match parsed {
            None => {
                record(&mut report, ChainProblem::Malformed { line });
                explained = true;
                prev_seq = None;
            }
            Some(l) => {
                if !link_ok && !std::mem::take(&mut explained) {
                    let expected = prev_seq.map(|s| s + 1);
                    match expected {
                        Some(e) if l.seq > e => record(
                            &mut report,
                            ChainProblem::Missing {
                                line,
                                expected_seq: e,
                                found_seq: l.seq,
                            },
                        ),
                        _ if line == 1 => record(&mut report, ChainProblem::Altered { line }),
                        _ => pending = Some(line),
                    }
                } else if link_ok {
                    explained = false;
                }
                prev_seq = Some(l.seq);
                report.last_seq = l.seq;
            }
        }
        report.head = hash;
    }
    if let Some(j) = pending {
        // The last line does not link to its predecessor and nothing follows to tell which of
        // the two changed; name the predecessor, whose content the link vouched for.
        record(&mut report, ChainProblem::Altered { line: j - 1 });
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_chain(path: &Path, n: u64) {
        let mut w = ChainWriter::open(path).unwrap();
        for i in 0..n {
            w.append(|seq, prev| {
                format!(r#"{{"seq":{seq},"kind":"call","n":{i},"prev":"{prev}"}}"#).into_bytes()
            })
            .unwrap();
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

    #[test]
    fn an_untouched_chain_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 5);
        let report = verify(&path).unwrap();
        assert!(report.is_intact(), "{report}");
        assert_eq!((report.lines, report.last_seq), (5, 5));
        assert_eq!(report.head, line_hash(lines(&path)[4].as_bytes()));
        assert!(lines(&path)[0].contains(GENESIS));
    }

    #[test]
    fn an_empty_file_is_intact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, "").unwrap();
        let report = verify(&path).unwrap();
        assert!(report.is_intact());
        assert_eq!(report.head, GENESIS);
    }

    #[test]
    fn the_chain_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 3);
        write_chain(&path, 2);
        let report = verify(&path).unwrap();
        assert!(report.is_intact(), "{report}");
        assert_eq!(report.last_seq, 5);
    }

    #[test]
    fn an_edited_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 6);
        let mut l = lines(&path);
        l[2] = l[2].replace(r#""kind":"call""#, r#""kind":"nope""#);
        rewrite(&path, &l);
        let report = verify(&path).unwrap();
        assert_eq!(
            report.first_problem,
            Some(ChainProblem::Altered { line: 3 })
        );
        assert_eq!(report.problems, 1);
        assert_eq!(
            report.first_problem.unwrap().to_string(),
            "line 3 was altered: its hash no longer matches the chain"
        );
    }

    #[test]
    fn an_edited_prev_field_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 6);
        let mut l = lines(&path);
        let fake = line_hash(b"forged");
        let real = l[3].split(r#""prev":""#).nth(1).unwrap()[..64].to_owned();
        l[3] = l[3].replace(&real, &fake);
        rewrite(&path, &l);
        let report = verify(&path).unwrap();
        assert_eq!(
            report.first_problem,
            Some(ChainProblem::Altered { line: 4 })
        );
        assert_eq!(report.problems, 1);
    }

    #[test]
    fn the_first_line_is_checked_against_genesis() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 3);
        let mut l = lines(&path);
        l[0] = l[0].replace(GENESIS, &line_hash(b"x"));
        rewrite(&path, &l);
        let report = verify(&path).unwrap();
        assert_eq!(
            report.first_problem,
            Some(ChainProblem::Altered { line: 1 })
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
        let report = verify(&path).unwrap();
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
        let report = verify(&path).unwrap();
        assert_eq!(
            report.first_problem,
            Some(ChainProblem::Missing {
                line: 1,
                expected_seq: 1,
                found_seq: 2
            })
        );
    }

    #[test]
    fn malformed_and_crash_cut_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_chain(&path, 3);
        let mut l = lines(&path);
        l[1] = "garbage".into();
        rewrite(&path, &l);
        let report = verify(&path).unwrap();
        assert_eq!(
            report.first_problem,
            Some(ChainProblem::Malformed { line: 2 })
        );
        assert_eq!(report.problems, 1, "{report}");

        // A crash mid-line: the writer terminates the fragment and links past it.
        let path = dir.path().join("crash.jsonl");
        write_chain(&path, 2);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(r#"{"seq":3,"kind":"ca"#);
        std::fs::write(&path, text).unwrap();
        write_chain(&path, 2);
        let report = verify(&path).unwrap();
        assert_eq!(
            report.first_problem,
            Some(ChainProblem::Malformed { line: 3 })
        );
        assert_eq!(report.problems, 1, "{report}");
        assert_eq!(report.lines, 5);
    }

    #[test]
    fn a_second_writer_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let _first = ChainWriter::open(&path).unwrap();
        let err = ChainWriter::open(&path).unwrap_err();
        assert!(
            err.to_string().contains("locked by another process"),
            "{err}"
        );
    }

    #[test]
    fn long_last_lines_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut w = ChainWriter::open(&path).unwrap();
        let big = "x".repeat(300_000);
        w.append(|seq, prev| {
            format!(r#"{{"seq":{seq},"pad":"{big}","prev":"{prev}"}}"#).into_bytes()
        })
        .unwrap();
        w.sync().unwrap();
        let head = w.head().to_owned();
        drop(w);
        let w = ChainWriter::open(&path).unwrap();
        assert_eq!((w.seq(), w.head()), (1, head.as_str()));
        let mut file = File::open(&path).unwrap();
        assert!(read_tail(&mut file).unwrap().unwrap().terminated);
    }
}
