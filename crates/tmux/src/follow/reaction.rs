//! How a pane's output went after an input (`send_prompt`'s paste and Enter): nothing, a burst
//! that ended, a flow that did not, or the end of the pane's output.
//!
//! [`react`] reads the output up to `within` for it to start, then until it is quiet for
//! `quiet` or has flowed for `busy_after` without a pause, so it returns within
//! `within + busy_after` at most. What the bytes mean (an echoed newline, a cleared input) is
//! the caller's to judge.

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Cancelled;
use crate::OutputSubscription;

/// The most of a reaction's bytes kept: a program flooding its pane is still read (its flow
/// is what shows it busy), but only its first bytes are held for the caller to judge.
pub const MAX_REACTION_BYTES: usize = 64 * 1024;

/// How the output after an input went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reaction {
    /// Nothing came within the time allowed.
    Silent,
    /// A burst came and ended (a quiet pause followed it).
    Settled,
    /// Output kept flowing without a pause: the program is busy.
    Busy,
    /// The pane's output ended.
    Ended,
}

/// How long a [`react`] waits for what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// How long the output may take to start.
    pub within: Duration,
    /// The pause that ends a burst.
    pub quiet: Duration,
    /// How long output must flow without such a pause to show the program busy.
    pub busy_after: Duration,
}

/// Reads `output` after an input as `timing` says; returns how it went and the first
/// [`MAX_REACTION_BYTES`] bytes read.
pub async fn react(
    output: &mut OutputSubscription,
    timing: Timing,
    cancel: &CancellationToken,
) -> Result<(Reaction, Vec<u8>), Cancelled> {
    let mut bytes = Vec::new();
    let mut first: Option<Instant> = None;
    let mut wake = Instant::now() + timing.within;
    loop {
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Cancelled),
            () = tokio::time::sleep_until(wake) => None,
            next = output.next() => Some(next),
        };
        match next {
            None if first.is_none() => return Ok((Reaction::Silent, bytes)),
            None => return Ok((Reaction::Settled, bytes)),
            Some(Err(_)) => return Ok((Reaction::Ended, bytes)),
            Some(Ok(chunk)) => {
                let room = MAX_REACTION_BYTES.saturating_sub(bytes.len());
                bytes.extend_from_slice(&chunk.data[..chunk.data.len().min(room)]);
                let now = Instant::now();
                let began = *first.get_or_insert(now);
                if now.duration_since(began) >= timing.busy_after {
                    return Ok((Reaction::Busy, bytes));
                }
                wake = now + timing.quiet;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::PaneStream;
    use crate::{PaneId, StreamEnd};

    const TIMING: Timing = Timing {
        within: Duration::from_millis(1500),
        quiet: Duration::from_millis(150),
        busy_after: Duration::from_millis(600),
    };

    /// A pane that prints `chunks`, each after its pause, then stays quiet (or ends).
    async fn reaction_to(
        chunks: &'static [(u64, &'static [u8])],
        end: bool,
    ) -> (Reaction, Vec<u8>) {
        let stream = PaneStream::new(PaneId(1), 1 << 20);
        let mut output = stream.subscribe();
        tokio::spawn(async move {
            for (pause, bytes) in chunks {
                tokio::time::sleep(Duration::from_millis(*pause)).await;
                stream.push(bytes);
            }
            if end {
                stream.close(StreamEnd::PaneClosed);
            }
        });
        react(&mut output, TIMING, &CancellationToken::new())
            .await
            .expect("not cancelled")
    }

    #[tokio::test(start_paused = true)]
    async fn silence_a_burst_a_flow_and_an_end_are_told_apart() {
        assert_eq!(reaction_to(&[], false).await, (Reaction::Silent, vec![]));
        assert_eq!(
            reaction_to(&[(100, b"hi\r\n"), (50, b"$ ")], false).await,
            (Reaction::Settled, b"hi\r\n$ ".to_vec())
        );
        // Output every 100 ms never pauses for 150 ms: busy once it has flowed for 600 ms.
        const FLOW: [(u64, &[u8]); 10] = [(100, b"."); 10];
        let (reaction, bytes) = reaction_to(&FLOW, false).await;
        assert_eq!(reaction, Reaction::Busy);
        assert_eq!(bytes.len(), 7, "the chunks up to 600 ms after the first");
        assert_eq!(
            reaction_to(&[(100, b"bye")], true).await,
            (Reaction::Ended, b"bye".to_vec())
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_is_read_but_only_its_first_bytes_are_kept() {
        const FLOOD: [(u64, &[u8]); 4] = [(100, &[b'x'; 40_000]); 4];
        let (reaction, bytes) = reaction_to(&FLOOD, false).await;
        assert_eq!(reaction, Reaction::Settled);
        assert_eq!(bytes.len(), MAX_REACTION_BYTES);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_reaction_stops_at_once() {
        let stream = PaneStream::new(PaneId(1), 64);
        let mut output = stream.subscribe();
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert_eq!(react(&mut output, TIMING, &cancel).await, Err(Cancelled));
    }
}
