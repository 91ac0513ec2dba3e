//! Writing JP: each record back to the JP object it came from (or one JP
//! would write), and the folder's files written as a unit.

use std::collections::HashSet;
use std::path::Path;

use ctxfold_core::{Body, Object, Record};
use serde_json::Value;

use super::compaction::{compaction_from_jp, compaction_to_jp};
use super::encoding::encode_tree;
use super::{FIELDS, HINTS, JP_RECORD, KEPT_TYPES, NO_IS_ERROR, ORDER, SYNTHESIZED};
use crate::output::Protect;
use crate::{FormatError, Transcript};

/// The JP object for one record, or `None` when JP cannot hold it.
pub(super) fn export_record(rec: &Record, revoked: &HashSet<u64>) -> Option<Value> {
    let hints = match &rec.body {
        Body::Other { .. } => rec.metadata.as_ref().and_then(|m| m.get(HINTS)),
        // Read back from a ctxfold log, a compaction's unknown fields (the
        // hints among them) are the compaction's own.
        Body::Compaction(c) => rec.extra.get(HINTS).or_else(|| c.extra.get(HINTS)),
        _ => rec.extra.get(HINTS),
    }
    .and_then(Value::as_object);
    let (ty, mut fields): (&str, Object) = match &rec.body {
        Body::TurnStart if hints.and_then(|h| h.get(SYNTHESIZED)) == Some(&Value::Bool(true)) => {
            // Made on import; the file JP wrote did not have it.
            return None;
        }
        Body::TurnStart => ("turn_start", Object::new()),
        Body::User { content, author } => {
            let mut o = one("content", content);
            if let Some(a) = author {
                o.insert("author".into(), Value::String(a.clone()));
            }
            ("chat_request", o)
        }
        Body::Assistant { content } => ("chat_response", one("message", content)),
        Body::Reasoning { content } => ("chat_response", one("reasoning", content)),
        Body::Structured { data } => {
            let mut o = Object::new();
            o.insert("data".into(), data.value());
            ("chat_response", o)
        }
        Body::ToolCall {
            id,
            name,
            arguments,
        } => {
            let mut args = arguments.value();
            encode_tree(&mut args, "/arguments", hints);
            let mut o = one("id", id);
            o.insert("name".into(), Value::String(name.clone()));
            o.insert("arguments".into(), args);
            ("tool_call_request", o)
        }
        Body::ToolResult {
            id,
            content,
            is_error,
        } => {
            let mut c = Value::String(content.clone());
            encode_tree(&mut c, "/content", hints);
            let mut o = one("id", id);
            o.insert("content".into(), c);
            let absent = hints.and_then(|h| h.get(NO_IS_ERROR)) == Some(&Value::Bool(true));
            if *is_error || !absent {
                o.insert("is_error".into(), Value::Bool(*is_error));
            }
            ("tool_call_response", o)
        }
        Body::Compaction(c) => {
            if revoked.contains(&rec.seq) {
                return None;
            }
            // ctxfold's own hint (the compaction as JP wrote it), not JP's
            // or an API's shape.
            let original = hints
                .and_then(|h| h.get("original"))
                .and_then(Value::as_object);
            let mut current = c.as_ref().clone();
            current.extra.shift_remove(HINTS);
            let fields = match original {
                Some(o) if compaction_from_jp(&mut o.clone()).ok() == Some(current) => o.clone(),
                _ => compaction_to_jp(c),
            };
            ("compaction", fields)
        }
        Body::Other { kind, fields } if KEPT_TYPES.contains(&kind.as_str()) => {
            (kind.as_str(), (**fields).clone())
        }
        Body::Other { kind, fields } if kind == JP_RECORD => {
            // The event kept whole, in ctxfold's own record field.
            return fields.get("value").cloned();
        }
        Body::System { .. } | Body::CompactionReset(_) | Body::Other { .. } => return None,
    };
    for (k, v) in &rec.extra {
        if k != HINTS {
            fields.insert(k.clone(), v.clone());
        }
    }
    if let (Some(m), false) = (&rec.metadata, matches!(rec.body, Body::Other { .. })) {
        let mut m = Value::Object((**m).clone());
        encode_tree(&mut m, "/metadata", hints);
        fields.insert("metadata".into(), m);
    }
    // ctxfold's own hint: where the event's `type` stood.
    let type_first = hints
        .and_then(|h| h.get("type_first"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if let Some(Value::Object(stash)) = hints.and_then(|h| h.get(FIELDS)) {
        for (k, v) in stash {
            fields.insert(k.clone(), v.clone());
        }
    }
    let mut out = Object::new();
    let ts = Value::String(rec.ts.to_string());
    let ty = Value::String(ty.to_owned());
    if type_first {
        out.insert("type".into(), ty);
        out.insert("timestamp".into(), ts);
    } else {
        out.insert("timestamp".into(), ts);
        out.insert("type".into(), ty);
    }
    out.extend(fields);
    if let Some(Value::Array(order)) = hints.and_then(|h| h.get(ORDER)) {
        // The keys JP wrote, in its order; any the record gained since
        // come after them.
        let mut ordered = Object::new();
        for k in order.iter().filter_map(Value::as_str) {
            if let Some(v) = out.shift_remove(k) {
                ordered.insert(k.to_owned(), v);
            }
        }
        ordered.extend(out);
        out = ordered;
    }
    Some(Value::Object(out))
}

fn one(key: &str, value: &str) -> Object {
    let mut o = Object::new();
    o.insert(key.into(), Value::String(value.to_owned()));
    o
}

/// The JP `events.json` array for `records`.
pub fn events_json(records: &[Record]) -> Value {
    let revoked = ctxfold_core::log::revoked_seqs(records);
    // An answer cut short that a retry replaced is not part of the
    // conversation JP would go on with.
    let replaced = ctxfold_core::cut_short::replaced(records);
    Value::Array(
        records
            .iter()
            .zip(replaced)
            .filter(|(_, replaced)| !replaced)
            .filter_map(|(r, _)| export_record(r, &revoked))
            .collect(),
    )
}

/// Write a JP conversation folder at `path`: `events.json`, `metadata.json`
/// and, when the conversation had one, `base_config.json`. The folder is
/// written as a unit (see [`crate::output::write_folder`]).
pub fn export(t: &Transcript, path: &Path) -> Result<(), FormatError> {
    export_protected(t, path, &Protect::none())
}

/// [`export`], refusing an output `protect` protects.
pub fn export_protected(t: &Transcript, path: &Path, protect: &Protect) -> Result<(), FormatError> {
    let jp = t.extras.get(HINTS).and_then(Value::as_object);
    let mut files = vec![(
        "events.json",
        pretty(&path.join("events.json"), &events_json(&t.records))?,
    )];
    // JP's `metadata.json` and `base_config.json`, kept whole in the
    // extras: free-form files ctxfold writes back as they were.
    let metadata = match jp.and_then(|j| j.get("metadata")) {
        Some(m) => m.clone(),
        None => {
            let mut m = Object::new();
            if let Some(title) = &t.title {
                m.insert("title".into(), Value::String(title.clone()));
            }
            let last = t.records.iter().rev().find(|r| !r.ts.is_empty());
            if let Some(r) = last {
                m.insert("last_activated_at".into(), Value::String(r.ts.to_string()));
            }
            Value::Object(m)
        }
    };
    files.push((
        "metadata.json",
        pretty(&path.join("metadata.json"), &metadata)?,
    ));
    if let Some(base) = jp.and_then(|j| j.get("base_config")) {
        files.push((
            "base_config.json",
            pretty(&path.join("base_config.json"), base)?,
        ));
    }
    crate::output::write_folder(path, &files, protect)
}

/// JP writes pretty JSON (two-space indent) with a final newline.
fn pretty(path: &Path, v: &Value) -> Result<Vec<u8>, FormatError> {
    let mut bytes = serde_json::to_vec_pretty(v).map_err(|e| FormatError::json(path, &e))?;
    bytes.push(b'\n');
    Ok(bytes)
}
