//! PostgreSQL store benchmarks: appending one turn, loading a 100,000-event
//! conversation, and appends per second with 4 writers on 4 conversations
//! and on 1. Figures and targets: `docs/PERFORMANCE.md` (Storage).
//!
//! ```text
//! CTXFOLD_PG_DURABLE=1 scripts/postgres start /tmp/ctxfold-bench-pg
//! CTXFOLD_BENCH_PG_URL=$(scripts/postgres url /tmp/ctxfold-bench-pg) \
//!     cargo bench -p ctxfold-store --bench postgres
//! scripts/postgres stop /tmp/ctxfold-bench-pg
//! ```
//!
//! `CTXFOLD_BENCH_PG_URL` (else `CTXFOLD_TEST_PG_URL`) names a server whose
//! role may create databases; without either the benchmarks say so and do
//! nothing. The run creates a database of its own, `ctxfold_bench_<pid>`,
//! and drops it at the end. The writers' figures are printed after
//! divan's table.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::sync::{Arc, Barrier, Mutex, OnceLock};
use std::time::Instant;

use ctxfold_core::{Body, Object, Record};
use ctxfold_store::{ConversationMeta, PgStore, Store};
use divan::Bencher;
use postgres::NoTls;
use serde_json::json;

fn main() {
    if admin_url().is_none() {
        eprintln!(
            "postgres benchmarks skipped: set CTXFOLD_BENCH_PG_URL (or CTXFOLD_TEST_PG_URL); see the top of benches/postgres.rs"
        );
        return;
    }
    divan::main();
    writers_report();
    if let Some(db) = DB.get() {
        db.drop_now();
    }
}

fn admin_url() -> Option<String> {
    ["CTXFOLD_BENCH_PG_URL", "CTXFOLD_TEST_PG_URL"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
}

/// The benchmark's own database.
struct BenchDb {
    admin: String,
    name: String,
    url: String,
}

static DB: OnceLock<BenchDb> = OnceLock::new();

fn db() -> &'static BenchDb {
    DB.get_or_init(|| {
        let admin = admin_url().expect("checked in main");
        let name = format!("ctxfold_bench_{}", std::process::id());
        let mut c = postgres::Client::connect(&admin, NoTls).expect("the benchmark server");
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        let url = with_database(&admin, &name);
        BenchDb { admin, name, url }
    })
}

impl BenchDb {
    fn drop_now(&self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let rest = base.find("://").expect("a URL") + 3;
    let end = base[rest..].find('/').map_or(base.len(), |i| rest + i);
    format!("{}/{db}{query}", &base[..end])
}

fn store() -> PgStore {
    PgStore::connect(&db().url).unwrap()
}

fn create(store: &PgStore, id: &str, records: Vec<Record>) {
    let meta = ConversationMeta {
        id: id.to_owned(),
        title: None,
        created_at: "2026-01-02T03:04:05Z".into(),
        last_used_at: "2026-01-02T03:04:05Z".into(),
        imported_from: None,
        extras: Object::new(),
    };
    Store::create(store, &meta, records).unwrap();
}

/// Text of `n` bytes, varied so nothing compresses to nothing.
fn text(seed: usize, n: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "parser",
        "returns",
        "an",
        "error",
        "when",
        "config",
        "file",
        "is",
        "missing",
        "we",
        "should",
        "check",
        "line",
        "42",
        "of",
        "src/main.rs",
        "before",
        "retrying",
    ];
    let mut s = String::with_capacity(n + 16);
    let mut i = seed;
    while s.len() < n {
        s.push_str(WORDS[i % WORDS.len()]);
        s.push(' ');
        i = i
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407)
            >> 7;
    }
    s.truncate(n);
    s
}

/// One agent turn as the file store's benchmark shapes it: 11 records,
/// about 21 KB (a user message, signed reasoning, three tool calls and
/// results of 4,000, 6,500 and 2,500 bytes, answers with token usage).
fn typical_turn(seed: usize) -> Vec<Record> {
    let ts = "2026-01-02T03:04:05.123456Z";
    let mut out = vec![
        Record::new(0, ts, Body::TurnStart),
        Record::new(
            0,
            ts,
            Body::User {
                content: text(seed, 300),
                author: None,
            },
        ),
    ];
    let mut reasoning = Record::new(
        0,
        ts,
        Body::Reasoning {
            content: text(seed + 1, 1500),
        },
    );
    reasoning.metadata = json!({"signature": text(seed + 2, 300)})
        .as_object()
        .cloned()
        .map(Box::new);
    out.push(reasoning);
    out.push(Record::new(
        0,
        ts,
        Body::Assistant {
            content: text(seed + 3, 300),
        },
    ));
    for (k, size) in [4_000, 6_500, 2_500].into_iter().enumerate() {
        let id = format!("call_{seed}_{k}");
        out.push(Record::new(
            0,
            ts,
            Body::ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                arguments: json!({"path": format!("src/m{k}.rs"), "lines": [1, 200]}).into(),
            },
        ));
        out.push(Record::new(
            0,
            ts,
            Body::ToolResult {
                id,
                content: text(seed + 10 + k, size),
                is_error: false,
            },
        ));
    }
    let mut last = Record::new(
        0,
        ts,
        Body::Assistant {
            content: text(seed + 4, 800),
        },
    );
    last.metadata = json!({"usage": {"input_tokens": 51234, "output_tokens": 612}})
        .as_object()
        .cloned()
        .map(Box::new);
    out.push(last);
    out
}

/// One turn appended to a conversation that grows through the samples:
/// one transaction, the row lock, the seq counter, 11 rows.
#[divan::bench(sample_count = 300, sample_size = 1, max_time = 30)]
fn append_one_turn(bencher: Bencher) {
    let store = store();
    create(&store, "append", Vec::new());
    let turn = typical_turn(1);
    bencher
        .with_inputs(|| turn.clone())
        .bench_local_values(|t| Store::append(&store, "append", t).unwrap());
}

/// Loading a 100,000-event conversation whole (9,091 typical turns, about
/// 190 MB of record text).
#[divan::bench(sample_count = 10, sample_size = 1, max_time = 60)]
fn load_100k_events(bencher: Bencher) {
    let store = store();
    let mut records = Vec::with_capacity(100_011);
    let mut seed = 0;
    while records.len() < 100_000 {
        records.extend(typical_turn(seed));
        seed += 1;
    }
    records.truncate(100_000);
    create(&store, "load", records);
    bencher.bench_local(|| {
        let loaded = Store::load(&store, "load").unwrap();
        assert_eq!(loaded.records.len(), 100_000);
        loaded
    });
}

/// Appends per second of `writers` threads (each with a store, and so a
/// connection pool, of its own, as separate processes would have), each
/// appending `batches` turns to its own conversation or all to one.
fn writers(writers: usize, batches: usize, shared: bool) -> f64 {
    let ids: Vec<String> = (0..writers)
        .map(|w| {
            if shared {
                "w-shared".to_owned()
            } else {
                format!("w-{w}")
            }
        })
        .collect();
    let setup = store();
    for id in &ids {
        if Store::read_meta(&setup, id).is_err() {
            create(&setup, id, Vec::new());
        }
    }
    let barrier = Arc::new(Barrier::new(writers + 1));
    let handles: Vec<_> = ids
        .into_iter()
        .enumerate()
        .map(|(w, id)| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let store = store();
                let turn = typical_turn(w);
                barrier.wait();
                for _ in 0..batches {
                    Store::append(&store, &id, turn.clone()).unwrap();
                }
            })
        })
        .collect();
    barrier.wait();
    let clock = Instant::now();
    for h in handles {
        h.join().unwrap();
    }
    (writers * batches) as f64 / clock.elapsed().as_secs_f64()
}

static WRITERS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn writers_report() {
    let mut lines = WRITERS.lock().unwrap();
    for (label, n, shared) in [
        ("1 writer, 1 conversation", 1, false),
        ("4 writers, 4 conversations", 4, false),
        ("4 writers, 1 conversation", 4, true),
    ] {
        // Three runs of 250 turns a writer; the median.
        let mut runs: Vec<f64> = (0..3).map(|_| writers(n, 250, shared)).collect();
        runs.sort_by(f64::total_cmp);
        lines.push(format!(
            "{label:<28} {:>8.0} turns/s appended (median of 3 runs: {:.0}, {:.0}, {:.0})",
            runs[1], runs[0], runs[1], runs[2]
        ));
    }
    println!("\nappends per second (one turn of 11 records, about 21 KB, a batch):");
    for l in lines.iter() {
        println!("  {l}");
    }
}
