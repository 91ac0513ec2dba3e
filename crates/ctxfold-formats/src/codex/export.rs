//! Writing a Codex rollout: each record back to its line (or a new one),
//! and, for a new session, the new id.

use ctxfold_core::{Body, Object, Record};
use ctxfold_wire::responses::{CallOutput, Content, FunctionCall, Item, Message};
use serde_json::Value;

use super::line::{Envelope, Payload, payload_mut, set_part_text};
use super::{BOM, FINAL_NEWLINE, KEY, NEW_SESSION, SESSION_ID, extra};
use crate::pairing::export_id;
use crate::session_lines::{Field, Hints, Out, hint};
use crate::{RecordSource, Transcript};

/// The rollout's bytes: every record back to its line (see the module
/// docs); a new session when the transcript says so
/// ([`super::new_session`]).
pub fn export_bytes(t: &Transcript) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = export_to(t, &mut out);
    out
}

/// [`export_bytes`] written to `w` a line at a time: one line's JSON
/// alive at once, not the whole file's.
pub fn export_to(t: &Transcript, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    export_records(t, &t.records, w)
}

/// [`export_to`] of the records of `records`, read one at a time (twice:
/// the calls first; `t`'s own are not read: its extras say which session
/// it is).
pub(crate) fn export_records(
    t: &Transcript,
    records: &dyn RecordSource,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let fresh = extra(t, NEW_SESSION).is_some();
    // A new session leaves out Codex's events about calls its view does
    // not hold (their output, again, for the user's screen).
    let mut calls: std::collections::HashSet<String> = std::collections::HashSet::new();
    if fresh {
        records.each(&mut |r| {
            if let Body::ToolCall { id, .. } = &r.body {
                calls.insert(export_id(r, id, KEY).to_owned());
            }
            Ok(())
        })?;
    }
    let final_newline = extra(t, FINAL_NEWLINE).and_then(Value::as_bool) != Some(false);
    let bom = extra(t, BOM).and_then(Value::as_bool) == Some(true);
    let ids = match (
        extra(t, NEW_SESSION).and_then(Value::as_str),
        extra(t, SESSION_ID).and_then(Value::as_str),
    ) {
        (Some(new), Some(old)) => Some((new, old)),
        _ => None,
    };
    let mut out = crate::session_lines::LineWriter::new(w, final_newline, bom)?;
    let mut ordinal = 0u64;
    let mut put = |mut l: Out| {
        if let (Some((new, old)), Some(v)) = (ids, l.value.as_mut()) {
            replace_strings(v, old, new);
            if let Value::Object(o) = v
                && matches!(Envelope::of_object(o).ordinal, Field::U64(_))
            {
                o.insert("ordinal".into(), Value::from(ordinal));
            }
            l.raw = None;
        }
        ordinal += 1;
        out.write(&l)
    };
    if extra(t, SESSION_ID).is_none() {
        // A transcript of another format: a session of its own, opened as
        // Codex opens one.
        put(session_meta(t))?;
    }
    records.each(&mut |r| {
        // Hints packed while compacting are read one record at a time.
        let unpacked = crate::session_lines::unpacked(r, KEY);
        let r = unpacked.as_ref().unwrap_or(r);
        if fresh && about_folded_call(r, &calls) {
            return Ok(());
        }
        for l in record_lines(r) {
            put(l)?;
        }
        Ok(())
    })?;
    out.finish()
}

/// A `session_meta` line for a transcript that has none: the new
/// session's id (or a fresh one), the current folder.
fn session_meta(t: &Transcript) -> Out {
    let id = extra(t, NEW_SESSION)
        .and_then(Value::as_str)
        .map_or_else(crate::session_lines::uuid_v7, str::to_owned);
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| ".".into());
    let mut p = Object::new();
    p.insert("id".into(), Value::String(id));
    p.insert("timestamp".into(), Value::String(now.clone()));
    p.insert("cwd".into(), Value::String(cwd));
    p.insert("originator".into(), Value::String("ctxfold".into()));
    p.insert(
        "cli_version".into(),
        Value::String(env!("CARGO_PKG_VERSION").into()),
    );
    p.insert("source".into(), Value::String("cli".into()));
    let mut o = Object::new();
    o.insert("timestamp".into(), Value::String(now));
    o.insert("type".into(), Value::String("session_meta".into()));
    o.insert("payload".into(), Value::Object(p));
    Out {
        value: Some(Value::Object(o)),
        raw: None,
    }
}

/// An `event_msg` line about a call (by `call_id`, or its item's
/// `call_id`, or the `id` of an item that is a command or tool call) that
/// is not among `calls`. (A command run by code mode's `exec` has an id of
/// its own, no call's: kept.)
fn about_folded_call(r: &Record, calls: &std::collections::HashSet<String>) -> bool {
    let Body::Other { kind, fields } = &r.body else {
        return false;
    };
    let Some(line) = Hints(fields).line_value().filter(|_| kind == KEY) else {
        return false;
    };
    let env = Envelope::of(line);
    if env.kind.str() != Some("event_msg") {
        return false;
    }
    let p = &env.payload;
    let item = p.item.as_ref();
    let item_is_call = item
        .and_then(|i| i.kind.str())
        .is_some_and(|t| t.contains("Command") || t.contains("ToolCall"));
    let item_id = item.filter(|_| item_is_call).and_then(|i| i.id.str());
    [p.call_id.str(), item.and_then(|i| i.call_id.str()), item_id]
        .into_iter()
        .flatten()
        .any(|id| !calls.contains(id))
}

fn replace_strings(v: &mut Value, old: &str, new: &str) {
    match v {
        Value::String(s) if s == old => *s = new.to_owned(),
        Value::Array(a) => a.iter_mut().for_each(|v| replace_strings(v, old, new)),
        Value::Object(o) => o.values_mut().for_each(|v| replace_strings(v, old, new)),
        _ => {}
    }
}

fn record_lines(r: &Record) -> Vec<Out> {
    let h = Hints::of(r, KEY);
    match &r.body {
        Body::TurnStart | Body::CompactionReset(_) => Vec::new(),
        Body::Other { kind, fields } if kind == KEY => vec![Out::of_opaque(fields)],
        Body::Other { .. } => Vec::new(),
        Body::Compaction(_) => match h.and_then(Hints::lines) {
            Some(lines) => lines.iter().map(Out::kept).collect(),
            None => Vec::new(),
        },
        _ => match item_line(r, h) {
            Some(v) => vec![Out {
                value: Some(v),
                raw: h.and_then(Hints::raw).map(str::to_owned),
            }],
            None => Vec::new(),
        },
    }
}

fn unchanged(h: Option<Hints>, text: &str) -> bool {
    h.is_some_and(|h| h.unchanged(text))
}

/// The line a conversation record writes, or `None` when it writes none.
fn item_line(r: &Record, h: Option<Hints>) -> Option<Value> {
    let Some(env) = h.and_then(Hints::line) else {
        return made_line(r);
    };
    let mut env = env.clone();
    let Some(p) = payload_mut(&mut env) else {
        return made_line(r);
    };
    let set = |p: &mut Object, k: &str, v: Value| {
        p.insert(k.to_owned(), v);
    };
    match &r.body {
        Body::User { content, .. } | Body::Assistant { content } | Body::System { content } => {
            if h.is_some_and(|h| h.has(hint::STRING)) {
                set(p, "content", content.clone().into());
            } else if h.is_some_and(|h| h.has(hint::ONE_PART)) {
                set_part_text(p, content.clone().into());
            } else if !unchanged(h, content) {
                let kind = if matches!(r.body, Body::Assistant { .. }) {
                    "output_text"
                } else {
                    "input_text"
                };
                set(
                    p,
                    "content",
                    ctxfold_wire::value(&Content::text_part(kind, content.as_str())),
                );
            }
        }
        Body::Reasoning { content } => {
            if !unchanged(h, content) {
                return None;
            }
        }
        Body::ToolCall {
            id,
            name,
            arguments,
        } => {
            let id = Value::from(export_id(r, id, KEY));
            match Payload::of_object(p).kind.str() {
                Some("custom_tool_call") => {
                    set(p, "call_id", id);
                    set(p, "name", name.clone().into());
                    let input = match arguments.value() {
                        Value::String(s) => s,
                        _ => arguments.text().to_owned(),
                    };
                    set(p, "input", input.into());
                }
                Some("local_shell_call") => {
                    set(p, "call_id", id);
                    set(p, "action", arguments.value());
                }
                _ => {
                    set(p, "call_id", id);
                    set(p, "name", name.clone().into());
                    set(p, "arguments", arguments_text(h, arguments).into());
                }
            }
        }
        Body::ToolResult { id, content, .. } => {
            set(p, "call_id", export_id(r, id, KEY).into());
            // Output kept as it was (parts) while its text is unchanged.
            let kept = Payload::of_object(p).output != Field::Null;
            let keep = kept && unchanged(h, content);
            if !keep {
                set(p, "output", content.clone().into());
            }
        }
        Body::Structured { data } => {
            return made_line_of(r, message("assistant", "output_text", data.text()));
        }
        _ => return None,
    }
    Some(Value::Object(env))
}

/// The `arguments` text: the text read while it still reads as the
/// arguments the record holds, else the arguments' JSON.
fn arguments_text(h: Option<Hints>, arguments: &ctxfold_core::json_text::JsonText) -> String {
    if let Some(raw) = h.and_then(|h| h.str(hint::ARGUMENTS)) {
        let read = ctxfold_core::json_text::JsonText::parse(raw).unwrap_or_else(|| {
            ctxfold_core::json_text::JsonText::from_value(&Value::String(raw.to_owned()))
        });
        if read == *arguments {
            return raw.to_owned();
        }
    }
    match arguments.value() {
        Value::String(s) => s,
        _ => arguments.text().to_owned(),
    }
}

fn message(role: &str, kind: &str, text: &str) -> Item {
    Item::Message(Message {
        role: role.to_owned(),
        content: Content::text_part(kind, text),
        extra: Object::new(),
    })
}

fn made_line_of(r: &Record, payload: Item) -> Option<Value> {
    let mut o = Object::new();
    let ts = if r.ts.is_empty() {
        jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string()
    } else {
        r.ts.to_string()
    };
    o.insert("timestamp".into(), Value::String(ts));
    o.insert("type".into(), Value::String("response_item".into()));
    o.insert("payload".into(), ctxfold_wire::value(&payload));
    Some(Value::Object(o))
}

/// A line for a record that came from no line (a summary ctxfold made, a
/// record of another format).
fn made_line(r: &Record) -> Option<Value> {
    let payload = match &r.body {
        Body::User { content, .. } => message("user", "input_text", content),
        Body::Assistant { content } => message("assistant", "output_text", content),
        Body::System { content } => message("developer", "input_text", content),
        Body::Structured { data } => message("assistant", "output_text", data.text()),
        Body::ToolCall {
            id,
            name,
            arguments,
        } => Item::FunctionCall(FunctionCall {
            call_id: export_id(r, id, KEY).into(),
            name: name.clone(),
            arguments: Value::String(arguments_text(None, arguments)),
            extra: Object::new(),
        }),
        Body::ToolResult { id, content, .. } => Item::FunctionCallOutput(CallOutput {
            call_id: export_id(r, id, KEY).into(),
            output: Content::Text(content.clone()),
            extra: Object::new(),
        }),
        _ => return None,
    };
    made_line_of(r, payload)
}
