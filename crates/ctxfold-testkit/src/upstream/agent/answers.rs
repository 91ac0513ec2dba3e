//! The agents' model's answers, each API's, streamed or not as asked:
//! a step's shell call (with a signed thought first for a `think…` task),
//! a recall call, a final text or a summary.

use serde_json::{Value, json};

use super::shell::{Shell, code_mode_source, step_command};
use super::{Act, http, sse};

pub(super) fn anthropic_reply(req: &Value, act: &Act, tokens: usize, n: usize) -> Vec<u8> {
    let model = req["model"].as_str().unwrap_or("scripted").to_owned();
    let id = format!("msg_scripted_{n}");
    let usage = json!({"input_tokens": tokens, "output_tokens": 40,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    let (block, stop) = match act {
        // The call's id names this answer (unique in the process), not
        // the task's step count: two tasks of as many steps would repeat
        // ids, and Claude Code takes a repeated id for an interrupted call.
        Act::Step {
            tool,
            task,
            k,
            n: steps,
        } => {
            let cmd = step_command(task, *k, *steps);
            let (name, input) = match tool {
                Shell::Command(name) => (
                    name.clone(),
                    json!({"command": cmd, "description": format!("Print build log step {k}")}),
                ),
                Shell::Cmd(name, p) => (name.clone(), json!({ p.as_str(): cmd })),
                Shell::Argv(name) | Shell::CodeMode(name) => {
                    (name.clone(), json!({"command": ["bash", "-lc", cmd]}))
                }
            };
            (
                json!({"type": "tool_use", "id": format!("toolu_scripted_{n}_{k}"), "name": name, "input": input}),
                "tool_use",
            )
        }
        Act::Recall { tool, handle, .. } => (
            json!({"type": "tool_use", "id": format!("toolu_scripted_{n}_recall"), "name": tool,
                "input": {"handle": handle}}),
            "tool_use",
        ),
        _ => (json!({"type": "text", "text": act.text()}), "end_turn"),
    };
    let thinking = act.thinks().then(|| {
        json!({"type": "thinking", "thinking": act.thought(),
            "signature": format!("c2lnbmVkLXNjcmlwdGVk{n}")})
    });
    if req["stream"] != json!(true) {
        let content: Vec<Value> = thinking.into_iter().chain([block]).collect();
        let body = json!({"id": id, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": null, "usage": usage});
        return http(200, "application/json", body.to_string().as_bytes());
    }
    let mut events = vec![(
        "message_start".to_owned(),
        json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": tokens, "output_tokens": 1,
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
    )];
    let ev = |name: &str, data: Value| (name.to_owned(), data);
    let index = usize::from(thinking.is_some());
    if let Some(t) = &thinking {
        events.push(ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ));
        events.push(ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "thinking_delta", "thinking": t["thinking"]}}),
        ));
        events.push(ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "signature_delta", "signature": t["signature"]}}),
        ));
        events.push(ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ));
    }
    if block["type"] == "tool_use" {
        let mut start = block.clone();
        let input = start["input"].to_string();
        start["input"] = json!({});
        events.push(ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        let cut = input.len() / 2;
        let cut = (cut..input.len())
            .find(|i| input.is_char_boundary(*i))
            .unwrap_or(input.len());
        for part in [&input[..cut], &input[cut..]] {
            events.push(ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": part}}),
            ));
        }
    } else {
        events.push(ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ));
        events.push(ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": block["text"]}}),
        ));
    }
    events.push(ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    ));
    events.push(ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"input_tokens": tokens, "output_tokens": 40,
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}),
    ));
    events.push(ev("message_stop", json!({"type": "message_stop"})));
    sse(&events)
}

pub(super) fn responses_reply(req: &Value, act: &Act, tokens: usize, n: usize) -> Vec<u8> {
    let item = match act {
        Act::Step {
            tool,
            task,
            k,
            n: of,
        } => {
            let cmd = step_command(task, *k, *of);
            let (name, args) = match tool {
                Shell::Cmd(name, p) => (name.clone(), json!({ p.as_str(): cmd })),
                Shell::Argv(name) => (name.clone(), json!({"command": ["bash", "-lc", cmd]})),
                Shell::Command(name) => (name.clone(), json!({"command": cmd})),
                Shell::CodeMode(name) => {
                    let item = json!({"type": "custom_tool_call", "id": format!("ctc_scripted_{n}"),
                        "status": "completed", "call_id": format!("call_scripted_{n}_{k}"),
                        "name": name, "input": code_mode_source(&cmd)});
                    return responses_events(req, act, tokens, n, item);
                }
            };
            json!({"type": "function_call", "id": format!("fc_scripted_{n}"), "status": "completed",
                "call_id": format!("call_scripted_{n}_{k}"), "name": name, "arguments": args.to_string()})
        }
        Act::Recall {
            tool,
            namespace,
            handle,
        } => {
            let mut call = json!({"type": "function_call", "id": format!("fc_scripted_{n}"),
                "status": "completed", "call_id": format!("call_scripted_{n}_recall"), "name": tool,
                "arguments": json!({"handle": handle}).to_string()});
            if let Some(ns) = namespace {
                call["namespace"] = json!(ns);
            }
            call
        }
        _ => json!({"type": "message", "id": format!("msg_scripted_{n}"), "status": "completed",
            "role": "assistant", "content": [{"type": "output_text", "text": act.text(), "annotations": []}]}),
    };
    responses_events(req, act, tokens, n, item)
}

/// The answer holding one output item, streamed or not as asked.
pub(super) fn responses_events(
    req: &Value,
    act: &Act,
    tokens: usize,
    n: usize,
    item: Value,
) -> Vec<u8> {
    let model = req["model"].as_str().unwrap_or("scripted").to_owned();
    let usage = json!({"input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens + 40});
    let reasoning = act.thinks().then(|| {
        json!({"type": "reasoning", "id": format!("rs_scripted_{n}"),
            "summary": [{"type": "summary_text", "text": act.thought()}],
            "encrypted_content": format!("ZW5jcnlwdGVkLXNjcmlwdGVk{n}")})
    });
    let output: Vec<Value> = reasoning.iter().cloned().chain([item.clone()]).collect();
    let at = output.len() - 1;
    let response = json!({"id": format!("resp_scripted_{n}"), "object": "response",
        "created_at": 1_764_633_600, "status": "completed", "model": model,
        "output": output, "usage": usage, "parallel_tool_calls": false, "tool_choice": "auto",
        "tools": [], "error": null, "incomplete_details": null});
    if req["stream"] != json!(true) {
        return http(200, "application/json", response.to_string().as_bytes());
    }
    let mut seq = 0;
    let mut events = Vec::new();
    let mut ev = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(seq);
        seq += 1;
        events.push((kind.to_owned(), data));
    };
    let mut start = response.clone();
    start["status"] = json!("in_progress");
    start["output"] = json!([]);
    start["usage"] = Value::Null;
    ev("response.created", json!({"response": start}));
    if let Some(r) = &reasoning {
        let mut added = r.clone();
        added["summary"] = json!([]);
        ev(
            "response.output_item.added",
            json!({"output_index": 0, "item": added}),
        );
        ev(
            "response.output_item.done",
            json!({"output_index": 0, "item": r}),
        );
    }
    let mut added = item.clone();
    added["status"] = json!("in_progress");
    if added["type"] == "message" {
        added["content"] = json!([]);
    } else if added["type"] == "custom_tool_call" {
        added["input"] = json!("");
    } else {
        added["arguments"] = json!("");
    }
    ev(
        "response.output_item.added",
        json!({"output_index": at, "item": added}),
    );
    if item["type"] == "message" {
        ev(
            "response.content_part.added",
            json!({"output_index": at, "item_id": item["id"], "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}}),
        );
        ev(
            "response.output_text.delta",
            json!({"output_index": at, "item_id": item["id"], "content_index": 0,
                "delta": act.text(), "logprobs": []}),
        );
        ev(
            "response.output_text.done",
            json!({"output_index": at, "item_id": item["id"], "content_index": 0,
                "text": act.text(), "logprobs": []}),
        );
        ev(
            "response.content_part.done",
            json!({"output_index": at, "item_id": item["id"], "content_index": 0,
                "part": item["content"][0]}),
        );
    } else if item["type"] == "custom_tool_call" {
        ev(
            "response.custom_tool_call_input.delta",
            json!({"output_index": at, "item_id": item["id"], "delta": item["input"]}),
        );
        ev(
            "response.custom_tool_call_input.done",
            json!({"output_index": at, "item_id": item["id"], "input": item["input"]}),
        );
    } else {
        ev(
            "response.function_call_arguments.delta",
            json!({"output_index": at, "item_id": item["id"], "delta": item["arguments"]}),
        );
        ev(
            "response.function_call_arguments.done",
            json!({"output_index": at, "item_id": item["id"], "arguments": item["arguments"]}),
        );
    }
    ev(
        "response.output_item.done",
        json!({"output_index": at, "item": item}),
    );
    ev("response.completed", json!({"response": response}));
    sse(&events)
}
