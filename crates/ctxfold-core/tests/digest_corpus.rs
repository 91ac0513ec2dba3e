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

use std::path::{Path, PathBuf};
use std::time::Instant;

use ctxfold_core::digest::Digest;
use ctxfold_core::summarizer::{Summarizer, SummaryInput};
use ctxfold_core::{Body, Log, Object, Record};
use serde_json::Value;

fn corpus_dir() -> PathBuf {
    match std::env::var_os("CTXFOLD_CORPUS") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/jp"),
    }
}

// ------------------------------------------------------------------ base64

fn sextet(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        _ => return None,
    } as u32)
}

/// Decode base64 (standard or URL-safe alphabet, padding optional); `None`
/// unless the text is canonical base64.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let data = s.trim_end_matches('=').as_bytes();
    let pad = s.len() - data.len();
    if pad > 2 || (pad > 0 && !s.len().is_multiple_of(4)) || data.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(data.len() * 3 / 4);
    for chunk in data.chunks(4) {
        let mut acc = 0u32;
        for &c in chunk {
            acc = (acc << 6) | sextet(c)?;
        }
        match chunk.len() {
            4 => out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]),
            3 => {
                if acc & 0b11 != 0 {
                    return None;
                }
                out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]);
            }
            2 => {
                if acc & 0b1111 != 0 {
                    return None;
                }
                out.push((acc >> 4) as u8);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// The text a JP string stands for: decoded when it is base64 of UTF-8,
/// else as it is.
fn jp_text(s: &str) -> String {
    base64_decode(s)
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_else(|| s.to_owned())
}

fn decode_strings(v: &mut Value) {
    match v {
        Value::String(s) => *s = jp_text(s),
        Value::Array(items) => items.iter_mut().for_each(decode_strings),
        Value::Object(map) => map.values_mut().for_each(decode_strings),
        _ => {}
    }
}

#[test]
fn base64_decoder_round_trips_known_values() {
    assert_eq!(jp_text("TGlzdElzc3Vlcw=="), "ListIssues");
    assert_eq!(jp_text("SW5pdA=="), "Init");
    assert_eq!(jp_text("aGk"), "hi");
    assert_eq!(jp_text("not base64!"), "not base64!");
    assert_eq!(jp_text("/w=="), "/w==", "0xff is not UTF-8");
    assert_eq!(base64_decode("-_8="), Some(vec![0xfb, 0xff]));
    assert_eq!(base64_decode("aGl="), None, "non-canonical trailing bits");
}

// ------------------------------------------------------------------ JP events

fn str_field(obj: &Object, key: &str) -> String {
    obj.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn jp_body(mut obj: Object) -> Body {
    let ty = str_field(&obj, "type");
    match ty.as_str() {
        "turn_start" => Body::TurnStart,
        "chat_request" => Body::User {
            content: str_field(&obj, "content"),
            author: None,
        },
        "chat_response" if obj.contains_key("message") => Body::Assistant {
            content: str_field(&obj, "message"),
        },
        "chat_response" if obj.contains_key("reasoning") => Body::Reasoning {
            content: str_field(&obj, "reasoning"),
        },
        "tool_call_request" => {
            let mut arguments = obj.remove("arguments").unwrap_or(Value::Null);
            decode_strings(&mut arguments);
            Body::ToolCall {
                id: str_field(&obj, "id"),
                name: str_field(&obj, "name"),
                arguments,
            }
        }
        "tool_call_response" => Body::ToolResult {
            id: str_field(&obj, "id"),
            content: jp_text(&str_field(&obj, "content")),
            is_error: obj
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        },
        _ => {
            obj.remove("type");
            Body::Other {
                kind: ty,
                fields: obj,
            }
        }
    }
}

fn load(dir: &Path) -> Log {
    let text = std::fs::read_to_string(dir.join("events.json")).expect("events.json");
    let Value::Array(events) = serde_json::from_str(&text).expect("JSON") else {
        panic!("{}: not a JSON array", dir.display());
    };
    let records = events
        .into_iter()
        .enumerate()
        .map(|(i, ev)| {
            let Value::Object(obj) = ev else {
                panic!("{}: event {i} is not an object", dir.display())
            };
            let ts = str_field(&obj, "timestamp");
            Record::new(i as u64, ts, jp_body(obj))
        })
        .collect();
    Log::from_records(records)
}

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
