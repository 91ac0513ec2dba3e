//! What one call of the assistant's `compact` tool costs before the user is
//! asked: reading the arguments, resolving a quote against the view, and
//! planning the rule as it will be in force at the next turn (what it
//! changes and saves), on conversations of 100,000 and 1,000,000 events.
//! The prompt, the preview file and the model are excluded.
//!
//! `cargo bench -p ctxfold-host --bench compact_tool`

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use ctxfold_compactor::assistant::plan_proposals;
use ctxfold_core::planner::ToolHints;
use ctxfold_host::builtin::compact::resolve;
use serde_json::json;

mod agent_log;

use agent_log::turns_of;

fn main() {
    divan::main();
}

#[divan::bench(args = [100_000, 1_000_000], sample_count = 5, sample_size = 1)]
fn resolve_and_plan(bencher: divan::Bencher, events: usize) {
    let (log, turns) = turns_of(events);
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
