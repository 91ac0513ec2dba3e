//! The timeline a compaction command prints: the size of the view before
//! and after, what happened to each run of turns, what each compaction
//! changed, and what the view leaves out that no compaction decided.

use ctxfold_compactor::Effect;
use ctxfold_core::estimate::{raw_tokens, view_tokens};
use ctxfold_core::kept::{Kept, Retentions};
use ctxfold_core::planner::Plan;
use ctxfold_core::projection::{Item, project};
use ctxfold_core::report::{timeline, turn_reports};
use ctxfold_core::{Body, Compaction, Log};
use serde_json::{Value, json};

/// Lines for what the view leaves out that no compaction decided: tool
/// calls and results without their partner, and why.
pub fn unpaired_lines(
    log: &Log,
    view: &ctxfold_core::projection::View<'_>,
) -> Vec<(Value, String)> {
    use std::collections::HashSet;
    let records = log.records();
    let mut calls = HashSet::new();
    let mut results = HashSet::new();
    for r in records {
        match &r.body {
            Body::ToolCall { id, .. } => {
                calls.insert(id.as_str());
            }
            Body::ToolResult { id, .. } => {
                results.insert(id.as_str());
            }
            _ => {}
        }
    }
    view.dropped
        .iter()
        .filter(|d| d.reason == ctxfold_core::projection::DropReason::Unpaired)
        .filter_map(|d| {
            let turn = log.turn_of(d.index) + 1;
            let (what, id, why) = match &records[d.index].body {
                Body::ToolResult { id, .. } if !calls.contains(id.as_str()) => {
                    ("a tool result", id, "the transcript has no call with that id")
                }
                Body::ToolCall { id, .. } if !results.contains(id.as_str()) => {
                    ("a tool call", id, "the transcript has no result for it")
                }
                Body::ToolResult { id, .. } => {
                    ("a tool result", id, "its call was folded into a summary")
                }
                Body::ToolCall { id, .. } => {
                    ("a tool call", id, "its result was folded into a summary")
                }
                _ => return None,
            };
            Some((
                json!({"turn": turn, "seq": records[d.index].seq, "id": id, "why": why}),
                format!(
                    "left out of turn {turn}: {what} (id `{id}`): {why}; no provider accepts one without the other"
                ),
            ))
        })
        .collect()
}

/// The timeline of what `after` (the log with new compactions) makes of
/// each turn, with sizes before and after, and what each compaction kept
/// of its range's facts, as text and JSON.
pub fn report(
    before: &Log,
    after: &Log,
    plan: &Plan,
    compactions: &[Compaction],
    effects: &[Effect],
    verb: &str,
) -> (Value, String) {
    let view_before = project(before);
    let view_after = project(after);
    let tokens_raw = raw_tokens(before.records());
    let tokens_before = view_tokens(&view_before);
    let tokens_after = view_tokens(&view_after);
    let reports = turn_reports(after, &view_after);
    let lines = timeline(&reports);
    let mut text = String::new();
    let pct = |a: usize, b: usize| {
        if b == 0 {
            0.0
        } else {
            100.0 * (b as f64 - a as f64) / b as f64
        }
    };
    text.push_str(&format!(
        "{} turns, ~{} tokens in view → ~{} tokens ({:.0}% smaller; ~{} tokens raw)\n",
        before.turn_count(),
        tokens_before,
        tokens_after,
        pct(tokens_after, tokens_before),
        tokens_raw
    ));
    for (first, last, label) in &lines {
        let turns = if first == last {
            format!("turn {first}")
        } else {
            format!("turns {first}–{last}")
        };
        let (b, a): (usize, usize) = reports[(*first - 1) as usize..*last as usize]
            .iter()
            .fold((0, 0), |(b, a), r| {
                (b + r.tokens_before, a + r.tokens_after)
            });
        text.push_str(&format!("  {turns:<14} {label:<40} ~{b} → ~{a} tokens\n"));
    }
    // What each compaction's range still shows of the facts an agent needs
    // (the retention report), in the view after the run. Ranges are
    // indices of `after`: the records of `before` with the compactions
    // appended, or, for a replay, interleaved where each was made.
    let ranges: Vec<(usize, usize)> = plan
        .planned
        .iter()
        .map(|p| (p.range.0, p.range.1.min(after.len().saturating_sub(1))))
        .collect();
    let kept: Vec<Kept> = Retentions::new(after, &view_after).of(&ranges, true);
    for (((p, c), e), k) in plan.planned.iter().zip(compactions).zip(effects).zip(&kept) {
        text.push_str(&format!(
            "{verb} turns {}–{}: {}\n",
            u64::from(c.from_turn) + 1,
            u64::from(c.to_turn) + 1,
            e.describe(c).join(", ")
        ));
        text.push_str(&format!("  {}\n", k.line()));
        if let Some(f) = &c.budget {
            text.push_str(&format!("  {}\n", f.line()));
        }
        if let Some((a, b)) = p.grown_from {
            text.push_str(&format!(
                "  (asked for turns {}–{}; grown to cover the summaries it overlaps)\n",
                a + 1,
                b + 1
            ));
        }
    }
    for s in &plan.skipped {
        text.push_str(&format!(
            "rule {}: nothing to do: {}\n",
            s.rule + 1,
            s.reason
        ));
    }
    // Only when something is folded: with nothing folded the output is the
    // input, unpaired events and all.
    let unpaired = if compactions.is_empty() {
        Vec::new()
    } else {
        unpaired_lines(after, &view_after)
    };
    for (_, line) in &unpaired {
        text.push_str(line);
        text.push('\n');
    }
    let preamble =
        !compactions.is_empty() && view_after.items.iter().any(|i| matches!(i, Item::Preamble));
    if preamble {
        text.push_str(&format!(
            "put `{}` first: the view would otherwise start with the assistant, which providers refuse\n",
            ctxfold_core::projection::PREAMBLE
        ));
    }
    let json = json!({
        "turns": before.turn_count(),
        "tokens": {"raw": tokens_raw, "before": tokens_before, "after": tokens_after},
        "timeline": lines.iter().map(|(f, l, label)| json!({"from_turn": f, "to_turn": l, "label": label})).collect::<Vec<_>>(),
        "per_turn": reports,
        "compactions": plan.planned.iter().zip(compactions).zip(effects).zip(&kept).map(|(((p, c), e), k)| {
            let mut o = serde_json::to_value(c).unwrap_or_default();
            if let Value::Object(m) = &mut o {
                if let Some((a, b)) = p.grown_from {
                    m.insert("grown_from".into(), json!([a + 1, b + 1]));
                }
                m.insert("effect".into(), json!(e));
                m.insert("kept".into(), json!(k));
            }
            o
        }).collect::<Vec<_>>(),
        "unpaired": unpaired.iter().map(|(v, _)| v.clone()).collect::<Vec<_>>(),
        "preamble": preamble,
        "skipped": plan.skipped.iter().map(|s| json!({"rule": s.rule + 1, "reason": s.reason})).collect::<Vec<_>>(),
    });
    (json, text)
}

/// What the view of `log` keeps of the facts of every record the ranges
/// (indices of `log`, inclusive, in any order, overlapping or not) cover
/// together, each record counted once: the retention of a whole replay,
/// whose firings fold and fold again overlapping ranges.
pub fn union_retention(log: &Log, ranges: &[(usize, usize)]) -> Kept {
    Retentions::new(log, &project(log)).union(ranges)
}
