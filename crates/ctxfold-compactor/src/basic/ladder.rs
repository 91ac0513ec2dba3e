//! The escalation ladder: the rule, strip, summarize, shrink the retained
//! tail (the head summary, within its share of the room, then smaller and
//! smaller down to the digest's floor), and clip as the last rung, older
//! units before the newest; each step measured without recording
//! anything, keeping as much of the newest history as reaches the target.

use ctxfold_core::Body;
use ctxfold_core::budget::{Budget, Escalation};
use ctxfold_core::compaction::{ReasoningPolicy, ToolPolicy};
use ctxfold_core::digest::{Digest, KeptWords, SUMMARY_FLOOR_CHARS};
use ctxfold_core::estimate::CHARS_PER_TOKEN;
use ctxfold_core::planner::SummaryRequest;
use ctxfold_core::planner::{Planned, Rule, ToolHints, check_summary, plan_region};
use ctxfold_core::retention::{after_compactions, holds_open_call, region_before, tail_cuts};
use ctxfold_core::summarizer::SummaryInput;

use super::BasicCompactor;
use crate::effect::assess;
use crate::{CompactError, Context, Conversation};

impl BasicCompactor {
    /// The firing to record: the first step of the ladder that reaches the
    /// target, keeping as much of the newest history verbatim as it can;
    /// when none does, the smallest result of the deepest step tried.
    pub(super) fn choose(
        &self,
        conv: &Conversation<'_>,
        ctx: &Context,
        budget: &Budget,
        before: usize,
    ) -> Result<Option<Choice>, CompactError> {
        let log = conv.log();
        let est = self.estimator.as_ref();
        let cuts = tail_cuts(log, |r| est.record_tokens(r));
        if cuts.is_empty() {
            return Ok(None);
        }
        let retain = budget.retain(&self.policy);
        // The fewest units that reach `retain` tokens (index into cuts).
        let k_min = cuts
            .iter()
            .position(|&(_, kept)| ctx.scaled(kept) >= retain)
            .unwrap_or(cuts.len() - 1);
        let done = after_compactions(log);
        // A summary may grow over earlier bands, but never over what the
        // assistant had approved for the next turn.
        let deferred_end = {
            let (_, inactive) = ctxfold_core::projection::compaction_status(log);
            inactive
                .iter()
                .filter(|(_, why)| *why == ctxfold_core::projection::Inactive::Deferred)
                .filter_map(|&(i, _)| match &log.records()[i].body {
                    Body::Compaction(c) => {
                        ctxfold_core::projection::covered_indices(log, c).map(|(_, hi)| hi + 1)
                    }
                    _ => None,
                })
                .max()
                .unwrap_or(0)
        };
        let summary = match &self.policy.rule.summary {
            Some(s @ SummaryRequest::Derive { .. }) => s.clone(),
            _ => SummaryRequest::Derive {
                model: None,
                instructions: None,
            },
        };
        let strip = Rule {
            reasoning: Some(ReasoningPolicy::Strip),
            tool_calls: Some(ToolPolicy::Strip),
            summary: None,
            ..self.region_rule()
        };
        let summarize = Rule {
            summary: Some(summary),
            ..self.region_rule()
        };
        // What the user undid stays undone while the request fits the
        // window: only a request that would not fit folds it again.
        let undone_end = if before > budget.limit() {
            0
        } else {
            let revoked = ctxfold_core::log::revoked_seqs(log.records());
            log.records()
                .iter()
                .filter(|r| revoked.contains(&r.seq))
                .filter_map(|r| match &r.body {
                    // An undone excerpt says nothing about the bands.
                    Body::Compaction(c) if !c.is_excerpt() => {
                        ctxfold_core::projection::covered_indices(log, c).map(|(_, hi)| hi + 1)
                    }
                    _ => None,
                })
                .max()
                .unwrap_or(0)
        };
        let done = done.max(undone_end);
        let deferred_end = deferred_end.max(undone_end);
        // The head summary's budget: its share of the room; then, only
        // for a request the newest history does not fit, halved down to
        // the digest's floor, so that older things fold further before
        // the newest unit is clipped.
        let share = budget.summary(&self.policy);
        let floor = SUMMARY_FLOOR_CHARS / CHARS_PER_TOKEN;
        // (step, rule, where its region may start, fewest units kept,
        // tokens its summary may take)
        let mut ladder: Vec<(Escalation, Rule, usize, usize, usize)> = vec![
            (Escalation::Rule, self.region_rule(), done, k_min, share),
            (Escalation::Strip, strip, done, k_min, share),
            (
                Escalation::Summary,
                summarize.clone(),
                deferred_end,
                k_min,
                share,
            ),
            (
                Escalation::ShrinkTail,
                summarize.clone(),
                deferred_end,
                0,
                share,
            ),
        ];
        let mut tight = share;
        while tight > floor {
            tight = (tight / 2).max(floor);
            ladder.push((
                Escalation::ShrinkTail,
                summarize.clone(),
                deferred_end,
                0,
                tight,
            ));
        }
        let mut steps = Vec::new();
        let mut best: Option<Choice> = None;
        for (step, rule, start, fewest, summary_tokens) in ladder {
            // The gentle rungs aim at the band target (a band wide enough
            // for the cache); the rungs that cut into the retained tail
            // only ever for the target, and not at all once the gentle
            // ones reached it.
            let goal = if step == Escalation::ShrinkTail {
                if let Some(b) = best.take_if(|b| b.after <= budget.target) {
                    return Ok(Some(b));
                }
                budget.target
            } else {
                budget.aim()
            };
            if steps.last() != Some(&step) {
                steps.push(step);
            }
            if step == Escalation::Strip && !self.rule_leaves_something() {
                continue;
            }
            let tokens = summary_tokens;
            let no_hints = step == Escalation::Strip;
            // Keeping more units never makes the request smaller: search
            // for the most units kept that still reach the target.
            // When even the fewest units kept miss the target, more would
            // too: the search runs only from a fit.
            let at_fewest =
                self.candidate(conv, ctx, &rule, cuts[fewest].0, start, no_hints, tokens)?;
            let mut fit = at_fewest.clone().filter(|c| c.after <= goal);
            let (mut lo, mut hi) = (fewest + 1, cuts.len() - 1);
            if fit.is_some() {
                while lo <= hi {
                    let mid = lo + (hi - lo) / 2;
                    match self.candidate(conv, ctx, &rule, cuts[mid].0, start, no_hints, tokens)? {
                        Some(c) if c.after <= goal => {
                            fit = Some(c);
                            lo = mid + 1;
                        }
                        _ => {
                            if mid == 0 {
                                break;
                            }
                            hi = mid - 1;
                        }
                    }
                }
            }
            if let Some(mut c) = fit {
                c.steps = steps;
                return Ok(Some(c));
            }
            let smaller = at_fewest.as_ref().is_some_and(|c| {
                c.after < before && best.as_ref().is_none_or(|b| c.after < b.after)
            });
            if let Some(mut c) = at_fewest.filter(|_| smaller) {
                c.steps = steps.clone();
                best = Some(c);
            } else if tokens < share {
                // A smaller summary budget that saves nothing more: the
                // summary is as small as it gets.
                break;
            }
        }
        // The last rung, only for a request that would not fit otherwise:
        // the units after the folded head over a per-unit cap are shown
        // as their head and tail (the log keeps them whole).
        if best.as_ref().map_or(before, |b| b.after) > budget.limit()
            && let Some(c) = self.clipped(conv, ctx, budget, &cuts, best.as_ref())
        {
            return Ok(Some(c));
        }
        Ok(best)
    }

    /// `head` (what the ladder chose, if anything) and a compaction that
    /// clips the long units after it, with the largest per-unit cap
    /// (halving from half the target's room) that fits the limit; the
    /// units before the newest alone first; `None` when even the smallest
    /// cap does not.
    fn clipped(
        &self,
        conv: &Conversation<'_>,
        ctx: &Context,
        budget: &Budget,
        cuts: &[(usize, usize)],
        head: Option<&Choice>,
    ) -> Option<Choice> {
        let log = conv.log();
        let lo = head.map_or(cuts[0].0, |h| h.cut);
        let hi = log.len().checked_sub(1)?;
        // The newest unit (the newest message, the open step) is clipped
        // only when clipping the older units after the head is not enough.
        let newest = cuts[0].0;
        if lo < newest
            && let Some(c) = self.clipped_in(conv, ctx, budget, (lo, newest - 1), head)
        {
            return Some(c);
        }
        self.clipped_in(conv, ctx, budget, (lo, hi), head)
    }

    /// `head` and a compaction clipping the long units of records
    /// `lo..=hi` (see [`Self::clipped`]).
    fn clipped_in(
        &self,
        conv: &Conversation<'_>,
        ctx: &Context,
        budget: &Budget,
        (lo, hi): (usize, usize),
        head: Option<&Choice>,
    ) -> Option<Choice> {
        let log = conv.log();
        let est = self.estimator.as_ref();
        if lo > hi || holds_open_call(log, lo, hi) {
            return None;
        }
        let (first, last) = (&log.records()[lo], &log.records()[hi]);
        let mut clip = ctxfold_core::Compaction::new(
            log.turn_of(lo),
            log.turn_of(hi),
            ctxfold_core::compaction::Source::Auto,
        )
        .with_note("automatic: the newest units cut to their head and tail to fit the window");
        clip.from_seq = Some(first.seq);
        clip.to_seq = Some(last.seq);
        let mut planned: Vec<Planned> = head.map(|h| h.planned.clone()).unwrap_or_default();
        let mut with: Vec<ctxfold_core::Compaction> =
            planned.iter().map(|p| p.compaction.clone()).collect();
        with.push(clip.clone());
        // Characters per estimated token, as the heuristic counts.
        let room = budget.target.saturating_sub(budget.fixed) as f64 / ctx.scale;
        let mut cap = (room * 4.0 / 2.0) as u32;
        let turn = (log.turn_count() as u32).saturating_sub(1);
        while cap >= 400 {
            with.last_mut()?.clip_chars = Some(cap);
            let view = ctxfold_core::projection::project_with(log, &with, turn);
            let after = ctx.scaled(
                view.items.iter().map(|i| est.item_tokens(i)).sum::<usize>() + ctx.extra_tokens,
            );
            if after <= budget.limit() {
                clip.clip_chars = Some(cap);
                planned.push(Planned {
                    compaction: clip,
                    range: (lo, hi),
                    derive: None,
                    grown_from: None,
                    rule: 0,
                });
                let mut steps = head.map(|h| h.steps.clone()).unwrap_or_default();
                steps.push(Escalation::Clip);
                return Some(Choice {
                    planned,
                    after,
                    steps,
                    cut: lo,
                    summary: head.and_then(|h| h.summary),
                });
            }
            cap /= 2;
        }
        None
    }

    /// Whether stripping everything would fold more than the rule does:
    /// the rule leaves reasoning or tool traffic, or a per-tool hint keeps
    /// some.
    fn rule_leaves_something(&self) -> bool {
        let r = &self.policy.rule;
        r.summary.is_none()
            && (r.reasoning.is_none()
                || r.tool_calls != Some(ToolPolicy::Strip)
                || self.hints.default.is_some()
                || !self.hints.per_tool.is_empty())
    }

    /// `rule` over what lies before `cut` (from `start` on), planned and
    /// measured without recording anything; a summary within
    /// `summary_tokens`.
    #[allow(clippy::too_many_arguments)]
    fn candidate(
        &self,
        conv: &Conversation<'_>,
        ctx: &Context,
        rule: &Rule,
        cut: usize,
        start: usize,
        no_hints: bool,
        summary_tokens: usize,
    ) -> Result<Option<Choice>, CompactError> {
        let log = conv.log();
        let keep_first = self.policy.rule.keep_first.as_ref();
        let Some(region) = region_before(log, cut, keep_first, start)? else {
            return Ok(None);
        };
        let note = "automatic, before a model call: folded to the budget's target".to_owned();
        let mut pctx = self.plan_context(ctx, note);
        if no_hints {
            // The strip step folds what per-tool hints keep, too.
            pctx.hints = ToolHints::default();
        }
        let Some(mut planned) = plan_region(log, region, rule, &pctx)? else {
            return Ok(None);
        };
        let mut summary = None;
        if planned.derive.is_some() {
            // Measured with the offline digest within its budget; a model
            // summarizer writes the one that is recorded (and the digest
            // stands in when it is over the budget).
            let made = Digest.summarize_within(
                SummaryInput {
                    log,
                    range: planned.range,
                    instructions: None,
                },
                summary_chars(ctx, summary_tokens),
            );
            let Ok(made) = made else { return Ok(None) };
            summary = Some((summary_tokens, made.kept));
            let made = made.output;
            if check_summary(log, planned.range, &made.text).is_err() {
                return Ok(None);
            }
            let offline = matches!(&planned.derive, Some((None, _)))
                || matches!(&planned.derive, Some((Some(m), _)) if m == "digest");
            planned.compaction.summary = Some(ctxfold_core::compaction::Summary {
                text: made.text,
                provenance: made.provenance,
            });
            if offline {
                planned.derive = None;
            }
        }
        let est = self.estimator.as_ref();
        let (effect, _, then) = assess(log, &planned.compaction, |i| est.item_tokens(i));
        if effect.is_none() {
            return Ok(None);
        }
        if planned.derive.is_some() {
            planned.compaction.summary = None;
        }
        Ok(Some(Choice {
            after: ctx.scaled(then + ctx.extra_tokens),
            planned: vec![planned],
            steps: Vec::new(),
            cut,
            summary,
        }))
    }
}

/// Characters of a summary of `tokens` tokens as the upstream counts them.
pub(super) fn summary_chars(ctx: &Context, tokens: usize) -> usize {
    (tokens as f64 / ctx.scale * CHARS_PER_TOKEN as f64) as usize
}

/// A firing chosen but not yet recorded.
#[derive(Clone)]
pub(super) struct Choice {
    /// What to record, in order.
    pub(super) planned: Vec<Planned>,
    /// The estimated request after it.
    pub(super) after: usize,
    /// The ladder's steps it took.
    pub(super) steps: Vec<Escalation>,
    /// The first record after the folded head.
    pub(super) cut: usize,
    /// The tokens its head summary could take and how that summary kept
    /// the user's words, when it summarizes.
    pub(super) summary: Option<(usize, KeptWords)>,
}
