//! Recall on the real corpus (issue 43, `docs/QUALITY.md`): for every
//! conversation, folded by `ctxfold compact FILE` (the built-in rule), by
//! the digest (`-s`) and by a replay with automatic compaction (`--auto
//! --window W`, W a quarter of the raw size), every placeholder and
//! summary lead in the written transcript carries a handle, and each
//! handle, recalled page by page from the raw import, gives back exactly
//! the raw content it stands for.
//!
//! `cargo test -p ctxfold --test corpus_recall -- --nocapture` prints the
//! table `docs/QUALITY.md` holds: the handles' share of the view's tokens
//! and the shrink with and without them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::path::Path;

use common::{Scratch, compact_report, corpus_conversations};
use ctxfold_core::estimate::{CountText, Heuristic};
use ctxfold_core::handle::{Handle, Tag, Target};
use ctxfold_core::recall::{page, recall};
use ctxfold_core::{Body, Log, Record};

/// The words every placeholder kind opens with, and the words its handle
/// follows in it.
const PLACEHOLDERS: [(&str, &str); 4] = [
    // A stripped result: `... was removed by compaction (recall H)`.
    (
        "was removed by compaction",
        "was removed by compaction (recall ",
    ),
    // A stripped argument: `[N characters removed by compaction; recall H]`.
    (
        " characters removed by compaction",
        " characters removed by compaction; recall ",
    ),
    // A clipped unit.
    (
        "left out here by compaction to fit the context window",
        "left out here by compaction to fit the context window; recall ",
    ),
    // A summary's lead.
    ("of this conversation, which w", "compacted; recall "),
];

/// The arguments of one way of folding, given the window to replay at.
type Args = fn(usize) -> Vec<String>;

/// Figures of one way of folding, over the corpus.
#[derive(Default)]
struct Tally {
    placeholders: usize,
    handles: usize,
    /// Characters recalled and compared.
    recalled: usize,
    /// Tokens: the raw conversations, the folded views, the handles' words.
    raw: usize,
    view: usize,
    hints: usize,
}

/// Every text of a written transcript, as the model reads it: messages,
/// results and the string values of call arguments.
fn texts(records: &[Record]) -> Vec<String> {
    let mut out = Vec::new();
    for r in records {
        match &r.body {
            Body::User { content, .. }
            | Body::Assistant { content }
            | Body::Reasoning { content }
            | Body::ToolResult { content, .. } => out.push(content.clone()),
            Body::ToolCall { arguments, .. } => {
                let mut stack = vec![arguments.value()];
                while let Some(v) = stack.pop() {
                    match v {
                        serde_json::Value::String(s) => out.push(s),
                        serde_json::Value::Array(a) => stack.extend(a),
                        serde_json::Value::Object(o) => stack.extend(o.into_iter().map(|(_, v)| v)),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The handles a text holds: what follows each `recall `, up to the
/// character that ends it in a placeholder.
fn handles_in(text: &str) -> Vec<String> {
    text.match_indices("recall ")
        .map(|(k, m)| {
            text[k + m.len()..]
                .chars()
                .take_while(|c| !matches!(c, ']' | ')' | ' ' | '"' | '\n' | '…'))
                .collect()
        })
        .collect()
}

/// What the raw log holds for `target`, by this test's own reading of the
/// records (not the recall module's).
fn raw_text(raw: &Log, target: &Target) -> Vec<String> {
    // Positions count every record but ctxfold's overlays.
    let content: Vec<&Record> = raw
        .records()
        .iter()
        .filter(|r| !matches!(r.body, Body::Compaction(_) | Body::CompactionReset(_)))
        .collect();
    let by_seq = |n: u64| content[n as usize];
    let own = |r: &Record| -> Option<String> {
        match &r.body {
            Body::User { content, .. }
            | Body::Assistant { content }
            | Body::Reasoning { content }
            | Body::ToolResult { content, .. } => Some(content.clone()),
            Body::ToolCall { arguments, .. } => Some(arguments.text().to_owned()),
            _ => None,
        }
    };
    match target {
        Target::Record(seq) => own(by_seq(*seq)).into_iter().collect(),
        Target::Argument(seq, pointer) => {
            let Body::ToolCall { arguments, .. } = &by_seq(*seq).body else {
                panic!("{seq} is not a call")
            };
            match arguments.value().pointer(pointer).unwrap() {
                serde_json::Value::String(s) => vec![s.clone()],
                other => vec![other.to_string()],
            }
        }
        Target::Range(a, b) => content[*a as usize..=*b as usize]
            .iter()
            .filter(|r| r.body.is_model_visible())
            .filter_map(|r| own(r))
            .collect(),
    }
}

/// Check one written transcript against the raw log; add its figures.
fn check(raw: &Log, tag: Tag, out: &Path, at: &str, t: &mut Tally) {
    let (_, written) = ctxfold_formats::import_detected(out, None).unwrap();
    let texts = texts(&written.records);
    let h = Heuristic;
    for text in &texts {
        t.view += h.count_text(text);
        for (opens, with_handle) in PLACEHOLDERS {
            let n = text.matches(opens).count();
            t.placeholders += n;
            assert_eq!(
                text.matches(with_handle).count(),
                n,
                "{at}: a placeholder without its handle in {text:.300}"
            );
        }
        for hint in handles_in(text) {
            t.hints += h.count_text(&format!("; recall {hint}"));
            let handle: Handle = hint.parse().unwrap_or_else(|e| panic!("{at}: {e}"));
            assert_eq!(handle.tag, tag, "{at}: {hint} names another conversation");
            let recalled = recall(raw, &handle).unwrap_or_else(|e| panic!("{at}: {hint}: {e}"));
            // Walked page by page, the pages give the text back whole.
            let mut whole = String::new();
            let mut offset = 0;
            loop {
                let p = page(&handle, &recalled, offset, 0).unwrap();
                whole.push_str(&p.text);
                if !p.has_more() {
                    break;
                }
                offset = p.end;
            }
            assert_eq!(whole, recalled.text, "{at}: {hint}");
            let expected = raw_text(raw, &handle.target);
            match handle.target {
                Target::Range(..) => {
                    assert!(!expected.is_empty(), "{at}: {hint} stands for nothing");
                    for part in &expected {
                        assert!(
                            whole.contains(part.as_str()),
                            "{at}: {hint} lacks {part:.200}"
                        );
                    }
                }
                _ => assert_eq!(vec![whole.clone()], expected, "{at}: {hint}"),
            }
            t.recalled += whole.chars().count();
            t.handles += 1;
        }
    }
}

#[test]
fn every_fold_of_the_corpus_carries_a_handle_that_recalls_it_exactly() {
    let s = Scratch::new();
    let modes: [(&str, Args); 3] = [
        ("rule", |_| vec![]),
        ("digest", |_| vec!["-s".into()]),
        ("auto", |w| {
            vec!["--auto".into(), "--window".into(), w.to_string()]
        }),
    ];
    let mut tallies: Vec<Tally> = modes.iter().map(|_| Tally::default()).collect();
    for dir in corpus_conversations() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let raw = Log::from_records(
            ctxfold_formats::import_detected(&dir, None)
                .unwrap()
                .1
                .records,
        );
        let tag = Tag::of(&raw).unwrap();
        let raw_tokens = compact_report(&s, &dir, &[])["tokens"]["raw"]
            .as_u64()
            .unwrap() as usize;
        // The raw texts, counted as the views' are.
        let raw_text_tokens: usize = texts(raw.records())
            .iter()
            .map(|t| Heuristic.count_text(t))
            .sum();
        for ((mode, args), t) in modes.iter().zip(&mut tallies) {
            let args = args((raw_tokens / 4).max(2_000));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let report = compact_report(&s, &dir, &args);
            let out = Path::new(report["output"].as_str().unwrap());
            t.raw += raw_text_tokens;
            check(&raw, tag, out, &format!("{name} ({mode})"), t);
        }
    }
    let mut table = String::from(
        "| folded by | placeholders and leads | handles recalled | characters recalled | view tokens | handles' tokens | handles' share | shrink with handles | without |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for ((mode, _), t) in modes.iter().zip(&tallies) {
        let shrink = |view: usize| 100.0 * (1.0 - view as f64 / t.raw as f64);
        table.push_str(&format!(
            "| {mode} | {} | {} | {} | {} | {} | {:.2}% | {:.1}% | {:.1}% |\n",
            t.placeholders,
            t.handles,
            t.recalled,
            t.view,
            t.hints,
            100.0 * t.hints as f64 / t.view as f64,
            shrink(t.view),
            shrink(t.view - t.hints),
        ));
    }
    println!("{table}");
    for ((mode, _), t) in modes.iter().zip(&tallies) {
        // Folds happened (a summary at least in every conversation), and
        // every one was checked.
        assert!(
            t.placeholders >= 15,
            "{mode}: {} placeholders",
            t.placeholders
        );
        assert!(t.handles >= t.placeholders, "{mode}: {} handles", t.handles);
        // Handles are small beside what they let the view leave out.
        assert!(
            t.hints * 100 <= t.view * 3,
            "{mode}: handles are {} of {} view tokens",
            t.hints,
            t.view
        );
    }
}
