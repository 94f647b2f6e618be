//! The output budget: how many bytes one answer may hold.
//!
//! `max_output_bytes` bounds the whole answer a client receives, not one field of it: an
//! SDK with a message size limit must be able to read a capped capture. A tool result carries
//! its text twice (in `structuredContent`, and verbatim in the rendered `content[0].text`, see
//! `mcp::render`), each a JSON string; a resource carries it once. What text costs is therefore
//! measured as it will be sent ([`cost`]): `a` costs 2 bytes in a tool result, `"` 4 (`\"`
//! twice), an escape character 12 (`\u001b` twice).
//!
//! One call shares one budget ([`OutputBudget`], carried by the call's context): a batch of
//! captures divides it instead of each taking all of it. [`RESERVE`] bytes are kept for the
//! rest of the answer (field names, ids, the JSON-RPC envelope); a tool result still larger
//! than the limit ([`answer_len`]: many objects, many matches) is replaced by an error before
//! it is sent.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

/// Bytes of every answer kept for what is not capped text: keys, ids, numbers, the envelope.
pub(crate) const RESERVE: usize = 4096;

/// The smallest `max_output_bytes` accepted: the reserve and room for some text.
pub(crate) const MIN_MAX_OUTPUT_BYTES: u32 = 16 * 1024;

/// How text travels in an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carried {
    /// A tool result: in `structuredContent` and again in the rendered `content[0].text`.
    InToolResult,
    /// A resource's contents: once.
    InResource,
}

/// What `text` costs in an answer, in bytes.
pub(crate) fn cost(text: &str, carried: Carried) -> usize {
    text.chars().map(|c| char_cost(c, carried)).sum()
}

/// One character's cost: its JSON escape, once per copy.
fn char_cost(c: char, carried: Carried) -> usize {
    let escaped = match c {
        '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
        '\0'..='\u{1f}' => 6,
        other => other.len_utf8(),
    };
    match carried {
        Carried::InResource => escaped,
        Carried::InToolResult => 2 * escaped,
    }
}

/// Where the longest tail of `text` that costs at most `budget` starts (a char boundary).
pub(crate) fn tail_start(text: &str, budget: usize, carried: Carried) -> usize {
    let mut spent = 0;
    for (index, c) in text.char_indices().rev() {
        spent += char_cost(c, carried);
        if spent > budget {
            return index + c.len_utf8();
        }
    }
    0
}

/// The output budget of one call, shared by everything the call returns.
#[derive(Debug, Clone, Default)]
pub struct OutputBudget {
    spent: Arc<AtomicUsize>,
}

impl OutputBudget {
    /// What is left of `max_output_bytes` for text, after the reserve and what the call
    /// already spent.
    pub fn remaining(&self, max_output_bytes: usize) -> usize {
        max_output_bytes
            .saturating_sub(RESERVE)
            .saturating_sub(self.spent.load(Ordering::Relaxed))
    }

    /// Counts `bytes` as spent.
    pub fn charge(&self, bytes: usize) {
        self.spent.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The tail of `text` that fits what is left, charged; and how many bytes were cut.
    pub fn take_tail<'a>(
        &self,
        text: &'a str,
        max_output_bytes: usize,
        carried: Carried,
    ) -> (&'a str, usize) {
        let start = tail_start(text, self.remaining(max_output_bytes), carried);
        let kept = &text[start..];
        self.charge(cost(kept, carried));
        (kept, start)
    }
}

/// Bytes around a result on the wire: the JSON-RPC envelope (`jsonrpc`, `id`, `result`) and
/// the SSE framing (`id:`, `data:`).
pub(crate) const ENVELOPE: usize = 256;

/// How many bytes the message answering with `result` takes, at most.
pub(crate) fn answer_len(result: &impl Serialize) -> usize {
    encoded_len(result) + ENVELOPE
}

/// The length of `value` serialized as JSON, without building the text.
pub(crate) fn encoded_len(value: &impl Serialize) -> usize {
    let mut counter = ByteCounter(0);
    // Writing to a counter cannot fail; a value that cannot be serialized counts what was
    // written before it failed (rmcp fails on it the same way when it sends it).
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

struct ByteCounter(usize);

impl io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The bytes `text` adds to a tool result built the way the gateway sends one: the value,
    /// and its rendering. Multi-line text is rendered after a `key:` line of its own, so it is
    /// measured against the text "\n" (which the rendering shows as that line alone: its cost
    /// is the structured copy's).
    fn measured_in_tool_result(text: &str) -> usize {
        let with = |t: &str| {
            let value = json!({ "text": t });
            encoded_len(&json!({
                "structuredContent": value,
                "content": [{"type": "text", "text": crate::mcp::render::render(&value)}],
            }))
        };
        if text.contains(['\n', '\r']) {
            with(text) - with("\n") + cost("\n", Carried::InResource)
        } else {
            with(text) - with("")
        }
    }

    #[test]
    fn cost_is_what_the_text_adds_to_an_answer() {
        for text in [
            "plain text",
            "quotes \" and \\ backslashes",
            "lines\nand\ttabs\r",
            "\u{1b}[31mred\u{1b}[0m",
            "\0\u{1}\u{1f}\u{7f}",
            "é ü 漢字 🦀",
            "",
        ] {
            assert_eq!(
                cost(text, Carried::InToolResult),
                measured_in_tool_result(text),
                "{text:?}"
            );
            let once = encoded_len(&json!(text)) - 2;
            assert_eq!(cost(text, Carried::InResource), once, "{text:?}");
        }
    }

    #[test]
    fn the_tail_that_fits_is_kept_on_a_char_boundary() {
        assert_eq!(tail_start("abcdef", 100, Carried::InResource), 0);
        assert_eq!(tail_start("abcdef", 4, Carried::InResource), 2);
        assert_eq!(tail_start("abcdef", 4, Carried::InToolResult), 4);
        // "é" costs 2 in a resource: with 3 bytes left it does not fit after "ab".
        assert_eq!(tail_start("xéab", 3, Carried::InResource), 3);
        assert_eq!(tail_start("xéab", 4, Carried::InResource), 1);
        // A quote costs 4 in a tool result.
        assert_eq!(tail_start("a\"b", 5, Carried::InToolResult), 2);
        assert_eq!(tail_start("a\"b", 6, Carried::InToolResult), 1);
        assert_eq!(tail_start("abc", 0, Carried::InToolResult), 3);
    }

    #[test]
    fn one_call_shares_one_budget() {
        let budget = OutputBudget::default();
        let max = RESERVE + 10;
        let (first, cut) = budget.take_tail("abcdef", max, Carried::InResource);
        assert_eq!((first, cut), ("abcdef", 0));
        let (second, cut) = budget.take_tail("ghijkl", max, Carried::InResource);
        assert_eq!((second, cut), ("ijkl", 2));
        let (third, cut) = budget.take_tail("mn", max, Carried::InResource);
        assert_eq!((third, cut), ("", 2));
        assert_eq!(budget.remaining(max), 0);
        let clone = budget.clone();
        assert_eq!(clone.remaining(max), 0, "clones share what was spent");
    }
}
