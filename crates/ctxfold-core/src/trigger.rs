//! When automatic compaction fires (SPEC §8, seeds 004 and 002): pure
//! decisions over a size estimate, the model's window and the conversation's
//! shape. Doing the compaction is the compactor service's job.
//!
//! - Between turns (seed 004): after a turn completes, when enabled, the
//!   conversation has more than `min_turns` turns and the projected size is
//!   over `trigger_ratio × window`, one compaction over the rolling range
//!   `max(keep_first, after the last compaction) ..= last turn - keep_last`
//!   ([`rolling_rule`]). At most one firing per turn boundary.
//! - Before a step (seed 002): when the projected request is over the same
//!   threshold, the older history is compacted so that a tail of whole units
//!   stays verbatim (see [`crate::retention`]).
//!
//! The estimate is of the projected view, never the raw log: once a
//! compaction has run the view shrinks and the trigger goes quiet until the
//! conversation grows again (estimating the raw log would fire forever).

use std::fmt;

use serde::Serialize;

use crate::bounds::{Bound, after_last_compaction};
use crate::firing::Budget;
use crate::log::{Log, revoked_seqs};
use crate::planner::Rule;
use crate::projection::covered_indices;
use crate::record::Body;

/// `[compaction.auto]`, as the decisions need it.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoPolicy {
    /// Automatic compaction is on.
    pub enabled: bool,
    /// Fire above this share of the room (the window less the fixed part
    /// and the reserve; see [`crate::budget`]), in (0, 1].
    pub trigger_ratio: f64,
    /// A firing compacts down to this share of the room, in (0, 1]
    /// (at most `trigger_ratio`).
    pub target_ratio: f64,
    /// Tokens kept free for the reply (`None`: a sixteenth of the window,
    /// at most the request's `max_tokens`).
    pub reserve_tokens: Option<usize>,
    /// Between turns: only for conversations with more turns than this.
    pub min_turns: u32,
    /// Before a step: tokens of the newest whole units kept verbatim at
    /// least (`None`: a tenth of the room).
    pub retain_tokens: Option<usize>,
    /// Before a step: further attempts while still over the threshold.
    pub compaction_retries: u32,
    /// The share of the room a firing's head summary may take, in (0, 1]
    /// (see [`Budget::summary`]): the digest keeps the user's words within
    /// it, newest first, older ones as a first line and a recall handle.
    pub summary_share: f64,
    /// A tool result over this share of the window (in tokens; a user
    /// message over [`USER_FACTOR`](crate::arrival::USER_FACTOR) times
    /// it) is excerpted when it arrives, before the request that first
    /// carries it goes upstream (see [`crate::arrival`]), in [0, 1]; 0
    /// turns it off.
    pub excerpt_share: f64,
    /// A firing folds deep enough that the band from its result to the
    /// trigger holds this many of the conversation's recent steps (see
    /// [`Budget::banded`]), so that the prefix the provider caches is
    /// rewritten at most once every so many steps; 0: `target_ratio`
    /// alone.
    pub band_steps: u32,
    /// What a firing does (its bounds are replaced by the rolling range).
    pub rule: Rule,
}

impl Default for AutoPolicy {
    fn default() -> Self {
        AutoPolicy {
            enabled: false,
            trigger_ratio: 0.75,
            target_ratio: 0.5,
            reserve_tokens: None,
            min_turns: 5,
            retain_tokens: None,
            compaction_retries: 1,
            summary_share: 0.1,
            excerpt_share: 0.05,
            band_steps: 8,
            rule: Rule::builtin(),
        }
    }
}

/// Why automatic compaction did not fire. Each is a normal outcome, logged
/// (at debug level where it is the common case), never an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum Skip {
    /// `[compaction.auto] enabled = false`.
    Disabled,
    /// The model's context window is not known.
    UnknownWindow,
    /// The conversation is not longer than `min_turns`.
    TooFewTurns {
        /// Turns it has.
        turns: usize,
        /// The configured minimum.
        min_turns: u32,
    },
    /// The projected size is under the threshold.
    UnderThreshold {
        /// Estimated tokens of the view.
        estimate: usize,
        /// The threshold.
        threshold: usize,
    },
    /// Compactions approved during the turn (the assistant's) take effect
    /// when the next turn starts: the view is measured again then, before
    /// its first model call, rather than folded over now.
    DeferredPending {
        /// How many.
        compactions: usize,
    },
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::Disabled => f.write_str("automatic compaction is off ([compaction.auto] enabled = false)"),
            Skip::UnknownWindow => f.write_str(
                "the model's context window is not known (give it with --window, or context_window in the provider's config)",
            ),
            Skip::TooFewTurns { turns, min_turns } => write!(
                f,
                "the conversation has {turns} turns, not more than min_turns = {min_turns}"
            ),
            Skip::UnderThreshold {
                estimate,
                threshold,
            } => write!(
                f,
                "the view (~{estimate} tokens) is under the threshold (~{threshold} tokens)"
            ),
            Skip::DeferredPending { compactions } => write!(
                f,
                "{compactions} compaction{} take{} effect when the next turn starts; the view is measured again before its first model call",
                if *compactions == 1 { "" } else { "s" },
                if *compactions == 1 { "s" } else { "" }
            ),
        }
    }
}

/// Whether compaction is due after a turn completes: `Ok(trigger)` when
/// it is, else why not. `estimate` counts the whole request, as the
/// budget does.
pub fn due_between_turns(
    policy: &AutoPolicy,
    turns: usize,
    estimate: usize,
    budget: Option<&Budget>,
) -> Result<usize, Skip> {
    if !policy.enabled {
        return Err(Skip::Disabled);
    }
    let budget = budget.ok_or(Skip::UnknownWindow)?;
    if turns <= policy.min_turns as usize {
        return Err(Skip::TooFewTurns {
            turns,
            min_turns: policy.min_turns,
        });
    }
    over(estimate, budget)
}

/// Whether compaction is due before a model call: `Ok(trigger)` when the
/// request about to be sent (`estimate` tokens) is over the trigger.
/// `min_turns` does not apply: a runaway single turn must be rescued too.
pub fn due_before_step(
    policy: &AutoPolicy,
    estimate: usize,
    budget: Option<&Budget>,
) -> Result<usize, Skip> {
    if !policy.enabled {
        return Err(Skip::Disabled);
    }
    over(estimate, budget.ok_or(Skip::UnknownWindow)?)
}

fn over(estimate: usize, budget: &Budget) -> Result<usize, Skip> {
    let threshold = budget.trigger;
    if estimate > threshold {
        Ok(threshold)
    } else {
        Err(Skip::UnderThreshold {
            estimate,
            threshold,
        })
    }
}

/// The rule a between-turn firing applies: `policy.rule`'s policies and
/// keeps over the rolling range, which starts after the last compaction
/// (the planner takes the larger of that and `keep_first`, and stops
/// `keep_last` turns before the end). Successive firings cover bands that
/// do not overlap, each summarized once from raw events.
///
/// A compaction the user revoked counts as done: the next firing starts
/// after it instead of folding again what the user unfolded (turn
/// automatic compaction off to stop it altogether).
pub fn rolling_rule(policy: &AutoPolicy, log: &Log) -> Rule {
    let revoked = revoked_seqs(log.records());
    let after_undone = log
        .records()
        .iter()
        .filter(|r| revoked.contains(&r.seq))
        .filter_map(|r| match &r.body {
            Body::Compaction(c) => covered_indices(log, c).map(|(_, hi)| log.turn_of(hi) + 1),
            _ => None,
        })
        .max();
    let from = match after_undone {
        Some(t) if t > after_last_compaction(log) => Bound::Turn(t + 1),
        _ => Bound::LastCompaction,
    };
    Rule {
        from: Some(from),
        to: None,
        // Between turns the band is whole turns: the steps of a long turn
        // are the before-step rescue's (retention), by tokens.
        keep_steps: None,
        ..policy.rule.clone()
    }
}

/// Compactions recorded but deferred that the next turn brings into force
/// (the assistant's, approved during the turn that just ended).
pub fn deferred_to_next_turn(log: &Log) -> usize {
    let next = log.turn_count() as u32;
    let (_, inactive) = crate::projection::compaction_status(log);
    inactive
        .iter()
        .filter(|&&(i, why)| {
            why == crate::projection::Inactive::Deferred
                && matches!(&log.records()[i].body,
                    Body::Compaction(c) if c.deferred_until_turn.is_some_and(|t| t <= next))
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on() -> AutoPolicy {
        AutoPolicy {
            enabled: true,
            reserve_tokens: Some(0),
            ..AutoPolicy::default()
        }
    }

    fn b1000() -> Budget {
        on().budget(1000, 0, None)
    }

    #[test]
    fn between_turns_checks_in_the_seed_order() {
        assert_eq!(
            due_between_turns(&AutoPolicy::default(), 9, 10_000, Some(&b1000())),
            Err(Skip::Disabled)
        );
        assert_eq!(
            due_between_turns(&on(), 9, 10_000, None),
            Err(Skip::UnknownWindow)
        );
        assert_eq!(
            due_between_turns(&on(), 5, 10_000, Some(&b1000())),
            Err(Skip::TooFewTurns {
                turns: 5,
                min_turns: 5
            })
        );
        assert_eq!(
            due_between_turns(&on(), 6, 750, Some(&b1000())),
            Err(Skip::UnderThreshold {
                estimate: 750,
                threshold: 750
            })
        );
        assert_eq!(due_between_turns(&on(), 6, 751, Some(&b1000())), Ok(750));
    }

    #[test]
    fn before_a_step_min_turns_does_not_apply() {
        assert_eq!(due_before_step(&on(), 751, Some(&b1000())), Ok(750));
        assert!(due_before_step(&on(), 700, Some(&b1000())).is_err());
        assert_eq!(b1000().retain(&on()), 100);
    }

    #[test]
    fn the_rolling_rule_starts_after_the_last_compaction_or_an_undone_one() {
        use crate::compaction::{AllMarker, Compaction, CompactionReset, ResetTargets, Source};
        use crate::record::{Object, Record};
        let mut log = Log::new();
        let push = |log: &mut Log, b: Body| {
            let seq = log.next_seq();
            log.push(Record::new(seq, "t", b));
        };
        for k in 0..10 {
            push(&mut log, Body::TurnStart);
            push(
                &mut log,
                Body::User {
                    content: format!("q{k}"),
                    author: None,
                },
            );
        }
        let r = rolling_rule(&on(), &log);
        assert_eq!(r.from, Some(Bound::LastCompaction));
        assert_eq!(r.keep_first, Rule::builtin().keep_first);
        assert_eq!(r.keep_last, Rule::builtin().keep_last);
        // An automatic compaction of turns 2–5 (0-based 1–4), revoked.
        let mut c = Compaction::new(1, 4, Source::Auto);
        c.reasoning = Some(crate::compaction::ReasoningPolicy::Strip);
        push(&mut log, Body::Compaction(Box::new(c)));
        push(
            &mut log,
            Body::CompactionReset(Box::new(CompactionReset {
                targets: ResetTargets::All(AllMarker::All),
                restore: false,
                extra: Object::new(),
            })),
        );
        assert_eq!(rolling_rule(&on(), &log).from, Some(Bound::Turn(6)));
    }
}
