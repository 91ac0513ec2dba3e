//! `request_from_view` on hand-built logs with compactions: the projected
//! view becomes a request each provider accepts (roles alternate, calls and
//! results pair up, the summary pair is there) and signed thinking survives
//! only where its step reaches the model unchanged.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::collections::HashSet;

use ctxfold_core::compaction::{
    Compaction, Provenance, ReasoningPolicy, Source, Summary, ToolPolicy,
};
use ctxfold_core::projection::{PREAMBLE, project, summary_preamble};
use ctxfold_core::{Body, Log, Object, Record};
use ctxfold_providers::{ChatRequest, Part, Role, anthropic, openai, request_from_view};
use serde_json::{Value, json};

fn signed(text: &str, sig: &str) -> Record {
    let mut r = Record::new(
        0,
        "t",
        Body::Reasoning {
            content: text.into(),
        },
    );
    let mut m = Object::new();
    m.insert(
        "anthropic_thinking_signature".into(),
        Value::String(sig.into()),
    );
    r.metadata = Some(Box::new(m));
    r
}

fn plain(body: Body) -> Record {
    Record::new(0, "t", body)
}

/// A turn with a tool step: user, signed reasoning, call, result, answer.
fn tool_turn(n: u32) -> Vec<Record> {
    vec![
        plain(Body::TurnStart),
        plain(Body::User {
            content: format!("question {n}"),
            author: None,
        }),
        signed(&format!("thinking {n}"), &format!("sig-{n}")),
        plain(Body::ToolCall {
            id: format!("c{n}"),
            name: "read".into(),
            arguments: json!({"path": format!("src/{n}.rs")}).into(),
        }),
        plain(Body::ToolResult {
            id: format!("c{n}"),
            content: "x".repeat(400),
            is_error: false,
        }),
        plain(Body::Assistant {
            content: format!("answer {n}"),
        }),
    ]
}

/// A turn answered directly: user, signed reasoning, answer.
fn direct_turn(n: u32) -> Vec<Record> {
    vec![
        plain(Body::TurnStart),
        plain(Body::User {
            content: format!("question {n}"),
            author: None,
        }),
        signed(&format!("thinking {n}"), &format!("sig-{n}")),
        plain(Body::Assistant {
            content: format!("answer {n}"),
        }),
    ]
}

fn compaction(c: Compaction) -> Record {
    plain(Body::Compaction(Box::new(c)))
}

fn summary(from: u32, to: u32, text: &str) -> Compaction {
    let mut c = Compaction::new(from, to, Source::User);
    c.summary = Some(Summary {
        text: text.into(),
        provenance: Provenance::Supplied {
            author: Source::User,
        },
    });
    c
}

fn log_of(records: Vec<Record>) -> Log {
    Log::from_records(
        records
            .into_iter()
            .enumerate()
            .map(|(i, mut r)| {
                r.seq = i as u64;
                r
            })
            .collect(),
    )
}

fn build(log: &Log) -> ChatRequest {
    let view = project(log);
    let opts = ChatRequest {
        model: "claude-sonnet-4-5".into(),
        ..ChatRequest::default()
    };
    request_from_view(log, &view, &opts)
}

/// Signatures of the reasoning parts, by reasoning text.
fn signatures(req: &ChatRequest) -> Vec<(String, Option<String>)> {
    req.messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::Reasoning { text, signature } => Some((text.clone(), signature.clone())),
            _ => None,
        })
        .collect()
}

fn sig(text: &str, s: Option<&str>) -> (String, Option<String>) {
    (text.into(), s.map(str::to_owned))
}

/// What Anthropic checks: starts with the user, roles alternate, every
/// `tool_use` is answered in the next message and every `tool_result`
/// answers the message before, thinking only where signed. Returns the
/// messages.
fn assert_valid_anthropic(req: &ChatRequest) -> Vec<Value> {
    let body = serde_json::to_value(anthropic::body(req, false)).unwrap();
    let msgs = body["messages"].as_array().unwrap().clone();
    assert!(!msgs.is_empty());
    assert_eq!(msgs[0]["role"], "user", "{body:#}");
    for (i, m) in msgs.iter().enumerate() {
        let want = if i % 2 == 0 { "user" } else { "assistant" };
        assert_eq!(m["role"], want, "message {i} breaks alternation: {body:#}");
        let blocks = m["content"].as_array().unwrap();
        assert!(!blocks.is_empty(), "message {i} is empty");
        let of = |t: &str, key: &str| -> HashSet<String> {
            blocks
                .iter()
                .filter(|b| b["type"] == t)
                .map(|b| b[key].as_str().unwrap().to_owned())
                .collect()
        };
        let uses = of("tool_use", "id");
        if !uses.is_empty() {
            let next = &msgs[i + 1]["content"];
            let answered: HashSet<String> = next
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| b["tool_use_id"].as_str().unwrap().to_owned())
                .collect();
            assert_eq!(uses, answered, "calls of message {i} are answered next");
        }
        let results = of("tool_result", "tool_use_id");
        if !results.is_empty() {
            let prev: HashSet<String> = msgs[i - 1]["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| b["id"].as_str().unwrap().to_owned())
                .collect();
            assert_eq!(
                results, prev,
                "results of message {i} answer the calls before"
            );
            let first_text = blocks.iter().position(|b| b["type"] != "tool_result");
            let last_result = blocks.iter().rposition(|b| b["type"] == "tool_result");
            if let (Some(t), Some(r)) = (first_text, last_result) {
                assert!(r < t, "tool results come first in message {i}");
            }
        }
        for b in blocks {
            if b["type"] == "thinking" {
                assert!(b["signature"].as_str().is_some_and(|s| !s.is_empty()));
            }
        }
    }
    msgs
}

/// What OpenAI checks: every assistant `tool_calls` is followed by exactly
/// its `tool` messages, and no reasoning is sent back.
fn assert_valid_openai(req: &ChatRequest) {
    let body = serde_json::to_value(openai::body(req, false)).unwrap();
    let msgs = body["messages"].as_array().unwrap();
    let mut i = 0;
    while i < msgs.len() {
        let m = &msgs[i];
        assert!(m.get("reasoning_content").is_none());
        if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
            let ids: Vec<&str> = calls.iter().map(|c| c["id"].as_str().unwrap()).collect();
            let answers: Vec<&str> = msgs[i + 1..i + 1 + ids.len()]
                .iter()
                .map(|t| {
                    assert_eq!(t["role"], "tool");
                    t["tool_call_id"].as_str().unwrap()
                })
                .collect();
            assert_eq!(ids, answers);
            i += ids.len();
        } else {
            assert_ne!(m["role"], "tool", "a tool message without its call at {i}");
        }
        i += 1;
    }
}

fn thinking_blocks(msgs: &[Value]) -> Vec<String> {
    msgs.iter()
        .flat_map(|m| m["content"].as_array().unwrap().clone())
        .filter(|b| b["type"] == "thinking")
        .map(|b| b["signature"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn an_untouched_log_keeps_every_signature() {
    let mut records = tool_turn(0);
    records.extend(tool_turn(1));
    let log = log_of(records);
    let req = build(&log);
    assert_eq!(
        signatures(&req),
        vec![
            sig("thinking 0", Some("sig-0")),
            sig("thinking 1", Some("sig-1"))
        ]
    );
    let msgs = assert_valid_anthropic(&req);
    assert_eq!(thinking_blocks(&msgs), vec!["sig-0", "sig-1"]);
    assert_eq!(
        msgs[1]["content"][0]["type"], "thinking",
        "thinking leads its message"
    );
    assert_valid_openai(&req);
    // user, assistant(think+call), user(result), assistant(answer), user, …
    assert_eq!(msgs.len(), 8);
}

#[test]
fn a_stripped_step_loses_its_signature_and_others_keep_theirs() {
    let mut records = tool_turn(0);
    records.extend(tool_turn(1));
    let mut c = Compaction::new(0, 0, Source::User);
    c.tool_calls = Some(ToolPolicy::Strip);
    records.push(compaction(c));
    let log = log_of(records);
    let req = build(&log);
    assert_eq!(
        signatures(&req),
        vec![sig("thinking 0", None), sig("thinking 1", Some("sig-1"))]
    );
    let msgs = assert_valid_anthropic(&req);
    assert_eq!(
        thinking_blocks(&msgs),
        vec!["sig-1"],
        "the changed step sends no thinking"
    );
    // The placeholder ends with the handle that recalls the output.
    assert_eq!(
        msgs[2]["content"][0]["content"],
        format!(
            "[read succeeded; its output (400 characters) was removed by compaction (recall {}:4)]",
            log.tag().unwrap()
        )
    );
    assert_valid_openai(&req);
}

#[test]
fn omitted_calls_and_stripped_reasoning_keep_the_request_valid() {
    let mut records = tool_turn(0);
    records.extend(tool_turn(1));
    records.extend(tool_turn(2));
    let mut omit = Compaction::new(0, 0, Source::User);
    omit.tool_calls = Some(ToolPolicy::Omit);
    records.push(compaction(omit));
    let mut strip = Compaction::new(1, 1, Source::User);
    strip.reasoning = Some(ReasoningPolicy::Strip);
    records.push(compaction(strip));
    let log = log_of(records);
    let req = build(&log);
    assert_eq!(
        signatures(&req),
        vec![sig("thinking 0", None), sig("thinking 2", Some("sig-2"))],
        "turn 0 lost its call (changed), turn 1 its reasoning, turn 2 is whole"
    );
    let msgs = assert_valid_anthropic(&req);
    assert_eq!(thinking_blocks(&msgs), vec!["sig-2"]);
    assert_valid_openai(&req);
}

#[test]
fn the_summary_pair_replaces_its_turns_and_alternation_holds() {
    let mut records = tool_turn(0);
    records.extend(tool_turn(1));
    records.extend(tool_turn(2));
    records.push(compaction(summary(0, 1, "We read src/0.rs and src/1.rs.")));
    let log = log_of(records);
    let req = build(&log);
    assert_eq!(req.messages[0].role, Role::User);
    let lead = project(&log).items[0].summary_lead().unwrap();
    assert!(lead.starts_with(&summary_preamble((0, 1), None)[..60]));
    assert!(lead.contains("; recall "), "{lead}");
    assert_eq!(req.messages[0].parts, vec![Part::Text(lead)]);
    assert_eq!(req.messages[1].role, Role::Assistant);
    assert_eq!(
        req.messages[1].parts,
        vec![Part::Text("We read src/0.rs and src/1.rs.".into())]
    );
    assert_eq!(req.messages[2].parts, vec![Part::Text("question 2".into())]);
    // Turn 2's step follows its own question, as in the log: it keeps its
    // signature.
    assert_eq!(signatures(&req), vec![sig("thinking 2", Some("sig-2"))]);
    let msgs = assert_valid_anthropic(&req);
    assert_eq!(thinking_blocks(&msgs), vec!["sig-2"]);
    assert_valid_openai(&req);
}

#[test]
fn a_step_right_after_a_summary_loses_its_signature() {
    // The summary ends inside turn 1, after its question: the step that
    // answers follows the summary's assistant text and merges with it.
    let mut records = tool_turn(0);
    records.extend(tool_turn(1));
    let question_1 = records
        .iter()
        .rposition(|r| matches!(r.body, Body::User { .. }))
        .unwrap() as u64;
    let mut c = summary(0, 1, "Earlier: read src/0.rs; then asked question 1.");
    c.from_seq = Some(0);
    c.to_seq = Some(question_1);
    records.push(compaction(c));
    let log = log_of(records);
    let req = build(&log);
    assert_eq!(signatures(&req), vec![sig("thinking 1", None)]);
    let msgs = assert_valid_anthropic(&req);
    assert!(thinking_blocks(&msgs).is_empty());
    assert_eq!(
        msgs[0]["content"][0]["text"],
        project(&log).items[0].summary_lead().unwrap()
    );
    assert_eq!(
        msgs[1]["content"][0]["text"],
        "Earlier: read src/0.rs; then asked question 1."
    );
    assert_eq!(
        msgs[1]["content"][1]["type"], "tool_use",
        "the step merged into the summary's message"
    );
    assert_valid_openai(&req);
}

#[test]
fn a_step_right_before_a_summary_loses_its_signature() {
    // Turn 1 is summarized whole: turn 0's step is the last thing before
    // the summary pair.
    let mut records = direct_turn(0);
    records.extend(direct_turn(1));
    records.extend(direct_turn(2));
    let mut c = summary(1, 1, "Question 1 was answered.");
    let turn_1_start = records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.body, Body::TurnStart))
        .nth(1)
        .unwrap()
        .0 as u64;
    c.from_seq = Some(turn_1_start);
    c.to_seq = Some(turn_1_start + 3);
    records.push(compaction(c));
    let log = log_of(records);
    let req = build(&log);
    assert_eq!(
        signatures(&req),
        vec![sig("thinking 0", None), sig("thinking 2", Some("sig-2"))],
        "turn 0's step is now followed by the summary pair, not by question 1"
    );
    let msgs = assert_valid_anthropic(&req);
    assert_eq!(thinking_blocks(&msgs), vec!["sig-2"]);

    // Now a summary from the middle of turn 1 (its answer): turn 1's
    // thinking step is cut off, and turn 0 is untouched.
    let mut records = direct_turn(0);
    records.extend(direct_turn(1));
    records.extend(direct_turn(2));
    let answer_1 = records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.body, Body::Assistant { .. }))
        .nth(1)
        .unwrap()
        .0 as u64;
    let mut c = summary(1, 1, "Answered question 1.");
    c.from_seq = Some(answer_1);
    c.to_seq = Some(answer_1);
    records.push(compaction(c));
    let log = log_of(records);
    let req = build(&log);
    assert_eq!(
        signatures(&req),
        vec![
            sig("thinking 0", Some("sig-0")),
            sig("thinking 1", None),
            sig("thinking 2", Some("sig-2"))
        ]
    );
    let msgs = assert_valid_anthropic(&req);
    assert_eq!(thinking_blocks(&msgs), vec!["sig-0", "sig-2"]);
    assert_valid_openai(&req);
}

#[test]
fn a_view_starting_with_the_assistant_opens_with_the_preamble_and_system_prompts_join() {
    let log = log_of(vec![
        plain(Body::System {
            content: "You are terse.".into(),
        }),
        signed("hm", "sig-x"),
        plain(Body::Assistant {
            content: "Hello.".into(),
        }),
        plain(Body::User {
            content: "hi".into(),
            author: None,
        }),
    ]);
    let view = project(&log);
    let opts = ChatRequest {
        model: "m".into(),
        system: Some("Host prompt.".into()),
        max_tokens: Some(99),
        ..ChatRequest::default()
    };
    let req = request_from_view(&log, &view, &opts);
    assert_eq!(
        req.system.as_deref(),
        Some("Host prompt.\n\nYou are terse.")
    );
    assert_eq!(req.max_tokens, Some(99));
    assert_eq!(req.messages[0].parts, vec![Part::Text(PREAMBLE.into())]);
    assert_eq!(
        signatures(&req),
        vec![sig("hm", None)],
        "the preamble stands where the step's real neighbour never was"
    );
    let msgs = assert_valid_anthropic(&req);
    assert_eq!(msgs.len(), 3);
    let body = serde_json::to_value(openai::body(&req, false)).unwrap();
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "Host prompt.\n\nYou are terse."})
    );
}
