//! OpenAI Responses for the proxy tests' model: a request read as the
//! Anthropic-shaped messages it stands for, and the response object and
//! its stream's events.

use serde_json::{Value, json};

use super::model::Act;

/// A Responses request as the Anthropic-shaped messages it stands for
/// (consecutive items of one role in one message), with its parameters.
pub(crate) fn responses_as_messages(req: &Value) -> Value {
    let mut messages: Vec<(String, Vec<Value>)> = Vec::new();
    let items = match &req["input"] {
        Value::String(s) => vec![json!({"role": "user", "content": s})],
        Value::Array(a) => a.clone(),
        _ => Vec::new(),
    };
    for item in items {
        let (role, block) = match item["type"].as_str().unwrap_or("message") {
            "message" => {
                let text = match &item["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(parts) => {
                        parts.iter().filter_map(|p| p["text"].as_str()).collect()
                    }
                    _ => String::new(),
                };
                let role = item["role"].as_str().unwrap_or("user").to_owned();
                (role, json!({"type": "text", "text": text}))
            }
            "function_call" => (
                "assistant".to_owned(),
                json!({"type": "tool_use", "id": item["call_id"], "name": item["name"]}),
            ),
            "function_call_output" => (
                "user".to_owned(),
                json!({"type": "tool_result", "tool_use_id": item["call_id"], "content": item["output"]}),
            ),
            _ => continue,
        };
        match messages.last_mut() {
            Some((r, blocks)) if *r == role => blocks.push(block),
            _ => messages.push((role, vec![block])),
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut out = json!({"model": req["model"], "messages": messages, "system": req["instructions"],
        "tools": req["tools"], "stream": req["stream"]});
    if let Some(t) = req.get("temperature") {
        out["temperature"] = t.clone();
    }
    out
}

pub(crate) fn responses_answer(n: usize, model: &str, act: &Act) -> Value {
    let item = match act {
        Act::Tool { id, path } => json!({"type": "function_call", "id": format!("fc_{n}"),
            "call_id": id, "name": "read_file", "arguments": json!({"path": path}).to_string(),
            "status": "completed"}),
        Act::Text(t) => json!({"type": "message", "id": format!("msg_{n}"), "status": "completed",
            "role": "assistant", "content": [{"type": "output_text", "text": t, "annotations": []}]}),
    };
    json!({"id": format!("resp_{n}"), "object": "response", "created_at": 1_700_000_000,
        "status": "completed", "model": model, "output": [item], "parallel_tool_calls": true,
        "tool_choice": "auto", "tools": [],
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0}}})
}

/// The events of a streamed response: created, the item added and done,
/// completed.
pub(crate) fn responses_stream(response: &Value) -> Vec<String> {
    let ev = |seq: usize, kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(seq);
        format!("event: {kind}\ndata: {data}\n\n")
    };
    let mut start = response.clone();
    start["status"] = json!("in_progress");
    start["output"] = json!([]);
    let item = response["output"][0].clone();
    let mut added = item.clone();
    added["status"] = json!("in_progress");
    vec![
        ev(0, "response.created", json!({"response": start})),
        ev(
            1,
            "response.output_item.added",
            json!({"output_index": 0, "item": added}),
        ),
        ev(
            2,
            "response.output_item.done",
            json!({"output_index": 0, "item": item}),
        ),
        ev(3, "response.completed", json!({"response": response})),
    ]
}
