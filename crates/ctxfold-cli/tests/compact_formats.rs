//! `ctxfold compact FILE` writes a valid transcript of the format it read:
//! JP folder in, JP folder out (readable by the importer again); OpenAI in,
//! valid OpenAI out; Anthropic in, valid Anthropic out; Gemini in, valid
//! Gemini out. Each under several
//! rules: the built-in one, a digest summary, omit, strip-responses.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use common::{Scratch, corpus};
use serde_json::Value;

const RULES: [&[&str]; 4] = [
    &[],
    &["-s", "--keep-first", "1", "--keep-last", "1"],
    &["-k", "t=omit:..-1"],
    &["-k", "r+t=sres:2.."],
];

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/rate-limiter-session.openai.json")
}

fn compact(s: &Scratch, input: &Path, out: &Path, rule: &[&str]) -> Value {
    let mut args = vec![
        "compact",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(rule);
    s.json(&args)
}

/// OpenAI chat rules: the first message after system prompts is the user's;
/// every tool message answers a call of the assistant message before it,
/// and every call is answered before the next non-tool message.
fn check_openai(v: &Value) {
    let msgs = v["messages"].as_array().expect("messages");
    let first = msgs.iter().find(|m| m["role"] != "system").unwrap();
    assert_eq!(first["role"], "user");
    let mut pending: HashSet<String> = HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        match m["role"].as_str().unwrap() {
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap();
                assert!(
                    pending.remove(id),
                    "message {i}: tool result {id} answers no open call"
                );
            }
            role => {
                assert!(
                    pending.is_empty(),
                    "message {i} ({role}) before results of {pending:?}"
                );
                if let Some(calls) = m["tool_calls"].as_array() {
                    assert_eq!(role, "assistant");
                    for c in calls {
                        assert_eq!(c["type"], "function");
                        let args = c["function"]["arguments"].as_str().unwrap();
                        serde_json::from_str::<Value>(args).expect("arguments are JSON text");
                        pending.insert(c["id"].as_str().unwrap().to_owned());
                    }
                }
            }
        }
    }
    assert!(pending.is_empty(), "unanswered calls {pending:?}");
}

/// Anthropic rules: user and assistant alternate, starting with the user;
/// every tool_use is answered by a tool_result in the next message, and
/// every tool_result answers a tool_use of the message before.
fn check_anthropic(v: &Value) {
    let msgs = v["messages"].as_array().expect("messages");
    assert_eq!(msgs[0]["role"], "user");
    let mut uses: HashSet<String> = HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"].as_str().unwrap();
        assert_eq!(
            role,
            if i % 2 == 0 { "user" } else { "assistant" },
            "message {i}"
        );
        let blocks: Vec<Value> = match &m["content"] {
            Value::String(_) => Vec::new(),
            Value::Array(b) => b.clone(),
            other => panic!("message {i}: content {other}"),
        };
        if role == "user" {
            let answered: HashSet<String> = blocks
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| b["tool_use_id"].as_str().unwrap().to_owned())
                .collect();
            assert_eq!(
                answered, uses,
                "message {i}: results must answer the previous tool_use blocks"
            );
            uses.clear();
        } else {
            assert!(uses.is_empty());
            for b in &blocks {
                if b["type"] == "tool_use" {
                    assert!(b["input"].is_object());
                    uses.insert(b["id"].as_str().unwrap().to_owned());
                }
            }
        }
    }
    assert!(uses.is_empty(), "unanswered tool_use {uses:?}");
}

#[test]
fn openai_in_valid_openai_out() {
    let s = Scratch::new();
    for (n, rule) in RULES.iter().enumerate() {
        let out = s.path().join(format!("out{n}.json"));
        let report = compact(&s, &example(), &out, rule);
        assert!(
            report["tokens"]["after"].as_u64() < report["tokens"]["before"].as_u64(),
            "{rule:?}"
        );
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        check_openai(&v);
        assert_eq!(v["model"], "gpt-4o", "request keys kept");
        // And it reads back as OpenAI.
        let again = s.json(&["c", "import", out.to_str().unwrap()]);
        assert_eq!(again["format"], "openai");
    }
}

#[test]
fn anthropic_in_valid_anthropic_out() {
    let s = Scratch::new();
    // An Anthropic transcript of the example session.
    let id = s.import(&example());
    let input = s.path().join("session.anthropic.json");
    s.ok(&[
        "c",
        "export",
        &id,
        "--output-format",
        "anthropic",
        "-o",
        input.to_str().unwrap(),
    ]);
    check_anthropic(&serde_json::from_str(&std::fs::read_to_string(&input).unwrap()).unwrap());
    for (n, rule) in RULES.iter().enumerate() {
        let out = s.path().join(format!("out{n}.json"));
        let report = compact(&s, &input, &out, rule);
        assert!(
            report["tokens"]["after"].as_u64() < report["tokens"]["before"].as_u64(),
            "{rule:?}"
        );
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        check_anthropic(&v);
        let again = s.json(&["c", "import", out.to_str().unwrap()]);
        assert_eq!(again["format"], "anthropic");
    }
}

/// Gemini API rules: contents alternate `user` and `model`, the first is
/// the user's; every function call is answered, by id, in the content
/// right after its own, and every response answers a call.
fn check_gemini(v: &Value) {
    let contents = v["contents"].as_array().expect("contents");
    assert_eq!(contents[0]["role"], "user");
    let mut asked: HashSet<String> = HashSet::new();
    for (i, c) in contents.iter().enumerate() {
        if i > 0 {
            assert_ne!(
                c["role"],
                contents[i - 1]["role"],
                "content {i}: roles alternate"
            );
        }
        let parts = c["parts"].as_array().unwrap();
        assert!(!parts.is_empty(), "content {i} has parts");
        let answered: HashSet<String> = parts
            .iter()
            .filter_map(|p| p["functionResponse"]["id"].as_str())
            .map(str::to_owned)
            .collect();
        assert_eq!(
            answered, asked,
            "content {i}: the calls before it answered here"
        );
        asked = parts
            .iter()
            .filter_map(|p| p["functionCall"]["id"].as_str())
            .map(str::to_owned)
            .collect();
    }
    assert!(asked.is_empty(), "a call left unanswered at the end");
}

#[test]
fn gemini_in_valid_gemini_out() {
    let s = Scratch::new();
    // A Gemini request of the example session.
    let id = s.import(&example());
    let input = s.path().join("session.gemini.json");
    s.ok(&[
        "c",
        "export",
        &id,
        "--output-format",
        "gemini",
        "-o",
        input.to_str().unwrap(),
    ]);
    let sent: Value = serde_json::from_str(&std::fs::read_to_string(&input).unwrap()).unwrap();
    check_gemini(&sent);
    assert_eq!(
        s.json(&["c", "import", input.to_str().unwrap()])["format"],
        "gemini"
    );
    for (n, rule) in RULES.iter().enumerate() {
        let out = s.path().join(format!("out{n}.json"));
        let report = compact(&s, &input, &out, rule);
        assert!(
            report["tokens"]["after"].as_u64() < report["tokens"]["before"].as_u64(),
            "{rule:?}"
        );
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        check_gemini(&v);
        assert_eq!(
            v["systemInstruction"], sent["systemInstruction"],
            "the system instruction kept"
        );
        let again = s.json(&["c", "import", out.to_str().unwrap()]);
        assert_eq!(again["format"], "gemini");
    }
}

#[test]
fn jp_folder_in_jp_folder_out_reads_back() {
    let s = Scratch::new();
    let input = corpus().join("17727391057-managing-jp-conversations-in-git-worktrees");
    for (n, rule) in RULES.iter().enumerate() {
        let out = s.path().join(format!("out{n}"));
        let report = compact(&s, &input, &out, rule);
        assert!(
            report["tokens"]["after"].as_u64() < report["tokens"]["before"].as_u64(),
            "{rule:?}"
        );
        assert!(out.join("events.json").is_file() && out.join("metadata.json").is_file());
        let imported = s
            .command()
            .args(["c", "import", out.to_str().unwrap(), "--format", "json"])
            .output()
            .unwrap();
        assert!(imported.status.success());
        assert!(
            imported.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&imported.stderr)
        );
        let id: Value = serde_json::from_slice(&imported.stdout).unwrap();
        let counts = &s.json(&["c", "show", id["id"].as_str().unwrap()])["counts"];
        assert_eq!(
            counts["tool_call"], counts["tool_result"],
            "{rule:?}: calls stay paired"
        );
        // A summary stands for its turns as one turn (first, summary, last);
        // the other rules keep every turn.
        let turns = if rule.contains(&"-s") { 3 } else { 8 };
        assert_eq!(counts["turns"], turns, "{rule:?}");
        assert_eq!(
            counts["compaction"], 0,
            "compactions are applied, not carried"
        );
    }
    // The source folder is untouched.
    let t = s.json(&["c", "import", input.to_str().unwrap()]);
    let counts = &s.json(&["c", "show", t["id"].as_str().unwrap()])["counts"];
    assert_eq!(counts["records"], 118);
}

#[test]
fn output_defaults_beside_the_input_and_dash_is_stdout() {
    let s = Scratch::new();
    let input = s.path().join("session.json");
    std::fs::copy(example(), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let report = s.json(&["compact", input.to_str().unwrap()]);
    let written = s.path().join("session.compacted.json");
    assert_eq!(report["output"], written.display().to_string());
    assert!(written.is_file());
    assert_eq!(
        std::fs::read(&input).unwrap(),
        before,
        "the input is never modified"
    );
    let out = s.run(&["compact", input.to_str().unwrap(), "-o", "-"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    check_openai(&v);
    assert!(String::from_utf8_lossy(&out.stderr).contains("tokens in view"));
}

#[test]
fn an_anthropic_transcript_with_a_system_message_inside_messages_keeps_it() {
    // Claude Code's shape: a system message at messages[1].
    let s = Scratch::new();
    let body = serde_json::json!({
        "model": "claude-sonnet-4-5",
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>\nContext.\n</system-reminder>"},
                {"type": "text", "text": "Fix the test"}]},
            {"role": "system", "content": "The user has enabled the concise output style."},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cargo test"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Fixed."}]}
        ],
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "max_tokens": 32000,
        "thinking": {"type": "enabled", "budget_tokens": 31999},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
    });
    let input = s.path().join("claude.json");
    std::fs::write(&input, serde_json::to_string_pretty(&body).unwrap()).unwrap();
    let imported = s.json(&["c", "import", input.to_str().unwrap()]);
    assert_eq!(imported["format"], "anthropic");
    let id = imported["id"].as_str().unwrap().to_owned();
    let recs = s.json(&["c", "print", &id]);
    let systems: Vec<&Value> = recs
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] == "system")
        .collect();
    assert_eq!(systems.len(), 2, "{recs}");
    let out = s.path().join("back.json");
    s.ok(&[
        "c",
        "export",
        &id,
        "--output-format",
        "anthropic",
        "-o",
        out.to_str().unwrap(),
    ]);
    let back: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        back, body,
        "the system message where it was, the rest as read"
    );
}
