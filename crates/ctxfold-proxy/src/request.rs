//! A request body split without building its messages: every top-level key
//! but the messages as a JSON value, each message as its raw text.
//!
//! An agent's requests repeat the whole conversation every time. Building
//! JSON values for hundreds of kilobytes of messages that the proxy read on
//! the last request is most of its cost; scanning them is a fraction of
//! it. The book compares each message's raw text with what it kept of the
//! conversation's last request and reads only the messages that differ.

use std::collections::HashMap;
use std::fmt;

use ctxfold_core::Object;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// A request body with its messages kept as raw text.
pub struct Split<'a> {
    /// The body's keys in order, the messages' key holding `null`.
    pub head: Object,
    /// The text of each of those keys' values as sent (the messages' key
    /// left out; a repeated key: its last value, as in `head`), so a body
    /// written again can carry the client's own bytes for them.
    pub head_text: HashMap<String, &'a RawValue>,
    /// Each message's text, as sent.
    pub messages: Vec<&'a RawValue>,
}

/// Split `body` at its `key` (`messages`, `input`). `Ok(None)`: the body
/// is JSON but not an object whose `key` is an array, given once; it is
/// read whole then, with the usual errors. `Err`: not JSON.
pub fn split<'a>(body: &'a [u8], key: &str) -> Result<Option<Split<'a>>, String> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let found = de
        .deserialize_any(BodyVisitor { key })
        .and_then(|s| de.end().map(|()| s))
        .map_err(|e| format!("not JSON ({e})"))?;
    Ok(found)
}

/// A visitor's answer to any scalar: not what it reads (`None`).
macro_rules! scalars_are_none {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    };
}

struct BodyVisitor<'k> {
    key: &'k str,
}

impl<'de> Visitor<'de> for BodyVisitor<'_> {
    type Value = Option<Split<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut head = Object::new();
        let mut head_text = HashMap::new();
        let mut messages = None;
        let mut usable = true;
        while let Some(k) = map.next_key::<String>()? {
            if k == self.key {
                let m = map.next_value_seed(Messages)?;
                if messages.is_some() || m.is_none() {
                    usable = false;
                }
                messages = m;
                head.insert(k, Value::Null);
            } else {
                let raw: &'de RawValue = map.next_value()?;
                let v: Value = serde_json::from_str(raw.get()).map_err(de::Error::custom)?;
                head_text.insert(k.clone(), raw);
                head.insert(k, v);
            }
        }
        Ok(match messages {
            Some(messages) if usable => Some(Split {
                head,
                head_text,
                messages,
            }),
            _ => None,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    scalars_are_none!();
}

/// The messages value: an array's elements as raw text, or `None` for
/// anything else (consumed whole).
struct Messages;

impl<'de> DeserializeSeed<'de> for Messages {
    type Value = Option<Vec<&'de RawValue>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(MessagesVisitor)
    }
}

struct MessagesVisitor;

impl<'de> Visitor<'de> for MessagesVisitor {
    type Value = Option<Vec<&'de RawValue>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(64));
        while let Some(m) = seq.next_element::<&'de RawValue>()? {
            out.push(m);
        }
        Ok(Some(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    scalars_are_none!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_messages_are_raw_and_the_rest_is_kept_in_order() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":"a \"b\""}, {"x": [1,2]}],"stream":true}"#;
        let s = split(body, "messages").unwrap().unwrap();
        let keys: Vec<&str> = s.head.keys().map(String::as_str).collect();
        assert_eq!(keys, ["model", "messages", "stream"]);
        assert_eq!(s.head["messages"], Value::Null);
        assert_eq!(s.head["stream"], Value::Bool(true));
        assert_eq!(s.head_text["model"].get(), r#""m""#);
        assert!(!s.head_text.contains_key("messages"));
        let raw: Vec<&str> = s.messages.iter().map(|m| m.get()).collect();
        assert_eq!(
            raw,
            [r#"{"role":"user","content":"a \"b\""}"#, r#"{"x": [1,2]}"#]
        );
    }

    #[test]
    fn what_is_not_an_object_with_one_array_is_read_whole() {
        for body in [
            &br#"[1,2]"#[..],
            br#""text""#,
            br#"{"model":"m"}"#,
            br#"{"input":"just text"}"#,
            br#"{"input":{"a":1}}"#,
            br#"{"input":[],"input":[]}"#,
        ] {
            assert!(split(body, "input").unwrap().is_none(), "{body:?}");
        }
        for body in [&br#"{"messages":[1,"#[..], b"{} x", b"", br#"{"a":tru}"#] {
            let e = split(body, "messages").err().expect("not JSON");
            assert!(e.contains("not JSON"), "{e}");
        }
    }
}
