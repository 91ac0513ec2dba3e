//! Issue 44's acceptance on the real corpus: every fold keeps each
//! error-like line of its output. Every conversation is folded by the real
//! binary (`ctxfold compact DIR -t strip --keep-last 0`: every tool result
//! stripped); each stripped result in the written transcript is checked
//! against its raw output: every distinct diagnostic the recognizer reads
//! from the output's error-like lines
//! ([`error_like`](ctxfold_core::diagnostics::error_like), whose lines are
//! [`error_like_lines`](ctxfold_core::diagnostics::error_like_lines)) is
//! in the stripped line, or counted in its "and N more" beside the handle
//! that recalls it; a line naming where the full output was saved is
//! always in it.
//!
//! Each way an output can be shown is one entry of [`WAYS`]: the arguments
//! that make the binary show it so, and the check of what it shows. The
//! excerpt (what the model sees of an oversized output from the first
//! request that carries it, issue 44's first point) is checked beside the
//! fold: the transcript replayed as a live agent grows it (`--auto`) with
//! a window so large that nothing is folded and an `excerpt_share` of it
//! of about 1,000 tokens (`excerpt.toml`), so every output over about
//! 4,000 characters is excerpted as it arrives; each error-like line of
//! the output is in its excerpt, or counted in its "(and N more not
//! shown)".
//!
//! `cargo test -p ctxfold --test corpus_error_lines -- --nocapture`
//! prints what was checked.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{Scratch, compact_report, corpus_conversations};
use ctxfold_core::diagnostics::{
    DiagnosticKind, ErrorLike, error_like, error_like_lines, result_text,
};
use ctxfold_core::{Body, Record};

/// What one way of showing a tool result showed of it.
struct Shown<'a> {
    /// The raw output.
    raw: &'a str,
    /// The text the model sees instead.
    shown: &'a str,
    /// Where, for messages: the conversation and the result's id.
    at: String,
}

/// Figures over the corpus, for one way.
#[derive(Default)]
struct Tally {
    /// Tool results shown this way.
    results: usize,
    /// Tool results shown whole instead (shorter than what would stand
    /// for them).
    whole: usize,
    /// Of them, with at least one error-like line.
    with_errors: usize,
    /// Distinct diagnostics read from error-like lines: shown, counted.
    shown: usize,
    counted: usize,
}

/// A way of showing tool results: its name, the arguments to `ctxfold
/// compact`, whether a written result was shown that way, and the check.
struct Way {
    name: &'static str,
    args: &'static [&'static str],
    /// Whether the written text of a result is this way's (not the raw
    /// output left as it was).
    is_shown: fn(&str) -> bool,
    check: fn(&Shown<'_>, &mut Tally),
    /// Whether most results are shown so (a fold of every result), or only
    /// the long ones (an excerpt).
    most: bool,
}

const WAYS: &[Way] = &[
    Way {
        name: "fold",
        args: &["-t", "strip", "--keep-last", "0"],
        is_shown: |text| text.starts_with('[') && text.contains(" was removed by compaction"),
        check: fold_keeps_every_error_like_line,
        most: true,
    },
    Way {
        name: "excerpt",
        args: &["--auto", "--window", "20000000", "-c", EXCERPT_CONFIG],
        is_shown: |text| text.starts_with("[Excerpt of "),
        check: excerpt_keeps_every_error_like_line,
        most: false,
    },
];

/// The config file (in the scratch folder, where the binary runs) that
/// makes `--auto` excerpt outputs over about 1,000 tokens at the window
/// above: 0.00005 of 20,000,000.
const EXCERPT_CONFIG: &str = "excerpt.toml";

fn write_excerpt_config(s: &Scratch) {
    std::fs::write(
        s.path().join(EXCERPT_CONFIG),
        "[compaction.auto]\nexcerpt_share = 0.00005\n",
    )
    .unwrap();
}

/// The N of an excerpt's "(and N more not shown)", 0 without one.
fn not_shown_in(excerpt: &str) -> usize {
    let head = excerpt.lines().next().unwrap_or("");
    head.split_once("(and ")
        .and_then(|(_, rest)| rest.split_once(" more not shown)"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(0)
}

/// An excerpt keeps each error-like line of its output (its first 200
/// characters: a longer line is cut), or counts it as not shown; its
/// first line names the handle that brings the whole output back.
fn excerpt_keeps_every_error_like_line(s: &Shown<'_>, t: &mut Tally) {
    let at = &s.at;
    t.results += 1;
    let head = s.shown.lines().next().unwrap_or("");
    assert!(
        head.contains("; recall ") && head.ends_with(" brings back the whole text.]"),
        "{at}: {head}"
    );
    let lines: Vec<&str> = s.raw.lines().collect();
    let marks = error_like_lines(s.raw);
    if marks.is_empty() {
        return;
    }
    t.with_errors += 1;
    let missing = marks
        .iter()
        .filter(|&&i| {
            let start: String = lines[i].trim_end().chars().take(200).collect();
            !s.shown.contains(&start)
        })
        .count();
    assert!(
        missing <= not_shown_in(s.shown),
        "{at}: {missing} of {} error-like lines neither shown nor counted in {head}",
        marks.len()
    );
    t.shown += marks.len() - missing;
    t.counted += missing;
}

/// The distinct diagnostics of `raw`'s error-like lines (as the fold reads
/// a result: a JSON-wrapped one by its strings), in output order.
fn distinct(raw: &str) -> Vec<ErrorLike> {
    let mut seen = BTreeSet::new();
    error_like(&result_text(raw))
        .into_iter()
        .filter(|e| seen.insert(e.diagnostic.text.clone()))
        .collect()
}

/// The N of a fold's closing `; and N more]`, 0 without one.
fn counted_in(fold: &str) -> usize {
    fold.rsplit_once("; and ")
        .and_then(|(_, n)| n.strip_suffix(" more]"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A stripped result keeps each distinct diagnostic of its output's
/// error-like lines (its text, or its line with its location when several
/// places share one message), or counts it in "and N more" beside its
/// handle; a saved-output line is always kept.
fn fold_keeps_every_error_like_line(s: &Shown<'_>, t: &mut Tally) {
    let fold = s.shown;
    let at = &s.at;
    t.results += 1;
    let all = distinct(s.raw);
    if all.is_empty() {
        return;
    }
    t.with_errors += 1;
    let mut missing = Vec::new();
    for e in &all {
        let d = &e.diagnostic;
        let kept = fold.contains(&d.text)
            || (fold.contains(&d.line)
                && d.location.as_deref().is_none_or(|loc| fold.contains(loc)));
        if kept {
            t.shown += 1;
        } else {
            assert_ne!(
                d.kind,
                DiagnosticKind::SavedOutput,
                "{at}: where the output was saved is not in {fold}"
            );
            missing.push(d.text.as_str());
        }
    }
    let counted = counted_in(fold);
    assert!(
        missing.len() <= counted,
        "{at}: {missing:?} neither kept nor counted in {fold}"
    );
    if counted > 0 {
        assert!(fold.contains(" (recall "), "{at}: no handle in {fold}");
    }
    t.counted += missing.len();
}

/// The tool results of a transcript, in order, with their ids.
fn results(records: &[Record]) -> Vec<(&str, &str)> {
    records
        .iter()
        .filter_map(|r| match &r.body {
            Body::ToolResult { id, content, .. } => Some((id.as_str(), content.as_str())),
            _ => None,
        })
        .collect()
}

/// Fold `input` (a conversation folder or transcript file) every way,
/// check each result shown so, and add to `tallies`; how many tool results
/// it holds.
fn check_transcript(s: &Scratch, input: &Path, name: &str, tallies: &mut [Tally]) -> usize {
    let raw = ctxfold_formats::import_detected(input, None).unwrap().1;
    let raw = results(&raw.records);
    for (way, t) in WAYS.iter().zip(tallies.iter_mut()) {
        let report = compact_report(s, input, way.args);
        let out = Path::new(report["output"].as_str().unwrap());
        let written = ctxfold_formats::import_detected(out, None).unwrap().1;
        let written = results(&written.records);
        assert_eq!(written.len(), raw.len(), "{name} ({})", way.name);
        for ((id, raw), (wid, shown)) in raw.iter().zip(&written) {
            assert_eq!(id, wid, "{name} ({}): results out of order", way.name);
            if !(way.is_shown)(shown) {
                // Shown whole (a short output): every line kept.
                assert_eq!(raw, shown, "{name} ({}) result {id}", way.name);
                t.whole += 1;
                continue;
            }
            let at = format!("{name} ({}) result {id}", way.name);
            (way.check)(&Shown { raw, shown, at }, t);
        }
    }
    raw.len()
}

/// Print the tallies; check that most results were shown each way (`share`
/// in tenths at least), and `errors` of them with error-like lines.
fn report(tallies: &[Tally], total: usize, share: usize, errors: usize) {
    for (way, t) in WAYS.iter().zip(tallies) {
        println!(
            "{}: {} of {total} results shown so ({} whole), {} with error-like lines; {} distinct diagnostics kept, {} counted",
            way.name, t.results, t.whole, t.with_errors, t.shown, t.counted
        );
        // Not checked on too little.
        if way.most {
            assert!(
                t.results * 10 >= total * share,
                "{}: {} of {total}",
                way.name,
                t.results
            );
            assert!(t.with_errors >= errors, "{}: {}", way.name, t.with_errors);
        } else {
            assert!(
                t.results > 0 && t.with_errors > 0,
                "{}: none checked",
                way.name
            );
        }
    }
}

#[test]
fn every_fold_of_the_corpus_keeps_each_error_like_line_of_its_output() {
    let s = Scratch::new();
    write_excerpt_config(&s);
    let mut tallies: Vec<Tally> = WAYS.iter().map(|_| Tally::default()).collect();
    let mut total = 0;
    for dir in corpus_conversations() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        total += check_transcript(&s, &dir, &name, &mut tallies);
    }
    // Most results are shown so, and the corpus's failing builds and test
    // runs are among them.
    report(&tallies, total, 7, 20);
}

/// The outputs the recognizer is checked against by hand
/// (`ctxfold-core/tests/fixtures/error_lines`: builds, test runs, logs of
/// every shape, a traceback, Claude Code's saved-output preview), and issue
/// 44's shell step (about 29 KB of log lines, one ERROR among them), as
/// the Bash results of one Anthropic transcript: the corpus has few logs.
#[test]
fn every_fold_of_logs_test_runs_and_saved_outputs_keeps_each_error_like_line() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ctxfold-core/tests/fixtures/error_lines");
    let mut outputs: Vec<(String, String)> = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    for p in paths {
        // Each line's two-character mark is not the output's.
        let text: String = std::fs::read_to_string(&p)
            .unwrap()
            .lines()
            .map(|l| format!("{}\n", l.get(2..).unwrap_or("")))
            .collect();
        outputs.push((p.file_name().unwrap().to_string_lossy().into_owned(), text));
    }
    let mut step: Vec<String> = (0..330)
        .map(|k| format!("2026-12-06T10:{:02}:{:02}Z INFO worker: processed batch {k} of 330 in 12 ms, queue depth 4", k / 60, k % 60))
        .collect();
    step.insert(
        200,
        "2026-12-06T10:03:20Z ERROR worker: batch 200 failed: connection reset by peer".into(),
    );
    outputs.push(("issue-44 step".into(), step.join("\n")));
    assert!(outputs.len() >= 13);
    let mut messages = vec![serde_json::json!({"role": "user", "content": "Run the checks."})];
    for (k, (name, text)) in outputs.iter().enumerate() {
        let id = format!("toolu_{k:02}");
        messages.push(serde_json::json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Running {name}.")},
            {"type": "tool_use", "id": id, "name": "Bash", "input": {"command": format!("./check {k}")}},
        ]}));
        messages.push(serde_json::json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": text},
        ]}));
    }
    messages.push(serde_json::json!({"role": "assistant", "content": "Done."}));
    let s = Scratch::new();
    write_excerpt_config(&s);
    let input = s.path().join("checks.anthropic.json");
    std::fs::write(
        &input,
        serde_json::json!({"messages": messages}).to_string(),
    )
    .unwrap();
    let mut tallies: Vec<Tally> = WAYS.iter().map(|_| Tally::default()).collect();
    let total = check_transcript(&s, &input, "checks", &mut tallies);
    // Every output but `seq` and the source code holds error-like lines.
    report(&tallies, total, 10, total - 2);
}
