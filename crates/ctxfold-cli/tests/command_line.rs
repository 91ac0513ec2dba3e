//! Regression tests for command-line paths that gave a silently wrong
//! result (issue 7, items 10, 12–16, 18, 20), through the real binary.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{Scratch, corpus_conversations, stderr};
use serde_json::{Value, json};

/// An OpenAI chat transcript of `turns` turns; each turn: a question, a
/// tool call with a long argument, its long result, and an answer.
fn transcript(turns: usize) -> Value {
    let mut messages = Vec::new();
    for k in 1..=turns {
        messages.push(
            json!({"role": "user", "content": format!("Question {k}: what does module {k} do?")}),
        );
        let args = json!({"path": format!("src/m{k}.rs"), "pattern": "x".repeat(300)});
        messages.push(json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{"id": format!("call_{k}"), "type": "function",
                "function": {"name": "read_file", "arguments": args.to_string()}}]
        }));
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{k}"),
            "content": format!("fn m{k}() {{ {} }}", "let a = 1; ".repeat(80))}));
        messages.push(json!({"role": "assistant", "content": format!("Module {k} reads the table and returns the rows it found.")}));
    }
    json!({"model": "gpt-4o", "messages": messages})
}

fn write(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(v).unwrap()).unwrap();
}

fn read(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A scratch workspace holding the 8-turn transcript as a conversation.
fn conversation() -> (Scratch, String) {
    let s = Scratch::new();
    let f = s.path().join("t.json");
    write(&f, &transcript(8));
    let id = s.import(&f);
    (s, id)
}

fn record_count(s: &Scratch, id: &str) -> usize {
    std::fs::read_to_string(s.events_file(id))
        .unwrap()
        .lines()
        .count()
}

fn compactions(s: &Scratch, id: &str) -> Vec<Value> {
    s.json(&["c", "show", id])["compactions"]
        .as_array()
        .unwrap()
        .clone()
}

/// Item 13: `--reset 2` and `-t omit` take their value after a space; a
/// word that is not a value is refused, never taken for a conversation id.
#[test]
fn option_values_after_a_space_are_values_never_ids() {
    let (s, id) = conversation();
    s.ok(&["c", "compact", &id, "-t", "--from", "2", "--to", "3"]);
    // `-t omit` with a space, before the range flags.
    s.ok(&[
        "c", "compact", &id, "-t", "omit", "--from", "4", "--to", "5",
    ]);
    let list = compactions(&s, &id);
    assert_eq!(list.len(), 2);
    assert_eq!(list[1]["tool_calls"], "omit");

    // The conversation is active: `--reset 2` revokes compaction 2 only.
    s.ok(&["c", "compact", "--reset", "2"]);
    let list = compactions(&s, &id);
    let status: Vec<&str> = list.iter().map(|c| c["status"].as_str().unwrap()).collect();
    assert_eq!(status, ["active", "revoked"]);
    s.ok(&["c", "compact", "--restore", "2"]);

    // An id where a number belongs is refused, naming the right form.
    let n = record_count(&s, &id);
    for args in [
        vec!["c", "compact", "--reset", id.as_str()],
        vec!["c", "compact", "--restore", id.as_str()],
    ] {
        let out = s.run(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = stderr(&out);
        assert!(err.contains("expected a compaction number"), "{err}");
        assert!(err.contains("compact ID --reset"), "{err}");
    }
    let out = s.run(&["c", "compact", "-t", &id]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("expected strip, strip-requests"),
        "{}",
        stderr(&out)
    );
    assert_eq!(record_count(&s, &id), n, "a refused command wrote nothing");
    let status: Vec<String> = compactions(&s, &id)
        .iter()
        .map(|c| c["status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(status, ["active", "active"]);
}

/// Item 14: `-s` (or `-r`, `-t`) without a range keeps what the built-in
/// rule keeps: the first turn and the last three, and of those only the
/// last four steps.
#[test]
fn policy_flags_without_a_range_keep_the_first_and_last_turns() {
    let s = Scratch::new();
    let f = s.path().join("t.json");
    write(&f, &transcript(8));
    for flag in ["-s", "-r", "-t"] {
        let out = s.path().join(format!("out{flag}.json"));
        let v = s.json(&[
            "compact",
            f.to_str().unwrap(),
            flag,
            "-o",
            out.to_str().unwrap(),
        ]);
        let c = &v["compactions"].as_array().unwrap();
        if flag == "-r" {
            // No reasoning in this transcript: nothing to fold.
            assert!(c.is_empty(), "{v}");
            continue;
        }
        // Turns 2–5 whole; and, each turn being two steps (a call and its
        // result, then the answer), the last four steps are those of turns
        // 7 and 8: the steps of turns 1 and 6 fold too, their requests
        // left out.
        let folded: Vec<_> = c
            .iter()
            .map(|c| {
                (
                    c["from_turn"].as_u64().unwrap(),
                    c["to_turn"].as_u64().unwrap(),
                    c["from_seq"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(folded, [(0, 0, 2), (1, 4, 5), (5, 5, 27)], "{flag}: {v}");
        // The turn in hand is in the output as it was.
        let msgs = read(&out)["messages"].as_array().unwrap().clone();
        assert_eq!(
            msgs.last().unwrap()["content"],
            "Module 8 reads the table and returns the rows it found."
        );
    }
    // A one-turn conversation has nothing to summarize.
    let one = s.path().join("one.json");
    write(&one, &transcript(1));
    let out = s.path().join("one.out.json");
    let v = s.json(&[
        "compact",
        one.to_str().unwrap(),
        "-s",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(v["compactions"].as_array().unwrap().is_empty(), "{v}");
    assert_eq!(read(&out)["messages"], read(&one)["messages"]);
}

/// Item 15: nothing compacted means the output equals the input (no
/// synthetic first message), and the report says only what changed.
#[test]
fn nothing_compacted_means_the_output_is_the_input() {
    let s = Scratch::new();
    let f = s.path().join("a.json");
    let input = json!({"messages": [
        {"role": "assistant", "content": "Hello, how can I help?"},
        {"role": "user", "content": "Tell me about turns."},
        {"role": "assistant", "content": "A turn is one question and all that answers it."},
        {"role": "user", "content": "Thanks."},
        {"role": "assistant", "content": "You are welcome."}
    ]});
    write(&f, &input);
    let out = s.path().join("a.out.json");
    let run = s
        .command()
        .args([
            "compact",
            f.to_str().unwrap(),
            "-t",
            "--from",
            "1",
            "--to",
            "2",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let report = String::from_utf8(run.stdout).unwrap();
    assert!(!report.contains("folded turns"), "{report}");
    assert!(report.contains("would change nothing"), "{report}");
    assert!(report.contains("nothing was folded"), "{report}");
    assert_eq!(read(&out)["messages"], input["messages"]);

    // With tool calls and no reasoning, `-r -t` reports only the tools.
    let f = s.path().join("t.json");
    write(&f, &transcript(6));
    let run = s
        .command()
        .args([
            "compact",
            f.to_str().unwrap(),
            "-r",
            "-t",
            "--from",
            "2",
            "--to",
            "3",
            "-o",
        ])
        .arg(s.path().join("t.out.json"))
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let report = String::from_utf8(run.stdout).unwrap();
    let line = report
        .lines()
        .find(|l| l.starts_with("folded turns 2–3"))
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(
        line,
        "folded turns 2–3: 2 tool requests and 2 tool results stripped"
    );
}

/// Item 16: a summary's tokens are charged to the turns it stands for,
/// not to the turn where it starts or the turn before it.
#[test]
fn summary_tokens_are_charged_to_the_summarized_turns() {
    let s = Scratch::new();
    let f = s.path().join("t.json");
    write(&f, &transcript(8));
    let v = s.json(&[
        "compact",
        f.to_str().unwrap(),
        "-s",
        "--from",
        "2",
        "--to",
        "5",
        "-o",
        s.path().join("o.json").to_str().unwrap(),
    ]);
    let per_turn = v["per_turn"].as_array().unwrap();
    let before = |t: usize| per_turn[t - 1]["tokens_before"].as_u64().unwrap();
    let after = |t: usize| per_turn[t - 1]["tokens_after"].as_u64().unwrap();
    for t in [1, 6, 7, 8] {
        assert_eq!(after(t), before(t), "turn {t} is kept: {v}");
    }
    for t in 2..=5 {
        // Equal raw turns get equal shares (within one token of rounding).
        assert!(after(t) > 0 && after(t) < before(t), "turn {t}: {v}");
        assert!(after(t).abs_diff(after(2)) <= 1, "turn {t}: {v}");
    }
    let sum: u64 = (1..=8).map(after).sum();
    assert_eq!(sum, v["tokens"]["after"].as_u64().unwrap(), "{v}");
}

/// Item 18: an empty summary is refused and nothing is recorded.
#[test]
fn an_empty_summary_is_refused() {
    let (s, id) = conversation();
    let n = record_count(&s, &id);
    for text in ["", "  \n "] {
        let out = s.run(&[
            "c",
            "compact",
            &id,
            "--summary-text",
            text,
            "--from",
            "2",
            "--to",
            "4",
        ]);
        assert!(!out.status.success());
        assert!(
            stderr(&out).contains("the supplied summary is empty"),
            "{}",
            stderr(&out)
        );
    }
    let f = s.path().join("t.json");
    let out = s.run(&[
        "compact",
        f.to_str().unwrap(),
        "--summary-text",
        "",
        "--from",
        "2",
        "--to",
        "4",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("empty"), "{}", stderr(&out));
    assert_eq!(record_count(&s, &id), n);
}

/// A model server on 127.0.0.1 that answers every chat completion with a
/// short summary and counts the calls.
struct FakeModel {
    url: String,
    calls: Arc<AtomicUsize>,
}

fn fake_model() -> FakeModel {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let Some((request_line, _body)) = common::read_request(&stream) else {
                continue;
            };
            let reply = if request_line.starts_with("POST")
                && request_line.contains("/chat/completions")
            {
                counter.fetch_add(1, Ordering::SeqCst);
                json!({"id": "x", "object": "chat.completion", "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "The user asked about modules; each reads a table."}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})
            } else {
                json!({"object": "list", "data": [{"id": "m", "context_length": 32000}]})
            };
            let body = reply.to_string();
            let mut s = stream;
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    FakeModel { url, calls }
}

/// Item 12: a summary of a range that is already summarized records
/// nothing, and no model is called for it.
#[test]
fn summarizing_a_summarized_range_records_nothing_and_calls_no_model() {
    let (s, id) = conversation();
    let model = fake_model();
    let cfg = s.path().join("fake.toml");
    std::fs::write(
        &cfg,
        format!(
            "[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"\"\n",
            model.url
        ),
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();
    let summarize = |from: &str, to: &str| {
        let out = s.run(&[
            "-c", cfg, "c", "compact", &id, "-s", "-m", "fake/m", "--from", from, "--to", to,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    summarize("2", "4");
    assert_eq!(model.calls.load(Ordering::SeqCst), 1);
    let n = record_count(&s, &id);

    // The same range again, and a range inside it (which would grow to it).
    for (from, to) in [("2", "4"), ("3", "3")] {
        let report = summarize(from, to);
        assert!(
            report.contains("turns 2–4 are already summarized"),
            "{report}"
        );
        assert!(report.contains("nothing was written"), "{report}");
    }
    assert_eq!(model.calls.load(Ordering::SeqCst), 1, "no second paid call");
    assert_eq!(record_count(&s, &id), n);

    // The offline digest is refused the same way; a wider range grows.
    let report = s.ok(&["c", "compact", &id, "-s", "--from", "2", "--to", "4"]);
    assert!(report.contains("already summarized"), "{report}");
    assert_eq!(record_count(&s, &id), n);
    let report = s.ok(&["c", "compact", &id, "-s", "--from", "2", "--to", "5"]);
    assert!(report.contains("compacted turns 2–5"), "{report}");
    assert_eq!(record_count(&s, &id), n + 1);
}

/// Item 10: a tool result with no call is left out of a compacted
/// transcript, and the report says so and why.
#[test]
fn a_result_without_its_call_is_reported_when_left_out() {
    let s = Scratch::new();
    let mut t = transcript(6);
    let messages = t["messages"].as_array_mut().unwrap();
    messages.insert(
        1,
        json!({"role": "tool", "tool_call_id": "ghost", "content": "orphaned output"}),
    );
    let f = s.path().join("o.json");
    write(&f, &t);
    let out = s.run(&[
        "compact",
        f.to_str().unwrap(),
        "-o",
        s.path().join("o.out.json").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(
        report.contains("left out of turn 1: a tool result (id `ghost`): the transcript has no call with that id"),
        "{report}"
    );
    let written = read(&s.path().join("o.out.json"));
    assert!(!written.to_string().contains("orphaned output"));
}

/// Item 20: `print | head` ends quietly when the reader goes away.
#[test]
fn printing_into_a_closed_pipe_exits_quietly() {
    let s = Scratch::new();
    // The largest corpus conversation prints far more than a pipe holds.
    let biggest: PathBuf = corpus_conversations()
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p.join("events.json")).map_or(0, |m| m.len()))
        .unwrap();
    s.import(&biggest);
    let mut child = s
        .command()
        .args(["c", "print"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "exit {:?}: {err}", out.status);
    assert!(
        !err.contains("Broken pipe") && !err.contains("error"),
        "{err}"
    );
}
