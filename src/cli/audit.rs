//! `muxgate audit verify [FILE|DIR]... [--key FILE] [--head FILE]`: checks an audit log's
//! keyed chain with [`crate::audit::verify_files`] (several files: in the order given, as one
//! chain; a directory: the log's files in it, rotated ones first; none: the configured log and
//! the files rotated out of it), and its end against the head file, and lists every gap the
//! gateway recorded (`dropped` records). It exits non-zero on any problem and on any lost
//! record: a complete log and one with gaps must not look alike to a script.
//!
//! The key and head file default to the configuration's (`audit.key_file`, `audit.head_file`,
//! else `audit.key` and the log's own head file in the state directory, or the `audit.head`
//! an earlier version kept there). Without the key nothing can be verified, and the command
//! says so and fails. Without a head file the chain is still checked, but records cut off the
//! end cannot be seen: the command notes it and does not fail, since a copy of a log is often
//! verified away from the gateway's state.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use super::VerifyArgs;
use crate::audit::files::{log_files, name_of};
use crate::audit::{AuditKey, Head, VerifyReport, verify_files};
use crate::config::{self, Config};

/// The log's file name when a directory is given and no `audit.path` names one.
const DEFAULT_LOG_NAME: &str = "audit.jsonl";

pub(super) fn run(args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    let defaults = defaults(args)?;
    let Some(key_path) = &defaults.key else {
        println!(
            "cannot verify the chain: no key (audit.key_file is not set and there is no state \
             directory); give --key FILE"
        );
        return Ok(ExitCode::FAILURE);
    };
    let key = match AuditKey::load(key_path) {
        Ok(key) => key,
        Err(error) => {
            println!("cannot verify the chain without the key: {error}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let files = match files(args, defaults.log.as_deref()) {
        Ok(files) if !files.is_empty() => files,
        Ok(_) => {
            println!("no audit file to verify");
            return Ok(ExitCode::FAILURE);
        }
        Err(why) => {
            println!("{why}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let head = match head(args, &defaults, &key) {
        Ok(head) => head,
        Err(why) => {
            println!("{why}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let report = verify_files(&files, &key, head.as_ref().map(Head::anchor))
        .with_context(|| format!("cannot read {}", names(&files)))?;
    println!("{report}");
    let first = report.first_problem.as_ref();
    for problem in report.file_problems.iter().filter(|p| Some(*p) != first) {
        println!("also: {problem}");
    }
    for gap in &report.gaps {
        println!("gap: {gap}");
    }
    for note in notes(&report, defaults.head.as_deref(), head.is_some()) {
        println!("note: {note}");
    }
    Ok(if report.is_complete() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What the configuration gives where the arguments do not.
struct Defaults {
    key: Option<PathBuf>,
    head: Option<PathBuf>,
    /// The head file of an earlier version, read when the log's own is missing.
    legacy_head: Option<PathBuf>,
    /// `audit.path`.
    log: Option<PathBuf>,
}

/// The key and head files and the log: given, else the configuration's defaults (read only
/// when something is not given).
fn defaults(args: &VerifyArgs) -> anyhow::Result<Defaults> {
    let complete = args.key.is_some()
        && args.head.is_some()
        && !args.files.is_empty()
        && !args.files.iter().any(|f| f.is_dir());
    if complete {
        return Ok(Defaults {
            key: args.key.clone(),
            head: args.head.clone(),
            legacy_head: None,
            log: None,
        });
    }
    let loaded = Config::load(args.config.config.as_deref(), config::process_env()?)?;
    let audit = &loaded.config.audit;
    let state_dir = loaded
        .config
        .state
        .resolve(|var| std::env::var_os(var))
        .ok();
    let state_dir = state_dir.as_deref();
    Ok(Defaults {
        key: args.key.clone().or_else(|| audit.key_path(state_dir)),
        head: args.head.clone().or_else(|| audit.head_path(state_dir)),
        legacy_head: match args.head {
            Some(_) => None,
            None => audit.legacy_head_path(state_dir),
        },
        log: audit.path.clone(),
    })
}

/// The files to verify, in order: as given (a directory standing for the log's files in it),
/// or the configured log's.
fn files(args: &VerifyArgs, log: Option<&Path>) -> Result<Vec<PathBuf>, String> {
    let listed = |live: &Path| {
        log_files(live).map_err(|e| format!("cannot list the files of {}: {e}", live.display()))
    };
    if args.files.is_empty() {
        return match log {
            Some(log) => listed(log),
            None => Err(
                "no file given and audit.path is not set: give the files (or the directory) to \
                 verify"
                    .to_owned(),
            ),
        };
    }
    let name = log.map_or_else(|| DEFAULT_LOG_NAME.to_owned(), name_of);
    let mut files = Vec::new();
    for file in &args.files {
        if file.is_dir() {
            files.extend(listed(&file.join(&name))?);
        } else {
            files.push(file.clone());
        }
    }
    Ok(files)
}

/// The head file to check the end against: the one given (it must exist), else the log's own,
/// else the one an earlier version kept in the state directory, if it does not name another
/// log.
fn head(args: &VerifyArgs, defaults: &Defaults, key: &AuditKey) -> Result<Option<Head>, String> {
    let load = |path: &Path| Head::load(path, key).map_err(|error| format!("BROKEN: {error}"));
    let Some(path) = &defaults.head else {
        return Ok(None);
    };
    if let Some(head) = load(path)? {
        return Ok(Some(head));
    }
    if args.head.is_some() {
        return Err(format!("head file {} does not exist", path.display()));
    }
    let Some(legacy) = &defaults.legacy_head else {
        return Ok(None);
    };
    let log = defaults
        .log
        .as_deref()
        .map(|log| std::path::absolute(log).unwrap_or_else(|_| log.to_owned()));
    Ok(load(legacy)?.filter(|head| head.log.is_none() || head.log == log))
}

fn names(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the report means beyond its verdict: how far the head file vouches for the end.
fn notes(report: &VerifyReport, head_path: Option<&Path>, had_head: bool) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(start) = &report.starts_after {
        notes.push(format!(
            "the first file continues {} (up to record {}), which was not given: the records \
             before it are not checked",
            start.file, start.seq
        ));
    }
    match (report.anchored_seq, had_head) {
        (Some(seq), _) => notes.push(format!(
            "the head file anchors the log up to record {seq}; {} record(s) after it are not \
             anchored",
            report.last_seq.saturating_sub(seq)
        )),
        (None, false) => notes.push(match head_path {
            Some(path) => format!(
                "no head file at {}: records cut off the end cannot be detected",
                path.display()
            ),
            None => "no head file: records cut off the end cannot be detected".to_owned(),
        }),
        (None, true) => {}
    }
    match &report.last_checkpoint {
        Some(checkpoint) if report.after_checkpoint == 0 && checkpoint.reason == "close" => {
            notes.push("the log ends with the checkpoint written when it was closed".to_owned());
        }
        Some(checkpoint) => notes.push(format!(
            "{} record(s) after the last checkpoint (line {}{}): the gateway is running, was \
             stopped without closing the log, or lines were cut",
            report.after_checkpoint,
            checkpoint.line,
            checkpoint
                .file
                .as_ref()
                .map_or_else(String::new, |file| format!(" of {file}"))
        )),
        None if report.lines > 0 => notes.push(
            "no checkpoint in the log: the gateway never closed it, or lines were cut".to_owned(),
        ),
        None => {}
    }
    notes
}
