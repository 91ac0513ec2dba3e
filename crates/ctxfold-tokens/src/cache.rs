//! Counts cached per event, and the estimate of the next request.

use std::collections::HashMap;

use ctxfold_core::log::Log;
use ctxfold_core::projection::{Item, View};
use ctxfold_core::record::{Body, Record};
use serde_json::Value;

use crate::TokenEstimator;

/// Seqs below this are cached in a vector indexed by seq (logs number their
/// records 0, 1, 2, …); larger ones, in a map.
const DENSE_LIMIT: u64 = 1 << 22;
/// "Not counted yet" in the dense cache.
const UNKNOWN: u32 = u32::MAX;

/// Token counts of one conversation's records, keyed by `seq`.
///
/// Events are immutable, so each record is counted once: after a turn,
/// [`log_tokens`](CountCache::log_tokens), [`view_tokens`](CountCache::view_tokens)
/// and [`estimate_next_request`](CountCache::estimate_next_request) call the
/// estimator only for the records the turn added (and for stripped and
/// summary items, which are small and counted afresh).
///
/// One cache per conversation: seqs of two logs would collide. Counts made
/// with one estimator are dropped when another (by
/// [`name`](TokenEstimator::name)) is passed.
#[derive(Debug, Default, Clone)]
pub struct CountCache {
    estimator: Option<String>,
    dense: Vec<u32>,
    sparse: HashMap<u64, usize>,
    /// The last log counted by `log_tokens`: its length, the seq of its last
    /// record and its total, so an appended log is summed from there.
    log_prefix: Option<(usize, u64, usize)>,
}

impl CountCache {
    /// An empty cache.
    pub fn new() -> Self {
        CountCache::default()
    }

    /// How many records have a cached count.
    pub fn len(&self) -> usize {
        self.dense.iter().filter(|&&c| c != UNKNOWN).count() + self.sparse.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forget every count.
    pub fn clear(&mut self) {
        self.dense.clear();
        self.sparse.clear();
        self.log_prefix = None;
    }

    fn use_estimator(&mut self, est: &dyn TokenEstimator) {
        if self.estimator.as_deref() != Some(est.name()) {
            self.clear();
            self.estimator = Some(est.name().to_owned());
        }
    }

    fn cached(&mut self, est: &dyn TokenEstimator, record: &Record) -> usize {
        let seq = record.seq;
        if seq < DENSE_LIMIT {
            let i = seq as usize;
            if let Some(&c) = self.dense.get(i)
                && c != UNKNOWN
            {
                return c as usize;
            }
            let n = est.record_tokens(record);
            if i >= self.dense.len() {
                self.dense.resize(i + 1, UNKNOWN);
            }
            // A count that does not fit is simply not cached.
            self.dense[i] = u32::try_from(n).unwrap_or(UNKNOWN);
            n
        } else {
            *self
                .sparse
                .entry(seq)
                .or_insert_with(|| est.record_tokens(record))
        }
    }

    /// Tokens of one record (see [`TokenEstimator::record_tokens`]),
    /// counted at most once.
    pub fn record_tokens(&mut self, est: &dyn TokenEstimator, record: &Record) -> usize {
        self.use_estimator(est);
        self.cached(est, record)
    }

    /// Tokens of every model-visible record of `log`, uncompacted. When
    /// `log` extends the log counted last, only the new records are looked
    /// at.
    pub fn log_tokens(&mut self, est: &dyn TokenEstimator, log: &Log) -> usize {
        self.use_estimator(est);
        let records = log.records();
        let (start, base) = match self.log_prefix {
            Some((len, last_seq, total))
                if len <= records.len() && len > 0 && records[len - 1].seq == last_seq =>
            {
                (len, total)
            }
            _ => (0, 0),
        };
        let mut total = base;
        for r in &records[start..] {
            total += self.cached(est, r);
        }
        self.log_prefix = records.last().map(|r| (records.len(), r.seq, total));
        total
    }

    /// Tokens of one view item: a raw event from the cache, stripped calls
    /// and results, summaries and the preamble counted afresh.
    pub fn item_tokens(&mut self, est: &dyn TokenEstimator, item: &Item<'_>) -> usize {
        self.use_estimator(est);
        match item {
            Item::Event { record, .. } => self.cached(est, record),
            other => est.item_tokens(other),
        }
    }

    /// Tokens of the items of `view` (the same sum as
    /// `ctxfold_core::estimate::view_tokens`, with `est`'s counts). Message
    /// overhead, the system prompt from config and tool schemas are not in
    /// it: see [`request_tokens`](CountCache::request_tokens).
    pub fn view_tokens(&mut self, est: &dyn TokenEstimator, view: &View<'_>) -> usize {
        self.use_estimator(est);
        view.items
            .iter()
            .map(|item| match item {
                Item::Event { record, .. } => self.cached(est, record),
                other => est.item_tokens(other),
            })
            .sum()
    }

    /// Tokens of a whole request built from `view`, without any reported
    /// usage: the items, [`message_overhead`](TokenEstimator::message_overhead)
    /// per message (see [`message_count`]), the system prompt sent from
    /// config (`None` when there is none or it is a record of the log) and
    /// the tool definitions.
    pub fn request_tokens(
        &mut self,
        est: &dyn TokenEstimator,
        view: &View<'_>,
        system: Option<&str>,
        tools: Option<&Value>,
    ) -> usize {
        self.view_tokens(est, view)
            + est.message_overhead() * message_count(view)
            + system.map_or(0, |s| est.system_prompt_tokens(s))
            + tools.map_or(0, |t| est.schema_tokens(t))
    }

    /// The size of the next request, starting from what the provider
    /// reported for the last call when it can.
    ///
    /// `baseline` is `(seq, tokens)`: `seq` is the last record the reported
    /// call produced (the last assistant record with usage), `tokens` the
    /// input plus output tokens the provider reported for it. Those tokens
    /// cover the whole request (system prompt, tool schemas, every message
    /// up to the call) and its answer, so:
    ///
    /// - **With a current baseline** the estimate is `tokens` plus
    ///   [`item_tokens`](CountCache::item_tokens) of every view item whose
    ///   records all come after `seq` (tool results, the next user message,
    ///   …). An item stands for the records of
    ///   [`Item::origin`]; the preamble stands for none and counts 0 (it was
    ///   part of the reported request). Per-message overhead of the new
    ///   items is not added: their block overhead stands for it.
    /// - **The baseline is stale** when a `compaction` or
    ///   `compaction_reset` record came after `seq`: the view changed
    ///   retroactively and the reported figure no longer describes it. Then,
    ///   as with no baseline, the estimate is the view counted in full:
    ///   [`view_tokens`](CountCache::view_tokens) plus message overhead. The
    ///   system prompt from config and tool schemas are not in it (they are
    ///   not in the log): a caller that has them adds
    ///   `est.system_prompt_tokens` and `est.schema_tokens`, or calls
    ///   [`request_tokens`](CountCache::request_tokens); see
    ///   [`baseline_is_current`] to know which case applies.
    ///
    /// The cost is that of the records after `seq` (the view is walked
    /// backwards and only as far as they go).
    pub fn estimate_next_request(
        &mut self,
        est: &dyn TokenEstimator,
        log: &Log,
        view: &View<'_>,
        baseline: Option<(u64, usize)>,
    ) -> usize {
        self.use_estimator(est);
        let Some((seq, reported)) = baseline.filter(|b| baseline_is_current(log, Some(*b))) else {
            return self.view_tokens(est, view) + est.message_overhead() * message_count(view);
        };
        let records = log.records();
        let first_seq = |item: &Item<'_>| -> Option<u64> {
            match item {
                Item::Event { record, .. }
                | Item::StrippedCall { record, .. }
                | Item::StrippedResult { record, .. }
                | Item::Clipped { record, .. } => Some(record.seq),
                Item::Summary { first, .. } => records.get(*first).map(|r| r.seq),
                Item::Preamble => None,
            }
        };
        let mut added = 0;
        for item in view.items.iter().rev() {
            match first_seq(item) {
                None => continue,
                Some(s) if s > seq => added += self.item_tokens(est, item),
                Some(_) => break,
            }
        }
        reported + added
    }
}

/// Whether `baseline` (see [`CountCache::estimate_next_request`]) still
/// describes `log`: there is one, and no compaction or compaction reset was
/// appended after its seq.
pub fn baseline_is_current(log: &Log, baseline: Option<(u64, usize)>) -> bool {
    let Some((seq, _)) = baseline else {
        return false;
    };
    !log.records()
        .iter()
        .rev()
        .take_while(|r| r.seq > seq)
        .any(|r| matches!(r.body, Body::Compaction(_) | Body::CompactionReset(_)))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// How many messages `view` is sent as, by the OpenAI chat shape:
/// consecutive items of one role form one message (reasoning, text and
/// tool calls of one step are one assistant message), every tool result is
/// a message of its own, a summary is two (user, then assistant).
pub fn message_count(view: &View<'_>) -> usize {
    let mut count = 0;
    let mut last: Option<Role> = None;
    for item in &view.items {
        let role = match item {
            Item::Event { record, .. } | Item::Clipped { record, .. } => match &record.body {
                Body::System { .. } => Role::System,
                Body::User { .. } => Role::User,
                Body::ToolResult { .. } => Role::Tool,
                _ => Role::Assistant,
            },
            Item::StrippedCall { .. } => Role::Assistant,
            Item::StrippedResult { .. } => Role::Tool,
            Item::Summary { .. } => {
                // Its own pair, never merged with a neighbour.
                count += 2;
                last = None;
                continue;
            }
            Item::Preamble => Role::User,
        };
        if last != Some(role) || role == Role::Tool {
            count += 1;
        }
        last = Some(role);
    }
    count
}
