//! The log generator the property tests share: many turns and steps,
//! parallel tool calls, errors, reasoning, interrupt replies, turns that open
//! without a user message, a system prompt, overlapping and nested
//! compactions (turn- and seq-bounded, some cutting a step in two),
//! deferrals, resets, restores; and the projection invariants (SPEC §4).
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};

use ctxfold_core::compaction::{
    AllMarker, Compaction, CompactionReset, Provenance, ReasoningPolicy, ResetTargets, Source,
    Summary, ToolOverride, ToolPolicy,
};
use ctxfold_core::projection::{Item, View, project};
use ctxfold_core::{Body, Log, Object, Record};
use proptest::prelude::*;
use serde_json::json;

pub const TOOLS: [&str; 3] = ["read", "grep", "write"];

#[derive(Debug, Clone)]
pub struct StepSpec {
    reasoning: bool,
    text: bool,
    calls: Vec<(usize, bool)>, // (tool, is_error)
}

#[derive(Debug, Clone)]
pub struct TurnSpec {
    steps: Vec<StepSpec>,
    interrupt: bool,
    /// Opens with a user message; without one (an imported transcript that
    /// starts with the assistant, a turn resumed mid-step) the view may need
    /// a preamble.
    user: bool,
    /// A system prompt at the start (used for the first turn only).
    system: bool,
}

#[derive(Debug, Clone)]
pub struct CompSpec {
    after_turn: usize,
    from: usize,
    to: usize,
    cut: Option<usize>, // end at this record offset inside the `to` turn
    reasoning: bool,
    tools: Option<usize>,
    overrides: Vec<(usize, usize)>,
    summary: bool,
    pub deferred: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct ResetSpec {
    after_turn: usize,
    all: bool,
    pick: Vec<usize>,
    restore: bool,
}

pub fn step() -> impl Strategy<Value = StepSpec> {
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

pub fn turn() -> impl Strategy<Value = TurnSpec> {
    (
        prop::collection::vec(step(), 0..4),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.85),
        prop::bool::weighted(0.3),
    )
        .prop_map(|(steps, interrupt, user, system)| TurnSpec {
            steps,
            interrupt,
            user,
            system,
        })
}

pub fn comp() -> impl Strategy<Value = CompSpec> {
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

pub fn reset() -> impl Strategy<Value = ResetSpec> {
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

pub const POLICIES: [ToolPolicy; 4] = [
    ToolPolicy::Strip,
    ToolPolicy::StripRequests,
    ToolPolicy::StripResponses,
    ToolPolicy::Omit,
];
pub const OVERRIDES: [ToolOverride; 5] = [
    ToolOverride::Keep,
    ToolOverride::Strip,
    ToolOverride::StripRequests,
    ToolOverride::StripResponses,
    ToolOverride::Omit,
];

/// Build a log from the specs. `open_end`: leave the last step's last call
/// without its result (a step still running).
pub fn build(turns: &[TurnSpec], comps: &[CompSpec], resets: &[ResetSpec], open_end: bool) -> Log {
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
        if t == 0 && spec.system {
            push(
                &mut recs,
                Body::System {
                    content: "you are a test".into(),
                },
            );
        }
        if spec.user {
            push(
                &mut recs,
                Body::User {
                    content: format!("question {t}"),
                    author: None,
                },
            );
        }
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
                        arguments: json!({"path": "src/lib.rs", "body": "x".repeat(300)}).into(),
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
                Body::CompactionReset(Box::new(CompactionReset {
                    targets,
                    restore: r.restore,
                    extra: Object::new(),
                })),
            );
        }
    }
    Log::from_records(recs)
}

/// A description of the view that does not depend on record indices.
pub fn signature(log: &Log, view: &View<'_>) -> Vec<String> {
    let seq = |i: usize| log.records()[i].seq;
    view.items
        .iter()
        .map(|item| match item {
            Item::Event { index, .. } => format!("E{}", seq(*index)),
            Item::StrippedCall { index, .. } => format!("C{}", seq(*index)),
            Item::StrippedResult { index, tool, .. } => format!("R{}:{tool}", seq(*index)),
            Item::Clipped {
                index, keep_chars, ..
            } => format!("K{}:{keep_chars}", seq(*index)),
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

pub fn model_visible(log: &Log) -> Vec<usize> {
    (0..log.len())
        .filter(|&i| log.records()[i].body.is_model_visible())
        .collect()
}

pub fn call_id<'a>(item: &Item<'a>) -> Option<(&'a str, bool)> {
    let rec = match item {
        Item::Event { record, .. }
        | Item::StrippedCall { record, .. }
        | Item::StrippedResult { record, .. }
        | Item::Clipped { record, .. } => record,
        _ => return None,
    };
    match &rec.body {
        Body::ToolCall { id, .. } => Some((id, true)),
        Body::ToolResult { id, .. } => Some((id, false)),
        _ => None,
    }
}

pub fn check_invariants(log: &Log) -> Result<(), TestCaseError> {
    let view = project(log);

    // Deterministic.
    prop_assert_eq!(signature(log, &view), signature(log, &project(log)));

    // Never starts with the assistant (system prompts aside).
    let first = view.items.iter().find(
        |i| !matches!(i, Item::Event { record, .. } if matches!(record.body, Body::System { .. })),
    );
    match first {
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
