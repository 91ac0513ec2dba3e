//! The agents' own session files (Claude Code, Codex): small sessions cut
//! from files the real agents wrote (tests/data/agents/), read, counted,
//! written back byte for byte (also through ctxfold's log), their own
//! compactions read as compaction records, bad lines kept and reported,
//! and a compacted view written as a new session with consistent ids.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use ctxfold_core::compaction::Source;
use ctxfold_core::{Body, Log, Record};
use ctxfold_formats::{Format, Transcript};
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/agents")
        .join(name)
}

/// Every record through a ctxfold log line and back, as the store keeps
/// them.
fn through_log(t: &Transcript) -> Transcript {
    let mut back = t.clone();
    back.records = t
        .records
        .iter()
        .map(|r| Record::from_json_line(&r.to_json_line()).unwrap().0)
        .collect();
    back
}

fn count(t: &Transcript, f: impl Fn(&Body) -> bool) -> usize {
    t.records.iter().filter(|r| f(&r.body)).count()
}

fn round_trip(path: &Path, format: Format) -> Transcript {
    let bytes = std::fs::read(path).unwrap();
    let (detected, t) = ctxfold_formats::import_detected(path, None).unwrap();
    assert_eq!(detected, format, "{}", path.display());
    let out = ctxfold_formats::export_bytes(&t, format, path).unwrap();
    assert!(
        out == bytes,
        "{}: not written back byte for byte",
        path.display()
    );
    let out = ctxfold_formats::export_bytes(&through_log(&t), format, path).unwrap();
    assert!(
        out == bytes,
        "{}: not byte for byte after the log",
        path.display()
    );
    t
}

#[test]
fn claude_code_session_is_read_counted_and_written_back() {
    let t = round_trip(&data("claude-code.jsonl"), Format::ClaudeCode);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let log = Log::from_records(t.records.clone());
    let c = log.counts();
    // Prompts thinkalpha (2 steps, each thought first) and beta (3 steps),
    // /compact (its caveat, command and output are one prompt), gamma (1).
    assert_eq!(c.turns, 4, "{c:?}");
    assert_eq!(c.tool_call, 6);
    assert_eq!(c.tool_result, 6);
    assert_eq!(c.reasoning, 2);
    assert_eq!(c.compaction, 1);
    let reasoning = t
        .records
        .iter()
        .find(|r| matches!(r.body, Body::Reasoning { .. }))
        .unwrap();
    assert_eq!(
        reasoning.metadata.as_ref().unwrap()["anthropic_thinking_signature"],
        "c2lnbmVkLXNjcmlwdGVk1"
    );
    // The agent's compaction: source agent, its summary, over the records
    // before its boundary.
    let (at, comp) = t
        .records
        .iter()
        .enumerate()
        .find_map(|(i, r)| match &r.body {
            Body::Compaction(c) => Some((i, c)),
            _ => None,
        })
        .unwrap();
    assert_eq!(comp.source, Source::Agent);
    let summary = comp.summary.as_ref().unwrap();
    assert!(summary.text.contains("This session is being continued"));
    assert!(comp.to_seq.unwrap() < at as u64);
    // The view folds the history before it into the summary; the preserved
    // message and what came after stay.
    let view = ctxfold_core::projection::project(&log);
    let text = format!("{:?}", view.items);
    assert!(
        !text.contains("ctxfold-step beta 1/3"),
        "raw output left in view"
    );
    assert!(text.contains("gamma"));
    // Other records: every line ctxfold does not read is kept whole.
    let kept = count(
        &t,
        |b| matches!(b, Body::Other { kind, .. } if kind == "claude_code"),
    );
    assert!(kept > 20, "{kept}");
}

#[test]
fn codex_rollout_is_read_counted_and_written_back() {
    let t = round_trip(&data("codex.jsonl"), Format::Codex);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let log = Log::from_records(t.records.clone());
    let c = log.counts();
    assert_eq!(c.turns, 2, "{c:?}");
    // Custom (code mode) calls and function calls, each with its output;
    // thinkalpha's three steps each reasoned first.
    assert_eq!(c.tool_call, 5, "{c:?}");
    assert_eq!(c.tool_result, 5);
    assert_eq!(c.reasoning, 3);
    assert_eq!(c.compaction, 3);
    assert!(count(&t, |b| matches!(b, Body::System { .. })) >= 4);
    for r in &t.records {
        if let Body::Compaction(comp) = &r.body {
            assert_eq!(comp.source, Source::Agent);
            assert!(comp.summary.as_ref().unwrap().text.contains("summary"));
            assert!(comp.to_seq.unwrap() < r.seq);
        }
    }
}

#[test]
fn bad_and_odd_lines_are_kept_and_reported_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(data("claude-code.jsonl")).unwrap();
    let mut lines: Vec<String> = src.lines().map(str::to_owned).collect();
    // An unknown line type, a parent that names no line, a torn last line.
    lines.insert(
        3,
        r#"{"type":"brand-new-kind","sessionId":"x","what":1}"#.into(),
    );
    let mut broken: Value = serde_json::from_str(&lines[5]).unwrap();
    broken["parentUuid"] = "00000000-dead-4000-8000-000000000000".into();
    lines[5] = serde_json::to_string(&broken).unwrap();
    let mut text = lines.join("\n");
    text.push_str("\n{\"type\":\"user\",\"message\":{\"role\":\"us");
    let path = dir.path().join("odd.jsonl");
    std::fs::write(&path, &text).unwrap();
    let (f, t) = ctxfold_formats::import_detected(&path, None).unwrap();
    assert_eq!(f, Format::ClaudeCode);
    let w = t.warnings.join("\n");
    assert!(
        w.contains("odd.jsonl: line 6: parentUuid 00000000-dead"),
        "{w}"
    );
    assert!(
        w.contains(&format!("line {}: a torn last line", lines.len() + 1)),
        "{w}"
    );
    let out = ctxfold_formats::export_bytes(&t, f, &path).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), text);
}

#[test]
fn jsonl_of_an_unknown_shape_says_what_it_saw() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.jsonl");
    std::fs::write(
        &path,
        "{\"kind\":\"a\",\"n\":1}\n{\"kind\":\"b\",\"n\":2}\n",
    )
    .unwrap();
    let e = ctxfold_formats::import(&path, None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cannot tell the transcript format: tried ctxfold, JP, OpenAI, Anthropic, Claude Code, Codex, Gemini; use --input-format"),
        "{e}"
    );
    assert!(e.contains("first line has the keys kind, n"), "{e}");
}

/// The compacted view of a session, as `ctxfold compact` writes it.
fn compacted(t: &Transcript) -> Transcript {
    let log = Log::from_records(t.records.clone());
    let view = ctxfold_core::projection::project(&log);
    let mut out = t.clone();
    out.records = ctxfold_core::materialize::materialize(&log, &view);
    out
}

#[test]
fn a_compacted_claude_code_view_is_a_new_session_with_one_chain() {
    let path = data("claude-code.jsonl");
    let t = ctxfold_formats::import(&path, None).unwrap();
    let mut view = compacted(&t);
    let id = ctxfold_formats::new_session(&mut view.extras, Format::ClaudeCode).unwrap();
    let bytes = ctxfold_formats::export_bytes(&view, Format::ClaudeCode, &path).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let old_id = t.extras["claude_code"]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!text.contains(&old_id), "the old session id is left");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut messages = 0;
    for l in &lines {
        if let Some(s) = l.get("sessionId") {
            assert_eq!(s, &Value::String(id.clone()));
        }
        if let Some(p) = l.get("parentUuid").and_then(Value::as_str) {
            assert!(seen.contains(p), "a parent that is not a line before: {l}");
        }
        if let Some(u) = l.get("uuid").and_then(Value::as_str) {
            assert!(seen.insert(u.to_owned()), "a uuid twice");
        }
        if l.get("message").is_some() {
            messages += 1;
        }
    }
    assert!(messages >= 6);
    assert!(
        !text.contains("ctxfold-step beta 1/3\\n"),
        "raw folded output left"
    );
    // Read back, it is a session of its own.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(format!("{id}.jsonl"));
    std::fs::write(&out, &text).unwrap();
    let back = ctxfold_formats::import(&out, None).unwrap();
    assert_eq!(back.extras["claude_code"]["session_id"], Value::String(id));
}

#[test]
fn a_compacted_codex_view_is_a_new_session() {
    let path = data("codex.jsonl");
    let t = ctxfold_formats::import(&path, None).unwrap();
    let mut view = compacted(&t);
    let id = ctxfold_formats::new_session(&mut view.extras, Format::Codex).unwrap();
    let bytes = ctxfold_formats::export_bytes(&view, Format::Codex, &path).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let old_id = t.extras["codex"]["session_id"].as_str().unwrap().to_owned();
    assert!(!text.contains(&old_id), "the old session id is left");
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "session_meta");
    assert_eq!(first["payload"]["id"], Value::String(id.clone()));
    let back = ctxfold_formats::import(
        &{
            let dir = tempfile::tempdir().unwrap().keep();
            let p = dir.join(ctxfold_formats::codex::file_name(&id));
            std::fs::write(&p, &text).unwrap();
            p
        },
        None,
    )
    .unwrap();
    let log = Log::from_records(back.records);
    assert_eq!(
        log.counts().compaction,
        0,
        "the agent's compactions are applied"
    );
    assert!(log.counts().user >= 1);
}

/// Shapes the short real sessions do not hold, written by hand as the
/// agents write them: an image block, a tool result of blocks with an
/// error flag, redacted thinking, a sidechain line, a title; Codex's
/// arguments with spaces, a local shell call, a web search, the Responses
/// API's encrypted compaction item.
#[test]
fn odd_shapes_read_as_records_and_written_back() {
    let dir = tempfile::tempdir().unwrap();
    let claude = [
        r#"{"type":"custom-title","customTitle":"Fix the build","sessionId":"s1"}"#,
        r#"{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"text","text":"What is in this picture?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},"uuid":"u1","timestamp":"2026-12-01T10:00:00.000Z","sessionId":"s1","cwd":"/p"}"#,
        r#"{"parentUuid":"u1","isSidechain":false,"type":"assistant","message":{"id":"m1","type":"message","role":"assistant","model":"claude","content":[{"type":"redacted_thinking","data":"EmwKAhgB"}],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":2}},"uuid":"a1","timestamp":"2026-12-01T10:00:01.000Z","sessionId":"s1"}"#,
        r#"{"parentUuid":"a1","isSidechain":false,"type":"assistant","message":{"id":"m1","type":"message","role":"assistant","model":"claude","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/p/a.rs"}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}},"uuid":"a2","timestamp":"2026-12-01T10:00:01.500Z","sessionId":"s1"}"#,
        r#"{"parentUuid":"a2","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":[{"type":"text","text":"no such file"}],"is_error":true}]},"uuid":"u2","timestamp":"2026-12-01T10:00:02.000Z","sessionId":"s1","toolUseResult":"Error: no such file"}"#,
        r#"{"parentUuid":"u2","isSidechain":true,"type":"user","message":{"role":"user","content":"a subagent's prompt"},"uuid":"u3","timestamp":"2026-12-01T10:00:03.000Z","sessionId":"s1","costUSD":0.000001}"#,
    ];
    let path = dir.path().join("s1.jsonl");
    let text = format!("{}\n", claude.join("\n"));
    std::fs::write(&path, &text).unwrap();
    let t = round_trip(&path, Format::ClaudeCode);
    assert_eq!(t.title.as_deref(), Some("Fix the build"));
    let bodies: Vec<&Body> = t.records.iter().map(|r| &r.body).collect();
    assert!(
        bodies
            .iter()
            .any(|b| matches!(b, Body::User { content, .. } if content == "[image block]"))
    );
    assert!(
        bodies
            .iter()
            .any(|b| matches!(b, Body::Reasoning { content } if content.is_empty()))
    );
    assert!(bodies.iter().any(|b| matches!(b, Body::ToolResult { content, is_error: true, .. } if content == "no such file")));
    // A result the view changes is written as text, without Claude Code's
    // copy of the raw output.
    let mut changed = t.clone();
    for r in &mut changed.records {
        if let Body::ToolResult { content, .. } = &mut r.body {
            *content = "[Read: failed]".into();
        }
    }
    let out = String::from_utf8(
        ctxfold_formats::export_bytes(&changed, Format::ClaudeCode, &path).unwrap(),
    )
    .unwrap();
    assert!(
        out.contains(r#""content":"[Read: failed]","is_error":true"#),
        "{out}"
    );
    assert!(!out.contains("toolUseResult"));

    let codex = [
        r#"{"timestamp":"2026-12-01T10:00:00.000Z","type":"session_meta","payload":{"id":"0199aaaa-0000-7000-8000-000000000001","cwd":"/p","cli_version":"0.171.0"}}"#,
        r#"{"timestamp":"2026-12-01T10:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]}}"#,
        r#"{"timestamp":"2026-12-01T10:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{ \"command\": [\"ls\"] }","call_id":"c1"}}"#,
        r#"{"timestamp":"2026-12-01T10:00:03.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"a.rs\nb.rs"}}"#,
        r#"{"timestamp":"2026-12-01T10:00:04.000Z","type":"response_item","payload":{"type":"local_shell_call","call_id":"c2","status":"completed","action":{"type":"exec","command":["cat","a.rs"]}}}"#,
        r#"{"timestamp":"2026-12-01T10:00:05.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":"fn main() {}"}}"#,
        r#"{"timestamp":"2026-12-01T10:00:06.000Z","type":"response_item","payload":{"type":"web_search_call","status":"completed","action":{"type":"search","query":"rust"}}}"#,
        r#"{"timestamp":"2026-12-01T10:00:07.000Z","type":"response_item","payload":{"type":"compaction","encrypted_content":"gAAAAB"}}"#,
        r#"{"timestamp":"2026-12-01T10:00:08.000Z","type":"event_msg","payload":{"type":"agent_message","message":"done"}}"#,
    ];
    let path = dir
        .path()
        .join("rollout-2026-12-01T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl");
    std::fs::write(&path, format!("{}\n", codex.join("\n"))).unwrap();
    let t = round_trip(&path, Format::Codex);
    let calls: Vec<(&str, String)> = t
        .records
        .iter()
        .filter_map(|r| match &r.body {
            Body::ToolCall {
                name, arguments, ..
            } => Some((name.as_str(), arguments.text().to_owned())),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("shell", r#"{"command":["ls"]}"#.to_owned()),
            (
                "local_shell",
                r#"{"type":"exec","command":["cat","a.rs"]}"#.to_owned()
            )
        ]
    );
    let log = Log::from_records(t.records.clone());
    assert_eq!(log.counts().compaction, 1);
    assert_eq!(log.counts().tool_result, 2);
    // The encrypted compaction folds what came before it.
    let view = format!("{:?}", ctxfold_core::projection::project(&log).items);
    assert!(!view.contains("fn main() {}"), "{view}");
    assert!(view.contains("encrypted"));
}

/// A transcript of another format written as a session: one of its own,
/// with the ids and the opening line the agent needs.
#[test]
fn another_format_written_as_a_session_is_a_session_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let chat = dir.path().join("chat.json");
    std::fs::write(
        &chat,
        r#"{"messages": [{"role": "user", "content": "list the files"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "ls", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.rs"},
            {"role": "assistant", "content": "One file: a.rs."}]}"#,
    )
    .unwrap();
    let t = ctxfold_formats::import(&chat, None).unwrap();
    for format in [Format::ClaudeCode, Format::Codex] {
        let out = dir.path().join(format!("out-{format}.jsonl"));
        ctxfold_formats::export(&t, format, &out).unwrap();
        let (f, back) = ctxfold_formats::import_detected(&out, None).unwrap();
        assert_eq!(f, format);
        let key = if format == Format::Codex {
            "codex"
        } else {
            "claude_code"
        };
        let id = back.extras[key]["session_id"].as_str().unwrap();
        assert_eq!(id.len(), 36, "{id}");
        let c = Log::from_records(back.records).counts();
        assert_eq!(
            (c.user, c.assistant, c.tool_call, c.tool_result),
            (1, 1, 1, 1),
            "{format}"
        );
    }
}
