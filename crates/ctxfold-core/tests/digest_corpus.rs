//! The offline digest over the real JP corpus (`shared/corpus/jp`, or the
//! folder named by `CTXFOLD_CORPUS`), judged by the retention report
//! (`ctxfold_core::kept`): over every conversation without its last turn,
//! over the range the built-in rule folds (keep the first turn and the last
//! three) and over whatever else its plan folds (the old steps of long
//! turns), the digest must keep at least 98% of the files the tools
//! acted on, 90% of the diagnostics, every user request of up to 2,000
//! characters word for word, and be at most 5% of the range's raw size in
//! tokens (corpus totals). It must be deterministic: the same bytes twice.
//!
//! `cargo test -p ctxfold-core --test digest_corpus -- --nocapture` prints
//! the table per conversation; set `CTXFOLD_DIGEST_PRINT=1` to print every
//! digest, and `CTXFOLD_DIGEST_LOST=1` to print what each one lost.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod jp;

use std::path::PathBuf;
use std::time::Instant;

use jp::{corpus_dir, load};

use ctxfold_core::compaction::Provenance;
use ctxfold_core::digest::Digest;
use ctxfold_core::estimate::{raw_tokens, text_tokens};
use ctxfold_core::kept::{Kept, facts, kept};
use ctxfold_core::planner::{PlanContext, Rule, plan};
use ctxfold_core::summarizer::{Summarizer, SummaryInput};
use ctxfold_core::{Log, Record};
use serde_json::Value;

/// The targets, over the corpus totals.
const FILES_MIN: f64 = 0.98;
const DIAGNOSTICS_MIN: f64 = 0.90;
const REQUESTS_MIN: f64 = 1.0;
const SIZE_MAX: f64 = 0.05;

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One digested range.
struct Row {
    name: String,
    what: &'static str,
    /// Raw tokens of the range.
    raw: usize,
    /// Tokens of the digest.
    digest: usize,
    kept: Kept,
    /// The form (`full`, `terse`, `minimal`).
    form: &'static str,
    micros: u128,
}

fn digest_range(name: &str, what: &'static str, log: &Log, lo: usize, hi: usize) -> Row {
    let input = SummaryInput {
        log,
        range: (lo, hi),
        instructions: None,
    };
    let start = Instant::now();
    let first = Digest.summarize(input).expect("digest");
    let micros = start.elapsed().as_micros();
    let second = Digest.summarize(input).expect("digest");
    let text = first.text;
    if std::env::var_os("CTXFOLD_DIGEST_PRINT").is_some() {
        println!("===== {name} ({what}) =====\n{text}");
    }
    assert!(!text.trim().is_empty(), "{name} {what}: empty digest");
    assert_eq!(
        text.as_bytes(),
        second.text.as_bytes(),
        "{name} {what}: not deterministic"
    );
    assert_eq!(first.provenance, second.provenance);
    let form = match &first.provenance {
        Provenance::Derived {
            method: Some(m), ..
        } if m == "terse" => "terse",
        Provenance::Derived {
            method: Some(m), ..
        } if m == "minimal" => "minimal",
        Provenance::Derived { method: None, .. } => "full",
        other => panic!("{name} {what}: provenance {other:?}"),
    };
    let records: &[Record] = &log.records()[lo..=hi];
    let k = kept(&facts(log, lo, hi), &collapse(&text));
    if std::env::var_os("CTXFOLD_DIGEST_LOST").is_some() {
        for (kind, t) in [
            ("file", &k.files),
            ("diagnostic", &k.diagnostics),
            ("request", &k.requests),
        ] {
            for l in &t.lost {
                let l: String = l.chars().take(160).collect();
                println!("LOST {name} ({what}) {kind}: {l}");
            }
        }
    }
    Row {
        name: name.to_owned(),
        what,
        raw: raw_tokens(records),
        digest: text_tokens(&text),
        kept: k,
        form,
        micros,
    }
}

fn conversations() -> Vec<PathBuf> {
    let dir = corpus_dir();
    let mut convs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.join("events.json").is_file())
        .collect();
    convs.sort();
    assert!(!convs.is_empty(), "no conversation in {}", dir.display());
    convs
}

#[test]
fn digest_over_the_real_corpus() {
    let dir = corpus_dir();
    let stats: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("STATS.json"))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join("STATS.json").display())),
    )
    .expect("STATS.json");

    // Judged: without the last turn, the built-in rule's range, the rest of
    // its plan.
    let mut judged = Vec::new();
    // Also digested, not judged: the whole conversation, every turn.
    let mut whole = Vec::new();
    for conv in &conversations() {
        let name = conv.file_name().unwrap().to_string_lossy().into_owned();
        let log = load(conv);
        // The parser agrees with the corpus' own counts.
        if let Some(expected) = stats.get(&name) {
            assert_eq!(
                &serde_json::to_value(log.counts()).unwrap(),
                expected,
                "{name}: counts"
            );
        }
        let visible = |lo: usize, hi: usize| {
            log.records()[lo..=hi]
                .iter()
                .any(|r| r.body.is_model_visible())
        };
        whole.push(digest_range(&name, "whole", &log, 0, log.len() - 1));
        let turns = log.turn_count();
        if turns >= 2 {
            let cut = log.turn_range(turns as u32 - 1).unwrap().start;
            if cut > 0 && visible(0, cut - 1) {
                judged.push(digest_range(&name, "all but last turn", &log, 0, cut - 1));
            }
        }
        // The built-in rule keeps the first turn and the last three.
        let mut builtin = None;
        if turns >= 5 {
            let lo = log.turn_range(1).unwrap().start;
            let hi = log.turn_range(turns as u32 - 4).unwrap().end - 1;
            if visible(lo, hi) {
                builtin = Some((lo, hi));
                judged.push(digest_range(&name, "built-in rule", &log, lo, hi));
            }
        }
        // What else the built-in rule's plan folds (the old steps of long
        // turns it keeps).
        let planned = plan(&log, &[Rule::builtin()], &PlanContext::default()).expect("plan");
        for p in planned.planned.iter().filter(|p| Some(p.range) != builtin) {
            judged.push(digest_range(
                &name,
                "built-in steps",
                &log,
                p.range.0,
                p.range.1,
            ));
        }
        // Every single turn digests (or is refused for holding nothing the
        // model sees), the same way twice.
        for t in 0..turns as u32 {
            let r = log.turn_range(t).unwrap();
            let input = SummaryInput {
                log: &log,
                range: (r.start, r.end - 1),
                instructions: None,
            };
            match Digest.summarize(input) {
                Ok(a) => {
                    assert!(visible(r.start, r.end - 1));
                    assert_eq!(a, Digest.summarize(input).unwrap(), "{name} turn {t}");
                }
                Err(e) => assert!(!visible(r.start, r.end - 1), "{name} turn {t}: {e}"),
            }
        }
    }

    println!("judged (targets: corpus totals)");
    let total = print_rows(&judged);
    println!("\nnot judged: whole conversations");
    print_rows(&whole);

    let ratio = |kept: usize, all: usize| {
        if all == 0 {
            1.0
        } else {
            kept as f64 / all as f64
        }
    };
    let files = ratio(total.kept.files.kept, total.kept.files.total);
    let diags = ratio(total.kept.diagnostics.kept, total.kept.diagnostics.total);
    let reqs = ratio(total.kept.requests.kept, total.kept.requests.total);
    let size = total.digest as f64 / total.raw as f64;
    assert!(files >= FILES_MIN, "files acted on: {files:.3} kept");
    assert!(diags >= DIAGNOSTICS_MIN, "diagnostics: {diags:.3} kept");
    assert!(reqs >= REQUESTS_MIN, "user requests: {reqs:.3} kept");
    assert!(size <= SIZE_MAX, "size: {size:.3} of the raw tokens");
    for r in judged.iter().chain(&whole) {
        // Never larger than what it replaces.
        assert!(
            r.digest < r.raw,
            "{} {}: {} tokens for {}",
            r.name,
            r.what,
            r.digest,
            r.raw
        );
    }
}

/// Print the table, a total per kind of range and the total of all;
/// that last is returned.
fn print_rows(rows: &[Row]) -> Row {
    println!(
        "{:<58} {:<17} {:>8} {:>7} {:>6} {:>9} {:>9} {:>7} {:>7} {:>8}",
        "conversation",
        "range",
        "raw tok",
        "dig tok",
        "size",
        "files",
        "diags",
        "reqs",
        "form",
        "µs"
    );
    let print = |r: &Row| {
        let frac = |t: &ctxfold_core::kept::Tally| format!("{}/{}", t.kept, t.total);
        let name: String = r.name.chars().take(58).collect();
        println!(
            "{:<58} {:<17} {:>8} {:>7} {:>5.1}% {:>9} {:>9} {:>7} {:>7} {:>8}",
            name,
            r.what,
            r.raw,
            r.digest,
            100.0 * r.digest as f64 / r.raw.max(1) as f64,
            frac(&r.kept.files),
            frac(&r.kept.diagnostics),
            frac(&r.kept.requests),
            r.form,
            r.micros
        );
    };
    rows.iter().for_each(print);
    let mut kinds: Vec<&'static str> = Vec::new();
    for r in rows {
        if !kinds.contains(&r.what) {
            kinds.push(r.what);
        }
    }
    if kinds.len() > 1 {
        for what in kinds {
            let of: Vec<&Row> = rows.iter().filter(|r| r.what == what).collect();
            print(&total_of("total", what, &of));
        }
    }
    let all = total_of("TOTAL", "", &rows.iter().collect::<Vec<_>>());
    print(&all);
    all
}

fn total_of(name: &str, what: &'static str, rows: &[&Row]) -> Row {
    let mut total = Row {
        name: name.into(),
        what,
        raw: 0,
        digest: 0,
        kept: Kept::default(),
        form: "",
        micros: 0,
    };
    for r in rows {
        total.raw += r.raw;
        total.digest += r.digest;
        total.micros += r.micros;
        for (t, k) in [
            (&mut total.kept.files, &r.kept.files),
            (&mut total.kept.diagnostics, &r.kept.diagnostics),
            (&mut total.kept.requests, &r.kept.requests),
        ] {
            t.total += k.total;
            t.kept += k.kept;
        }
    }
    total
}
