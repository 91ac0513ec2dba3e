//! JP files without any `turn_start` (written before JP recorded turns):
//! each request is its own turn on import, never between a tool call and
//! its result, and export writes the file back byte for byte, also after a
//! trip through ctxfold's log format.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use ctxfold_core::{Body, Log, Record};
use ctxfold_formats::{Format, Transcript, export, import};
use serde_json::{Value, json};

fn b64(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// A folder holding `events` as JP writes them (two-space pretty JSON and a
/// final newline); the bytes of its `events.json`.
fn jp_folder(dir: &std::path::Path, events: &Value) -> Vec<u8> {
    std::fs::create_dir_all(dir).unwrap();
    let mut bytes = serde_json::to_vec_pretty(events).unwrap();
    bytes.push(b'\n');
    std::fs::write(dir.join("events.json"), &bytes).unwrap();
    std::fs::write(dir.join("metadata.json"), "{\n  \"title\": \"old\"\n}\n").unwrap();
    bytes
}

fn ev(n: u32, ty: &str, fields: Value) -> Value {
    let mut o = json!({"timestamp": format!("2025-01-01 10:00:{n:02}.0"), "type": ty});
    o.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    o
}

/// A config delta, then three `jp query` runs: plain text, a tool loop,
/// and one whose second request came while a tool call waited (an
/// interrupt reply).
fn turnless_events() -> Value {
    json!([
        ev(0, "config_delta", json!({"delta": {"model": "x"}})),
        ev(1, "chat_request", json!({"content": "first question"})),
        ev(2, "chat_response", json!({"reasoning": "thinking"})),
        ev(3, "chat_response", json!({"message": "first answer"})),
        ev(4, "chat_request", json!({"content": "read the file"})),
        ev(
            5,
            "tool_call_request",
            json!({"id": "c1", "name": "fs_read_file", "arguments": {"path": b64("src/lib.rs")}})
        ),
        ev(
            6,
            "tool_call_response",
            json!({"id": "c1", "content": b64("fn main() {}"), "is_error": false})
        ),
        ev(7, "chat_response", json!({"message": "it is empty"})),
        ev(8, "config_delta", json!({"delta": {"model": "y"}})),
        ev(9, "chat_request", json!({"content": "run the tests"})),
        ev(
            10,
            "tool_call_request",
            json!({"id": "c2", "name": "cargo_test", "arguments": {}})
        ),
        ev(11, "chat_request", json!({"content": "yes, run them all"})),
        ev(
            12,
            "tool_call_response",
            json!({"id": "c2", "content": b64("ok"), "is_error": false})
        ),
        ev(13, "chat_response", json!({"message": "all pass"})),
    ])
}

fn kinds(t: &Transcript) -> Vec<&'static str> {
    t.records
        .iter()
        .map(|r| match &r.body {
            Body::TurnStart => "turn_start",
            Body::User { .. } => "user",
            Body::Assistant { .. } => "assistant",
            Body::Reasoning { .. } => "reasoning",
            Body::ToolCall { .. } => "tool_call",
            Body::ToolResult { .. } => "tool_result",
            _ => "other",
        })
        .collect()
}

fn exported_events(t: &Transcript) -> Vec<u8> {
    let out = tempfile::tempdir().unwrap();
    let out = out.path().join("conv");
    export(t, Format::Jp, &out).unwrap();
    std::fs::read(out.join("events.json")).unwrap()
}

#[test]
fn each_request_opens_a_turn_but_not_inside_a_tool_pair() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = jp_folder(dir.path(), &turnless_events());
    let t = import(dir.path(), Some(Format::Jp)).unwrap();
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert_eq!(
        kinds(&t),
        [
            "other",
            "user",
            "reasoning",
            "assistant",
            "turn_start",
            "user",
            "tool_call",
            "tool_result",
            "assistant",
            "other",
            "turn_start",
            "user",
            "tool_call",
            "user",
            "tool_result",
            "assistant",
        ]
    );
    // Numbered in order, the synthesized ones included; each marked and
    // dated as the request it opens.
    for (i, r) in t.records.iter().enumerate() {
        assert_eq!(r.seq, i as u64);
        if matches!(r.body, Body::TurnStart) {
            assert_eq!(r.extra.get("jp"), Some(&json!({"synthesized": true})));
            assert_eq!(r.ts, t.records[i + 1].ts);
        }
    }
    let log = Log::from_records(t.records.clone());
    assert_eq!(log.turn_count(), 3);
    // The config delta between two runs stays in the earlier turn; the
    // interrupt reply in the turn of its tool call.
    let turn_of = |content: &str| {
        let i = t
            .records
            .iter()
            .position(|r| matches!(&r.body, Body::User { content: c, .. } if c == content))
            .unwrap();
        log.turn_of(i)
    };
    assert_eq!(turn_of("first question"), 0);
    assert_eq!(turn_of("read the file"), 1);
    assert_eq!(log.turn_of(9), 1, "the second config delta");
    assert_eq!(turn_of("run the tests"), 2);
    assert_eq!(turn_of("yes, run them all"), 2);

    // Export leaves the synthesized records out: the same bytes, directly
    // and after ctxfold's own log format.
    assert!(exported_events(&t) == bytes, "bytes differ");
    let mut through_log = t.clone();
    through_log.records = t
        .records
        .iter()
        .map(|r| Record::from_json_line(&r.to_json_line()).unwrap().0)
        .collect();
    assert_eq!(through_log.records, t.records);
    assert!(exported_events(&through_log) == bytes, "bytes differ");
    // And the export reads back to the same records.
    let out = tempfile::tempdir().unwrap();
    export(&t, Format::Jp, out.path()).unwrap();
    assert_eq!(import(out.path(), None).unwrap().records, t.records);
}

#[test]
fn a_first_request_without_anything_before_it_opens_turn_zero_alone() {
    // No config delta in front: the first request is turn 0's, with no
    // turn start of its own, whatever a second request follows.
    let dir = tempfile::tempdir().unwrap();
    let events = json!([
        ev(1, "chat_request", json!({"content": "a"})),
        ev(2, "chat_request", json!({"content": "b"})),
        ev(3, "chat_response", json!({"message": "c"})),
    ]);
    let bytes = jp_folder(dir.path(), &events);
    let t = import(dir.path(), Some(Format::Jp)).unwrap();
    assert_eq!(kinds(&t), ["user", "turn_start", "user", "assistant"]);
    assert_eq!(Log::from_records(t.records.clone()).turn_count(), 2);
    assert!(exported_events(&t) == bytes);
}

#[test]
fn files_with_turn_starts_or_jp_compactions_get_none() {
    // One real turn_start anywhere: JP recorded turns, the file is read
    // as it is (the second request is an interrupt reply in turn 0).
    let dir = tempfile::tempdir().unwrap();
    let events = json!([
        ev(1, "turn_start", json!({})),
        ev(2, "chat_request", json!({"content": "a"})),
        ev(3, "chat_response", json!({"message": "b"})),
        ev(4, "chat_request", json!({"content": "c"})),
        ev(5, "chat_response", json!({"message": "d"})),
    ]);
    jp_folder(dir.path(), &events);
    let t = import(dir.path(), Some(Format::Jp)).unwrap();
    assert_eq!(
        kinds(&t),
        ["turn_start", "user", "assistant", "user", "assistant"]
    );
    assert_eq!(Log::from_records(t.records).turn_count(), 1);

    // A JP compaction numbers turns by the file's own turn starts: made-up
    // ones would move its range.
    let dir = tempfile::tempdir().unwrap();
    let events = json!([
        ev(1, "chat_request", json!({"content": "a"})),
        ev(2, "chat_response", json!({"message": "b"})),
        ev(3, "chat_request", json!({"content": "c"})),
        ev(
            4,
            "compaction",
            json!({"from_turn": 0, "to_turn": 0, "reasoning": "strip"})
        ),
    ]);
    let bytes = jp_folder(dir.path(), &events);
    let t = import(dir.path(), Some(Format::Jp)).unwrap();
    assert!(!kinds(&t).contains(&"turn_start"));
    assert!(exported_events(&t) == bytes);
}

#[test]
fn a_request_that_cannot_be_read_opens_no_turn() {
    // Kept whole as a `jp_record` (with a warning): not a user message, so
    // no turn start for it; the next readable request gets one.
    let dir = tempfile::tempdir().unwrap();
    let events = json!([
        ev(1, "chat_request", json!({"content": "a"})),
        ev(2, "chat_response", json!({"message": "b"})),
        ev(3, "chat_request", json!({"content": 7})),
        ev(4, "chat_request", json!({"content": "d"})),
    ]);
    let bytes = jp_folder(dir.path(), &events);
    let t = import(dir.path(), Some(Format::Jp)).unwrap();
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(t.warnings[0].contains("event 2"), "{:?}", t.warnings);
    assert_eq!(
        kinds(&t),
        ["user", "assistant", "other", "turn_start", "user"]
    );
    assert!(exported_events(&t) == bytes);
}
