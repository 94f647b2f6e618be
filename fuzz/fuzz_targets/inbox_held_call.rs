//! Whatever arguments a client sends, the inbox shows them to an approver without panicking,
//! as markup it wrote itself (everything the client wrote escaped), and the rule's pattern in
//! any string is marked.

#![no_main]

use libfuzzer_sys::fuzz_target;
use regex::Regex;
use serde_json::Value;

const NEEDLE: &str = "git push";

/// Whether a string of `value` holds the needle (past the desk's own `*_decoded` copies,
/// which the page leaves out for the field it decodes).
fn holds_needle(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains(NEEDLE),
        Value::Array(items) => items.iter().any(holds_needle),
        Value::Object(map) => map
            .iter()
            .any(|(key, value)| !key.ends_with("_decoded") && holds_needle(value)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// How many values the page would show (it shows 64 at most).
fn leaves(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.iter().map(leaves).sum::<usize>() + 1,
        Value::Object(map) => map.values().map(leaves).sum(),
        _ => 1,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(args) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Ok(pattern) = Regex::new(NEEDLE) else {
        panic!("the fixed pattern compiles");
    };
    let html = muxgate::inbox::held_call_html(&args, Some(&pattern));
    // Only the page's own elements: a client's `<` is always escaped.
    for tag in html.split('<').skip(1) {
        let name: String = tag.chars().take_while(|c| *c != '>' && *c != ' ').collect();
        assert!(
            [
                "dt", "/dt", "dd", "/dd", "code", "/code", "mark", "/mark", "br", "span", "/span"
            ]
            .contains(&name.as_str()),
            "a tag the page did not write: <{name}"
        );
    }
    if holds_needle(&args) && leaves(&args) <= 32 {
        assert!(html.contains("<mark>"), "an occurrence left unmarked");
    }
});
