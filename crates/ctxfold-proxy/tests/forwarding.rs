//! What the proxy sends upstream, in-process over real HTTP with the
//! scripted upstream checking every request: a request with nothing to
//! compact goes as sent, byte for byte; one ctxfold cannot read goes
//! unchanged or is refused; Anthropic's prompt-cache markers stay on kept
//! blocks and move off folded ones; observing, it records and never
//! changes a request. (Moved from ctxfold-cli's
//! tests/proxy.rs: none of them needs the command line.)

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
use ctxfold_testkit::upstream::tool_loop::openai_agent;
use serde_json::{Value, json};

const KEY: &str = "sk-test-SECRET-0123456789abcdef";

/// A file's text, as big as a tool result of an agent reading code.
fn file_text(path: &str, bytes: usize) -> String {
    let line = format!("// {path}: fn work() {{ let x = compute(); x + 1 }}\n");
    line.repeat(bytes / line.len() + 1)
}

#[test]
fn a_request_with_nothing_to_compact_reaches_the_upstream_as_sent() {
    let up = Upstream::start(1_000_000);
    let p = InProcess::start(&config(&up, ""));
    // Odd spacing and key order, and fields ctxfold does not know.
    let body = br#"{"model":"gpt-4o-mini",  "temperature":0.25,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi steps=0","name":"ann"}],"metadata":{"k":[1,2.50,"x"]},"stream":false}"#;
    let a = post(
        &format!("{}/v1/chat/completions", p.base),
        &[("authorization", &format!("Bearer {KEY}"))],
        body,
    );
    assert_eq!(a.status, 200);
    assert_eq!(
        a.json()["choices"][0]["message"]["content"],
        "done: 0 steps"
    );
    let seen = up.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].body,
        body.to_vec(),
        "the body went on byte for byte"
    );
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(seen[0].header("x-ctxfold-conversation").is_none());
    assert!(a.header("x-ctxfold-conversation").is_some());

    // A path the proxy does not compact: byte for byte both ways.
    let mut resp = agent()
        .get(&format!("{}/v1/models?limit=2", p.base))
        .header("authorization", &format!("Bearer {KEY}"))
        .call()
        .unwrap();
    let got = resp.body_mut().read_to_vec().unwrap();
    assert_eq!(
        got,
        b"{\"object\": \"list\",  \"data\": [{\"id\": \"fake-1\"}]}\n".to_vec()
    );
    let seen = up.requests();
    assert_eq!(seen[1].path, "/v1/models?limit=2");
    assert_eq!(resp.headers().get("x-upstream").unwrap(), "fake");

    // Not under /v1/: not forwarded.
    let a = post(&format!("{}/elsewhere", p.base), &[], b"{}");
    assert_eq!(a.status, 404);
    assert_eq!(up.requests().len(), 2);
}

#[test]
fn a_request_ctxfold_cannot_read_goes_upstream_unchanged_or_is_refused() {
    let up = Upstream::start(1_000_000);
    let p = InProcess::start(&config(&up, ""));
    // Not a chat body: ctxfold cannot read it; the upstream judges it.
    let odd = br#"{"model": "m", "messages": "not a list"}"#;
    let a = post(&format!("{}/v1/chat/completions", p.base), &[], odd);
    assert_eq!(a.status, 400, "the upstream's own answer");
    assert_eq!(up.requests().last().unwrap().body, odd.to_vec());
    let metrics = metrics(&p);
    assert!(
        metrics.contains("ctxfold_proxy_fail_open_total{endpoint=\"chat_completions\"} 1"),
        "{metrics}"
    );
    drop(p);
    let p = InProcess::start(&config(&up, "on_error = \"reject\""));
    let n = up.requests().len();
    let a = post(&format!("{}/v1/chat/completions", p.base), &[], odd);
    assert_eq!(a.status, 502);
    let text = String::from_utf8_lossy(&a.body).into_owned();
    assert!(text.contains("messages"), "{text}");
    assert_eq!(up.requests().len(), n, "nothing went upstream");
}

/// A Gemini request ctxfold cannot read (a content of a role the API does
/// not have) fails open as the others do: the upstream gets the client's
/// bytes, and the failure is counted under its action. A path of the
/// model that is no model call (`countTokens`) passes through untouched.
#[test]
fn a_gemini_request_ctxfold_cannot_read_goes_upstream_unchanged() {
    let up = Upstream::start(1_000_000);
    let p = InProcess::start(&config(&up, ""));
    let odd = br#"{"contents": [{"role": "tool", "parts": [{"text": "hello"}]}]}"#;
    let url = format!("{}/v1beta/models/gemini-2.5-flash:generateContent", p.base);
    post(&url, &[("x-goog-api-key", "AIza-test")], odd);
    let seen = up.requests();
    let last = seen.last().unwrap();
    assert_eq!(last.path, "/v1beta/models/gemini-2.5-flash:generateContent");
    assert_eq!(last.body, odd.to_vec(), "the client's bytes");
    assert_eq!(last.header("x-goog-api-key"), Some("AIza-test"));
    let metrics = metrics(&p);
    assert!(
        metrics.contains("ctxfold_proxy_fail_open_total{endpoint=\"generate_content\"} 1"),
        "{metrics}"
    );
    assert_eq!(p.conversations(), 0, "nothing recorded");
    let count = br#"{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}"#;
    let url = format!("{}/v1beta/models/gemini-2.5-flash:countTokens", p.base);
    post(&url, &[], count);
    let last = up.requests().pop().unwrap();
    assert_eq!(last.path, "/v1beta/models/gemini-2.5-flash:countTokens");
    assert_eq!(last.body, count.to_vec());
    assert_eq!(p.conversations(), 0, "a token count is no turn");
}

/// Anthropic prompt-cache markers: those on blocks sent as they were stay;
/// one on a block a summary folded moves to the summary (the end of the
/// folded part), none lands on a thinking block, and the request never
/// carries more markers than the client sent.
#[test]
fn prompt_cache_markers_stay_on_kept_blocks_and_move_off_folded_ones() {
    let up = Upstream::start(1_000_000);
    let p = InProcess::start(&config(
        &up,
        "window = 3000\n[compaction.auto.rule]\nkeep_first = 0\nkeep_last = 1\n[compaction.auto.rule.summary]\n",
    ));
    let cache = json!({"type": "ephemeral"});
    let mut messages = vec![json!({"role": "user", "content": [
        {"type": "text", "text": "turn 0: read them", "cache_control": cache}]})];
    for turn in 0..4 {
        if turn > 0 {
            messages.push(json!({"role": "user", "content": format!("turn {turn}: read them")}));
        }
        for step in 0..2 {
            let id = format!("t{turn}_{step}");
            messages.push(json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "which file?", "signature": format!("sig{turn}{step}")},
                {"type": "tool_use", "id": id, "name": "read_file", "input": {"path": format!("src/{id}.rs")}}]}));
            messages.push(
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
                "content": file_text(&format!("src/{id}.rs"), 1_600)}]}),
            );
        }
        messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("turn {turn} done")}]}));
    }
    messages.push(json!({"role": "user", "content": [
        {"type": "text", "text": "and now? steps=0", "cache_control": cache}]}));
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 100,
        "system": [{"type": "text", "text": "Agent.", "cache_control": cache}],
        "tools": [{"name": "read_file", "input_schema": {"type": "object"}, "cache_control": cache}],
        "messages": messages});
    let a = post(
        &format!("{}/v1/messages", p.base),
        &[],
        body.to_string().as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    let sent = up.requests().last().unwrap().json();
    assert!(
        sent["messages"].as_array().unwrap().len() < messages.len(),
        "the view is compacted"
    );
    fn markers(v: &Value, path: String, out: &mut Vec<(String, Value)>) {
        match v {
            Value::Object(o) => {
                if o.contains_key("cache_control") {
                    out.push((path.clone(), v.clone()));
                }
                for (k, x) in o {
                    markers(x, format!("{path}.{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    markers(x, format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    markers(&sent, String::new(), &mut found);
    assert!(found.len() <= 4, "{found:#?}");
    assert!(
        found.iter().all(|(_, b)| b["type"] != "thinking"),
        "{found:#?}"
    );
    assert!(found.iter().any(|(p, _)| p.starts_with(".system")));
    assert!(found.iter().any(|(p, _)| p.starts_with(".tools")));
    // The last user message keeps its own.
    let msgs = sent["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    assert_eq!(last["content"][0]["cache_control"], cache, "{last}");
    // The first one's, folded into the summary, sits on the summary text.
    let moved: Vec<&(String, Value)> = found
        .iter()
        .filter(|(p, _)| {
            p.starts_with(".messages") && !p.starts_with(&format!(".messages[{}]", msgs.len() - 1))
        })
        .collect();
    assert_eq!(moved.len(), 1, "{found:#?}");
    let at: usize = moved[0].0[".messages[".len()..]
        .split(']')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(msgs[at]["role"], "assistant", "{:#?}", msgs[at]);
    let summary = moved[0].1["text"].as_str().unwrap();
    assert!(
        summary.contains("turn 0: read them"),
        "the summary: {summary}"
    );
    assert!(
        !msgs.iter().any(|m| m["content"]
            .to_string()
            .contains("\"text\":\"turn 0: read them\"")),
        "the first message itself was folded"
    );
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}

#[test]
fn observe_records_but_never_changes_a_request() {
    // `observe`: what `ctxfold proxy --observe` sets.
    let run = |observe: bool| {
        let up = Upstream::start(1_000_000);
        let p = InProcess::start_with(
            &config(
                &up,
                "window = 2000\n[compaction.auto.rule]\nkeep_last = 1\ntool_calls = \"strip\"",
            ),
            "127.0.0.1:0",
            observe,
        );
        let mut messages = vec![json!({"role": "system", "content": "Agent."})];
        let answers = openai_agent(&p.base, &mut messages, "read steps=8", 1_200, &[]);
        let id = answers[0]
            .header("x-ctxfold-conversation")
            .unwrap()
            .to_owned();
        let recs = p.records_when(&id, |r| count(r, "assistant") > 0);
        // Did each request reach the upstream as the client sent it?
        let unchanged = up
            .requests()
            .iter()
            .zip(1..)
            .all(|(seen, k)| seen.json()["messages"] == json!(messages[..2 * k]));
        (recs, unchanged)
    };
    // Without --observe the same conversation is compacted: the check below
    // means something.
    let (recs, unchanged) = run(false);
    assert!(count(&recs, "compaction") > 0);
    assert!(!unchanged);
    let (recs, unchanged) = run(true);
    assert!(unchanged, "every request went on as the client sent it");
    assert_eq!(count(&recs, "tool_result"), 8);
    assert_eq!(count(&recs, "compaction"), 0);
}
