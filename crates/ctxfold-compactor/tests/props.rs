//! Property test: for random conversations grown at random, with random
//! windows and rules, every view automatic compaction leaves keeps tool
//! pairs balanced and never starts with the assistant.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::*;
use ctxfold_compactor::{
    BasicCompactor, Compactor, Context, Conversation, DigestOnly, Memory, Moment,
};
use ctxfold_core::bounds::Keep;
use ctxfold_core::compaction::{ReasoningPolicy, ToolPolicy};
use ctxfold_core::planner::{Rule, SummaryRequest, ToolHints};
use ctxfold_core::trigger::AutoPolicy;
use ctxfold_core::{Body, Log, Record};
use ctxfold_tokens::Heuristic;
use proptest::prelude::*;
use serde_json::json;

#[derive(Debug, Clone)]
enum Grow {
    /// A new turn; with or without a user message first.
    Turn { user: bool },
    /// A model call's output: reasoning, text, `calls` tool calls (their
    /// results come with it unless `open`).
    Step {
        reasoning: bool,
        text: bool,
        calls: usize,
        big: bool,
    },
}

fn grow() -> impl Strategy<Value = Grow> {
    prop_oneof![
        1 => prop::bool::weighted(0.9).prop_map(|user| Grow::Turn { user }),
        4 => (any::<bool>(), any::<bool>(), 0..4usize, prop::bool::weighted(0.2))
            .prop_map(|(reasoning, text, calls, big)| Grow::Step { reasoning, text, calls, big }),
    ]
}

fn rule(kind: usize) -> Rule {
    let base = Rule {
        keep_first: Some(Keep::Count(1)),
        keep_last: Some(Keep::Count(1)),
        ..Rule::default()
    };
    match kind {
        0 => Rule {
            reasoning: Some(ReasoningPolicy::Strip),
            tool_calls: Some(ToolPolicy::Strip),
            ..base
        },
        1 => Rule {
            tool_calls: Some(ToolPolicy::Omit),
            ..base
        },
        _ => Rule {
            summary: Some(SummaryRequest::Derive {
                model: None,
                instructions: None,
            }),
            ..base
        },
    }
}

fn rec(b: Body) -> Record {
    Record::new(0, "2026-01-01T00:00:00Z", b)
}

/// Every recorded range keeps each tool call with its result, and holds no
/// call still waiting for one (the projection would hide a split by leaving
/// the pair out; this checks the compaction never made one). An excerpt
/// covers the one result it shows shorter, which keeps its call.
fn check_ranges(
    log: &Log,
    committed: &[ctxfold_compactor::Committed],
) -> Result<(), TestCaseError> {
    use ctxfold_core::retention::{cut_keeps_pairs, holds_open_call};
    for c in committed {
        let (Some(from), Some(to)) = (c.compaction.from_seq, c.compaction.to_seq) else {
            continue;
        };
        if c.compaction.is_excerpt() {
            prop_assert_eq!(from, to, "an excerpt covers one record");
            continue;
        }
        let lo = log.records().partition_point(|r| r.seq < from);
        let hi = log.records().partition_point(|r| r.seq <= to) - 1;
        prop_assert!(
            cut_keeps_pairs(log, lo),
            "range {}..={} starts inside a pair",
            from,
            to
        );
        prop_assert!(
            cut_keeps_pairs(log, hi + 1),
            "range {}..={} ends inside a pair",
            from,
            to
        );
        prop_assert!(
            !holds_open_call(log, lo, hi),
            "range {}..={} holds an open call",
            from,
            to
        );
    }
    Ok(())
}

/// Grow a conversation by `growth`, compacting automatically; checks every
/// view and returns how many compactions were recorded.
fn run(
    growth: Vec<Grow>,
    window: u32,
    kind: usize,
    retain: Option<usize>,
) -> Result<usize, TestCaseError> {
    let mut committed = 0;
    let policy = AutoPolicy {
        enabled: true,
        min_turns: 1,
        retain_tokens: retain,
        rule: rule(kind),
        ..AutoPolicy::default()
    };
    let c = BasicCompactor::new(
        policy,
        ToolHints::default(),
        Box::new(Heuristic::default()),
        Box::new(DigestOnly),
    );
    let journal = Memory;
    let mut conv = Conversation::new(Log::new(), &journal);
    for (n, g) in growth.into_iter().enumerate() {
        match g {
            Grow::Turn { user } => {
                let out = c
                    .compact_if_needed(&mut conv, &Context::new(Moment::BetweenTurns, Some(window)))
                    .unwrap();
                // The rolling rule, then (when it did not reach the target) one
                // band of the same firing, and a clip of the newest units when
                // the request would not fit otherwise.
                // (Besides an excerpt of each output that just arrived.)
                let folds = out.committed.iter().filter(|c| !c.compaction.is_excerpt());
                prop_assert!(folds.count() <= 3);
                committed += out.committed.len();
                check_ranges(conv.log(), &out.committed)?;
                checked_view(conv.log());
                conv.begin_turn();
                let mut recs = vec![rec(Body::TurnStart)];
                if user {
                    recs.push(rec(Body::User {
                        content: format!("question {n}"),
                        author: None,
                    }));
                }
                conv.append(recs).unwrap();
            }
            Grow::Step {
                reasoning,
                text,
                calls,
                big,
            } => {
                let out = c
                    .compact_if_needed(&mut conv, &Context::new(Moment::BeforeStep, Some(window)))
                    .unwrap();
                committed += out.committed.len();
                check_ranges(conv.log(), &out.committed)?;
                checked_view(conv.log());
                let mut recs = Vec::new();
                if reasoning {
                    recs.push(rec(Body::Reasoning {
                        content: "thinking ".repeat(20),
                    }));
                }
                if text {
                    recs.push(rec(Body::Assistant {
                        content: format!("answer {n}"),
                    }));
                }
                let size = if big { 3_000 } else { 300 };
                for k in 0..calls {
                    recs.push(rec(Body::ToolCall {
                        id: format!("c{n}-{k}"),
                        name: "run".into(),
                        arguments: json!({"input": "a".repeat(size / 2)}).into(),
                    }));
                }
                for k in 0..calls {
                    recs.push(rec(Body::ToolResult {
                        id: format!("c{n}-{k}"),
                        content: "b".repeat(size),
                        is_error: k == 1,
                    }));
                }
                conv.append(recs).unwrap();
            }
        }
    }
    checked_view(conv.log());
    Ok(committed)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    #[test]
    fn automatic_compaction_leaves_valid_views(
        growth in prop::collection::vec(grow(), 1..60),
        window in 300..4_000u32,
        kind in 0..3usize,
        retain in prop::option::of(50..1_000usize),
    ) {
        run(growth, window, kind, retain)?;
    }
}

/// The generated cases do compact, with every rule: without this the
/// property could hold on conversations that never reach the threshold.
#[test]
fn generated_growth_compacts_with_every_rule() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = prop::collection::vec(grow(), 30..60);
    for kind in 0..3 {
        let mut total = 0;
        for _ in 0..20 {
            let growth = strategy.new_tree(&mut runner).unwrap().current();
            total += run(growth, 1_500, kind, None).unwrap();
        }
        assert!(total > 5, "rule {kind}: {total} compactions");
    }
}
