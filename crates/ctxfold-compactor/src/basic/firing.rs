//! One firing: fold down to the budget's target in one go, record what the
//! ladder chose, and say how far it got (no room, unfit, still over).

use ctxfold_core::budget::{Budget, Firing};
use ctxfold_core::projection::{Item, project};
use ctxfold_core::retention::tail_cuts;
use tracing::warn;

use super::BasicCompactor;
use super::commit::log_fired;
use crate::{CompactError, Context, Conversation, Outcome, Status};

impl BasicCompactor {
    /// One firing: fold down to the budget's target in one go, escalating
    /// step by step (see [`Escalation`]) only as far as needed, and record
    /// it. `forced`: the provider refused the request (record whatever
    /// fits best, however little it saves).
    ///
    /// [`Escalation`]: ctxfold_core::budget::Escalation
    pub(super) fn fire(
        &self,
        conv: &mut Conversation<'_>,
        ctx: &Context,
        budget: &Budget,
        before: usize,
        forced: bool,
    ) -> Result<Outcome, CompactError> {
        let budget = &budget.banded(self.step_tokens(conv, ctx), self.policy.band_steps);
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
            let status = if before > budget.limit() {
                let over = Over::of(self, conv, ctx, budget);
                over.warn(budget);
                over.status(before, budget)
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
        let kept = choice.summary.map(|(_, k)| k).unwrap_or_default();
        let firing = Firing {
            budget: *budget,
            before,
            after: choice.after,
            escalation: choice.steps.clone(),
            summary_budget: choice.summary.map(|(t, _)| t),
            shortened: kept.shortened,
            handles_only: kept.by_handle,
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
            let over = Over::of(self, conv, ctx, budget);
            over.warn(budget);
            out.status = Status::StillOver {
                reason: format!(
                    "~{current} tokens after compacting, over the ~{}-token limit (the window less the reply's reserve): {}",
                    budget.limit(),
                    over.cause()
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

    /// The average size in the view of the conversation's newest units (a
    /// step of a tool loop, a message of a chat; up to `band_steps` of
    /// them), as the upstream counts: what the band is sized from. `None`
    /// when banding is off or there is no unit yet.
    fn step_tokens(&self, conv: &Conversation<'_>, ctx: &Context) -> Option<usize> {
        let n = self.policy.band_steps as usize;
        if n == 0 {
            return None;
        }
        let log = conv.log();
        let est = self.estimator.as_ref();
        let cuts = tail_cuts(log, |r| est.record_tokens(r));
        let k = n.min(cuts.len());
        let (start, _) = *cuts.get(k.checked_sub(1)?)?;
        // Their size as the model sees them (an excerpted output counts
        // as its excerpt), not as the log holds them.
        let view = ctxfold_core::projection::project(log);
        let tokens: usize = view
            .items
            .iter()
            .filter(|i| *i.origin().start() >= start && !i.origin().is_empty())
            .map(|i| est.item_tokens(i))
            .sum();
        Some(ctx.scaled(tokens) / k)
    }
}

/// What a request over the limit is made of, once nothing more can be
/// folded (all as the upstream counts): which part is the cause decides
/// what the warning and the status say. The newest unit alone is the
/// cause only when it does not fit with the fixed part; otherwise what
/// lies before it in the view does: a summary at its head (kept because
/// it cannot be made smaller), or what stays verbatim (the opening request
/// the rule keeps, what cannot be folded).
struct Over {
    /// The fixed part (system prompt, tools).
    fixed: usize,
    /// The newest unit (the newest message, the open step).
    unit: usize,
    /// The summaries in view before the newest unit.
    summaries: usize,
    /// Everything else in view before the newest unit.
    verbatim: usize,
}

impl Over {
    fn of(c: &BasicCompactor, conv: &Conversation<'_>, ctx: &Context, budget: &Budget) -> Self {
        let est = c.estimator.as_ref();
        let log = conv.log();
        let newest = tail_cuts(log, |r| est.record_tokens(r))
            .first()
            .map_or(log.len(), |&(start, _)| start);
        let view = project(log);
        let (mut unit, mut summaries, mut verbatim) = (0, 0, 0);
        for item in &view.items {
            let t = est.item_tokens(item);
            match item {
                Item::Preamble => verbatim += t,
                _ if *item.origin().start() >= newest => unit += t,
                Item::Summary { .. } => summaries += t,
                _ => verbatim += t,
            }
        }
        Over {
            fixed: budget.fixed,
            unit: ctx.scaled(unit),
            summaries: ctx.scaled(summaries),
            verbatim: ctx.scaled(verbatim),
        }
    }

    /// Whether the fixed part and the newest unit alone are over `limit`.
    fn unit_is_the_cause(&self, limit: usize) -> bool {
        self.fixed + self.unit > limit
    }

    /// Whether the summaries before the newest unit are the larger part
    /// of what lies before it.
    fn summary_is_the_cause(&self) -> bool {
        self.summaries > 0 && self.summaries >= self.verbatim
    }

    /// The cause, for people.
    fn cause(&self) -> String {
        let (fixed, unit) = (self.fixed, self.unit);
        if self.summary_is_the_cause() {
            format!(
                "the summary at the head of the view holds ~{} tokens and cannot be made smaller (with the fixed part, ~{fixed}, and the newest unit, ~{unit})",
                self.summaries
            )
        } else {
            format!(
                "what stays verbatim before the newest unit (the opening request the rule keeps, what cannot be folded) holds ~{} tokens (with the fixed part, ~{fixed}, and the newest unit, ~{unit})",
                self.verbatim
            )
        }
    }

    /// The warning a firing that cannot reach the limit logs.
    fn warn(&self, budget: &Budget) {
        let limit = budget.limit();
        if self.unit_is_the_cause(limit) {
            warn!(
                unit_tokens = self.unit,
                fixed = self.fixed,
                limit,
                "the fixed part and the newest unit alone are over the window less the reply's reserve, and nothing more can be folded: the request goes upstream as it is"
            );
        } else if self.summary_is_the_cause() {
            warn!(
                summary_tokens = self.summaries,
                unit_tokens = self.unit,
                fixed = self.fixed,
                limit,
                "the summary at the head of the view cannot be made smaller, and with it the request is over the window less the reply's reserve: the request goes upstream as it is"
            );
        } else {
            warn!(
                verbatim_tokens = self.verbatim,
                unit_tokens = self.unit,
                fixed = self.fixed,
                limit,
                "what stays verbatim before the newest unit (the opening request the rule keeps, what cannot be folded) puts the request over the window less the reply's reserve: the request goes upstream as it is"
            );
        }
    }

    /// The status of a firing that recorded nothing and is over the limit:
    /// unfit when the newest unit is the cause, else still over, saying
    /// what is.
    fn status(&self, before: usize, budget: &Budget) -> Status {
        let limit = budget.limit();
        if self.unit_is_the_cause(limit) {
            Status::Unfit {
                unit_tokens: self.unit,
                threshold: limit,
            }
        } else {
            Status::StillOver {
                reason: format!(
                    "~{before} tokens, over the ~{limit}-token limit (the window less the reply's reserve), and nothing more can be folded: {}",
                    self.cause()
                ),
            }
        }
    }
}
