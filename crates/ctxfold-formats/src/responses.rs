//! OpenAI Responses API requests (`POST /v1/responses`).
//!
//! # Import
//!
//! The input is a request body: an object whose `input` is a string (one
//! user message) or an array of items. The other top-level keys (`model`,
//! `instructions`, `tools`, `previous_response_id`, `store`, `reasoning`,
//! …) are kept in [`Transcript::extras`]`["responses"]`: the body in its key
//! order with `input` as a `null` placeholder marking its position (nothing
//! is kept when `input` is the only key; a body without `input` is kept
//! whole). An item without `type` but with `role` is a message.
//!
//! | item | records |
//! | --- | --- |
//! | `message`, role `system`, `developer` | `system`; a developer message has `"role": "developer"` in the record's `extra` |
//! | `message`, role `user` | `turn_start` when the last model-visible record is not a user message (so also before the first), then `user` |
//! | `message`, role `assistant` | `assistant` |
//! | `function_call` | `tool_call` with `id` the `call_id` and `arguments` parsed from their JSON text |
//! | `function_call_output` | `tool_result` with `id` the `call_id` and `is_error: false` (the format has no error flag) |
//! | `reasoning` | `reasoning`: the `summary_text` parts joined with "\n\n" (the `reasoning_text` parts of `content` when the summary has none) |
//! | a `message` of any other role; any other item (`item_reference`, `web_search_call`, `computer_call`, `mcp_call`, …) | `responses_item` with field `item`, the item whole |
//!
//! A string `input` is one `user` record with metadata
//! `responses_string_input: true`.
//!
//! - Each item is kept in metadata `responses_item` with the fields its
//!   record holds set to `null` (a message's string `content`, a call's
//!   `call_id`, `name` and `arguments`, an output's `call_id` and string
//!   `output`): export fills those in place, so the item's other keys
//!   (`id`, `status`, …) and their order come back as they were. Nothing is
//!   kept when the item is exactly what export writes by default.
//! - Content (or `output`) as an array of parts: the record's text is the
//!   `input_text` and `output_text` parts joined with "\n"; the array stays
//!   in `responses_item` and is written back while the text is unchanged.
//! - `arguments` text that does not parse is kept as a JSON string with
//!   metadata `responses_raw_arguments: true`; text that parses but is not
//!   what serde_json writes for the value is kept in metadata
//!   `responses_arguments_text`; an object (not what the API sends) is read
//!   as it is, with `responses_arguments_object: true`. As for OpenAI chat.
//! - A reasoning item is kept whole in `responses_item`: its
//!   `encrypted_content` (or its `id`, for a stored response) is only valid
//!   as the server wrote it.
//! - The format has no timestamps: `ts` is the item's own `timestamp`,
//!   `created_at` or `created` when it has one, else empty; `seq` counts
//!   from 0.
//! - Repeated `call_id`s are made unique as for OpenAI chat (the original in
//!   metadata `responses_original_id`, written back by this export only),
//!   with a warning, as is an output no call answers.
//!
//! # Export
//!
//! `{"input": [...]}` plus the kept body keys: one item a record, in order.
//! Records without a kept item get the plain shapes: `{"role", "content"}`
//! messages (a structured answer as an assistant message of its JSON text),
//! `function_call` and `function_call_output` items with `type`, `call_id`
//! and `name`/`arguments` or `output`. A reasoning record is written only
//! as the item it was read from, and only while its text is unchanged: the
//! API refuses a reasoning item it did not write. `input` is written as a
//! string again when it was one and is still one plain user message. Not
//! written: `turn_start`, overlays, other records except `responses_item`, a
//! user record's `author`, a tool result's `is_error`.
//!
//! [`output_records`] reads a response's `output` with the same mapping, so
//! an answer recorded from the response compares equal, body for body, with
//! the same items sent back in the next request's `input`.

use std::borrow::Borrow;

use ctxfold_core::{Body, Object, Record};
use ctxfold_wire::responses::{self as wire, Item};
use serde::Deserialize;
use serde_json::Value;

use crate::Transcript;
use crate::chat::{
    ArgumentKeys, Field, Loose, Records, TextOrArray, build_request, describe, kept_body, meta,
    present, read_arguments, set_meta, text_of, with_nulls,
};
use crate::pairing::{export_id, pair};
use crate::reading::{Reading, Side, read_all};
use crate::wire::Wire;

pub(crate) const PREFIX: &str = Wire::Responses.prefix();
/// The item a record was read from, with the fields the record holds set
/// to `null`.
const ITEM: &str = "responses_item";
/// The kind of an `Other` record holding an item this module does not map.
const OTHER: &str = "responses_item";
const STRING_INPUT: &str = "responses_string_input";
const RAW_ARGUMENTS: &str = "responses_raw_arguments";
const ARGUMENTS_TEXT: &str = "responses_arguments_text";
const ARGUMENTS_OBJECT: &str = "responses_arguments_object";
const ARGUMENT_KEYS: ArgumentKeys = ArgumentKeys {
    text: ARGUMENTS_TEXT,
    raw: RAW_ARGUMENTS,
    object: ARGUMENTS_OBJECT,
};
const ROLES: &str = "expected system, developer, user or assistant";
/// The field of an `Other` record that holds the item whole.
const ITEM_FIELD: &str = "item";
/// The key of a `system` record's `extra` that says it was a `developer`
/// message.
const ROLE: &str = "role";

/// What the reader reads of an item: the fields of the ctxfold-wire
/// `Item`s it maps, each as it came so an error can say what it found (the
/// item is kept whole beside its record, see [`keep_item`]).
#[derive(Default, Deserialize)]
#[serde(default)]
struct Fields<'a> {
    #[serde(rename = "type", borrow)]
    kind: Field<'a>,
    #[serde(borrow)]
    role: Field<'a>,
    #[serde(deserialize_with = "present")]
    content: Option<TextOrArray>,
    #[serde(borrow)]
    call_id: Field<'a>,
    #[serde(borrow)]
    name: Field<'a>,
    #[serde(borrow)]
    input: Field<'a>,
    #[serde(deserialize_with = "present")]
    arguments: Option<Value>,
    #[serde(deserialize_with = "present")]
    output: Option<TextOrArray>,
    summary: Option<Loose<Vec<Value>>>,
}

/// An item's type and role, and whether its content is text: what export
/// checks of an item it kept.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Head<'a> {
    #[serde(rename = "type", borrow)]
    kind: Field<'a>,
    #[serde(borrow)]
    role: Field<'a>,
    #[serde(borrow)]
    content: Field<'a>,
}

impl<'a> Head<'a> {
    fn of(o: &'a Object) -> Head<'a> {
        Head::deserialize(o).unwrap_or_default()
    }
}

/// A body's `output` (a response object), as the reader takes it.
#[derive(Deserialize)]
struct Answer {
    #[serde(default, deserialize_with = "present")]
    output: Option<Loose<Vec<Value>>>,
}

/// Read a Responses API request body. The error says what was expected and
/// where (`input[3].type: …`).
pub fn from_json(v: &Value) -> Result<Transcript, String> {
    let Value::Object(body) = v else {
        return Err(format!(
            "expected a request object with `input`, found {}",
            describe(v)
        ));
    };
    let mut t = Transcript::default();
    let mut out = Records::default();
    // The items themselves, not a copy: the key, named once, by `Wire`.
    match body.get(Wire::Responses.messages_key()) {
        // A body may leave `input` out (a stored prompt, a continuation);
        // kept whole, so export does not add one.
        None => {
            t.extras.insert(PREFIX.into(), Value::Object(body.clone()));
        }
        Some(input) => {
            if let Some(kept) = kept_body(body, &["input"]) {
                t.extras.insert(PREFIX.into(), Value::Object(kept));
            }
            match input {
                Value::String(s) => {
                    out.open_turn();
                    let idx = out.push(Body::User {
                        content: s.clone(),
                        author: None,
                    });
                    set_meta(&mut out.records[idx], STRING_INPUT, Value::Bool(true));
                }
                Value::Array(items) => read_all(&READING, items, &mut out, &mut t.warnings)?,
                other => {
                    return Err(format!(
                        "`input`: expected a string or an array of input items, found {}",
                        describe(other)
                    ));
                }
            }
        }
    }
    t.records = out.records;
    pair(&mut t.records, Some(PREFIX), &mut t.warnings);
    Ok(t)
}

/// The records of a Responses API response object's `output` (a
/// non-streamed answer, or the `response` of a `response.completed`
/// event), read as [`from_json`] reads the same items in `input`. Ids are
/// left as they are: pairing is the whole history's business.
pub fn output_records(response: &Value) -> Result<Vec<Record>, String> {
    let answer = match response {
        Value::Object(o) => Answer::deserialize(o).map_err(|e| format!("`output`: {e}"))?,
        _ => Answer { output: None },
    };
    let output = match answer.output {
        Some(Loose::Is(a)) => a,
        Some(Loose::Not(other)) => {
            return Err(format!(
                "`output`: expected an array of output items, found {}",
                describe(&other)
            ));
        }
        None => {
            return Err(format!(
                "expected a response object with an `output` array, found {}",
                match response {
                    Value::Object(_) => "an object without `output`",
                    other => describe(other),
                }
            ));
        }
    };
    let mut out = Records::default();
    for (i, item) in output.iter().enumerate() {
        read_item(&mut out, &format!("output[{i}]"), item)?;
    }
    Ok(out.records)
}

/// The item a `responses_item` record keeps whole (an item type this
/// module does not map: `compaction`, `web_search_call`, …).
pub fn other_item(r: &Record) -> Option<&Value> {
    match &r.body {
        Body::Other { kind, fields } if kind == ITEM => fields.get(ITEM_FIELD),
        _ => None,
    }
}

/// Have `r` (a message record ctxfold made, such as a summary's) written
/// as a message item that says its type (`{"type": "message", "role",
/// "content"}`): the API takes either shape, servers that implement it
/// strictly (llama.cpp's) only this one.
pub fn typed_message(r: &mut Record) {
    let mut item = wire::Message::typed();
    item.insert("role".into(), Value::Null);
    item.insert("content".into(), Value::Null);
    set_meta(r, ITEM, Value::Object(item));
}

/// How this format's `input` items are read, whole or one at a time (the
/// message reader's table): every item on the user's side (the sides are
/// a chat format's roles).
pub(crate) static READING: Reading = Reading {
    wire: Wire::Responses,
    read_head: None,
    read_message: |out, _, i, m, _| read_item(out, &format!("input[{i}]"), m).map(|()| Side::User),
};

/// Read the item at `at` into records.
fn read_item(out: &mut Records, at: &str, item: &Value) -> Result<(), String> {
    let Value::Object(o) = item else {
        return Err(format!(
            "{at}: expected an item object, found {}",
            describe(item)
        ));
    };
    out.start_message(o);
    let f = Fields::deserialize(o).map_err(|e| format!("{at}: {e}"))?;
    let ty = match f.kind {
        Field::Str(t) => Some(t),
        Field::Missing => None,
        other => {
            return Err(format!(
                "{at}.type: expected a string naming the item type, found {}",
                other.describe()
            ));
        }
    };
    match ty {
        Some("message") => read_message(out, at, o, f),
        None if f.role.present() => read_message(out, at, o, f),
        None => Err(format!(
            "{at}: expected an item with a `type` (or a message with a `role`), found an object with neither"
        )),
        Some("function_call") => read_call(out, at, o, f, false),
        Some("custom_tool_call") => read_call(out, at, o, f, true),
        Some("function_call_output" | "custom_tool_call_output") => read_output(out, at, o, f),
        Some("reasoning") => {
            let idx = out.push(Body::Reasoning {
                content: reasoning_text(&f),
            });
            set_meta(&mut out.records[idx], ITEM, Value::Object(o.clone()));
            Ok(())
        }
        Some(_) => {
            push_other(out, o);
            Ok(())
        }
    }
}

/// Keep item `o`, of a type or role this module does not map, whole.
fn push_other(out: &mut Records, o: &Object) {
    let mut fields = Object::new();
    fields.insert(ITEM_FIELD.into(), Value::Object(o.clone()));
    out.push(Body::Other {
        kind: OTHER.into(),
        fields: Box::new(fields),
    });
}

fn read_message(out: &mut Records, at: &str, o: &Object, f: Fields) -> Result<(), String> {
    let role = match f.role {
        Field::Str(r) => r,
        Field::Missing => return Err(format!("{at}: a message needs a `role`; {ROLES}")),
        other => {
            return Err(format!(
                "{at}.role: expected a string ({ROLES}), found {}",
                other.describe()
            ));
        }
    };
    if !matches!(role, "system" | "developer" | "user" | "assistant") {
        // A role this module does not know: kept whole, as any item it
        // does not map.
        push_other(out, o);
        return Ok(());
    }
    let Some((text, string)) = content_text(f.content, at, "content")? else {
        return Err(format!(
            "{at}: a message needs `content` (a string or an array of content parts)"
        ));
    };
    let holes: &[&str] = if string { &["content"] } else { &[] };
    let body = match role {
        "user" => {
            out.open_turn();
            Body::User {
                content: text,
                author: None,
            }
        }
        "assistant" => Body::Assistant { content: text },
        _ => Body::System { content: text },
    };
    let idx = out.push(body);
    let r = &mut out.records[idx];
    if role == "developer" {
        r.extra
            .insert(ROLE.into(), Value::String("developer".into()));
    }
    keep_item(r, o, holes, &message_default(role));
    Ok(())
}

/// A `function_call` item, or (`custom`) a `custom_tool_call`, whose
/// `input` is free text (Codex's `exec` tool): its arguments are that text
/// as a JSON string.
fn read_call(
    out: &mut Records,
    at: &str,
    o: &Object,
    f: Fields,
    custom: bool,
) -> Result<(), String> {
    let kind = if custom {
        "custom_tool_call"
    } else {
        "function_call"
    };
    let string = |field: Field, name: &str| match field.str() {
        Some(s) => Ok(s.to_owned()),
        None => Err(format!("{at}: a `{kind}` item needs a `{name}` string")),
    };
    let id = string(f.call_id, "call_id")?;
    let name = string(f.name, "name")?;
    if custom {
        let input = string(f.input, "input")?;
        let idx = out.push(Body::ToolCall {
            id,
            name,
            arguments: Value::String(input).into(),
        });
        keep_item(
            &mut out.records[idx],
            o,
            &["call_id", "name", "input"],
            &custom_call_default(),
        );
        return Ok(());
    }
    let Some(given) = &f.arguments else {
        return Err(format!(
            "{at}: a `function_call` item needs `arguments` (a JSON string)"
        ));
    };
    let Some((arguments, mark)) = read_arguments(given, &ARGUMENT_KEYS) else {
        return Err(format!(
            "{at}.arguments: expected a JSON string, found {}",
            describe(given)
        ));
    };
    let idx = out.push(Body::ToolCall {
        id,
        name,
        arguments: arguments.into(),
    });
    let r = &mut out.records[idx];
    if let Some((k, v)) = mark {
        set_meta(r, k, v);
    }
    keep_item(r, o, &["call_id", "name", "arguments"], &call_default());
    Ok(())
}

fn read_output(out: &mut Records, at: &str, o: &Object, f: Fields) -> Result<(), String> {
    let Some(id) = f.call_id.str() else {
        return Err(format!(
            "{at}: a `function_call_output` item needs a `call_id` string"
        ));
    };
    let Some((content, string)) = content_text(f.output, at, "output")? else {
        return Err(format!(
            "{at}: a `function_call_output` item needs an `output` (a string or an array of content parts)"
        ));
    };
    let holes: &[&str] = if string {
        &["call_id", "output"]
    } else {
        &["call_id"]
    };
    let idx = out.push(Body::ToolResult {
        id: id.to_owned(),
        content,
        is_error: false,
    });
    keep_item(&mut out.records[idx], o, holes, &output_default());
    Ok(())
}

/// The text of an item's `key` (`value`), a string or an array of content
/// parts, and whether it was the string (export writes that back from the
/// text alone); `None` when the item has no `key`.
fn content_text(
    value: Option<TextOrArray>,
    at: &str,
    key: &str,
) -> Result<Option<(String, bool)>, String> {
    match value {
        Some(TextOrArray::Text(s)) => Ok(Some((s, true))),
        Some(TextOrArray::Array(parts)) => {
            check_parts(&format!("{at}.{key}"), &parts)?;
            Ok(Some((parts_text(&parts), false)))
        }
        Some(other) => Err(format!(
            "{at}.{key}: expected a string or an array of content parts, found {}",
            other.describe()
        )),
        None => Ok(None),
    }
}

/// Every part of a content array is an object with a `type` string.
fn check_parts(at: &str, parts: &[Value]) -> Result<(), String> {
    for (j, p) in parts.iter().enumerate() {
        if wire::Content::part_kind(p).is_none() {
            return Err(format!(
                "{at}[{j}]: expected a content part (an object with a `type` string), found {}",
                match p {
                    Value::Object(_) => "an object without a `type` string",
                    other => describe(other),
                }
            ));
        }
    }
    Ok(())
}

/// The text of a content array: its `input_text` and `output_text` parts
/// joined with "\n", as OpenAI chat joins its text parts.
fn parts_text(parts: &[Value]) -> String {
    text_of(parts, &["input_text", "output_text"])
}

/// The text of a reasoning item: its summary, or the raw reasoning text
/// that open-weight models put in `content` when there is no summary.
fn reasoning_text(f: &Fields) -> String {
    let texts = |parts: Option<&[Value]>, ty: &str| -> Vec<String> {
        parts
            .into_iter()
            .flatten()
            .filter(|p| wire::Content::part_kind(p) == Some(ty))
            .filter_map(wire::Content::part_text)
            .map(str::to_owned)
            .collect()
    };
    let summary = match &f.summary {
        Some(Loose::Is(parts)) => Some(parts.as_slice()),
        _ => None,
    };
    let content = match &f.content {
        Some(TextOrArray::Array(parts)) => Some(parts.as_slice()),
        _ => None,
    };
    let summary = texts(summary, "summary_text");
    if summary.is_empty() {
        texts(content, "reasoning_text").join("\n\n")
    } else {
        summary.join("\n\n")
    }
}

/// Keep item `o` on `r` with `holes` set to `null`, unless that is
/// `default` exactly (key order included), which export writes anyway.
fn keep_item(r: &mut Record, o: &Object, holes: &[&str], default: &Object) {
    let kept = with_nulls(o, holes);
    let same = kept.len() == default.len()
        && kept
            .iter()
            .zip(default)
            .all(|((k, v), (dk, dv))| k == dk && v == dv);
    if !same {
        set_meta(r, ITEM, Value::Object(kept));
    }
}

/// The item export writes by default (`shape`), with the fields a record
/// holds (`holes`) set to `null`: what [`keep_item`] compares a read item
/// with.
fn default_item(shape: impl serde::Serialize, holes: &[&str]) -> Object {
    let mut o = ctxfold_wire::object(&shape);
    for h in holes {
        if let Some(v) = o.get_mut(*h) {
            *v = Value::Null;
        }
    }
    o
}

fn message_default(role: &str) -> Object {
    default_item(wire::Message::text(role, ""), &["content"])
}

fn call_default() -> Object {
    default_item(
        Item::FunctionCall(wire::FunctionCall::default()),
        &["call_id", "name", "arguments"],
    )
}

fn custom_call_default() -> Object {
    default_item(
        Item::CustomToolCall(wire::CustomToolCall::default()),
        &["call_id", "name", "input"],
    )
}

fn output_default() -> Object {
    default_item(
        Item::FunctionCallOutput(wire::CallOutput::default()),
        &["call_id", "output"],
    )
}

/// The item kept on `r`, when it has the `keys` export fills and a `type`
/// among `types` (`None`: no `type`).
fn kept_item(r: &Record, types: &[Option<&str>], keys: &[&str]) -> Option<Object> {
    let Some(Value::Object(item)) = meta(r, ITEM) else {
        return None;
    };
    let ty = match Head::of(item).kind {
        Field::Missing => None,
        Field::Str(t) => Some(t),
        _ => return None,
    };
    (types.contains(&ty) && keys.iter().all(|k| item.contains_key(*k))).then(|| item.clone())
}

/// `item` written over the kept item `template` (in its key order), or on
/// its own.
fn written(template: Option<Object>, item: &impl serde::Serialize) -> Value {
    match template {
        Some(t) => Value::Object(ctxfold_wire::write_over(t, ctxfold_wire::value(item))),
        None => ctxfold_wire::value(item),
    }
}

/// Write records as a Responses API request body.
pub fn to_json<R: Borrow<Record>>(records: &[R], extras: &Object) -> Value {
    let mut items = Vec::new();
    let mut sources = Vec::new();
    for r in records.iter().map(Borrow::borrow) {
        if let Some(item) = item_of(r) {
            items.push(item);
            sources.push(r);
        }
    }
    let as_string = match (items.as_slice(), sources.as_slice()) {
        ([Value::Object(item)], [r]) if meta(r, STRING_INPUT) == Some(&Value::Bool(true)) => {
            let head = Head::of(item);
            match (item.len(), head.role.str(), head.content.str()) {
                (2, Some("user"), Some(s)) => Some(s.to_owned()),
                _ => None,
            }
        }
        _ => None,
    };
    let kept = extras.get(PREFIX).and_then(Value::as_object);
    let input = match as_string {
        Some(s) => Some(Value::String(s)),
        // A body read without `input` gets none back while there is
        // nothing to put in it.
        None if items.is_empty()
            && kept.is_some_and(|k| !k.contains_key(Wire::Responses.messages_key())) =>
        {
            None
        }
        None => Some(Value::Array(items)),
    };
    build_request(kept, vec![("input", input)])
}

/// The item a record is written as, if any.
fn item_of(r: &Record) -> Option<Value> {
    Some(match &r.body {
        Body::User { content, .. } => message_item(r, "user", content),
        Body::Assistant { content } => message_item(r, "assistant", content),
        Body::Structured { data } => message_item(
            r,
            "assistant",
            &serde_json::to_string(data).unwrap_or_default(),
        ),
        Body::System { content } => {
            let role = match r.extra.get(ROLE) {
                Some(Value::String(d)) if d == "developer" => "developer",
                _ => "system",
            };
            message_item(r, role, content)
        }
        Body::ToolCall {
            id,
            name,
            arguments,
        } => {
            let arguments = &arguments.value();
            let call_id = export_id(r, id, PREFIX).to_owned();
            if let (Some(template), Value::String(input)) = (
                kept_item(
                    r,
                    &[Some("custom_tool_call")],
                    &["call_id", "name", "input"],
                ),
                arguments,
            ) {
                let call = wire::CustomToolCall {
                    call_id,
                    name: name.clone(),
                    input: input.clone(),
                    extra: Object::new(),
                };
                return Some(written(Some(template), &Item::CustomToolCall(call)));
            }
            let template = kept_item(
                r,
                &[Some("function_call")],
                &["call_id", "name", "arguments"],
            );
            let arguments =
                if meta(r, ARGUMENTS_OBJECT) == Some(&Value::Bool(true)) && arguments.is_object() {
                    arguments.clone()
                } else {
                    Value::String(arguments_text(r, arguments))
                };
            let call = wire::FunctionCall {
                call_id,
                name: name.clone(),
                arguments,
                extra: Object::new(),
            };
            written(template, &Item::FunctionCall(call))
        }
        Body::ToolResult { id, content, .. } => {
            let template = kept_item(
                r,
                &[
                    Some("function_call_output"),
                    Some("custom_tool_call_output"),
                ],
                &["call_id", "output"],
            );
            let kept = template.as_ref().and_then(|t| kept_parts(t, |f| f.output));
            let output = match kept {
                Some(parts) if parts_text(&parts) == *content => wire::Content::Parts(parts),
                _ => wire::Content::Text(content.clone()),
            };
            let out = wire::CallOutput {
                call_id: export_id(r, id, PREFIX).to_owned(),
                output,
                extra: Object::new(),
            };
            // The kept item's own type (a custom tool's output) stays.
            let custom = template
                .as_ref()
                .is_some_and(|t| Head::of(t).kind.str() == Some("custom_tool_call_output"));
            if custom {
                written(template, &Item::CustomToolCallOutput(out))
            } else {
                written(template, &Item::FunctionCallOutput(out))
            }
        }
        Body::Reasoning { content } => {
            let item = kept_item(r, &[Some("reasoning")], &[])?;
            let f = Fields::deserialize(&item).unwrap_or_default();
            if reasoning_text(&f) != *content {
                return None;
            }
            Value::Object(item)
        }
        Body::Other { kind, fields } if kind == OTHER => {
            return fields.get(ITEM_FIELD).filter(|i| i.is_object()).cloned();
        }
        // Turn starts, overlays and other records are not items.
        _ => return None,
    })
}

/// A message item: the kept one with its role and content filled in (an
/// array of parts kept while its text is still `text`), else the plain
/// `{"role", "content"}` shape.
fn message_item(r: &Record, role: &str, text: &str) -> Value {
    let template = kept_item(r, &[None, Some("message")], &["role", "content"]);
    let kept = template.as_ref().and_then(|t| kept_parts(t, |f| f.content));
    let content = match kept {
        Some(parts) if parts_text(&parts) == text => wire::Content::Parts(parts),
        _ => wire::Content::Text(text.to_owned()),
    };
    let message = wire::Message {
        role: role.to_owned(),
        content,
        extra: Object::new(),
    };
    written(template, &message)
}

/// The content parts a kept item holds in the field `field` picks, if any.
fn kept_parts(item: &Object, field: impl Fn(Fields) -> Option<TextOrArray>) -> Option<Vec<Value>> {
    match Fields::deserialize(item).ok().and_then(field) {
        Some(TextOrArray::Array(parts)) => Some(parts),
        _ => None,
    }
}

/// The `arguments` text of a call: the original text when import kept it
/// and it still says the same, else the compact JSON.
fn arguments_text(r: &Record, arguments: &Value) -> String {
    if meta(r, RAW_ARGUMENTS) == Some(&Value::Bool(true))
        && let Value::String(s) = arguments
    {
        return s.clone();
    }
    if let Some(Value::String(t)) = meta(r, ARGUMENTS_TEXT)
        && serde_json::from_str::<Value>(t).ok().as_ref() == Some(arguments)
    {
        return t.clone();
    }
    serde_json::to_string(arguments).unwrap_or_default()
}
