//! OpenAI chat and Anthropic messages: import, export and round trips
//! through real files, on the hand-written examples in `tests/data/`.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::{Path, PathBuf};

use ctxfold_core::{Body, Kind, Log, Record};
use ctxfold_formats::{Format, Transcript, anthropic, detect, export, import, openai};
use serde_json::{Value, json};
use tempfile::TempDir;

const OPENAI_EXAMPLES: [&str; 2] = ["openai_coding_session.json", "openai_developer_parts.json"];
const ANTHROPIC_EXAMPLES: [&str; 2] = [
    "anthropic_coding_session.json",
    "anthropic_system_blocks.json",
];

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn read_value(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Export `t` as `format` into `dir` and read the file back as JSON.
fn export_value(t: &Transcript, format: Format, dir: &TempDir, name: &str) -> (PathBuf, Value) {
    let out = dir.path().join(name);
    export(t, format, &out).unwrap();
    let v = read_value(&out);
    (out, v)
}

fn transcript(records: Vec<Record>) -> Transcript {
    Transcript {
        records,
        ..Transcript::default()
    }
}

/// Write `v` to a file in `dir` and import it as `format`; the error text.
fn import_error(dir: &TempDir, format: Format, v: &Value) -> String {
    let path = dir.path().join("bad.json");
    std::fs::write(&path, serde_json::to_vec(v).unwrap()).unwrap();
    import(&path, Some(format)).unwrap_err().to_string()
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

fn tool_call_ids(records: &[Record]) -> Vec<&str> {
    records
        .iter()
        .filter_map(|r| match &r.body {
            Body::ToolCall { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect()
}

fn tool_result_ids(records: &[Record]) -> Vec<&str> {
    records
        .iter()
        .filter_map(|r| match &r.body {
            Body::ToolResult { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect()
}

fn kinds(records: &[Record]) -> Vec<Kind> {
    records.iter().map(Record::kind).collect()
}

fn result<'a>(records: &'a [Record], call: &str) -> &'a Record {
    records
        .iter()
        .find(|r| matches!(&r.body, Body::ToolResult { id, .. } if id == call))
        .unwrap_or_else(|| panic!("no result for {call}"))
}

/// Every example: export(import(file)) is the file, and the records
/// survive import(export(records)), `seq` included.
fn assert_round_trips(names: &[&str], format: Format) {
    let dir = TempDir::new().unwrap();
    for name in names {
        let path = example(name);
        let original = read_value(&path);
        let t = import(&path, None).unwrap();
        assert!(t.warnings.is_empty(), "{name}: {:?}", t.warnings);
        let seqs: Vec<u64> = t.records.iter().map(|r| r.seq).collect();
        assert_eq!(
            seqs,
            (0..t.records.len() as u64).collect::<Vec<_>>(),
            "{name}"
        );
        assert!(t.records.iter().all(|r| r.ts.is_empty()), "{name}");

        let (out, exported) = export_value(&t, format, &dir, name);
        assert_eq!(
            exported, original,
            "{name}: export(import(file)) differs from the file"
        );
        assert_eq!(
            keys(&exported),
            keys(&original),
            "{name}: top-level key order"
        );

        let again = import(&out, Some(format)).unwrap();
        assert_eq!(
            again.records, t.records,
            "{name}: records changed by export and import"
        );
        assert_eq!(again.extras, t.extras, "{name}");
    }
}

#[test]
fn openai_examples_round_trip_through_files() {
    assert_round_trips(&OPENAI_EXAMPLES, Format::Openai);
}

#[test]
fn anthropic_examples_round_trip_through_files() {
    assert_round_trips(&ANTHROPIC_EXAMPLES, Format::Anthropic);
}

#[test]
fn detect_finds_the_format_of_each_example() {
    for name in OPENAI_EXAMPLES {
        assert_eq!(detect(&example(name)).unwrap(), Format::Openai, "{name}");
    }
    for name in ANTHROPIC_EXAMPLES {
        assert_eq!(detect(&example(name)).unwrap(), Format::Anthropic, "{name}");
    }
}

#[test]
fn import_leaves_the_source_file_unchanged() {
    for name in OPENAI_EXAMPLES.into_iter().chain(ANTHROPIC_EXAMPLES) {
        let path = example(name);
        let before = std::fs::read(&path).unwrap();
        import(&path, None).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), before, "{name}");
    }
}

#[test]
fn openai_import_maps_messages_to_records_and_turns() {
    let t = import(&example("openai_coding_session.json"), Some(Format::Openai)).unwrap();
    let r = &t.records;
    assert_eq!(
        kinds(&r[..9]),
        [
            Kind::System,
            Kind::TurnStart,
            Kind::User,
            Kind::Reasoning,
            Kind::Assistant,
            Kind::ToolCall,
            Kind::ToolCall,
            Kind::ToolResult,
            Kind::ToolResult,
        ]
    );
    assert_eq!(
        r[5].body,
        Body::ToolCall {
            id: "call_01".into(),
            name: "read_file".into(),
            arguments: json!({"path": "src/parse.rs"}).into(),
        }
    );
    // Compact arguments need nothing kept in metadata.
    assert_eq!(r[5].metadata, None);
    assert_eq!(
        r[3].body,
        Body::Reasoning {
            content: "A failing test: read the function under test and the test itself. Both reads are independent, so do them at once.".into()
        }
    );
    // Two user queries: two turns, the second opened right before its user message.
    let log = Log::from_records(r.clone());
    assert_eq!(log.turn_count(), 2);
    assert_eq!(r.iter().filter(|x| x.kind() == Kind::TurnStart).count(), 2);
    // The request's other keys are kept in order, `messages` as a placeholder.
    let kept = t.extras["openai"].as_object().unwrap();
    assert_eq!(
        kept.keys().collect::<Vec<_>>(),
        ["model", "messages", "tools", "tool_choice"]
    );
    assert_eq!(kept["messages"], Value::Null);
    assert_eq!(kept["model"], "deepseek-reasoner");
}

#[test]
fn openai_parallel_tool_calls_stay_paired() {
    let dir = TempDir::new().unwrap();
    let t = import(&example("openai_coding_session.json"), Some(Format::Openai)).unwrap();
    assert_eq!(tool_call_ids(&t.records), tool_result_ids(&t.records));
    let log = Log::from_records(t.records.clone());
    for turn in 0..log.turn_count() as u32 {
        for step in log.steps(turn) {
            assert!(step.closed, "step {step:?} has a call without result");
        }
    }
    // The first step: both calls before both results, in call order.
    assert_eq!(log.steps(0)[0].end - log.steps(0)[0].start, 6);

    // Written as Anthropic: both tool_use blocks in one assistant message,
    // both results in the next user message, in the same order.
    let (_, v) = export_value(&t, Format::Anthropic, &dir, "a.json");
    let messages = v["messages"].as_array().unwrap();
    let with_calls = messages
        .iter()
        .position(|m| {
            m["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["id"] == "call_01"))
        })
        .unwrap();
    let uses: Vec<&Value> = messages[with_calls]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| &b["id"])
        .collect();
    assert_eq!(uses, ["call_01", "call_02"]);
    let results: Vec<&Value> = messages[with_calls + 1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["tool_use_id"])
        .collect();
    assert_eq!(results, ["call_01", "call_02"]);
    assert_eq!(messages[with_calls + 1]["role"], "user");
}

#[test]
fn anthropic_parallel_tool_calls_stay_paired() {
    let dir = TempDir::new().unwrap();
    for name in ANTHROPIC_EXAMPLES {
        let t = import(&example(name), None).unwrap();
        assert_eq!(
            tool_call_ids(&t.records),
            tool_result_ids(&t.records),
            "{name}"
        );
        let log = Log::from_records(t.records.clone());
        for turn in 0..log.turn_count() as u32 {
            assert!(log.steps(turn).iter().all(|s| s.closed), "{name}");
        }
    }

    // Written as OpenAI: one assistant message with two tool_calls, then two
    // tool messages answering them in order.
    let t = import(&example("anthropic_coding_session.json"), None).unwrap();
    let (_, v) = export_value(&t, Format::Openai, &dir, "o.json");
    let messages = v["messages"].as_array().unwrap();
    let i = messages
        .iter()
        .position(|m| m.get("tool_calls").is_some())
        .unwrap();
    let ids: Vec<&Value> = messages[i]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["id"])
        .collect();
    assert_eq!(ids, ["toolu_01", "toolu_02"]);
    assert_eq!(
        messages[i]["content"],
        "I'll read the CI workflow and run clippy."
    );
    assert_eq!(
        messages[i]["tool_calls"][1]["function"]["arguments"],
        r#"{"command":"cargo clippy --all-targets -- -D warnings"}"#
    );
    assert_eq!(messages[i + 1]["role"], "tool");
    assert_eq!(messages[i + 1]["tool_call_id"], "toolu_01");
    assert_eq!(messages[i + 2]["role"], "tool");
    assert_eq!(messages[i + 2]["tool_call_id"], "toolu_02");
    // And back: the calls and results are the same, in the same order.
    let back = import(&dir.path().join("o.json"), Some(Format::Openai)).unwrap();
    assert_eq!(tool_call_ids(&back.records), tool_call_ids(&t.records));
    assert_eq!(tool_result_ids(&back.records), tool_result_ids(&t.records));
}

#[test]
fn tool_error_survives_anthropic_but_openai_has_no_error_flag() {
    let dir = TempDir::new().unwrap();
    let t = import(&example("anthropic_coding_session.json"), None).unwrap();
    assert!(matches!(
        result(&t.records, "toolu_02").body,
        Body::ToolResult { is_error: true, .. }
    ));
    assert!(matches!(
        result(&t.records, "toolu_01").body,
        Body::ToolResult {
            is_error: false,
            ..
        }
    ));

    // Anthropic keeps the flag, and writes it only when true.
    let (out, v) = export_value(&t, Format::Anthropic, &dir, "a.json");
    let blocks = v["messages"][2]["content"].as_array().unwrap();
    assert_eq!(blocks[1]["is_error"], true);
    assert!(blocks[0].get("is_error").is_none());
    let back = import(&out, Some(Format::Anthropic)).unwrap();
    assert!(matches!(
        result(&back.records, "toolu_02").body,
        Body::ToolResult { is_error: true, .. }
    ));

    // OpenAI tool messages have no error flag: the text is kept, the flag
    // is not, and re-import reads `false` (documented in `openai`).
    let (out, v) = export_value(&t, Format::Openai, &dir, "o.json");
    let tool_msg = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "toolu_02")
        .unwrap();
    assert_eq!(keys(tool_msg), ["role", "tool_call_id", "content"]);
    assert!(
        tool_msg["content"]
            .as_str()
            .unwrap()
            .starts_with("error: this `if` has identical blocks")
    );
    let back = import(&out, Some(Format::Openai)).unwrap();
    assert!(matches!(
        result(&back.records, "toolu_02").body,
        Body::ToolResult {
            is_error: false,
            ..
        }
    ));

    // An explicit `is_error: false` is written back as it was.
    let t = import(&example("anthropic_system_blocks.json"), None).unwrap();
    let v = anthropic::to_json(&t.records, &t.extras);
    assert_eq!(v["messages"][2]["content"][0]["is_error"], false);
    assert_eq!(
        v["messages"][2]["content"][1]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[test]
fn reasoning_with_signature_survives_anthropic() {
    let dir = TempDir::new().unwrap();
    let t = import(&example("anthropic_coding_session.json"), None).unwrap();
    let reasoning: Vec<&Record> = t
        .records
        .iter()
        .filter(|r| r.kind() == Kind::Reasoning)
        .collect();
    assert_eq!(reasoning.len(), 2);
    let sig = reasoning[0].metadata.as_ref().unwrap()["anthropic_thinking_signature"]
        .as_str()
        .unwrap();
    assert!(sig.starts_with("EqQBCkgI"));

    let (out, v) = export_value(&t, Format::Anthropic, &dir, "a.json");
    let thinking = &v["messages"][1]["content"][0];
    assert_eq!(thinking["type"], "thinking");
    assert_eq!(thinking["signature"], sig);
    assert_eq!(
        thinking["thinking"],
        json!(match &reasoning[0].body {
            Body::Reasoning { content } => content.clone(),
            _ => unreachable!(),
        })
    );
    let back = import(&out, Some(Format::Anthropic)).unwrap();
    let back_reasoning: Vec<&Record> = back
        .records
        .iter()
        .filter(|r| r.kind() == Kind::Reasoning)
        .collect();
    assert_eq!(back_reasoning, reasoning);

    // Redacted thinking is kept whole and written back in place.
    let redacted = t
        .records
        .iter()
        .find(|r| matches!(&r.body, Body::Other { kind, .. } if kind == "anthropic_block"))
        .unwrap();
    let Body::Other { fields, .. } = &redacted.body else {
        unreachable!()
    };
    assert_eq!(fields["role"], "assistant");
    assert_eq!(fields["block"]["type"], "redacted_thinking");
    let last = v["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["content"][0], fields["block"]);
}

#[test]
fn reasoning_without_signature_is_left_out_of_anthropic_export() {
    // OpenAI `reasoning_content` has no signature: Anthropic would reject it.
    let t = import(&example("openai_coding_session.json"), None).unwrap();
    assert_eq!(
        t.records
            .iter()
            .filter(|r| r.kind() == Kind::Reasoning)
            .count(),
        3
    );
    let v = anthropic::to_json(&t.records, &t.extras);
    let text = serde_json::to_string(&v).unwrap();
    assert!(!text.contains("\"thinking\""));
    // The text and calls of the same steps are still there.
    assert_eq!(
        v["messages"][1]["content"][0],
        json!({"type": "text", "text": "I'll look at the parser and the test."})
    );
    // OpenAI's request keys do not leak into an Anthropic request.
    assert!(v.get("tool_choice").is_none() && v.get("model").is_none());
    assert_eq!(
        v["system"],
        "You are a coding agent working in the repository /home/dev/tally. Use the tools to read and change files. Keep answers short."
    );
    // But reasoning goes to OpenAI's `reasoning_content` from either side.
    let a = import(&example("anthropic_coding_session.json"), None).unwrap();
    let o = openai::to_json(&a.records, &a.extras);
    assert!(
        o["messages"][2]["reasoning_content"]
            .as_str()
            .unwrap()
            .starts_with("The lint job probably runs clippy")
    );
}

#[test]
fn anthropic_turns_open_at_user_text_and_interrupts_merge_with_results() {
    let t = import(&example("anthropic_coding_session.json"), None).unwrap();
    let r = &t.records;
    assert_eq!(kinds(&r[..3]), [Kind::System, Kind::TurnStart, Kind::User]);
    // The text sent with toolu_03's result opens a turn after the result.
    let i = r
        .iter()
        .position(|x| matches!(&x.body, Body::ToolResult { id, .. } if id == "toolu_03"))
        .unwrap();
    assert_eq!(
        kinds(&r[i..i + 3]),
        [Kind::ToolResult, Kind::TurnStart, Kind::User]
    );
    assert_eq!(
        r[i + 2].body,
        Body::User {
            content: "Don't change the signature of `label`, the web crate calls it.".into(),
            author: None
        }
    );
    // A tool_result given as text blocks keeps them for export.
    assert_eq!(
        r[i].metadata.as_ref().unwrap()["anthropic_content"][0]["type"],
        "text"
    );
    assert_eq!(Log::from_records(r.clone()).turn_count(), 3);

    // Export merges the result and the interrupt into one user message.
    let v = anthropic::to_json(r, &t.extras);
    let m = &v["messages"][4];
    assert_eq!(m["role"], "user");
    let types: Vec<&Value> = m["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["type"])
        .collect();
    assert_eq!(types, ["tool_result", "text"]);
    // Roles alternate strictly.
    let roles: Vec<&str> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert!(roles.windows(2).all(|w| w[0] != w[1]), "{roles:?}");
}

#[test]
fn anthropic_system_blocks_images_and_content_shapes_are_kept() {
    let t = import(&example("anthropic_system_blocks.json"), None).unwrap();
    let r = &t.records;
    assert_eq!(
        r[0].body,
        Body::System {
            content: "You are a data assistant for the finance team.\nFiles live under /srv/finance. Never print account numbers.".into()
        }
    );
    assert_eq!(
        r[0].metadata.as_ref().unwrap()["anthropic_system"][1]["cache_control"]["type"],
        "ephemeral"
    );
    // The image comes after the turn start, as part of the user's query.
    assert_eq!(kinds(&r[1..4]), [Kind::TurnStart, Kind::Other, Kind::User]);
    let Body::Other { kind, fields } = &r[2].body else {
        unreachable!()
    };
    assert_eq!(kind, "anthropic_block");
    assert_eq!(fields["role"], "user");
    assert_eq!(fields["block"]["type"], "image");

    let v = anthropic::to_json(r, &t.extras);
    assert_eq!(
        keys(&v),
        ["model", "system", "max_tokens", "messages", "tools"]
    );
    // A one-block array stays an array, a string assistant content a string.
    assert_eq!(
        v["messages"][4]["content"],
        json!([{"type": "text", "text": "And compared with May last year?"}])
    );
    assert!(v["messages"][5]["content"].is_string());

    // A changed system prompt no longer matches the kept blocks: a string.
    let mut changed = r.clone();
    changed[0].body = Body::System {
        content: "Be brief.".into(),
    };
    assert_eq!(
        anthropic::to_json(&changed, &t.extras)["system"],
        "Be brief."
    );
}

#[test]
fn openai_developer_content_parts_and_odd_arguments_are_kept() {
    let dir = TempDir::new().unwrap();
    let t = import(&example("openai_developer_parts.json"), None).unwrap();
    let r = &t.records;
    assert_eq!(r[0].extra["role"], "developer");
    assert_eq!(
        r[2].body,
        Body::User {
            content: "What is wrong with this chart?".into(),
            author: None
        }
    );
    let meta = r[2].metadata.as_ref().unwrap();
    assert_eq!(meta["openai_content"][1]["type"], "image_url");
    // Unmapped message keys go into `extra`, listed for export.
    assert_eq!(r[2].extra["name"], "dana");
    assert_eq!(meta["openai_message_keys"], json!(["name"]));

    // Arguments that are not JSON are kept verbatim, and flagged.
    let bad = r
        .iter()
        .find(|x| matches!(&x.body, Body::ToolCall { id, .. } if id == "call_p1"))
        .unwrap();
    let Body::ToolCall { arguments, .. } = &bad.body else {
        unreachable!()
    };
    assert_eq!(
        arguments,
        &json!(r#"{"data":"sales.csv","y_min":0,"out":"chart"#)
    );
    assert_eq!(bad.metadata.as_ref().unwrap()["openai_raw_arguments"], true);
    // Arguments with spaces are parsed, and their text kept.
    let spaced = r
        .iter()
        .find(|x| matches!(&x.body, Body::ToolCall { id, .. } if id == "call_p2"))
        .unwrap();
    let Body::ToolCall { arguments, .. } = &spaced.body else {
        unreachable!()
    };
    assert_eq!(
        arguments,
        &json!({"data": "sales.csv", "y_min": 0, "out": "chart.png"})
    );

    let (_, v) = export_value(&t, Format::Openai, &dir, "o.json");
    let messages = v["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "developer");
    assert_eq!(
        messages[4]["tool_calls"][0]["function"]["arguments"],
        r#"{"data":"sales.csv","y_min":0,"out":"chart"#
    );
    assert_eq!(
        messages[6]["tool_calls"][0]["function"]["arguments"],
        r#"{"data": "sales.csv", "y_min": 0, "out": "chart.png"}"#
    );
    // Two assistant messages in a row stay two messages.
    assert_eq!(
        messages[8]["content"],
        "Saved chart.png with the y axis starting at 0."
    );
    assert_eq!(
        messages[9]["content"],
        "Do you also want the April bar labelled?"
    );
    // A refusal keeps its null content.
    assert_eq!(
        messages[11],
        json!({"role": "assistant", "content": null, "refusal": "I can't share the raw sales file: it is marked confidential."})
    );

    // Neither `name` nor the developer role leaks into Anthropic.
    let a = anthropic::to_json(r, &t.extras);
    assert!(
        a["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| keys(m) == ["role", "content"])
    );
    assert_eq!(
        a["system"],
        "Answer in English. When a tool fails, say what failed before retrying."
    );
}

#[test]
fn bare_arrays_import_like_request_bodies() {
    let dir = TempDir::new().unwrap();
    for (name, format) in [
        ("openai_coding_session.json", Format::Openai),
        ("anthropic_coding_session.json", Format::Anthropic),
    ] {
        let body = read_value(&example(name));
        let bare = dir.path().join(format!("bare-{name}"));
        std::fs::write(&bare, serde_json::to_vec(&body["messages"]).unwrap()).unwrap();
        assert_eq!(detect(&bare).unwrap(), format, "{name}");
        let t = import(&bare, None).unwrap();
        assert!(t.extras.is_empty(), "{name}");
        let from_body = import(&example(name), None).unwrap();
        let without_system: Vec<Body> = from_body
            .records
            .iter()
            .filter(|r| format == Format::Openai || r.kind() != Kind::System)
            .map(|r| r.body.clone())
            .collect();
        assert_eq!(
            t.records.iter().map(|r| r.body.clone()).collect::<Vec<_>>(),
            without_system,
            "{name}"
        );
        // Export writes a body with just the messages.
        let (_, v) = export_value(&t, format, &dir, &format!("out-{name}"));
        assert_eq!(v, json!({"messages": body["messages"]}), "{name}");
    }
}

#[test]
fn records_from_one_format_keep_their_conversation_in_the_other() {
    // OpenAI -> Anthropic -> records: the same user texts, assistant texts,
    // calls and results, in the same order (reasoning has no signature, so
    // it is the one thing left out).
    let dir = TempDir::new().unwrap();
    let t = import(&example("openai_coding_session.json"), None).unwrap();
    let (out, _) = export_value(&t, Format::Anthropic, &dir, "a.json");
    let back = import(&out, Some(Format::Anthropic)).unwrap();
    let convo = |rs: &[Record]| -> Vec<Body> {
        rs.iter()
            .filter(|r| {
                r.body.is_model_visible() && r.kind() != Kind::Reasoning || r.kind() == Kind::System
            })
            .map(|r| r.body.clone())
            .collect()
    };
    assert_eq!(convo(&back.records), convo(&t.records));
    assert_eq!(Log::from_records(back.records.clone()).turn_count(), 2);
}

#[test]
fn structured_answers_and_records_without_messages_export_as_documented() {
    let mut records = vec![
        Record::new(0, "2025-06-01T10:00:00Z", Body::TurnStart),
        Record::new(
            1,
            "2025-06-01T10:00:00Z",
            Body::User {
                content: "Give me the totals as JSON.".into(),
                author: Some("ana".into()),
            },
        ),
        Record::new(
            2,
            "2025-06-01T10:00:03Z",
            Body::Structured {
                data: json!({"credit": 3, "debit": 5}).into(),
            },
        ),
    ];
    records.push(Record::new(
        3,
        "2025-06-01T10:00:04Z",
        Body::Other {
            kind: "config_delta".into(),
            fields: serde_json::from_value(json!({"model": "x"})).unwrap(),
        },
    ));
    let o = openai::to_json(&records, &Default::default());
    assert_eq!(
        o,
        json!({"messages": [
            {"role": "user", "content": "Give me the totals as JSON."},
            {"role": "assistant", "content": r#"{"credit":3,"debit":5}"#}
        ]})
    );
    let a = anthropic::to_json(&records, &Default::default());
    assert_eq!(
        a,
        json!({"messages": [
            {"role": "user", "content": "Give me the totals as JSON."},
            {"role": "assistant", "content": [{"type": "text", "text": r#"{"credit":3,"debit":5}"#}]}
        ]})
    );
    // Through files too.
    let dir = TempDir::new().unwrap();
    let (out, v) = export_value(&transcript(records), Format::Openai, &dir, "o.json");
    assert_eq!(v, o);
    let back = import(&out, Some(Format::Openai)).unwrap();
    assert_eq!(
        kinds(&back.records),
        [Kind::TurnStart, Kind::User, Kind::Assistant]
    );
}

#[test]
fn openai_errors_name_the_message() {
    let dir = TempDir::new().unwrap();
    let ok = json!({"role": "user", "content": "hi"});
    let cases = [
        (
            json!({"messages": [ok, {"role": "assistant", "content": "a"}, ok, {"role": "user", "content": {}}]}),
            "messages[3].content: expected a string, an array of content parts or null, found an object",
        ),
        (
            json!([ok, "hello"]),
            "messages[1]: expected a message object, found a string",
        ),
        (
            json!({"messages": {"role": "user"}}),
            "`messages`: expected an array of messages, found an object",
        ),
        (
            json!({"messages": [ok, ok, {"content": "no role"}]}),
            "messages[2]: missing `role`; expected system, developer, user, assistant or tool",
        ),
        (
            json!([ok, {"role": 7}]),
            "messages[1]: `role` is a number, not a string",
        ),
        (
            json!([{"role": "tool", "content": "x"}]),
            "messages[0]: a tool message needs a `tool_call_id` string",
        ),
        (
            json!([{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f"}}]}]),
            "messages[0].tool_calls[0].function: missing `arguments` (a JSON string)",
        ),
        (
            // An object is read (some logs write one); other values are not.
            json!([{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": 5}}]}]),
            "messages[0].tool_calls[0].function.arguments: expected a JSON string (or an object), found a number",
        ),
        (
            json!([{"role": "user", "content": 5}]),
            "messages[0].content: expected a string, an array of content parts or null, found a number",
        ),
        (
            json!({"model": "gpt-4o"}),
            "found an object without `messages`",
        ),
    ];
    for (input, expected) in cases {
        let direct = openai::from_json(&input).unwrap_err();
        assert!(direct.contains(expected), "{direct:?} lacks {expected:?}");
        let through_file = import_error(&dir, Format::Openai, &input);
        assert!(
            through_file.contains("bad.json") && through_file.contains("openai"),
            "{through_file}"
        );
        assert!(
            through_file.contains(expected),
            "{through_file:?} lacks {expected:?}"
        );
    }
}

#[test]
fn anthropic_errors_name_the_message() {
    let dir = TempDir::new().unwrap();
    let ok = json!({"role": "user", "content": "hi"});
    let cases = [
        (
            json!({"messages": [ok, {"role": "assistant", "content": "a"}, ok, {"role": "user", "content": 4}]}),
            "messages[3].content: expected a string or an array of content blocks, found a number",
        ),
        (
            json!([{"role": "system", "content": 5}]),
            "messages[0].content: expected a string or an array of content blocks, found a number",
        ),
        (
            json!([ok, 3]),
            "messages[1]: expected a message object, found a number",
        ),
        (
            json!({"system": "s", "messages": "hi"}),
            "`messages`: expected an array of messages, found a string",
        ),
        (
            json!({"messages": [ok, {"content": "x"}]}),
            "messages[1]: missing `role`; expected user, assistant or system",
        ),
        (json!([{"role": "user"}]), "messages[0]: missing `content`"),
        (
            json!([{"role": "user", "content": [{"text": "no type"}]}]),
            "messages[0].content[0]: expected a content block",
        ),
        (
            json!([ok, {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "input": {}}]}]),
            "messages[1].content[0]: a `tool_use` block needs a `name` string",
        ),
        (
            json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": "yes"}]}]),
            "messages[0].content[0].is_error: expected true or false, found a string",
        ),
        (
            json!({"system": 1, "messages": []}),
            "`system`: expected a string or an array of text blocks, found a number",
        ),
    ];
    for (input, expected) in cases {
        let direct = anthropic::from_json(&input).unwrap_err();
        assert!(direct.contains(expected), "{direct:?} lacks {expected:?}");
        let through_file = import_error(&dir, Format::Anthropic, &input);
        assert!(
            through_file.contains("bad.json") && through_file.contains("anthropic"),
            "{through_file}"
        );
        assert!(
            through_file.contains(expected),
            "{through_file:?} lacks {expected:?}"
        );
    }
}

#[test]
fn anthropic_empty_message_is_reported_not_silently_dropped() {
    let v = json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": []},
    ]);
    let t = anthropic::from_json(&v).unwrap();
    assert_eq!(kinds(&t.records), [Kind::TurnStart, Kind::User]);
    assert_eq!(
        t.warnings,
        ["messages[1]: assistant message with no content blocks left out"]
    );
}

/// export(import(x)) == x and import(export(import(x))) == import(x) for
/// unusual but valid inputs.
fn assert_value_round_trips(
    from: fn(&Value) -> Result<Transcript, String>,
    to: fn(&[Record], &ctxfold_core::Object) -> Value,
    inputs: &[Value],
) {
    for input in inputs {
        let t = from(input).unwrap();
        let out = to(&t.records, &t.extras);
        assert_eq!(&out, input, "export(import(x)) differs");
        let again = from(&out).unwrap();
        assert_eq!(again.records, t.records, "records differ for {input}");
    }
}

#[test]
fn openai_unusual_messages_round_trip() {
    let call =
        json!({"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}});
    assert_value_round_trips(
        openai::from_json,
        openai::to_json,
        &[
            // Missing content beside tool calls, and an assistant `name`
            // that a tool call record uses itself.
            json!({"messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "name": "bot", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": ""}
            ]}),
            // "" beside tool calls; empty `tool_calls`; empty and null reasoning.
            json!({"messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                {"role": "assistant", "content": "done", "tool_calls": [], "reasoning_content": ""},
                {"role": "assistant", "content": null, "reasoning_content": "only thinking"},
                {"role": "assistant", "content": "x", "reasoning_content": null}
            ]}),
            // Consecutive user and system messages, a system message with
            // parts, a tool call with extra keys and a custom type.
            json!({"messages": [
                {"role": "system", "content": [{"type": "text", "text": "s"}]},
                {"role": "user", "content": "a"},
                {"role": "user", "content": "b"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c2", "type": "custom", "function": {"name": "g", "arguments": "[1, 2]", "strict": true}, "index": 0}
                ]},
                {"role": "tool", "tool_call_id": "c2", "name": "g", "content": "ok"},
                {"role": "system", "content": "late system"}
            ], "stream": false}),
        ],
    );
    // The clashing `name` is kept in metadata, not over the call's name.
    let t = openai::from_json(&json!([
        {"role": "assistant", "name": "bot", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ]}
    ]))
    .unwrap();
    let r = &t.records[0];
    assert!(matches!(&r.body, Body::ToolCall { name, .. } if name == "f"));
    assert!(r.extra.is_empty());
    assert_eq!(
        r.metadata.as_ref().unwrap()["openai_message_fields"],
        json!({"name": "bot"})
    );
}

#[test]
fn anthropic_unusual_messages_round_trip() {
    assert_value_round_trips(
        anthropic::from_json,
        anthropic::to_json,
        &[
            json!({"messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "unsigned, as stored"},
                    {"type": "text", "text": "see", "citations": []},
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1"},
                    {"type": "image", "source": {"type": "url", "url": "https://example.invalid/a.png"}},
                    {"type": "text", "text": "look at this too"}
                ]},
                {"role": "assistant", "content": ""}
            ]}),
            json!({"model": "m", "messages": [{"role": "user", "content": "only"}], "system": ""}),
        ],
    );
    // Tool results, then an image and text: the turn opens before the image.
    let t = anthropic::from_json(&json!([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "r"},
            {"type": "image", "source": {}},
            {"type": "text", "text": "more"}
        ]}
    ]))
    .unwrap();
    assert_eq!(
        kinds(&t.records),
        [
            Kind::TurnStart,
            Kind::User,
            Kind::ToolCall,
            Kind::ToolResult,
            Kind::TurnStart,
            Kind::Other,
            Kind::User
        ]
    );
}

/// Claude Code's request shape: a top-level `system` of blocks, a first
/// user message of text blocks starting with `<system-reminder>`, and a
/// `role: "system"` message at `messages[1]`.
fn claude_code_body() -> Value {
    json!({
        "model": "claude-sonnet-4-5",
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>\nAs you answer, use the context below.\n</system-reminder>"},
                {"type": "text", "text": "Fix the failing test in src/lib.rs", "cache_control": {"type": "ephemeral"}}
            ]},
            {"role": "system", "content": [{"type": "text", "text": "Output style: concise."}], "name": "style"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cargo test"}}
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "1 failed"}]},
            {"role": "system", "content": "Reminder: keep going."},
            {"role": "user", "content": "and then?"}
        ],
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
        "metadata": {"user_id": "{\"device_id\":\"d1\",\"account_uuid\":\"a1\",\"session_id\":\"s1\"}"},
        "max_tokens": 32000,
        "thinking": {"type": "enabled", "budget_tokens": 31999},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "stream": true
    })
}

#[test]
fn anthropic_system_messages_inside_messages_are_read_in_place_and_written_back() {
    let body = claude_code_body();
    let t = anthropic::from_json(&body).unwrap();
    let systems: Vec<&Record> = t
        .records
        .iter()
        .filter(|r| matches!(r.body, Body::System { .. }))
        .collect();
    assert_eq!(systems.len(), 3, "the top-level one and two messages");
    assert!(!anthropic::is_system_message(systems[0]));
    assert!(anthropic::is_system_message(systems[1]));
    assert_eq!(
        systems[1].body,
        Body::System {
            content: "Output style: concise.".into()
        }
    );
    // The system text is not the user's words.
    let users: Vec<&str> = t
        .records
        .iter()
        .filter_map(|r| match &r.body {
            Body::User { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        !users
            .iter()
            .any(|u| u.contains("concise") || u.contains("Reminder"))
    );
    // In place: after the first user message, before the call.
    let at = |pred: &dyn Fn(&Record) -> bool| t.records.iter().position(pred).unwrap();
    assert!(
        at(&|r| anthropic::is_system_message(r)) < at(&|r| matches!(r.body, Body::ToolCall { .. }))
    );
    // Written back exactly: the body round trips whole.
    assert_eq!(anthropic::to_json(&t.records, &t.extras), body);
}

#[test]
fn anthropic_system_messages_survive_import_and_export_through_files() {
    let dir = TempDir::new().unwrap();
    let body = claude_code_body();
    let path = dir.path().join("claude.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&body).unwrap()).unwrap();
    assert_eq!(detect(&path).unwrap(), Format::Anthropic);
    // A bare array holding a system message and Anthropic blocks is
    // Anthropic too.
    let bare = dir.path().join("bare.json");
    std::fs::write(&bare, body["messages"].to_string()).unwrap();
    assert_eq!(detect(&bare).unwrap(), Format::Anthropic);
    let t = import(&path, None).unwrap();
    let (_, back) = export_value(&t, Format::Anthropic, &dir, "back.json");
    assert_eq!(back, body);
}

#[test]
fn messages_of_roles_a_format_does_not_know_are_kept_whole() {
    let odd = json!({"role": "critic", "content": [{"type": "text", "text": "hm"}], "x": 1});
    let body = json!({"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        odd,
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}
    ]});
    let t = anthropic::from_json(&body).unwrap();
    assert!(t.records.iter().any(|r| matches!(&r.body,
        Body::Other { kind, fields } if kind == "anthropic_message" && fields["message"] == odd)));
    assert_eq!(anthropic::to_json(&t.records, &t.extras), body);

    let legacy = json!({"role": "function", "name": "f", "content": "42"});
    let body = json!({"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "call"},
        legacy,
        {"role": "assistant", "content": "done"}
    ]});
    let t = openai::from_json(&body).unwrap();
    assert!(t.records.iter().any(|r| matches!(&r.body,
        Body::Other { kind, fields } if kind == "openai_message" && fields["message"] == legacy)));
    assert_eq!(openai::to_json(&t.records, &t.extras), body);
}

/// The typed messages the proxy serializes straight to text are the JSON
/// values the export writes, byte for byte: on the examples (odd
/// arguments, developer parts, system blocks, kept content) and on every
/// corpus conversation, as read from JP and once written in the format
/// and read back (so the records carry what that import keeps).
#[test]
fn typed_messages_write_what_the_export_writes() {
    let corpus = ctxfold_testkit::corpus::conversations();
    assert!(!corpus.is_empty(), "the corpus is read");
    for (format, examples) in [
        (Format::Openai, OPENAI_EXAMPLES),
        (Format::Anthropic, ANTHROPIC_EXAMPLES),
    ] {
        let mut transcripts: Vec<(String, Transcript)> = examples
            .iter()
            .map(|name| (name.to_string(), import(&example(name), None).unwrap()))
            .collect();
        let out = TempDir::new().unwrap();
        for (n, dir) in corpus.iter().enumerate() {
            let jp = import(dir, None).unwrap();
            let (path, _) = export_value(&jp, format, &out, &format!("{n}.json"));
            transcripts.push((dir.display().to_string(), jp));
            transcripts.push((path.display().to_string(), import(&path, None).unwrap()));
        }
        for (name, t) in &transcripts {
            let (typed, values) = match format {
                Format::Openai => (
                    serde_json::to_string(&openai::messages(&t.records)).unwrap(),
                    openai::to_json(&t.records, &t.extras)["messages"].to_string(),
                ),
                _ => (
                    serde_json::to_string(&anthropic::messages(&t.records)).unwrap(),
                    anthropic::to_json(&t.records, &t.extras)["messages"].to_string(),
                ),
            };
            assert!(typed.len() > 2, "{name}: messages written");
            assert_eq!(typed, values, "{format:?} {name}");
        }
    }
}
