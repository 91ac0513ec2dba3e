//! The JP corpus (`shared/corpus/jp`), read for token tests and benchmarks:
//! its texts, and each conversation as a ctxfold log.
//!
//! Only what counting needs is read: turn starts, user messages, assistant
//! text and reasoning, tool calls (arguments decoded) and tool results
//! (content decoded). JP stores tool arguments and results base64-encoded;
//! a value that is not base64 (or not UTF-8 once decoded) is kept as is.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use ctxfold_core::{Body, Log, Record};
use serde_json::Value;

/// The corpus folder: `CTXFOLD_CORPUS`, or `shared/corpus/jp` beside the
/// repository.
pub use ctxfold_testkit::corpus::dir as corpus_dir;

/// One conversation of the corpus.
pub struct Conversation {
    /// Its folder name.
    pub name: String,
    /// Every text the model saw, one per event field: user messages,
    /// assistant messages, reasoning, tool call arguments (as JSON text)
    /// and tool results.
    pub texts: Vec<String>,
    /// The conversation as a ctxfold log.
    pub log: Log,
}

/// Every conversation of the corpus, by folder name. Panics when the
/// corpus is missing: these tests are worth nothing without it.
pub fn conversations() -> Vec<Conversation> {
    let dir = corpus_dir();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {}: {e} (set CTXFOLD_CORPUS)", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("events.json").is_file())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no conversation in {}", dir.display());
    dirs.iter().map(|d| conversation(d)).collect()
}

/// The conversation in folder `dir`.
pub fn conversation(dir: &Path) -> Conversation {
    let path = dir.join("events.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let events: Vec<Value> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut texts = Vec::new();
    let mut log = Log::new();
    let str_of = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
    for e in &events {
        let ts = str_of(e, "timestamp").unwrap_or_default();
        let push = |log: &mut Log, body: Body| {
            let seq = log.next_seq();
            log.push(Record::new(seq, ts.clone(), body));
        };
        match e.get("type").and_then(Value::as_str) {
            Some("turn_start") => push(&mut log, Body::TurnStart),
            Some("chat_request") => {
                let content = str_of(e, "content").unwrap_or_default();
                texts.push(content.clone());
                push(
                    &mut log,
                    Body::User {
                        content,
                        author: None,
                    },
                );
            }
            Some("chat_response") => {
                if let Some(content) = str_of(e, "reasoning") {
                    texts.push(content.clone());
                    push(&mut log, Body::Reasoning { content });
                }
                if let Some(content) = str_of(e, "message") {
                    texts.push(content.clone());
                    push(&mut log, Body::Assistant { content });
                }
            }
            Some("tool_call_request") => {
                let mut arguments = e.get("arguments").cloned().unwrap_or(Value::Null);
                decode_tree(&mut arguments);
                texts.push(arguments.to_string());
                push(
                    &mut log,
                    Body::ToolCall {
                        id: str_of(e, "id").unwrap_or_default(),
                        name: str_of(e, "name").unwrap_or_default(),
                        arguments: arguments.into(),
                    },
                );
            }
            Some("tool_call_response") => {
                let content = decode(&str_of(e, "content").unwrap_or_default());
                texts.push(content.clone());
                push(
                    &mut log,
                    Body::ToolResult {
                        id: str_of(e, "id").unwrap_or_default(),
                        content,
                        is_error: e.get("is_error").and_then(Value::as_bool) == Some(true),
                    },
                );
            }
            _ => {}
        }
    }
    Conversation {
        name: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        texts,
        log,
    }
}

/// Decode one JP base64 string, or keep it when it is not base64 text.
pub fn decode(s: &str) -> String {
    for engine in [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        if let Ok(bytes) = engine.decode(s)
            && let Ok(text) = String::from_utf8(bytes)
        {
            return text;
        }
    }
    s.to_owned()
}

fn decode_tree(v: &mut Value) {
    match v {
        Value::String(s) => *s = decode(s),
        Value::Array(a) => a.iter_mut().for_each(decode_tree),
        Value::Object(o) => o.values_mut().for_each(decode_tree),
        _ => {}
    }
}
