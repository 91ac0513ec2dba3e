//! What the agent host adds per step, tools and the model excluded: from
//! the model's last byte (its answer and the tool results recorded) to the
//! next request's bytes (the trigger checked, the request derived from the
//! view and serialized), on conversations of 100,000 and 1,000,000 events
//! whose older part a summary has folded (so the request is what a window
//! holds). Target: under 10 ms, not growing with the conversation.
//!
//! `cargo bench -p ctxfold-host --bench step`

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
use ctxfold_core::compaction::{Compaction, Provenance, Source, Summary};
use ctxfold_core::planner::ToolHints;
use ctxfold_core::trigger::AutoPolicy;
use ctxfold_core::{Body, Log, Record};
use ctxfold_host::request_cache::RequestCache;
use ctxfold_providers::ChatRequest;
use ctxfold_tokens::Heuristic;
use serde_json::json;

mod agent_log;

use agent_log::turns_of;

fn main() {
    divan::main();
}

/// `events` events, all but the last ~2,000 folded by one summary.
fn log_of(events: usize) -> Log {
    let (mut log, _) = turns_of(events);
    let end = log.len() - 2_000;
    let mut c = Compaction::new(0, log.turn_of(end - 1), Source::Auto);
    c.from_seq = Some(0);
    c.to_seq = Some(log.records()[end - 1].seq);
    c.summary = Some(Summary {
        text: "The user asked for fixes across the code base; tests now pass.".into(),
        provenance: Provenance::Supplied {
            author: Source::User,
        },
    });
    log.push(Record::new(
        log.next_seq(),
        "t",
        Body::Compaction(Box::new(c)),
    ));
    log
}

#[divan::bench(args = [100_000, 1_000_000], sample_count = 30, sample_size = 10)]
fn one_step(bencher: divan::Bencher, events: usize) {
    let compactor = BasicCompactor::new(
        AutoPolicy {
            enabled: true,
            ..AutoPolicy::default()
        },
        ToolHints::default(),
        Box::new(Heuristic::default()),
        Box::new(DigestOnly),
    );
    let opts = ChatRequest {
        model: "m".into(),
        ..ChatRequest::default()
    };
    let ctx = Context::new(Moment::BeforeStep, Some(u32::MAX));
    let conv = RefCell::new(Conversation::new(log_of(events), &Memory));
    let cache = RefCell::new(RequestCache::new());
    // Loaded once, as a host does when the turn starts.
    compactor
        .compact_if_needed(&mut conv.borrow_mut(), &ctx)
        .unwrap();
    cache.borrow_mut().request(conv.borrow().log(), &opts);
    let k = RefCell::new(0usize);
    bencher.bench_local(|| {
        let mut conv = conv.borrow_mut();
        let mut k = k.borrow_mut();
        *k += 1;
        // What the model answered and the tool's result, recorded.
        let id = format!("s{k}");
        conv.append(vec![
            Record::new(
                0,
                "t",
                Body::ToolCall {
                    id: id.clone(),
                    name: "run_tests".into(),
                    arguments: json!({"filter": "compute"}).into(),
                },
            ),
            Record::new(
                0,
                "t",
                Body::ToolResult {
                    id,
                    content: "test compute ... ok\n".repeat(5),
                    is_error: false,
                },
            ),
        ])
        .unwrap();
        // The next request: the trigger, the request, its bytes.
        compactor.compact_if_needed(&mut conv, &ctx).unwrap();
        let req = cache.borrow_mut().request(conv.log(), &opts);
        let body = ctxfold_providers::openai::body(&req, true);
        divan::black_box(serde_json::to_vec(&body).unwrap());
    });
    assert_eq!(cache.borrow().projections, 1, "never projected again");
}
