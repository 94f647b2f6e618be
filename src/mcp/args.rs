//! Helpers for tool input structs.
//!
//! Tool inputs are plain structs with `#[derive(Deserialize, JsonSchema)]` and
//! `#[serde(deny_unknown_fields)]`, taken with rmcp's `Parameters<T>` extractor; an unknown or
//! malformed field becomes an `invalid_arguments` tool error naming the field
//! (see [`super::error::normalize_argument_error`]).
//!
//! Some clients send a dict-valued argument as a JSON-encoded string (`"{\"A\": \"1\"}"`
//! instead of `{"A": "1"}`). A dict field's type is [`ObjectArg`], which accepts both
//! (`environment: Option<ObjectArg<BTreeMap<String, String>>>`; its tests show both forms).
//!
//! The schema still advertises the object form; the string form is tolerance, not API.

use std::borrow::Cow;
use std::ops::Deref;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A dict-valued argument `T`: given as a JSON object, or as a string holding that JSON.
/// An explicit `null` for an `Option<ObjectArg<T>>` is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ObjectArg<T>(pub T);

impl<T> Deref for ObjectArg<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for ObjectArg<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let parsed = match Value::deserialize(deserializer)? {
            Value::String(text) => serde_json::from_str(&text)
                .map_err(|e| format!("a string given for this object must contain JSON: {e}")),
            value => serde_json::from_value(value).map_err(|e| e.to_string()),
        };
        parsed.map(Self).map_err(D::Error::custom)
    }
}

/// The schema is `T`'s: the object form.
impl<T: JsonSchema> JsonSchema for ObjectArg<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Input {
        env: ObjectArg<BTreeMap<String, String>>,
        #[serde(default)]
        filters: Option<ObjectArg<BTreeMap<String, u32>>>,
    }

    fn parse(value: serde_json::Value) -> Result<Input, String> {
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    #[test]
    fn dicts_arrive_as_objects_or_json_strings() {
        let expected = Input {
            env: ObjectArg(BTreeMap::from([("A".into(), "1".into())])),
            filters: Some(ObjectArg(BTreeMap::from([("n".into(), 2)]))),
        };
        assert_eq!(
            parse(json!({"env": {"A": "1"}, "filters": {"n": 2}})),
            Ok(expected)
        );
        let from_strings = parse(json!({"env": "{\"A\": \"1\"}", "filters": "{\"n\": 2}"}));
        assert_eq!(
            from_strings.unwrap().filters,
            Some(ObjectArg(BTreeMap::from([("n".into(), 2)])))
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
