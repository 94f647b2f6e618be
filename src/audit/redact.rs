//! Redaction of tool arguments for the audit log. Nothing a client types reaches the log.
//!
//! Fields are classified by name, at any depth:
//! - **digested** ([`DIGEST_FIELDS`]: keystrokes, text, commands, values, buffer contents,
//!   environment, patterns …): replaced by `{"len": <bytes>, "mac": <12 hex>}`, the start of an
//!   HMAC with the audit key (see [`AuditKey::digest_mac`]), so a record can be matched against
//!   a known input by whoever holds the key, and a short secret (a PIN, a password typed at a
//!   prompt) cannot be guessed offline from the log. An `environment` object keeps its variable
//!   names and digests each value;
//! - **nested** ([`NESTED_FIELDS`]: batch `operations`, `steps`, `filters` …): redacted
//!   recursively by the same rules;
//! - **echoed** ([`ECHO_FIELDS`]: ids, names, sizes, flags, timeouts): kept (strings capped at
//!   `max_chars` characters) only when the value is what the tool's input schema says the field
//!   is: a boolean where a boolean is expected, one of the listed values of an enumeration, and
//!   so on. Anything else (`"literal": "<a password>"`, a string where a number is expected, a
//!   field the schema does not have, a call without a schema) is reduced to its shape;
//! - **anything else** (unknown or misspelt fields, payloads that are not objects): reduced
//!   to their shape, e.g. `{"shape": "string", "len": 12}`; their values never appear.
//!   Unknown field names are kept only if they look like identifiers.

use serde_json::{Map, Value, json};

use super::key::AuditKey;

/// Fields whose values are recorded only as length + keyed digest.
pub(crate) const DIGEST_FIELDS: &[&str] = &[
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
    "prompt",
];

/// Fields holding nested arguments, redacted recursively.
pub(crate) const NESTED_FIELDS: &[&str] = &["operations", "arguments", "steps", "ops", "filters"];

/// Fields whose values are kept (identifiers and knobs) when they are what the schema expects.
pub(crate) const ECHO_FIELDS: &[&str] = &[
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
/// Most `$ref`s followed to reach one schema (schemas of recursive types loop).
const MAX_REFS: usize = 8;

/// The shape of a value, without any of its content.
pub(crate) fn shape(value: &Value) -> Value {
    match value {
        Value::Null => Value::Null,
        Value::Bool(_) => json!({ "shape": "bool" }),
        Value::Number(_) => json!({ "shape": "number" }),
        Value::String(s) => json!({ "shape": "string", "len": s.len() }),
        Value::Array(a) => json!({ "shape": "array", "len": a.len() }),
        Value::Object(o) => json!({ "shape": "object", "len": o.len() }),
    }
}

/// `s` cut to `max_chars` characters, with a note of how many were cut.
pub(crate) fn cap_chars(s: &str, max_chars: usize) -> String {
    let total = s.chars().count();
    if total <= max_chars {
        return s.to_owned();
    }
    let kept: String = s.chars().take(max_chars).collect();
    format!("{kept}…[+{} chars]", total - max_chars)
}

/// Redacts tool arguments for the audit log. `schema` is the tool's input schema (`None`:
/// nothing is echoed); `max_chars` caps echoed strings.
pub(crate) fn redact_args(
    args: &Value,
    schema: Option<&Map<String, Value>>,
    key: &AuditKey,
    max_chars: usize,
) -> Value {
    let redactor = Redactor {
        key,
        max_chars,
        root: schema,
    };
    match args {
        Value::Object(map) => redactor.object(map, schema, 0),
        Value::Null => Value::Null,
        other => shape(other),
    }
}

struct Redactor<'a> {
    key: &'a AuditKey,
    max_chars: usize,
    /// The tool's input schema, where `$ref`s point.
    root: Option<&'a Map<String, Value>>,
}

impl<'a> Redactor<'a> {
    /// `{"len", "mac"}` of some bytes.
    fn digest(&self, bytes: &[u8]) -> Value {
        json!({ "len": bytes.len(), "mac": self.key.digest_mac(bytes) })
    }

    fn digest_value(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => self.digest(s.as_bytes()),
            other => self.digest(other.to_string().as_bytes()),
        }
    }

    fn safe_key(&self, key: &str) -> String {
        let identifier = key.chars().count() <= MAX_KEY_CHARS
            && key
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if identifier {
            key.to_owned()
        } else {
            format!("#{}", self.key.digest_mac(key.as_bytes()))
        }
    }

    /// An object of arguments; `schema` is the (resolved) schema of the object, if known.
    fn object(
        &self,
        map: &Map<String, Value>,
        schema: Option<&'a Map<String, Value>>,
        depth: usize,
    ) -> Value {
        let mut out = Map::new();
        for (key, value) in map {
            let k = key.as_str();
            let field = schema.and_then(|s| self.property(s, k, 0));
            let redacted = if depth >= MAX_DEPTH {
                shape(value)
            } else if DIGEST_FIELDS.contains(&k) {
                match value {
                    Value::Object(env) if KEYED_DIGEST_FIELDS.contains(&k) => Value::Object(
                        env.iter()
                            .map(|(name, v)| (self.safe_key(name), self.digest_value(v)))
                            .collect(),
                    ),
                    Value::Null => Value::Null,
                    other => self.digest_value(other),
                }
            } else if NESTED_FIELDS.contains(&k) {
                self.nested(value, field, depth + 1)
            } else if ECHO_FIELDS.contains(&k) {
                self.echo(value, field, depth + 1)
            } else {
                shape(value)
            };
            out.insert(self.safe_key(key), redacted);
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

    fn nested(&self, value: &Value, schema: Option<&'a Value>, depth: usize) -> Value {
        if depth >= MAX_DEPTH {
            return shape(value);
        }
        let resolved = schema.and_then(|s| self.resolve(s));
        match value {
            Value::Object(map) => self.object(map, resolved, depth),
            Value::Array(items) => {
                let item = resolved.and_then(|s| self.items(s, 0));
                self.array(items, |v| self.nested(v, item, depth + 1))
            }
            // A string here may be JSON-encoded arguments: treat it as content.
            Value::String(s) => self.digest(s.as_bytes()),
            scalar => self.echo(scalar, schema, depth),
        }
    }

    /// A field whose value may be kept: kept when the schema says it may be this value.
    fn echo(&self, value: &Value, schema: Option<&'a Value>, depth: usize) -> Value {
        let Some(schema) = schema else {
            return shape(value);
        };
        if depth >= MAX_DEPTH || !self.accepts(schema, value, 0) {
            return shape(value);
        }
        let resolved = self.resolve(schema);
        match value {
            Value::String(s) => Value::String(cap_chars(s, self.max_chars)),
            Value::Array(items) => {
                let item = resolved.and_then(|s| self.items(s, 0));
                self.array(items, |v| self.echo(v, item, depth + 1))
            }
            Value::Object(map) => self.object(map, resolved, depth),
            scalar => scalar.clone(),
        }
    }

    /// `schema` with `$ref`s followed; `None` for `true`, unresolvable refs and non-schemas.
    fn resolve(&self, schema: &'a Value) -> Option<&'a Map<String, Value>> {
        let mut node = schema;
        for _ in 0..MAX_REFS {
            let map = node.as_object()?;
            let Some(reference) = map.get("$ref").and_then(Value::as_str) else {
                return Some(map);
            };
            let (defs, name) = if let Some(name) = reference.strip_prefix("#/$defs/") {
                ("$defs", name)
            } else {
                ("definitions", reference.strip_prefix("#/definitions/")?)
            };
            node = self.root?.get(defs)?.get(name)?;
        }
        None
    }

    /// The branches of `anyOf`, `oneOf` and `allOf` (an `Option<Struct>` is `anyOf` the struct
    /// and null).
    fn branches(schema: &'a Map<String, Value>) -> impl Iterator<Item = &'a Value> {
        ["anyOf", "oneOf", "allOf"]
            .into_iter()
            .filter_map(|k| schema.get(k).and_then(Value::as_array))
            .flatten()
    }

    /// The schema of property `name` of an object schema.
    fn property(
        &self,
        schema: &'a Map<String, Value>,
        name: &str,
        depth: usize,
    ) -> Option<&'a Value> {
        if let Some(found) = schema.get("properties").and_then(|p| p.get(name)) {
            return Some(found);
        }
        if depth >= MAX_REFS {
            return None;
        }
        Self::branches(schema)
            .filter_map(|b| self.resolve(b))
            .find_map(|b| self.property(b, name, depth + 1))
    }

    /// The schema of the items of an array schema.
    fn items(&self, schema: &'a Map<String, Value>, depth: usize) -> Option<&'a Value> {
        if let Some(found) = schema.get("items") {
            return Some(found);
        }
        if depth >= MAX_REFS {
            return None;
        }
        Self::branches(schema)
            .filter_map(|b| self.resolve(b))
            .find_map(|b| self.items(b, depth + 1))
    }

    /// Whether `schema` says `value` may be there, by its JSON type (and its listed values, for
    /// an enumeration). A schema that says nothing about the type accepts nothing: what a field
    /// may hold must be known before its value is echoed.
    fn accepts(&self, schema: &'a Value, value: &Value, depth: usize) -> bool {
        let Some(schema) = self.resolve(schema) else {
            return false;
        };
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            return values.contains(value);
        }
        if let Some(constant) = schema.get("const") {
            return constant == value;
        }
        let mut known = false;
        let mut fits = true;
        if let Some(types) = schema.get("type") {
            known = true;
            fits &= type_fits(types, value);
        }
        if depth < MAX_REFS {
            for (keyword, all) in [("anyOf", false), ("oneOf", false), ("allOf", true)] {
                let Some(branches) = schema.get(keyword).and_then(Value::as_array) else {
                    continue;
                };
                known = true;
                let mut each = branches.iter().map(|b| self.accepts(b, value, depth + 1));
                fits &= if all {
                    each.all(|ok| ok)
                } else {
                    each.any(|ok| ok)
                };
            }
        }
        known && fits
    }
}

/// Whether `value` has one of the JSON Schema `types` (a name or a list of names).
fn type_fits(types: &Value, value: &Value) -> bool {
    let fits = |name: &Value| match name.as_str() {
        Some("null") => value.is_null(),
        Some("boolean") => value.is_boolean(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("string") => value.is_string(),
        Some("array") => value.is_array(),
        Some("object") => value.is_object(),
        _ => false,
    };
    match types {
        Value::Array(names) => names.iter().any(fits),
        name => fits(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> AuditKey {
        AuditKey::from_secret(&[9; 32])
    }

    /// A schema shaped like the ones rmcp generates (draft 2020-12, `$defs`, `Option` as a
    /// type list or `anyOf` with null, enums as `oneOf` of consts).
    fn schema() -> Map<String, Value> {
        let schema = json!({
            "$defs": {
                "Strings": { "anyOf": [
                    { "type": "string" },
                    { "type": "array", "items": { "type": "string" } }
                ] },
                "OnError": { "oneOf": [
                    { "const": "stop", "type": "string" },
                    { "const": "continue", "type": "string" }
                ] },
                "Direction": { "enum": ["above", "below"], "type": "string" },
                "Op": { "type": "object", "properties": {
                    "target": { "type": "string" },
                    "keys": { "$ref": "#/$defs/Strings" },
                    "literal": { "type": "boolean" }
                } },
                "Bound": { "oneOf": [ { "type": "integer" }, { "const": "-", "type": "string" } ] }
            },
            "type": "object",
            "properties": {
                "server": { "type": ["string", "null"] },
                "target": { "type": "string" },
                "keys": { "$ref": "#/$defs/Strings" },
                "literal": { "type": "boolean", "default": false },
                "enter": { "type": "boolean" },
                "timeout": { "type": ["number", "null"] },
                "max_lines": { "type": "integer", "minimum": 0 },
                "on_error": { "$ref": "#/$defs/OnError", "description": "…" },
                "direction": { "$ref": "#/$defs/Direction" },
                "start": { "anyOf": [ { "$ref": "#/$defs/Bound" }, { "type": "null" } ] },
                "operations": { "type": "array", "items": { "$ref": "#/$defs/Op" } },
                "environment": { "type": ["object", "null"], "additionalProperties": { "type": "string" } },
                "title": { "type": "string" },
                "layout": {}
            }
        });
        match schema {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    fn r(v: Value) -> Value {
        redact_args(&v, Some(&schema()), &key(), 200)
    }

    #[test]
    fn digests_are_length_and_12_hex_of_a_keyed_mac() {
        let out = r(json!({ "keys": "abc" }));
        assert_eq!(
            out["keys"],
            json!({ "len": 3, "mac": key().digest_mac(b"abc") })
        );
        // Another key, another digest of the same keystrokes.
        let other = redact_args(
            &json!({ "keys": "abc" }),
            None,
            &AuditKey::from_secret(&[10; 32]),
            200,
        );
        assert_eq!(other["keys"]["len"], 3);
        assert_ne!(other["keys"]["mac"], out["keys"]["mac"]);
    }

    #[test]
    fn send_keys_arguments() {
        let out = r(json!({
            "target": "%3", "keys": "rm -rf / --no-preserve-root", "enter": true, "literal": false
        }));
        assert_eq!(out["target"], "%3");
        assert_eq!(out["enter"], true);
        assert_eq!(out["literal"], false);
        assert_eq!(out["keys"]["len"], 27);
        assert_eq!(out["keys"]["mac"].as_str().unwrap().len(), 12);
        assert!(!out.to_string().contains("rm -rf"));
    }

    /// A value that is not what the schema says its field is appears only as its shape:
    /// `"literal": "<a password>"` must not put the password in the log.
    #[test]
    fn values_of_the_wrong_type_are_not_echoed() {
        let out = r(json!({
            "target": "%1",
            "literal": "hunter2-literal",
            "enter": "hunter2-enter",
            "timeout": "hunter2-timeout",
            "max_lines": 1.5,
            "on_error": "hunter2-enum",
            "direction": "sideways-hunter2",
            "start": "hunter2-bound",
            "server": { "hunter2": "nested" },
            "layout": "hunter2-unconstrained",
            "operations": [ { "target": "%2", "literal": "hunter2-in-batch" } ]
        }));
        assert!(!out.to_string().contains("hunter2"), "{out}");
        assert_eq!(
            out["literal"],
            json!({ "shape": "string", "len": "hunter2-literal".len() })
        );
        assert_eq!(out["max_lines"], json!({ "shape": "number" }));
        assert_eq!(out["server"], json!({ "shape": "object", "len": 1 }));
        assert_eq!(out["operations"][0]["target"], "%2");
        // The right types are kept.
        let out = r(json!({
            "timeout": 2.5, "max_lines": 10, "on_error": "continue", "direction": "above",
            "start": -20, "server": null, "operations": [ { "literal": true } ]
        }));
        assert_eq!(out["timeout"], 2.5);
        assert_eq!(out["max_lines"], 10);
        assert_eq!(out["on_error"], "continue");
        assert_eq!(out["direction"], "above");
        assert_eq!(out["start"], -20);
        assert_eq!(out["server"], Value::Null);
        assert_eq!(out["operations"][0]["literal"], true);
        assert_eq!(r(json!({ "start": "-" }))["start"], "-");
    }

    #[test]
    fn without_a_schema_nothing_is_echoed() {
        let out = redact_args(
            &json!({ "target": "%3", "enter": true, "keys": "x" }),
            None,
            &key(),
            200,
        );
        assert_eq!(out["target"], json!({ "shape": "string", "len": 2 }));
        assert_eq!(out["enter"], json!({ "shape": "bool" }));
        assert_eq!(out["keys"]["len"], 1);
        // A field the schema does not have is not echoed either.
        let out = r(json!({ "pane_id": "%3" }));
        assert_eq!(out["pane_id"], json!({ "shape": "string", "len": 2 }));
    }

    #[test]
    fn environment_keeps_names_and_digests_values() {
        let out = r(json!({ "environment": { "API_KEY": "hunter2", "weird name": "x" } }));
        let env = out["environment"].as_object().unwrap();
        assert_eq!(env["API_KEY"]["len"], 7);
        assert!(env.keys().any(|k| k.starts_with('#')));
        assert!(!out.to_string().contains("hunter2"));
        let out = r(json!({ "environment": ["A=hunter2"] }));
        assert!(out["environment"]["mac"].is_string());
    }

    #[test]
    fn batches_are_redacted_recursively() {
        let out = r(json!({
            "on_error": "continue",
            "operations": [
                { "target": "%1", "keys": "secret-one" },
                { "keys": ["secret-two", "Enter"], "target": "%2" },
                "{\"keys\":\"secret-three\"}",
                { "operations": [ { "text": "secret-four" } ] }
            ]
        }));
        let text = out.to_string();
        for secret in ["secret-one", "secret-two", "secret-three", "secret-four"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        assert_eq!(out["operations"][0]["target"], "%1");
        assert_eq!(out["operations"][0]["keys"]["len"], 10);
        assert_eq!(out["on_error"], "continue");
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
        let out = redact_args(&json!({ "title": long }), Some(&schema()), &key(), 200);
        let kept = out["title"].as_str().unwrap();
        assert!(kept.starts_with(&"x".repeat(200)));
        assert!(kept.ends_with("…[+50 chars]"));
        let out = redact_args(&json!({ "title": "ééé" }), Some(&schema()), &key(), 2);
        assert_eq!(out["title"], "éé…[+1 chars]");
    }

    #[test]
    fn echo_fields_holding_objects_do_not_echo_unknown_content() {
        let out = r(json!({ "target": { "oops": "leaked" } }));
        assert!(!out.to_string().contains("leaked"));
    }

    #[test]
    fn depth_width_and_ref_loops_are_bounded() {
        let mut v = json!({ "keys": "deep-secret" });
        for _ in 0..40 {
            v = json!({ "operations": v });
        }
        let out = r(v);
        assert!(!out.to_string().contains("deep-secret"));
        let ops: Vec<Value> = (0..1005)
            .map(|i| json!({ "target": format!("%{i}") }))
            .collect();
        let out = r(json!({ "operations": ops }));
        let arr = out["operations"].as_array().unwrap();
        assert_eq!(arr.len(), 1001);
        assert_eq!(arr[1000], json!({ "shape": "more_items", "len": 5 }));
        // A schema whose reference points at itself accepts nothing.
        let looping = match json!({
            "$defs": { "A": { "$ref": "#/$defs/A" } },
            "properties": { "enter": { "$ref": "#/$defs/A" } }
        }) {
            Value::Object(map) => map,
            _ => unreachable!(),
        };
        let out = redact_args(&json!({ "enter": true }), Some(&looping), &key(), 200);
        assert_eq!(out["enter"], json!({ "shape": "bool" }));
    }
}
