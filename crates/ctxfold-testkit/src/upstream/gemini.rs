//! Google's Gemini API (`/v1beta/models/MODEL:generateContent`,
//! `…:streamGenerateContent`) for the proxy tests' model: a request read
//! as the Anthropic-shaped messages it stands for, and the answer, as
//! Gemini gives it (function calls without ids), streamed or whole.

use serde_json::{Value, json};

use super::model::Act;

/// The model and whether it streams, of a Gemini API path
/// (`/v1beta/models/MODEL:generateContent`, `…:streamGenerateContent?alt=sse`;
/// `/v1/` as well).
pub(crate) fn gemini_call(path: &str) -> Option<(String, bool)> {
    let rest =
        (path.strip_prefix("/v1beta/models/")).or_else(|| path.strip_prefix("/v1/models/"))?;
    let rest = rest.split('?').next()?;
    let (model, action) = rest.split_once(':')?;
    match action {
        "generateContent" => Some((model.to_owned(), false)),
        "streamGenerateContent" => Some((model.to_owned(), true)),
        _ => None,
    }
}

/// A Gemini request as the Anthropic-shaped messages it stands for: a
/// function call without an id gets one by its place, and a response
/// without one answers the earliest open call of its name (as Gemini
/// pairs them).
pub(crate) fn gemini_as_messages(req: &Value, model: &str, stream: bool) -> Value {
    let mut messages = Vec::new();
    let mut open: Vec<(String, String)> = Vec::new();
    let mut calls = 0;
    for c in req["contents"].as_array().into_iter().flatten() {
        let role = if c["role"] == "model" {
            "assistant"
        } else {
            "user"
        };
        let mut blocks = Vec::new();
        for p in c["parts"].as_array().into_iter().flatten() {
            if let Some(t) = p["text"].as_str() {
                if p["thought"] != json!(true) {
                    blocks.push(json!({"type": "text", "text": t}));
                }
            } else if let Some(f) = p.get("functionCall") {
                let id = f["id"]
                    .as_str()
                    .map_or_else(|| format!("g{calls}"), str::to_owned);
                calls += 1;
                open.push((f["name"].as_str().unwrap_or("").to_owned(), id.clone()));
                blocks.push(
                    json!({"type": "tool_use", "id": id, "name": f["name"], "input": f["args"]}),
                );
            } else if let Some(r) = p.get("functionResponse") {
                let name = r["name"].as_str().unwrap_or("");
                let id = match r["id"].as_str() {
                    Some(id) => id.to_owned(),
                    None => match open.iter().position(|(n, _)| n == name) {
                        Some(i) => open.remove(i).1,
                        None => format!("unanswered-{name}"),
                    },
                };
                blocks.push(json!({"type": "tool_result", "tool_use_id": id,
                    "content": r["response"].to_string()}));
            }
        }
        messages.push(json!({"role": role, "content": blocks}));
    }
    let system: String = req["systemInstruction"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect();
    let mut out = json!({"model": model, "messages": messages, "system": system,
        "tools": req["tools"], "stream": stream});
    if let Some(t) = req["generationConfig"].get("temperature") {
        out["temperature"] = t.clone();
    }
    out
}

/// A Gemini answer as the chunks of its stream: a text in two pieces, or
/// a function call without an id; the last chunk says why it finished and
/// what it counted.
pub(crate) fn gemini_answer(act: &Act) -> Vec<Value> {
    let usage = json!({"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15});
    let chunk = |parts: Value, last: bool| {
        let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
        let mut c = json!({"modelVersion": "gemini-fake-001", "responseId": "r1"});
        if last {
            candidate["finishReason"] = json!("STOP");
            c["usageMetadata"] = usage.clone();
        }
        c["candidates"] = json!([candidate]);
        c
    };
    match act {
        Act::Tool { path, .. } => vec![chunk(
            json!([{"functionCall": {"name": "read_file", "args": {"path": path}}}]),
            true,
        )],
        Act::Text(t) => {
            let half = t
                .char_indices()
                .nth(t.chars().count() / 2)
                .map_or(0, |(i, _)| i);
            vec![
                chunk(json!([{"text": &t[..half]}]), false),
                chunk(json!([{"text": &t[half..]}]), true),
            ]
        }
    }
}

/// The chunks of a Gemini answer as one whole answer (their parts in one
/// content, as the API answers a call that does not stream).
pub(crate) fn gemini_whole(chunks: &[Value]) -> Value {
    let mut whole = chunks.last().cloned().unwrap_or(Value::Null);
    let mut text = String::new();
    let mut parts = Vec::new();
    for c in chunks {
        for p in c["candidates"][0]["content"]["parts"]
            .as_array()
            .into_iter()
            .flatten()
        {
            match p["text"].as_str() {
                Some(t) => text.push_str(t),
                None => parts.push(p.clone()),
            }
        }
    }
    if !text.is_empty() {
        parts.insert(0, json!({"text": text}));
    }
    whole["candidates"][0]["content"]["parts"] = json!(parts);
    whole
}
