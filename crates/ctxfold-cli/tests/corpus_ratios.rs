//! The built-in rule and the digest shrink every corpus conversation that
//! has turns in their range, through `ctxfold compact FILE`.
//!
//! The built-in rule keeps the first turn and the last three, so it has
//! work only in conversations of five turns or more; the digest rule (keep
//! first 1, keep last 1, summarize) in conversations of three or more. In
//! shorter ones both must leave the conversation as it was.

mod common;

use common::{Scratch, corpus_conversations};
use serde_json::Value;

fn compact(s: &Scratch, dir: &std::path::Path, args: &[&str]) -> Value {
    let out = s.path().join("out").join(dir.file_name().unwrap());
    let mut a = vec![
        "compact",
        dir.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    a.extend_from_slice(args);
    s.json(&a)
}

#[test]
fn builtin_rule_and_digest_shrink_every_conversation_they_reach() {
    let s = Scratch::new();
    let mut table = String::from(
        "| conversation | turns | built-in rule | digest |\n| --- | --- | --- | --- |\n",
    );
    for dir in corpus_conversations() {
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        let builtin = compact(&s, &dir, &[]);
        let digest = compact(&s, &dir, &["-s", "--keep-first", "1", "--keep-last", "1"]);
        let turns = builtin["turns"].as_u64().unwrap();
        let ratio = |v: &Value| {
            v["tokens"]["after"].as_f64().unwrap() / v["tokens"]["before"].as_f64().unwrap()
        };
        for (label, v, min_turns) in [("built-in", &builtin, 5), ("digest", &digest, 3)] {
            let r = ratio(v);
            if turns >= min_turns {
                assert!(
                    r < 1.0,
                    "{name}: the {label} rule did not shrink it ({r:.3})"
                );
                assert!(!v["compactions"].as_array().unwrap().is_empty());
            } else {
                assert_eq!(
                    r, 1.0,
                    "{name}: the {label} rule changed a short conversation"
                );
                assert!(v["compactions"].as_array().unwrap().is_empty());
            }
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
}
