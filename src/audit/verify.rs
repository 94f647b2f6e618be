//! Verifying an audit log: one file, or the files of a rotated log in order, as one chain.
//!
//! [`verify_files`] reads the files in the order given and checks every line's link (see
//! [`super::chain`]). A file after the first must begin with a `continued` record naming the
//! `seq` and link the file before it ends with (see [`super::files`]): a file missing between
//! two shows as the records it held, a file out of order or replaced as a chain position that
//! does not follow, and an edited line as a broken link named by file and line. The first file
//! may itself be a `continued` one (older files were archived or deleted): its first record's
//! link is checked against the link it names, so the set still verifies on its own, and the
//! report says where it starts. The head file's anchor is checked against the whole set.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::chain::{GENESIS, Unsealed, record};
use super::files::name_of;
use super::key::AuditKey;

/// A defect found by [`verify`]. Line numbers start at 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainProblem {
    /// The line is not a sealed JSON record.
    #[error("line {line} is not a sealed audit record")]
    Malformed {
        /// The line.
        line: u64,
    },
    /// The line's link does not match its content and the link before it.
    #[error("line {line} does not match the chain: it was altered, moved or forged")]
    Altered {
        /// The line.
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
    /// Not one line verifies.
    #[error(
        "no line verifies with this key: it is not the key that wrote this log, or every line \
         was rewritten"
    )]
    WrongKey,
    /// The log ends before the record the head file names.
    #[error(
        "the log ends at record {last_seq}, but the head file says record {head_seq} was \
         written: records were cut off the end"
    )]
    CutTail {
        /// `seq` in the head file.
        head_seq: u64,
        /// `seq` of the log's last record.
        last_seq: u64,
    },
    /// The log's record with the head file's `seq` is not the one the head file names.
    #[error(
        "record {seq} is not the one the head file names: the log was rewritten or replaced \
         from there on"
    )]
    HeadMismatch {
        /// `seq` in the head file.
        seq: u64,
    },
    /// A file continues a record after the last one of the file before it: the files between
    /// them are missing (or the file before was cut).
    #[error(
        "records {expected_seq}..{} are missing between {after} and {file}: a file of the log \
         is missing",
        found_seq - 1
    )]
    FilesMissing {
        /// The file that continues.
        file: String,
        /// The file before it in the set.
        after: String,
        /// The `seq` that should have come next.
        expected_seq: u64,
        /// The `seq` the file starts at.
        found_seq: u64,
    },
    /// A file continues another chain position than where the file before it ends.
    #[error(
        "{file} continues record {continues_seq} of {continues}, but follows {after}, which ends \
         at record {after_seq}: the files are out of order, or one was replaced"
    )]
    OutOfOrder {
        /// The file.
        file: String,
        /// The file its first record names.
        continues: String,
        /// The record it names.
        continues_seq: u64,
        /// The file before it in the set.
        after: String,
        /// The last record of that file.
        after_seq: u64,
    },
    /// A file after the first does not begin with a `continued` record.
    #[error(
        "{file} does not continue {after}: its first record is not a continued record (a file \
         of another log, or one that was replaced)"
    )]
    NotContinued {
        /// The file.
        file: String,
        /// The file before it in the set.
        after: String,
    },
}

/// The last checkpoint [`verify`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointSeen {
    /// The file, when several were verified.
    pub file: Option<String>,
    /// Its line.
    pub line: u64,
    /// Its `seq`.
    pub seq: u64,
    /// Its `reason` (`interval`, `close`, `rotate`).
    pub reason: String,
}

/// Records the writer could not keep, as a verified `dropped` record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    /// The file, when several were verified.
    pub file: Option<String>,
    /// The `dropped` record's line.
    pub line: u64,
    /// Records lost.
    pub count: u64,
    /// `queue_full` (the writer fell behind) or `write_failed` (the disk refused writes until
    /// the backlog was full). A `dropped` record written before reasons were recorded has none
    /// and counts as `queue_full`, its only cause then.
    pub reason: String,
}

impl std::fmt::Display for Gap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = match self.reason.as_str() {
            "queue_full" => "the queue to the writer was full",
            "write_failed" => "the disk refused writes until the backlog was full",
            other => other,
        };
        if let Some(file) = &self.file {
            write!(f, "{file} ")?;
        }
        write!(
            f,
            "line {}: {} record(s) lost ({}: {why})",
            self.line, self.count, self.reason
        )
    }
}

/// Where the verified set begins when its first file continues one that was not given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartsAfter {
    /// The file its first record names.
    pub file: String,
    /// The last record of that file.
    pub seq: u64,
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Files read.
    pub files: u64,
    /// Lines read.
    pub lines: u64,
    /// Lines whose link verified.
    pub verified: u64,
    /// `seq` of the last sealed line (0 if none).
    pub last_seq: u64,
    /// Link of the last sealed line ([`GENESIS`] for an empty file).
    pub head: String,
    /// The first file continues a file that was not given.
    pub starts_after: Option<StartsAfter>,
    /// The last verified checkpoint record.
    pub last_checkpoint: Option<CheckpointSeen>,
    /// Sealed records after the last checkpoint.
    pub after_checkpoint: u64,
    /// The `seq` the head file anchors, when one was given.
    pub anchored_seq: Option<u64>,
    /// The first problem, if any.
    pub first_problem: Option<ChainProblem>,
    /// The file of the first problem, when several were verified.
    pub first_problem_file: Option<String>,
    /// How many problems were found in total.
    pub problems: u64,
    /// Every problem with the files as a set (missing, out of order, not continued): few, and
    /// each worth showing.
    pub file_problems: Vec<ChainProblem>,
    /// Every verified `dropped` record: records the gateway lost, and said so in the chain.
    pub gaps: Vec<Gap>,
    /// Records lost in all gaps.
    pub lost: u64,
}

impl VerifyReport {
    /// Whether the chain (and the head file, if given) shows no problem.
    pub fn is_intact(&self) -> bool {
        self.problems == 0
    }

    /// Whether the chain is intact and the gateway lost no record: a log with a `dropped`
    /// record is intact (the gap is sealed) but not complete.
    pub fn is_complete(&self) -> bool {
        self.is_intact() && self.lost == 0
    }

    fn record(&mut self, file: Option<&str>, problem: ChainProblem) {
        self.problems += 1;
        if problem.names_files() {
            self.file_problems.push(problem.clone());
        }
        if self.first_problem.is_none() {
            self.first_problem = Some(problem);
            self.first_problem_file = file.map(str::to_owned);
        }
    }
}

impl std::fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let files = if self.files > 1 {
            format!(" in {} files", self.files)
        } else {
            String::new()
        };
        match &self.first_problem {
            None if self.lost > 0 => write!(
                f,
                "INCOMPLETE: {} record(s) lost in {} gap(s) the gateway recorded; {} records \
                 verified{files}, last seq {}, head {}",
                self.lost,
                self.gaps.len(),
                self.verified,
                self.last_seq,
                self.head
            ),
            None => write!(
                f,
                "ok: {} records verified{files}, last seq {}, head {}",
                self.verified, self.last_seq, self.head
            ),
            Some(problem) => {
                let place = match &self.first_problem_file {
                    Some(file) if !problem.names_files() => format!("{file}: "),
                    _ => String::new(),
                };
                write!(
                    f,
                    "BROKEN: {place}{problem} ({} problem(s) in {} lines{files}; {} verified)",
                    self.problems, self.lines, self.verified
                )
            }
        }
    }
}

impl ChainProblem {
    /// Whether the message names the files it is about already.
    fn names_files(&self) -> bool {
        matches!(
            self,
            Self::FilesMissing { .. } | Self::OutOfOrder { .. } | Self::NotContinued { .. }
        )
    }
}

/// The record a log must still hold: the one the head file names ([`super::head`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor<'a> {
    pub seq: u64,
    pub link: &'a str,
}

/// Checks an audit file's chain with `key`, and its end against `head` (from the head file)
/// when given. Reports the first broken link by line number.
pub fn verify(path: &Path, key: &AuditKey, head: Option<Anchor<'_>>) -> io::Result<VerifyReport> {
    verify_files(&[path.to_owned()], key, head)
}

/// Checks the files of one log, in the order given, as one chain (see the module docs).
pub fn verify_files(
    files: &[PathBuf],
    key: &AuditKey,
    head: Option<Anchor<'_>>,
) -> io::Result<VerifyReport> {
    let mut verifier = Verifier {
        key,
        head,
        several: files.len() > 1,
        report: VerifyReport {
            files: 0,
            lines: 0,
            verified: 0,
            last_seq: 0,
            head: GENESIS.to_owned(),
            starts_after: None,
            last_checkpoint: None,
            after_checkpoint: 0,
            anchored_seq: None,
            first_problem: None,
            first_problem_file: None,
            problems: 0,
            file_problems: Vec::new(),
            gaps: Vec::new(),
            lost: 0,
        },
        head_link: None,
        sealed: 0,
        after_malformed: false,
        previous: None,
    };
    for file in files {
        verifier.file(file)?;
    }
    Ok(verifier.finish())
}

struct Verifier<'a> {
    key: &'a AuditKey,
    head: Option<Anchor<'a>>,
    /// Several files: places name their file.
    several: bool,
    report: VerifyReport,
    /// The link of the record the head file names, once met.
    head_link: Option<String>,
    /// Sealed lines read.
    sealed: u64,
    /// The line before was not a sealed record: a broken link here is explained by it (a crash
    /// cut it short and the writer linked past it, or it replaced a record).
    after_malformed: bool,
    /// The name of the file read before this one.
    previous: Option<String>,
}

impl Verifier<'_> {
    fn file(&mut self, path: &Path) -> io::Result<()> {
        let name = name_of(path);
        let mut reader = BufReader::new(File::open(path)?);
        self.report.files += 1;
        let place = self.several.then(|| name.clone());
        let mut line = 0;
        let mut first = true;
        let mut buf = Vec::new();
        loop {
            buf.clear();
            if reader.read_until(b'\n', &mut buf)? == 0 {
                break;
            }
            if buf.last() == Some(&b'\n') {
                buf.pop();
            }
            self.report.lines += 1;
            line += 1;
            let Some(rec) = record(&buf) else {
                self.report
                    .record(place.as_deref(), ChainProblem::Malformed { line });
                self.after_malformed = true;
                continue;
            };
            if std::mem::take(&mut first) {
                self.start_file(&name, &rec);
            }
            self.line(place.as_deref(), line, rec);
        }
        self.previous = Some(name);
        Ok(())
    }

    /// The first record of a file: a `continued` record says where the chain comes from.
    fn start_file(&mut self, name: &str, rec: &Unsealed) {
        let continued = rec.continued.as_ref();
        match (continued, self.previous.clone()) {
            (Some(from), None) if self.sealed == 0 => {
                // Older files were not given: start where this one says it continues.
                self.report.starts_after = Some(StartsAfter {
                    file: from.file.clone(),
                    seq: from.seq,
                });
                self.report.last_seq = from.seq;
                self.report.head = from.link.clone();
            }
            (Some(from), Some(after)) => {
                if from.seq == self.report.last_seq && from.link == self.report.head {
                    return;
                }
                let problem = if from.seq > self.report.last_seq {
                    ChainProblem::FilesMissing {
                        file: name.to_owned(),
                        after,
                        expected_seq: self.report.last_seq + 1,
                        found_seq: from.seq + 1,
                    }
                } else {
                    ChainProblem::OutOfOrder {
                        file: name.to_owned(),
                        continues: from.file.clone(),
                        continues_seq: from.seq,
                        after,
                        after_seq: self.report.last_seq,
                    }
                };
                self.report.record(Some(name), problem);
                // Go on from where the file says it starts, so its own lines are checked.
                self.report.last_seq = from.seq;
                self.report.head = from.link.clone();
            }
            (None, Some(after)) => {
                self.report.record(
                    Some(name),
                    ChainProblem::NotContinued {
                        file: name.to_owned(),
                        after,
                    },
                );
                // Its first link cannot match: that is this problem, not another.
                self.after_malformed = true;
            }
            (_, None) => {}
        }
    }

    fn line(&mut self, place: Option<&str>, line: u64, rec: Unsealed) {
        let report = &mut self.report;
        self.sealed += 1;
        let expected_seq = report.last_seq + 1;
        let linked = self.key.check_link(&report.head, &rec.body, &rec.link);
        if linked {
            self.after_malformed = false;
            report.verified += 1;
        } else if !std::mem::take(&mut self.after_malformed) {
            report.record(
                place,
                if rec.seq > expected_seq {
                    ChainProblem::Missing {
                        line,
                        expected_seq,
                        found_seq: rec.seq,
                    }
                } else {
                    ChainProblem::Altered { line }
                },
            );
        }
        if linked && rec.kind.as_deref() == Some("dropped") {
            let count = rec.count.unwrap_or(0);
            report.lost += count;
            report.gaps.push(Gap {
                file: place.map(str::to_owned),
                line,
                count,
                reason: rec
                    .reason
                    .clone()
                    .unwrap_or_else(|| "queue_full".to_owned()),
            });
        }
        if linked && rec.kind.as_deref() == Some("checkpoint") {
            report.last_checkpoint = Some(CheckpointSeen {
                file: place.map(str::to_owned),
                line,
                seq: rec.seq,
                reason: rec.reason.unwrap_or_default(),
            });
            report.after_checkpoint = 0;
        } else {
            report.after_checkpoint += 1;
        }
        if self.head.is_some_and(|h| h.seq == rec.seq) && self.head_link.is_none() {
            self.head_link = Some(rec.link.clone());
        }
        report.last_seq = rec.seq;
        report.head = rec.link;
    }

    fn finish(mut self) -> VerifyReport {
        if self.sealed > 0 && self.report.verified == 0 {
            // Every sealed line failed: name the likelier cause instead of line 1.
            self.report.first_problem = Some(ChainProblem::WrongKey);
            self.report.first_problem_file = None;
        }
        if let Some(head) = self.head {
            self.report.anchor(head, self.head_link.as_deref());
        }
        self.report
    }
}

impl VerifyReport {
    /// Checks the chain's end against the head file: the log must reach the head's record,
    /// and that record must carry the head's link.
    fn anchor(&mut self, head: Anchor<'_>, head_link: Option<&str>) {
        if self.last_seq < head.seq {
            self.record(
                None,
                ChainProblem::CutTail {
                    head_seq: head.seq,
                    last_seq: self.last_seq,
                },
            );
        } else if head_link != Some(head.link) {
            self.record(None, ChainProblem::HeadMismatch { seq: head.seq });
        } else {
            self.anchored_seq = Some(head.seq);
        }
    }
}
