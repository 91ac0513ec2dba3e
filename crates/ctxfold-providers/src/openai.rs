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
    self, Answer, AnswerFunction, Choice, Completion, Content, Message, StreamOptions, Tool,
    ToolCall, role,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{self, ProviderError};
use crate::part::{Part, text_parts, tool_call_parts};
use crate::request::{ChatRequest, Role, apply_extra};
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
                let texts = text_parts(&m.parts);
                let calls: Vec<ToolCall> = tool_call_parts(&m.parts)
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
fn parse_arguments(v: Option<Value>) -> Value {
    match v {
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(Map::new()),
        Some(Value::String(s)) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
        Some(Value::Null) | None => Value::Object(Map::new()),
        Some(other) => other,
    }
}

fn malformed(detail: impl Into<String>) -> ProviderError {
    ProviderError::Malformed {
        detail: detail.into(),
    }
}

/// What an answer says, whole or folded back from a stream: the parts of
/// the [`ChatResponse`] it becomes.
struct Said {
    reasoning: String,
    text: String,
    /// (id, name, arguments as sent); a missing id becomes `call_N`.
    calls: Vec<(String, String, Option<Value>)>,
    finish_reason: Option<Value>,
    usage: Option<Value>,
}

impl Said {
    fn into_response(self, raw: Value, model: &str) -> ChatResponse {
        let mut parts = Vec::with_capacity(self.calls.len() + 2);
        if !self.reasoning.is_empty() {
            parts.push(Part::Reasoning {
                text: self.reasoning,
                signature: None,
            });
        }
        if !self.text.is_empty() {
            parts.push(Part::Text(self.text));
        }
        for (i, (id, name, arguments)) in self.calls.into_iter().enumerate() {
            parts.push(Part::ToolCall {
                id: if id.is_empty() {
                    format!("call_{i}")
                } else {
                    id
                },
                name,
                arguments: parse_arguments(arguments),
            });
        }
        let usage = self.usage.and_then(|u| {
            let counts = chat::Usage::deserialize(&u).unwrap_or_default();
            let (input, output) = (counts.prompt_tokens, counts.completion_tokens);
            Usage::of(u, input.unwrap_or(0), output.unwrap_or(0))
        });
        ChatResponse {
            model: model.to_owned(),
            parts,
            usage,
            stop_reason: self
                .finish_reason
                .as_ref()
                .and_then(Value::as_str)
                .map(StopReason::parse),
            raw,
        }
    }
}

/// Read a response body (see the module docs). `model` is
/// `provider/model`, as asked for.
pub fn parse_response(raw: Value, model: &str) -> Result<ChatResponse, ProviderError> {
    let answer = Answer::deserialize(&raw).map_err(|e| {
        malformed(format!(
            "the OpenAI-style response is not a chat completion ({e}): {}",
            error::quote(&raw.to_string())
        ))
    })?;
    let Some(choice) = answer.choices.and_then(|c| c.into_iter().next()) else {
        return Err(malformed(format!(
            "the OpenAI-style response has no `choices`: {}",
            error::quote(&raw.to_string())
        )));
    };
    let Some(message) = choice.message else {
        return Err(malformed("`choices[0]` has no `message` object"));
    };
    let reasoning = [message.reasoning_content, message.reasoning]
        .into_iter()
        .flatten()
        .find(|r| !r.is_empty())
        .unwrap_or_default();
    let mut calls = Vec::new();
    for (i, c) in message.tool_calls.into_iter().flatten().enumerate() {
        let Some(AnswerFunction {
            name: Some(name),
            arguments,
            ..
        }) = c.function
        else {
            return Err(malformed(format!(
                "`choices[0].message.tool_calls[{i}]` has no `function.name`"
            )));
        };
        calls.push((c.id.unwrap_or_default(), name, arguments));
    }
    let said = Said {
        reasoning,
        text: message.content.map(|c| c.text("\n")).unwrap_or_default(),
        calls,
        finish_reason: choice.finish_reason,
        usage: answer.usage,
    };
    Ok(said.into_response(raw, model))
}

/// A tool call being streamed.
#[derive(Default)]
struct CallAcc {
    id: String,
    name: String,
    arguments: String,
}

/// Read a stream (see the module docs) into the response a non-streamed
/// call gives (its `raw`: the completion the chunks fold back into); text
/// and reasoning go to `on` as they come. `model` is `provider/model`.
///
/// `cut_short`: the stream is known to have broken off; what arrived is
/// read as far as it goes (the text and reasoning received; tool calls,
/// whose end the format does not mark, are left out) instead of failing.
pub(crate) fn read_stream(
    mut s: Stream<'_, impl BufRead>,
    model: &str,
) -> Result<ChatResponse, ProviderError> {
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
        let chunk: Answer = match serde_json::from_str(&ev.data) {
            Ok(chunk) => chunk,
            // The last event of a stream cut short may be incomplete.
            Err(e) if s.cut_short && !e.is_data() => break,
            Err(e) => {
                let what = if e.is_data() {
                    "expected a chunk of a chat completion"
                } else {
                    "its data is not JSON"
                };
                return Err(malformed(format!(
                    "OpenAI-style stream, event ending on line {}: {what} ({e}): {}",
                    ev.line,
                    error::quote(&ev.data)
                )));
            }
        };
        if chunk.error.is_some() {
            return Err(error::in_body(&ctxfold_wire::value(&chunk), s.ctx));
        }
        // The chunks' other keys (`id`, `model`, …), in the order they came.
        top.extend(chunk.extra);
        if chunk.usage.is_some() {
            usage = chunk.usage;
        }
        for c in chunk.choices.into_iter().flatten() {
            if c.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = c.delta {
                if let Some(Content::Text(t)) = delta.content
                    && !t.is_empty()
                {
                    content.push_str(&t);
                    (s.on)(StreamEvent::Text(t));
                }
                for (key, r) in [
                    ("reasoning_content", delta.reasoning_content),
                    ("reasoning", delta.reasoning),
                ] {
                    if let Some(r) = r
                        && !r.is_empty()
                    {
                        reasoning_key = key;
                        reasoning.push_str(&r);
                        (s.on)(StreamEvent::Reasoning(r));
                        break;
                    }
                }
                for (pos, tc) in delta.tool_calls.into_iter().flatten().enumerate() {
                    let i = tc.index.map_or(pos, |n| n as usize);
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
                    if let Some(id) = tc.id
                        && acc.id.is_empty()
                    {
                        acc.id = id;
                    }
                    let f = tc.function.unwrap_or_default();
                    if let Some(name) = f.name
                        && acc.name.is_empty()
                        && !name.is_empty()
                    {
                        acc.name = name;
                        (s.on)(StreamEvent::ToolCall {
                            id: acc.id.clone(),
                            name: acc.name.clone(),
                        });
                    }
                    if let Some(Value::String(a)) = f.arguments {
                        acc.arguments.push_str(&a);
                    }
                }
            }
            if let Some(fr) = c.finish_reason
                && !fr.is_null()
            {
                finish = Some(fr);
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
    let said = Said {
        reasoning: reasoning.clone(),
        text: content.clone(),
        calls: calls
            .iter()
            .map(|c| {
                let arguments = Value::String(c.arguments.clone());
                (c.id.clone(), c.name.clone(), Some(arguments))
            })
            .collect(),
        finish_reason: finish.clone(),
        usage: usage.clone(),
    };
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
    Ok(said.into_response(ctxfold_wire::value(&completion), model))
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
