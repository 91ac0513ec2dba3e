//! The JP corpus through the real command line: import, show, export.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::{Scratch, corpus, corpus_conversations};
use serde_json::Value;

/// STATS.json counts each file as it is. A file without `turn_start`
/// (written before JP recorded turns) is imported with a `turn_start`
/// before every request but the first, so that each request is a turn:
/// that many more records, turn starts and conversation events, and as
/// many turns as requests. Everything else is as STATS.json says.
fn expected_counts(want: &Value) -> serde_json::Map<String, Value> {
    let mut want = want.as_object().unwrap().clone();
    let n = |w: &serde_json::Map<String, Value>, k: &str| w[k].as_u64().unwrap();
    if n(&want, "turn_start") == 0 && n(&want, "compaction") == 0 && n(&want, "user") > 0 {
        let added = n(&want, "user") - 1;
        for key in ["records", "turn_start", "conversation_events"] {
            let v = n(&want, key) + added;
            want.insert(key.into(), Value::from(v));
        }
        let turns = n(&want, "user");
        want.insert("turns".into(), Value::from(turns));
    }
    want
}

#[test]
fn show_counts_equal_stats_json_for_every_corpus_conversation() {
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(corpus().join("STATS.json")).unwrap())
            .unwrap();
    let s = Scratch::new();
    let mut more_turns = 0;
    for dir in corpus_conversations() {
        let name = dir.file_name().unwrap().to_str().unwrap();
        let id = s.import(&dir);
        let shown = s.json(&["conversation", "show", &id]);
        let want = expected_counts(&stats[name]);
        assert!(!want.is_empty());
        for (key, value) in &want {
            assert_eq!(&shown["counts"][key], value, "{name}: {key}");
        }
        more_turns += usize::from(want["turns"] != stats[name]["turns"]);
        assert_eq!(shown["id"], id);
    }
    // Five of the six files without turn_start: the sixth has one request.
    assert_eq!(more_turns, 5);
}

#[test]
fn export_after_import_reproduces_every_corpus_conversation() {
    let s = Scratch::new();
    for dir in corpus_conversations() {
        let id = s.import(&dir);
        let out = s.path().join("export").join(&id);
        s.ok(&[
            "conversation",
            "export",
            &id,
            "--output-format",
            "jp",
            "-o",
            out.to_str().unwrap(),
        ]);
        for file in ["events.json", "metadata.json", "base_config.json"] {
            let original = dir.join(file);
            if original.exists() {
                assert_eq!(
                    std::fs::read(&original).unwrap(),
                    std::fs::read(out.join(file)).unwrap(),
                    "{}/{file}",
                    dir.display()
                );
            }
        }
    }
}

#[test]
fn ctxfold_export_imports_back_to_the_same_records() {
    let s = Scratch::new();
    let dir = corpus_conversations().remove(1);
    let id = s.import(&dir);
    let file = s.path().join("copy.jsonl");
    s.ok(&["c", "export", &id, "-o", file.to_str().unwrap()]);
    let id2 = s.import(&file);
    let a = s.json(&["c", "print", &id]);
    let b = s.json(&["c", "print", &id2]);
    assert_eq!(a, b);
    assert!(a.as_array().unwrap().len() > 10);
}

#[test]
fn import_makes_the_conversation_active_and_use_switches() {
    let s = Scratch::new();
    let dirs = corpus_conversations();
    let a = s.import(&dirs[0]);
    let b = s.import(&dirs[1]);
    assert_eq!(s.json(&["c", "show"])["id"], b);
    // A unique prefix of the id is enough.
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    s.ok(&["c", "use", &a[..common + 1]]);
    assert_eq!(s.json(&["c", "show"])["id"], a);
    let listed = s.json(&["c", "ls"]);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    // rm moves to the trash: nothing is deleted.
    let removed = s.json(&["c", "rm", &a]);
    let moved = std::path::PathBuf::from(removed["moved_to"].as_str().unwrap());
    assert!(moved.join("events.jsonl").is_file());
    assert_eq!(s.json(&["c", "ls"]).as_array().unwrap().len(), 1);
}
