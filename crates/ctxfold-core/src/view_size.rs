//! The size of a log's view, kept up to date as the log grows.
//!
//! Checking the trigger after every turn and before every step must cost
//! what was added, not what the conversation holds (a full projection of a
//! million events takes a fifth of a second). Events are immutable and
//! compaction ranges are fixed when recorded, so records appended after the
//! last overlay fall outside every compaction: each new model-visible
//! record enters the view as it is. [`ViewSize::update`] adds their tokens;
//! only a new compaction or reset, a deferred compaction coming into force,
//! or a compaction whose range still grows (bounded by turn, not `seq`,
//! ending in the last turn) makes it project again.
//!
//! Tool pairs follow the projection's rule: a call counts once its result
//! has come (a call without one is left out of the view), a result without
//! its call never counts, and a later call reusing an id leaves the earlier
//! one out. So [`ViewSize::update`] always equals the size of
//! [`crate::projection::project`]'s view (property-tested).

use std::collections::HashMap;

use crate::log::Log;
use crate::projection::{Item, compaction_status, project};
use crate::record::{Body, Kind, Record};

/// The running size of a log's view. Keep one per conversation and call
/// [`update`](ViewSize::update) with the same (growing) log.
#[derive(Debug, Clone, Default)]
pub struct ViewSize {
    /// Records accounted for.
    len: usize,
    /// Tokens of the view of those records.
    total: usize,
    /// Calls of the accounted records still waiting for their result: id →
    /// the call's tokens.
    pending: HashMap<String, usize>,
    /// Calls waiting for their result inside a compaction's range: their
    /// result would be decided by that compaction, so it projects again.
    pending_covered: std::collections::HashSet<String>,
    /// Whether the view of the accounted records holds nothing but system
    /// prompts (the first other item decides whether a preamble is needed).
    empty: bool,
    /// The lowest `deferred_until_turn` not reached yet.
    next_activation: Option<u32>,
    /// A compaction in force is bounded by turn and reaches the last turn
    /// (records appended to that turn fall inside it), or one lies beyond
    /// the log (it comes into force as the log grows into it).
    open_ended: bool,
    /// How many full projections were made (for tests and benchmarks).
    pub projections: usize,
}

impl ViewSize {
    /// Nothing accounted for yet: the first update projects.
    pub fn new() -> Self {
        ViewSize::default()
    }

    /// The size of `log`'s view: records appended since the last call are
    /// added; anything that could change older parts of the view projects
    /// again. `record` counts a record as it is; `item` counts a view item.
    pub fn update(
        &mut self,
        log: &Log,
        record: impl Fn(&Record) -> usize,
        item: impl Fn(&Item<'_>) -> usize,
    ) -> usize {
        let records = log.records();
        let fresh = records.len() < self.len
            || self.len == 0
            || self.empty
            || self
                .next_activation
                .is_some_and(|t| (log.turn_count() as u32).saturating_sub(1) >= t)
            || (self.open_ended && records.len() > self.len)
            || records[self.len..].iter().any(|r| match &r.body {
                Body::ToolResult { id, .. } => self.pending_covered.contains(id.as_str()),
                _ => matches!(r.kind(), Kind::Compaction | Kind::CompactionReset),
            });
        if fresh {
            return self.recompute(log, record, item);
        }
        for r in &records[self.len..] {
            match &r.body {
                Body::ToolCall { id, .. } => {
                    // A call reusing a pending id leaves the earlier one out.
                    self.pending.insert(id.clone(), record(r));
                }
                Body::ToolResult { id, .. } => {
                    if let Some(call) = self.pending.remove(id.as_str()) {
                        self.total += call + record(r);
                    }
                }
                b if b.is_model_visible() || matches!(b, Body::System { .. }) => {
                    self.total += record(r)
                }
                _ => {}
            }
        }
        self.len = records.len();
        self.total
    }

    /// Project the whole log and start accounting from its end.
    fn recompute(
        &mut self,
        log: &Log,
        record: impl Fn(&Record) -> usize,
        item: impl Fn(&Item<'_>) -> usize,
    ) -> usize {
        self.projections += 1;
        let view = project(log);
        self.total = view.items.iter().map(&item).sum();
        // System prompts aside: the first other item decides the preamble.
        self.empty = view.items.iter().all(|i| {
            matches!(i, Item::Event { record, .. } if matches!(record.body, Body::System { .. }))
        });
        self.len = log.len();
        // Calls the view left out for want of their result, and that no
        // later call has replaced, may still get it.
        self.pending.clear();
        self.pending_covered.clear();
        let records = log.records();
        let mut last_call: HashMap<&str, usize> = HashMap::new();
        let mut answered: HashMap<&str, bool> = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            match &r.body {
                Body::ToolCall { id, .. } => {
                    last_call.insert(id, i);
                    answered.insert(id, false);
                }
                Body::ToolResult { id, .. } if answered.contains_key(id.as_str()) => {
                    answered.insert(id, true);
                }
                _ => {}
            }
        }
        let dropped: std::collections::HashSet<usize> =
            view.dropped.iter().map(|d| d.index).collect();
        for (id, i) in last_call {
            if answered[id] || !dropped.contains(&i) {
                continue;
            }
            // A call whose result has not come is folded by any summary
            // that starts after it (the projection cannot leave it open
            // across the summary): its result will never count either.
            let summary_after = view.active.iter().any(|&c| match &records[c].body {
                Body::Compaction(comp) if comp.summary.is_some() => {
                    crate::projection::covered_indices(log, comp).is_some_and(|(lo, _)| lo > i)
                }
                _ => false,
            });
            if covered(log, &view, i) || summary_after {
                self.pending_covered.insert(id.to_owned());
            } else {
                self.pending.insert(id.to_owned(), record(&records[i]));
            }
        }
        let (active, inactive) = compaction_status(log);
        self.next_activation = inactive
            .iter()
            .filter_map(|&(i, why)| match (&records[i].body, why) {
                (Body::Compaction(c), crate::projection::Inactive::Deferred) => {
                    c.deferred_until_turn
                }
                _ => None,
            })
            .min();
        let last_turn = (log.turn_count() as u32).saturating_sub(1);
        let last_seq = records.last().map_or(0, |r| r.seq);
        self.open_ended = active.iter().any(|&i| {
            matches!(&records[i].body, Body::Compaction(c)
                if (c.to_seq.is_none() && c.to_turn >= last_turn)
                    || c.to_seq.is_some_and(|s| s >= last_seq))
        }) || inactive
            .iter()
            .any(|&(_, why)| why == crate::projection::Inactive::OutOfBounds);
        self.total
    }
}

/// Whether record `i` lies in the range of a compaction in force, which
/// decides its fate (and its result's) whatever comes later.
fn covered(log: &Log, view: &crate::projection::View<'_>, i: usize) -> bool {
    view.active.iter().any(|&c| match &log.records()[c].body {
        Body::Compaction(comp) => {
            crate::projection::covered_indices(log, comp).is_some_and(|(lo, hi)| lo <= i && i <= hi)
        }
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::{item_tokens, record_tokens, view_tokens};
    use serde_json::json;

    fn rec(log: &Log, b: Body) -> Record {
        Record::new(log.next_seq(), "t", b)
    }

    #[test]
    fn appends_are_added_without_projecting() {
        let mut log = Log::new();
        let mut size = ViewSize::new();
        log.push(rec(&log, Body::TurnStart));
        log.push(rec(
            &log,
            Body::User {
                content: "hello".into(),
                author: None,
            },
        ));
        size.update(&log, record_tokens, item_tokens);
        assert_eq!(size.projections, 1);
        for k in 0..5 {
            log.push(rec(
                &log,
                Body::ToolCall {
                    id: format!("c{k}"),
                    name: "run".into(),
                    arguments: json!({"n": k}).into(),
                },
            ));
            // A call without its result is not in the view yet.
            assert_eq!(
                size.update(&log, record_tokens, item_tokens),
                view_tokens(&project(&log))
            );
            log.push(rec(
                &log,
                Body::ToolResult {
                    id: format!("c{k}"),
                    content: "out".repeat(50),
                    is_error: false,
                },
            ));
            assert_eq!(
                size.update(&log, record_tokens, item_tokens),
                view_tokens(&project(&log))
            );
        }
        assert_eq!(size.projections, 1);
    }

    #[test]
    fn a_result_whose_call_a_compaction_covers_projects_again() {
        use crate::compaction::{Compaction, Source, ToolPolicy};
        let mut log = Log::new();
        log.push(rec(&log, Body::TurnStart));
        log.push(rec(
            &log,
            Body::User {
                content: "go".into(),
                author: None,
            },
        ));
        log.push(rec(
            &log,
            Body::ToolCall {
                id: "c1".into(),
                name: "run".into(),
                arguments: json!({"script": "x".repeat(500)}).into(),
            },
        ));
        // A hand-made compaction over the pending call strips it.
        let mut c = Compaction::new(0, 0, Source::User);
        c.from_seq = Some(0);
        c.to_seq = Some(2);
        c.tool_calls = Some(ToolPolicy::Strip);
        log.push(rec(&log, Body::Compaction(Box::new(c))));
        let mut size = ViewSize::new();
        size.update(&log, record_tokens, item_tokens);
        log.push(rec(
            &log,
            Body::ToolResult {
                id: "c1".into(),
                content: "done".into(),
                is_error: false,
            },
        ));
        assert_eq!(
            size.update(&log, record_tokens, item_tokens),
            view_tokens(&project(&log)),
            "the call enters the view stripped"
        );
    }

    #[test]
    fn a_call_waiting_before_a_summary_never_counts() {
        use crate::compaction::{Compaction, Provenance, Source, Summary};
        let mut log = Log::new();
        for b in [
            Body::TurnStart,
            Body::User {
                content: "go".into(),
                author: None,
            },
            Body::ToolCall {
                id: "c1".into(),
                name: "run".into(),
                arguments: json!({"script": "x".repeat(300)}).into(),
            },
            Body::Assistant {
                content: "a".repeat(400),
            },
        ] {
            log.push(rec(&log, b));
        }
        // A summary of the assistant text after the waiting call.
        let mut c = Compaction::new(0, 0, Source::User);
        c.from_seq = Some(3);
        c.to_seq = Some(3);
        c.summary = Some(Summary {
            text: "said a lot".into(),
            provenance: Provenance::Supplied {
                author: Source::User,
            },
        });
        log.push(rec(&log, Body::Compaction(Box::new(c))));
        let mut size = ViewSize::new();
        size.update(&log, record_tokens, item_tokens);
        log.push(rec(
            &log,
            Body::ToolResult {
                id: "c1".into(),
                content: "done".into(),
                is_error: false,
            },
        ));
        assert_eq!(
            size.update(&log, record_tokens, item_tokens),
            view_tokens(&project(&log))
        );
    }

    #[test]
    fn a_compaction_beyond_the_log_counts_once_the_log_reaches_it() {
        use crate::compaction::{Compaction, ReasoningPolicy, Source};
        let mut log = Log::new();
        log.push(rec(&log, Body::TurnStart));
        log.push(rec(
            &log,
            Body::User {
                content: "q".into(),
                author: None,
            },
        ));
        // Turn-bounded over turn 1, which does not exist yet.
        let mut c = Compaction::new(1, 1, Source::User);
        c.reasoning = Some(ReasoningPolicy::Strip);
        log.push(rec(&log, Body::Compaction(Box::new(c))));
        let mut size = ViewSize::new();
        size.update(&log, record_tokens, item_tokens);
        for b in [
            Body::TurnStart,
            Body::User {
                content: "q2".into(),
                author: None,
            },
            Body::Reasoning {
                content: "r".repeat(500),
            },
        ] {
            log.push(rec(&log, b));
            assert_eq!(
                size.update(&log, record_tokens, item_tokens),
                view_tokens(&project(&log))
            );
        }
    }

    #[test]
    fn a_range_reaching_past_the_end_covers_what_comes_next() {
        use crate::compaction::{Compaction, Source, ToolPolicy};
        let mut log = Log::new();
        log.push(rec(&log, Body::TurnStart));
        log.push(rec(
            &log,
            Body::User {
                content: "go".into(),
                author: None,
            },
        ));
        // A hand-edited range whose end lies beyond the log.
        let mut c = Compaction::new(0, 0, Source::User);
        c.from_seq = Some(0);
        c.to_seq = Some(1_000_000);
        c.tool_calls = Some(ToolPolicy::Strip);
        log.push(rec(&log, Body::Compaction(Box::new(c))));
        let mut size = ViewSize::new();
        size.update(&log, record_tokens, item_tokens);
        for b in [
            Body::ToolCall {
                id: "c1".into(),
                name: "run".into(),
                arguments: json!({"script": "x".repeat(500)}).into(),
            },
            Body::ToolResult {
                id: "c1".into(),
                content: "y".repeat(500),
                is_error: false,
            },
        ] {
            log.push(rec(&log, b));
        }
        assert_eq!(
            size.update(&log, record_tokens, item_tokens),
            view_tokens(&project(&log))
        );
    }
}
