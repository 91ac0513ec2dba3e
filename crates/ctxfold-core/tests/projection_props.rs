//! Property tests for the projection invariants (SPEC §4) over generated
//! logs: many turns and steps, parallel tool calls, errors, reasoning,
//! interrupt replies, overlapping and nested compactions (turn- and
//! seq-bounded, some cutting a step in two), deferrals, resets, restores.

use std::collections::{BTreeMap, HashMap, HashSet};

use ctxfold_core::compaction::{
    AllMarker, Compaction, CompactionReset, Provenance, ReasoningPolicy, ResetTargets, Source,
    Summary, ToolOverride, ToolPolicy,
};
use ctxfold_core::projection::{Item, View, project};
use ctxfold_core::{Body, Log, Object, Record};
use proptest::prelude::*;
use serde_json::json;

const TOOLS: [&str; 3] = ["read", "grep", "write"];

#[derive(Debug, Clone)]
struct StepSpec {
    reasoning: bool,
    text: bool,
    calls: Vec<(usize, bool)>, // (tool, is_error)
}

#[derive(Debug, Clone)]
struct TurnSpec {
    steps: Vec<StepSpec>,
    interrupt: bool,
}

#[derive(Debug, Clone)]
struct CompSpec {
    after_turn: usize,
    from: usize,
    to: usize,
    cut: Option<usize>, // end at this record offset inside the `to` turn
    reasoning: bool,
    tools: Option<usize>,
    overrides: Vec<(usize, usize)>,
    summary: bool,
    deferred: Option<usize>,
}

#[derive(Debug, Clone)]
struct ResetSpec {
    after_turn: usize,
    all: bool,
    pick: Vec<usize>,
    restore: bool,
}

fn step() -> impl Strategy<Value = StepSpec> {
    (
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec((0..TOOLS.len(), prop::bool::weighted(0.2)), 0..4),
    )
        .prop_map(|(reasoning, text, calls)| StepSpec {
            reasoning,
            text,
            calls,
        })
}

fn turn() -> impl Strategy<Value = TurnSpec> {
    (
        prop::collection::vec(step(), 0..4),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(steps, interrupt)| TurnSpec { steps, interrupt })
}

fn comp() -> impl Strategy<Value = CompSpec> {
    (
        0..16usize,
        0..16usize,
        0..16usize,
        prop::option::weighted(0.3, 0..12usize),
        any::<bool>(),
        prop::option::of(0..4usize),
        prop::collection::vec((0..TOOLS.len(), 0..5usize), 0..3),
        prop::bool::weighted(0.3),
        prop::option::weighted(0.15, 0..20usize),
    )
        .prop_map(
            |(after_turn, a, b, cut, reasoning, tools, overrides, summary, deferred)| CompSpec {
                after_turn,
                from: a.min(b),
                to: a.max(b),
                cut,
                reasoning,
                tools,
                overrides,
                summary,
                deferred,
            },
        )
}

fn reset() -> impl Strategy<Value = ResetSpec> {
    (
        0..16usize,
        prop::bool::weighted(0.3),
        prop::collection::vec(0..8usize, 1..3),
        prop::bool::weighted(0.3),
    )
        .prop_map(|(after_turn, all, pick, restore)| ResetSpec {
            after_turn,
            all,
            pick,
            restore,
        })
}

const POLICIES: [ToolPolicy; 4] = [
    ToolPolicy::Strip,
    ToolPolicy::StripRequests,
    ToolPolicy::StripResponses,
    ToolPolicy::Omit,
];
const OVERRIDES: [ToolOverride; 5] = [
    ToolOverride::Keep,
    ToolOverride::Strip,
    ToolOverride::StripRequests,
    ToolOverride::StripResponses,
    ToolOverride::Omit,
];

/// Build a log from the specs. `open_end`: leave the last step's last call
/// without its result (a step still running).
fn build(turns: &[TurnSpec], comps: &[CompSpec], resets: &[ResetSpec], open_end: bool) -> Log {
    let mut recs: Vec<Record> = Vec::new();
    let mut turn_starts: Vec<usize> = Vec::new();
    let mut comp_seqs: Vec<u64> = Vec::new();
    let mut call_n = 0;
    let push = |recs: &mut Vec<Record>, b: Body| {
        let seq = recs.len() as u64;
        recs.push(Record::new(seq, "2026-01-01T00:00:00Z", b));
    };
    let last_turn = turns.len() - 1;
    for (t, spec) in turns.iter().enumerate() {
        turn_starts.push(recs.len());
        push(&mut recs, Body::TurnStart);
        push(
            &mut recs,
            Body::User {
                content: format!("question {t}"),
                author: None,
            },
        );
        for (s, st) in spec.steps.iter().enumerate() {
            if st.reasoning {
                push(
                    &mut recs,
                    Body::Reasoning {
                        content: format!("thinking {t}.{s}"),
                    },
                );
            }
            if st.text {
                push(
                    &mut recs,
                    Body::Assistant {
                        content: format!("answer {t}.{s}"),
                    },
                );
            }
            let ids: Vec<String> = st
                .calls
                .iter()
                .map(|_| {
                    call_n += 1;
                    format!("call{call_n}")
                })
                .collect();
            for ((tool, _), id) in st.calls.iter().zip(&ids) {
                push(
                    &mut recs,
                    Body::ToolCall {
                        id: id.clone(),
                        name: TOOLS[*tool].into(),
                        arguments: json!({"path": "src/lib.rs", "body": "x".repeat(300)}),
                    },
                );
            }
            let last_step = t == last_turn && s + 1 == spec.steps.len();
            for (k, ((_, err), id)) in st.calls.iter().zip(&ids).enumerate() {
                if open_end && last_step && k + 1 == ids.len() {
                    continue;
                }
                push(
                    &mut recs,
                    Body::ToolResult {
                        id: id.clone(),
                        content: "result ".repeat(40),
                        is_error: *err,
                    },
                );
            }
        }
        if spec.interrupt {
            push(
                &mut recs,
                Body::User {
                    content: format!("wait {t}"),
                    author: None,
                },
            );
        }
        // Overlay records appended once this turn is done.
        for c in comps.iter().filter(|c| c.after_turn.min(last_turn) == t) {
            let (from, to) = (c.from.min(t), c.to.min(t));
            let mut comp = Compaction::new(from as u32, to as u32, Source::User);
            if let Some(cut) = c.cut {
                let start = turn_starts[to];
                let end = recs.len() - 1;
                let cut_at = (start + cut).min(end);
                // Start a few records into the turn too, sometimes between a
                // call and its result.
                let start_at = (turn_starts[from] + cut % 7).min(end);
                comp.from_seq = Some(recs[start_at].seq);
                comp.to_seq = Some(recs[cut_at].seq);
            }
            comp.reasoning = c.reasoning.then_some(ReasoningPolicy::Strip);
            comp.tool_calls = c.tools.map(|p| POLICIES[p]);
            comp.tool_overrides = c
                .overrides
                .iter()
                .map(|&(tool, o)| (TOOLS[tool].to_owned(), OVERRIDES[o]))
                .collect::<BTreeMap<_, _>>();
            if c.summary {
                comp.summary = Some(Summary {
                    text: format!("summary of {from}-{to}"),
                    provenance: Provenance::Supplied {
                        author: Source::User,
                    },
                });
            }
            comp.deferred_until_turn = c.deferred.map(|d| d as u32);
            comp_seqs.push(recs.len() as u64);
            push(&mut recs, Body::Compaction(Box::new(comp)));
        }
        for r in resets.iter().filter(|r| r.after_turn.min(last_turn) == t) {
            if comp_seqs.is_empty() {
                continue;
            }
            let targets = if r.all {
                ResetTargets::All(AllMarker::All)
            } else {
                ResetTargets::Some(
                    r.pick
                        .iter()
                        .map(|&i| comp_seqs[i % comp_seqs.len()])
                        .collect(),
                )
            };
            push(
                &mut recs,
                Body::CompactionReset(CompactionReset {
                    targets,
                    restore: r.restore,
                    extra: Object::new(),
                }),
            );
        }
    }
    Log::from_records(recs)
}

/// A description of the view that does not depend on record indices.
fn signature(log: &Log, view: &View<'_>) -> Vec<String> {
    let seq = |i: usize| log.records()[i].seq;
    view.items
        .iter()
        .map(|item| match item {
            Item::Event { index, .. } => format!("E{}", seq(*index)),
            Item::StrippedCall { index, .. } => format!("C{}", seq(*index)),
            Item::StrippedResult { index, tool, .. } => format!("R{}:{tool}", seq(*index)),
            Item::Summary {
                first,
                last,
                compaction,
                text,
                ..
            } => format!(
                "S{}-{}@{}:{text}",
                seq(*first),
                seq(*last),
                seq(*compaction)
            ),
            Item::Preamble => "P".into(),
        })
        .collect()
}

fn model_visible(log: &Log) -> Vec<usize> {
    (0..log.len())
        .filter(|&i| log.records()[i].body.is_model_visible())
        .collect()
}

fn call_id<'a>(item: &Item<'a>) -> Option<(&'a str, bool)> {
    let rec = match item {
        Item::Event { record, .. }
        | Item::StrippedCall { record, .. }
        | Item::StrippedResult { record, .. } => record,
        _ => return None,
    };
    match &rec.body {
        Body::ToolCall { id, .. } => Some((id, true)),
        Body::ToolResult { id, .. } => Some((id, false)),
        _ => None,
    }
}

fn check_invariants(log: &Log) -> Result<(), TestCaseError> {
    let view = project(log);

    // Deterministic.
    prop_assert_eq!(signature(log, &view), signature(log, &project(log)));

    // Never starts with the assistant.
    match view.items.first() {
        None | Some(Item::Summary { .. } | Item::Preamble) => {}
        Some(Item::Event { record, .. }) => {
            prop_assert!(
                matches!(record.body, Body::User { .. }),
                "starts with {:?}",
                record.body
            )
        }
        Some(other) => prop_assert!(false, "starts with {:?}", other),
    }

    // Calls and results come in pairs, call first.
    let mut open: HashSet<&str> = HashSet::new();
    let mut results: HashMap<&str, usize> = HashMap::new();
    for item in &view.items {
        if let Some((id, is_call)) = call_id(item) {
            if is_call {
                prop_assert!(open.insert(id), "call {} twice", id);
            } else {
                prop_assert!(
                    open.contains(id),
                    "result {} without its call before it",
                    id
                );
                *results.entry(id).or_default() += 1;
            }
        }
    }
    for id in &open {
        prop_assert_eq!(
            results.get(id).copied(),
            Some(1),
            "call {} without one result",
            id
        );
    }

    // Origins cover every model-visible event exactly once.
    let visible = model_visible(log);
    let visible_set: HashSet<usize> = visible.iter().copied().collect();
    let mut covered: HashMap<usize, usize> = HashMap::new();
    for item in &view.items {
        for i in item.origin() {
            if visible_set.contains(&i) {
                *covered.entry(i).or_default() += 1;
            }
        }
    }
    for d in &view.dropped {
        *covered.entry(d.index).or_default() += 1;
    }
    for i in &visible {
        prop_assert_eq!(
            covered.get(i).copied(),
            Some(1),
            "event {} covered {:?} times",
            i,
            covered.get(i)
        );
    }
    prop_assert_eq!(covered.len(), visible.len());
    Ok(())
}

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
        let got: Vec<usize> = view.items.iter().map(|i| match i {
            Item::Event { index, .. } => *index,
            other => panic!("unexpected {other:?}"),
        }).collect();
        prop_assert_eq!(got, model_visible(&log));
        prop_assert!(view.dropped.is_empty());
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
            Item::Event { index, .. } => {
                out.insert(*index, "E".to_owned());
            }
            Item::StrippedCall { index, .. } => {
                out.insert(*index, "C".to_owned());
            }
            Item::StrippedResult { index, .. } => {
                out.insert(*index, "R".to_owned());
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
