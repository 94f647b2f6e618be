//! `muxgate audit verify FILE [--key FILE] [--head FILE]`: checks an audit log's keyed chain
//! with [`crate::audit::verify`], and its end against the head file, and lists every gap the
//! gateway recorded (`dropped` records). It exits non-zero on any problem and on any lost
//! record: a complete log and one with gaps must not look alike to a script.
//!
//! The key and head file default to the configuration's (`audit.key_file`, `audit.head_file`,
//! else `audit.key` and `audit.head` in the state directory). Without the key nothing can be
//! verified, and the command says so and fails. Without a head file the chain is still checked,
//! but records cut off the end cannot be seen: the command notes it and does not fail, since a
//! copy of a log is often verified away from the gateway's state.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use super::VerifyArgs;
use crate::audit::{AuditKey, Head, VerifyReport, verify};
use crate::config::{self, Config};

pub fn run(args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    let (key_path, head_path) = paths(args)?;
    let Some(key_path) = key_path else {
        println!(
            "cannot verify the chain: no key (audit.key_file is not set and there is no state \
             directory); give --key FILE"
        );
        return Ok(ExitCode::FAILURE);
    };
    let key = match AuditKey::load(&key_path) {
        Ok(key) => key,
        Err(error) => {
            println!("cannot verify the chain without the key: {error}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let head = match &head_path {
        None => None,
        Some(path) => match Head::load(path, &key) {
            Ok(Some(head)) => Some(head),
            Ok(None) if args.head.is_some() => {
                println!("head file {} does not exist", path.display());
                return Ok(ExitCode::FAILURE);
            }
            Ok(None) => None,
            Err(error) => {
                println!("BROKEN: {error}");
                return Ok(ExitCode::FAILURE);
            }
        },
    };
    let report = verify(&args.file, &key, head.as_ref().map(Head::anchor))
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    println!("{report}");
    for gap in &report.gaps {
        println!("gap: {gap}");
    }
    for note in notes(&report, head_path.as_deref(), head.is_some()) {
        println!("note: {note}");
    }
    Ok(if report.is_complete() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The key and head files: given, else the configuration's defaults.
fn paths(args: &VerifyArgs) -> anyhow::Result<(Option<PathBuf>, Option<PathBuf>)> {
    if let (Some(key), Some(head)) = (&args.key, &args.head) {
        return Ok((Some(key.clone()), Some(head.clone())));
    }
    let loaded = Config::load(args.config.config.as_deref(), config::process_env()?)?;
    let audit = &loaded.config.audit;
    let state_dir = loaded
        .config
        .state
        .resolve(|var| std::env::var_os(var))
        .ok();
    let key = args
        .key
        .clone()
        .or_else(|| audit.key_path(state_dir.as_deref()));
    let head = args
        .head
        .clone()
        .or_else(|| audit.head_path(state_dir.as_deref()));
    Ok((key, head))
}

/// What the report means beyond its verdict: how far the head file vouches for the end.
fn notes(report: &VerifyReport, head_path: Option<&Path>, had_head: bool) -> Vec<String> {
    let mut notes = Vec::new();
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
            "{} record(s) after the last checkpoint (line {}): the gateway is running, was \
             stopped without closing the log, or lines were cut",
            report.after_checkpoint, checkpoint.line
        )),
        None if report.lines > 0 => notes.push(
            "no checkpoint in the log: the gateway never closed it, or lines were cut".to_owned(),
        ),
        None => {}
    }
    notes
}
