//! Writing a Claude Code session: records grouped back into the lines they
//! came from (or new lines), and, for a new session, new ids.

use std::collections::HashMap;

use ctxfold_core::{Body, Object, Record};
use ctxfold_wire::IntoValue;
use ctxfold_wire::anthropic::{Block, Content, Message, Reply, Thinking, ToolResult, ToolUse};
use serde_json::Value;

use super::import::placeholder;
use super::line::{Envelope, key, put_content};
use super::{BOM, FINAL_NEWLINE, KEY, NEW_SESSION, SIGNATURE, extra};
use crate::pairing::export_id;
use crate::session_lines::{Field, Hints, Out, hint, uuid_v4};
use crate::{RecordSource, Transcript};

/// A message line being put together from its records.
struct Group {
    envelope: Object,
    assistant: bool,
    string: bool,
    blocks: Vec<Value>,
    raw: Option<String>,
    changed_result: bool,
}

impl Group {
    fn finish(mut self) -> Out {
        let content = if self.string && self.blocks.len() == 1 {
            // The text of the one block, as the line had it.
            match self.blocks.pop().map(Block::from_value) {
                Some(Block::Text(t)) => Value::String(t.text),
                _ => Value::Null,
            }
        } else {
            Value::Array(self.blocks)
        };
        put_content(&mut self.envelope, content);
        if self.changed_result {
            // Claude Code's own copy of the raw output: not the view's.
            self.envelope.shift_remove(key::TOOL_USE_RESULT);
        }
        Out {
            value: Some(Value::Object(self.envelope)),
            raw: self.raw,
        }
    }
}

/// The session's bytes: every record back to its line (see the module
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

/// [`export_to`] of the records of `records`, read one at a time (`t`'s
/// own are not read: its extras say which session it is).
pub(crate) fn export_records(
    t: &Transcript,
    records: &dyn RecordSource,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    // A transcript of another format is a new session too.
    let fresh = match extra(t, NEW_SESSION).and_then(Value::as_str) {
        Some(id) => Some(id.to_owned()),
        None if extra(t, super::SESSION_ID).is_none() => Some(uuid_v4()),
        None => None,
    };
    let mut renumber = fresh.map(Renumber::new);
    let final_newline = extra(t, FINAL_NEWLINE).and_then(Value::as_bool) != Some(false);
    let bom = extra(t, BOM).and_then(Value::as_bool) == Some(true);
    let mut out = crate::session_lines::LineWriter::new(w, final_newline, bom)?;
    lines(records, &mut |l| {
        let l = match renumber.as_mut() {
            Some(r) => r.apply(l),
            None => l,
        };
        out.write(&l)
    })?;
    out.finish()
}

/// Every record back to its line, each line to `emit` as it is complete.
fn lines(
    records: &dyn RecordSource,
    emit: &mut dyn FnMut(Out) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut group: Option<Group> = None;
    // The newest envelope read, the model of lines ctxfold makes.
    let mut template: Option<Object> = None;
    let flush =
        |g: &mut Option<Group>, emit: &mut dyn FnMut(Out) -> std::io::Result<()>| match g.take() {
            Some(g) => emit(g.finish()),
            None => Ok(()),
        };
    records.each(&mut |r| {
        // Hints packed while compacting are read one record at a time.
        let unpacked = crate::session_lines::unpacked(r, KEY);
        let r = unpacked.as_ref().unwrap_or(r);
        let h = Hints::of(r, KEY);
        match &r.body {
            Body::TurnStart => {}
            Body::Other { kind, fields } if kind == KEY => {
                flush(&mut group, emit)?;
                emit(Out::of_opaque(fields))?;
            }
            Body::Compaction(_) => {
                let Some(kept) = h.and_then(Hints::lines) else {
                    return Ok(());
                };
                flush(&mut group, emit)?;
                for l in kept {
                    emit(Out::kept(l))?;
                }
            }
            Body::User { .. }
            | Body::Assistant { .. }
            | Body::Reasoning { .. }
            | Body::ToolCall { .. }
            | Body::ToolResult { .. }
            | Body::Structured { .. } => {
                let assistant = r.body.is_assistant_side();
                let Some(block) = block(r, h) else {
                    return Ok(());
                };
                let starts = h.and_then(Hints::line);
                let continues = h.is_some_and(|h| h.has(hint::MORE))
                    && group.as_ref().is_some_and(|g| g.assistant == assistant);
                if let Some(env) = starts {
                    flush(&mut group, emit)?;
                    template = Some(env.clone());
                    group = Some(Group {
                        envelope: env.clone(),
                        assistant,
                        string: h.is_some_and(|h| h.has(hint::STRING)),
                        blocks: Vec::new(),
                        raw: h.and_then(Hints::raw).map(str::to_owned),
                        changed_result: false,
                    });
                } else if !continues {
                    flush(&mut group, emit)?;
                    group = Some(Group {
                        envelope: made_envelope(template.as_ref(), assistant, r),
                        assistant,
                        string: false,
                        blocks: Vec::new(),
                        raw: None,
                        changed_result: false,
                    });
                }
                if let Some(g) = group.as_mut() {
                    if let Body::ToolResult { content, .. } = &r.body
                        && !h.is_some_and(|h| h.unchanged(content))
                    {
                        g.changed_result = true;
                    }
                    g.blocks.push(block);
                }
            }
            Body::System { .. } | Body::CompactionReset(_) | Body::Other { .. } => {}
        }
        Ok(())
    })?;
    flush(&mut group, emit)
}

/// The envelope of a line ctxfold makes: the session's fields from the
/// newest line read, a message of the record's role.
fn made_envelope(template: Option<&Object>, assistant: bool, r: &Record) -> Object {
    let mut env = Object::new();
    env.insert("parentUuid".into(), Value::Null);
    env.insert("isSidechain".into(), Value::Bool(false));
    let role = if assistant { "assistant" } else { "user" };
    env.insert("type".into(), Value::String(role.into()));
    let message = if assistant {
        let model = template
            .and_then(super::line::model)
            .unwrap_or(Value::String("<synthetic>".into()));
        ctxfold_wire::value(&Reply::ended(format!("msg_ctxfold_{}", r.seq), model))
    } else {
        let user = Message::new(role, Content::Text(String::new()), Object::new());
        let mut m = ctxfold_wire::value(&user);
        // Set by the caller.
        if let Value::Object(o) = &mut m {
            o.insert("content".into(), Value::Null);
        }
        m
    };
    env.insert("message".into(), message);
    env.insert("uuid".into(), Value::String(uuid_v4()));
    env.insert("timestamp".into(), Value::String(r.ts.to_string()));
    for k in [
        "userType",
        "entrypoint",
        "cwd",
        "sessionId",
        "version",
        "gitBranch",
        "slug",
    ] {
        match template.and_then(|t| t.get(k)) {
            Some(v) => {
                env.insert(k.into(), v.clone());
            }
            // Without a line to model it on (a transcript of another
            // format), what Claude Code needs to resume it.
            None if template.is_none() => {
                let v = match k {
                    "userType" => "external".to_owned(),
                    "cwd" => std::env::current_dir()
                        .map(|d| d.display().to_string())
                        .unwrap_or_else(|_| ".".into()),
                    "version" => "ctxfold".to_owned(),
                    "sessionId" => String::new(),
                    _ => continue,
                };
                env.insert(k.into(), Value::String(v));
            }
            None => {}
        }
    }
    env
}

/// `b` written over `template` (the block it was read from, its record's
/// fields `null`), so the block's other keys and their order come back.
fn over(template: Option<&Object>, b: Block) -> Value {
    match template {
        Some(t) => Value::Object(ctxfold_wire::write_over(t.clone(), b.into_value())),
        None => b.into_value(),
    }
}

/// The content block a record writes, or `None` when it writes none.
fn block(r: &Record, h: Option<Hints>) -> Option<Value> {
    let left = h.and_then(Hints::block);
    let opaque = h.is_some_and(|h| h.has(hint::OPAQUE));
    let of_type = |t: &str| left.filter(|l| crate::session_lines::type_tag(l) == Some(t));
    Some(match &r.body {
        Body::User { content, .. } | Body::Assistant { content } => {
            if let (true, Some(l)) = (opaque, left)
                && *content == placeholder(&Value::Object(l.clone()))
            {
                return Some(Value::Object(l.clone()));
            }
            over(of_type("text"), Block::text(content.clone()))
        }
        Body::Structured { data } => over(None, Block::text(data.to_string())),
        Body::Reasoning { content } => {
            if let (true, Some(l)) = (opaque, left)
                && content.is_empty()
            {
                return Some(Value::Object(l.clone()));
            }
            // Thinking without a signature is not written (the API would
            // refuse it); a `null` one read stays in the block's template.
            let sig = r.metadata.as_ref().and_then(|m| m.get(SIGNATURE))?;
            let b = Thinking {
                thinking: content.clone(),
                signature: sig.as_str().map(str::to_owned),
                extra: Object::new(),
            };
            over(of_type("thinking"), Block::Thinking(b))
        }
        Body::ToolCall {
            id,
            name,
            arguments,
        } => {
            let b = ToolUse {
                id: export_id(r, id, KEY).to_owned(),
                name: name.clone(),
                input: arguments.value(),
                extra: Object::new(),
            };
            over(of_type("tool_use"), Block::ToolUse(b))
        }
        Body::ToolResult {
            id,
            content,
            is_error,
        } => {
            let l = of_type("tool_result");
            // Blocks are written back as they were while their text is.
            let kept_parts = h.is_some_and(|h| h.has(hint::BLOCKS) && h.unchanged(content));
            let has_flag = l.is_some_and(|l| l.contains_key("is_error"));
            let b = ToolResult {
                tool_use_id: export_id(r, id, KEY).to_owned(),
                content: (!kept_parts).then(|| Content::Text(content.clone())),
                is_error: (has_flag || *is_error).then_some(*is_error),
                extra: Object::new(),
            };
            over(l, Block::ToolResult(b))
        }
        _ => return None,
    })
}

/// Ids of a new session, line after line: the session id everywhere, a
/// new uuid for every line, and the links between lines following (see
/// the module docs).
struct Renumber {
    session: String,
    map: HashMap<String, String>,
    last: Option<String>,
}

impl Renumber {
    fn new(session: String) -> Renumber {
        Renumber {
            session,
            map: HashMap::new(),
            last: None,
        }
    }

    /// The line a link names now: its new id, else (a line not written)
    /// the line written before; `null` when it names none.
    fn relink(&self, v: Option<&str>) -> Value {
        match v {
            Some(p) => match self.map.get(p) {
                Some(n) => Value::String(n.clone()),
                None => self.last.clone().map_or(Value::Null, Value::String),
            },
            None => Value::Null,
        }
    }

    /// The next line, renumbered.
    fn apply(&mut self, mut l: Out) -> Out {
        let Some(Value::Object(o)) = l.value.as_mut() else {
            return l;
        };
        let mut sets: Vec<(&str, Value)> = Vec::new();
        {
            let env = Envelope::of_object(o);
            if env.session_id.present() {
                sets.push((key::SESSION_ID, Value::String(self.session.clone())));
            }
            match env.parent_uuid {
                Field::Missing => {}
                Field::Null => {
                    if self.last.is_some() && o.contains_key(key::MESSAGE) {
                        // A message line that started a chain now follows
                        // the line before it (what came before it was
                        // folded).
                        let p = self.last.clone().map_or(Value::Null, Value::String);
                        sets.push((key::PARENT_UUID, p));
                    }
                }
                p => sets.push((key::PARENT_UUID, self.relink(p.str()))),
            }
            for (k, f) in key::LINKS
                .into_iter()
                .zip([env.logical_parent_uuid, env.leaf_uuid])
            {
                if let Some(p) = f.str() {
                    sets.push((k, self.relink(Some(p))));
                }
            }
            let refs = [env.message_id, env.source_tool_assistant_uuid];
            for (k, f) in key::REFERENCES.into_iter().zip(refs) {
                if let Some(n) = f.str().and_then(|m| self.map.get(m)) {
                    sets.push((k, Value::String(n.clone())));
                }
            }
            if let Some(old) = env.uuid.str() {
                let new = uuid_v4();
                self.map.insert(old.to_owned(), new.clone());
                sets.push((key::UUID, Value::String(new.clone())));
                if env.is_sidechain.bool() != Some(true) {
                    self.last = Some(new);
                }
            }
        }
        for (k, v) in sets {
            o.insert(k.to_owned(), v);
        }
        l.raw = None;
        l
    }
}
