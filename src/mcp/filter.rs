//! Listing filters: `{"field": value, "field__op": value}`, as the reference server's
//! Django-style filters, applied to the rows a listing tool returns.
//!
//! A key names a field of the listing's output rows, optionally with an operator:
//! `exact` (default), `iexact`, `contains`, `icontains`, `startswith`, `istartswith`,
//! `endswith`, `iendswith`, `regex`, `iregex`, `in`, `nin` (value: a list), `gt`, `gte`, `lt`,
//! `lte` (numeric when both sides are numbers). All keys must match (AND). Values compare as
//! text: booleans as `true`/`false` (tmux's `1`/`0` are accepted too), numbers in decimal.
//!
//! Unknown fields or operators, bad regexes and wrong value types are refused before anything
//! runs, naming the valid fields. Filtering happens in the gateway after the one listing
//! command, so it never adds tmux commands.

use std::collections::BTreeMap;

use muxgate_mux::lines::excerpt;
use regex::{Regex, RegexBuilder};
use serde_json::Value;

use super::error::ToolError;

/// Longest regex source accepted, and the compiled-size ceiling (keeps a filter cheap).
const MAX_REGEX_LEN: usize = 512;
const REGEX_SIZE_LIMIT: usize = 1 << 20;

const OPERATORS: [&str; 16] = [
    "exact",
    "iexact",
    "contains",
    "icontains",
    "startswith",
    "istartswith",
    "endswith",
    "iendswith",
    "regex",
    "iregex",
    "in",
    "nin",
    "gt",
    "gte",
    "lt",
    "lte",
];

/// Parsed filters, ready to test rows.
#[derive(Debug, Default)]
pub(crate) struct Filters {
    conditions: Vec<Condition>,
}

#[derive(Debug)]
struct Condition {
    field: String,
    test: Test,
}

#[derive(Debug)]
enum Test {
    Exact(String, bool),
    Contains(String, bool),
    StartsWith(String, bool),
    EndsWith(String, bool),
    Regex(Regex),
    In(Vec<String>, bool),
    Compare(String, std::cmp::Ordering, bool),
}

impl Filters {
    /// Parses `filters` against the field names of the listing's rows.
    pub(crate) fn parse(
        filters: &BTreeMap<String, Value>,
        fields: &[&str],
        list_tool: &str,
    ) -> Result<Self, ToolError> {
        let mut conditions = Vec::with_capacity(filters.len());
        for (key, value) in filters {
            let (field, op) = match key.rsplit_once("__") {
                Some((field, op)) if OPERATORS.contains(&op) => (field, op),
                Some((_, op)) if !fields.contains(&key.as_str()) => {
                    return Err(ToolError::invalid_arguments(
                        format!("unknown filter operator {:?}", excerpt(op)),
                        format!("use one of: {}", OPERATORS.join(", ")),
                    ));
                }
                _ => (key.as_str(), "exact"),
            };
            if !fields.contains(&field) {
                return Err(ToolError::invalid_arguments(
                    format!("unknown filter field {:?}", excerpt(field)),
                    format!(
                        "filter on a field of {list_tool}'s rows: {}",
                        fields.join(", ")
                    ),
                ));
            }
            let test = Test::parse(op, value).map_err(|why| {
                ToolError::invalid_arguments(
                    format!("filter {:?}: {why}", excerpt(key)),
                    "pass a string, number or boolean (a list for __in / __nin)",
                )
            })?;
            conditions.push(Condition {
                field: field.to_owned(),
                test,
            });
        }
        Ok(Self { conditions })
    }

    /// Whether a condition tests `field`: the rows must carry it.
    pub(crate) fn tests(&self, field: &str) -> bool {
        self.conditions.iter().any(|c| c.field == field)
    }

    /// Whether a row (an output object) passes every condition.
    pub(crate) fn matches(&self, row: &serde_json::Map<String, Value>) -> bool {
        self.conditions.iter().all(|c| {
            let value = row.get(&c.field).map(text_of).unwrap_or_default();
            c.test.matches(&value)
        })
    }
}

impl Test {
    fn parse(op: &str, value: &Value) -> Result<Self, String> {
        let insensitive = op.starts_with('i') && op != "in";
        let text = || scalar(value).ok_or_else(|| "expects a string, number or boolean".to_owned());
        let folded = |s: String| if insensitive { s.to_lowercase() } else { s };
        Ok(match op {
            "exact" | "iexact" => Test::Exact(folded(text()?), insensitive),
            "contains" | "icontains" => Test::Contains(folded(text()?), insensitive),
            "startswith" | "istartswith" => Test::StartsWith(folded(text()?), insensitive),
            "endswith" | "iendswith" => Test::EndsWith(folded(text()?), insensitive),
            "regex" | "iregex" => {
                let source = text()?;
                if source.len() > MAX_REGEX_LEN {
                    return Err(format!("regex longer than {MAX_REGEX_LEN} bytes"));
                }
                let regex = RegexBuilder::new(&source)
                    .case_insensitive(insensitive)
                    .size_limit(REGEX_SIZE_LIMIT)
                    .build()
                    .map_err(|e| format!("invalid regex: {}", excerpt(&e.to_string())))?;
                Test::Regex(regex)
            }
            "in" | "nin" => {
                let Value::Array(items) = value else {
                    return Err("expects a list of values".to_owned());
                };
                let items = items
                    .iter()
                    .map(|v| scalar(v).ok_or_else(|| "list items must be scalars".to_owned()))
                    .collect::<Result<Vec<_>, _>>()?;
                Test::In(items, op == "in")
            }
            "gt" | "gte" | "lt" | "lte" => {
                let ordering = if op.starts_with('g') {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Less
                };
                Test::Compare(text()?, ordering, op.ends_with('e'))
            }
            _ => return Err(format!("unknown operator {op}")),
        })
    }

    fn matches(&self, value: &str) -> bool {
        let fold = |insensitive: bool| {
            if insensitive {
                value.to_lowercase()
            } else {
                value.to_owned()
            }
        };
        match self {
            Test::Exact(want, i) => same(&fold(*i), want),
            Test::Contains(want, i) => fold(*i).contains(want.as_str()),
            Test::StartsWith(want, i) => fold(*i).starts_with(want.as_str()),
            Test::EndsWith(want, i) => fold(*i).ends_with(want.as_str()),
            Test::Regex(regex) => regex.is_match(value),
            Test::In(items, inside) => items.iter().any(|item| same(value, item)) == *inside,
            Test::Compare(bound, ordering, or_equal) => {
                let order = match (value.parse::<f64>(), bound.parse::<f64>()) {
                    (Ok(a), Ok(b)) => a.partial_cmp(&b),
                    _ => Some(value.cmp(bound.as_str())),
                };
                order == Some(*ordering) || (*or_equal && order == Some(std::cmp::Ordering::Equal))
            }
        }
    }
}

/// Equality that also takes tmux's `1`/`0` for booleans.
fn same(value: &str, want: &str) -> bool {
    value == want
        || matches!(
            (value, want),
            ("true", "1") | ("false", "0") | ("1", "true") | ("0", "false")
        )
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn text_of(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const FIELDS: &[&str] = &["id", "title", "active", "width", "current_command"];

    fn filters(value: Value) -> Result<Filters, ToolError> {
        let map: BTreeMap<String, Value> = serde_json::from_value(value).unwrap();
        Filters::parse(&map, FIELDS, "list_panes")
    }

    fn row() -> Value {
        json!({"id": "%3", "title": "Build Log", "active": true, "width": 120, "current_command": "vim"})
    }

    #[test]
    fn every_operator_matches_as_documented() {
        let passing = json!({
            "id": "%3", "title__icontains": "build", "title__contains": "Log",
            "title__startswith": "Bu", "title__iendswith": "LOG", "title__iexact": "build log",
            "active": "1", "width__gte": 120, "width__lt": "121", "width__gt": 99,
            "current_command__in": ["vim", "nvim"], "current_command__nin": ["bash"],
            "title__regex": "^B.*g$", "title__iregex": "^build",
        });
        assert!(
            filters(passing)
                .unwrap()
                .matches(row().as_object().unwrap())
        );
        for failing in [
            json!({"id": "%4"}),
            json!({"title__contains": "build"}),
            json!({"active": false}),
            json!({"width__lte": 100}),
            json!({"current_command__in": ["bash"]}),
            json!({"title__regex": "^x"}),
        ] {
            assert!(
                !filters(failing.clone())
                    .unwrap()
                    .matches(row().as_object().unwrap()),
                "{failing}"
            );
        }
        assert!(
            filters(json!({})).unwrap().matches(&serde_json::Map::new()),
            "no filter passes every row"
        );
    }

    #[test]
    fn mistakes_are_named() {
        let err = filters(json!({"nope": 1})).unwrap_err();
        assert!(err.message.contains("nope") && err.suggestion.contains("current_command"));
        let err = filters(json!({"title__like": "x"})).unwrap_err();
        assert!(err.message.contains("like") && err.suggestion.contains("icontains"));
        let err = filters(json!({"title__regex": "("})).unwrap_err();
        assert!(err.message.contains("invalid regex"), "{}", err.message);
        let err = filters(json!({"title__in": "x"})).unwrap_err();
        assert!(err.message.contains("list"), "{}", err.message);
        let err = filters(json!({"title": {"a": 1}})).unwrap_err();
        assert!(err.message.contains("string, number"), "{}", err.message);
    }

    #[test]
    fn field_names_with_double_underscores_still_work() {
        let map: BTreeMap<String, Value> =
            serde_json::from_value(json!({"a__b": "x", "a__b__contains": "x"})).unwrap();
        let parsed = Filters::parse(&map, &["a__b"], "t").unwrap();
        assert!(parsed.matches(json!({"a__b": "x"}).as_object().unwrap()));
    }
}
