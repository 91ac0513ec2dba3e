//! Logs shared by the projection's unit tests.

use serde_json::json;

use crate::compaction::Compaction;
use crate::log::Log;
use crate::record::{Body, Record};

pub(super) fn log_of(bodies: Vec<Body>) -> Log {
    Log::from_records(
        bodies
            .into_iter()
            .enumerate()
            .map(|(i, b)| Record::new(i as u64, "t", b))
            .collect(),
    )
}

pub(super) fn turn(n: u32, body: &str, is_error: bool) -> Vec<Body> {
    vec![
        Body::TurnStart,
        Body::User {
            content: format!("question {n}"),
            author: None,
        },
        Body::Reasoning {
            content: "thinking".into(),
        },
        Body::ToolCall {
            id: format!("c{n}"),
            name: "edit".into(),
            arguments: json!({"path": "src/a.rs", "new": body, "flags": ["-v"]}).into(),
        },
        Body::ToolResult {
            id: format!("c{n}"),
            content: "x".repeat(500),
            is_error,
        },
        Body::Assistant {
            content: format!("answer {n}"),
        },
    ]
}

pub(super) fn compaction(c: Compaction) -> Body {
    Body::Compaction(Box::new(c))
}
