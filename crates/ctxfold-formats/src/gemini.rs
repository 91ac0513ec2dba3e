//! Google's Gemini API requests (`generateContent`).
//!
//! # Import
//!
//! The input is a request body (an object with `contents` and maybe
//! `systemInstruction`) or a bare array of contents. The body's other keys
//! (`tools`, `toolConfig`, `generationConfig`, …) are kept in
//! [`Transcript::extras`]`["gemini"]`: the body in its key order with
//! `contents` and `systemInstruction` as `null` placeholders.
//!
//! - `systemInstruction` becomes one `system` record first: its text parts
//!   joined with "\n"; the object is kept in metadata `gemini_system` and
//!   written back while the text is unchanged.
//! - A content of role `user` (or none) is the user's side: a text part is
//!   a `user` record, a `functionResponse` a `tool_result`. A content of
//!   role `model` is the model's: a text part an `assistant` record, a
//!   thought (`thought: true`) a `reasoning` record, a `functionCall` a
//!   `tool_call`.
//! - **Call ids.** The API gives a call an `id` only sometimes. A call
//!   without one gets `gemini-call-N`, N its place among the history's
//!   function calls (0 for the first): the same history always gets the
//!   same ids, and an answer's calls are numbered on from the request's
//!   ([`answer_records`], [`renumber_calls`]). Export leaves such an id
//!   out. A response without an id answers the earliest unanswered call
//!   of its name.
//! - A response's `response` object is the result's text: the string
//!   itself when it is an object of one string (`{"output": "…"}`, the
//!   key kept in metadata `gemini_response_key`), else its JSON. A
//!   response holding an `error` key is an error.
//! - Unmapped keys of a part (`thoughtSignature`, `videoMetadata`, …) are
//!   kept in the record's metadata `gemini_part_fields`; any other part
//!   (inline data, files, code) is kept whole as a `gemini_part` record
//!   with fields `side` (its content's role) and `part`. Unmapped keys of
//!   a content go into metadata `gemini_content_fields` of its first
//!   record.
//! - Turns: a user content holding text opens a turn, unless the last
//!   model-visible record is a user message (as for Anthropic).
//! - A content with no parts makes no record. `ts` is empty; `seq` counts
//!   from 0.
//!
//! # Export
//!
//! System records become `systemInstruction`; the others parts, and
//! consecutive parts of one side merge into one content, so the output
//! alternates `user` and `model`. Not written: `turn_start`, overlays,
//! other records except `gemini_part`.

use std::borrow::Borrow;
use std::collections::HashMap;

use ctxfold_core::{Body, JsonText, Object, Record};
use ctxfold_wire::gemini::{Content, FunctionCall, FunctionResponse, Part, key, role};
use serde_json::Value;

use crate::Transcript;
use crate::chat::{Records, build_request, describe, kept_body, meta, set_meta};

pub(crate) const PREFIX: &str = "gemini";
const SYSTEM: &str = "gemini_system";
const PART_FIELDS: &str = "gemini_part_fields";
const CONTENT_FIELDS: &str = "gemini_content_fields";
const RESPONSE_KEY: &str = "gemini_response_key";
/// Metadata of a text read from several parts: each piece's length and
/// its other keys.
const TEXTS: &str = "gemini_texts";
/// The kind of an `Other` record holding a part this module does not map.
const PART: &str = "gemini_part";
/// The field of a `gemini_part` record naming its content's role.
const SIDE: &str = "side";
/// The id given a call the API gave none.
const CALL_ID: &str = "gemini-call-";

/// Read a Gemini request (a body with `contents`, or a bare array of
/// contents). The error says what was expected and where.
pub fn from_json(v: &Value) -> Result<Transcript, String> {
    const EXPECTED: &str = "expected a request object with `contents` or an array of contents";
    let (contents, body) = match v {
        Value::Array(a) => (a.as_slice(), None),
        Value::Object(o) => match o.get(key::CONTENTS) {
            Some(Value::Array(a)) => (a.as_slice(), Some(o)),
            Some(other) => {
                return Err(format!(
                    "`contents`: expected an array of contents, found {}",
                    describe(other)
                ));
            }
            None => return Err(format!("{EXPECTED}, found an object without `contents`")),
        },
        other => return Err(format!("{EXPECTED}, found {}", describe(other))),
    };
    let mut out = Records::default();
    let mut extras = Object::new();
    if let Some(o) = body {
        if let Some(kept) = kept_body(o, &[key::CONTENTS, key::SYSTEM_INSTRUCTION]) {
            extras.insert(PREFIX.into(), Value::Object(kept));
        }
        if let Some(system) = o.get(key::SYSTEM_INSTRUCTION).filter(|s| !s.is_null()) {
            read_system(&mut out, system)?;
        }
    }
    let mut calls = Calls::default();
    for (i, c) in contents.iter().enumerate() {
        let c: Content = serde_json::from_value(c.clone()).map_err(|e| {
            format!("contents[{i}]: expected a content (`role` and an array of `parts`): {e}")
        })?;
        read_content(&mut out, &mut calls, i, c)?;
    }
    Ok(Transcript {
        records: out.records,
        title: None,
        extras,
        warnings: calls.warnings,
    })
}

fn read_system(out: &mut Records, system: &Value) -> Result<(), String> {
    let c: Content = serde_json::from_value(system.clone())
        .map_err(|e| format!("`systemInstruction`: expected a content with text `parts`: {e}"))?;
    let text = texts(&c.parts);
    let idx = out.push(Body::System { content: text });
    set_meta(&mut out.records[idx], SYSTEM, system.clone());
    Ok(())
}

/// The text parts of `parts`, joined with "\n".
fn texts(parts: &[Part]) -> String {
    let t: Vec<&str> = parts.iter().filter_map(|p| p.text.as_deref()).collect();
    t.join("\n")
}

/// The calls read so far: how many, and those not yet answered, by name.
#[derive(Default)]
struct Calls {
    count: usize,
    open: HashMap<String, Vec<String>>,
    warnings: Vec<String>,
}

impl Calls {
    /// The id of a call: its own, else one from its place.
    fn id(&mut self, call: &FunctionCall) -> String {
        let id = call
            .id
            .clone()
            .unwrap_or_else(|| format!("{CALL_ID}{}", self.count));
        self.count += 1;
        self.open
            .entry(call.name.clone())
            .or_default()
            .push(id.clone());
        id
    }

    /// The id a response answers: its own, else the earliest open call of
    /// its name.
    fn answered(&mut self, at: &str, r: &FunctionResponse) -> String {
        let open = self.open.entry(r.name.clone()).or_default();
        if let Some(id) = &r.id {
            open.retain(|o| o != id);
            return id.clone();
        }
        if open.is_empty() {
            self.warnings.push(format!(
                "{at}: a response of `{}` that no call asked for",
                r.name
            ));
            return format!("{CALL_ID}unanswered-{}", r.name);
        }
        open.remove(0)
    }
}

fn read_content(out: &mut Records, calls: &mut Calls, i: usize, c: Content) -> Result<(), String> {
    let user = match c.role.as_deref() {
        None | Some(role::USER) => true,
        Some(role::MODEL) => false,
        Some(other) => {
            return Err(format!(
                "contents[{i}].role: expected user or model, found `{other}`"
            ));
        }
    };
    let mut turn_pending = user && c.parts.iter().any(|p| p.text.is_some());
    let mut first = None;
    // The record the last part's text went to, if it was a plain text of
    // this kind (a thought or not): a stream's pieces make one record.
    let mut run: Option<(usize, bool)> = None;
    for (j, part) in c.parts.into_iter().enumerate() {
        let at = format!("contents[{i}].parts[{j}]");
        if turn_pending && part.function_response.is_none() {
            out.open_turn();
            turn_pending = false;
        }
        if let Some(thought) = plain_text(&part) {
            if let Some((idx, t)) = run
                && t == thought
            {
                join_text(&mut out.records[idx], part);
                continue;
            }
            let idx = read_part(out, calls, &at, user, part)?;
            run = Some((idx, thought));
            first.get_or_insert(idx);
            continue;
        }
        run = None;
        let idx = read_part(out, calls, &at, user, part)?;
        first.get_or_insert(idx);
    }
    if let Some(idx) = first
        && !c.extra.is_empty()
    {
        set_meta(
            &mut out.records[idx],
            CONTENT_FIELDS,
            Value::Object(c.extra),
        );
    }
    Ok(())
}

/// Whether a part is text alone (a thought or not: the flag), with no
/// key but a thought's signature beside it.
fn plain_text(p: &Part) -> Option<bool> {
    let alone = p.text.is_some()
        && p.function_call.is_none()
        && p.function_response.is_none()
        && p.extra.is_empty();
    alone.then_some(p.thought == Some(true))
}

/// Part `p` (plain text) joined to the record of the text before it: its
/// text appended, where each piece ended kept in metadata
/// [`TEXTS`] so export gives the pieces back while the text is unchanged.
fn join_text(r: &mut Record, p: Part) {
    let had = match &r.body {
        Body::User { content, .. } | Body::Assistant { content } | Body::Reasoning { content } => {
            content.len()
        }
        _ => return,
    };
    let mut pieces = match meta(r, TEXTS) {
        Some(Value::Array(a)) => a.clone(),
        _ => {
            // The first piece: what it had.
            let mut first = meta(r, PART_FIELDS)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            first.insert("len".into(), had.into());
            vec![Value::Object(first)]
        }
    };
    let text = p.text.unwrap_or_default();
    if let Body::User { content, .. } | Body::Assistant { content } | Body::Reasoning { content } =
        &mut r.body
    {
        content.push_str(&text);
    }
    let mut piece = Object::new();
    piece.insert("len".into(), text.len().into());
    if let Some(sig) = p.thought_signature {
        piece.insert(key::THOUGHT_SIGNATURE.into(), Value::String(sig));
    }
    pieces.push(Value::Object(piece));
    if let Some(m) = r.metadata.as_mut() {
        m.remove(PART_FIELDS);
    }
    set_meta(r, TEXTS, Value::Array(pieces));
}

fn read_part(
    out: &mut Records,
    calls: &mut Calls,
    at: &str,
    user: bool,
    part: Part,
) -> Result<usize, String> {
    let Part {
        text,
        thought,
        thought_signature,
        function_call,
        function_response,
        mut extra,
    } = part;
    if let Some(sig) = thought_signature {
        extra.insert(key::THOUGHT_SIGNATURE.into(), Value::String(sig));
    }
    let body = match (text, function_call, function_response) {
        (Some(text), None, None) => {
            if thought == Some(true) {
                Body::Reasoning { content: text }
            } else {
                if let Some(t) = thought {
                    extra.insert("thought".into(), Value::Bool(t));
                }
                if user {
                    Body::User {
                        content: text,
                        author: None,
                    }
                } else {
                    Body::Assistant { content: text }
                }
            }
        }
        (None, Some(call), None) => {
            let id = calls.id(&call);
            let arguments = match &call.args {
                Some(a) => JsonText::from_value(a),
                None => JsonText::empty_object(),
            };
            if !call.extra.is_empty() {
                extra.insert("functionCallFields".into(), Value::Object(call.extra));
            }
            Body::ToolCall {
                id,
                name: call.name,
                arguments,
            }
        }
        (None, None, Some(r)) => {
            let id = calls.answered(at, &r);
            let (content, single) = response_text(&r.response);
            let is_error = r.response.get("error").is_some();
            let idx = out.push(Body::ToolResult {
                id,
                content,
                is_error,
            });
            let rec = &mut out.records[idx];
            set_meta(rec, "gemini_name", Value::String(r.name));
            if let Some(k) = single {
                set_meta(rec, RESPONSE_KEY, Value::String(k));
            }
            if !r.extra.is_empty() {
                extra.insert("functionResponseFields".into(), Value::Object(r.extra));
            }
            if !extra.is_empty() {
                set_meta(rec, PART_FIELDS, Value::Object(extra));
            }
            return Ok(idx);
        }
        (text, call, response) => {
            // A part of another kind (inline data, a file, code), or one
            // that mixes kinds: kept whole.
            let whole = Part {
                text,
                thought,
                thought_signature: None,
                function_call: call,
                function_response: response,
                extra,
            };
            let mut fields = Object::new();
            let side = if user { role::USER } else { role::MODEL };
            fields.insert(SIDE.into(), Value::String(side.into()));
            fields.insert("part".into(), ctxfold_wire::value(&whole));
            return Ok(out.push(Body::Other {
                kind: PART.into(),
                fields: Box::new(fields),
            }));
        }
    };
    let idx = out.push(body);
    if !extra.is_empty() {
        set_meta(&mut out.records[idx], PART_FIELDS, Value::Object(extra));
    }
    Ok(idx)
}

/// A response object as a result's text: the string of an object of one
/// string (and its key), else the object's JSON.
fn response_text(v: &Value) -> (String, Option<String>) {
    if let Value::Object(o) = v
        && o.len() == 1
        && let Some((k, Value::String(s))) = o.iter().next()
    {
        return (s.clone(), Some(k.clone()));
    }
    (v.to_string(), None)
}

/// The records of an answer's content, as the next request's history
/// will read it, its calls without ids numbered on from the `before`
/// calls of the request it answers (see the module's "Call ids").
pub fn answer_records(content: &Content, before: usize) -> Result<Vec<Record>, String> {
    let mut out = Records::default();
    let mut calls = Calls {
        count: before,
        ..Calls::default()
    };
    read_content(&mut out, &mut calls, 0, content.clone())?;
    // An answer opens no turn.
    out.records.retain(|r| !matches!(r.body, Body::TurnStart));
    Ok(out.records)
}

/// The calls of `records` numbered on from `before` where the API gave
/// them no id: those [`answer_records`] numbered from another count.
pub fn renumber_calls(records: &mut [Record], before: usize) {
    let mut n = before;
    for r in records {
        if let Body::ToolCall { id, .. } = &mut r.body {
            if id.starts_with(CALL_ID) {
                *id = format!("{CALL_ID}{n}");
            }
            n += 1;
        }
    }
}

/// How many function calls `records` hold (the count an answer's calls
/// are numbered on from).
pub fn call_count(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| matches!(r.body, Body::ToolCall { .. }))
        .count()
}

/// The contents of `records`, in the API's shape.
pub fn contents<R: Borrow<Record>>(records: &[R]) -> Vec<Content> {
    let mut out: Vec<Content> = Vec::new();
    for r in records {
        let r = r.borrow();
        let Some((side, part)) = part_of(r) else {
            continue;
        };
        let parts = pieces(r, part);
        let fields = meta(r, CONTENT_FIELDS).and_then(Value::as_object);
        match out.last_mut() {
            Some(c) if c.role.as_deref() == Some(side) && fields.is_none() => c.parts.extend(parts),
            _ => out.push(Content {
                role: Some(side.into()),
                parts,
                extra: fields.cloned().unwrap_or_default(),
            }),
        }
    }
    out
}

/// A text part given back as the pieces it was read from (see
/// [`join_text`]), while the text is what they held; else `part` whole.
fn pieces(r: &Record, part: Part) -> Vec<Part> {
    let (Some(Value::Array(kept)), Some(text)) = (meta(r, TEXTS), part.text.as_deref()) else {
        return vec![part];
    };
    let lens: Vec<usize> = kept
        .iter()
        .filter_map(|p| p.get("len")?.as_u64())
        .map(|n| n as usize)
        .collect();
    if lens.len() != kept.len() || lens.iter().sum::<usize>() != text.len() {
        return vec![part];
    }
    let mut out = Vec::with_capacity(lens.len());
    let mut at = 0;
    for (len, fields) in lens.into_iter().zip(kept) {
        let Some(piece) = text.get(at..at + len) else {
            return vec![part];
        };
        at += len;
        let mut extra = fields.as_object().cloned().unwrap_or_default();
        extra.remove("len");
        let thought_signature = extra
            .remove(key::THOUGHT_SIGNATURE)
            .and_then(|v| v.as_str().map(str::to_owned));
        let thought = match extra.remove("thought").and_then(|v| v.as_bool()) {
            None if part.thought == Some(true) => Some(true),
            t => t,
        };
        out.push(Part {
            text: Some(piece.to_owned()),
            thought,
            thought_signature,
            extra,
            ..Part::default()
        });
    }
    out
}

/// A record's part and the side it goes on (`None`: not written).
fn part_of(r: &Record) -> Option<(&'static str, Part)> {
    let mut extra = meta(r, PART_FIELDS)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let signature = extra
        .remove(key::THOUGHT_SIGNATURE)
        .and_then(|v| v.as_str().map(str::to_owned));
    let thought = extra.remove("thought").and_then(|v| v.as_bool());
    let call_fields = extra.remove("functionCallFields");
    let response_fields = extra.remove("functionResponseFields");
    let fields_of = |v: Option<Value>| match v {
        Some(Value::Object(o)) => o,
        _ => Object::new(),
    };
    let mut part = Part {
        thought_signature: signature,
        thought,
        extra,
        ..Part::default()
    };
    let side = match &r.body {
        Body::User { content, .. } => {
            part.text = Some(content.clone());
            role::USER
        }
        Body::Assistant { content } => {
            part.text = Some(content.clone());
            role::MODEL
        }
        Body::Reasoning { content } => {
            part.text = Some(content.clone());
            part.thought = Some(true);
            role::MODEL
        }
        Body::ToolCall {
            id,
            name,
            arguments,
        } => {
            part.function_call = Some(FunctionCall {
                id: (!id.starts_with(CALL_ID)).then(|| id.clone()),
                name: name.clone(),
                args: Some(arguments.value()),
                extra: fields_of(call_fields),
            });
            role::MODEL
        }
        Body::ToolResult {
            id,
            content,
            is_error,
        } => {
            let name = meta(r, "gemini_name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let response = match meta(r, RESPONSE_KEY).and_then(Value::as_str) {
                Some(k) => {
                    let mut o = Object::new();
                    o.insert(k.into(), Value::String(content.clone()));
                    Value::Object(o)
                }
                None => match serde_json::from_str::<Value>(content) {
                    Ok(v @ Value::Object(_)) => v,
                    // A result rewritten by ctxfold (a placeholder, an
                    // excerpt): the API's conventional keys.
                    _ => {
                        let mut o = Object::new();
                        let k = if *is_error { "error" } else { "output" };
                        o.insert(k.into(), Value::String(content.clone()));
                        Value::Object(o)
                    }
                },
            };
            part.function_response = Some(FunctionResponse {
                id: (!id.starts_with(CALL_ID)).then(|| id.clone()),
                name,
                response,
                extra: fields_of(response_fields),
            });
            role::USER
        }
        Body::Other { kind, fields } if kind == PART => {
            let side = match fields.get(SIDE).and_then(Value::as_str) {
                Some(role::MODEL) => role::MODEL,
                _ => role::USER,
            };
            let part = serde_json::from_value(fields.get("part")?.clone()).ok()?;
            return Some((side, part));
        }
        _ => return None,
    };
    Some((side, part))
}

/// The system instruction of `records`: the kept object while its text is
/// unchanged, else the text as one part.
pub fn system_instruction<R: Borrow<Record>>(records: &[R]) -> Option<Value> {
    let systems: Vec<&Record> = records
        .iter()
        .map(Borrow::borrow)
        .filter(|r| matches!(r.body, Body::System { .. }))
        .collect();
    let [one] = systems.as_slice() else {
        let text: Vec<&str> = systems
            .iter()
            .filter_map(|r| match &r.body {
                Body::System { content } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        return (!text.is_empty()).then(|| {
            ctxfold_wire::value(&Content {
                role: None,
                parts: vec![Part::text(text.join("\n\n"))],
                extra: Object::new(),
            })
        });
    };
    let Body::System { content } = &one.body else {
        return None;
    };
    if let Some(kept) = meta(one, SYSTEM)
        && let Ok(c) = serde_json::from_value::<Content>(kept.clone())
        && texts(&c.parts) == *content
    {
        return Some(kept.clone());
    }
    Some(ctxfold_wire::value(&Content {
        role: None,
        parts: vec![Part::text(content.clone())],
        extra: Object::new(),
    }))
}

/// A request body holding `records`, with the body's other keys as
/// [`from_json`] kept them in `extras`.
pub fn to_json<R: Borrow<Record>>(records: &[R], extras: &Object) -> Value {
    let kept = extras.get(PREFIX).and_then(Value::as_object);
    let contents = Value::Array(contents(records).iter().map(ctxfold_wire::value).collect());
    build_request(
        kept,
        vec![
            (key::SYSTEM_INSTRUCTION, system_instruction(records)),
            (key::CONTENTS, Some(contents)),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn loop_body() -> Value {
        json!({
            "contents": [
                {"role": "user", "parts": [{"text": "list the files"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {"dir": "."}}, "thoughtSignature": "c2ln"}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {"output": "a.rs\nb.rs"}}}]},
                {"role": "model", "parts": [{"text": "two files"}]},
                {"role": "user", "parts": [{"text": "thanks"}, {"inlineData": {"mimeType": "image/png", "data": "AA=="}}]}
            ],
            "systemInstruction": {"parts": [{"text": "be brief"}]},
            "tools": [{"functionDeclarations": [{"name": "ls", "parameters": {"type": "object"}}]}],
            "generationConfig": {"maxOutputTokens": 100}
        })
    }

    #[test]
    fn a_request_reads_into_records_and_writes_back_as_it_came() {
        let body = loop_body();
        let t = from_json(&body).unwrap();
        let kinds: Vec<&str> = t.records.iter().map(|r| r.body.type_name()).collect();
        assert_eq!(
            kinds,
            [
                "system",
                "turn_start",
                "user",
                "tool_call",
                "tool_result",
                "assistant",
                "turn_start",
                "user",
                "gemini_part"
            ]
        );
        let Body::ToolCall { id, .. } = &t.records[3].body else {
            panic!()
        };
        let Body::ToolResult {
            id: answered,
            content,
            ..
        } = &t.records[4].body
        else {
            panic!()
        };
        assert_eq!(
            (id.as_str(), answered.as_str()),
            ("gemini-call-0", "gemini-call-0")
        );
        assert_eq!(content, "a.rs\nb.rs");
        assert_eq!(to_json(&t.records, &t.extras), body);
    }

    #[test]
    fn an_answers_calls_are_numbered_on_from_the_request() {
        let content: Content = serde_json::from_value(json!({"role": "model", "parts": [
            {"text": "Let me "}, {"text": "look."},
            {"functionCall": {"name": "ls", "args": {}}},
            {"functionCall": {"name": "cat", "args": {"f": "a"}, "id": "own"}}
        ]}))
        .unwrap();
        let mut records = answer_records(&content, 3).unwrap();
        let ids: Vec<String> = records
            .iter()
            .filter_map(|r| match &r.body {
                Body::ToolCall { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, ["gemini-call-3", "own"]);
        assert!(
            matches!(&records[0].body, Body::Assistant { content } if content == "Let me look.")
        );
        renumber_calls(&mut records, 5);
        assert!(matches!(&records[1].body, Body::ToolCall { id, .. } if id == "gemini-call-5"));
        // The pieces come back as they were read.
        let back = contents(&records);
        assert_eq!(back[0].parts[0].text.as_deref(), Some("Let me "));
        assert_eq!(back[0].parts[1].text.as_deref(), Some("look."));
    }

    #[test]
    fn a_bad_content_says_where() {
        let e = from_json(&json!({"contents": [{"role": "tool", "parts": []}]})).unwrap_err();
        assert!(e.contains("contents[0].role"), "{e}");
        let e = from_json(&json!({"contents": [{"parts": 3}]})).unwrap_err();
        assert!(e.contains("contents[0]"), "{e}");
    }

    #[test]
    fn a_folded_result_is_written_as_an_output() {
        let t = from_json(&loop_body()).unwrap();
        let mut records = t.records.clone();
        if let Body::ToolResult { content, .. } = &mut records[4].body {
            *content = "[folded]".into();
        }
        records[4].metadata.as_mut().unwrap().remove(RESPONSE_KEY);
        let v = to_json(&records, &t.extras);
        assert_eq!(
            v["contents"][2]["parts"][0]["functionResponse"]["response"],
            json!({"output": "[folded]"})
        );
    }
}
