//! Token counts on the real JP corpus, the count cache, the baseline rule
//! and the context-window table.
//!
//! `cargo test -p ctxfold-tokens -- --nocapture` prints the heuristic's
//! error over the corpus.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use ctxfold_core::compaction::{Compaction, Source, ToolPolicy};
use ctxfold_core::projection::{Item, project};
use ctxfold_core::{Body, Kind, Log, Record};
use ctxfold_tokens::{
    BLOCK_OVERHEAD, Bpe, CountCache, Heuristic, MESSAGE_OVERHEAD, TokenEstimator,
    baseline_is_current, context_window, for_model, message_count,
};
use serde_json::json;

// ---------------------------------------------------------------- (a) exact

#[test]
fn bpe_counts_equal_tiktoken_on_every_corpus_text() {
    let o200k = Bpe::o200k_base();
    let cl100k = Bpe::cl100k_base();
    let ref_o200k = tiktoken_rs::o200k_base_singleton();
    let ref_cl100k = tiktoken_rs::cl100k_base_singleton();
    let (mut texts, mut tokens_o, mut tokens_c) = (0usize, 0usize, 0usize);
    for conv in common::conversations() {
        for (i, text) in conv.texts.iter().enumerate() {
            let (ours, theirs) = (
                o200k.count_text(text),
                ref_o200k.encode_ordinary(text).len(),
            );
            assert_eq!(ours, theirs, "o200k_base, {} text {i}", conv.name);
            let (ours_c, theirs_c) = (
                cl100k.count_text(text),
                ref_cl100k.encode_ordinary(text).len(),
            );
            assert_eq!(ours_c, theirs_c, "cl100k_base, {} text {i}", conv.name);
            texts += 1;
            tokens_o += ours;
            tokens_c += ours_c;
        }
    }
    assert!(texts > 1000, "the corpus holds {texts} texts");
    println!(
        "exact counts equal tiktoken-rs on {texts} texts: {tokens_o} o200k_base tokens, {tokens_c} cl100k_base tokens"
    );
}

// ------------------------------------------------------------ (b) heuristic

fn text_of(r: &Record) -> Option<String> {
    match &r.body {
        Body::User { content, .. }
        | Body::Assistant { content }
        | Body::Reasoning { content }
        | Body::ToolResult { content, .. } => Some(content.clone()),
        Body::ToolCall { arguments, .. } => Some(arguments.to_string()),
        _ => None,
    }
}

#[test]
fn heuristic_is_within_15_percent_over_the_corpus() {
    let heuristic = Heuristic::default();
    let exact = Bpe::o200k_base();
    let exact_cl = Bpe::cl100k_base();
    let conversations = common::conversations();

    let (mut h, mut e, mut c, mut chars) = (0usize, 0usize, 0usize, 0usize);
    for conv in &conversations {
        for t in &conv.texts {
            h += heuristic.count_text(t);
            e += exact.count_text(t);
            c += exact_cl.count_text(t);
            chars += t.chars().count();
        }
    }
    let err = |h: usize, e: usize| (h as f64 - e as f64) / e as f64 * 100.0;
    println!(
        "heuristic (chars/{}) over the corpus: {h} tokens; o200k_base {e} ({:+.1}%), cl100k_base {c} ({:+.1}%); {:.2} characters per o200k token",
        heuristic.chars_per_token(),
        err(h, e),
        err(h, c),
        chars as f64 / e as f64,
    );

    // The same by kind of text, for the record (not asserted: code-heavy
    // tool output and prose differ).
    let mut by_kind: std::collections::BTreeMap<Kind, (usize, usize)> = Default::default();
    for conv in &conversations {
        for r in conv.log.records() {
            if let Some(t) = text_of(r) {
                let entry = by_kind.entry(r.kind()).or_default();
                entry.0 += heuristic.count_text(&t);
                entry.1 += exact.count_text(&t);
            }
        }
    }
    for (kind, (h, e)) in &by_kind {
        println!(
            "  {kind:?}: heuristic {h}, o200k_base {e} ({:+.1}%)",
            err(*h, *e)
        );
    }

    // Whole records, overheads included, as the trigger sees them.
    let (mut hr, mut er) = (0usize, 0usize);
    for conv in &conversations {
        for r in conv.log.records() {
            hr += heuristic.record_tokens(r);
            er += exact.record_tokens(r);
        }
    }
    println!(
        "  records with overheads: heuristic {hr}, o200k_base {er} ({:+.1}%)",
        err(hr, er)
    );

    assert!(err(h, e).abs() < 15.0, "o200k_base: {:+.1}%", err(h, e));
    assert!(err(h, c).abs() < 15.0, "cl100k_base: {:+.1}%", err(h, c));
    assert!(err(hr, er).abs() < 15.0, "records: {:+.1}%", err(hr, er));
}

// ---------------------------------------------------------------- (c) cache

/// Counts calls to `count_text` and keeps the texts counted.
#[derive(Default)]
struct Counting {
    inner: Heuristic,
    calls: AtomicUsize,
    texts: Mutex<Vec<String>>,
}

impl Counting {
    fn take(&self) -> Vec<String> {
        self.calls.store(0, Ordering::SeqCst);
        std::mem::take(&mut *self.texts.lock().unwrap())
    }
}

impl TokenEstimator for Counting {
    fn name(&self) -> &str {
        "counting"
    }
    fn count_text(&self, text: &str) -> usize {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.texts.lock().unwrap().push(text.to_owned());
        self.inner.count_text(text)
    }
}

/// The texts `record_tokens` counts for `r`, in order.
fn texts_counted_for(r: &Record) -> Vec<String> {
    match &r.body {
        Body::User { content, .. }
        | Body::Assistant { content }
        | Body::Reasoning { content }
        | Body::System { content }
        | Body::ToolResult { content, .. } => vec![content.clone()],
        Body::ToolCall {
            name, arguments, ..
        } => vec![name.clone(), arguments.to_string()],
        Body::Structured { data } => vec![data.to_string()],
        _ => vec![],
    }
}

/// The largest corpus conversation, split before its last turn.
fn largest_split() -> (Log, Vec<Record>) {
    let conv = common::conversations()
        .into_iter()
        .max_by_key(|c| c.log.len())
        .expect("a conversation");
    let log = conv.log;
    let last_turn = log.turn_count() as u32 - 1;
    let cut = log.turn_range(last_turn).expect("last turn").start;
    let mut records = log.into_records();
    let tail = records.split_off(cut);
    assert!(tail.iter().any(|r| r.body.is_model_visible()));
    (Log::from_records(records), tail)
}

#[test]
fn after_a_turn_only_the_new_records_are_counted() {
    let est = Counting::default();
    let plain = Heuristic::default();
    let (mut log, tail) = largest_split();
    let mut cache = CountCache::new();

    let before = cache.log_tokens(&est, &log);
    assert!(est.take().len() > 100);
    // Nothing new: nothing counted.
    assert_eq!(cache.log_tokens(&est, &log), before);
    assert_eq!(est.calls.load(Ordering::SeqCst), 0);
    {
        let view = project(&log);
        assert_eq!(cache.view_tokens(&est, &view), before, "no compaction");
        assert_eq!(
            est.calls.load(Ordering::SeqCst),
            0,
            "the view hits the cache"
        );
    }

    let expected: Vec<String> = tail.iter().flat_map(texts_counted_for).collect();
    for r in tail {
        log.push(r);
    }
    let after = cache.log_tokens(&est, &log);
    assert_eq!(est.take(), expected, "only the new turn's texts");
    let uncached: usize = log.records().iter().map(|r| plain.record_tokens(r)).sum();
    assert_eq!(after, uncached);
    assert_eq!(after, ctxfold_core::estimate::raw_tokens(log.records()));

    let view = project(&log);
    assert_eq!(cache.view_tokens(&est, &view), after);
    assert_eq!(est.calls.load(Ordering::SeqCst), 0);

    // A fresh cache fed the view first: then the log costs nothing.
    let mut fresh = CountCache::new();
    assert_eq!(fresh.view_tokens(&est, &view), after);
    est.take();
    assert_eq!(fresh.log_tokens(&est, &log), after);
    assert_eq!(est.calls.load(Ordering::SeqCst), 0);
}

#[test]
fn stripped_items_are_counted_afresh_and_events_from_the_cache() {
    let est = Counting::default();
    let (mut log, _) = largest_split();
    let mut cache = CountCache::new();
    cache.log_tokens(&est, &log);
    est.take();

    let mut c = Compaction::new(0, 2, Source::User);
    c.tool_calls = Some(ToolPolicy::Strip);
    let seq = log.next_seq();
    log.push(Record::new(seq, "t", Body::Compaction(Box::new(c))));
    let view = project(&log);
    let fresh: Vec<&Item<'_>> = view
        .items
        .iter()
        .filter(|i| !matches!(i, Item::Event { .. }))
        .collect();
    assert!(fresh.len() > 10, "the compaction strips some tool pairs");
    let total = cache.view_tokens(&est, &view);
    // Each stripped call counts its name and arguments, each stripped result
    // its line, the preamble (if any) its text.
    let expected_calls: usize = fresh
        .iter()
        .map(|i| match i {
            Item::StrippedCall { .. } => 2,
            _ => 1,
        })
        .sum();
    assert_eq!(est.take().len(), expected_calls);
    assert_eq!(total, ctxfold_core::estimate::view_tokens(&view));
    assert!(total < cache.log_tokens(&est, &log));
    assert_eq!(est.calls.load(Ordering::SeqCst), 0);
}

#[test]
fn another_estimator_drops_the_cached_counts() {
    let (log, _) = largest_split();
    let mut cache = CountCache::new();
    let h = cache.log_tokens(&Heuristic::default(), &log);
    assert!(!cache.is_empty());
    let e = cache.log_tokens(&Bpe::o200k_base(), &log);
    let uncached: usize = log
        .records()
        .iter()
        .map(|r| Bpe::o200k_base().record_tokens(r))
        .sum();
    assert_eq!(e, uncached);
    assert_ne!(h, e);
}

// ------------------------------------------------------------- (d) baseline

fn record(seq: u64, body: Body) -> Record {
    Record::new(seq, "t", body)
}

fn user(text: &str) -> Body {
    Body::User {
        content: text.into(),
        author: None,
    }
}

/// One turn: user, call, result, answer, user, call (the call with usage
/// is seq 6), result.
fn baseline_log() -> Log {
    Log::from_records(vec![
        record(0, Body::TurnStart),
        record(1, user("read the file please")),
        record(
            2,
            Body::ToolCall {
                id: "a".into(),
                name: "read".into(),
                arguments: json!({"path": "src/main.rs"}).into(),
            },
        ),
        record(
            3,
            Body::ToolResult {
                id: "a".into(),
                content: "fn main() {}\n".repeat(40),
                is_error: false,
            },
        ),
        record(
            4,
            Body::Assistant {
                content: "It is empty.".into(),
            },
        ),
        record(5, user("and the test?")),
        record(
            6,
            Body::ToolCall {
                id: "b".into(),
                name: "read".into(),
                arguments: json!({"path": "tests/t.rs"}).into(),
            },
        ),
        record(
            7,
            Body::ToolResult {
                id: "b".into(),
                content: "#[test] fn t() {}\n".repeat(30),
                is_error: false,
            },
        ),
    ])
}

#[test]
fn next_request_is_the_reported_usage_plus_what_came_after() {
    let est = Bpe::o200k_base();
    let log = baseline_log();
    let view = project(&log);
    let mut cache = CountCache::new();

    // The call at seq 6 reported 1000 tokens (input + output): only the
    // result at seq 7 is added.
    let result = est.record_tokens(&log.records()[7]);
    assert_eq!(
        cache.estimate_next_request(&est, &log, &view, Some((6, 1000))),
        1000 + result
    );
    // A baseline at the last record: nothing added.
    assert_eq!(
        cache.estimate_next_request(&est, &log, &view, Some((7, 1000))),
        1000
    );
    // An older baseline adds everything after it.
    let after_4: usize = log.records()[5..]
        .iter()
        .map(|r| est.record_tokens(r))
        .sum();
    assert_eq!(
        cache.estimate_next_request(&est, &log, &view, Some((4, 900))),
        900 + after_4
    );

    // No baseline: the whole view, with per-message overhead.
    let full = cache.view_tokens(&est, &view) + MESSAGE_OVERHEAD * message_count(&view);
    assert_eq!(message_count(&view), 7, "user, asst, tool, asst+user…");
    assert_eq!(cache.estimate_next_request(&est, &log, &view, None), full);
    assert_eq!(
        cache.request_tokens(&est, &view, None, None),
        full,
        "request_tokens without extras is the same"
    );
    let tools = json!([{"name": "read", "parameters": {"type": "object"}}]);
    assert_eq!(
        cache.request_tokens(&est, &view, Some("Be brief."), Some(&tools)),
        full + est.count_text("Be brief.")
            + BLOCK_OVERHEAD
            + MESSAGE_OVERHEAD
            + est.count_text(&tools.to_string())
    );
}

#[test]
fn a_compaction_after_the_baseline_makes_it_stale() {
    let est = Bpe::o200k_base();
    let mut log = baseline_log();
    let mut c = Compaction::new(0, 0, Source::User);
    c.tool_calls = Some(ToolPolicy::Strip);
    log.push(record(8, Body::Compaction(Box::new(c))));
    let view = project(&log);
    let mut cache = CountCache::new();
    assert!(!baseline_is_current(&log, Some((6, 1000))));
    assert!(baseline_is_current(&log, Some((8, 1000))));
    assert!(!baseline_is_current(&log, None));
    let full = cache.view_tokens(&est, &view) + MESSAGE_OVERHEAD * message_count(&view);
    assert_eq!(
        cache.estimate_next_request(&est, &log, &view, Some((6, 1000))),
        full,
        "the view changed before seq 6: counted in full"
    );
    // A baseline taken after the compaction holds again.
    assert_eq!(
        cache.estimate_next_request(&est, &log, &view, Some((8, 700))),
        700
    );
}

// -------------------------------------------------------- (e) windows, names

#[test]
fn context_windows_of_common_models() {
    for (model, window) in [
        ("gpt-4o", 128_000),
        ("gpt-4o-mini", 128_000),
        ("openai/gpt-4o-2024-08-06", 128_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4.1-mini", 1_047_576),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o3-mini", 200_000),
        ("o4-mini", 200_000),
        ("gpt-5", 400_000),
        ("gpt-5-mini", 400_000),
        ("gpt-4", 8_192),
        ("claude-3-5-sonnet-latest", 200_000),
        ("anthropic/claude-3-7-sonnet-20250219", 200_000),
        ("claude-sonnet-4-5", 200_000),
        ("claude-opus-4-1", 200_000),
        ("claude-haiku-4-5", 200_000),
        ("ollama/llama3.1:8b", 131_072),
        ("llama3.2", 131_072),
        ("meta-llama/Llama-3.1-8B-Instruct", 131_072),
        ("qwen2.5:7b", 32_768),
        ("Qwen/Qwen2.5-Coder-7B-Instruct", 32_768),
        ("SmolLM2-135M-Instruct", 8_192),
        ("local/SmolLM2-135M-Instruct.Q4_1.gguf", 8_192),
        ("mistral-large-latest", 131_072),
        ("claude-2.1", 200_000),
    ] {
        assert_eq!(context_window(model), Some(window), "{model}");
    }
    for model in ["", "my-finetune", "o30", "x/"] {
        assert_eq!(context_window(model), None, "{model}");
    }
}

#[test]
fn for_model_picks_exact_counts_for_openai_only() {
    assert_eq!(for_model("openai/gpt-4.1").name(), "o200k_base");
    assert_eq!(for_model("gpt-3.5-turbo").name(), "cl100k_base");
    assert_eq!(for_model("anthropic/claude-sonnet-4").name(), "heuristic");
    assert_eq!(for_model("llama3.1").name(), "heuristic");
}
