//! Reading a Claude Code session: each line into its records (see the
//! module docs for the mapping).

use std::path::Path;

use ctxfold_core::{Body, Object, Record};
use serde_json::Value;

use super::{BOM, CWD, FINAL_NEWLINE, KEY, SESSION_ID, SIGNATURE};
use crate::session_lines::{Line, SessionText, fingerprint, read_lines, split_lines, with_turns};
use crate::{FormatError, Transcript};

/// Whether the first line of a file (parsed) is one Claude Code writes:
/// a `type` and one of the fields every line of its own carries.
pub fn looks_like(first: &Object) -> bool {
    let Some(ty) = first.get("type").and_then(Value::as_str) else {
        return false;
    };
    if first.contains_key("payload") || first.contains_key("seq") {
        return false;
    }
    first.contains_key("sessionId")
        || first.contains_key("parentUuid")
        || (ty == "summary" && first.contains_key("leafUuid"))
        || (ty == "file-history-snapshot" && first.contains_key("snapshot"))
}

/// Read the Claude Code session at `path`.
pub fn import(path: &Path) -> Result<Transcript, FormatError> {
    let mut warnings = Vec::new();
    let read = read_lines(path, &mut warnings)?;
    Ok(from_lines(path, read, warnings))
}

/// [`import`] from the file's bytes, already read.
pub fn import_bytes(path: &Path, bytes: &[u8]) -> Transcript {
    let mut warnings = Vec::new();
    let read = split_lines(path, bytes, &mut warnings);
    from_lines(path, read, warnings)
}

fn from_lines(path: &Path, read: SessionText, mut warnings: Vec<String>) -> Transcript {
    let SessionText {
        lines,
        final_newline,
        bom,
    } = read;
    let mut t = Transcript::default();
    let mut records: Vec<Record> = Vec::with_capacity(lines.len() * 2);
    let mut uuids = std::collections::HashSet::new();
    let mut iter = lines.into_iter().peekable();
    while let Some(line) = iter.next() {
        let Some(Value::Object(obj)) = &line.value else {
            records.push(line.opaque(KEY));
            continue;
        };
        remember_session(&mut t, obj);
        check_parent(path, &line, obj, &uuids, &mut warnings);
        if let Some(u) = obj.get("uuid").and_then(Value::as_str) {
            uuids.insert(u.to_owned());
        }
        let ty = obj.get("type").and_then(Value::as_str).unwrap_or("");
        if ty == "system" && obj.get("subtype").and_then(Value::as_str) == Some("compact_boundary")
        {
            let summary = iter.next_if(is_compact_summary);
            if let Some(s) = summary.as_ref().and_then(|s| s.value.as_ref())
                && let Some(u) = s.get("uuid").and_then(Value::as_str)
            {
                uuids.insert(u.to_owned());
            }
            records.push(boundary(&line, summary.as_ref()));
            continue;
        }
        match message_records(&line, obj) {
            Some(recs) => records.extend(recs),
            None => records.push(line.opaque(KEY)),
        }
    }
    super::set_extra(&mut t.extras, FINAL_NEWLINE, Value::Bool(final_newline));
    if bom {
        super::set_extra(&mut t.extras, BOM, Value::Bool(true));
    }
    let mut records = with_turns(records, KEY, opens_turn());
    for (i, r) in records.iter_mut().enumerate() {
        r.seq = i as u64;
    }
    set_ranges(&mut records);
    crate::pairing::pair(&mut records, Some(KEY), &mut warnings);
    t.records = records;
    t.title = title(&t.records);
    t.warnings = warnings;
    t
}

/// The session's id and working folder: the first line's that has them.
fn remember_session(t: &mut Transcript, obj: &Object) {
    let entry = t
        .extras
        .entry(KEY.to_owned())
        .or_insert_with(|| Value::Object(Object::new()));
    let Value::Object(o) = entry else { return };
    for (key, field) in [(SESSION_ID, "sessionId"), (CWD, "cwd")] {
        if !o.contains_key(key)
            && let Some(v) = obj.get(field).filter(|v| v.is_string())
        {
            o.insert(key.into(), v.clone());
        }
    }
}

/// A `parentUuid` that names no line before it: reported (Claude Code
/// would start its chain there), the line kept.
fn check_parent(
    path: &Path,
    line: &Line,
    obj: &Object,
    uuids: &std::collections::HashSet<String>,
    warnings: &mut Vec<String>,
) {
    if let Some(p) = obj.get("parentUuid").and_then(Value::as_str)
        && !uuids.contains(p)
    {
        warnings.push(format!(
            "{}: line {}: parentUuid {p} names no line before it (a broken chain); kept as it is",
            path.display(),
            line.number
        ));
    }
}

fn is_compact_summary(line: &Line) -> bool {
    line.value
        .as_ref()
        .and_then(|v| v.get("isCompactSummary"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// The boundary and its summary line as one compaction record; its range
/// is set once every record has its `seq` ([`set_ranges`]).
fn boundary(line: &Line, summary: Option<&Line>) -> Record {
    let mut h = Object::new();
    let mut lines = vec![line_value(line)];
    let mut text = String::new();
    if let Some(s) = summary {
        lines.push(line_value(s));
        text = s
            .value
            .as_ref()
            .and_then(|v| v.get("message"))
            .map(message_text)
            .unwrap_or_default();
    }
    h.insert("lines".into(), Value::Array(lines));
    if let Some(head) = line
        .value
        .as_ref()
        .and_then(|v| v.pointer("/compactMetadata/preservedSegment/headUuid"))
    {
        h.insert("preserved_head".into(), head.clone());
    }
    let mut r = line.agent_compaction(text, "Claude Code's own compaction");
    r.extra.insert(KEY.into(), Value::Object(h));
    r
}

/// A line as kept in a hint: its JSON, or `{"text": …}` when the JSON
/// would be written with other bytes.
fn line_value(line: &Line) -> Value {
    match (&line.value, line.writes_back()) {
        (Some(v), true) => v.clone(),
        _ => {
            let mut o = Object::new();
            o.insert("text".into(), Value::String(line.text.clone()));
            Value::Object(o)
        }
    }
}

/// The text of a message: a string content, or its text blocks joined.
fn message_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => crate::chat::text_parts(blocks),
        _ => String::new(),
    }
}

/// Every agent compaction covers the records before it, up to the first
/// message Claude Code kept verbatim after its summary.
fn set_ranges(records: &mut [Record]) {
    let positions: Vec<usize> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.body, Body::Compaction(_)) && super::export::hint(r).is_some())
        .map(|(i, _)| i)
        .collect();
    for at in positions {
        let head = super::export::hint(&records[at])
            .and_then(|h| h.get("preserved_head"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut end = at;
        if let Some(head) = head
            && let Some(i) = records[..at].iter().position(|r| {
                super::export::hint(r)
                    .and_then(|h| h.get("line"))
                    .and_then(|l| l.get("uuid"))
                    .and_then(Value::as_str)
                    == Some(head.as_str())
            })
        {
            end = i;
        }
        // The covered records end before `end`, at a record the model sees
        // or a turn start (never inside a call and its result).
        let last = records[..end]
            .iter()
            .rposition(|r| r.body.is_model_visible());
        let (seq, turn) = match last {
            Some(i) => (records[i].seq, turn_of(records, i)),
            None => (0, 0),
        };
        if let Body::Compaction(c) = &mut records[at].body {
            c.from_turn = 0;
            c.to_turn = turn;
            c.to_seq = Some(seq);
            if last.is_none() {
                // Nothing before it: a range that covers nothing.
                c.from_seq = Some(1);
                c.to_seq = Some(0);
            }
        }
    }
}

/// The 0-based turn of the record at `i`, by the log's rule: a
/// `turn_start` opens a turn only after a conversation event.
fn turn_of(records: &[Record], i: usize) -> u32 {
    let (mut turn, mut holds) = (0u32, false);
    for r in &records[..=i] {
        if matches!(r.body, Body::TurnStart) {
            if holds {
                turn += 1;
            }
            holds = true;
        } else if r.body.is_model_visible() {
            holds = true;
        }
    }
    turn
}

/// The rule that opens a turn: a user line of text with a `promptId` other
/// than the current turn's, or, without one, after the assistant's or a
/// tool's records.
fn opens_turn() -> impl FnMut(&Record, &[Record]) -> bool {
    let mut current_prompt: Option<String> = None;
    move |r, since| {
        let Body::User { .. } = r.body else {
            return false;
        };
        let Some(line) = super::export::hint(r).and_then(|h| h.get("line")) else {
            return false;
        };
        if line.get("isCompactSummary").and_then(Value::as_bool) == Some(true) {
            return false;
        }
        let prompt = line
            .get("promptId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let answered = since
            .iter()
            .any(|r| r.body.is_assistant_side() || matches!(r.body, Body::ToolResult { .. }));
        let opens = match (&prompt, &current_prompt) {
            (Some(p), Some(c)) => p != c,
            (Some(_), None) => true,
            (None, _) => answered,
        };
        if opens {
            current_prompt = prompt;
        }
        opens
    }
}

/// The title: the newest `custom-title` line's, else the newest
/// `ai-title`'s, else the newest `summary` line's.
fn title(records: &[Record]) -> Option<String> {
    let lines = records.iter().filter_map(|r| match &r.body {
        Body::Other { kind, fields } if kind == KEY => fields.get("line"),
        _ => None,
    });
    let mut best: (u8, Option<String>) = (0, None);
    for l in lines {
        let (rank, key) = match l.get("type").and_then(Value::as_str) {
            Some("custom-title") => (3, "customTitle"),
            Some("ai-title") => (2, "aiTitle"),
            Some("summary") => (1, "summary"),
            _ => continue,
        };
        if let Some(s) = l.get(key).and_then(Value::as_str)
            && rank >= best.0
        {
            best = (rank, Some(s.to_owned()));
        }
    }
    best.1
}

/// The records of a `user` or `assistant` line, or `None` when it is not
/// one ctxfold reads as messages.
fn message_records(line: &Line, obj: &Object) -> Option<Vec<Record>> {
    let ty = obj.get("type").and_then(Value::as_str)?;
    let assistant = match ty {
        "user" => false,
        "assistant" => true,
        _ => return None,
    };
    let message = obj.get("message")?.as_object()?;
    let content = message.get("content")?;
    let ts = line.ts();
    let mut envelope = obj.clone();
    if let Some(Value::Object(m)) = envelope.get_mut("message") {
        m.insert("content".into(), Value::Null);
    }
    let mut first = line.hints(Value::Object(envelope));
    match content {
        Value::String(s) => {
            first.insert("string".into(), Value::Bool(true));
            let body = if assistant {
                Body::Assistant { content: s.clone() }
            } else {
                Body::User {
                    content: s.clone(),
                    author: None,
                }
            };
            let mut r = Record::new(0, ts, body);
            r.extra.insert(KEY.into(), Value::Object(first));
            Some(vec![r])
        }
        Value::Array(blocks) if !blocks.is_empty() => {
            let mut out = Vec::with_capacity(blocks.len());
            for (i, b) in blocks.iter().enumerate() {
                let mut h = if i == 0 {
                    std::mem::take(&mut first)
                } else {
                    let mut h = Object::new();
                    h.insert("more".into(), Value::Bool(true));
                    h
                };
                let mut r = block_record(b, assistant, &ts, &mut h);
                r.extra.insert(KEY.into(), Value::Object(h));
                out.push(r);
            }
            Some(out)
        }
        _ => None,
    }
}

/// `[TYPE block]`: the text that stands for a block ctxfold does not read.
pub(crate) fn placeholder(block: &Value) -> String {
    let ty = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    format!("[{ty} block]")
}

/// One content block as a record; its leftover (the block with the
/// record's fields set to null) goes into `h["block"]`.
fn block_record(b: &Value, assistant: bool, ts: &str, h: &mut Object) -> Record {
    let text = |s: String| {
        if assistant {
            Body::Assistant { content: s }
        } else {
            Body::User {
                content: s,
                author: None,
            }
        }
    };
    let Some(obj) = b.as_object() else {
        h.insert("block".into(), b.clone());
        h.insert("opaque".into(), Value::Bool(true));
        return Record::new(0, ts, text(placeholder(b)));
    };
    let s = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut left = obj.clone();
    let mut null = |keys: &[&str]| {
        for k in keys {
            if left.contains_key(*k) {
                left.insert((*k).to_owned(), Value::Null);
            }
        }
    };
    let mut metadata: Option<Object> = None;
    let body = match (obj.get("type").and_then(Value::as_str), s("text")) {
        (Some("text"), Some(t)) => {
            null(&["text"]);
            text(t)
        }
        (Some("thinking"), _) if s("thinking").is_some() => {
            null(&["thinking", "signature"]);
            if let Some(sig) = obj.get("signature") {
                let mut m = Object::new();
                m.insert(SIGNATURE.into(), sig.clone());
                metadata = Some(m);
            }
            Body::Reasoning {
                content: s("thinking").unwrap_or_default(),
            }
        }
        (Some("redacted_thinking"), _) => {
            h.insert("opaque".into(), Value::Bool(true));
            Body::Reasoning {
                content: String::new(),
            }
        }
        (Some("tool_use"), _) if s("id").is_some() && s("name").is_some() => {
            null(&["id", "name", "input"]);
            Body::ToolCall {
                id: s("id").unwrap_or_default(),
                name: s("name").unwrap_or_default(),
                arguments: obj.get("input").cloned().unwrap_or(Value::Null).into(),
            }
        }
        (Some("tool_result"), _) if s("tool_use_id").is_some() => {
            let content = match obj.get("content") {
                Some(Value::String(c)) => {
                    null(&["content"]);
                    c.clone()
                }
                Some(Value::Array(parts)) => {
                    let t = crate::chat::text_parts(parts);
                    h.insert("blocks".into(), Value::Bool(true));
                    t
                }
                None => String::new(),
                Some(_) => {
                    h.insert("blocks".into(), Value::Bool(true));
                    String::new()
                }
            };
            null(&["tool_use_id", "is_error"]);
            h.insert("fnv".into(), Value::String(fingerprint(&content)));
            Body::ToolResult {
                id: s("tool_use_id").unwrap_or_default(),
                content,
                is_error: obj
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            }
        }
        _ => {
            h.insert("opaque".into(), Value::Bool(true));
            text(placeholder(b))
        }
    };
    h.insert("block".into(), Value::Object(left));
    let mut r = Record::new(0, ts, body);
    r.metadata = metadata.map(Box::new);
    r
}
