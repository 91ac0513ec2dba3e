//! `ctxfold proxy` through the real binary, between a client written here
//! and a fake upstream on 127.0.0.1 (ctxfold_testkit::upstream) that checks
//! every request it gets.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;
use ctxfold_testkit::pg;

use common::proxy::{Options, Proxy};
use common::{Scratch, records, records_when, records_when_in, stderr};
use ctxfold_testkit::client::{Answer, agent, post};
use ctxfold_testkit::records::count;
use ctxfold_testkit::upstream::Upstream;
use ctxfold_testkit::upstream::tool_loop::{file_text, openai_agent, openai_agent_via, tools};
use serde_json::{Value, json};

/// Write `config` into the workspace's config and start the proxy on a
/// free port with `args`.
fn proxy(s: &Scratch, config: &str, args: &[&str]) -> Proxy {
    let level = std::env::var("PROXY_LOG").unwrap_or("info".into());
    proxy_logging(s, config, args, &level)
}

/// [`proxy`], logging at `level` (`RUST_LOG`).
fn proxy_logging(s: &Scratch, config: &str, args: &[&str], level: &str) -> Proxy {
    let options = Options {
        args,
        level,
        ..Options::default()
    };
    Proxy::start_with(s, config, options)
}

fn config(up: &Upstream, extra: &str) -> String {
    format!(
        "[proxy]\nopenai = \"{b}\"\nanthropic = \"{b}\"\ngemini = \"{b}\"\n{extra}\n",
        b = up.base
    )
}

/// The proxy's `/metrics` text.
fn metrics(p: &Proxy) -> String {
    agent()
        .get(&format!("{}/metrics", p.base))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap()
}

const KEY: &str = "sk-test-SECRET-0123456789abcdef";

#[test]
fn a_long_tool_loop_fits_a_small_window_and_every_event_is_recorded() {
    let up = Upstream::start(8_000);
    let s = Scratch::new();
    let p = proxy(
        &s,
        &config(
            &up,
            "window = 8000\n[compaction.auto]\nenabled = true\n[compaction.auto.rule]\nkeep_first = 1\n[compaction.auto.rule.summary]\n",
        ),
        &[],
    );
    let mut messages =
        vec![json!({"role": "system", "content": "You are a careful coding agent."})];
    let answers = openai_agent(
        &p.base,
        &mut messages,
        "Read every module: steps=300",
        1_200,
        &[],
    );
    assert_eq!(answers.len(), 301);
    assert!(up.problems().is_empty(), "{:?}", up.problems());
    let ids: std::collections::BTreeSet<&str> = answers
        .iter()
        .map(|a| a.header("x-ctxfold-conversation").unwrap())
        .collect();
    assert_eq!(ids.len(), 1, "one conversation: {ids:?}");
    let id = *ids.iter().next().unwrap();
    // The upstream saw less than the client sent, at the end.
    let last = answers.last().unwrap();
    let before: usize = last
        .header("x-ctxfold-tokens-before")
        .unwrap()
        .parse()
        .unwrap();
    let after: usize = last
        .header("x-ctxfold-tokens-after")
        .unwrap()
        .parse()
        .unwrap();
    assert!(after * 5 < before, "{after} of {before}");
    // Every raw event is in the log, once.
    let recs = records_when(&s, id, |r| count(r, "assistant") > 0);
    assert_eq!(count(&recs, "tool_call"), 300);
    assert_eq!(count(&recs, "tool_result"), 300);
    assert_eq!(count(&recs, "user"), 1);
    assert_eq!(count(&recs, "system"), 1);
    let mut ids: Vec<&str> = recs
        .iter()
        .filter(|r| r["type"] == "tool_call")
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    ids.dedup();
    assert_eq!(ids.len(), 300);
    let show = s.ok(&["c", "show", id]);
    assert!(show.contains("auto"), "{show}");
    let autos = recs
        .iter()
        .filter(|r| r["type"] == "compaction" && r["source"] == "auto")
        .count();
    assert!(autos >= 3, "{autos} automatic compactions");
    // The final answer was recorded from the upstream's response.
    assert_eq!(
        recs.iter()
            .rev()
            .find(|r| r["type"] == "assistant")
            .map(|r| r["content"].clone()),
        Some(json!("done: 300 steps"))
    );
}

#[test]
fn retries_divergent_histories_and_anthropic_streams_lose_and_double_nothing() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = proxy(&s, &config(&up, ""), &[]);
    let url = format!("{}/v1/messages", p.base);
    let send = |messages: &Value, stream: bool| {
        let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 200, "system": "Be brief.",
            "messages": messages, "stream": stream,
            "tools": [{"name": "read_file", "input_schema": {"type": "object"}}]});
        post(
            &url,
            &[("x-api-key", KEY), ("anthropic-version", "2023-06-01")],
            body.to_string().as_bytes(),
        )
    };
    let mut messages = json!([{"role": "user", "content": "look at it steps=1"}]);
    let a = send(&messages, true);
    assert_eq!(a.status, 200);
    let text = String::from_utf8(a.body.clone()).unwrap();
    assert!(text.contains("event: message_stop"), "{text}");
    let id = a.header("x-ctxfold-conversation").unwrap().to_owned();
    assert_eq!(a.header("x-ctxfold-history"), Some("new"));
    // The recorded copy of the streamed tool call.
    let recs = records_when(&s, &id, |r| count(r, "tool_call") > 0);
    assert_eq!(count(&recs, "tool_call"), 1, "{recs:?}");

    // A retry of the same request: answered, nothing recorded twice.
    let a = send(&messages, true);
    assert_eq!(a.header("x-ctxfold-history"), Some("earlier"));
    assert_eq!(a.header("x-ctxfold-conversation"), Some(id.as_str()));
    assert_eq!(count(&records(&s, &id), "tool_call"), 1);

    // The client goes on with the first answer's call.
    let call_id = recs.iter().find(|r| r["type"] == "tool_call").unwrap()["id"].clone();
    let msgs = messages.as_array_mut().unwrap();
    msgs.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": "src/m0.rs"}}]}));
    msgs.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "fn main() {}"}]}));
    let a = send(&messages, false);
    assert_eq!(a.status, 200);
    assert_eq!(a.header("x-ctxfold-history"), Some("continued"));
    assert_eq!(a.json()["content"][0]["text"], "done: 1 steps");
    let recs = records_when(&s, &id, |r| count(r, "assistant") > 0);
    assert_eq!(count(&recs, "tool_call"), 1);
    assert_eq!(count(&recs, "tool_result"), 1);
    assert_eq!(count(&recs, "assistant"), 1);
    let before = std::fs::read(s.events_file(&id)).unwrap();

    // The client rewrites its history: a new conversation, naming the old.
    let edited = json!([{"role": "user", "content": "something else entirely steps=0"}]);
    let a = send(&edited, false);
    assert_eq!(
        a.header("x-ctxfold-history"),
        Some("new"),
        "another head, another conversation"
    );
    let mut edited = messages.clone();
    edited[2]["content"][0]["content"] = json!("fn main() { edited }");
    let a = send(&edited, false);
    assert_eq!(a.header("x-ctxfold-history"), Some("forked"));
    let fork = a.header("x-ctxfold-conversation").unwrap().to_owned();
    assert_ne!(fork, id);
    assert_eq!(
        std::fs::read(s.events_file(&id)).unwrap(),
        before,
        "the old log is unchanged"
    );
    let ls = s.json(&["c", "ls"]);
    assert_eq!(ls.as_array().unwrap().len(), 3, "{ls}");
    let meta: Value = serde_json::from_slice(
        &std::fs::read(
            s.path()
                .join(".ctxfold/conversations")
                .join(&fork)
                .join("meta.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(meta["extras"]["proxy"]["forked_from"], json!(id));
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}

#[test]
fn keys_stay_out_of_the_store_and_bad_requests_are_refused() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = proxy_logging(&s, &config(&up, "max_body_bytes = 4096"), &[], "debug");
    let mut messages = vec![json!({"role": "system", "content": "Agent."})];
    openai_agent(
        &p.base,
        &mut messages,
        "go steps=1",
        100,
        &[("x-api-key", KEY)],
    );
    // An oversized body: 413, and nothing reached the upstream.
    let n = up.requests().len();
    let big = json!({"model": "m", "messages": [{"role": "user", "content": "x".repeat(10_000)}]});
    let a = post(
        &format!("{}/v1/chat/completions", p.base),
        &[],
        big.to_string().as_bytes(),
    );
    assert_eq!(a.status, 413);
    assert_eq!(up.requests().len(), n);
    // What the proxy does not read streams through whatever its size: an
    // upload five times the limit arrives whole, with its own length.
    let upload: Vec<u8> = (0..20_000).map(|i| b"0123456789\n"[i % 11]).collect();
    let a = post(&format!("{}/v1/files", p.base), &[], &upload);
    assert_eq!(
        a.status, 404,
        "the fake's answer for a path it does not know"
    );
    assert_eq!(a.body, b"/v1/files");
    let seen = up.requests().pop().unwrap();
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("POST", "/v1/files")
    );
    assert!(seen.body == upload, "the upload arrived changed");
    assert_eq!(seen.header("content-length"), Some("20000"));
    assert_eq!(seen.header("transfer-encoding"), None);
    // Another method on a path the proxy compacts goes through as well
    // (OpenAI lists stored completions with GET).
    let mut resp = agent()
        .get(&format!("{}/v1/chat/completions?limit=3", p.base))
        .call()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let listed: Value = serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
    assert_eq!(listed["path"], "/v1/chat/completions?limit=3");
    let n = up.requests().len();
    // A request naming another host still goes to the configured upstream
    // (another `Host` itself is refused without a token: proxy_guard.rs).
    let a = post(
        &format!("{}/v1/chat/completions", p.base),
        &[("x-forwarded-host", "evil.example")],
        json!({"model": "m", "messages": [{"role": "user", "content": "hi steps=0"}]})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(a.status, 200);
    assert_eq!(up.requests().len(), n + 1);
    // No key in anything the proxy wrote.
    let metrics = metrics(&p);
    assert!(
        metrics.contains("ctxfold_proxy_requests_total"),
        "{metrics}"
    );
    assert!(!metrics.contains("SECRET"));
    let log = p.log.clone();
    drop(p);
    // Its log (at debug level, the most it says) names no key either.
    let log = log.lock().unwrap().join("\n");
    assert!(log.contains("DEBUG"), "{log}");
    assert!(!log.contains("SECRET"), "a key in the proxy's log: {log}");
    let mut found = Vec::new();
    let mut stack = vec![s.path().join(".ctxfold")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if String::from_utf8_lossy(&std::fs::read(&path).unwrap()).contains("SECRET") {
                found.push(path);
            }
        }
    }
    assert!(found.is_empty(), "a key was written to {found:?}");

    // Beyond loopback without a token: refused before listening.
    let out = s.run(&["proxy", "--listen", "0.0.0.0:0"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("without a client token"),
        "{}",
        stderr(&out)
    );
}

/// The official OpenAI and Anthropic Python SDKs (PyPI), installed by
/// `scripts/proxy-clients` (which `scripts/test` runs), in four
/// conversations: each SDK, streamed and not, two user turns of tool calls.
#[test]
#[ignore = "needs the OpenAI and Anthropic SDKs: run through scripts/test, which installs them"]
fn the_official_sdks_hold_tool_using_conversations_through_the_proxy() {
    // A window small enough that the proxy compacts inside the tool loops.
    let up = Upstream::start(1_500);
    let s = Scratch::new();
    let p = proxy(
        &s,
        &config(
            &up,
            "window = 1500\n[compaction.auto.rule]\nkeep_last = 1\ntool_calls = \"strip\"",
        ),
        &[],
    );
    let runs = common::sdk_script("clients.py", &[&p.base]);
    assert_eq!(runs.len(), 6);
    for run in &runs {
        // The SDK parsed every answer, to the last text of each turn.
        assert_eq!(
            run["texts"],
            json!(["done: 3 steps", "done: 2 steps"]),
            "{run}"
        );
        let id = run["conversation"].as_str().unwrap();
        let recs = records_when(&s, id, |r| count(r, "assistant") >= 2);
        assert_eq!(count(&recs, "user"), 2, "{run}");
        assert_eq!(count(&recs, "tool_call"), 5, "{run}");
        assert_eq!(count(&recs, "tool_result"), 5, "{run}");
        assert_eq!(count(&recs, "assistant"), 2, "{run}");
    }
    let ids: std::collections::BTreeSet<&str> = runs
        .iter()
        .map(|r| r["conversation"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 6, "one conversation each");
    assert!(up.problems().is_empty(), "{:?}", up.problems());
    for id in &ids {
        let autos = count(
            &records(&s, id)
                .into_iter()
                .filter(|r| r["source"] == "auto")
                .collect::<Vec<_>>(),
            "compaction",
        );
        assert!(autos >= 1, "{id}: the proxy compacted nothing");
    }
    // Every request carried the parameters the SDK sent.
    for r in up.requests() {
        let b = r.json();
        match r.path.as_str() {
            "/v1/chat/completions" => {
                assert_eq!(b["temperature"], json!(0.25));
                assert_eq!(b["max_tokens"], json!(300));
            }
            "/v1/responses" => {
                assert_eq!(b["temperature"], json!(0.25));
                assert_eq!(b["max_output_tokens"], json!(300));
                assert_eq!(b["instructions"], json!("You are a careful coding agent."));
            }
            _ => {
                assert_eq!(b["metadata"], json!({"user_id": "agent-7"}));
                assert_eq!(b["max_tokens"], json!(300), "{}", r.path);
            }
        }
    }
}

/// The official Google Gen AI Python SDK (PyPI `google-genai`, installed
/// by `scripts/proxy-clients`) through the proxy's Gemini API: a
/// function-calling loop of 12 steps over a window it does not fit, with
/// `generate_content` and with `generate_content_stream`. Each loop is
/// one conversation; the proxy compacts inside it; every call and its
/// response pair up in what the upstream gets (the fake checks each
/// request), with the request's other fields as the SDK sent them; the
/// log holds every call and result.
#[test]
#[ignore = "needs the Google Gen AI SDK: run through scripts/test, which installs it"]
fn the_gemini_sdk_runs_a_function_calling_loop_through_the_proxy() {
    let up = Upstream::start(1_500);
    let s = Scratch::new();
    let p = proxy(
        &s,
        &config(
            &up,
            "window = 1500\n[compaction.auto.rule]\nkeep_last = 1\ntool_calls = \"strip\"",
        ),
        &[],
    );
    let runs = common::sdk_script("gemini.py", &[&p.base, "12"]);
    assert_eq!(runs.len(), 2, "{runs:?}");
    let mut ids = std::collections::BTreeSet::new();
    for run in &runs {
        // The SDK parsed every answer: 12 calls, then the text.
        assert_eq!(run["text"], json!("done: 12 steps"), "{run}");
        let paths: Vec<String> = (0..12).map(|k| format!("src/m{k}.rs")).collect();
        assert_eq!(run["calls"], json!(paths), "{run}");
        // One conversation for the 13 requests.
        let named: std::collections::BTreeSet<&str> = run["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(run["conversations"].as_array().unwrap().len(), 13, "{run}");
        assert_eq!(named.len(), 1, "one conversation: {run}");
        let id = *named.iter().next().unwrap();
        ids.insert(id.to_owned());
        let recs = records_when(&s, id, |r| count(r, "assistant") >= 1);
        assert_eq!(count(&recs, "user"), 1, "{run}");
        assert_eq!(count(&recs, "tool_call"), 12, "{run}");
        assert_eq!(count(&recs, "tool_result"), 12, "{run}");
        assert_eq!(count(&recs, "assistant"), 1, "{run}");
        // Calls and results paired in the log as in the requests.
        let call_ids: Vec<&Value> = recs
            .iter()
            .filter(|r| r["type"] == "tool_call")
            .map(|r| &r["id"])
            .collect();
        let result_ids: Vec<&Value> = recs
            .iter()
            .filter(|r| r["type"] == "tool_result")
            .map(|r| &r["id"])
            .collect();
        assert_eq!(call_ids, result_ids, "{run}");
        let autos = recs
            .iter()
            .filter(|r| r["type"] == "compaction" && r["source"] == "auto")
            .count();
        assert!(autos >= 1, "{id}: the proxy compacted nothing");
    }
    assert_eq!(ids.len(), 2, "a conversation each");
    assert!(up.problems().is_empty(), "{:?}", up.problems());
    let gemini: Vec<_> = up
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/models/gemini-2.5-flash:"))
        .collect();
    assert_eq!(gemini.len(), 26, "every request reached the upstream");
    let streamed = gemini
        .iter()
        .filter(|r| r.path.contains(":streamGenerateContent"))
        .count();
    assert_eq!(streamed, 13);
    for r in &gemini {
        let b = r.json();
        // The SDK's own fields, as it sent them.
        assert_eq!(b["generationConfig"]["temperature"], json!(0.25));
        assert_eq!(b["generationConfig"]["maxOutputTokens"], json!(300));
        assert_eq!(
            b["systemInstruction"]["parts"][0]["text"],
            json!("You are a careful coding agent.")
        );
        assert_eq!(
            b["tools"][0]["functionDeclarations"][0]["name"],
            json!("read_file")
        );
        // The key went to the upstream, in the header the SDK put it in.
        assert_eq!(
            r.header("x-goog-api-key"),
            Some("AIza-test-SECRET-0123456789")
        );
    }
    // The last request of each loop is compacted: the SDK sent its whole
    // history (the task, then 12 calls and their responses: 25 contents),
    // the upstream got fewer, the folded part behind a recall handle.
    for last in [&gemini[12], &gemini[25]] {
        let b = last.json();
        let contents = b["contents"].as_array().unwrap();
        assert!(contents.len() < 25, "{b}");
        assert!(b.to_string().contains("recall "), "{b}");
    }
}

#[test]
fn compacting_and_undoing_while_the_proxy_runs_changes_the_next_request() {
    // A window so large that the proxy itself never compacts: what changes
    // is what the command line does.
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = proxy(&s, &config(&up, "window = 1000000"), &[]);
    let mut messages = vec![json!({"role": "system", "content": "Agent."})];
    let answers = openai_agent(&p.base, &mut messages, "read them steps=6", 1_200, &[]);
    let id = answers[0]
        .header("x-ctxfold-conversation")
        .unwrap()
        .to_owned();
    records_when(&s, &id, |r| count(r, "assistant") > 0);
    let last = |up: &Upstream| up.requests().last().unwrap().body.len();
    openai_agent(&p.base, &mut messages, "next steps=0", 10, &[]);
    let whole = last(&up);
    // Fold the first turn's tool output from the command line.
    s.ok(&["c", "compact", &id, "-t", "--keep-last", "1"]);
    openai_agent(&p.base, &mut messages, "and? steps=0", 10, &[]);
    let folded = last(&up);
    assert!(
        folded + 6_000 < whole,
        "the request after the compaction is folded: {folded} bytes, against {whole}"
    );
    // And undo it: the next request holds the whole history again.
    s.ok(&["c", "compact", &id, "--reset"]);
    openai_agent(&p.base, &mut messages, "once more steps=0", 10, &[]);
    assert!(last(&up) > whole, "{} against {whole}", last(&up));
    let recs = records(&s, &id);
    assert_eq!(count(&recs, "compaction_reset"), 1);
    assert_eq!(count(&recs, "tool_result"), 6);
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}

#[test]
fn a_proxy_killed_mid_stream_leaves_a_log_the_next_one_continues() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let cfg = config(&up, "");
    let mut p = proxy(&s, &cfg, &[]);
    let url = format!("{}/v1/chat/completions", p.base);
    let mut messages = vec![
        json!({"role": "system", "content": "Agent."}),
        json!({"role": "user", "content": "slowly steps=0"}),
    ];
    let body = json!({"model": "slow-1", "messages": messages, "stream": true});
    let client = std::thread::spawn(move || {
        // The answer never completes: the proxy dies half way.
        agent()
            .post(&url)
            .header("content-type", "application/json")
            .send(body.to_string().as_bytes())
            .and_then(|mut r| r.body_mut().read_to_vec())
            .is_ok()
    });
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    p.child.kill().unwrap();
    p.child.wait().unwrap();
    let _ = client.join();
    // The store loads and holds the request.
    let ls = s.json(&["c", "ls"]);
    let id = ls[0]["id"].as_str().unwrap().to_owned();
    let recs = records(&s, &id);
    assert_eq!(count(&recs, "user"), 1);
    assert_eq!(count(&recs, "assistant"), 0, "a cut answer is not recorded");
    // A new proxy finds the conversation by its head and goes on with it.
    let p = proxy(&s, &cfg, &[]);
    messages.push(json!({"role": "assistant", "content": "Slowly done."}));
    messages.push(json!({"role": "user", "content": "again steps=0"}));
    let a = post(
        &format!("{}/v1/chat/completions", p.base),
        &[],
        json!({"model": "m", "messages": messages})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(a.status, 200);
    assert_eq!(a.header("x-ctxfold-conversation"), Some(id.as_str()));
    assert_eq!(a.header("x-ctxfold-history"), Some("continued"));
    let recs = records_when(&s, &id, |r| count(r, "assistant") >= 2);
    assert_eq!(count(&recs, "user"), 2);
    assert_eq!(count(&recs, "assistant"), 2);
}

/// OpenAI responses: a request with its whole `input` is recorded like any
/// other; one chained with `previous_response_id` (its history is on the
/// upstream) goes upstream byte for byte as sent and is recorded after the
/// answer it names, or, when the proxy never saw that answer, as a new
/// conversation naming it.
#[test]
fn responses_chained_by_previous_response_id_pass_through_and_are_recorded() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = proxy(&s, &config(&up, ""), &[]);
    let url = format!("{}/v1/responses", p.base);
    let tools =
        json!([{"type": "function", "name": "read_file", "parameters": {"type": "object"}}]);
    let first = json!({"model": "gpt-4o-mini", "instructions": "Be brief.", "tools": tools,
        "input": [{"role": "user", "content": "look steps=1"}]});
    let a = post(&url, &[], first.to_string().as_bytes());
    assert_eq!(a.status, 200);
    let id = a.header("x-ctxfold-conversation").unwrap().to_owned();
    assert_eq!(a.header("x-ctxfold-history"), Some("new"));
    let answer = a.json();
    let call = answer["output"][0].clone();
    assert_eq!(call["type"], "function_call");
    records_when(&s, &id, |r| count(r, "tool_call") == 1);

    // Chained: only the tool's output, the history by reference.
    let chained = format!(
        r#"{{"model":"gpt-4o-mini","previous_response_id":{},"input":[{{"type":"function_call_output","call_id":{},"output":"fn main() {{}}"}}],"tools":{tools}}}"#,
        answer["id"], call["call_id"]
    );
    let b = post(&url, &[], chained.as_bytes());
    assert_eq!(b.status, 200);
    assert_eq!(b.header("x-ctxfold-conversation"), Some(id.as_str()));
    assert_eq!(b.header("x-ctxfold-history"), Some("chained"));
    assert_eq!(
        up.requests().last().unwrap().body,
        chained.as_bytes(),
        "a chained request goes as sent"
    );
    let recs = records_when(&s, &id, |r| count(r, "assistant") == 1);
    assert_eq!(count(&recs, "user"), 1);
    assert_eq!(count(&recs, "tool_call"), 1);
    assert_eq!(count(&recs, "tool_result"), 1);
    assert_eq!(count(&recs, "compaction"), 0);

    // Chained to an answer this proxy never recorded.
    let orphan = r#"{"model":"gpt-4o-mini","previous_response_id":"resp_elsewhere","input":"and then? steps=0"}"#;
    let c = post(&url, &[], orphan.as_bytes());
    assert_eq!(c.status, 200);
    assert_eq!(c.header("x-ctxfold-history"), Some("chained"));
    let other = c.header("x-ctxfold-conversation").unwrap().to_owned();
    assert_ne!(other, id);
    assert_eq!(up.requests().last().unwrap().body, orphan.as_bytes());
    let shown = s.json(&["c", "show", &other]);
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(shown["path"].as_str().unwrap()).join("meta.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        meta["extras"]["proxy"]["previous_response_id"], "resp_elsewhere",
        "the new conversation names the answer it follows: {meta}"
    );
    records_when(&s, &other, |r| count(r, "assistant") == 1);
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}

#[test]
fn count_tokens_counts_what_the_upstream_would_get_and_records_nothing() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = proxy(&s, &config(&up, "window = 1000000"), &[]);
    let url = format!("{}/v1/messages", p.base);
    let headers = [("x-api-key", KEY), ("anthropic-version", "2023-06-01")];
    let mut messages = vec![json!({"role": "user", "content": "read steps=3"})];
    let body = |messages: &[Value]| {
        json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": messages}).to_string()
    };
    loop {
        let a = post(&url, &headers, body(&messages).as_bytes());
        let content = a.json()["content"].clone();
        messages.push(json!({"role": "assistant", "content": content}));
        let Some(call) = content
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["type"] == "tool_use")
        else {
            break;
        };
        let path = call["input"]["path"].as_str().unwrap();
        messages.push(json!({"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": call["id"], "content": file_text(path, 3_000)}]}));
    }
    let id = s.json(&["c", "ls"])[0]["id"].as_str().unwrap().to_owned();
    records_when(&s, &id, |r| count(r, "assistant") > 0);
    messages.push(json!({"role": "user", "content": "how big is this now?"}));
    let count_url = format!("{}/v1/messages/count_tokens", p.base);
    let sent = json!({"model": "claude-sonnet-4-5", "messages": messages}).to_string();
    let whole = post(&count_url, &headers, sent.as_bytes()).json()["input_tokens"]
        .as_u64()
        .unwrap();
    s.ok(&["c", "compact", &id, "-t", "--keep-last", "0"]);
    let events = std::fs::read(s.events_file(&id)).unwrap();
    let folded = post(&count_url, &headers, sent.as_bytes()).json()["input_tokens"]
        .as_u64()
        .unwrap();
    assert!(folded * 3 < whole, "{folded} of {whole}");
    let last = up.requests().last().unwrap().json();
    assert_eq!(
        last["messages"].as_array().unwrap().last().unwrap()["content"],
        json!("how big is this now?"),
        "the request's new message is counted"
    );
    assert_eq!(
        std::fs::read(s.events_file(&id)).unwrap(),
        events,
        "nothing recorded"
    );

    // Removed while the proxy runs: counted as sent, and not a failure.
    s.ok(&["c", "rm", &id]);
    let after = post(&count_url, &headers, sent.as_bytes());
    assert_eq!(after.status, 200);
    assert_eq!(
        up.requests().last().unwrap().body,
        sent.as_bytes(),
        "the request's own body is counted"
    );
    let metrics = metrics(&p);
    assert!(
        !metrics.contains("fail_open_total{endpoint=\"count_tokens\"}"),
        "{metrics}"
    );
}

#[test]
fn a_conversation_removed_while_the_proxy_runs_is_started_afresh() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = proxy(&s, &config(&up, ""), &[]);
    let mut messages = vec![json!({"role": "system", "content": "Agent."})];
    let a = openai_agent(&p.base, &mut messages, "first steps=1", 100, &[]);
    let id = a[0].header("x-ctxfold-conversation").unwrap().to_owned();
    records_when(&s, &id, |r| count(r, "assistant") > 0);
    s.ok(&["c", "rm", &id]);
    let a = openai_agent(&p.base, &mut messages, "again steps=0", 10, &[]);
    assert_eq!(a[0].status, 200);
    assert_eq!(a[0].header("x-ctxfold-history"), Some("new"));
    let fresh = a[0].header("x-ctxfold-conversation").unwrap().to_owned();
    assert_ne!(fresh, id);
    // The whole history the client sent is in the new one.
    let recs = records_when(&s, &fresh, |r| count(r, "assistant") >= 2);
    assert_eq!(count(&recs, "user"), 2);
    assert_eq!(count(&recs, "tool_result"), 1);
}

#[test]
fn with_a_compaction_in_force_what_the_log_does_not_compare_still_goes_as_sent() {
    // Review findings: a system message inserted mid-history and an image
    // part must reach the upstream as the client sent them, once anything
    // is folded; and a client echoing the conversation id it was given
    // goes on in that conversation.
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = proxy(&s, &config(&up, "window = 1000000"), &[]);
    let mut messages = vec![json!({"role": "system", "content": "Agent."})];
    let a = openai_agent(&p.base, &mut messages, "read steps=4", 1_500, &[]);
    let id = a[0].header("x-ctxfold-conversation").unwrap().to_owned();
    records_when(&s, &id, |r| count(r, "assistant") > 0);
    s.ok(&["c", "compact", &id, "-t", "--keep-last", "0"]);
    messages.push(json!({"role": "system", "content": "Mid-history note: be terse."}));
    messages.push(json!({"role": "user", "content": [
        {"type": "text", "text": "what is in this picture? steps=0"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    ]}));
    let body = json!({"model": "gpt-4o-mini", "messages": messages});
    let a = post(
        &format!("{}/v1/chat/completions", p.base),
        &[("x-ctxfold-conversation", &id)],
        body.to_string().as_bytes(),
    );
    assert_eq!(a.status, 200);
    assert_eq!(a.header("x-ctxfold-conversation"), Some(id.as_str()));
    assert_eq!(a.header("x-ctxfold-history"), Some("continued"));
    let sent = up.requests().last().unwrap().json();
    let sent = sent["messages"].as_array().unwrap();
    let tools: Vec<&Value> = sent.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tools.len(), 4);
    for t in tools {
        let c = t["content"].as_str().unwrap();
        assert!(c.len() < 300, "the tool output is folded: {c}");
    }
    let n = sent.len();
    assert_eq!(
        sent[n - 2],
        messages[messages.len() - 2],
        "the system note, as sent"
    );
    assert_eq!(
        sent[n - 1],
        messages[messages.len() - 1],
        "the image part, as sent"
    );
    assert_eq!(sent[0], messages[0]);
}

/// An agent's log after one user request of `steps` tool steps: gapless
/// seqs, one user message, every call and result once.
fn every_step_once(recs: &[Value], steps: usize, what: &str) {
    let seqs: Vec<u64> = recs.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>(), "{what}");
    assert_eq!(count(recs, "user"), 1, "{what}");
    assert_eq!(count(recs, "tool_call"), steps, "{what}");
    assert_eq!(count(recs, "tool_result"), steps, "{what}");
    let mut calls: Vec<&str> = recs
        .iter()
        .filter(|r| r["type"] == "tool_call")
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    calls.sort_unstable();
    calls.dedup();
    assert_eq!(calls.len(), steps, "{what}: every call once");
}

/// Three proxies on one PostgreSQL database, each agent's requests spread
/// over all three: every agent keeps one conversation holding each event
/// once, the upstream never gets more than the window, no firing is
/// recorded twice, and the usual commands read and undo it through
/// `--store` while the proxies run.
#[test]
#[ignore = "needs PostgreSQL: CTXFOLD_TEST_PG_URL (scripts/test starts a server)"]
fn three_proxy_replicas_on_one_database_share_their_conversations() {
    let Some(db) =
        pg::TestDb::new("three_proxy_replicas_on_one_database_share_their_conversations")
    else {
        return;
    };
    let up = Upstream::start(6_000);
    let s = Scratch::new();
    let conf = config(
        &up,
        "window = 6000\n[compaction.auto]\nenabled = true\n[compaction.auto.rule]\nkeep_first = 1\ntool_calls = \"strip\"",
    );
    let replicas: Vec<Proxy> = (0..3)
        .map(|_| proxy(&s, &conf, &["--store", &db.url]))
        .collect();
    let bases: Vec<&str> = replicas.iter().map(|p| p.base.as_str()).collect();
    let runs: Vec<(Vec<Answer>, Vec<Value>)> = std::thread::scope(|scope| {
        let agents: Vec<_> = (0..2)
            .map(|a| {
                let bases = &bases;
                scope.spawn(move || {
                    let mut messages =
                        vec![json!({"role": "system", "content": format!("You are agent {a}.")})];
                    // Agent 1 starts at another replica.
                    let order: Vec<&str> = (0..3).map(|i| bases[(i + a) % bases.len()]).collect();
                    let answers = openai_agent_via(
                        &order,
                        &mut messages,
                        &format!("Agent {a}, read every module: steps=40"),
                        900,
                        &[],
                        a == 1,
                    );
                    (answers, messages)
                })
            })
            .collect();
        agents.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (answers, mut histories): (Vec<Vec<Answer>>, Vec<Vec<Value>>) = runs.into_iter().unzip();
    assert!(up.problems().is_empty(), "{:?}", up.problems());
    let store = ["--store", db.url.as_str()];
    let listed = s.json(&[&store[..], &["c", "ls"]].concat());
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2, "one conversation an agent: {listed:?}");
    for (a, answers) in answers.iter().enumerate() {
        assert_eq!(answers.len(), 41);
        let ids: std::collections::BTreeSet<&str> = answers
            .iter()
            .map(|x| x.header("x-ctxfold-conversation").unwrap())
            .collect();
        assert_eq!(ids.len(), 1, "agent {a}: {ids:?}");
        let id = *ids.iter().next().unwrap();
        let recs = records_when_in(&s, &store, id, |r| count(r, "assistant") > 0);
        every_step_once(&recs, 40, &format!("agent {a}"));
        // Compacted, and no firing twice: each compaction folds a range no
        // other one does.
        let ranges: Vec<(u64, u64)> = recs
            .iter()
            .filter(|r| r["type"] == "compaction")
            .map(|r| {
                (
                    r["from_seq"].as_u64().unwrap_or(0),
                    r["to_seq"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        assert!(!ranges.is_empty(), "agent {a}: compacted");
        let mut distinct = ranges.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), ranges.len(), "agent {a}: {ranges:?}");
    }
    // The usual commands, through --store, while the replicas run.
    let id = answers[0][0].header("x-ctxfold-conversation").unwrap();
    let show = s.ok(&[&store[..], &["c", "show", id]].concat());
    assert!(show.contains("auto"), "{show}");
    let stats = s.ok(&[&store[..], &["stats", id]].concat());
    assert!(!stats.is_empty());
    let compacted = s.ok(&[&store[..], &["c", "print", id, "--compacted"]].concat());
    assert!(compacted.contains("removed by compaction"), "{compacted}");
    // Undo from the command line: the next request through any replica
    // sends more than before.
    let tokens_after =
        |x: &Answer| -> usize { x.header("x-ctxfold-tokens-after").unwrap().parse().unwrap() };
    let before = tokens_after(answers[0].last().unwrap());
    // The last firing only: undoing them all would put the conversation
    // back over the window, which the proxy will not fold again against
    // the user's word.
    let firings = show.matches("by auto").count();
    s.ok(&[
        &store[..],
        &["c", "compact", id, &format!("--reset={firings}")],
    ]
    .concat());
    // The agent goes on: its whole history and one more question.
    let next = openai_agent_via(
        &[bases[2]],
        &mut histories[0],
        "And now? steps=0",
        900,
        &[],
        false,
    );
    assert_eq!(next[0].header("x-ctxfold-conversation"), Some(id));
    // The undone turns go as they are; a request that is over the trigger
    // with them back fires again (over what came after them), so either
    // more is sent or a new firing was recorded, and the undone one stays
    // undone.
    let again = s.ok(&[&store[..], &["c", "show", id]].concat());
    assert!(
        tokens_after(&next[0]) > before || again.matches("by auto").count() > firings,
        "{} after the reset, {before} before: {again}",
        tokens_after(&next[0])
    );
    assert!(
        again.contains("revoked") || again.contains("undone"),
        "{again}"
    );
    // Nothing went to the workspace.
    let ws = s.path().join(".ctxfold/conversations");
    let local = std::fs::read_dir(&ws).map_or(0, |d| d.count());
    assert_eq!(local, 0, "conversations written to the workspace");
    drop(replicas);
}

/// A client's request sent to two replicas at the same moment (a retry the
/// load balancer sends elsewhere): whichever appends first records the new
/// messages, the other finds them there, and the log holds every event
/// once. The first request too: one conversation, not one a replica.
#[test]
#[ignore = "needs PostgreSQL: CTXFOLD_TEST_PG_URL (scripts/test starts a server)"]
fn the_same_request_on_two_replicas_at_once_records_every_event_once() {
    let Some(db) =
        pg::TestDb::new("the_same_request_on_two_replicas_at_once_records_every_event_once")
    else {
        return;
    };
    // The same request gets the same answer: a retry's, were the model
    // deterministic. (Were the answers to differ, the log would hold one
    // and the client might go on from the other: a history that diverges,
    // recorded as a fork.)
    let up = Upstream::start_deterministic(1_000_000);
    let s = Scratch::new();
    let conf = config(&up, "window = 1000000");
    let replicas: Vec<Proxy> = (0..2)
        .map(|_| proxy(&s, &conf, &["--store", &db.url]))
        .collect();
    let mut messages = vec![
        json!({"role": "system", "content": "You are a careful coding agent."}),
        json!({"role": "user", "content": "Read every module: steps=12"}),
    ];
    let mut ids = std::collections::BTreeSet::new();
    let mut histories = Vec::new();
    loop {
        let body =
            json!({"model": "gpt-4o-mini", "messages": messages, "tools": tools()}).to_string();
        // Every request to both, the first too: were the first
        // conversation's id not made from its key, each replica would
        // start one.
        let targets = &replicas[..];
        let barrier = std::sync::Barrier::new(targets.len());
        let answers: Vec<Answer> = std::thread::scope(|scope| {
            let sent: Vec<_> = targets
                .iter()
                .map(|p| {
                    let (barrier, body) = (&barrier, &body);
                    scope.spawn(move || {
                        barrier.wait();
                        post(
                            &format!("{}/v1/chat/completions", p.base),
                            &[],
                            body.as_bytes(),
                        )
                    })
                })
                .collect();
            sent.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for a in &answers {
            assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
            ids.insert(a.header("x-ctxfold-conversation").unwrap().to_owned());
            histories.push(a.header("x-ctxfold-history").unwrap().to_owned());
        }
        let msg = answers[0].json()["choices"][0]["message"].clone();
        messages.push(msg.clone());
        let calls = msg["tool_calls"].as_array().cloned().unwrap_or_default();
        if calls.is_empty() {
            break;
        }
        for c in calls {
            let args: Value =
                serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
            messages.push(json!({"role": "tool", "tool_call_id": c["id"],
                "content": file_text(args["path"].as_str().unwrap(), 300)}));
        }
    }
    assert_eq!(ids.len(), 1, "one conversation: {ids:?} ({histories:?})");
    let id = ids.into_iter().next().unwrap();
    let store = ["--store", db.url.as_str()];
    let recs = records_when_in(&s, &store, &id, |r| count(r, "assistant") > 0);
    every_step_once(&recs, 12, &format!("{histories:?}"));
    assert_eq!(count(&recs, "assistant"), 1, "{histories:?}");
    // Each step, one of the two went on from the log; the other found
    // its messages there already (or, when it came second, went on too).
    assert!(
        histories
            .iter()
            .all(|h| h == "new" || h == "continued" || h == "earlier"),
        "{histories:?}"
    );
}

/// A pasted message larger than the window on its own, through the real
/// proxy: the upstream (which refuses what is over its window) gets it as
/// an excerpt (its head and tail with a note saying what was left out and
/// how to recall it), made on arrival, the request fits, the log keeps
/// the message whole, and `c show` lists the excerpt.
#[test]
fn a_pasted_message_larger_than_the_window_is_excerpted_to_fit() {
    let up = Upstream::start(8_000);
    let s = Scratch::new();
    let p = proxy(&s, &config(&up, "window = 8000"), &[]);
    let url = format!("{}/v1/messages", p.base);
    let pasted = (0..6_000)
        .map(|k| format!("log line {k}\n"))
        .collect::<String>();
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 200, "system": "Be brief.",
        "messages": [{"role": "user", "content": format!("What went wrong here?\n{pasted}")}]});
    let a = post(
        &url,
        &[("x-api-key", KEY), ("anthropic-version", "2023-06-01")],
        body.to_string().as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    assert!(up.problems().is_empty(), "{:?}", up.problems());
    let sent = up.requests().last().unwrap().json();
    let text = sent["messages"][0]["content"].to_string();
    assert!(text.contains("What went wrong here?"), "{text}");
    assert!(text.contains("log line 5999"), "the tail is kept");
    assert!(text.starts_with("\"[Excerpt of "), "{text}");
    assert!(text.contains("lines left out"), "{text}");
    assert!(!text.contains("log line 3000\\n"), "the middle is left out");
    let id = a.header("x-ctxfold-conversation").unwrap().to_owned();
    let recs = records(&s, &id);
    assert!(
        recs.iter()
            .any(|r| r["type"] == "user"
                && r["content"].as_str().unwrap().contains("log line 3000\n")),
        "the log keeps the message whole"
    );
    let shown = s.json(&["c", "show", &id]);
    let c = &shown["compactions"][0];
    assert!(c["excerpt_chars"].is_u64(), "{shown}");
    assert_eq!(c["source"], "auto", "{shown}");
}

/// The fixed part (the tool definitions; the system prompt is the
/// conversation's system record, counted once, in the view) fills the
/// window as the messages do: `stats` and the conversation page count it,
/// from what the proxy last sent, and follow it when it changes.
#[test]
fn stats_and_the_page_count_the_system_prompt_and_tools_the_proxy_sent() {
    let up = Upstream::start(8_000);
    let s = Scratch::new();
    let p = proxy(&s, &config(&up, "window = 100000"), &[]);
    let url = format!("{}/v1/messages", p.base);
    let system = "You are a careful agent. ".repeat(400);
    // Claude Code's session id keys the conversation, whatever the tools.
    let user_id = claude_user_id("5b0c1f9e-fixed-part");
    let ask = |tools: Value, messages: &[Value]| {
        let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 200, "system": system,
            "tools": tools, "messages": messages, "metadata": {"user_id": user_id}});
        let a = post(
            &url,
            &[("x-api-key", KEY), ("anthropic-version", "2023-06-01")],
            body.to_string().as_bytes(),
        );
        assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
        a
    };
    let mut messages = vec![
        json!({"role": "user", "content": "Hello there."}),
        json!({"role": "assistant", "content": "Hi."}),
        json!({"role": "user", "content": "What now?"}),
    ];
    let one = json!([{"name": "read_file", "input_schema": {"type": "object"}}]);
    let a = ask(one, &messages);
    let id = a.header("x-ctxfold-conversation").unwrap().to_owned();
    let tokens = |a: &Answer, h: &str| a.header(h).unwrap().parse::<u64>().unwrap();
    let stats = s.json(&["stats", &id]);
    let fixed = stats["fixed"].as_u64().expect("the fixed part is recorded");
    assert!((1..100).contains(&fixed), "one small tool: {stats}");
    // The system prompt (10,000 characters) is counted once: in the view.
    let view = stats["total"]["view"].as_u64().unwrap();
    assert!((2_500..3_000).contains(&view), "{stats}");
    assert_eq!(stats["request"].as_u64().unwrap(), view + fixed, "{stats}");
    assert!(
        tokens(&a, "x-ctxfold-tokens-before") >= fixed,
        "the headers count it too"
    );
    let text = s.ok(&["stats", &id]);
    assert!(
        text.contains("fixed part") && text.contains(&fixed.to_string()),
        "{text}"
    );
    // Three more tools: the next request's fixed part is written at once.
    let many: Vec<Value> = (0..4)
        .map(|k| json!({"name": format!("tool_{k}"), "description": "Does a thing with a long description. ".repeat(20), "input_schema": {"type": "object"}}))
        .collect();
    let answer: Value = serde_json::from_slice(&a.body).unwrap();
    messages.push(json!({"role": "assistant", "content": answer["content"]}));
    messages.push(json!({"role": "user", "content": "And then?"}));
    let b = ask(Value::Array(many), &messages);
    assert_eq!(b.header("x-ctxfold-conversation"), Some(id.as_str()));
    let later = s.json(&["stats", &id])["fixed"].as_u64().unwrap();
    assert!(later > fixed + 500, "{later} after {fixed}");
    // The page: the fixed part, and the window's share counts it.
    let page = agent()
        .get(&format!("{}/ui/c/{id}", p.base))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    assert!(page.contains(&format!("data-tokens=\"{later}\"")), "{page}");
}

/// Claude Code's `metadata.user_id`: a JSON string holding its session.
fn claude_user_id(session: &str) -> String {
    json!({"device_id": "0f3e9a7c", "account_uuid": "acc-1234", "session_id": session}).to_string()
}

/// A request body with Claude Code's top-level shape, in its order
/// (RESEARCH.md: model, messages, system, tools, metadata, max_tokens,
/// thinking, context_management, stream, output_config).
fn claude_code_body(session: &str, messages: &[Value]) -> Value {
    json!({
        "model": "claude-sonnet-4-5",
        "messages": messages,
        "system": [
            {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
            {"type": "text", "text": "You are an interactive CLI tool that helps users with software engineering tasks.",
             "cache_control": {"type": "ephemeral"}}
        ],
        "tools": [
            {"name": "Bash", "description": "Run a shell command",
             "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
            {"name": "read_file", "description": "Read a file",
             "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
        ],
        "metadata": {"user_id": claude_user_id(session)},
        "max_tokens": 32000,
        "thinking": {"type": "enabled", "budget_tokens": 31999, "display": "omitted"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "stream": false,
        "output_config": {"effort": "high"}
    })
}

/// Claude Code's opening messages: a user message of text blocks starting
/// with `<system-reminder>`, then the `role: "system"` message it sends at
/// `messages[1]`.
fn claude_code_opening(task: &str) -> Vec<Value> {
    vec![
        json!({"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\nCodebase conventions: run the tests.\n</system-reminder>"},
            {"type": "text", "text": task}
        ]}),
        json!({"role": "system", "content": "The user has enabled the concise output style.\nKeep answers short."}),
    ]
}

/// A Claude Code session: sends `messages` and runs every tool call the
/// model makes until it answers with text. Returns every answer.
fn claude_code_agent(
    p: &Proxy,
    session: &str,
    messages: &mut Vec<Value>,
    result_bytes: usize,
) -> Vec<Answer> {
    let mut answers = Vec::new();
    loop {
        let body = claude_code_body(session, messages);
        let a = post(
            &format!("{}/v1/messages", p.base),
            &[
                ("x-api-key", KEY),
                ("anthropic-version", "2023-06-01"),
                ("user-agent", "claude-cli/2.1.332 (external, cli)"),
            ],
            body.to_string().as_bytes(),
        );
        assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
        let content = a.json()["content"].clone();
        messages.push(json!({"role": "assistant", "content": content}));
        answers.push(a);
        let calls: Vec<Value> = content
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .cloned()
            .collect();
        if calls.is_empty() {
            return answers;
        }
        let results: Vec<Value> = calls
            .iter()
            .map(|c| {
                json!({"type": "tool_result", "tool_use_id": c["id"],
                "content": file_text(c["input"]["path"].as_str().unwrap(), result_bytes)})
            })
            .collect();
        messages.push(json!({"role": "user", "content": results}));
    }
}

fn meta_of(s: &Scratch, id: &str) -> Value {
    serde_json::from_slice(
        &std::fs::read(
            s.path()
                .join(".ctxfold/conversations")
                .join(id)
                .join("meta.json"),
        )
        .unwrap(),
    )
    .unwrap()
}

#[test]
fn claude_codes_system_message_is_recorded_and_goes_upstream_as_sent() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = proxy(&s, &config(&up, "window = 1000000"), &[]);
    let session = "5f7c2a9e-1d2b-4c3a-9e8f-0a1b2c3d4e5f";
    let mut messages = claude_code_opening("Read the modules and fix the bug steps=3");
    let answers = claude_code_agent(&p, session, &mut messages, 2_000);
    assert_eq!(answers.len(), 4);
    assert!(up.problems().is_empty(), "{:?}", up.problems());
    let id = answers[0]
        .header("x-ctxfold-conversation")
        .unwrap()
        .to_owned();
    for a in &answers {
        assert_eq!(a.header("x-ctxfold-conversation"), Some(id.as_str()));
    }
    assert!(
        !metrics(&p).contains("fail_open_total{"),
        "nothing failed open"
    );
    // Recorded: the system message in place, not as the user's words.
    let recs = records_when(&s, &id, |r| count(r, "assistant") > 0);
    let systems: Vec<&Value> = recs.iter().filter(|r| r["type"] == "system").collect();
    assert_eq!(
        systems.len(),
        2,
        "the top-level one and the message: {systems:?}"
    );
    assert_eq!(systems[1]["content"], messages[1]["content"], "{systems:?}");
    assert_eq!(
        systems[1]["metadata"]["anthropic_system_message"],
        json!(true)
    );
    assert!(recs.iter().filter(|r| r["type"] == "user").all(|r| {
        !r["content"]
            .as_str()
            .unwrap()
            .contains("concise output style")
    }));
    assert_eq!(count(&recs, "tool_result"), 3);
    // Its title is the user's own words, and it names its session.
    let ls = s.json(&["c", "ls"]);
    let ls = ls.as_array().unwrap();
    assert_eq!(ls.len(), 1, "{ls:?}");
    assert_eq!(ls[0]["title"], "Read the modules and fix the bug steps=3");
    let meta = meta_of(&s, &id);
    assert_eq!(
        meta["extras"]["proxy"]["session"],
        json!({"agent": "claude-code", "id": session})
    );
    assert_eq!(
        meta["extras"]["proxy"]["key"],
        json!(format!("session:claude-code:{session}"))
    );

    // With a compaction in force the body is rendered from the view: the
    // system message and every field ctxfold does not interpret still
    // reach the upstream byte for byte, in the client's order.
    s.ok(&["c", "compact", &id, "-t", "--keep-last", "0"]);
    messages.push(json!({"role": "user", "content": "and the tests? steps=0"}));
    // The fields spelled as no serializer here would write them again
    // (indented, spaced), to show they are the client's bytes.
    let client = claude_code_body(session, &messages);
    let spelled = |v: &Value| {
        serde_json::to_string_pretty(v)
            .unwrap()
            .replace(": ", " : ")
    };
    let body = format!(
        "{{ {} }}",
        client
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| if k == "messages" {
                format!("\"{k}\":{v}")
            } else {
                format!("\"{k}\":{}", spelled(v))
            })
            .collect::<Vec<_>>()
            .join(" ,\n")
    );
    let a = post(
        &format!("{}/v1/messages", p.base),
        &[("user-agent", "claude-cli/2.1.332 (external, cli)")],
        body.as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    assert_eq!(a.header("x-ctxfold-conversation"), Some(id.as_str()));
    let seen = up.requests().last().unwrap().clone();
    assert_ne!(
        seen.body,
        body.as_bytes(),
        "the view is sent, not the request"
    );
    let sent = seen.json();
    let folded = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .all(|b| b["content"].to_string().len() < 500);
    assert!(folded, "the tool results are folded: {sent}");
    let sent_text = String::from_utf8(seen.body.clone()).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), client);
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&sent),
        keys(&client),
        "the client's keys, in its order"
    );
    for k in [
        "model",
        "system",
        "tools",
        "metadata",
        "max_tokens",
        "thinking",
        "context_management",
        "stream",
        "output_config",
    ] {
        let raw = format!("\"{k}\":{}", spelled(&client[k]));
        assert!(body.contains(&raw), "the client's own text of {k}");
        assert!(
            sent_text.contains(&raw),
            "{k} reached the upstream as sent: {raw}\nin {sent_text}"
        );
    }
    assert_eq!(
        sent["messages"][1], messages[1],
        "the system message, in place"
    );
    let raw_system = messages[1].to_string();
    assert!(
        sent_text.contains(&raw_system),
        "byte for byte: {raw_system}"
    );
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}

#[test]
fn agent_sessions_name_their_conversations_and_a_history_the_agent_compacted_forks() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = proxy(&s, &config(&up, ""), &[]);
    // Two Claude Code sessions in one folder start alike: same system
    // prompt, tools and first message.
    let mut one = claude_code_opening("Tidy the imports steps=1");
    let mut two = one.clone();
    let a1 = claude_code_agent(&p, "session-one", &mut one, 100);
    let a2 = claude_code_agent(&p, "session-two", &mut two, 100);
    let c1 = a1[0].header("x-ctxfold-conversation").unwrap().to_owned();
    let c2 = a2[0].header("x-ctxfold-conversation").unwrap().to_owned();
    assert_ne!(c1, c2, "two sessions, two conversations");
    assert_eq!(a2[0].header("x-ctxfold-history"), Some("new"));
    assert!(
        a1[1..]
            .iter()
            .all(|a| a.header("x-ctxfold-conversation") == Some(c1.as_str()))
    );
    assert_eq!(a1[1].header("x-ctxfold-history"), Some("continued"));
    // The header still wins over the session.
    let mut named = claude_code_opening("Tidy the imports steps=0");
    let body = claude_code_body("session-one", &named).to_string();
    let a = post(
        &format!("{}/v1/messages", p.base),
        &[("x-ctxfold-conversation", "by-name")],
        body.as_bytes(),
    );
    let by_name = a.header("x-ctxfold-conversation").unwrap().to_owned();
    assert_ne!(by_name, c1);
    assert_eq!(
        meta_of(&s, &by_name)["extras"]["proxy"]["key"],
        json!("header:by-name")
    );
    named.clear();
    // Session one compacts its own history (Claude Code's /compact: a
    // summary as the first user message): it forks, naming its origin.
    let mut compacted = vec![
        json!({"role": "user", "content": [{"type": "text", "text":
            "This session is being continued from a previous conversation. Summary: imports tidied."}]}),
        json!({"role": "system", "content": "The user has enabled the concise output style.\nKeep answers short."}),
        json!({"role": "user", "content": "now the docs steps=0"}),
    ];
    let a = claude_code_agent(&p, "session-one", &mut compacted, 100);
    assert_eq!(a[0].header("x-ctxfold-history"), Some("forked"));
    let fork = a[0].header("x-ctxfold-conversation").unwrap().to_owned();
    let meta = meta_of(&s, &fork);
    assert_eq!(meta["extras"]["proxy"]["forked_from"], json!(c1));
    assert_eq!(
        meta["extras"]["proxy"]["session"]["id"],
        json!("session-one")
    );

    // Codex: two developer messages, a user message holding
    // <environment_context>, then the task; its session in
    // prompt_cache_key and client_metadata; reasoning kept encrypted.
    let codex = |session: &str, input: &[Value]| {
        json!({"model": "gpt-5-codex", "instructions": "You are Codex, a coding agent.",
            "input": input,
            "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
                      {"type": "function", "name": "read_file", "parameters": {"type": "object"}}],
            "tool_choice": "auto", "parallel_tool_calls": false, "reasoning": {"summary": "auto"},
            "store": false, "stream": true, "include": ["reasoning.encrypted_content"],
            "prompt_cache_key": session, "client_metadata": {"session_id": session}})
        .to_string()
    };
    let opening = vec![
        json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions instructions>sandbox: none</permissions instructions>"}]}),
        json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "# Collaboration\nWork autonomously."}]}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/home/dev/app</cwd>\n  <shell>bash</shell>\n</environment_context>"}]}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Rename the crate steps=2"}]}),
        // Already under way when the proxy sees it: a reasoning item with
        // its encrypted content, a call and its output.
        json!({"type": "reasoning", "id": "rs_1", "summary": [], "content": null, "encrypted_content": "gAAAAB-opaque=="}),
        json!({"type": "function_call", "name": "read_file", "arguments": "{\"path\":\"src/m0.rs\"}", "call_id": "call_0"}),
        json!({"type": "function_call_output", "call_id": "call_0", "output": "// src/m0.rs"}),
    ];
    let codex_headers = [
        ("authorization", "Bearer sk-test-SECRET-0123456789abcdef"),
        ("originator", "codex_exec"),
        (
            "user-agent",
            "codex_exec/0.171.0 (Ubuntu 24.4.0; x86_64) xterm",
        ),
    ];
    let url = format!("{}/v1/responses", p.base);
    let mut ids = Vec::new();
    for session in ["019a-codex-one", "019a-codex-two"] {
        let body = codex(session, &opening);
        let a = post(&url, &codex_headers, body.as_bytes());
        assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
        assert_eq!(
            up.requests().last().unwrap().body,
            body.as_bytes(),
            "nothing folded: the request as sent"
        );
        let id = a.header("x-ctxfold-conversation").unwrap().to_owned();
        assert_eq!(a.header("x-ctxfold-history"), Some("new"));
        let meta = meta_of(&s, &id);
        assert_eq!(
            meta["extras"]["proxy"]["key"],
            json!(format!("session:codex:{session}"))
        );
        assert_eq!(meta["title"], "Rename the crate steps=2");
        ids.push(id);
    }
    assert_ne!(ids[0], ids[1], "two Codex sessions, two conversations");
    let recs = records(&s, &ids[0]);
    let reasoning = recs.iter().find(|r| r["type"] == "reasoning").unwrap();
    assert_eq!(
        reasoning["metadata"]["responses_item"]["encrypted_content"],
        json!("gAAAAB-opaque==")
    );
    assert_eq!(count(&recs, "system"), 2, "the developer messages");
    // The same session, on with its history: the same conversation.
    // (Codex sends the answer's call back as it got it, then its output.)
    let recs = records_when(&s, &ids[0], |r| count(r, "tool_call") == 2);
    let call = recs
        .iter()
        .rev()
        .find(|r| r["type"] == "tool_call")
        .unwrap();
    let mut more = opening.clone();
    more.push(json!({"type": "function_call", "name": "read_file",
        "arguments": call["arguments"].to_string(), "call_id": call["id"]}));
    more.push(
        json!({"type": "function_call_output", "call_id": call["id"], "output": "// src/m1.rs"}),
    );
    let a = post(
        &url,
        &codex_headers,
        codex("019a-codex-one", &more).as_bytes(),
    );
    assert_eq!(a.header("x-ctxfold-conversation"), Some(ids[0].as_str()));
    assert_eq!(a.header("x-ctxfold-history"), Some("continued"));
    // Six conversations: two Claude Code sessions, the named one, the
    // fork, two Codex sessions.
    assert_eq!(s.json(&["c", "ls"]).as_array().unwrap().len(), 6);
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}

#[test]
fn what_the_proxy_does_not_know_goes_as_it_came_and_what_fails_open_names_the_agent() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = proxy(&s, &config(&up, "window = 1000000"), &[]);
    let url = format!("{}/v1/messages", p.base);
    let claude = [("user-agent", "claude-cli/2.1.332 (external, cli)")];
    // A block type and a role the proxy does not know: recorded whole.
    let mut messages = claude_code_opening("Look at this steps=0");
    messages.push(json!({"role": "user", "content": [
        {"type": "future_block", "payload": {"x": [1, 2]}},
        {"type": "text", "text": "what is it?"}]}));
    messages.push(json!({"role": "critic", "content": "a role from a newer API"}));
    let body = claude_code_body("s-opaque", &messages).to_string();
    let a = post(&url, &claude, body.as_bytes());
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    assert_eq!(a.header("x-ctxfold-history"), Some("new"));
    assert_eq!(up.requests().last().unwrap().body, body.as_bytes());
    let id = a.header("x-ctxfold-conversation").unwrap().to_owned();
    let recs = records(&s, &id);
    assert!(
        recs.iter()
            .any(|r| r["type"] == "anthropic_block" && r["block"]["type"] == "future_block"),
        "{recs:?}"
    );
    assert!(
        recs.iter()
            .any(|r| r["type"] == "anthropic_message" && r["message"]["role"] == "critic"),
        "{recs:?}"
    );
    // A compaction in force: both still go as they came.
    s.ok(&["c", "compact", &id, "-t", "--keep-last", "0"]);
    let a = post(&url, &claude, body.as_bytes());
    assert_eq!(a.status, 200);
    let sent = up.requests().last().unwrap().json();
    let n = sent["messages"].as_array().unwrap().len();
    assert_eq!(sent["messages"][n - 1], messages[messages.len() - 1]);
    assert_eq!(sent["messages"][n - 2], messages[messages.len() - 2]);
    assert!(!metrics(&p).contains("fail_open_total{"));

    // What still cannot be read fails open, and the log says whose it was.
    let mut bad = claude_code_opening("Broken steps=0");
    bad.push(json!({"role": "assistant", "content": [{"type": "tool_use", "name": "Bash"}]}));
    let body = claude_code_body("s-bad", &bad).to_string();
    let a = post(&url, &claude, body.as_bytes());
    assert_eq!(a.status, 400, "the fake refuses the unpaired call, as sent");
    assert_eq!(up.requests().last().unwrap().body, body.as_bytes());
    assert!(metrics(&p).contains("fail_open_total{endpoint=\"messages\"} 1"));
    let said = || p.log.lock().unwrap().join("\n");
    for _ in 0..50 {
        if said().contains("claude-code (claude-cli/2.1.332") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let log = said();
    assert!(
        log.contains("claude-code (claude-cli/2.1.332 (external, cli))")
            && log.contains("body keys: model, messages, system, tools, metadata, max_tokens, thinking, context_management, stream, output_config"),
        "{log}"
    );
    assert!(!log.contains(KEY));
}

#[test]
fn the_list_shows_when_the_proxy_last_appended() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = proxy(&s, &config(&up, ""), &[]);
    let mut messages = claude_code_opening("Count the files steps=1");
    let a = claude_code_agent(&p, "s-used", &mut messages, 100);
    let id = a[0].header("x-ctxfold-conversation").unwrap().to_owned();
    records_when(&s, &id, |r| count(r, "assistant") > 0);
    // Made older by hand: the proxy's next append makes it now again.
    let path = s
        .path()
        .join(".ctxfold/conversations")
        .join(&id)
        .join("meta.json");
    let mut meta = meta_of(&s, &id);
    meta["last_used_at"] = json!("2020-01-01T00:00:00Z");
    std::fs::write(&path, meta.to_string()).unwrap();
    drop(p);
    let p = proxy(&s, &config(&up, ""), &[]);
    messages.push(json!({"role": "user", "content": "and again steps=0"}));
    claude_code_agent(&p, "s-used", &mut messages, 100);
    let ls = s.json(&["c", "ls"]);
    let used = ls[0]["last_used_at"].as_str().unwrap().to_owned();
    assert!(used.as_str() > "2026-01-01", "{ls}");
    let text = s.ok(&["c", "ls"]);
    assert!(!text.contains("2020-01-01"), "{text}");
}
