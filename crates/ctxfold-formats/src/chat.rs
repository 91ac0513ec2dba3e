//! Helpers shared by the chat-message formats (OpenAI and Anthropic):
//! building records with the turn rule, keeping a request's other keys, and
//! the metadata keys that let export give back what import read.

use ctxfold_core::{Body, Object, Record};
use serde::Deserialize;
use serde_json::Value;

pub(crate) use crate::field::Field;

/// The field of an `Other` record that holds a message kept whole (of a
/// role its format does not know).
pub(crate) const MESSAGE_FIELD: &str = "message";

/// Records under construction: `seq` 0, 1, 2, …, empty `ts`, and the turn
/// rule for imported messages.
#[derive(Default)]
pub(crate) struct Records {
    pub(crate) records: Vec<Record>,
    last_visible_user: bool,
    /// The time of the message being read, given to its records.
    ts: String,
}

impl Records {
    /// Keep message `m` of a role its format does not know whole, as an
    /// `Other` record of `kind`, written back as it came.
    pub(crate) fn push_unknown_message(&mut self, kind: &str, m: &Object) -> usize {
        let mut fields = Object::new();
        fields.insert(MESSAGE_FIELD.into(), Value::Object(m.clone()));
        self.push(Body::Other {
            kind: kind.into(),
            fields: Box::new(fields),
        })
    }

    /// Append a record; returns its index.
    pub(crate) fn push(&mut self, body: Body) -> usize {
        if body.is_model_visible() {
            self.last_visible_user = matches!(body, Body::User { .. });
        }
        let idx = self.records.len();
        self.records
            .push(Record::new(idx as u64, self.ts.clone(), body));
        idx
    }

    /// Start reading message `m`: its records get its own time, if any.
    pub(crate) fn start_message(&mut self, m: &Object) {
        self.ts = message_time(m);
    }

    /// Keep only the first `len` records, and the turn rule as it was
    /// after them.
    pub(crate) fn truncate(&mut self, len: usize) {
        self.records.truncate(len);
        self.last_visible_user = self
            .records
            .iter()
            .rev()
            .find(|r| r.body.is_model_visible())
            .is_some_and(|r| matches!(r.body, Body::User { .. }));
    }

    /// Open a turn for a user message: a `turn_start` unless the last
    /// model-visible record is a user message (an interrupt reply).
    pub(crate) fn open_turn(&mut self) {
        if !self.last_visible_user {
            self.push(Body::TurnStart);
        }
    }
}

/// Keys a message may carry its time in (neither API defines one; logs
/// and exports add them).
const TIME_KEYS: [&str; 3] = ["timestamp", "created_at", "created"];

/// A message's own time as record `ts` text: a string the bounds can read,
/// kept as it is, or Unix seconds (milliseconds when that large) as RFC
/// 3339. Empty when it has none. The key itself stays in the message.
pub(crate) fn message_time(m: &Object) -> String {
    for key in TIME_KEYS {
        match m.get(key) {
            Some(Value::String(s)) if ctxfold_core::bounds::parse_ts(s).is_some() => {
                return s.clone();
            }
            Some(Value::Number(n)) => {
                let Some(secs) = n.as_f64() else { continue };
                // Seconds until the year 5138; beyond that, milliseconds.
                let millis = if secs.abs() >= 1e11 {
                    secs
                } else {
                    secs * 1000.0
                };
                if let Ok(t) = jiff::Timestamp::from_millisecond(millis.round() as i64) {
                    return t.to_string();
                }
            }
            _ => {}
        }
    }
    String::new()
}

/// The request body to keep for export: every key in order, with the keys
/// export rebuilds (`placeholders`) set to `null`. `None` when there is
/// nothing else.
pub(crate) fn kept_body(o: &Object, placeholders: &[&str]) -> Option<Object> {
    if o.keys().all(|k| placeholders.contains(&k.as_str())) {
        return None;
    }
    Some(with_nulls(o, placeholders))
}

/// `o` with the values of `keys` set to `null`, every key in its place:
/// what a format keeps of an object whose other parts it rebuilds.
pub(crate) fn with_nulls(o: &Object, keys: &[&str]) -> Object {
    o.iter()
        .map(|(k, v)| {
            let v = if keys.contains(&k.as_str()) {
                Value::Null
            } else {
                v.clone()
            };
            (k.clone(), v)
        })
        .collect()
}

/// A request body: the kept keys in order with `fills` at their
/// placeholders (a `None` fill leaves its key out); fills without a
/// placeholder come first. The fills are moved in, not copied: a
/// conversation's messages can be most of a megabyte.
pub(crate) fn build_request(kept: Option<&Object>, fills: Vec<(&str, Option<Value>)>) -> Value {
    let mut fills: Vec<(&str, Option<Option<Value>>)> =
        fills.into_iter().map(|(k, v)| (k, Some(v))).collect();
    let mut out = Object::new();
    for (k, v) in &mut fills {
        if !kept.is_some_and(|o| o.contains_key(*k))
            && let Some(Some(v)) = v.take()
        {
            out.insert((*k).to_owned(), v);
        }
    }
    for (k, v) in kept.into_iter().flatten() {
        match fills.iter_mut().find(|(f, _)| f == k) {
            Some((_, fill)) => {
                if let Some(Some(fill)) = fill.take() {
                    out.insert(k.clone(), fill);
                }
            }
            None => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// The keys of `o` not in `consumed`, in order.
pub(crate) fn leftovers(o: &Object, consumed: &[&str]) -> Object {
    o.iter()
        .filter(|(k, _)| !consumed.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Keep a message's unmapped `keys` on `r`: in `extra` under their own
/// names, listed in metadata `{prefix}_message_keys`; names the record uses
/// itself (or already has in `extra`) go to metadata `{prefix}_message_fields`.
pub(crate) fn keep_message_keys(r: &mut Record, keys: Object, prefix: &str) {
    if keys.is_empty() {
        return;
    }
    let mut own = Object::new();
    r.body.write_fields(&mut own);
    let mut listed = Vec::new();
    let mut fields = Object::new();
    for (k, v) in keys {
        let taken = matches!(k.as_str(), "seq" | "ts" | "type" | "metadata")
            || own.contains_key(&k)
            || r.extra.contains_key(&k);
        if taken {
            fields.insert(k, v);
        } else {
            listed.push(Value::String(k.clone()));
            r.extra.insert(k, v);
        }
    }
    if !listed.is_empty() {
        set_meta(r, &format!("{prefix}_message_keys"), Value::Array(listed));
    }
    if !fields.is_empty() {
        set_meta(
            r,
            &format!("{prefix}_message_fields"),
            Value::Object(fields),
        );
    }
}

/// The message keys [`keep_message_keys`] kept on `r`.
pub(crate) fn message_keys(r: &Record, prefix: &str) -> Object {
    let mut out = Object::new();
    if let Some(Value::Array(listed)) = meta(r, &format!("{prefix}_message_keys")) {
        for k in listed.iter().filter_map(Value::as_str) {
            if let Some(v) = r.extra.get(k) {
                out.insert(k.to_owned(), v.clone());
            }
        }
    }
    if let Some(Value::Object(fields)) = meta(r, &format!("{prefix}_message_fields")) {
        for (k, v) in fields {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// A metadata value of `r`.
pub(crate) fn meta<'a>(r: &'a Record, key: &str) -> Option<&'a Value> {
    r.metadata.as_ref()?.get(key)
}

/// Set a metadata value of `r`.
pub(crate) fn set_meta(r: &mut Record, key: &str, v: Value) {
    r.metadata.get_or_insert_default().insert(key.to_owned(), v);
}

/// The text parts (`{"type": "text", "text": …}`) of a content array,
/// joined with "\n".
pub(crate) fn text_parts(parts: &[Value]) -> String {
    text_of(parts, &["text"])
}

/// The text blocks of Anthropic content, joined with "\n" (what
/// [`text_parts`] makes of the same blocks as JSON).
pub(crate) fn block_text(blocks: &[ctxfold_wire::anthropic::Block]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ctxfold_wire::anthropic::Block::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The texts of the parts of a content array whose `type` is one of
/// `types`, joined with "\n" (what every format makes of a content
/// array's text).
pub(crate) fn text_of(parts: &[Value], types: &[&str]) -> String {
    use ctxfold_wire::responses::Content;
    parts
        .iter()
        .filter(|p| Content::part_kind(p).is_some_and(|t| types.contains(&t)))
        .filter_map(Content::part_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The metadata keys a format marks a tool call's `arguments` with where
/// they were not written as ctxfold writes them, so export gives them back.
pub(crate) struct ArgumentKeys {
    /// Their text, when the JSON string parses but is written otherwise.
    pub(crate) text: &'static str,
    /// `true`: the string is not JSON, kept as the string.
    pub(crate) raw: &'static str,
    /// `true`: the object itself, not a JSON string (some logs write it).
    pub(crate) object: &'static str,
}

/// A tool call's `arguments`: a JSON string, parsed, or an object as it
/// is, with the mark (`keys`) that gives them back as they were written,
/// if any is needed. `None` when they are neither a string nor an object.
pub(crate) fn read_arguments(
    v: &Value,
    keys: &ArgumentKeys,
) -> Option<(Value, Option<(&'static str, Value)>)> {
    match v {
        Value::String(text) => Some(match serde_json::from_str::<Value>(text) {
            Ok(parsed) => {
                let same = serde_json::to_string(&parsed).ok().as_deref() == Some(text.as_str());
                let mark = (!same).then(|| (keys.text, Value::String(text.clone())));
                (parsed, mark)
            }
            Err(_) => (
                Value::String(text.clone()),
                Some((keys.raw, Value::Bool(true))),
            ),
        }),
        Value::Object(_) => Some((v.clone(), Some((keys.object, Value::Bool(true))))),
        _ => None,
    }
}

/// Message `i` as an object and its role, or an error naming the index and
/// `expected` (the roles the format knows).
pub(crate) fn message_and_role<'a>(
    i: usize,
    m: &'a Value,
    expected: &str,
) -> Result<(&'a Object, &'a str), String> {
    let Value::Object(m) = m else {
        return Err(format!(
            "messages[{i}]: expected a message object, found {}",
            describe(m)
        ));
    };
    match Role::deserialize(m).map(|r| r.role) {
        Ok(Field::Str(r)) => Ok((m, r)),
        Ok(Field::Missing) => Err(format!("messages[{i}]: missing `role`; {expected}")),
        Ok(other) => Err(format!(
            "messages[{i}]: `role` is {}, not a string; {expected}",
            other.describe()
        )),
        Err(e) => Err(format!("messages[{i}]: {e}; {expected}")),
    }
}

/// A message's role, as every chat format has it.
#[derive(Deserialize)]
struct Role<'a> {
    #[serde(default, borrow)]
    role: Field<'a>,
}

/// For an `Option` field that tells a `null` from a missing key: `Some(..)`
/// for any value present, `null` included (with `#[serde(default)]`, a
/// missing key is `None`).
pub(crate) fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// A value that is text, an array (its items as they came, in their key
/// order) or something else: a content or `system` as the readers take
/// it, before its parts are read. Read in one pass, each string copied
/// once (not buffered first, as an untagged enum would be).
#[derive(Debug)]
pub(crate) enum TextOrArray {
    /// A string.
    Text(String),
    /// An array.
    Array(Vec<Value>),
    /// Anything else (`null` included, where the field is `present`).
    Other(Value),
}

impl<'de> Deserialize<'de> for TextOrArray {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = TextOrArray;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E>(self, s: &str) -> Result<TextOrArray, E> {
                Ok(TextOrArray::Text(s.to_owned()))
            }
            fn visit_string<E>(self, s: String) -> Result<TextOrArray, E> {
                Ok(TextOrArray::Text(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<TextOrArray, A::Error> {
                let mut items = Vec::with_capacity(a.size_hint().unwrap_or(0));
                while let Some(v) = a.next_element::<Value>()? {
                    items.push(v);
                }
                Ok(TextOrArray::Array(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                a: A,
            ) -> Result<TextOrArray, A::Error> {
                let o = Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(a))?;
                Ok(TextOrArray::Other(Value::Object(o)))
            }
            fn visit_bool<E>(self, b: bool) -> Result<TextOrArray, E> {
                Ok(TextOrArray::Other(Value::Bool(b)))
            }
            fn visit_i64<E>(self, n: i64) -> Result<TextOrArray, E> {
                Ok(TextOrArray::Other(Value::from(n)))
            }
            fn visit_u64<E>(self, n: u64) -> Result<TextOrArray, E> {
                Ok(TextOrArray::Other(Value::from(n)))
            }
            fn visit_f64<E>(self, n: f64) -> Result<TextOrArray, E> {
                Ok(TextOrArray::Other(Value::from(n)))
            }
            fn visit_unit<E>(self) -> Result<TextOrArray, E> {
                Ok(TextOrArray::Other(Value::Null))
            }
            fn visit_none<E>(self) -> Result<TextOrArray, E> {
                Ok(TextOrArray::Other(Value::Null))
            }
        }
        d.deserialize_any(V)
    }
}

impl TextOrArray {
    /// What it is, as an error says it.
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            TextOrArray::Text(_) => "a string",
            TextOrArray::Array(_) => "an array",
            TextOrArray::Other(v) => describe(v),
        }
    }
}

/// A field read as `T` where it is one, else kept as it came (for the
/// error that says what was found).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Loose<T> {
    /// A `T`.
    Is(T),
    /// Something else.
    Not(Value),
}

pub(crate) use ctxfold_core::json_text::describe;
