//! How `ctxfold proxy` relays and records answers that do not arrive
//! whole, through the real binary, a client written here and the fake
//! upstream of ctxfold_testkit::upstream: an answer cut short and then
//! retried is written out once (issue 25, point 5), and an answer the
//! upstream hangs up on before its protocol's end is recorded as cut short
//! and reaches the client as broken, not as whole (point 6).

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::proxy::{Options, Proxy};
use common::{Scratch, records_when};
use ctxfold_testkit::client::agent;
use ctxfold_testkit::upstream::Upstream;
use serde_json::{Value, json};

/// Start the proxy in front of `up`, with `extra` in its `[proxy]`.
fn proxy(s: &Scratch, up: &Upstream, extra: &str) -> Proxy {
    let config = format!(
        "[proxy]\nopenai = \"{b}\"\nanthropic = \"{b}\"\n{extra}\n",
        b = up.base
    );
    Proxy::start_with(s, &config, Options::default())
}

/// What the client got: the conversation the proxy named, and the body,
/// or the error its reading ended in.
struct Got {
    conversation: String,
    body: Result<Vec<u8>, String>,
}

fn send(url: &str, body: &Value) -> Got {
    let mut resp = agent()
        .post(url)
        .header("content-type", "application/json")
        .send(body.to_string().as_bytes())
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let conversation = resp
        .headers()
        .get("x-ctxfold-conversation")
        .expect("the proxy names the conversation")
        .to_str()
        .unwrap()
        .to_owned();
    Got {
        conversation,
        body: resp.body_mut().read_to_vec().map_err(|e| e.to_string()),
    }
}

fn assistants(recs: &[Value]) -> Vec<&Value> {
    recs.iter().filter(|r| r["type"] == "assistant").collect()
}

/// The conversation exported in `format`, parsed.
fn export(s: &Scratch, id: &str, format: &str) -> Value {
    serde_json::from_str(&s.ok(&["c", "export", id, "--output-format", format])).unwrap()
}

/// The assistant messages of an export.
fn assistant_messages(export: &Value) -> Vec<&Value> {
    export["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect()
}

/// Every text block of an Anthropic export, and every message's content,
/// says something (the API refuses empty text blocks).
fn no_empty_anthropic_content(export: &Value) {
    for m in export["messages"].as_array().unwrap() {
        match &m["content"] {
            Value::String(t) => assert!(!t.trim().is_empty(), "an empty message: {export:#}"),
            Value::Array(blocks) => {
                assert!(!blocks.is_empty(), "a message of no blocks: {export:#}");
                for b in blocks {
                    if b["type"] == "text" {
                        let t = b["text"].as_str().unwrap();
                        assert!(!t.trim().is_empty(), "an empty text block: {export:#}");
                    }
                }
            }
            other => panic!("content {other} in {export:#}"),
        }
    }
}

/// No assistant message of an OpenAI export is empty.
fn no_empty_openai_message(export: &Value) {
    for m in assistant_messages(export) {
        let text = m["content"].as_str().unwrap_or("");
        assert!(
            !text.trim().is_empty() || m.get("tool_calls").is_some(),
            "an empty assistant message: {export:#}"
        );
    }
}

/// Issue 25, point 5. The upstream falls silent mid-answer past
/// `timeout_secs`; the proxy breaks the client's stream off and records
/// what arrived, marked `cut_short`; the client retries and gets the whole
/// answer. The exports hold the retried answer only (the cut one is left
/// out, not merged into it), no empty text block or message, and `print`
/// marks the one the retry replaced.
#[test]
fn an_answer_cut_short_and_retried_is_written_out_once() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = proxy(&s, &up, "timeout_secs = 1");

    // OpenAI chat: the cut answer holds the text that arrived.
    let url = format!("{}/v1/chat/completions", p.base);
    let messages = json!([{"role": "user", "content": "say it steps=0"}]);
    let got = send(
        &url,
        &json!({"model": "stall-1", "stream": true, "messages": messages}),
    );
    assert!(got.body.is_err(), "the client sees the stream break off");
    let id = got.conversation;
    let recs = records_when(&s, &id, |r| !assistants(r).is_empty());
    let cut = assistants(&recs);
    assert_eq!(cut.len(), 1, "{recs:#?}");
    assert_eq!(cut[0]["content"], "done: ");
    assert_eq!(cut[0]["metadata"]["cut_short"], true);
    let retry = send(&url, &json!({"model": "m", "messages": messages}));
    assert_eq!(retry.conversation, id);
    retry.body.unwrap();
    let recs = records_when(&s, &id, |r| assistants(r).len() > 1);
    assert_eq!(assistants(&recs).len(), 2, "{recs:#?}");
    // What went upstream: the same request twice, nothing of the cut answer.
    let sent = up.requests();
    assert_eq!(sent[1].json()["messages"], messages);

    let openai = export(&s, &id, "openai");
    let answers = assistant_messages(&openai);
    assert_eq!(answers.len(), 1, "{openai:#}");
    assert_eq!(answers[0]["content"], "done: 0 steps");
    let anthropic = export(&s, &id, "anthropic");
    no_empty_anthropic_content(&anthropic);
    let answers = assistant_messages(&anthropic);
    assert_eq!(answers.len(), 1, "{anthropic:#}");
    assert_eq!(
        answers[0]["content"],
        json!([{"type": "text", "text": "done: 0 steps"}])
    );
    let printed = s.ok(&["c", "print", &id]);
    assert!(
        printed.contains(
            "[assistant, cut short, replaced by the answer after it]\ndone:\n[assistant]\ndone: 0 steps\n"
        ),
        "{printed}"
    );
    let json = s.json(&["c", "print", &id]);
    let marked: Vec<&Value> = json
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["replaced"] == true)
        .collect();
    assert_eq!(marked.len(), 1);
    assert_eq!(marked[0]["content"], "done: ");

    // Anthropic, silent inside its first text block: nothing completed, so
    // the cut answer is an empty text.
    let url = format!("{}/v1/messages", p.base);
    let messages = json!([{"role": "user", "content": "tell it steps=0"}]);
    let body = |model: &str| json!({"model": model, "max_tokens": 100, "stream": true, "messages": messages});
    let got = send(&url, &body("stall-2"));
    assert!(got.body.is_err(), "the client sees the stream break off");
    let id = got.conversation;
    let recs = records_when(&s, &id, |r| !assistants(r).is_empty());
    assert_eq!(assistants(&recs)[0]["content"], "");
    assert_eq!(assistants(&recs)[0]["metadata"]["cut_short"], true);
    send(&url, &body("m")).body.unwrap();
    records_when(&s, &id, |r| assistants(r).len() > 1);
    let anthropic = export(&s, &id, "anthropic");
    no_empty_anthropic_content(&anthropic);
    let answers = assistant_messages(&anthropic);
    assert_eq!(answers.len(), 1, "{anthropic:#}");
    assert_eq!(
        answers[0]["content"],
        json!([{"type": "text", "text": "done: 0 steps"}])
    );
    let openai = export(&s, &id, "openai");
    let answers = assistant_messages(&openai);
    assert_eq!(answers.len(), 1, "{openai:#}");
    assert_eq!(answers[0]["content"], "done: 0 steps");

    // Cut short and never retried: kept, marked, and still no empty block.
    let messages = json!([{"role": "user", "content": "then leave steps=0"}]);
    let got = send(
        &url,
        &json!({"model": "stall-3", "max_tokens": 100, "stream": true, "messages": messages}),
    );
    assert!(got.body.is_err());
    let id = got.conversation;
    records_when(&s, &id, |r| !assistants(r).is_empty());
    let anthropic = export(&s, &id, "anthropic");
    no_empty_anthropic_content(&anthropic);
    assert!(assistant_messages(&anthropic).is_empty(), "{anthropic:#}");
    let openai = export(&s, &id, "openai");
    no_empty_openai_message(&openai);
    assert!(assistant_messages(&openai).is_empty(), "{openai:#}");
    let printed = s.ok(&["c", "print", &id]);
    assert!(printed.contains("[assistant, cut short]\n"), "{printed}");
}

/// Issue 25, point 6. The upstream answers with a body its close delimits
/// (no length, no chunks) and hangs up before the answer's end: a stream
/// without its last events, a JSON body cut inside the text. The client
/// sees its answer break off, not end; the log holds what was readable of
/// it, marked `cut_short`.
#[test]
fn an_answer_the_upstream_hangs_up_on_is_cut_short_for_the_client_and_the_log() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = proxy(&s, &up, "");
    let chat = format!("{}/v1/chat/completions", p.base);
    let messages = format!("{}/v1/messages", p.base);
    let responses = format!("{}/v1/responses", p.base);
    let user = |n: usize| json!([{"role": "user", "content": format!("case {n} steps=0")}]);
    let cases = [
        (
            "chat, streamed",
            &chat,
            json!({"model": "unframed", "stream": true, "messages": user(1)}),
            "done: 0 steps",
        ),
        (
            "chat",
            &chat,
            json!({"model": "unframed", "messages": user(2)}),
            "done: ",
        ),
        (
            "anthropic, streamed",
            &messages,
            json!({"model": "unframed", "max_tokens": 100, "stream": true, "messages": user(3)}),
            "done: 0 steps",
        ),
        (
            "anthropic",
            &messages,
            json!({"model": "unframed", "max_tokens": 100, "messages": user(4)}),
            "done: ",
        ),
        (
            "responses, streamed",
            &responses,
            json!({"model": "unframed", "stream": true, "input": "case 5 steps=0"}),
            "done: 0 steps",
        ),
        (
            "responses",
            &responses,
            json!({"model": "unframed", "input": "case 6 steps=0"}),
            "done: ",
        ),
    ];
    for (what, url, body, text) in cases {
        let got = send(url, &body);
        assert!(
            got.body.is_err(),
            "{what}: the client sees the answer break off, got {:?}",
            got.body.map(|b| String::from_utf8_lossy(&b).into_owned())
        );
        let recs = records_when(&s, &got.conversation, |r| !assistants(r).is_empty());
        let answer = assistants(&recs);
        assert_eq!(answer.len(), 1, "{what}: {recs:#?}");
        assert_eq!(answer[0]["content"], text, "{what}");
        assert_eq!(answer[0]["metadata"]["cut_short"], true, "{what}");
    }
    let metrics = agent()
        .get(&format!("{}/metrics", p.base))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    assert!(metrics.contains("cut_short"), "{metrics}");
}

/// Point 6, for answers the proxy does not record: a request repeated
/// after its answer was recorded (an earlier state of the conversation) is
/// relayed, not recorded, and its answer is watched all the same: when the
/// upstream hangs up on it mid-way, the client sees it break off.
#[test]
fn an_unrecorded_answer_the_upstream_hangs_up_on_breaks_off_for_the_client() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = proxy(&s, &up, "");
    let chat = format!("{}/v1/chat/completions", p.base);
    let messages = json!([{"role": "user", "content": "case 7 steps=0"}]);
    let first = send(&chat, &json!({"model": "m", "messages": messages}));
    assert!(first.body.is_ok(), "{:?}", first.body);
    let recs = records_when(&s, &first.conversation, |r| !assistants(r).is_empty());
    assert_eq!(assistants(&recs).len(), 1, "{recs:#?}");
    for stream in [false, true] {
        let again = send(
            &chat,
            &json!({"model": "unframed", "stream": stream, "messages": messages}),
        );
        assert_eq!(
            again.conversation, first.conversation,
            "the same conversation"
        );
        assert!(
            again.body.is_err(),
            "stream {stream}: the client sees the answer break off, got {:?}",
            again.body.map(|b| String::from_utf8_lossy(&b).into_owned())
        );
    }
    // Nothing of the repeats was recorded: the log still holds one answer.
    let recs = s.json(&["c", "print", &first.conversation]);
    let recs = recs.as_array().unwrap();
    assert_eq!(assistants(recs).len(), 1, "{recs:#?}");
    assert_eq!(up.requests().len(), 3);
}
