//! Digest speed on the largest conversation of the real JP corpus
//! (`shared/corpus/jp`, or the folder named by `CTXFOLD_CORPUS`), whole and
//! without its last turn. Target (issue 11): at most twice the cost of
//! digest version 1 on the same conversation.
//!
//! `cargo bench -p ctxfold-core --bench digest`

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

#[path = "../tests/jp/mod.rs"]
mod jp;

use std::path::PathBuf;
use std::sync::OnceLock;

use ctxfold_core::Log;
use ctxfold_core::digest::Digest;
use ctxfold_core::summarizer::{Summarizer, SummaryInput};

fn main() {
    divan::main();
}

/// The corpus conversation with the most bytes of events.
fn largest() -> &'static Log {
    static LOG: OnceLock<Log> = OnceLock::new();
    LOG.get_or_init(|| {
        let dir = jp::corpus_dir();
        let mut convs: Vec<(u64, PathBuf)> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("dir entry").path())
            .filter_map(|p| {
                let size = std::fs::metadata(p.join("events.json")).ok()?.len();
                Some((size, p))
            })
            .collect();
        convs.sort();
        let (_, path) = convs.pop().expect("a corpus conversation");
        jp::load(&path)
    })
}

fn digest(log: &Log, hi: usize) -> usize {
    let out = Digest
        .summarize(SummaryInput {
            log,
            range: (0, hi),
            instructions: None,
        })
        .expect("digest");
    out.text.len()
}

/// The whole conversation.
#[divan::bench(sample_count = 50)]
fn digest_largest_whole(bencher: divan::Bencher) {
    let log = largest();
    bencher.bench(|| digest(divan::black_box(log), log.len() - 1));
}

/// The conversation without its last turn.
#[divan::bench(sample_count = 50)]
fn digest_largest_without_last_turn(bencher: divan::Bencher) {
    let log = largest();
    let turns = log.turn_count() as u32;
    let hi = match log.turn_range(turns.saturating_sub(1)) {
        Some(r) if turns >= 2 => r.start - 1,
        _ => log.len() - 1,
    };
    bencher.bench(|| digest(divan::black_box(log), hi));
}
