//! Excerpts as outputs arrive: before a step, every tool result or pasted
//! message the request carries for the first time that is over
//! `excerpt_share` of the window is shown as its excerpt, by a compaction
//! over that one record appended before the request goes upstream (see
//! [`ctxfold_core::excerpt`]). The text the model sees for the output then
//! never changes, and neither does the prefix the provider caches.

use ctxfold_core::arrival::arrivals;
use ctxfold_core::compaction::{Compaction, Source};
use ctxfold_core::estimate::CHARS_PER_TOKEN;
use ctxfold_core::planner::Planned;
use ctxfold_core::record::Body;
use tracing::{info, warn};

use super::BasicCompactor;
use crate::{Committed, CompactError, Context, Conversation};

impl BasicCompactor {
    /// The threshold in characters an output must be over to be
    /// excerpted: `excerpt_share` of the window, counted as the upstream
    /// counts. `None` when excerpts are off or the window is unknown.
    pub(super) fn excerpt_over(&self, ctx: &Context) -> Option<usize> {
        let window = ctx.window?;
        let share = self.policy.excerpt_share;
        if !self.policy.enabled || share <= 0.0 {
            return None;
        }
        let tokens = f64::from(window) * share / ctx.scale.max(f64::MIN_POSITIVE);
        Some((tokens as usize).saturating_mul(CHARS_PER_TOKEN).max(1))
    }

    /// Record an excerpt for each output that just arrived over the
    /// threshold; what was recorded, in order. Another process compacting
    /// meanwhile (the lock is held) leaves them for the next step.
    pub(super) fn excerpt_arrivals(
        &self,
        conv: &mut Conversation<'_>,
        ctx: &Context,
    ) -> Result<Vec<Committed>, CompactError> {
        let Some(over) = self.excerpt_over(ctx) else {
            return Ok(Vec::new());
        };
        if arrivals(conv.log(), over, &self.hints).is_empty() {
            return Ok(Vec::new());
        }
        let Some(_guard) = conv.journal().try_lock()? else {
            return Ok(Vec::new());
        };
        conv.reload()?;
        let mut out = Vec::new();
        // Indices stay valid as compactions are appended: the log only
        // grows at its end.
        for (i, over) in arrivals(conv.log(), over, &self.hints) {
            let log = conv.log();
            let r = &log.records()[i];
            let chars = match &r.body {
                Body::ToolResult { content, .. } | Body::User { content, .. } => {
                    content.chars().count()
                }
                _ => continue,
            };
            let turn = log.turn_of(i);
            let mut c = Compaction::new(turn, turn, Source::Auto).with_note(&format!(
                "automatic, on arrival: {chars} characters, over the {over}-character excerpt threshold, shown as an excerpt"
            ));
            c.from_seq = Some(r.seq);
            c.to_seq = Some(r.seq);
            c.excerpt_chars = Some(u32::try_from(over).unwrap_or(u32::MAX));
            let planned = Planned {
                compaction: c,
                range: (i, i),
                derive: None,
                grown_from: None,
                rule: 0,
            };
            match self.commit(conv, &planned, ctx, None)? {
                Ok(Some(c)) => {
                    info!(seq = ?c.compaction.from_seq, chars, over, "excerpted an output on arrival");
                    out.push(c);
                }
                Ok(None) => {}
                Err(error) => warn!(%error, "excerpting an output on arrival failed"),
            }
        }
        Ok(out)
    }
}
