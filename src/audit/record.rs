//! What one line of the audit log is: its kinds ([`Entry`]) and how a line's body is rendered
//! (`seq`, `time`, the entry's fields; [`super::chain`] appends the `link`). The format is
//! described in the module docs of [`super`].

use serde::Serialize;
use serde_json::Value;

use super::Outcome;

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum CheckpointReason {
    Interval,
    Close,
    /// The last record of a file that was then rotated (see [`super::files`]).
    Rotate,
}

/// Why records were dropped (see [`super::writer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum DropReason {
    /// The queue to the writer was full: the writer fell behind.
    QueueFull,
    /// The disk refused writes for so long that the backlog filled up.
    WriteFailed,
}

#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(super) enum Entry {
    Start {
        call: String,
        sub: String,
        mcp_session: Option<String>,
        tool: String,
        server: Option<String>,
        /// The host the server runs on, when it is another machine's.
        #[serde(skip_serializing_if = "Option::is_none")]
        host: Option<String>,
        targets: Vec<Value>,
        args: Value,
    },
    End {
        call: String,
        outcome: Outcome,
        duration_ms: u64,
        error_kind: Option<String>,
    },
    /// A call held for a human, and how that ended.
    Approval {
        call: String,
        rule: String,
        /// `approved`, `denied`, `timed_out` or `cancelled` (by the client, or shutdown).
        decision: &'static str,
        /// The approver's `sub` (none when no one decided).
        by: Option<String>,
        waited_ms: u64,
    },
    /// A secret entry request, and what became of it: never the secret, only its length.
    Secret {
        /// The request's id (`s-1`), named in the answer of the call that opened it.
        request: String,
        /// The client that asked.
        sub: String,
        server: String,
        pane: String,
        /// `requested`, `typed` or `refused` (nothing typed: it would have shown, or the pane
        /// is gone).
        event: &'static str,
        /// Bytes typed (`typed` only).
        bytes: Option<usize>,
    },
    /// A call that acted on a recorded pane, and where in the recording it began.
    Recording {
        call: String,
        server: String,
        pane: String,
        /// The `.cast` file's name in the recordings directory.
        file: String,
        /// Seconds into the file when the call ran (the time of its events).
        at_secs: f64,
    },
    /// Records that were never sealed, and why: the gap they leave is in the chain.
    Dropped { count: u64, reason: DropReason },
    Checkpoint {
        reason: CheckpointReason,
        count: u64,
        head: String,
    },
    /// The first record of a file that continues the chain of another (after a rotation): the
    /// file before it, and its last record, which this record's link chains to.
    Continued {
        previous_file: String,
        previous_seq: u64,
        previous_link: String,
    },
    /// The gateway started with a head file that sealed another log (see [`super::head`]): it
    /// vouched for nothing here, and seals this log from now on.
    HeadReset {
        /// The head file.
        head_file: String,
        /// The log it sealed until now.
        sealed_log: String,
    },
}

#[derive(Serialize)]
struct Line<'a> {
    seq: u64,
    time: &'a str,
    #[serde(flatten)]
    entry: &'a Entry,
}

/// A record's body: `seq`, `time`, then the entry's fields (the chain adds `link`).
pub(super) fn render(seq: u64, time: &str, entry: &Entry) -> Vec<u8> {
    // Serializing plain strings, numbers and `Value`s cannot fail; an empty object would still
    // be a (malformed, hence visible) line.
    serde_json::to_vec(&Line { seq, time, entry }).unwrap_or_else(|_| b"{}".to_vec())
}
