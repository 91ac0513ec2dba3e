//! `ctxfold stats`: tokens by kind, raw and in view, and the window share.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::{Scratch, corpus};
use serde_json::Value;

fn total(v: &Value, which: &str) -> u64 {
    v["tokens"]
        .as_object()
        .unwrap()
        .values()
        .map(|k| k[which].as_u64().unwrap())
        .sum()
}

#[test]
fn stats_count_by_kind_before_and_after_projection() {
    let s = Scratch::new();
    let id = s.import(&corpus().join("17727391057-managing-jp-conversations-in-git-worktrees"));
    let before = s.json(&["stats", &id]);
    assert_eq!(before["estimator"], "heuristic");
    assert_eq!(before["exact"], false);
    assert_eq!(
        before["total"]["raw"], before["total"]["view"],
        "nothing compacted yet"
    );
    assert_eq!(
        total(&before, "raw"),
        before["total"]["raw"].as_u64().unwrap()
    );
    assert!(before["tokens"]["tool_results"]["raw"].as_u64().unwrap() > 10_000);
    assert_eq!(before["window"], Value::Null);

    s.ok(&["c", "compact", &id, "-r", "-t", "--to", "-1"]);
    s.ok(&["c", "compact", &id, "-s", "--from", "2", "--to", "3"]);
    let after = s.json(&["stats", &id]);
    assert_eq!(
        after["total"]["raw"], before["total"]["raw"],
        "the raw log is unchanged"
    );
    let t = &after["tokens"];
    assert!(t["tool_results"]["view"].as_u64() < t["tool_results"]["raw"].as_u64());
    assert_eq!(
        t["reasoning"]["view"], 0,
        "turns 1–7 stripped; turn 8 has no reasoning"
    );
    assert!(t["summaries"]["view"].as_u64().unwrap() > 0);
    assert_eq!(
        total(&after, "view"),
        after["total"]["view"].as_u64().unwrap()
    );

    // An OpenAI model: exact counts and the window from the built-in table.
    let gpt = s.json(&["stats", &id, "-m", "openai/gpt-4o"]);
    assert_eq!(gpt["estimator"], "o200k_base");
    assert_eq!(gpt["window"], 128_000);
    let share = gpt["share_of_window"].as_f64().unwrap();
    assert!((share - gpt["total"]["view"].as_f64().unwrap() / 128_000.0).abs() < 1e-9);
    let text = s.ok(&["stats", &id, "-m", "openai/gpt-4o"]);
    assert!(text.contains("counted with o200k_base (exact)"), "{text}");
    assert!(text.contains("window: 128000 tokens"), "{text}");
}
