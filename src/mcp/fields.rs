//! Which fields a listing's rows carry: what an agent uses by default, more on request.
//!
//! A listing row knows two dozen things about a pane; an agent choosing where to type needs a
//! handful, and pays for the rest in every answer. A [`RowShape`] names the fields shown by
//! default and those shown only when they say something (a flag that is set, a status that is
//! known); `fields` asks for exactly the fields named (`["all"]`: every field). A row's id is
//! always there, so an answer can always be acted on.

use muxgate_mux::lines::excerpt;
use serde::Serialize;
use serde_json::{Map, Value};

use super::error::ToolError;
use super::row_object::object_of;

/// The default view of a listing's rows (or of one answer, such as a snapshot).
#[derive(Debug)]
pub(crate) struct RowShape {
    /// In every view, whatever was asked: the id, and what says where the row comes from.
    pub always: &'static [&'static str],
    /// Every field a row has, in order.
    pub all: &'static [&'static str],
    /// Shown by default.
    pub default: &'static [&'static str],
    /// Shown by default only when set: not false, empty or null.
    pub when_set: &'static [&'static str],
}

/// The fields one call asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Selection {
    /// The shape's default view.
    Default,
    /// Every field.
    All,
    /// Exactly these (and `id`).
    Only(Vec<String>),
}

impl RowShape {
    /// Parses a call's `fields` argument; an unknown field is refused, naming the known ones.
    pub(crate) fn select(
        &self,
        fields: Option<&[String]>,
        tool: &str,
    ) -> Result<Selection, ToolError> {
        let Some(fields) = fields else {
            return Ok(Selection::Default);
        };
        if fields.iter().any(|f| f == "all") {
            return Ok(Selection::All);
        }
        if let Some(unknown) = fields.iter().find(|f| !self.all.contains(&f.as_str())) {
            return Err(ToolError::invalid_arguments(
                format!("unknown field {:?} in {tool}'s fields", excerpt(unknown)),
                format!("name some of: {}; or [\"all\"]", self.all.join(", ")),
            ));
        }
        Ok(Selection::Only(fields.to_vec()))
    }

    /// The row with the selected fields only (removed in place: a listing projects every row).
    pub(crate) fn project(
        &self,
        mut row: Map<String, Value>,
        selection: &Selection,
    ) -> Map<String, Value> {
        row.retain(|key, value| self.shows(key, selection, || is_set(value)));
        row
    }

    /// Whether `field` may be shown in `selection`: what a row must carry before
    /// [`Self::project`] (a field shown only when set is carried, to be looked at).
    pub(crate) fn may_show(&self, field: &str, selection: &Selection) -> bool {
        self.shows(field, selection, || true)
    }

    /// Whether `field` is shown in `selection`, when `set` says whether its value is set.
    fn shows(&self, field: &str, selection: &Selection, set: impl FnOnce() -> bool) -> bool {
        self.always.contains(&field)
            || match selection {
                Selection::All => true,
                Selection::Only(fields) => fields.iter().any(|f| f == field),
                Selection::Default => {
                    self.default.contains(&field) || (self.when_set.contains(&field) && set())
                }
            }
    }

    /// [`Self::project`] of a typed row, serialized first (only what it may show).
    pub(crate) fn shape(
        &self,
        row: &impl Serialize,
        selection: &Selection,
    ) -> Result<Map<String, Value>, ToolError> {
        object_of(row, |field| self.may_show(field, selection))
            .map(|row| self.project(row, selection))
    }
}

/// Test support: `fields` are exactly the fields `T` serializes (its schema's properties).
#[cfg(test)]
pub(crate) fn assert_fields_are<T: schemars::JsonSchema>(fields: &[&str]) {
    let schema = schemars::schema_for!(T);
    let mut properties: Vec<&str> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut named = fields.to_vec();
    properties.sort_unstable();
    named.sort_unstable();
    assert_eq!(named, properties, "the named fields against the row's");
}

/// Test support: `shape` names exactly the fields `T` serializes (its schema's properties),
/// so a field added to a row cannot be left out of its shape.
#[cfg(test)]
pub(crate) fn assert_shape_covers<T: schemars::JsonSchema>(shape: &RowShape) {
    assert_fields_are::<T>(shape.all);
    for field in shape
        .always
        .iter()
        .chain(shape.default)
        .chain(shape.when_set)
    {
        assert!(
            shape.all.contains(field),
            "{field} is not a field of the row"
        );
    }
}

fn is_set(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => false,
        Value::String(text) => !text.is_empty(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const SHAPE: RowShape = RowShape {
        always: &["id"],
        all: &["id", "name", "pid", "dead", "status"],
        default: &["id", "name"],
        when_set: &["dead", "status"],
    };

    fn row(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn the_default_view_shows_flags_only_when_set() {
        let quiet = row(json!({"id": "%1", "name": "a", "pid": 7, "dead": false, "status": null}));
        let dead = row(json!({"id": "%2", "name": "b", "pid": 8, "dead": true, "status": 1}));
        let default = SHAPE.select(None, "t").unwrap();
        assert_eq!(
            Value::Object(SHAPE.project(quiet, &default)),
            json!({"id": "%1", "name": "a"})
        );
        assert_eq!(
            Value::Object(SHAPE.project(dead, &default)),
            json!({"id": "%2", "name": "b", "dead": true, "status": 1})
        );
    }

    #[test]
    fn named_fields_come_with_the_id_and_all_means_all() {
        let full = json!({"id": "%1", "name": "a", "pid": 7, "dead": false, "status": null});
        let only = SHAPE.select(Some(&["pid".to_owned()]), "t").unwrap();
        assert_eq!(
            Value::Object(SHAPE.project(row(full.clone()), &only)),
            json!({"id": "%1", "pid": 7})
        );
        let all = SHAPE.select(Some(&["all".to_owned()]), "t").unwrap();
        assert_eq!(Value::Object(SHAPE.project(row(full.clone()), &all)), full);
    }

    #[test]
    fn an_unknown_field_is_refused_with_the_known_ones() {
        let error = SHAPE
            .select(Some(&["name".to_owned(), "colour".to_owned()]), "t")
            .unwrap_err();
        assert!(error.message.contains("\"colour\""), "{}", error.message);
        assert!(
            error.suggestion.contains("id, name, pid"),
            "{}",
            error.suggestion
        );
    }
}
