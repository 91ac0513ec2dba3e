//! Loading a conversation through the command (issue 48: peak memory at
//! most 1.5x the log's file): the release binary run as a process on a
//! conversation of 1,000,000 small records (about 220 bytes each, the
//! store's `load_small` shape, `ctxfold_testkit::generated`), its time,
//! and its own peak resident memory (`ru_maxrss`) against the size of
//! `events.jsonl`, printed after divan's table.
//!
//! `cargo bench -p ctxfold --bench load` (the conversation is generated
//! and written first: about 230 MB of temporary space).
//!
//! The commands: `c ls`, which reads only the conversations' metadata
//! (the process's own floor: the binary and the runtime); `stats ID`,
//! loading and one projection; `c show ID`. Each runs on the log read
//! line by line (`first`: the snapshot removed before each sample, so
//! the command reads the JSON; the snapshot is written after it, by the
//! writer it starts in the background, waited for between samples) and
//! through the snapshot (`then`); and that writer alone
//! (`write_snapshot`).
//!
//! `CTXFOLD_BENCH_BIN=PATH` runs that binary instead of the one built
//! with the benchmark; `CTXFOLD_BENCH_KEEP=DIR` keeps the workspace in
//! DIR (and reads it from there on later runs).

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{LazyLock, Mutex};

use ctxfold_core::Record;
use ctxfold_testkit::generated::Gen;

fn main() {
    // The conversation made in a process of its own (see `store`).
    if let Some(dir) = std::env::var_os(GENERATE) {
        let records = std::env::var(RECORDS).unwrap().parse().unwrap();
        generate(Path::new(&dir), records);
        return;
    }
    divan::main();
    let peaks = PEAKS.lock().unwrap();
    if peaks.is_empty() {
        return;
    }
    let file = std::fs::metadata(SMALL.dir.join(&SMALL.log)).unwrap().len();
    println!(
        "\npeak resident memory / events.jsonl ({:.0} MB, 1,000,000 records):",
        file as f64 / 1e6
    );
    let mut names: Vec<&String> = peaks.iter().map(|(n, _)| n).collect();
    names.sort();
    names.dedup();
    for name in names {
        let mine: Vec<u64> = peaks
            .iter()
            .filter(|(n, _)| n == name)
            .map(|&(_, p)| p)
            .collect();
        let (lo, hi) = (mine.iter().min().unwrap(), mine.iter().max().unwrap());
        println!(
            "  {name:<14} {:.2}x–{:.2}x ({:.0}–{:.0} MB, {} runs)",
            *lo as f64 / file as f64,
            *hi as f64 / file as f64,
            *lo as f64 / 1e6,
            *hi as f64 / 1e6,
            mine.len()
        );
    }
}

static PEAKS: Mutex<Vec<(String, u64)>> = Mutex::new(Vec::new());

/// A workspace holding one generated conversation.
struct Stored {
    /// Removed with the benchmark, unless kept (`CTXFOLD_BENCH_KEEP`).
    _temp: Option<tempfile::TempDir>,
    dir: PathBuf,
    id: String,
    /// `events.jsonl`, relative to `dir`.
    log: PathBuf,
}

static SMALL: LazyLock<Stored> = LazyLock::new(|| store("load_small_1m", 1_000_000));

fn store(name: &str, records: usize) -> Stored {
    let (temp, dir) = match std::env::var_os("CTXFOLD_BENCH_KEEP") {
        Some(keep) => (None, Path::new(&keep).join(name)),
        None => {
            let t = tempfile::tempdir().unwrap();
            let dir = t.path().to_owned();
            (Some(t), dir)
        }
    };
    let id_file = dir.join("bench-id");
    if !id_file.exists() {
        // Made by a copy of this benchmark: a command started later
        // inherits its parent's peak (Linux carries `ru_maxrss` over
        // `exec`), and this one's would be the million records it made
        // (2.8x the log's file), not the command's.
        let made = Command::new(std::env::current_exe().unwrap())
            .env(GENERATE, &dir)
            .env(RECORDS, records.to_string())
            .status()
            .unwrap();
        assert!(made.success(), "the conversation was not made");
    }
    let id = std::fs::read_to_string(&id_file).unwrap();
    let log = Path::new(".ctxfold/conversations")
        .join(&id)
        .join("events.jsonl");
    assert!(dir.join(&log).exists(), "no log at {}", log.display());
    Stored {
        _temp: temp,
        dir,
        id,
        log,
    }
}

/// What makes [`main`] write the conversation to the folder it names, of
/// [`RECORDS`] records, and end.
const GENERATE: &str = "CTXFOLD_BENCH_GENERATE";
const RECORDS: &str = "CTXFOLD_BENCH_RECORDS";

/// A workspace in `dir` holding one conversation of `records` small
/// records, its id in `dir/bench-id`.
fn generate(dir: &Path, records: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let (ws, _) = ctxfold_store::Workspace::init(dir).unwrap();
    let meta = ctxfold_store::create_new(
        &ws,
        Some("small records".into()),
        None,
        Default::default(),
        small(records),
    )
    .unwrap();
    std::fs::write(dir.join("bench-id"), &meta.id).unwrap();
}

/// `records` small records in turns, numbered, a second apart.
fn small(records: usize) -> Vec<Record> {
    let mut g = Gen::new(0x5EED_0220 ^ records as u64);
    let mut out = Vec::with_capacity(records);
    while out.len() < records {
        for mut r in g.small_turn() {
            if out.len() == records {
                break;
            }
            r.seq = out.len() as u64;
            r.ts = format!(
                "2026-12-01T{:02}:{:02}:{:02}Z",
                out.len() / 3600 % 24,
                out.len() / 60 % 60,
                out.len() % 60
            )
            .into();
            out.push(r);
        }
    }
    out
}

/// Run `ctxfold ARGS` in the workspace, recording its peak under `name`.
fn ctxfold(s: &Stored, name: &str, args: &[&str]) {
    let bin = std::env::var_os("CTXFOLD_BENCH_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_ctxfold").into());
    let peak = ctxfold_testkit::peak::run(
        Command::new(bin)
            .current_dir(&s.dir)
            .env("HOME", &s.dir)
            .env("XDG_DATA_HOME", s.dir.join("xdg-data"))
            .env("XDG_CONFIG_HOME", s.dir.join("xdg-config"))
            .args(args),
    )
    .unwrap();
    PEAKS.lock().unwrap().push((name.to_owned(), peak));
}

fn snapshot(s: &Stored) -> PathBuf {
    s.dir
        .join(&s.log)
        .with_file_name(ctxfold_store::event_log::SNAPSHOT_FILE)
}

/// The snapshot in place: waited for when a command's background writer
/// is writing it, made (by a `stats` and its writer) when none is.
fn ensure_snapshot(s: &Stored) {
    if !snapshot(s).exists() && !WRITING.swap(false, std::sync::atomic::Ordering::Relaxed) {
        ctxfold(s, "(leaves the snapshot)", &["stats", &s.id]);
    }
    let until = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while !snapshot(s).exists() {
        assert!(std::time::Instant::now() < until, "no snapshot written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A command run without a snapshot started the writer of one.
static WRITING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Run `args` with no snapshot: the log read line by line, the snapshot
/// written in the background once the command ends (waited for before the
/// next sample, outside the timing).
fn first(b: divan::Bencher, name: &str, args: &[&str]) {
    let s = &*SMALL;
    b.with_inputs(|| {
        ensure_snapshot(s);
        std::fs::remove_file(snapshot(s)).unwrap();
    })
    .bench_local_values(|()| {
        ctxfold(s, name, args);
        WRITING.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    ensure_snapshot(s);
}

/// Run `args` with the snapshot in place.
fn then(b: divan::Bencher, name: &str, args: &[&str]) {
    let s = &*SMALL;
    ensure_snapshot(s);
    b.bench(|| ctxfold(s, name, args));
}

/// The snapshot's writer alone, as a command starts it: the log read line
/// by line, its results scanned, the snapshot written.
#[divan::bench(sample_count = 5)]
fn write_snapshot(b: divan::Bencher) {
    let s = &*SMALL;
    let dir = s.dir.join(&s.log).parent().unwrap().to_owned();
    let dir = dir.to_str().unwrap().to_owned();
    ensure_snapshot(s);
    b.with_inputs(|| std::fs::remove_file(snapshot(s)).unwrap())
        .bench_local_values(|()| {
            ctxfold(s, "the writer", &["__ctxfold-write-snapshots", &dir]);
            assert!(snapshot(s).exists(), "the writer wrote no snapshot");
        });
}

/// `c ls`: the process without a conversation loaded.
#[divan::bench(sample_count = 5)]
fn list(b: divan::Bencher) {
    b.bench(|| ctxfold(&SMALL, "c ls", &["c", "ls"]));
}

/// `stats ID` reading every line (and writing the snapshot).
#[divan::bench(sample_count = 5)]
fn stats_first(b: divan::Bencher) {
    first(b, "stats, first", &["stats", &SMALL.id]);
}

/// `stats ID` through the snapshot.
#[divan::bench(sample_count = 5)]
fn stats_then(b: divan::Bencher) {
    then(b, "stats, then", &["stats", &SMALL.id]);
}

/// `c show ID` reading every line (and writing the snapshot).
#[divan::bench(sample_count = 5)]
fn show_first(b: divan::Bencher) {
    first(b, "c show, first", &["c", "show", &SMALL.id]);
}

/// `c show ID` through the snapshot.
#[divan::bench(sample_count = 5)]
fn show_then(b: divan::Bencher) {
    then(b, "c show, then", &["c", "show", &SMALL.id]);
}
