//! The built-in `recall` and `search` tools of `ctxfold query` (SPEC §16)
//! through the real binary: a model server on 127.0.0.1 that answers from
//! what it is sent reads a handle out of a placeholder of its request,
//! recalls it, and searches for text only the folded output holds.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use common::model::{events, workspace};
use common::{Scratch, stderr};
use serde_json::{Value, json};

/// What the model answers a request with.
enum Reply {
    /// Call this tool with these arguments.
    Tool(String, Value),
    /// Answer with this text.
    Text(String),
}

/// Requests the server got, in order.
type Seen = Arc<Mutex<Vec<Value>>>;

/// An OpenAI-compatible streaming model server whose answer to its `n`th
/// request (from 1) is `reply(n, request)`. Its base URL, and the
/// requests it got.
fn model(reply: impl Fn(usize, &Value) -> Reply + Send + 'static) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let bodies = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut out) = stream else { continue };
            let Some((line, body)) = common::read_request(&out) else {
                continue;
            };
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
            let chunk = |delta: Value, finish: Value| {
                let c = json!({"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                format!("data: {c}\n\n")
            };
            let events = match reply(n, &request) {
                Reply::Text(t) => {
                    chunk(json!({"content": t}), Value::Null) + &chunk(json!({}), json!("stop"))
                }
                Reply::Tool(name, args) => {
                    chunk(
                        json!({"tool_calls": [{"index": 0, "id": format!("call_{n}"), "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}),
                        Value::Null,
                    ) + &chunk(json!({}), json!("tool_calls"))
                }
            };
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{events}data: [DONE]\n\n"
            );
        }
    });
    (base, seen)
}

/// The names of the tools a request offers.
fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The handle in the first stripped result's placeholder of `request`
/// (`… was removed by compaction (recall TAG:N) …`).
fn placeholder_handle(request: &Value) -> Option<String> {
    const MARK: &str = "was removed by compaction (recall ";
    request["messages"].as_array()?.iter().find_map(|m| {
        let text = m["content"].as_str()?;
        let at = text.find(MARK)? + MARK.len();
        let rest = &text[at..];
        Some(rest[..rest.find(')')?].to_owned())
    })
}

/// The content of the tool result answering call `call_{n}` in `request`.
fn result_of(request: &Value, n: usize) -> Option<String> {
    let id = format!("call_{n}");
    request["messages"].as_array()?.iter().find_map(|m| {
        (m["role"] == "tool" && m["tool_call_id"] == id.as_str())
            .then(|| m["content"].as_str().unwrap_or_default().to_owned())
    })
}

/// Text only the folded tool output holds.
const NEEDLE: &str = "zebra-quartz-4471";

/// A long tool output with [`NEEDLE`] in its middle, as the `echo_args`
/// tool's argument.
fn long_path() -> String {
    format!("{}{NEEDLE}{}", "a/".repeat(400), "/b".repeat(400))
}

/// Two turns, the first with one `echo_args` call whose long output the
/// second turn's compaction strips.
fn a_folded_conversation(s: &Scratch) {
    let out = s.run(&["q", "-m", "fake/m", "--new", "read", "the", "file"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = s.run(&["q", "thanks"]);
    assert!(out.status.success(), "{}", stderr(&out));
    s.ok(&[
        "c",
        "compact",
        "-t=strip-responses",
        "--from",
        "1",
        "--to",
        "1",
    ]);
}

/// With a compaction in force the model is offered `recall` and `search`:
/// a handle read from its request brings back the output byte for byte,
/// a search finds text only the folded output holds and names the record
/// by its handle, and a handle that cannot be read, of another
/// conversation or past the end is an error result, not a crash.
#[test]
fn the_model_recalls_and_searches_what_was_folded() {
    let (base, seen) = model(|n, request| match n {
        // Turn 1: a tool call with a long output, then an answer.
        1 => Reply::Tool("echo_args".into(), json!({"path": long_path()})),
        2 => Reply::Text("It is a long path.".into()),
        // Turn 2.
        3 => Reply::Text("You are welcome.".into()),
        // Turn 3, folded: recall what the placeholder names.
        4 => match placeholder_handle(request) {
            Some(h) => Reply::Tool("recall".into(), json!({"handle": h, "limit": 200})),
            None => Reply::Text("no placeholder in the request".into()),
        },
        5 => Reply::Tool("search".into(), json!({"query": NEEDLE})),
        6 => Reply::Tool("recall".into(), json!({"handle": "k3f9q"})),
        7 => {
            let h = placeholder_handle(request).unwrap_or_default();
            let (tag, _) = h.split_once(':').unwrap_or_default();
            let other = if tag == "aaaaa" { "bbbbb" } else { "aaaaa" };
            Reply::Tool("recall".into(), json!({"handle": format!("{other}:3")}))
        }
        8 => {
            let h = placeholder_handle(request).unwrap_or_default();
            Reply::Tool("recall".into(), json!({"handle": h, "offset": 1_000_000}))
        }
        _ => Reply::Text("The file holds a long path.".into()),
    });
    let s = workspace("openai", &base, "");
    a_folded_conversation(&s);
    let out = s.run(&["q", "what", "was", "in", "the", "file?"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 9, "{requests:#?}");
    // Nothing folded: neither tool offered.
    for r in &requests[..3] {
        let tools = offered(r);
        assert!(
            !tools.iter().any(|t| t == "recall" || t == "search"),
            "{tools:?}"
        );
    }
    // Folded: both, through the whole turn.
    for r in &requests[3..] {
        assert_eq!(offered(r), ["echo_args", "recall", "search"]);
    }

    // The first page of the output, byte for byte.
    let original = events(&s)
        .into_iter()
        .find(|r| r["type"] == "tool_result")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(original.contains(NEEDLE));
    let handle = placeholder_handle(&requests[3]).unwrap();
    let page = result_of(&requests[4], 4).unwrap();
    let head: String = original.chars().take(200).collect();
    assert!(page.starts_with(&format!("{head}\n")), "{page}");
    assert!(
        page.contains(&format!("recall {handle} with offset 200")),
        "{page}"
    );

    // The search names the folded record by its handle, with an excerpt.
    let found = result_of(&requests[5], 5).unwrap();
    let hit = found
        .lines()
        .find(|l| l.starts_with(&format!("{handle} ")))
        .unwrap_or_else(|| panic!("no hit on {handle}: {found}"));
    assert!(hit.contains(NEEDLE), "{hit}");

    // What cannot be answered comes back as an error the model reads.
    let said = |n: usize| result_of(&requests[n], n).unwrap();
    assert!(said(6).contains("is not a recall handle"), "{}", said(6));
    assert!(said(7).contains("another conversation"), "{}", said(7));
    assert!(said(8).contains("past the end"), "{}", said(8));
    let results: Vec<Value> = events(&s)
        .into_iter()
        .filter(|r| r["type"] == "tool_result")
        .collect();
    let errors: Vec<bool> = results
        .iter()
        .map(|r| r["is_error"].as_bool().unwrap())
        .collect();
    assert_eq!(errors, [false, false, false, true, true, true]);
}

/// Switched off by `--no-recall` for one query, or by `[query]
/// recall_tools = false`, neither tool is offered, folded or not; `-t
/// recall` says they are offered by themselves.
#[test]
fn recall_and_search_can_be_switched_off() {
    let (base, seen) = model(|n, _| match n {
        1 => Reply::Tool("echo_args".into(), json!({"path": long_path()})),
        _ => Reply::Text("ok".into()),
    });
    let s = workspace("openai", &base, "");
    a_folded_conversation(&s);
    let out = s.run(&["q", "--no-recall", "once", "more"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let last = seen.lock().unwrap().last().unwrap().clone();
    assert_eq!(offered(&last), ["echo_args"]);

    let out = s.run(&["q", "-t", "recall", "again"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("offered by itself whenever a compaction is in force"),
        "{}",
        stderr(&out)
    );

    let config = s.path().join(".ctxfold/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[query]\nrecall_tools = \"no\"\n");
    std::fs::write(&config, &text).unwrap();
    let out = s.run(&["q", "again"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("true or false"), "{}", stderr(&out));
    std::fs::write(&config, text.replace("\"no\"", "false")).unwrap();
    let out = s.run(&["q", "again"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let last = seen.lock().unwrap().last().unwrap().clone();
    assert_eq!(offered(&last), ["echo_args"]);
    // On again: offered.
    std::fs::write(&config, text.replace("recall_tools = \"no\"\n", "")).unwrap();
    let out = s.run(&["q", "last", "one"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let last = seen.lock().unwrap().last().unwrap().clone();
    assert_eq!(offered(&last), ["echo_args", "recall", "search"]);
}
