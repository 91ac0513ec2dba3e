//! Anthropic messages for the proxy tests' model: the whole answer and
//! its stream's events.

use serde_json::{Value, json};

use super::model::Act;

pub(crate) fn anthropic_answer(model: &str, act: &Act) -> Value {
    let (content, stop) = match act {
        Act::Tool { id, path } => (
            json!([{"type": "tool_use", "id": id, "name": "read_file", "input": {"path": path}}]),
            "tool_use",
        ),
        Act::Text(t) => (json!([{"type": "text", "text": t}]), "end_turn"),
    };
    json!({
        "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}
    })
}

pub(crate) fn anthropic_stream(model: &str, act: &Act) -> Vec<String> {
    let ev = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut out = vec![ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )];
    let stop = match act {
        Act::Tool { id, path } => {
            out.push(ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "tool_use", "id": id, "name": "read_file", "input": {}}}),
            ));
            let args = json!({"path": path}).to_string();
            let (a, b) = args.split_at(args.len() / 2);
            for part in [a, b] {
                out.push(ev(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": part}}),
                ));
            }
            "tool_use"
        }
        Act::Text(t) => {
            out.push(ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ));
            let (a, b) = t.split_at(t.len() / 2);
            for part in [a, b] {
                out.push(ev(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": part}}),
                ));
            }
            "end_turn"
        }
    };
    out.push(ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    out.push(ev(
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
    ));
    out.push(ev("message_stop", json!({"type": "message_stop"})));
    out
}
