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
use crate::session_lines::{
    Line, SessionText, fingerprint, hint, read_lines, split_lines, type_tag, with_turns,
};
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
    let mut warnings = Vec::new();
    let read = read_lines(path, &mut warnings)?;
    Ok(from_lines(read, warnings))
}

/// [`import`] from the file's bytes, already read.
pub fn import_bytes(path: &Path, bytes: &[u8]) -> Transcript {
    let mut warnings = Vec::new();
    let read = split_lines(path, bytes, &mut warnings);
    from_lines(read, warnings)
}

fn from_lines(read: SessionText, mut warnings: Vec<String>) -> Transcript {
    let SessionText {
        lines,
        final_newline,
        bom,
    } = read;
    let mut t = Transcript::default();
    let mut extras = Object::new();
    let mut records = Vec::with_capacity(lines.len());
    for mut line in lines {
        let Some(value @ Value::Object(_)) = &line.value else {
            records.push(line.opaque(KEY));
            continue;
        };
        let env = Envelope::of(value);
        let ty = env.kind.str().unwrap_or("");
        let payload = &env.payload;
        if ty == "session_meta"
            && !extras.contains_key(SESSION_ID)
            && let Some(id) = &payload.id
        {
            extras.insert(SESSION_ID.into(), id.clone());
            if let Some(cwd) = &payload.cwd {
                extras.insert("cwd".into(), cwd.clone());
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
        records.push(rec.unwrap_or_else(|| line.opaque(KEY)));
    }
    extras.insert(FINAL_NEWLINE.into(), Value::Bool(final_newline));
    if bom {
        extras.insert(BOM.into(), Value::Bool(true));
    }
    t.extras.insert(KEY.into(), Value::Object(extras));
    let mut records = with_turns(records, KEY, |r, since| {
        matches!(r.body, Body::User { .. })
            && since
                .iter()
                .any(|r| r.body.is_assistant_side() || matches!(r.body, Body::ToolResult { .. }))
    });
    for (i, r) in records.iter_mut().enumerate() {
        r.seq = i as u64;
    }
    set_ranges(&mut records);
    crate::pairing::pair(&mut records, Some(KEY), &mut warnings);
    t.records = records;
    t.warnings = warnings;
    t
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

/// Every agent compaction covers all the records before it.
fn set_ranges(records: &mut [Record]) {
    let (mut turn, mut holds) = (0u32, false);
    let mut last_visible: Option<(u64, u32)> = None;
    for r in records.iter_mut() {
        match &mut r.body {
            Body::TurnStart => {
                if holds {
                    turn += 1;
                }
                holds = true;
            }
            Body::Compaction(c) if c.note.is_some() && r.extra.contains_key(KEY) => {
                match last_visible {
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
            b if b.is_model_visible() => {
                holds = true;
                last_visible = Some((r.seq, turn));
            }
            _ => {}
        }
    }
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
