//! Reading a Codex rollout: each line into its record (see the module
//! docs for the mapping).

use std::path::Path;

use ctxfold_core::json_text::JsonText;
use ctxfold_core::{Body, Object, Record};
use serde_json::Value;

use super::{BOM, FINAL_NEWLINE, KEY, SESSION_ID};
use crate::session_lines::{Line, SessionText, fingerprint, read_lines, split_lines, with_turns};
use crate::{FormatError, Transcript};

/// Whether the first line of a file (parsed) is one Codex writes:
/// `{timestamp, type, payload}` with a type of its own.
pub fn looks_like(first: &Object) -> bool {
    matches!(
        first.get("type").and_then(Value::as_str),
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
    for line in &lines {
        let Some(Value::Object(obj)) = &line.value else {
            records.push(line.opaque(KEY));
            continue;
        };
        let ty = obj.get("type").and_then(Value::as_str).unwrap_or("");
        let payload = obj.get("payload").and_then(Value::as_object);
        if ty == "session_meta"
            && !extras.contains_key(SESSION_ID)
            && let Some(id) = payload.and_then(|p| p.get("id"))
        {
            extras.insert(SESSION_ID.into(), id.clone());
            if let Some(cwd) = payload.and_then(|p| p.get("cwd")) {
                extras.insert("cwd".into(), cwd.clone());
            }
        }
        let item_type = payload
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let rec = match (ty, item_type) {
            ("compacted", _) => Some(compaction(line, payload, false)),
            ("response_item", "compaction") => Some(compaction(line, payload, true)),
            ("response_item", _) => item_record(line, obj),
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

/// A `compacted` line or a `compaction` item as a compaction record; its
/// range is set once every record has its `seq`.
fn compaction(line: &Line, payload: Option<&Object>, encrypted: bool) -> Record {
    let text = if encrypted {
        let n = payload
            .and_then(|p| p.get("encrypted_content"))
            .and_then(Value::as_str)
            .map_or(0, str::len);
        format!(
            "[The provider compacted the conversation before this point; its compaction is encrypted ({n} characters) and only the provider can read it.]"
        )
    } else {
        payload
            .and_then(|p| p.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let mut r = line.agent_compaction(text, "Codex's own compaction");
    let mut h = Object::new();
    let kept = match (&line.value, line.writes_back()) {
        (Some(v), true) => v.clone(),
        _ => {
            let mut o = Object::new();
            o.insert("text".into(), Value::String(line.text.clone()));
            Value::Object(o)
        }
    };
    h.insert("lines".into(), Value::Array(vec![kept]));
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
/// whole.
fn item_record(line: &Line, obj: &Object) -> Option<Record> {
    let item = obj.get("payload")?.as_object()?;
    let s = |k: &str| item.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut env = obj.clone();
    let mut h = Object::new();
    let null = |env: &mut Object, keys: &[&str]| {
        if let Some(Value::Object(p)) = env.get_mut("payload") {
            for k in keys {
                if p.contains_key(*k) {
                    p.insert((*k).to_owned(), Value::Null);
                }
            }
        }
    };
    let body = match item.get("type").and_then(Value::as_str)? {
        "message" => {
            let text = match item.get("content") {
                Some(Value::String(t)) => {
                    null(&mut env, &["content"]);
                    h.insert("string".into(), Value::Bool(true));
                    t.clone()
                }
                Some(Value::Array(parts)) => {
                    let t = text_parts(parts);
                    if parts.len() == 1 && parts[0].get("text").is_some_and(Value::is_string) {
                        if let Some(Value::Object(p)) = env.get_mut("payload")
                            && let Some(Value::Array(c)) = p.get_mut("content")
                            && let Some(Value::Object(part)) = c.get_mut(0)
                        {
                            part.insert("text".into(), Value::Null);
                        }
                        h.insert("one_part".into(), Value::Bool(true));
                    } else {
                        h.insert("fnv".into(), Value::String(fingerprint(&t)));
                    }
                    t
                }
                _ => return None,
            };
            match s("role").as_deref() {
                Some("user") => Body::User {
                    content: text,
                    author: None,
                },
                Some("assistant") => Body::Assistant { content: text },
                Some("developer" | "system") => Body::System { content: text },
                _ => return None,
            }
        }
        "reasoning" => {
            let summary = item
                .get("summary")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n\n")
                })
                .unwrap_or_default();
            let text = if summary.is_empty() {
                item.get("content")
                    .and_then(Value::as_array)
                    .map(|a| text_parts_reasoning(a))
                    .unwrap_or_default()
            } else {
                summary
            };
            h.insert("fnv".into(), Value::String(fingerprint(&text)));
            Body::Reasoning { content: text }
        }
        "function_call" => {
            let raw = s("arguments")?;
            let arguments = match JsonText::parse(&raw) {
                Some(j) => {
                    if j.text() != raw {
                        h.insert("arguments".into(), Value::String(raw.clone()));
                    }
                    j
                }
                None => {
                    h.insert("arguments".into(), Value::String(raw.clone()));
                    JsonText::from_value(&Value::String(raw.clone()))
                }
            };
            null(&mut env, &["call_id", "name", "arguments"]);
            Body::ToolCall {
                id: s("call_id")?,
                name: s("name")?,
                arguments,
            }
        }
        "custom_tool_call" => {
            null(&mut env, &["call_id", "name", "input"]);
            Body::ToolCall {
                id: s("call_id")?,
                name: s("name")?,
                arguments: JsonText::from_value(&Value::String(s("input")?)),
            }
        }
        "local_shell_call" => {
            null(&mut env, &["call_id", "action"]);
            Body::ToolCall {
                id: s("call_id")?,
                name: "local_shell".into(),
                arguments: JsonText::from_value(item.get("action")?),
            }
        }
        "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
            let id = s("call_id")?;
            let content = match item.get("output") {
                Some(Value::String(t)) => {
                    null(&mut env, &["output"]);
                    t.clone()
                }
                Some(Value::Array(parts)) => {
                    let t = text_parts(parts);
                    h.insert("fnv".into(), Value::String(fingerprint(&t)));
                    t
                }
                Some(Value::Object(o)) => {
                    let t = o
                        .get("content")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    h.insert("fnv".into(), Value::String(fingerprint(&t)));
                    t
                }
                _ => return None,
            };
            null(&mut env, &["call_id"]);
            Body::ToolResult {
                id,
                content,
                is_error: false,
            }
        }
        _ => return None,
    };
    for (k, v) in line.hints(Value::Object(env)) {
        h.insert(k, v);
    }
    let mut r = Record::new(0, line.ts(), body);
    r.extra.insert(KEY.into(), Value::Object(h));
    Some(r)
}

fn text_parts_reasoning(parts: &[Value]) -> String {
    parts
        .iter()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n\n")
}
