//! `ctxfold conversation show` as a user runs it (issue 26: under 1 s on
//! 1,000,000 events with 10,000 compactions, linear from 100,000): the
//! release binary started as a process on a generated conversation in a
//! workspace (loading, the projection, the retention report of every
//! compaction, the text printed). Figures: `docs/PERFORMANCE.md`.
//!
//! `cargo bench -p ctxfold --bench show` (the conversations are generated
//! and written first: about 1 GB of temporary space and a minute). With
//! `CTXFOLD_BENCH_BIN=PATH` it runs that binary instead of the one built
//! with the benchmark: how the figures before a change are taken.
//!
//! The conversations are the pages' benchmark's (`ctxfold_testkit::session`):
//! turns of ten records, and every tenth turn a compaction, either a summary
//! of everything before the last three turns (the ranges nest, the view is
//! small: `show_*`) or a strip of the ten turns before those (ranges side by
//! side, the view as long as the log: `strips_*`).
//!
//! A workspace is shown once before the samples: that first `show` reads
//! every line and the writer it starts as it ends writes the log's
//! snapshot (`events.snapshot`, for logs of 32 MiB or more), which the
//! samples then load from, as every `show` after a first one does until
//! the log grows by another 32 MiB.
//!
//! With `CTXFOLD_BENCH_KEEP=DIR` the generated workspaces are kept in DIR
//! (and read from there on later runs), for profiling `ctxfold c show` by
//! hand on the same conversation.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::LazyLock;

use ctxfold_testkit::session;

fn main() {
    divan::main();
}

/// A workspace holding one generated conversation, and its id.
struct Stored {
    /// Removed with the benchmark, unless kept (`CTXFOLD_BENCH_KEEP`).
    _temp: Option<tempfile::TempDir>,
    dir: PathBuf,
    id: String,
}

/// With `CTXFOLD_BENCH_KEEP=DIR` the workspaces are written to (and, on
/// later runs, read from) `DIR/NAME`, so a profiler can run
/// `ctxfold c show` on the same conversation by hand.
fn store(name: &str, generate: impl FnOnce() -> ctxfold_core::Log) -> Stored {
    let (temp, dir) = match std::env::var_os("CTXFOLD_BENCH_KEEP") {
        Some(keep) => (None, Path::new(&keep).join(name)),
        None => {
            let t = tempfile::tempdir().unwrap();
            let dir = t.path().to_owned();
            (Some(t), dir)
        }
    };
    let id_file = dir.join("bench-id");
    if let Ok(id) = std::fs::read_to_string(&id_file) {
        return Stored {
            _temp: temp,
            dir,
            id,
        };
    }
    std::fs::create_dir_all(&dir).unwrap();
    let (ws, _) = ctxfold_store::Workspace::init(&dir).unwrap();
    let meta = ctxfold_store::create_new(
        &ws,
        Some("a long agent session".into()),
        None,
        Default::default(),
        generate().records().to_vec(),
    )
    .unwrap();
    std::fs::write(&id_file, &meta.id).unwrap();
    // A first `show` reads every line, and the writer it starts as it
    // ends leaves the log's snapshot (`events.snapshot`, for a log of
    // 32 MiB or more); the samples are the shows after it.
    show(&dir, &meta.id, &[]);
    let folder = dir.join(".ctxfold/conversations").join(&meta.id);
    let snapshot = folder.join(ctxfold_store::event_log::SNAPSHOT_FILE);
    let long = std::fs::metadata(folder.join("events.jsonl"))
        .unwrap()
        .len()
        >= ctxfold_store::event_log::SNAPSHOT_FROM;
    let until = std::time::Instant::now() + std::time::Duration::from_secs(600);
    while long && !snapshot.exists() {
        assert!(std::time::Instant::now() < until, "no snapshot written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Stored {
        _temp: temp,
        dir,
        id: meta.id,
    }
}

static S100K: LazyLock<Stored> =
    LazyLock::new(|| store("show_100k", || session::generate(100_000, 10)));
static S1M: LazyLock<Stored> =
    LazyLock::new(|| store("show_1m", || session::generate(1_000_000, 10)));
static STRIPS_100K: LazyLock<Stored> =
    LazyLock::new(|| store("strips_100k", || session::generate_strips(100_000, 10)));
static STRIPS_1M: LazyLock<Stored> =
    LazyLock::new(|| store("strips_1m", || session::generate_strips(1_000_000, 10)));
static OVERLAPS_100K: LazyLock<Stored> = LazyLock::new(|| {
    store("overlaps_100k", || {
        session::generate_overlapping(100_000, 10)
    })
});
static OVERLAPS_1M: LazyLock<Stored> = LazyLock::new(|| {
    store("overlaps_1m", || {
        session::generate_overlapping(1_000_000, 10)
    })
});

fn show(dir: &Path, id: &str, extra: &[&str]) {
    ctxfold(dir, &["c", "show", id], extra);
}

/// `ctxfold stats ID`: loading and one projection, what `show` is
/// measured against on the same log.
fn stats(dir: &Path, id: &str) {
    ctxfold(dir, &["stats", id], &[]);
}

fn ctxfold(dir: &Path, args: &[&str], extra: &[&str]) {
    let bin = std::env::var_os("CTXFOLD_BENCH_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_ctxfold").into());
    let status = Command::new(bin)
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("xdg-data"))
        .env("XDG_CONFIG_HOME", dir.join("xdg-config"))
        .args(args)
        .args(extra)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

/// 100,000 events, 1,000 compactions, as text.
#[divan::bench(sample_count = 10)]
fn show_100k(b: divan::Bencher) {
    let s = &*S100K;
    b.bench(|| show(&s.dir, &s.id, &[]));
}

/// 1,000,000 events, 10,000 compactions, as text.
#[divan::bench(sample_count = 10)]
fn show_1m(b: divan::Bencher) {
    let s = &*S1M;
    b.bench(|| show(&s.dir, &s.id, &[]));
}

/// 100,000 events as JSON: every compaction lists what it lost, and with
/// ranges nested from the first record those lists make the output itself
/// grow with the square of the conversation.
#[divan::bench(sample_count = 10)]
fn show_100k_json(b: divan::Bencher) {
    let s = &*S100K;
    b.bench(|| show(&s.dir, &s.id, &["--format", "json"]));
}

/// 100,000 events, about 1,000 strips side by side, as text.
#[divan::bench(sample_count = 10)]
fn strips_100k(b: divan::Bencher) {
    let s = &*STRIPS_100K;
    b.bench(|| show(&s.dir, &s.id, &[]));
}

/// 1,000,000 events, about 10,000 strips side by side, as text.
#[divan::bench(sample_count = 10)]
fn strips_1m(b: divan::Bencher) {
    let s = &*STRIPS_1M;
    b.bench(|| show(&s.dir, &s.id, &[]));
}

/// 1,000,000 events, about 10,000 strips side by side, as JSON.
#[divan::bench(sample_count = 10)]
fn strips_1m_json(b: divan::Bencher) {
    let s = &*STRIPS_1M;
    b.bench(|| show(&s.dir, &s.id, &["--format", "json"]));
}

/// 100,000 events, about 1,000 strips each over fifteen turns, overlapping
/// the one before by five, all in force, as text.
#[divan::bench(sample_count = 10)]
fn overlaps_100k(b: divan::Bencher) {
    let s = &*OVERLAPS_100K;
    b.bench(|| show(&s.dir, &s.id, &[]));
}

/// 1,000,000 events, about 10,000 overlapping strips, as text (issue 48:
/// within 1.5x of `stats_overlaps_1m`).
#[divan::bench(sample_count = 10)]
fn overlaps_1m(b: divan::Bencher) {
    let s = &*OVERLAPS_1M;
    b.bench(|| show(&s.dir, &s.id, &[]));
}

/// `ctxfold stats` on the overlapping 1,000,000 events: loading and one
/// projection.
#[divan::bench(sample_count = 10)]
fn stats_overlaps_1m(b: divan::Bencher) {
    let s = &*OVERLAPS_1M;
    b.bench(|| stats(&s.dir, &s.id));
}

/// `ctxfold stats` on the nested 1,000,000 events.
#[divan::bench(sample_count = 10)]
fn stats_1m(b: divan::Bencher) {
    let s = &*S1M;
    b.bench(|| stats(&s.dir, &s.id));
}
