//! Schema compaction: what `tools/list` sends is what a model needs to call a tool, and no more.
//!
//! The derived JSON Schemas carry things a model never uses and every client pays for in tokens:
//! the `$schema` URI, `"default": null` (and `false`, `[]`: what an absent flag or list means
//! anyway), `["string", "null"]` for every optional argument,
//! Rust's integer `format`s, and (in output schemas) a prose description of every field the text
//! answer already explains. Compaction removes them without changing what validates: an optional
//! argument stays optional (it is simply absent from `required`), and an output schema still
//! accepts exactly the structured content the tool returns.

use rmcp::model::ToolAnnotations;
use serde_json::{Map, Value};

/// Leaves out the hints that say what MCP's defaults say (not read-only, destructive, not
/// idempotent, open world) and those that mean nothing for a read-only tool (destructive,
/// idempotent): a client reads the same tool, for fewer bytes.
pub(crate) fn annotations(hints: &mut ToolAnnotations) {
    if hints.read_only_hint == Some(true) {
        hints.destructive_hint = None;
        hints.idempotent_hint = None;
    } else {
        hints.read_only_hint = None;
    }
    if hints.destructive_hint == Some(true) {
        hints.destructive_hint = None;
    }
    if hints.idempotent_hint == Some(false) {
        hints.idempotent_hint = None;
    }
    if hints.open_world_hint == Some(true) {
        hints.open_world_hint = None;
    }
}

/// Compacts a tool's input schema in place.
pub(crate) fn input_schema(schema: &mut Map<String, Value>) {
    schema.remove("$schema");
    each_schema(schema, &mut compact_input_object);
    // A shared definition is described where it is used (each argument says what it is for).
    if let Some(Value::Object(definitions)) = schema.get_mut("$defs") {
        for definition in definitions.values_mut() {
            if let Value::Object(definition) = definition {
                definition.remove("description");
            }
        }
    }
    inline_single_use_definitions(schema);
}

/// Where an argument's description says how Zellij reads it: the rest of the description,
/// which a gateway without a Zellij server leaves out. Whitespace stands on both sides of it,
/// a space or a line break, as the doc comment wrapped its lines.
const ZELLIJ_NOTE: &str = "Zellij:";

/// Drops the Zellij notes (`… Zellij: …` to the end) from a tool's argument descriptions,
/// and the arguments only Zellij takes (their description starts with `Zellij:`): a gateway
/// serving no Zellij server lists the shared tools as tmux tools.
pub(crate) fn without_zellij_notes(schema: &mut Map<String, Value>) {
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        return;
    };
    properties.retain(|_, property| !is_zellij_only(property));
    for property in properties.values_mut() {
        if let Some(Value::String(text)) = property.get_mut("description")
            && let Some(at) = text
                .match_indices(ZELLIJ_NOTE)
                .map(|(at, _)| at)
                .find(|&at| {
                    text[..at].ends_with(char::is_whitespace)
                        && text[at + ZELLIJ_NOTE.len()..].starts_with(char::is_whitespace)
                })
        {
            text.truncate(at);
            text.truncate(text.trim_end().len());
        }
    }
}

/// Drops the answer fields only a Zellij server fills (their description starts with
/// `Zellij:`) from a tool's output schema, before compaction removes the descriptions.
pub(crate) fn without_zellij_fields(schema: &mut Map<String, Value>) {
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        return;
    };
    properties.retain(|_, property| !is_zellij_only(property));
}

/// Whether an argument or answer field is Zellij's alone: its description starts `Zellij:`.
fn is_zellij_only(property: &Value) -> bool {
    property
        .get("description")
        .and_then(Value::as_str)
        .is_some_and(|text| text.starts_with(ZELLIJ_NOTE))
}

/// A definition used once costs its name twice and a `$ref` for nothing: it goes where it is
/// used. Definitions used more than once (or by other definitions) stay shared.
fn inline_single_use_definitions(schema: &mut Map<String, Value>) {
    let Some(Value::Object(definitions)) = schema.remove("$defs") else {
        return;
    };
    let mut uses = std::collections::HashMap::<String, usize>::new();
    count_refs(&Value::Object(schema.clone()), &mut uses);
    for definition in definitions.values() {
        // A definition another one refers to is kept, so that no `$ref` dangles.
        count_refs(definition, &mut uses);
        count_refs(definition, &mut uses);
    }
    let (inline, shared): (Map<String, Value>, Map<String, Value>) = definitions
        .into_iter()
        .partition(|(name, _)| uses.get(&reference(name)) == Some(&1));
    replace_refs(schema, &inline);
    if !shared.is_empty() {
        schema.insert("$defs".into(), Value::Object(shared));
    }
}

fn reference(name: &str) -> String {
    format!("#/$defs/{name}")
}

fn count_refs(value: &Value, uses: &mut std::collections::HashMap<String, usize>) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(target)) = object.get("$ref") {
                *uses.entry(target.clone()).or_default() += 1;
            }
            object.values().for_each(|child| count_refs(child, uses));
        }
        Value::Array(items) => items.iter().for_each(|child| count_refs(child, uses)),
        _ => {}
    }
}

fn replace_refs(object: &mut Map<String, Value>, inline: &Map<String, Value>) {
    let target = match object.get("$ref") {
        Some(Value::String(target)) => target.strip_prefix("#/$defs/").map(str::to_owned),
        _ => None,
    };
    if let Some(Value::Object(definition)) = target.and_then(|name| inline.get(&name)) {
        object.remove("$ref");
        for (key, value) in definition {
            object.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    for child in object.values_mut() {
        match child {
            Value::Object(child) => replace_refs(child, inline),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(item) = item {
                        replace_refs(item, inline);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Keeps a schema's structure and types only: what an output schema needs to validate.
pub(crate) fn structure_only(schema: &mut Map<String, Value>) {
    schema.remove("$schema");
    each_schema(schema, &mut |object| {
        for keyword in [
            "description",
            "title",
            "format",
            "minimum",
            "default",
            "examples",
        ] {
            object.remove(keyword);
        }
    });
}

/// Compacts a tool's output schema in place: the fields and their types. Nothing is marked
/// required: answers leave out nulls, and listings the fields not asked for (see `mcp::render`
/// and `mcp::fields`), so a field's presence is the answer's to say. For the same reason no
/// field is ever `null`, and fields lose their `null` type (items of a list keep theirs: a list
/// keeps its nulls). Below the top, `"type": "object"` goes where `properties` already says it.
pub(crate) fn output_schema(schema: &mut Map<String, Value>) {
    structure_only(schema);
    each_schema(schema, &mut |object| {
        object.remove("required");
        constants_as_enum(object);
        if object.contains_key("properties") && object.get("type") == Some(&Value::from("object")) {
            object.remove("type");
        }
        if let Some(Value::Object(fields)) = object.get_mut("properties") {
            for field in fields.values_mut() {
                if let Value::Object(field) = field {
                    drop_null_type(field);
                    drop_null_alternative(field);
                }
            }
        }
    });
    inline_single_use_definitions(schema);
    // MCP requires the top of an output schema to say `"type": "object"`.
    schema.insert("type".into(), Value::from("object"));
}

/// Calls `visit` on a schema and on every schema inside it, knowing which keys hold schemas: a
/// map of `properties` holds schemas under arbitrary names (a property may be called `format` or
/// `default`), so only schema keywords are ever touched.
fn each_schema(schema: &mut Map<String, Value>, visit: &mut impl FnMut(&mut Map<String, Value>)) {
    visit(schema);
    for (key, value) in schema.iter_mut() {
        match (key.as_str(), value) {
            ("properties" | "$defs" | "patternProperties", Value::Object(named)) => {
                for child in named.values_mut() {
                    if let Value::Object(child) = child {
                        each_schema(child, visit);
                    }
                }
            }
            ("items" | "additionalProperties" | "not" | "contains", Value::Object(child)) => {
                each_schema(child, visit)
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(children)) => {
                for child in children {
                    if let Value::Object(child) = child {
                        each_schema(child, visit);
                    }
                }
            }
            _ => {}
        }
    }
}

/// One schema object of an input: optional arguments lose their `null` alternative (absence
/// already says "not given"), and annotations that do not help a model go.
fn compact_input_object(object: &mut Map<String, Value>) {
    object.remove("format");
    // Unsigned integers say `minimum: 0`; a negative number is refused with a clear error anyway.
    if object.get("minimum") == Some(&Value::from(0)) {
        object.remove("minimum");
    }
    if let Some(default) = object.get("default")
        && is_zero_value(default)
    {
        object.remove("default");
    }
    drop_null_type(object);
    drop_null_alternative(object);
    if let Some(Value::String(text)) = object.get_mut("description") {
        *text = one_line(text);
    }
}

/// `null`, `false` and `[]`: the defaults an absent argument has without being told.
fn is_zero_value(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(flag) => !flag,
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// `"type": ["string", "null"]` → `"type": "string"`.
fn drop_null_type(object: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = object.get_mut("type") else {
        return;
    };
    types.retain(|t| t != "null");
    if types.len() == 1 {
        let only = types.remove(0);
        object.insert("type".into(), only);
    }
}

/// `"anyOf": [X, {"type": "null"}]` → X's keys merged into the object.
fn drop_null_alternative(object: &mut Map<String, Value>) {
    let Some(Value::Array(alternatives)) = object.get_mut("anyOf") else {
        return;
    };
    alternatives.retain(|alternative| alternative.get("type") != Some(&Value::from("null")));
    if alternatives.len() != 1 {
        return;
    }
    let Some(Value::Object(only)) = alternatives.pop() else {
        return;
    };
    object.remove("anyOf");
    for (key, value) in only {
        object.entry(key).or_insert(value);
    }
}

/// A choice among constants of one type (`oneOf` of `{"const": …, "type": …}`, how a Rust enum
/// with documented variants derives once the descriptions are gone) says the same as `enum`,
/// for half the bytes.
fn constants_as_enum(object: &mut Map<String, Value>) {
    let Some(Value::Array(alternatives)) = object.get("oneOf") else {
        return;
    };
    let mut kind = None;
    let mut constants = Vec::with_capacity(alternatives.len());
    for alternative in alternatives {
        let Value::Object(alternative) = alternative else {
            return;
        };
        let (Some(constant), Some(this_kind), 2) = (
            alternative.get("const"),
            alternative.get("type"),
            alternative.len(),
        ) else {
            return;
        };
        if kind.get_or_insert(this_kind) != &this_kind {
            return;
        }
        constants.push(constant.clone());
    }
    let Some(kind) = kind.cloned() else {
        return;
    };
    object.remove("oneOf");
    object.insert("type".into(), kind);
    object.insert("enum".into(), Value::Array(constants));
}

/// Doc comments wrap at 100 columns; a model reads one line as well, for fewer bytes.
fn one_line(text: &str) -> String {
    text.split('\n')
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The schema of `T` with its structure and types only, every subschema inline: for an argument
/// whose fields another tool's listing already explains.
pub(crate) fn terse_schema_for<T: schemars::JsonSchema>() -> schemars::Schema {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let mut schema = settings.into_generator().into_root_schema_for::<T>();
    structure_only(schema.ensure_object());
    schema
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn optional_arguments_lose_null_and_zero_defaults() {
        let mut schema = object(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "server": {"type": ["string", "null"], "default": null,
                           "description": "Server name;\nomit when only one."},
                "timeout": {"type": ["number", "null"], "format": "double", "default": null},
                "end": {"anyOf": [{"$ref": "#/$defs/LineBound"}, {"type": "null"}],
                        "description": "Last line."},
                "enter": {"type": "boolean", "default": true},
                "literal": {"type": "boolean", "default": false},
                "argv": {"type": "array", "items": {"type": "string"}, "default": []},
                "format": {"type": "string", "description": "A tmux format."},
                "lines": {"type": "integer", "minimum": 0, "format": "uint32"},
                "cols": {"type": "integer", "minimum": 1},
            },
            "required": [],
            "$defs": {"LineBound": {"description": "A line.", "type": "integer"}},
        }));
        input_schema(&mut schema);
        assert_eq!(
            Value::Object(schema),
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "Server name; omit when only one."},
                    "timeout": {"type": "number"},
                    "end": {"description": "Last line.", "type": "integer"},
                    "enter": {"type": "boolean", "default": true},
                    "literal": {"type": "boolean"},
                    "argv": {"type": "array", "items": {"type": "string"}},
                    "format": {"type": "string", "description": "A tmux format."},
                    "lines": {"type": "integer"},
                    "cols": {"type": "integer", "minimum": 1},
                },
                "required": [],
            })
        );
    }

    #[test]
    fn definitions_used_once_are_inlined_and_shared_ones_kept() {
        let mut schema = object(json!({
            "type": "object",
            "properties": {
                "start": {"$ref": "#/$defs/LineBound", "description": "First line."},
                "end": {"$ref": "#/$defs/LineBound", "description": "Last line."},
                "direction": {"$ref": "#/$defs/Direction", "description": "Where."},
                "ops": {"type": "array", "items": {"$ref": "#/$defs/Op"}},
            },
            "$defs": {
                "LineBound": {"description": "A line.", "type": "integer"},
                "Direction": {"description": "A side.", "enum": ["left", "right"]},
                "Op": {"type": "object", "properties": {"key": {"$ref": "#/$defs/Key"}}},
                "Key": {"type": "string"},
            },
        }));
        input_schema(&mut schema);
        assert_eq!(
            Value::Object(schema),
            json!({
                "type": "object",
                "properties": {
                    "start": {"$ref": "#/$defs/LineBound", "description": "First line."},
                    "end": {"$ref": "#/$defs/LineBound", "description": "Last line."},
                    "direction": {"description": "Where.", "enum": ["left", "right"]},
                    "ops": {"type": "array", "items": {"type": "object",
                            "properties": {"key": {"$ref": "#/$defs/Key"}}}},
                },
                "$defs": {
                    "LineBound": {"type": "integer"},
                    "Key": {"type": "string"},
                },
            })
        );
    }

    #[test]
    fn a_real_choice_between_alternatives_is_kept() {
        let mut schema = object(json!({
            "anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}],
        }));
        input_schema(&mut schema);
        assert_eq!(
            Value::Object(schema),
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
        );
    }

    #[test]
    fn output_schemas_name_fields_and_types_and_require_nothing() {
        let mut schema = object(json!({
            "type": "object",
            "description": "An answer.",
            "properties": {
                "id": {"type": "string", "description": "Its id."},
                "only": {"type": "object", "properties": {"gone": {"type": ["string", "null"]}},
                         "required": ["gone"]},
            },
            "required": ["id", "only"],
        }));
        output_schema(&mut schema);
        assert_eq!(
            Value::Object(schema),
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "only": {"properties": {"gone": {"type": "string"}}},
                },
            })
        );
    }

    #[test]
    fn a_choice_of_constants_becomes_an_enum_and_a_mixed_one_stays() {
        let mut schema = object(json!({
            "type": "object",
            "properties": {
                "outcome": {"oneOf": [
                    {"const": "matched", "type": "string", "description": "found"},
                    {"const": "timeout", "type": "string"}
                ]},
                "end": {"oneOf": [{"type": "integer"}, {"type": "string", "const": "-"}]},
                "mixed": {"oneOf": [{"const": 1, "type": "integer"}, {"const": "x", "type": "string"}]}
            }
        }));
        output_schema(&mut schema);
        assert_eq!(
            schema["properties"]["outcome"],
            json!({"type": "string", "enum": ["matched", "timeout"]})
        );
        assert_eq!(
            schema["properties"]["end"],
            json!({"oneOf": [{"type": "integer"}, {"type": "string", "const": "-"}]})
        );
        assert!(schema["properties"]["mixed"].get("oneOf").is_some());
    }

    #[test]
    fn output_fields_are_never_null_but_list_items_may_be() {
        let mut schema = object(json!({
            "type": "object",
            "properties": {
                "dead_status": {"type": ["integer", "null"]},
                "pane": {"anyOf": [{"$ref": "#/$defs/Pane"}, {"type": "null"}]},
                "exits": {"type": "array", "items": {"type": ["integer", "null"]}},
            },
            "required": ["dead_status"],
            "$defs": {"Pane": {"type": "object", "properties": {
                "id": {"type": "string"}, "cwd": {"type": ["string", "null"]}}}},
        }));
        output_schema(&mut schema);
        assert_eq!(
            Value::Object(schema),
            json!({
                "type": "object",
                "properties": {
                    "dead_status": {"type": "integer"},
                    "pane": {"properties": {
                        "id": {"type": "string"}, "cwd": {"type": "string"}}},
                    "exits": {"type": "array", "items": {"type": ["integer", "null"]}},
                },
            })
        );
    }

    #[test]
    fn output_schemas_keep_structure_and_nullability() {
        let mut schema = object(json!({
            "$schema": "x",
            "description": "top",
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "a field named description"},
                "format": {"type": "string", "format": "x"},
                "dead_status": {"type": ["integer", "null"], "format": "int32"},
                "panes": {"type": "array", "items": {"$ref": "#/$defs/Pane"}},
            },
            "required": ["description", "format", "dead_status", "panes"],
            "$defs": {"Pane": {"type": "object", "properties": {
                "width": {"type": "integer", "minimum": 0, "format": "uint32",
                          "description": "Size in cells."}}}},
        }));
        structure_only(&mut schema);
        assert_eq!(
            Value::Object(schema),
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "format": {"type": "string"},
                    "dead_status": {"type": ["integer", "null"]},
                    "panes": {"type": "array", "items": {"$ref": "#/$defs/Pane"}},
                },
                "required": ["description", "format", "dead_status", "panes"],
                "$defs": {"Pane": {"type": "object", "properties": {
                    "width": {"type": "integer"}}}},
            })
        );
    }
}
