//! Projection speed: a generated log of 1,000,000 events with 10,000
//! compactions of mixed kinds over overlapping ranges, and ten times both.
//!
//! `cargo bench -p ctxfold-core --bench projection`

use std::collections::BTreeMap;
use std::sync::OnceLock;

use ctxfold_core::compaction::{
    Compaction, Provenance, ReasoningPolicy, Source, Summary, ToolOverride, ToolPolicy,
};
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
                        arguments: json!({"path": "src/parser.rs"}),
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

/// Ten times the events and compactions (target: at most 12× the above).
#[divan::bench(sample_count = 5)]
fn project_10m_events_100k_compactions(bencher: divan::Bencher) {
    let log = log_10m();
    bencher.bench(|| project(divan::black_box(log)).items.len());
}
