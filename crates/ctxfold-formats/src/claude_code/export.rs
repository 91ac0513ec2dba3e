//! Writing a Claude Code session: records grouped back into the lines they
//! came from (or new lines), and, for a new session, new ids.

use std::collections::HashMap;

use ctxfold_core::{Body, Object, Record};
use ctxfold_wire::anthropic::{Content, Message, Reply};
use serde_json::Value;

use super::import::placeholder;
use super::{BOM, FINAL_NEWLINE, KEY, NEW_SESSION, SIGNATURE, extra};
use crate::Transcript;
use crate::pairing::export_id;
use crate::session_lines::{Out, fingerprint, uuid_v4};

/// The hints of a record from a Claude Code line.
pub(crate) fn hint(r: &Record) -> Option<&Object> {
    crate::session_lines::hints(r, KEY)
}

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
            match self.blocks.pop() {
                Some(Value::Object(mut b)) => b.remove("text").unwrap_or(Value::Null),
                other => other.unwrap_or(Value::Null),
            }
        } else {
            Value::Array(self.blocks)
        };
        if let Some(Value::Object(m)) = self.envelope.get_mut("message") {
            m.insert("content".into(), content);
        }
        if self.changed_result {
            // Claude Code's own copy of the raw output: not the view's.
            self.envelope.shift_remove("toolUseResult");
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
    let lines = lines(&t.records);
    // A transcript of another format is a new session too.
    let fresh = match extra(t, NEW_SESSION).and_then(Value::as_str) {
        Some(id) => Some(id.to_owned()),
        None if extra(t, super::SESSION_ID).is_none() => Some(uuid_v4()),
        None => None,
    };
    let lines = match fresh {
        Some(id) => renumber(lines, &id),
        None => lines,
    };
    let final_newline = extra(t, FINAL_NEWLINE).and_then(Value::as_bool) != Some(false);
    let bom = extra(t, BOM).and_then(Value::as_bool) == Some(true);
    crate::session_lines::join(&lines, final_newline, bom)
}

fn lines(records: &[Record]) -> Vec<Out> {
    let mut out = Vec::with_capacity(records.len());
    let mut group: Option<Group> = None;
    // The newest envelope read, the model of lines ctxfold makes.
    let mut template: Option<Object> = None;
    let flush = |g: &mut Option<Group>, out: &mut Vec<Out>| {
        if let Some(g) = g.take() {
            out.push(g.finish());
        }
    };
    for r in records {
        let h = hint(r);
        match &r.body {
            Body::TurnStart => {}
            Body::Other { kind, fields } if kind == KEY => {
                flush(&mut group, &mut out);
                out.push(match (fields.get("line"), fields.get("text")) {
                    (Some(v), raw) => Out {
                        value: Some(v.clone()),
                        raw: raw.and_then(Value::as_str).map(str::to_owned),
                    },
                    (None, raw) => Out {
                        value: None,
                        raw: raw.and_then(Value::as_str).map(str::to_owned),
                    },
                });
            }
            Body::Compaction(_) => {
                let Some(Value::Array(kept)) = h.and_then(|h| h.get("lines")) else {
                    continue;
                };
                flush(&mut group, &mut out);
                out.extend(kept.iter().map(Out::kept));
            }
            Body::User { .. }
            | Body::Assistant { .. }
            | Body::Reasoning { .. }
            | Body::ToolCall { .. }
            | Body::ToolResult { .. }
            | Body::Structured { .. } => {
                let assistant = r.body.is_assistant_side();
                let Some(block) = block(r, h) else { continue };
                let starts = h.and_then(|h| h.get("line")).and_then(Value::as_object);
                let continues = h.is_some_and(|h| h.contains_key("more"))
                    && group.as_ref().is_some_and(|g| g.assistant == assistant);
                if let Some(env) = starts {
                    flush(&mut group, &mut out);
                    template = Some(env.clone());
                    group = Some(Group {
                        envelope: env.clone(),
                        assistant,
                        string: h.is_some_and(|h| h.contains_key("string")),
                        blocks: Vec::new(),
                        raw: h
                            .and_then(|h| h.get("raw"))
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        changed_result: false,
                    });
                } else if !continues {
                    flush(&mut group, &mut out);
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
                        && h.and_then(|h| h.get("fnv")).and_then(Value::as_str)
                            != Some(fingerprint(content).as_str())
                    {
                        g.changed_result = true;
                    }
                    g.blocks.push(block);
                }
            }
            Body::System { .. } | Body::CompactionReset(_) | Body::Other { .. } => {}
        }
    }
    flush(&mut group, &mut out);
    out
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
            .and_then(|t| t.get("message"))
            .and_then(|m| m.get("model"))
            .cloned()
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

fn fill(left: Option<&Object>, default_type: &str, fields: Vec<(&str, Value)>) -> Value {
    let mut b = match left {
        Some(l) => l.clone(),
        None => {
            let mut o = Object::new();
            o.insert("type".into(), Value::String(default_type.into()));
            o
        }
    };
    for (k, v) in fields {
        b.insert(k.into(), v);
    }
    Value::Object(b)
}

/// The content block a record writes, or `None` when it writes none.
fn block(r: &Record, h: Option<&Object>) -> Option<Value> {
    let left = h.and_then(|h| h.get("block")).and_then(Value::as_object);
    let opaque = h.is_some_and(|h| h.contains_key("opaque"));
    let of_type = |t: &str| left.filter(|l| l.get("type").and_then(Value::as_str) == Some(t));
    Some(match &r.body {
        Body::User { content, .. } | Body::Assistant { content } => {
            if let (true, Some(l)) = (opaque, left)
                && *content == placeholder(&Value::Object(l.clone()))
            {
                return Some(Value::Object(l.clone()));
            }
            fill(
                of_type("text"),
                "text",
                vec![("text", content.clone().into())],
            )
        }
        Body::Structured { data } => fill(None, "text", vec![("text", data.to_string().into())]),
        Body::Reasoning { content } => {
            if let (true, Some(l)) = (opaque, left)
                && content.is_empty()
            {
                return Some(Value::Object(l.clone()));
            }
            let sig = r
                .metadata
                .as_ref()
                .and_then(|m| m.get(SIGNATURE))
                .cloned()?;
            fill(
                of_type("thinking"),
                "thinking",
                vec![("thinking", content.clone().into()), ("signature", sig)],
            )
        }
        Body::ToolCall {
            id,
            name,
            arguments,
        } => fill(
            of_type("tool_use"),
            "tool_use",
            vec![
                ("id", export_id(r, id, KEY).into()),
                ("name", name.clone().into()),
                ("input", arguments.value()),
            ],
        ),
        Body::ToolResult {
            id,
            content,
            is_error,
        } => {
            let l = of_type("tool_result");
            let kept_parts = h.is_some_and(|h| h.contains_key("blocks"))
                && l.and_then(|l| l.get("content"))
                    .and_then(Value::as_array)
                    .is_some_and(|parts| {
                        h.and_then(|h| h.get("fnv")).and_then(Value::as_str)
                            == Some(fingerprint(content).as_str())
                            && !parts.is_empty()
                    });
            let mut fields = vec![("tool_use_id", Value::from(export_id(r, id, KEY)))];
            if !kept_parts {
                fields.push(("content", content.clone().into()));
            }
            let has_flag = l.is_some_and(|l| l.contains_key("is_error"));
            if has_flag || *is_error {
                fields.push(("is_error", Value::Bool(*is_error)));
            }
            fill(l, "tool_result", fields)
        }
        _ => return None,
    })
}

/// Ids of a new session: the session id everywhere, a new uuid for every
/// line, and the links between lines following (see the module docs).
fn renumber(lines: Vec<Out>, session: &str) -> Vec<Out> {
    let mut map: HashMap<String, String> = HashMap::new();
    let mut last: Option<String> = None;
    let relink = |v: Option<&Value>, map: &HashMap<String, String>, last: &Option<String>| match v
        .and_then(Value::as_str)
    {
        Some(p) => match map.get(p) {
            Some(n) => Value::String(n.clone()),
            None => last.clone().map_or(Value::Null, Value::String),
        },
        None => Value::Null,
    };
    lines
        .into_iter()
        .map(|mut l| {
            let Some(Value::Object(o)) = l.value.as_mut() else {
                return l;
            };
            if o.contains_key("sessionId") {
                o.insert("sessionId".into(), Value::String(session.into()));
            }
            if o.contains_key("parentUuid") && !o.get("parentUuid").is_some_and(Value::is_null) {
                let p = relink(o.get("parentUuid"), &map, &last);
                o.insert("parentUuid".into(), p);
            } else if o.contains_key("parentUuid") && last.is_some() && o.contains_key("message") {
                // A message line that started a chain now follows the
                // line before it (what came before it was folded).
                o.insert(
                    "parentUuid".into(),
                    last.clone().map_or(Value::Null, Value::String),
                );
            }
            for k in ["logicalParentUuid", "leafUuid"] {
                if o.get(k).is_some_and(Value::is_string) {
                    let p = relink(o.get(k), &map, &last);
                    o.insert(k.into(), p);
                }
            }
            for k in ["messageId", "sourceToolAssistantUUID"] {
                if let Some(Value::String(m)) = o.get(k)
                    && let Some(n) = map.get(m)
                {
                    let n = n.clone();
                    o.insert(k.into(), Value::String(n));
                }
            }
            if let Some(Value::String(u)) = o.get("uuid") {
                let old = u.clone();
                let new = uuid_v4();
                map.insert(old, new.clone());
                o.insert("uuid".into(), Value::String(new.clone()));
                if o.get("isSidechain").and_then(Value::as_bool) != Some(true) {
                    last = Some(new);
                }
            }
            l.raw = None;
            l
        })
        .collect()
}
