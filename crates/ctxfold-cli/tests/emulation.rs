//! The providers' context management emulated by `ctxfold proxy` for an
//! upstream without it (issue 45), through the real binary in front of the
//! scripted upstream of the proxy tests, which has none (no
//! `/v1/responses/compact`, no compaction blocks or items): what ctxfold
//! says the model sees (its view, `c print --compacted`) is what the
//! upstream gets, a compaction sent back included; a request it cannot
//! serve is refused in the provider's error shape. The SDK scenarios are
//! `sdk/emulation.py`'s, the official SDKs sending back exactly what they
//! received.

// A test may panic on what it did not expect, and print.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod common;

use common::Scratch;
use common::proxy::Proxy;
use ctxfold_testkit::upstream::{Seen, Upstream};
use serde_json::{Value, json};

/// A proxy in front of `upstream`, emulating the providers' context
/// management for both its APIs.
fn emulating_proxy(s: &Scratch, upstream: &str) -> Proxy {
    Proxy::start(
        s,
        &format!(
            "[proxy]\nopenai = \"{upstream}\"\nanthropic = \"{upstream}\"\n\
             [proxy.upstreams.openai]\ncontext_management = \"emulate\"\n\
             [proxy.upstreams.anthropic]\ncontext_management = \"emulate\"\n"
        ),
    )
}

/// Run `sdk/emulation.py`'s `scenario` against the proxy at `base`: one
/// line per request it sent (see the script).
fn run_sdk(base: &str, scenario: &str) -> Vec<Value> {
    common::sdk_script("emulation.py", &[base, scenario])
}

/// The line of the request named `name`.
fn line<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no request {name}: {lines:#?}"))
}

/// Every string in `v`, at any depth.
fn strings(v: &Value) -> Vec<&str> {
    match v {
        Value::String(s) => vec![s],
        Value::Array(a) => a.iter().flat_map(strings).collect(),
        Value::Object(o) => o.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

/// Whether one of the strings of `body` (a request the upstream got)
/// holds `text`.
fn holds(body: &Value, text: &str) -> bool {
    strings(body).iter().any(|s| s.contains(text))
}

/// The last request the upstream got on `path`.
fn last_on(up: &Upstream, path: &str) -> Seen {
    up.requests()
        .into_iter()
        .rev()
        .find(|r| r.path == path)
        .unwrap_or_else(|| panic!("nothing reached {path}"))
}

/// The summaries of conversation `id`'s view, as `c print --compacted`
/// shows them.
fn view_summaries(s: &Scratch, id: &str) -> Vec<String> {
    let view = s.json(&["c", "print", id, "--compacted"]);
    view["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "summary")
        .map(|i| i["text"].as_str().unwrap().to_owned())
        .collect()
}

/// The tests the two turns of the scenarios saw fail.
const BOTH: &[&str] = &["rejects_unknown_key", "reads_nested_sections"];

/// What ctxfold says the model sees of `id` and what the upstream got
/// (`sent`) agree: every summary of the view is in it, whole, and so are
/// the failures of the folded test runs (the digest keeps them); nothing
/// of the providers' context management reached the upstream.
fn agrees(s: &Scratch, id: &str, sent: &Value, failing: &[&str]) {
    let summaries = view_summaries(s, id);
    assert!(
        !summaries.is_empty(),
        "no summary in the view: {}",
        s.ok(&["c", "print", id, "--compacted"])
    );
    for summary in &summaries {
        assert!(
            holds(sent, summary),
            "the view's summary did not reach the upstream:\n{summary}\nit got: {sent:#}"
        );
    }
    for failing in failing {
        assert!(holds(sent, failing), "{failing} is not in {sent:#}");
    }
    assert!(holds(sent, "what failed earlier?"), "{sent:#}");
    let text = sent.to_string();
    assert!(!text.contains("\"compaction"), "{text}");
    assert!(!text.contains("context_management"), "{text}");
}

/// Issue 45, 1: `/v1/responses/compact` emulated, then its output and a
/// new question, as Codex sends them: the question goes on in the same
/// conversation, and the upstream gets the view, the summary of the two
/// folded turns (their failing tests) in place of them, not the user
/// messages alone.
#[test]
#[ignore = "needs the OpenAI and Anthropic SDKs: run through scripts/test, which installs them"]
fn the_compact_endpoints_summary_reaches_the_model() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = emulating_proxy(&s, &up.base);
    let lines = run_sdk(&p.base, "responses-compact");
    let compacted = line(&lines, "compact");
    assert_eq!(compacted["status"], 200, "{lines:#?}");
    let item = &compacted["compactions"][0];
    let id = compacted["conversation"].as_str().unwrap();
    assert!(
        item["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with(&format!("ctxfold:{id}:")),
        "{item}"
    );
    let after = line(&lines, "after");
    assert_eq!(after["conversation"], id, "{lines:#?}");
    assert_eq!(after["history"], "continued", "{after}");
    assert!(
        !up.requests().iter().any(|r| r.path.ends_with("/compact")),
        "the compact endpoint reached an upstream without it"
    );
    agrees(&s, id, &last_on(&up, "/v1/responses").json(), BOTH);
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}

/// Issue 45, 1: Anthropic's on-demand `compaction: {"type": "summarize"}`,
/// then `[assistant: [block], user: …]`: the upstream gets the view, the
/// summary in place of what the block stands for.
#[test]
#[ignore = "needs the OpenAI and Anthropic SDKs: run through scripts/test, which installs them"]
fn the_on_demand_summary_reaches_the_model() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = emulating_proxy(&s, &up.base);
    let lines = run_sdk(&p.base, "anthropic-summarize");
    let compacted = line(&lines, "summarize");
    assert_eq!(compacted["status"], 200, "{lines:#?}");
    let id = compacted["conversation"].as_str().unwrap();
    let block = &compacted["compactions"][0];
    assert!(
        block["signature"]
            .as_str()
            .unwrap()
            .starts_with(&format!("ctxfold:{id}:")),
        "{block}"
    );
    let after = line(&lines, "after");
    assert_eq!(after["conversation"], id, "{lines:#?}");
    assert_eq!(after["history"], "continued", "{after}");
    agrees(&s, id, &last_on(&up, "/v1/messages").json(), BOTH);
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}

/// Issue 45, 2: Codex's `compaction_trigger` on a conversation's first
/// request. A short message: a summary of it would not be smaller, which
/// ctxfold never records, so the request is refused (400, the provider's
/// error shape, saying why), nothing goes upstream and the message stays
/// in the view. A long one: the item answered names the compaction
/// record that folds it, its summary keeps what the message said, and
/// the next request sends that summary upstream.
#[test]
#[ignore = "needs the OpenAI and Anthropic SDKs: run through scripts/test, which installs them"]
fn a_trigger_on_the_first_request_keeps_what_the_user_said() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = emulating_proxy(&s, &up.base);
    let lines = run_sdk(&p.base, "trigger-first");
    let short = line(&lines, "short");
    assert_eq!(short["status"], 400, "{lines:#?}");
    assert_eq!(short["error"]["error"]["type"], "invalid_request_error");
    let why = short["error"]["error"]["message"].as_str().unwrap();
    assert!(why.contains("cannot be compacted"), "{why}");
    let short_text = "fix the parser bug: `cargo test` fails";
    assert!(
        !up.requests().iter().any(|r| holds(&r.json(), short_text)),
        "sent upstream: {:?}",
        up.requests()
    );
    // The message is still what the model sees of that conversation.
    let listed = s.json(&["c", "ls"]);
    let short_id = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .find(|c| {
            let view = s.json(&["c", "print", c, "--compacted"]);
            holds(&view, short_text)
        })
        .unwrap_or_else(|| panic!("the short message is in no view: {listed}"));
    let view = s.json(&["c", "print", &short_id, "--compacted"]);
    assert!(view_summaries(&s, &short_id).is_empty(), "{view}");

    let long = line(&lines, "long");
    assert_eq!(long["status"], 200, "{lines:#?}");
    let id = long["conversation"].as_str().unwrap();
    let item = long["compactions"][0]["encrypted_content"]
        .as_str()
        .unwrap();
    let rest = item
        .strip_prefix(&format!("ctxfold:{id}:"))
        .unwrap_or_else(|| panic!("{item}"));
    let (seq, summary) = rest.split_once(':').unwrap();
    let seq: u64 = seq.parse().unwrap();
    assert!(!summary.trim().is_empty(), "an empty summary: {item}");
    // The seq it names is the compaction that holds that summary.
    let named = s
        .json(&["c", "print", id])
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["seq"] == seq)
        .cloned()
        .unwrap_or_else(|| panic!("no record {seq}"));
    assert_eq!(named["type"], "compaction", "{named}");
    assert_eq!(named["summary"]["text"], summary, "{named}");
    let after = line(&lines, "after");
    assert_eq!(after["conversation"], id, "{lines:#?}");
    agrees(
        &s,
        id,
        &last_on(&up, "/v1/responses").json(),
        &["rejects_unknown_key"],
    );
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}

/// Issue 45, 3: each compacting request sent twice, as a client retries
/// (the compact endpoint, Codex's trigger, Anthropic's `summarize` and
/// `compact_20260112`): the retry is answered with the compaction the
/// first got, byte for byte, by ctxfold (the compact endpoint never
/// reaches an upstream without it), and the conversation goes on with
/// that compaction's summary upstream.
#[test]
#[ignore = "needs the OpenAI and Anthropic SDKs: run through scripts/test, which installs them"]
fn a_retried_compaction_is_answered_by_the_emulation() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = emulating_proxy(&s, &up.base);
    let lines = run_sdk(&p.base, "retries");
    for (first, again, after) in [
        ("compact", "compact again", "after compact"),
        ("trigger", "trigger again", "after trigger"),
        ("summarize", "summarize again", "after summarize"),
        ("edit", "edit again", "after edit"),
    ] {
        let (first, again) = (line(&lines, first), line(&lines, again));
        assert_eq!(again["status"], 200, "{lines:#?}");
        assert_eq!(again["conversation"], first["conversation"], "{again}");
        let got = first["compactions"].as_array().unwrap();
        assert_eq!(got.len(), 1, "{first}");
        assert_eq!(again["compactions"], first["compactions"], "{lines:#?}");
        let id = first["conversation"].as_str().unwrap();
        let after = line(&lines, after);
        assert_eq!(after["conversation"], id, "{after}");
        // The request after it got the view, its summary included.
        let summaries = view_summaries(&s, id);
        let sent =
            up.requests().into_iter().map(|r| r.json()).find(|b| {
                holds(b, "what failed earlier?") && summaries.iter().all(|t| holds(b, t))
            });
        // The edit folded the first turn only.
        let failing = if first["name"] == "edit" {
            &BOTH[..1]
        } else {
            BOTH
        };
        match sent {
            Some(b) => agrees(&s, id, &b, failing),
            None => panic!(
                "no request upstream holds {id}'s summaries {summaries:#?}: {:#?}",
                up.requests().iter().map(Seen::json).collect::<Vec<_>>()
            ),
        }
        // Recorded once: the retry added no compaction (the request after
        // it may, past its trigger).
        let recs = s.json(&["c", "print", id]);
        let by_client = (recs.as_array().unwrap().iter())
            .take_while(|r| r["content"] != "what failed earlier?")
            .filter(|r| r["type"] == "compaction" && r["source"] == "client")
            .count();
        assert_eq!(by_client, 1, "{recs:#}");
    }
    assert!(
        !up.requests().iter().any(|r| r.path.ends_with("/compact")),
        "the compact endpoint reached an upstream without it"
    );
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}

/// Issue 45, 7: compaction blocks a client put in a tool result or in the
/// system prompt never reach an upstream without them, whether or not the
/// request asks anything else of the context management.
#[test]
fn nested_compaction_blocks_never_reach_an_emulating_upstream() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = emulating_proxy(&s, &up.base);
    let block = json!({"type": "compaction", "content": "Summary: read a.rs.", "signature": "sig"});
    for (n, cm) in [
        json!(null),
        json!({"edits": [{"type": "clear_thinking_20251015"}]}),
    ]
    .into_iter()
    .enumerate()
    {
        let mut body = json!({"model": "claude-sonnet-4-5", "max_tokens": 50,
        "system": [{"type": "text", "text": "Be brief."}, block],
        "messages": [
            {"role": "user", "content": format!("run the tests ({n}) steps=1")},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1",
                "name": "read_file", "input": {"path": "src/m0.rs"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                "content": [{"type": "text", "text": "// src/m0.rs\nok"}, block]}]}
        ]});
        if !cm.is_null() {
            body["context_management"] = cm;
        }
        let resp = ureq::post(format!("{}/v1/messages", p.base))
            .header("content-type", "application/json")
            .header("x-api-key", "sk-test")
            .send(body.to_string())
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let got = last_on(&up, "/v1/messages");
        let text = String::from_utf8(got.body.clone()).unwrap();
        assert!(!text.contains("\"compaction\""), "request {n}: {text}");
        assert!(!text.contains("context_management"), "request {n}: {text}");
        // What else the client sent is there.
        let sent = got.json();
        assert!(holds(&sent, "Be brief."), "{sent:#}");
        assert!(holds(&sent, "// src/m0.rs"), "{sent:#}");
    }
    assert!(up.problems().is_empty(), "{:?}", up.problems());
    // A request ctxfold cannot read goes as the client sent it (it asks
    // nothing of the context management), but without the blocks.
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 50,
        "system": [{"type": "text", "text": "Be brief."}, block],
        "messages": [{"role": 7, "content": [{"type": "tool_result", "tool_use_id": "t",
            "content": [block]}]}]});
    let status = ureq::post(format!("{}/v1/messages", p.base))
        .config()
        .http_status_as_error(false)
        .build()
        .header("content-type", "application/json")
        .send(body.to_string())
        .unwrap()
        .status();
    let got = last_on(&up, "/v1/messages");
    let text = String::from_utf8(got.body.clone()).unwrap();
    assert!(
        text.contains("\"role\":7"),
        "{status}: not the unread request: {text}"
    );
    assert!(!text.contains("\"compaction\""), "{text}");
}
