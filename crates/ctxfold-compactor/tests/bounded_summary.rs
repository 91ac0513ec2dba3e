//! Folds are bounded because they can be recalled (issue 43, point 5),
//! through the library: a plain chat of long user messages (the aider
//! case: the digest used to keep every request and grow past the window)
//! compacted before every model call at a 20,000-token window with the
//! defaults. Every request fits, the head summary keeps to its share, the
//! newest user message is never clipped, and each firing says what its
//! summary cut to a recall handle.

// A test may panic on what it did not expect, and print.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use ctxfold_compactor::{BasicCompactor, Compactor, Context, Conversation, DigestOnly, Moment};
use ctxfold_core::planner::ToolHints;
use ctxfold_core::projection::project;
use ctxfold_core::trigger::AutoPolicy;
use ctxfold_core::{Body, Log, Record};
use ctxfold_store::EventLog;
use ctxfold_tokens::Heuristic;

const WINDOW: u32 = 20_000;

/// User message `k`: 2,000 to 4,000 characters over several lines, the
/// last one 16,065 (the message the old ladder clipped).
fn message(k: usize, last: bool) -> String {
    let len = if last {
        16_065
    } else {
        2_000 + (k * 733) % 2_000
    };
    let mut s = format!("Request {k}: change module {k} as discussed.\n");
    let mut i = 0;
    while s.len() < len {
        s.push_str(&format!(
            "- detail {k}.{i}: keep the behaviour of case {i} as it is\n"
        ));
        i += 1;
    }
    s.truncate(len);
    s
}

fn record(body: Body) -> Record {
    Record::new(0, "2026-01-01T00:00:00Z", body)
}

#[test]
fn a_long_plain_chat_keeps_its_summary_bounded_and_its_newest_message_whole() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("c")).unwrap();
    let store = EventLog::new(dir.path().join("c"));
    let policy = AutoPolicy {
        enabled: true,
        ..AutoPolicy::default()
    };
    let budget = policy.budget(WINDOW, 0, None);
    let c = BasicCompactor::new(
        policy.clone(),
        ToolHints::default(),
        Box::new(Heuristic::default()),
        Box::new(DigestOnly),
    );
    let mut conv = Conversation::new(Log::new(), &store);
    let ctx = Context::new(Moment::BeforeStep, Some(WINDOW));
    let n = 45;
    let mut firings = 0;
    let mut cut = 0;
    for k in 0..n {
        let text = message(k, k == n - 1);
        conv.append(vec![
            record(Body::TurnStart),
            record(Body::User {
                content: text.clone(),
                author: None,
            }),
        ])
        .unwrap();
        let out = c.compact_if_needed(&mut conv, &ctx).unwrap();
        assert!(out.after <= budget.limit(), "turn {k}: {out:?}");
        for done in &out.committed {
            let f = done.compaction.budget.as_ref().unwrap();
            firings += 1;
            assert!(f.after <= f.budget.target, "turn {k}: {}", f.line());
            if let Some(s) = &done.compaction.summary {
                let tokens = ctxfold_core::estimate::text_tokens(&s.text);
                let share = budget.summary(&policy);
                assert!(
                    tokens <= share,
                    "turn {k}: a summary of ~{tokens} tokens, over its ~{share}"
                );
                assert_eq!(f.summary_budget, Some(share), "{}", f.line());
            }
            cut = cut.max(f.shortened + f.handles_only);
        }
        // The newest user message reaches the model whole.
        let log = conv.log();
        let view = project(log);
        let whole = ctxfold_core::materialize::materialize(log, &view)
            .iter()
            .any(|r| matches!(&r.body, Body::User { content, .. } if *content == text));
        assert!(whole, "turn {k}: the newest user message was cut");
        conv.append(vec![record(Body::Assistant {
            content: format!("Done with request {k}."),
        })])
        .unwrap();
    }
    assert!(firings > 1, "{firings} firings");
    assert!(
        cut > 0,
        "the summary cut some of the user's messages to a handle"
    );
}
