//! JP conversations: a folder with `events.json` (a JSON array of records),
//! `metadata.json` and, in the newer layout, `base_config.json`. In the
//! legacy layout the first record is a config delta that holds the base
//! config inline.
//!
//! | JP record | ctxfold record |
//! | --- | --- |
//! | `turn_start` | `turn_start` |
//! | `chat_request {content, author}` | `user` |
//! | in a file without `turn_start`: `chat_request` after a conversation event, outside a tool call and its result | a synthesized `turn_start` (hint `synthesized`), then `user` |
//! | `chat_response {message}` | `assistant` |
//! | `chat_response {reasoning, metadata}` | `reasoning` |
//! | `chat_response {data}` | `structured` |
//! | `tool_call_request {id, name, arguments}` | `tool_call` |
//! | `tool_call_response {id, content, is_error}` | `tool_result` |
//! | `compaction {from_turn, to_turn, summary, reasoning, tool_calls}` | `compaction` |
//! | `config_delta`, `inquiry_request`, `inquiry_response` | kept, same type, fields verbatim |
//! | anything else, or a record that cannot be understood | `jp_record`, the whole JP object verbatim, with a warning |
//!
//! JP stores tool arguments (every string, recursively), tool results and
//! metadata strings base64-encoded. Import decodes them; a value that is not
//! base64 (or not UTF-8 once decoded) stays as it is. Values that do not
//! re-encode to the same bytes with the standard alphabet (URL-safe, no
//! padding, not base64 at all) get a hint in the record's `extra["jp"]` so
//! export writes them back exactly. Export of an imported conversation
//! reproduces `events.json` byte for byte, also after a trip through
//! ctxfold's log: every field is kept (a request's string `author` as the
//! user record's author, others in `extra`); fields whose names a log line
//! reads as its own (`seq`, `ts`, `type`, `metadata`, `jp`, the record's
//! body fields) wait in the hints (`fields`), as do a key order export
//! would not write (`order`) and a response without `is_error`.
//!
//! JP files written before JP recorded turns (the legacy layout, and some
//! early files of the newer one) have no `turn_start` record at all: every
//! `chat_request` was its own `jp query`, its own turn. Read as they are,
//! they would be one turn (SPEC §2), out of reach of every turn-based rule;
//! so when a file holds no `turn_start` (and no JP `compaction`, whose turn
//! numbers count the file's own `turn_start`s), import puts a `turn_start`
//! before each request that follows a conversation event, except a request
//! between a tool call and its result. These records carry the hint
//! `synthesized` and export leaves them out, so the round trip stays byte
//! for byte.
//!
//! ctxfold records JP cannot hold are left out of an export: `system`
//! prompts (JP keeps them in config), `compaction_reset` records (JP has no
//! undo record; revoked compactions are left out instead), and records that
//! came from other formats.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use ctxfold_core::compaction::{
    Compaction, Provenance, ReasoningPolicy, Source, Summary, ToolPolicy,
};
use ctxfold_core::{Body, Kind, Object, Record};
use serde_json::Value;

use crate::chat::describe;
use crate::output::Protect;
use crate::{Format, FormatError, Transcript, optional_file, read_json};

/// Key of the hints object in a record's `extra`.
const HINTS: &str = "jp";
/// Hint: fields whose names ctxfold's log gives a meaning, kept aside.
const FIELDS: &str = "fields";
/// Hint: a tool response had no `is_error`.
const NO_IS_ERROR: &str = "no_is_error";
/// Hint: the record's key order, when export would write another.
const ORDER: &str = "order";
/// Hint: a `turn_start` the importer made for a request in a file without
/// any.
const SYNTHESIZED: &str = "synthesized";
/// Kind of a record kept whole because it was not understood.
const JP_RECORD: &str = "jp_record";
/// JP record types kept under their own names, fields verbatim.
const KEPT_TYPES: [&str; 3] = ["config_delta", "inquiry_request", "inquiry_response"];

/// How a base64 string was written, when not standard and padded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Standard,
    UrlSafe,
    NoPad,
    UrlSafeNoPad,
    /// Not base64: the value is kept as it is.
    Raw,
}

impl Encoding {
    fn name(self) -> &'static str {
        match self {
            Encoding::Standard => "standard",
            Encoding::UrlSafe => "url",
            Encoding::NoPad => "nopad",
            Encoding::UrlSafeNoPad => "url_nopad",
            Encoding::Raw => "raw",
        }
    }
    fn from_name(s: &str) -> Encoding {
        match s {
            "url" => Encoding::UrlSafe,
            "nopad" => Encoding::NoPad,
            "url_nopad" => Encoding::UrlSafeNoPad,
            "raw" => Encoding::Raw,
            _ => Encoding::Standard,
        }
    }
    fn encode(self, text: &str) -> String {
        match self {
            Encoding::Standard => STANDARD.encode(text),
            Encoding::UrlSafe => URL_SAFE.encode(text),
            Encoding::NoPad => STANDARD_NO_PAD.encode(text),
            Encoding::UrlSafeNoPad => URL_SAFE_NO_PAD.encode(text),
            Encoding::Raw => text.to_owned(),
        }
    }
}

/// Decode one JP base64 string: the text and how it was written.
fn decode(s: &str) -> (String, Encoding) {
    let tries: [(&base64::engine::GeneralPurpose, Encoding); 4] = [
        (&STANDARD, Encoding::Standard),
        (&URL_SAFE, Encoding::UrlSafe),
        (&STANDARD_NO_PAD, Encoding::NoPad),
        (&URL_SAFE_NO_PAD, Encoding::UrlSafeNoPad),
    ];
    for (engine, enc) in tries {
        if let Ok(bytes) = engine.decode(s)
            && let Ok(text) = String::from_utf8(bytes)
            && engine.encode(&text) == s
        {
            return (text, enc);
        }
    }
    (s.to_owned(), Encoding::Raw)
}

fn pointer_push(base: &str, key: &str) -> String {
    format!("{base}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// Decode every string in `v` in place, noting non-standard encodings.
fn decode_tree(v: &mut Value, pointer: &str, hints: &mut Object) {
    match v {
        Value::String(s) => {
            let (text, enc) = decode(s);
            if enc != Encoding::Standard {
                hints.insert(pointer.to_owned(), Value::String(enc.name().into()));
            }
            *s = text;
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                decode_tree(item, &format!("{pointer}/{i}"), hints);
            }
        }
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                decode_tree(item, &pointer_push(pointer, k), hints);
            }
        }
        _ => {}
    }
}

/// Encode every string in `v` in place, as the hints say.
fn encode_tree(v: &mut Value, pointer: &str, hints: Option<&Object>) {
    match v {
        Value::String(s) => {
            let enc = hints
                .and_then(|h| h.get(pointer))
                .and_then(Value::as_str)
                .map_or(Encoding::Standard, Encoding::from_name);
            *s = enc.encode(s);
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                encode_tree(item, &format!("{pointer}/{i}"), hints);
            }
        }
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                encode_tree(item, &pointer_push(pointer, k), hints);
            }
        }
        _ => {}
    }
}

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
        t.title = meta.get("title").and_then(Value::as_str).map(str::to_owned);
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

/// Whether `events` were written before JP recorded turns: no
/// `turn_start` at all, each `chat_request` having been its own `jp
/// query`. A file with a JP `compaction` record is not read so: JP numbered
/// its turns by the `turn_start`s the file has, and turns made up here
/// would move them.
fn has_no_turns(events: &[Value]) -> bool {
    !events.iter().any(|ev| {
        matches!(
            ev.get("type").and_then(Value::as_str),
            Some("turn_start" | "compaction")
        )
    })
}

/// The records of a file without `turn_start`, with a synthesized
/// `turn_start` before every user request that follows a conversation
/// event, so that each request opens a turn as it did in JP. A request between a tool call
/// and its result (an interrupt reply) opens none: a turn never parts a
/// call from its result. The synthesized records are marked, and export
/// leaves them out.
fn with_turn_per_request(records: Vec<Record>) -> Vec<Record> {
    // Records inside a call–result pair: a diff array over the spans from
    // each call to the first later result with its id.
    let mut inside = vec![0i64; records.len() + 1];
    let mut pending: HashMap<&str, VecDeque<usize>> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        match &r.body {
            Body::ToolCall { id, .. } => pending.entry(id).or_default().push_back(i),
            Body::ToolResult { id, .. } => {
                if let Some(call) = pending.get_mut(id.as_str()).and_then(|q| q.pop_front()) {
                    inside[call + 1] += 1;
                    inside[i] -= 1;
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::with_capacity(records.len() + records.len() / 4);
    let (mut depth, mut after_event) = (0i64, false);
    for (i, r) in records.into_iter().enumerate() {
        depth += inside[i];
        if matches!(r.body, Body::User { .. }) && after_event && depth == 0 {
            let mut start = Record::new(0, r.ts.clone(), Body::TurnStart);
            let mut hints = Object::new();
            hints.insert(SYNTHESIZED.into(), Value::Bool(true));
            start.extra.insert(HINTS.into(), Value::Object(hints));
            out.push(start);
        }
        // What makes a turn "hold an event" (SPEC §2): model-visible
        // records and inquiry events; a config delta does not.
        after_event |= r.body.is_model_visible()
            || matches!(r.kind(), Kind::InquiryRequest | Kind::InquiryResponse);
        out.push(r);
    }
    out
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

fn import_record(seq: u64, ev: Value) -> (Record, Option<String>) {
    let Value::Object(obj) = ev else {
        let w = format!("expected an object, found {}; kept as it is", describe(&ev));
        return (verbatim(seq, ev), Some(w));
    };
    let keys_order_type_first = obj.keys().next().is_some_and(|k| k == "type");
    let ty = obj.get("type").and_then(Value::as_str).map(str::to_owned);
    let ts_ok = matches!(obj.get("timestamp"), Some(Value::String(_)));
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

fn take_str(obj: &mut Object, key: &str) -> Result<String, String> {
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
            author: match obj.get("author") {
                Some(Value::String(_)) => take_str(&mut obj, "author").ok(),
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

fn compaction_from_jp(obj: &mut Object) -> Result<Compaction, String> {
    let turn = |v: Option<Value>, key: &str| -> Result<u32, String> {
        v.as_ref()
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("has no `{key}` turn number"))
    };
    let from = turn(obj.shift_remove("from_turn"), "from_turn")?;
    let to = turn(obj.shift_remove("to_turn"), "to_turn")?;
    let mut c = Compaction::new(from, to, Source::User);
    match obj.shift_remove("summary") {
        None | Some(Value::Null) => {}
        Some(Value::Object(mut s)) => {
            let text = take_str(&mut s, "summary")?;
            c.summary = Some(Summary {
                text,
                provenance: Provenance::Derived {
                    summarizer: "jp".into(),
                    version: None,
                    instructions: None,
                    method: None,
                },
            });
        }
        Some(_) => return Err("has a `summary` that is not {\"summary\": text}".into()),
    }
    match obj.shift_remove("reasoning") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "strip" => c.reasoning = Some(ReasoningPolicy::Strip),
        Some(_) => return Err("has a `reasoning` other than \"strip\"".into()),
    }
    match obj.shift_remove("tool_calls") {
        None | Some(Value::Null) => {}
        Some(Value::Object(t)) => {
            let on = |k: &str| {
                t.get(k)
                    .is_some_and(|v| !matches!(v, Value::Null | Value::Bool(false)))
            };
            c.tool_calls = match t.get("policy").and_then(Value::as_str) {
                Some("omit") => Some(ToolPolicy::Omit),
                Some("strip") => match (on("request"), on("response")) {
                    (true, false) => Some(ToolPolicy::StripRequests),
                    (false, true) => Some(ToolPolicy::StripResponses),
                    _ => Some(ToolPolicy::Strip),
                },
                _ => return Err("has a `tool_calls.policy` other than strip or omit".into()),
            };
        }
        Some(_) => return Err("has a `tool_calls` that is not an object".into()),
    }
    Ok(c)
}

fn compaction_to_jp(c: &Compaction) -> Object {
    let mut o = Object::new();
    o.insert("from_turn".into(), Value::from(c.from_turn));
    o.insert("to_turn".into(), Value::from(c.to_turn));
    if let Some(s) = &c.summary {
        let mut inner = Object::new();
        inner.insert("summary".into(), Value::String(s.text.clone()));
        o.insert("summary".into(), Value::Object(inner));
    }
    if c.reasoning.is_some() {
        o.insert("reasoning".into(), Value::String("strip".into()));
    }
    if let Some(p) = c.tool_calls {
        let mut t = Object::new();
        let (policy, req, resp) = match p {
            ToolPolicy::Omit => ("omit", None, None),
            ToolPolicy::Strip => ("strip", Some(true), Some(true)),
            ToolPolicy::StripRequests => ("strip", Some(true), Some(false)),
            ToolPolicy::StripResponses => ("strip", Some(false), Some(true)),
        };
        t.insert("policy".into(), Value::String(policy.into()));
        if let (Some(a), Some(b)) = (req, resp) {
            t.insert("request".into(), Value::Bool(a));
            t.insert("response".into(), Value::Bool(b));
        }
        o.insert("tool_calls".into(), Value::Object(t));
    }
    o
}

/// The JP object for one record, or `None` when JP cannot hold it.
fn export_record(rec: &Record, revoked: &HashSet<u64>) -> Option<Value> {
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
    let revoked = ctxfold_core::compaction::revoked_seqs(records);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_accepts_both_alphabets_and_keeps_what_is_not_base64() {
        assert_eq!(decode("aGVsbG8=").0, "hello");
        assert!(decode("aGVsbG8=").1 == Encoding::Standard);
        // "??>" encodes to "Pz8+" (standard) and "Pz8-" (URL-safe).
        let (text, enc) = decode("Pz8-");
        assert_eq!(text, "??>");
        assert!(enc == Encoding::UrlSafe);
        let (text, enc) = decode("not base64!");
        assert_eq!(text, "not base64!");
        assert!(enc == Encoding::Raw);
        for enc in [
            Encoding::UrlSafe,
            Encoding::NoPad,
            Encoding::UrlSafeNoPad,
            Encoding::Raw,
        ] {
            let s = enc.encode("??>x");
            assert_eq!(
                decode(&s).0,
                if enc == Encoding::Raw {
                    s.clone()
                } else {
                    "??>x".into()
                }
            );
        }
    }
}
