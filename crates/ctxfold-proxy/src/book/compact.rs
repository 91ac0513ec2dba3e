//! Automatic compaction: before a request goes upstream (at a new turn,
//! and before each step), and once more, whatever the estimate says, when
//! the upstream answers that the request is over the model's context.

use ctxfold_compactor::{BasicCompactor, Compactor, Context, Moment, Status};
use ctxfold_tokens::Heuristic;
use serde_json::Value;

use super::counting::{calibrated, counted_tokens, scaled};
use super::render::render_stored;
use super::session::Session;
use super::{AnswerSlot, Book, History, PrepareError, Prepared, lock};
use crate::protocol::Shape;
use crate::reconcile::align;

impl Book {
    /// The compactor and its context for a request of `model`, counting
    /// as the upstream did (`scale`).
    /// `fixed`: the request's fixed part (`Protocol::fixed_tokens`),
    /// counted once per request.
    fn compactor(
        &self,
        shape: Shape,
        model: &str,
        body: &Value,
        fixed: usize,
        moment: Moment,
        scale: f64,
    ) -> (BasicCompactor, Context) {
        let c = &self.compaction;
        let window = c.window.or_else(|| ctxfold_tokens::context_window(model));
        let compactor = BasicCompactor::new(
            c.policy.clone(),
            c.hints.clone(),
            Box::new(Heuristic::default()),
            (c.summarizers)(),
        );
        let mut ctx = Context::new(moment, window);
        ctx.extra_tokens = fixed;
        ctx.max_tokens = shape
            .output_limit(body)
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        ctx.scale = scale;
        ctx.now = Some(jiff::Timestamp::now());
        (compactor, ctx)
    }

    pub(super) fn compact(
        &self,
        s: &mut Session,
        shape: Shape,
        model: &str,
        body: &Value,
        fixed: usize,
        new_turn: bool,
    ) -> Result<usize, PrepareError> {
        if !self.compaction.policy.enabled {
            return Ok(0);
        }
        let (compactor, mut ctx) =
            self.compactor(shape, model, body, fixed, Moment::BetweenTurns, s.scale);
        if ctx.window.is_none() {
            tracing::debug!("the window of `{model}` is not known: no automatic compaction");
            return Ok(0);
        }
        let mut n = 0;
        if new_turn {
            s.conv.begin_turn();
            let o = compactor.compact_if_needed(&mut s.conv, &ctx)?;
            n += o.committed.len();
            note(&o.status);
        }
        ctx.moment = Moment::BeforeStep;
        let o = compactor.compact_if_needed(&mut s.conv, &ctx)?;
        n += o.committed.len();
        note(&o.status);
        Ok(n)
    }

    /// The upstream answered that `body` (prepared into `slot`) is over
    /// the model's context: compact conversation `slot` once, whatever the
    /// estimate says, and make the body to retry with. `None`: nothing
    /// could be folded (or the log moved on meanwhile), so a retry would
    /// fail the same way.
    pub fn overflowed(
        &self,
        body: &Value,
        slot: &AnswerSlot,
        error: &[u8],
    ) -> Result<Option<Prepared>, PrepareError> {
        let prepared = self.compact_overflowed(body, slot, error);
        self.trim();
        prepared
    }

    fn compact_overflowed(
        &self,
        body: &Value,
        slot: &AnswerSlot,
        error: &[u8],
    ) -> Result<Option<Prepared>, PrepareError> {
        // A chained request holds no history to fold.
        if self.compaction.observe || slot.shape.chained(body).is_some() {
            return Ok(None);
        }
        let shape = slot.shape;
        let transcript = shape.read(body).map_err(PrepareError::Body)?;
        let fixed = shape.fixed_tokens(body);
        let session = self.session(&slot.conversation)?;
        let mut s = lock(&session);
        s.refresh()?;
        if s.conv.log().len() != slot.len {
            return Ok(None);
        }
        // The error may say what the upstream counted ("45123 tokens >
        // 40000 maximum"): count as it does from now on.
        if let Some(counted) = counted_tokens(error)
            && slot.sent > 0
        {
            s.scale = calibrated(counted, slot.sent);
        }
        let (compactor, ctx) =
            self.compactor(shape, &slot.model, body, fixed, Moment::BeforeStep, s.scale);
        let outcome = compactor.compact_for_overflow(&mut s.conv, &ctx)?;
        note(&outcome.status);
        if !outcome.compacted() {
            return Ok(None);
        }
        let Some(pairs) = align(s.conv.log().records(), &transcript.records).paired() else {
            return Ok(None);
        };
        let r = render_stored(
            shape,
            s.conv.log(),
            &transcript.records,
            &pairs,
            &transcript.extras,
            None,
            s.last_sent.as_ref().map(|l| &l.prefix),
        );
        let Some(out) = r.body else { return Ok(None) };
        // The refused request was not cached: what the retry reads is at
        // most what both it and the request before it shared.
        let now = ctxfold_core::cost::Sent {
            fixed: fixed as u64,
            without: r.before as u64,
            with: r.after as u64,
            shared: r.shared as u64,
            prefix: r.prefix,
        };
        let mut estimate = slot.estimate;
        estimate.with_input = (fixed + r.after) as u64;
        let shared = s
            .last_sent
            .as_ref()
            .map_or(0, |p| now.estimate(Some(p)).with_cached);
        estimate.with_cached = estimate.with_cached.min(shared);
        s.last_sent = Some(now);
        Ok(Some(Prepared {
            body: Some(out),
            conversation: slot.conversation.clone(),
            tokens_before: scaled(fixed + r.before, s.scale),
            tokens_after: scaled(fixed + r.after, s.scale),
            compactions: outcome.committed.len(),
            history: History::Continued { added: 0 },
            answer: Some(AnswerSlot {
                len: s.conv.log().len(),
                sent: fixed + r.after,
                estimate,
                ..slot.clone()
            }),
            emulated: None,
        }))
    }
}

fn note(status: &Status) {
    match status {
        Status::Failed { error } => tracing::warn!("automatic compaction failed: {error}"),
        Status::Compacted | Status::StillOver { .. } => {
            tracing::info!("automatic compaction: {status:?}")
        }
        other => tracing::debug!("automatic compaction: {other:?}"),
    }
}
