//! OpenAI chat completions `messages`.
//!
//! # Import
//!
//! The input is a request body (an object with `messages`) or a bare array
//! of messages. The other top-level keys of a body (`model`, `tools`, …) are
//! kept in [`Transcript::extras`]`["openai"]`: the body in its key order with
//! `messages` as a `null` placeholder marking its position, so export gives
//! the body back as it was (nothing is kept when `messages` is the only key).
//!
//! | message | records |
//! | --- | --- |
//! | `system`, `developer` | `system`; a developer message has `"role": "developer"` in the record's `extra` |
//! | `user` | `turn_start` when the last model-visible record is not a user message (so also before the first), then `user` |
//! | `assistant` | `reasoning` from a non-empty `reasoning_content`, `assistant` from a non-empty `content`, one `tool_call` per `tool_calls[i]`; an `assistant` with empty text when that makes nothing |
//! | `tool` | `tool_result` with `is_error: false` (the format has no error flag) |
//! | any other role (`function`, a newer API's) | `openai_message` with field `message`, the message whole, written back as it came |
//!
//! - Content as an array of parts: the record's text is the text parts
//!   joined with "\n"; the array is kept in metadata `openai_content` and
//!   written back while the text is unchanged. The same key keeps a content
//!   the default export would not write (`null` where `""` would be written,
//!   `""` beside tool calls); a missing `content` sets `openai_no_content`.
//! - `function.arguments` is a JSON string, parsed into the call's
//!   `arguments`. Text that does not parse is kept as a JSON string with
//!   metadata `openai_raw_arguments: true`; text that parses but is not what
//!   serde_json writes for the value (spaces, number spelling) is kept in
//!   metadata `openai_arguments_text`. Either way export writes the original.
//!   `arguments` given as an object (not what the API sends, but seen in
//!   logs) is read as it is, with metadata `openai_arguments_object: true`,
//!   and written back as an object.
//! - Message keys this module does not map (`name`, `refusal`, an empty
//!   `tool_calls`, …) go into `extra` of the first record made from the
//!   message, their names listed in metadata `openai_message_keys`: export
//!   writes back only listed keys, so extra fields from another format never
//!   leak into a request. A key the record itself uses (a tool call's `name`,
//!   `type`, …) goes into metadata `openai_message_fields` instead. Unmapped
//!   keys of a tool call go to `openai_tool_call_fields`, of its `function`
//!   to `openai_function_fields`.
//! - An assistant message right after another one gets metadata
//!   `openai_message_start: true` on its first record, since export joins
//!   consecutive assistant output into one message otherwise.
//! - The format has no timestamps: `ts` is the message's own `timestamp`,
//!   `created_at` or `created` when it has one (text the bounds can read kept
//!   as it is, Unix seconds written as RFC 3339; the key stays in the
//!   message), else empty; `seq` counts from 0.
//! - A tool-call id used by several calls: the later calls get unique ids
//!   (`c1_2`, …) and results pair with those calls in order (the first open
//!   call of its id), the original kept in metadata `openai_original_id`
//!   for an export to OpenAI (other formats keep the unique ids); a result
//!   no call answers is kept. Both warn.
//!
//! # Export
//!
//! `{"messages": [...]}` plus the kept body keys. System records become
//! `system` (or `developer`) messages, user records `user` messages, tool
//! results `tool` messages. Consecutive assistant-side records (reasoning,
//! text, tool calls, structured answers) form one assistant message: texts
//! joined with "\n\n" (a structured answer as its JSON text) in `content`
//! (`null` when there is no text but there are tool calls), reasoning joined
//! in `reasoning_content` (absent when none), calls in `tool_calls`. Not
//! written: `turn_start` (turns follow from user messages), overlays, other
//! records (e.g. Anthropic image or redacted thinking blocks), a user
//! record's `author`, and a tool result's `is_error` (re-import reads
//! `false`).

use std::borrow::Borrow;

use ctxfold_core::{Body, JsonText, Object, Record};
use ctxfold_wire::IntoValue;
use ctxfold_wire::chat::{self, Message, ToolCall, role};
use serde::Deserialize;
use serde_json::Value;

use crate::chat::{
    ArgumentKeys, Field, Loose, MESSAGE_FIELD, Records, build_request, describe, keep_message_keys,
    leftovers, message_and_role, message_keys, meta, present, read_arguments, set_meta, text_parts,
};
use crate::pairing::export_id;
use crate::reading::{Reading, Side, read_messages};
use crate::wire::Wire;
use crate::{Exported, Transcript};

/// How a call's `arguments` not written as ctxfold writes them are marked.
const ARGUMENT_KEYS: ArgumentKeys = ArgumentKeys {
    text: "openai_arguments_text",
    raw: "openai_raw_arguments",
    object: "openai_arguments_object",
};

pub(crate) const PREFIX: &str = Wire::OpenAi.prefix();
/// Metadata keeping a message's content as it came, where export would
/// write it otherwise.
pub(crate) const CONTENT: &str = "openai_content";
/// The kind of an `Other` record holding a message of a role this module
/// does not know.
const MESSAGE: &str = "openai_message";
const ROLES: &str = "expected system, developer, user, assistant or tool";
/// The key of a `system` record's `extra` that says it was a `developer`
/// message.
const ROLE: &str = "role";

/// Read OpenAI chat messages (a request body with `messages`, or a bare
/// array). The error says what was expected and where.
pub fn from_json(v: &Value) -> Result<Transcript, String> {
    read_messages(&READING, v)
}

/// How this format's messages are read, whole or one at a time (the
/// message reader's table).
pub(crate) static READING: Reading = Reading {
    wire: Wire::OpenAi,
    read_head: None,
    read_message: |out, _, i, m, prev_assistant| read_message(out, i, m, prev_assistant),
};

/// What the reader reads of a chat message besides its content and tool
/// calls (borrowed through ctxfold-wire's `Message::content_of` and
/// `tool_calls_of`): the call a tool message answers and its reasoning;
/// every other key stays in the message (see [`leftovers`]).
#[derive(Default, Deserialize)]
#[serde(default)]
struct Said<'a> {
    #[serde(borrow)]
    tool_call_id: Field<'a>,
    #[serde(borrow)]
    reasoning_content: Field<'a>,
}

/// What the reader reads of a tool call; its other keys in `extra`.
#[derive(Deserialize)]
struct Call<'a> {
    #[serde(default, borrow)]
    id: Field<'a>,
    #[serde(rename = "type", default, deserialize_with = "present")]
    kind: Option<Value>,
    #[serde(default, borrow)]
    function: Option<Loose<Function<'a>>>,
    #[serde(flatten)]
    extra: Object,
}

/// A tool call's `function`; its other keys in `extra`.
#[derive(Deserialize)]
struct Function<'a> {
    #[serde(default, borrow)]
    name: Field<'a>,
    #[serde(default, deserialize_with = "present")]
    arguments: Option<Value>,
    #[serde(flatten)]
    extra: Object,
}

/// The text of a message's `content` and the value it was read from
/// (`None` when the key was missing).
struct Content<'a> {
    text: String,
    original: Option<&'a Value>,
}

impl<'a> Content<'a> {
    fn read(i: usize, m: &'a Object) -> Result<Self, String> {
        let original = Message::content_of(m);
        let text = match original {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => text_parts(parts),
            Some(other) => {
                return Err(format!(
                    "messages[{i}].content: expected a string, an array of content parts or null, found {}",
                    describe(other)
                ));
            }
        };
        Ok(Content { text, original })
    }

    /// Keep the original content on `r` when export would not write it as
    /// `default`.
    fn keep(&self, r: &mut Record, default: Value) {
        match self.original {
            None => set_meta(r, "openai_no_content", Value::Bool(true)),
            Some(orig) if *orig != default => set_meta(r, CONTENT, orig.clone()),
            Some(_) => {}
        }
    }
}

/// Read message `i`; returns which side it was on.
fn read_message(
    out: &mut Records,
    i: usize,
    m: &Value,
    prev_assistant: bool,
) -> Result<Side, String> {
    let (m, role) = message_and_role(i, m, ROLES)?;
    out.start_message(m);
    if !matches!(role, "system" | "developer" | "user" | "tool" | "assistant") {
        // A role this module does not know (a newer API's, the legacy
        // `function`): kept whole and written back as it came.
        out.push_unknown_message(MESSAGE, m);
        return Ok(Side::Own);
    }
    let said = Said::deserialize(m).map_err(|e| format!("messages[{i}]: {e}"))?;
    let content = Content::read(i, m)?;
    match role {
        "system" | "developer" => {
            let idx = out.push(Body::System {
                content: content.text.clone(),
            });
            let r = &mut out.records[idx];
            if role == "developer" {
                r.extra
                    .insert(ROLE.into(), Value::String(role::DEVELOPER.into()));
            }
            content.keep(r, Value::String(content.text.clone()));
            keep_message_keys(r, leftovers(m, &["role", "content"]), PREFIX);
        }
        "user" => {
            out.open_turn();
            let idx = out.push(Body::User {
                content: content.text.clone(),
                author: None,
            });
            let r = &mut out.records[idx];
            content.keep(r, Value::String(content.text.clone()));
            keep_message_keys(r, leftovers(m, &["role", "content"]), PREFIX);
        }
        "tool" => {
            let Some(id) = said.tool_call_id.str() else {
                return Err(format!(
                    "messages[{i}]: a tool message needs a `tool_call_id` string"
                ));
            };
            let idx = out.push(Body::ToolResult {
                id: id.to_owned(),
                content: content.text.clone(),
                is_error: false,
            });
            let r = &mut out.records[idx];
            content.keep(r, Value::String(content.text.clone()));
            keep_message_keys(
                r,
                leftovers(m, &["role", "tool_call_id", "content"]),
                PREFIX,
            );
        }
        "assistant" => read_assistant(out, i, m, said, &content, prev_assistant)?,
        _ => unreachable!("the roles are checked above"),
    }
    Ok(if role == "assistant" {
        Side::Assistant
    } else {
        Side::User
    })
}

fn read_assistant(
    out: &mut Records,
    i: usize,
    m: &Object,
    said: Said,
    content: &Content<'_>,
    prev_assistant: bool,
) -> Result<(), String> {
    let mut consumed = vec!["role", "content"];
    let calls: &[Value] = match Message::tool_calls_of(m) {
        Some(Value::Array(a)) if !a.is_empty() => {
            consumed.push("tool_calls");
            a
        }
        // An empty or null `tool_calls` is kept as an unmapped key.
        None | Some(Value::Null) | Some(Value::Array(_)) => &[],
        Some(other) => {
            return Err(format!(
                "messages[{i}].tool_calls: expected an array of tool calls, found {}",
                describe(other)
            ));
        }
    };
    let calls = calls
        .iter()
        .enumerate()
        .map(|(j, c)| read_tool_call(i, j, c))
        .collect::<Result<Vec<_>, _>>()?;

    let start = out.records.len();
    if let Some(r) = said.reasoning_content.str()
        && !r.is_empty()
    {
        consumed.push("reasoning_content");
        out.push(Body::Reasoning {
            content: r.to_owned(),
        });
    }
    let mut text_idx = None;
    if !content.text.is_empty() {
        text_idx = Some(out.push(Body::Assistant {
            content: content.text.clone(),
        }));
    }
    let has_calls = !calls.is_empty();
    for (body, meta) in calls {
        let idx = out.push(body);
        if !meta.is_empty() {
            out.records[idx].metadata = Some(Box::new(meta));
        }
    }
    if out.records.len() == start {
        text_idx = Some(out.push(Body::Assistant {
            content: content.text.clone(),
        }));
    }
    let default = if text_idx.is_some() {
        Value::String(content.text.clone())
    } else if has_calls {
        Value::Null
    } else {
        Value::String(String::new())
    };
    content.keep(&mut out.records[text_idx.unwrap_or(start)], default);
    let first = &mut out.records[start];
    if prev_assistant {
        set_meta(first, "openai_message_start", Value::Bool(true));
    }
    keep_message_keys(first, leftovers(m, &consumed), PREFIX);
    Ok(())
}

/// Read `messages[i].tool_calls[j]` into a tool call body and its metadata.
fn read_tool_call(i: usize, j: usize, c: &Value) -> Result<(Body, Object), String> {
    let at = format!("messages[{i}].tool_calls[{j}]");
    if !c.is_object() {
        return Err(format!(
            "{at}: expected a tool call object, found {}",
            describe(c)
        ));
    }
    let call = Call::deserialize(c).map_err(|e| format!("{at}: {e}"))?;
    let Some(id) = call.id.str() else {
        return Err(format!("{at}: missing `id` (a string)"));
    };
    let Some(Loose::Is(f)) = call.function else {
        return Err(format!(
            "{at}: missing `function` (an object with `name` and `arguments`)"
        ));
    };
    let Some(name) = f.name.str() else {
        return Err(format!("{at}.function: missing `name` (a string)"));
    };
    let mut meta = Object::new();
    let Some(given) = &f.arguments else {
        return Err(format!(
            "{at}.function: missing `arguments` (a JSON string)"
        ));
    };
    let Some((arguments, mark)) = read_arguments(given, &ARGUMENT_KEYS) else {
        return Err(format!(
            "{at}.function.arguments: expected a JSON string (or an object), found {}",
            describe(given)
        ));
    };
    if let Some((k, v)) = mark {
        meta.insert(k.into(), v);
    }
    let mut call_fields = call.extra;
    match call.kind {
        Some(Value::String(t)) if t == "function" => {}
        None => {}
        Some(other) => {
            call_fields.insert("type".into(), other);
        }
    }
    if !call_fields.is_empty() {
        meta.insert("openai_tool_call_fields".into(), Value::Object(call_fields));
    }
    if !f.extra.is_empty() {
        meta.insert("openai_function_fields".into(), Value::Object(f.extra));
    }
    let body = Body::ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: arguments.into(),
    };
    Ok((body, meta))
}

/// Write records as OpenAI chat messages.
pub fn to_json<R: Borrow<Record>>(records: &[R], extras: &Object) -> Value {
    let messages = messages(records)
        .into_iter()
        .map(IntoValue::into_value)
        .collect();
    let kept = extras.get(PREFIX).and_then(Value::as_object);
    build_request(kept, vec![("messages", Some(Value::Array(messages)))])
}

/// The chat messages of `records`, typed: [`to_json`]'s `messages`, which
/// a caller writing JSON text serializes straight to it (no JSON values
/// built on the way).
pub fn messages<R: Borrow<Record>>(records: &[R]) -> Vec<Exported<Message>> {
    let mut messages = Vec::new();
    let mut group: Vec<&Record> = Vec::new();
    let flush = |group: &mut Vec<&Record>, messages: &mut Vec<Exported<Message>>| {
        if !group.is_empty() {
            messages.push(Exported::Built(assistant_message(group)));
            group.clear();
        }
    };
    for r in records.iter().map(Borrow::borrow) {
        match &r.body {
            b if b.is_assistant_side() => {
                if meta(r, "openai_message_start") == Some(&Value::Bool(true)) {
                    flush(&mut group, &mut messages);
                }
                group.push(r);
            }
            Body::System { content } => {
                flush(&mut group, &mut messages);
                let role = match r.extra.get(ROLE) {
                    Some(Value::String(d)) if d == role::DEVELOPER => role::DEVELOPER,
                    _ => role::SYSTEM,
                };
                let msg = Message {
                    role: role.into(),
                    content: content_of(&[r], content, Value::String(content.clone())),
                    ..Message::default()
                };
                messages.push(Exported::Built(msg.with_extra(message_keys(r, PREFIX))));
            }
            Body::User { content, .. } => {
                flush(&mut group, &mut messages);
                let msg = Message {
                    role: role::USER.into(),
                    content: content_of(&[r], content, Value::String(content.clone())),
                    ..Message::default()
                };
                messages.push(Exported::Built(msg.with_extra(message_keys(r, PREFIX))));
            }
            Body::ToolResult { id, content, .. } => {
                flush(&mut group, &mut messages);
                let msg = Message {
                    role: role::TOOL.into(),
                    tool_call_id: Some(export_id(r, id, PREFIX).to_owned()),
                    content: content_of(&[r], content, Value::String(content.clone())),
                    ..Message::default()
                };
                messages.push(Exported::Built(msg.with_extra(message_keys(r, PREFIX))));
            }
            Body::TurnStart => flush(&mut group, &mut messages),
            Body::Other { kind, fields } if kind == MESSAGE => {
                if let Some(m) = fields.get(MESSAGE_FIELD).filter(|m| m.is_object()) {
                    flush(&mut group, &mut messages);
                    messages.push(Exported::Kept(m.clone()));
                }
            }
            // Overlays and other records are not messages.
            _ => {}
        }
    }
    flush(&mut group, &mut messages);
    messages
}

/// One assistant message from the records of one step.
fn assistant_message(group: &[&Record]) -> Message {
    let mut texts = Vec::new();
    let mut reasoning = Vec::new();
    let mut calls = Vec::new();
    for r in group {
        match &r.body {
            Body::Assistant { content } => texts.push(content.clone()),
            Body::Structured { data } => {
                texts.push(serde_json::to_string(data).unwrap_or_default())
            }
            Body::Reasoning { content } => reasoning.push(content.as_str()),
            Body::ToolCall {
                id,
                name,
                arguments,
            } => calls.push(tool_call(r, id, name, arguments)),
            _ => {}
        }
    }
    let text = texts.join("\n\n");
    let default = if !texts.is_empty() {
        Value::String(text.clone())
    } else if !calls.is_empty() {
        Value::Null
    } else {
        Value::String(String::new())
    };
    let msg = Message {
        role: role::ASSISTANT.into(),
        content: content_of(group, &text, default),
        reasoning_content: (!reasoning.is_empty()).then(|| reasoning.join("\n\n")),
        tool_calls: (!calls.is_empty()).then_some(calls),
        ..Message::default()
    };
    let keys = group
        .first()
        .map(|first| message_keys(first, PREFIX))
        .unwrap_or_default();
    msg.with_extra(keys)
}

fn tool_call(r: &Record, id: &str, name: &str, arguments: &JsonText) -> ToolCall {
    let args = if meta(r, ARGUMENT_KEYS.object) == Some(&Value::Bool(true))
        && arguments.text().starts_with('{')
    {
        arguments.value()
    } else {
        Value::String(arguments_text(r, arguments))
    };
    let mut call = ToolCall::function(export_id(r, id, PREFIX), name, args);
    if let Some(Value::Object(f)) = meta(r, "openai_function_fields") {
        call.function.extra = ctxfold_wire::extra_except(f.clone(), &["name", "arguments"]);
    }
    if let Some(Value::Object(fields)) = meta(r, "openai_tool_call_fields") {
        // The kept fields win, `type` too (a call of another type).
        let mut fields = fields.clone();
        if let Some(Value::String(kind)) = fields.shift_remove("type") {
            call.kind = kind;
        }
        call.extra = ctxfold_wire::extra_except(fields, &["id", "function"]);
    }
    call
}

/// The `function.arguments` text of a call: the original text when import
/// kept it and it still says the same, else the compact JSON (the text
/// the record holds: no parsing for the common call).
fn arguments_text(r: &Record, arguments: &JsonText) -> String {
    if meta(r, ARGUMENT_KEYS.raw) == Some(&Value::Bool(true))
        && let Value::String(s) = arguments.value()
    {
        return s;
    }
    if let Some(Value::String(t)) = meta(r, ARGUMENT_KEYS.text)
        && serde_json::from_str::<Value>(t).ok() == Some(arguments.value())
    {
        return t.clone();
    }
    arguments.text().to_owned()
}

/// A message's `content`: the original content import kept (on the first
/// of `records` that has one) while its text is still `text`, else
/// `default`; none when the message had no `content` and `text` is empty.
fn content_of(records: &[&Record], text: &str, default: Value) -> Option<chat::Content> {
    for r in records {
        if meta(r, "openai_no_content") == Some(&Value::Bool(true)) {
            if text.is_empty() {
                return None;
            }
            break;
        }
        if let Some(orig) = meta(r, CONTENT) {
            if content_text(orig) == text {
                return Some(chat::Content::from_value(orig.clone()));
            }
            break;
        }
    }
    Some(chat::Content::from_value(default))
}

/// The text a content value holds.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => text_parts(parts),
        _ => String::new(),
    }
}
