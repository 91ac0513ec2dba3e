//! A fake provider on 127.0.0.1 that implements the providers' own
//! context management as they document it (issue 29), for the proxy's
//! pass-through tests: Anthropic's `compact_20260112` edit (a
//! `compaction` block first in the answer, streamed with
//! `compaction_delta`) and its applied edits, and its on-demand
//! `compaction: {"type": "summarize"}`; OpenAI Responses'
//! `context_management` compaction (an encrypted `compaction` item first
//! in the output) and `POST /v1/responses/compact`. It compacts whenever
//! asked and the request holds at least three messages after its last
//! compaction (a threshold the test controls by what it sends), and
//! checks that what it gets holds only blocks and items it knows. Every
//! request is kept.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use ctxfold_testkit::upstream::{Seen, read};

/// The fake: its base URL, what it saw, what it found wrong.
#[derive(Clone)]
pub struct Provider {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Every request, in order of arrival.
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Problems found in requests (each answered 400).
    pub problems: Arc<Mutex<Vec<String>>>,
}

impl Provider {
    /// Start it.
    pub fn start() -> Provider {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = Provider {
            base: format!("http://{}", listener.local_addr().unwrap()),
            seen: Arc::default(),
            problems: Arc::default(),
        };
        let q = p.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let q = q.clone();
                std::thread::spawn(move || q.serve(stream));
            }
        });
        p
    }

    /// Requests seen so far.
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Problems found so far.
    pub fn problems(&self) -> Vec<String> {
        self.problems.lock().unwrap().clone()
    }

    fn serve(&self, mut out: TcpStream) {
        let Some(seen) = read(&out) else { return };
        let n = {
            let mut s = self.seen.lock().unwrap();
            s.push(seen.clone());
            s.len()
        };
        let req = seen.json();
        let answer = match seen.path.as_str() {
            "/v1/messages" => messages(n, &req),
            "/v1/responses" => responses(n, &req),
            "/v1/responses/compact" => compact(n, &req),
            p => Err(format!("no such path {p}")),
        };
        let (status, body) = match answer {
            Ok(a) => ("200 OK", a),
            Err(problem) => {
                self.problems
                    .lock()
                    .unwrap()
                    .push(format!("request {n}: {problem}"));
                (
                    "400 Bad Request",
                    json!({"type": "error", "error": {"type": "invalid_request_error", "message": problem}}),
                )
            }
        };
        if req["stream"] == json!(true) && status == "200 OK" {
            let events = if seen.path == "/v1/messages" {
                messages_stream(&body)
            } else {
                responses_stream(&body)
            };
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{}",
                events.concat()
            );
            return;
        }
        let text = body.to_string();
        let _ = write!(
            out,
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
            text.len()
        );
    }
}

/// The messages after the last compaction block (what the provider
/// reads), each message's blocks checked.
fn after_compaction(msgs: &[Value]) -> Result<usize, String> {
    let mut after = 0;
    for (i, m) in msgs.iter().enumerate() {
        after += 1;
        let Value::Array(blocks) = &m["content"] else {
            continue;
        };
        for b in blocks {
            match b["type"].as_str() {
                Some("text" | "tool_use" | "tool_result" | "thinking") => {}
                Some("compaction") => after = 0,
                t => return Err(format!("messages[{i}]: a block of type {t:?}")),
            }
        }
    }
    Ok(after)
}

fn messages(n: usize, req: &Value) -> Result<Value, String> {
    let msgs = req["messages"].as_array().ok_or("no messages")?;
    let after = after_compaction(msgs)?;
    let edits = req["context_management"]["edits"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let asks = |t: &str| edits.iter().any(|e| e["type"] == t);
    if req["compaction"]["type"] == "summarize" {
        // On demand: the summary alone, signed, and nothing sampled.
        return Ok(
            json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
            "model": req["model"], "content": [{"type": "compaction", "signature": format!("sig-{n}"),
            "content": format!("Summary {n}: the user asked for {after} things.")}],
            "stop_reason": "compaction", "stop_sequence": null,
            "usage": {"input_tokens": 100, "output_tokens": 20}}),
        );
    }
    let mut content = Vec::new();
    if asks("compact_20260112") && after >= 3 {
        content.push(json!({"type": "compaction",
            "content": format!("Summary {n}: the user asked for {after} things; all done.")}));
    }
    content.push(json!({"type": "text", "text": format!("answer {n}")}));
    let mut a = json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
        "model": req["model"], "content": content, "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": 5}});
    if asks("clear_thinking_20251015") {
        a["context_management"] = json!({"applied_edits": [{"type": "clear_thinking_20251015",
            "cleared_thinking_turns": 0, "cleared_input_tokens": 0}]});
    }
    Ok(a)
}

fn messages_stream(a: &Value) -> Vec<String> {
    let ev = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut start = a.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let cm = start.as_object_mut().unwrap().remove("context_management");
    let mut out = vec![ev(
        "message_start",
        json!({"type": "message_start", "message": start}),
    )];
    for (i, b) in a["content"].as_array().unwrap().iter().enumerate() {
        let (first, delta) = if b["type"] == "compaction" {
            (
                json!({"type": "compaction", "content": null}),
                json!({"type": "compaction_delta", "content": b["content"]}),
            )
        } else {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": b["text"]}),
            )
        };
        out.push(ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": i, "content_block": first}),
        ));
        out.push(ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": i, "delta": delta}),
        ));
        out.push(ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        ));
    }
    let mut delta = json!({"type": "message_delta", "delta": {"stop_reason": "end_turn",
        "stop_sequence": null}, "usage": {"output_tokens": 5}});
    if let Some(cm) = cm {
        delta["context_management"] = cm;
    }
    out.push(ev("message_delta", delta));
    out.push(ev("message_stop", json!({"type": "message_stop"})));
    out
}

/// The input items after the last compaction item, checked.
fn items_after_compaction(input: &Value) -> Result<usize, String> {
    let Value::Array(items) = input else {
        return Ok(1);
    };
    let mut after = 0;
    for (i, item) in items.iter().enumerate() {
        after += 1;
        match item["type"].as_str() {
            Some("message") | None => {}
            Some("compaction") => {
                if !item["encrypted_content"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("ENC:"))
                {
                    return Err(format!(
                        "input[{i}]: a compaction item not of this provider"
                    ));
                }
                after = 0;
            }
            t => return Err(format!("input[{i}]: an item of type {t:?}")),
        }
    }
    Ok(after)
}

fn compaction_item(n: usize) -> Value {
    json!({"type": "compaction", "id": format!("cmp_{n}"), "encrypted_content": format!("ENC:{n}:opaque")})
}

fn responses(n: usize, req: &Value) -> Result<Value, String> {
    let after = items_after_compaction(&req["input"])?;
    let asks = req["context_management"]
        .as_array()
        .is_some_and(|a| a.iter().any(|e| e["type"] == "compaction"));
    let mut output = Vec::new();
    if asks && after >= 3 {
        output.push(compaction_item(n));
    }
    output.push(json!({"type": "message", "id": format!("msg_{n}"), "status": "completed",
        "role": "assistant", "content": [{"type": "output_text", "text": format!("answer {n}"), "annotations": []}]}));
    Ok(
        json!({"id": format!("resp_{n}"), "object": "response", "created_at": 1_700_000_000,
        "status": "completed", "model": req["model"], "output": output, "parallel_tool_calls": true,
        "tool_choice": "auto", "tools": [],
        "usage": {"input_tokens": 100, "output_tokens": 5, "total_tokens": 105,
            "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}),
    )
}

fn responses_stream(r: &Value) -> Vec<String> {
    let ev = |seq: usize, kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(seq);
        format!("event: {kind}\ndata: {data}\n\n")
    };
    let mut start = r.clone();
    start["status"] = json!("in_progress");
    start["output"] = json!([]);
    let mut out = vec![ev(0, "response.created", json!({"response": start}))];
    for (i, item) in r["output"].as_array().unwrap().iter().enumerate() {
        out.push(ev(
            out.len(),
            "response.output_item.added",
            json!({"output_index": i, "item": item}),
        ));
        out.push(ev(
            out.len(),
            "response.output_item.done",
            json!({"output_index": i, "item": item}),
        ));
    }
    out.push(ev(out.len(), "response.completed", json!({"response": r})));
    out
}

/// `POST /v1/responses/compact`: the input's user messages, then one
/// compaction item.
fn compact(n: usize, req: &Value) -> Result<Value, String> {
    items_after_compaction(&req["input"])?;
    let mut output: Vec<Value> = (req["input"].as_array().into_iter().flatten())
        .filter(|i| i["role"] == "user")
        .cloned()
        .collect();
    output.push(compaction_item(n));
    Ok(
        json!({"id": format!("cmpresp_{n}"), "object": "response.compaction",
        "created_at": 1_700_000_000, "output": output,
        "usage": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}}),
    )
}
