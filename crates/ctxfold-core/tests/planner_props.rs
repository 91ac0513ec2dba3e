//! Property tests for the planner's summary overlap rules (SPEC §5) and for
//! the range bounds and the `-k` DSL parser, over generated logs (see
//! `common/mod.rs`).

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::*;
use ctxfold_core::bounds::{Bound, Clock};
use ctxfold_core::compaction::{Provenance, ReasoningPolicy, Source, Summary, ToolPolicy};
use ctxfold_core::planner::{PlanContext, PlanError, Rule, SummaryRequest, plan};
use ctxfold_core::projection::{Inactive, compaction_status, covered_indices};
use ctxfold_core::{Body, Log, Record, dsl};
use proptest::prelude::*;

/// Index ranges of the summaries in force or deferred: what a new summary
/// must not slice.
fn summaries(log: &Log) -> Vec<(usize, usize)> {
    let (active, inactive) = compaction_status(log);
    let deferred = inactive
        .iter()
        .filter(|(_, why)| *why == Inactive::Deferred)
        .map(|(i, _)| i);
    active
        .iter()
        .chain(deferred)
        .filter_map(|&i| match &log.records()[i].body {
            Body::Compaction(c) if c.summary.is_some() => covered_indices(log, c),
            _ => None,
        })
        .collect()
}

/// Two ranges overlap without one holding the other.
fn slices(a: (usize, usize), b: (usize, usize)) -> bool {
    let overlap = a.0 <= b.1 && b.0 <= a.1;
    let nested = (a.0 <= b.0 && b.1 <= a.1) || (b.0 <= a.0 && a.1 <= b.1);
    overlap && !nested
}

#[derive(Debug, Clone)]
struct RuleSpec {
    from: u32,
    to: u32,
    kind: usize, // 0 derived summary, 1 supplied summary, 2 mechanical
}

fn rule_spec() -> impl Strategy<Value = RuleSpec> {
    (1..12u32, 1..12u32, 0..3usize).prop_map(|(a, b, kind)| RuleSpec {
        from: a.min(b),
        to: a.max(b),
        kind,
    })
}

fn rule(spec: &RuleSpec) -> Rule {
    let mut r = Rule {
        from: Some(Bound::Turn(spec.from)),
        to: Some(Bound::Turn(spec.to)),
        ..Rule::default()
    };
    match spec.kind {
        0 => {
            r.summary = Some(SummaryRequest::Derive {
                model: None,
                instructions: None,
            })
        }
        1 => {
            r.summary = Some(SummaryRequest::Supplied {
                text: format!("turns {} to {}", spec.from, spec.to),
                author: Source::User,
            })
        }
        _ => {
            r.reasoning = Some(ReasoningPolicy::Strip);
            r.tool_calls = Some(ToolPolicy::Strip);
        }
    }
    r
}

/// `log` with the planned compactions appended, derived summaries given a
/// text as a summarizer would.
fn apply(log: &Log, planned: &[ctxfold_core::planner::Planned]) -> Log {
    let mut after = log.clone();
    for p in planned {
        let mut c = p.compaction.clone();
        if p.derive.is_some() {
            c.summary = Some(Summary {
                text: "derived".into(),
                provenance: Provenance::Derived {
                    summarizer: "test".into(),
                    version: None,
                    instructions: None,
                    method: None,
                },
            });
        }
        let seq = after.next_seq();
        after.push(Record::new(seq, "t", Body::Compaction(Box::new(c))));
    }
    after
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever the log already holds, a run of rules never records a
    /// summary that slices another; a derived summary covers at least what
    /// was asked (it only grows); a supplied one is refused exactly when it
    /// would slice; and the log that results still projects validly.
    #[test]
    fn summaries_never_slice_each_other(
        turns in prop::collection::vec(turn(), 1..10),
        comps in prop::collection::vec(comp(), 0..6),
        resets in prop::collection::vec(reset(), 0..2),
        specs in prop::collection::vec(rule_spec(), 1..4),
    ) {
        let log = build(&turns, &comps, &resets, false);
        let rules: Vec<Rule> = specs.iter().map(rule).collect();
        let existing = summaries(&log);
        match plan(&log, &rules, &PlanContext::default()) {
            Ok(p) => {
                let mut seen = existing.clone();
                for planned in &p.planned {
                    let spec = &specs[planned.rule];
                    if spec.kind == 2 {
                        continue;
                    }
                    for &other in &seen {
                        prop_assert!(
                            !slices(planned.range, other),
                            "rule {:?} planned {:?}, slicing {:?}", spec, planned.range, other
                        );
                    }
                    if spec.kind == 0 {
                        // Grown, never shrunk: the asked turns are inside.
                        let c = &planned.compaction;
                        let asked_from = (spec.from - 1).min(log.turn_count() as u32 - 1);
                        prop_assert!(c.from_turn <= asked_from, "{:?} {:?}", spec, c);
                        let asked_to = (spec.to - 1).min(log.turn_count() as u32 - 1);
                        prop_assert!(c.to_turn >= asked_to, "{:?} {:?}", spec, c);
                        // And it is no repeat of a summary in force.
                        prop_assert!(!seen.contains(&planned.range));
                    }
                    seen.push(planned.range);
                }
                check_invariants(&apply(&log, &p.planned))?;
            }
            Err(PlanError::SuppliedOverlap { rule, .. }) => {
                // Refused only for a written summary that really slices one
                // in force or planned by an earlier rule of the run.
                prop_assert_eq!(specs[rule - 1].kind, 1);
                let earlier = plan(&log, &rules[..rule - 1], &PlanContext::default()).unwrap();
                let mut known = existing.clone();
                known.extend(
                    earlier
                        .planned
                        .iter()
                        .filter(|p| p.compaction.summary.is_some() || p.derive.is_some())
                        .map(|p| p.range),
                );
                let alone = plan(&log, &rules[rule - 1..rule], &PlanContext::default());
                let range = match alone {
                    Ok(p) => p.planned.first().map(|p| p.range),
                    Err(_) => None,
                };
                if let Some(range) = range {
                    prop_assert!(known.iter().any(|&k| slices(range, k)), "{:?} {:?}", range, known);
                }
            }
            Err(e) => prop_assert!(false, "unexpected error {}", e),
        }
    }

    /// Asking twice for the same derived summary records it once: the
    /// second run plans nothing and says why.
    #[test]
    fn a_summarized_range_is_not_summarized_again(
        turns in prop::collection::vec(turn(), 1..10),
        spec in rule_spec(),
    ) {
        let log = build(&turns, &[], &[], false);
        let derive = rule(&RuleSpec { kind: 0, ..spec });
        let first = plan(&log, std::slice::from_ref(&derive), &PlanContext::default()).unwrap();
        prop_assume!(!first.planned.is_empty());
        let after = apply(&log, &first.planned);
        let again = plan(&after, &[derive], &PlanContext::default()).unwrap();
        prop_assert!(again.planned.is_empty());
        prop_assert!(again.skipped[0].reason.contains("already summarized"), "{}", again.skipped[0].reason);
    }

    /// Bounds print as they are typed and read back the same.
    #[test]
    fn bounds_read_back_what_they_print(n in 1..100_000u32, minutes in 1..100_000i64, which in 0..4usize) {
        let b = match which {
            0 => Bound::Turn(n),
            1 => Bound::FromEnd(n),
            2 => Bound::Ago(jiff::SignedDuration::from_mins(minutes)),
            _ => Bound::LastCompaction,
        };
        prop_assert_eq!(b.to_string().parse::<Bound>().unwrap(), b);
    }

    /// Turn bounds resolve as SPEC §5 says, on any log: `N` is turn N, `-N`
    /// as a start is the N-th turn from the end, as an end leaves N out.
    #[test]
    fn turn_bounds_resolve_as_the_spec_says(
        turns in prop::collection::vec(turn(), 1..10),
        k in 1..15u32,
    ) {
        let log = build(&turns, &[], &[], false);
        let n = log.turn_count() as i64;
        let clock = Clock { now: None };
        prop_assert_eq!(Bound::Turn(k).resolve_start(&log, clock).unwrap(), k as i64 - 1);
        prop_assert_eq!(Bound::Turn(k).resolve_end(&log, clock).unwrap(), (k as i64 - 1).min(n - 1));
        prop_assert_eq!(Bound::FromEnd(k).resolve_start(&log, clock).unwrap(), (n - k as i64).max(0));
        prop_assert_eq!(Bound::FromEnd(k).resolve_end(&log, clock).unwrap(), n - 1 - k as i64);
    }

    /// Any text at all: the parsers answer (a value or an error), never
    /// panic, and a DSL error points inside the spec.
    #[test]
    fn parsers_never_panic_and_errors_point_inside(text in "\\PC{0,24}") {
        let _ = text.parse::<Bound>();
        let _ = text.parse::<ctxfold_core::bounds::Keep>();
        if let Err(e) = dsl::parse(&text) {
            prop_assert!(e.position <= text.chars().count(), "{:?} in {:?}", e, text);
            prop_assert!(!e.message.is_empty());
        }
    }

    /// Every well-formed spec parses to the rule it spells.
    #[test]
    fn well_formed_specs_parse_to_what_they_spell(
        r in any::<bool>(),
        t in prop::option::of(0..7usize),
        s in any::<bool>(),
        order in Just(()).prop_perturb(|_, mut rng| rng.next_u32()),
        from in prop::option::of(1..50u32),
        to in prop::option::of(1..50u32),
        range_form in 0..3usize,
    ) {
        prop_assume!(r || t.is_some() || s);
        const MODES: [(&str, ToolPolicy); 7] = [
            ("t", ToolPolicy::Strip),
            ("t=strip", ToolPolicy::Strip),
            ("t=strip-requests", ToolPolicy::StripRequests),
            ("t=sreq", ToolPolicy::StripRequests),
            ("t=strip-responses", ToolPolicy::StripResponses),
            ("t=sres", ToolPolicy::StripResponses),
            ("t=omit", ToolPolicy::Omit),
        ];
        let mut parts: Vec<&str> = Vec::new();
        if r { parts.push("r"); }
        if let Some(m) = t { parts.push(MODES[m].0); }
        if s { parts.push("s"); }
        let k = order as usize % parts.len();
        parts.rotate_left(k);
        let mut spec = parts.join("+");
        let (want_from, want_to) = match range_form {
            // FROM..TO, either side optional.
            0 => {
                spec.push_str(&format!(
                    ":{}..{}",
                    from.map(|f| f.to_string()).unwrap_or_default(),
                    to.map(|t| format!("-{t}")).unwrap_or_default()
                ));
                (from.map(Bound::Turn), to.map(Bound::FromEnd))
            }
            // A single -N is an end, a single N a start.
            1 => match from {
                Some(f) => {
                    spec.push_str(&format!(":{f}"));
                    (Some(Bound::Turn(f)), None)
                }
                None => {
                    spec.push_str(":-2");
                    (None, Some(Bound::FromEnd(2)))
                }
            },
            _ => (None, None),
        };
        let rule = dsl::parse(&spec).unwrap();
        prop_assert_eq!(rule.reasoning.is_some(), r, "{}", spec);
        prop_assert_eq!(rule.tool_calls, t.map(|m| MODES[m].1), "{}", spec);
        prop_assert_eq!(rule.summary.is_some(), s, "{}", spec);
        prop_assert_eq!((rule.from, rule.to), (want_from, want_to), "{}", spec);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The built-in rule's step folding (`keep_steps`): each compaction of
    /// old steps lies in one turn, starts and ends at step boundaries,
    /// holds no user message, never parts a call from its result, never
    /// covers an open step or one of the last `keep` steps of the kept
    /// turns taken together; a mechanical rule folds exactly the steps of
    /// the kept turns that have at least `keep` kept steps after them and
    /// no open step before them in their turn; and the log with the
    /// compactions appended projects validly.
    #[test]
    fn old_steps_fold_whole_and_closed(
        turns in prop::collection::vec(turn(), 1..8),
        comps in prop::collection::vec(comp(), 0..4),
        open_end in any::<bool>(),
        keep in 1..5u32,
        summarize in any::<bool>(),
    ) {
        let log = build(&turns, &comps, &[], open_end);
        let rule = Rule {
            keep_steps: Some(keep),
            summary: summarize.then(|| SummaryRequest::Supplied {
                text: "s".into(),
                author: Source::User,
            }),
            ..Rule::builtin()
        };
        let Ok(p) = plan(&log, std::slice::from_ref(&rule), &PlanContext::default()) else {
            // A supplied summary may be refused (it would slice another).
            prop_assume!(false);
            return Ok(());
        };
        // The turns the built-in keeps keep (first 1, last 3), and how many
        // of their steps come after each of their steps.
        let n = log.turn_count() as u32;
        let kept = |t: u32| t == 0 || t + 3 >= n;
        let after_step = |t: u32, i: usize| -> usize {
            log.steps(t).len() - 1 - i
                + (t + 1..n).filter(|&u| kept(u)).map(|u| log.steps(u).len()).sum::<usize>()
        };
        let mut folded: Vec<(u32, usize)> = Vec::new();
        let mut with = log.clone();
        for planned in &p.planned {
            let (lo, hi) = planned.range;
            let c = &planned.compaction;
            with.push(Record::new(with.next_seq(), "t", Body::Compaction(Box::new(c.clone()))));
            if log.turn_range(c.from_turn).is_some_and(|r| r.start == lo) {
                // The rule's range of whole turns.
                continue;
            }
            prop_assert_eq!(c.from_turn, c.to_turn, "old steps of one turn");
            let steps = log.steps(c.from_turn);
            let first = steps.iter().position(|s| s.start == lo);
            let last = steps.iter().position(|s| s.end == hi + 1);
            prop_assert!(first.is_some() && last.is_some(), "step bounds: {:?} in {:?}", (lo, hi), steps);
            let (Some(first), Some(last)) = (first, last) else { unreachable!() };
            prop_assert!(
                !log.records()[lo..=hi].iter().any(|r| matches!(r.body, Body::User { .. })),
                "no user message in a fold of steps"
            );
            prop_assert!(steps[..=last].iter().all(|s| s.closed), "closed steps only");
            prop_assert!(kept(c.from_turn), "steps of a kept turn");
            prop_assert!(
                after_step(c.from_turn, last) >= keep as usize,
                "the last {} steps of the kept turns stay", keep
            );
            folded.extend((first..=last).map(|i| (c.from_turn, i)));
            // No call parted from its result.
            let ids = |range: std::ops::RangeInclusive<usize>| -> Vec<(String, bool)> {
                log.records()[range]
                    .iter()
                    .filter_map(|r| match &r.body {
                        Body::ToolCall { id, .. } => Some((id.clone(), true)),
                        Body::ToolResult { id, .. } => Some((id.clone(), false)),
                        _ => None,
                    })
                    .collect()
            };
            let inside = ids(lo..=hi);
            for (id, _) in &inside {
                prop_assert_eq!(inside.iter().filter(|(i, _)| i == id).count() % 2, 0, "pair {} split", id);
            }
        }
        if !summarize {
            // A mechanical rule plans every run (a summary may be one
            // already in force, and is then left out).
            let want: Vec<(u32, usize)> = (0..n)
                .filter(|&t| kept(t))
                .flat_map(|t| {
                    let steps = log.steps(t);
                    (0..steps.len())
                        .filter(|&i| {
                            after_step(t, i) >= keep as usize
                                && steps[..=i].iter().all(|s| s.closed)
                        })
                        .map(|i| (t, i))
                        .collect::<Vec<_>>()
                })
                .collect();
            prop_assert_eq!(folded, want, "the steps folded");
        }
        check_invariants(&with)?;
    }
}

/// The generator of the property above makes turns long enough for step
/// folds: without this it could pass on logs with nothing to fold.
#[test]
fn the_step_property_reaches_step_folds() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = (prop::collection::vec(turn(), 1..8), 1..5u32);
    let mut reached = 0;
    for _ in 0..200 {
        let (turns, keep) = strategy.new_tree(&mut runner).unwrap().current();
        let log = build(&turns, &[], &[], false);
        let rule = Rule {
            keep_steps: Some(keep),
            ..Rule::builtin()
        };
        let p = plan(&log, &[rule], &PlanContext::default()).unwrap();
        reached += p
            .planned
            .iter()
            .filter(|pl| {
                log.turn_range(pl.compaction.from_turn)
                    .is_some_and(|r| r.start != pl.range.0)
            })
            .count();
    }
    assert!(reached > 20, "step folds generated: {reached}");
}
