//! The records most of a log is made of, read straight into their typed
//! form: no JSON map is built per record. Only a line holding exactly the
//! fields a record of its type has, each well-formed, is read here; any
//! other line (unknown fields, overlays, malformed fields, duplicate
//! keys) goes the general way, so both read a line the same.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{Body, JsonText, Record, Ts};

/// Not a line for this reader: the general one takes it.
fn other<E: de::Error>() -> E {
    E::custom("not a common record")
}

pub(super) fn read(line: &str) -> Option<Record> {
    let mut de = serde_json::Deserializer::from_str(line);
    let r = de.deserialize_map(Fields).ok()?;
    de.end().ok()?;
    Some(r)
}

struct Fields;

/// Set `slot` once; a key given twice goes the general way.
fn once<T, E: de::Error>(slot: &mut Option<T>, v: T) -> Result<(), E> {
    if slot.is_some() {
        return Err(other());
    }
    *slot = Some(v);
    Ok(())
}

impl<'de> Visitor<'de> for Fields {
    type Value = Record;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a record object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Record, A::Error> {
        let (mut seq, mut ts, mut kind) = (None, None, None);
        let (mut content, mut author, mut id, mut name) = (None, None, None, None);
        let (mut arguments, mut is_error, mut metadata) = (None, None, None);
        // Keys with escapes are not borrowed: they go the general way.
        while let Some(k) = map.next_key::<&str>()? {
            match k {
                "seq" => once(&mut seq, map.next_value::<u64>()?)?,
                // Escaped text is not borrowed: it goes the general way.
                "ts" => once(&mut ts, map.next_value::<Option<&str>>()?)?,
                "type" => once(&mut kind, map.next_value::<String>()?)?,
                "content" => once(&mut content, map.next_value::<String>()?)?,
                "author" => once(&mut author, map.next_value::<Option<String>>()?)?,
                "id" => once(&mut id, map.next_value::<String>()?)?,
                "name" => once(&mut name, map.next_value::<String>()?)?,
                // Text a parsed value would refuse goes the general way,
                // which refuses the line.
                "arguments" => once(
                    &mut arguments,
                    JsonText::parse(map.next_value::<&RawValue>()?.get()).ok_or_else(other)?,
                )?,
                "is_error" => once(&mut is_error, map.next_value::<Option<bool>>()?)?,
                // As a value first: with serde_json's `raw_value`
                // feature (the proxy turns it on) the general path
                // reads an object of one special key as something
                // else; a map here would not.
                "metadata" => match map.next_value::<Value>()? {
                    Value::Object(m) => once(&mut metadata, m)?,
                    _ => return Err(other()),
                },
                _ => return Err(other()),
            }
        }
        let (Some(seq), Some(kind)) = (seq, kind) else {
            return Err(other());
        };
        // Which fields each type has; any other present goes the
        // general way (it would be kept in `extra`).
        let (c, a, i, n, g, e) = (
            content.is_some(),
            author.is_some(),
            id.is_some(),
            name.is_some(),
            arguments.is_some(),
            is_error.is_some(),
        );
        let body = match kind.as_str() {
            "turn_start" if !(c || a || i || n || g || e) => Body::TurnStart,
            "user" if !(i || n || g || e) => Body::User {
                content: content.ok_or_else(other)?,
                author: author.flatten(),
            },
            "assistant" | "reasoning" | "system" if !(a || i || n || g || e) => {
                let content = content.ok_or_else(other)?;
                match kind.as_str() {
                    "assistant" => Body::Assistant { content },
                    "reasoning" => Body::Reasoning { content },
                    _ => Body::System { content },
                }
            }
            "tool_call" if !(c || a || e) => Body::ToolCall {
                id: id.ok_or_else(other)?,
                name: name.ok_or_else(other)?,
                arguments: arguments.unwrap_or_else(JsonText::empty_object),
            },
            "tool_result" if !(a || n || g) => Body::ToolResult {
                id: id.ok_or_else(other)?,
                content: content.ok_or_else(other)?,
                is_error: is_error.flatten().unwrap_or(false),
            },
            _ => return Err(other()),
        };
        Ok(Record {
            seq,
            ts: ts.flatten().map_or_else(Ts::empty, Ts::new),
            body,
            metadata: metadata.map(Box::new),
            extra: super::Fields::new(),
        })
    }
}
