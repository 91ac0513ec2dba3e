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
use ctxfold_core::compaction::Source;
use ctxfold_core::planner::{
    PlanContext, Planned, Rule, ToolHints, check_summary, plan, plan_region,
};
use ctxfold_core::retention::{
    after_compactions, cut_keeps_pairs, holds_open_call, region_before, retained_tail,
};
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
        conv.view_tokens(self.estimator.as_ref()) + ctx.extra_tokens
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
            threshold: ctx.window.map(|w| self.policy.threshold(w)),
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
        if let Err(why) = due_between_turns(&self.policy, turns, before, ctx.window) {
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
        let threshold = match due_between_turns(&self.policy, turns, before, ctx.window) {
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
        let mut out = self.outcome(ctx, Status::Compacted, before, before);
        match self.commit(conv, &planned, ctx)? {
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
                if !ctx.dry_run && out.after > threshold {
                    out.status = Status::StillOver {
                        reason: format!(
                            "the rule leaves ~{} tokens; the kept turns or what the rule keeps are too large (a summary rule, or a smaller keep_last, would do more)",
                            out.after
                        ),
                    };
                }
                log_fired(&c, before, out.after, ctx);
                out.committed.push(c);
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
        if let Err(why) = due_before_step(&self.policy, before, ctx.window) {
            debug!(%why, "automatic compaction before the step skipped");
            return Ok(self.outcome(ctx, Status::Skipped { why }, before, before));
        }
        let Some(_guard) = conv.journal().try_lock()? else {
            debug!("automatic compaction skipped: another process is compacting");
            return Ok(self.outcome(ctx, Status::Busy, before, before));
        };
        conv.reload()?;
        let before = self.estimate(conv, ctx);
        let threshold = match due_before_step(&self.policy, before, ctx.window) {
            Ok(t) => t,
            Err(why) => return Ok(self.outcome(ctx, Status::Skipped { why }, before, before)),
        };
        let window = ctx.window.unwrap_or_default();
        let mut out = self.outcome(ctx, Status::Compacted, before, before);
        let mut current = before;
        for attempt in 0..=self.policy.compaction_retries {
            // Each further attempt keeps half as much verbatim: the same
            // tail would give the same (already compacted) region again.
            let retain = self.policy.retain(window) >> attempt.min(16);
            let planned = match self.plan_before_tail(conv, ctx, retain, threshold)? {
                Ok(p) => p,
                Err(status) => {
                    if out.committed.is_empty() {
                        if matches!(
                            status,
                            Status::NothingToCompact { .. } | Status::Unfit { .. }
                        ) {
                            conv.stuck = Some((conv.log().len(), status.clone()));
                        }
                        out.status = status;
                    }
                    break;
                }
            };
            match self.commit(conv, &planned, ctx)? {
                Err(error) => {
                    warn!(%error, "automatic compaction failed; nothing was recorded");
                    out.status = Status::Failed { error };
                    if conv.breaker.failed(self.policy.compaction_retries) {
                        break;
                    }
                    continue;
                }
                Ok(None) => {
                    if out.committed.is_empty() {
                        let status = Status::NothingToCompact {
                            reason: crate::effect::no_op_reason(&planned.compaction),
                        };
                        conv.stuck = Some((conv.log().len(), status.clone()));
                        out.status = status;
                    }
                    break;
                }
                Ok(Some(c)) => {
                    let after = self.estimate(conv, ctx);
                    log_fired(&c, current, after, ctx);
                    out.committed.push(c);
                    out.after = after;
                    if ctx.dry_run || after <= threshold {
                        out.status = Status::Compacted;
                        break;
                    }
                    out.status = Status::StillOver {
                        reason: format!(
                            "~{after} tokens after compacting, over the ~{threshold}-token threshold"
                        ),
                    };
                    if after >= current && conv.breaker.failed(self.policy.compaction_retries) {
                        break;
                    }
                    current = after;
                }
            }
        }
        Ok(out)
    }

    /// Plan the automatic rule over what lies before the tail of whole
    /// units reaching `retain` tokens; `Err` says why there is nothing to
    /// plan.
    fn plan_before_tail(
        &self,
        conv: &Conversation<'_>,
        ctx: &Context,
        retain: usize,
        threshold: usize,
    ) -> Result<Result<Planned, Status>, CompactError> {
        let log = conv.log();
        let est = self.estimator.as_ref();
        let Some(tail) = retained_tail(log, retain, |r| est.record_tokens(r)) else {
            return Ok(Err(Status::NothingToCompact {
                reason: "the conversation holds nothing the model sees".into(),
            }));
        };
        // A new band after what is already compacted; when there is none
        // (the bands themselves have grown too large), one summary over
        // everything before the tail, which grows over the earlier ones and
        // merges them into a single checkpoint (seed 002's head anchoring).
        let keep_first = self.policy.rule.keep_first.as_ref();
        let done = after_compactions(log);
        let band = region_before(log, tail.cut, keep_first, done)?;
        let region = match band {
            Some(r) => Some(r),
            None if done > 0 && self.policy.rule.summary.is_some() => {
                region_before(log, tail.cut, keep_first, 0)?
            }
            None => None,
        };
        let Some(region) = region else {
            // Nothing before the tail: if the newest unit alone is too
            // large, say so rather than try again before every step.
            if tail.newest_unit_tokens + ctx.extra_tokens > threshold {
                warn!(
                    unit_tokens = tail.newest_unit_tokens,
                    threshold,
                    "the newest step alone is larger than the budget; compaction cannot make it fit"
                );
                return Ok(Err(Status::Unfit {
                    unit_tokens: tail.newest_unit_tokens,
                    threshold,
                }));
            }
            return Ok(Err(Status::NothingToCompact {
                reason: format!(
                    "nothing lies before the {} newest unit(s) kept verbatim (~{} tokens)",
                    tail.kept_units, tail.kept_tokens
                ),
            }));
        };
        let note = format!(
            "automatic, before a model call: over the ~{threshold}-token threshold; the newest ~{} tokens kept",
            tail.kept_tokens
        );
        match plan_region(
            log,
            region,
            &self.region_rule(),
            &self.plan_context(ctx, note),
        )? {
            Some(p) => Ok(Ok(p)),
            None => Ok(Err(Status::NothingToCompact {
                reason: "what lies before the kept tail is already summarized".into(),
            })),
        }
    }

    /// Make the planned compaction's summary if it needs one, check it and
    /// record it. `Ok(Err)`: the attempt failed (recorded only as a failed
    /// attempt); `Ok(Ok(None))`: it would change nothing (nothing recorded).
    fn commit(
        &self,
        conv: &mut Conversation<'_>,
        planned: &Planned,
        ctx: &Context,
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
        match self.commit(conv, &planned, ctx)? {
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
        let before = self.estimate(conv, ctx);
        // The provider said no: whatever the estimate says, keep less than
        // what was sent.
        let threshold = ctx
            .window
            .map_or(before / 2, |w| self.policy.threshold(w).min(before / 2));
        let retain = ctx
            .window
            .map_or(before / 4, |w| self.policy.retain(w))
            .min(before / 4);
        let mut out = self.outcome(ctx, Status::Compacted, before, before);
        let planned = match self.plan_before_tail(conv, ctx, retain, threshold)? {
            Ok(p) => p,
            Err(status) => {
                out.status = status;
                return Ok(out);
            }
        };
        match self.commit(conv, &planned, ctx)? {
            Err(error) => out.status = Status::Failed { error },
            Ok(None) => {
                out.status = Status::NothingToCompact {
                    reason: crate::effect::no_op_reason(&planned.compaction),
                }
            }
            Ok(Some(c)) => {
                out.after = self.estimate(conv, ctx);
                log_fired(&c, before, out.after, ctx);
                out.committed.push(c);
            }
        }
        Ok(out)
    }
}
