//! Projection speed: a generated log of 1,000,000 events with 10,000
//! compactions of mixed kinds over overlapping ranges, and ten times both;
//! and a log of about 200,000 tokens whose old tool results are stripped,
//! estimated and materialized again and again (what a proxy does on every
//! request: the diagnostics cache, docs/PERFORMANCE.md).
//!
//! `cargo bench -p ctxfold-core --bench projection`
//! (`-- stripped` for the second part only: it does not build the big logs)

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use ctxfold_core::compaction::{
    Compaction, Provenance, ReasoningPolicy, Source, Summary, ToolOverride, ToolPolicy,
};
use ctxfold_core::estimate::{raw_tokens, view_tokens};
use ctxfold_core::materialize::materialize;
use ctxfold_core::projection::project;
use ctxfold_core::{Body, Log, Record};
use serde_json::json;

fn main() {
    divan::main();
}

/// A small deterministic generator (xorshift64*), so every run projects the
/// same log.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const TOOLS: [&str; 5] = ["read_file", "grep", "edit_file", "run_tests", "web_search"];

/// About `events` conversation events in turns of ~20, with `compactions`
/// compaction records appended along the way, each over a random range of
/// past turns (1 to 60 turns long, so ranges overlap and nest).
fn generate(events: usize, compactions: usize) -> Log {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut recs: Vec<Record> = Vec::with_capacity(events + compactions);
    let mut turn_first_seq: Vec<u64> = Vec::new();
    let every = events / compactions.max(1);
    let mut next_compaction = every;
    let mut call = 0u64;
    let push = |recs: &mut Vec<Record>, body: Body| {
        let seq = recs.len() as u64;
        recs.push(Record::new(seq, "2026-11-30T00:00:00Z", body));
    };
    let mut made = 0;
    while recs.len() < events + made {
        turn_first_seq.push(recs.len() as u64);
        push(&mut recs, Body::TurnStart);
        push(
            &mut recs,
            Body::User {
                content: "Please look at the failing test and fix it.".into(),
                author: None,
            },
        );
        for _ in 0..1 + rng.below(4) {
            if rng.below(2) == 0 {
                push(
                    &mut recs,
                    Body::Reasoning {
                        content: "The failure points at the parser; read it first.".into(),
                    },
                );
            }
            push(
                &mut recs,
                Body::Assistant {
                    content: "Let me check.".into(),
                },
            );
            let n = 1 + rng.below(3);
            let ids: Vec<String> = (0..n)
                .map(|_| {
                    call += 1;
                    format!("call_{call}")
                })
                .collect();
            for id in &ids {
                let tool = TOOLS[rng.below(TOOLS.len() as u64) as usize];
                push(
                    &mut recs,
                    Body::ToolCall {
                        id: id.clone(),
                        name: tool.into(),
                        arguments: json!({"path": "src/parser.rs"}).into(),
                    },
                );
            }
            for id in &ids {
                push(
                    &mut recs,
                    Body::ToolResult {
                        id: id.clone(),
                        content: "fn parse(input: &str) -> Result<Ast, Error> { ... }".into(),
                        is_error: rng.below(10) == 0,
                    },
                );
            }
        }
        while made < compactions && recs.len() >= next_compaction {
            next_compaction += every;
            let turns = turn_first_seq.len() as u64;
            let len = 1 + rng.below(60).min(turns - 1);
            let to = turns - 1 - rng.below(turns - len + 1).min(turns - 1);
            let from = to + 1 - len;
            let mut c = Compaction::new(from as u32, to as u32, Source::User);
            c.from_seq = Some(turn_first_seq[from as usize]);
            let end = turn_first_seq.get(to as usize + 1).map(|s| s - 1);
            c.to_seq = Some(end.unwrap_or(recs.len() as u64 - 1));
            match rng.below(6) {
                0 => {
                    c.summary = Some(Summary {
                        text: "Earlier we fixed the parser and its tests.".into(),
                        provenance: Provenance::Supplied {
                            author: Source::Assistant,
                        },
                    })
                }
                1 => c.reasoning = Some(ReasoningPolicy::Strip),
                2 => c.tool_calls = Some(ToolPolicy::Strip),
                3 => {
                    c.tool_calls = Some(ToolPolicy::StripResponses);
                    c.tool_overrides = BTreeMap::from([
                        ("grep".to_owned(), ToolOverride::Keep),
                        ("edit_file".to_owned(), ToolOverride::StripRequests),
                    ]);
                }
                4 => c.tool_calls = Some(ToolPolicy::Omit),
                _ => {
                    c.reasoning = Some(ReasoningPolicy::Strip);
                    c.tool_calls = Some(ToolPolicy::Strip);
                }
            }
            push(&mut recs, Body::Compaction(Box::new(c)));
            made += 1;
        }
    }
    Log::from_records(recs)
}

fn log_1m() -> &'static Log {
    static LOG: OnceLock<Log> = OnceLock::new();
    LOG.get_or_init(|| generate(1_000_000, 10_000))
}

fn log_10m() -> &'static Log {
    static LOG: OnceLock<Log> = OnceLock::new();
    LOG.get_or_init(|| generate(10_000_000, 100_000))
}

/// 1,000,000 events, 10,000 compactions (target: under 250 ms).
#[divan::bench(sample_count = 20)]
fn project_1m_events_10k_compactions(bencher: divan::Bencher) {
    let log = log_1m();
    bencher.bench(|| project(divan::black_box(log)).items.len());
}

/// A session of 1,000,000 events whose 10,000 compactions each strip the
/// fifteen turns before the last three, every ten turns: each range
/// overlaps the one before and all are in force (issue 48's shape; the
/// one above places its ranges at random).
fn overlapping(events: usize) -> &'static Log {
    static LOGS: OnceLock<std::sync::Mutex<BTreeMap<usize, &'static Log>>> = OnceLock::new();
    let mut logs = LOGS.get_or_init(Default::default).lock().unwrap();
    logs.entry(events).or_insert_with(|| {
        Box::leak(Box::new(ctxfold_testkit::session::generate_overlapping(
            events, 10,
        )))
    })
}

/// The projection of the overlapping shape, 1,000,000 events.
#[divan::bench(sample_count = 10)]
fn project_1m_events_10k_overlapping(bencher: divan::Bencher) {
    let log = overlapping(1_000_000);
    bencher.bench(|| project(divan::black_box(log)).items.len());
}

/// What `c show` computes of the overlapping shape besides loading: every
/// compaction's standing and retention report (`kept::listing`), at
/// 100,000 and 1,000,000 events (linear: about ten times).
#[divan::bench(args = [100_000, 1_000_000], sample_count = 5)]
fn listing_overlapping(bencher: divan::Bencher, events: usize) {
    let log = overlapping(events);
    bencher.bench(|| ctxfold_core::kept::listing(divan::black_box(log), false).len());
}

/// Ten times the events and compactions (target: at most 12× the above).
#[divan::bench(sample_count = 5)]
fn project_10m_events_100k_compactions(bencher: divan::Bencher) {
    let log = log_10m();
    bencher.bench(|| project(divan::black_box(log)).items.len());
}

/// One large tool output of about `chars` characters, of one of five
/// shapes an agent's tools print: source code that names errors, a build
/// with errors and warnings, a test run with a failure, grep hits, a log.
/// All but the code and the grep hits hold diagnostics.
fn tool_output(rng: &mut Rng, k: u64, chars: usize) -> (String, bool) {
    let mut out = String::with_capacity(chars + 200);
    let shape = k % 5;
    let mut n = 0u64;
    while out.len() < chars {
        n += 1;
        let line = match shape {
            0 => match rng.below(6) {
                0 => format!("    fn parse_{n}(input: &str) -> Result<Ast, Error> {{\n"),
                1 => "        // error: the caller handles this one\n".to_owned(),
                2 => format!("        return Err(Error::Unexpected({n}));\n"),
                _ => format!("        let token_{n} = lexer.next_token()?; // advance\n"),
            },
            1 => match rng.below(8) {
                0 => format!(
                    "error[E0308]: mismatched types in call {n}\n  --> src/parser_{k}.rs:{n}:17\n"
                ),
                1 => format!("warning: unused variable: `tmp_{n}`\n --> src/lexer.rs:{n}:9\n"),
                _ => format!("   Compiling dep-{n} v0.{k}.{n}\n"),
            },
            2 => match rng.below(20) {
                0 => format!(
                    "test parser::tests::case_{n} ... FAILED\nthread 'parser::tests::case_{n}' panicked at src/parser.rs:{n}:5:\nassertion failed: ok\n"
                ),
                _ => format!("test parser::tests::case_{n} ... ok\n"),
            },
            3 => format!("src/module_{k}/file_{n}.rs:{n}:    error: String,\n"),
            _ => match rng.below(10) {
                0 => format!(
                    "2026-11-30T00:00:{n:02}Z ERROR worker {n}: connection refused, exit code 1\n"
                ),
                _ => format!("2026-11-30T00:00:{n:02}Z  INFO worker {n}: request served in 3 ms\n"),
            },
        };
        out.push_str(&line);
    }
    if shape == 2 {
        out.push_str("test result: FAILED. 40 passed; 1 failed\n");
    }
    (out, shape == 1 || shape == 2)
}

/// About 200,000 tokens: 60 turns of a request and five steps (assistant
/// text, a tool call, a tool result of about 2,500 characters), so 300
/// large tool results; then one compaction that strips the tool results
/// of the first 50 turns (250 of them), as automatic compaction does.
fn stripped_records() -> &'static [Record] {
    static RECORDS: OnceLock<Vec<Record>> = OnceLock::new();
    RECORDS.get_or_init(|| {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut recs: Vec<Record> = Vec::new();
        let push = |recs: &mut Vec<Record>, body: Body| {
            let seq = recs.len() as u64;
            recs.push(Record::new(seq, "2026-11-30T00:00:00Z", body));
        };
        let mut k = 0u64;
        for turn in 0..60 {
            push(&mut recs, Body::TurnStart);
            push(
                &mut recs,
                Body::User {
                    content: format!("Turn {turn}: the parser tests fail again; look at the build and fix what it reports, then run the tests."),
                    author: None,
                },
            );
            for _ in 0..5 {
                k += 1;
                push(
                    &mut recs,
                    Body::Assistant {
                        content: "I will run the build and read what it says before changing anything, then look at the failing test and the code it exercises. ".repeat(2),
                    },
                );
                let tool = TOOLS[(k % TOOLS.len() as u64) as usize];
                push(
                    &mut recs,
                    Body::ToolCall {
                        id: format!("call_{k}"),
                        name: tool.into(),
                        arguments: json!({"path": format!("src/parser_{k}.rs")}).into(),
                    },
                );
                let (content, is_error) = tool_output(&mut rng, k, 2_500);
                push(
                    &mut recs,
                    Body::ToolResult {
                        id: format!("call_{k}"),
                        content,
                        is_error,
                    },
                );
            }
        }
        let log = Log::from_records(recs.clone());
        let mut c = Compaction::new(0, 49, Source::Auto);
        c.tool_calls = Some(ToolPolicy::StripResponses);
        let end = log.turn_range(49).map_or(0, |r| r.end) as u64;
        c.from_seq = Some(0);
        c.to_seq = Some(end - 1);
        push(&mut recs, Body::Compaction(Box::new(c)));
        recs
    })
}

/// The stripped log, loaded once: every call after the first finds what
/// earlier ones computed.
fn stripped_log() -> &'static Log {
    static LOG: OnceLock<Log> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Log::from_records(stripped_records().to_vec());
        assert!(
            (190_000..230_000).contains(&raw_tokens(log.records())),
            "about 200k tokens: {}",
            raw_tokens(log.records())
        );
        log
    })
}

/// Project and estimate the view of the stripped log, again and again on
/// the same loaded log (the proxy, on every request).
#[divan::bench(sample_count = 100)]
fn stripped_200k_project_and_estimate(bencher: divan::Bencher) {
    let log = stripped_log();
    bencher.bench(|| view_tokens(&project(divan::black_box(log))));
}

/// Project and materialize it (the compacted transcript, a request body).
#[divan::bench(sample_count = 100)]
fn stripped_200k_project_and_materialize(bencher: divan::Bencher) {
    let log = stripped_log();
    bencher.bench(|| materialize(log, &project(divan::black_box(log))).len());
}

/// The first estimate on a freshly loaded log (nothing found yet): what
/// every estimate cost before the cache.
#[divan::bench(sample_count = 30)]
fn stripped_200k_project_and_estimate_first(bencher: divan::Bencher) {
    let records = stripped_records();
    bencher
        .with_inputs(|| Log::from_records(records.to_vec()))
        .bench_local_values(|log| {
            let n = view_tokens(&project(divan::black_box(&log)));
            (n, log)
        });
}
