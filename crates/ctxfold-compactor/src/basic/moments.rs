//! When automatic compaction fires: between turns (the rolling rule, then
//! the ladder if the target is still missed) and before a step (unless the
//! breaker is open or the conversation is stuck), each checked again under
//! the lock after reading the log again.

use ctxfold_core::bounds::Keep;
use ctxfold_core::budget::{Escalation, Firing};
use ctxfold_core::planner::plan;
use ctxfold_core::retention::holds_open_call;
use ctxfold_core::trigger::{
    Skip, deferred_to_next_turn, due_before_step, due_between_turns, rolling_rule,
};
use tracing::{debug, warn};

use super::BasicCompactor;
use super::commit::log_fired;
use crate::journal::Guard;
use crate::{CompactError, Context, Conversation, Outcome, Status};

impl BasicCompactor {
    /// The compaction lock, and the view's size measured again once the
    /// log is read again under it (another process may have compacted
    /// while we were not looking); or, when another process holds the
    /// lock, the outcome that says so.
    fn lock_and_reload(
        &self,
        conv: &mut Conversation<'_>,
        ctx: &Context,
        before: usize,
    ) -> Result<Result<(Guard, usize), Outcome>, CompactError> {
        let Some(guard) = conv.journal().try_lock()? else {
            debug!("automatic compaction skipped: another process is compacting");
            return Ok(Err(self.outcome(ctx, Status::Busy, before, before)));
        };
        conv.reload()?;
        Ok(Ok((guard, self.estimate(conv, ctx))))
    }

    pub(super) fn between_turns(
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
        let (_guard, before) = match self.lock_and_reload(conv, ctx, before)? {
            Ok(locked) => locked,
            Err(busy) => return Ok(busy),
        };
        let turns = conv.log().turn_count();
        let threshold = match due_between_turns(&self.policy, turns, before, budget.as_ref()) {
            Ok(t) => t,
            Err(why) => return Ok(self.outcome(ctx, Status::Skipped { why }, before, before)),
        };
        // Never `None`: `due_between_turns` is `Ok` only with a budget (were
        // it not, the unknown window is what skipped it).
        let Some(budget) = budget else {
            let why = Skip::UnknownWindow;
            return Ok(self.outcome(ctx, Status::Skipped { why }, before, before));
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
        let firing = Firing {
            budget,
            before,
            after: before,
            escalation: vec![Escalation::Rule],
            // A summary the rule derives keeps to its share too.
            summary_budget: planned
                .derive
                .is_some()
                .then(|| budget.summary(&self.policy)),
            shortened: 0,
            handles_only: 0,
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

    pub(super) fn before_step(
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
        let (_guard, before) = match self.lock_and_reload(conv, ctx, before)? {
            Ok(locked) => locked,
            Err(busy) => return Ok(busy),
        };
        if let Err(why) = due_before_step(&self.policy, before, budget.as_ref()) {
            return Ok(self.outcome(ctx, Status::Skipped { why }, before, before));
        }
        // Never `None`: `due_before_step` is `Ok` only with a budget (were
        // it not, the unknown window is what skipped it).
        let Some(budget) = budget else {
            let why = Skip::UnknownWindow;
            return Ok(self.outcome(ctx, Status::Skipped { why }, before, before));
        };
        self.fire(conv, ctx, &budget, before, false)
    }
}
