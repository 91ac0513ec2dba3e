//! A Codex rollout line as ctxfold reads it: `{timestamp, type, payload}`,
//! the fields of the payload it uses (a session's id and folder, a
//! compaction's summary, the call an event is about), read from the
//! line's parsed JSON, borrowed. A `response_item`'s payload is a
//! Responses item, read as `ctxfold_wire::responses::Item`; the few item
//! types Codex writes that ctxfold-wire does not type are here.

use ctxfold_core::Object;
use ctxfold_wire::responses::Message;
use serde::Deserialize;
use serde_json::Value;

use crate::session_lines::Field;

/// The key of a line's payload.
const PAYLOAD: &str = "payload";

/// What ctxfold reads of a line besides a `response_item`'s item.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Envelope<'a> {
    /// `session_meta`, `response_item`, `event_msg`, `compacted`, …
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Field<'a>,
    /// Which line of the session it is, in the lines that count them.
    #[serde(borrow)]
    pub(crate) ordinal: Field<'a>,
    /// The payload.
    #[serde(borrow)]
    pub(crate) payload: Payload<'a>,
}

/// A line's payload, as far as ctxfold reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Payload<'a> {
    /// An item's or an event's type.
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Field<'a>,
    /// A `session_meta`'s session id.
    pub(crate) id: Option<Value>,
    /// A `session_meta`'s working folder.
    pub(crate) cwd: Option<Value>,
    /// A `compacted` line's summary.
    #[serde(borrow)]
    pub(crate) message: Field<'a>,
    /// A `compaction` item's encrypted content.
    #[serde(borrow)]
    pub(crate) encrypted_content: Field<'a>,
    /// The call an event (or an output item) is about.
    #[serde(borrow)]
    pub(crate) call_id: Field<'a>,
    /// An output item's output (`null` where a record holds it).
    #[serde(borrow)]
    pub(crate) output: Field<'a>,
    /// The item an `item_started`/`item_completed` event is about.
    #[serde(borrow)]
    pub(crate) item: Option<EventItem<'a>>,
}

/// The item of an event.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct EventItem<'a> {
    /// Its type (`CommandExecution`, `McpToolCall`, …).
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Field<'a>,
    /// Its id.
    #[serde(borrow)]
    pub(crate) id: Field<'a>,
    /// The call it is about.
    #[serde(borrow)]
    pub(crate) call_id: Field<'a>,
}

impl<'a> Envelope<'a> {
    /// The envelope of line `v`; a line of an unexpected shape reads as
    /// one without these fields.
    pub(crate) fn of(v: &'a Value) -> Envelope<'a> {
        Envelope::deserialize(v).unwrap_or_default()
    }

    /// [`Envelope::of`] a line's object.
    pub(crate) fn of_object(o: &'a Object) -> Envelope<'a> {
        Envelope::deserialize(o).unwrap_or_default()
    }
}

impl<'a> Payload<'a> {
    /// [`Payload`] of payload `p`, read; one of an unexpected shape reads
    /// as one without these fields.
    pub(crate) fn of_object(p: &'a Object) -> Payload<'a> {
        Payload::deserialize(p).unwrap_or_default()
    }
}

/// A `local_shell_call` item (Codex's older shell tool; not one
/// ctxfold-wire types).
#[derive(Debug, Deserialize)]
pub(crate) struct LocalShellCall {
    /// The id its output names.
    pub(crate) call_id: String,
    /// The command, as Codex writes it.
    pub(crate) action: Value,
}

/// A call output item of any of the three types, the output as any
/// Codex wrote (older versions: an object with the text in `content`).
#[derive(Debug, Deserialize)]
pub(crate) struct AnyOutput {
    /// The call it answers.
    pub(crate) call_id: String,
    /// The output.
    pub(crate) output: OutputValue,
}

/// See [`AnyOutput`].
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum OutputValue {
    /// Text.
    Text(String),
    /// Content parts.
    Parts(Vec<Value>),
    /// An object holding the text.
    Object(OutputObject),
}

/// An output written as an object.
#[derive(Debug, Deserialize)]
pub(crate) struct OutputObject {
    /// The text, when it is one.
    #[serde(default)]
    pub(crate) content: Option<Value>,
}

/// The payload of line `v`, taken out (`null` left in its place).
pub(crate) fn take_payload(v: &mut Value) -> Option<Value> {
    Some(v.as_object_mut()?.get_mut(PAYLOAD)?.take())
}

/// Put `payload` back as the payload of line `v`.
pub(crate) fn put_payload(v: &mut Value, payload: Value) {
    if let Some(o) = v.as_object_mut() {
        o.insert(PAYLOAD.into(), payload);
    }
}

/// The payload of line `env`, to fill in.
pub(crate) fn payload_mut(env: &mut Object) -> Option<&mut Object> {
    env.get_mut(PAYLOAD)?.as_object_mut()
}

/// Set the text of the one content part of message payload `p` to `text`
/// (`null` in a template), in place, so its keys keep their order; `false`
/// when it is not a message of one part.
pub(crate) fn set_part_text(p: &mut Object, text: Value) -> bool {
    match Message::content_mut(p) {
        Some(Value::Array(parts)) => match parts.as_mut_slice() {
            [Value::Object(part)] => {
                part.insert("text".into(), text);
                true
            }
            _ => false,
        },
        _ => false,
    }
}
