//! The checks of what an upstream is sent, and its size as counted: for
//! the proxy tests' model, every tool call answered before the next model
//! turn, the body within the window and the temperature intact; for the
//! real agents' model, the pairing of calls and results as each API
//! requires it, and the size of what the model reads.

use serde_json::{Value, json};

use super::Api;

/// The messages of a request as (role, blocks) with blocks normalized to
/// Anthropic's shape: OpenAI tool calls become `tool_use`, tool messages
/// `tool_result`.
pub(crate) fn blocks(shape: &str, req: &Value) -> Result<Vec<(String, Vec<Value>)>, String> {
    let msgs = req["messages"].as_array().ok_or("no messages array")?;
    let mut out = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"]
            .as_str()
            .ok_or(format!("messages[{i}]: no role"))?;
        let mut b = Vec::new();
        match &m["content"] {
            Value::String(s) => b.push(json!({"type": "text", "text": s})),
            Value::Array(a) => b.extend(a.iter().cloned()),
            Value::Null => {}
            other => return Err(format!("messages[{i}]: content {other}")),
        }
        if shape == "openai" {
            if role == "tool" {
                let text = m["content"].as_str().unwrap_or("").to_owned();
                out.push((
                    "user".to_owned(),
                    vec![json!({"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": text})],
                ));
                continue;
            }
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                b.push(json!({"type": "tool_use", "id": c["id"], "name": c["function"]["name"]}));
            }
        }
        out.push((role.to_owned(), b));
    }
    Ok(out)
}

/// Every call answered by a result before the next model turn, every
/// result answering a call; the body within the window; parameters that
/// the tests send intact.
pub(crate) fn check(shape: &str, req: &Value, window: usize) -> Result<(), String> {
    let tokens = tokens(req);
    if tokens > window {
        return Err(format!("~{tokens} tokens, over the window of {window}"));
    }
    if req.get("temperature").is_some() && req["temperature"] != json!(0.25) {
        return Err(format!("temperature changed to {}", req["temperature"]));
    }
    let msgs = blocks(shape, req)?;
    let mut open: Vec<String> = Vec::new();
    for (i, (role, bs)) in msgs.iter().enumerate() {
        for b in bs {
            match b["type"].as_str() {
                Some("tool_use") => {
                    if role != "assistant" {
                        return Err(format!("messages[{i}]: a tool call from {role}"));
                    }
                    open.push(b["id"].as_str().unwrap_or("").to_owned());
                }
                Some("tool_result") => {
                    let id = b["tool_use_id"].as_str().unwrap_or("");
                    let Some(k) = open.iter().position(|o| o == id) else {
                        return Err(format!(
                            "messages[{i}]: a result for {id}, which no open call has"
                        ));
                    };
                    open.remove(k);
                }
                _ => {}
            }
        }
        if role == "assistant"
            && i > 0
            && !open.is_empty()
            && bs.iter().all(|b| b["type"] != "tool_use")
        {
            return Err(format!(
                "messages[{i}]: calls {open:?} left without results"
            ));
        }
        if role == "user" && bs.iter().any(|b| b["type"] == "text") && !open.is_empty() {
            return Err(format!(
                "messages[{i}]: calls {open:?} left without results"
            ));
        }
    }
    if !open.is_empty() {
        return Err(format!("calls {open:?} left without results at the end"));
    }
    Ok(())
}

/// Tokens as a model would count them, roughly: four characters of text a
/// token (every string in the messages, the system prompt and the tool
/// definitions), and a few per message for its role and framing.
pub(crate) fn tokens(req: &Value) -> usize {
    fn chars(v: &Value) -> usize {
        match v {
            Value::String(s) => s.len(),
            Value::Array(a) => a.iter().map(chars).sum(),
            Value::Object(o) => o.values().map(chars).sum(),
            _ => 0,
        }
    }
    let messages = req["messages"].as_array().map_or(0, Vec::len);
    (chars(&req["messages"]) + chars(&req["system"]) + req["tools"].to_string().len()) / 4
        + 4 * messages
}

/// Characters / 4 of the JSON text of what the model reads.
pub fn count(req: &Value, api: Api) -> usize {
    let fields: &[&str] = match api {
        Api::Responses => &["instructions", "tools", "input"],
        _ => &["system", "tools", "messages"],
    };
    fields
        .iter()
        .filter_map(|f| req.get(*f))
        .map(|v| v.to_string().chars().count())
        .sum::<usize>()
        / 4
}

/// Every `tool_use` answered by a `tool_result` in the next user message,
/// every result answering a call of the assistant message before it
/// (`role: "system"` messages between them skipped).
pub(crate) fn pairing_messages(req: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(msgs) = req["messages"].as_array() else {
        return vec!["no messages array".into()];
    };
    let blocks = |m: &Value, kind: &str, field: &str| -> Vec<String> {
        m["content"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|b| b["type"] == kind)
                    .map(|b| b[field].as_str().unwrap_or("?").to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut open: Vec<String> = Vec::new();
    let mut open_at = 0;
    for (i, m) in msgs.iter().enumerate() {
        match m["role"].as_str() {
            Some("assistant") => {
                if !open.is_empty() {
                    problems.push(format!(
                        "messages[{open_at}]: calls {open:?} not answered before messages[{i}]"
                    ));
                }
                open = blocks(m, "tool_use", "id");
                open_at = i;
            }
            Some("user") => {
                let results = blocks(m, "tool_result", "tool_use_id");
                for id in &results {
                    if !open.contains(id) {
                        problems.push(format!(
                            "messages[{i}]: a result for {id}, not a call of the message before"
                        ));
                    }
                }
                for id in &open {
                    if !results.contains(id) {
                        problems.push(format!(
                            "messages[{open_at}]: call {id} has no result in messages[{i}]"
                        ));
                    }
                }
                open.clear();
            }
            _ => {}
        }
    }
    if !open.is_empty() {
        problems.push(format!(
            "messages[{open_at}]: calls {open:?} left without results at the end"
        ));
    }
    problems
}

/// Every function call (or custom tool call) of the input has exactly one
/// output after it, and every output a call before it.
pub(crate) fn pairing_responses(req: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(items) = req["input"].as_array() else {
        return Vec::new();
    };
    let mut open: Vec<(usize, String)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let id = item["call_id"].as_str().unwrap_or("?").to_owned();
        match item["type"].as_str() {
            Some("function_call" | "custom_tool_call" | "local_shell_call") => {
                open.push((i, id));
            }
            Some(
                "function_call_output" | "custom_tool_call_output" | "local_shell_call_output",
            ) => match open.iter().position(|(_, o)| *o == id) {
                Some(k) => {
                    open.remove(k);
                }
                None => problems.push(format!(
                    "input[{i}]: an output for {id}, which no call before it has"
                )),
            },
            _ => {}
        }
    }
    for (i, id) in open {
        problems.push(format!("input[{i}]: call {id} has no output"));
    }
    problems
}
