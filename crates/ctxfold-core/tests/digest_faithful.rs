//! What the offline digest says is true (issue 26, item 3), over the real
//! JP corpus (`shared/corpus/jp`, or the folder named by `CTXFOLD_CORPUS`).
//! Every range the corpus checks digest (each conversation whole and
//! without its last turn, the built-in rule's range and the old steps its
//! plan folds, every single turn) is digested and its text read back:
//!
//! - the counts agree: the calls line's total is the sum of its per-tool
//!   counts and the number of tool calls in the range; its failures are the
//!   sum of the per-tool failures, the results in the range that failed
//!   (recounted from the raw records), and at least what the per-command
//!   lines say failed;
//! - one failure is one entry: each distinct headline a result printed is
//!   one diagnostics entry, counted as often as results printed it, and
//!   no other error of a result gets an entry of its own;
//! - "Decisions and conclusions" holds turns' answers and sentences that
//!   decide, not plans, doubts, conditions or questions;
//! - a request is labelled a correction or a constraint only when the
//!   "Corrections and constraints" section quotes a sentence of it, each
//!   one the user's prose (outside code blocks and pasted logs), not a
//!   question, a hedge or an inference;
//! - every user message of up to 2,000 characters is in the digest byte
//!   for byte, whitespace included.
//!
//! `cargo test -p ctxfold-core --test digest_faithful -- --nocapture`
//! prints the figures.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod jp;

use std::collections::BTreeMap;
use std::path::PathBuf;

use jp::{corpus_dir, load};

use ctxfold_core::diagnostics::first_of;
use ctxfold_core::digest::Digest;
use ctxfold_core::log::Log;
use ctxfold_core::planner::{PlanContext, Rule, plan};
use ctxfold_core::record::Body;
use ctxfold_core::summarizer::{Summarizer, SummaryInput};

/// The limit under which a user message is quoted whole (`kept.rs`).
const WHOLE_MAX: usize = 2_000;

/// A corpus conversation and the ranges digested of it.
struct Conv {
    name: String,
    log: Log,
    /// (what, lo, hi).
    ranges: Vec<(String, usize, usize)>,
}

/// Every conversation and the ranges digested of it.
fn ranges() -> Vec<Conv> {
    let dir = corpus_dir();
    let mut convs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.join("events.json").is_file())
        .collect();
    convs.sort();
    assert!(!convs.is_empty(), "no conversation in {}", dir.display());
    let mut out = Vec::new();
    for conv in convs {
        let name = conv.file_name().unwrap().to_string_lossy().into_owned();
        let log = load(&conv);
        let mut rs = vec![("whole".to_owned(), 0, log.len() - 1)];
        let turns = log.turn_count();
        if turns >= 2 {
            let cut = log.turn_range(turns as u32 - 1).unwrap().start;
            if cut > 0 {
                rs.push(("all but last turn".into(), 0, cut - 1));
            }
        }
        if turns >= 5 {
            let lo = log.turn_range(1).unwrap().start;
            let hi = log.turn_range(turns as u32 - 4).unwrap().end - 1;
            rs.push(("built-in rule".into(), lo, hi));
        }
        let planned = plan(&log, &[Rule::builtin()], &PlanContext::default()).expect("plan");
        for p in &planned.planned {
            rs.push(("built-in plan".into(), p.range.0, p.range.1));
        }
        for t in 0..turns as u32 {
            let r = log.turn_range(t).unwrap();
            rs.push((format!("turn {}", t + 1), r.start, r.end - 1));
        }
        out.push(Conv {
            name,
            log,
            ranges: rs,
        });
    }
    out
}

/// The digest of one range.
struct Digested {
    label: String,
    conv: usize,
    lo: usize,
    hi: usize,
    text: String,
}

/// The digests of every range that has one.
fn digests(convs: &[Conv]) -> Vec<Digested> {
    let mut out = Vec::new();
    for (c, conv) in convs.iter().enumerate() {
        let (name, log) = (&conv.name, &conv.log);
        for (what, lo, hi) in &conv.ranges {
            let input = SummaryInput {
                log,
                range: (*lo, *hi),
                instructions: None,
            };
            // A range holding nothing the model sees is refused; the
            // corpus checks say which.
            if let Ok(s) = Digest.summarize(input) {
                out.push(Digested {
                    label: format!("{name} ({what}, records {lo}–{hi})"),
                    conv: c,
                    lo: *lo,
                    hi: *hi,
                    text: s.text,
                });
            }
        }
    }
    out
}

/// The lines of a `## heading` section.
fn section<'t>(text: &'t str, heading: &str) -> Vec<&'t str> {
    let mut lines = text.lines();
    if !lines.any(|l| l == format!("## {heading}")) {
        return Vec::new();
    }
    lines.take_while(|l| !l.starts_with("## ")).collect()
}

/// `12` in `"… ×12"`, the number after the last `×`.
fn times(s: &str) -> Option<usize> {
    let (_, n) = s.rsplit_once('×')?;
    n.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// `3` in `"… 3 failed…"`, else 0.
fn failed_in(s: &str) -> usize {
    s.split(", ")
        .chain(s.split(['(', ':', ';']))
        .filter_map(|p| {
            p.trim()
                .strip_suffix(" failed")
                .or(p.trim().strip_suffix(" failed)"))
        })
        .filter_map(|n| n.trim_start_matches('(').parse().ok())
        .next()
        .unwrap_or(0)
}

#[test]
fn counts_agree_and_one_failure_is_one_entry() {
    let convs = ranges();
    let all = digests(&convs);
    let (mut checked, mut failures, mut entries) = (0, 0, 0);
    for d in &all {
        let log = &convs[d.conv].log;
        let tools = section(&d.text, "Tools and commands");
        let Some(calls_line) = tools.iter().find(|l| l.starts_with("- Calls: ")) else {
            continue;
        };
        checked += 1;
        // Raw: calls, and the results that failed (the tool said so, or
        // the recognizer found more than warnings in it), of calls in the
        // range.
        let records = &log.records()[d.lo..=d.hi];
        let mut call_ids = std::collections::BTreeSet::new();
        for r in records {
            if let Body::ToolCall { id, .. } = &r.body {
                call_ids.insert(id.as_str());
            }
        }
        let mut raw_failed = 0;
        // Headline text → number of results that printed it.
        let mut headlines: BTreeMap<String, usize> = BTreeMap::new();
        let mut others: Vec<String> = Vec::new();
        for (i, r) in records.iter().enumerate() {
            let Body::ToolResult { id, is_error, .. } = &r.body else {
                continue;
            };
            let found = log
                .result_scan(d.lo + i)
                .map_or(&[][..], |s| &s.diagnostics);
            if call_ids.contains(id.as_str())
                && (*is_error || found.iter().any(|x| x.kind.is_failure()))
            {
                raw_failed += 1;
            }
            if let Some(h) = first_of(found, 1).next() {
                *headlines.entry(h.text.clone()).or_default() += 1;
                others.extend(
                    found
                        .iter()
                        .filter(|x| x.text != h.text)
                        .map(|x| x.text.clone()),
                );
            }
        }

        // The calls line: `- Calls: a ×3 (1 failed), b ×2 (5 calls, 1 failed)`.
        let (list, total) = calls_line["- Calls: ".len()..]
            .rsplit_once(" (")
            .unwrap_or_else(|| panic!("{}: {calls_line}", d.label));
        let total_calls: usize = total.split(' ').next().unwrap().parse().unwrap();
        let total_failed = failed_in(total);
        let mut per_tool: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for item in list.split(", ") {
            let (name, rest) = item.split_once(" ×").unwrap_or_else(|| panic!("{item}"));
            let n = rest.split(' ').next().unwrap().parse().unwrap();
            per_tool.insert(name, (n, failed_in(rest)));
        }
        let label = &d.label;
        assert_eq!(
            per_tool.values().map(|t| t.0).sum::<usize>(),
            total_calls,
            "{label}: {calls_line}"
        );
        assert_eq!(total_calls, call_ids.len(), "{label}: {calls_line}");
        assert_eq!(
            per_tool.values().map(|t| t.1).sum::<usize>(),
            total_failed,
            "{label}: {calls_line}"
        );
        assert_eq!(total_failed, raw_failed, "{label}: {calls_line}");
        failures += total_failed;

        // Per command: `- Ran cargo_check `x` ×3 (turn 1): 1 failed, 2 ok; last ok`.
        if !tools.iter().any(|l| l.contains("not shown")) {
            let mut by_tool: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
            for l in tools.iter().filter_map(|l| l.strip_prefix("- Ran ")) {
                let tool = l.split([' ', '`']).next().unwrap();
                let (head, outcome) = l.rsplit_once("): ").unwrap();
                let n = if head.contains(" ×") {
                    times(head).unwrap()
                } else {
                    1
                };
                let f = if n == 1 {
                    usize::from(outcome == "failed")
                } else {
                    failed_in(outcome.split("; last").next().unwrap())
                };
                let t = by_tool.entry(tool).or_default();
                t.0 += n;
                t.1 += f;
            }
            for (tool, (runs, failed)) in by_tool {
                let (n, f) = per_tool[tool];
                assert!(runs <= n && failed <= f, "{label}: {tool}: {tools:#?}");
                if runs == n {
                    // Every call of the tool a command: the same failures.
                    assert_eq!(failed, f, "{label}: {tool}: {tools:#?}");
                }
            }
        }

        // Diagnostics: one entry per distinct headline, counted as often as
        // results printed it; a result's other errors in its entry.
        let diags = section(&d.text, "Diagnostics (from tool output)");
        if diags.iter().any(|l| l.contains("not shown")) {
            continue;
        }
        let listed: Vec<&str> = diags
            .iter()
            .filter(|l| l.starts_with("- "))
            .copied()
            .collect();
        assert_eq!(listed.len(), headlines.len(), "{label}: {diags:#?}");
        for (h, &n) in &headlines {
            let at: Vec<&&str> = listed
                .iter()
                .filter(|l| {
                    l.split_once("): ")
                        .is_some_and(|(_, t)| t.starts_with(h.as_str()))
                })
                .collect();
            assert_eq!(at.len(), 1, "{label}: {h}: {diags:#?}");
            let head = at[0].split_once("): ").unwrap().0;
            assert_eq!(times(head).unwrap_or(1), n, "{label}: {h}: {}", at[0]);
        }
        for o in &others {
            if headlines.contains_key(o) {
                continue;
            }
            assert!(
                !listed.iter().any(|l| l
                    .split_once("): ")
                    .is_some_and(|(_, t)| t.starts_with(o.as_str()))),
                "{label}: a result's other error has an entry of its own: {o}"
            );
        }
        entries += listed.len();
    }
    println!(
        "{} digests: {checked} with a calls line, {failures} failed calls, {entries} diagnostics entries",
        all.len()
    );
    // Not a pass on zeros.
    assert!(checked >= 30 && failures >= 10 && entries >= 20);
}

/// Openings and words of a sentence that plans or doubts, for this test
/// (separate from the digest's own lists).
const PLANNING: &[&str] = &[
    "let me ",
    "let's ",
    "i need to ",
    "i also need to ",
    "i'll ",
    "i will ",
    "i'm going to ",
    "we'll ",
    "next, ",
    "reconsider",
    "not sure",
    "maybe ",
    "perhaps ",
    "might ",
    "i wonder",
];

#[test]
fn decisions_decide() {
    let convs = ranges();
    let (mut answers, mut decisions) = (0, 0);
    for d in digests(&convs) {
        for l in section(&d.text, "Decisions and conclusions") {
            if l.is_empty() {
                continue;
            }
            let (head, text) = l
                .split_once(": ")
                .unwrap_or_else(|| panic!("{}: {l}", d.label));
            assert!(head.starts_with("- Turn "), "{}: {l}", d.label);
            if head.ends_with(" (answer)") {
                answers += 1;
                continue;
            }
            // Not a turn's text that tool calls followed, nor a plan or a
            // doubt or a question.
            assert!(!head.contains('('), "{}: {l}", d.label);
            let lower = text.to_lowercase().replace('’', "'");
            assert!(
                !PLANNING.iter().any(|p| lower.contains(p))
                    && !text.ends_with('?')
                    && !lower.starts_with("if "),
                "{}: not a decision: {l}",
                d.label
            );
            decisions += 1;
        }
    }
    println!("decisions section: {answers} answers, {decisions} key sentences");
    assert!(answers >= 20 && decisions >= 20);
}

/// Sentences that infer or hedge rather than steer, for this test.
const HEDGES: &[&str] = &[
    "don't think",
    "do not think",
    "don't know",
    "must be",
    "must have",
    "pretty sure",
    "i believe",
];

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The user's prose in a message: fenced code left out.
fn prose(message: &str) -> String {
    let mut out = String::new();
    let mut code = false;
    for line in message.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            code = !code;
            continue;
        }
        if !code {
            out.push_str(line);
            out.push('\n');
        }
    }
    collapse(&out)
}

#[test]
fn labels_only_where_the_message_states_one() {
    let convs = ranges();
    let (mut labels, mut quoted) = (0, 0);
    for d in digests(&convs) {
        let log = &convs[d.conv].log;
        // The messages of each turn in the range.
        let mut by_turn: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
        for (i, r) in log.records()[d.lo..=d.hi].iter().enumerate() {
            if let Body::User { content, .. } = &r.body {
                by_turn
                    .entry(log.turn_of(d.lo + i) + 1)
                    .or_default()
                    .push(content);
            }
        }
        let steering = section(&d.text, "Corrections and constraints (the user's words)");
        let mut quoted_turns = std::collections::BTreeSet::new();
        for l in &steering {
            let Some((head, text)) = l.strip_prefix("- Turn ").and_then(|l| l.split_once(": "))
            else {
                continue;
            };
            let turn: u32 = head.parse().unwrap();
            quoted_turns.insert(turn);
            quoted += 1;
            let lower = text.to_lowercase().replace('’', "'");
            assert!(
                !HEDGES.iter().any(|h| lower.contains(h)) && !text.ends_with('?'),
                "{}: not a correction or a constraint: {l}",
                d.label
            );
            // The user's own prose: not code, not a pasted log line.
            let body = text.trim_end_matches('…');
            assert!(
                by_turn[&turn].iter().any(|m| prose(m).contains(body)),
                "{}: not the user's prose: {l}",
                d.label
            );
            assert!(
                !lower.contains(" info ") && !lower.contains(" debug "),
                "{}: a log line: {l}",
                d.label
            );
        }
        for l in section(&d.text, "What the user asked") {
            let Some(head) = l.strip_prefix("- Turn ").and_then(|l| l.split_once(':')) else {
                continue;
            };
            let Some((turn, notes)) = head.0.split_once(" (") else {
                continue;
            };
            if notes.contains("correction") || notes.contains("constraint") {
                labels += 1;
                let turn: u32 = turn.parse().unwrap();
                assert!(
                    quoted_turns.contains(&turn)
                        || steering.iter().any(|l| l.contains("not shown")),
                    "{}: turn {turn} labelled, nothing of it quoted: {l}",
                    d.label
                );
            }
        }
    }
    println!("{labels} requests labelled, {quoted} sentences quoted as corrections or constraints");
    assert!(labels >= 5 && quoted >= 5);
}

#[test]
fn user_messages_are_byte_for_byte() {
    let convs = ranges();
    let (mut whole, mut all, mut long) = (0, 0, 0);
    let mut missing = Vec::new();
    for d in digests(&convs) {
        let log = &convs[d.conv].log;
        for r in &log.records()[d.lo..=d.hi] {
            let Body::User { content, .. } = &r.body else {
                continue;
            };
            let n = content.trim().chars().count();
            if n == 0 {
                continue;
            }
            if n > WHOLE_MAX {
                long += 1;
                continue;
            }
            all += 1;
            if d.text.contains(content.as_str()) {
                whole += 1;
            } else {
                let c: String = content.chars().take(80).collect();
                missing.push(format!("{}: {c:?}", d.label));
            }
        }
    }
    println!(
        "user messages of up to {WHOLE_MAX} characters byte for byte: {whole}/{all} ({long} longer)"
    );
    assert!(missing.is_empty(), "{missing:#?}");
    assert!(all >= 50, "{all} messages");
}
