//! The real JP corpus (`shared/corpus/jp`, or the folder named by
//! `CTXFOLD_CORPUS`) read with a minimal parser, for the core's tests (the
//! formats crate is not a dependency of core): a JSON array of events
//! whose tool arguments (every string) and tool results are base64.
#![allow(dead_code)]

use std::path::Path;

use ctxfold_core::{Body, Log, Object, Record};
use serde_json::Value;

pub use ctxfold_testkit::corpus::dir as corpus_dir;

// ------------------------------------------------------------------ base64

pub fn sextet(c: u8) -> Option<u32> {
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
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
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
pub fn jp_text(s: &str) -> String {
    base64_decode(s)
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_else(|| s.to_owned())
}

pub fn decode_strings(v: &mut Value) {
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

pub fn str_field(obj: &Object, key: &str) -> String {
    obj.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

pub fn jp_body(mut obj: Object) -> Body {
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
                arguments: arguments.into(),
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
                fields: Box::new(obj),
            }
        }
    }
}

pub fn load(dir: &Path) -> Log {
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
