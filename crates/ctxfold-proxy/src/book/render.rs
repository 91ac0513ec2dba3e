//! The view rendered to the wire: the stored log projected, and the
//! client's own records, in the client's order, each as the view has it
//! (kept, changed, folded into a summary, or left out), written in the
//! client's shape.

use std::borrow::Cow;

use ctxfold_core::materialize::item_record;
use ctxfold_core::projection::{Item, PREAMBLE, covered_indices, project};
use ctxfold_core::{Body, Log, Object, Record};
use ctxfold_providers::request::summary_lead;
use ctxfold_tokens::{Heuristic, TokenEstimator};

use super::cache_markers::{cache_marker, carries_marker, clear_cache_marker, set_cache_marker};
use super::sent::{Sent, write_with_sent};
use crate::protocol::Shape;
use crate::reconcile::{Paired, Rewrite};

/// A request body rendered from a view.
pub(super) struct Rendered {
    /// The body, or `None` when no compaction is in force (the client's
    /// bytes go on).
    pub(super) body: Option<Vec<u8>>,
    /// Estimated tokens of the client's conversation.
    pub(super) before: usize,
    /// Estimated tokens of the view.
    pub(super) after: usize,
    /// The view's items, for the next request's prefix read from the
    /// prompt cache.
    pub(super) prefix: ctxfold_core::cost::Prefix,
    /// Tokens of the view sent that the previous request's view had too,
    /// from the first.
    pub(super) shared: usize,
}

/// What the view does with one stored record.
#[derive(Clone)]
enum Fate {
    /// Not in the view (stripped reasoning, omitted, or the client never
    /// sent it).
    Dropped,
    /// In the view as it is.
    Kept,
    /// In the view changed (a stripped call or result): this body.
    Changed(Body),
    /// Inside the summary at this view item.
    Summarized(usize),
}

/// The body the upstream gets. The stored log is projected as it is, so
/// what the log caches (the diagnostics of stripped results) serves every
/// request; the body is then the client's own records, in the client's
/// order, each as the view has it: kept (the client's copy, its wire fields too), changed (the view's
/// body on the client's copy), folded into a summary (which takes the
/// place of the first of them), or left out. What the client sent that the
/// log does not compare (system messages, image and other blocks) goes as
/// the client sent it, unless a summary folded the records around it; so
/// does what the request adds to the log (a retry's earlier state, or the
/// new messages `count_tokens` is asked about), after the view of the
/// rest.
///
/// A message the client rewrote goes as the log has it, with what the
/// client left behind before it, until a compaction is recorded after the
/// rewrite was first seen; then as the client sends it (see
/// [`crate::reconcile`]).
///
/// A summary's lead never follows a user message (nor one with only the
/// client's system messages after it, as Claude Code sends one at
/// `messages[1]`): it is added to that message instead, so the upstream
/// never gets two user messages in a row.
pub(super) fn render_stored(
    shape: Shape,
    log: &Log,
    client: &[Record],
    paired: &Paired,
    extras: &Object,
    sent: Option<Sent>,
    previous: Option<&ctxfold_core::cost::Prefix>,
) -> Rendered {
    let est = Heuristic::default();
    // Each client record is estimated once: most of them go as sent.
    let tokens: Vec<usize> = client.iter().map(|r| est.record_tokens(r)).collect();
    let before = tokens.iter().sum();
    let view = project(log);
    let prefix = ctxfold_core::cost::Prefix::of(&view.items);
    // Only the items after those the previous request sent are counted.
    let shared = |total: usize| {
        prefix.shared_tokens(previous, &view.items, total as u64, |i| est.item_tokens(i)) as usize
    };
    if view.active.is_empty() && paired.rewrites.is_empty() {
        return Rendered {
            body: None,
            before,
            after: before,
            shared: shared(before),
            prefix,
        };
    }
    let mut fate = vec![Fate::Dropped; log.len()];
    let mut preamble = false;
    for (n, item) in view.items.iter().enumerate() {
        match *item {
            Item::Event { index, .. } => fate[index] = Fate::Kept,
            Item::StrippedCall { index, .. }
            | Item::StrippedResult { index, .. }
            | Item::Clipped { index, .. } => {
                if let Some(r) = item_record(item) {
                    fate[index] = Fate::Changed(r.body);
                }
            }
            Item::Summary { first, last, .. } => {
                for f in &mut fate[first..=last] {
                    *f = Fate::Summarized(n);
                }
            }
            Item::Preamble => preamble = true,
        }
    }
    let mut stored_of = vec![None; client.len()];
    for &(si, cj) in &paired.pairs {
        stored_of[cj] = Some(si);
    }
    let mut as_stored: Vec<Option<&Rewrite>> = vec![None; client.len()];
    if !paired.rewrites.is_empty() {
        let changes = Changes::of(log, &view.active);
        for rw in &paired.rewrites {
            if !changes.since(rw) {
                as_stored[rw.client] = Some(rw);
            }
        }
    }
    if view.active.is_empty() && as_stored.iter().all(Option::is_none) {
        return Rendered {
            body: None,
            before,
            after: before,
            shared: shared(before),
            prefix,
        };
    }
    // For a record the log does not compare: the summary folding both the
    // compared records around it, if one does.
    let mut prev_summary = vec![None; client.len()];
    let mut last = None;
    for j in 0..client.len() {
        if let Some(si) = stored_of[j] {
            last = match fate[si] {
                Fate::Summarized(n) => Some(n),
                _ => None,
            };
        }
        prev_summary[j] = last;
    }
    let mut next_summary = vec![None; client.len()];
    let mut next = None;
    for j in (0..client.len()).rev() {
        if let Some(si) = stored_of[j] {
            next = match fate[si] {
                Fate::Summarized(n) => Some(n),
                _ => None,
            };
        }
        next_summary[j] = next;
    }
    let mut out = Out {
        shape,
        records: Vec::with_capacity(client.len() + 3),
        sent_as: Vec::with_capacity(client.len() + 3),
        from: Vec::with_capacity(client.len() + 3),
    };
    if preamble {
        out.push_made(Record::new(
            0,
            "",
            Body::User {
                content: PREAMBLE.into(),
                author: Some("ctxfold".into()),
            },
        ));
    }
    let mut summarized = std::collections::HashSet::new();
    let stored = log.records();
    let resumed = resumed_at(stored, paired, &stored_of);
    for (j, c) in client.iter().enumerate() {
        if let Some((si, cj)) = resumed {
            if j < cj {
                // What the client sends in place of what ctxfold's
                // compaction stands for: the view has it, below. Its own
                // system messages still go.
                if matches!(c.body, Body::System { .. }) {
                    out.push_sent(c, j);
                } else {
                    out.folded(c);
                }
                continue;
            }
            if j == cj {
                out.view_before(log, &view.items, si, &mut summarized);
            }
        }
        let Some(si) = stored_of[j] else {
            let inside = prev_summary[j].is_some() && prev_summary[j] == next_summary[j];
            if inside {
                out.folded(c);
            } else {
                out.push_sent(c, j);
            }
            continue;
        };
        // What the client left behind before a message it rewrote, where
        // the log has it.
        for &k in as_stored[j].map_or(&[][..], |rw| &rw.left) {
            match &fate[k] {
                Fate::Dropped => {}
                Fate::Kept => out.push_made(uncached(stored[k].clone())),
                Fate::Changed(body) => out.push_made(uncached(Record {
                    body: body.clone(),
                    ..stored[k].clone()
                })),
                Fate::Summarized(n) => {
                    if summarized.insert(*n) {
                        out.summary(log, &view.items[*n]);
                    }
                }
            }
        }
        match &fate[si] {
            Fate::Dropped => out.folded(c),
            Fate::Kept if as_stored[j].is_some() => {
                // The rewritten message as the log has it, with the
                // client's wire fields (its cache marker too).
                out.push_changed(
                    Record {
                        seq: c.seq,
                        ts: c.ts.clone(),
                        body: stored[si].body.clone(),
                        metadata: c.metadata.clone(),
                        extra: c.extra.clone(),
                    },
                    j,
                );
            }
            Fate::Kept => out.push_sent(c, j),
            Fate::Changed(body) => out.push_changed(
                Record {
                    seq: c.seq,
                    ts: c.ts.clone(),
                    body: body.clone(),
                    metadata: c.metadata.clone(),
                    extra: c.extra.clone(),
                },
                j,
            ),
            Fate::Summarized(n) => {
                if summarized.insert(*n) {
                    out.summary(log, &view.items[*n]);
                }
                out.folded(c);
            }
        }
    }
    let Out {
        records,
        sent_as,
        from,
        ..
    } = out;
    let after = records
        .iter()
        .zip(&sent_as)
        .map(|(r, j)| j.map_or_else(|| est.record_tokens(r), |j| tokens[j]))
        .sum();
    let bytes = sent
        .and_then(|sent| {
            write_with_sent(shape, &records, &sent_as, &from, client.len(), sent, extras)
        })
        .unwrap_or_else(|| {
            let refs: Vec<&Record> = records.iter().map(|r| r.as_ref()).collect();
            let out = shape.write(&refs, extras);
            let mut bytes = Vec::with_capacity(64 * 1024);
            // Cannot fail: writing to a Vec does not, and a `Value` (string
            // keys, finite numbers) always serializes.
            #[allow(clippy::expect_used)]
            serde_json::to_writer(&mut bytes, &out).expect("a JSON value serializes");
            bytes
        });
    Rendered {
        body: Some(bytes),
        before,
        after,
        shared: shared(after),
        prefix,
    }
}

/// Where a history resumes from a compaction ctxfold emulated: the
/// stored record and the client record of that block or item, when it is
/// the first pair and nothing the client sends before it pairs with the
/// log (the emulated compact endpoint's output, `compaction_trigger`'s and
/// `summarize`'s answer sent back in place of what they summarize). What
/// the client sends before it stands for the log before it. The stored
/// record is the block or item as recorded, or the compaction record it
/// names when its answer is not recorded (see [`crate::reconcile::align`]).
fn resumed_at(
    stored: &[Record],
    paired: &Paired,
    stored_of: &[Option<usize>],
) -> Option<(usize, usize)> {
    let &(si, cj) = paired.pairs.first()?;
    let emulated = matches!(stored[si].body, Body::Compaction(_))
        || ctxfold_formats::provider_compaction(&stored[si])
            .is_some_and(crate::context_management::is_emulated);
    (emulated && stored_of[..cj].iter().all(Option::is_none)).then_some((si, cj))
}

/// The records of the body being made, beside the client record each one
/// is as sent (`sent_as`) and the client record it stands for, changed or
/// not (`from`; a stripped call or result is still that call or result,
/// where the format groups records into messages).
struct Out<'c> {
    shape: Shape,
    // The client's own records are borrowed, not copied: most of a long
    // conversation goes as sent.
    records: Vec<Cow<'c, Record>>,
    sent_as: Vec<Option<usize>>,
    from: Vec<Option<usize>>,
}

impl<'c> Out<'c> {
    fn push(&mut self, r: Cow<'c, Record>, sent_as: Option<usize>, from: Option<usize>) {
        self.records.push(r);
        self.sent_as.push(sent_as);
        self.from.push(from);
    }

    /// Client record `j`, as it was sent.
    fn push_sent(&mut self, c: &'c Record, j: usize) {
        self.push(Cow::Borrowed(c), Some(j), Some(j));
    }

    /// Client record `j`, changed.
    fn push_changed(&mut self, r: Record, j: usize) {
        self.push(Cow::Owned(r), None, Some(j));
    }

    /// A record the client did not send.
    fn push_made(&mut self, r: Record) {
        self.push(Cow::Owned(r), None, None);
    }

    /// A prompt-cache marker on a record that is folded away moves back
    /// to the nearest block still sent, so the cached prefix keeps a
    /// boundary where the folded part ends (markers only move or merge:
    /// never more than the client sent).
    fn folded(&mut self, c: &Record) {
        if self.shape.cache_markers()
            && let Some(m) = cache_marker(c)
        {
            let m = m.clone();
            if let Some(r) = self.records.iter_mut().rev().find(|r| carries_marker(r)) {
                set_cache_marker(r.to_mut(), m);
            }
        }
    }

    /// The view of the log before stored record `si`, as the model sees
    /// it (but its system messages: the client's go), the summaries
    /// written noted in `summarized`.
    fn view_before(
        &mut self,
        log: &Log,
        items: &[Item<'_>],
        si: usize,
        summarized: &mut std::collections::HashSet<usize>,
    ) {
        let stored = log.records();
        for (n, item) in items.iter().enumerate() {
            match *item {
                Item::Event { index, .. }
                    if index < si && !matches!(stored[index].body, Body::System { .. }) =>
                {
                    self.push_made(uncached(stored[index].clone()));
                }
                Item::StrippedCall { index, .. }
                | Item::StrippedResult { index, .. }
                | Item::Clipped { index, .. }
                    if index < si =>
                {
                    if let Some(r) = item_record(item) {
                        self.push_made(r);
                    }
                }
                Item::Summary { first, .. } if first < si && summarized.insert(n) => {
                    self.summary(log, item);
                }
                _ => {}
            }
        }
    }

    /// The summary `item`: its lead (a user message), then its text (the
    /// assistant's). A lead that would follow a user message, or one with
    /// only system messages after it, is added to that message instead.
    fn summary(&mut self, log: &Log, item: &Item<'_>) {
        let Item::Summary { text, .. } = *item else {
            return;
        };
        // The turns its digest covers (see `summary_lead`).
        let lead = summary_lead(log, item).unwrap_or_default();
        let before = self
            .records
            .iter()
            .rposition(|r| !matches!(r.body, Body::System { .. }));
        let mut made = Vec::with_capacity(2);
        match before {
            Some(p) if matches!(self.records[p].body, Body::User { .. }) => {
                if let Body::User { content, .. } = &mut self.records[p].to_mut().body {
                    content.push_str("\n\n");
                    content.push_str(&lead);
                }
                self.sent_as[p] = None;
            }
            _ => made.push(Record::new(
                0,
                "",
                Body::User {
                    content: lead,
                    author: Some("ctxfold".into()),
                },
            )),
        }
        made.push(Record::new(
            0,
            "",
            Body::Assistant {
                content: text.to_owned(),
            },
        ));
        made.iter_mut().for_each(|r| self.shape.made(r));
        for r in made {
            self.push_made(r);
        }
    }
}

/// Where the view changed: each compaction in force (its record, the
/// first record it folds) and the latest undoing.
struct Changes {
    folds: Vec<(usize, usize)>,
    last_reset: Option<usize>,
}

impl Changes {
    fn of(log: &Log, active: &[usize]) -> Changes {
        let records = log.records();
        Changes {
            folds: active
                .iter()
                .filter_map(|&i| match &records[i].body {
                    Body::Compaction(c) => Some((i, covered_indices(log, c)?.0)),
                    _ => None,
                })
                .collect(),
            last_reset: records
                .iter()
                .rposition(|r| matches!(r.body, Body::CompactionReset(_))),
        }
    }

    /// Whether the view has changed at or before what rewrite `rw` stands
    /// for since the client first sent it: a compaction in force recorded
    /// after the rewritten message's answer that folds from there or
    /// before (an excerpt of a newer record does not), or an undoing
    /// recorded since. Until then the rewritten message goes as the log
    /// has it, so the upstream's prefix holds.
    fn since(&self, rw: &Rewrite) -> bool {
        let first = rw.left.first().copied().unwrap_or(rw.stored);
        self.folds
            .iter()
            .any(|&(i, lo)| i > rw.answer && lo <= first)
            || self.last_reset.is_some_and(|i| i > rw.answer)
    }
}

/// A stored record sent again where the client no longer sends it,
/// without the prompt-cache marker it had then (the client's markers are
/// on what it sends now).
fn uncached(mut r: Record) -> Record {
    clear_cache_marker(&mut r);
    r
}
