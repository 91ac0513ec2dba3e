//! Manual rules through the same steps as automatic compaction: plan,
//! summarize (bracketed when slow), check, leave out what would change
//! nothing, append. `conversation compact`, `conversation fork -k` and
//! `ctxfold compact FILE` run this; the two compact commands (and their
//! `--dry-run`) run the default rule through [`compact_by_default`], so
//! both plan the same ranges and the same fallback.

use ctxfold_core::bounds::Clock;
use ctxfold_core::compaction::Provenance;
use ctxfold_core::estimate::view_tokens;
use ctxfold_core::planner::{Plan, PlanContext, Rule, SummaryRequest, check_summary, plan};
use ctxfold_core::projection::project;
use ctxfold_core::{Body, Compaction, Log, Record};
use serde::Serialize;

use crate::derive::{close, derive};
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
    /// What the run did instead of the rules it was given, if anything.
    pub fallback: Option<Fallback>,
}

/// What a default run did instead of the built-in rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// The built-in rule folded nothing: its old turns were summarized by
    /// the offline digest.
    Digest,
}

impl Fallback {
    /// What a report says of it, for the `compactions` the run made (one
    /// line): which turns the digest summarized, and why.
    pub fn line(self, compactions: &[Compaction]) -> String {
        let turns = compactions
            .iter()
            .map(|c| {
                let (a, b) = (u64::from(c.from_turn) + 1, u64::from(c.to_turn) + 1);
                if a == b {
                    format!("turn {a}")
                } else {
                    format!("turns {a}–{b}")
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        match self {
            Fallback::Digest => format!(
                "the built-in rule had nothing mechanical to fold (no tool call or old reasoning to strip); {turns} summarized offline by the digest instead\n"
            ),
        }
    }
}

/// The run of the default rule, the user having asked for no rule:
/// [`Rule::builtin`] through [`compact_with_rules`]; and when it folds
/// nothing (plain-text turns: no tool call, no old reasoning) while there
/// are turns outside its keep-first and keep-last, those turns are
/// summarized by the summarizer of no model (the offline digest) instead,
/// as `-s` with the same bounds would: the default never hands back a
/// long conversation as large as it came. The fallback is left out (the
/// run is the built-in rule's, nothing recorded) when the digest folds
/// nothing, cannot summarize the turns, or would not make the view
/// smaller (the summary comes with a message that introduces it, so tiny
/// turns could grow).
///
/// Planned once without writing, then (unless `dry_run`) recorded as any
/// run is, so a preview and the run itself fold the same ranges.
pub fn compact_by_default(
    conv: &mut Conversation<'_>,
    ctx: &PlanContext,
    summarizers: &dyn Summarizers,
    dry_run: bool,
) -> Result<Run, CompactError> {
    let run = compact_with_rules(conv, &[Rule::builtin()], ctx, summarizers, dry_run)?;
    if !run.compactions.is_empty() {
        return Ok(run);
    }
    let Some(rule) = digest_rule(conv.log(), ctx) else {
        return Ok(run);
    };
    let Ok(trial) = compact_with_rules(conv, std::slice::from_ref(&rule), ctx, summarizers, true)
    else {
        return Ok(run);
    };
    let log = conv.log();
    let after = crate::effect::with_compactions(log, &trial.compactions, "");
    if trial.compactions.is_empty() || view_tokens(&project(&after)) >= view_tokens(&project(log)) {
        return Ok(run);
    }
    let mut out = if dry_run {
        trial
    } else {
        // Planned again under the lock: another writer may have folded
        // these turns since the trial, and then this run records nothing.
        compact_with_rules(conv, &[rule], ctx, summarizers, false)?
    };
    if !out.compactions.is_empty() {
        out.fallback = Some(Fallback::Digest);
    }
    Ok(out)
}

/// The digest over the built-in rule's old turns (outside its keep first
/// and keep last), or `None` when there are none.
fn digest_rule(log: &Log, ctx: &PlanContext) -> Option<Rule> {
    let builtin = Rule::builtin();
    let clock = Clock { now: ctx.now };
    let (first, last) = (builtin.keep_first?, builtin.keep_last?);
    let old_turns = match (first.first_not_kept(log), last.last_not_kept(log, clock)) {
        (Ok(lo), Ok(hi)) => lo <= hi,
        _ => false,
    };
    old_turns.then(|| Rule {
        keep_first: builtin.keep_first,
        keep_last: builtin.keep_last,
        summary: Some(SummaryRequest::Derive {
            model: None,
            instructions: None,
        }),
        ..Rule::default()
    })
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
        if p.derive.is_some() {
            let d = derive(conv, p, summarizers, dry_run)?;
            if let Some(seq) = d.started {
                open.push((k, seq));
            }
            match d.summary {
                Ok(summary) => c.summary = Some(summary),
                Err(e) => {
                    close_all(conv, &open, &e)?;
                    return Err(CompactError::Summary(format!("{e}; nothing was recorded")));
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
    let closing: Vec<(u64, Option<u64>)> = open
        .iter()
        .map(|&(k, started)| (started, seq_of(k)))
        .collect();
    close(conv, &closing, None)?;
    Ok(Run {
        plan,
        compactions,
        effects,
        seqs,
        planned_on,
        fallback: None,
    })
}

/// Close every attempt opened in this run with `error`.
fn close_all(
    conv: &mut Conversation<'_>,
    open: &[(usize, u64)],
    error: &str,
) -> Result<(), CompactError> {
    let closing: Vec<(u64, Option<u64>)> = open.iter().map(|&(_, s)| (s, None)).collect();
    close(conv, &closing, Some(error))
}
