//! A tool's structured answer: what the `#[tool]` functions return, as [`Json`].
//!
//! rmcp's own `Json` wrapper serializes every answer twice: once into `structuredContent`, and
//! once more into JSON text for the result's `content`. That text is never sent, since
//! [`super::render::shape`] replaces it with the rendering a model reads, so for a listing of
//! twenty panes it is a few kilobytes of JSON written and thrown away on every call. This
//! wrapper leaves `content` empty for `shape` to fill, which every tool call goes through.
//!
//! The `#[tool]` macro finds a tool's output schema by the return type's name (`Json<T>` or
//! `Result<Json<T>, E>`), so the name is rmcp's.

use std::borrow::Cow;

use rmcp::ErrorData;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{CallToolResponse, CallToolResult};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;

/// A tool's answer `T`, sent as its structured content (schema: `T`'s).
#[derive(Debug)]
pub(crate) struct Json<T>(pub T);

impl<T: JsonSchema> JsonSchema for Json<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

impl<T: Serialize> IntoCallToolResult for Json<T> {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        let value = serde_json::to_value(self.0).map_err(|e| {
            ErrorData::internal_error(format!("the answer did not serialize: {e}"), None)
        })?;
        let mut result = CallToolResult::success(Vec::new());
        result.structured_content = Some(value);
        Ok(result.into())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::mcp::render;

    #[derive(Serialize, JsonSchema)]
    struct Answer {
        server: &'static str,
        note: Option<&'static str>,
    }

    #[test]
    fn the_answer_is_structured_and_its_text_is_the_rendering() {
        let answer = Json(Answer {
            server: "main",
            note: None,
        });
        let mut response = answer.into_call_tool_result().unwrap();
        let CallToolResponse::Complete(result) = &response else {
            panic!("not a complete result: {response:?}");
        };
        assert_eq!(
            result.structured_content,
            Some(json!({"server": "main", "note": null}))
        );
        assert!(result.content.is_empty(), "no JSON text to throw away");
        assert_eq!(result.is_error, Some(false));

        render::shape(&mut response);
        let CallToolResponse::Complete(result) = &response else {
            panic!("not a complete result: {response:?}");
        };
        assert_eq!(result.structured_content, Some(json!({"server": "main"})));
        let text = result.content[0].as_text().map(|t| t.text.as_str());
        assert_eq!(text, Some("server: main"));
    }

    #[test]
    fn the_schema_is_the_answers() {
        assert_eq!(
            schemars::schema_for!(Json<Answer>),
            schemars::schema_for!(Answer)
        );
    }
}
