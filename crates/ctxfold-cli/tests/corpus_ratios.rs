//! The built-in rule and the digest shrink every corpus conversation that
//! has something in their range, through `ctxfold compact FILE`.
//!
//! The built-in rule keeps the first turn and the last three, and of those
//! turns together only the last four steps; where it folds nothing but there
//! are older turns (plain-text dialogues), `ctxfold compact FILE`
//! summarizes those with the digest instead, and says so. Every
//! conversation of more than 20,000 tokens shrinks, single-turn agent runs
//! included; a conversation left alone is left exactly as it was. The
//! digest rule (keep first 1, keep last 1, summarize whole turns) works in
//! conversations of three turns or more; in shorter ones it must leave the
//! conversation as it was.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::{Scratch, compact_report, corpus_conversations};
use serde_json::Value;

#[test]
fn builtin_rule_and_digest_shrink_every_conversation_they_reach() {
    let s = Scratch::new();
    let (mut unshrunk, mut fallbacks) = (Vec::new(), Vec::new());
    let mut table =
        String::from("| conversation | turns | default | digest |\n| --- | --- | --- | --- |\n");
    for dir in corpus_conversations() {
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        let builtin = compact_report(&s, &dir, &[]);
        let digest = compact_report(&s, &dir, &["-s", "--keep-first", "1", "--keep-last", "1"]);
        let turns = builtin["turns"].as_u64().unwrap();
        let ratio = |v: &Value| {
            v["tokens"]["after"].as_f64().unwrap() / v["tokens"]["before"].as_f64().unwrap()
        };
        let raw = builtin["tokens"]["raw"].as_u64().unwrap();
        let r = ratio(&builtin);
        if raw > 20_000 && r >= 1.0 {
            unshrunk.push(format!("{name} (~{raw} tokens, {turns} turns)"));
        }
        // The built-in rule never summarizes: a summary is the digest
        // fallback's, and the report must say so, and only then.
        let summarized = builtin["compactions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| !c["summary"].is_null());
        let fallback = builtin["fallback"] == "digest";
        assert_eq!(
            fallback, summarized,
            "{name}: fallback {} reported, summary made: {summarized}",
            builtin["fallback"]
        );
        if fallback {
            fallbacks.push(name.clone());
        } else {
            assert!(
                builtin["fallback"].is_null(),
                "{name}: {}",
                builtin["fallback"]
            );
        }
        assert!(r <= 1.0, "{name}: the built-in rule grew it ({r:.3})");
        let folded = !builtin["compactions"].as_array().unwrap().is_empty();
        assert_eq!(
            folded,
            r < 1.0,
            "{name}: compactions recorded, and only then a change"
        );
        let r = ratio(&digest);
        if turns >= 3 {
            assert!(
                r < 1.0,
                "{name}: the digest rule did not shrink it ({r:.3})"
            );
            assert!(!digest["compactions"].as_array().unwrap().is_empty());
        } else {
            assert_eq!(
                r, 1.0,
                "{name}: the digest rule changed a short conversation"
            );
            assert!(digest["compactions"].as_array().unwrap().is_empty());
        }
        table.push_str(&format!(
            "| {} | {turns} | {:.2} | {:.2} |\n",
            &name[..name
                .find('-')
                .map_or(name.len(), |i| i + 1 + 20.min(name.len() - i - 1))],
            ratio(&builtin),
            ratio(&digest)
        ));
    }
    // `cargo test -- --nocapture` prints the table for docs/PERFORMANCE.md.
    println!("{table}");
    assert!(
        unshrunk.is_empty(),
        "over 20,000 tokens and not made smaller by the default: {unshrunk:?}"
    );
    // The plain-text dialogue the built-in rule cannot fold (issue 11).
    assert!(
        fallbacks.iter().any(|n| n.contains("optimizing-jp-cli")),
        "the digest fallback was used for {fallbacks:?}"
    );
}

/// Issue 26: `ctxfold compact FILE`, `conversation compact --dry-run` and
/// `conversation compact` plan by the same code: on every corpus
/// conversation they fold the same turns with the same policies and the
/// same summary, and fall back to the digest in the same cases (the
/// plain-text dialogue where the built-in rule folds nothing among them).
#[test]
fn compact_file_and_conversation_compact_plan_the_same() {
    let s = Scratch::new();
    let plan = |report: &Value| -> (Value, Vec<Value>) {
        let compactions = report["compactions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                serde_json::json!([
                    c["from_turn"],
                    c["to_turn"],
                    c["reasoning"],
                    c["tool_calls"],
                    c["summary"]["text"]
                ])
            })
            .collect();
        (report["fallback"].clone(), compactions)
    };
    let mut fallbacks = Vec::new();
    for dir in corpus_conversations() {
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        let file = plan(&compact_report(&s, &dir, &[]));
        let id = s.import(&dir);
        let dry = plan(&s.json(&["c", "compact", &id, "--dry-run"]));
        let done = plan(&s.json(&["c", "compact", &id]));
        assert_eq!(dry, file, "{name}: the dry run plans as compact FILE");
        assert_eq!(
            done, file,
            "{name}: the run records what compact FILE folds"
        );
        if file.0 == "digest" {
            fallbacks.push(name);
        }
    }
    assert!(
        fallbacks.iter().any(|n| n.contains("optimizing-jp-cli")),
        "the digest fallback was used for {fallbacks:?}"
    );
}
