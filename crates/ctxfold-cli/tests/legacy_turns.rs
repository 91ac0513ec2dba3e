//! Issue 11 follow-up, through the real binary: JP files without any
//! `turn_start` (written before JP recorded turns) import with one turn per
//! request and still export byte for byte; and the default `ctxfold
//! compact FILE` summarizes the old turns with the digest when the
//! built-in rule has nothing mechanical to fold, says so, and does that
//! only then.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::path::{Path, PathBuf};

use common::{Scratch, corpus_conversations, stderr};
use serde_json::{Value, json};

// ---- JP files without turn_start -------------------------------------

/// The `type`s of a JP `events.json`.
fn jp_types(dir: &Path) -> Vec<String> {
    let events: Value =
        serde_json::from_slice(&std::fs::read(dir.join("events.json")).unwrap()).unwrap();
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn export_jp(s: &Scratch, id: &str, name: &str) -> PathBuf {
    let out = s.path().join("export").join(name);
    s.ok(&[
        "c",
        "export",
        id,
        "--output-format",
        "jp",
        "-o",
        out.to_str().unwrap(),
    ]);
    out
}

#[test]
fn a_small_jp_file_without_turn_starts_gets_a_turn_per_request() {
    let s = Scratch::new();
    let dir = s.path().join("old");
    std::fs::create_dir(&dir).unwrap();
    let ev = |n: u32, ty: &str, extra: Value| {
        let mut o = json!({"timestamp": format!("2025-01-01 10:00:{n:02}.0"), "type": ty});
        o.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        o
    };
    let events = json!([
        ev(0, "config_delta", json!({"delta": {}})),
        ev(1, "chat_request", json!({"content": "one"})),
        ev(2, "chat_response", json!({"message": "first"})),
        ev(3, "chat_request", json!({"content": "two"})),
        // "bHM=" is "ls", as JP writes tool arguments and results.
        ev(
            4,
            "tool_call_request",
            json!({"id": "c1", "name": "sh", "arguments": {"cmd": "bHM="}})
        ),
        ev(
            5,
            "tool_call_response",
            json!({"id": "c1", "content": "bHM=", "is_error": false})
        ),
        ev(6, "chat_response", json!({"message": "second"})),
        ev(7, "chat_request", json!({"content": "three"})),
        ev(8, "chat_response", json!({"message": "third"})),
    ]);
    let mut bytes = serde_json::to_vec_pretty(&events).unwrap();
    bytes.push(b'\n');
    std::fs::write(dir.join("events.json"), &bytes).unwrap();
    std::fs::write(dir.join("metadata.json"), "{}\n").unwrap();

    let id = s.import(&dir);
    let shown = s.json(&["c", "show", &id]);
    assert_eq!(shown["counts"]["turns"], 3, "{shown}");
    assert_eq!(shown["counts"]["turn_start"], 2);
    assert_eq!(shown["counts"]["records"], 11);
    // Each request is the first event of its turn, as the printout
    // numbers them.
    let printed = s.json(&["c", "print", &id]);
    let starts: Vec<&Value> = printed
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] == "turn_start")
        .collect();
    assert_eq!(starts.len(), 2);
    for r in starts {
        assert_eq!(r["jp"], json!({"synthesized": true}), "{r}");
    }
    let text = s.ok(&["c", "print", &id]);
    for (turn, request) in [(1, "one"), (2, "two"), (3, "three")] {
        let at = text.find(&format!("[user]\n{request}\n")).unwrap();
        let heading = text[..at].rfind("━━ turn ").unwrap();
        assert!(
            text[heading..].starts_with(&format!("━━ turn {turn} ━━")),
            "{request} in turn {turn}:\n{text}"
        );
    }
    // Export leaves the made-up turn starts out: JP's file, byte for byte.
    let out = export_jp(&s, &id, "old");
    assert!(std::fs::read(out.join("events.json")).unwrap() == bytes);
}

#[test]
fn corpus_files_without_turn_starts_export_byte_for_byte_also_through_ctxfold() {
    let s = Scratch::new();
    let mut seen = 0;
    for dir in corpus_conversations() {
        let types = jp_types(&dir);
        if types.iter().any(|t| t == "turn_start") {
            continue;
        }
        seen += 1;
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        let requests = types.iter().filter(|t| *t == "chat_request").count();
        let id = s.import(&dir);
        let shown = s.json(&["c", "show", &id]);
        assert_eq!(shown["counts"]["turns"], requests, "{name}");
        // Through the store, and through an export to ctxfold's own format
        // and an import of that.
        let file = s.path().join(format!("{name}.jsonl"));
        s.ok(&["c", "export", &id, "-o", file.to_str().unwrap()]);
        let again = s.import(&file);
        assert_eq!(
            s.json(&["c", "show", &again])["counts"]["turns"],
            requests,
            "{name}"
        );
        // (A ctxfold file holds the records only: JP's metadata.json and
        // base_config.json come back from the store alone.)
        for (k, (id, files)) in [
            (
                &id,
                &["events.json", "metadata.json", "base_config.json"][..],
            ),
            (&again, &["events.json"][..]),
        ]
        .into_iter()
        .enumerate()
        {
            let out = export_jp(&s, id, &format!("{name}-{k}"));
            for f in files {
                if dir.join(f).exists() {
                    assert!(
                        std::fs::read(dir.join(f)).unwrap() == std::fs::read(out.join(f)).unwrap(),
                        "{name}/{f} ({k}): bytes differ"
                    );
                }
            }
        }
    }
    assert_eq!(seen, 6, "corpus files without turn_start");
}

// ---- the digest fallback of `ctxfold compact FILE` ---------------------

/// An OpenAI transcript of `turns` plain-text exchanges with long answers;
/// with `tool_in_turn`, that turn's answer calls a tool first.
fn dialogue(dir: &Path, name: &str, turns: usize, tool_in_turn: Option<usize>) -> PathBuf {
    let prose = "The listing reads every conversation's metadata file, sorts by last use \
                 and prints one line each; most of the time goes to parsing. ";
    let mut messages = Vec::new();
    for t in 1..=turns {
        messages.push(json!({"role": "user", "content": format!("question {t}: why is it slow?")}));
        if tool_in_turn == Some(t) {
            messages.push(
                json!({"role": "assistant", "content": null, "tool_calls": [{
                    "id": "call_1", "type": "function",
                    "function": {"name": "read_file", "arguments": "{\"path\": \"src/list.rs\"}"}
                }]}),
            );
            messages.push(json!({"role": "tool", "tool_call_id": "call_1",
                "content": "fn list() { /* a long listing */ }\n".repeat(200)}));
        }
        messages.push(
            json!({"role": "assistant", "content": format!("answer {t}: {}", prose.repeat(30))}),
        );
    }
    let path = dir.join(name);
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&json!({ "messages": messages })).unwrap(),
    )
    .unwrap();
    path
}

/// `ctxfold compact FILE -o OUT` with `args`: the report (text, or JSON
/// with `--format json` among `args`) and the output's bytes.
fn compact(s: &Scratch, input: &Path, out: &str, args: &[&str]) -> (String, Vec<u8>) {
    let out = s.path().join(out);
    let mut a = vec![
        "compact",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    a.extend_from_slice(args);
    let report = s.ok(&a);
    (report, std::fs::read(out).unwrap())
}

fn report(s: &Scratch, input: &Path, out: &str, args: &[&str]) -> (Value, Vec<u8>) {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let (text, bytes) = compact(s, input, out, &a);
    (serde_json::from_str(&text).unwrap(), bytes)
}

#[test]
fn a_plain_text_dialogue_is_summarized_by_the_digest_and_the_report_says_so() {
    let s = Scratch::new();
    let input = dialogue(s.path(), "chat.json", 8, None);
    let original = std::fs::read(&input).unwrap();

    let (text, out) = compact(&s, &input, "a.json", &[]);
    assert!(
        text.contains(
            "the built-in rule had nothing mechanical to fold (no tool call or old reasoning to strip); turns 2–5 summarized offline by the digest instead"
        ),
        "{text}"
    );
    assert!(!text.contains("nothing was folded"), "{text}");
    assert!(out.len() < original.len(), "{} bytes", out.len());
    // The input is never touched.
    assert!(std::fs::read(&input).unwrap() == original);

    let (json, out_json) = report(&s, &input, "b.json", &[]);
    assert_eq!(json["fallback"], "digest", "{json}");
    let compactions = json["compactions"].as_array().unwrap();
    assert_eq!(compactions.len(), 1);
    assert_eq!(
        compactions[0]["summary"]["provenance"]["summarizer"],
        "digest"
    );
    // Four of eight long turns folded: well under two thirds remain.
    let (before, after) = (
        json["tokens"]["before"].as_u64().unwrap(),
        json["tokens"]["after"].as_u64().unwrap(),
    );
    assert!(after * 3 < before * 2, "{before} → {after}");
    // What `-s` over keep first 1 and keep last 3 makes, exactly.
    let (by_hand, out_by_hand) = report(
        &s,
        &input,
        "c.json",
        &["-s", "--keep-first", "1", "--keep-last", "3"],
    );
    assert_eq!(by_hand["fallback"], Value::Null);
    assert!(out_json == out_by_hand && out == out_json);
    // The old turns stand as one summary; the first and last three stay.
    let messages: Value = serde_json::from_slice(&out).unwrap();
    let contents: Vec<&str> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    for t in [1, 6, 7, 8] {
        assert!(
            contents
                .iter()
                .any(|c| c.starts_with(&format!("answer {t}: "))),
            "answer {t} kept verbatim"
        );
    }
    for t in 2..=5 {
        assert!(
            !contents
                .iter()
                .any(|c| c.starts_with(&format!("answer {t}: "))),
            "answer {t} folded"
        );
    }
}

#[test]
fn no_fallback_when_the_rule_folds_something_or_the_user_chose_a_rule() {
    let s = Scratch::new();

    // A tool call in an old turn: the built-in rule strips it, and that
    // is all.
    let tools = dialogue(s.path(), "tools.json", 8, Some(3));
    let (json, _) = report(&s, &tools, "t.json", &[]);
    assert_eq!(json["fallback"], Value::Null, "{json}");
    let compactions = json["compactions"].as_array().unwrap();
    assert!(!compactions.is_empty());
    assert!(compactions.iter().all(|c| c["summary"].is_null()), "{json}");
    let (text, _) = compact(&s, &tools, "t2.json", &[]);
    assert!(!text.contains("digest instead"), "{text}");

    // The user's own rule, which folds nothing here: nothing is folded.
    let plain = dialogue(s.path(), "plain.json", 8, None);
    let original = std::fs::read(&plain).unwrap();
    for (k, args) in [
        vec!["-r"],
        vec!["-t"],
        vec!["-k", "r+t"],
        vec!["--keep-first", "1", "--keep-last", "3"],
        vec!["--keep-steps", "4"],
    ]
    .into_iter()
    .enumerate()
    {
        let (json, out) = report(&s, &plain, &format!("u{k}.json"), &args);
        assert_eq!(json["fallback"], Value::Null, "{args:?}: {json}");
        assert!(
            json["compactions"].as_array().unwrap().is_empty(),
            "{args:?}"
        );
        assert_eq!(
            serde_json::from_slice::<Value>(&out).unwrap(),
            serde_json::from_slice::<Value>(&original).unwrap(),
            "{args:?}: the output is the input"
        );
    }

    // A configured rule is the user's too.
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        "[[compaction.rules]]\nkeep_first = 1\nkeep_last = 2\nreasoning = \"strip\"\n",
    )
    .unwrap();
    let (json, _) = report(&s, &plain, "cfg.json", &[]);
    assert_eq!(json["fallback"], Value::Null, "{json}");
    assert!(json["compactions"].as_array().unwrap().is_empty());
}

#[test]
fn no_fallback_without_old_turns_or_when_the_digest_folds_nothing() {
    let s = Scratch::new();
    // Four turns: the first and the last three are kept, nothing is old.
    let short = dialogue(s.path(), "short.json", 4, None);
    let (text, _) = compact(&s, &short, "s.json", &[]);
    assert!(text.contains("nothing was folded"), "{text}");
    assert!(!text.contains("digest instead"), "{text}");

    // Old turns too small for a digest to be any smaller (its
    // introduction alone outweighs them): reported as without the
    // fallback, not as an error, and the output is the input.
    let tiny = s.path().join("tiny.json");
    let messages: Vec<Value> = (1..=6)
        .flat_map(|t| {
            [
                json!({"role": "user", "content": format!("q{t}")}),
                json!({"role": "assistant", "content": format!("a{t}")}),
            ]
        })
        .collect();
    std::fs::write(&tiny, json!({ "messages": messages }).to_string()).unwrap();
    let (json, out) = report(&s, &tiny, "tiny.out.json", &[]);
    assert_eq!(json["fallback"], Value::Null, "{json}");
    assert!(json["compactions"].as_array().unwrap().is_empty());
    assert_eq!(json["tokens"]["after"], json["tokens"]["before"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&out).unwrap()["messages"],
        json!(messages)
    );
}

/// `conversation compact` with no rule plans as `ctxfold compact FILE`
/// does (issue 26: it used to say "nothing to compact" here, while the
/// file command fell back to the digest): its preview, its run and the
/// file command fold the same turns, and the run says why.
#[test]
fn conversation_compact_falls_back_as_compact_file_does() {
    let s = Scratch::new();
    let plain = dialogue(s.path(), "plain.json", 8, None);
    let (file, _) = report(&s, &plain, "plain.out.json", &[]);
    assert_eq!(file["fallback"], "digest", "{file}");
    let id = s.import(&plain);
    let dry = s.json(&["c", "compact", &id, "--dry-run"]);
    assert_eq!(dry["fallback"], "digest", "{dry}");
    assert_eq!(s.json(&["c", "show", &id])["compactions"], json!([]));
    let out = s.run(&["c", "compact", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("turns 2–5 summarized offline by the digest instead"),
        "{text}"
    );
    let shown = s.json(&["c", "show", &id])["compactions"].clone();
    let turns = |v: &Value| (v["from_turn"].clone(), v["to_turn"].clone());
    assert_eq!(shown.as_array().unwrap().len(), 1, "{shown}");
    assert_eq!(turns(&shown[0]), turns(&file["compactions"][0]));
    assert_eq!(
        turns(&dry["compactions"][0]),
        turns(&file["compactions"][0])
    );
}
