//! Schema compaction: what `tools/list` sends is what a model needs to call a tool, and no more.
//!
//! The derived JSON Schemas carry things a model never uses and every client pays for in tokens:
//! the `$schema` URI, `"default": null`, `["string", "null"]` for every optional argument,
//! Rust's integer `format`s, and (in output schemas) a prose description of every field the text
//! answer already explains. Compaction removes them without changing what validates: an optional
//! argument stays optional (it is simply absent from `required`), and an output schema still
//! accepts exactly the structured content the tool returns.

use serde_json::{Map, Value};

/// Compacts a tool's input schema in place.
pub fn input_schema(schema: &mut Map<String, Value>) {
    schema.remove("$schema");
    each_schema(schema, &mut compact_input_object);
}

/// Keeps a schema's structure and types only: what an output schema needs to validate.
pub fn structure_only(schema: &mut Map<String, Value>) {
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
    if object.get("default") == Some(&Value::Null) {
        object.remove("default");
    }
    drop_null_type(object);
    drop_null_alternative(object);
    if let Some(Value::String(text)) = object.get_mut("description") {
        *text = one_line(text);
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

/// Doc comments wrap at 100 columns; a model reads one line as well, for fewer bytes.
fn one_line(text: &str) -> String {
    text.split('\n')
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
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
    fn optional_arguments_lose_null_and_defaults_of_null() {
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
                "format": {"type": "string", "description": "A tmux format."},
            },
            "required": [],
        }));
        input_schema(&mut schema);
        assert_eq!(
            Value::Object(schema),
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "Server name; omit when only one."},
                    "timeout": {"type": "number"},
                    "end": {"$ref": "#/$defs/LineBound", "description": "Last line."},
                    "enter": {"type": "boolean", "default": true},
                    "format": {"type": "string", "description": "A tmux format."},
                },
                "required": [],
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
