//! Anthropic `messages`.
//!
//! # Import
//!
//! The input is a request body (an object with `messages` and maybe
//! `system`) or a bare array of messages. The other top-level keys of a body
//! (`model`, `max_tokens`, `tools`, …) are kept in
//! [`Transcript::extras`]`["anthropic"]`: the body in its key order with
//! `system` and `messages` as `null` placeholders marking their positions
//! (nothing is kept when there are no other keys).
//!
//! - `system` becomes one `system` record first. An array of blocks gives
//!   its text blocks joined with "\n"; the array is kept in metadata
//!   `anthropic_system` and written back while the text is unchanged.
//! - A `role: "system"` message inside `messages` (Claude Code sends one)
//!   is a `system` record where it stands, marked with metadata
//!   `anthropic_system_message`; an array of blocks is kept in
//!   `anthropic_system` as above, and its other keys as for any message.
//!   Export writes it back in place, as its own message.
//! - A message of any other role is kept whole as an `anthropic_message`
//!   record with field `message`, and written back as it came.
//! - User content: a string or a `text` block is a `user` record;
//!   `tool_result` a `tool_result` record (`content` a string, or its text
//!   blocks joined with "\n" with the block array kept in metadata
//!   `anthropic_content`; `is_error` when `true`).
//! - Assistant content: a string or a `text` block is an `assistant` record;
//!   `thinking` a `reasoning` record with its signature in metadata
//!   `anthropic_thinking_signature` (the key JP uses); `tool_use` a
//!   `tool_call` whose `arguments` are the `input`.
//! - Any other block (`image`, `document`, `redacted_thinking`, server tool
//!   blocks, …) is kept whole as an `anthropic_block` record with fields
//!   `role` and `block`.
//! - Turns: a user message holding text opens a turn, with a `turn_start`
//!   before its first block that is not a tool result, unless the last
//!   model-visible record is a user message. So tool results answering the
//!   previous step stay in its turn, and text sent with them (an interrupt)
//!   starts the next one.
//! - Unmapped keys of a block (`cache_control`, `citations`, an explicit
//!   `is_error: false`, …) are kept in the record's metadata
//!   `anthropic_block_fields`; unmapped keys of a message go into `extra` of
//!   its first record, as for OpenAI (listed in `anthropic_message_keys`, or
//!   in `anthropic_message_fields` when the record uses the name).
//! - Content shape: a user message is written as a plain string when it is
//!   one plain text block, an assistant message as a block array; metadata
//!   `anthropic_string_content` on the first record records an input that
//!   did otherwise.
//! - A message with an empty block array makes no record: a warning says
//!   so. The format has no timestamps: `ts` is the message's own `timestamp`,
//!   `created_at` or `created` when it has one (text the bounds can read kept
//!   as it is, Unix seconds written as RFC 3339; the key stays in the
//!   message), else empty; `seq` counts from 0.
//! - Repeated `tool_use` ids are made unique as for OpenAI (the original in
//!   metadata `anthropic_original_id`, written back by an export to
//!   Anthropic only), with a warning, as is a `tool_result` no call
//!   answers.
//!
//! # Export
//!
//! System records become the top-level `system` (joined with "\n\n" when
//! there are several, wherever they were), except those read from a
//! `system` message, which go back into `messages` where they were. The other records become blocks,
//! and consecutive blocks of one role merge into one message, so the output
//! alternates user and assistant strictly (tool results followed by user
//! text become one user message `[tool_result…, text]`). A structured answer
//! is written as a text block of its JSON. Reasoning without a signature is
//! left out: Anthropic rejects an unsigned thinking block (one imported
//! unsigned, metadata `anthropic_unsigned`, is written back as it was). Not
//! written: `turn_start`, overlays, other records except `anthropic_block`,
//! a user record's `author`.

use std::borrow::Borrow;

use ctxfold_core::{Body, Object, Record};
use ctxfold_wire::IntoValue;
use ctxfold_wire::anthropic::{
    self as wire, Block, Content, Message, Text, Thinking, ToolResult, ToolUse,
};
use serde::Deserialize;
use serde_json::Value;

use crate::chat::{
    Field, MESSAGE_FIELD, Records, TextOrArray, build_request, describe, keep_message_keys,
    leftovers, message_and_role, message_keys, meta, present, set_meta, text_parts,
};
use crate::pairing::export_id;
use crate::reading::{Reading, Side, read_messages};
use crate::session_lines::type_tag;
use crate::wire::Wire;
use crate::{Exported, Transcript};

pub(crate) const PREFIX: &str = Wire::Anthropic.prefix();
const SIGNATURE: &str = "anthropic_thinking_signature";
const BLOCK: &str = "anthropic_block";
const BLOCK_FIELDS: &str = "anthropic_block_fields";
const STRING_CONTENT: &str = "anthropic_string_content";
/// The fields of an `anthropic_block` record: the side it was on, and the
/// block whole.
const ROLE_FIELD: &str = "role";
const BLOCK_FIELD: &str = "block";
/// Metadata marking a `system` record read from a message in `messages`.
pub const SYSTEM_MESSAGE: &str = "anthropic_system_message";
/// The kind of an `Other` record holding a message of a role this module
/// does not know.
const MESSAGE: &str = "anthropic_message";

/// Read Anthropic messages (a request body with `messages`, or a bare
/// array). The error says what was expected and where.
pub fn from_json(v: &Value) -> Result<Transcript, String> {
    read_messages(&READING, v)
}

/// How this format's messages are read, whole or one at a time (the
/// message reader's table): the top-level `system` first.
pub(crate) static READING: Reading = Reading {
    wire: Wire::Anthropic,
    read_head: Some(read_system),
    read_message: |out, warnings, i, m, _| read_message(out, warnings, i, m),
};

/// A request body's `system`, as the reader takes it.
#[derive(Deserialize)]
struct System {
    #[serde(default, deserialize_with = "present")]
    system: Option<TextOrArray>,
}

/// What the reader reads of a content block of a type it maps (the
/// fields of ctxfold-wire's `Text`, `Thinking`, `ToolUse` and
/// `ToolResult`), each as it came so an error can say what it found; the
/// block's other keys are kept by [`leftovers`].
#[derive(Default, Deserialize)]
#[serde(default)]
struct Fields<'a> {
    #[serde(borrow)]
    text: Field<'a>,
    #[serde(borrow)]
    thinking: Field<'a>,
    #[serde(borrow)]
    signature: Field<'a>,
    #[serde(borrow)]
    id: Field<'a>,
    #[serde(borrow)]
    name: Field<'a>,
    #[serde(deserialize_with = "present")]
    input: Option<Value>,
    #[serde(borrow)]
    tool_use_id: Field<'a>,
    #[serde(deserialize_with = "present")]
    content: Option<TextOrArray>,
    #[serde(borrow)]
    is_error: Field<'a>,
}

/// The records of a request's top-level `system`, if any.
fn read_system(out: &mut Records, body: &Object) -> Result<(), String> {
    let system = System::deserialize(body).map_err(|e| format!("`system`: {e}"))?;
    match system.system {
        None | Some(TextOrArray::Other(Value::Null)) => {}
        Some(TextOrArray::Text(s)) => {
            out.push(Body::System { content: s });
        }
        Some(TextOrArray::Array(blocks)) => {
            push_system_blocks(out, blocks);
        }
        Some(TextOrArray::Other(other)) => {
            return Err(format!(
                "`system`: expected a string or an array of text blocks, found {}",
                describe(&other)
            ));
        }
    }
    Ok(())
}

/// Read message `i`; returns which side it was on.
fn read_message(
    out: &mut Records,
    warnings: &mut Vec<String>,
    i: usize,
    m: &Value,
) -> Result<Side, String> {
    let (m, role) = message_and_role(i, m, "expected user, assistant or system")?;
    out.start_message(m);
    let user = match role {
        "user" => true,
        "assistant" => false,
        "system" => {
            read_system_message(out, i, m)?;
            return Ok(Side::Own);
        }
        _ => {
            // A role this module does not know: kept whole, written back
            // as it came.
            out.push_unknown_message(MESSAGE, m);
            return Ok(Side::Own);
        }
    };
    // Borrowed, not copied: only what the records hold is.
    let first = match Message::content_of(m) {
        Some(Value::String(s)) => {
            let idx = if user {
                out.open_turn();
                out.push(Body::User {
                    content: s.clone(),
                    author: None,
                })
            } else {
                let idx = out.push(Body::Assistant { content: s.clone() });
                set_meta(&mut out.records[idx], STRING_CONTENT, Value::Bool(true));
                idx
            };
            Some(idx)
        }
        Some(Value::Array(blocks)) => {
            let mut typed = Vec::with_capacity(blocks.len());
            for (j, b) in blocks.iter().enumerate() {
                match b {
                    Value::Object(o) if type_tag(o).is_some() => {
                        typed.push((j, o, type_tag(o).unwrap_or_default()));
                    }
                    _ => {
                        return Err(format!(
                            "messages[{i}].content[{j}]: expected a content block (an object with a `type` string), found {}",
                            describe(b)
                        ));
                    }
                }
            }
            let plain = match typed.as_slice() {
                [(_, b, _)] => is_plain_text(b),
                _ => false,
            };
            let mut turn_pending = user && typed.iter().any(|(_, _, ty)| *ty == "text");
            let mut first = None;
            for (j, b, ty) in typed {
                if turn_pending && ty != "tool_result" {
                    out.open_turn();
                    turn_pending = false;
                }
                let idx = read_block(out, i, j, user, b, ty)?;
                first.get_or_insert(idx);
            }
            if let (true, true, Some(idx)) = (user, plain, first) {
                set_meta(&mut out.records[idx], STRING_CONTENT, Value::Bool(false));
            }
            first
        }
        other => return Err(content_error(i, other)),
    };
    match first {
        Some(idx) => keep_message_keys(
            &mut out.records[idx],
            leftovers(m, &["role", "content"]),
            PREFIX,
        ),
        None => warnings.push(format!(
            "messages[{i}]: {role} message with no content blocks left out"
        )),
    }
    Ok(if user { Side::User } else { Side::Assistant })
}

/// Read a `system` message inside `messages` (Claude Code sends one): a
/// `system` record marked [`SYSTEM_MESSAGE`], its content's blocks kept in
/// metadata `anthropic_system` as for the top-level `system`.
fn read_system_message(out: &mut Records, i: usize, m: &Object) -> Result<(), String> {
    let idx = match Message::content_of(m) {
        Some(Value::String(s)) => out.push(Body::System { content: s.clone() }),
        Some(Value::Array(blocks)) => push_system_blocks(out, blocks.clone()),
        other => return Err(content_error(i, other)),
    };
    let r = &mut out.records[idx];
    set_meta(r, SYSTEM_MESSAGE, Value::Bool(true));
    keep_message_keys(r, leftovers(m, &["role", "content"]), PREFIX);
    Ok(())
}

/// Whether `r` is a `system` message read from inside `messages` (written
/// back there), not the top-level `system`.
pub fn is_system_message(r: &Record) -> bool {
    matches!(r.body, Body::System { .. }) && meta(r, SYSTEM_MESSAGE) == Some(&Value::Bool(true))
}

/// Read block `j` of message `i`; returns the index of its record.
fn read_block(
    out: &mut Records,
    i: usize,
    j: usize,
    user: bool,
    b: &Object,
    ty: &str,
) -> Result<usize, String> {
    let at = format!("messages[{i}].content[{j}]");
    if !matches!(
        (user, ty),
        (_, "text") | (true, "tool_result") | (false, "thinking" | "tool_use")
    ) {
        let mut fields = Object::new();
        let role = if user {
            wire::role::USER
        } else {
            wire::role::ASSISTANT
        };
        fields.insert(ROLE_FIELD.into(), role.into());
        fields.insert(BLOCK_FIELD.into(), Value::Object(b.clone()));
        return Ok(out.push(Body::Other {
            kind: BLOCK.into(),
            fields: Box::new(fields),
        }));
    }
    let f = Fields::deserialize(b).map_err(|e| format!("{at}: {e}"))?;
    let string = |field: Field, name: &str| match field.str() {
        Some(s) => Ok(s.to_owned()),
        None => Err(format!("{at}: a `{ty}` block needs a `{name}` string")),
    };
    let mut consumed = vec!["type"];
    let idx = match (user, ty) {
        (true, "text") => {
            consumed.push("text");
            out.push(Body::User {
                content: string(f.text, "text")?,
                author: None,
            })
        }
        (true, "tool_result") => {
            consumed.extend(["tool_use_id", "content"]);
            let id = string(f.tool_use_id, "tool_use_id")?;
            let (content, original) = match f.content {
                None | Some(TextOrArray::Other(Value::Null)) => (String::new(), Some(Value::Null)),
                Some(TextOrArray::Text(s)) => (s, None),
                Some(TextOrArray::Array(a)) => (text_parts(&a), Some(Value::Array(a))),
                Some(TextOrArray::Other(other)) => {
                    return Err(format!(
                        "{at}.content: expected a string or an array of content blocks, found {}",
                        describe(&other)
                    ));
                }
            };
            let is_error = match f.is_error {
                Field::Bool(true) => {
                    consumed.push("is_error");
                    true
                }
                // An explicit `false` stays an unmapped key, so it is
                // written back.
                Field::Missing | Field::Bool(false) => false,
                other => {
                    return Err(format!(
                        "{at}.is_error: expected true or false, found {}",
                        other.describe()
                    ));
                }
            };
            let idx = out.push(Body::ToolResult {
                id,
                content,
                is_error,
            });
            if let Some(original) = original {
                set_meta(&mut out.records[idx], "anthropic_content", original);
            }
            idx
        }
        (false, "text") => {
            consumed.push("text");
            out.push(Body::Assistant {
                content: string(f.text, "text")?,
            })
        }
        (false, "thinking") => {
            consumed.push("thinking");
            let content = string(f.thinking, "thinking")?;
            let idx = out.push(Body::Reasoning { content });
            match f.signature.str() {
                Some(sig) => {
                    consumed.push("signature");
                    set_meta(&mut out.records[idx], SIGNATURE, Value::String(sig.into()));
                }
                None => set_meta(
                    &mut out.records[idx],
                    "anthropic_unsigned",
                    Value::Bool(true),
                ),
            }
            idx
        }
        _ => {
            // A `tool_use` (the types are checked above).
            consumed.extend(["id", "name", "input"]);
            let id = string(f.id, "id")?;
            let name = string(f.name, "name")?;
            let Some(input) = f.input else {
                return Err(format!("{at}: a `tool_use` block needs an `input`"));
            };
            out.push(Body::ToolCall {
                id,
                name,
                arguments: input.into(),
            })
        }
    };
    let rest = leftovers(b, &consumed);
    if !rest.is_empty() {
        set_meta(&mut out.records[idx], BLOCK_FIELDS, Value::Object(rest));
    }
    Ok(idx)
}

/// The block an `anthropic_block` record keeps whole (a block this module
/// does not map: `image`, `redacted_thinking`, `compaction`, …).
pub fn other_block(r: &Record) -> Option<&Value> {
    match &r.body {
        Body::Other { kind, fields } if kind == BLOCK => fields.get(BLOCK_FIELD),
        _ => None,
    }
}

/// The record an assistant content block this module does not map is
/// read into, as from a request (so an answer's block and the same block
/// sent back read the same).
pub fn assistant_block_record(block: &Object) -> Record {
    let mut fields = Object::new();
    fields.insert(ROLE_FIELD.into(), wire::role::ASSISTANT.into());
    fields.insert(BLOCK_FIELD.into(), Value::Object(block.clone()));
    Record::new(
        0,
        "",
        Body::Other {
            kind: BLOCK.into(),
            fields: Box::new(fields),
        },
    )
}

/// A text block with nothing but `type` and `text`.
fn is_plain_text(b: &Object) -> bool {
    b.len() == 2 && type_tag(b) == Some("text") && plain_text_of(b).is_some()
}

/// The `text` string of block `b`, if it has one.
fn plain_text_of(b: &Object) -> Option<&str> {
    Fields::deserialize(b).ok()?.text.str()
}

/// Write records as Anthropic messages.
pub fn to_json<R: Borrow<Record>>(records: &[R], extras: &Object) -> Value {
    let systems: Vec<&Record> = records
        .iter()
        .map(Borrow::borrow)
        .filter(|r| matches!(r.body, Body::System { .. }) && !is_system_message(r))
        .collect();
    let system = match systems.as_slice() {
        [] => None,
        [r] => {
            let text = system_text(r);
            match meta(r, "anthropic_system") {
                Some(Value::Array(blocks)) if text_parts(blocks) == text => {
                    Some(Value::Array(blocks.clone()))
                }
                _ => Some(Value::String(text.to_owned())),
            }
        }
        many => Some(Value::String(
            many.iter()
                .map(|r| system_text(r))
                .collect::<Vec<_>>()
                .join("\n\n"),
        )),
    };

    let messages = messages(records)
        .into_iter()
        .map(IntoValue::into_value)
        .collect();

    let kept = extras.get(PREFIX).and_then(Value::as_object);
    build_request(
        kept,
        vec![
            ("system", system),
            ("messages", Some(Value::Array(messages))),
        ],
    )
}

/// The messages of `records`, typed: [`to_json`]'s `messages` (its
/// `system` apart), which a caller writing JSON text serializes straight
/// to it.
pub fn messages<R: Borrow<Record>>(records: &[R]) -> Vec<Exported<Message>> {
    // Runs of blocks of one role, and messages that stand on their own.
    enum Entry<'a> {
        Run(&'a str, Vec<Block>, &'a Record),
        Own(Exported<Message>),
    }
    let mut grouped: Vec<Entry> = Vec::new();
    for r in records.iter().map(Borrow::borrow) {
        if let Some(m) = own_message(r) {
            grouped.push(Entry::Own(m));
            continue;
        }
        let Some((role, block)) = block_of(r) else {
            continue;
        };
        match grouped.last_mut() {
            Some(Entry::Run(last, blocks, _)) if *last == role => blocks.push(block),
            _ => grouped.push(Entry::Run(role, vec![block], r)),
        }
    }
    grouped
        .into_iter()
        .map(|entry| {
            let (role, mut blocks, first) = match entry {
                Entry::Own(m) => return m,
                Entry::Run(role, blocks, first) => (role, blocks, first),
            };
            let as_string = match blocks.as_slice() {
                [b] if plain_text(b).is_some() => match meta(first, STRING_CONTENT) {
                    Some(Value::Bool(s)) => *s,
                    _ => role == wire::role::USER,
                },
                _ => false,
            };
            let content = match blocks.pop() {
                Some(b) if as_string => {
                    Content::Text(plain_text(&b).map(str::to_owned).unwrap_or_default())
                }
                Some(b) => {
                    blocks.push(b);
                    Content::Blocks(blocks)
                }
                None => Content::Blocks(blocks),
            };
            Exported::Built(Message::new(role, content, message_keys(first, PREFIX)))
        })
        .collect()
}

/// The text of a text block with nothing but `type` and `text`.
fn plain_text(b: &Block) -> Option<&str> {
    match b {
        Block::Text(t) if t.extra.is_empty() => Some(&t.text),
        Block::Other(Value::Object(o)) if is_plain_text(o) => plain_text_of(o),
        _ => None,
    }
}

/// Blocks kept as they came (a `system` array), written back as they are.
fn kept_blocks(blocks: &[Value]) -> Content {
    Content::Blocks(blocks.iter().cloned().map(Block::Other).collect())
}

/// The message a record is written as on its own, if it is one: a
/// `system` message read from `messages` (its blocks while their text is
/// unchanged), or a message of a role this module does not know.
fn own_message(r: &Record) -> Option<Exported<Message>> {
    match &r.body {
        Body::System { content } if is_system_message(r) => {
            let content = match meta(r, "anthropic_system") {
                Some(Value::Array(blocks)) if text_parts(blocks) == *content => kept_blocks(blocks),
                _ => Content::Text(content.clone()),
            };
            Some(Exported::Built(Message::new(
                wire::role::SYSTEM,
                content,
                message_keys(r, PREFIX),
            )))
        }
        Body::Other { kind, fields } if kind == MESSAGE => fields
            .get(MESSAGE_FIELD)
            .filter(|m| m.is_object())
            .cloned()
            .map(Exported::Kept),
        _ => None,
    }
}

fn system_text(r: &Record) -> &str {
    match &r.body {
        Body::System { content } => content,
        _ => "",
    }
}

/// The role and content block a record is written as, if any.
fn block_of(r: &Record) -> Option<(&'static str, Block)> {
    // The block's unmapped keys, as import kept them; a field the block
    // sets itself wins.
    let rest = match meta(r, BLOCK_FIELDS) {
        Some(Value::Object(rest)) => rest.clone(),
        _ => Object::new(),
    };
    let text = |t: String| {
        Block::Text(Text {
            text: t,
            extra: ctxfold_wire::extra_except(rest.clone(), &["type", "text"]),
        })
    };
    Some(match &r.body {
        Body::User { content, .. } => (wire::role::USER, text(content.clone())),
        Body::ToolResult {
            id,
            content,
            is_error,
        } => {
            let content = match meta(r, "anthropic_content") {
                Some(Value::Null) if content.is_empty() => None,
                Some(Value::Array(a)) if text_parts(a) == *content => Some(kept_blocks(a)),
                _ => Some(Content::Text(content.clone())),
            };
            let mut set = vec!["type", "tool_use_id"];
            if content.is_some() {
                set.push("content");
            }
            if *is_error {
                set.push("is_error");
            }
            let b = ToolResult {
                tool_use_id: export_id(r, id, PREFIX).to_owned(),
                content,
                is_error: is_error.then_some(true),
                extra: ctxfold_wire::extra_except(rest, &set),
            };
            (wire::role::USER, Block::ToolResult(b))
        }
        Body::Assistant { content } => (wire::role::ASSISTANT, text(content.clone())),
        Body::Structured { data } => (
            wire::role::ASSISTANT,
            text(serde_json::to_string(data).unwrap_or_default()),
        ),
        Body::Reasoning { content } => {
            let signature = match meta(r, SIGNATURE) {
                Some(Value::String(sig)) => Some(sig.clone()),
                _ if meta(r, "anthropic_unsigned") == Some(&Value::Bool(true)) => None,
                _ => return None,
            };
            let mut set = vec!["type", "thinking"];
            if signature.is_some() {
                set.push("signature");
            }
            let b = Thinking {
                thinking: content.clone(),
                signature,
                extra: ctxfold_wire::extra_except(rest, &set),
            };
            (wire::role::ASSISTANT, Block::Thinking(b))
        }
        Body::ToolCall {
            id,
            name,
            arguments,
        } => {
            let b = ToolUse {
                id: export_id(r, id, PREFIX).to_owned(),
                name: name.clone(),
                input: arguments.value(),
                extra: ctxfold_wire::extra_except(rest, &["type", "id", "name", "input"]),
            };
            (wire::role::ASSISTANT, Block::ToolUse(b))
        }
        Body::Other { kind, fields } if kind == BLOCK => {
            let role = match fields.get(ROLE_FIELD).and_then(Value::as_str) {
                Some("user") => wire::role::USER,
                Some("assistant") => wire::role::ASSISTANT,
                _ => return None,
            };
            let block = fields.get(BLOCK_FIELD).filter(|b| b.is_object())?;
            (role, Block::Other(block.clone()))
        }
        _ => return None,
    })
}

/// A `system` record of `blocks`' text, the blocks kept in metadata
/// `anthropic_system`; returns its index.
fn push_system_blocks(out: &mut Records, blocks: Vec<Value>) -> usize {
    let idx = out.push(Body::System {
        content: text_parts(&blocks),
    });
    set_meta(
        &mut out.records[idx],
        "anthropic_system",
        Value::Array(blocks),
    );
    idx
}

/// The error for message `i`'s `content` that is missing or neither a
/// string nor blocks.
fn content_error(i: usize, content: Option<&Value>) -> String {
    match content {
        None => format!(
            "messages[{i}]: missing `content`; expected a string or an array of content blocks"
        ),
        Some(other) => format!(
            "messages[{i}].content: expected a string or an array of content blocks, found {}",
            describe(other)
        ),
    }
}
