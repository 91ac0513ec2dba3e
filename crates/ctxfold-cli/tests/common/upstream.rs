//! A fake model API on 127.0.0.1 for the proxy tests: it speaks OpenAI chat
//! completions, Anthropic messages, OpenAI responses and Google's Gemini
//! API (without call ids, as Gemini answers), streamed or not as asked,
//! plays a
//! deterministic agent (a user message saying `steps=N` gets N tool calls,
//! one per request, then a text answer), and checks every request it gets:
//! tool calls and results pair up, the body fits the window, and no request
//! names anything but the fake itself. Every request is kept for the test
//! to compare.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// A request the fake received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `POST`, `GET`, …
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body's bytes.
    pub body: Vec<u8>,
}

impl Seen {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The fake: its base URL, what it saw, what it found wrong.
#[derive(Clone)]
pub struct Upstream {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Every request, in order of arrival.
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Problems found in requests (each answered 400).
    pub problems: Arc<Mutex<Vec<String>>>,
    /// Name tool calls by the step they are (`call_step_K`), so the same
    /// request always gets the same answer; else by the request's number
    /// (`call_N`), unique across everything the fake answers.
    same_answer: bool,
}

impl Upstream {
    /// Start a fake that refuses requests over `window` tokens (about four
    /// bytes of body a token).
    pub fn start(window: usize) -> Upstream {
        Self::start_with(window, false)
    }

    /// [`Upstream::start`], answering the same request the same way every
    /// time (as a retried request would be, were the model deterministic).
    pub fn start_deterministic(window: usize) -> Upstream {
        Self::start_with(window, true)
    }

    fn start_with(window: usize, same_answer: bool) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let up = Upstream {
            base,
            seen: Arc::default(),
            problems: Arc::default(),
            same_answer,
        };
        let u = up.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let u = u.clone();
                std::thread::spawn(move || u.serve(stream, window));
            }
        });
        up
    }

    /// Requests seen so far.
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Problems found so far.
    pub fn problems(&self) -> Vec<String> {
        self.problems.lock().unwrap().clone()
    }

    fn serve(&self, stream: TcpStream, window: usize) {
        let Some(seen) = read(&stream) else { return };
        let n = {
            let mut s = self.seen.lock().unwrap();
            s.push(seen.clone());
            s.len()
        };
        let mut out = stream;
        let reply = |out: &mut TcpStream, status: &str, ctype: &str, body: &[u8]| {
            let _ = write!(
                out,
                "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nx-upstream: fake\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = out.write_all(body);
        };
        if seen.method == "GET" && seen.path.starts_with("/v1/models") {
            // Bytes a pass-through must hand back exactly, odd spacing too.
            let body = b"{\"object\": \"list\",  \"data\": [{\"id\": \"fake-1\"}]}\n";
            reply(&mut out, "200 OK", "application/json", body);
            return;
        }
        if seen.method == "GET" {
            // Any other listing (stored completions, files): names its path.
            let body = json!({"object": "list", "path": seen.path}).to_string();
            reply(&mut out, "200 OK", "application/json", body.as_bytes());
            return;
        }
        if seen.path == "/v1/messages/count_tokens" {
            let body = json!({"input_tokens": tokens(&seen.json())}).to_string();
            reply(&mut out, "200 OK", "application/json", body.as_bytes());
            return;
        }
        let gemini = gemini_call(&seen.path);
        let shape = match seen.path.as_str() {
            "/v1/chat/completions" => "openai",
            "/v1/messages" => "anthropic",
            "/v1/responses" => "responses",
            _ if gemini.is_some() => "gemini",
            p => {
                reply(&mut out, "404 Not Found", "text/plain", p.as_bytes());
                return;
            }
        };
        let raw = seen.json();
        // A Responses request is checked as the messages it stands for; a
        // chained one (its history is on the server, which this fake does
        // not keep) only for its size.
        let chained = shape == "responses" && raw["previous_response_id"].is_string();
        let (shape, req) = match (shape, &gemini) {
            ("responses", _) => ("anthropic", responses_as_messages(&raw)),
            (_, Some((model, stream))) => ("anthropic", gemini_as_messages(&raw, model, *stream)),
            _ => (shape, raw.clone()),
        };
        let checked = if chained {
            let t = tokens(&req);
            if t > window {
                Err(format!("~{t} tokens, over the window of {window}"))
            } else {
                Ok(())
            }
        } else {
            check(shape, &req, window)
        };
        if let Err(problem) = checked {
            self.problems
                .lock()
                .unwrap()
                .push(format!("request {n}: {problem}"));
            // Over the window: the error each API gives for it.
            let e = match (problem.contains("over the window"), seen.path.as_str()) {
                (true, _) if gemini.is_some() => {
                    json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                    "message": format!("The input token count exceeds the maximum number of tokens allowed ({problem})")}})
                }
                (true, "/v1/messages") => json!({"type": "error", "error": {
                    "type": "invalid_request_error", "message": format!("prompt is too long: {problem}")}}),
                (true, _) => {
                    json!({"error": {"message": format!("This model's maximum context length is {window} tokens ({problem})"),
                    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
                }
                _ => {
                    json!({"type": "error", "error": {"message": problem, "type": "invalid_request_error"}})
                }
            };
            reply(
                &mut out,
                "400 Bad Request",
                "application/json",
                e.to_string().as_bytes(),
            );
            return;
        }
        let (steps, done) = progress(shape, &req);
        let act = if req["model"]
            .as_str()
            .is_some_and(|m| m.starts_with("chatty"))
        {
            // A model named `chatty…` answers every request in a few
            // hundred characters, the same for the same request.
            Act::Text(chatty(&last_user_text(shape, &req)))
        } else if done < steps {
            Act::Tool {
                id: if self.same_answer {
                    format!("call_step_{done}")
                } else {
                    format!("call_{n}")
                },
                path: format!("src/m{done}.rs"),
            }
        } else {
            Act::Text(format!("done: {done} steps"))
        };
        let model = req["model"].as_str().unwrap_or("fake").to_owned();
        if gemini.is_some() {
            let chunks = gemini_answer(&act);
            if req["stream"] == json!(true) {
                let _ = write!(
                    out,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
                );
                for c in &chunks {
                    let _ = write!(out, "data: {c}\r\n\r\n");
                }
            } else {
                let whole = gemini_whole(&chunks);
                reply(
                    &mut out,
                    "200 OK",
                    "application/json",
                    whole.to_string().as_bytes(),
                );
            }
            return;
        }
        if seen.path == "/v1/responses" {
            let response = responses_answer(n, &model, &act);
            if model.starts_with("unframed") {
                let events = responses_stream(&response);
                unframed(
                    &mut out,
                    req["stream"] == json!(true),
                    &events,
                    &response,
                    &act,
                );
                return;
            }
            if req["stream"] == json!(true) {
                let _ = write!(
                    out,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
                );
                for e in responses_stream(&response) {
                    let _ = out.write_all(e.as_bytes());
                }
            } else {
                reply(
                    &mut out,
                    "200 OK",
                    "application/json",
                    response.to_string().as_bytes(),
                );
            }
            return;
        }
        if req["stream"] == json!(true) {
            let events = match shape {
                "openai" => openai_stream(&model, &act),
                _ => anthropic_stream(&model, &act),
            };
            // A model named `stall…` sends the answer's first text, then
            // falls silent (longer than the tests' `timeout_secs = 1`).
            if model.starts_with("stall") {
                let _ = write!(
                    out,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
                );
                let first_text = if shape == "openai" { 2 } else { 3 };
                for e in &events[..first_text] {
                    let _ = out.write_all(e.as_bytes());
                }
                let _ = out.flush();
                std::thread::sleep(std::time::Duration::from_secs(3));
                return;
            }
            if model.starts_with("unframed") {
                let body = match shape {
                    "openai" => openai_answer(&model, &act),
                    _ => anthropic_answer(&model, &act),
                };
                unframed(&mut out, true, &events, &body, &act);
                return;
            }
            // A model named `cut…` breaks off: it announces the whole
            // stream's length, sends all but its last two events (the
            // answer's end) and hangs up.
            if model.starts_with("cut") {
                let all: usize = events.iter().map(String::len).sum();
                let _ = write!(
                    out,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {all}\r\nconnection: close\r\n\r\n"
                );
                for e in &events[..events.len() - 2] {
                    let _ = out.write_all(e.as_bytes());
                }
                let _ = out.flush();
                return;
            }
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
            );
            // A model named `slow…` pauses before the end of its answer,
            // for tests that kill the proxy mid-stream.
            let slow = model.starts_with("slow");
            let last = events.len() - 1;
            for (i, e) in events.iter().enumerate() {
                if slow && i == last {
                    std::thread::sleep(std::time::Duration::from_secs(3));
                }
                if out
                    .write_all(e.as_bytes())
                    .and_then(|_| out.flush())
                    .is_err()
                {
                    return;
                }
            }
        } else {
            let body = match shape {
                "openai" => openai_answer(&model, &act),
                _ => anthropic_answer(&model, &act),
            };
            if model.starts_with("unframed") {
                unframed(&mut out, false, &[], &body, &act);
                return;
            }
            reply(
                &mut out,
                "200 OK",
                "application/json",
                body.to_string().as_bytes(),
            );
        }
    }
}

/// A model named `unframed…`: an answer delimited by the connection's
/// close (no length, no chunks), cut short before its protocol's end: a
/// stream without its last events (`[DONE]` and the `finish_reason`,
/// `message_delta` and `message_stop`, `response.completed`), a JSON
/// body cut in the middle of the answer's text.
fn unframed(out: &mut TcpStream, streamed: bool, events: &[String], body: &Value, act: &Act) {
    let ctype = if streamed {
        "text/event-stream"
    } else {
        "application/json"
    };
    let _ = write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: {ctype}\r\nconnection: close\r\n\r\n"
    );
    if streamed {
        let keep = if events[0].contains("response.created") {
            events.len() - 1
        } else {
            events.len() - 2
        };
        for e in &events[..keep] {
            let _ = out.write_all(e.as_bytes());
        }
    } else {
        let text = body.to_string();
        let half = match act {
            Act::Text(t) => text
                .find(t.as_str())
                .map_or(text.len() / 2, |at| at + t.len() / 2),
            Act::Tool { .. } => text.len() / 2,
        };
        let _ = out.write_all(&text.as_bytes()[..half]);
    }
    let _ = out.flush();
}

/// The model and whether it streams, of a Gemini API path
/// (`/v1beta/models/MODEL:generateContent`, `…:streamGenerateContent?alt=sse`).
fn gemini_call(path: &str) -> Option<(String, bool)> {
    let rest = path.strip_prefix("/v1beta/models/")?;
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
fn gemini_as_messages(req: &Value, model: &str, stream: bool) -> Value {
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
fn gemini_answer(act: &Act) -> Vec<Value> {
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
fn gemini_whole(chunks: &[Value]) -> Value {
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

/// A Responses request as the Anthropic-shaped messages it stands for
/// (consecutive items of one role in one message), with its parameters.
fn responses_as_messages(req: &Value) -> Value {
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

fn responses_answer(n: usize, model: &str, act: &Act) -> Value {
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
fn responses_stream(response: &Value) -> Vec<String> {
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

enum Act {
    Tool { id: String, path: String },
    Text(String),
}

/// The text of the request's newest user message.
fn last_user_text(shape: &str, req: &Value) -> String {
    blocks(shape, req)
        .unwrap_or_default()
        .iter()
        .rev()
        .find(|(role, _)| role == "user")
        .map(|(_, bs)| bs.iter().filter_map(|b| b["text"].as_str()).collect())
        .unwrap_or_default()
}

/// A chatty answer to `asked`: 250 to 650 characters of words picked by a
/// hash of it (deterministic).
fn chatty(asked: &str) -> String {
    const WORDS: [&str; 16] = [
        "the", "parser", "keeps", "every", "line", "so", "tests", "pass", "and", "config", "moves",
        "into", "one", "module", "later", "today",
    ];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in asked.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    let len = 250 + (h % 400) as usize;
    let mut out = String::from("Answer:");
    while out.len() < len {
        h = h.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        out.push(' ');
        out.push_str(WORDS[(h >> 60) as usize]);
    }
    out.push('.');
    out
}

/// One HTTP/1.1 request read from `stream` (its body by `content-length`).
pub fn read(stream: &TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    let mut length = 0;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            let k = k.trim().to_ascii_lowercase();
            if k == "content-length" {
                length = v.trim().parse().unwrap_or(0);
            }
            headers.push((k, v.trim().to_owned()));
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        method,
        path,
        headers,
        body,
    })
}

/// The messages of a request as (role, blocks) with blocks normalized to
/// Anthropic's shape: OpenAI tool calls become `tool_use`, tool messages
/// `tool_result`.
fn blocks(shape: &str, req: &Value) -> Result<Vec<(String, Vec<Value>)>, String> {
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
fn check(shape: &str, req: &Value, window: usize) -> Result<(), String> {
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
fn tokens(req: &Value) -> usize {
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

/// (steps asked for, steps done): the steps from the last user text that
/// says `steps=N`; the steps done from the file the last tool result read
/// (`// src/mK.rs` is step K), since compaction may have folded the
/// results before it.
fn progress(shape: &str, req: &Value) -> (usize, usize) {
    let msgs = blocks(shape, req).unwrap_or_default();
    let text = |bs: &[Value]| -> String { bs.iter().filter_map(|b| b["text"].as_str()).collect() };
    let steps = msgs
        .iter()
        .rev()
        .filter(|(role, _)| role == "user")
        .find_map(|(_, bs)| {
            text(bs)
                .split_whitespace()
                .find_map(|w| w.strip_prefix("steps="))
                .and_then(|n| n.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok())
        })
        .unwrap_or(0);
    let done = match msgs.last() {
        Some((_, bs)) => bs
            .iter()
            .rev()
            .find(|b| b["type"] == "tool_result")
            .map_or(0, |b| {
                let content = match &b["content"] {
                    Value::String(s) => s.clone(),
                    other => text(other.as_array().map_or(&[][..], |a| a)),
                };
                content
                    .split("src/m")
                    .nth(1)
                    .and_then(|r| r.split('.').next())
                    .and_then(|k| k.parse::<usize>().ok())
                    .map_or(1, |k| k + 1)
            }),
        None => 0,
    };
    (steps, done)
}

fn openai_answer(model: &str, act: &Act) -> Value {
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

fn openai_stream(model: &str, act: &Act) -> Vec<String> {
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

fn anthropic_answer(model: &str, act: &Act) -> Value {
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

fn anthropic_stream(model: &str, act: &Act) -> Vec<String> {
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
