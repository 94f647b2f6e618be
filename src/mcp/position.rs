//! Output positions: where a pane's output stood when input was typed into it.
//!
//! `send_keys` and `paste_text` return one (`output_position`); `wait_for_text` takes it back
//! as `since`, so output printed between the two calls counts (a fast command is not missed)
//! and the echo of the typed text does not (`sleep 2; echo DONE` does not match `DONE` before
//! the command ran). To the client it is an opaque string: a `capture_since` cursor taken in
//! the same tmux write as the input, and the typed lines, whose echo the wait ignores.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::mux::tmux::ops::since::SinceCursor;

/// Typed lines a position remembers (the last ones), and the bytes kept of each (its start):
/// enough for a command line, bounded for a paste.
const MAX_TYPED_LINES: usize = 8;
const MAX_TYPED_LINE_BYTES: usize = 256;

/// A pane's output position before some input, and what was typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputPosition {
    pub cursor: SinceCursor,
    pub typed: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct Wire {
    c: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    t: Vec<String>,
}

impl OutputPosition {
    /// A position at `cursor`, before `typed` (its last lines, each cut to a bounded start).
    pub fn new(cursor: SinceCursor, typed: &str) -> Self {
        let lines: Vec<&str> = typed
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let skip = lines.len().saturating_sub(MAX_TYPED_LINES);
        let typed = lines[skip..]
            .iter()
            .map(|line| {
                let mut end = line.len().min(MAX_TYPED_LINE_BYTES);
                while !line.is_char_boundary(end) {
                    end -= 1;
                }
                line[..end].to_owned()
            })
            .collect();
        Self { cursor, typed }
    }

    pub fn encode(&self) -> String {
        let wire = Wire {
            c: self.cursor.encode(),
            t: self.typed.clone(),
        };
        // Serializing strings cannot fail.
        let json = serde_json::to_vec(&wire).unwrap_or_default();
        format!("p.{}", URL_SAFE_NO_PAD.encode(json))
    }

    /// Decodes an `output_position`, or a plain `capture_since` cursor (nothing typed).
    pub fn decode(text: &str) -> Result<Self, String> {
        let Some(body) = text.strip_prefix("p.") else {
            let cursor = SinceCursor::decode(text).map_err(|e| e.to_string())?;
            return Ok(Self {
                cursor,
                typed: Vec::new(),
            });
        };
        let bytes = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| "not an output position".to_owned())?;
        let wire: Wire =
            serde_json::from_slice(&bytes).map_err(|_| "not an output position".to_owned())?;
        if wire.t.len() > MAX_TYPED_LINES || wire.t.iter().any(|t| t.len() > MAX_TYPED_LINE_BYTES) {
            return Err("not an output position".to_owned());
        }
        let cursor = SinceCursor::decode(&wire.c).map_err(|e| e.to_string())?;
        Ok(Self {
            cursor,
            typed: wire.t,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor() -> SinceCursor {
        SinceCursor {
            server: "main".into(),
            pane: 3,
            pane_pid: 42,
            mark: 17,
            anchor: "00112233aabbccdd".into(),
            anchor_rows: 2,
            prefix: "8899aabbccddeeff".into(),
            prefix_len: 2,
        }
    }

    #[test]
    fn a_position_round_trips_with_its_typed_lines() {
        let position = OutputPosition::new(cursor(), "cd /tmp\n  \nmake test\n");
        assert_eq!(position.typed, ["cd /tmp", "make test"]);
        assert_eq!(OutputPosition::decode(&position.encode()), Ok(position));
    }

    #[test]
    fn a_capture_since_cursor_is_a_position_without_typing() {
        let decoded = OutputPosition::decode(&cursor().encode()).unwrap();
        assert_eq!(decoded.cursor, cursor());
        assert!(decoded.typed.is_empty());
    }

    #[test]
    fn long_input_keeps_the_start_of_its_last_lines() {
        let typed: String = (0..20)
            .map(|n| format!("line {n} {}\n", "é".repeat(200)))
            .collect();
        let position = OutputPosition::new(cursor(), &typed);
        assert_eq!(position.typed.len(), MAX_TYPED_LINES);
        assert!(position.typed[0].starts_with("line 12 "));
        assert!(
            position
                .typed
                .iter()
                .all(|t| t.len() <= MAX_TYPED_LINE_BYTES)
        );
        assert_eq!(OutputPosition::decode(&position.encode()), Ok(position));
    }

    #[test]
    fn garbage_is_refused() {
        for text in ["", "p.", "p.!!!", "p.e30", "nonsense"] {
            assert!(OutputPosition::decode(text).is_err(), "{text}");
        }
    }
}
