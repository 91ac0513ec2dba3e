//! Recording one planned compaction: make its summary (a model summarizer,
//! `compaction_started` first when slow), check it, measure it, append it,
//! and close the attempt with `compaction_finished`.

use ctxfold_core::budget::Firing;
use ctxfold_core::compaction::{Provenance, Summary};
use ctxfold_core::digest::{BOUNDED_METHOD, Digest};
use ctxfold_core::planner::{Planned, check_summary};
use ctxfold_core::summarizer::SummaryInput;
use ctxfold_core::{Body, Log, Record};
use tracing::{info, warn};

use super::BasicCompactor;
use super::ladder::summary_chars;
use crate::derive::derive;
use crate::effect::assess;
use crate::{Committed, CompactError, Context, Conversation};

impl BasicCompactor {
    /// Make the planned compaction's summary if it needs one, check it and
    /// record it. `Ok(Err)`: the attempt failed (recorded only as a failed
    /// attempt); `Ok(Ok(None))`: it would change nothing (nothing recorded).
    pub(super) fn commit(
        &self,
        conv: &mut Conversation<'_>,
        planned: &Planned,
        ctx: &Context,
        mut firing: Option<Firing>,
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
            if let Some(f) = firing.as_mut()
                && let Some(tokens) = f.summary_budget
                && let Some(s) = c.summary.as_mut()
                && let Err(e) = bound(conv.log(), planned.range, s, f, summary_chars(ctx, tokens))
            {
                finish(conv, started, None, Some(&e))?;
                return Ok(Err(e));
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

/// A firing's head summary within `chars` characters: the digest's is made
/// again within them (the user's words whole newest first, older ones as a
/// first line and a handle); a model's that is over them (but smaller than
/// its range) is replaced by that bounded digest (its provenance says so). `firing` learns how
/// many user messages were cut to a handle.
fn bound(
    log: &Log,
    range: (usize, usize),
    summary: &mut Summary,
    firing: &mut Firing,
    chars: usize,
) -> Result<(), String> {
    let name = match &summary.provenance {
        Provenance::Derived { summarizer, .. } => summarizer.clone(),
        // Written by a person: kept as written.
        Provenance::Supplied { .. } => return Ok(()),
    };
    let n = summary.text.chars().count();
    let by_digest = name == "digest";
    // A model's summary that is not smaller than its range is refused
    // below, as a failure the breaker counts: nothing stands in for it.
    if !by_digest && (n <= chars || check_summary(log, range, &summary.text).is_err()) {
        firing.shortened = 0;
        firing.handles_only = 0;
        return Ok(());
    }
    let made = Digest
        .summarize_within(
            SummaryInput {
                log,
                range,
                instructions: None,
            },
            chars,
        )
        .map_err(|e| e.to_string())?;
    let mut provenance = made.output.provenance;
    if let (false, Provenance::Derived { method, .. }) = (by_digest, &mut provenance) {
        warn!(
            summarizer = %name,
            chars = n,
            budget = chars,
            "the model's summary is over the head summary's budget: the bounded digest stands in for it"
        );
        *method = Some(format!(
            "{BOUNDED_METHOD}, in place of {name}'s summary of {n} characters (over the budget of {chars})"
        ));
    }
    *summary = Summary {
        text: made.output.text,
        provenance,
    };
    firing.shortened = made.kept.shortened;
    firing.handles_only = made.kept.by_handle;
    Ok(())
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

pub(super) fn log_fired(c: &Committed, before: usize, after: usize, ctx: &Context) {
    info!(
        moment = ?ctx.moment,
        from_turn = u64::from(c.compaction.from_turn) + 1,
        to_turn = u64::from(c.compaction.to_turn) + 1,
        from_seq = c.compaction.from_seq,
        to_seq = c.compaction.to_seq,
        policy = %c.compaction.describe().join(", "),
        shortened = c.compaction.budget.as_ref().map_or(0, |f| f.shortened),
        handles_only = c.compaction.budget.as_ref().map_or(0, |f| f.handles_only),
        before,
        after,
        dry_run = ctx.dry_run,
        "automatic compaction: ~{before} → ~{after} tokens"
    );
}
