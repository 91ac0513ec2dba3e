//! Golden tests of compaction on the real corpus, through the command line:
//! mechanical, summary, nested summary, per-tool hints and omit.
//!
//! The golden files record the view's structure (item kinds, seqs, turns,
//! sizes, tool names) and the timeline, never the corpus text itself. Run
//! with `CTXFOLD_UPDATE_GOLDEN=1` to rewrite them after a deliberate change.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::path::PathBuf;

use common::{Scratch, corpus};
use serde_json::Value;

/// The conversation with the most turns that still fits every case.
const CONVERSATION: &str = "17727391057-managing-jp-conversations-in-git-worktrees";

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.txt"))
}

/// The structure of `print --compacted --format json`, one line per item.
fn structure(view: &Value) -> String {
    let mut out = String::new();
    for item in view["items"].as_array().unwrap() {
        let origin = &item["origin"];
        let line = match item["kind"].as_str().unwrap() {
            "summary" => format!(
                "summary turns {}-{} seq {}-{} from compaction {} ({} chars)",
                item["turns"][0],
                item["turns"][1],
                origin["seq"][0],
                origin["seq"][1],
                item["compaction_seq"],
                item["text"].as_str().unwrap().chars().count()
            ),
            "preamble" => "preamble".into(),
            kind => {
                let size = match item["type"].as_str().unwrap() {
                    "tool_call" => item["arguments"].to_string().chars().count(),
                    _ => item["content"].as_str().map_or(0, |c| c.chars().count()),
                };
                let tool = item["name"]
                    .as_str()
                    .map(|n| format!(" {n}"))
                    .unwrap_or_default();
                format!(
                    "{kind} {}{tool} turn {} seq {} ({size} chars)",
                    item["type"].as_str().unwrap(),
                    origin["turns"][0],
                    origin["seq"][0],
                )
            }
        };
        out.push_str(&line);
        out.push('\n');
    }
    for d in view["dropped"].as_array().unwrap() {
        out.push_str(&format!(
            "dropped seq {} turn {}: {}\n",
            d["seq"],
            d["turn"],
            d["reason"]["kind"].as_str().unwrap()
        ));
    }
    out
}

fn check(name: &str, s: &Scratch, id: &str) {
    let view = s.json(&["c", "print", id, "--compacted"]);
    let got = structure(&view);
    let path = golden_path(name);
    if std::env::var_os("CTXFOLD_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with CTXFOLD_UPDATE_GOLDEN=1", path.display()));
    assert!(
        got == want,
        "{name}: view differs from {}:\n{got}",
        path.display()
    );
}

fn setup() -> (Scratch, String) {
    let s = Scratch::new();
    let id = s.import(&corpus().join(CONVERSATION));
    (s, id)
}

#[test]
fn mechanical() {
    let (s, id) = setup();
    s.ok(&["c", "compact", &id, "-r", "-t", "--from", "2", "--to", "-1"]);
    check("mechanical", &s, &id);
}

#[test]
fn summary() {
    let (s, id) = setup();
    s.ok(&["c", "compact", &id, "-s", "--from", "2", "--to", "5"]);
    check("summary", &s, &id);
}

#[test]
fn nested_summary() {
    let (s, id) = setup();
    s.ok(&["c", "compact", &id, "-s", "--from", "2", "--to", "7"]);
    s.ok(&[
        "c",
        "compact",
        &id,
        "--summary-text",
        "Turns four and five, in short.",
        "--from",
        "4",
        "--to",
        "5",
    ]);
    check("nested_summary", &s, &id);
    // The outer summary appears before and after the inner one.
    let view = s.json(&["c", "print", &id, "--compacted"]);
    let kinds: Vec<(String, Value)> = view["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "summary")
        .map(|i| {
            (
                i["text"].as_str().unwrap()[..10].to_owned(),
                i["turns"].clone(),
            )
        })
        .collect();
    assert_eq!(kinds.len(), 3, "{kinds:?}");
    assert_eq!(kinds[0].0, kinds[2].0);
    assert_eq!(kinds[1].0, "Turns four");
    assert_eq!(kinds[1].1, serde_json::json!([4, 5]));
}

#[test]
fn per_tool_hints() {
    let (s, id) = setup();
    let cfg = s.path().join("hints.toml");
    std::fs::write(
        &cfg,
        "[tools.fs_read_file]\ncompaction = \"strip-requests\"\n[tools.fs_grep_files]\ncompaction = \"keep\"\n[tools.\"*\"]\ncompaction = \"strip-responses\"\n",
    )
    .unwrap();
    s.ok(&[
        "-c",
        cfg.to_str().unwrap(),
        "c",
        "compact",
        &id,
        "-t",
        "--from",
        "1",
        "--to",
        "-1",
    ]);
    check("per_tool", &s, &id);
    let shown = s.json(&["c", "show", &id]);
    let overrides = &shown["compactions"][0]["tool_overrides"];
    assert_eq!(overrides["fs_read_file"], "strip-requests");
    assert_eq!(overrides["fs_grep_files"], "keep");
}

#[test]
fn omit() {
    let (s, id) = setup();
    s.ok(&["c", "compact", &id, "-k", "t=omit:..-1"]);
    check("omit", &s, &id);
    let view = s.json(&["c", "print", &id, "--compacted"]);
    let last_turn = 8;
    for item in view["items"].as_array().unwrap() {
        if item["type"] == "tool_call" || item["type"] == "tool_result" {
            assert_eq!(
                item["origin"]["turns"][0], last_turn,
                "only the last turn keeps tools"
            );
        }
    }
}
