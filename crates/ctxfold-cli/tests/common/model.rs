//! A scripted model server on 127.0.0.1 for the `ctxfold query` tests: it
//! speaks OpenAI's and Anthropic's streaming shapes, plays a script of
//! answers, and checks every request it gets (every tool call has its
//! result, every result its call). Also: a workspace naming it, and a
//! pseudo-terminal to answer prompts on.

use std::collections::HashSet;
use std::io::Write;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::Scratch;

/// How many slow streams have paused half way (the Ctrl-C test waits for
/// one, rather than for a guessed delay).
pub static PAUSED: AtomicUsize = AtomicUsize::new(0);

/// What the scripted model says at each call.
#[derive(Clone)]
pub enum Say {
    /// Call a tool with these arguments.
    Tool(&'static str, Value),
    /// Answer with this text.
    Text(&'static str),
    /// Call a tool, the stream pausing two seconds half way.
    SlowTool(&'static str, Value),
}

/// A streaming model server playing `script` (then answering "done"), for
/// `kind` ("openai" or "anthropic"). Returns its base URL and the request
/// bodies it received; a request that fails the checks gets a 400 naming
/// the problem (so the test fails on it).
pub fn model(kind: &'static str, script: Vec<Say>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = match kind {
        "openai" => format!("http://{}/v1", listener.local_addr().unwrap()),
        _ => format!("http://{}", listener.local_addr().unwrap()),
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let bodies = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let Some((line, body)) = super::read_request(&stream) else {
                continue;
            };
            let mut out = stream;
            if !line.starts_with("POST") {
                let _ = write!(
                    out,
                    "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
                continue;
            }
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let n = {
                let mut b = bodies.lock().unwrap();
                b.push(request.clone());
                b.len()
            };
            if let Err(problem) = check(kind, &request) {
                let e = json!({"error": {"message": problem, "type": "invalid_request_error"}})
                    .to_string();
                let _ = write!(
                    out,
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{e}",
                    e.len()
                );
                continue;
            }
            let say = script.get(n - 1).cloned().unwrap_or(Say::Text("done"));
            let events = match kind {
                "openai" => openai_stream(n, &say),
                _ => anthropic_stream(n, &say),
            };
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            if let Say::SlowTool(..) = say {
                let cut = events.find("\n\n").unwrap() + 2;
                let _ = write!(out, "{head}{}", &events[..cut]);
                let _ = out.flush();
                PAUSED.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_secs(2));
                let _ = write!(out, "{}", &events[cut..]);
                continue;
            }
            let _ = write!(out, "{head}{events}");
        }
    });
    (base, seen)
}

/// Every tool call answered once, after it; every result after its call.
fn check(kind: &str, request: &Value) -> Result<(), String> {
    let mut open: HashSet<String> = HashSet::new();
    let mut answered: HashSet<String> = HashSet::new();
    for m in request["messages"].as_array().ok_or("no messages")? {
        match kind {
            "openai" => {
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    open.insert(c["id"].as_str().unwrap_or_default().to_owned());
                }
                if m["role"] == "tool" {
                    let id = m["tool_call_id"].as_str().unwrap_or_default().to_owned();
                    if !open.contains(&id) || !answered.insert(id.clone()) {
                        return Err(format!("tool result {id} without its call"));
                    }
                }
            }
            _ => {
                for b in m["content"].as_array().into_iter().flatten() {
                    match b["type"].as_str() {
                        Some("tool_use") => {
                            open.insert(b["id"].as_str().unwrap_or_default().to_owned());
                        }
                        Some("tool_result") => {
                            let id = b["tool_use_id"].as_str().unwrap_or_default().to_owned();
                            if !open.contains(&id) || !answered.insert(id.clone()) {
                                return Err(format!("tool result {id} without its call"));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    match open.difference(&answered).next() {
        Some(id) => Err(format!("tool call {id} without its result")),
        None => Ok(()),
    }
}

fn sse(data: &Value) -> String {
    format!("data: {data}\n\n")
}

/// The arguments text a scripted tool call streams: a JSON string is sent
/// as it is (so a script can send text that is not JSON), anything else as
/// its JSON.
fn raw(args: &Value) -> String {
    match args {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn openai_stream(n: usize, say: &Say) -> String {
    let mut s = String::new();
    match say {
        Say::Text(t) => {
            let (a, b) = t.split_at(t.len() / 2);
            for piece in [a, b] {
                s += &sse(
                    &json!({"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": piece}}]}),
                );
            }
            s += &sse(
                &json!({"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            );
        }
        Say::Tool(name, args) | Say::SlowTool(name, args) => {
            let args = raw(args);
            let (a, b) = args.split_at(args.len() / 2);
            s += &sse(
                &json!({"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": format!("call_{n}"), "type": "function", "function": {"name": name, "arguments": a}}]}}]}),
            );
            s += &sse(
                &json!({"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": b}}]}}]}),
            );
            s += &sse(
                &json!({"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            );
        }
    }
    s + "data: [DONE]\n\n"
}

fn anthropic_stream(n: usize, say: &Say) -> String {
    let ev = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut s = ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": format!("m{n}"), "type": "message", "role": "assistant", "content": [], "model": "m", "usage": {"input_tokens": 10, "output_tokens": 0}}}),
    );
    let stop = match say {
        Say::Text(t) => {
            s += &ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            );
            s += &ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}),
            );
            "end_turn"
        }
        Say::Tool(name, args) | Say::SlowTool(name, args) => {
            s += &ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": {}}}),
            );
            s += &ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": raw(args)}}),
            );
            "tool_use"
        }
    };
    s += &ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    s += &ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}),
    );
    s + &ev("message_stop", json!({"type": "message_stop"}))
}

/// A workspace whose config names the fake provider and one local tool,
/// `echo_args`, that prints the JSON arguments it gets (run unattended).
pub fn workspace(kind: &str, base: &str, extra: &str) -> Scratch {
    let s = Scratch::new();
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        format!(
            "[providers.fake]\nkind = \"{kind}\"\nbase_url = \"{base}\"\napi_key_env = \"\"\ncontext_window = 100000\nmax_retries = 0\n\n[tools.echo_args]\ncommand = [\"cat\"]\ndescription = \"Print the arguments back.\"\nrun = \"unattended\"\nparameters = {{ type = \"object\", properties = {{ path = {{ type = \"string\" }} }} }}\n{extra}"
        ),
    )
    .unwrap();
    s
}

pub fn events(s: &Scratch) -> Vec<Value> {
    s.json(&["c", "print"]).as_array().unwrap().clone()
}

/// Run `ctxfold ARGS` on a pseudo-terminal (util-linux `script`), typing
/// `keys`; returns once it exits.
pub fn on_a_terminal(
    s: &Scratch,
    args: &str,
    keys: &str,
    editor: Option<&str>,
) -> std::process::Output {
    // Temporary files (the editor's, preview files) stay in the scratch
    // folder.
    let tmp = s.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut c = std::process::Command::new("script");
    c.current_dir(s.path())
        .env("TMPDIR", &tmp)
        .env("HOME", s.path())
        .env("XDG_DATA_HOME", s.path().join("xdg-data"))
        .env("XDG_CONFIG_HOME", s.path().join("xdg-config"))
        .args(["-qec", &format!("{} {args}", super::BIN), "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(e) = editor {
        c.env("EDITOR", e).env_remove("VISUAL");
    }
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(keys.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}
