//! The real JP corpus (`../shared/corpus/jp/`): every conversation imports,
//! holds what STATS.json says, and exports back to the same bytes.

use std::path::PathBuf;

use ctxfold_core::{Log, Record};
use ctxfold_formats::{Format, export, import};
use serde_json::Value;

fn corpus() -> PathBuf {
    let dir = std::env::var_os("CTXFOLD_CORPUS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/jp"),
        PathBuf::from,
    );
    assert!(dir.is_dir(), "corpus not found at {}", dir.display());
    dir
}

fn conversations() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
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
            ctxfold_core::Body::ToolCall { arguments, .. } => Some(arguments.clone()),
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

#[test]
fn counts_match_stats_json() {
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(corpus().join("STATS.json")).unwrap())
            .unwrap();
    for dir in conversations() {
        let name = dir.file_name().unwrap().to_str().unwrap();
        let t = import(&dir, None).unwrap();
        let counts = serde_json::to_value(Log::from_records(t.records).counts()).unwrap();
        let want = &stats[name];
        for (key, value) in want.as_object().unwrap() {
            assert_eq!(&counts[key], value, "{name}: {key}");
        }
    }
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
