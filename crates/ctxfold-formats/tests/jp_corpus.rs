//! The real JP corpus (`../shared/corpus/jp/`): every conversation imports,
//! holds what STATS.json says (one turn per request in a file without
//! `turn_start`), and exports back to the same bytes.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::PathBuf;

use ctxfold_core::{Body, Log, Record};
use ctxfold_formats::{Format, export, import};
use serde_json::{Value, json};

use ctxfold_testkit::corpus::dir as corpus;

fn conversations() -> Vec<PathBuf> {
    let dirs = ctxfold_testkit::corpus::conversations();
    assert_eq!(dirs.len(), 15, "the corpus has fifteen conversations");
    dirs
}

#[test]
fn every_conversation_exports_back_to_the_same_bytes() {
    for dir in conversations() {
        let t = import(&dir, Some(Format::Jp)).unwrap();
        assert!(t.warnings.is_empty(), "{}: {:?}", dir.display(), t.warnings);
        let out = tempfile::tempdir().unwrap();
        export(&t, Format::Jp, out.path()).unwrap();
        for file in ["events.json", "metadata.json", "base_config.json"] {
            let original = dir.join(file);
            if !original.exists() {
                assert!(!out.path().join(file).exists(), "{file} appeared");
                continue;
            }
            let a = std::fs::read(&original).unwrap();
            let b = std::fs::read(out.path().join(file)).unwrap();
            // Same records, same order, same values...
            let va: Value = serde_json::from_slice(&a).unwrap();
            let vb: Value = serde_json::from_slice(&b).unwrap();
            assert_eq!(va, vb, "{}/{file}: values differ", dir.display());
            // ...and byte for byte.
            assert!(a == b, "{}/{file}: bytes differ", dir.display());
        }
        // And the exported folder reads back to the same records.
        let again = import(out.path(), None).unwrap();
        assert_eq!(again.records, t.records, "{}", dir.display());
    }
}

#[test]
fn tool_arguments_results_and_metadata_are_decoded() {
    let dir = corpus().join("17758406187-missing-date-in-version-string");
    let t = import(&dir, Some(Format::Jp)).unwrap();
    let call = t
        .records
        .iter()
        .find_map(|r| match &r.body {
            ctxfold_core::Body::ToolCall { arguments, .. } => Some(arguments.value()),
            _ => None,
        })
        .unwrap();
    assert_eq!(call["path"], "crates/jp_cli/build.rs");
    let result = t
        .records
        .iter()
        .find_map(|r| match &r.body {
            ctxfold_core::Body::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        result.starts_with("```rs\nuse std::process::Command;"),
        "{result}"
    );
    let sig = t
        .records
        .iter()
        .find_map(|r| {
            r.metadata
                .as_ref()?
                .get("anthropic_thinking_signature")
                .cloned()
        })
        .unwrap();
    // The decoded signature is Anthropic's own (base64) signature text.
    assert!(sig.as_str().unwrap().starts_with("Ep"), "{sig}");
}

/// STATS.json counts each file as it is. A file without `turn_start`
/// (written before JP recorded turns) imports with one synthesized
/// `turn_start` before every request but the first, so each request is a
/// turn: that many more records, turn starts and conversation events, and
/// as many turns as requests (no such corpus file has a request between a
/// tool call and its result). Everything else is as STATS.json says.
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
fn counts_match_stats_json() {
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(corpus().join("STATS.json")).unwrap())
            .unwrap();
    let mut turnless = 0;
    for dir in conversations() {
        let name = dir.file_name().unwrap().to_str().unwrap();
        let t = import(&dir, None).unwrap();
        let counts = serde_json::to_value(Log::from_records(t.records.clone()).counts()).unwrap();
        let want = expected_counts(&stats[name]);
        for (key, value) in &want {
            assert_eq!(&counts[key], value, "{name}: {key}");
        }
        // Every turn start the file did not have is marked, and stands
        // right before a request.
        let synthesized: Vec<usize> = (0..t.records.len())
            .filter(|&i| t.records[i].extra.get("jp") == Some(&json!({"synthesized": true})))
            .collect();
        if stats[name]["turn_start"] == 0 {
            turnless += 1;
            assert_eq!(
                synthesized.len() as u64,
                counts["turn_start"].as_u64().unwrap()
            );
        } else {
            assert!(synthesized.is_empty(), "{name}");
        }
        for i in synthesized {
            assert!(matches!(t.records[i].body, Body::TurnStart), "{name} {i}");
            assert!(
                matches!(t.records[i + 1].body, Body::User { .. }),
                "{name} {i}"
            );
            assert_eq!(t.records[i].ts, t.records[i + 1].ts, "{name} {i}");
        }
    }
    assert_eq!(turnless, 6, "six corpus files have no turn_start");
}

#[test]
fn records_survive_the_ctxfold_line_format() {
    for dir in conversations() {
        let t = import(&dir, None).unwrap();
        for r in &t.records {
            let (back, warn) = Record::from_json_line(&r.to_json_line()).unwrap();
            assert!(warn.is_none());
            assert_eq!(&back, r);
        }
    }
}

/// Every corpus record with the optional fields JP records can carry and
/// more: an `author` on requests, fields ctxfold does not model, fields
/// named like ctxfold's own (`seq`, `ts`, `jp`, `author` that is not a
/// string, `content` on a response), a response without `is_error`, and
/// keys in another order.
fn with_every_optional_field(events: &Value) -> Value {
    let records = events
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, ev)| {
            let Value::Object(o) = ev else {
                return ev.clone();
            };
            let mut o = o.clone();
            match o.get("type").and_then(Value::as_str) {
                Some("chat_request") if i % 2 == 0 => {
                    o.insert("author".into(), Value::String("ana".into()));
                    o.insert("schema".into(), serde_json::json!({"type": "object"}));
                }
                Some("chat_request") => {
                    o.insert("author".into(), serde_json::json!({"name": "bot"}));
                }
                Some("chat_response") => {
                    o.insert("content".into(), Value::String("shadow".into()));
                }
                Some("tool_call_response") if o.get("is_error") == Some(&Value::Bool(false)) => {
                    o.shift_remove("is_error");
                }
                _ => {}
            }
            o.insert("x_unknown".into(), serde_json::json!([i, {"deep": true}]));
            if i % 3 == 0 {
                o.insert("seq".into(), Value::from(i));
                o.insert("ts".into(), Value::String("not ours".into()));
                o.insert("jp".into(), Value::Bool(true));
            }
            if i % 4 == 1 {
                // Reverse the key order.
                o = o.into_iter().rev().collect();
            }
            Value::Object(o)
        });
    Value::Array(records.collect())
}

#[test]
fn records_with_every_optional_field_survive_import_export_and_the_log_format() {
    for dir in conversations() {
        let src = tempfile::tempdir().unwrap();
        let events: Value =
            serde_json::from_slice(&std::fs::read(dir.join("events.json")).unwrap()).unwrap();
        let mut bytes = serde_json::to_vec_pretty(&with_every_optional_field(&events)).unwrap();
        bytes.push(b'\n');
        std::fs::write(src.path().join("events.json"), &bytes).unwrap();
        std::fs::copy(dir.join("metadata.json"), src.path().join("metadata.json")).unwrap();
        let t = import(src.path(), Some(Format::Jp)).unwrap();
        assert!(t.warnings.is_empty(), "{}: {:?}", dir.display(), t.warnings);
        // Through ctxfold's own line format, as the store keeps them.
        let mut through_log = t.clone();
        through_log.records = t
            .records
            .iter()
            .map(|r| {
                let (back, warn) = Record::from_json_line(&r.to_json_line()).unwrap();
                assert!(warn.is_none(), "{warn:?}");
                assert_eq!(&back, r);
                back
            })
            .collect();
        for transcript in [&t, &through_log] {
            let out = tempfile::tempdir().unwrap();
            let out = out.path().join("conv");
            export(transcript, Format::Jp, &out).unwrap();
            let back = std::fs::read(out.join("events.json")).unwrap();
            assert!(back == bytes, "{}: bytes differ", dir.display());
        }
    }
}
