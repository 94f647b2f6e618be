//! A typed row as the JSON object a listing sends, built with only the fields a call needs.
//!
//! A `list_panes` row has 29 fields and its default view shows 12. Serializing a whole row
//! into a `serde_json` object and then dropping what is not shown spent most of a listing's
//! own CPU on maps of fields nobody reads (`docs/internals/transport-cost.md`). [`object_of`]
//! serializes a row through [`Fields`], a serializer that accepts one thing, a struct or map
//! (flattened members included), and builds the value of a field only when the call needs it.

use serde::Serialize;
use serde::ser::{self, Impossible, SerializeMap, SerializeStruct, Serializer};
use serde_json::{Map, Value};

use super::error::{ToolError, ToolErrorKind};

/// A typed row as a JSON object with every field.
pub(crate) fn object(row: &impl Serialize) -> Result<Map<String, Value>, ToolError> {
    object_of(row, |_| true)
}

/// A typed row as a JSON object with only the fields `needed` names, in the row's order.
pub(crate) fn object_of(
    row: &impl Serialize,
    needed: impl Fn(&str) -> bool,
) -> Result<Map<String, Value>, ToolError> {
    row.serialize(Fields { needed: &needed }).map_err(|error| {
        ToolError::new(
            ToolErrorKind::Internal,
            format!("a row could not be serialized: {error}"),
            "retry",
        )
    })
}

/// The serializer of one row: a struct or a map becomes an object; anything else is an error.
struct Fields<'a> {
    needed: &'a dyn Fn(&str) -> bool,
}

/// An object being built, with the key of a map entry whose value comes next, if needed.
struct Object<'a> {
    needed: &'a dyn Fn(&str) -> bool,
    members: Map<String, Value>,
    key: Option<String>,
}

/// The serializer of a map entry's key (a flattened member's name): its text when the entry
/// is needed, without building the name of one that is not.
struct Key<'a> {
    needed: &'a dyn Fn(&str) -> bool,
}

impl<'a> Fields<'a> {
    fn object(self, len: Option<usize>) -> Object<'a> {
        Object {
            needed: self.needed,
            members: Map::with_capacity(len.unwrap_or(0)),
            key: None,
        }
    }
}

fn not_an_object() -> serde_json::Error {
    ser::Error::custom("a row must serialize as an object")
}

fn not_a_name() -> serde_json::Error {
    ser::Error::custom("a row's keys must be strings")
}

/// The serializer methods of everything a serializer refuses, each answering `$refusal()`.
macro_rules! refuse {
    ($refusal:ident: $($method:ident($($arg:ty),*) -> $answer:ty;)*) => {$(
        fn $method(self, $(_: $arg),*) -> Result<$answer, Self::Error> {
            Err($refusal())
        }
    )*};
}

/// The methods of everything but a struct, a map, a string and a newtype, refused.
macro_rules! refuse_the_rest {
    ($refusal:ident) => {
        refuse! { $refusal:
            serialize_bool(bool) -> Self::Ok;
            serialize_i8(i8) -> Self::Ok;
            serialize_i16(i16) -> Self::Ok;
            serialize_i32(i32) -> Self::Ok;
            serialize_i64(i64) -> Self::Ok;
            serialize_u8(u8) -> Self::Ok;
            serialize_u16(u16) -> Self::Ok;
            serialize_u32(u32) -> Self::Ok;
            serialize_u64(u64) -> Self::Ok;
            serialize_f32(f32) -> Self::Ok;
            serialize_f64(f64) -> Self::Ok;
            serialize_char(char) -> Self::Ok;
            serialize_bytes(&[u8]) -> Self::Ok;
            serialize_none() -> Self::Ok;
            serialize_unit() -> Self::Ok;
            serialize_unit_struct(&'static str) -> Self::Ok;
            serialize_unit_variant(&'static str, u32, &'static str) -> Self::Ok;
            serialize_seq(Option<usize>) -> Self::SerializeSeq;
            serialize_tuple(usize) -> Self::SerializeTuple;
            serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct;
            serialize_tuple_variant(&'static str, u32, &'static str, usize)
                -> Self::SerializeTupleVariant;
            serialize_struct_variant(&'static str, u32, &'static str, usize)
                -> Self::SerializeStructVariant;
        }

        fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<Self::Ok, Self::Error> {
            Err($refusal())
        }

        fn serialize_newtype_struct<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            value: &T,
        ) -> Result<Self::Ok, Self::Error> {
            value.serialize(self)
        }

        fn serialize_newtype_variant<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<Self::Ok, Self::Error> {
            Err($refusal())
        }
    };
}

impl<'a> Serializer for Fields<'a> {
    type Ok = Map<String, Value>;
    type Error = serde_json::Error;
    type SerializeSeq = Impossible<Self::Ok, Self::Error>;
    type SerializeTuple = Impossible<Self::Ok, Self::Error>;
    type SerializeTupleStruct = Impossible<Self::Ok, Self::Error>;
    type SerializeTupleVariant = Impossible<Self::Ok, Self::Error>;
    type SerializeMap = Object<'a>;
    type SerializeStruct = Object<'a>;
    type SerializeStructVariant = Impossible<Self::Ok, Self::Error>;

    fn serialize_map(self, len: Option<usize>) -> Result<Object<'a>, Self::Error> {
        Ok(self.object(len))
    }

    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Object<'a>, Self::Error> {
        Ok(self.object(Some(len)))
    }

    fn serialize_str(self, _: &str) -> Result<Self::Ok, Self::Error> {
        Err(not_an_object())
    }

    refuse_the_rest!(not_an_object);
}

impl Serializer for Key<'_> {
    type Ok = Option<String>;
    type Error = serde_json::Error;
    type SerializeSeq = Impossible<Self::Ok, Self::Error>;
    type SerializeTuple = Impossible<Self::Ok, Self::Error>;
    type SerializeTupleStruct = Impossible<Self::Ok, Self::Error>;
    type SerializeTupleVariant = Impossible<Self::Ok, Self::Error>;
    type SerializeMap = Impossible<Self::Ok, Self::Error>;
    type SerializeStruct = Impossible<Self::Ok, Self::Error>;
    type SerializeStructVariant = Impossible<Self::Ok, Self::Error>;

    fn serialize_str(self, key: &str) -> Result<Self::Ok, Self::Error> {
        Ok((self.needed)(key).then(|| key.to_owned()))
    }

    refuse! { not_a_name:
        serialize_map(Option<usize>) -> Self::SerializeMap;
        serialize_struct(&'static str, usize) -> Self::SerializeStruct;
    }

    refuse_the_rest!(not_a_name);
}

impl SerializeStruct for Object<'_> {
    type Ok = Map<String, Value>;
    type Error = serde_json::Error;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        if (self.needed)(key) {
            let value = serde_json::to_value(value)?;
            self.members.insert(key.to_owned(), value);
        }
        Ok(())
    }

    fn end(self) -> Result<Self::Ok, Self::Error> {
        Ok(self.members)
    }
}

impl SerializeMap for Object<'_> {
    type Ok = Map<String, Value>;
    type Error = serde_json::Error;

    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), Self::Error> {
        self.key = key.serialize(Key {
            needed: self.needed,
        })?;
        Ok(())
    }

    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Self::Error> {
        if let Some(key) = self.key.take() {
            let value = serde_json::to_value(value)?;
            self.members.insert(key, value);
        }
        Ok(())
    }

    fn end(self) -> Result<Self::Ok, Self::Error> {
        Ok(self.members)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Serialize)]
    struct Inner {
        id: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<i32>,
        path: String,
    }

    #[derive(Serialize)]
    struct Row {
        #[serde(flatten)]
        inner: Inner,
        pid: u32,
        tags: Vec<&'static str>,
    }

    fn row(status: Option<i32>) -> Row {
        Row {
            inner: Inner {
                id: "%1",
                status,
                path: "/tmp".to_owned(),
            },
            pid: 7,
            tags: vec!["a"],
        }
    }

    #[test]
    fn every_field_is_what_serde_json_makes_of_the_row() {
        for status in [None, Some(3)] {
            let whole = object(&row(status)).unwrap();
            assert_eq!(
                Value::Object(whole),
                serde_json::to_value(row(status)).unwrap()
            );
        }
    }

    #[test]
    fn only_the_needed_fields_are_built_in_the_rows_order() {
        let needed = ["tags", "id", "status"];
        let some = object_of(&row(Some(3)), |key| needed.contains(&key)).unwrap();
        assert_eq!(
            some.keys().collect::<Vec<_>>(),
            ["id", "status", "tags"],
            "{some:?}"
        );
        assert_eq!(
            Value::Object(some),
            json!({"id": "%1", "status": 3, "tags": ["a"]})
        );
        let plain = object_of(&row(None), |key| key == "pid").unwrap();
        assert_eq!(Value::Object(plain), json!({"pid": 7}));
    }

    #[test]
    fn what_is_not_an_object_is_refused() {
        for refused in [
            object(&3),
            object(&"text"),
            object(&vec![1]),
            object(&None::<u8>),
        ] {
            let error = refused.unwrap_err();
            assert_eq!(error.kind, ToolErrorKind::Internal);
            assert!(error.message.contains("object"), "{}", error.message);
        }
        let numbered = std::collections::BTreeMap::from([(1, 2)]);
        assert!(object(&numbered).unwrap_err().message.contains("strings"));
    }
}
