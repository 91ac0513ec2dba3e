//! Property tests for the projection invariants (SPEC §4) over generated
//! logs (see `common/mod.rs` for what the generator makes).

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};

use common::*;
use ctxfold_core::compaction::{Compaction, ResetTargets, ToolOverride};
use ctxfold_core::projection::{Item, View, project, project_as_of, project_with};
use ctxfold_core::{Body, Log, Record};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn invariants_hold(
        turns in prop::collection::vec(turn(), 1..10),
        comps in prop::collection::vec(comp(), 0..8),
        resets in prop::collection::vec(reset(), 0..3),
        open_end in prop::bool::weighted(0.2),
    ) {
        check_invariants(&build(&turns, &comps, &resets, open_end))?;
    }

    #[test]
    fn no_compactions_means_the_model_visible_events(
        turns in prop::collection::vec(turn(), 1..10),
    ) {
        let log = build(&turns, &[], &[], false);
        let view = project(&log);
        let mut preambles = 0;
        let got: Vec<usize> = view.items.iter().filter_map(|i| match i {
            Item::Event { index, .. } => Some(*index),
            Item::Preamble => {
                preambles += 1;
                None
            }
            other => panic!("unexpected {other:?}"),
        }).collect();
        let expected: Vec<usize> = (0..log.len())
            .filter(|&i| {
                let b = &log.records()[i].body;
                b.is_model_visible() || matches!(b, Body::System { .. })
            })
            .collect();
        prop_assert_eq!(got, expected);
        prop_assert!(view.dropped.is_empty());
        // A preamble exactly when the raw log speaks first as the assistant.
        let first = model_visible(&log).first().map(|&i| &log.records()[i].body);
        let assistant_first = !matches!(first, None | Some(Body::User { .. }));
        prop_assert_eq!(preambles, usize::from(assistant_first));
    }

    #[test]
    fn revoked_and_deferred_compactions_change_nothing(
        turns in prop::collection::vec(turn(), 1..10),
        comps in prop::collection::vec(comp(), 0..8),
        resets in prop::collection::vec(reset(), 0..3),
    ) {
        let log = build(&turns, &comps, &resets, false);
        let view = project(&log);
        let inactive: HashSet<usize> = view.inactive.iter().map(|(i, _)| *i).collect();
        // The same log without the inactive compactions and the resets.
        let kept: Vec<Record> = log
            .records()
            .iter()
            .enumerate()
            .filter(|(i, r)| !inactive.contains(i) && !matches!(r.body, Body::CompactionReset(_)))
            .map(|(_, r)| r.clone())
            .collect();
        let stripped = Log::from_records(kept);
        prop_assert_eq!(signature(&log, &view), signature(&stripped, &project(&stripped)));
    }
}

proptest! {
    /// The view "as of the next turn" (how an assistant's deferred
    /// compaction is previewed) is the view the log gets once that turn
    /// starts; as of the current turn it is the view.
    #[test]
    fn the_view_as_of_the_next_turn_is_the_view_when_it_starts(
        turns in prop::collection::vec(turn(), 1..10),
        comps in prop::collection::vec(comp(), 0..8),
        resets in prop::collection::vec(reset(), 0..3),
    ) {
        let log = build(&turns, &comps, &resets, false);
        let now = (log.turn_count() as u32).saturating_sub(1);
        prop_assert_eq!(
            signature(&log, &project_as_of(&log, now)),
            signature(&log, &project(&log))
        );
        let mut next = log.clone();
        next.push(Record::new(next.next_seq(), "2026-01-01T00:00:00Z", Body::TurnStart));
        prop_assert_eq!(
            signature(&log, &project_as_of(&log, now + 1)),
            signature(&next, &project(&next))
        );
    }
}

/// A view by record indices (the same in a log and in that log with
/// records appended), with every item's kind and text.
fn by_index(view: &View<'_>) -> Vec<String> {
    view.items
        .iter()
        .map(|item| match item {
            Item::Event { index, .. } => format!("E{index}"),
            Item::StrippedCall { index, .. } => format!("C{index}"),
            Item::StrippedResult { index, tool, .. } => format!("R{index}:{tool}"),
            Item::Clipped { index, .. } => format!("K{index}"),
            Item::Summary {
                first,
                last,
                compaction,
                turns,
                text,
                ..
            } => format!("S{first}-{last}@{compaction}{turns:?}:{text}"),
            Item::Preamble => "P".into(),
        })
        .chain(
            view.dropped
                .iter()
                .map(|d| format!("D{}:{:?}", d.index, d.reason)),
        )
        .collect()
}

proptest! {
    /// Measuring compactions without appending them (what previews and
    /// the no-op check do) gives the view appending them would.
    #[test]
    fn projecting_with_extra_compactions_is_appending_them(
        turns in prop::collection::vec(turn(), 1..10),
        comps in prop::collection::vec(comp(), 0..8),
        extra in prop::collection::vec(comp(), 1..4),
        resets in prop::collection::vec(reset(), 0..3),
        ahead in 0..3u32,
    ) {
        let log = build(&turns, &comps, &resets, false);
        // The extra compactions: as the generator makes them (over a copy
        // of the log with more), any ranges will do.
        let with = build(&turns, &extra, &[], false);
        let extra: Vec<Compaction> = with
            .records()
            .iter()
            .filter_map(|r| match &r.body {
                Body::Compaction(c) => Some((**c).clone()),
                _ => None,
            })
            .collect();
        let appended = ctxfold_core::Log::from_records(
            log.records()
                .iter()
                .cloned()
                .chain(extra.iter().enumerate().map(|(k, c)| {
                    Record::new(log.next_seq() + k as u64, "t", Body::Compaction(Box::new(c.clone())))
                }))
                .collect(),
        );
        prop_assume!(!extra.is_empty());
        prop_assert_eq!(appended.turn_count(), log.turn_count());
        let turn = (log.turn_count() as u32).saturating_sub(1) + ahead;
        prop_assert_eq!(
            by_index(&project_with(&log, &extra, turn)),
            by_index(&project_as_of(&appended, turn))
        );
    }
}

/// The generator reaches every case the properties are about: without this
/// the properties could pass on trivial logs.
#[test]
fn generated_logs_exercise_every_case() {
    use ctxfold_core::projection::{DropReason, Inactive};
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let strategy = (
        prop::collection::vec(turn(), 1..10),
        prop::collection::vec(comp(), 0..8),
        prop::collection::vec(reset(), 0..3),
        prop::bool::weighted(0.2),
    );
    let mut runner = TestRunner::deterministic();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for _ in 0..300 {
        let (turns, comps, resets, open_end) = strategy.new_tree(&mut runner).unwrap().current();
        let log = build(&turns, &comps, &resets, open_end);
        let view = project(&log);
        for item in &view.items {
            let k = match item {
                Item::Summary { .. } => "summary",
                Item::StrippedCall { .. } => "stripped call",
                Item::StrippedResult { .. } => "stripped result",
                Item::Clipped { .. } => "clipped",
                Item::Preamble => "preamble",
                Item::Event { .. } => "event",
            };
            *seen.entry(k).or_default() += 1;
        }
        let summaries = view
            .items
            .iter()
            .filter(|i| matches!(i, Item::Summary { .. }))
            .count();
        let distinct: HashSet<usize> = view
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Summary { compaction, .. } => Some(*compaction),
                _ => None,
            })
            .collect();
        if summaries > distinct.len() {
            *seen.entry("summary split around a nested one").or_default() += 1;
        }
        for d in &view.dropped {
            let k = match d.reason {
                DropReason::ReasoningStripped { .. } => "reasoning stripped",
                DropReason::Omitted { .. } => "omitted",
                DropReason::Unpaired => "unpaired",
            };
            *seen.entry(k).or_default() += 1;
        }
        for (_, why) in &view.inactive {
            let k = match why {
                Inactive::Revoked => "revoked",
                Inactive::Deferred => "deferred",
                Inactive::OutOfBounds => "out of bounds",
            };
            *seen.entry(k).or_default() += 1;
        }
    }
    for case in [
        "summary",
        "summary split around a nested one",
        "stripped call",
        "stripped result",
        "reasoning stripped",
        "omitted",
        "unpaired",
        "revoked",
        "deferred",
        "event",
        "preamble",
    ] {
        assert!(
            seen.get(case).copied().unwrap_or(0) > 0,
            "never saw {case}: {seen:?}"
        );
    }
}

/// What happened to each model-visible event, by index: `S@k` inside the
/// summary of compaction k, `E` kept, `C` call stripped, `R` result
/// stripped, `Dr@k` reasoning stripped by k, `Do@k` omitted by k, `Du`
/// unpaired.
fn fates(log: &Log, view: &View<'_>) -> BTreeMap<usize, String> {
    use ctxfold_core::projection::DropReason;
    let mut out = BTreeMap::new();
    for item in &view.items {
        match item {
            Item::Event { index, record } => {
                // System prompts pass through; the reference is about
                // model-visible events.
                if !matches!(record.body, Body::System { .. }) {
                    out.insert(*index, "E".to_owned());
                }
            }
            Item::StrippedCall { index, .. } => {
                out.insert(*index, "C".to_owned());
            }
            Item::StrippedResult { index, .. } => {
                out.insert(*index, "R".to_owned());
            }
            Item::Clipped { index, .. } => {
                out.insert(*index, "K".to_owned());
            }
            Item::Summary {
                first,
                last,
                compaction,
                ..
            } => {
                for i in *first..=*last {
                    if log.records()[i].body.is_model_visible() {
                        out.insert(i, format!("S@{compaction}"));
                    }
                }
            }
            Item::Preamble => {}
        }
    }
    for d in &view.dropped {
        let f = match d.reason {
            DropReason::ReasoningStripped { compaction } => format!("Dr@{compaction}"),
            DropReason::Omitted { compaction } => format!("Do@{compaction}"),
            DropReason::Unpaired => "Du".to_owned(),
        };
        out.insert(d.index, f);
    }
    out
}

/// The reference: SPEC §4 read literally, one event at a time, scanning
/// every compaction for each (quadratic, obviously right).
fn reference_fates(log: &Log) -> BTreeMap<usize, String> {
    let recs = log.records();
    let n = recs.len();
    let last_turn = log.turn_count() as u32 - 1;
    // Revocations, in log order.
    let mut revoked: HashSet<u64> = HashSet::new();
    let mut seen: Vec<u64> = Vec::new();
    for r in recs {
        match &r.body {
            Body::Compaction(_) => seen.push(r.seq),
            Body::CompactionReset(reset) => {
                let targets = match &reset.targets {
                    ResetTargets::All(_) => seen.clone(),
                    ResetTargets::Some(v) => v.clone(),
                };
                for t in targets {
                    if reset.restore {
                        revoked.remove(&t);
                    } else {
                        revoked.insert(t);
                    }
                }
            }
            _ => {}
        }
    }
    // Active compactions with their covered index range.
    let mut active: Vec<(usize, &Compaction, usize, usize)> = Vec::new();
    for (k, r) in recs.iter().enumerate() {
        let Body::Compaction(c) = &r.body else {
            continue;
        };
        if revoked.contains(&r.seq) || c.deferred_until_turn.is_some_and(|t| last_turn < t) {
            continue;
        }
        let lo = match c.from_seq {
            Some(s) => (0..n).find(|&i| recs[i].seq >= s),
            None => (0..n).find(|&i| log.turn_of(i) >= c.from_turn),
        };
        let hi = match c.to_seq {
            Some(s) => (0..n).rev().find(|&i| recs[i].seq <= s),
            None => (0..n)
                .rev()
                .find(|&i| log.turn_of(i) <= c.to_turn.min(last_turn)),
        };
        if let (Some(lo), Some(hi)) = (lo, hi)
            && lo <= hi
        {
            active.push((k, c, lo, hi));
        }
    }
    let winner = |i: usize, has: &dyn Fn(&Compaction) -> bool| -> Option<usize> {
        active
            .iter()
            .filter(|(_, c, lo, hi)| *lo <= i && i <= *hi && has(c))
            .map(|(k, ..)| *k)
            .max()
    };
    let by_k = |k: usize| active.iter().find(|a| a.0 == k).map(|a| a.1).unwrap();
    let summary = |i: usize| winner(i, &|c: &Compaction| c.summary.is_some());
    let tool = |i: usize, name: &str| -> Option<(usize, ToolOverride)> {
        let k = winner(i, &|c: &Compaction| {
            c.tool_calls.is_some() || c.tool_overrides.contains_key(name)
        })?;
        let c = by_k(k);
        let p = match c.tool_overrides.get(name) {
            Some(o) => *o,
            None => c.tool_calls.map_or(ToolOverride::Keep, ToolOverride::from),
        };
        Some((k, p))
    };
    let mut out = BTreeMap::new();
    for i in 0..n {
        let f = match &recs[i].body {
            b if !b.is_model_visible() => continue,
            _ if summary(i).is_some() => format!("S@{}", summary(i).unwrap()),
            Body::Reasoning { .. } => match winner(i, &|c: &Compaction| c.reasoning.is_some()) {
                Some(k) => format!("Dr@{k}"),
                None => "E".into(),
            },
            Body::ToolCall { id, name, .. } => {
                let result = (i + 1..n)
                    .find(|&j| matches!(&recs[j].body, Body::ToolResult { id: r, .. } if r == id));
                // A summary anywhere between the call and its result (or
                // the end of the log) breaks the pair.
                let end = result.unwrap_or(n);
                let straddled =
                    (i + 1..end).any(|k| recs[k].body.is_model_visible() && summary(k).is_some());
                match tool(i, name) {
                    Some((k, ToolOverride::Omit)) => format!("Do@{k}"),
                    _ if straddled => "Du".into(),
                    p => match result {
                        None => "Du".into(),
                        Some(j) if summary(j).is_some() => "Du".into(),
                        Some(_) => match p {
                            Some((_, ToolOverride::Strip | ToolOverride::StripRequests)) => {
                                "C".into()
                            }
                            _ => "E".into(),
                        },
                    },
                }
            }
            Body::ToolResult { id, content, .. } => {
                let call = (0..i)
                    .rev()
                    .find(|&j| matches!(&recs[j].body, Body::ToolCall { id: c, .. } if c == id));
                match call {
                    None => "Du".into(),
                    Some(j) if summary(j).is_some() => "Du".into(),
                    Some(j) => {
                        let Body::ToolCall { name, .. } = &recs[j].body else {
                            unreachable!()
                        };
                        let straddled = (j + 1..i)
                            .any(|k| recs[k].body.is_model_visible() && summary(k).is_some());
                        match tool(j, name) {
                            Some((k, ToolOverride::Omit)) => format!("Do@{k}"),
                            _ if straddled => "Du".into(),
                            _ => match tool(i, name) {
                                Some((_, ToolOverride::Strip | ToolOverride::StripResponses))
                                    if content.chars().count()
                                        > ctxfold_core::projection::KEEP_RESULT_CHARS =>
                                {
                                    "R".into()
                                }
                                _ => "E".into(),
                            },
                        }
                    }
                }
            }
            _ => "E".into(),
        };
        out.insert(i, f);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Which compaction wins, per event and per kind, is exactly what the
    /// reference says.
    #[test]
    fn every_event_meets_the_fate_the_spec_gives_it(
        turns in prop::collection::vec(turn(), 1..10),
        comps in prop::collection::vec(comp(), 0..8),
        resets in prop::collection::vec(reset(), 0..3),
        open_end in prop::bool::weighted(0.2),
    ) {
        let log = build(&turns, &comps, &resets, open_end);
        prop_assert_eq!(fates(&log, &project(&log)), reference_fates(&log));
    }
}

/// Clips, excerpts and diagnostic budgets on the generated compactions,
/// and long and short tool results and user messages (some with several
/// diagnostics), picked by `tweaks`: what the generator leaves out, and
/// where a later compaction can do what an earlier one did.
fn with_tweaks(log: Log, tweaks: &[(u8, u8)]) -> Log {
    if tweaks.is_empty() {
        return log;
    }
    let long_failure = format!(
        "{}\nerror: first failure at src/a.rs:1\nerror: second failure at src/b.rs:2\nerror: third failure at src/c.rs:3\n{}",
        "line ".repeat(100),
        "tail ".repeat(60)
    );
    let records = log
        .records()
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let (a, b) = tweaks[k % tweaks.len()];
            let mut r = r.clone();
            match &mut r.body {
                Body::Compaction(c) => match a % 5 {
                    1 => c.clip_chars = Some(150 + u32::from(b)),
                    2 => c.excerpt_chars = Some(100 + u32::from(b)),
                    3 => c.keep_diagnostics = Some(u32::from(b % 3)),
                    4 => {
                        c.clip_chars = Some(400);
                        c.keep_diagnostics = Some(1);
                    }
                    _ => {}
                },
                Body::ToolResult { content, .. } => match b % 3 {
                    0 => *content = long_failure.clone(),
                    1 => *content = "ok".into(),
                    _ => {}
                },
                Body::User { content, .. } if a % 2 == 0 => *content = "question ".repeat(80),
                _ => {}
            }
            r
        })
        .collect();
    Log::from_records(records)
}

/// What the model is sent, record by record (overlay records left out).
fn sent(log: &Log) -> Vec<Record> {
    ctxfold_core::materialize::materialize(log, &project(log))
}

/// `log` with a reset revoking the compaction at record `i` appended.
fn revoking(log: &Log, i: usize) -> Log {
    let mut out = log.clone();
    out.push(Record::new(
        out.next_seq(),
        "2026-01-01T00:00:00Z",
        Body::CompactionReset(Box::new(ctxfold_core::compaction::CompactionReset {
            targets: ResetTargets::Some(vec![log.records()[i].seq]),
            restore: false,
            extra: ctxfold_core::Object::new(),
        })),
    ));
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// What the listings and the pages say of a compaction is what
    /// revoking it does: every one called in force (active) changes what
    /// the model is sent when revoked; none called superseded or of no
    /// effect does (nor a revoked, deferred or out-of-bounds one).
    #[test]
    fn in_force_means_revoking_changes_the_view(
        turns in prop::collection::vec(turn(), 1..10),
        comps in prop::collection::vec(comp(), 0..10),
        resets in prop::collection::vec(reset(), 0..3),
        tweaks in prop::collection::vec((any::<u8>(), any::<u8>()), 0..12),
        open_end in prop::bool::weighted(0.2),
    ) {
        use ctxfold_core::projection::{Standing, standings};
        let log = with_tweaks(build(&turns, &comps, &resets, open_end), &tweaks);
        let now = sent(&log);
        for (i, standing) in standings(&log) {
            let changed = sent(&revoking(&log, i)) != now;
            prop_assert_eq!(
                changed,
                standing == Standing::Active,
                "compaction at record {} is {} but revoking it {} the view",
                i,
                standing,
                if changed { "changes" } else { "does not change" }
            );
            if let Standing::Superseded { by, .. } = standing {
                // It names a compaction of the log, itself not.
                let number = log.records()[..=i]
                    .iter()
                    .filter(|r| matches!(r.body, Body::Compaction(_)))
                    .count();
                prop_assert!(by >= 1 && by != number, "superseded by #{} (it is #{})", by, number);
            }
        }
    }
}

/// The generator of the property above makes every standing it is about.
#[test]
fn generated_logs_have_superseded_and_no_effect_compactions() {
    use ctxfold_core::projection::{Standing, standings};
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let strategy = (
        prop::collection::vec(turn(), 1..10),
        prop::collection::vec(comp(), 0..10),
        prop::collection::vec(reset(), 0..3),
        prop::collection::vec((any::<u8>(), any::<u8>()), 0..12),
    );
    let mut runner = TestRunner::deterministic();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for _ in 0..300 {
        let (turns, comps, resets, tweaks) = strategy.new_tree(&mut runner).unwrap().current();
        let log = with_tweaks(build(&turns, &comps, &resets, false), &tweaks);
        for s in standings(&log).values() {
            let k = match s {
                Standing::Active => "active",
                Standing::Superseded { more: 0, .. } => "superseded by one",
                Standing::Superseded { .. } => "superseded by several",
                Standing::NoEffect => "no effect",
                Standing::Revoked => "revoked",
                Standing::Deferred(_) => "deferred",
                Standing::OutOfBounds => "out of bounds",
            };
            *seen.entry(k).or_default() += 1;
        }
    }
    for case in [
        "active",
        "superseded by one",
        "superseded by several",
        "no effect",
        "revoked",
        "deferred",
    ] {
        assert!(
            seen.get(case).copied().unwrap_or(0) > 0,
            "never saw {case}: {seen:?}"
        );
    }
    println!("{seen:?}");
}
