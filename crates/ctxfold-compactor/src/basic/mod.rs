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
//!
//! The code is split by job: `arrival` (outputs over `excerpt_share` of
//! the window excerpted when they arrive, before a step), `moments` (when
//! a firing is due, between turns and before a step: decide, lock, read
//! again, decide again, plan),
//! `firing` (one firing, down to the budget's target), `ladder` (the
//! escalation ladder that chooses what to fold) and `commit` (summarize,
//! check, append, and close the attempt).

mod arrival;
mod commit;
mod firing;
mod ladder;
mod moments;

use ctxfold_core::budget::Budget;
use ctxfold_core::compaction::Source;
use ctxfold_core::planner::{PlanContext, Rule, ToolHints, plan_region};
use ctxfold_core::retention::{cut_keeps_pairs, holds_open_call};
use ctxfold_core::trigger::AutoPolicy;
use ctxfold_tokens::TokenEstimator;

use crate::{CompactError, Compactor, Context, Conversation, Moment, Outcome, Status, Summarizers};

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
        ctx.window.map(|w| self.budget_in(ctx, w))
    }

    /// The budget of a request in `ctx` to a model of window `w`.
    fn budget_in(&self, ctx: &Context, w: u32) -> Budget {
        self.policy
            .budget(w, ctx.scaled(ctx.extra_tokens), ctx.max_tokens)
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
}

impl Compactor for BasicCompactor {
    fn compact_if_needed(
        &self,
        conv: &mut Conversation<'_>,
        ctx: &Context,
    ) -> Result<Outcome, CompactError> {
        // What just arrived is excerpted first, so that the view is
        // measured with it as the model will see it.
        let excerpts = self.excerpt_arrivals(conv, ctx)?;
        let mut out = match ctx.moment {
            Moment::BetweenTurns => self.between_turns(conv, ctx),
            Moment::BeforeStep => self.before_step(conv, ctx),
        }?;
        if !excerpts.is_empty() {
            let mut committed = excerpts;
            committed.append(&mut out.committed);
            out.committed = committed;
        }
        Ok(out)
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
        let window = match ctx.window {
            Some(w) => w,
            None => {
                let w = u32::try_from(self.estimate(conv, &ctx)).unwrap_or(u32::MAX);
                ctx.window = Some(w);
                w
            }
        };
        // The provider said no: whatever the estimate says, the request
        // was over. An estimate that thought it fitted is scaled up to
        // just over the limit (estimates are wrong by construction).
        for _ in 0..2 {
            let before = self.estimate(conv, &ctx);
            let budget = self.budget_in(&ctx, window);
            if before > budget.limit() || before == 0 {
                break;
            }
            ctx.scale *= (budget.limit() + 1) as f64 / before as f64;
        }
        let before = self.estimate(conv, &ctx);
        let budget = self.budget_in(&ctx, window);
        self.fire(conv, &ctx, &budget, before, true)
    }
}
