//! `ctxfold compact` end to end, as a user runs it: the release binary,
//! started as a process, on the largest corpus conversation (JP folder in,
//! JP folder out), with the built-in rule and with the digest.
//!
//! `cargo bench -p ctxfold --bench compact` (reads `../shared/corpus/jp/`,
//! or `CTXFOLD_CORPUS`).

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::PathBuf;
use std::process::Command;

fn main() {
    divan::main();
}

fn largest_conversation() -> PathBuf {
    let corpus = ctxfold_testkit::corpus::dir();
    std::fs::read_dir(&corpus)
        .unwrap_or_else(|e| panic!("{}: {e}", corpus.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("events.json").is_file())
        .max_by_key(|p| std::fs::metadata(p.join("events.json")).map_or(0, |m| m.len()))
        .expect("a corpus conversation")
}

/// Built-in rule (keep first 1, keep last 3, strip reasoning and tools).
#[divan::bench(sample_count = 30)]
fn compact_largest_builtin(bencher: divan::Bencher) {
    run_with(bencher, &[]);
}

/// Digest summary (keep first 1, keep last 1).
#[divan::bench(sample_count = 30)]
fn compact_largest_digest(bencher: divan::Bencher) {
    run_with(bencher, &["-s", "--keep-first", "1", "--keep-last", "1"]);
}

fn run_with(bencher: divan::Bencher, extra: &[&str]) {
    let input = largest_conversation();
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("out");
    bencher.bench(|| {
        let status = Command::new(env!("CARGO_BIN_EXE_ctxfold"))
            .arg("compact")
            .arg(&input)
            .arg("-o")
            .arg(&dest)
            .args(extra)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    });
}
