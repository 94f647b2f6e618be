//! What one line of the audit log is: its kinds ([`Entry`]) and how a line's body is rendered
//! (`seq`, `time`, the entry's fields; [`super::chain`] appends the `link`). The format is
//! described in the module docs of [`super`].

use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;

use super::Outcome;
use crate::utc::Utc;

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum CheckpointReason {
    Interval,
    Close,
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
    Dropped {
        count: u64,
    },
    Checkpoint {
        reason: CheckpointReason,
        count: u64,
        head: String,
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

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
pub(super) fn rfc3339_millis(t: SystemTime) -> String {
    let u = Utc::from(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        u.year, u.month, u.day, u.hour, u.minute, u.second, u.millis
    )
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::rfc3339_millis;

    #[test]
    fn timestamps() {
        let at = |s: u64, ms: u64| {
            rfc3339_millis(UNIX_EPOCH + Duration::from_secs(s) + Duration::from_millis(ms))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_700_000_000, 999), "2023-11-14T22:13:20.999Z");
        assert_eq!(at(4_107_542_399, 0), "2100-02-28T23:59:59.000Z");
    }
}
