//! OpenAI chat completions for the proxy tests' model: the whole answer
//! and its stream's chunks.

use serde_json::{Value, json};

use super::model::Act;

pub(crate) fn openai_answer(model: &str, act: &Act) -> Value {
    let message = match act {
        Act::Tool { id, path } => json!({
            "role": "assistant", "content": null, "refusal": null,
            "tool_calls": [{"id": id, "type": "function",
                "function": {"name": "read_file", "arguments": json!({"path": path}).to_string()}}]
        }),
        Act::Text(t) => json!({"role": "assistant", "content": t, "refusal": null}),
    };
    let finish = if matches!(act, Act::Tool { .. }) {
        "tool_calls"
    } else {
        "stop"
    };
    json!({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1_700_000_000, "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    })
}

pub(crate) fn openai_stream(model: &str, act: &Act) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_700_000_000,
                "model": model, "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
        )
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    match act {
        Act::Tool { id, path } => {
            let args = json!({"path": path}).to_string();
            let (a, b) = args.split_at(args.len() / 2);
            out.push(chunk(
                json!({"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": "read_file", "arguments": a}}]}),
                Value::Null,
            ));
            out.push(chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": b}}]}),
                Value::Null,
            ));
            out.push(chunk(json!({}), json!("tool_calls")));
        }
        Act::Text(t) => {
            let (a, b) = t.split_at(t.len() / 2);
            out.push(chunk(json!({"content": a}), Value::Null));
            out.push(chunk(json!({"content": b}), Value::Null));
            out.push(chunk(json!({}), json!("stop")));
        }
    }
    out.push("data: [DONE]\n\n".into());
    out
}
