//! Redaction of tool arguments for the audit log. Nothing a client types reaches the log.
//!
//! Fields are classified by name, at any depth:
//! - **digested** ([`DIGEST_FIELDS`]: keystrokes, text, commands, values, buffer contents,
//!   environment, patterns …): replaced by `{"len": <bytes>, "sha256_prefix": <12 hex>}`, so a
//!   record can be matched against a known input without revealing it. An `environment`
//!   object keeps its variable names and digests each value;
//! - **nested** ([`NESTED_FIELDS`]: batch `operations`, their `arguments`, …): redacted
//!   recursively by the same rules;
//! - **echoed** ([`ECHO_FIELDS`]: ids, names, sizes, flags, timeouts): kept, strings capped at
//!   `max_chars` characters;
//! - **anything else** (unknown or misspelt fields, payloads that are not objects): reduced
//!   to their shape, e.g. `{"shape": "string", "len": 12}`; their values never appear.
//!   Unknown field names are kept only if they look like identifiers.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// Fields whose values are recorded only as length + hash prefix.
pub const DIGEST_FIELDS: &[&str] = &[
    "keys",
    "text",
    "command",
    "value",
    "content",
    "shell",
    "environment",
    "env",
    "data",
    "input",
    "buffer",
    "password",
    "secret",
    "token",
    "pattern",
    "patterns",
    "stop",
    "script",
    "body",
    "paste",
];

/// Fields holding nested arguments, redacted recursively.
pub const NESTED_FIELDS: &[&str] = &["operations", "arguments", "steps", "ops", "filters"];

/// Fields whose values are kept (identifiers and knobs).
pub const ECHO_FIELDS: &[&str] = &[
    "server",
    "socket_name",
    "target",
    "pane_id",
    "session_id",
    "session_name",
    "window_id",
    "window_name",
    "window_index",
    "source_pane_id",
    "target_pane_id",
    "name",
    "new_name",
    "title",
    "tool",
    "index",
    "id",
    "direction",
    "size",
    "x",
    "y",
    "width",
    "height",
    "zoom",
    "layout",
    "corner",
    "timeout",
    "interval",
    "max_lines",
    "max_bytes",
    "max_matched_lines_per_pane",
    "start",
    "end",
    "content_start",
    "content_end",
    "offset",
    "limit",
    "cursor",
    "literal",
    "enter",
    "regex",
    "match_case",
    "suppress_history",
    "suppress_persistent_history",
    "on_error",
    "scope",
    "global",
    "global_",
    "option",
    "hook_name",
    "format_string",
    "logical_name",
    "buffer_name",
    "channel",
    "kill",
    "bracket",
    "append",
    "attach",
    "scroll_up",
    "select",
    "start_directory",
    "output_path",
    "profile",
    // Zellij tools.
    "session",
    "pane",
    "tab",
    "mode",
    "side",
    "floating",
    "focus",
    "keep_pane",
    "include_plugins",
    "visible",
    "close_on_exit",
    "line",
    "cwd",
    "file",
];

/// Fields whose object value keeps its keys (variable names) and digests each value.
const KEYED_DIGEST_FIELDS: &[&str] = &["environment", "env"];

/// Deepest nesting redacted field by field; deeper values are reduced to their shape.
const MAX_DEPTH: usize = 16;
/// Most array elements redacted one by one; the rest are summarised.
const MAX_ITEMS: usize = 1000;
/// Longest unknown field name kept.
const MAX_KEY_CHARS: usize = 64;

/// First 12 hex characters of the SHA-256 of `bytes`.
pub fn sha256_prefix(bytes: &[u8]) -> String {
    let mut hex = hex::encode(Sha256::digest(bytes));
    hex.truncate(12);
    hex
}

/// `{"len", "sha256_prefix"}` of some bytes.
pub fn digest(bytes: &[u8]) -> Value {
    json!({ "len": bytes.len(), "sha256_prefix": sha256_prefix(bytes) })
}

fn digest_value(value: &Value) -> Value {
    match value {
        Value::String(s) => digest(s.as_bytes()),
        other => digest(other.to_string().as_bytes()),
    }
}

/// The shape of a value, without any of its content.
pub fn shape(value: &Value) -> Value {
    match value {
        Value::Null => Value::Null,
        Value::Bool(_) => json!({ "shape": "bool" }),
        Value::Number(_) => json!({ "shape": "number" }),
        Value::String(s) => json!({ "shape": "string", "len": s.len() }),
        Value::Array(a) => json!({ "shape": "array", "len": a.len() }),
        Value::Object(o) => json!({ "shape": "object", "len": o.len() }),
    }
}

fn safe_key(key: &str) -> String {
    let identifier = key.chars().count() <= MAX_KEY_CHARS
        && key
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if identifier {
        key.to_owned()
    } else {
        format!("#{}", sha256_prefix(key.as_bytes()))
    }
}

/// `s` cut to `max_chars` characters, with a note of how many were cut.
pub fn cap_chars(s: &str, max_chars: usize) -> String {
    let total = s.chars().count();
    if total <= max_chars {
        return s.to_owned();
    }
    let kept: String = s.chars().take(max_chars).collect();
    format!("{kept}…[+{} chars]", total - max_chars)
}

/// Redacts tool arguments for the audit log. `max_chars` caps echoed strings.
pub fn redact_args(args: &Value, max_chars: usize) -> Value {
    Redactor { max_chars }.top(args)
}

struct Redactor {
    max_chars: usize,
}

impl Redactor {
    fn top(&self, args: &Value) -> Value {
        match args {
            Value::Object(map) => self.object(map, 0),
            Value::Null => Value::Null,
            other => shape(other),
        }
    }

    fn object(&self, map: &Map<String, Value>, depth: usize) -> Value {
        let mut out = Map::new();
        for (key, value) in map {
            let k = key.as_str();
            let redacted = if depth >= MAX_DEPTH {
                shape(value)
            } else if DIGEST_FIELDS.contains(&k) {
                match value {
                    Value::Object(env) if KEYED_DIGEST_FIELDS.contains(&k) => Value::Object(
                        env.iter()
                            .map(|(name, v)| (safe_key(name), digest_value(v)))
                            .collect(),
                    ),
                    Value::Null => Value::Null,
                    other => digest_value(other),
                }
            } else if NESTED_FIELDS.contains(&k) {
                self.nested(value, depth + 1)
            } else if ECHO_FIELDS.contains(&k) {
                self.echo(value, depth + 1)
            } else {
                shape(value)
            };
            out.insert(safe_key(key), redacted);
        }
        Value::Object(out)
    }

    fn array(&self, items: &[Value], mut each: impl FnMut(&Value) -> Value) -> Value {
        let mut out: Vec<Value> = items.iter().take(MAX_ITEMS).map(&mut each).collect();
        if items.len() > MAX_ITEMS {
            out.push(json!({ "shape": "more_items", "len": items.len() - MAX_ITEMS }));
        }
        Value::Array(out)
    }

    fn nested(&self, value: &Value, depth: usize) -> Value {
        if depth >= MAX_DEPTH {
            return shape(value);
        }
        match value {
            Value::Object(map) => self.object(map, depth),
            Value::Array(items) => self.array(items, |v| self.nested(v, depth + 1)),
            // A string here may be JSON-encoded arguments: treat it as content.
            Value::String(s) => digest(s.as_bytes()),
            scalar => scalar.clone(),
        }
    }

    fn echo(&self, value: &Value, depth: usize) -> Value {
        if depth >= MAX_DEPTH {
            return shape(value);
        }
        match value {
            Value::String(s) => Value::String(cap_chars(s, self.max_chars)),
            Value::Array(items) => self.array(items, |v| self.echo(v, depth + 1)),
            Value::Object(map) => self.object(map, depth),
            scalar => scalar.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(v: Value) -> Value {
        redact_args(&v, 200)
    }

    #[test]
    fn digest_is_length_and_12_hex_of_sha256() {
        assert_eq!(
            digest(b"abc"),
            json!({ "len": 3, "sha256_prefix": "ba7816bf8f01" })
        );
    }

    #[test]
    fn send_keys_arguments() {
        let out = r(json!({
            "pane_id": "%3", "keys": "rm -rf / --no-preserve-root", "enter": true, "literal": false
        }));
        assert_eq!(out["pane_id"], "%3");
        assert_eq!(out["enter"], true);
        assert_eq!(out["keys"]["len"], 27);
        assert_eq!(out["keys"]["sha256_prefix"].as_str().unwrap().len(), 12);
        assert!(!out.to_string().contains("rm -rf"));
    }

    #[test]
    fn environment_keeps_names_and_digests_values() {
        let out = r(json!({ "environment": { "API_KEY": "hunter2", "weird name": "x" } }));
        let env = out["environment"].as_object().unwrap();
        assert_eq!(env["API_KEY"]["len"], 7);
        assert!(env.keys().any(|k| k.starts_with('#')));
        assert!(!out.to_string().contains("hunter2"));
        let out = r(json!({ "environment": ["A=hunter2"] }));
        assert!(out["environment"]["sha256_prefix"].is_string());
    }

    #[test]
    fn batches_are_redacted_recursively() {
        let out = r(json!({
            "on_error": "continue",
            "operations": [
                { "tool": "send_keys", "arguments": { "pane_id": "%1", "keys": "secret-one" } },
                { "keys": "secret-two", "pane_id": "%2" },
                { "tool": "run_command", "arguments": "{\"command\":\"secret-three\"}" },
                { "tool": "x", "arguments": { "operations": [ { "text": "secret-four" } ] } }
            ]
        }));
        let text = out.to_string();
        for secret in ["secret-one", "secret-two", "secret-three", "secret-four"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        assert_eq!(out["operations"][0]["arguments"]["pane_id"], "%1");
        assert_eq!(out["operations"][1]["keys"]["len"], 10);
        assert_eq!(out["operations"][0]["tool"], "send_keys");
    }

    #[test]
    fn unknown_fields_and_malformed_payloads_keep_only_their_shape() {
        let out = r(json!({
            "wait_for_previous": "leaked-value",
            "nested": { "deep": "leaked-too" },
            "list": ["a", "leaked-three"],
            "n": 42
        }));
        assert_eq!(
            out,
            json!({
                "wait_for_previous": { "shape": "string", "len": 12 },
                "nested": { "shape": "object", "len": 1 },
                "list": { "shape": "array", "len": 2 },
                "n": { "shape": "number" }
            })
        );
        assert_eq!(
            r(json!("just a string")),
            json!({ "shape": "string", "len": 13 })
        );
        assert_eq!(r(json!([1, 2])), json!({ "shape": "array", "len": 2 }));
        assert_eq!(r(Value::Null), Value::Null);
        // A secret-looking field name is not kept either.
        let out = r(json!({ "sk-live 123": 1 }));
        assert!(!out.to_string().contains("sk-live"));
    }

    #[test]
    fn echoed_strings_are_capped() {
        let long = "x".repeat(250);
        let out = redact_args(&json!({ "title": long }), 200);
        let kept = out["title"].as_str().unwrap();
        assert!(kept.starts_with(&"x".repeat(200)));
        assert!(kept.ends_with("…[+50 chars]"));
        let out = redact_args(&json!({ "title": "ééé" }), 2);
        assert_eq!(out["title"], "éé…[+1 chars]");
    }

    #[test]
    fn echo_fields_holding_objects_do_not_echo_unknown_content() {
        let out = r(json!({ "target": { "oops": "leaked" } }));
        assert!(!out.to_string().contains("leaked"));
    }

    #[test]
    fn depth_and_width_are_bounded() {
        let mut v = json!({ "keys": "deep-secret" });
        for _ in 0..40 {
            v = json!({ "arguments": v });
        }
        let out = r(v);
        assert!(!out.to_string().contains("deep-secret"));
        let ops: Vec<Value> = (0..1005)
            .map(|i| json!({ "pane_id": format!("%{i}") }))
            .collect();
        let out = r(json!({ "operations": ops }));
        let arr = out["operations"].as_array().unwrap();
        assert_eq!(arr.len(), 1001);
        assert_eq!(arr[1000], json!({ "shape": "more_items", "len": 5 }));
    }
}
