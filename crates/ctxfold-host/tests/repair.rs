//! What the next turn says to calls a crash or an interrupt left without
//! a result: `interrupted`, and for a `compact` call whose approved
//! compactions were written just before the crash (they precede the
//! result in the same append), that they were recorded.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use ctxfold_compactor::{Conversation, Memory};
use ctxfold_core::compaction::{Compaction, ReasoningPolicy, Source};
use ctxfold_core::{Body, Log, Record};
use ctxfold_host::turn::{INTERRUPTED, INTERRUPTED_RECORDED, repair};
use serde_json::json;

fn log_of(bodies: Vec<Body>) -> Log {
    let mut log = Log::new();
    for b in bodies {
        log.push(Record::new(log.next_seq(), "2026-01-01T00:00:00Z", b));
    }
    log
}

fn call(id: &str, name: &str) -> Body {
    Body::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: json!({}).into(),
    }
}

fn assistant_compaction() -> Body {
    let mut c = Compaction::new(0, 0, Source::Assistant);
    c.reasoning = Some(ReasoningPolicy::Strip);
    c.deferred_until_turn = Some(2);
    Body::Compaction(Box::new(c))
}

fn results(conv: &Conversation<'_>) -> Vec<(String, String)> {
    conv.log()
        .records()
        .iter()
        .filter_map(|r| match &r.body {
            Body::ToolResult { id, content, .. } => Some((id.clone(), content.clone())),
            _ => None,
        })
        .collect()
}

fn opening() -> Vec<Body> {
    vec![
        Body::TurnStart,
        Body::User {
            content: "hello".into(),
            author: None,
        },
        Body::Assistant {
            content: "hi".into(),
        },
        Body::TurnStart,
        Body::User {
            content: "fold".into(),
            author: None,
        },
    ]
}

#[test]
fn a_compact_call_cut_short_after_its_compactions_says_they_were_recorded() {
    // Two calls in one answer: the first was recorded whole (compaction,
    // then result), the second's compaction was written, its result not.
    let mut bodies = opening();
    bodies.extend([
        call("c1", "compact"),
        call("c2", "compact"),
        call("c3", "read_file"),
        assistant_compaction(),
        Body::ToolResult {
            id: "c1".into(),
            content: "Approved".into(),
            is_error: false,
        },
        assistant_compaction(),
    ]);
    let mut conv = Conversation::new(log_of(bodies), &Memory);
    assert_eq!(repair(&mut conv).unwrap(), 2);
    let r = results(&conv);
    assert_eq!(
        r[1..],
        [
            ("c2".to_owned(), INTERRUPTED_RECORDED.to_owned()),
            ("c3".to_owned(), INTERRUPTED.to_owned())
        ]
    );
}

#[test]
fn a_compact_call_cut_short_before_anything_was_written_is_interrupted() {
    let mut bodies = opening();
    bodies.extend([
        call("c1", "compact"),
        assistant_compaction(),
        Body::ToolResult {
            id: "c1".into(),
            content: "Approved".into(),
            is_error: false,
        },
        call("c2", "compact"),
    ]);
    let mut conv = Conversation::new(log_of(bodies), &Memory);
    assert_eq!(repair(&mut conv).unwrap(), 1);
    assert_eq!(results(&conv)[1], ("c2".to_owned(), INTERRUPTED.to_owned()));
}
