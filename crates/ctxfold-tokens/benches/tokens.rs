//! Token counting speed on the largest JP corpus conversation
//! (17728322628-bear-mcp-server-design-review): the whole log from a cold
//! cache, and after one appended turn with a warm cache, which must cost
//! only what the turn added (compare with `turn_alone`).
//!
//! `cargo bench -p ctxfold-tokens --bench tokens`

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::OnceLock;

use ctxfold_core::projection::project;
use ctxfold_core::{Log, Record};
use ctxfold_tokens::{Bpe, CountCache, Heuristic, TokenEstimator};

const CONVERSATION: &str = "17728322628-bear-mcp-server-design-review";

fn main() {
    let (_, tail, full) = data();
    let chars: usize = tail.iter().map(|r| r.to_json_line().len()).sum();
    eprintln!(
        "{CONVERSATION}: {} records; the appended (last) turn: {} records, {chars} bytes of JSON",
        full.len(),
        tail.len(),
    );
    divan::main();
}

/// The conversation without its last turn, that turn, and the whole.
fn data() -> &'static (Log, Vec<Record>, Log) {
    static DATA: OnceLock<(Log, Vec<Record>, Log)> = OnceLock::new();
    DATA.get_or_init(|| {
        let conv = common::conversation(&common::corpus_dir().join(CONVERSATION));
        let full = conv.log;
        let cut = full
            .turn_range(full.turn_count() as u32 - 1)
            .expect("a last turn")
            .start;
        let mut records = full.records().to_vec();
        let tail = records.split_off(cut);
        (Log::from_records(records), tail, full)
    })
}

fn estimator(name: &str) -> Box<dyn TokenEstimator> {
    let est: Box<dyn TokenEstimator> = match name {
        "o200k_base" => Box::new(Bpe::o200k_base()),
        _ => Box::new(Heuristic::default()),
    };
    // Load the vocabulary outside the measurement.
    est.count_text("warm up");
    est
}

const ESTIMATORS: [&str; 2] = ["heuristic", "o200k_base"];

/// The whole log, every record counted.
#[divan::bench(args = ESTIMATORS)]
fn cold_log(bencher: divan::Bencher, name: &str) {
    let est = estimator(name);
    let (_, _, full) = data();
    bencher
        .with_inputs(CountCache::new)
        .bench_local_values(|mut cache| cache.log_tokens(est.as_ref(), full));
}

/// The whole view (no compaction: every event), every record counted.
#[divan::bench(args = ESTIMATORS)]
fn cold_view(bencher: divan::Bencher, name: &str) {
    let est = estimator(name);
    let (_, _, full) = data();
    let view = project(full);
    bencher
        .with_inputs(CountCache::new)
        .bench_local_values(|mut cache| cache.view_tokens(est.as_ref(), &view));
}

/// A cache warm with everything before the last turn; the log now holds
/// that turn too.
fn warm(est: &dyn TokenEstimator) -> CountCache {
    let (before, _, _) = data();
    let mut cache = CountCache::new();
    cache.log_tokens(est, before);
    cache
}

/// The whole log after one appended turn: only the turn is counted.
#[divan::bench(args = ESTIMATORS)]
fn warm_log_after_turn(bencher: divan::Bencher, name: &str) {
    let est = estimator(name);
    let (_, _, full) = data();
    let cache = warm(est.as_ref());
    bencher
        .with_inputs(|| cache.clone())
        .bench_local_values(|mut cache| cache.log_tokens(est.as_ref(), full));
}

/// The whole view after one appended turn: the turn counted, every other
/// item looked up in the cache.
#[divan::bench(args = ESTIMATORS)]
fn warm_view_after_turn(bencher: divan::Bencher, name: &str) {
    let est = estimator(name);
    let (_, _, full) = data();
    let view = project(full);
    let cache = warm(est.as_ref());
    bencher
        .with_inputs(|| cache.clone())
        .bench_local_values(|mut cache| cache.view_tokens(est.as_ref(), &view));
}

/// The last turn's records alone, counted without a cache: the floor the
/// two benchmarks above should be near.
#[divan::bench(args = ESTIMATORS)]
fn turn_alone(bencher: divan::Bencher, name: &str) {
    let est = estimator(name);
    let (_, tail, _) = data();
    bencher.bench_local(|| tail.iter().map(|r| est.record_tokens(r)).sum::<usize>());
}
