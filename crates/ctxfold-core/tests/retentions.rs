//! [`Retentions`] makes, for any ranges at once, the very reports that
//! [`retention`] makes one range at a time (issue 26: the same output,
//! at the cost of one), over generated logs whose facts overlap, nest
//! inside longer words and paths, repeat, and are quoted by summaries.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use ctxfold_core::compaction::{Provenance, ReasoningPolicy, Source, Summary, ToolPolicy};
use ctxfold_core::kept::{
    Facts, Kept, Listed, RangeFacts, Retentions, facts, kept, listing, retention, view_text,
};
use ctxfold_core::projection::{
    Standing, covered_indices, project, project_as_of, project_with, standings,
};
use ctxfold_core::{Body, Compaction, Log, Record};
use proptest::prelude::*;
use serde_json::json;

/// Texts chosen to meet at their edges: words inside words (`go`, `gone`),
/// a needle overlapping itself (`a a`), paths inside paths.
const WORDS: &[&str] = &[
    "go",
    "go on",
    "gone",
    "a a",
    "a a a",
    "Fix the build,\n  please.",
    "Fix the build, please.",
    "  ",
    "src/lib.rs",
    "crates/x/src/lib.rs",
];

/// The last is longer than a stripped call keeps of an argument: a
/// stripped call does not show it.
const PATHS: &[&str] = &[
    "src/lib.rs",
    "crates/x/src/lib.rs",
    "lib.rs",
    ".",
    "a a",
    "services/billing/internal/reconciliation/ledger/adapters/postgres/migrations/versions/2026_12_06_add_settlement_batches_table.py",
];

const RESULTS: &[&str] = &[
    "error[E0425]: cannot find value `x`\n --> src/lib.rs:3:5",
    "error[E0425]: cannot find value `x`\n --> src/main.rs:9:1",
    "warning: unused variable: `y`\n --> src/lib.rs:4:1",
    "thread 'main' panicked at src/lib.rs:7:3:\nboom",
    "all good",
    "No such file or directory: lib.rs",
    "error[E0308]: mismatched types\n --> src/a.rs:1:1\nerror[E0599]: no method named `z`\n --> src/b.rs:2:2",
];

#[derive(Debug, Clone)]
enum Step {
    User(usize),
    /// A long request of its own words, found nowhere else: lost when a
    /// clip cuts it.
    Ticket,
    Call(usize, usize, bool),
    Say(usize, usize),
    Think,
    /// A compaction of turns `a..=b` (clamped), of kind `k`.
    Fold(u32, u32, usize, usize),
    /// A compaction of the `span` turns ending `back` turns before the
    /// last, of kind `k`; deferred until the next turn when the flag is
    /// set: folds of recent turns, one over another.
    Recent {
        back: u32,
        span: u32,
        kind: usize,
        word: usize,
        deferred: bool,
    },
    Turn,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..WORDS.len()).prop_map(Step::User),
        1 => Just(Step::Ticket),
        3 => (0..PATHS.len(), 0..RESULTS.len(), any::<bool>()).prop_map(|(p, r, e)| Step::Call(p, r, e)),
        2 => (0..WORDS.len(), 0..RESULTS.len()).prop_map(|(w, r)| Step::Say(w, r)),
        1 => Just(Step::Think),
        2 => (0..8u32, 0..8u32, 0..7usize, 0..WORDS.len()).prop_map(|(a, b, k, w)| Step::Fold(a, b, k, w)),
        2 => Just(Step::Turn),
    ]
}

/// Steps of a session folded as it goes: its compactions over recent
/// turns, each overlapping, nesting in or repeating the ones before.
fn overlapping_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..WORDS.len()).prop_map(Step::User),
        1 => Just(Step::Ticket),
        3 => (0..PATHS.len(), 0..RESULTS.len(), any::<bool>()).prop_map(|(p, r, e)| Step::Call(p, r, e)),
        1 => (0..WORDS.len(), 0..RESULTS.len()).prop_map(|(w, r)| Step::Say(w, r)),
        1 => Just(Step::Think),
        3 => (0..3u32, 0..4u32, 0..7usize, 0..WORDS.len(), prop::bool::weighted(0.15)).prop_map(
            |(back, span, kind, word, deferred)| Step::Recent { back, span, kind, word, deferred }
        ),
        3 => Just(Step::Turn),
    ]
}

fn build(steps: &[Step]) -> Log {
    let mut log = Log::new();
    let push = |log: &mut Log, body: Body| {
        let seq = log.next_seq();
        log.push(Record::new(seq, "2026-12-01T00:00:00Z", body));
    };
    push(&mut log, Body::TurnStart);
    let mut call = 0;
    for s in steps {
        match *s {
            Step::User(w) => push(
                &mut log,
                Body::User {
                    content: WORDS[w].into(),
                    author: None,
                },
            ),
            Step::Ticket => {
                let seq = log.next_seq();
                push(
                    &mut log,
                    Body::User {
                        // Long enough for a clip to cut.
                        content: format!(
                            "Please look at ticket {seq} once more: {}",
                            "the failing step again ".repeat(12)
                        ),
                        author: None,
                    },
                )
            }
            Step::Call(p, r, e) => {
                call += 1;
                let id = format!("c{call}");
                push(
                    &mut log,
                    Body::ToolCall {
                        id: id.clone(),
                        name: "cargo_check".into(),
                        arguments:
                            json!({"path": PATHS[p], "files": [PATHS[(p + 1) % PATHS.len()]]})
                                .into(),
                    },
                );
                push(
                    &mut log,
                    Body::ToolResult {
                        id,
                        content: format!("{}\n{}", RESULTS[r], "detail\n".repeat(40)),
                        is_error: e,
                    },
                );
            }
            Step::Say(w, r) => push(
                &mut log,
                Body::Assistant {
                    content: format!("{} {}", WORDS[w], RESULTS[r]),
                },
            ),
            Step::Think => push(
                &mut log,
                Body::Reasoning {
                    content: "thinking it over".into(),
                },
            ),
            Step::Turn => push(&mut log, Body::TurnStart),
            Step::Fold(a, b, k, w) => {
                let turns = log.turn_count() as u32;
                let (from, to) = (a.min(b).min(turns - 1), a.max(b).min(turns - 1));
                push(&mut log, Body::Compaction(Box::new(fold(from, to, k, w))));
            }
            Step::Recent {
                back,
                span,
                kind,
                word,
                deferred,
            } => {
                let turns = log.turn_count() as u32;
                let to = (turns - 1).saturating_sub(back);
                let mut c = fold(to.saturating_sub(span), to, kind, word);
                if deferred {
                    c.deferred_until_turn = Some(turns);
                }
                push(&mut log, Body::Compaction(Box::new(c)));
            }
        }
    }
    log
}

/// A compaction of turns `from..=to` of kind `k`: a policy of one of
/// four kinds, a summary quoting `WORDS[w]`, a strip keeping one
/// diagnostic of each result, or a clip of long texts (so an item may not
/// show all of its own record's facts).
fn fold(from: u32, to: u32, k: usize, w: usize) -> Compaction {
    let source = if k == 4 { Source::Auto } else { Source::User };
    let mut c = Compaction::new(from, to, source);
    match k {
        0 => c.tool_calls = Some(ToolPolicy::Strip),
        1 => c.tool_calls = Some(ToolPolicy::Omit),
        2 => c.reasoning = Some(ReasoningPolicy::Strip),
        3 => c.tool_calls = Some(ToolPolicy::StripResponses),
        5 => {
            c.tool_calls = Some(ToolPolicy::Strip);
            c.keep_diagnostics = Some(1);
        }
        6 => c.clip_chars = Some(12),
        _ => {
            c.summary = Some(Summary {
                text: format!("We said {} and saw {}.", WORDS[w], RESULTS[w % 6]),
                provenance: Provenance::Supplied {
                    author: Source::Assistant,
                },
            })
        }
    }
    c
}

/// The old `union_retention`: facts of the merged ranges, each record once.
fn union_reference(log: &Log, ranges: &[(usize, usize)]) -> Kept {
    let mut spans: Vec<(usize, usize)> = ranges
        .iter()
        .filter(|(lo, hi)| lo <= hi && *hi < log.len())
        .copied()
        .collect();
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (lo, hi) in spans {
        match merged.last_mut() {
            Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    let view = project(log);
    let shown = view_text(&view);
    let mut all = Facts::default();
    let (mut raw, mut kept_tokens) = (0, 0);
    for &(lo, hi) in &merged {
        let f = facts(log, lo, hi);
        all.files.extend(f.files);
        for d in f.diagnostics {
            if !all.diagnostics.iter().any(|e| e.text == d.text) {
                all.diagnostics.push(d);
            }
        }
        all.requests.extend(f.requests);
        let k = retention(log, (lo, hi), &view, &shown);
        raw += k.tokens.0;
        kept_tokens += k.tokens.1;
    }
    let mut out = kept(&all, &shown);
    out.tokens = (raw, kept_tokens);
    out
}

fn without_lost(mut k: Kept) -> Kept {
    k.files.lost.clear();
    k.diagnostics.lost.clear();
    k.requests.lost.clear();
    k
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn many_ranges_at_once_report_what_each_alone_does(
        steps in prop::collection::vec(step(), 1..60),
        picks in prop::collection::vec((0..1000usize, 0..1000usize), 1..12),
    ) {
        let log = build(&steps);
        let n = log.len();
        let ranges: Vec<(usize, usize)> = picks
            .iter()
            .map(|&(a, b)| (a.min(b) % n, a.max(b) % n))
            .map(|(a, b)| (a.min(b), a.max(b)))
            .collect();
        // The view as it is, and one with an extra summary over it all
        // (as the pages measure a revoked compaction).
        let mut again = Compaction::new(0, log.turn_count() as u32 - 1, Source::User);
        again.summary = Some(Summary {
            text: format!("{} {}", WORDS[steps.len() % WORDS.len()], RESULTS[0]),
            provenance: Provenance::Supplied { author: Source::Assistant },
        });
        let extra = [again];
        for view in [project(&log), project_with(&log, &extra, 0)] {
            let text = view_text(&view);
            let one_by_one: Vec<Kept> =
                ranges.iter().map(|&r| retention(&log, r, &view, &text)).collect();
            let r = Retentions::new(&log, &view);
            prop_assert_eq!(&r.of(&ranges, true), &one_by_one);
            // The facts read before the view is (as the listing reads
            // them); read for other ranges, or of another log, they are
            // read again: the same reports.
            let ahead = RangeFacts::read(&log, &ranges);
            prop_assert_eq!(&r.of_read(ahead, &ranges, true), &one_by_one);
            let fewer = RangeFacts::read(&log, &ranges[..1]);
            prop_assert_eq!(&r.of_read(fewer, &ranges, true), &one_by_one);
            let other = build(&steps);
            let elsewhere = RangeFacts::read(&other, &ranges);
            prop_assert_eq!(&r.of_read(elsewhere, &ranges, true), &one_by_one);
            let counted: Vec<Kept> = one_by_one.into_iter().map(without_lost).collect();
            prop_assert_eq!(r.of(&ranges, false), counted);
        }
        let view = project(&log);
        let r = Retentions::new(&log, &view);
        prop_assert_eq!(r.union(&ranges), union_reference(&log, &ranges));
        // Read as the projection makes its items, the view never held.
        let projecting = Retentions::projecting(&log);
        prop_assert_eq!(projecting.of(&ranges, true), r.of(&ranges, true));
        prop_assert_eq!(projecting.union(&ranges), r.union(&ranges));
    }
}

/// A log long enough that its facts are read in parallel parts and in more
/// than one chunk (`kept/batch.rs` reads 16,384 records at a time, split
/// between the cores): the reports are still the one-range-at-a-time ones.
#[test]
fn a_log_read_in_parallel_parts_reports_what_each_range_alone_does() {
    // A fixed pseudo-random walk over every kind of step (an LCG: the
    // same log on every run).
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |m: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize % m
    };
    let steps: Vec<Step> = (0..28_000)
        .map(|_| match next(13) {
            0..=2 => Step::User(next(WORDS.len())),
            3..=5 => Step::Call(next(PATHS.len()), next(RESULTS.len()), next(2) == 0),
            6..=7 => Step::Say(next(WORDS.len()), next(RESULTS.len())),
            8 => Step::Think,
            9..=10 => Step::Fold(next(8) as u32, next(8) as u32, next(5), next(WORDS.len())),
            _ => Step::Turn,
        })
        .collect();
    let log = build(&steps);
    let n = log.len();
    // Three chunks, the last long enough to be read in parts too.
    assert!(n > 2 * (1 << 14) + 1024, "{n} records: too few");
    let ranges = [
        (0, n - 1),
        (1_000, 17_000),
        (16_000, 16_500),
        (n / 2, n - 1),
        (5, 5),
    ];
    let view = project(&log);
    let text = view_text(&view);
    let one_by_one: Vec<Kept> = ranges
        .iter()
        .map(|&r| retention(&log, r, &view, &text))
        .collect();
    assert_eq!(Retentions::new(&log, &view).of(&ranges, true), one_by_one);
    assert!(
        one_by_one[0].diagnostics.total > 0 && one_by_one[0].files.total > 0,
        "the log holds facts to compare"
    );
}

/// The listing as defined one compaction at a time: each record's
/// standing, and for one in force the report of its range alone in the
/// view as it is, for a deferred one due by the next turn in the view it
/// will come into force in.
fn listing_reference(log: &Log, lost: bool) -> Vec<Listed> {
    let next = log.turn_count() as u32;
    let (now, later) = (project(log), project_as_of(log, next));
    let (now_text, later_text) = (view_text(&now), view_text(&later));
    let statuses = standings(log);
    log.records()
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match &r.body {
            Body::Compaction(c) => Some((i, c)),
            _ => None,
        })
        .enumerate()
        .map(|(n, (i, c))| {
            let standing = statuses.get(&i).copied();
            let due = c.deferred_until_turn.is_some_and(|t| t <= next);
            let kept = match standing {
                Some(Standing::Active) => {
                    covered_indices(log, c).map(|r| retention(log, r, &now, &now_text))
                }
                Some(Standing::Deferred(_)) if due => {
                    covered_indices(log, c).map(|r| retention(log, r, &later, &later_text))
                }
                _ => None,
            };
            Listed {
                number: n + 1,
                index: i,
                standing,
                kept: kept.map(|k| if lost { k } else { without_lost(k) }),
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// What `c show` lists (issue 48) on a session whose compactions fold
    /// recent turns one over another, overlapping, nesting and repeating,
    /// some deferred: every compaction's standing and report are those of
    /// its range alone, with and without the lists of what was lost.
    #[test]
    fn the_listing_of_overlapping_compactions_is_each_range_alone(
        steps in prop::collection::vec(overlapping_step(), 1..90),
    ) {
        let log = build(&steps);
        prop_assert_eq!(listing(&log, true), listing_reference(&log, true));
        prop_assert_eq!(listing(&log, false), listing_reference(&log, false));
    }
}

/// The generator above makes the shape it is for: compactions in force
/// whose ranges overlap without nesting, and deferred ones due next.
#[test]
fn generated_sessions_have_overlapping_compactions_in_force() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let strategy = prop::collection::vec(overlapping_step(), 1..90);
    let mut runner = TestRunner::deterministic();
    let (mut overlapping, mut due) = (0, 0);
    for _ in 0..300 {
        let log = build(&strategy.new_tree(&mut runner).unwrap().current());
        let listed = listing(&log, false);
        let ranges: Vec<(usize, usize)> = listed
            .iter()
            .filter(|l| l.standing == Some(Standing::Active))
            .filter_map(|l| match &log.records()[l.index].body {
                Body::Compaction(c) => covered_indices(&log, c),
                _ => None,
            })
            .collect();
        let crossing = ranges.iter().enumerate().any(|(a, x)| {
            ranges[a + 1..].iter().any(|y| {
                x.0 < y.0 && y.0 <= x.1 && x.1 < y.1 || y.0 < x.0 && x.0 <= y.1 && y.1 < x.1
            })
        });
        overlapping += usize::from(crossing);
        due += usize::from(
            listed
                .iter()
                .any(|l| matches!(l.standing, Some(Standing::Deferred(_))) && l.kept.is_some()),
        );
    }
    assert!(
        overlapping >= 100,
        "{overlapping} of 300 sessions had overlapping compactions in force"
    );
    assert!(
        due >= 10,
        "{due} of 300 sessions had a deferred compaction due"
    );
}
