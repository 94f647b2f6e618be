//! The fixture tools, prompts and resources the MCP conformance suite calls by fixed names
//! (`test_simple_text`, `test://static-text`, …), as pure data.
//!
//! Each answers exactly what the suite's scenario descriptions ask for, nothing more. They are
//! served beside muxgate's own catalog by [`super::ConformanceServer`]; none of them touches a
//! multiplexer.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, GetPromptResult, JsonObject, Prompt, PromptArgument, ReadResourceResult,
    Resource, ResourceTemplate, Tool,
};
use serde_json::{Value, json};

/// A 1×1 red PNG.
const IMAGE_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV file with one sample.
const AUDIO_WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// Tools whose result is fixed, by name.
const STATIC_TOOLS: [(&str, &str); 6] = [
    ("test_simple_text", "Returns one text block."),
    ("test_image_content", "Returns one PNG image."),
    ("test_audio_content", "Returns one WAV clip."),
    (
        "test_embedded_resource",
        "Returns one embedded text resource.",
    ),
    (
        "test_multiple_content_types",
        "Returns text, an image and an embedded resource.",
    ),
    ("test_error_handling", "Always fails with isError."),
];

/// The tool that reports progress (its behaviour needs the peer, see the server).
pub(super) const PROGRESS_TOOL: &str = "test_tool_with_progress";
/// The tool whose input schema uses JSON Schema 2020-12 keywords clients must keep.
const SCHEMA_TOOL: &str = "json_schema_2020_12_tool";
/// The tool with a parameter mirrored in an `Mcp-Param-Region` header (SEP-2243), which the
/// transport checks against the body.
const HEADER_TOOL: &str = "test_custom_headers";

/// Every fixture tool, for `tools/list`.
pub(super) fn tools() -> Vec<Tool> {
    let empty = || Arc::new(object(json!({"type": "object", "properties": {}})));
    let mut tools: Vec<Tool> = STATIC_TOOLS
        .iter()
        .map(|(name, description)| Tool::new(*name, *description, empty()))
        .collect();
    tools.push(Tool::new(
        PROGRESS_TOOL,
        "Reports progress 0, 50 and 100 of 100, then returns the progress token.",
        empty(),
    ));
    tools.push(Tool::new(
        SCHEMA_TOOL,
        "Echoes its arguments; its input schema uses JSON Schema 2020-12 keywords.",
        Arc::new(object(schema_2020_12())),
    ));
    tools.push(Tool::new(
        HEADER_TOOL,
        "Echoes its region, which clients also send as the Mcp-Param-Region header.",
        Arc::new(object(json!({
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"]
        }))),
    ));
    tools
}

/// Whether `name` is a fixture tool.
pub(super) fn is_tool(name: &str) -> bool {
    [PROGRESS_TOOL, SCHEMA_TOOL, HEADER_TOOL].contains(&name)
        || STATIC_TOOLS.iter().any(|(n, _)| *n == name)
}

/// The result of a fixture tool other than [`PROGRESS_TOOL`].
pub(super) fn call(
    name: &str,
    arguments: Option<&JsonObject>,
) -> Result<CallToolResult, ErrorData> {
    let content = match name {
        "test_simple_text" => json!([
            {"type": "text", "text": "This is a simple text response for testing."}
        ]),
        "test_image_content" => {
            json!([{"type": "image", "data": IMAGE_PNG, "mimeType": "image/png"}])
        }
        "test_audio_content" => {
            json!([{"type": "audio", "data": AUDIO_WAV, "mimeType": "audio/wav"}])
        }
        "test_embedded_resource" => json!([{"type": "resource", "resource": {
            "uri": "test://embedded-resource",
            "mimeType": "text/plain",
            "text": "This is an embedded resource content."
        }}]),
        "test_multiple_content_types" => json!([
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": IMAGE_PNG, "mimeType": "image/png"},
            {"type": "resource", "resource": {
                "uri": "test://mixed-content-resource",
                "mimeType": "application/json",
                "text": json!({"test": "data", "value": 123}).to_string()
            }}
        ]),
        "test_error_handling" => {
            return parse(json!({
                "isError": true,
                "content": [{"type": "text", "text": "This tool intentionally returns an error for testing"}]
            }));
        }
        HEADER_TOOL => {
            let region = arguments
                .and_then(|a| a.get("region"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            json!([{"type": "text", "text": format!("region: {region}")}])
        }
        SCHEMA_TOOL => {
            let args = Value::Object(arguments.cloned().unwrap_or_default());
            json!([{"type": "text", "text": format!("JSON Schema 2020-12 tool called with: {args}")}])
        }
        other => {
            return Err(ErrorData::invalid_params(
                format!("no fixture tool named {other:?}"),
                None,
            ));
        }
    };
    parse(json!({ "content": content }))
}

/// The input schema of [`SCHEMA_TOOL`]: `$schema`, `$defs` with `$anchor`, composition,
/// conditionals and `additionalProperties`.
fn schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

/// Every fixture prompt, for `prompts/list`.
pub(super) fn prompts() -> Vec<Prompt> {
    let argument = |name: &str, description: &str| {
        PromptArgument::new(name)
            .with_description(description)
            .with_required(true)
    };
    vec![
        Prompt::new(
            "test_simple_prompt",
            Some("A simple prompt without arguments"),
            None,
        ),
        Prompt::new(
            "test_prompt_with_arguments",
            Some("A prompt with required arguments"),
            Some(vec![
                argument("arg1", "First test argument"),
                argument("arg2", "Second test argument"),
            ]),
        ),
        Prompt::new(
            "test_prompt_with_embedded_resource",
            Some("A prompt that includes an embedded resource"),
            Some(vec![argument(
                "resourceUri",
                "URI of the resource to embed",
            )]),
        ),
        Prompt::new(
            "test_prompt_with_image",
            Some("A prompt that includes image content"),
            None,
        ),
    ]
}

/// Whether `name` is a fixture prompt.
pub(super) fn is_prompt(name: &str) -> bool {
    prompts().iter().any(|p| p.name == name)
}

/// A fixture prompt's messages.
pub(super) fn prompt(
    name: &str,
    arguments: Option<&JsonObject>,
) -> Result<GetPromptResult, ErrorData> {
    let arg = |key: &str| -> Result<String, ErrorData> {
        arguments
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("missing string argument {key:?}"), None)
            })
    };
    let user = |content: Value| json!({"role": "user", "content": content});
    let messages = match name {
        "test_simple_prompt" => vec![user(
            json!({"type": "text", "text": "This is a simple prompt for testing."}),
        )],
        "test_prompt_with_arguments" => {
            let (arg1, arg2) = (arg("arg1")?, arg("arg2")?);
            vec![user(json!({
                "type": "text",
                "text": format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")
            }))]
        }
        "test_prompt_with_embedded_resource" => vec![
            user(json!({"type": "resource", "resource": {
                "uri": arg("resourceUri")?,
                "mimeType": "text/plain",
                "text": "Embedded resource content for testing."
            }})),
            user(json!({"type": "text", "text": "Please process the embedded resource above."})),
        ],
        "test_prompt_with_image" => vec![
            user(json!({"type": "image", "data": IMAGE_PNG, "mimeType": "image/png"})),
            user(json!({"type": "text", "text": "Please analyze the image above."})),
        ],
        other => {
            return Err(ErrorData::invalid_params(
                format!("no fixture prompt named {other:?}"),
                None,
            ));
        }
    };
    parse(json!({ "messages": messages }))
}

/// Every fixed fixture resource, for `resources/list`.
pub(super) fn resources() -> Vec<Resource> {
    vec![
        Resource::new("test://static-text", "static-text")
            .with_description("A static text resource for testing")
            .with_mime_type("text/plain"),
        Resource::new("test://static-binary", "static-binary")
            .with_description("A static binary resource (image) for testing")
            .with_mime_type("image/png"),
    ]
}

/// The fixture resource template, for `resources/templates/list`.
pub(super) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("test://template/{id}/data", "template")
            .with_description("A resource template with parameter substitution")
            .with_mime_type("application/json"),
    ]
}

/// A fixture resource's contents; `None` when no fixture has that URI.
pub(super) fn read(uri: &str) -> Option<Result<ReadResourceResult, ErrorData>> {
    let contents = match uri {
        "test://static-text" => json!({
            "uri": uri,
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource."
        }),
        "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": IMAGE_PNG}),
        _ => {
            let id = uri
                .strip_prefix("test://template/")?
                .strip_suffix("/data")
                .filter(|id| !id.is_empty() && !id.contains('/'))?;
            json!({
                "uri": uri,
                "mimeType": "application/json",
                "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                    .to_string()
            })
        }
    };
    Some(parse(json!({ "contents": [contents] })))
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// Fixtures are written as the JSON the suite expects; a mismatch with rmcp's model is a bug
/// here, reported as an internal error rather than a panic. Results are complete
/// (`resultType`, which rmcp strips for peers older than 2026-07-28).
fn parse<T: serde::de::DeserializeOwned>(mut value: Value) -> Result<T, ErrorData> {
    if let Value::Object(result) = &mut value {
        result.insert("resultType".to_owned(), json!("complete"));
    }
    serde_json::from_value(value)
        .map_err(|e| ErrorData::internal_error(format!("fixture does not parse: {e}"), None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_tool_answers() {
        for tool in tools() {
            assert!(is_tool(&tool.name));
            if tool.name != PROGRESS_TOOL {
                call(&tool.name, None).unwrap();
            }
        }
        assert_eq!(
            call("test_error_handling", None).unwrap().is_error,
            Some(true)
        );
        assert!(!is_tool("list_sessions"));
    }

    #[test]
    fn every_listed_prompt_answers_with_its_arguments() {
        let args = object(json!({"arg1": "a", "arg2": "b", "resourceUri": "test://x"}));
        for p in prompts() {
            assert!(is_prompt(&p.name));
            prompt(&p.name, Some(&args)).unwrap();
        }
        assert!(prompt("test_prompt_with_arguments", None).is_err());
        assert!(!is_prompt("run_and_wait"));
    }

    #[test]
    fn resources_and_template_read() {
        for r in resources() {
            read(&r.uri).unwrap().unwrap();
        }
        let data = read("test://template/123/data").unwrap().unwrap();
        assert!(format!("{data:?}").contains("Data for ID: 123"));
        assert!(read("test://template//data").is_none());
        assert!(read("test://nothing").is_none());
        assert!(read("tmux://dev/sessions").is_none());
    }
}
