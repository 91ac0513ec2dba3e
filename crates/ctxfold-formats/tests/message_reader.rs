//! The message reader against `from_json`, on the real JP corpus written out
//! in the three chat formats and on the bundled examples: reading a
//! request message by message, or cutting back to an earlier message after
//! reading others and reading on from there, gives exactly what reading the
//! request whole gives.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::PathBuf;

use ctxfold_core::{Object, Record};
use ctxfold_formats::message_reader::{MessageReader, Wire};
use ctxfold_formats::{Format, Transcript, anthropic, import, openai, responses};
use serde_json::{Value, json};

/// Every corpus conversation and example as request bodies of each wire.
fn bodies() -> Vec<(String, Wire, Value)> {
    let mut records: Vec<(String, Vec<Record>)> = Vec::new();
    let dirs = ctxfold_testkit::corpus::conversations();
    assert_eq!(dirs.len(), 15, "the corpus has fifteen conversations");
    for d in dirs {
        let t = import(&d, Some(Format::Jp)).unwrap();
        records.push((d.display().to_string(), t.records));
    }
    let mut out = Vec::new();
    for (name, rs) in &records {
        let extras = Object::new();
        out.push((name.clone(), Wire::OpenAi, openai::to_json(rs, &extras)));
        out.push((
            name.clone(),
            Wire::Anthropic,
            anthropic::to_json(rs, &extras),
        ));
        out.push((
            name.clone(),
            Wire::Responses,
            responses::to_json(rs, &extras),
        ));
    }
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    for (file, wire) in [
        ("openai_coding_session.json", Wire::OpenAi),
        ("openai_developer_parts.json", Wire::OpenAi),
        ("anthropic_coding_session.json", Wire::Anthropic),
        ("anthropic_system_blocks.json", Wire::Anthropic),
    ] {
        let v: Value = serde_json::from_slice(&std::fs::read(data.join(file)).unwrap()).unwrap();
        out.push((file.to_owned(), wire, v));
    }
    out
}

fn whole(wire: Wire, body: &Value) -> Transcript {
    match wire {
        Wire::OpenAi => openai::from_json(body),
        Wire::Anthropic => anthropic::from_json(body),
        Wire::Responses => responses::from_json(body),
    }
    .unwrap()
}

fn messages(wire: Wire, body: &Value) -> &[Value] {
    body[wire.messages_key()].as_array().unwrap()
}

fn assert_same(name: &str, what: &str, got: Transcript, want: &Transcript) {
    assert_eq!(got.records, want.records, "{name}: {what}: records differ");
    assert_eq!(got.extras, want.extras, "{name}: {what}: extras differ");
    assert_eq!(
        got.warnings, want.warnings,
        "{name}: {what}: warnings differ"
    );
}

#[test]
fn reading_every_message_gives_what_from_json_gives() {
    let all = bodies();
    assert!(all.len() >= 49);
    for (name, wire, body) in &all {
        let want = whole(*wire, body);
        let mut r = MessageReader::new(*wire, body.as_object()).unwrap();
        for m in messages(*wire, body) {
            r.read(m).unwrap();
        }
        assert_eq!(r.len(), messages(*wire, body).len());
        if !r.needs_pairing() {
            assert_eq!(r.records(), &want.records[..], "{name}: unpaired records");
        }
        // Each message's records follow the last one's, up to the end.
        let mut at = r.records().len()
            - (0..r.len())
                .map(|i| r.message_records(i).len())
                .sum::<usize>();
        for i in 0..r.len() {
            assert_eq!(r.message_records(i).start, at, "{name}: message {i}");
            at = r.message_records(i).end;
        }
        assert_eq!(
            at,
            r.records().len(),
            "{name}: the last message ends the records"
        );
        assert_same(
            name,
            "read whole",
            r.into_transcript(body.as_object()),
            &want,
        );
    }
}

#[test]
fn cutting_back_and_reading_on_gives_what_from_json_gives() {
    for (name, wire, body) in &bodies() {
        let want = whole(*wire, body);
        let ms = messages(*wire, body);
        let n = ms.len();
        // Twelve cut points, both ends included.
        let cuts: Vec<usize> = (0..12).map(|k| k * n / 11).collect();
        for &cut in &cuts {
            let mut r = MessageReader::new(*wire, body.as_object()).unwrap();
            for m in &ms[..cut] {
                r.read(m).unwrap();
            }
            // A later state of the conversation first: the tail shifted by
            // a few messages (what a retry or an edit looks like), read as
            // far as it reads.
            let shift = (n / 7).max(1);
            for m in ms.iter().skip(cut + shift) {
                if r.read(m).is_err() {
                    break;
                }
            }
            r.truncate(cut);
            assert_eq!(r.len(), cut);
            for m in &ms[cut..] {
                r.read(m).unwrap();
            }
            assert_same(
                name,
                &format!("cut at {cut} of {n}"),
                r.into_transcript(body.as_object()),
                &want,
            );
        }
        // Cutting back to an earlier state gives that state, read whole.
        let half = n / 2;
        let mut earlier = body.clone();
        earlier[wire.messages_key()] = Value::Array(ms[..half].to_vec());
        let mut r = MessageReader::new(*wire, body.as_object()).unwrap();
        for m in ms {
            r.read(m).unwrap();
        }
        r.truncate(half);
        assert_same(
            name,
            "an earlier state",
            r.into_transcript(earlier.as_object()),
            &whole(*wire, &earlier),
        );
    }
}

#[test]
fn a_refused_message_leaves_the_reader_as_it_was() {
    let bad = |wire: Wire| match wire {
        Wire::OpenAi => vec![
            json!({"role": "assistant", "content": "ok", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}, 7]}),
            json!({"role": 9}),
            json!("text"),
        ],
        Wire::Anthropic => vec![
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}, 3]}),
            json!({"role": "system", "content": 5}),
            // Refused at its second block, after the first made a record.
            json!({"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "tool_use", "name": "f"}]}),
            json!("text"),
        ],
        Wire::Responses => vec![
            json!({"type": 5}),
            json!({"type": "message", "role": "user", "content": 3}),
            json!("text"),
        ],
    };
    for (name, wire, body) in bodies().iter().step_by(5) {
        let want = whole(*wire, body);
        let ms = messages(*wire, body);
        let mut r = MessageReader::new(*wire, body.as_object()).unwrap();
        for (i, m) in ms.iter().enumerate() {
            if i % 3 == 1 {
                for b in &bad(*wire) {
                    let before = r.records().to_vec();
                    let e = r.read(b).expect_err(&format!("{name}: {b} is refused"));
                    assert!(
                        e.contains(&format!("[{i}]")),
                        "{name}: error names the message: {e}"
                    );
                    assert_eq!(
                        r.records(),
                        &before[..],
                        "{name}: refused message left records"
                    );
                    assert_eq!(r.len(), i);
                }
            }
            r.read(m).unwrap();
        }
        assert_same(
            name,
            "after refusals",
            r.into_transcript(body.as_object()),
            &want,
        );
    }
}

#[test]
fn the_turn_rule_and_message_starts_hold_after_a_cut() {
    // A cut right after a user message: the next user message is an
    // interrupt reply (no new turn); a cut after an assistant message: the
    // next one opens a turn. OpenAI's back-to-back assistant messages keep
    // their boundary only when the reader remembers the previous role.
    let body = json!({"model": "m", "messages": [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "two"},
        {"role": "user", "content": "three"},
        {"role": "assistant", "content": "c"}
    ]});
    let want = whole(Wire::OpenAi, &body);
    let ms = messages(Wire::OpenAi, &body);
    let other = json!({"role": "user", "content": "elsewhere"});
    let other_a = json!({"role": "assistant", "content": "x"});
    for cut in 0..=ms.len() {
        let mut r = MessageReader::new(Wire::OpenAi, body.as_object()).unwrap();
        for m in &ms[..cut] {
            r.read(m).unwrap();
        }
        // What was read past the cut had the opposite turn state.
        r.read(&other_a).unwrap();
        r.read(&other).unwrap();
        r.truncate(cut);
        for m in &ms[cut..] {
            r.read(m).unwrap();
        }
        assert_same(
            "turns",
            &format!("cut at {cut}"),
            r.into_transcript(body.as_object()),
            &want,
        );
    }
}

#[test]
fn a_repeated_call_id_needs_pairing_until_cut_away() {
    let call = |id: &str| json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]});
    let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "r"});
    let ms = [
        json!({"role": "user", "content": "go"}),
        call("c1"),
        result("c1"),
        call("c1"),
        result("c1"),
    ];
    let mut r = MessageReader::new(Wire::OpenAi, None).unwrap();
    for m in &ms[..3] {
        r.read(m).unwrap();
    }
    assert!(!r.needs_pairing());
    r.read(&ms[3]).unwrap();
    assert!(r.needs_pairing(), "the second call of c1 must be renamed");
    r.read(&ms[4]).unwrap();
    let body = json!({"messages": ms});
    let want = whole(Wire::OpenAi, &body);
    assert_ne!(
        r.records(),
        &want.records[..],
        "pairing renamed the second call"
    );
    r.truncate(3);
    assert!(!r.needs_pairing(), "the repeat was cut away");
    r.read(&ms[3]).unwrap();
    r.read(&ms[4]).unwrap();
    assert_same("pairing", "after a cut", r.into_transcript(None), &want);
}
