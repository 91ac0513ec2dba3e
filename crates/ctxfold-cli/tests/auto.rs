//! Automatic compaction through the real binary: between turns on
//! `conversation append`, by steps on `ctxfold compact FILE --auto`, the
//! trigger run once with `conversation compact --auto`, a process killed
//! while a summary is being made, and two processes compacting at once.

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
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Scratch, stderr};
use serde_json::{Value, json};

/// One ordinary turn as ctxfold JSONL records (no `seq`: append numbers
/// them).
fn turn_lines(k: usize) -> String {
    let records = [
        json!({"type": "turn_start"}),
        json!({"type": "user", "content": format!("Turn {k}: what does module {k} do?")}),
        json!({"type": "tool_call", "id": format!("t{k}"), "name": "read_file",
            "arguments": {"path": format!("src/m{k}.rs"), "pattern": "fn ".repeat(100)}}),
        json!({"type": "tool_result", "id": format!("t{k}"),
            "content": "let value = compute(input);\n".repeat(60), "is_error": false}),
        json!({"type": "assistant", "content": format!("Module {k} computes values; it has two tests.")}),
    ];
    records.iter().map(|r| format!("{r}\n")).collect()
}

fn append(s: &Scratch, id: &str, lines: &str, extra: &[&str]) -> Value {
    s.append_json(id, lines, extra)
}

/// A conversation holding one turn, and its id.
fn started(s: &Scratch) -> String {
    let f = s.path().join("first.jsonl");
    let first: String = turn_lines(0)
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v["seq"] = json!(i);
            v["ts"] = json!("2026-01-01T00:00:00Z");
            format!("{v}\n")
        })
        .collect();
    std::fs::write(&f, first).unwrap();
    s.import(&f)
}

/// Turns appended one by one with `[compaction.auto] enabled`: compactions
/// fire on completed turns only when the view is over the threshold, as
/// rolling bands that never overlap, keep the view under the window, and
/// `show` lists them as `auto`.
#[test]
fn appended_turns_fire_between_turn_compactions() {
    let s = Scratch::new();
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        "[compaction.auto]\nenabled = true\n",
    )
    .unwrap();
    let id = started(&s);
    let window = "6000";
    let mut fired_at = Vec::new();
    for k in 1..30 {
        let v = append(&s, &id, &turn_lines(k), &["--window", window]);
        let auto = &v["auto"];
        assert!(auto.is_object(), "a completed turn runs the trigger: {v}");
        if !auto["committed"].as_array().unwrap().is_empty() {
            fired_at.push(k + 1);
            assert!(auto["after"].as_u64() < auto["before"].as_u64(), "{auto}");
        } else {
            assert!(
                auto["before"].as_u64().unwrap() <= 4500 || auto["status"] != "skipped",
                "{auto}"
            );
        }
        let view = s.json(&["stats", &id])["total"]["view"].as_u64().unwrap();
        assert!(
            view < 6000,
            "turn {}: the view (~{view} tokens) stays under the window",
            k + 1
        );
    }
    assert!(fired_at.len() >= 2, "fired after turns {fired_at:?}");
    let shown = s.json(&["c", "show", &id]);
    let list = shown["compactions"].as_array().unwrap();
    // A firing is the rolling rule, and a band down to the target when the
    // rule alone did not reach it.
    assert!(list.len() >= fired_at.len() && list.len() <= 2 * fired_at.len());
    let mut last_to = 0;
    for c in list {
        assert_eq!(c["source"], "auto");
        // In force, or a band a later firing's summary covers whole: that
        // summary decides its turns now (and `show` says so).
        if c["status"] != "active" {
            let by = c["superseded_by"]
                .as_u64()
                .unwrap_or_else(|| panic!("neither active nor superseded: {c}"));
            let over = &list[by as usize - 1];
            assert!(
                over["summary"].is_object()
                    && over["status"] == "active"
                    && by > c["number"].as_u64().unwrap(),
                "{c} under {over}"
            );
        }
        let (from, to) = (
            c["from_turn"].as_u64().unwrap(),
            c["to_turn"].as_u64().unwrap(),
        );
        // A band starts after the last; a summary (the head checkpoint a
        // firing escalates to) merges the bands before it into one.
        assert!(
            c["summary"].is_object() || from > last_to || last_to == 0 && from >= 1,
            "bands overlap: {list:?}"
        );
        last_to = last_to.max(to);
    }
    // Every firing says the budget it worked to, the request's size before
    // and after, and its steps, in the JSON and the text of `show`.
    let text = s.ok(&["c", "show", &id]);
    for c in list {
        let f = &c["budget"];
        assert_eq!(f["window"], 6000, "{c}");
        let n = |k: &str| f[k].as_u64().unwrap_or_else(|| panic!("{k}: {c}"));
        assert!(n("fixed") + n("reserve") < n("window"), "{c}");
        assert!(
            n("target") <= n("trigger") && n("trigger") <= n("window"),
            "{c}"
        );
        assert!(n("after") < n("before"), "{c}");
        let steps: Vec<&str> = f["escalation"]
            .as_array()
            .unwrap_or_else(|| panic!("{c}"))
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        assert_eq!(steps.first(), Some(&"rule"), "{c}");
        let mut line = format!(
            "      budget: window 6000, fixed {}, reserve {}, trigger {}, target {}; the request ~{} → ~{} tokens",
            n("fixed"),
            n("reserve"),
            n("trigger"),
            n("target"),
            n("before"),
            n("after"),
        );
        // A firing whose band was sized from the recent steps says so.
        if let (Some(aim), Some(step)) = (f["band_target"].as_u64(), f["step_tokens"].as_u64()) {
            line.push_str(&format!(
                "; band target {aim} (recent steps ~{step} tokens each)"
            ));
        }
        line.push_str(&format!("; steps: {}", steps.join(", ")));
        // A firing that summarized says its summary's budget, and what the
        // summary cut to a recall handle.
        if let Some(b) = f["summary_budget"].as_u64() {
            line.push_str(&format!("; summary within ~{b} tokens"));
        }
        let cut = |k: &str| f[k].as_u64().unwrap_or(0);
        if cut("shortened") + cut("handles_only") > 0 {
            line.push_str(&format!(
                ", user messages cut to a recall handle: {} to a first line and a handle, {} to a handle alone",
                cut("shortened"),
                cut("handles_only")
            ));
        }
        line.push('\n');
        assert!(text.contains(&line), "{line}{text}");
    }
    assert_eq!(text.matches("budget: window").count(), list.len(), "{text}");
    // Half a turn (a call still waiting for its result) runs no trigger.
    let half = json!({"type": "tool_call", "id": "x", "name": "read_file", "arguments": {}});
    let v = append(&s, &id, &format!("{half}\n"), &["--window", window]);
    assert!(v.get("auto").is_none(), "{v}");
}

/// A single turn of 200 tool steps written as an OpenAI transcript:
/// `ctxfold compact FILE --auto --window N` folds it by steps as a live
/// agent with that window would have, and what it writes is a valid
/// transcript that fits the window.
#[test]
fn a_runaway_transcript_comes_back_folded_by_steps() {
    let s = Scratch::new();
    let mut messages = vec![json!({"role": "user", "content": "Make every test pass."})];
    for k in 0..200 {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("s{k}"), "type": "function",
            "function": {"name": "run_tests", "arguments": json!({"patch": "+ fixed\n".repeat(25)}).to_string()}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("s{k}"),
            "content": format!("step {k}: {}", "test ok\n".repeat(150))}));
    }
    messages.push(json!({"role": "assistant", "content": "All tests pass now."}));
    let f = s.path().join("run.json");
    std::fs::write(
        &f,
        serde_json::to_vec(&json!({"messages": messages})).unwrap(),
    )
    .unwrap();
    // Stripping alone cannot hold 200 steps in 8,000 tokens: the automatic
    // rule summarizes (with the offline digest).
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        "[compaction.auto.rule]\nkeep_first = 1\n[compaction.auto.rule.summary]\n",
    )
    .unwrap();
    let out = s
        .command()
        .args([
            "compact", "run.json", "--auto", "--window", "8000", "-o", "out.json", "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let compactions = report["compactions"].as_array().unwrap();
    assert!(compactions.len() >= 3, "{report}");
    for c in compactions {
        assert_eq!(c["source"], "auto");
        assert_eq!(
            (c["from_turn"].as_u64(), c["to_turn"].as_u64()),
            (Some(0), Some(0))
        );
        assert!(c["to_seq"].is_u64(), "step-granular: {c}");
        assert_eq!(c["budget"]["window"], 8000, "{c}");
    }
    // The text report says each firing's budget, sizes and steps.
    let text = s.ok(&[
        "compact",
        "run.json",
        "--auto",
        "--window",
        "8000",
        "-o",
        "out2.json",
    ]);
    assert_eq!(
        text.matches("\n  budget: window 8000, fixed ").count(),
        compactions.len(),
        "{text}"
    );
    // The output: every call has its result, the request and the answer
    // are there, and it fits the window.
    let written: Value =
        serde_json::from_slice(&std::fs::read(s.path().join("out.json")).unwrap()).unwrap();
    let msgs = written["messages"].as_array().unwrap();
    let mut open = std::collections::HashSet::new();
    for m in msgs {
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            assert!(open.insert(call["id"].as_str().unwrap().to_owned()));
        }
        if m["role"] == "tool" {
            assert!(
                open.remove(m["tool_call_id"].as_str().unwrap()),
                "result without call"
            );
        }
    }
    assert!(open.is_empty(), "calls without results: {open:?}");
    assert_eq!(msgs[0]["content"], "Make every test pass.");
    assert_eq!(msgs.last().unwrap()["content"], "All tests pass now.");
    assert!(
        report["tokens"]["after"].as_u64().unwrap() <= 8000,
        "{}",
        report["tokens"]
    );
    assert!(msgs.len() < 100, "{} messages", msgs.len());
}

/// `--auto` needs a window, and says so.
#[test]
fn auto_without_a_window_says_what_it_needs() {
    let s = Scratch::new();
    let id = started(&s);
    let out = s.run(&["c", "compact", &id, "--auto"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--window N"), "{}", stderr(&out));
    let v = s.json(&["c", "compact", &id, "--auto=step", "--window", "100000"]);
    assert_eq!(v["status"], "skipped", "{v}");
    assert_eq!(v["reason"], "under_threshold", "{v}");
}

/// A model server on 127.0.0.1: answers each chat completion after
/// `delay`, or never (it keeps the connection open until the test ends).
fn model_server(delay: Option<Duration>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let counter = counter.clone();
            std::thread::spawn(move || {
                let Some((line, _body)) = common::read_request(&stream) else {
                    return;
                };
                let reply = if line.starts_with("POST") {
                    counter.fetch_add(1, Ordering::SeqCst);
                    match delay {
                        None => {
                            std::thread::sleep(Duration::from_secs(600));
                            return;
                        }
                        Some(d) => std::thread::sleep(d),
                    }
                    json!({"id": "x", "object": "chat.completion", "model": "m",
                        "choices": [{"index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": "The user asked about modules."}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
                } else {
                    json!({"object": "list", "data": []})
                };
                let body = reply.to_string();
                let mut s = stream;
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    (url, calls)
}

fn provider_config(s: &Scratch, url: &str) -> String {
    let cfg = s.path().join("model.toml");
    std::fs::write(
        &cfg,
        format!(
            "[providers.fake]\nkind = \"openai\"\nbase_url = \"{url}\"\napi_key_env = \"\"\ntimeout_secs = 600\nmax_retries = 0\ncontext_window = 100000\n"
        ),
    )
    .unwrap();
    cfg.to_str().unwrap().to_owned()
}

/// A conversation of `n` turns.
fn conversation(s: &Scratch, n: usize) -> String {
    let id = started(s);
    let lines: String = (1..n).map(turn_lines).collect();
    append(s, &id, &lines, &[]);
    id
}

fn events(s: &Scratch, id: &str) -> String {
    std::fs::read_to_string(s.events_file(id)).unwrap()
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A process killed (SIGKILL) while a model summary is being made leaves
/// a conversation that loads, projects as if nothing happened, shows the
/// orphaned attempt, and compacts normally the next time.
#[test]
fn a_kill_while_summarizing_leaves_an_inert_orphan() {
    let s = Scratch::new();
    let (url, calls) = model_server(None);
    let cfg = provider_config(&s, &url);
    let id = conversation(&s, 8);
    let view_before = s.ok(&["c", "print", &id, "--compacted"]);
    let mut child = s
        .command()
        .args([
            "-c", &cfg, "c", "compact", &id, "-s", "-m", "fake/m", "--from", "2", "--to", "5",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the summary request", || calls.load(Ordering::SeqCst) == 1);
    assert!(events(&s, &id).contains("\"compaction_started\""));
    child.kill().unwrap();
    child.wait().unwrap();

    assert_eq!(s.ok(&["c", "print", &id, "--compacted"]), view_before);
    let shown = s.json(&["c", "show", &id]);
    assert_eq!(shown["attempts"][0]["state"], "orphaned", "{shown}");
    assert_eq!(shown["counts"]["compaction"], 0);
    assert!(s.ok(&["c", "show", &id]).contains("orphaned"));
    // The lock died with the process: the next attempt proceeds.
    let out = s.ok(&["c", "compact", &id, "-s", "--from", "2", "--to", "5"]);
    assert!(out.contains("compacted turns 2–5"), "{out}");
    assert_ne!(s.ok(&["c", "print", &id, "--compacted"]), view_before);
}

/// Two processes triggering compaction at once: while one is summarizing
/// (its model never answers), the other is told the conversation is busy
/// and records nothing; `show` says the first is running; once it is gone,
/// compaction proceeds.
#[test]
fn two_processes_compacting_at_once_land_one_compaction() {
    let s = Scratch::new();
    let (url, calls) = model_server(None);
    let cfg = provider_config(&s, &url);
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        "[compaction.auto.rule]\nkeep_first = 1\nkeep_last = 2\n[compaction.auto.rule.summary]\nmodel = \"fake/m\"\n",
    )
    .unwrap();
    let id = conversation(&s, 12);
    let auto = [
        "c", "compact", &id, "--auto", "--window", "4000", "--format", "json",
    ];
    let mut first = s
        .command()
        .args(["-c", &cfg])
        .args(auto)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the first summary request", || {
        calls.load(Ordering::SeqCst) == 1
    });
    let n = events(&s, &id).lines().count();
    let mut args = vec!["-c", cfg.as_str()];
    args.extend(auto);
    let second = s.run(&args);
    assert!(second.status.success(), "{}", stderr(&second));
    let v: Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(v["status"], "busy", "{v}");
    assert_eq!(
        events(&s, &id).lines().count(),
        n,
        "the second wrote nothing"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1, "one summary asked for");
    let shown = s.json(&["c", "show", &id]);
    assert_eq!(shown["attempts"][0]["state"], "running", "{shown}");
    first.kill().unwrap();
    first.wait().unwrap();
    let shown = s.json(&["c", "show", &id]);
    assert_eq!(shown["attempts"][0]["state"], "orphaned", "{shown}");
    // With the first gone, the offline digest compacts.
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        "[compaction.auto.rule]\nkeep_first = 1\nkeep_last = 2\n[compaction.auto.rule.summary]\n",
    )
    .unwrap();
    // (One firing: the rolling rule, and a band down to the target.)
    let v = s.json(&["c", "compact", &id, "--auto", "--window", "4000"]);
    let landed = v["committed"].as_array().unwrap().len();
    assert!((1..=2).contains(&landed), "{v}");
    assert_eq!(
        s.json(&["c", "show", &id])["counts"]["compaction"],
        landed as u64
    );
}

/// An automatic compaction the user undoes is not redone at the next turn:
/// the next firing starts after it.
#[test]
fn an_undone_automatic_compaction_is_not_redone() {
    let s = Scratch::new();
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        "[compaction.auto]\nenabled = true\n",
    )
    .unwrap();
    let id = started(&s);
    let mut k = 1;
    let first = loop {
        let v = append(&s, &id, &turn_lines(k), &["--window", "6000"]);
        k += 1;
        if let Some(c) = v["auto"]["committed"].as_array().and_then(|a| a.first()) {
            break c["compaction"].clone();
        }
        assert!(k < 30, "never fired");
    };
    s.ok(&["c", "compact", &id, "--reset"]);
    for _ in 0..8 {
        let v = append(&s, &id, &turn_lines(k), &["--window", "6000"]);
        k += 1;
        for c in v["auto"]["committed"].as_array().into_iter().flatten() {
            assert!(
                c["compaction"]["from_turn"].as_u64() > first["to_turn"].as_u64(),
                "refolded what was undone: {c} after {first}"
            );
        }
    }
}

/// `compact FILE --auto` on a transcript that never reaches its window:
/// nothing fires, and what it writes is the transcript it read.
#[test]
fn an_auto_replay_where_nothing_fires_writes_the_input_back() {
    let s = Scratch::new();
    let mut messages = vec![json!({"role": "user", "content": "Make every test pass."})];
    for k in 0..20 {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("s{k}"), "type": "function",
            "function": {"name": "run_tests", "arguments": json!({"patch": format!("+ fix {k}\n")}).to_string()}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("s{k}"),
            "content": format!("step {k}: test ok")}));
    }
    messages.push(json!({"role": "assistant", "content": "All tests pass now."}));
    std::fs::write(
        s.path().join("run.json"),
        serde_json::to_vec(&json!({"messages": messages})).unwrap(),
    )
    .unwrap();
    let out = s
        .command()
        .args([
            "compact", "run.json", "--auto", "--window", "1000000", "-o", "out.json", "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["compactions"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
    let written: Value =
        serde_json::from_slice(&std::fs::read(s.path().join("out.json")).unwrap()).unwrap();
    assert_eq!(written["messages"], json!(messages));
}
