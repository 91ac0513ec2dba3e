//! A scripted model API on 127.0.0.1 for the real agents (Claude Code,
//! Codex) in tests/real_agents.rs. It speaks Anthropic `POST /v1/messages`
//! and OpenAI `POST /v1/responses`, streamed (SSE) or not as asked, and
//! plays a model that drives the agent's own shell tool (found in the
//! request's `tools`: Claude Code's `Bash`, Codex's `exec_command` or
//! `shell`) through a loop of steps, each printing about 28,000 characters,
//! then answers with a text holding [`FINAL`].
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
//!
//! Every request is counted as characters / 4 of the JSON text of `system`,
//! `tools` and `messages` (Responses: `instructions`, `tools`, `input`),
//! refused with the provider's own context-length error when over the
//! window, checked for tool pairing, and recorded whole for the test.
//! Anything else an agent asks for (`count_tokens`, `HEAD /`, model lists)
//! gets a sensible answer and is recorded too.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// The text every final answer holds.
pub const FINAL: &str = "FINAL ANSWER";

/// Lines each step prints: about 28,000 characters (Claude Code cuts Bash
/// output at 30,000).
pub const STEP_LINES: usize = 400;

/// Which API a request spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `POST /v1/messages`.
    Messages,
    /// `POST /v1/responses`.
    Responses,
    /// Anything else.
    Other,
}

/// A request the upstream received, and what it did with it.
#[derive(Debug, Clone)]
pub struct Record {
    /// Its number, from 1, in order of arrival.
    pub n: usize,
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub api: Api,
    /// Its size as counted here (model requests only).
    pub tokens: Option<usize>,
    /// Refused as over the window.
    pub rejected: bool,
    /// Tool pairing problems (empty when every call has its result).
    pub pairing: Vec<String>,
    /// What it was answered: `tool K/N`, `final`, `summary`, `count`, …
    pub answer: String,
}

impl Record {
    /// The body as JSON (Null when it is not).
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

    /// A model request (messages or responses, not `count_tokens`).
    pub fn is_model(&self) -> bool {
        self.api != Api::Other
    }
}

struct State {
    window: Option<usize>,
    records: Vec<Record>,
}

/// The scripted upstream: its base URL and everything it saw.
#[derive(Clone)]
pub struct AgentUpstream {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    state: Arc<Mutex<State>>,
}

impl AgentUpstream {
    /// Start it, refusing requests over `window` tokens (None: no limit).
    /// The listener lives in the network namespace of the calling thread.
    pub fn start(window: Option<usize>) -> AgentUpstream {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let up = AgentUpstream {
            base: format!("http://{}", listener.local_addr().unwrap()),
            state: Arc::new(Mutex::new(State {
                window,
                records: Vec::new(),
            })),
        };
        let u = up.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let u = u.clone();
                std::thread::spawn(move || u.serve(stream));
            }
        });
        up
    }

    /// Every request so far.
    pub fn records(&self) -> Vec<Record> {
        self.state.lock().unwrap().records.clone()
    }

    /// How many requests so far.
    pub fn len(&self) -> usize {
        self.state.lock().unwrap().records.len()
    }

    fn serve(&self, stream: TcpStream) {
        let mut out = match stream.try_clone() {
            Ok(o) => o,
            Err(_) => return,
        };
        let mut reader = BufReader::new(stream);
        // One request a connection is enough, but clients that keep the
        // connection open get every request answered in turn.
        while let Some((method, path, headers, body)) = read(&mut reader) {
            let close = headers
                .iter()
                .any(|(k, v)| k == "connection" && v.eq_ignore_ascii_case("close"));
            let (mut record, reply) = self.answer(method, path, headers, body);
            {
                let mut s = self.state.lock().unwrap();
                record.n = s.records.len() + 1;
                s.records.push(record);
            }
            if out.write_all(&reply).and_then(|_| out.flush()).is_err() || close {
                return;
            }
        }
    }

    fn answer(
        &self,
        method: String,
        path: String,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> (Record, Vec<u8>) {
        let window = self.state.lock().unwrap().window;
        let mut r = Record {
            n: 0,
            method,
            path,
            headers,
            body,
            api: Api::Other,
            tokens: None,
            rejected: false,
            pairing: Vec::new(),
            answer: String::new(),
        };
        let bare = r.path.split('?').next().unwrap_or("").to_owned();
        let req = r.json();
        let reply = match (r.method.as_str(), bare.as_str()) {
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
        };
        (r, reply)
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

/// One HTTP/1.1 request: method, path, headers (names lowercased), body
/// (by content-length or chunked). None at the end of the connection.
type Request = (String, String, Vec<(String, String)>, Vec<u8>);

fn read(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    let mut length = 0;
    let mut chunked = false;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            let k = k.trim().to_ascii_lowercase();
            let v = v.trim().to_owned();
            if k == "content-length" {
                length = v.parse().unwrap_or(0);
            }
            if k == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked") {
                chunked = true;
            }
            headers.push((k, v));
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else {
        body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
    }
    Some((method, path, headers, body))
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

/// The agent's shell tool, as its definition names it.
#[derive(Debug, Clone)]
pub enum Shell {
    /// Anthropic-style `{"command": "…"}` (Claude Code's `Bash`).
    Command(String),
    /// Codex's `exec_command`: `{"cmd": "…"}` (the string parameter the
    /// schema names).
    Cmd(String, String),
    /// Codex's `shell`: `{"command": ["bash", "-lc", "…"]}`.
    Argv(String),
    /// Codex's code mode (its default model): no top-level `tools`, an
    /// `additional_tools` input item whose namespace `functions` holds a
    /// custom tool `exec` taking JavaScript that calls
    /// `tools.exec_command({cmd})`.
    CodeMode(String),
}

/// The shell tool among the request's tools.
pub fn find_shell(req: &Value, api: Api) -> Option<Shell> {
    if api == Api::Responses && req["tools"].as_array().is_none_or(Vec::is_empty) {
        return code_mode(req);
    }
    let tools = req["tools"].as_array()?;
    let name = |t: &Value| t["name"].as_str().unwrap_or("").to_owned();
    let schema = |t: &Value| match api {
        Api::Responses => t["parameters"].clone(),
        _ => t["input_schema"].clone(),
    };
    if let Some(t) = tools.iter().find(|t| name(t) == "Bash") {
        return Some(Shell::Command(name(t)));
    }
    if let Some(t) = tools.iter().find(|t| name(t) == "exec_command") {
        let props = schema(t)["properties"].clone();
        let param = ["cmd", "command"]
            .into_iter()
            .find(|p| props.get(*p).is_some())
            .unwrap_or("cmd");
        return Some(Shell::Cmd(name(t), param.to_owned()));
    }
    if let Some(t) = tools.iter().find(|t| name(t) == "shell") {
        return Some(Shell::Argv(name(t)));
    }
    // Any tool taking a string `command`.
    tools
        .iter()
        .find(|t| schema(t)["properties"]["command"]["type"] == "string")
        .map(|t| Shell::Command(name(t)))
}

/// Codex's code-mode `exec` tool, in an `additional_tools` input item.
fn code_mode(req: &Value) -> Option<Shell> {
    fn find(tools: &Value) -> Option<String> {
        tools.as_array()?.iter().find_map(|t| {
            if t["type"] == "custom"
                && t["name"] == "exec"
                && t["description"]
                    .as_str()
                    .is_some_and(|d| d.contains("exec_command"))
            {
                return Some("exec".to_owned());
            }
            find(&t["tools"])
        })
    }
    req["input"]
        .as_array()?
        .iter()
        .filter(|i| i["type"] == "additional_tools")
        .find_map(|i| find(&i["tools"]))
        .map(Shell::CodeMode)
}

/// The JavaScript for code mode's `exec` that runs `cmd` and hands back
/// its output.
pub fn code_mode_source(cmd: &str) -> String {
    format!(
        "const r = await tools.exec_command({{cmd: {}}});\ntext(r.output);\n",
        Value::String(cmd.to_owned())
    )
}

/// The command of step `k` of `n`: a marker line, then about 28,000
/// characters of build log (a `log…` task: the log [`LOG_SCRIPT`] prints
/// for step `k`).
pub fn step_command(task: &str, k: usize, n: usize) -> String {
    if task.starts_with("log") {
        return format!("echo 'ctxfold-step {task} {k}/{n}'; bash {LOG_SCRIPT} {k}");
    }
    format!(
        "echo 'ctxfold-step {task} {k}/{n}'; seq -f '{task} {k} line %g of the build log: warning: something happened here' 1 {STEP_LINES}"
    )
}

/// The log generator a `log…` task's steps run, by this name, in the
/// agent's working folder: `bash ctxfold-log.sh K` prints step K's log.
pub const LOG_SCRIPT: &str = "ctxfold-log.sh";

/// Write [`LOG_SCRIPT`] into `dir` (the agent's working folder).
pub fn write_log_script(dir: &Path) {
    std::fs::write(dir.join(LOG_SCRIPT), include_str!("ctxfold-log.sh")).unwrap();
}

/// The log step `k` prints, as [`LOG_SCRIPT`] in `dir` prints it.
pub fn log_output(dir: &Path, k: usize) -> String {
    let out = std::process::Command::new("bash")
        .arg(LOG_SCRIPT)
        .arg(k.to_string())
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{LOG_SCRIPT} {k}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The one ERROR line of step `k`'s log.
pub fn log_error_line(dir: &Path, k: usize) -> String {
    let log = log_output(dir, k);
    let errors: Vec<&str> = log.lines().filter(|l| l.contains(" ERROR ")).collect();
    assert_eq!(
        errors.len(),
        1,
        "{LOG_SCRIPT} {k} prints {} ERROR lines",
        errors.len()
    );
    errors[0].to_owned()
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

/// Every `tool_use` answered by a `tool_result` in the next user message,
/// every result answering a call of the assistant message before it
/// (`role: "system"` messages between them skipped).
fn pairing_messages(req: &Value) -> Vec<String> {
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
fn pairing_responses(req: &Value) -> Vec<String> {
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

fn anthropic_reply(req: &Value, act: &Act, tokens: usize, n: usize) -> Vec<u8> {
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

fn responses_reply(req: &Value, act: &Act, tokens: usize, n: usize) -> Vec<u8> {
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
fn responses_events(req: &Value, act: &Act, tokens: usize, n: usize, item: Value) -> Vec<u8> {
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
