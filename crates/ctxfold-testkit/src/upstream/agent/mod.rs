//! The real agents' model ([`super::Upstream::agents`]), for Claude Code
//! and Codex run through the proxy: Anthropic `POST /v1/messages` and
//! OpenAI `POST /v1/responses`, streamed (SSE) or not as asked. It plays
//! a model that drives the agent's own shell tool (found in the request's
//! `tools`: Claude Code's `Bash`, Codex's `exec_command` or `shell`)
//! through a loop of steps, each printing about 28,000 characters, then
//! answers with a text holding [`FINAL`].
//!
//! The task is named in the user's words: `ctxfold-task=NAME
//! ctxfold-steps=N`. Every step's command prints `ctxfold-step NAME K/N`
//! first, so the steps done are read from the request itself (the newest
//! marker of the newest task), however much of the history a proxy folded.
//!
//! A task whose name starts with `log` runs, at each step, the log
//! generator [`LOG_SCRIPT`] (the test writes it into the agent's working
//! folder with [`write_log_script`]): about 29 KB of a service's log with
//! one ERROR line naming the step, over 30 KB every tenth step from the
//! fifth (enough for Claude Code to save it to a file and show a preview).
//! A task whose name starts with `think` thinks before each step; one
//! whose name starts with `recall` calls the recall tool of an MCP server
//! the agent registered once its steps are done.
//!
//! Every request is counted as characters / 4 of the JSON text of
//! `system`, `tools` and `messages` (Responses: `instructions`, `tools`,
//! `input`), refused with the provider's own context-length error when
//! over the window, checked for tool pairing, and recorded whole, with
//! what it was answered, for the test. Anything else an agent asks for
//! (`count_tokens`, `HEAD /`, model lists) gets a sensible answer and is
//! recorded too. Connections are kept open for the next request unless
//! the client closes them.

mod answers;
mod shell;

use serde_json::{Value, json};

use super::checks::{count, pairing_messages, pairing_responses};
use super::http::Answer;
use super::{Api, Seen, Shared};
use answers::{anthropic_reply, responses_reply};
pub use shell::{
    LOG_SCRIPT, Shell, code_mode_source, find_shell, log_error_line, log_output, step_command,
    write_log_script,
};

/// The text every final answer holds.
pub const FINAL: &str = "FINAL ANSWER";

/// Lines each step prints: about 28,000 characters (Claude Code cuts Bash
/// output at 30,000).
pub const STEP_LINES: usize = 400;

/// The answer to `r`, which is kept with what it was answered; the
/// connection stays open unless the client asked to close it.
pub(crate) fn answer(shared: &Shared, mut r: Seen, window: Option<usize>) -> Answer {
    let close = r
        .headers
        .iter()
        .any(|(k, v)| k == "connection" && v.eq_ignore_ascii_case("close"));
    let reply = respond(&mut r, window);
    shared.record(r);
    Answer::bytes(reply).keep_alive(!close)
}

/// The bytes answering `r`, with what it was noted in it.
fn respond(r: &mut Seen, window: Option<usize>) -> Vec<u8> {
    let bare = r.path.split('?').next().unwrap_or("").to_owned();
    let req = r.json_or_null();
    match (r.method.as_str(), bare.as_str()) {
        ("POST", "/v1/messages") => {
            r.api = Api::Messages;
            let t = count(&req, Api::Messages);
            r.tokens = Some(t);
            r.pairing = pairing_messages(&req);
            match window {
                Some(w) if t > w => {
                    r.rejected = true;
                    r.answer = "overflow".into();
                    let e = json!({"type": "error", "error": {"type": "invalid_request_error",
                        "message": format!("prompt is too long: {t} tokens > {w} maximum")}});
                    http(400, "application/json", e.to_string().as_bytes())
                }
                _ => {
                    let act = next_act(&req, Api::Messages);
                    r.answer = act.name();
                    anthropic_reply(&req, &act, t, next_id())
                }
            }
        }
        ("POST", "/v1/responses") => {
            r.api = Api::Responses;
            let t = count(&req, Api::Responses);
            r.tokens = Some(t);
            r.pairing = pairing_responses(&req);
            match window {
                Some(w) if t > w => {
                    r.rejected = true;
                    r.answer = "overflow".into();
                    let e = json!({"error": {"message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                        "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}});
                    http(400, "application/json", e.to_string().as_bytes())
                }
                _ => {
                    let act = next_act(&req, Api::Responses);
                    r.answer = act.name();
                    responses_reply(&req, &act, t, next_id())
                }
            }
        }
        ("POST", "/v1/messages/count_tokens") => {
            r.answer = "count".into();
            let body = json!({"input_tokens": count(&req, Api::Messages)}).to_string();
            http(200, "application/json", body.as_bytes())
        }
        ("HEAD", _) => {
            r.answer = "head".into();
            http(200, "text/plain", b"")
        }
        ("GET", p) if p.ends_with("/models") => {
            r.answer = "models".into();
            // Both lists: Anthropic's and OpenAI's shape, and Codex's.
            let body = json!({"object": "list", "has_more": false,
                "data": [{"id": "scripted-1", "object": "model", "type": "model",
                    "display_name": "scripted", "created_at": "2026-01-01T00:00:00Z"}],
                "models": []})
            .to_string();
            http(200, "application/json", body.as_bytes())
        }
        ("GET", "/" | "") => {
            r.answer = "root".into();
            http(200, "text/plain", b"ok")
        }
        _ => {
            r.answer = "not found".into();
            let e = json!({"type": "error", "error": {"type": "not_found_error",
                "message": format!("the scripted upstream does not serve {} {}", r.method, r.path)}});
            http(404, "application/json", e.to_string().as_bytes())
        }
    }
}

/// A number for the ids of an answer, unique in the process.
fn next_id() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn http(status: u16, ctype: &str, body: &[u8]) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Status",
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nrequest-id: req_scripted\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn sse(events: &[(String, Value)]) -> Vec<u8> {
    let mut body = String::new();
    for (name, data) in events {
        body.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    http(200, "text/event-stream", body.as_bytes())
}

/// What the model does next.
#[derive(Debug)]
enum Act {
    /// Run step `k` of `n` of task `task` with the shell tool.
    Step {
        tool: Shell,
        task: String,
        k: usize,
        n: usize,
    },
    /// Call the recall tool of an MCP server the agent registered (found
    /// in `tools` by its name's end) with a handle read from a placeholder
    /// in the request: what a task named `recall…` does once its steps are
    /// done.
    Recall {
        tool: String,
        /// The namespace that holds it (Codex lists an MCP server's tools
        /// in a `namespace` tool named `mcp__SERVER`).
        namespace: Option<String>,
        handle: String,
    },
    /// The final answer.
    Final(String),
    /// A summary, for an agent compacting its own history.
    Summary(String),
}

impl Act {
    fn name(&self) -> String {
        match self {
            Act::Step { task, k, n, .. } => format!("tool {task} {k}/{n}"),
            Act::Recall { handle, .. } => format!("recall {handle}"),
            Act::Final(_) => "final".into(),
            Act::Summary(_) => "summary".into(),
        }
    }

    /// Whether the model thinks before it acts: a step of a task whose
    /// name starts with `think` (Anthropic: a signed `thinking` block;
    /// Responses: a `reasoning` item with `encrypted_content`).
    fn thinks(&self) -> bool {
        matches!(self, Act::Step { task, .. } if task.starts_with("think"))
    }

    fn thought(&self) -> String {
        match self {
            Act::Step { task, k, n, .. } => {
                format!("The tool loop wants step {k} of {n} of {task}; run it.")
            }
            _ => String::new(),
        }
    }

    fn text(&self) -> String {
        match self {
            Act::Final(t) | Act::Summary(t) => t.clone(),
            Act::Step { task, k, n, .. } => format!("Running step {k} of {n} of {task}."),
            Act::Recall { handle, .. } => format!("Recalling {handle}."),
        }
    }
}

/// What the model does next, read from the request: the newest task the
/// user named (`ctxfold-task=NAME ctxfold-steps=N`, or, when that was
/// folded away, the newest step marker's), and the newest step marker of
/// that task.
fn next_act(req: &Value, api: Api) -> Act {
    let history = match api {
        Api::Responses => req["input"].to_string(),
        _ => req["messages"].to_string(),
    };
    // An agent compacting its own history asks for a summary in its last
    // user message.
    if asks_summary(req, api) {
        let (task, done, n) = progress(&history);
        return Act::Summary(format!(
            "<analysis>Build steps, run one at a time.</analysis>\n<summary>The user asked for the build steps of ctxfold-task={task} ctxfold-steps={n}; done so far: ctxfold-step {task} {done}/{n}.</summary>"
        ));
    }
    let (task, done, n) = progress(&history);
    if task.starts_with("recall")
        && done >= n
        && let Some(act) = recall_act(req, &history)
    {
        return act;
    }
    match find_shell(req, api) {
        Some(tool) if done < n => Act::Step {
            tool,
            task,
            k: done + 1,
            n,
        },
        _ => Act::Final(format!(
            "{FINAL}: task {task}, {done} of {n} steps done, the build log read."
        )),
    }
}

/// The words each kind of fold puts before its handle, in the order a
/// model looking for a tool's output would take them: a stripped result,
/// a clipped one, an excerpt, a summary's lead.
pub const PLACEHOLDER_HANDLES: [&str; 4] = [
    "was removed by compaction (recall ",
    "left out here by compaction to fit the context window; recall ",
    "characters left out; recall ",
    "compacted; recall ",
];

/// A recall tool among the request's tools (its name ends with `recall`,
/// as an MCP server's tool is named: `mcp__ctxfold__recall`), not called
/// yet, and the handle of the oldest fold in the history of the first
/// kind [`PLACEHOLDER_HANDLES`] finds.
fn recall_act(req: &Value, history: &str) -> Option<Act> {
    let tools = req["tools"].as_array()?;
    let (tool, namespace) = tools.iter().find_map(|t| {
        let name = t["name"].as_str()?;
        if t["type"] == "namespace" {
            let inner = t["tools"]
                .as_array()?
                .iter()
                .filter_map(|i| i["name"].as_str())
                .find(|n| n.ends_with("recall"))?;
            return Some((inner.to_owned(), Some(name.to_owned())));
        }
        name.ends_with("recall").then(|| (name.to_owned(), None))
    })?;
    // A call of it in the history: both APIs write the tool's name so.
    if history.contains(&format!("\"name\":\"{tool}\"")) {
        return None;
    }
    let at = PLACEHOLDER_HANDLES
        .iter()
        .find_map(|words| Some(history.find(words)? + words.len()))?;
    let handle: String = history[at..]
        .chars()
        .take_while(|c| !matches!(c, ')' | ' ' | ']'))
        .collect();
    Some(Act::Recall {
        tool,
        namespace,
        handle,
    })
}

/// (task, steps done, steps asked) from the history's text.
fn progress(history: &str) -> (String, usize, usize) {
    // (position, task, k or None for the request, n)
    let mut events: Vec<(usize, String, Option<usize>, usize)> = Vec::new();
    for (pos, _) in history.match_indices("ctxfold-task=") {
        let rest = &history[pos + "ctxfold-task=".len()..];
        let task: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        let n = rest
            .find("ctxfold-steps=")
            .map(|i| digits(&rest[i + "ctxfold-steps=".len()..]))
            .unwrap_or(0);
        if !task.is_empty() {
            events.push((pos, task, None, n));
        }
    }
    for (pos, _) in history.match_indices("ctxfold-step ") {
        let rest = &history[pos + "ctxfold-step ".len()..];
        let task: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        let rest = &rest[task.len()..];
        let Some(rest) = rest.strip_prefix(' ') else {
            continue;
        };
        let k = digits(rest);
        let Some(slash) = rest.find('/') else {
            continue;
        };
        let n = digits(&rest[slash + 1..]);
        events.push((pos, task, Some(k), n));
    }
    events.sort_by_key(|e| e.0);
    let Some((_, task, _, n)) = events.last().cloned() else {
        return ("none".into(), 0, 0);
    };
    let n = events
        .iter()
        .rev()
        .find(|e| e.1 == task && e.2.is_none())
        .map_or(n, |e| e.3);
    let done = events
        .iter()
        .filter(|e| e.1 == task)
        .filter_map(|e| e.2)
        .max()
        .unwrap_or(0);
    (task, done, n)
}

fn digits(s: &str) -> usize {
    s.chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or(0)
}

fn asks_summary(req: &Value, api: Api) -> bool {
    let list = match api {
        Api::Responses => &req["input"],
        _ => &req["messages"],
    };
    let Some(last) = list.as_array().and_then(|m| m.last()) else {
        return false;
    };
    if last["role"] != "user" {
        return false;
    }
    let text = match &last["content"] {
        Value::String(s) => s.clone(),
        // Claude Code puts its request beside the last tool result.
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text" || b["type"] == "input_text")
            .filter_map(|b| b["text"].as_str())
            .collect(),
        _ => String::new(),
    };
    let t = text.to_ascii_lowercase();
    !t.contains("ctxfold-task=") && t.contains("summary")
}
