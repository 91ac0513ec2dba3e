//! What the providers' context management answers, in their documented
//! shapes, for ctxfold's emulation of it in front of an upstream that has
//! none (issue 29): Anthropic's `compaction` block and applied edits,
//! a message of the block alone (streamed or not); OpenAI's `compaction`
//! item, a response of the item alone (streamed or not) and
//! `/v1/responses/compact`'s `response.compaction` object; and an
//! upstream's answer with these put in, whole or as its stream's events.

use serde_json::{Value, json};

use crate::context_management::COMPACTION;

/// Anthropic's compaction block: `text` (`None`: a compaction that made
/// nothing, which the provider treats as no compaction), signed
/// `signature`.
pub fn anthropic_block(text: Option<&str>, signature: &str) -> Value {
    json!({"type": COMPACTION, "content": text, "signature": signature})
}

/// One of Anthropic's `applied_edits`: the edit `kind`, how many of what
/// it clears (`cleared_tool_uses`, `cleared_thinking_turns`: `what`) and
/// the input tokens it cleared.
pub fn applied_edit(kind: &str, what: &str, cleared: usize, tokens: usize) -> Value {
    let mut o = serde_json::Map::new();
    o.insert("type".into(), kind.into());
    o.insert(what.into(), cleared.into());
    o.insert("cleared_input_tokens".into(), tokens.into());
    Value::Object(o)
}

/// OpenAI's compaction item.
pub fn responses_item(id: &str, encrypted_content: &str) -> Value {
    json!({"type": COMPACTION, "id": id, "encrypted_content": encrypted_content})
}

/// A Messages answer of `block` alone: nothing sampled after it.
pub fn anthropic_alone(id: &str, model: &str, block: &Value) -> Value {
    json!({"id": id, "type": "message", "role": "assistant", "model": model,
        "content": [block], "stop_reason": COMPACTION, "stop_sequence": null,
        "usage": {"input_tokens": 0, "output_tokens": 0}})
}

/// A Responses answer of `item` alone.
pub fn responses_alone(id: &str, model: &str, created_at: i64, item: &Value) -> Value {
    json!({"id": id, "object": "response", "created_at": created_at, "status": "completed",
        "model": model, "output": [item],
        "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}})
}

/// `/v1/responses/compact`'s answer: the input's user messages, then
/// `item` (what the client's history is from now on).
pub fn compaction_response(id: &str, created_at: i64, input: &Value, item: &Value) -> Value {
    let mut output: Vec<Value> = match input {
        Value::String(s) => vec![json!({"type": "message", "role": "user", "content": s})],
        Value::Array(items) => items
            .iter()
            .filter(|i| i.get("role").and_then(Value::as_str) == Some("user"))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    output.push(item.clone());
    json!({"id": id, "object": "response.compaction", "created_at": created_at,
        "output": output, "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}})
}

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The events of a block at `index` of a Messages stream.
fn block_events(index: usize, block: &Value) -> Vec<String> {
    let mut start = block.clone();
    if let Value::Object(o) = &mut start {
        o.insert("content".into(), Value::Null);
    }
    let delta = json!({"type": "compaction_delta", "content": block.get("content")});
    vec![
        event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ),
        event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ),
        event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ),
    ]
}

/// The stream of a Messages answer made of compaction blocks (what
/// [`anthropic_alone`] makes).
pub fn anthropic_events(message: &Value) -> String {
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let mut out = vec![event(
        "message_start",
        &json!({"type": "message_start", "message": start}),
    )];
    for (i, b) in message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        out.extend(block_events(i, b));
    }
    out.push(event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"],
            "stop_sequence": null}, "usage": {"output_tokens": 0}}),
    ));
    out.push(event("message_stop", &json!({"type": "message_stop"})));
    out.concat()
}

/// The stream of a Responses answer (what [`responses_alone`] makes).
pub fn responses_events(response: &Value) -> String {
    let mut start = response.clone();
    start["status"] = json!("in_progress");
    start["output"] = json!([]);
    let mut out = vec![event(
        "response.created",
        &json!({"type": "response.created", "sequence_number": 0, "response": start}),
    )];
    for (i, item) in response["output"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for kind in ["response.output_item.added", "response.output_item.done"] {
            let n = out.len();
            out.push(event(
                kind,
                &json!({"type": kind, "sequence_number": n, "output_index": i, "item": item}),
            ));
        }
    }
    let n = out.len();
    out.push(event(
        "response.completed",
        &json!({"type": "response.completed", "sequence_number": n, "response": response}),
    ));
    out.concat()
}

/// A whole answer (`Messages`: `content`; Responses: `output`) with
/// `compaction` first and Anthropic's `applied_edits`.
pub fn with_compaction(answer: &mut Value, compaction: Option<&Value>, applied_edits: &[Value]) {
    let key = if answer.get("output").is_some() {
        "output"
    } else {
        "content"
    };
    if let (Some(c), Some(Value::Array(a))) = (compaction, answer.get_mut(key)) {
        a.insert(0, c.clone());
    }
    if !applied_edits.is_empty() && key == "content" {
        answer["context_management"] = json!({"applied_edits": applied_edits});
    }
}

/// A Messages stream (`text`, its events) with `compaction` as its first
/// block (the others' indices shifted) and `applied_edits` on its
/// `message_delta`.
pub fn anthropic_stream_with(
    text: &str,
    compaction: Option<&Value>,
    applied_edits: &[Value],
) -> String {
    let mut out = String::with_capacity(text.len() + 512);
    for raw in text.split_inclusive("\n\n") {
        let Some((name, mut data)) = parse_event(raw) else {
            out.push_str(raw);
            continue;
        };
        if compaction.is_some()
            && let Some(i) = data.get("index").and_then(Value::as_u64)
        {
            data["index"] = json!(i + 1);
        }
        if name == "message_delta" && !applied_edits.is_empty() {
            data["context_management"] = json!({"applied_edits": applied_edits});
        }
        out.push_str(&event(&name, &data));
        if name == "message_start"
            && let Some(c) = compaction
        {
            out.push_str(&block_events(0, c).concat());
        }
    }
    out
}

/// A Responses stream with `item` as its first output item (the others'
/// `output_index` shifted; the completed response's `output` holds it).
pub fn responses_stream_with(text: &str, item: &Value) -> String {
    let mut out = String::with_capacity(text.len() + 512);
    for raw in text.split_inclusive("\n\n") {
        let Some((name, mut data)) = parse_event(raw) else {
            out.push_str(raw);
            continue;
        };
        if let Some(i) = data.get("output_index").and_then(Value::as_u64) {
            data["output_index"] = json!(i + 1);
        }
        if let Some(Value::Array(o)) = data.get_mut("response").and_then(|r| r.get_mut("output"))
            && name != "response.created"
            && name != "response.in_progress"
        {
            o.insert(0, item.clone());
        }
        out.push_str(&event(&name, &data));
        if name == "response.created" {
            for kind in ["response.output_item.added", "response.output_item.done"] {
                out.push_str(&event(
                    kind,
                    &json!({"type": kind, "sequence_number": 0, "output_index": 0, "item": item}),
                ));
            }
        }
    }
    out
}

/// An event's name and JSON data (`None`: not one with JSON data, such as
/// a comment or `data: [DONE]`).
fn parse_event(raw: &str) -> Option<(String, Value)> {
    let mut name = None;
    let mut data = String::new();
    for line in raw.lines() {
        if let Some(n) = line.strip_prefix("event:") {
            name = Some(n.trim().to_owned());
        } else if let Some(d) = line.strip_prefix("data:") {
            data.push_str(d.trim_start());
        }
    }
    let data: Value = serde_json::from_str(&data).ok()?;
    let name = name.or_else(|| data.get("type")?.as_str().map(str::to_owned))?;
    Some((name, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_gets_the_compaction_first_and_its_blocks_shifted() {
        let upstream = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"content\":[]}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n",
        );
        let block = anthropic_block(Some("S"), "ctxfold:4");
        let edits = [
            json!({"type": "clear_thinking_20251015", "cleared_thinking_turns": 1, "cleared_input_tokens": 9}),
        ];
        let out = anthropic_stream_with(upstream, Some(&block), &edits);
        let events: Vec<(String, Value)> = out
            .split_inclusive("\n\n")
            .filter_map(parse_event)
            .collect();
        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "message_delta"
            ]
        );
        assert_eq!(events[2].1["delta"]["content"], "S");
        assert_eq!(events[4].1["index"], 1);
        assert_eq!(
            events[6].1["context_management"]["applied_edits"],
            json!(edits)
        );
    }

    #[test]
    fn the_compact_endpoint_answers_the_user_messages_then_the_item() {
        let input = json!([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
            {"type": "message", "role": "user", "content": "c"}]);
        let item = responses_item("cmp_1", "ctxfold:1:S");
        let r = compaction_response("x", 1, &input, &item);
        assert_eq!(r["object"], "response.compaction");
        let out = r["output"].as_array().unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(out[2], item);
        let stream = responses_events(&responses_alone("r", "m", 1, &item));
        assert!(stream.contains("response.output_item.done") && stream.ends_with("\n\n"));
    }
}
