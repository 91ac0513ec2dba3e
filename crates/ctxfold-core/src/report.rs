//! What a view did to each turn: kept, stripped, dropped, summarized, and
//! the estimated tokens before and after. Commands render it as the
//! timeline a person reads at a glance.

use serde::Serialize;

use crate::estimate::{item_tokens, record_tokens};
use crate::log::Log;
use crate::projection::{DropReason, Item, View};

/// One turn's fate in a view.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TurnReport {
    /// The turn, 1-based.
    pub turn: u32,
    /// Model-visible events in the raw turn.
    pub events: usize,
    /// Events kept unchanged.
    pub kept: usize,
    /// Tool calls with their long arguments stripped.
    pub stripped_calls: usize,
    /// Tool results replaced by one line.
    pub stripped_results: usize,
    /// Reasoning blocks dropped.
    pub reasoning_dropped: usize,
    /// Tool calls and results omitted.
    pub omitted: usize,
    /// Calls or results dropped for lack of their partner.
    pub unpaired: usize,
    /// Events folded into a summary.
    pub summarized: usize,
    /// Estimated tokens of the raw turn.
    pub tokens_before: usize,
    /// Estimated tokens of what the view holds for it (a summary's tokens
    /// are shared among the turns it stands for, in proportion to their
    /// raw size).
    pub tokens_after: usize,
}

impl TurnReport {
    /// A short description of what happened to the turn: `kept`,
    /// `summarized`, or the policies that applied.
    pub fn label(&self) -> String {
        if self.events == 0 {
            return "empty".into();
        }
        if self.kept == self.events {
            return "kept".into();
        }
        if self.summarized == self.events {
            return "summarized".into();
        }
        let mut parts = Vec::new();
        if self.summarized > 0 {
            parts.push("partly summarized".to_owned());
        }
        if self.reasoning_dropped > 0 {
            parts.push("reasoning stripped".into());
        }
        if self.stripped_calls > 0 && self.stripped_results > 0 {
            parts.push("tools stripped".into());
        } else if self.stripped_calls > 0 {
            parts.push("tool requests stripped".into());
        } else if self.stripped_results > 0 {
            parts.push("tool results stripped".into());
        }
        if self.omitted > 0 {
            parts.push("tools omitted".into());
        }
        if self.unpaired > 0 {
            parts.push("unpaired tool events dropped".into());
        }
        parts.join(", ")
    }
}

/// The per-turn report of `view` over `log`.
pub fn turn_reports(log: &Log, view: &View<'_>) -> Vec<TurnReport> {
    let mut out: Vec<TurnReport> = (0..log.turn_count() as u32)
        .map(|t| TurnReport {
            turn: t + 1,
            ..TurnReport::default()
        })
        .collect();
    if out.is_empty() {
        return out;
    }
    let records = log.records();
    let turn = |i: usize| log.turn_of(i) as usize;
    for (i, r) in records.iter().enumerate() {
        // System prompts pass through the view: count them on both sides.
        if r.body.is_model_visible() || matches!(r.body, crate::record::Body::System { .. }) {
            out[turn(i)].events += 1;
            out[turn(i)].tokens_before += record_tokens(r);
        }
    }
    for item in &view.items {
        let tokens = item_tokens(item);
        match *item {
            Item::Event { index, .. } => {
                out[turn(index)].kept += 1;
                out[turn(index)].tokens_after += tokens;
            }
            Item::StrippedCall { index, .. } => {
                out[turn(index)].stripped_calls += 1;
                out[turn(index)].tokens_after += tokens;
            }
            // A clipped unit's content is replaced in part: counted with
            // the stripped results.
            Item::StrippedResult { index, .. } | Item::Clipped { index, .. } => {
                out[turn(index)].stripped_results += 1;
                out[turn(index)].tokens_after += tokens;
            }
            Item::Summary { first, last, .. } => {
                let mut weights: Vec<(usize, usize)> = Vec::new();
                for i in first..=last {
                    if records[i].body.is_model_visible() {
                        out[turn(i)].summarized += 1;
                        let w = record_tokens(&records[i]);
                        match weights.last_mut() {
                            Some((t, sum)) if *t == turn(i) => *sum += w,
                            _ => weights.push((turn(i), w)),
                        }
                    }
                }
                for (t, share) in shares(tokens, &weights) {
                    out[t].tokens_after += share;
                }
            }
            Item::Preamble => out[0].tokens_after += tokens,
        }
    }
    for d in &view.dropped {
        let t = &mut out[turn(d.index)];
        match d.reason {
            DropReason::ReasoningStripped { .. } => t.reasoning_dropped += 1,
            DropReason::Omitted { .. } => t.omitted += 1,
            DropReason::Unpaired => t.unpaired += 1,
        }
    }
    out
}

/// `total` split among `(key, weight)` in proportion to the weights, by
/// largest remainder: the shares sum to `total` exactly, and equal inputs
/// give equal outputs. No weight at all: the first key takes everything.
fn shares(total: usize, weights: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let sum: usize = weights.iter().map(|(_, w)| w).sum();
    if sum == 0 {
        return weights
            .first()
            .map(|&(k, _)| vec![(k, total)])
            .unwrap_or_default();
    }
    let mut out: Vec<(usize, usize, u128)> = weights
        .iter()
        .map(|&(k, w)| {
            let exact = total as u128 * w as u128;
            (k, (exact / sum as u128) as usize, exact % sum as u128)
        })
        .collect();
    let mut left = total - out.iter().map(|(_, s, _)| s).sum::<usize>();
    let mut order: Vec<usize> = (0..out.len()).collect();
    // Largest remainder first; ties to the earlier turn.
    order.sort_by(|&a, &b| out[b].2.cmp(&out[a].2).then(a.cmp(&b)));
    for i in order {
        if left == 0 {
            break;
        }
        out[i].1 += 1;
        left -= 1;
    }
    out.into_iter().map(|(k, s, _)| (k, s)).collect()
}

/// What a view made of one raw record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "fate")]
pub enum Fate {
    /// Not model-visible (turn starts, overlays, bookkeeping).
    Hidden,
    /// In the view as it was.
    Kept,
    /// In the view with content replaced (long arguments or the output of
    /// a tool result).
    Stripped,
    /// Dropped by `reasoning = strip` of the compaction at this index.
    ReasoningStripped {
        /// Index of the compaction record.
        compaction: usize,
    },
    /// Dropped with its partner by `omit` of the compaction at this index.
    Omitted {
        /// Index of the compaction record.
        compaction: usize,
    },
    /// Dropped: a call or result without its partner.
    Unpaired,
    /// In the view as its head and tail (`clip_chars`).
    Clipped,
    /// Folded into the summary of the compaction at this index.
    Summarized {
        /// Index of the compaction record.
        compaction: usize,
    },
}

/// The fate of every record of `log` in `view`, by record index. A
/// stripped call whose arguments hold nothing long enough to strip counts
/// as kept: the model sees exactly what it was.
pub fn fates(log: &Log, view: &View<'_>) -> Vec<Fate> {
    let mut out = vec![Fate::Hidden; log.records().len()];
    for item in &view.items {
        match *item {
            Item::Event { index, .. } => out[index] = Fate::Kept,
            Item::StrippedCall { index, record, .. } => {
                let changed = match (&record.body, item.stripped_arguments()) {
                    // Stripping keeps the text of what it leaves unchanged.
                    (crate::record::Body::ToolCall { arguments, .. }, Some(stripped)) => {
                        stripped.text() != arguments.text()
                    }
                    _ => true,
                };
                out[index] = if changed { Fate::Stripped } else { Fate::Kept };
            }
            Item::StrippedResult { index, .. } => out[index] = Fate::Stripped,
            Item::Clipped { index, .. } => out[index] = Fate::Clipped,
            Item::Summary {
                first,
                last,
                compaction,
                ..
            } => {
                for (i, f) in out.iter_mut().enumerate().take(last + 1).skip(first) {
                    if log.records()[i].body.is_model_visible() {
                        *f = Fate::Summarized { compaction };
                    }
                }
            }
            Item::Preamble => {}
        }
    }
    for d in &view.dropped {
        out[d.index] = match d.reason {
            DropReason::ReasoningStripped { compaction } => Fate::ReasoningStripped { compaction },
            DropReason::Omitted { compaction } => Fate::Omitted { compaction },
            DropReason::Unpaired => Fate::Unpaired,
        };
    }
    out
}

/// Consecutive turns with the same label, as `(first, last, label)`
/// (1-based turns).
pub fn timeline(reports: &[TurnReport]) -> Vec<(u32, u32, String)> {
    let mut out: Vec<(u32, u32, String)> = Vec::new();
    for r in reports {
        let label = r.label();
        match out.last_mut() {
            Some((_, last, l)) if *l == label && *last + 1 == r.turn => *last = r.turn,
            _ => out.push((r.turn, r.turn, label)),
        }
    }
    out
}
