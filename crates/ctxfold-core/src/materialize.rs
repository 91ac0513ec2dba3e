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
    let m = Materialized::new(log, view);
    let mut out = Vec::with_capacity(m.len());
    let done: Result<(), std::convert::Infallible> = m.each(&mut |made| {
        out.push((made.turn, made.record));
        Ok(())
    });
    let Ok(()) = done;
    out
}

/// One record of the compacted transcript, as [`Materialized::each`]
/// makes it.
pub struct Made {
    /// The raw turn (0-based) it stands in.
    pub turn: u32,
    /// The index in the raw log of the record it was made from; `None`
    /// for a record ctxfold wrote (a summary's, the preamble).
    pub source: Option<usize>,
    /// The record, `seq` its place in the compacted transcript.
    pub record: Record,
}

/// Where a record of the compacted transcript comes from: view item `k`,
/// or raw record `i` the model does not see, kept where it was (the top
/// bit set). 8 bytes a record where a (position, place) pair was 24: a
/// long session's transcript has a million of them.
#[derive(Clone, Copy)]
struct Place(u64);

/// The bit of a [`Place`] that says it is a raw record.
const KEPT: u64 = 1 << 63;

impl Place {
    fn item(k: usize) -> Place {
        Place(k as u64)
    }

    fn kept(i: usize) -> Place {
        Place(i as u64 | KEPT)
    }

    /// The raw record kept, or else the view item.
    fn get(self) -> Result<usize, usize> {
        match self.0 & KEPT {
            0 => Err(self.0 as usize),
            _ => Ok((self.0 & !KEPT) as usize),
        }
    }
}

/// Where in the raw log a view item goes: at its record, a summary at
/// its first, the preamble first of all.
fn position(item: &Item<'_>) -> usize {
    match *item {
        Item::Event { index, .. }
        | Item::StrippedCall { index, .. }
        | Item::StrippedResult { index, .. }
        | Item::Clipped { index, .. } => index,
        Item::Summary { first, .. } => first,
        Item::Preamble => 0,
    }
}

/// The compacted transcript of a view, made a record at a time
/// ([`Materialized::each`]): a caller that writes each record as it comes
/// holds one record beside the log, not a copy of the whole transcript
/// (`ctxfold compact FILE` on a long session, issue 48).
pub struct Materialized<'l, 'v, 'a> {
    log: &'l Log,
    view: &'v View<'a>,
    /// What goes where, in order.
    places: Vec<Place>,
    len: usize,
}

impl<'l, 'v, 'a> Materialized<'l, 'v, 'a> {
    /// The order of the compacted transcript of `view`, a view of `log`.
    pub fn new(log: &'l Log, view: &'v View<'a>) -> Self {
        let records = log.records();
        let mut places: Vec<Place> = Vec::with_capacity(view.items.len());
        let mut inside_summary = vec![false; records.len()];
        let mut len = 0;
        for (k, item) in view.items.iter().enumerate() {
            match *item {
                Item::Summary { first, last, .. } => {
                    for flag in &mut inside_summary[first + 1..=last] {
                        *flag = true;
                    }
                    len += 2;
                }
                _ => len += 1,
            }
            places.push(Place::item(k));
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
                places.push(Place::kept(i));
                len += 1;
            }
        }
        drop(inside_summary);
        // Stable: at one position the view's own order holds (a preamble
        // before the record it precedes comes first because it was placed
        // first), and the view's items before the raw records.
        places.sort_by_key(|p| match p.get() {
            Ok(i) => i,
            Err(k) => position(&view.items[k]),
        });
        Materialized {
            log,
            view,
            places,
            len,
        }
    }

    /// How many records the compacted transcript has.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the compacted transcript has no record.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every record of the compacted transcript to `f`, in order, each
    /// made as it is handed out; stops at `f`'s first error. May be
    /// called again (the same records).
    pub fn each<E>(&self, f: &mut dyn FnMut(Made) -> Result<(), E>) -> Result<(), E> {
        let records = self.log.records();
        let mut seq = 0u64;
        let mut give = |turn: u32, source: Option<usize>, mut record: Record| {
            record.seq = seq;
            seq += 1;
            f(Made {
                turn,
                source,
                record,
            })
        };
        for &place in &self.places {
            let pos = match place.get() {
                Ok(i) => i,
                Err(k) => position(&self.view.items[k]),
            };
            let turn = if records.is_empty() {
                0
            } else {
                self.log.turn_of(pos)
            };
            match place.get() {
                Ok(i) => give(turn, Some(i), records[i].clone())?,
                Err(k) => match self.view.items[k] {
                    ref item @ (Item::Event { index, .. }
                    | Item::StrippedCall { index, .. }
                    | Item::StrippedResult { index, .. }
                    | Item::Clipped { index, .. }) => {
                        if let Some(r) = item_record(item) {
                            give(turn, Some(index), r)?;
                        }
                    }
                    ref item @ Item::Summary { first, text, .. } => {
                        let ts = &records[first].ts;
                        let user = Record::new(
                            0,
                            ts.clone(),
                            Body::User {
                                content: item.summary_lead().unwrap_or_default(),
                                author: Some("ctxfold".into()),
                            },
                        );
                        give(turn, None, user)?;
                        let assistant = Record::new(
                            0,
                            ts.clone(),
                            Body::Assistant {
                                content: text.to_owned(),
                            },
                        );
                        give(turn, None, assistant)?;
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
                        give(turn, None, user)?;
                    }
                },
            }
        }
        Ok(())
    }
}
