//! Storage benchmarks for the event log: appending one turn and loading a
//! whole conversation, on agent-shaped conversations of 10 MiB, 100 MiB and
//! 1 GiB (records of about 1.7 KB), and loading conversations of 100,000
//! and 1,000,000 small records (about 220 bytes: the short messages, tool
//! calls and results real agent logs are full of). Figures and targets:
//! `docs/PERFORMANCE.md`.
//!
//! ```text
//! cargo bench -p ctxfold-store --bench log
//! ```
//!
//! The conversations are generated on first use (deterministically, from a
//! fixed seed) into one temporary folder, reused by every sample, and
//! removed when the run ends. `CTXFOLD_BENCH_DIR` chooses the folder the
//! temporary one is made in (default: the system's temp dir), to measure on
//! another filesystem.
//!
//! Peak heap is measured with the counting allocator below; the figures are
//! printed after divan's table.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use ctxfold_core::{Body, Record};
use ctxfold_store::EventLog;
use ctxfold_testkit::generated::Gen;
use divan::Bencher;
use divan::counter::BytesCount;

fn main() {
    divan::main();
    print_report();
    // Removes the generated conversations.
    drop(FIXTURES.lock().unwrap().take());
}

// ---------------------------------------------------------------------------
// Heap accounting

/// `System`, counting the bytes currently allocated, the peak since the last
/// [`mem_start`], and the number of allocations.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

#[global_allocator]
static GLOBAL: Counting = Counting;

fn grew(by: usize) {
    let now = CURRENT.fetch_add(by, Relaxed) + by;
    if now > PEAK.load(Relaxed) {
        PEAK.fetch_max(now, Relaxed);
    }
}

// SAFETY: every call is forwarded to `System` unchanged; only counters are
// updated around it.
// The only unsafe code in the workspace's libraries and their targets: a
// global allocator cannot be written without it.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds this method's contract; passed on as is.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            ALLOCS.fetch_add(1, Relaxed);
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds this method's contract; passed on as is.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            ALLOCS.fetch_add(1, Relaxed);
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds this method's contract; passed on as is.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds this method's contract; passed on as is.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            ALLOCS.fetch_add(1, Relaxed);
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        p
    }
}

/// Heap state when a measured load starts.
struct MemStart {
    current: usize,
    allocs: usize,
}

/// Reset the peak to what is allocated now.
fn mem_start() -> MemStart {
    let current = CURRENT.load(Relaxed);
    PEAK.store(current, Relaxed);
    MemStart {
        current,
        allocs: ALLOCS.load(Relaxed),
    }
}

/// What one load cost in heap, above what was allocated before it.
#[derive(Clone, Copy, Default)]
struct MemUse {
    /// Highest heap during the load.
    peak: usize,
    /// Heap still held by the result (the records).
    retained: usize,
    /// Number of allocations and reallocations.
    allocs: usize,
}

fn mem_end(start: &MemStart) -> MemUse {
    MemUse {
        peak: PEAK.load(Relaxed).saturating_sub(start.current),
        retained: CURRENT.load(Relaxed).saturating_sub(start.current),
        allocs: ALLOCS.load(Relaxed) - start.allocs,
    }
}

// ---------------------------------------------------------------------------
// Conversations on disk

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Size {
    Mib10,
    Mib100,
    Gib1,
    /// 100,000 small records.
    Small100k,
    /// 1,000,000 small records.
    Small1m,
}

/// Agent-shaped conversations, by file size.
const SIZES: [Size; 3] = [Size::Mib10, Size::Mib100, Size::Gib1];
/// Conversations of small records, by record count.
const SMALL: [Size; 2] = [Size::Small100k, Size::Small1m];

impl Size {
    /// The file size aimed at (for small records, about what they make).
    fn bytes(self) -> u64 {
        match self {
            Size::Mib10 => 10 << 20,
            Size::Mib100 => 100 << 20,
            Size::Gib1 => 1 << 30,
            Size::Small100k | Size::Small1m => self.small_records().unwrap_or(0) * 220,
        }
    }

    fn small_records(self) -> Option<u64> {
        match self {
            Size::Small100k => Some(100_000),
            Size::Small1m => Some(1_000_000),
            _ => None,
        }
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Size::Mib10 => "10 MiB",
            Size::Mib100 => "100 MiB",
            // Not "1 GiB": divan sorts arguments by name.
            Size::Gib1 => "1024 MiB",
            Size::Small100k => "small x 100k",
            Size::Small1m => "small x 1M",
        })
    }
}

/// The load benchmark reads the pristine conversation; the append benchmark
/// grows a copy of it, so loads always see the same file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Use {
    Load,
    Append,
}

/// A generated conversation folder.
#[derive(Clone)]
struct Fixture {
    dir: PathBuf,
    bytes: u64,
    records: usize,
    turns: usize,
    secs: f64,
}

struct Fixtures {
    tmp: tempfile::TempDir,
    made: HashMap<(Size, Use), Fixture>,
}

static FIXTURES: Mutex<Option<Fixtures>> = Mutex::new(None);

/// The conversation of `size` for `usage`, made on first use.
fn fixture(size: Size, usage: Use) -> Fixture {
    let mut guard = FIXTURES.lock().unwrap();
    let fx = guard.get_or_insert_with(|| {
        let tmp = match std::env::var_os("CTXFOLD_BENCH_DIR") {
            Some(d) => tempfile::Builder::new()
                .prefix("ctxfold-bench-")
                .tempdir_in(d),
            None => tempfile::Builder::new().prefix("ctxfold-bench-").tempdir(),
        }
        .expect("temporary folder for the benchmark conversations");
        Fixtures {
            tmp,
            made: HashMap::new(),
        }
    });
    if let Some(f) = fx.made.get(&(size, usage)) {
        return f.clone();
    }
    let made = match usage {
        Use::Load => {
            let dir = fx.tmp.path().join(format!("load-{size:?}"));
            match size.small_records() {
                Some(n) => generate_small(&dir, n),
                None => generate(&dir, size.bytes()),
            }
        }
        Use::Append => {
            drop(guard);
            let base = fixture(size, Use::Load);
            guard = FIXTURES.lock().unwrap();
            let dir = guard
                .as_ref()
                .unwrap()
                .tmp
                .path()
                .join(format!("append-{}", size.bytes()));
            let started = Instant::now();
            std::fs::create_dir_all(&dir).unwrap();
            let to = dir.join("events.jsonl");
            std::fs::copy(base.dir.join("events.jsonl"), &to).unwrap();
            File::open(&to).unwrap().sync_all().unwrap();
            Fixture {
                dir,
                secs: started.elapsed().as_secs_f64(),
                ..base
            }
        }
    };
    guard
        .as_mut()
        .unwrap()
        .made
        .insert((size, usage), made.clone());
    drop(guard);
    settle(made.bytes);
    made
}

/// Wait after writing `bytes`: on the machine these figures were taken on,
/// every small append ran 2-3x slower for a few seconds after a 1 GiB file
/// was written or copied, whatever the size of the log appended to (kernel
/// background work). One second per 100 MiB written, at most ten.
fn settle(bytes: u64) {
    let secs = (bytes as f64 / (100 << 20) as f64).min(10.0);
    std::thread::sleep(std::time::Duration::from_secs_f64(secs));
}

/// Write a conversation of at least `target` bytes into `dir/events.jsonl`,
/// whole turns, and sync it so that the benchmarks do not pay for its
/// writeback.
fn generate(dir: &Path, target: u64) -> Fixture {
    let started = Instant::now();
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("events.jsonl");
    let mut w = BufWriter::with_capacity(1 << 20, File::create(&path).unwrap());
    let mut g = Gen::new(0x00C7_F01D ^ target);
    let mut bytes = 0u64;
    let mut seq = 0u64;
    let mut turns = 0usize;
    let mut write = |mut r: Record, bytes: &mut u64| {
        r.seq = seq;
        r.ts = ts(seq).into();
        seq += 1;
        let line = r.to_json_line();
        w.write_all(line.as_bytes()).unwrap();
        w.write_all(b"\n").unwrap();
        *bytes += line.len() as u64 + 1;
    };
    let system = Body::System {
        content: g.prose(3000, 6000),
    };
    write(Record::new(0, "", system), &mut bytes);
    while bytes < target {
        let calls = g.pick(&[1, 2, 3, 3, 3, 4, 5]);
        for r in g.turn(calls, None) {
            write(r, &mut bytes);
        }
        turns += 1;
    }
    let file = w.into_inner().unwrap();
    file.sync_all().unwrap();
    Fixture {
        dir: dir.to_owned(),
        bytes,
        records: seq as usize,
        turns,
        secs: started.elapsed().as_secs_f64(),
    }
}

/// Write a conversation of `records` small records into
/// `dir/events.jsonl`: turns of a user message, reasoning, an answer and
/// eight tool steps, each record about 220 bytes of JSON.
fn generate_small(dir: &Path, records: u64) -> Fixture {
    let started = Instant::now();
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("events.jsonl");
    let mut w = BufWriter::with_capacity(1 << 20, File::create(&path).unwrap());
    let mut g = Gen::new(0x5EED_0220 ^ records);
    let (mut bytes, mut seq, mut turns) = (0u64, 0u64, 0usize);
    while seq < records {
        for mut r in g.small_turn() {
            if seq == records {
                break;
            }
            r.seq = seq;
            r.ts = ts(seq).into();
            seq += 1;
            let line = r.to_json_line();
            w.write_all(line.as_bytes()).unwrap();
            w.write_all(b"\n").unwrap();
            bytes += line.len() as u64 + 1;
        }
        turns += 1;
    }
    w.into_inner().unwrap().sync_all().unwrap();
    Fixture {
        dir: dir.to_owned(),
        bytes,
        records: seq as usize,
        turns,
        secs: started.elapsed().as_secs_f64(),
    }
}

/// A timestamp as ctxfold writes them, 1.7 s apart from 2025-03-01.
fn ts(seq: u64) -> String {
    let ms = 1_740_819_600_000 + seq as i64 * 1_700;
    jiff::Timestamp::from_millisecond(ms).unwrap().to_string()
}

/// The turn the append benchmark writes: turn_start, user, reasoning,
/// assistant, three tool calls and their results (a few KB each), final
/// assistant text. Ten records, about 20 KB.
fn typical_turn() -> Vec<Record> {
    let mut g = Gen::new(42);
    g.turn(3, Some([4_000, 6_500, 2_500]))
        .into_iter()
        .enumerate()
        .map(|(i, mut r)| {
            r.ts = ts(i as u64).into();
            r
        })
        .collect()
}

fn jsonl_len(records: &[Record]) -> usize {
    records.iter().map(|r| r.to_json_line().len() + 1).sum()
}

// ---------------------------------------------------------------------------
// Benchmarks

/// Append one turn (10 records, ~20 KB) to a conversation of the given size.
/// Each append locks, reads the last line for the next `seq`, writes and
/// `sync_data`s: the sync dominates.
#[divan::bench(args = SIZES, sample_count = 300, sample_size = 1, max_time = 20)]
fn append_one_turn(bencher: Bencher, size: Size) {
    let fx = fixture(size, Use::Append);
    let log = EventLog::new(&fx.dir);
    let turn = typical_turn();
    bencher
        .counter(BytesCount::new(jsonl_len(&turn)))
        .with_inputs(|| turn.clone())
        .bench_local_values(|t| log.append(t).unwrap());
}

/// The floor under `append_one_turn`: write the same ~20 KB to an open file
/// and `sync_data` it, nothing else.
#[divan::bench(sample_count = 300, sample_size = 1, max_time = 20)]
fn append_floor_write_and_sync(bencher: Bencher) {
    let fx = fixture(Size::Mib10, Use::Load);
    let dir = fx.dir.parent().unwrap().join("floor");
    std::fs::create_dir_all(&dir).unwrap();
    let turn = typical_turn();
    let bytes: Vec<u8> = turn
        .iter()
        .flat_map(|r| {
            let mut l = r.to_json_line().into_bytes();
            l.push(b'\n');
            l
        })
        .collect();
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("events.jsonl"))
        .unwrap();
    bencher
        .counter(BytesCount::new(bytes.len()))
        .bench_local(|| {
            f.write_all(&bytes).unwrap();
            f.sync_data().unwrap();
        });
}

/// Peak heap and wall time of every load, by size, in order, for the report.
static LOAD_MEM: Mutex<Vec<(Size, MemUse, f64)>> = Mutex::new(Vec::new());

/// Load a whole conversation (`EventLog::load`) of the given size. The
/// file is in the page cache (it was just written): this measures parsing,
/// not the disk, every line of it (no snapshot is kept: a first load). The
/// peak heap of each load is recorded for the report.
#[divan::bench(args = SIZES, sample_count = 20, sample_size = 1, max_time = 40)]
fn load(bencher: Bencher, size: Size) {
    let fx = fixture(size, Use::Load);
    let log = EventLog::new(&fx.dir);
    bencher.counter(BytesCount::new(fx.bytes)).bench_local(|| {
        let start = mem_start();
        let clock = Instant::now();
        let loaded = log.load_keeping_snapshots_from(u64::MAX).unwrap();
        let secs = clock.elapsed().as_secs_f64();
        let used = mem_end(&start);
        assert_eq!(loaded.records.len(), fx.records);
        LOAD_MEM.lock().unwrap().push((size, used, secs));
        loaded
    });
}

/// Load a whole conversation through its snapshot (`events.snapshot`,
/// written by a first load before the samples, whatever the size): what
/// every load after a first one costs, until the log grows by 32 MiB.
#[divan::bench(args = SIZES, sample_count = 20, sample_size = 1, max_time = 40)]
fn load_through_snapshot(bencher: Bencher, size: Size) {
    let fx = fixture(size, Use::Load);
    let log = EventLog::new(&fx.dir);
    log.load_keeping_snapshots_from(0).unwrap();
    bencher.counter(BytesCount::new(fx.bytes)).bench_local(|| {
        let loaded = log.load_keeping_snapshots_from(0).unwrap();
        assert_eq!(loaded.records.len(), fx.records);
        assert!(loaded.snapshot.is_some(), "loaded through the snapshot");
        loaded
    });
    let _ = std::fs::remove_file(fx.dir.join(ctxfold_store::event_log::SNAPSHOT_FILE));
}

/// Load a conversation of small records: the per-record cost, where the
/// 1.7 KB records of `load` hide it. Recorded for the report as `load`'s.
#[divan::bench(args = SMALL, sample_count = 10, sample_size = 1, max_time = 60)]
fn load_small(bencher: Bencher, size: Size) {
    load(bencher, size);
}

// ---------------------------------------------------------------------------
// Report

fn print_report() {
    let fixtures = FIXTURES.lock().unwrap();
    let Some(fx) = fixtures.as_ref() else { return };
    let turn = typical_turn();
    println!();
    println!(
        "appended turn: {} records, {} bytes of JSONL",
        turn.len(),
        jsonl_len(&turn)
    );
    println!("conversations in {}:", fx.tmp.path().display());
    let mut made: Vec<_> = fx.made.iter().collect();
    made.sort_by_key(|((s, u), _)| (*s, *u == Use::Append));
    for ((size, usage), f) in made {
        match usage {
            Use::Load => println!(
                "  {size:>7}: {} bytes, {} records, {} turns ({} bytes/record), generated in {:.1} s",
                f.bytes,
                f.records,
                f.turns,
                f.bytes / f.records as u64,
                f.secs
            ),
            Use::Append => println!("  {size:>7}: copy for appends made in {:.1} s", f.secs),
        }
    }
    let mem = LOAD_MEM.lock().unwrap();
    if mem.is_empty() {
        return;
    }
    println!("peak heap during load (max over samples, above the heap before the load):");
    for size in SIZES.into_iter().chain(SMALL) {
        let uses: Vec<MemUse> = mem
            .iter()
            .filter(|(s, ..)| *s == size)
            .map(|(_, m, _)| *m)
            .collect();
        let Some(f) = fx.made.get(&(size, Use::Load)) else {
            continue;
        };
        let Some(max) = uses.iter().max_by_key(|m| m.peak) else {
            continue;
        };
        let mib = |b: usize| b as f64 / (1 << 20) as f64;
        println!(
            "  {size:>7}: file {:.1} MiB, peak {:.1} MiB = {:.2}x file, retained {:.1} MiB = {:.2}x file, {} allocations and reallocations ({:.1}/record), {} samples",
            mib(f.bytes as usize),
            mib(max.peak),
            max.peak as f64 / f.bytes as f64,
            mib(max.retained),
            max.retained as f64 / f.bytes as f64,
            max.allocs,
            max.allocs as f64 / f.records as f64,
            uses.len()
        );
    }
    // The first load of a size is the first time the process needs that
    // much heap: it pays for getting the memory from the system, as every
    // load in a fresh `ctxfold` process does.
    println!("load time, first sample (fresh heap) against the median of the others:");
    for size in SIZES.into_iter().chain(SMALL) {
        let mut secs: Vec<f64> = mem
            .iter()
            .filter(|(s, ..)| *s == size)
            .map(|(.., t)| *t)
            .collect();
        if secs.len() < 2 {
            continue;
        }
        let first = secs.remove(0);
        secs.sort_by(f64::total_cmp);
        let median = secs[secs.len() / 2];
        let per_record = fx
            .made
            .get(&(size, Use::Load))
            .map_or(0.0, |f| median * 1e6 / f.records as f64);
        println!(
            "  {size:>7}: first {first:.3} s, others median {median:.3} s = {per_record:.2} µs/record ({} samples)",
            secs.len()
        );
    }
}
