//! Reading a Claude Code session: each line into its records (see the
//! module docs for the mapping).

use std::path::Path;

use ctxfold_core::{Body, Object, Record};
use ctxfold_wire::anthropic::{Block, Content};
use serde::Deserialize;
use serde_json::Value;

use super::line::{Envelope, take_content};
use super::{BOM, CWD, FINAL_NEWLINE, KEY, SESSION_ID, SIGNATURE};
use crate::session_lines::{
    Field, Hints, Line, SessionText, fingerprint, hint, read_lines, split_lines, with_turns,
};
use crate::{FormatError, Transcript};

/// Whether the first line of a file (parsed) is one Claude Code writes:
/// a `type` and one of the fields every line of its own carries.
pub fn looks_like(first: &Object) -> bool {
    let Some(ty) = Envelope::of_object(first).kind.str() else {
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
    while let Some(mut line) = iter.next() {
        let Some(value @ Value::Object(_)) = &line.value else {
            records.push(line.opaque(KEY));
            continue;
        };
        let env = Envelope::of(value);
        remember_session(&mut t, &env);
        check_parent(path, &line, &env, &uuids, &mut warnings);
        if let Some(u) = env.uuid.str() {
            uuids.insert(u.to_owned());
        }
        let kind = env.kind.str().unwrap_or("");
        if kind == "system" && env.subtype.str() == Some("compact_boundary") {
            let summary = iter.next_if(|l| {
                l.value
                    .as_ref()
                    .is_some_and(|v| Envelope::of(v).is_compact_summary())
            });
            if let Some(s) = summary.as_ref().and_then(|s| s.value.as_ref())
                && let Some(u) = Envelope::of(s).uuid.str()
            {
                uuids.insert(u.to_owned());
            }
            records.push(boundary(&line, env.preserved_head(), summary.as_ref()));
            continue;
        }
        let assistant = match kind {
            "user" => false,
            "assistant" => true,
            _ => {
                records.push(line.opaque(KEY));
                continue;
            }
        };
        match message_records(&mut line, assistant) {
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
fn remember_session(t: &mut Transcript, env: &Envelope) {
    let entry = t
        .extras
        .entry(KEY.to_owned())
        .or_insert_with(|| Value::Object(Object::new()));
    let Value::Object(o) = entry else { return };
    for (key, field) in [(SESSION_ID, env.session_id), (CWD, env.cwd)] {
        if !o.contains_key(key)
            && let Some(v) = field.str()
        {
            o.insert(key.into(), Value::String(v.to_owned()));
        }
    }
}

/// A `parentUuid` that names no line before it: reported (Claude Code
/// would start its chain there), the line kept.
fn check_parent(
    path: &Path,
    line: &Line,
    env: &Envelope,
    uuids: &std::collections::HashSet<String>,
    warnings: &mut Vec<String>,
) {
    if let Some(p) = env.parent_uuid.str()
        && !uuids.contains(p)
    {
        warnings.push(format!(
            "{}: line {}: parentUuid {p} names no line before it (a broken chain); kept as it is",
            path.display(),
            line.number
        ));
    }
}

/// The boundary and its summary line as one compaction record; its range
/// is set once every record has its `seq` ([`set_ranges`]). `head` is the
/// first message the boundary says Claude Code kept verbatim.
fn boundary(line: &Line, head: Option<&str>, summary: Option<&Line>) -> Record {
    let mut h = Object::new();
    let mut lines = vec![line_value(line)];
    let mut text = String::new();
    if let Some(s) = summary {
        lines.push(line_value(s));
        text = s.value.as_ref().map(message_text).unwrap_or_default();
    }
    h.insert(hint::LINES.into(), Value::Array(lines));
    if let Some(head) = head {
        h.insert(hint::PRESERVED_HEAD.into(), Value::String(head.to_owned()));
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
            o.insert(hint::TEXT.into(), Value::String(line.text.clone()));
            Value::Object(o)
        }
    }
}

/// The text of line `v`'s message: a string content, or its text blocks
/// joined.
fn message_text(v: &Value) -> String {
    #[derive(serde::Deserialize)]
    struct Said {
        message: Message,
    }
    #[derive(serde::Deserialize)]
    struct Message {
        content: Content,
    }
    match Said::deserialize(v) {
        Ok(Said {
            message: Message {
                content: Content::Text(s),
            },
        }) => s,
        Ok(Said {
            message: Message {
                content: Content::Blocks(blocks),
            },
        }) => crate::chat::block_text(&blocks),
        Err(_) => String::new(),
    }
}

/// Every agent compaction covers the records before it, up to the first
/// message Claude Code kept verbatim after its summary.
fn set_ranges(records: &mut [Record]) {
    let positions: Vec<usize> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.body, Body::Compaction(_)) && Hints::of(r, KEY).is_some())
        .map(|(i, _)| i)
        .collect();
    for at in positions {
        let head = Hints::of(&records[at], KEY)
            .and_then(|h| h.str(hint::PRESERVED_HEAD))
            .map(str::to_owned);
        let mut end = at;
        if let Some(head) = head
            && let Some(i) = records[..at].iter().position(|r| {
                Hints::of(r, KEY)
                    .and_then(Hints::line_value)
                    .is_some_and(|l| Envelope::of(l).uuid.str() == Some(head.as_str()))
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
        let Some(line) = Hints::of(r, KEY).and_then(Hints::line_value) else {
            return false;
        };
        let env = Envelope::of(line);
        if env.is_compact_summary() {
            return false;
        }
        let prompt = env.prompt_id.str().map(str::to_owned);
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
        Body::Other { kind, fields } if kind == KEY => Hints(fields).line_value(),
        _ => None,
    });
    let mut best: (u8, Option<String>) = (0, None);
    for l in lines {
        let env = Envelope::of(l);
        let (rank, title) = match env.kind.str() {
            Some("custom-title") => (3, env.custom_title),
            Some("ai-title") => (2, env.ai_title),
            Some("summary") => (1, env.summary),
            _ => continue,
        };
        if let Some(s) = title.str()
            && rank >= best.0
        {
            best = (rank, Some(s.to_owned()));
        }
    }
    best.1
}

/// The records of a `user` or `assistant` line, or `None` when its message
/// holds no content ctxfold reads (the line is left as it was).
fn message_records(line: &mut Line, assistant: bool) -> Option<Vec<Record>> {
    let writes_back = line.writes_back();
    let ts = line.ts();
    let content = take_content(line.value.as_mut()?)?;
    // The line without its content is what the hints keep of it.
    let envelope = line.value.take()?;
    let mut first = line.hints(envelope, writes_back);
    match content {
        Value::String(s) => {
            first.insert(hint::STRING.into(), Value::Bool(true));
            let body = if assistant {
                Body::Assistant { content: s }
            } else {
                Body::User {
                    content: s,
                    author: None,
                }
            };
            let mut r = Record::new(0, ts, body);
            r.extra.insert(KEY.into(), Value::Object(first));
            Some(vec![r])
        }
        Value::Array(blocks) => {
            let mut out = Vec::with_capacity(blocks.len());
            for (i, b) in blocks.into_iter().enumerate() {
                let mut h = if i == 0 {
                    std::mem::take(&mut first)
                } else {
                    let mut h = Object::new();
                    h.insert(hint::MORE.into(), Value::Bool(true));
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
        .as_object()
        .and_then(crate::session_lines::type_tag)
        .unwrap_or("unknown");
    format!("[{ty} block]")
}

/// Whether a thinking block has a `signature` (`null` included).
#[derive(Deserialize)]
struct Signed<'a> {
    #[serde(default, borrow)]
    signature: Field<'a>,
}

/// One content block as a record; its leftover (the block with the
/// record's fields set to null) goes into `h["block"]`.
fn block_record(b: Value, assistant: bool, ts: &str, h: &mut Object) -> Record {
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
    if !b.is_object() {
        let body = text(placeholder(&b));
        h.insert(hint::BLOCK.into(), b);
        h.insert(hint::OPAQUE.into(), Value::Bool(true));
        return Record::new(0, ts, body);
    }
    let typed = Block::from_value(b.clone());
    let Value::Object(mut left) = b else {
        unreachable!("an object, checked above")
    };
    fn null(left: &mut Object, keys: &[&str]) {
        for k in keys {
            if let Some(v) = left.get_mut(*k) {
                *v = Value::Null;
            }
        }
    }
    let mut metadata: Option<Object> = None;
    let body = match typed {
        Block::Text(t) => {
            null(&mut left, &["text"]);
            text(t.text)
        }
        Block::Thinking(t) => {
            null(&mut left, &["thinking", "signature"]);
            // A `null` signature is kept as it is, as any other.
            let sig = match t.signature {
                Some(s) => Some(Value::String(s)),
                None => Signed::deserialize(&left)
                    .is_ok_and(|s| s.signature.present())
                    .then_some(Value::Null),
            };
            if let Some(sig) = sig {
                let mut m = Object::new();
                m.insert(SIGNATURE.into(), sig);
                metadata = Some(m);
            }
            Body::Reasoning {
                content: t.thinking,
            }
        }
        Block::ToolUse(t) => {
            null(&mut left, &["id", "name", "input"]);
            Body::ToolCall {
                id: t.id,
                name: t.name,
                arguments: t.input.into(),
            }
        }
        Block::ToolResult(t) => {
            let content = match t.content {
                Some(Content::Text(c)) => {
                    null(&mut left, &["content"]);
                    c
                }
                Some(Content::Blocks(parts)) => {
                    // Written back as they are while their text is.
                    if !parts.is_empty() {
                        h.insert(hint::BLOCKS.into(), Value::Bool(true));
                    }
                    crate::chat::block_text(&parts)
                }
                None => String::new(),
            };
            null(&mut left, &["tool_use_id", "is_error"]);
            h.insert(hint::FNV.into(), Value::String(fingerprint(&content)));
            Body::ToolResult {
                id: t.tool_use_id,
                content,
                is_error: t.is_error.unwrap_or(false),
            }
        }
        b if b.kind() == Some("redacted_thinking") => {
            h.insert(hint::OPAQUE.into(), Value::Bool(true));
            Body::Reasoning {
                content: String::new(),
            }
        }
        b => {
            h.insert(hint::OPAQUE.into(), Value::Bool(true));
            text(format!("[{} block]", b.kind().unwrap_or("unknown")))
        }
    };
    h.insert(hint::BLOCK.into(), Value::Object(left));
    let mut r = Record::new(0, ts, body);
    r.metadata = metadata.map(Box::new);
    r
}
