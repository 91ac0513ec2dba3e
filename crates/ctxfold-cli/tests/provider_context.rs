//! The providers' own context management through `ctxfold proxy` (issue
//! 29), called by the official SDKs (`sdk/context_management.py`):
//! Anthropic's `context_management` edits and on-demand compaction,
//! OpenAI's `context_management` compaction and `/v1/responses/compact`.
//!
//! In front of a provider that implements them (a fake that compacts as
//! documented, `common/provider.rs`): the provider gets the client's
//! bytes, ctxfold does not compact on top, records the compaction blocks
//! and items as they came, and folds what the provider no longer sees
//! (source `provider`) while the log keeps it.
//!
//! In front of the local llama.cpp server, which implements none, with
//! `context_management = "emulate"`: ctxfold provides them as compactions
//! of its own (source `client`), the SDKs get answers of the documented
//! shapes, the blocks and items sent back continue the conversation, and
//! `--reset` brings the history back into the next request.

// A test may panic on what it did not expect, and print.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod common;

use common::provider::Provider;
use common::proxy::Proxy;
use common::{Scratch, records};
use serde_json::{Value, json};

/// Run the SDK script against the proxy at `base`, the compaction
/// triggers at `trigger` input tokens (`extra`: the script's options):
/// its conversations, one a line, and every request body the SDKs sent,
/// as they sent it.
fn run_sdks(base: &str, trigger: u32, extra: &[&str]) -> (Vec<Value>, Vec<String>) {
    let trigger = trigger.to_string();
    let args: Vec<&str> = [base, trigger.as_str()]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    let mut runs = common::sdk_script("context_management.py", &args);
    let sent = runs.pop().unwrap()["sent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap().to_owned())
        .collect();
    (runs, sent)
}

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

/// The records once `done` holds of them: an answer is recorded after
/// its last byte reached the client.
fn records_when(s: &Scratch, id: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let r = common::records_when(s, id, &done);
    assert!(done(&r), "{id}: never came to the state wanted: {r:#?}");
    r
}

/// The blocks or items the log keeps whole of the provider's compactions.
fn kept_compactions(recs: &[Value]) -> Vec<Value> {
    recs.iter()
        .filter_map(|r| r["block"].as_object().or(r["item"].as_object()))
        .filter(|b| b["type"] == "compaction")
        .map(|b| Value::Object(b.clone()))
        .collect()
}

fn by_provider(recs: &[Value]) -> Vec<&Value> {
    recs.iter()
        .filter(|r| r["type"] == "compaction" && r["source"] == "provider")
        .collect()
}

#[test]
#[ignore = "needs the OpenAI and Anthropic SDKs: run through scripts/test, which installs them"]
fn the_providers_context_management_passes_through_and_is_recorded() {
    let up = Provider::start();
    let s = Scratch::new();
    // A window so small that ctxfold would compact every request of its
    // own: it must not, where the provider manages the context.
    let p = Proxy::start(
        &s,
        &format!(
            "[proxy]\nopenai = \"{b}\"\nanthropic = \"{b}\"\nwindow = 400\n[compaction.auto.rule]\nkeep_last = 1\ntool_calls = \"strip\"\n",
            b = up.base
        ),
    );
    let (runs, sent) = run_sdks(&p.base, 50_000, &[]);
    assert_eq!(runs.len(), 6, "{runs:?}");
    assert!(up.problems().is_empty(), "{:?}", up.problems());

    for run in &runs[..4] {
        // One conversation for the three turns, the compacted one included.
        let ids = run["ids"].as_array().unwrap();
        assert!(
            ids.iter().all(|i| *i == ids[0]),
            "{run}: {} {}",
            s.ok(&["c", "print", ids[0].as_str().unwrap()]),
            s.ok(&["c", "print", ids[1].as_str().unwrap()])
        );
        let id = ids[0].as_str().unwrap();
        // The provider compacted at the second turn; the SDK got it.
        let got = run["compactions"].as_array().unwrap();
        assert_eq!(got.len(), 1, "{run}");
        let recs = records_when(&s, id, |r| {
            r.iter().filter(|x| x["type"] == "assistant").count() >= 3
        });
        // Recorded as it came (the SDK's copy is the provider's block).
        assert_eq!(kept_compactions(&recs), got.clone(), "{run}");
        // What came before it is folded by the provider, once.
        let folded = by_provider(&recs);
        assert_eq!(folded.len(), 1, "{run}: {recs:#?}");
        let summary = folded[0]["summary"]["text"].as_str().unwrap();
        if run["api"] == "anthropic" {
            assert!(summary.starts_with("Summary "), "{summary}");
            // The edits the provider applied are kept with the answer.
            assert!(
                recs.iter().any(
                    |r| r["metadata"]["anthropic_context_management"]["applied_edits"][0]["type"]
                        == "clear_thinking_20251015"
                ),
                "{recs:#?}"
            );
        } else {
            assert!(summary.contains("encrypted"), "{summary}");
        }
        // ctxfold did not compact on top of the provider.
        assert!(
            !recs
                .iter()
                .any(|r| r["type"] == "compaction" && r["source"] != "provider"),
            "{recs:#?}"
        );
        assert_eq!(run["texts"].as_array().unwrap().len(), 3);
        // `c show` says who folded it.
        let show = s.ok(&["c", "show", id]);
        assert!(show.contains("[active, by provider]"), "{show}");
        // The view folds it, the log keeps it; --reset brings it back.
        let view = s.json(&["c", "print", id, "--compacted"]);
        assert!(
            !view.to_string().contains("Read a.rs"),
            "the first turn is out of the provider's view: {view}"
        );
        assert!((records(&s, id).iter()).any(|r| {
            r["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Read a.rs"))
        }));
    }

    // Every request the provider manages reached it as the client sent
    // it, byte for byte: the parameters, and the compaction blocks and
    // items sent back.
    let reqs = up.requests();
    let mut managed = 0;
    for r in &reqs {
        let text = String::from_utf8(r.body.clone()).unwrap();
        if text.contains("\"context_management\"")
            || text.contains("\"compaction\"")
            || r.path.ends_with("/compact")
        {
            managed += 1;
            assert!(
                sent.contains(&text),
                "{} reached the provider changed: {text}",
                r.path
            );
        }
    }
    assert!(managed >= 14, "{managed} requests the provider manages");
    for r in &reqs {
        let b = r.json();
        match r.path.as_str() {
            "/v1/messages" if b["context_management"].is_object() => {
                // What the script sends, to the key.
                assert_eq!(
                    b["context_management"],
                    json!({"edits": [
                        {"type": "clear_thinking_20251015", "keep": "all"},
                        {"type": "clear_tool_uses_20250919",
                         "trigger": {"type": "input_tokens", "value": 50000},
                         "keep": {"type": "tool_uses", "value": 2},
                         "exclude_tools": ["web_search"], "clear_tool_inputs": false},
                        {"type": "compact_20260112",
                         "trigger": {"type": "input_tokens", "value": 50000},
                         "instructions": "Keep the file names."}
                    ]})
                );
            }
            "/v1/responses" if b["context_management"].is_array() => {
                assert_eq!(
                    b["context_management"],
                    json!([{"type": "compaction", "compact_threshold": 50000}])
                );
            }
            _ => {}
        }
    }
    let third = |path: &str, stream: bool| {
        reqs.iter()
            .filter(|r| r.path == path && (r.json()["stream"] == json!(true)) == stream)
            .nth(2)
            .unwrap()
            .json()
    };
    for (path, key, stream) in [
        ("/v1/messages", "messages", false),
        ("/v1/messages", "messages", true),
        ("/v1/responses", "input", false),
        ("/v1/responses", "input", true),
    ] {
        let sent = third(path, stream);
        // The whole history, the provider's compaction in it, unfolded.
        let history = sent[key].to_string();
        assert!(history.contains("Read a.rs"), "{history}");
        assert!(history.contains("\"compaction\""), "{history}");
    }

    // `/v1/responses/compact`: forwarded, its compaction item recorded in
    // the conversation, which goes on with the compacted history.
    let run = &runs[4];
    let ids = run["ids"].as_array().unwrap();
    assert_eq!(ids[0], ids[1], "{run}");
    assert_eq!(ids[0], ids[2], "the compacted history goes on: {run}");
    assert_eq!(run["texts"][1], "response.compaction");
    let id = ids[0].as_str().unwrap();
    let recs = records_when(&s, id, |r| {
        r.iter().filter(|x| x["type"] == "assistant").count() >= 2
    });
    assert_eq!(
        kept_compactions(&recs),
        run["compactions"].as_array().unwrap().clone(),
        "{}",
        s.ok(&["c", "print", id])
    );
    assert_eq!(by_provider(&recs).len(), 1, "{recs:#?}");
    // The compact call's repeated user messages were not recorded twice.
    let users = recs.iter().filter(|r| r["type"] == "user").count();
    assert_eq!(users, 3, "{recs:#?}");
    assert!(reqs.iter().any(|r| r.path == "/v1/responses/compact"));

    // Anthropic's on-demand compaction: the signed block alone, then sent
    // back first in place of what it summarizes; the conversation goes on.
    let run = &runs[5];
    let ids = run["ids"].as_array().unwrap();
    assert!(
        ids.iter().all(|i| *i == ids[0]),
        "{run}: {} {}",
        s.ok(&["c", "print", ids[0].as_str().unwrap(), "--format", "json"]),
        s.ok(&["c", "print", ids[2].as_str().unwrap(), "--format", "json"])
    );
    assert_eq!(run["texts"][1], "compaction");
    let id = ids[0].as_str().unwrap();
    let recs = records_when(&s, id, |r| {
        r.iter()
            .filter(|x| x["type"] == "assistant" && x["content"] != "")
            .count()
            >= 2
    });
    assert_eq!(
        kept_compactions(&recs),
        run["compactions"].as_array().unwrap().clone()
    );
    assert_eq!(by_provider(&recs).len(), 1, "{recs:#?}");
    let users = recs.iter().filter(|r| r["type"] == "user").count();
    assert_eq!(users, 3, "{recs:#?}");
    let asked = (reqs.iter()).any(|r| r.json()["compaction"] == json!({"type": "summarize"}));
    assert!(asked, "the parameter reached the provider as sent");
}

#[test]
#[ignore = "needs the SDKs and the local model: run through scripts/test, which installs and starts them"]
fn the_providers_context_management_is_emulated_for_a_local_model() {
    let llama = std::env::var("CTXFOLD_LOCAL_MODEL_URL")
        .expect("CTXFOLD_LOCAL_MODEL_URL: start the model with `scripts/local-model start`");
    let s = Scratch::new();
    let p = emulating_proxy(&s, &llama);
    // Triggers low enough for a few short turns of a small model. The
    // Responses conversation the script streams is not streamed here:
    // llama.cpp's Responses stream leaves out the events' `output_index`
    // and `content_index`, without which the OpenAI SDK's stream reader
    // fails, proxy or not (its streamed answers with a compaction are
    // shown by the test above and `ctxfold-wire`'s).
    let (runs, _) = run_sdks(&p.base, 60, &["plain-responses-stream"]);
    check_emulated(&s, &runs);

    // `--reset` brings the history back into the next request. Before
    // it the proxy sends something other than the client's history (its
    // estimates differ: the model's short answers can make the summary
    // longer than what it folds, so not necessarily less); after it, all
    // of it: the local model counts exactly what it counts for the same
    // messages sent to it straight, without the compaction blocks (which
    // the proxy strips for an upstream without them).
    let run = &runs[0];
    let id = run["ids"][0].as_str().unwrap();
    let mut messages = run["messages"].as_array().unwrap().clone();
    let input = |a: &Value| {
        a["usage"]["input_tokens"].as_u64().unwrap()
            + a["usage"]["cache_read_input_tokens"].as_u64().unwrap_or(0)
    };
    let send = |base: &str, messages: &[Value]| {
        let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": messages});
        let mut resp = ureq::post(format!("{base}/v1/messages"))
            .header("content-type", "application/json")
            .header("x-api-key", "sk-test")
            .send(body.to_string())
            .unwrap();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        let said = (
            header("x-ctxfold-conversation"),
            header("x-ctxfold-tokens-before").map(|t| t.parse::<u64>().unwrap()),
            header("x-ctxfold-tokens-after").map(|t| t.parse::<u64>().unwrap()),
        );
        let a: Value = serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
        (a, said)
    };
    let mut ask = |text: &str| {
        messages.push(json!({"role": "user", "content": text}));
        let (a, (conversation, before, after)) = send(&p.base, &messages);
        assert_eq!(conversation.as_deref(), Some(id), "{a}");
        let sent = messages.clone();
        messages.push(json!({"role": "assistant", "content": a["content"]}));
        (input(&a), before.unwrap(), after.unwrap(), sent)
    };
    let (_, before, after, _) = ask("One more thing.");
    assert_ne!(
        after, before,
        "a compaction is in force: the proxy sends its view, not the client's history"
    );
    s.ok(&["c", "compact", id, "--reset"]);
    let (whole, before, after, sent) = ask("And another.");
    assert_eq!(after, before, "after --reset nothing is folded");
    let mut plain = sent;
    for m in &mut plain {
        if let Some(Value::Array(blocks)) = m.get_mut("content") {
            blocks.retain(|b| b["type"] != "compaction");
        }
    }
    plain.retain(|m| !matches!(&m["content"], Value::Array(b) if b.is_empty()));
    let (direct, _) = send(&llama, &plain);
    assert_eq!(
        whole,
        input(&direct),
        "after --reset the model gets the whole history, as it would without the proxy"
    );
}

/// A history the provider replaced with its compaction goes on in its
/// conversation after the proxy is started again: the conversation's
/// metadata keeps the key of its latest provider compaction (the index in
/// memory is gone with the process), and the compaction read back from
/// the log is not folded a second time. Anthropic's on-demand compaction,
/// sent as a client would (the block first, then the next turn).
#[test]
fn a_compacted_history_goes_on_in_its_conversation_after_a_restart() {
    let up = Provider::start();
    let s = Scratch::new();
    let config = format!(
        "[proxy]\nopenai = \"{b}\"\nanthropic = \"{b}\"\n",
        b = up.base
    );
    let send = |base: &str, body: Value| -> (String, Value) {
        let mut resp = ureq::post(format!("{base}/v1/messages"))
            .header("content-type", "application/json")
            .header("x-api-key", "sk-test")
            .header("anthropic-beta", "compact-2026-09-04")
            .send(body.to_string())
            .unwrap();
        let id = resp.headers()["x-ctxfold-conversation"]
            .to_str()
            .unwrap()
            .to_owned();
        let a: Value = serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
        (id, a)
    };
    let ask = |text: &str| json!({"role": "user", "content": text});
    let mut messages = vec![ask("Rename the parser's entry type.")];
    let proxy = Proxy::start(&s, &config);
    let (id, first) = send(
        &proxy.base,
        json!({"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": messages}),
    );
    messages.push(json!({"role": "assistant", "content": first["content"]}));
    messages.push(ask("Now update its callers."));
    let (same, compacted) = send(
        &proxy.base,
        json!({"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": messages,
               "compaction": {"type": "summarize"}}),
    );
    assert_eq!(same, id);
    assert_eq!(compacted["stop_reason"], "compaction", "{compacted}");
    records_when(&s, &id, |r| !by_provider(r).is_empty());
    // Killed once the answer and what it keeps are written.
    let meta = s
        .path()
        .join(format!(".ctxfold/conversations/{id}/meta.json"));
    let keeps = || {
        let text = std::fs::read_to_string(&meta).unwrap_or_default();
        let v: Value = serde_json::from_str(&text).unwrap_or_default();
        v["extras"]["proxy"]["compaction"]
            .as_str()
            .is_some_and(|k| k.starts_with("compaction:"))
    };
    for _ in 0..100 {
        if keeps() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(keeps(), "{}", std::fs::read_to_string(&meta).unwrap());
    drop(proxy);

    let proxy = Proxy::start(&s, &config);
    let next = vec![
        json!({"role": "assistant", "content": compacted["content"]}),
        ask("And run the tests."),
    ];
    let (after, answer) = send(
        &proxy.base,
        json!({"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": next}),
    );
    assert_eq!(after, id, "the restarted proxy went on elsewhere: {answer}");
    let recs = records_when(&s, &id, |r| {
        r.iter().filter(|r| r["type"] == "user").count() == 3
    });
    assert_eq!(by_provider(&recs).len(), 1, "{recs:#?}");
    let listed = s.json(&["c", "ls"]);
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(1),
        "one conversation: {listed}"
    );
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}

/// Anthropic's `clear_tool_uses_20250919` emulated in a tool loop (the
/// scripted upstream of the proxy tests plays the agent, and has no
/// context management): past its trigger, the old tool results are folded
/// by a compaction of the client's, the upstream gets them as one line
/// each and never the parameter, and the answer says what was cleared;
/// with a `clear_at_least` it cannot reach, nothing is cleared.
#[test]
fn clear_tool_uses_is_emulated_in_a_tool_loop() {
    let up = ctxfold_testkit::upstream::Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = emulating_proxy(&s, &up.base);
    let edit = |least: u64| {
        json!({"edits": [{"type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 1500},
            "keep": {"type": "tool_uses", "value": 1},
            "clear_at_least": {"type": "input_tokens", "value": least}}]})
    };
    // More than all of it at least: the provider would clear nothing.
    let (applied, id) = tool_loop(&p.base, &edit(10_000_000), "Read the modules steps=5");
    assert!(applied.is_empty(), "{applied:?}");
    assert!(
        !records(&s, &id).iter().any(|r| r["type"] == "compaction"),
        "cleared less than clear_at_least"
    );
    let (applied, id) = tool_loop(&p.base, &edit(100), "Read the tests steps=5");
    assert!(up.problems().is_empty(), "{:?}", up.problems());
    // The answers said what was cleared, as the provider's do.
    assert!(!applied.is_empty(), "no edit applied");
    for e in &applied {
        assert_eq!(e["type"], "clear_tool_uses_20250919", "{e}");
        assert!(e["cleared_tool_uses"].as_u64().unwrap() >= 1, "{e}");
        assert!(e["cleared_input_tokens"].as_u64().unwrap() > 0, "{e}");
    }
    // The upstream never got the parameter, and its last request holds
    // fewer whole results than the client sent.
    let reqs = up.requests();
    assert!(
        reqs.iter()
            .all(|r| r.json().get("context_management").is_none())
    );
    let last = reqs.last().unwrap().json().to_string();
    let whole = last.matches("fn parse(line").count();
    assert!(
        whole < 40 * 4,
        "{whole} lines of results went upstream whole"
    );
    // Each is a compaction of the client's, stripping tool results.
    let recs = records(&s, &id);
    let by_client: Vec<&Value> = recs
        .iter()
        .filter(|r| r["type"] == "compaction" && r["source"] == "client")
        .collect();
    assert!(!by_client.is_empty(), "{recs:#?}");
    assert!(
        by_client
            .iter()
            .all(|c| c["tool_calls"] == "strip-responses"),
        "{by_client:#?}"
    );
    assert_eq!(
        recs.iter().filter(|r| r["type"] == "tool_result").count(),
        5
    );
}

/// A request that uses the providers' context management, which ctxfold
/// cannot read, is refused rather than sent on to an upstream that lacks
/// it (where it would fail, or silently do nothing).
#[test]
fn a_request_the_emulation_cannot_serve_does_not_fail_open() {
    let up = ctxfold_testkit::upstream::Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = emulating_proxy(&s, &up.base);
    let send = |path: &str, body: Value| {
        let r = ureq::post(format!("{}{path}", p.base))
            .config()
            .http_status_as_error(false)
            .build()
            .header("content-type", "application/json")
            .send(body.to_string())
            .unwrap();
        let status = r.status().as_u16();
        (status, r.into_body().read_to_string().unwrap())
    };
    // Messages ctxfold cannot read, with an edit.
    let (status, text) = send(
        "/v1/messages",
        json!({"model": "m", "max_tokens": 10, "messages": "not a list",
            "context_management": {"edits": [{"type": "compact_20260112"}]}}),
    );
    assert_eq!(status, 502, "{text}");
    assert!(text.contains("context management"), "{text}");
    // Responses input ctxfold cannot read, with Codex's trigger.
    let (status, text) = send(
        "/v1/responses",
        json!({"model": "m", "input": [{"type": "message", "role": 7}, {"type": "compaction_trigger"}]}),
    );
    assert_eq!(status, 502, "{text}");
    assert!(up.requests().is_empty(), "sent on: {:?}", up.requests());
    // The same unreadable body without them still fails open, as before.
    let (status, _) = send(
        "/v1/messages",
        json!({"model": "m", "messages": "not a list"}),
    );
    assert_eq!(status, 400, "the upstream's own answer");
    assert_eq!(up.requests().len(), 1);
}

/// The scripted agent's tool loop through the proxy at `base`, every
/// request with `cm` as its `context_management`, from the user's `task`:
/// the edits the answers said were applied, and the conversation.
fn tool_loop(base: &str, cm: &Value, task: &str) -> (Vec<Value>, String) {
    let file = "fn parse(line: &str) -> Option<Entry> { line.split_once('=').map(Entry::from) }\n"
        .repeat(40);
    let mut messages = vec![json!({"role": "user", "content": task})];
    let mut applied = Vec::new();
    let mut id = String::new();
    for _ in 0..20 {
        let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 100,
            "messages": messages, "context_management": cm});
        let mut resp = ureq::post(format!("{base}/v1/messages"))
            .header("content-type", "application/json")
            .header("x-api-key", "sk-test")
            .send(body.to_string())
            .unwrap();
        id = resp.headers()["x-ctxfold-conversation"]
            .to_str()
            .unwrap()
            .to_owned();
        let a: Value = serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
        if let Some(e) = a["context_management"]["applied_edits"].as_array() {
            applied.extend(e.iter().cloned());
        }
        messages.push(json!({"role": "assistant", "content": a["content"]}));
        let Some(call) = a["content"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["type"] == "tool_use")
        else {
            break;
        };
        // The scripted agent reads its progress from the path it asked for.
        let path = call["input"]["path"].as_str().unwrap();
        messages.push(json!({"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": call["id"], "content": format!("// {path}\n{file}")}]}));
    }
    (applied, id)
}

/// What every emulated run of the SDK script shows: each conversation went
/// on in one conversation, the SDK parsed compactions of the documented
/// shapes (readable, signed `ctxfold:`), and each is a compaction of the
/// client's in the log, listed by `c show`.
fn check_emulated(s: &Scratch, runs: &[Value]) {
    assert_eq!(runs.len(), 6, "{runs:?}");
    for run in runs {
        // The compacted history, sent back, goes on in one conversation.
        let ids = run["ids"].as_array().unwrap();
        assert!(ids.iter().all(|i| *i == ids[0]), "{run}");
        let id = ids[0].as_str().unwrap();
        // The SDK parsed a compaction of the documented shape.
        let got = run["compactions"].as_array().unwrap();
        assert!(!got.is_empty(), "{run}");
        for c in got {
            assert_eq!(c["type"], "compaction");
            match run["api"].as_str().unwrap() {
                "anthropic" | "on_demand" => {
                    assert!(c["content"].as_str().is_some_and(|t| !t.is_empty()), "{c}");
                    assert!(
                        c["signature"].as_str().unwrap().starts_with("ctxfold:"),
                        "{c}"
                    );
                }
                _ => {
                    // Readable, unlike the provider's.
                    let e = c["encrypted_content"].as_str().unwrap();
                    assert!(e.starts_with("ctxfold:") && e.len() > 30, "{c}");
                }
            }
        }
        // Each is one of ctxfold's compactions, the client's, undoable.
        let recs = records(s, id);
        let by_client = recs
            .iter()
            .filter(|r| r["type"] == "compaction" && r["source"] == "client")
            .count();
        assert!(by_client > 0, "{run}: {recs:#?}");
        assert!(by_provider(&recs).is_empty(), "{recs:#?}");
        let show = s.ok(&["c", "show", id]);
        assert!(show.contains("by client"), "{show}");
    }
    assert_eq!(runs[4]["texts"][1], "response.compaction");
    assert_eq!(runs[5]["texts"][1], "compaction");
}

/// The emulated answers, streamed too, as the official SDKs read them: in
/// front of the scripted upstream of the proxy tests, whose streams carry
/// every event's indices (llama.cpp's Responses stream does not).
#[test]
#[ignore = "needs the OpenAI and Anthropic SDKs: run through scripts/test, which installs them"]
fn the_emulated_answers_stream_as_the_sdks_read_them() {
    let up = ctxfold_testkit::upstream::Upstream::start(1_000_000);
    let s = Scratch::new();
    let p = emulating_proxy(&s, &up.base);
    let (runs, _) = run_sdks(&p.base, 60, &[]);
    assert!(up.problems().is_empty(), "{:?}", up.problems());
    check_emulated(&s, &runs);
    assert_eq!(runs[3]["stream"], true);
    // Nothing of the context management reached the upstream.
    for r in up.requests() {
        let body = String::from_utf8_lossy(&r.body);
        assert!(!body.contains("context_management"), "{}", r.path);
        assert!(!body.contains("\"compaction\""), "{}", r.path);
    }
}
