//! The client half of the proxy tests' model ([`super::model`]): an
//! OpenAI-chat agent that sends a task, answers every `read_file` call the
//! model makes with the file's text (whose `// src/mK.rs` line is how the
//! model counts the steps done) and goes on until the model answers.

use serde_json::{Value, json};

use crate::client::{Answer, post};

/// The one tool the agent offers: `read_file`.
pub fn tools() -> Value {
    json!([{"type": "function", "function": {"name": "read_file", "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}])
}

/// A file's text, as big as a tool result of an agent reading code.
pub fn file_text(path: &str, bytes: usize) -> String {
    let line = format!("// {path}: fn work() {{ let x = compute(); x + 1 }}\n");
    line.repeat(bytes / line.len() + 1)
}

/// The assistant message a streamed chat answer adds up to.
pub fn assemble(sse: &[u8]) -> Value {
    let mut content = String::new();
    let mut calls: Vec<Value> = Vec::new();
    for line in String::from_utf8_lossy(sse).lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        if data == "[DONE]" {
            break;
        }
        let chunk: Value = serde_json::from_str(data).unwrap();
        let delta = &chunk["choices"][0]["delta"];
        content.push_str(delta["content"].as_str().unwrap_or(""));
        for c in delta["tool_calls"].as_array().into_iter().flatten() {
            let i = c["index"].as_u64().unwrap() as usize;
            if calls.len() <= i {
                calls.push(json!({"id": c["id"], "type": "function",
                    "function": {"name": c["function"]["name"], "arguments": ""}}));
            }
            let args = calls[i]["function"]["arguments"]
                .as_str()
                .unwrap()
                .to_owned()
                + c["function"]["arguments"].as_str().unwrap_or("");
            calls[i]["function"]["arguments"] = json!(args);
        }
    }
    let mut m = json!({"role": "assistant", "content": if content.is_empty() { Value::Null } else { json!(content) }});
    if !calls.is_empty() {
        m["tool_calls"] = json!(calls);
    }
    m
}

/// An OpenAI-chat agent on the proxy at `base`: sends `task`, runs every tool call the model
/// makes (reading a file of `result_bytes`), until the model answers.
/// Returns the final messages and every answer's headers.
pub fn openai_agent(
    base: &str,
    messages: &mut Vec<Value>,
    task: &str,
    result_bytes: usize,
    extra_headers: &[(&str, &str)],
) -> Vec<Answer> {
    openai_agent_streaming(base, messages, task, result_bytes, extra_headers, false)
}

/// [`openai_agent`], asking for streamed answers when `stream`.
pub fn openai_agent_streaming(
    base: &str,
    messages: &mut Vec<Value>,
    task: &str,
    result_bytes: usize,
    extra_headers: &[(&str, &str)],
    stream: bool,
) -> Vec<Answer> {
    openai_agent_via(&[base], messages, task, result_bytes, extra_headers, stream)
}

/// [`openai_agent_streaming`] with its requests spread over proxies
/// (`bases`, one after another), as a load balancer would.
pub fn openai_agent_via(
    bases: &[&str],
    messages: &mut Vec<Value>,
    task: &str,
    result_bytes: usize,
    extra_headers: &[(&str, &str)],
    stream: bool,
) -> Vec<Answer> {
    messages.push(json!({"role": "user", "content": task}));
    let mut answers = Vec::new();
    loop {
        let base = bases[answers.len() % bases.len()];
        let body = json!({"model": "gpt-4o-mini", "messages": messages, "tools": tools(),
            "temperature": 0.25, "max_tokens": 300, "stream": stream});
        let mut headers = vec![("authorization", "Bearer sk-test-SECRET-0123456789abcdef")];
        headers.extend_from_slice(extra_headers);
        let a = post(
            &format!("{base}/v1/chat/completions"),
            &headers,
            body.to_string().as_bytes(),
        );
        assert_eq!(
            a.status,
            200,
            "{} (headers {:?})",
            String::from_utf8_lossy(&a.body),
            a.headers
        );
        let msg = if stream {
            assemble(&a.body)
        } else {
            a.json()["choices"][0]["message"].clone()
        };
        messages.push(msg.clone());
        let calls = msg["tool_calls"].as_array().cloned().unwrap_or_default();
        answers.push(a);
        if calls.is_empty() {
            return answers;
        }
        for c in calls {
            let args: Value =
                serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
            messages.push(json!({"role": "tool", "tool_call_id": c["id"],
                "content": file_text(args["path"].as_str().unwrap(), result_bytes)}));
        }
    }
}
