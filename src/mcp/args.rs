//! Helpers for tool input structs.
//!
//! Tool inputs are plain structs with `#[derive(Deserialize, JsonSchema)]` and
//! `#[serde(deny_unknown_fields)]`, taken with rmcp's `Parameters<T>` extractor; an unknown or
//! malformed field becomes an `invalid_arguments` tool error naming the field
//! (see [`super::error::normalize_argument_error`]).
//!
//! Some clients send a dict-valued argument as a JSON-encoded string (`"{\"A\": \"1\"}"`
//! instead of `{"A": "1"}`). Dict fields accept both with:
//!
//! ```
//! use std::collections::BTreeMap;
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct CreateSessionInput {
//!     #[serde(default, deserialize_with = "muxgate::mcp::args::option_object_or_json_string")]
//!     environment: Option<BTreeMap<String, String>>,
//! }
//! ```
//!
//! The schema still advertises the object form; the string form is tolerance, not API.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Deserializes `T` from its JSON form or from a string holding that JSON.
pub fn object_or_json_string<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    from_value_or_json_string(value).map_err(D::Error::custom)
}

/// Like [`object_or_json_string`] for an optional field (use with `#[serde(default)]`).
/// An explicit `null` is `None`.
pub fn option_object_or_json_string<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    match Value::deserialize(deserializer)? {
        Value::Null => Ok(None),
        value => from_value_or_json_string(value)
            .map(Some)
            .map_err(D::Error::custom),
    }
}

fn from_value_or_json_string<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    match value {
        Value::String(text) => serde_json::from_str(&text)
            .map_err(|e| format!("a string given for this object must contain JSON: {e}")),
        value => serde_json::from_value(value).map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Input {
        #[serde(deserialize_with = "object_or_json_string")]
        env: BTreeMap<String, String>,
        #[serde(default, deserialize_with = "option_object_or_json_string")]
        filters: Option<BTreeMap<String, u32>>,
    }

    fn parse(value: serde_json::Value) -> Result<Input, String> {
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    #[test]
    fn dicts_arrive_as_objects_or_json_strings() {
        let expected = Input {
            env: BTreeMap::from([("A".into(), "1".into())]),
            filters: Some(BTreeMap::from([("n".into(), 2)])),
        };
        assert_eq!(
            parse(json!({"env": {"A": "1"}, "filters": {"n": 2}})),
            Ok(expected)
        );
        let from_strings = parse(json!({"env": "{\"A\": \"1\"}", "filters": "{\"n\": 2}"}));
        assert_eq!(
            from_strings.unwrap().filters,
            Some(BTreeMap::from([("n".into(), 2)]))
        );
    }

    #[test]
    fn optional_dicts_may_be_absent_or_null() {
        assert_eq!(parse(json!({"env": {}})).unwrap().filters, None);
        assert_eq!(
            parse(json!({"env": {}, "filters": null})).unwrap().filters,
            None
        );
    }

    #[test]
    fn bad_strings_and_bad_values_are_explained() {
        let err = parse(json!({"env": "not json"})).unwrap_err();
        assert!(err.contains("must contain JSON"), "{err}");
        let err = parse(json!({"env": {"A": 1}})).unwrap_err();
        assert!(err.contains("invalid type"), "{err}");
        let err = parse(json!({"env": {}, "extra": 1})).unwrap_err();
        assert!(err.contains("unknown field `extra`"), "{err}");
    }
}
