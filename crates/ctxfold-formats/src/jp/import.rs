//! Reading a JP folder: its files, and each JP object turned into a
//! ctxfold record (or kept whole as a `jp_record`), with the hints that
//! let export write it back byte for byte.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use ctxfold_core::{Body, Object, Record};
use serde::Deserialize;
use serde_json::Value;

use super::compaction::compaction_from_jp;
use super::encoding::decode_tree;
use super::export::export_record;
use super::turns::{has_no_turns, with_turn_per_request};
use super::{FIELDS, HINTS, JP_RECORD, KEPT_TYPES, NO_IS_ERROR, ORDER};
use crate::chat::{Field, describe};
use crate::{Format, FormatError, Transcript, optional_file, read_json};

fn events_path(path: &Path) -> (PathBuf, PathBuf) {
    if path.is_dir() {
        (path.to_owned(), path.join("events.json"))
    } else {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_owned();
        (dir, path.to_owned())
    }
}

/// Read a JP conversation from its folder (or its `events.json`).
pub fn import(path: &Path) -> Result<Transcript, FormatError> {
    let (dir, events_file) = events_path(path);
    let events = match read_json(&events_file)? {
        Value::Array(a) => a,
        other => {
            return Err(FormatError::shape(
                &events_file,
                Format::Jp,
                format!(
                    "expected a JSON array of JP events, found {}",
                    describe(&other)
                ),
            ));
        }
    };
    let mut t = Transcript::default();
    let mut jp = Object::new();
    let meta_file = dir.join("metadata.json");
    if optional_file(&meta_file)? {
        let meta = read_json(&meta_file)?;
        t.title = JpFields::of(&meta).title.str().map(str::to_owned);
        jp.insert("metadata".into(), meta);
    } else {
        t.warnings.push(format!(
            "{}: missing; no title imported",
            meta_file.display()
        ));
    }
    let base_file = dir.join("base_config.json");
    if optional_file(&base_file)? {
        jp.insert("base_config".into(), read_json(&base_file)?);
    }
    t.extras.insert(HINTS.into(), Value::Object(jp));

    let turnless = has_no_turns(&events);
    let mut records = Vec::with_capacity(events.len());
    for (i, ev) in events.into_iter().enumerate() {
        let (rec, warning) = import_record(i as u64, ev);
        if let Some(w) = warning {
            t.warnings
                .push(format!("{}: event {i}: {w}", events_file.display()));
        }
        records.push(rec);
    }
    t.records = if turnless {
        with_turn_per_request(records)
    } else {
        records
    };
    for (i, rec) in t.records.iter_mut().enumerate() {
        rec.seq = i as u64;
    }
    let mut pairing = Vec::new();
    crate::pairing::pair(&mut t.records, None, &mut pairing);
    for w in pairing {
        t.warnings.push(format!("{}: {w}", events_file.display()));
    }
    Ok(t)
}

/// Keep a JP value whole, as a `jp_record`.
fn verbatim(seq: u64, value: Value) -> Record {
    let mut fields = Object::new();
    fields.insert("value".into(), value);
    Record::new(
        seq,
        String::new(),
        Body::Other {
            kind: JP_RECORD.into(),
            fields: Box::new(fields),
        },
    )
}

/// The fields of JP's own JSON ctxfold checks before taking an event (or
/// `metadata.json`) apart key by key: the rest is taken out field by field
/// as each event type has it (the round trip is byte for byte), not typed.
#[derive(Default, Deserialize)]
#[serde(default)]
struct JpFields<'a> {
    #[serde(rename = "type", borrow)]
    kind: Field<'a>,
    #[serde(borrow)]
    timestamp: Field<'a>,
    #[serde(borrow)]
    author: Field<'a>,
    #[serde(borrow)]
    title: Field<'a>,
}

impl<'a> JpFields<'a> {
    fn of(v: &'a Value) -> JpFields<'a> {
        JpFields::deserialize(v).unwrap_or_default()
    }

    fn of_object(o: &'a Object) -> JpFields<'a> {
        JpFields::deserialize(o).unwrap_or_default()
    }
}

fn import_record(seq: u64, ev: Value) -> (Record, Option<String>) {
    let Value::Object(obj) = ev else {
        let w = format!("expected an object, found {}; kept as it is", describe(&ev));
        return (verbatim(seq, ev), Some(w));
    };
    let keys_order_type_first = obj.keys().next().is_some_and(|k| k == "type");
    let head = JpFields::of_object(&obj);
    let ty = head.kind.str().map(str::to_owned);
    let ts_ok = head.timestamp.str().is_some();
    let Some(ty) = ty.filter(|_| ts_ok) else {
        let w = "no `type` and `timestamp` strings; kept as it is".to_owned();
        return (verbatim(seq, Value::Object(obj)), Some(w));
    };
    let original = obj.clone();
    match convert(seq, &ty, obj, keys_order_type_first) {
        Ok(mut rec) => {
            keep_key_order(&mut rec, &original);
            (rec, None)
        }
        Err(why) => (
            verbatim(seq, Value::Object(original)),
            Some(format!("`{ty}` record {why}; kept as it is")),
        ),
    }
}

pub(super) fn take_str(obj: &mut Object, key: &str) -> Result<String, String> {
    match obj.shift_remove(key) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(format!("has no `{key}` string")),
    }
}

/// Turn one JP object into a ctxfold record, or say what is wrong with it.
fn convert(seq: u64, ty: &str, mut obj: Object, type_first: bool) -> Result<Record, String> {
    let ts = take_str(&mut obj, "timestamp")?;
    obj.shift_remove("type");
    let mut hints = Object::new();
    let kept = KEPT_TYPES.contains(&ty);
    let mut metadata = match if kept {
        None
    } else {
        obj.shift_remove("metadata")
    } {
        None => None,
        Some(mut m @ Value::Object(_)) => {
            decode_tree(&mut m, "/metadata", &mut hints);
            match m {
                Value::Object(m) => Some(m),
                _ => None,
            }
        }
        Some(_) => return Err("has a `metadata` that is not an object".into()),
    };
    let body = match ty {
        "turn_start" => Body::TurnStart,
        "chat_request" => Body::User {
            content: take_str(&mut obj, "content")?,
            author: match JpFields::of_object(&obj).author {
                Field::Str(_) => take_str(&mut obj, "author").ok(),
                _ => None,
            },
        },
        "chat_response" => {
            if obj.contains_key("message") {
                Body::Assistant {
                    content: take_str(&mut obj, "message")?,
                }
            } else if obj.contains_key("reasoning") {
                Body::Reasoning {
                    content: take_str(&mut obj, "reasoning")?,
                }
            } else if let Some(data) = obj.shift_remove("data") {
                Body::Structured { data: data.into() }
            } else {
                return Err("has none of `message`, `reasoning`, `data`".into());
            }
        }
        "tool_call_request" => {
            let id = take_str(&mut obj, "id")?;
            let name = take_str(&mut obj, "name")?;
            let mut arguments = obj.shift_remove("arguments").ok_or("has no `arguments`")?;
            decode_tree(&mut arguments, "/arguments", &mut hints);
            Body::ToolCall {
                id,
                name,
                arguments: arguments.into(),
            }
        }
        "tool_call_response" => {
            let id = take_str(&mut obj, "id")?;
            let mut content = Value::String(take_str(&mut obj, "content")?);
            decode_tree(&mut content, "/content", &mut hints);
            let is_error = match obj.shift_remove("is_error") {
                Some(Value::Bool(b)) => b,
                None => {
                    // Written back without the key while it stays false.
                    hints.insert(NO_IS_ERROR.into(), Value::Bool(true));
                    false
                }
                Some(_) => return Err("has an `is_error` that is not a boolean".into()),
            };
            Body::ToolResult {
                id,
                content: match content {
                    Value::String(s) => s,
                    _ => String::new(),
                },
                is_error,
            }
        }
        "compaction" => {
            let original = obj.clone();
            let c = compaction_from_jp(&mut obj)?;
            // Mapping JP's record is lossy (it has no provenance); keep the
            // original so an unchanged compaction is written back exactly.
            hints.insert("original".into(), Value::Object(original));
            obj.clear();
            Body::Compaction(Box::new(c))
        }
        kept if KEPT_TYPES.contains(&kept) => Body::Other {
            kind: kept.to_owned(),
            fields: Box::new(std::mem::take(&mut obj)),
        },
        _ => return Err("is of a type ctxfold does not know".into()),
    };
    if type_first {
        hints.insert("type_first".into(), Value::Bool(true));
    }
    let mut rec = Record::new(seq, ts, body);
    if let Body::Other { fields, .. } = &mut rec.body {
        // Names a ctxfold log line gives its own meaning would not read
        // back as fields: they wait in the hints.
        let stash = take_reserved(fields, &[]);
        if !stash.is_empty() {
            hints.insert(FIELDS.into(), Value::Object(stash));
        }
    }
    if let Body::Other { .. } = rec.body {
        // A kept record's fields are all verbatim in the body: the hints go
        // in its metadata, which JP's kept records do not have.
        if !hints.is_empty() {
            let mut m = Object::new();
            m.insert(HINTS.into(), Value::Object(hints));
            rec.metadata = Some(Box::new(m));
        }
        return Ok(rec);
    }
    // Fields JP has that the mapping does not name: kept, written back;
    // those whose names a ctxfold log line reads as its own wait in the
    // hints, so the record survives the store unchanged.
    let mut own = Object::new();
    rec.body.write_fields(&mut own);
    let mut names: Vec<&str> = own.keys().map(String::as_str).collect();
    if matches!(rec.body, Body::User { .. }) {
        names.push("author");
    }
    let stash = take_reserved(&mut obj, &names);
    if !stash.is_empty() {
        hints.insert(FIELDS.into(), Value::Object(stash));
    }
    rec.extra = obj.into();
    if !hints.is_empty() {
        rec.extra.insert(HINTS.into(), Value::Object(hints));
    }
    rec.metadata = metadata.take().map(Box::new);
    Ok(rec)
}

/// Take the keys of `obj` a ctxfold log line reads as its own (`seq`, `ts`,
/// `type`, `metadata`, the hints key, and `names`).
fn take_reserved(obj: &mut Object, names: &[&str]) -> Object {
    let reserved =
        |k: &str| ["seq", "ts", "type", "metadata", HINTS].contains(&k) || names.contains(&k);
    let keys: Vec<String> = obj.keys().filter(|k| reserved(k)).cloned().collect();
    keys.into_iter()
        .filter_map(|k| obj.shift_remove(&k).map(|v| (k, v)))
        .collect()
}

/// The hints object of `rec` (in `metadata` for a kept record, else in
/// `extra`), created when missing.
fn hints_mut(rec: &mut Record) -> &mut Object {
    let holder: &mut Object = match rec.body {
        Body::Other { .. } => rec.metadata.get_or_insert_default(),
        _ => &mut rec.extra,
    };
    let entry = holder
        .entry(HINTS.to_owned())
        .or_insert_with(|| Value::Object(Object::new()));
    if !entry.is_object() {
        *entry = Value::Object(Object::new());
    }
    match entry {
        Value::Object(o) => o,
        _ => unreachable!("made an object above"),
    }
}

/// Remember the JP record's key order when export would write another.
fn keep_key_order(rec: &mut Record, original: &Object) {
    let Some(Value::Object(written)) = export_record(rec, &HashSet::new()) else {
        return;
    };
    if written.keys().eq(original.keys()) {
        return;
    }
    let order = original.keys().map(|k| Value::String(k.clone())).collect();
    hints_mut(rec).insert(ORDER.into(), Value::Array(order));
}
