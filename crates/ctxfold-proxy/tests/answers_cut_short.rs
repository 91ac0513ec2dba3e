//! How the proxy relays and records answers the upstream hangs up on
//! before their protocol's end (issue 25, point 6), in-process over real
//! HTTP with the scripted upstream's `unframed…` model: the client sees
//! its answer break off, not end; the log holds what was readable of it,
//! marked `cut_short`; an answer it does not record is watched all the
//! same. (Moved from ctxfold-cli's tests/proxy_answers.rs: neither needs
//! the command line.)

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::{InProcess, config};
use ctxfold_testkit::client::{agent, send};
use ctxfold_testkit::records::of_type;
use ctxfold_testkit::upstream::Upstream;
use serde_json::json;

/// Start the proxy in front of `up`, with `extra` in its `[proxy]`.
fn proxy(up: &Upstream, extra: &str) -> InProcess {
    let config = config(up, extra);
    InProcess::start(&config)
}

/// Issue 25, point 6. The upstream answers with a body its close delimits
/// (no length, no chunks) and hangs up before the answer's end: a stream
/// without its last events, a JSON body cut inside the text. The client
/// sees its answer break off, not end; the log holds what was readable of
/// it, marked `cut_short`.
#[test]
fn an_answer_the_upstream_hangs_up_on_is_cut_short_for_the_client_and_the_log() {
    let up = Upstream::start(1_000_000);
    let p = proxy(&up, "");
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
        let recs = p.records_when(&got.conversation, |r| !of_type(r, "assistant").is_empty());
        let answer = of_type(&recs, "assistant");
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
    let p = proxy(&up, "");
    let chat = format!("{}/v1/chat/completions", p.base);
    let messages = json!([{"role": "user", "content": "case 7 steps=0"}]);
    let first = send(&chat, &json!({"model": "m", "messages": messages}));
    assert!(first.body.is_ok(), "{:?}", first.body);
    let recs = p.records_when(&first.conversation, |r| !of_type(r, "assistant").is_empty());
    assert_eq!(of_type(&recs, "assistant").len(), 1, "{recs:#?}");
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
    let recs = p.records(&first.conversation);
    assert_eq!(of_type(&recs, "assistant").len(), 1, "{recs:#?}");
    assert_eq!(up.requests().len(), 3);
}
