//! Which whole units stay verbatim before a model call, and what before
//! them may be compacted (seed 002's retention walk).
//!
//! A unit is a step (one model call's output and the results of its tool
//! calls) or a message outside any step (a user message). Walking from the
//! newest unit back, units are kept until their tokens reach the budget;
//! everything before the oldest kept unit may be compacted. A cut therefore
//! never separates a tool call from its result and never splits a step, and
//! a step still open (a call without its result) is always kept: it is the
//! newest unit. The turn in progress gets no special treatment: its early
//! closed steps can be compacted like any older history, which is what
//! rescues a runaway turn.

use crate::bounds::{BoundError, Keep};
use crate::log::Log;
use crate::record::{Body, Record};

/// The tail kept verbatim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Index of the first record kept; records before it may be compacted.
    pub cut: usize,
    /// Estimated tokens of the kept units.
    pub kept_tokens: usize,
    /// How many units are kept.
    pub kept_units: usize,
    /// Tokens of the newest unit alone: when it is over the budget by
    /// itself, compaction cannot make the request fit (bounding one unit is
    /// the job of output truncation), and callers say so instead of looping.
    pub newest_unit_tokens: usize,
}

/// The smallest tail of whole units whose tokens reach `retain_tokens`
/// (all of them, when the log holds less), counting each model-visible
/// record with `tokens`. `None` for a log with nothing the model sees.
pub fn retained_tail(
    log: &Log,
    retain_tokens: usize,
    tokens: impl Fn(&Record) -> usize,
) -> Option<Retention> {
    let records = log.records();
    let mut out: Option<Retention> = None;
    for turn in (0..log.turn_count() as u32).rev() {
        let units = units_of(log, turn);
        for &(start, end) in units.iter().rev() {
            let t: usize = records[start..end]
                .iter()
                .filter(|r| r.body.is_model_visible())
                .map(&tokens)
                .sum();
            let r = out.get_or_insert(Retention {
                cut: start,
                kept_tokens: 0,
                kept_units: 0,
                newest_unit_tokens: t,
            });
            r.cut = start;
            r.kept_tokens += t;
            r.kept_units += 1;
            // A result that came after a user message interjected in its
            // step is a unit of its own: keep going until no pair is cut.
            if r.kept_tokens >= retain_tokens && cut_keeps_pairs(log, start) {
                return out;
            }
        }
    }
    out
}

/// A turn's units, oldest first, as record ranges: its steps, and each
/// model-visible record outside them.
fn units_of(log: &Log, turn: u32) -> Vec<(usize, usize)> {
    let Some(range) = log.turn_range(turn) else {
        return Vec::new();
    };
    let records = log.records();
    let steps = log.steps(turn);
    let mut units = Vec::new();
    let (mut i, mut s) = (range.start, 0);
    while i < range.end {
        if let Some(step) = steps.get(s).filter(|st| st.start == i) {
            units.push((step.start, step.end));
            i = step.end;
            s += 1;
            continue;
        }
        if records[i].body.is_model_visible() {
            units.push((i, i + 1));
        }
        i += 1;
    }
    units
}

/// Every cut a retained tail can end at, newest first: entry `k` keeps
/// the `k + 1` newest whole units (fewer entries than units where a unit
/// alone would separate a tool call from its result), with the index of
/// its first record and the tokens the kept units hold.
pub fn tail_cuts(log: &Log, tokens: impl Fn(&Record) -> usize) -> Vec<(usize, usize)> {
    use std::collections::HashSet;
    let records = log.records();
    let mut out = Vec::new();
    let mut kept = 0;
    // One pass from the end (linear, not a pair check per cut): results
    // kept whose call lies before the cut so far. A result whose call is
    // nowhere in the log cannot be separated from it.
    let calls: HashSet<&str> = records.iter().filter_map(|r| r.body.call_id()).collect();
    let mut waiting: HashSet<&str> = HashSet::new();
    let mut scanned = records.len();
    for turn in (0..log.turn_count() as u32).rev() {
        let units = units_of(log, turn);
        for &(start, end) in units.iter().rev() {
            kept += records[start..end]
                .iter()
                .filter(|r| r.body.is_model_visible())
                .map(&tokens)
                .sum::<usize>();
            for r in records[start..scanned].iter().rev() {
                match &r.body {
                    Body::ToolResult { id, .. } if calls.contains(id.as_str()) => {
                        waiting.insert(id.as_str());
                    }
                    Body::ToolCall { id, .. } => {
                        waiting.remove(id.as_str());
                    }
                    _ => {}
                }
            }
            scanned = start;
            if waiting.is_empty() {
                out.push((start, kept));
            }
        }
    }
    out
}

/// The records before `cut` that may be compacted, inclusive, or `None`
/// when nothing there is model-visible. `keep_first` keeps the opening
/// request: what the first `keep_first` turns hold before their first
/// step (the steps after it may be compacted). The region
/// starts after `done` (the first record no compaction covers yet), so
/// successive firings fold bands that do not overlap: each summary is made
/// once, from the raw events of its own band, and never grows into a
/// re-summary of the whole history.
pub fn region_before(
    log: &Log,
    cut: usize,
    keep_first: Option<&Keep>,
    done: usize,
) -> Result<Option<(usize, usize)>, BoundError> {
    let Some(last_turn) = (log.turn_count() as u32).checked_sub(1) else {
        return Ok(None);
    };
    let first_open = match keep_first {
        Some(k) => k.first_not_kept(log)?.max(0) as u64,
        None => 0,
    };
    // `keep_first` keeps the opening request (what comes before the first
    // step), not every step of the first turns: a conversation whose bulk
    // is one long first turn must fold too.
    let upto = first_open.min(u64::from(last_turn)) as u32;
    let first_step = (0..=upto).find_map(|t| log.steps(t).first().map(|s| s.start));
    let opened = (first_open <= u64::from(last_turn))
        .then(|| log.turn_range(first_open as u32).map(|r| r.start))
        .flatten();
    let floor = match (opened, first_step) {
        (Some(o), Some(s)) => o.min(s),
        (Some(o), None) => o,
        (None, Some(s)) => s,
        (None, None) => cut,
    };
    let floor = floor.max(done);
    let Some(hi) = cut.checked_sub(1) else {
        return Ok(None);
    };
    if floor > hi
        || !log.records()[floor..=hi]
            .iter()
            .any(|r| r.body.is_model_visible())
    {
        return Ok(None);
    }
    Ok(Some((floor, hi)))
}

/// The first record after everything active or deferred compactions cover
/// (0 when there is none): where a new band of automatic compaction starts.
/// A deferred one (the assistant's, approved this turn) counts: a newer
/// band over it would shadow what was approved once it comes into force.
/// An excerpt does not ([`Compaction::is_excerpt`](crate::Compaction::is_excerpt)):
/// it folds no band.
pub fn after_compactions(log: &Log) -> usize {
    crate::projection::active_or_deferred(log)
        .into_iter()
        .filter(|(_, c, _)| !c.is_excerpt())
        .map(|(_, _, (_, hi))| hi + 1)
        .max()
        .unwrap_or(0)
}

/// Whether records `lo..=hi` hold a tool call whose result is not in the
/// log at all and lies in the turn in progress: a step still open, which
/// no compaction may cover.
pub fn holds_open_call(log: &Log, lo: usize, hi: usize) -> bool {
    let Some(last) = (log.turn_count() as u32).checked_sub(1) else {
        return false;
    };
    let Some(turn) = log.turn_range(last) else {
        return false;
    };
    let records = log.records();
    let answered: std::collections::HashSet<&str> = records[turn.start..]
        .iter()
        .filter_map(|r| r.body.result_id())
        .collect();
    (lo.max(turn.start)..=hi).any(|i| {
        matches!(&records[i].body, Body::ToolCall { id, .. } if !answered.contains(id.as_str()))
    })
}

/// Whether a tool call and its result lie on the same side of `cut`, for
/// every pair: the check a caller proposing its own cut needs.
pub fn cut_keeps_pairs(log: &Log, cut: usize) -> bool {
    let records = log.records();
    let before: std::collections::HashSet<&str> = records[..cut.min(records.len())]
        .iter()
        .filter_map(|r| r.body.call_id())
        .collect();
    let answered_before: std::collections::HashSet<&str> = records[..cut.min(records.len())]
        .iter()
        .filter_map(|r| r.body.result_id())
        .collect();
    records[cut.min(records.len())..]
        .iter()
        .all(|r| match &r.body {
            Body::ToolResult { id, .. } => {
                !before.contains(id.as_str()) || answered_before.contains(id.as_str())
            }
            _ => true,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Turn 0: a question and `steps` steps of one call each (the last
    /// open when `open`).
    fn runaway(steps: usize, open: bool) -> Log {
        let mut recs = Vec::new();
        let mut push = |b: Body| {
            let seq = recs.len() as u64;
            recs.push(Record::new(seq, "t", b));
        };
        push(Body::TurnStart);
        push(Body::User {
            content: "fix it".into(),
            author: None,
        });
        for k in 0..steps {
            push(Body::ToolCall {
                id: format!("c{k}"),
                name: "run".into(),
                arguments: json!({}).into(),
            });
            if !(open && k + 1 == steps) {
                push(Body::ToolResult {
                    id: format!("c{k}"),
                    content: "x".repeat(400),
                    is_error: false,
                });
            }
        }
        Log::from_records(recs)
    }

    fn tk(r: &Record) -> usize {
        crate::estimate::record_tokens(r)
    }

    #[test]
    fn tail_cuts_are_the_unit_starts_that_keep_pairs() {
        for open in [false, true] {
            let log = runaway(12, open);
            let cuts = tail_cuts(&log, tk);
            assert!(!cuts.is_empty());
            for w in cuts.windows(2) {
                assert!(w[0].0 > w[1].0 && w[0].1 < w[1].1, "{cuts:?}");
            }
            for &(cut, _) in &cuts {
                assert!(cut_keeps_pairs(&log, cut), "{cut}");
            }
            // Each cut is where the retention walk would stop for its size.
            for &(cut, kept) in &cuts {
                assert_eq!(retained_tail(&log, kept, tk).unwrap().cut, cut);
            }
        }
    }

    #[test]
    fn the_tail_is_whole_steps_reaching_the_budget() {
        let log = runaway(10, false);
        let one_step = tk(&log.records()[2]) + tk(&log.records()[3]);
        let r = retained_tail(&log, one_step * 2 + 1, tk).unwrap();
        assert_eq!(r.kept_units, 3);
        assert_eq!(r.cut, 2 + 7 * 2, "a step starts at its call");
        assert!(cut_keeps_pairs(&log, r.cut));
        assert_eq!(r.newest_unit_tokens, one_step);
    }

    #[test]
    fn an_open_step_is_always_kept() {
        let log = runaway(4, true);
        let r = retained_tail(&log, 1, tk).unwrap();
        assert_eq!(r.kept_units, 1);
        assert_eq!(r.cut, log.len() - 1, "the open call");
    }

    #[test]
    fn keep_first_over_the_turn_in_progress_keeps_its_request() {
        let log = runaway(10, false);
        let r = retained_tail(&log, 1, tk).unwrap();
        let region = region_before(&log, r.cut, Some(&Keep::Count(1)), 0)
            .unwrap()
            .unwrap();
        assert_eq!(region, (2, r.cut - 1), "the user's request stays");
        let region = region_before(&log, r.cut, None, 0).unwrap().unwrap();
        assert_eq!(region.0, 0);
        // Nothing before the cut: nothing to compact.
        assert_eq!(
            region_before(&log, 2, Some(&Keep::Count(1)), 0).unwrap(),
            None
        );
        // After a band already compacted, the next starts after it.
        let region = region_before(&log, r.cut, Some(&Keep::Count(1)), 6)
            .unwrap()
            .unwrap();
        assert_eq!(region, (6, r.cut - 1));
        assert_eq!(region_before(&log, r.cut, None, r.cut).unwrap(), None);
    }

    #[test]
    fn a_late_result_after_an_interjection_is_never_cut_from_its_call() {
        // user, call a, user "wait", result a, assistant.
        let mut recs = Vec::new();
        let bodies = vec![
            Body::TurnStart,
            Body::User {
                content: "go".into(),
                author: None,
            },
            Body::ToolCall {
                id: "a".into(),
                name: "run".into(),
                arguments: json!({}).into(),
            },
            Body::User {
                content: "wait".into(),
                author: None,
            },
            Body::ToolResult {
                id: "a".into(),
                content: "x".repeat(400),
                is_error: false,
            },
            Body::Assistant {
                content: "done".into(),
            },
        ];
        for (i, b) in bodies.into_iter().enumerate() {
            recs.push(Record::new(i as u64, "t", b));
        }
        let log = Log::from_records(recs);
        for budget in [1, 50, 150] {
            let r = retained_tail(&log, budget, tk).unwrap();
            assert!(
                cut_keeps_pairs(&log, r.cut),
                "budget {budget}: cut {}",
                r.cut
            );
        }
    }

    #[test]
    fn an_open_call_is_found_only_in_the_turn_in_progress() {
        let log = runaway(3, true);
        assert!(holds_open_call(&log, 0, log.len() - 1));
        assert!(!holds_open_call(&log, 0, log.len() - 2));
    }

    #[test]
    fn a_cut_inside_a_pair_is_seen() {
        let log = runaway(3, false);
        assert!(cut_keeps_pairs(&log, 2));
        assert!(!cut_keeps_pairs(&log, 3), "between c0 and its result");
    }
}
