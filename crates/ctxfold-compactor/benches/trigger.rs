//! The cost of checking automatic compaction's trigger as a conversation
//! grows: after one more turn (between turns) and after one more step
//! (before the next model call), on conversations of 100,000 and 1,000,000
//! events, with a window large enough that it does not fire. It must
//! depend on what was added, not on the conversation (target: under 5 ms,
//! flat from 100k to 1M).
//!
//! `cargo bench -p ctxfold-compactor --bench trigger`

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::cell::RefCell;

use ctxfold_compactor::{
    BasicCompactor, Compactor, Context, Conversation, DigestOnly, Memory, Moment,
};
use ctxfold_core::planner::ToolHints;
use ctxfold_core::trigger::AutoPolicy;
use ctxfold_core::{Body, Log, Record};
use ctxfold_tokens::Heuristic;
use serde_json::json;

fn main() {
    divan::main();
}

/// One turn of about 20 events: a question, six steps of reasoning, a
/// call and its result, and an answer; `k` makes ids unique.
fn turn(k: usize) -> Vec<Record> {
    let mut out = vec![
        Body::TurnStart,
        Body::User {
            content: format!("Turn {k}: please look at the failing test and fix it."),
            author: None,
        },
    ];
    for s in 0..6 {
        out.push(Body::Reasoning {
            content: "I should read the test first, then the code it calls.".into(),
        });
        out.push(Body::ToolCall {
            id: format!("c{k}-{s}"),
            name: "read_file".into(),
            arguments: json!({"path": format!("src/m{s}.rs")}).into(),
        });
        out.push(Body::ToolResult {
            id: format!("c{k}-{s}"),
            content: "fn compute(input: &str) -> usize { input.len() }\n".repeat(8),
            is_error: false,
        });
    }
    out.push(Body::Assistant {
        content: "The test passes now.".into(),
    });
    out.into_iter()
        .map(|b| Record::new(0, "2026-11-30T00:00:00Z", b))
        .collect()
}

fn step(k: usize) -> Vec<Record> {
    vec![
        Record::new(
            0,
            "t",
            Body::ToolCall {
                id: format!("s{k}"),
                name: "run_tests".into(),
                arguments: json!({"filter": "compute"}).into(),
            },
        ),
        Record::new(
            0,
            "t",
            Body::ToolResult {
                id: format!("s{k}"),
                content: "test compute ... ok\n".repeat(5),
                is_error: false,
            },
        ),
    ]
}

fn log_of(events: usize) -> Log {
    let mut log = Log::new();
    let mut k = 0;
    while log.len() < events {
        for mut r in turn(k) {
            r.seq = log.next_seq();
            log.push(r);
        }
        k += 1;
    }
    log
}

fn compactor() -> BasicCompactor {
    BasicCompactor::new(
        AutoPolicy {
            enabled: true,
            ..AutoPolicy::default()
        },
        ToolHints::default(),
        Box::new(Heuristic::default()),
        Box::new(DigestOnly),
    )
}

/// A conversation of `events` events whose view has been sized once.
fn ready(events: usize, c: &BasicCompactor) -> Conversation<'static> {
    let mut conv = Conversation::new(log_of(events), &Memory);
    // Sized once, outside the measurement: the host does it on load.
    c.compact_if_needed(
        &mut conv,
        &Context::new(Moment::BetweenTurns, Some(u32::MAX)),
    )
    .unwrap();
    conv
}

#[divan::bench(args = [100_000, 1_000_000], sample_count = 50, sample_size = 20)]
fn after_one_more_turn(bencher: divan::Bencher, events: usize) {
    let c = compactor();
    let conv = RefCell::new(ready(events, &c));
    let k = RefCell::new(1_000_000);
    bencher.bench_local(|| {
        let mut conv = conv.borrow_mut();
        let mut k = k.borrow_mut();
        *k += 1;
        conv.append(turn(*k)).unwrap();
        let out = c
            .compact_if_needed(
                &mut conv,
                &Context::new(Moment::BetweenTurns, Some(u32::MAX)),
            )
            .unwrap();
        assert!(!out.compacted());
    });
    assert_eq!(conv.borrow().projections(), 1, "never projected again");
}

#[divan::bench(args = [100_000, 1_000_000], sample_count = 50, sample_size = 20)]
fn before_one_more_step(bencher: divan::Bencher, events: usize) {
    let c = compactor();
    let conv = RefCell::new(ready(events, &c));
    let k = RefCell::new(0);
    bencher.bench_local(|| {
        let mut conv = conv.borrow_mut();
        let mut k = k.borrow_mut();
        *k += 1;
        conv.append(step(*k)).unwrap();
        let out = c
            .compact_if_needed(&mut conv, &Context::new(Moment::BeforeStep, Some(u32::MAX)))
            .unwrap();
        assert!(!out.compacted());
    });
    assert_eq!(conv.borrow().projections(), 1, "never projected again");
}
