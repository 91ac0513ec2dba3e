//! Reading a Codex rollout: each line into its record (see the module
//! docs for the mapping).

use std::path::Path;

use ctxfold_core::json_text::JsonText;
use ctxfold_core::{Body, Object, Record};
use ctxfold_wire::responses::{Content, Item};
use serde::Deserialize;
use serde_json::Value;

use super::line::{
    AnyOutput, Envelope, LocalShellCall, OutputValue, put_payload, set_part_text, take_payload,
};
use super::{BOM, FINAL_NEWLINE, KEY, SESSION_ID};
use crate::session_lines::{Line, LineCursor, Sequencer, fingerprint, hint, type_tag};
use crate::{FormatError, Transcript};

/// Whether the first line of a file (parsed) is one Codex writes:
/// `{timestamp, type, payload}` with a type of its own.
pub fn looks_like(first: &Object) -> bool {
    matches!(
        Envelope::of_object(first).kind.str(),
        Some(
            "session_meta"
                | "response_item"
                | "event_msg"
                | "turn_context"
                | "compacted"
                | "world_state"
        )
    ) && first.contains_key("payload")
}

/// Read the Codex rollout at `path`.
pub fn import(path: &Path) -> Result<Transcript, FormatError> {
    Ok(import_bytes(path, &crate::read_bytes(path)?))
}

/// [`import`] from the file's bytes, already read.
pub fn import_bytes(path: &Path, bytes: &[u8]) -> Transcript {
    Reader::new(path, bytes.to_vec()).into_transcript()
}

/// A Codex rollout read one line at a time: each line's records as it is
/// read, only what the lines to come need kept of it.
pub(crate) struct Reader {
    cursor: LineCursor,
    seq: Sequencer,
    extras: Object,
    warnings: Vec<String>,
}

impl Reader {
    /// The rollout in `bytes`, the file at `path`.
    pub(crate) fn new(path: &Path, bytes: Vec<u8>) -> Reader {
        Reader {
            cursor: LineCursor::new(path, bytes),
            seq: Sequencer::new(KEY),
            extras: Object::new(),
            warnings: Vec::new(),
        }
    }

    /// The rollout at `path` read from `reader` (at the file's start) a
    /// line at a time, at most `limit` bytes of it.
    pub(crate) fn reading(path: &Path, reader: Box<dyn std::io::BufRead>, limit: u64) -> Reader {
        Reader {
            cursor: LineCursor::reading(path, reader, limit),
            seq: Sequencer::new(KEY),
            extras: Object::new(),
            warnings: Vec::new(),
        }
    }

    /// Why the lines read from the file ended before its end, if they did.
    pub(crate) fn error(&mut self) -> Option<FormatError> {
        self.cursor.error()
    }

    /// The records of the next line to `out`; `false` after the last.
    pub(crate) fn step(&mut self, out: &mut Vec<Record>) -> bool {
        let Some(mut line) = self.cursor.next_line(&mut self.warnings) else {
            return false;
        };
        let Some(value @ Value::Object(_)) = &line.value else {
            let r = line.opaque(KEY);
            self.push(r, out);
            return true;
        };
        let env = Envelope::of(value);
        let ty = env.kind.str().unwrap_or("");
        let payload = &env.payload;
        if ty == "session_meta"
            && !self.extras.contains_key(SESSION_ID)
            && let Some(id) = &payload.id
        {
            self.extras.insert(SESSION_ID.into(), id.clone());
            if let Some(cwd) = &payload.cwd {
                self.extras.insert("cwd".into(), cwd.clone());
            }
        }
        let rec = match (ty, payload.kind.str().unwrap_or("")) {
            ("compacted", _) => {
                let text = payload.message.str().unwrap_or("").to_owned();
                Some(compaction(&line, text))
            }
            ("response_item", "compaction") => {
                let n = payload.encrypted_content.str().map_or(0, str::len);
                let text = format!(
                    "[The provider compacted the conversation before this point; its compaction is encrypted ({n} characters) and only the provider can read it.]"
                );
                Some(compaction(&line, text))
            }
            ("response_item", _) => item_record(&mut line),
            _ => None,
        };
        let mut r = rec.unwrap_or_else(|| line.opaque(KEY));
        self.set_range(&mut r);
        self.push(r, out);
        true
    }

    fn push(&mut self, r: Record, out: &mut Vec<Record>) {
        // A user message after the assistant's or a tool's records opens
        // a turn.
        let mut opens =
            |r: &Record, answered: bool| matches!(r.body, Body::User { .. }) && answered;
        self.seq.push(r, &mut opens, out);
    }

    /// An agent compaction covers all the records before it.
    fn set_range(&self, r: &mut Record) {
        if !r.extra.contains_key(KEY) {
            return;
        }
        if let Body::Compaction(c) = &mut r.body
            && c.note.is_some()
        {
            match self.seq.last_visible() {
                Some((seq, t)) => {
                    c.from_turn = 0;
                    c.to_turn = t;
                    c.to_seq = Some(seq);
                }
                None => {
                    c.from_seq = Some(1);
                    c.to_seq = Some(0);
                }
            }
        }
    }

    /// What the whole file says, once every line is read: the format's
    /// extras and the warnings (the records were handed out).
    pub(crate) fn finish(mut self) -> Transcript {
        let mut t = Transcript::default();
        self.extras.insert(
            FINAL_NEWLINE.into(),
            Value::Bool(self.cursor.final_newline()),
        );
        if self.cursor.bom() {
            self.extras.insert(BOM.into(), Value::Bool(true));
        }
        t.extras
            .insert(KEY.into(), Value::Object(std::mem::take(&mut self.extras)));
        self.seq.finish(&mut self.warnings);
        t.warnings = self.warnings;
        t
    }

    /// Every record, and the rest, as one transcript.
    pub(crate) fn into_transcript(mut self) -> Transcript {
        let mut records = Vec::new();
        while self.step(&mut records) {}
        let mut t = self.finish();
        t.records = records;
        t
    }
}

/// A `compacted` line or a `compaction` item as a compaction record with
/// summary `text`; its range is set once every record has its `seq`.
fn compaction(line: &Line, text: String) -> Record {
    let mut r = line.agent_compaction(text, "Codex's own compaction");
    let mut h = Object::new();
    let kept = match (&line.value, line.writes_back()) {
        (Some(v), true) => v.clone(),
        _ => {
            let mut o = Object::new();
            o.insert(hint::TEXT.into(), Value::String(line.text.clone()));
            Value::Object(o)
        }
    };
    h.insert(hint::LINES.into(), Value::Array(vec![kept]));
    r.extra.insert(KEY.into(), Value::Object(h));
    r
}

/// The text parts of a content array (`input_text`, `output_text`,
/// `text`), joined with "\n".
fn text_parts(parts: &[Value]) -> String {
    crate::chat::text_of(parts, &["input_text", "output_text", "text"])
}

/// A `response_item` line as its record, or `None` when ctxfold keeps it
/// whole (the line is left as it was).
fn item_record(line: &mut Line) -> Option<Record> {
    let writes_back = line.writes_back();
    let ts = line.ts();
    let value = line.value.as_mut()?;
    let mut payload = take_payload(value)?;
    let Some(read) = read_item(&payload) else {
        put_payload(value, payload);
        return None;
    };
    // The line with the record's fields `null` is what the hints keep.
    if let Value::Object(p) = &mut payload {
        for k in read.nulls {
            if let Some(v) = p.get_mut(*k) {
                *v = Value::Null;
            }
        }
        if read.one_part {
            set_part_text(p, Value::Null);
        }
    }
    put_payload(value, payload);
    let mut h = read.hints;
    let env = line.value.take()?;
    for (k, v) in line.hints(env, writes_back) {
        h.insert(k, v);
    }
    let mut r = Record::new(0, ts, read.body);
    r.extra.insert(KEY.into(), Value::Object(h));
    Some(r)
}

/// What an item reads as: its record's body, the payload's fields the
/// record holds, whether it holds the text of the one content part, and
/// its hints.
struct Read {
    body: Body,
    nulls: &'static [&'static str],
    one_part: bool,
    hints: Object,
}

/// Read item `payload`, or `None` when it is not one ctxfold reads.
fn read_item(payload: &Value) -> Option<Read> {
    let mut h = Object::new();
    let mut one_part = false;
    let mut nulls: &'static [&'static str] = &[];
    let kind = payload.as_object().and_then(type_tag);
    if let Some("function_call_output" | "custom_tool_call_output" | "local_shell_call_output") =
        kind
    {
        return read_output(payload, h);
    }
    if kind == Some("local_shell_call") {
        return read_local_shell_call(payload, h);
    }
    let body = match Item::from_value(payload.clone()) {
        Item::Message(mut m) => {
            let body = |text: String| match m.role.as_str() {
                "user" => Some(Body::User {
                    content: text,
                    author: None,
                }),
                "assistant" => Some(Body::Assistant { content: text }),
                "developer" | "system" => Some(Body::System { content: text }),
                _ => None,
            };
            match &mut m.content {
                Content::Text(t) => {
                    nulls = &["content"];
                    h.insert(hint::STRING.into(), Value::Bool(true));
                    body(std::mem::take(t))?
                }
                Content::Parts(parts) => {
                    let t = text_parts(parts);
                    // The text of one part is the record's: `null` in the
                    // line kept.
                    one_part = matches!(parts.as_slice(), [p] if Content::part_text(p).is_some());
                    if one_part {
                        h.insert(hint::ONE_PART.into(), Value::Bool(true));
                    } else {
                        h.insert(hint::FNV.into(), Value::String(fingerprint(&t)));
                    }
                    body(t)?
                }
            }
        }
        Item::Reasoning(r) => {
            let texts = |parts: &[Value]| {
                parts
                    .iter()
                    .filter_map(Content::part_text)
                    .collect::<Vec<_>>()
                    .join("\n\n")
            };
            let summary = texts(&r.summary);
            let text = if summary.is_empty() {
                r.content().map(texts).unwrap_or_default()
            } else {
                summary
            };
            h.insert(hint::FNV.into(), Value::String(fingerprint(&text)));
            Body::Reasoning { content: text }
        }
        Item::FunctionCall(f) => {
            let Value::String(raw) = f.arguments else {
                return None;
            };
            let arguments = match JsonText::parse(&raw) {
                Some(j) => {
                    if j.text() != raw {
                        h.insert(hint::ARGUMENTS.into(), Value::String(raw.clone()));
                    }
                    j
                }
                None => {
                    h.insert(hint::ARGUMENTS.into(), Value::String(raw.clone()));
                    JsonText::from_value(&Value::String(raw))
                }
            };
            nulls = &["call_id", "name", "arguments"];
            Body::ToolCall {
                id: f.call_id,
                name: f.name,
                arguments,
            }
        }
        Item::CustomToolCall(c) => {
            nulls = &["call_id", "name", "input"];
            Body::ToolCall {
                id: c.call_id,
                name: c.name,
                arguments: JsonText::from_value(&Value::String(c.input)),
            }
        }
        _ => return None,
    };
    Some(Read {
        body,
        nulls,
        one_part,
        hints: h,
    })
}

/// A `local_shell_call` item (not one ctxfold-wire types).
fn read_local_shell_call(payload: &Value, h: Object) -> Option<Read> {
    let call = LocalShellCall::deserialize(payload).ok()?;
    Some(Read {
        body: Body::ToolCall {
            id: call.call_id,
            name: "local_shell".into(),
            arguments: JsonText::from_value(&call.action),
        },
        nulls: &["call_id", "action"],
        one_part: false,
        hints: h,
    })
}

/// An output item of the three call types, in any form Codex wrote.
fn read_output(payload: &Value, mut h: Object) -> Option<Read> {
    let out = AnyOutput::deserialize(payload).ok()?;
    let (content, nulls): (String, &'static [&'static str]) = match out.output {
        OutputValue::Text(t) => (t, &["call_id", "output"]),
        OutputValue::Parts(parts) => (text_parts(&parts), &["call_id"]),
        OutputValue::Object(o) => {
            let t = o.content.as_ref().and_then(Value::as_str).unwrap_or("");
            (t.to_owned(), &["call_id"])
        }
    };
    if !nulls.contains(&"output") {
        h.insert(hint::FNV.into(), Value::String(fingerprint(&content)));
    }
    Some(Read {
        body: Body::ToolResult {
            id: out.call_id,
            content,
            is_error: false,
        },
        nulls,
        one_part: false,
        hints: h,
    })
}
