//! Anthropic messages (Anthropic, and llama.cpp's server at `/v1/messages`).
//!
//! # Request ([`body`])
//!
//! - The system text is the top-level `system`.
//! - Parts become blocks: text `text` (empty text left out), reasoning
//!   `thinking` with its `signature` (reasoning without a signature is left
//!   out: Anthropic refuses unsigned or altered thinking, see
//!   [`crate::request`]), a tool call `tool_use` (`input` must be an object:
//!   other arguments are sent as `{"arguments": …}`), a tool result
//!   `tool_result` (`content` unless empty, `is_error` when true).
//! - Messages left without blocks are dropped and neighbours of one role
//!   merged again, tool results first in a user message, so roles alternate
//!   strictly; a conversation that would start with the assistant gets the
//!   user message [`PREAMBLE`] first.
//! - `max_tokens` is required: the request's, else [`DEFAULT_MAX_TOKENS`]
//!   (the provider's configured default is applied by [`crate::Provider`]).
//!   `tools` with `input_schema`; `stream` when streaming;
//!   [`ChatRequest::extra`] last (e.g. `thinking`).
//!
//! # Response
//!
//! `content` blocks: `text` as text, `thinking` as reasoning with its
//! signature, `tool_use` as a tool call; other blocks (`redacted_thinking`,
//! server tools, …) stay in [`ChatResponse::raw`] only. Usage: input is
//! `input_tokens` plus `cache_creation_input_tokens` plus
//! `cache_read_input_tokens`.
//!
//! # Stream
//!
//! `message_start` (the message and its first usage), `content_block_start`,
//! `content_block_delta` (`text_delta`, `thinking_delta`, `signature_delta`,
//! `input_json_delta`, `citations_delta`, `compaction_delta`), `content_block_stop`,
//! `message_delta` (stop reason and usage, merged over the first),
//! `message_stop`; `ping` and unknown events are skipped, an `error` event
//! is classified like an HTTP error. The events are folded back into the
//! message a non-streamed call gives, and read as one. A stream that ends
//! before `message_stop` is malformed.

use std::io::BufRead;

use ctxfold_core::projection::PREAMBLE;
use ctxfold_wire::RequestBody;
use ctxfold_wire::anthropic::{
    self, Block, Content, Delta, Message, Reply, StreamEvent as Event, Thinking, Tool, ToolResult,
    ToolUse, event, role,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{self, ProviderError};
use crate::part::Part;
use crate::request::{ChatRequest, Role, apply_extra};
use crate::response::{ChatResponse, StopReason, StreamEvent, Usage};
use crate::stream::Stream;

/// `max_tokens` when neither the request nor the provider's config sets it.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The header naming the API version.
pub const VERSION_HEADER: &str = "anthropic-version";

/// The API version sent unless config's headers say otherwise.
pub const VERSION: &str = "2023-06-01";

fn block(p: &Part) -> Option<Block> {
    Some(match p {
        Part::Text(t) if t.is_empty() => return None,
        Part::Text(t) => Block::text(t.clone()),
        Part::Reasoning {
            signature: None, ..
        } => return None,
        Part::Reasoning {
            text,
            signature: Some(s),
        } => Block::Thinking(Thinking {
            thinking: text.clone(),
            signature: Some(s.clone()),
            extra: Map::new(),
        }),
        Part::ToolCall {
            id,
            name,
            arguments,
        } => {
            let input = match arguments {
                Value::Object(_) => arguments.clone(),
                other => {
                    // Arguments that are not an object, wrapped in one.
                    let mut o = Map::new();
                    o.insert("arguments".into(), other.clone());
                    Value::Object(o)
                }
            };
            Block::ToolUse(ToolUse {
                id: id.clone(),
                name: name.clone(),
                input,
                extra: Map::new(),
            })
        }
        Part::ToolResult {
            id,
            content,
            is_error,
        } => Block::ToolResult(ToolResult {
            tool_use_id: id.clone(),
            content: (!content.is_empty()).then(|| Content::Text(content.clone())),
            is_error: is_error.then_some(true),
            extra: Map::new(),
        }),
    })
}

/// The request body for `req` (see the module docs).
pub fn body(req: &ChatRequest, stream: bool) -> RequestBody<Message> {
    let mut messages: Vec<(Role, Vec<Block>)> = Vec::new();
    for m in &req.messages {
        let blocks: Vec<Block> = m.parts.iter().filter_map(block).collect();
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((role, existing)) if *role == m.role => existing.extend(blocks),
            _ => messages.push((m.role, blocks)),
        }
    }
    for (role, blocks) in &mut messages {
        if *role == Role::User {
            // Stable: results keep their order, and so do texts.
            blocks.sort_by_key(|b| !matches!(b, Block::ToolResult(_)));
        }
    }
    if messages.first().is_some_and(|(r, _)| *r == Role::Assistant) {
        messages.insert(0, (Role::User, vec![Block::text(PREAMBLE)]));
    }
    let messages = messages
        .into_iter()
        .map(|(r, content)| {
            let r = match r {
                Role::User => role::USER,
                Role::Assistant => role::ASSISTANT,
            };
            Message::new(r, Content::Blocks(content), Map::new())
        })
        .collect();
    let request = anthropic::Request {
        model: req.model.clone(),
        max_tokens: Some(req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
        system: req.system.clone().map(Content::Text),
        messages,
        tools: req
            .tools
            .iter()
            .map(|t| Tool {
                kind: None,
                name: t.name.clone(),
                description: Some(t.description.clone()),
                input_schema: Some(if t.parameters.is_object() {
                    t.parameters.clone()
                } else {
                    anthropic::any_object_schema()
                }),
                extra: Map::new(),
            })
            .collect(),
        stream,
        extra: Map::new(),
    };
    let mut body = request.into_body();
    apply_extra(body.head_mut(), &req.extra);
    body
}

fn malformed(detail: impl Into<String>) -> ProviderError {
    ProviderError::Malformed {
        detail: detail.into(),
    }
}

/// Read a response body (see the module docs). `model` is
/// `provider/model`, as asked for.
pub fn parse_response(raw: Value, model: &str) -> Result<ChatResponse, ProviderError> {
    let reply = Reply::deserialize(&raw).map_err(|e| {
        malformed(format!(
            "the Anthropic-style response is not a message ({e}): {}",
            error::quote(&raw.to_string())
        ))
    })?;
    if reply.content.is_none() {
        return Err(malformed(format!(
            "the Anthropic-style response has no `content` array: {}",
            error::quote(&raw.to_string())
        )));
    }
    response(reply, raw, model)
}

/// The response `reply` (read from `raw`) becomes.
fn response(reply: Reply, raw: Value, model: &str) -> Result<ChatResponse, ProviderError> {
    let mut parts = Vec::new();
    for (i, b) in reply.content.into_iter().flatten().enumerate() {
        match b {
            Block::Text(t) if !t.text.is_empty() => parts.push(Part::Text(t.text)),
            Block::Thinking(t) => parts.push(Part::Reasoning {
                text: t.thinking,
                signature: t.signature.filter(|s| !s.is_empty()),
            }),
            Block::ToolUse(t) => parts.push(Part::ToolCall {
                id: t.id,
                name: t.name,
                arguments: t.input,
            }),
            // A `tool_use` whose fields do not read.
            other if other.kind() == Some("tool_use") => {
                return Err(malformed(format!(
                    "`content[{i}]` is a `tool_use` without `id`, `name` (strings) or `input`"
                )));
            }
            _ => {}
        }
    }
    let usage = reply.usage.and_then(|u| {
        let u = Value::Object(u);
        let counts = anthropic::Usage::deserialize(&u).unwrap_or_default();
        let input = [
            counts.input_tokens,
            counts.cache_creation_input_tokens,
            counts.cache_read_input_tokens,
        ];
        let output = counts.output_tokens.unwrap_or(0);
        Usage::of(u, input.into_iter().flatten().sum(), output)
    });
    Ok(ChatResponse {
        model: model.to_owned(),
        parts,
        usage,
        stop_reason: reply.stop_reason.as_deref().map(StopReason::parse),
        raw,
    })
}

/// Append `piece` to the string at `key` of `block`, a block of a type
/// ctxfold does not read (a `compaction` block's summary).
fn append(block: &mut Value, key: &str, piece: &str) {
    if let Value::Object(b) = block {
        match b.get_mut(key) {
            Some(Value::String(s)) => s.push_str(piece),
            _ => {
                b.insert(key.into(), Value::String(piece.to_owned()));
            }
        }
    }
}

/// What a known event of the stream must hold, for its error when it does
/// not read.
fn expected(kind: &str) -> Option<&'static str> {
    Some(match kind {
        event::MESSAGE_START => "no `message` object",
        event::CONTENT_BLOCK_START => "no valid `index` or no `content_block` object",
        event::CONTENT_BLOCK_DELTA => "no valid `index` or no `delta`",
        _ => return None,
    })
}

/// `delta` joined to `block`; text and reasoning go to `on` as they come,
/// a tool call's input (JSON text) to `input`.
fn apply(delta: Delta, block: &mut Block, input: &mut String, on: &mut dyn FnMut(StreamEvent)) {
    // A compaction block's summary, and its opaque part (to be sent back
    // verbatim), as they come: each string of the delta joined to the
    // block's own.
    if delta.kind() == Some("compaction_delta") {
        if let (Delta::Other(Value::Object(d)), Block::Other(b)) = (delta, block) {
            for (k, piece) in d {
                if let (false, Value::String(piece)) = (k == "type", piece) {
                    append(b, &k, &piece);
                }
            }
        }
        return;
    }
    match (delta, block) {
        (Delta::Text(t), b) => {
            match b {
                Block::Text(b) => b.text.push_str(&t.text),
                Block::Other(b) => append(b, "text", &t.text),
                _ => {}
            }
            on(StreamEvent::Text(t.text));
        }
        (Delta::Thinking(t), b) => {
            match b {
                Block::Thinking(b) => b.thinking.push_str(&t.thinking),
                Block::Other(b) => append(b, "thinking", &t.thinking),
                _ => {}
            }
            on(StreamEvent::Reasoning(t.thinking));
        }
        (Delta::Signature(p), Block::Thinking(b)) => {
            b.signature.get_or_insert_default().push_str(&p.signature);
        }
        (Delta::Signature(p), Block::Other(b)) => append(b, "signature", &p.signature),
        (Delta::InputJson(p), _) => input.push_str(&p.partial_json),
        (Delta::Citations(c), b) => {
            let keys = match b {
                Block::Other(Value::Object(o)) => Some(o),
                b => b.extra_mut(),
            };
            if let Some(keys) = keys {
                match keys
                    .entry("citations")
                    .or_insert_with(|| Value::Array(Vec::new()))
                {
                    Value::Array(a) => a.push(c.citation),
                    other => *other = Value::Array(vec![c.citation]),
                }
            }
        }
        _ => {}
    }
}

/// Read a stream (see the module docs) into the response a non-streamed
/// call gives (its `raw`: the message the events fold back into); text and
/// reasoning go to `on` as they come. `model` is `provider/model`.
///
/// `cut_short`: the stream is known to have broken off; the message holds
/// the blocks that completed (`content_block_stop`) instead of failing, so
/// a thinking block is kept only with its signature and a tool call only
/// with all of its input.
pub(crate) fn read_stream(
    mut s: Stream<'_, impl BufRead>,
    model: &str,
) -> Result<ChatResponse, ProviderError> {
    let mut message: Option<Map<String, Value>> = None;
    let mut usage: Option<Map<String, Value>> = None;
    let mut blocks: Vec<Option<Block>> = Vec::new();
    let mut json_parts: Vec<String> = Vec::new();
    let mut closed: Vec<bool> = Vec::new();
    let mut stopped = false;
    while !stopped {
        let Some(ev) = s.next("Anthropic-style")? else {
            break;
        };
        // Where an error is, said only when there is one.
        let at = || {
            format!(
                "Anthropic-style stream, `{}` event ending on line {}",
                ev.event.as_deref().unwrap_or("(unnamed)"),
                ev.line
            )
        };
        // Its name (the `event:` line) says its type: read straight into it.
        let data = match &ev.event {
            Some(name) => Event::from_str_as(name, &ev.data),
            None => serde_json::from_str::<Value>(&ev.data).map(Event::from_value),
        };
        let mut data = match data {
            Ok(data) => data,
            // The last event of a stream cut short may be incomplete.
            Err(_) if s.cut_short => break,
            Err(e) => {
                return Err(malformed(format!(
                    "{}: its data is not JSON ({e}): {}",
                    at(),
                    error::quote(&ev.data)
                )));
            }
        };
        if data.kind().is_none()
            && let (Event::Other(Value::Object(o)), Some(name)) = (&mut data, &ev.event)
        {
            // No `type`: the event's name says it.
            o.insert("type".into(), Value::String(name.clone()));
            data = Event::from_value(Value::Object(std::mem::take(o)));
        }
        let index = |i: u64| -> Result<usize, ProviderError> {
            usize::try_from(i)
                .ok()
                .filter(|&n| n <= 1024)
                .ok_or_else(|| malformed(format!("{}: no valid `index`", at())))
        };
        match data {
            Event::MessageStart(m) => message = Some(m.message),
            Event::ContentBlockStart(b) => {
                let i = index(b.index)?;
                if blocks.len() <= i {
                    blocks.resize(i + 1, None);
                    json_parts.resize(i + 1, String::new());
                    closed.resize(i + 1, false);
                }
                match &b.content_block {
                    Block::ToolUse(t) => (s.on)(StreamEvent::ToolCall {
                        id: t.id.clone(),
                        name: t.name.clone(),
                    }),
                    Block::Text(t) if !t.text.is_empty() => {
                        (s.on)(StreamEvent::Text(t.text.clone()));
                    }
                    _ => {}
                }
                blocks[i] = Some(b.content_block);
            }
            Event::ContentBlockDelta(d) => {
                let i = index(d.index)?;
                let Some(Some(b)) = blocks.get_mut(i) else {
                    return Err(malformed(format!(
                        "{}: a delta for block {i} before its `content_block_start`",
                        at()
                    )));
                };
                apply(d.delta, b, &mut json_parts[i], s.on);
            }
            Event::MessageDelta(d) => {
                let Some(m) = &mut message else {
                    return Err(malformed(format!("{}: before `message_start`", at())));
                };
                m.extend(d.delta);
                // The edits the provider applied (context management) come
                // beside the delta, as in a whole message.
                if let Some(cm) = d.context_management {
                    m.insert("context_management".into(), cm);
                }
                if let Some(u) = d.usage {
                    usage.get_or_insert_default().extend(u);
                }
            }
            Event::MessageStop(_) => stopped = true,
            Event::ContentBlockStop(b) => {
                if let Some(c) = index(b.index).ok().and_then(|i| closed.get_mut(i)) {
                    *c = true;
                }
            }
            Event::Error(_) if s.cut_short => {}
            e @ Event::Error(_) => {
                return Err(error::in_body(&ctxfold_wire::value(&e), s.ctx));
            }
            // A known event whose fields do not read.
            e @ Event::Other(_) => match e.kind() {
                Some(event::ERROR) if s.cut_short => {}
                Some(event::ERROR) => return Err(error::in_body(&ctxfold_wire::value(&e), s.ctx)),
                Some(kind) => {
                    if let Some(expected) = expected(kind) {
                        return Err(malformed(format!("{}: {expected}", at())));
                    }
                }
                None => {}
            },
            _ => {} // ping, and events yet unknown
        }
    }
    if s.cut_short && !stopped {
        for (b, done) in blocks.iter_mut().zip(&closed) {
            if !done {
                *b = None;
            }
        }
    } else if !stopped {
        return Err(malformed(
            "the Anthropic-style stream ended before `message_stop`",
        ));
    }
    let Some(message) = message else {
        return Err(malformed(
            "the Anthropic-style stream had no `message_start`",
        ));
    };
    let mut reply = Reply::deserialize(Value::Object(message)).map_err(|e| {
        malformed(format!(
            "Anthropic-style stream: the `message_start` message is not a message ({e})"
        ))
    })?;
    if let Some(u) = usage {
        reply.usage.get_or_insert_default().extend(u);
    }
    let mut content = Vec::with_capacity(blocks.len());
    for (i, b) in blocks.into_iter().enumerate() {
        let Some(mut b) = b else { continue };
        if !json_parts[i].is_empty() {
            let input: Value = serde_json::from_str(&json_parts[i]).map_err(|e| {
                malformed(format!(
                    "Anthropic-style stream: the input of tool call block {i} is not JSON ({e}): {}",
                    error::quote(&json_parts[i])
                ))
            })?;
            match &mut b {
                Block::ToolUse(t) => t.input = input,
                // A server tool's call.
                Block::Other(Value::Object(o)) => {
                    o.insert("input".into(), input);
                }
                _ => {}
            }
        }
        content.push(b);
    }
    reply.content = Some(content);
    let raw = ctxfold_wire::value(&reply);
    response(reply, raw, model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Message;
    use serde_json::json;

    #[test]
    fn unsigned_reasoning_is_dropped_and_roles_merge_again() {
        let mut req = ChatRequest::new("claude");
        req.messages = vec![
            Message {
                role: Role::User,
                parts: vec![Part::Text("a".into())],
            },
            Message {
                role: Role::Assistant,
                parts: vec![Part::Reasoning {
                    text: "t".into(),
                    signature: None,
                }],
            },
            Message {
                role: Role::User,
                parts: vec![Part::Text("b".into())],
            },
            Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Reasoning {
                        text: "t2".into(),
                        signature: Some("sig".into()),
                    },
                    Part::Text("answer".into()),
                    Part::ToolCall {
                        id: "c".into(),
                        name: "f".into(),
                        arguments: json!("raw text"),
                    },
                ],
            },
        ];
        let b = serde_json::to_value(body(&req, false)).unwrap();
        assert_eq!(b["max_tokens"], DEFAULT_MAX_TOKENS);
        assert!(b.get("stream").is_none());
        assert_eq!(
            b["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "t2", "signature": "sig"},
                    {"type": "text", "text": "answer"},
                    {"type": "tool_use", "id": "c", "name": "f", "input": {"arguments": "raw text"}}]},
            ])
        );
    }

    #[test]
    fn a_conversation_starting_with_the_assistant_gets_a_preamble() {
        let mut req = ChatRequest::new("claude");
        req.messages = vec![Message {
            role: Role::Assistant,
            parts: vec![Part::Text("hello".into())],
        }];
        let b = serde_json::to_value(body(&req, true)).unwrap();
        assert_eq!(b["messages"][0]["role"], "user");
        assert_eq!(b["messages"][0]["content"][0]["text"], PREAMBLE);
        assert_eq!(b["stream"], true);
        req.system = Some("sys".into());
        req.max_tokens = Some(10);
        req.tools = vec![crate::request::ToolSpec {
            name: "f".into(),
            description: "d".into(),
            parameters: Value::Null,
        }];
        req.messages.push(Message {
            role: Role::User,
            parts: vec![
                Part::Text("t".into()),
                Part::ToolResult {
                    id: "c".into(),
                    content: String::new(),
                    is_error: true,
                },
                Part::ToolResult {
                    id: "d".into(),
                    content: "ok".into(),
                    is_error: false,
                },
            ],
        });
        req.extra
            .insert("thinking".into(), json!({"type": "enabled"}));
        // Written byte for byte as before the wire types.
        assert_eq!(
            serde_json::to_string(&body(&req, true)).unwrap(),
            format!(
                r#"{{"model":"claude","max_tokens":10,"system":"sys","messages":[{{"role":"user","content":[{{"type":"text","text":{}}}]}},{{"role":"assistant","content":[{{"type":"text","text":"hello"}}]}},{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"c","is_error":true}},{{"type":"tool_result","tool_use_id":"d","content":"ok"}},{{"type":"text","text":"t"}}]}}],"tools":[{{"name":"f","description":"d","input_schema":{{"type":"object","properties":{{}}}}}}],"stream":true,"thinking":{{"type":"enabled"}}}}"#,
                Value::String(PREAMBLE.into())
            )
        );
    }

    #[test]
    fn usage_counts_cache_reads_as_input() {
        let raw = json!({"content": [{"type": "redacted_thinking", "data": "x"}, {"type": "text", "text": "hi"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5, "output_tokens": 7}});
        let r = parse_response(raw, "anthropic/claude").unwrap();
        assert_eq!(r.parts, vec![Part::Text("hi".into())]);
        let u = r.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (115, 7));
        assert_eq!(r.stop_reason, Some(StopReason::EndTurn));
    }
}
