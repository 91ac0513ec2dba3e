//! The basic backend: the algorithm of automatic compaction (seeds 004 and
//! 002) and the order of its effects.
//!
//! ```text
//! estimate the view ─ not due ─────────────────────────────► Skipped
//!        │ due
//! take the lock ─ held elsewhere ──────────────────────────► Busy
//! read the log again (another process may have compacted), decide again
//! plan: between turns the rolling range; before a step what lies before
//!       the retained tail
//! compaction_started (slow summarizers only) → summarize → check
//!   (says something, smaller than what it replaces, changes the view)
//! compaction record → compaction_finished (with `error` on failure)
//! ```
//!
//! Before a step, while still over the threshold, up to
//! `compaction_retries` further attempts follow; a failed attempt (the
//! summarizer failed, its summary was refused, or the view did not shrink)
//! counts towards the circuit breaker, which stops automatic compaction
//! for the rest of the turn once the failures exceed `compaction_retries`.

use ctxfold_core::bounds::Keep;
use ctxfold_core::budget::{Budget, Escalation, Firing};
use ctxfold_core::compaction::Source;
use ctxfold_core::compaction::{ReasoningPolicy, ToolPolicy};
use ctxfold_core::planner::SummaryRequest;
use ctxfold_core::planner::{
    PlanContext, Planned, Rule, ToolHints, check_summary, plan, plan_region,
};
use ctxfold_core::retention::{
    after_compactions, cut_keeps_pairs, holds_open_call, region_before, tail_cuts,
};
use ctxfold_core::summarizer::{Summarizer, SummaryInput};
use ctxfold_core::trigger::{
    AutoPolicy, Skip, deferred_to_next_turn, due_before_step, due_between_turns, rolling_rule,
};
use ctxfold_core::{Body, Record};
use ctxfold_tokens::TokenEstimator;
use tracing::{debug, info, warn};

use crate::derive::derive;
use crate::effect::assess;
use crate::{
    Committed, CompactError, Compactor, Context, Conversation, Moment, Outcome, Status, Summarizers,
};

/// The basic compaction backend. One can serve many conversations: what
/// belongs to one conversation lives in its [`Conversation`].
pub struct BasicCompactor {
    policy: AutoPolicy,
    hints: ToolHints,
    estimator: Box<dyn TokenEstimator>,
    summarizers: Box<dyn Summarizers>,
}

impl BasicCompactor {
    /// A backend applying `policy` (`[compaction.auto]`), baking `hints`
    /// (per-tool policies) into what it records, counting with `estimator`
    /// and summarizing with `summarizers`.
    pub fn new(
        policy: AutoPolicy,
        hints: ToolHints,
        estimator: Box<dyn TokenEstimator>,
        summarizers: Box<dyn Summarizers>,
    ) -> Self {
        BasicCompactor {
            policy,
            hints,
            estimator,
            summarizers,
        }
    }

    /// The automatic policy it applies.
    pub fn policy(&self) -> &AutoPolicy {
        &self.policy
    }

    /// The per-tool hints it bakes into compactions with a tool policy.
    pub fn hints(&self) -> &ToolHints {
        &self.hints
    }

    /// Estimated tokens of the request the conversation's view makes,
    /// with what `ctx` adds.
    pub fn estimate(&self, conv: &mut Conversation<'_>, ctx: &Context) -> usize {
        ctx.scaled(conv.view_tokens(self.estimator.as_ref()) + ctx.extra_tokens)
    }

    /// The budget a request in `ctx` works to, when the window is known.
    pub fn budget(&self, ctx: &Context) -> Option<Budget> {
        let w = ctx.window?;
        Some(
            self.policy
                .budget(w, ctx.scaled(ctx.extra_tokens), ctx.max_tokens),
        )
    }

    /// The automatic rule's policies and keeps, without bounds.
    fn region_rule(&self) -> Rule {
        Rule {
            from: None,
            to: None,
            ..self.policy.rule.clone()
        }
    }

    fn plan_context(&self, ctx: &Context, note: String) -> PlanContext {
        PlanContext {
            now: ctx.now,
            hints: self.hints.clone(),
            source: Source::Auto,
            note: Some(note),
            deferred_until_turn: None,
        }
    }

    fn outcome(&self, ctx: &Context, status: Status, before: usize, after: usize) -> Outcome {
        Outcome {
            moment: ctx.moment,
            status,
            before,
            after,
            threshold: self.budget(ctx).map(|b| b.trigger),
            budget: self.budget(ctx),
            committed: Vec::new(),
        }
    }

    fn between_turns(
        &self,
        conv: &mut Conversation<'_>,
        ctx: &Context,
    ) -> Result<Outcome, CompactError> {
        let before = self.estimate(conv, ctx);
        let turns = conv.log().turn_count();
        if conv.fired_at_turns == Some(turns) {
            let reason = "automatic compaction already ran at this turn boundary".to_owned();
            return Ok(self.outcome(ctx, Status::NothingToCompact { reason }, before, before));
        }
        let budget = self.budget(ctx);
        if let Err(why) = due_between_turns(&self.policy, turns, before, budget.as_ref()) {
            debug!(%why, "automatic compaction between turns skipped");
            return Ok(self.outcome(ctx, Status::Skipped { why }, before, before));
        }
        // Folding now would shadow what was just approved for the next turn
        // (a newer summary wins); the next turn's first step measures the
        // view with it in force.
        let pending = deferred_to_next_turn(conv.log());
        if pending > 0 {
            let why = Skip::DeferredPending {
                compactions: pending,
            };
            debug!(%why, "automatic compaction between turns skipped");
            return Ok(self.outcome(ctx, Status::Skipped { why }, before, before));
        }
        let Some(_guard) = conv.journal().try_lock()? else {
            debug!("automatic compaction skipped: another process is compacting");
            return Ok(self.outcome(ctx, Status::Busy, before, before));
        };
        // Another process may have compacted while we were not looking.
        conv.reload()?;
        let before = self.estimate(conv, ctx);
        let turns = conv.log().turn_count();
        let threshold = match due_between_turns(&self.policy, turns, before, budget.as_ref()) {
            Ok(t) => t,
            Err(why) => return Ok(self.outcome(ctx, Status::Skipped { why }, before, before)),
        };
        let note = format!(
            "automatic, between turns: ~{before} tokens in view, over the ~{threshold}-token threshold"
        );
        let mut rule = rolling_rule(&self.policy, conv.log());
        let len = conv.log().len();
        if len > 0 && holds_open_call(conv.log(), 0, len - 1) {
            // The turn in progress is not complete: never fold its open step.
            if matches!(rule.keep_last, None | Some(Keep::Count(0))) {
                rule.keep_last = Some(Keep::Count(1));
            }
        }
        let p = plan(conv.log(), &[rule], &self.plan_context(ctx, note))?;
        if !ctx.dry_run {
            conv.fired_at_turns = Some(turns);
        }
        let Some(planned) = p.planned.into_iter().next() else {
            let reason = p
                .skipped
                .first()
                .map_or_else(|| "nothing to compact".to_owned(), |s| s.reason.clone());
            debug!(%reason, "automatic compaction between turns: nothing to compact");
            return Ok(self.outcome(ctx, Status::NothingToCompact { reason }, before, before));
        };
        let budget = budget.expect("due only with a budget");
        let mut out = self.outcome(ctx, Status::Compacted, before, before);
        let firing = Firing {
            budget,
            before,
            after: before,
            escalation: vec![Escalation::Rule],
        };
        match self.commit(conv, &planned, ctx, Some(firing))? {
            Err(error) => {
                warn!(%error, "automatic compaction between turns failed; nothing was recorded");
                out.status = Status::Failed { error };
            }
            Ok(None) => {
                out.status = Status::NothingToCompact {
                    reason: crate::effect::no_op_reason(&planned.compaction),
                };
            }
            Ok(Some(c)) => {
                out.after = self.estimate(conv, ctx);
                log_fired(&c, before, out.after, ctx);
                out.committed.push(c);
            }
        }
        if !ctx.dry_run && out.after > budget.target {
            // The rolling rule alone did not reach the target: the same
            // firing goes on down the ladder, so that the next one is as
            // far away as the band allows.
            let more = self.fire(conv, ctx, &budget, out.after, false)?;
            if more.compacted() {
                out.committed.extend(more.committed);
                out.after = more.after;
                out.status = more.status;
            } else if out.after > threshold {
                out.status = Status::StillOver {
                    reason: format!(
                        "the rule leaves ~{} tokens; the kept turns or what the rule keeps are too large (a summary rule, or a smaller keep_last, would do more)",
                        out.after
                    ),
                };
            }
        }
        Ok(out)
    }

    fn before_step(
        &self,
        conv: &mut Conversation<'_>,
        ctx: &Context,
    ) -> Result<Outcome, CompactError> {
        conv.sync_turn();
        let before = self.estimate(conv, ctx);
        if let Some((len, status)) = &conv.stuck
            && *len == conv.log().len()
            && !ctx.dry_run
        {
            return Ok(self.outcome(ctx, status.clone(), before, before));
        }
        if conv.breaker.is_open() {
            if conv.breaker.first_notice() {
                warn!(
                    failures = conv.breaker.failures(),
                    "automatic compaction stopped for the rest of this turn after repeated failures or no gain"
                );
            }
            return Ok(self.outcome(ctx, Status::BreakerOpen, before, before));
        }
        let budget = self.budget(ctx);
        if let Err(why) = due_before_step(&self.policy, before, budget.as_ref()) {
            debug!(%why, "automatic compaction before the step skipped");
            return Ok(self.outcome(ctx, Status::Skipped { why }, before, before));
        }
        let Some(_guard) = conv.journal().try_lock()? else {
            debug!("automatic compaction skipped: another process is compacting");
            return Ok(self.outcome(ctx, Status::Busy, before, before));
        };
        conv.reload()?;
        let before = self.estimate(conv, ctx);
        if let Err(why) = due_before_step(&self.policy, before, budget.as_ref()) {
            return Ok(self.outcome(ctx, Status::Skipped { why }, before, before));
        }
        let budget = budget.expect("due only with a budget");
        self.fire(conv, ctx, &budget, before, false)
    }

    /// One firing: fold down to the budget's target in one go, escalating
    /// step by step (see [`Escalation`]) only as far as needed, and record
    /// it. `forced`: the provider refused the request (record whatever
    /// fits best, however little it saves).
    fn fire(
        &self,
        conv: &mut Conversation<'_>,
        ctx: &Context,
        budget: &Budget,
        before: usize,
        forced: bool,
    ) -> Result<Outcome, CompactError> {
        let mut out = self.outcome(ctx, Status::Compacted, before, before);
        if budget.no_room() {
            let status = Status::NoRoom {
                fixed: budget.fixed,
                limit: budget.limit(),
            };
            if !conv.no_room_said {
                warn!(
                    fixed = budget.fixed,
                    limit = budget.limit(),
                    "the system prompt and tool definitions alone fill the window less the reply's reserve: nothing ctxfold folds can make room"
                );
                conv.no_room_said = true;
            }
            conv.stuck = Some((conv.log().len(), status.clone()));
            out.status = status;
            return Ok(out);
        }
        let Some(choice) = self.choose(conv, ctx, budget, before)? else {
            let est = self.estimator.as_ref();
            let newest = tail_cuts(conv.log(), |r| est.record_tokens(r))
                .first()
                .map_or(0, |&(_, t)| ctx.scaled(t));
            let status = if before > budget.limit() {
                warn!(
                    unit_tokens = newest,
                    fixed = budget.fixed,
                    limit = budget.limit(),
                    "the fixed part and the newest unit alone are over the window less the reply's reserve, and nothing more can be folded: the request goes upstream as it is"
                );
                Status::Unfit {
                    unit_tokens: newest,
                    threshold: budget.limit(),
                }
            } else {
                Status::NothingToCompact {
                    reason: "nothing lies before the newest unit, or it is all folded already"
                        .into(),
                }
            };
            conv.stuck = Some((conv.log().len(), status.clone()));
            out.status = status;
            return Ok(out);
        };
        let gain = before.saturating_sub(choice.after);
        if !forced
            && gain < budget.min_gain()
            && choice.after <= budget.limit()
            && before <= budget.limit()
        {
            let status = Status::NothingToCompact {
                reason: format!(
                    "a firing would save only ~{gain} tokens, under the ~{} a firing must save",
                    budget.min_gain()
                ),
            };
            conv.stuck = Some((conv.log().len(), status.clone()));
            out.status = status;
            return Ok(out);
        }
        let firing = Firing {
            budget: *budget,
            before,
            after: choice.after,
            escalation: choice.steps.clone(),
        };
        let mut current = before;
        for planned in &choice.planned {
            match self.commit(conv, planned, ctx, Some(firing.clone()))? {
                Err(error) => {
                    warn!(%error, "automatic compaction failed; nothing was recorded");
                    out.status = Status::Failed { error };
                    conv.breaker.failed(self.policy.compaction_retries);
                    return Ok(out);
                }
                Ok(None) => continue,
                Ok(Some(c)) => {
                    let after = self.estimate(conv, ctx);
                    log_fired(&c, current, after, ctx);
                    current = after;
                    out.committed.push(c);
                }
            }
        }
        // A dry run appends nothing: its figures are the plan's.
        let current = if ctx.dry_run { choice.after } else { current };
        out.after = current;
        if out.committed.is_empty() {
            let status = Status::NothingToCompact {
                reason: "it would change nothing in the view".into(),
            };
            conv.stuck = Some((conv.log().len(), status.clone()));
            out.status = status;
        } else if current > budget.limit() {
            warn!(
                after = current,
                limit = budget.limit(),
                "the fixed part and the newest message or step alone do not fit the window: the request goes upstream over it"
            );
            out.status = Status::StillOver {
                reason: format!(
                    "~{current} tokens after compacting, over the ~{}-token limit (the window less the reply's reserve)",
                    budget.limit()
                ),
            };
        } else if current > budget.target {
            out.status = Status::StillOver {
                reason: format!(
                    "~{current} tokens after compacting, over the ~{}-token target: the fixed part, the folded head and the newest unit alone are that large",
                    budget.target
                ),
            };
        }
        Ok(out)
    }

    /// The firing to record: the first step of the ladder that reaches the
    /// target, keeping as much of the newest history verbatim as it can;
    /// when none does, the smallest result of the deepest step tried.
    fn choose(
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
            let revoked = ctxfold_core::compaction::revoked_seqs(log.records());
            log.records()
                .iter()
                .filter(|r| revoked.contains(&r.seq))
                .filter_map(|r| match &r.body {
                    Body::Compaction(c) => {
                        ctxfold_core::projection::covered_indices(log, c).map(|(_, hi)| hi + 1)
                    }
                    _ => None,
                })
                .max()
                .unwrap_or(0)
        };
        let done = done.max(undone_end);
        let deferred_end = deferred_end.max(undone_end);
        // (step, rule, where its region may start, fewest units kept)
        let ladder: [(Escalation, Rule, usize, usize); 4] = [
            (Escalation::Rule, self.region_rule(), done, k_min),
            (Escalation::Strip, strip, done, k_min),
            (Escalation::Summary, summarize.clone(), deferred_end, k_min),
            (Escalation::ShrinkTail, summarize, deferred_end, 0),
        ];
        let mut steps = Vec::new();
        let mut best: Option<Choice> = None;
        for (step, rule, start, fewest) in ladder {
            steps.push(step);
            if step == Escalation::Strip && !self.rule_leaves_something() {
                continue;
            }
            let no_hints = step == Escalation::Strip;
            // Keeping more units never makes the request smaller: search
            // for the most units kept that still reach the target.
            // When even the fewest units kept miss the target, more would
            // too: the search runs only from a fit.
            let at_fewest = self.candidate(conv, ctx, &rule, cuts[fewest].0, start, no_hints)?;
            let mut fit = at_fewest.clone().filter(|c| c.after <= budget.target);
            let (mut lo, mut hi) = (fewest + 1, cuts.len() - 1);
            if fit.is_some() {
                while lo <= hi {
                    let mid = lo + (hi - lo) / 2;
                    match self.candidate(conv, ctx, &rule, cuts[mid].0, start, no_hints)? {
                        Some(c) if c.after <= budget.target => {
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
            if let Some(mut c) = at_fewest
                && c.after < before
                && best.as_ref().is_none_or(|b| c.after < b.after)
            {
                c.steps = steps.clone();
                best = Some(c);
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
    /// (halving from half the target's room) that fits the limit; `None`
    /// when even the smallest cap does not.
    fn clipped(
        &self,
        conv: &Conversation<'_>,
        ctx: &Context,
        budget: &Budget,
        cuts: &[(usize, usize)],
        head: Option<&Choice>,
    ) -> Option<Choice> {
        let log = conv.log();
        let est = self.estimator.as_ref();
        let lo = head.map_or(cuts[0].0, |h| h.cut);
        let hi = log.len().checked_sub(1)?;
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
    /// measured without recording anything.
    fn candidate(
        &self,
        conv: &Conversation<'_>,
        ctx: &Context,
        rule: &Rule,
        cut: usize,
        start: usize,
        no_hints: bool,
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
        if planned.derive.is_some() {
            // Measured with the offline digest; a model summarizer writes
            // the one that is recorded.
            let digest = ctxfold_core::digest::Digest;
            let made = digest.summarize(SummaryInput {
                log,
                range: planned.range,
                instructions: None,
            });
            let Ok(made) = made else { return Ok(None) };
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
        }))
    }

    /// Make the planned compaction's summary if it needs one, check it and
    /// record it. `Ok(Err)`: the attempt failed (recorded only as a failed
    /// attempt); `Ok(Ok(None))`: it would change nothing (nothing recorded).
    fn commit(
        &self,
        conv: &mut Conversation<'_>,
        planned: &Planned,
        ctx: &Context,
        firing: Option<Firing>,
    ) -> Result<Result<Option<Committed>, String>, CompactError> {
        let mut c = planned.compaction.clone();
        let mut started = None;
        if planned.derive.is_some() {
            let d = derive(conv, planned, self.summarizers.as_ref(), ctx.dry_run)?;
            started = d.started;
            match d.summary {
                Ok(summary) => c.summary = Some(summary),
                Err(e) => {
                    finish(conv, started, None, Some(&e))?;
                    return Ok(Err(e));
                }
            }
        }
        if let Some(s) = &c.summary
            && let Err(why) = check_summary(conv.log(), planned.range, &s.text)
        {
            let e = format!("the summary {why}");
            finish(conv, started, None, Some(&e))?;
            return Ok(Err(e));
        }
        // What it changes, and whether the view shrinks: smaller than what
        // it shadows means what the range takes up in the view now (often
        // already compacted), not its raw size. One projection each way.
        let est = self.estimator.as_ref();
        let (effect, now, then) = assess(conv.log(), &c, |i| est.item_tokens(i));
        if effect.is_none() {
            finish(
                conv,
                started,
                None,
                Some("it would change nothing in the view"),
            )?;
            return Ok(Ok(None));
        }
        if then >= now {
            let e = format!("it would not shrink the view (~{now} → ~{then} tokens)");
            finish(conv, started, None, Some(&e))?;
            return Ok(match c.summary {
                Some(_) => Err(format!("the summary: {e}")),
                None => Ok(None),
            });
        }
        if let Some(mut f) = firing {
            f.after = ctx.scaled(then + ctx.extra_tokens);
            c.budget = Some(f);
        }
        if ctx.dry_run {
            return Ok(Ok(Some(Committed {
                seq: None,
                compaction: c,
                effect,
            })));
        }
        let rec = Record::new(
            0,
            ctxfold_store::now(),
            Body::Compaction(Box::new(c.clone())),
        );
        let seq = match conv.append(vec![rec]) {
            Ok(r) => r.start,
            Err(e) => {
                // Best effort: say so in the log, unless writing is what fails.
                let _ = finish(conv, started, None, Some(&e.to_string()));
                return Err(e.into());
            }
        };
        finish(conv, started, Some(seq), None)?;
        Ok(Ok(Some(Committed {
            seq: Some(seq),
            compaction: c,
            effect,
        })))
    }
}

/// A firing chosen but not yet recorded.
#[derive(Clone)]
struct Choice {
    /// What to record, in order.
    planned: Vec<Planned>,
    /// The estimated request after it.
    after: usize,
    /// The ladder's steps it took.
    steps: Vec<Escalation>,
    /// The first record after the folded head.
    cut: usize,
}

/// Close an attempt opened with `compaction_started`, if one was.
fn finish(
    conv: &mut Conversation<'_>,
    started: Option<u64>,
    compaction: Option<u64>,
    error: Option<&str>,
) -> Result<(), CompactError> {
    match started {
        Some(s) => crate::derive::close(conv, &[(s, compaction)], error),
        None => Ok(()),
    }
}

fn log_fired(c: &Committed, before: usize, after: usize, ctx: &Context) {
    info!(
        moment = ?ctx.moment,
        from_turn = u64::from(c.compaction.from_turn) + 1,
        to_turn = u64::from(c.compaction.to_turn) + 1,
        from_seq = c.compaction.from_seq,
        to_seq = c.compaction.to_seq,
        policy = %c.compaction.describe().join(", "),
        before,
        after,
        dry_run = ctx.dry_run,
        "automatic compaction: ~{before} → ~{after} tokens"
    );
}

impl Compactor for BasicCompactor {
    fn compact_if_needed(
        &self,
        conv: &mut Conversation<'_>,
        ctx: &Context,
    ) -> Result<Outcome, CompactError> {
        match ctx.moment {
            Moment::BetweenTurns => self.between_turns(conv, ctx),
            Moment::BeforeStep => self.before_step(conv, ctx),
        }
    }

    fn compact_region(
        &self,
        conv: &mut Conversation<'_>,
        range: (usize, usize),
        ctx: &Context,
    ) -> Result<Outcome, CompactError> {
        let len = conv.log().len();
        if range.0 > range.1 || range.1 >= len {
            return Err(CompactError::Summary(format!(
                "records {}..={} are not in a conversation of {len} records",
                range.0, range.1
            )));
        }
        if !cut_keeps_pairs(conv.log(), range.0) || !cut_keeps_pairs(conv.log(), range.1 + 1) {
            return Err(CompactError::Summary(
                "the range separates a tool call from its result".into(),
            ));
        }
        if holds_open_call(conv.log(), range.0, range.1) {
            return Err(CompactError::Summary(
                "the range holds a tool call still waiting for its result".into(),
            ));
        }
        let before = self.estimate(conv, ctx);
        let Some(_guard) = conv.journal().try_lock()? else {
            return Ok(self.outcome(ctx, Status::Busy, before, before));
        };
        // Another process may have compacted this range meanwhile.
        conv.reload()?;
        let before = self.estimate(conv, ctx);
        let note = "automatic, over a given range".to_owned();
        let mut out = self.outcome(ctx, Status::Compacted, before, before);
        let Some(planned) = plan_region(
            conv.log(),
            range,
            &self.region_rule(),
            &self.plan_context(ctx, note),
        )?
        else {
            out.status = Status::NothingToCompact {
                reason: "the range holds nothing the model sees, or is already summarized".into(),
            };
            return Ok(out);
        };
        match self.commit(conv, &planned, ctx, None)? {
            Err(error) => out.status = Status::Failed { error },
            Ok(None) => {
                out.status = Status::NothingToCompact {
                    reason: crate::effect::no_op_reason(&planned.compaction),
                }
            }
            Ok(Some(c)) => {
                out.after = self.estimate(conv, ctx);
                out.committed.push(c);
            }
        }
        Ok(out)
    }

    fn compact_for_overflow(
        &self,
        conv: &mut Conversation<'_>,
        ctx: &Context,
    ) -> Result<Outcome, CompactError> {
        let before = self.estimate(conv, ctx);
        let Some(_guard) = conv.journal().try_lock()? else {
            return Ok(self.outcome(ctx, Status::Busy, before, before));
        };
        conv.reload()?;
        conv.stuck = None;
        let mut ctx = *ctx;
        if ctx.window.is_none() {
            ctx.window = Some(u32::try_from(self.estimate(conv, &ctx)).unwrap_or(u32::MAX));
        }
        // The provider said no: whatever the estimate says, the request
        // was over. An estimate that thought it fitted is scaled up to
        // just over the limit (estimates are wrong by construction).
        for _ in 0..2 {
            let before = self.estimate(conv, &ctx);
            let budget = self.budget(&ctx).expect("a window");
            if before > budget.limit() || before == 0 {
                break;
            }
            ctx.scale *= (budget.limit() + 1) as f64 / before as f64;
        }
        let before = self.estimate(conv, &ctx);
        let budget = self.budget(&ctx).expect("a window");
        self.fire(conv, &ctx, &budget, before, true)
    }
}
