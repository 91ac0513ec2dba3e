//! Scripted conversations for the service's tests, and the checks every
//! request must pass.
#![allow(dead_code)]

use std::collections::HashSet;

use ctxfold_core::projection::{Item, View, project};
use ctxfold_core::{Body, Log, Record};
use serde_json::json;

/// Records of one ordinary coding turn: a question, a tool call with a
/// path and a long pattern, its long result, and an answer.
pub fn turn(k: usize) -> Vec<Record> {
    let mut out = vec![
        Body::TurnStart,
        Body::User {
            content: format!("Turn {k}: what does module {k} do, and is it tested?"),
            author: None,
        },
        Body::ToolCall {
            id: format!("t{k}"),
            name: "read_file".into(),
            arguments: json!({"path": format!("src/m{k}.rs"), "pattern": "fn ".repeat(100)}).into(),
        },
        Body::ToolResult {
            id: format!("t{k}"),
            content: format!(
                "// module {k}\n{}",
                "let value = compute(input);\n".repeat(60)
            ),
            is_error: false,
        },
        Body::Assistant {
            content: format!("Module {k} computes values from its input; it has two tests."),
        },
    ];
    out.drain(..)
        .map(|b| Record::new(0, "2026-01-01T00:00:00Z", b))
        .collect()
}

/// The opening of a runaway turn: a turn start and the request.
pub fn runaway_opening() -> Vec<Record> {
    vec![
        Record::new(0, "2026-01-01T00:00:00Z", Body::TurnStart),
        Record::new(
            0,
            "2026-01-01T00:00:00Z",
            Body::User {
                content: "Make every test in the repository pass.".into(),
                author: None,
            },
        ),
    ]
}

/// One step of a runaway turn: a call (sent by the model) and its result.
pub fn step(k: usize) -> (Record, Record) {
    (
        Record::new(
            0,
            "2026-01-01T00:00:00Z",
            Body::ToolCall {
                id: format!("s{k}"),
                name: if k.is_multiple_of(3) {
                    "run_tests"
                } else {
                    "edit_file"
                }
                .into(),
                arguments:
                    json!({"path": format!("src/f{}.rs", k % 17), "patch": "+ fixed\n".repeat(25)})
                        .into(),
            },
        ),
        Record::new(
            0,
            "2026-01-01T00:00:00Z",
            Body::ToolResult {
                id: format!("s{k}"),
                content: format!("step {k}: {}", "test result line ok\n".repeat(70)),
                is_error: k.is_multiple_of(7),
            },
        ),
    )
}

/// The request a view makes must be valid for every provider: every call
/// has exactly one result after it and every result its call, and it never
/// opens with the assistant (system prompts aside).
pub fn assert_valid_request(log: &Log, view: &View<'_>) {
    let mut open: HashSet<&str> = HashSet::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for item in &view.items {
        match item {
            Item::Event { record, .. }
            | Item::StrippedCall { record, .. }
            | Item::StrippedResult { record, .. }
            | Item::Clipped { record, .. } => match &record.body {
                Body::ToolCall { id, .. } => {
                    assert!(open.insert(id), "call {id} twice");
                }
                Body::ToolResult { id, .. } => {
                    assert!(open.contains(id.as_str()), "result {id} without its call");
                    assert!(answered.insert(id), "result {id} twice");
                }
                _ => {}
            },
            _ => {}
        }
    }
    for id in &open {
        assert!(answered.contains(id), "call {id} without its result");
    }
    let first = view.items.iter().find(
        |i| !matches!(i, Item::Event { record, .. } if matches!(record.body, Body::System { .. })),
    );
    match first {
        None | Some(Item::Summary { .. } | Item::Preamble) => {}
        Some(Item::Event { record, .. }) => {
            assert!(
                matches!(record.body, Body::User { .. }),
                "starts with {:?}",
                record.body
            )
        }
        Some(other) => panic!("starts with {other:?}"),
    }
    let _ = log;
}

/// The view of `log`, checked.
pub fn checked_view(log: &Log) -> usize {
    let view = project(log);
    assert_valid_request(log, &view);
    ctxfold_core::estimate::view_tokens(&view)
}
