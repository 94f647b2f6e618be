//! Output positions: where a pane's output stood when input was typed into it.
//!
//! `send_keys` and `paste_text` return one (`output_position`); `wait_for_text` takes it back
//! as `since`, so output printed between the two calls counts (a fast command is not missed)
//! and the echo of the typed text does not (`sleep 2; echo DONE` does not match `DONE` before
//! the command ran). To the client it is an opaque string: a `capture_since` cursor taken in
//! the same tmux write as the input, and the typed lines, whose echo the wait ignores.
//!
//! Zellij streams no output, so its position ([`ZellijPosition`]) is a mark of the pane's
//! screen just before the input ([`ScreenMark`]), and the typed lines.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use muxgate_mux::screen_mark::ScreenMark;
use serde::{Deserialize, Serialize};

use muxgate_tmux::ops::since::SinceCursor;

/// Typed lines a position remembers (the last ones), and the bytes kept of each (its start):
/// enough for a command line, bounded for a paste.
const MAX_TYPED_LINES: usize = 8;
const MAX_TYPED_LINE_BYTES: usize = 256;

/// A pane's output position before some input, and what was typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutputPosition {
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
    /// A position at `cursor`, before `typed`.
    pub(crate) fn new(cursor: SinceCursor, typed: &str) -> Self {
        Self {
            cursor,
            typed: typed_lines(typed),
        }
    }

    pub(crate) fn encode(&self) -> String {
        let wire = Wire {
            c: self.cursor.encode(),
            t: self.typed.clone(),
        };
        // Serializing strings cannot fail.
        let json = serde_json::to_vec(&wire).unwrap_or_default();
        format!("p.{}", URL_SAFE_NO_PAD.encode(json))
    }

    /// Decodes an `output_position`, or a plain `capture_since` cursor (nothing typed).
    pub(crate) fn decode(text: &str) -> Result<Self, String> {
        if text.starts_with(ZELLIJ_PREFIX) {
            return Err("it was made on a Zellij server".to_owned());
        }
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
        if !plausible_typing(&wire.t) {
            return Err("not an output position".to_owned());
        }
        let cursor = SinceCursor::decode(&wire.c).map_err(|e| e.to_string())?;
        Ok(Self {
            cursor,
            typed: wire.t,
        })
    }
}

/// The last lines of `typed`, each cut to a bounded start: enough for a command line, bounded
/// for a paste.
fn typed_lines(typed: &str) -> Vec<String> {
    let lines: Vec<&str> = typed
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let skip = lines.len().saturating_sub(MAX_TYPED_LINES);
    lines[skip..]
        .iter()
        .map(|line| {
            let mut end = line.len().min(MAX_TYPED_LINE_BYTES);
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            line[..end].to_owned()
        })
        .collect()
}

/// Whether decoded typed lines are within what the gateway hands out.
fn plausible_typing(typed: &[String]) -> bool {
    typed.len() <= MAX_TYPED_LINES && typed.iter().all(|t| t.len() <= MAX_TYPED_LINE_BYTES)
}

const ZELLIJ_PREFIX: &str = "z.";

/// A Zellij pane's screen just before some input, and what was typed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ZellijPosition {
    #[serde(rename = "v")]
    pub server: String,
    #[serde(rename = "s")]
    pub session: String,
    #[serde(rename = "p")]
    pub pane: String,
    #[serde(rename = "m")]
    pub mark: ScreenMark,
    #[serde(rename = "t", default, skip_serializing_if = "Vec::is_empty")]
    pub typed: Vec<String>,
}

impl ZellijPosition {
    /// A position of `pane` at `mark`, before `typed`.
    pub(crate) fn new(
        server: &str,
        session: &str,
        pane: &str,
        mark: ScreenMark,
        typed: &str,
    ) -> Self {
        Self {
            server: server.to_owned(),
            session: session.to_owned(),
            pane: pane.to_owned(),
            mark,
            typed: typed_lines(typed),
        }
    }

    /// The same position, before `typed` instead.
    pub(crate) fn with_typed(self, typed: &str) -> Self {
        Self {
            typed: typed_lines(typed),
            ..self
        }
    }

    pub(crate) fn encode(&self) -> String {
        // Serializing strings and numbers cannot fail.
        let json = serde_json::to_vec(self).unwrap_or_default();
        format!("{ZELLIJ_PREFIX}{}", URL_SAFE_NO_PAD.encode(json))
    }

    pub(crate) fn decode(text: &str) -> Result<Self, String> {
        let Some(body) = text.strip_prefix(ZELLIJ_PREFIX) else {
            return Err("it was made on a tmux server".to_owned());
        };
        let bytes = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| "not an output position".to_owned())?;
        let position: Self =
            serde_json::from_slice(&bytes).map_err(|_| "not an output position".to_owned())?;
        if !position.mark.is_plausible() || !plausible_typing(&position.typed) {
            return Err("not an output position".to_owned());
        }
        Ok(position)
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
        for text in ["", "p.", "p.!!!", "p.e30", "nonsense", "z.e30"] {
            assert!(OutputPosition::decode(text).is_err(), "{text}");
            assert!(ZellijPosition::decode(text).is_err(), "{text}");
        }
    }

    #[test]
    fn a_zellij_position_round_trips_and_is_told_from_a_tmux_one() {
        let mark = ScreenMark::of(&["$ ls".to_owned(), "a".to_owned(), "$ ".to_owned()]);
        let position = ZellijPosition::new("z", "main", "terminal_1", mark, "make\n");
        assert_eq!(position.typed, ["make"]);
        let text = position.encode();
        assert_eq!(ZellijPosition::decode(&text), Ok(position));
        assert_eq!(
            OutputPosition::decode(&text),
            Err("it was made on a Zellij server".to_owned())
        );
        let tmux = OutputPosition::new(cursor(), "ls").encode();
        assert_eq!(
            ZellijPosition::decode(&tmux),
            Err("it was made on a tmux server".to_owned())
        );
    }
}
