//! OpenAI chat completions (and the servers that speak it: Ollama's `/v1`,
//! llama.cpp's server, vLLM, OpenRouter, …).
//!
//! # Request ([`body`])
//!
//! - The system text is a first `system` message.
//! - A user message: each tool result becomes a `tool` message
//!   (`tool_call_id`, `content`; the format has no error flag, so
//!   `is_error` is not sent), consecutive texts one `user` message (joined
//!   with "\n\n").
//! - An assistant message: texts joined with "\n\n" in `content` (`null`
//!   when there are only tool calls), calls in `tool_calls` with their
//!   arguments as JSON text (a string argument is sent as the text it
//!   holds). Reasoning is not sent: `reasoning_content` is output only.
//!   A message left empty is not sent.
//! - `tools` as `function` tools; the request's output limit as
//!   `max_tokens`, or as `max_completion_tokens` for OpenAI's reasoning
//!   models (o1, o3, o4, gpt-5: they refuse `max_tokens`); when streaming,
//!   `stream_options.include_usage` so the last chunk reports usage.
//!   [`ChatRequest::extra`] last.
//!
//! # Response
//!
//! `choices[0].message`: `reasoning_content` (or `reasoning`, as OpenRouter
//! and newer vLLM name it) as reasoning, `content` as text (text parts of an
//! array joined), `tool_calls` (arguments parsed; text that does not parse
//! is kept as a string; a missing id becomes `call_N`). `finish_reason` is
//! the stop reason; `usage.prompt_tokens` / `completion_tokens` the usage.
//!
//! # Stream
//!
//! `data: {chunk}` events until `data: [DONE]`: `choices[0].delta` holds
//! pieces of `content`, `reasoning_content` (or `reasoning`) and
//! `tool_calls[i]` (by `index`: id and name first, then `function.arguments`
//! fragments). Usage comes in a chunk of its own (or with the last). An
//! `error` object in a chunk is classified like an HTTP error. The chunks
//! are folded back into the response a non-streamed call gives, and read
//! as one.

use std::io::BufRead;

use ctxfold_wire::RequestBody;
use ctxfold_wire::chat::{
    self, Choice, Completion, Content, Message, StreamOptions, Tool, ToolCall, role,
};
use serde_json::{Map, Value};

use crate::error::{self, ProviderError};
use crate::request::{ChatRequest, Part, Role, apply_extra};
use crate::response::{ChatResponse, StopReason, StreamEvent, Usage};
use crate::stream::Stream;

/// OpenAI's reasoning models, which take `max_completion_tokens` only.
fn is_reasoning_model(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    ["o1", "o3", "o4", "gpt-5"].iter().any(|p| {
        name.strip_prefix(p).is_some_and(|rest| {
            rest.chars()
                .next()
                .is_none_or(|c| !c.is_ascii_alphanumeric())
        })
    })
}

/// The request body for `req` (see the module docs).
pub fn body(req: &ChatRequest, stream: bool) -> RequestBody<Message> {
    // At most a message a part, and the system prompt.
    let parts: usize = req.messages.iter().map(|m| m.parts.len()).sum();
    let mut messages: Vec<Message> = Vec::with_capacity(parts + 1);
    if let Some(s) = &req.system {
        messages.push(Message::text(role::SYSTEM, s.clone()));
    }
    for m in &req.messages {
        match m.role {
            Role::User => {
                let mut texts: Vec<&str> = Vec::new();
                let flush = |texts: &mut Vec<&str>, messages: &mut Vec<Message>| {
                    if !texts.is_empty() {
                        messages.push(Message::text(role::USER, texts.join("\n\n")));
                        texts.clear();
                    }
                };
                for p in &m.parts {
                    match p {
                        Part::Text(t) => texts.push(t),
                        Part::ToolResult { id, content, .. } => {
                            flush(&mut texts, &mut messages);
                            messages.push(Message {
                                tool_call_id: Some(id.clone()),
                                ..Message::text(role::TOOL, content.clone())
                            });
                        }
                        Part::Reasoning { .. } | Part::ToolCall { .. } => {}
                    }
                }
                flush(&mut texts, &mut messages);
            }
            Role::Assistant => {
                let texts = crate::response::text_parts(&m.parts);
                let calls: Vec<ToolCall> = crate::response::tool_call_parts(&m.parts)
                    .map(|(id, name, arguments)| {
                        let arguments = Value::String(arguments_text(arguments));
                        ToolCall::function(id.to_owned(), name.to_owned(), arguments)
                    })
                    .collect();
                if texts.is_empty() && calls.is_empty() {
                    continue;
                }
                messages.push(Message {
                    role: role::ASSISTANT.into(),
                    content: Some(if texts.is_empty() {
                        Content::Null
                    } else {
                        Content::Text(texts.join("\n\n"))
                    }),
                    tool_calls: (!calls.is_empty()).then_some(calls),
                    ..Message::default()
                });
            }
        }
    }
    let (max_tokens, max_completion_tokens) = match req.max_tokens {
        Some(n) if is_reasoning_model(&req.model) => (None, Some(n)),
        n => (n, None),
    };
    let request = chat::Request {
        model: req.model.clone(),
        messages,
        tools: req
            .tools
            .iter()
            .map(|t| Tool::function(&t.name, &t.description, t.parameters.clone()))
            .collect(),
        max_tokens,
        max_completion_tokens,
        stream,
        stream_options: stream.then(|| StreamOptions {
            include_usage: true,
            extra: Map::new(),
        }),
        extra: Map::new(),
    };
    let mut body = request.into_body();
    apply_extra(body.head_mut(), &req.extra);
    body
}

/// Arguments as the JSON text OpenAI wants.
fn arguments_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Arguments text read back: parsed, `{}` when empty, else kept as text.
fn parse_arguments(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(Map::new()),
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(Value::Null) | None => Value::Object(Map::new()),
        Some(other) => other.clone(),
    }
}

fn malformed(detail: impl Into<String>) -> ProviderError {
    ProviderError::Malformed {
        detail: detail.into(),
    }
}

/// Read a response body (see the module docs). `model` is
/// `provider/model`, as asked for.
pub fn parse_response(raw: Value, model: &str) -> Result<ChatResponse, ProviderError> {
    let choice = match raw.get("choices") {
        Some(Value::Array(c)) if !c.is_empty() => &c[0],
        _ => {
            return Err(malformed(format!(
                "the OpenAI-style response has no `choices`: {}",
                error::quote(&raw.to_string())
            )));
        }
    };
    let Some(Value::Object(message)) = choice.get("message") else {
        return Err(malformed("`choices[0]` has no `message` object"));
    };
    let mut parts = Vec::new();
    for key in ["reasoning_content", "reasoning"] {
        if let Some(Value::String(r)) = message.get(key)
            && !r.is_empty()
        {
            parts.push(Part::Reasoning {
                text: r.clone(),
                signature: None,
            });
            break;
        }
    }
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    if let Some(Value::Array(calls)) = message.get("tool_calls") {
        for (i, c) in calls.iter().enumerate() {
            let f = c.get("function");
            let Some(name) = f.and_then(|f| f.get("name")).and_then(Value::as_str) else {
                return Err(malformed(format!(
                    "`choices[0].message.tool_calls[{i}]` has no `function.name`"
                )));
            };
            let id = match c.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() => id.to_owned(),
                _ => format!("call_{i}"),
            };
            parts.push(Part::ToolCall {
                id,
                name: name.to_owned(),
                arguments: parse_arguments(f.and_then(|f| f.get("arguments"))),
            });
        }
    }
    let stop_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(StopReason::parse);
    Ok(ChatResponse {
        model: model.to_owned(),
        parts,
        usage: Usage::from_raw(raw.get("usage"), &["prompt_tokens"], "completion_tokens"),
        stop_reason,
        raw,
    })
}

/// A tool call being streamed.
#[derive(Default)]
struct CallAcc {
    id: String,
    name: String,
    arguments: String,
}

/// Read a stream (see the module docs) into the response body a
/// non-streamed call gives; text and reasoning go to `on` as they come.
///
/// `cut_short`: the stream is known to have broken off; what arrived is
/// read as far as it goes (the text and reasoning received; tool calls,
/// whose end the format does not mark, are left out) instead of failing.
pub(crate) fn read_stream(mut s: Stream<'_, impl BufRead>) -> Result<Value, ProviderError> {
    let mut top = Map::new();
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut reasoning_key = "reasoning_content";
    let mut calls: Vec<CallAcc> = Vec::new();
    let mut finish: Option<Value> = None;
    let mut usage: Option<Value> = None;
    let mut done = false;
    while let Some(ev) = s.next("OpenAI-style")? {
        if ev.data.trim() == "[DONE]" {
            done = true;
            break;
        }
        // The last event of a stream cut short may be incomplete.
        if s.cut_short && serde_json::from_str::<Value>(&ev.data).is_err() {
            break;
        }
        let chunk: Value = serde_json::from_str(&ev.data).map_err(|e| {
            malformed(format!(
                "OpenAI-style stream, event ending on line {}: its data is not JSON ({e}): {}",
                ev.line,
                error::quote(&ev.data)
            ))
        })?;
        let Value::Object(chunk) = chunk else {
            return Err(malformed(format!(
                "OpenAI-style stream, event ending on line {}: expected a JSON object, found {}",
                ev.line,
                error::quote(&ev.data)
            )));
        };
        if chunk.contains_key("error") {
            return Err(error::in_body(&Value::Object(chunk), s.ctx));
        }
        for (k, v) in &chunk {
            match k.as_str() {
                "choices" | "object" => {}
                "usage" => {
                    if !v.is_null() {
                        usage = Some(v.clone());
                    }
                }
                _ => {
                    top.insert(k.clone(), v.clone());
                }
            }
        }
        let Some(Value::Array(choices)) = chunk.get("choices") else {
            continue;
        };
        for c in choices {
            if c.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = c.get("delta") {
                if let Some(t) = delta.get("content").and_then(Value::as_str)
                    && !t.is_empty()
                {
                    content.push_str(t);
                    (s.on)(StreamEvent::Text(t.to_owned()));
                }
                for key in ["reasoning_content", "reasoning"] {
                    if let Some(r) = delta.get(key).and_then(Value::as_str)
                        && !r.is_empty()
                    {
                        reasoning_key = key;
                        reasoning.push_str(r);
                        (s.on)(StreamEvent::Reasoning(r.to_owned()));
                        break;
                    }
                }
                if let Some(Value::Array(tcs)) = delta.get("tool_calls") {
                    for (pos, tc) in tcs.iter().enumerate() {
                        let i = tc
                            .get("index")
                            .and_then(Value::as_u64)
                            .map_or(pos, |n| n as usize);
                        if i > 1024 {
                            return Err(malformed(format!(
                                "OpenAI-style stream, event ending on line {}: tool call index {i} is implausible",
                                ev.line
                            )));
                        }
                        if calls.len() <= i {
                            calls.resize_with(i + 1, CallAcc::default);
                        }
                        let acc = &mut calls[i];
                        if let Some(id) = tc.get("id").and_then(Value::as_str)
                            && acc.id.is_empty()
                        {
                            acc.id = id.to_owned();
                        }
                        let f = tc.get("function");
                        if let Some(name) = f.and_then(|f| f.get("name")).and_then(Value::as_str)
                            && acc.name.is_empty()
                            && !name.is_empty()
                        {
                            acc.name = name.to_owned();
                            (s.on)(StreamEvent::ToolCall {
                                id: acc.id.clone(),
                                name: acc.name.clone(),
                            });
                        }
                        if let Some(a) = f.and_then(|f| f.get("arguments")).and_then(Value::as_str)
                        {
                            acc.arguments.push_str(a);
                        }
                    }
                }
            }
            if let Some(fr) = c.get("finish_reason")
                && !fr.is_null()
            {
                finish = Some(fr.clone());
            }
        }
    }
    if s.cut_short && !done && finish.is_none() {
        calls.clear();
    } else if !done && finish.is_none() {
        return Err(malformed(
            "the OpenAI-style stream ended before the answer was finished (no `finish_reason`, no `data: [DONE]`)",
        ));
    }
    let content = if content.is_empty() && !calls.is_empty() {
        Content::Null
    } else {
        Content::Text(content)
    };
    let reasoning = (!reasoning.is_empty()).then_some(reasoning);
    let (reasoning_content, reasoning) = if reasoning_key == "reasoning" {
        (None, reasoning)
    } else {
        (reasoning, None)
    };
    let tool_calls = (!calls.is_empty()).then(|| {
        calls
            .into_iter()
            .map(|c| ToolCall::function(c.id, c.name, Value::String(c.arguments)))
            .collect()
    });
    let completion = Completion {
        extra: top,
        object: "chat.completion".into(),
        choices: vec![Choice {
            index: 0,
            message: Message {
                role: role::ASSISTANT.into(),
                content: Some(content),
                reasoning_content,
                reasoning,
                tool_calls,
                ..Message::default()
            },
            finish_reason: finish,
        }],
        usage,
    };
    Ok(ctxfold_wire::value(&completion))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Message, ToolSpec};
    use serde_json::json;

    #[test]
    fn reasoning_models_get_max_completion_tokens() {
        for (model, key) in [
            ("gpt-4o-mini", "max_tokens"),
            ("o3-mini", "max_completion_tokens"),
            ("gpt-5", "max_completion_tokens"),
            ("openai/o1", "max_completion_tokens"),
            ("o10-custom", "max_tokens"),
        ] {
            let mut req = ChatRequest::new(model);
            req.max_tokens = Some(99);
            let b = serde_json::to_value(body(&req, false)).unwrap();
            assert_eq!(b[key], 99, "{model}");
        }
    }

    #[test]
    fn body_maps_roles_tools_and_drops_reasoning() {
        let mut req = ChatRequest::new("gpt-4o");
        req.system = Some("be brief".into());
        req.messages = vec![
            Message {
                role: Role::User,
                parts: vec![Part::Text("hi".into())],
            },
            Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Reasoning {
                        text: "think".into(),
                        signature: Some("s".into()),
                    },
                    Part::ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "a"}),
                    },
                ],
            },
            Message {
                role: Role::User,
                parts: vec![
                    Part::ToolResult {
                        id: "c1".into(),
                        content: "data".into(),
                        is_error: false,
                    },
                    Part::Text("thanks".into()),
                ],
            },
            Message {
                role: Role::Assistant,
                parts: vec![Part::Reasoning {
                    text: "only thinking".into(),
                    signature: None,
                }],
            },
        ];
        req.tools = vec![ToolSpec {
            name: "read".into(),
            description: "read a file".into(),
            parameters: json!({"type": "object"}),
        }];
        req.extra.insert("temperature".into(), json!(0.2));
        req.extra.insert("stream_options".into(), Value::Null);
        let b = serde_json::to_value(body(&req, true)).unwrap();
        assert_eq!(
            b["messages"],
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "data"},
                {"role": "user", "content": "thanks"},
            ])
        );
        assert_eq!(b["tools"][0]["function"]["name"], "read");
        assert_eq!(b["stream"], true);
        assert_eq!(b["temperature"], 0.2);
        assert!(
            b.get("stream_options").is_none(),
            "a null extra removes the key"
        );
        // Written byte for byte as before the wire types.
        assert_eq!(
            b.to_string(),
            r#"{"model":"gpt-4o","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"data"},{"role":"user","content":"thanks"}],"tools":[{"type":"function","function":{"name":"read","description":"read a file","parameters":{"type":"object"}}}],"stream":true,"temperature":0.2}"#
        );
    }

    #[test]
    fn response_with_reasoning_and_unparsable_arguments() {
        let raw = json!({"choices": [{"message": {"role": "assistant", "content": "ok",
            "reasoning": "why", "tool_calls": [{"function": {"name": "f", "arguments": "{bad"}}]},
            "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 3, "completion_tokens": 4}});
        let r = parse_response(raw, "openrouter/x").unwrap();
        assert_eq!(
            r.parts,
            vec![
                Part::Reasoning {
                    text: "why".into(),
                    signature: None
                },
                Part::Text("ok".into()),
                Part::ToolCall {
                    id: "call_0".into(),
                    name: "f".into(),
                    arguments: json!("{bad")
                },
            ]
        );
        assert_eq!(r.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(r.usage.unwrap().output_tokens, 4);
    }
}
