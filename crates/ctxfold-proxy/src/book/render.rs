//! The view rendered to the wire: the stored log projected, and the
//! client's own records, in the client's order, each as the view has it
//! (kept, changed, folded into a summary, or left out), written in the
//! client's shape.

use std::borrow::Cow;

use ctxfold_core::materialize::item_record;
use ctxfold_core::projection::{Item, PREAMBLE, project};
use ctxfold_core::{Body, Log, Object, Record};
use ctxfold_tokens::{Heuristic, TokenEstimator};

use super::cache_markers::{cache_marker, carries_marker, set_cache_marker};
use super::sent::{Sent, write_with_sent};
use crate::shape::Shape;

/// A request body rendered from a view.
pub(super) struct Rendered {
    /// The body, or `None` when no compaction is in force (the client's
    /// bytes go on).
    pub(super) body: Option<Vec<u8>>,
    /// Estimated tokens of the client's conversation.
    pub(super) before: usize,
    /// Estimated tokens of the view.
    pub(super) after: usize,
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
pub(super) fn render_stored(
    shape: Shape,
    log: &Log,
    client: &[Record],
    pairs: &[(usize, usize)],
    extras: &Object,
    sent: Option<Sent>,
) -> Rendered {
    let est = Heuristic::default();
    // Each client record is estimated once: most of them go as sent.
    let tokens: Vec<usize> = client.iter().map(|r| est.record_tokens(r)).collect();
    let before = tokens.iter().sum();
    let view = project(log);
    if view.active.is_empty() {
        return Rendered {
            body: None,
            before,
            after: before,
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
    for &(si, cj) in pairs {
        stored_of[cj] = Some(si);
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
    // The client's own records are borrowed, not copied: most of a long
    // conversation goes as sent.
    let mut records: Vec<Cow<Record>> = Vec::with_capacity(client.len() + 3);
    // The client record each one was, for its estimate.
    let mut sent_as: Vec<Option<usize>> = Vec::with_capacity(client.len() + 3);
    // The client record each one stands for, changed or not (a stripped
    // call or result is still that call or result, where the format
    // groups records into messages).
    let mut from: Vec<Option<usize>> = Vec::with_capacity(client.len() + 3);
    if preamble {
        records.push(Cow::Owned(Record::new(
            0,
            "",
            Body::User {
                content: PREAMBLE.into(),
                author: Some("ctxfold".into()),
            },
        )));
    }
    let mut summarized = std::collections::HashSet::new();
    // A prompt-cache marker on a record that is folded away moves back to
    // the nearest block still sent, so the cached prefix keeps a boundary
    // where the folded part ends (markers only move or merge: never more
    // than the client sent).
    let folded = |records: &mut Vec<Cow<Record>>, c: &Record| {
        if shape == Shape::Messages
            && let Some(m) = cache_marker(c)
        {
            let m = m.clone();
            if let Some(r) = records.iter_mut().rev().find(|r| carries_marker(r)) {
                set_cache_marker(r.to_mut(), m);
            }
        }
    };
    for (j, c) in client.iter().enumerate() {
        let Some(si) = stored_of[j] else {
            let inside = prev_summary[j].is_some() && prev_summary[j] == next_summary[j];
            if inside {
                folded(&mut records, c);
            } else {
                records.push(Cow::Borrowed(c));
                sent_as.resize(records.len() - 1, None);
                sent_as.push(Some(j));
                from.resize(records.len() - 1, None);
                from.push(Some(j));
            }
            continue;
        };
        match &fate[si] {
            Fate::Dropped => folded(&mut records, c),
            Fate::Kept => {
                records.push(Cow::Borrowed(c));
                sent_as.resize(records.len() - 1, None);
                sent_as.push(Some(j));
                from.resize(records.len() - 1, None);
                from.push(Some(j));
            }
            Fate::Changed(body) => {
                records.push(Cow::Owned(Record {
                    seq: c.seq,
                    ts: c.ts.clone(),
                    body: body.clone(),
                    metadata: c.metadata.clone(),
                    extra: c.extra.clone(),
                }));
                from.resize(records.len() - 1, None);
                from.push(Some(j));
            }
            Fate::Summarized(n) => {
                if summarized.insert(*n)
                    && let Item::Summary { text, .. } = view.items[*n]
                {
                    let mut made = [
                        Record::new(
                            0,
                            "",
                            Body::User {
                                content: view.items[*n].summary_lead().unwrap_or_default(),
                                author: Some("ctxfold".into()),
                            },
                        ),
                        Record::new(
                            0,
                            "",
                            Body::Assistant {
                                content: text.to_owned(),
                            },
                        ),
                    ];
                    if shape == Shape::Responses {
                        made.iter_mut()
                            .for_each(ctxfold_formats::responses::typed_message);
                    }
                    records.extend(made.map(Cow::Owned));
                }
                folded(&mut records, c);
            }
        }
    }
    sent_as.resize(records.len(), None);
    from.resize(records.len(), None);
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
            let out = shape.write(&records, extras);
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
    }
}
