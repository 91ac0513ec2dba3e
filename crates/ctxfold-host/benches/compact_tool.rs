//! What one call of the assistant's `compact` tool costs before the user is
//! asked: reading the arguments, resolving a quote against the view, and
//! planning the rule as it will be in force at the next turn (what it
//! changes and saves), on conversations of 100,000 and 1,000,000 events.
//! The prompt, the preview file and the model are excluded.
//!
//! `cargo bench -p ctxfold-host --bench compact_tool`

use ctxfold_compactor::assistant::plan_proposals;
use ctxfold_core::planner::ToolHints;
use ctxfold_core::{Body, Log, Record};
use ctxfold_host::compact_tool::resolve;
use serde_json::json;

fn main() {
    divan::main();
}

fn turn(k: usize) -> Vec<Body> {
    let mut out = vec![
        Body::TurnStart,
        Body::User {
            content: format!("Turn {k}: please look at the failing test and fix it."),
            author: None,
        },
    ];
    for s in 0..6 {
        out.push(Body::ToolCall {
            id: format!("c{k}-{s}"),
            name: "read_file".into(),
            arguments: json!({"path": format!("src/m{s}.rs")}),
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
    out
}

/// About `events` events; returns the log and its turn count.
fn log_of(events: usize) -> (Log, usize) {
    let mut log = Log::new();
    let mut k = 0;
    while log.len() < events {
        for b in turn(k) {
            log.push(Record::new(log.next_seq(), "t", b));
        }
        k += 1;
    }
    (log, k)
}

#[divan::bench(args = [100_000, 1_000_000], sample_count = 5, sample_size = 1)]
fn resolve_and_plan(bencher: divan::Bencher, events: usize) {
    let (log, turns) = log_of(events);
    // Everything before the turn five from the end, summarized.
    let args = json!({"rules": [{
        "before_quote": format!("Turn {}: please look", turns - 5),
        "summary": "The user asked for fixes across the code base; the tests pass.",
        "note": "Every fix is in the files."
    }]});
    bencher.bench_local(|| {
        let resolved = resolve(&log, &args).unwrap();
        let planned =
            plan_proposals(&log, &resolved.proposals, &ToolHints::default(), None).unwrap();
        assert!(planned[0].compaction.is_some());
        planned
    });
}
