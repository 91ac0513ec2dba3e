//! The wire shapes of the model APIs ctxfold reads and writes, as serde
//! types: [`chat`] (OpenAI chat completions), [`responses`] (OpenAI
//! Responses), [`anthropic`] (Anthropic Messages) and [`gemini`] (Google's
//! Gemini API). No I/O, no async.
//!
//! Every type keeps what it does not name: an object's other keys in its
//! `extra` (flattened, in the order they were read), a block, item or
//! event of a type it does not know as its JSON value (`Other`). Keys are
//! written in the order the fields are declared, then `extra`: the order
//! ctxfold has always written these shapes in. Where a client's own key
//! order must come back (a Responses item read from a request), the item
//! is written over the object it was read from with [`write_over`].
//!
//! The formats (import and export of transcripts, the proxy's requests),
//! the providers (the agent host's requests, answers and streams) and the
//! proxy build their wire JSON from these types only; `scripts/check-wire`
//! fails on wire JSON built by hand anywhere else.

pub mod anthropic;
pub mod chat;
pub mod context_management;
pub mod emulated;
pub mod error;
pub mod gemini;
pub mod loose;
mod request_body;
pub mod responses;

pub use request_body::RequestBody;
use serde::{Deserialize, Serialize};
pub use serde_json::{Map, Value};

/// The roles a message may have, in the three APIs (`chat::role` and
/// `anthropic::role` are this module).
pub mod role {
    /// `system`: chat's; not Messages' (its system prompt is the body's
    /// `system`), but Claude Code sends one among the messages.
    pub const SYSTEM: &str = "system";
    /// `developer`: OpenAI's newer name for system.
    pub const DEVELOPER: &str = "developer";
    /// `user` (in Messages, tool results too).
    pub const USER: &str = "user";
    /// `assistant`.
    pub const ASSISTANT: &str = "assistant";
    /// `tool`: a tool's result, in chat.
    pub const TOOL: &str = "tool";
}

/// A JSON object, in the order its keys were read.
pub type Object = Map<String, Value>;

/// A message as Anthropic Messages and OpenAI Responses both write it: a
/// role, its content (each API's own: [`anthropic::Message`],
/// [`responses::Message`]), and every other key.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RoleMessage<C> {
    /// Its role (see each API's `role`).
    pub role: String,
    /// Its content.
    pub content: C,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

impl<C: IntoValue> IntoValue for RoleMessage<C> {
    fn into_value(self) -> Value {
        let mut o = Object::new();
        o.insert("role".into(), Value::String(self.role));
        o.insert("content".into(), self.content.into_value());
        put_extra(&mut o, self.extra);
        Value::Object(o)
    }
}

/// `t` as a JSON value.
pub fn value<T: Serialize>(t: &T) -> Value {
    // Cannot fail: every type here has string keys and holds JSON values,
    // which always serialize into a `Value`.
    serde_json::to_value(t).unwrap_or(Value::Null)
}

/// `t` as a JSON object (empty if it is not one).
pub fn object<T: Serialize>(t: &T) -> Object {
    match value(t) {
        Value::Object(o) => o,
        _ => Object::new(),
    }
}

/// `extra` without the keys in `set`: what a typed object keeps besides
/// the fields it sets itself, so no key is written twice (the field's
/// value wins, where the field is; the other keys stay in their order).
pub fn extra_except(mut extra: Object, set: &[&str]) -> Object {
    if set.iter().any(|k| extra.contains_key(*k)) {
        extra.retain(|k, _| !set.contains(&k.as_str()));
    }
    extra
}

/// `fields` (an object) written over `template`: each key of the template
/// keeps its place and takes the field's value when `fields` has one;
/// keys only `fields` has follow, in its order. So an item read from a
/// request, its own fields blanked and set again, comes back with the
/// client's key order.
pub fn write_over(mut template: Object, fields: Value) -> Object {
    if let Value::Object(fields) = fields {
        for (k, v) in fields {
            template.insert(k, v);
        }
    }
    template
}

/// Whether `v` is `false`, for `skip_serializing_if`.
pub(crate) fn is_false(v: &bool) -> bool {
    !*v
}

/// An `Option` field that tells a `null` from a missing key: `Some(..)`
/// for any value present, `null` included (with `#[serde(default)]`, a
/// missing key is `None`).
pub(crate) fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// An enum of types tagged by a `type` key, each variant a struct with an
/// `extra`, plus `Other(Value)`: a type this model does not name, or a
/// known one whose fields do not read, kept as it came. Written with the
/// tag first, then the struct's fields.
macro_rules! tagged {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($(#[$vm:meta])* $tag:literal => $variant:ident($ty:ty),)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize)]
        #[serde(tag = "type")]
        $vis enum $name {
            $($(#[$vm])* #[serde(rename = $tag)] $variant($ty),)*
            /// A type this model does not name (or a known one whose
            /// fields did not read), kept as it came.
            #[serde(untagged)]
            Other($crate::Value),
        }

        impl $name {
            /// Its `type`, if it has one.
            pub fn kind(&self) -> Option<&str> {
                match self {
                    $($name::$variant(_) => Some($tag),)*
                    $name::Other(v) => v.get("type").and_then($crate::Value::as_str),
                }
            }

            /// Read `v`: a known `type` whose fields read is typed, the
            /// rest is [`Other`](Self::Other).
            pub fn from_value(v: $crate::Value) -> Self {
                let tag = v.get("type").and_then($crate::Value::as_str).unwrap_or("");
                match tag {
                    $($tag => match <$ty as serde::Deserialize>::deserialize(&v) {
                        Ok(mut x) => {
                            // The tag is the variant, not an extra key.
                            x.extra.shift_remove("type");
                            $name::$variant(x)
                        }
                        Err(_) => $name::Other(v),
                    },)*
                    _ => $name::Other(v),
                }
            }

            /// Read `text`, the JSON of one whose type the caller already
            /// knows to be `tag` (a stream's `event:` line): straight into
            /// that type, without the detour through a JSON value that
            /// [`from_value`](Self::from_value) takes (a stream's many
            /// small events). One without a `type` is read as of type
            /// `tag`; one whose `type` or fields say otherwise as
            /// `from_value` reads it.
            pub fn from_str_as(tag: &str, text: &str) -> serde_json::Result<Self> {
                match tag {
                    $($tag => {
                        if let Ok(mut x) = serde_json::from_str::<$ty>(text) {
                            match x.extra.shift_remove("type") {
                                None => return Ok($name::$variant(x)),
                                Some($crate::Value::String(t)) if t == tag => {
                                    return Ok($name::$variant(x));
                                }
                                _ => {}
                            }
                        }
                    })*
                    _ => {}
                }
                serde_json::from_str::<$crate::Value>(text).map(Self::from_value)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                <$crate::Value as serde::Deserialize>::deserialize(d).map($name::from_value)
            }
        }
    };
}
pub(crate) use tagged;

/// What [`value`] gives, made by moving the fields in rather than
/// copying them: for the shapes written on every request (a conversation's
/// messages are most of a megabyte). Each implementation writes its keys
/// as the type's `Serialize` does (a test checks them against each other).
pub trait IntoValue {
    /// The JSON value, as [`value`] writes it.
    fn into_value(self) -> Value;
}

impl<T: IntoValue> IntoValue for Vec<T> {
    fn into_value(self) -> Value {
        Value::Array(self.into_iter().map(IntoValue::into_value).collect())
    }
}

/// Put `v` under `k` unless it is `None`.
pub(crate) fn put<T: IntoValue>(o: &mut Object, k: &str, v: Option<T>) {
    if let Some(v) = v {
        o.insert(k.to_owned(), v.into_value());
    }
}

/// `extra` after the fields (a key already written keeps the field's
/// value, as [`extra_except`] would have left it out).
pub(crate) fn put_extra(o: &mut Object, extra: Object) {
    for (k, v) in extra {
        o.entry(k).or_insert(v);
    }
}

impl IntoValue for String {
    fn into_value(self) -> Value {
        Value::String(self)
    }
}

impl IntoValue for Value {
    fn into_value(self) -> Value {
        self
    }
}

impl IntoValue for bool {
    fn into_value(self) -> Value {
        Value::Bool(self)
    }
}
