//! Reading a Claude Code session: each line into its records (see the
//! module docs for the mapping).

use std::path::Path;

use ctxfold_core::{Body, Object, Record};
use ctxfold_wire::anthropic::{Block, Content};
use serde::Deserialize;
use serde_json::Value;

use super::line::{Envelope, take_content};
use super::{BOM, CWD, FINAL_NEWLINE, KEY, SESSION_ID, SIGNATURE};
use crate::session_lines::{Field, Hints, Line, LineCursor, Sequencer, fingerprint, hint};
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
    Ok(import_bytes(path, &crate::read_bytes(path)?))
}

/// [`import`] from the file's bytes, already read.
pub fn import_bytes(path: &Path, bytes: &[u8]) -> Transcript {
    Reader::new(path, bytes.to_vec()).into_transcript()
}

/// Where a line's id was seen: only named by a line, or on the first
/// record of a message line, with the last record the model saw before it
/// (what an agent's compaction that keeps that line covers).
#[derive(Clone, Copy)]
enum Seen {
    Line,
    Record(Option<(u64, u32)>),
}

/// A Claude Code session read one line at a time: each line's records as
/// it is read, only what the lines to come need kept of it (ids, the turn
/// state, the title).
pub(crate) struct Reader {
    cursor: LineCursor,
    /// The line after a compaction boundary, read to see whether it holds
    /// the boundary's summary.
    peeked: Option<Line>,
    seq: Sequencer,
    current_prompt: Option<String>,
    uuids: std::collections::HashMap<String, Seen>,
    extras: Object,
    title: (u8, Option<String>),
    warnings: Vec<String>,
}

impl Reader {
    /// The session in `bytes`, the file at `path`.
    pub(crate) fn new(path: &Path, bytes: Vec<u8>) -> Reader {
        Reader {
            cursor: LineCursor::new(path, bytes),
            peeked: None,
            seq: Sequencer::new(KEY),
            current_prompt: None,
            uuids: Default::default(),
            extras: Object::new(),
            title: (0, None),
            warnings: Vec::new(),
        }
    }

    fn next_line(&mut self) -> Option<Line> {
        self.peeked
            .take()
            .or_else(|| self.cursor.next_line(&mut self.warnings))
    }

    /// The records of the next line (and of the summary line after a
    /// compaction boundary) to `out`; `false` after the last line.
    pub(crate) fn step(&mut self, out: &mut Vec<Record>) -> bool {
        let Some(mut line) = self.next_line() else {
            return false;
        };
        let Some(value @ Value::Object(_)) = &line.value else {
            let r = line.opaque(KEY);
            self.push(r, out);
            return true;
        };
        let env = Envelope::of(value);
        remember_session(&mut self.extras, &env);
        check_parent(&self.cursor, &line, &env, &self.uuids, &mut self.warnings);
        if let Some(u) = env.uuid.str() {
            self.uuids.entry(u.to_owned()).or_insert(Seen::Line);
        }
        let kind = env.kind.str().unwrap_or("");
        if kind == "system" && env.subtype.str() == Some("compact_boundary") {
            let head = env.preserved_head().map(str::to_owned);
            self.peeked = self.cursor.next_line(&mut self.warnings);
            let summary = match &self.peeked {
                Some(l)
                    if l.value
                        .as_ref()
                        .is_some_and(|v| Envelope::of(v).is_compact_summary()) =>
                {
                    self.peeked.take()
                }
                _ => None,
            };
            if let Some(s) = summary.as_ref().and_then(|s| s.value.as_ref())
                && let Some(u) = Envelope::of(s).uuid.str()
            {
                self.uuids.entry(u.to_owned()).or_insert(Seen::Line);
            }
            let mut r = boundary(&line, head.as_deref(), summary.as_ref());
            self.set_range(&mut r, head.as_deref());
            self.push(r, out);
            return true;
        }
        let assistant = match kind {
            "user" => false,
            "assistant" => true,
            _ => {
                let r = line.opaque(KEY);
                self.push(r, out);
                return true;
            }
        };
        match message_records(&mut line, assistant) {
            Some(recs) => {
                for r in recs {
                    self.push(r, out);
                }
            }
            None => {
                let r = line.opaque(KEY);
                self.push(r, out);
            }
        }
        true
    }

    /// One record through turns, numbering and pairing, to `out`.
    fn push(&mut self, r: Record, out: &mut Vec<Record>) {
        // The first record of a message line: what a compaction keeping
        // that line from on covers.
        if let Some(u) = Hints::of(&r, KEY)
            .and_then(Hints::line_value)
            .and_then(|l| Envelope::of(l).uuid.str())
        {
            let before = self.seq.last_visible();
            match self.uuids.get_mut(u) {
                Some(Seen::Record(_)) => {}
                Some(seen) => *seen = Seen::Record(before),
                None => {
                    self.uuids.insert(u.to_owned(), Seen::Record(before));
                }
            }
        }
        if let Body::Other { kind, fields } = &r.body
            && kind == KEY
            && let Some(l) = Hints(fields).line_value()
        {
            better_title(&mut self.title, l);
        }
        let current_prompt = &mut self.current_prompt;
        let mut opens = |r: &Record, answered: bool| opens_turn(current_prompt, r, answered);
        self.seq.push(r, &mut opens, out);
    }

    /// An agent compaction covers the records before it, up to the first
    /// message Claude Code kept verbatim after its summary (`head`).
    fn set_range(&self, r: &mut Record, head: Option<&str>) {
        let last = match head.and_then(|h| self.uuids.get(h)) {
            Some(Seen::Record(before)) => *before,
            _ => self.seq.last_visible(),
        };
        if let Body::Compaction(c) = &mut r.body {
            c.from_turn = 0;
            match last {
                Some((seq, turn)) => {
                    c.to_turn = turn;
                    c.to_seq = Some(seq);
                }
                None => {
                    // Nothing before it: a range that covers nothing.
                    c.to_turn = 0;
                    c.from_seq = Some(1);
                    c.to_seq = Some(0);
                }
            }
        }
    }

    /// What the whole file says, once every line is read: its title, the
    /// format's extras, the warnings (the records were handed out).
    pub(crate) fn finish(mut self) -> Transcript {
        let mut t = Transcript::default();
        let final_newline = self.cursor.final_newline();
        if !self.extras.is_empty() {
            t.extras.insert(
                KEY.to_owned(),
                Value::Object(std::mem::take(&mut self.extras)),
            );
        }
        super::set_extra(&mut t.extras, FINAL_NEWLINE, Value::Bool(final_newline));
        if self.cursor.bom() {
            super::set_extra(&mut t.extras, BOM, Value::Bool(true));
        }
        self.seq.finish(&mut self.warnings);
        t.title = self.title.1;
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

/// The session's id and working folder: the first line's that has them.
fn remember_session(o: &mut Object, env: &Envelope) {
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
    cursor: &LineCursor,
    line: &Line,
    env: &Envelope,
    uuids: &std::collections::HashMap<String, Seen>,
    warnings: &mut Vec<String>,
) {
    if let Some(p) = env.parent_uuid.str()
        && !uuids.contains_key(p)
    {
        warnings.push(format!(
            "{}: line {}: parentUuid {p} names no line before it (a broken chain); kept as it is",
            cursor.path().display(),
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

/// The rule that opens a turn: a user line of text with a `promptId` other
/// than the current turn's (`current`), or, without one, after the
/// assistant's or a tool's records (`answered`).
fn opens_turn(current: &mut Option<String>, r: &Record, answered: bool) -> bool {
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
    let prompt = env.prompt_id.str();
    let opens = match (prompt, current.as_deref()) {
        (Some(p), Some(c)) => p != c,
        (Some(_), None) => true,
        (None, _) => answered,
    };
    if opens {
        *current = prompt.map(str::to_owned);
    }
    opens
}

/// The title: the newest `custom-title` line's, else the newest
/// `ai-title`'s, else the newest `summary` line's; `best` the best so far
/// and its rank, `l` the next line kept whole.
fn better_title(best: &mut (u8, Option<String>), l: &Value) {
    let env = Envelope::of(l);
    let (rank, title) = match env.kind.str() {
        Some("custom-title") => (3, env.custom_title),
        Some("ai-title") => (2, env.ai_title),
        Some("summary") => (1, env.summary),
        _ => return,
    };
    if let Some(s) = title.str()
        && rank >= best.0
    {
        *best = (rank, Some(s.to_owned()));
    }
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
