//! An answer cut short and then retried is written out once (issue 25,
//! point 5): through the real binary, as `c print` and `c export` show
//! it. That an answer the upstream hangs up on is recorded as cut short
//! and reaches the client as broken (point 6) runs in-process in
//! ctxfold-proxy's tests/answers_cut_short.rs.

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
use ctxfold_testkit::client::send;
use ctxfold_testkit::records::of_type;
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
    let recs = records_when(&s, &id, |r| !of_type(r, "assistant").is_empty());
    let cut = of_type(&recs, "assistant");
    assert_eq!(cut.len(), 1, "{recs:#?}");
    assert_eq!(cut[0]["content"], "done: ");
    assert_eq!(cut[0]["metadata"]["cut_short"], true);
    let retry = send(&url, &json!({"model": "m", "messages": messages}));
    assert_eq!(retry.conversation, id);
    retry.body.unwrap();
    let recs = records_when(&s, &id, |r| of_type(r, "assistant").len() > 1);
    assert_eq!(of_type(&recs, "assistant").len(), 2, "{recs:#?}");
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
    let recs = records_when(&s, &id, |r| !of_type(r, "assistant").is_empty());
    assert_eq!(of_type(&recs, "assistant")[0]["content"], "");
    assert_eq!(
        of_type(&recs, "assistant")[0]["metadata"]["cut_short"],
        true
    );
    send(&url, &body("m")).body.unwrap();
    records_when(&s, &id, |r| of_type(r, "assistant").len() > 1);
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
    records_when(&s, &id, |r| !of_type(r, "assistant").is_empty());
    let anthropic = export(&s, &id, "anthropic");
    no_empty_anthropic_content(&anthropic);
    assert!(assistant_messages(&anthropic).is_empty(), "{anthropic:#}");
    let openai = export(&s, &id, "openai");
    no_empty_openai_message(&openai);
    assert!(assistant_messages(&openai).is_empty(), "{openai:#}");
    let printed = s.ok(&["c", "print", &id]);
    assert!(printed.contains("[assistant, cut short]\n"), "{printed}");
}
