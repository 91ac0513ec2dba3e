//! Manual rules through the same steps as automatic compaction: plan,
//! summarize (bracketed when slow), check, leave out what would change
//! nothing, append. `conversation compact`, `conversation fork -k` and
//! `ctxfold compact FILE` run this.

use ctxfold_core::attempt::{Finished, Started};
use ctxfold_core::compaction::{Provenance, Summary};
use ctxfold_core::planner::{Plan, PlanContext, Rule, check_summary, plan};
use ctxfold_core::summarizer::SummaryInput;
use ctxfold_core::{Body, Compaction, Record};

use crate::effect::{Effect, drop_no_ops};
use crate::{CompactError, Conversation, Summarizers};

/// What a manual run planned and recorded.
#[derive(Debug, Clone)]
pub struct Run {
    /// The plan: what each rule made, and what was skipped and why
    /// (including compactions left out because they change nothing).
    pub plan: Plan,
    /// The compactions recorded (in a dry run, that would be), in order.
    pub compactions: Vec<Compaction>,
    /// What each changes in the view.
    pub effects: Vec<Effect>,
    /// Their records' `seq`s (empty in a dry run).
    pub seqs: Vec<u64>,
    /// How many records the log held when the run began (after reading it
    /// again under the lock): what it planned against. Everything after
    /// is the run's own (attempt records, compactions).
    pub planned_on: usize,
}

/// Plan `rules` against the conversation, make the summaries they need,
/// and append the compactions (unless `dry_run`). One compaction runs at a
/// time: without `dry_run` the conversation's compaction lock is held from
/// planning to the last append, and a held lock is [`CompactError::Busy`].
/// A summary that fails or is refused records nothing of the run but the
/// failed attempt.
pub fn compact_with_rules(
    conv: &mut Conversation<'_>,
    rules: &[Rule],
    ctx: &PlanContext,
    summarizers: &dyn Summarizers,
    dry_run: bool,
) -> Result<Run, CompactError> {
    // A preview reads only: it needs neither the lock nor write access.
    let _guard = if dry_run {
        None
    } else {
        match conv.journal().try_lock()? {
            Some(g) => Some(g),
            None => return Err(CompactError::Busy),
        }
    };
    if !dry_run {
        conv.reload()?;
    }
    let planned_on = conv.log().len();
    let mut plan = plan(conv.log(), rules, ctx)?;
    let mut compactions = Vec::new();
    // The attempts opened (slow summaries), by the index of their compaction.
    let mut open: Vec<(usize, u64)> = Vec::new();
    for (k, p) in plan.planned.iter().enumerate() {
        let mut c = p.compaction.clone();
        if let Some((model, instructions)) = &p.derive {
            let s = match summarizers.get(model.as_deref()) {
                Ok(s) => s,
                Err(e) => {
                    close_all(conv, &open, &e)?;
                    return Err(CompactError::Summary(e));
                }
            };
            if dry_run && !s.offline() {
                // A preview never pays for a model call: say who would write it.
                c.summary = Some(Summary {
                    text: format!(
                        "[a summary by {}, written when this runs without --dry-run]",
                        s.name()
                    ),
                    provenance: Provenance::Derived {
                        summarizer: s.name(),
                        version: None,
                        instructions: None,
                        method: Some("dry run".into()),
                    },
                });
            } else {
                if !s.offline() && !dry_run {
                    let log = conv.log();
                    let rec = Started {
                        from_turn: c.from_turn,
                        to_turn: c.to_turn,
                        from_seq: log.records()[p.range.0].seq,
                        to_seq: log.records()[p.range.1].seq,
                        source: c.source,
                        summarizer: s.name(),
                    };
                    let seq = conv
                        .append(vec![Record::new(0, ctxfold_store::now(), rec.body())])?
                        .start;
                    open.push((k, seq));
                }
                let made = s.summarize(SummaryInput {
                    log: conv.log(),
                    range: p.range,
                    instructions: instructions.as_deref(),
                });
                match made {
                    Ok(out) => {
                        c.summary = Some(Summary {
                            text: out.text,
                            provenance: out.provenance,
                        })
                    }
                    Err(e) => {
                        let e = e.to_string();
                        close_all(conv, &open, &e)?;
                        return Err(CompactError::Summary(format!("{e}; nothing was recorded")));
                    }
                }
            }
        }
        // A summary, derived or written, must say something and be smaller
        // than what it replaces (SPEC §6).
        if let Some(summary) = &c.summary
            && let Err(why) = check_summary(conv.log(), p.range, &summary.text)
        {
            let by = match &summary.provenance {
                Provenance::Derived { summarizer, .. } => format!("the {summarizer} summary"),
                Provenance::Supplied { .. } => "the written summary".into(),
            };
            let e = format!(
                "{by} of turns {}–{} {why}",
                u64::from(c.from_turn) + 1,
                u64::from(c.to_turn) + 1
            );
            close_all(conv, &open, &e)?;
            return Err(CompactError::Summary(format!("{e}; nothing was recorded")));
        }
        compactions.push(c);
    }
    let (effects, kept) = drop_no_ops(conv.log(), &mut plan, &mut compactions);
    let mut seqs = Vec::new();
    if !dry_run && !compactions.is_empty() {
        let ts = ctxfold_store::now();
        let records = compactions
            .iter()
            .map(|c| Record::new(0, ts.clone(), Body::Compaction(Box::new(c.clone()))))
            .collect();
        seqs = match conv.append(records) {
            Ok(r) => r.collect(),
            Err(e) => {
                let _ = close_all(conv, &open, &e.to_string());
                return Err(e.into());
            }
        };
    }
    // Attempts are closed last, each naming its compaction (a summary left
    // out because it would change nothing has none).
    let seq_of = |k: usize| -> Option<u64> {
        let position = kept[..k].iter().filter(|&&kept| kept).count();
        kept[k].then(|| seqs.get(position).copied()).flatten()
    };
    let finished: Vec<Record> = open
        .iter()
        .map(|&(k, started)| {
            let compaction = seq_of(k);
            let error = compaction
                .is_none()
                .then(|| "it would change nothing in the view".to_owned());
            Record::new(
                0,
                ctxfold_store::now(),
                Finished {
                    started,
                    compaction,
                    error,
                }
                .body(),
            )
        })
        .collect();
    if !finished.is_empty() {
        conv.append(finished)?;
    }
    Ok(Run {
        plan,
        compactions,
        effects,
        seqs,
        planned_on,
    })
}

/// Close every attempt opened in this run with `error`.
fn close_all(
    conv: &mut Conversation<'_>,
    open: &[(usize, u64)],
    error: &str,
) -> Result<(), CompactError> {
    if open.is_empty() {
        return Ok(());
    }
    let records = open
        .iter()
        .map(|&(_, started)| {
            Record::new(
                0,
                ctxfold_store::now(),
                Finished {
                    started,
                    compaction: None,
                    error: Some(error.to_owned()),
                }
                .body(),
            )
        })
        .collect();
    conv.append(records)?;
    Ok(())
}
