//! A view turned back into records: the compacted transcript that
//! `ctxfold compact FILE` and `export --compacted` write.
//!
//! Every view item becomes an owned record (stripped calls and results with
//! their placeholders, a summary as a user and an assistant message). The
//! records the model never sees are kept where they were (turn starts,
//! config deltas, inquiry events), except overlay records, which have been
//! applied, compaction attempt records (bookkeeping of the overlays), and
//! turn starts inside a summary, whose turns it replaced.

use crate::log::Log;
use crate::projection::{Item, PREAMBLE, View};
use crate::record::{Body, Kind, Record};

/// The record a single-event item stands for, as the model sees it
/// (stripped arguments and one-line results filled in); `None` for a
/// summary or the preamble.
pub fn item_record(item: &Item<'_>) -> Option<Record> {
    match *item {
        Item::Event { record, .. } => Some(record.clone()),
        Item::StrippedCall { record, .. } => {
            let mut r = record.clone();
            if let (Body::ToolCall { arguments, .. }, Some(stripped)) =
                (&mut r.body, item.stripped_arguments())
            {
                *arguments = stripped;
            }
            Some(r)
        }
        Item::StrippedResult { record, .. } => match (&record.body, item.stripped_line()) {
            // Built around the line, not cloned and then overwritten: the
            // content it replaces is not copied.
            (Body::ToolResult { id, is_error, .. }, Some(line)) => Some(Record {
                seq: record.seq,
                ts: record.ts.clone(),
                body: Body::ToolResult {
                    id: id.clone(),
                    content: line,
                    is_error: *is_error,
                },
                metadata: record.metadata.clone(),
                extra: record.extra.clone(),
            }),
            _ => Some(record.clone()),
        },
        Item::Clipped { record, .. } => {
            let mut r = record.clone();
            if let (Body::ToolResult { content, .. } | Body::User { content, .. }, Some(text)) =
                (&mut r.body, item.clipped_text())
            {
                *content = text;
            }
            Some(r)
        }
        Item::Summary { .. } | Item::Preamble => None,
    }
}

/// The records of the compacted transcript, renumbered 0, 1, 2, …
pub fn materialize(log: &Log, view: &View<'_>) -> Vec<Record> {
    materialize_with_turns(log, view)
        .into_iter()
        .map(|(_, r)| r)
        .collect()
}

/// As [`materialize`], with the raw turn (0-based) each record stands in,
/// so a printout can number turns as the conversation does.
pub fn materialize_with_turns(log: &Log, view: &View<'_>) -> Vec<(u32, Record)> {
    let records = log.records();
    // (position in the raw log, records to put there), in order.
    let mut placed: Vec<(usize, Vec<Record>)> = Vec::with_capacity(view.items.len());
    let mut inside_summary = vec![false; records.len()];
    for item in &view.items {
        let (pos, recs) = match *item {
            Item::Event { index, .. }
            | Item::StrippedCall { index, .. }
            | Item::StrippedResult { index, .. }
            | Item::Clipped { index, .. } => (index, item_record(item).into_iter().collect()),
            Item::Summary {
                first, last, text, ..
            } => {
                for flag in &mut inside_summary[first + 1..=last] {
                    *flag = true;
                }
                let ts = &records[first].ts;
                let user = Record::new(
                    0,
                    ts.clone(),
                    Body::User {
                        content: item.summary_lead().unwrap_or_default(),
                        author: Some("ctxfold".into()),
                    },
                );
                let assistant = Record::new(
                    0,
                    ts.clone(),
                    Body::Assistant {
                        content: text.to_owned(),
                    },
                );
                (first, vec![user, assistant])
            }
            Item::Preamble => {
                let ts = records.first().map(|r| r.ts.clone()).unwrap_or_default();
                let user = Record::new(
                    0,
                    ts,
                    Body::User {
                        content: PREAMBLE.into(),
                        author: Some("ctxfold".into()),
                    },
                );
                (0, vec![user])
            }
        };
        placed.push((pos, recs));
    }
    for (i, r) in records.iter().enumerate() {
        let keep = !r.body.is_model_visible()
            && !matches!(
                r.kind(),
                Kind::Compaction | Kind::CompactionReset | Kind::System
            )
            && !crate::attempt::is_attempt(r)
            && (r.kind() != Kind::TurnStart || !inside_summary[i]);
        if keep {
            placed.push((i, vec![r.clone()]));
        }
    }
    // Stable: at one position the view's own order holds (a preamble before
    // the record it precedes comes first because it was placed first).
    placed.sort_by_key(|(pos, _)| *pos);
    let mut out: Vec<(u32, Record)> = placed
        .into_iter()
        .flat_map(|(pos, recs)| {
            let turn = if records.is_empty() {
                0
            } else {
                log.turn_of(pos)
            };
            recs.into_iter().map(move |r| (turn, r))
        })
        .collect();
    for (i, (_, r)) in out.iter_mut().enumerate() {
        r.seq = i as u64;
    }
    out
}
