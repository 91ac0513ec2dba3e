//! An upstream that fails, in-process over real HTTP: a context overflow
//! is compacted and retried once; a stream cut short records what
//! completed and the client's retry goes on; an upstream that never
//! answers is a 502 after the timeout, the request recorded all the same.
//! (Moved from ctxfold-cli's tests/proxy.rs: none of them needs the
//! command line.)

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::{InProcess, config, metrics};
use ctxfold_testkit::client::{agent, post};
use ctxfold_testkit::records::count;
use ctxfold_testkit::upstream::Upstream;
use serde_json::{Value, json};

fn tools() -> Value {
    json!([{"type": "function", "function": {"name": "read_file", "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}])
}

/// A file's text, as big as a tool result of an agent reading code.
fn file_text(path: &str, bytes: usize) -> String {
    let line = format!("// {path}: fn work() {{ let x = compute(); x + 1 }}\n");
    line.repeat(bytes / line.len() + 1)
}

/// The upstream's window is smaller than the proxy believes: its "context
/// length exceeded" answer leads to one compaction and one retry, which
/// fits. A request nothing can shrink gets the upstream's error as it was.
#[test]
fn an_upstream_context_overflow_is_compacted_and_retried_once() {
    // ~5,700 tokens sent; the automatic rule's overflow compaction (strip
    // the calls of the turns before the retained tail) brings it to ~4,000.
    let up = Upstream::start(4_600);
    let p = InProcess::start(&config(&up, "window = 1000000"));
    let url = format!("{}/v1/chat/completions", p.base);
    let mut messages = vec![json!({"role": "system", "content": "Agent."})];
    for turn in 0..3 {
        messages.push(json!({"role": "user", "content": format!("turn {turn}: read them")}));
        for step in 0..3 {
            let id = format!("c{turn}_{step}");
            messages.push(
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": id,
                "type": "function", "function": {"name": "read_file",
                "arguments": json!({"path": format!("src/t{turn}s{step}.rs")}).to_string()}}]}),
            );
            messages.push(json!({"role": "tool", "tool_call_id": id,
                "content": file_text(&format!("src/t{turn}s{step}.rs"), 2_400)}));
        }
        messages.push(json!({"role": "assistant", "content": format!("turn {turn} done")}));
    }
    messages.push(json!({"role": "user", "content": "and now? steps=0"}));
    let body = json!({"model": "gpt-4o-mini", "messages": messages, "tools": tools()});
    let a = post(&url, &[], body.to_string().as_bytes());
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    let seen = up.requests();
    assert_eq!(seen.len(), 2, "one refused request, one retry");
    assert!(
        seen[1].body.len() < seen[0].body.len() * 3 / 4,
        "the retry is the compacted view"
    );
    let tokens = |h: &str| a.header(h).unwrap().parse::<usize>().unwrap();
    assert!(tokens("x-ctxfold-tokens-after") < tokens("x-ctxfold-tokens-before"));
    let problems = up.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("over the window"), "{problems:?}");
    let id = a.header("x-ctxfold-conversation").unwrap().to_owned();
    let recs = p.records_when(&id, |r| count(r, "assistant") > 3);
    assert_eq!(count(&recs, "compaction"), 1);
    assert_eq!(count(&recs, "tool_result"), 9, "every raw event is kept");
    let metrics = metrics(&p);
    assert!(
        metrics.contains("ctxfold_proxy_overflow_retries_total 1"),
        "{metrics}"
    );

    // One message over the window on its own: nothing to fold, so the
    // retry sends it cut to its head and tail (the log keeps it whole).
    let huge = json!({"model": "gpt-4o-mini", "messages": [
        {"role": "user", "content": file_text("src/huge.rs", 40_000)}]});
    let b = post(&url, &[], huge.to_string().as_bytes());
    assert_eq!(b.status, 200, "{}", String::from_utf8_lossy(&b.body));
    let seen = up.requests();
    assert_eq!(seen.len(), 4, "one refused request, one retry");
    let sent = seen[3].json()["messages"][0]["content"].to_string();
    assert!(sent.contains("left out here by compaction"), "{sent}");
    let id = b.header("x-ctxfold-conversation").unwrap().to_owned();
    let recs = p.records(&id);
    assert!(
        recs.iter().any(
            |r| r["type"] == "user" && r["content"].as_str().is_some_and(|c| c.len() >= 40_000)
        )
    );
    assert!(self::metrics(&p).contains("ctxfold_proxy_overflow_retries_total 2"));
}

/// Gemini's "the input token count exceeds the maximum" is an overflow as
/// the others' are: one compaction and one retry, which fits (a user
/// message over the window on its own, sent cut to its head and tail).
#[test]
fn a_gemini_overflow_is_compacted_and_retried_once() {
    let up = Upstream::start(4_600);
    let p = InProcess::start(&config(&up, "window = 1000000"));
    let url = format!("{}/v1beta/models/gemini-2.5-flash:generateContent", p.base);
    let huge = json!({"contents": [{"role": "user", "parts": [
        {"text": file_text("src/huge.rs", 40_000)}]}]});
    let a = post(&url, &[], huge.to_string().as_bytes());
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    let seen = up.requests();
    assert_eq!(seen.len(), 2, "one refused request, one retry");
    let sent = seen[1].json()["contents"][0]["parts"][0]["text"].to_string();
    assert!(sent.contains("left out here by compaction"), "{sent}");
    assert!(metrics(&p).contains("ctxfold_proxy_overflow_retries_total 1"));
}

/// An upstream stream that breaks off: the client's stream breaks too;
/// what completed of the answer (the closed text block) is recorded,
/// marked; the client's retry and its next turn go on in the same
/// conversation, and the retried answer is recorded whole.
#[test]
fn a_stream_cut_short_records_what_completed_and_the_retry_goes_on() {
    let up = Upstream::start(1_000_000);
    let p = InProcess::start(&config(&up, ""));
    let url = format!("{}/v1/messages", p.base);
    let body = |model: &str, messages: &Value| {
        json!({"model": model, "max_tokens": 100, "system": "Be brief.", "stream": true,
            "messages": messages})
        .to_string()
    };
    let mut messages = json!([{"role": "user", "content": "say it steps=0"}]);
    let mut resp = agent()
        .post(&url)
        .header("content-type", "application/json")
        .send(body("cut-1", &messages).as_bytes())
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let id = resp
        .headers()
        .get("x-ctxfold-conversation")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        resp.body_mut().read_to_vec().is_err(),
        "the client sees the stream break off"
    );
    let recs = p.records_when(&id, |r| count(r, "assistant") > 0);
    let cut: Vec<&Value> = recs.iter().filter(|r| r["type"] == "assistant").collect();
    assert_eq!(cut.len(), 1);
    assert_eq!(cut[0]["content"], "done: 0 steps");
    assert_eq!(cut[0]["metadata"]["cut_short"], true);

    // The client retries the same request; the answer comes whole.
    let a = post(&url, &[], body("m", &messages).as_bytes());
    assert_eq!(a.status, 200);
    assert_eq!(a.header("x-ctxfold-conversation"), Some(id.as_str()));
    assert_eq!(a.header("x-ctxfold-history"), Some("continued"));
    let recs = p.records_when(&id, |r| count(r, "assistant") > 1);
    let whole: Vec<&Value> = recs.iter().filter(|r| r["type"] == "assistant").collect();
    assert_eq!(whole.len(), 2, "{recs:#?}");
    assert!(whole[1]["metadata"].get("cut_short").is_none());

    // The next turn carries the whole answer, not the cut one: it goes on
    // in the same conversation, no fork.
    messages
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "assistant", "content": [{"type": "text", "text": "done: 0 steps"}]}));
    messages
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "user", "content": "thanks steps=0"}));
    let a = post(&url, &[], body("m", &messages).as_bytes());
    assert_eq!(a.header("x-ctxfold-conversation"), Some(id.as_str()));
    assert_eq!(a.header("x-ctxfold-history"), Some("continued"));
    assert_eq!(p.conversations(), 1);
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}

#[test]
fn an_upstream_that_never_answers_is_a_502_after_the_timeout() {
    // Accepts, reads nothing, answers nothing.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", silent.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in silent.incoming() {
            held.push(c);
        }
    });
    let p = InProcess::start(&format!("[proxy]\nopenai = \"{base}\"\ntimeout_secs = 1\n"));
    // Without the timeout this would wait for the upstream forever.
    let a = post(
        &format!("{}/v1/chat/completions", p.base),
        &[],
        json!({"model": "m", "messages": [{"role": "user", "content": "hello?"}]})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(a.status, 502, "{}", String::from_utf8_lossy(&a.body));
    assert!(String::from_utf8_lossy(&a.body).contains(&base));
    // The request was recorded all the same: nothing the client sent is lost.
    assert_eq!(p.conversations(), 1);
}
