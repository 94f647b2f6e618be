//! Following a command typed into a shell pane until it ends (`run_command`).
//!
//! How the command is typed, delimited and read back is `muxgate_mux::shell_run`: a wrapper
//! line between two invisible OSC 133 markers with a per-call id, read from the pane's output
//! stream. A shell that marks its own commands and that the pane's command ledger saw at its
//! prompt gets only the command (in the same subshell): the ledger's next record is the run,
//! named before it is typed, and its end mark carries the status. [`RunReader::start`] types
//! the command the way the ledger allows; [`follow`] reads the pane's output, subscribed
//! before typing, until the run ends, the pane's output ends, the deadline passes or the
//! caller cancels. Nothing polls.
//!
//! Whether the pane is a shell idle at its prompt, and the answer's shape, are the caller's.

use muxgate_mux::ledger::CommandRecord;
use muxgate_mux::shell::Shell;
use muxgate_mux::shell_run::{CommandError, RunCapture, RunMarkers, RunText, unmarked_typed_text};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Cancelled;
use crate::output::{OutputChunk, PaneStream};
use crate::typed::op_error::OpError;
use crate::typed::typing::TmuxTyping;
use crate::{OutputSubscription, PaneId, StreamEnd};

/// Why a run could not be typed.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The command cannot be typed as one line in this shell.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// Typing it failed.
    #[error(transparent)]
    Typing(#[from] OpError),
}

/// How a run's output and end are read.
pub enum RunReader {
    /// From its own markers, typed around the command (a shell that does not mark its
    /// commands, or was not seen at its prompt).
    Marked(Box<RunCapture>),
    /// From the shell's own marks, as the ledger's record `id` (a shell the ledger saw at its
    /// prompt): nothing but the command, in its subshell, is typed.
    Recorded {
        /// The record the run is.
        id: u64,
        /// How many of the output's last lines to keep.
        max_lines: usize,
    },
}

/// What a run came to.
#[derive(Debug)]
pub struct RunEnd {
    /// Its output (the last lines asked for), and what was cut or lost.
    pub text: RunText,
    /// Its exit status, once it ended.
    pub exit_status: Option<i32>,
    /// Whether it began (its start was seen).
    pub started: bool,
}

impl RunReader {
    /// Types `command` into `pane` (whose `stream` is kept) the way the pane's ledger allows,
    /// keeping the last `max_lines` lines of its output.
    pub async fn start(
        typing: &TmuxTyping,
        pane: PaneId,
        stream: &PaneStream,
        command: &str,
        max_lines: usize,
        flavor: Shell,
    ) -> Result<Self, StartError> {
        if stream.with_ledger(|ledger| ledger.shell_integrated() && ledger.at_prompt()) {
            let typed = unmarked_typed_text(command, flavor)?;
            let id = stream.name_next(command);
            if let Err(error) = typing.type_line(pane, &typed).await {
                stream.forget_name(id);
                return Err(error.into());
            }
            return Ok(Self::Recorded { id, max_lines });
        }
        let markers = RunMarkers::random();
        let typed = markers.typed_text(command, flavor)?;
        stream.name_run(markers.id(), command);
        typing.type_line(pane, &typed).await?;
        Ok(Self::Marked(Box::new(RunCapture::new(&markers, max_lines))))
    }

    /// Reads one chunk of the pane's output; true once the run has ended.
    fn read(&mut self, stream: &PaneStream, chunk: &OutputChunk) -> bool {
        match self {
            Self::Marked(capture) => {
                if chunk.missed_bytes > 0 {
                    capture.lost_output(Some(chunk.missed_bytes));
                } else if chunk.gap {
                    capture.lost_output(None);
                }
                capture.feed(&chunk.data).is_some()
            }
            Self::Recorded { id, .. } => {
                stream.with_ledger(|ledger| ledger.record(*id).is_some_and(CommandRecord::finished))
            }
        }
    }

    /// The run's output (its last `max_lines` lines) and status, so far.
    pub fn end(self, stream: &PaneStream) -> RunEnd {
        match self {
            Self::Marked(capture) => RunEnd {
                text: capture.text(),
                exit_status: capture.exit_status(),
                started: capture.started(),
            },
            Self::Recorded { id, max_lines } => {
                let Some(record) = stream.with_ledger(|ledger| ledger.record(id).cloned()) else {
                    stream.forget_name(id);
                    return RunEnd {
                        text: RunCapture::text_of(&[], 0, max_lines),
                        exit_status: None,
                        started: false,
                    };
                };
                let to = record.output_to.unwrap_or_else(|| stream.end_offset());
                let (output, lost) = stream.bytes(record.output_from..to);
                RunEnd {
                    text: RunCapture::text_of(&output, lost, max_lines),
                    exit_status: record.exit_status,
                    started: true,
                }
            }
        }
    }
}

/// How following a run stopped (its reader comes back, to [`RunReader::end`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// The run ended.
    Ended,
    /// The deadline passed first.
    TimedOut,
    /// The pane's output ended first.
    StreamEnded(StreamEnd),
}

/// Reads `subscription` (the pane's output from before the run was typed) until the run
/// `reader` reads ends, the output ends, `deadline` passes or `cancel` fires.
pub async fn follow(
    stream: &PaneStream,
    subscription: &mut OutputSubscription,
    reader: &mut RunReader,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<Stopped, Cancelled> {
    loop {
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Cancelled),
            () = tokio::time::sleep_until(deadline) => return Ok(Stopped::TimedOut),
            next = subscription.next() => next,
        };
        match next {
            Ok(chunk) => {
                if reader.read(stream, &chunk) {
                    return Ok(Stopped::Ended);
                }
            }
            Err(end) => return Ok(Stopped::StreamEnded(end)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    /// A pane's stream, subscribed, and a reader of a marked run in it.
    fn marked_run() -> (Arc<PaneStream>, OutputSubscription, RunReader, RunMarkers) {
        let stream = PaneStream::new(PaneId(1), 4096);
        let subscription = stream.subscribe();
        let markers = RunMarkers::with_id(0xbeef);
        let reader = RunReader::Marked(Box::new(RunCapture::new(&markers, 100)));
        (stream, subscription, reader, markers)
    }

    /// What a shell prints for a run that ends with `status`.
    fn printed(markers: &RunMarkers, output: &str, status: Option<i32>) -> Vec<u8> {
        let mut bytes = markers.start_marker();
        bytes.extend_from_slice(output.as_bytes());
        if let Some(status) = status {
            let end = format!("\x1b]133;D;{status};muxgate={}\x07", markers.id());
            bytes.extend_from_slice(end.as_bytes());
        }
        bytes
    }

    #[tokio::test(start_paused = true)]
    async fn a_run_ends_at_its_end_marker_with_its_output_and_status() {
        let (stream, mut subscription, mut reader, markers) = marked_run();
        let shell = stream.clone();
        let bytes = printed(&markers, "built\r\n", Some(2));
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(40)).await;
            shell.push(b"$ make\r\n");
            shell.push(&bytes);
            shell.push(b"$ ");
        });
        let cancel = CancellationToken::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        let stopped = follow(&stream, &mut subscription, &mut reader, deadline, &cancel).await;
        assert_eq!(stopped, Ok(Stopped::Ended));
        let end = reader.end(&stream);
        assert_eq!((end.exit_status, end.started), (Some(2), true));
        assert_eq!(end.text.text, "built\n");
    }

    #[tokio::test(start_paused = true)]
    async fn a_run_past_its_deadline_keeps_what_it_printed() {
        let (stream, mut subscription, mut reader, markers) = marked_run();
        stream.push(&printed(&markers, "begun\r\n", None));
        let cancel = CancellationToken::new();
        let deadline = Instant::now() + Duration::from_secs(1);
        let stopped = follow(&stream, &mut subscription, &mut reader, deadline, &cancel).await;
        assert_eq!(stopped, Ok(Stopped::TimedOut));
        let end = reader.end(&stream);
        assert_eq!((end.exit_status, end.started), (None, true));
        assert_eq!(end.text.text, "begun\n");
    }

    #[tokio::test(start_paused = true)]
    async fn the_pane_s_end_or_the_caller_stops_the_run_early() {
        let (stream, mut subscription, mut reader, _) = marked_run();
        stream.close(StreamEnd::PaneExited { status: Some(9) });
        let cancel = CancellationToken::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        let stopped = follow(&stream, &mut subscription, &mut reader, deadline, &cancel).await;
        let exited = StreamEnd::PaneExited { status: Some(9) };
        assert_eq!(stopped, Ok(Stopped::StreamEnded(exited)));

        let (stream, mut subscription, mut reader, _) = marked_run();
        cancel.cancel();
        let stopped = follow(&stream, &mut subscription, &mut reader, deadline, &cancel).await;
        assert_eq!(stopped, Err(Cancelled));
    }
}
