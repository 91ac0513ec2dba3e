//! The timeline a compaction command prints: the size of the view before
//! and after, what happened to each run of turns, what each compaction
//! changed, and what the view leaves out that no compaction decided.

use ctxfold_compactor::Effect;
use ctxfold_core::estimate::{item_tokens, raw_tokens, view_tokens};
use ctxfold_core::kept::{Kept, Retentions};
use ctxfold_core::planner::Plan;
use ctxfold_core::projection::{Item, View, for_each_item, project};
use ctxfold_core::report::{TurnReport, timeline, turn_reports};
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
    let unpaired = |d: &&ctxfold_core::projection::Dropped| {
        d.reason == ctxfold_core::projection::DropReason::Unpaired
    };
    // Every call's and result's id is gathered only when one is unpaired:
    // a long session's ids are many.
    if !view.dropped.iter().any(|d| unpaired(&d)) {
        return Vec::new();
    }
    let mut calls = HashSet::new();
    let mut results = HashSet::new();
    for r in records {
        calls.extend(r.body.call_id());
        results.extend(r.body.result_id());
    }
    view.dropped
        .iter()
        .filter(unpaired)
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
/// of its range's facts: [`Timeline::text`] and [`Timeline::json`].
pub struct Timeline {
    turns: usize,
    tokens_raw: usize,
    tokens_before: usize,
    tokens_after: usize,
    reports: Vec<TurnReport>,
    lines: Vec<(u32, u32, String)>,
    folded: Vec<Folded>,
    skipped: Vec<(usize, String)>,
    unpaired: Vec<(Value, String)>,
    preamble: bool,
    verb: &'static str,
}

/// One compaction of the timeline.
struct Folded {
    compaction: Compaction,
    effect: Effect,
    kept: Kept,
    grown_from: Option<(u32, u32)>,
    /// Its record's seq where the JSON says it (a replay's compactions).
    seq: Option<u64>,
}

/// What the timeline says of the log a run started from: taken before the
/// run, so that the log need not be kept (a long session's records are
/// its file's size again).
#[derive(Debug, Clone, Copy)]
pub struct Before {
    turns: usize,
    tokens_raw: usize,
    tokens_before: usize,
}

impl Before {
    /// The figures of `log`, the log a run starts from.
    pub fn of(log: &Log) -> Before {
        Before {
            turns: log.turn_count(),
            tokens_raw: raw_tokens(log.records()),
            // Counted as the view is made: it is not held.
            tokens_before: {
                let mut tokens = 0;
                for_each_item(log, |item| tokens += item_tokens(&item));
                tokens
            },
        }
    }
}

/// Make the timeline of `plan` run on the log `before` was taken of,
/// giving `after`; `verb` says what was done (`folded`, `compacted`,
/// `would compact`).
pub fn report(
    before: Before,
    after: &Log,
    plan: &Plan,
    compactions: &[Compaction],
    effects: &[Effect],
    verb: &'static str,
) -> Timeline {
    report_and_view(before, after, plan, compactions, effects, verb).0
}

/// [`report`], and the view of `after` it was made from, for a caller
/// that writes that view next (`compact FILE`): a long session's view is
/// made once.
pub fn report_and_view<'a>(
    before: Before,
    after: &'a Log,
    plan: &Plan,
    compactions: &[Compaction],
    effects: &[Effect],
    verb: &'static str,
) -> (Timeline, View<'a>) {
    let Before {
        turns,
        tokens_raw,
        tokens_before,
    } = before;
    // What each compaction's range still shows of the facts an agent needs
    // (the retention report), in the view after the run. Ranges are
    // indices of `after`: the records of `before` with the compactions
    // appended, or, for a replay, interleaved where each was made.
    let ranges: Vec<(usize, usize)> = plan
        .planned
        .iter()
        .map(|p| (p.range.0, p.range.1.min(after.len().saturating_sub(1))))
        .collect();
    // The tool results' scans, which the log keeps once made, made here on
    // this thread: made on the retention's worker threads, they would sit
    // in those threads' memory, which the allocator keeps after the
    // threads end (40 MB more at the peak of `compact FILE` on a Codex
    // session of 61 MB).
    for &(lo, hi) in &ranges {
        for i in lo..=hi {
            after.result_scan(i);
        }
    }
    // Read as the view is made, before the view is held for the rest: on
    // a long session both are the size of its records again.
    let kept: Vec<Kept> = Retentions::projecting(after).of(&ranges, true);
    let view_after = project(after);
    let tokens_after = view_tokens(&view_after);
    let reports = turn_reports(after, &view_after);
    let lines = timeline(&reports);
    let folded = plan
        .planned
        .iter()
        .zip(compactions)
        .zip(effects)
        .zip(kept)
        .map(|(((p, c), e), k)| Folded {
            compaction: c.clone(),
            effect: *e,
            kept: k,
            grown_from: p.grown_from,
            seq: None,
        })
        .collect();
    // Only when something is folded: with nothing folded the output is the
    // input, unpaired events and all.
    let unpaired = if compactions.is_empty() {
        Vec::new()
    } else {
        unpaired_lines(after, &view_after)
    };
    let preamble =
        !compactions.is_empty() && view_after.items.iter().any(|i| matches!(i, Item::Preamble));
    let timeline = Timeline {
        turns,
        tokens_raw,
        tokens_before,
        tokens_after,
        reports,
        lines,
        folded,
        skipped: plan
            .skipped
            .iter()
            .map(|s| (s.rule, s.reason.clone()))
            .collect(),
        unpaired,
        preamble,
        verb,
    };
    (timeline, view_after)
}

impl Timeline {
    /// Say, in the JSON, the seq of each compaction's record (the first
    /// `seqs.len()` of them).
    pub fn set_seqs(&mut self, seqs: &[u64]) {
        for (f, seq) in self.folded.iter_mut().zip(seqs) {
            f.seq = Some(*seq);
        }
    }

    /// The timeline for people.
    pub fn text(&self) -> String {
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
            self.turns,
            self.tokens_before,
            self.tokens_after,
            pct(self.tokens_after, self.tokens_before),
            self.tokens_raw
        ));
        for (first, last, label) in &self.lines {
            let turns = if first == last {
                format!("turn {first}")
            } else {
                format!("turns {first}–{last}")
            };
            let (b, a): (usize, usize) = self.reports[(*first - 1) as usize..*last as usize]
                .iter()
                .fold((0, 0), |(b, a), r| {
                    (b + r.tokens_before, a + r.tokens_after)
                });
            text.push_str(&format!("  {turns:<14} {label:<40} ~{b} → ~{a} tokens\n"));
        }
        for f in &self.folded {
            let (c, e, k) = (&f.compaction, &f.effect, &f.kept);
            text.push_str(&format!(
                "{} turns {}–{}: {}\n",
                self.verb,
                u64::from(c.from_turn) + 1,
                u64::from(c.to_turn) + 1,
                e.describe(c).join(", ")
            ));
            text.push_str(&format!("  {}\n", k.line()));
            if let Some(b) = &c.budget {
                text.push_str(&format!("  {}\n", b.line()));
            }
            if let Some((a, b)) = f.grown_from {
                text.push_str(&format!(
                    "  (asked for turns {}–{}; grown to cover the summaries it overlaps)\n",
                    a + 1,
                    b + 1
                ));
            }
        }
        for (rule, reason) in &self.skipped {
            text.push_str(&format!("rule {}: nothing to do: {}\n", rule + 1, reason));
        }
        for (_, line) in &self.unpaired {
            text.push_str(line);
            text.push('\n');
        }
        if self.preamble {
            text.push_str(&format!(
                "put `{}` first: the view would otherwise start with the assistant, which providers refuse\n",
                ctxfold_core::projection::PREAMBLE
            ));
        }
        text
    }

    /// The timeline for programs.
    pub fn json(&self) -> Value {
        json!({
            "turns": self.turns,
            "tokens": {"raw": self.tokens_raw, "before": self.tokens_before, "after": self.tokens_after},
            "timeline": self.lines.iter().map(|(f, l, label)| json!({"from_turn": f, "to_turn": l, "label": label})).collect::<Vec<_>>(),
            "per_turn": self.reports,
            "compactions": self.folded.iter().map(|f| {
                let mut o = serde_json::to_value(&f.compaction).unwrap_or_default();
                if let Value::Object(m) = &mut o {
                    if let Some((a, b)) = f.grown_from {
                        m.insert("grown_from".into(), json!([a + 1, b + 1]));
                    }
                    m.insert("effect".into(), json!(f.effect));
                    m.insert("kept".into(), json!(f.kept));
                    if let Some(seq) = f.seq {
                        m.insert("seq".into(), json!(seq));
                    }
                }
                o
            }).collect::<Vec<_>>(),
            "unpaired": self.unpaired.iter().map(|(v, _)| v.clone()).collect::<Vec<_>>(),
            "preamble": self.preamble,
            "skipped": self.skipped.iter().map(|(rule, reason)| json!({"rule": rule + 1, "reason": reason})).collect::<Vec<_>>(),
        })
    }
}

/// What the view of `log` keeps of the facts of every record the ranges
/// (indices of `log`, inclusive, in any order, overlapping or not) cover
/// together, each record counted once: the retention of a whole replay,
/// whose firings fold and fold again overlapping ranges.
pub fn union_retention(log: &Log, ranges: &[(usize, usize)]) -> Kept {
    Retentions::projecting(log).union(ranges)
}
