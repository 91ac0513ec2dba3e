//! What new compactions change in the view, event by event, so that a
//! compaction that would change nothing is never recorded and reports say
//! only what was done.

use ctxfold_core::planner::{Plan, Skipped};
use ctxfold_core::projection::{Item, View, covered_indices, project, project_as_of, project_with};
use ctxfold_core::report::{Fate, fates};
use ctxfold_core::{Body, Compaction, Log, Record};
use serde::Serialize;

/// What one new compaction changes in the view, by kind of event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Effect {
    /// Events folded into its summary.
    pub summarized: usize,
    /// Reasoning blocks it drops.
    pub reasoning_stripped: usize,
    /// Tool calls whose long arguments it strips.
    pub stripped_calls: usize,
    /// Tool results it replaces by one line.
    pub stripped_results: usize,
    /// Tool calls and results it omits.
    pub omitted: usize,
    /// Tool results and user messages it shows as their head and tail.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub clipped: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Effect {
    /// Whether it changes nothing.
    pub fn is_none(&self) -> bool {
        *self == Effect::default()
    }

    /// What it changed, in words (only what it actually did).
    pub fn describe(&self, c: &Compaction) -> Vec<String> {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut out = Vec::new();
        if self.summarized > 0 {
            let by = c
                .describe()
                .into_iter()
                .find(|d| d.starts_with("summary"))
                .unwrap_or_else(|| "summary".into());
            out.push(format!(
                "{by} in place of {}",
                plural(self.summarized, "event", "events")
            ));
        }
        // `n` things `done`, when there are any.
        let some = |out: &mut Vec<String>, n: usize, (one, many): (&str, &str), done: &str| {
            if n > 0 {
                out.push(format!("{} {done}", plural(n, one, many)));
            }
        };
        let reasoning = ("reasoning block", "reasoning blocks");
        some(&mut out, self.reasoning_stripped, reasoning, "stripped");
        let calls = plural(self.stripped_calls, "tool request", "tool requests");
        let results = plural(self.stripped_results, "tool result", "tool results");
        match (self.stripped_calls, self.stripped_results) {
            (0, 0) => {}
            (_, 0) => out.push(format!("{calls} stripped")),
            (0, _) => out.push(format!("{results} stripped")),
            _ => out.push(format!("{calls} and {results} stripped")),
        }
        some(
            &mut out,
            self.omitted,
            ("tool event", "tool events"),
            "omitted",
        );
        let long = ("long message or result", "long messages or results");
        some(&mut out, self.clipped, long, "cut to their head and tail");
        out
    }
}

/// `log` with `compactions` appended in memory (numbered after it).
pub fn with_compactions(log: &Log, compactions: &[Compaction], ts: &str) -> Log {
    let mut after = log.clone();
    for c in compactions {
        let seq = after.next_seq();
        after.push(Record::new(seq, ts, Body::Compaction(Box::new(c.clone()))));
    }
    after
}

/// What each of `compactions` (appended after `log`) changes in the view:
/// the events whose fate differs from the view without them, each put to
/// the compaction that decided it. Stripping is put to the latest of them
/// that covers the event with a tool policy.
pub fn effects(log: &Log, compactions: &[Compaction]) -> Vec<Effect> {
    let turn = highest_turn(log);
    let before = fates(log, &project(log));
    let after = fates(log, &project_with(log, compactions, turn));
    effects_of(log, &before, &after, compactions)
}

/// What `compaction` changes, and the size of the view before and after it
/// (each item counted with `count`): one projection each way.
pub fn assess(
    log: &Log,
    compaction: &Compaction,
    count: impl Fn(&Item<'_>) -> usize,
) -> (Effect, usize, usize) {
    let a = assess_as_of(log, compaction, highest_turn(log), count);
    (a.effect, a.tokens.0, a.tokens.1)
}

/// What a compaction would do, measured on the view as of some turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    /// What it changes.
    pub effect: Effect,
    /// The view's size without it and with it.
    pub tokens: (usize, usize),
    /// The records whose fate it changes, with their new fate.
    pub changed: Vec<(usize, Fate)>,
}

/// [`assess`] once the log's highest turn index reaches `turn` (deferred
/// compactions due by then in force, `compaction`'s own deferral
/// included), with the records it changes. Two projections, no copy of
/// the log.
pub fn assess_as_of(
    log: &Log,
    compaction: &Compaction,
    turn: u32,
    count: impl Fn(&Item<'_>) -> usize,
) -> Assessment {
    let one = std::slice::from_ref(compaction);
    let size = |v: &View<'_>| v.items.iter().map(&count).sum();
    let view = project_as_of(log, turn);
    let (before, size_before) = (fates(log, &view), size(&view));
    drop(view);
    let view = project_with(log, one, turn);
    let (after, size_after) = (fates(log, &view), size(&view));
    let effect = effects_of(log, &before, &after, one)[0];
    let changed = after
        .iter()
        .enumerate()
        .filter(|&(i, f)| *f != before[i])
        .map(|(i, f)| (i, *f))
        .collect();
    Assessment {
        effect,
        tokens: (size_before, size_after),
        changed,
    }
}

fn highest_turn(log: &Log) -> u32 {
    (log.turn_count() as u32).saturating_sub(1)
}

/// The effects of `compactions` (numbered from `log.len()`), from the fate
/// of every record of `log` without them and with them.
fn effects_of(log: &Log, before: &[Fate], now: &[Fate], compactions: &[Compaction]) -> Vec<Effect> {
    let n = log.records().len();
    let ranges: Vec<Option<(usize, usize)>> = compactions
        .iter()
        .map(|c| {
            let has_tools = c.tool_calls.is_some() || !c.tool_overrides.is_empty();
            has_tools.then(|| covered_indices(log, c)).flatten()
        })
        .collect();
    let mut out = vec![Effect::default(); compactions.len()];
    let mine = |k: usize| k.checked_sub(n).filter(|j| *j < compactions.len());
    for i in 0..n {
        if before[i] == now[i] {
            continue;
        }
        match now[i] {
            Fate::Summarized { compaction } => {
                if let Some(j) = mine(compaction) {
                    out[j].summarized += 1;
                }
            }
            Fate::ReasoningStripped { compaction } => {
                if let Some(j) = mine(compaction) {
                    out[j].reasoning_stripped += 1;
                }
            }
            Fate::Omitted { compaction } => {
                if let Some(j) = mine(compaction) {
                    out[j].omitted += 1;
                }
            }
            Fate::Stripped => {
                let by = (0..compactions.len())
                    .rev()
                    .find(|&j| ranges[j].is_some_and(|(lo, hi)| lo <= i && i <= hi));
                if let Some(j) = by {
                    match log.records()[i].body {
                        Body::ToolCall { .. } => out[j].stripped_calls += 1,
                        _ => out[j].stripped_results += 1,
                    }
                }
            }
            Fate::Clipped => {
                let by = (0..compactions.len()).rev().find(|&j| {
                    (compactions[j].clip_chars.is_some() || compactions[j].excerpt_chars.is_some())
                        && covered_indices(log, &compactions[j])
                            .is_some_and(|(lo, hi)| lo <= i && i <= hi)
                });
                if let Some(j) = by {
                    out[j].clipped += 1;
                }
            }
            Fate::Hidden | Fate::Kept | Fate::Unpaired => {}
        }
    }
    out
}

/// Take out of the plan every compaction that would change nothing in the
/// view (nothing in its range to strip, or already compacted that way):
/// recording it would only say something untrue. The plan's `skipped` says
/// why. Returns what the rest do, and for each compaction given whether it
/// was kept.
pub fn drop_no_ops(
    log: &Log,
    plan: &mut Plan,
    compactions: &mut Vec<Compaction>,
) -> (Vec<Effect>, Vec<bool>) {
    let all = effects(log, compactions);
    let kept_mask: Vec<bool> = all.iter().map(|e| !e.is_none()).collect();
    if kept_mask.iter().all(|&k| k) {
        return (all, kept_mask);
    }
    let mut kept_plan = Vec::new();
    let mut kept = Vec::new();
    let mut kept_effects = Vec::new();
    for ((p, c), e) in std::mem::take(&mut plan.planned)
        .into_iter()
        .zip(std::mem::take(compactions))
        .zip(all)
    {
        if e.is_none() {
            plan.skipped.push(Skipped {
                rule: p.rule,
                reason: no_op_reason(&c),
            });
        } else {
            kept_plan.push(p);
            kept.push(c);
            kept_effects.push(e);
        }
    }
    plan.planned = kept_plan;
    *compactions = kept;
    // A no-op decided nothing, so the others' effects are unchanged.
    (kept_effects, kept_mask)
}

/// Why a compaction that changes nothing is not recorded.
pub fn no_op_reason(c: &Compaction) -> String {
    format!(
        "turns {}–{}: {} would change nothing in the view (nothing there to strip, or it is already compacted)",
        u64::from(c.from_turn) + 1,
        u64::from(c.to_turn) + 1,
        c.describe().join(", ")
    )
}
