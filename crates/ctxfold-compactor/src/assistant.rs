//! Compactions the assistant proposes through its `compact` tool (SPEC §9,
//! seed 000): planned one rule after another, each against the log as the
//! ones before it left it; in force from the next turn
//! (`deferred_until_turn`), so the rest of the turn keeps its prompt prefix;
//! recorded in one batch with the tool call's result.
//!
//! [`plan_proposals`] is pure: the tool's preview and the record are made by
//! the same code, and what the user approved is what is recorded.

use ctxfold_core::compaction::{Provenance, Source, truncate_note};
use ctxfold_core::estimate::item_tokens;
use ctxfold_core::planner::{PlanContext, Rule, SummaryRequest, ToolHints, check_summary, plan};
use ctxfold_core::{Body, Compaction, Log, Record};

use std::borrow::Cow;

use ctxfold_core::report::Fate;

use crate::effect::{Effect, assess_as_of, no_op_reason};
use crate::{Committed, CompactError, Conversation};

/// One rule the assistant proposes, with its note.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// Which turns and how. Its summary, if any, must be supplied text.
    pub rule: Rule,
    /// One sentence on why (cut at 200 characters).
    pub note: String,
}

/// What one proposed rule would do, once in force.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedProposal {
    /// The compaction to record; `None` when the rule has nothing to do.
    pub compaction: Option<Compaction>,
    /// Record indices it covers, inclusive.
    pub range: Option<(usize, usize)>,
    /// What it changes in the view.
    pub effect: Effect,
    /// Estimated tokens of the view at the next turn without it (but with
    /// the rules before it) and with it.
    pub tokens: (usize, usize),
    /// The records whose fate in the view it changes, with their new fate:
    /// everything it would fold away.
    pub changed: Vec<(usize, Fate)>,
    /// Why it has nothing to do, when it has not.
    pub skipped: Option<String>,
}

impl PlannedProposal {
    /// Estimated tokens it saves, once in force.
    pub fn saving(&self) -> usize {
        self.tokens.0.saturating_sub(self.tokens.1)
    }
}

/// Why a proposal cannot be recorded; the message is written for the model
/// (and the person approving), naming the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// Plan `proposals` against `log`, in order, each seeing the compactions
/// of the ones before it (and every deferred one already recorded).
pub fn plan_proposals(
    log: &Log,
    proposals: &[Proposal],
    hints: &ToolHints,
    now: Option<jiff::Timestamp>,
) -> Result<Vec<PlannedProposal>, Refused> {
    // In force from the next turn: the turn after the one in progress.
    let next_turn = log.turn_count() as u32;
    // The log as the rules before left it: copied only when a rule is
    // followed by another (a large log is costly to copy).
    let mut working = Cow::Borrowed(log);
    let mut out = Vec::new();
    for (k, p) in proposals.iter().enumerate() {
        let n = k + 1;
        if matches!(p.rule.summary, Some(SummaryRequest::Derive { .. })) {
            return Err(Refused(format!(
                "rule {n}: only a summary written in the call can be recorded"
            )));
        }
        let ctx = PlanContext {
            now,
            hints: hints.clone(),
            source: Source::Assistant,
            note: Some(truncate_note(p.note.trim())),
            deferred_until_turn: Some(next_turn),
        };
        let mut planned = plan(&working, std::slice::from_ref(&p.rule), &ctx)
            .map_err(|e| Refused(e.for_rule(n).to_string()))?;
        let Some(one) = planned.planned.pop() else {
            let why = planned
                .skipped
                .pop()
                .map_or_else(|| "nothing to compact".to_owned(), |s| s.reason);
            out.push(skipped(why));
            continue;
        };
        let c = one.compaction;
        if let Some(summary) = &c.summary
            && let Provenance::Supplied { .. } = summary.provenance
            && let Err(why) = check_summary(&working, one.range, &summary.text)
        {
            return Err(Refused(format!(
                "rule {n}: the summary of turns {}–{} {why}; write a shorter one",
                u64::from(c.from_turn) + 1,
                u64::from(c.to_turn) + 1
            )));
        }
        let a = assess_as_of(&working, &c, next_turn, item_tokens);
        if a.effect.is_none() {
            out.push(skipped(no_op_reason(&c)));
            continue;
        }
        if n < proposals.len() {
            let seq = working.next_seq();
            let record = Record::new(seq, "", Body::Compaction(Box::new(c.clone())));
            working.to_mut().push(record);
        }
        out.push(PlannedProposal {
            compaction: Some(c),
            range: Some(one.range),
            effect: a.effect,
            tokens: a.tokens,
            changed: a.changed,
            skipped: None,
        });
    }
    Ok(out)
}

fn skipped(why: String) -> PlannedProposal {
    PlannedProposal {
        compaction: None,
        range: None,
        effect: Effect::default(),
        tokens: (0, 0),
        changed: Vec::new(),
        skipped: Some(why),
    }
}

/// Record what the user approved: `proposals` planned again under the
/// conversation's compaction lock, against the log as stored, must give
/// exactly the `approved` compactions (what the preview showed); then they
/// are appended followed by `with` (the tool call's result) in one append.
/// When the log changed meanwhile so that the plan differs (another process
/// compacted, a turn began), nothing is recorded:
/// [`CompactError::Changed`]. Returns what was recorded.
///
/// One append is one write of the store, but not a transaction: a crash in
/// the middle of it can keep the compactions without the result, which the
/// next turn closes as interrupted (the host says that they were recorded).
pub fn record_proposals(
    conv: &mut Conversation<'_>,
    proposals: &[Proposal],
    approved: &[Compaction],
    hints: &ToolHints,
    now: Option<jiff::Timestamp>,
    with: Vec<Record>,
) -> Result<Vec<Committed>, CompactError> {
    let Some(_guard) = conv.journal().try_lock()? else {
        return Err(CompactError::Busy);
    };
    conv.reload()?;
    let kept: Vec<PlannedProposal> = match plan_proposals(conv.log(), proposals, hints, now) {
        Ok(planned) => planned
            .into_iter()
            .filter(|p| p.compaction.is_some())
            .collect(),
        Err(e) => return Err(CompactError::Changed(e.0)),
    };
    let now_planned: Vec<&Compaction> = kept.iter().filter_map(|p| p.compaction.as_ref()).collect();
    if now_planned.len() != approved.len() || now_planned.iter().zip(approved).any(|(a, b)| *a != b)
    {
        return Err(CompactError::Changed(
            "planned again, the rules no longer give the compactions that were approved".into(),
        ));
    }
    let ts = ctxfold_store::now();
    let mut records: Vec<Record> = approved
        .iter()
        .map(|c| Record::new(0, ts.clone(), Body::Compaction(Box::new(c.clone()))))
        .collect();
    records.extend(with);
    let seqs = conv.append(records)?;
    Ok(kept
        .into_iter()
        .zip(seqs)
        .filter_map(|(p, seq)| {
            Some(Committed {
                seq: Some(seq),
                compaction: p.compaction?,
                effect: p.effect,
            })
        })
        .collect())
}
