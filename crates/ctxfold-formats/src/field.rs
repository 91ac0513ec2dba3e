//! [`Field`]: a field of a JSON object read leniently, shared by the
//! request formats and the agents' session files (its own module, so that
//! neither imports the other for it).

use serde::Deserialize;

/// A field of a JSON object as ctxfold reads it (an agent's line, a
/// message of a request): a string, a flag, `null`, or what else it is, so
/// an object of an unexpected shape still reads and an error can say what
/// was found. Borrowed from the parsed JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) enum Field<'a> {
    /// The key is not there.
    #[default]
    Missing,
    /// `null`.
    Null,
    /// A string.
    Str(&'a str),
    /// A string that could not be borrowed (not read from parsed JSON).
    Unborrowed,
    /// `true` or `false`.
    Bool(bool),
    /// A whole number from 0.
    U64(u64),
    /// Another number.
    Number,
    /// An array.
    Array,
    /// An object.
    Object,
}

impl<'a> Field<'a> {
    /// The string, if it is one.
    pub(crate) fn str(self) -> Option<&'a str> {
        match self {
            Field::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The flag, if it is one.
    pub(crate) fn bool(self) -> Option<bool> {
        match self {
            Field::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// Whether the key is there (`null` included).
    pub(crate) fn present(self) -> bool {
        self != Field::Missing
    }

    /// What it is, as an error says it (`describe`'s words).
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Field::Missing => "nothing",
            Field::Null => "null",
            Field::Str(_) | Field::Unborrowed => "a string",
            Field::Bool(_) => "a boolean",
            Field::U64(_) | Field::Number => "a number",
            Field::Array => "an array",
            Field::Object => "an object",
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Field<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Field<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Field<'a>, E> {
                Ok(Field::Str(s))
            }
            // Read from parsed JSON, strings are always borrowed; another
            // string cannot be kept.
            fn visit_str<E>(self, _: &str) -> Result<Field<'a>, E> {
                Ok(Field::Unborrowed)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Field<'a>, E> {
                Ok(Field::Bool(b))
            }
            fn visit_unit<E>(self) -> Result<Field<'a>, E> {
                Ok(Field::Null)
            }
            fn visit_none<E>(self) -> Result<Field<'a>, E> {
                Ok(Field::Null)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Field<'a>, E> {
                Ok(Field::Number)
            }
            fn visit_u64<E>(self, n: u64) -> Result<Field<'a>, E> {
                Ok(Field::U64(n))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Field<'a>, E> {
                Ok(Field::Number)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Field<'a>, A::Error> {
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Field::Array)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Field<'a>, A::Error> {
                while a
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Field::Object)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}
