//! The asciinema v2 (`.cast`) format: writing one, reading one back, and cutting a time range
//! out of one.
//!
//! A cast is JSON lines: a header object (`{"version":2,"width":W,"height":H,"timestamp":T,…}`)
//! then one event per line, `[seconds, "o", "text"]`, seconds counted from the header's
//! timestamp. Standard players (`asciinema play`, asciinema-player) replay it.
//!
//! Pane output is bytes, event text is a JSON string: [`Utf8Decoder`] keeps a UTF-8 sequence
//! cut by a chunk boundary for the next event and replaces bytes that can never be valid with
//! U+FFFD, so a recording never splits a character into two replacement marks. A gap in the
//! stream (tmux dropped output, or the recorder fell behind) is a marker event (`"m"`, which
//! players show as a chapter mark), never silently joined text.
//!
//! Pure: no I/O. Files are [`super::recorder`]'s.

use serde::Serialize;
use serde_json::Value;

/// What the header of a cast says about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Header {
    pub version: u8,
    pub width: u16,
    pub height: u16,
    /// Unix seconds when time 0 of the events was.
    pub timestamp: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl Header {
    pub(crate) fn new(width: u16, height: u16, timestamp: u64, title: Option<String>) -> Self {
        Self {
            version: 2,
            width: width.max(1),
            height: height.max(1),
            timestamp,
            title,
        }
    }

    /// The header line, newline included.
    pub(crate) fn line(&self) -> String {
        // A struct of numbers and strings always serializes.
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        line
    }
}

/// The kinds of event a recording writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// Output the pane's program wrote.
    Output,
    /// A marker: a gap, the recording's end, a note for whoever replays it.
    Marker,
}

impl EventKind {
    fn code(self) -> &'static str {
        match self {
            Self::Output => "o",
            Self::Marker => "m",
        }
    }
}

/// One event line, newline included: `[secs, "o", "text"]`, time rounded to microseconds.
pub(crate) fn event_line(secs: f64, kind: EventKind, text: &str) -> String {
    let secs = (secs.max(0.0) * 1e6).round() / 1e6;
    // `[f64, &str, &str]` always serializes (a non-finite time was clamped above; NaN is not
    // above 0.0, so `max` made it 0).
    let mut line = serde_json::to_string(&(secs, kind.code(), text)).unwrap_or_default();
    line.push('\n');
    line
}

/// Turns a byte stream cut anywhere into text: complete characters now, an incomplete one at
/// the end kept for the next chunk, invalid bytes as U+FFFD.
#[derive(Debug, Default)]
pub(crate) struct Utf8Decoder {
    pending: Vec<u8>,
}

impl Utf8Decoder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The text of `bytes` after what was kept from the chunk before.
    pub(crate) fn decode(&mut self, bytes: &[u8]) -> String {
        let mut input = std::mem::take(&mut self.pending);
        input.extend_from_slice(bytes);
        let mut out = String::with_capacity(input.len());
        let mut rest = input.as_slice();
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    out.push_str(text);
                    break;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    // `valid_up_to` is a character boundary, so this is valid UTF-8.
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match error.error_len() {
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[bad..];
                        }
                        None => {
                            // The start of a character whose other bytes are still to come.
                            self.pending = after.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        out
    }

    /// What is left: an incomplete character that will never be completed (a gap or the end
    /// came), as U+FFFD, or nothing.
    pub(crate) fn flush(&mut self) -> String {
        if std::mem::take(&mut self.pending).is_empty() {
            String::new()
        } else {
            char::REPLACEMENT_CHARACTER.to_string()
        }
    }
}

/// One event of a cast read back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    pub secs: f64,
    pub code: String,
    pub data: String,
}

/// A cast read back: its header object as written (other fields kept) and its events.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cast {
    pub header: serde_json::Map<String, Value>,
    pub events: Vec<Event>,
}

/// Why a file is not a valid asciinema v2 cast.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CastError {
    #[error("line 1: the header is not a JSON object with \"version\": 2")]
    Header,
    #[error("line {0}: not an event `[seconds, \"code\", \"text\"]`")]
    Event(usize),
    #[error("line {0}: the time goes backwards")]
    Backwards(usize),
}

impl Cast {
    /// Reads a cast, checking every line: a header with version 2, then events whose times
    /// never decrease. Blank lines are skipped.
    pub(crate) fn parse(text: &str) -> Result<Self, CastError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty());
        let header = match lines.next() {
            Some((_, line)) => match serde_json::from_str::<Value>(line) {
                Ok(Value::Object(header)) if header.get("version") == Some(&Value::from(2)) => {
                    header
                }
                _ => return Err(CastError::Header),
            },
            None => return Err(CastError::Header),
        };
        let mut events = Vec::new();
        let mut last = 0.0;
        for (index, line) in lines {
            let number = index + 1;
            let event = parse_event(line).ok_or(CastError::Event(number))?;
            if event.secs < last {
                return Err(CastError::Backwards(number));
            }
            last = event.secs;
            events.push(event);
        }
        Ok(Self { header, events })
    }

    /// The events from `from` to `to` seconds (both included) as a cast of their own: times
    /// counted from `from`, the header's timestamp moved by as many whole seconds (its unit).
    /// A player starts it from a blank screen, so what was already shown at `from` is not
    /// there: pick `from` at a quiet moment (a prompt) for a readable cut.
    pub(crate) fn cut(&self, from: f64, to: f64) -> Cast {
        let from = from.max(0.0);
        let mut header = self.header.clone();
        if let Some(start) = header.get("timestamp").and_then(Value::as_u64) {
            let shift = from.floor() as u64;
            header.insert("timestamp".into(), Value::from(start.saturating_add(shift)));
            // The whole seconds went into the timestamp; the events keep the fraction, so
            // their wall-clock times stay what they were.
            let base = from - from.floor();
            return Cast {
                header,
                events: self.events_between(from, to, from - base),
            };
        }
        Cast {
            header,
            events: self.events_between(from, to, from),
        }
    }

    fn events_between(&self, from: f64, to: f64, origin: f64) -> Vec<Event> {
        self.events
            .iter()
            .filter(|event| event.secs >= from && event.secs <= to)
            .map(|event| Event {
                secs: event.secs - origin,
                ..event.clone()
            })
            .collect()
    }

    /// The cast as a file's text.
    pub(crate) fn to_text(&self) -> String {
        let mut text = serde_json::to_string(&self.header).unwrap_or_default();
        text.push('\n');
        for event in &self.events {
            let secs = (event.secs.max(0.0) * 1e6).round() / 1e6;
            text.push_str(
                &serde_json::to_string(&(secs, &event.code, &event.data)).unwrap_or_default(),
            );
            text.push('\n');
        }
        text
    }

    /// The seconds of the last event (0 without events).
    #[cfg(test)]
    pub(crate) fn duration(&self) -> f64 {
        self.events.last().map_or(0.0, |event| event.secs)
    }
}

fn parse_event(line: &str) -> Option<Event> {
    let Value::Array(fields) = serde_json::from_str::<Value>(line).ok()? else {
        return None;
    };
    let [secs, code, data] = fields.as_slice() else {
        return None;
    };
    let secs = secs.as_f64().filter(|s| s.is_finite() && *s >= 0.0)?;
    Some(Event {
        secs,
        code: code.as_str()?.to_owned(),
        data: data.as_str()?.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_and_events_are_asciinema_v2() {
        let header = Header::new(80, 24, 1_700_000_000, Some("pane %3".into()));
        assert_eq!(
            header.line(),
            "{\"version\":2,\"width\":80,\"height\":24,\"timestamp\":1700000000,\"title\":\"pane %3\"}\n"
        );
        assert_eq!(
            event_line(1.2345678, EventKind::Output, "a\"b\u{1b}[0m\r\n"),
            "[1.234568,\"o\",\"a\\\"b\\u001b[0m\\r\\n\"]\n"
        );
        assert_eq!(
            event_line(f64::NAN, EventKind::Marker, "gap"),
            "[0.0,\"m\",\"gap\"]\n"
        );
    }

    #[test]
    fn a_character_cut_between_chunks_is_written_whole() {
        let mut decoder = Utf8Decoder::new();
        let text = "é€😀";
        let bytes = text.as_bytes();
        // Every possible cut point, and a cut into three.
        for cut in 0..=bytes.len() {
            let (a, b) = bytes.split_at(cut);
            let joined = decoder.decode(a) + &decoder.decode(b) + &decoder.flush();
            assert_eq!(joined, text, "cut at {cut}");
        }
        assert_eq!(decoder.decode(&bytes[..1]), "");
        assert_eq!(decoder.decode(&bytes[1..4]), "é");
        assert_eq!(decoder.decode(&bytes[4..]), "€😀");
    }

    #[test]
    fn invalid_bytes_become_one_replacement_each() {
        let mut decoder = Utf8Decoder::new();
        assert_eq!(decoder.decode(b"a\xffb\xc3(c"), "a\u{fffd}b\u{fffd}(c");
        // An incomplete character before a gap never completes.
        assert_eq!(decoder.decode(b"x\xe2\x82"), "x");
        assert_eq!(decoder.flush(), "\u{fffd}");
        assert_eq!(decoder.flush(), "");
        assert_eq!(decoder.decode(b"ok"), "ok");
    }

    fn sample() -> String {
        let mut text = Header::new(80, 24, 1000, None).line();
        for (secs, data) in [(0.5, "a"), (1.25, "b"), (2.75, "c"), (4.0, "d")] {
            text.push_str(&event_line(secs, EventKind::Output, data));
        }
        text.push_str(&event_line(4.0, EventKind::Marker, "end"));
        text
    }

    #[test]
    fn a_written_cast_reads_back() {
        let cast = Cast::parse(&sample()).unwrap();
        assert_eq!(cast.header["width"], 80);
        assert_eq!(cast.events.len(), 5);
        assert_eq!(cast.events[2].data, "c");
        assert_eq!(cast.duration(), 4.0);
        assert_eq!(Cast::parse(&cast.to_text()).unwrap(), cast);
    }

    #[test]
    fn malformed_casts_are_refused_with_the_line() {
        assert_eq!(Cast::parse(""), Err(CastError::Header));
        assert_eq!(Cast::parse("{\"version\":1}\n"), Err(CastError::Header));
        let header = Header::new(1, 1, 0, None).line();
        assert_eq!(
            Cast::parse(&format!("{header}[1.0,\"o\"]\n")),
            Err(CastError::Event(2))
        );
        assert_eq!(
            Cast::parse(&format!("{header}[2.0,\"o\",\"a\"]\n[1.0,\"o\",\"b\"]\n")),
            Err(CastError::Backwards(3))
        );
        assert_eq!(
            Cast::parse(&format!("{header}[-1.0,\"o\",\"a\"]\n")),
            Err(CastError::Event(2))
        );
    }

    #[test]
    fn a_cut_keeps_the_range_and_its_wall_clock_times() {
        let cast = Cast::parse(&sample()).unwrap();
        let cut = cast.cut(1.0, 3.0);
        let data: Vec<&str> = cut.events.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data, ["b", "c"]);
        assert_eq!(cut.header["timestamp"], 1001);
        assert_eq!(cut.events[0].secs, 0.25);
        assert_eq!(cut.events[1].secs, 1.75);
        // A fractional start: the timestamp takes the whole seconds, the events the rest.
        let cut = cast.cut(1.5, 10.0);
        assert_eq!(cut.header["timestamp"], 1001);
        assert_eq!(cut.events[0].secs, 1.75);
        assert_eq!(cut.events.len(), 3);
        // Nothing in range is a valid, empty cast.
        let empty = cast.cut(5.0, 6.0);
        assert!(empty.events.is_empty());
        assert!(Cast::parse(&empty.to_text()).is_ok());
    }
}
