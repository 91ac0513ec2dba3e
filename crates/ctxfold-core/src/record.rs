//! One line of the log: a [`Record`] with its sequence number, timestamp and
//! typed [`Body`].
//!
//! Records are parsed from a JSON object (`serde_json::Map`) and written back
//! as one. Fields this version does not know are kept in [`Record::extra`],
//! and records of a type it does not know are kept whole in
//! [`Body::Other`], so a log written by a newer ctxfold survives a round trip
//! through an older one unchanged.

use serde_json::{Map, Value};

use crate::compaction::{Compaction, CompactionReset};
use crate::json_text::JsonText;
use crate::ts::Ts;

/// A JSON object, in the order its keys were read.
pub type Object = Map<String, Value>;

/// One record of a conversation log.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Position in append order: 0, 1, 2, …
    pub seq: u64,
    /// When the record was written. Kept verbatim: imported transcripts
    /// use their own timestamp formats and must round-trip.
    pub ts: Ts,
    /// What the record is.
    pub body: Body,
    /// Opaque per-event data: provider signatures, reported usage, …
    pub metadata: Option<Box<Object>>,
    /// Fields of a known record type that this version does not know.
    pub extra: Fields,
}

/// Fields kept as they came ([`Record::extra`]). Most records have none,
/// so an empty set costs one pointer rather than a map; it reads and
/// writes as an [`Object`].
#[derive(Clone, Default)]
pub struct Fields(Option<Box<Object>>);

/// What an empty [`Fields`] reads as.
static NO_FIELDS: std::sync::LazyLock<Object> = std::sync::LazyLock::new(Object::new);

impl Fields {
    /// No fields.
    pub fn new() -> Self {
        Fields(None)
    }
}

impl From<Object> for Fields {
    fn from(o: Object) -> Self {
        if o.is_empty() {
            Fields(None)
        } else {
            Fields(Some(Box::new(o)))
        }
    }
}

impl From<Fields> for Object {
    fn from(f: Fields) -> Object {
        f.0.map(|b| *b).unwrap_or_default()
    }
}

impl std::ops::Deref for Fields {
    type Target = Object;

    fn deref(&self) -> &Object {
        self.0.as_deref().unwrap_or(&NO_FIELDS)
    }
}

impl std::ops::DerefMut for Fields {
    fn deref_mut(&mut self) -> &mut Object {
        self.0.get_or_insert_default()
    }
}

/// Equal when they hold the same fields, however they are kept.
impl PartialEq for Fields {
    fn eq(&self, other: &Fields) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for Fields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl<'a> IntoIterator for &'a Fields {
    type Item = (&'a String, &'a Value);
    type IntoIter = serde_json::map::Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The typed content of a [`Record`].
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// Opens a turn (see [`crate::log::Log`] for the turn rule).
    TurnStart,
    /// A user message.
    User {
        /// The message text.
        content: String,
        /// Who wrote it, when not the person at the keyboard.
        author: Option<String>,
    },
    /// Assistant text.
    Assistant {
        /// The text.
        content: String,
    },
    /// Assistant thinking text; provider signatures live in metadata.
    Reasoning {
        /// The thinking text.
        content: String,
    },
    /// A tool call made by the assistant.
    ToolCall {
        /// Call id, matched by the result.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments: a JSON object (any JSON value is kept), held as text.
        arguments: JsonText,
    },
    /// The result of a tool call.
    ToolResult {
        /// Id of the call this answers.
        id: String,
        /// Result text.
        content: String,
        /// Whether the tool failed.
        is_error: bool,
    },
    /// A structured (JSON) assistant answer.
    Structured {
        /// The answer, held as JSON text.
        data: JsonText,
    },
    /// A system (or developer) prompt carried by an imported transcript.
    /// Not part of any turn; never compacted.
    System {
        /// The prompt text.
        content: String,
    },
    /// An overlay record that folds a range out of the view.
    Compaction(Box<Compaction>),
    /// An overlay record that revokes (or restores) compactions.
    CompactionReset(Box<CompactionReset>),
    /// Any other record, kept verbatim: config deltas, inquiry events,
    /// bookkeeping, and types this version does not know.
    Other {
        /// The record's `type`.
        kind: String,
        /// Every field but `seq`, `ts`, `type`, in their original order.
        /// Boxed: these records are rare, and the box keeps every other
        /// body small.
        fields: Box<Object>,
    },
}

/// The coarse class of a record, used for counting and filtering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `turn_start`
    TurnStart,
    /// `user`
    User,
    /// `assistant`
    Assistant,
    /// `reasoning`
    Reasoning,
    /// `tool_call`
    ToolCall,
    /// `tool_result`
    ToolResult,
    /// `structured`
    Structured,
    /// `system`
    System,
    /// `compaction`
    Compaction,
    /// `compaction_reset`
    CompactionReset,
    /// `config_delta`
    ConfigDelta,
    /// `inquiry_request`
    InquiryRequest,
    /// `inquiry_response`
    InquiryResponse,
    /// Anything else.
    Other,
}

impl Body {
    /// The `type` string written for this body.
    pub fn type_name(&self) -> &str {
        match self {
            Body::TurnStart => "turn_start",
            Body::User { .. } => "user",
            Body::Assistant { .. } => "assistant",
            Body::Reasoning { .. } => "reasoning",
            Body::ToolCall { .. } => "tool_call",
            Body::ToolResult { .. } => "tool_result",
            Body::Structured { .. } => "structured",
            Body::System { .. } => "system",
            Body::Compaction(_) => "compaction",
            Body::CompactionReset(_) => "compaction_reset",
            Body::Other { kind, .. } => kind,
        }
    }

    /// The coarse class of this body.
    pub fn kind(&self) -> Kind {
        match self {
            Body::TurnStart => Kind::TurnStart,
            Body::User { .. } => Kind::User,
            Body::Assistant { .. } => Kind::Assistant,
            Body::Reasoning { .. } => Kind::Reasoning,
            Body::ToolCall { .. } => Kind::ToolCall,
            Body::ToolResult { .. } => Kind::ToolResult,
            Body::Structured { .. } => Kind::Structured,
            Body::System { .. } => Kind::System,
            Body::Compaction(_) => Kind::Compaction,
            Body::CompactionReset(_) => Kind::CompactionReset,
            Body::Other { kind, .. } => match kind.as_str() {
                "config_delta" => Kind::ConfigDelta,
                "inquiry_request" => Kind::InquiryRequest,
                "inquiry_response" => Kind::InquiryResponse,
                _ => Kind::Other,
            },
        }
    }

    /// Whether the model sees this event (before any compaction): the
    /// model's own output, the user's messages and the tools' results.
    pub fn is_model_visible(&self) -> bool {
        self.is_assistant_side() || matches!(self, Body::User { .. } | Body::ToolResult { .. })
    }

    /// Whether this is output of a model call (the content of a step).
    pub fn is_assistant_side(&self) -> bool {
        matches!(
            self,
            Body::Assistant { .. }
                | Body::Reasoning { .. }
                | Body::ToolCall { .. }
                | Body::Structured { .. }
        )
    }

    /// The id of a tool call.
    pub fn call_id(&self) -> Option<&str> {
        match self {
            Body::ToolCall { id, .. } => Some(id),
            _ => None,
        }
    }

    /// The id of the call a tool result answers.
    pub fn result_id(&self) -> Option<&str> {
        match self {
            Body::ToolResult { id, .. } => Some(id),
            _ => None,
        }
    }
}

impl Record {
    /// A record with no metadata and no extra fields.
    pub fn new(seq: u64, ts: impl Into<Ts>, body: Body) -> Self {
        Record {
            seq,
            ts: ts.into(),
            body,
            metadata: None,
            extra: Fields::new(),
        }
    }

    /// The coarse class of this record.
    pub fn kind(&self) -> Kind {
        self.body.kind()
    }
}

/// Why a JSON object could not be read as a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The line was not a JSON object.
    #[error("expected a JSON object")]
    NotAnObject,
    /// A required field is missing or has the wrong JSON type.
    #[error("field `{field}`: expected {expected}")]
    Field {
        /// The field name.
        field: &'static str,
        /// What was expected there.
        expected: &'static str,
    },
    /// The fields of a typed record (a compaction) do not fit its type.
    #[error("expected the fields of a `{kind}` record (see docs/FORMAT.md): {detail}")]
    Fields {
        /// The record type.
        kind: &'static str,
        /// What the parser said: which field, what it expected.
        detail: String,
    },
}

/// What reading a record found worth telling the user, short of an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordWarning {
    /// A record of a known type had a malformed field: kept verbatim as
    /// [`Body::Other`] so nothing is lost.
    KeptVerbatim {
        /// The record's type.
        kind: String,
        /// What was wrong.
        reason: String,
    },
}

impl std::fmt::Display for RecordWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordWarning::KeptVerbatim { kind, reason } => {
                write!(f, "`{kind}` record kept verbatim: {reason}")
            }
        }
    }
}

/// Check, without consuming anything, that `fields` hold what a body of type
/// `kind` needs. Parsing after a successful check cannot fail, so a
/// malformed record is kept whole.
fn check_fields(kind: &str, fields: &Object) -> Result<(), RecordError> {
    fn string(fields: &Object, field: &'static str, required: bool) -> Result<(), RecordError> {
        match fields.get(field) {
            Some(Value::String(_)) => Ok(()),
            None | Some(Value::Null) if !required => Ok(()),
            _ => Err(RecordError::Field {
                field,
                expected: "a string",
            }),
        }
    }
    match kind {
        "user" => {
            string(fields, "content", true)?;
            string(fields, "author", false)
        }
        "assistant" | "reasoning" | "system" => string(fields, "content", true),
        "tool_call" => {
            string(fields, "id", true)?;
            string(fields, "name", true)
        }
        "tool_result" => {
            string(fields, "id", true)?;
            string(fields, "content", true)?;
            match fields.get("is_error") {
                None | Some(Value::Null) | Some(Value::Bool(_)) => Ok(()),
                Some(_) => Err(RecordError::Field {
                    field: "is_error",
                    expected: "true or false",
                }),
            }
        }
        "compaction" => Compaction::check_fields(fields),
        "compaction_reset" => CompactionReset::check_fields(fields),
        _ => Ok(()),
    }
}

fn take_string(obj: &mut Object, field: &str) -> String {
    match obj.shift_remove(field) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    }
}

fn take_opt_string(obj: &mut Object, field: &str) -> Option<String> {
    match obj.shift_remove(field) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// Move the typed body out of `fields` (which exclude `seq`, `ts`, `type`,
/// `metadata`), after [`check_fields`] accepted them. What is left in
/// `fields` is the record's `extra`.
fn take_body(kind: &str, fields: &mut Object) -> Body {
    match kind {
        "turn_start" => Body::TurnStart,
        "user" => {
            let content = take_string(fields, "content");
            let author = take_opt_string(fields, "author");
            if fields.get("author") == Some(&Value::Null) {
                fields.shift_remove("author");
            }
            Body::User { content, author }
        }
        "assistant" => Body::Assistant {
            content: take_string(fields, "content"),
        },
        "reasoning" => Body::Reasoning {
            content: take_string(fields, "content"),
        },
        "system" => Body::System {
            content: take_string(fields, "content"),
        },
        "tool_call" => Body::ToolCall {
            id: take_string(fields, "id"),
            name: take_string(fields, "name"),
            arguments: fields
                .shift_remove("arguments")
                .map_or_else(JsonText::empty_object, JsonText::from),
        },
        "tool_result" => Body::ToolResult {
            id: take_string(fields, "id"),
            content: take_string(fields, "content"),
            is_error: matches!(fields.shift_remove("is_error"), Some(Value::Bool(true))),
        },
        "structured" => Body::Structured {
            data: fields
                .shift_remove("data")
                .map_or_else(JsonText::default, JsonText::from),
        },
        "compaction" => Body::Compaction(Box::new(Compaction::take_fields(fields))),
        "compaction_reset" => Body::CompactionReset(Box::new(CompactionReset::take_fields(fields))),
        other => Body::Other {
            kind: other.to_owned(),
            fields: Box::new(std::mem::take(fields)),
        },
    }
}

impl Record {
    /// Read a record from a JSON object.
    ///
    /// A record of a known type whose fields are malformed is not refused:
    /// it is kept verbatim as [`Body::Other`] and a warning says why, since
    /// nothing the user had may be lost. Only a missing or non-numeric `seq`
    /// or a missing `type` is an error.
    pub fn from_object(mut obj: Object) -> Result<(Record, Option<RecordWarning>), RecordError> {
        let seq = match obj.shift_remove("seq") {
            Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64().unwrap_or_default(),
            _ => {
                return Err(RecordError::Field {
                    field: "seq",
                    expected: "a non-negative integer",
                });
            }
        };
        let ts = match obj.shift_remove("ts") {
            Some(Value::String(s)) => Ts::from(s),
            None | Some(Value::Null) => Ts::empty(),
            Some(_) => {
                return Err(RecordError::Field {
                    field: "ts",
                    expected: "a string",
                });
            }
        };
        let kind = match obj.shift_remove("type") {
            Some(Value::String(s)) => s,
            _ => {
                return Err(RecordError::Field {
                    field: "type",
                    expected: "a string naming the record type",
                });
            }
        };
        let metadata = match obj.shift_remove("metadata") {
            Some(Value::Object(m)) => Some(m),
            None => None,
            Some(other) => {
                // Keep a non-object metadata as an extra field, unchanged.
                obj.insert("metadata".to_owned(), other);
                None
            }
        };
        let (body, extra, warning) = Self::body_from_fields(&kind, obj);
        Ok((
            Record {
                seq,
                ts,
                body,
                metadata: metadata.map(Box::new),
                extra: extra.into(),
            },
            warning,
        ))
    }

    /// Parse `fields` as a body of type `kind`, falling back to a verbatim
    /// [`Body::Other`] with a warning when the fields are malformed.
    /// Returns the body and the fields left over (the record's `extra`).
    pub fn body_from_fields(
        kind: &str,
        mut fields: Object,
    ) -> (Body, Object, Option<RecordWarning>) {
        if let Err(e) = check_fields(kind, &fields) {
            let warning = RecordWarning::KeptVerbatim {
                kind: kind.to_owned(),
                reason: e.to_string(),
            };
            let body = Body::Other {
                kind: kind.to_owned(),
                fields: Box::new(fields),
            };
            return (body, Object::new(), Some(warning));
        }
        let body = take_body(kind, &mut fields);
        // The parsed map keeps its capacity once the body's fields are moved
        // out; an empty one must not pin that memory for every record.
        if fields.is_empty() {
            fields = Object::new();
        }
        (body, fields, None)
    }

    /// The record as a JSON object: `seq`, `ts`, `type`, the body's fields,
    /// the extra fields, then `metadata`.
    pub fn to_object(&self) -> Object {
        let mut obj = Object::new();
        obj.insert("seq".into(), Value::from(self.seq));
        obj.insert("ts".into(), Value::String(self.ts.to_string()));
        obj.insert(
            "type".into(),
            Value::String(self.body.type_name().to_owned()),
        );
        self.body.write_fields(&mut obj);
        for (k, v) in &self.extra {
            obj.insert(k.clone(), v.clone());
        }
        if let Some(m) = &self.metadata {
            obj.insert("metadata".into(), Value::Object((**m).clone()));
        }
        obj
    }
}

impl Body {
    /// Write this body's fields (not `type`) into `obj`.
    pub fn write_fields(&self, obj: &mut Object) {
        match self {
            Body::TurnStart => {}
            Body::User { content, author } => {
                obj.insert("content".into(), Value::String(content.clone()));
                if let Some(a) = author {
                    obj.insert("author".into(), Value::String(a.clone()));
                }
            }
            Body::Assistant { content }
            | Body::Reasoning { content }
            | Body::System { content } => {
                obj.insert("content".into(), Value::String(content.clone()));
            }
            Body::ToolCall {
                id,
                name,
                arguments,
            } => {
                obj.insert("id".into(), Value::String(id.clone()));
                obj.insert("name".into(), Value::String(name.clone()));
                obj.insert("arguments".into(), arguments.value());
            }
            Body::ToolResult {
                id,
                content,
                is_error,
            } => {
                obj.insert("id".into(), Value::String(id.clone()));
                obj.insert("content".into(), Value::String(content.clone()));
                obj.insert("is_error".into(), Value::Bool(*is_error));
            }
            Body::Structured { data } => {
                obj.insert("data".into(), data.value());
            }
            Body::Compaction(c) => c.write_fields(obj),
            Body::CompactionReset(r) => r.write_fields(obj),
            Body::Other { fields, .. } => {
                for (k, v) in fields.iter() {
                    obj.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

/// Why one line of a JSONL log could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// Not valid JSON.
    #[error("invalid JSON at column {column}: {message}")]
    Json {
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// Valid JSON, but not a record.
    #[error(transparent)]
    Record(#[from] RecordError),
}

impl Record {
    /// Read a record from one line of a JSONL log.
    pub fn from_json_line(line: &str) -> Result<(Record, Option<RecordWarning>), LineError> {
        if let Some(r) = fast::read(line) {
            return Ok((r, None));
        }
        Self::from_json_line_by_map(line)
    }

    /// [`Record::from_json_line`] through a JSON map: every line, whatever
    /// it holds.
    fn from_json_line_by_map(line: &str) -> Result<(Record, Option<RecordWarning>), LineError> {
        let value: Value = serde_json::from_str(line).map_err(|e| LineError::Json {
            column: e.column(),
            message: e.to_string(),
        })?;
        match value {
            Value::Object(obj) => Ok(Record::from_object(obj)?),
            _ => Err(RecordError::NotAnObject.into()),
        }
    }

    /// The record as one line of JSON, without the newline: what
    /// [`Record::to_object`] would give, written without building it.
    pub fn to_json_line(&self) -> String {
        // Strings, numbers and JSON values always serialize.
        serde_json::to_string(&Line(self)).unwrap_or_default()
    }
}

/// A record written straight to JSON text, without building its map: the
/// common bodies field by field, the rare ones through their map.
struct Line<'a>(&'a Record);

/// Keys a common body writes itself: an extra field by one of these names
/// (only code can put one there; reading never does) replaces the body's,
/// as [`Record::to_object`] does.
const WRITTEN_KEYS: &[&str] = &[
    "seq",
    "ts",
    "type",
    "content",
    "author",
    "id",
    "name",
    "arguments",
    "is_error",
    "data",
    "metadata",
];

impl serde::Serialize for Line<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let r = self.0;
        let common = !matches!(
            r.body,
            Body::Compaction(_) | Body::CompactionReset(_) | Body::Other { .. }
        );
        if !common || r.extra.keys().any(|k| WRITTEN_KEYS.contains(&k.as_str())) {
            return r.to_object().serialize(s);
        }
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("seq", &r.seq)?;
        m.serialize_entry("ts", &r.ts)?;
        m.serialize_entry("type", r.body.type_name())?;
        match &r.body {
            Body::User { content, author } => {
                m.serialize_entry("content", content)?;
                if let Some(a) = author {
                    m.serialize_entry("author", a)?;
                }
            }
            Body::Assistant { content }
            | Body::Reasoning { content }
            | Body::System { content } => {
                m.serialize_entry("content", content)?;
            }
            Body::ToolCall {
                id,
                name,
                arguments,
            } => {
                m.serialize_entry("id", id)?;
                m.serialize_entry("name", name)?;
                m.serialize_entry("arguments", arguments)?;
            }
            Body::ToolResult {
                id,
                content,
                is_error,
            } => {
                m.serialize_entry("id", id)?;
                m.serialize_entry("content", content)?;
                m.serialize_entry("is_error", is_error)?;
            }
            Body::Structured { data } => m.serialize_entry("data", data)?,
            Body::TurnStart
            | Body::Compaction(_)
            | Body::CompactionReset(_)
            | Body::Other { .. } => {}
        }
        for (k, v) in r.extra.iter() {
            m.serialize_entry(k, v)?;
        }
        if let Some(meta) = &r.metadata {
            m.serialize_entry("metadata", meta)?;
        }
        m.end()
    }
}

/// The records most of a log is made of, read straight into their typed
/// form (see the module).
mod fast;
/// The overlay records' bodies read from and written to a record's
/// fields.
mod overlay;

use overlay::OverlayFields;

#[cfg(test)]
mod fast_tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::{Body, JsonText, Record, fast};

    /// A value for a field: mostly what the field should hold, sometimes
    /// something else.
    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            4 => "[a-z \"\\\\é→]{0,12}".prop_map(Value::String),
            1 => Just(Value::Null),
            1 => any::<bool>().prop_map(Value::Bool),
            1 => (0u64..5).prop_map(Value::from),
            1 => Just(json!(-1)),
            1 => Just(json!(1.5)),
            1 => Just(json!({"path": "a.rs", "n": [1, 2]})),
            1 => Just(json!([])),
        ]
    }

    /// Keys a line may gain: the fields of every record type (a field
    /// of one type is an unknown one in another), and keys no type has.
    const KEYS: &[&str] = &[
        "content",
        "author",
        "id",
        "name",
        "arguments",
        "is_error",
        "extra",
        "s\\u0065q",
    ];
    const TYPES: &[&str] = &[
        "turn_start",
        "user",
        "assistant",
        "reasoning",
        "system",
        "tool_call",
        "tool_result",
        "structured",
        "compaction",
        "inquiry",
    ];

    /// The fields a record of `kind` has, well-formed, optional ones
    /// present or not by `pick`.
    fn template(kind: &str, pick: u8) -> Vec<(String, Value)> {
        let f = |k: &str, v: Value| (k.to_owned(), v);
        let opt = |n: u8| pick & (1 << n) != 0;
        match kind {
            "turn_start" => vec![],
            "user" => {
                let mut v = vec![f("content", json!("hi"))];
                if opt(0) {
                    v.push(f("author", if opt(1) { json!("ci") } else { Value::Null }));
                }
                v
            }
            "assistant" | "reasoning" | "system" => vec![f("content", json!("ok"))],
            "tool_call" => {
                let mut v = vec![f("id", json!("c1")), f("name", json!("read"))];
                if opt(0) {
                    v.push(f("arguments", json!({"path": "a.rs"})));
                }
                v
            }
            "tool_result" => {
                let mut v = vec![f("id", json!("c1")), f("content", json!("text"))];
                if opt(0) {
                    v.push(f(
                        "is_error",
                        if opt(1) { json!(opt(2)) } else { Value::Null },
                    ));
                }
                v
            }
            _ => vec![f("data", json!({"x": 1})), f("from_seq", json!(0))],
        }
    }

    /// What a line may have suffered.
    #[derive(Debug, Clone)]
    enum Change {
        Drop(usize),
        Replace(usize, Value),
        Add(&'static str, Value),
        Twice(usize),
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![
            (0usize..4).prop_map(Change::Drop),
            ((0usize..4), value()).prop_map(|(i, v)| Change::Replace(i, v)),
            (prop::sample::select(KEYS), value()).prop_map(|(k, v)| Change::Add(k, v)),
            (0usize..4).prop_map(Change::Twice),
        ]
    }

    /// A line: a well-formed record of some type (the seq, ts and metadata
    /// varied too), with up to two changes, or none.
    fn line() -> impl Strategy<Value = String> {
        (
            prop::sample::select(TYPES),
            any::<u8>(),
            prop::collection::vec(change(), 0..3),
            prop_oneof![Just("0"), Just("17"), Just("1.0"), Just("-2")],
            prop_oneof![
                Just(Some("\"2026\"")),
                Just(Some("null")),
                Just(Some("3")),
                Just(None)
            ],
            prop_oneof![
                Just(None),
                Just(Some("{\"usage\":{\"n\":3}}")),
                Just(Some("[]"))
            ],
            // Values spelled as another tool would: spaces, line breaks.
            any::<bool>(),
        )
            .prop_map(|(kind, pick, changes, seq, ts, metadata, spaced)| {
                let mut fields = template(kind, pick);
                for c in changes {
                    match c {
                        Change::Drop(i) if i < fields.len() => {
                            fields.remove(i);
                        }
                        Change::Replace(i, v) if i < fields.len() => fields[i].1 = v,
                        Change::Add(k, v) => fields.push((k.to_owned(), v)),
                        Change::Twice(i) if i < fields.len() => fields.push(fields[i].clone()),
                        _ => {}
                    }
                }
                let mut parts = vec![format!("\"seq\":{seq}")];
                if let Some(ts) = ts {
                    parts.push(format!("\"ts\":{ts}"));
                }
                parts.push(format!("\"type\":\"{kind}\""));
                for (k, v) in fields {
                    let v = if spaced {
                        serde_json::to_string_pretty(&v).unwrap()
                    } else {
                        v.to_string()
                    };
                    parts.push(format!("\"{k}\":{v}"));
                }
                if let Some(m) = metadata {
                    parts.push(format!("\"metadata\":{m}"));
                }
                format!("{{{}}}", parts.join(","))
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16000, ..ProptestConfig::default() })]

        /// Whatever the fast reader takes, it reads as the general one does.
        #[test]
        fn the_fast_reader_reads_what_it_takes_as_the_general_one(line in line()) {
            if let Some(r) = fast::read(&line) {
                prop_assert_eq!(Ok((r, None)), Record::from_json_line_by_map(&line));
            }
            // And every record it reads is written as its map would be,
            // and reads back the same.
            if let Ok((r, _)) = Record::from_json_line(&line) {
                let by_map = serde_json::to_string(&r.to_object()).unwrap();
                let written = r.to_json_line();
                prop_assert_eq!(&written, &by_map);
                let again = Record::from_json_line(&written).map(|(again, _)| again);
                prop_assert_eq!(again, Ok(r));
            }
        }
    }

    /// A log holds a million of these: what every record pays inline is
    /// most of a small record's memory (docs/PERFORMANCE.md).
    #[test]
    fn a_record_stays_small() {
        assert_eq!(std::mem::size_of::<JsonText>(), 16);
        assert!(
            std::mem::size_of::<Body>() <= 72,
            "{}",
            std::mem::size_of::<Body>()
        );
        assert!(
            std::mem::size_of::<Record>() <= 120,
            "{}",
            std::mem::size_of::<Record>()
        );
    }

    /// Every common record, as ctxfold writes it, takes the fast way.
    #[test]
    fn common_records_as_written_take_the_fast_way() {
        let lines = [
            json!({"seq": 0, "ts": "t", "type": "turn_start"}),
            json!({"seq": 1, "ts": "t", "type": "user", "content": "hi", "author": "ci"}),
            json!({"seq": 2, "ts": "t", "type": "reasoning", "content": "…", "metadata": {"signature": "x"}}),
            json!({"seq": 3, "ts": "t", "type": "assistant", "content": "ok"}),
            json!({"seq": 4, "ts": "t", "type": "tool_call", "id": "c", "name": "f", "arguments": {"a": 1}}),
            json!({"seq": 5, "ts": "t", "type": "tool_result", "id": "c", "content": "r", "is_error": true}),
            json!({"seq": 6, "ts": "t", "type": "system", "content": "be brief"}),
        ];
        for l in lines {
            let (r, _) = Record::from_json_line_by_map(&l.to_string()).unwrap();
            let written = r.to_json_line();
            assert_eq!(fast::read(&written), Some(r), "{written}");
        }
        // And what it must leave to the general way.
        for l in [
            r#"{"seq":1,"ts":"t","type":"user","content":"hi","mood":"ok"}"#,
            r#"{"seq":1,"ts":"t","type":"user","content":5}"#,
            r#"{"seq":1,"ts":"t","type":"user","content":"a","content":"b"}"#,
            r#"{"seq":1,"ts":"t","type":"compaction","from_seq":0,"to_seq":1}"#,
            r#"{"seq":1.0,"ts":"t","type":"assistant","content":"a"}"#,
            r#"{"seq":1,"ts":"t","type":"assistant","content":"a","metadata":7}"#,
            // A field of another type is an unknown one here.
            r#"{"seq":1,"ts":"t","type":"turn_start","content":"a"}"#,
            r#"{"seq":1,"ts":"t","type":"user","content":"a","is_error":false}"#,
            r#"{"seq":1,"ts":"t","type":"assistant","content":"a","author":"x"}"#,
            r#"{"seq":1,"ts":"t","type":"tool_call","id":"c","name":"f","is_error":true}"#,
            r#"{"seq":1,"ts":"t","type":"tool_call","id":"c","name":"f","content":"x"}"#,
            r#"{"seq":1,"ts":"t","type":"tool_result","id":"c","content":"r","name":"f"}"#,
            r#"{"seq":1,"ts":"t","type":"tool_result","id":"c","content":"r","arguments":{}}"#,
        ] {
            assert_eq!(fast::read(l), None, "{l}");
        }
        // With serde_json's `raw_value` feature (on when the proxy is in
        // the build) the general way reads this object as a number; either
        // way, both read it alike.
        let special = r#"{"seq":0,"ts":"","type":"turn_start","metadata":{"$serde_json::private::RawValue":"1"}}"#;
        if let Some(r) = fast::read(special) {
            assert_eq!(Ok((r, None)), Record::from_json_line_by_map(special));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Object {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn known_event_round_trips_with_extra_fields_and_metadata() {
        let input = obj(json!({
            "seq": 3, "ts": "t", "type": "tool_call", "id": "c1", "name": "read",
            "arguments": {"path": "a.rs"}, "future_field": [1, 2],
            "metadata": {"sig": "x"}
        }));
        let (rec, warn) = Record::from_object(input.clone()).unwrap();
        assert!(warn.is_none());
        assert_eq!(rec.kind(), Kind::ToolCall);
        assert_eq!(rec.extra.get("future_field"), Some(&json!([1, 2])));
        assert_eq!(Value::Object(rec.to_object()), Value::Object(input));
    }

    #[test]
    fn unknown_type_is_kept_verbatim_in_order() {
        let input = obj(json!({"seq": 0, "ts": "t", "type": "hologram", "z": 1, "a": {"b": 2}}));
        let (rec, warn) = Record::from_object(input.clone()).unwrap();
        assert!(warn.is_none());
        assert_eq!(rec.kind(), Kind::Other);
        let out = rec.to_object();
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            serde_json::to_string(&input).unwrap()
        );
    }

    #[test]
    fn malformed_known_record_is_kept_with_a_warning() {
        let input = obj(json!({"seq": 1, "ts": "t", "type": "user", "content": 42}));
        let (rec, warn) = Record::from_object(input.clone()).unwrap();
        assert!(matches!(warn, Some(RecordWarning::KeptVerbatim { .. })));
        assert_eq!(rec.kind(), Kind::Other);
        assert_eq!(Value::Object(rec.to_object()), Value::Object(input));
    }

    #[test]
    fn missing_seq_is_an_error_naming_the_field() {
        let err = Record::from_object(obj(json!({"type": "user", "content": "hi"}))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "field `seq`: expected a non-negative integer"
        );
    }

    #[test]
    fn a_malformed_compaction_keeps_serdes_detail() {
        let input = obj(json!({
            "seq": 5, "ts": "t", "type": "compaction",
            "from_turn": 0, "to_turn": 1, "source": "user", "tool_calls": "shred"
        }));
        let (rec, warn) = Record::from_object(input).unwrap();
        assert_eq!(rec.kind(), Kind::Other);
        let warn = warn.expect("a warning").to_string();
        assert!(warn.contains("unknown variant `shred`"), "{warn}");
        assert!(
            warn.starts_with("`compaction` record kept verbatim"),
            "{warn}"
        );
    }
}
