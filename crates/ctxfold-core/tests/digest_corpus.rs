//! The offline digest over the real JP corpus (`shared/corpus/jp`, or the
//! folder named by `CTXFOLD_CORPUS`): every conversation, whole and without
//! its last turn, must digest to a small, deterministic text that names the
//! files the tools touched and quotes the first request's opening words.
//!
//! The JP `events.json` files are read here with a minimal parser (the
//! formats crate is not a dependency of core): a JSON array of events whose
//! tool arguments (every string) and tool results are base64.
//!
//! Set `CTXFOLD_DIGEST_PRINT=1` to print every digest.

mod jp;

use std::path::PathBuf;
use std::time::Instant;

use jp::{corpus_dir, load};

use ctxfold_core::digest::Digest;
use ctxfold_core::summarizer::{Summarizer, SummaryInput};
use ctxfold_core::{Body, Log, Record};
use serde_json::Value;

// ------------------------------------------------------------------ checks

/// Bytes of model-visible text in the range.
fn raw_size(records: &[Record]) -> usize {
    records
        .iter()
        .map(|r| match &r.body {
            Body::User { content, .. }
            | Body::Assistant { content }
            | Body::Reasoning { content }
            | Body::ToolResult { content, .. } => content.len(),
            Body::ToolCall {
                name, arguments, ..
            } => name.len() + arguments.to_string().len(),
            Body::Structured { data } => data.to_string().len(),
            _ => 0,
        })
        .sum()
}

/// Path values (under `path`-like keys) of the range's tool calls.
fn argument_paths(records: &[Record]) -> Vec<String> {
    fn walk(v: &Value, key: &str, out: &mut Vec<String>) {
        match v {
            Value::String(s)
                if matches!(key, "path" | "paths" | "prefixes" | "file" | "file_path") =>
            {
                out.push(s.clone());
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, key, out)),
            Value::Object(map) => map.iter().for_each(|(k, i)| walk(i, k, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for r in records {
        if let Body::ToolCall { arguments, .. } = &r.body {
            walk(arguments, "", &mut out);
        }
    }
    out
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first few words of the first user message, at most ~60 characters.
fn opening_words(records: &[Record]) -> Option<String> {
    let content = records.iter().find_map(|r| match &r.body {
        Body::User { content, .. } => Some(content),
        _ => None,
    })?;
    let mut words = String::new();
    for w in content.split_whitespace().take(6) {
        if words.len() + w.len() > 60 {
            break;
        }
        if !words.is_empty() {
            words.push(' ');
        }
        words.push_str(w);
    }
    Some(words)
}

struct Row {
    name: String,
    what: &'static str,
    raw: usize,
    digest: usize,
    tool_share: f64,
    micros: u128,
}

fn check_range(name: &str, what: &'static str, log: &Log, lo: usize, hi: usize) -> Row {
    let input = SummaryInput {
        log,
        range: (lo, hi),
        instructions: None,
    };
    let start = Instant::now();
    let first = Digest.summarize(input).expect("digest");
    let micros = start.elapsed().as_micros();
    let second = Digest.summarize(input).expect("digest");
    let text = first.text;
    if std::env::var_os("CTXFOLD_DIGEST_PRINT").is_some() {
        println!("===== {name} ({what}) =====\n{text}");
    }
    assert!(!text.trim().is_empty(), "{name} {what}: empty digest");
    assert_eq!(text, second.text, "{name} {what}: not deterministic");
    assert_eq!(first.provenance, Digest::provenance());

    let records = &log.records()[lo..=hi];
    let raw = raw_size(records);
    let tools: usize = records
        .iter()
        .map(|r| match &r.body {
            Body::ToolResult { content, .. } => content.len(),
            Body::ToolCall { arguments, .. } => arguments.to_string().len(),
            _ => 0,
        })
        .sum();
    let tool_share = tools as f64 / raw as f64;

    let paths = argument_paths(records);
    if !paths.is_empty() {
        assert!(
            paths
                .iter()
                .any(|p| text.contains(&format!("`{}`", p.trim()))),
            "{name} {what}: names none of the {} argument paths\n{text}",
            paths.len()
        );
    }
    if let Some(words) = opening_words(records) {
        assert!(
            collapse(&text).contains(&words),
            "{name} {what}: first request's opening words {words:?} missing\n{text}"
        );
    }
    Row {
        name: name.to_owned(),
        what,
        raw,
        digest: text.len(),
        tool_share,
        micros,
    }
}

#[test]
fn digest_over_the_real_corpus() {
    let dir = corpus_dir();
    let stats: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("STATS.json"))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join("STATS.json").display())),
    )
    .expect("STATS.json");
    let mut convs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus folder")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.join("events.json").is_file())
        .collect();
    convs.sort();
    assert!(!convs.is_empty(), "no conversation in {}", dir.display());

    let mut rows = Vec::new();
    for conv in &convs {
        let name = conv.file_name().unwrap().to_string_lossy().into_owned();
        let log = load(conv);
        // The parser agrees with the corpus' own counts.
        if let Some(expected) = stats.get(&name) {
            assert_eq!(
                &serde_json::to_value(log.counts()).unwrap(),
                expected,
                "{name}: counts"
            );
        }
        let last = log.len() - 1;
        rows.push(check_range(&name, "whole", &log, 0, last));
        let turns = log.turn_count();
        if turns >= 2 {
            let cut = log.turn_range(turns as u32 - 1).unwrap().start;
            rows.push(check_range(&name, "all but last turn", &log, 0, cut - 1));
        }
        // Every single turn digests (or is refused for holding nothing the
        // model sees), the same way twice.
        for t in 0..turns as u32 {
            let r = log.turn_range(t).unwrap();
            let input = SummaryInput {
                log: &log,
                range: (r.start, r.end - 1),
                instructions: None,
            };
            let visible = log.records()[r.clone()]
                .iter()
                .any(|rec| rec.body.is_model_visible());
            match Digest.summarize(input) {
                Ok(a) => {
                    assert!(visible);
                    assert_eq!(a, Digest.summarize(input).unwrap(), "{name} turn {t}");
                }
                Err(e) => assert!(!visible, "{name} turn {t}: {e}"),
            }
        }
    }

    print_rows(&rows);
    for r in &rows {
        let ratio = r.digest as f64 / r.raw as f64;
        let at = format!(
            "{} {}: digest is {ratio:.3} of the raw text",
            r.name, r.what
        );
        // Smaller than what it replaces, even for a tiny range; much
        // smaller once there is something to fold; well under 20% (here
        // 10%) when tools dominate.
        assert!(r.digest < r.raw, "{at}");
        // (Speed is measured by `cargo bench`, never asserted here.)
        if r.raw >= 8_000 {
            assert!(ratio < 0.2, "{at}");
        }
        if r.raw >= 20_000 && r.tool_share > 0.5 {
            assert!(ratio < 0.1, "{at}");
        }
        if r.raw >= 100_000 {
            assert!(ratio < 0.05, "{at}");
        }
    }
}

fn print_rows(rows: &[Row]) {
    println!(
        "{:<66} {:<18} {:>9} {:>7} {:>6} {:>6} {:>8}",
        "conversation", "range", "raw B", "dig B", "ratio", "tools", "µs"
    );
    for r in rows {
        println!(
            "{:<66} {:<18} {:>9} {:>7} {:>5.1}% {:>5.0}% {:>8}",
            r.name,
            r.what,
            r.raw,
            r.digest,
            100.0 * r.digest as f64 / r.raw as f64,
            100.0 * r.tool_share,
            r.micros
        );
    }
}
