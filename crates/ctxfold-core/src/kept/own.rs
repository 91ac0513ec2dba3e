//! What a view's items show of their own records' facts (`batch.rs`).
//!
//! An item's text is a run of the view's text with a space (or the text's
//! end) on either side: the view's text is every item's words joined by
//! single spaces. So a fact found whole in its own record's item is found
//! whole in the view's text, and a diagnostic's line with its location
//! within its item is so within the view's (the 400 bytes after it there
//! hold at least what its item holds). Such a fact is kept without being
//! looked for; only the others need the view's whole text, which a view
//! that strips (a path in a stripped call, a diagnostic on a stripped
//! result's line, a request shown as it is) then need not make at all.
//! Deciding "kept" so is never wrong, only sometimes not decisive: a fact
//! not in its own item is looked for everywhere, as before.

use super::workers::with_workers;
use super::{
    Collapsed, RecordFacts, appears, diagnostic_appears, path_char, record_facts, word_char,
};
use crate::estimate::{item_tokens, made_item_tokens, stripped_call_tokens_by};
use crate::log::Log;
use crate::projection::{Item, View};
use crate::record::Body;

/// Which facts of a record its item shows, as bits: its files in the
/// order of [`RecordFacts::files`] from bit 0, then its diagnostics in
/// order, then its request. Facts past the 64th are not marked (they are
/// looked for).
pub(super) type Shown = u64;

/// Bit `k`, or nothing past the 64th.
pub(super) fn bit(k: usize) -> Shown {
    if k < 64 { 1 << k } else { 0 }
}

/// A view's items read once.
pub(super) struct Items {
    /// At `i + 1`, the tokens of the items whose origin starts at record
    /// `i` (`0` at `0`): summed in place, the prefix sums a report reads
    /// (one vector of a million, not two).
    pub tokens: Vec<usize>,
    /// By record index: which of its facts its item shows.
    pub shown: Vec<Shown>,
}

/// Items read at a time: what is held of them at once.
const CHUNK: usize = 1 << 14;

/// Every item of `view` (a projection of `log`) once: its tokens, and
/// which of its record's facts it shows. A stripped result's line, a
/// clipped text and a stripped call's arguments are made once, for both.
/// Each item is read alone, so a chunk at a time is read on every core
/// (`workers.rs`, as `batch.rs` reads records); the result is the same.
pub(super) fn read(log: &Log, view: &View<'_>) -> Items {
    let mut out = Items::new(log);
    with_workers(
        |part: &[Item<'_>]| part.iter().filter_map(|i| one(log, i)).collect(),
        |run| {
            for chunk in view.items.chunks(CHUNK) {
                out.add(run(chunk.to_vec()));
            }
        },
    );
    out
}

/// [`read`] of the view `log` projects to as it is, its items taken as
/// the projection makes them: the view is never held whole (a million
/// items are 60 MB).
pub(super) fn read_projecting(log: &Log) -> Items {
    let mut out = Items::new(log);
    with_workers(
        |part: &[Item<'_>]| part.iter().filter_map(|i| one(log, i)).collect(),
        |run| {
            let mut buf = Vec::with_capacity(CHUNK);
            crate::projection::for_each_item(log, |item| {
                buf.push(item);
                if buf.len() == CHUNK {
                    out.add(run(std::mem::replace(&mut buf, Vec::with_capacity(CHUNK))));
                }
            });
            out.add(run(buf));
        },
    );
    out
}

impl Items {
    fn new(log: &Log) -> Self {
        Items {
            tokens: vec![0; log.len() + 1],
            shown: vec![0; log.len()],
        }
    }

    /// Items read: their tokens summed, and what they show joined, by
    /// their first record (their order does not matter).
    fn add(&mut self, read: Vec<(usize, usize, Shown)>) {
        for (start, tokens, shown) in read {
            self.tokens[start + 1] += tokens;
            self.shown[start] |= shown;
        }
    }
}

/// An item's first record, its tokens, and which of that record's facts
/// it shows (`None` for an item standing for no record of the log).
fn one(log: &Log, item: &Item<'_>) -> Option<(usize, usize, Shown)> {
    let start = *item.origin().start();
    if item.origin().is_empty() || start >= log.len() {
        return None;
    }
    let (index, record) = match *item {
        Item::Event { index, record }
        | Item::StrippedCall { index, record, .. }
        | Item::StrippedResult { index, record, .. }
        | Item::Clipped { index, record, .. } => (index, record),
        Item::Summary { .. } | Item::Preamble => return Some((start, item_tokens(item), 0)),
    };
    // What the item makes of its record (a stripped call's arguments, a
    // stripped result's line, a clipped text), made here once.
    let (own, n) = match (&record.body, item) {
        // A call's facts are its paths: shown as they are by a call shown
        // as it is, and by a stripped one when short enough to be kept.
        (
            Body::ToolCall {
                name, arguments, ..
            },
            _,
        ) => {
            let n = match item.stripped_arguments() {
                Some(args) => stripped_call_tokens_by(&crate::estimate::Heuristic, name, &args),
                None => item_tokens(item),
            };
            // Shown as they are, or stripped of nothing (no string longer
            // than the text): every path, however many, without reading
            // them (a call has no other facts).
            let whole = matches!(item, Item::Event { .. })
                || arguments.text().len() <= crate::projection::KEEP_ARGUMENT_CHARS;
            let shown = if whole {
                Shown::MAX
            } else {
                (super::paths::call_paths(arguments).values().enumerate())
                    .filter(|(_, short)| **short)
                    .fold(0, |bits, (k, _)| bits | bit(k))
            };
            return Some((start, n, shown));
        }
        (_, Item::StrippedResult { .. }) => match item.stripped_line() {
            Some(line) => {
                let n = made_item_tokens(&line);
                (Texts::Made(line), n)
            }
            None => (Texts::None, item_tokens(item)),
        },
        (_, Item::Clipped { .. }) => match item.clipped_text() {
            Some(text) => {
                let n = made_item_tokens(&text);
                (Texts::Made(text), n)
            }
            None => (Texts::None, item_tokens(item)),
        },
        // A result shown as it is: its tokens from its scan's count.
        (Body::ToolResult { content, .. }, Item::Event { .. }) => {
            (Texts::Whole(content), super::record_tokens_at(log, index))
        }
        (Body::ToolResult { content, .. } | Body::User { content, .. }, _) => {
            (Texts::Whole(content), item_tokens(item))
        }
        _ => (Texts::None, item_tokens(item)),
    };
    if !matches!(
        record.body,
        Body::ToolCall { .. } | Body::ToolResult { .. } | Body::User { .. }
    ) {
        return Some((start, n, 0));
    }
    let facts = record_facts(log, index);
    Some((
        start,
        n,
        shown(&facts, &own, matches!(item, Item::Event { .. })),
    ))
}

/// Which of `facts` the item whose texts are `own` shows (`whole`: the
/// item is its record as it is).
fn shown(facts: &RecordFacts<'_>, own: &Texts<'_>, whole: bool) -> Shown {
    let mut out = 0;
    let (files, diagnostics) = (facts.files.len(), facts.diagnostics.len());
    if files + diagnostics > 0 {
        let text = own.collapsed();
        for (k, f) in facts.files.iter().enumerate() {
            if appears(&text, f, path_char) {
                out |= bit(k);
            }
        }
        for (k, d) in facts.diagnostics.iter().enumerate() {
            if diagnostic_appears(&text, d) {
                out |= bit(files + k);
            }
        }
    }
    // A user message shown as it is holds its request word for word,
    // whitespace on either side: no text to make.
    if let Some(r) = &facts.request
        && (whole || appears(&own.collapsed(), r, word_char))
    {
        out |= bit(files + diagnostics);
    }
    out
}

/// The texts an item puts in the view's text, as `anchor::item_texts`
/// gives them.
enum Texts<'a> {
    /// The record's text as it is.
    Whole(&'a str),
    /// A text the item made (a stripped line, a clip).
    Made(String),
    None,
}

impl Texts<'_> {
    /// The texts collapsed as the view's text collapses them.
    fn collapsed(&self) -> String {
        let mut out = Collapsed(String::new());
        match self {
            Texts::Whole(t) => out.push(t),
            Texts::Made(t) => out.push(t),
            Texts::None => {}
        }
        out.0
    }
}
