//! The projection itself: one pass over the records with a sweep line,
//! each compaction in a max-heap by append order while the pass is inside
//! its range, deciding for each event what the view shows (see the
//! module docs of [`crate::projection`]).

use std::collections::BinaryHeap;

// foldhash: call ids and compaction indices, hashed for every record.
use foldhash::{HashMap, HashMapExt};

use crate::compaction::{Compaction, ReasoningPolicy, ToolOverride};
use crate::handle::Tag;
use crate::log::Log;
use crate::position::is_overlay;
use crate::record::{Body, Record};
use crate::text::more_chars_than;

use super::status::{compaction_status_as_of, covered_indices, highest_turn};
use super::{DropReason, Dropped, Inactive, Item, KEEP_DIAGNOSTICS, View};

/// The text of a summary item whose compaction has none (never made: only
/// compactions with a summary enter the summary heap).
static NO_TEXT: String = String::new();

/// A compaction in force, resolved to record indices.
struct Span<'a> {
    /// Append order: the compaction record's index (later wins).
    order: usize,
    lo: usize,
    hi: usize,
    c: &'a Compaction,
}

/// Max-heap entries: (append order, last covered index).
pub(super) type Heap = BinaryHeap<(usize, usize)>;

/// The winner covering `i` in `heap`, dropping expired entries on top.
pub(super) fn top(heap: &mut Heap, i: usize) -> Option<usize> {
    while let Some(&(order, hi)) = heap.peek() {
        if hi >= i {
            return Some(order);
        }
        heap.pop();
    }
    None
}

/// What the pass decided for a pending tool call, until its result comes.
struct Pending<'a> {
    /// Position of the call's item in `items`, if it is in the view.
    item: Option<usize>,
    /// The tool's name (none for a call folded into a summary).
    name: &'a String,
    /// The pair's fate: `None` keep, or a policy to apply to the result.
    fate: CallFate,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CallFate {
    /// The call is in the view (maybe stripped): its result follows its own
    /// policy.
    InView,
    /// `omit` drops the pair, decided at the call.
    Omitted(usize),
    /// The call went into a summary; its result must not stand alone.
    Folded,
}

/// Results this short are kept even under `strip-responses`: the one-line
/// replacement would not be smaller.
pub const KEEP_RESULT_CHARS: usize = 120;

/// The winning tool policy for tool `name` at record `i`, and the
/// compaction it comes from: the latest compaction covering `i` with a
/// general tool policy or an override for this tool.
fn tool_policy(
    i: usize,
    name: &str,
    tools_heap: &mut Heap,
    tool_heaps: &mut HashMap<&str, Heap>,
    by_order: &HashMap<usize, &Compaction>,
) -> Option<(usize, ToolOverride)> {
    let general = top(tools_heap, i);
    let specific = tool_heaps.get_mut(name).and_then(|h| top(h, i));
    let order = general.max(specific)?;
    let c = by_order[&order];
    let policy = match c.tool_overrides.get(name) {
        Some(o) => *o,
        None => c.tool_calls.map_or(ToolOverride::Keep, ToolOverride::from),
    };
    Some((order, policy))
}

/// The record as it is, or clipped (or excerpted) when the latest
/// compaction over it with a `clip_chars` (or `excerpt_chars`) says it is
/// too long.
fn clipped_or_kept<'a>(
    (i, rec, log): (usize, &'a Record, &'a Log),
    content: &str,
    clip_heap: &mut Heap,
    by_order: &HashMap<usize, &Compaction>,
    tag: Tag,
    at: u32,
) -> Item<'a> {
    if let Some(order) = top(clip_heap, i) {
        let c = by_order[&order];
        // The latest compaction over the record that clips or excerpts
        // decides; an excerpt's threshold is its size limit itself.
        let clip = match (c.excerpt_chars, c.clip_chars) {
            (Some(n), _) => Some((n as usize, n as usize, true)),
            (None, Some(n)) => Some((n as usize, n as usize + 200, false)),
            (None, None) => None,
        };
        if let Some((keep, over, excerpt)) = clip
            && more_chars_than(content, over)
        {
            return Item::Clipped {
                index: i,
                record: rec,
                keep_chars: keep,
                excerpt,
                scan: log.scan_cell(i),
                tag,
                at,
            };
        }
    }
    Item::Event {
        index: i,
        record: rec,
    }
}

/// A call replaced in `pending` by a later call with the same id never gets
/// its result: take it out of the view.
fn unpair<'a>(earlier: Option<Pending<'a>>, items: &mut impl Sink<'a>, dropped: &mut Vec<Dropped>) {
    if let Some(Pending {
        item: Some(item), ..
    }) = earlier
    {
        drop_unpaired(item, items, dropped);
    }
}

/// Take the call at `item` out of the view: its result will not follow it.
fn drop_unpaired<'a>(item: usize, items: &mut impl Sink<'a>, dropped: &mut Vec<Dropped>) {
    dropped.push(Dropped {
        index: *items.get(item).origin().start(),
        reason: DropReason::Unpaired,
    });
    items.remove(item);
}

/// Where the sweep puts the view's items, by position (the order they
/// are pushed in): a vector ([`project`]), or a visitor given each item
/// once it can no longer change ([`for_each_item`]). Only a tool call
/// waiting for its result and the summary whose run is open are looked
/// at, changed or taken out after they are pushed.
trait Sink<'a> {
    /// Add `item` at the next position; `open` when it may still change
    /// or be taken out (a call, a summary), until [`Sink::settle`].
    fn push(&mut self, item: Item<'a>, open: bool);
    /// The open item at `pos`.
    fn get(&mut self, pos: usize) -> &mut Item<'a>;
    /// Take the open item at `pos` out of the view.
    fn remove(&mut self, pos: usize);
    /// The open item at `pos` stays as it is.
    fn settle(&mut self, pos: usize);
}

/// The view's items in order, taken-out ones marked until the end.
struct Items<'a> {
    items: Vec<Item<'a>>,
    removed: Vec<bool>,
}

impl<'a> Sink<'a> for Items<'a> {
    fn push(&mut self, item: Item<'a>, _open: bool) {
        self.items.push(item);
        self.removed.push(false);
    }

    fn get(&mut self, pos: usize) -> &mut Item<'a> {
        &mut self.items[pos]
    }

    fn remove(&mut self, pos: usize) {
        self.removed[pos] = true;
    }

    fn settle(&mut self, _pos: usize) {}
}

impl<'a> Items<'a> {
    /// The items left, with the preamble where the view needs one.
    fn finish(self) -> Vec<Item<'a>> {
        let Items { mut items, removed } = self;
        if removed.iter().any(|&r| r) {
            let mut keep = removed.iter().map(|r| !r);
            items.retain(|_| keep.next().unwrap_or(true));
        }
        // Never start with the assistant (system prompts aside).
        let first = items
            .iter()
            .position(|i| !is_system(i))
            .unwrap_or(items.len());
        if starts_with_assistant(items.get(first)) {
            items.insert(first, Item::Preamble);
        }
        items
    }
}

/// Each item given to a visitor once it is settled, in no set order;
/// the open ones kept until then.
struct Each<'a, F> {
    visit: F,
    open: HashMap<usize, Item<'a>>,
    next: usize,
    /// The first item given that is not a system prompt, by position:
    /// whether the view starts with the assistant.
    first: Option<(usize, Item<'a>)>,
}

impl<'a, F: FnMut(Item<'a>)> Each<'a, F> {
    fn give(&mut self, pos: usize, item: Item<'a>) {
        if !is_system(&item) && self.first.is_none_or(|(p, _)| pos < p) {
            self.first = Some((pos, item));
        }
        (self.visit)(item);
    }
}

impl<'a, F: FnMut(Item<'a>)> Sink<'a> for Each<'a, F> {
    fn push(&mut self, item: Item<'a>, open: bool) {
        let pos = self.next;
        self.next += 1;
        if open {
            self.open.insert(pos, item);
        } else {
            self.give(pos, item);
        }
    }

    fn get(&mut self, pos: usize) -> &mut Item<'a> {
        // Only open items are looked at (see `Sink`), and they are here.
        self.open.entry(pos).or_insert(Item::Preamble)
    }

    fn remove(&mut self, pos: usize) {
        self.open.remove(&pos);
    }

    fn settle(&mut self, pos: usize) {
        if let Some(item) = self.open.remove(&pos) {
            self.give(pos, item);
        }
    }
}

/// A system prompt, which passes through before anything else.
fn is_system(item: &Item<'_>) -> bool {
    matches!(item, Item::Event { record, .. } if matches!(record.body, Body::System { .. }))
}

/// Whether a view whose first item (system prompts aside) is `first`
/// starts with the assistant: it then gets the preamble before it.
fn starts_with_assistant(first: Option<&Item<'_>>) -> bool {
    match first {
        Some(Item::Event { record, .. }) => !matches!(record.body, Body::User { .. }),
        Some(Item::Clipped { record, .. }) => !matches!(record.body, Body::User { .. }),
        Some(Item::StrippedCall { .. } | Item::StrippedResult { .. }) => true,
        Some(Item::Summary { .. } | Item::Preamble) | None => false,
    }
}

/// Project `log`: apply every compaction in force. See the module docs.
pub fn project(log: &Log) -> View<'_> {
    project_as_of(log, highest_turn(log))
}

/// The view the model will get once the log's highest turn index reaches
/// `turn` (nothing else appended): compactions deferred until then are in
/// force. What an assistant's compaction, deferred to the next turn, will
/// do is measured on this view.
pub fn project_as_of(log: &Log, turn: u32) -> View<'_> {
    project_with(log, &[], turn)
}

/// The view of `log` with the compactions `extra` appended after it, in
/// order, as of turn `turn` (see [`project_as_of`]), without copying the
/// log: what a compaction would change is measured on it. In the view, the
/// k-th of `extra` has index `log.len() + k`, as if it had been appended.
pub fn project_with<'a>(log: &'a Log, extra: &'a [Compaction], turn: u32) -> View<'a> {
    let mut items = Items {
        items: Vec::with_capacity(log.len()),
        removed: Vec::with_capacity(log.len()),
    };
    let (dropped, active, inactive) = sweep(log, extra, turn, &mut items);
    View {
        tag: Tag::of(log),
        items: items.finish(),
        dropped,
        active,
        inactive,
    }
}

/// Each item of [`project`]'s view given to `visit`, without the view:
/// what counts the view's items (`stats`: a million of them are 60 MB)
/// needs no vector of them. Every item comes once, the preamble
/// included, but not in the view's order: a tool call comes when its
/// result does, a summary when its run ends.
pub fn for_each_item<'a>(log: &'a Log, visit: impl FnMut(Item<'a>)) {
    let mut each = Each {
        visit,
        open: HashMap::new(),
        next: 0,
        first: None,
    };
    sweep(log, &[], highest_turn(log), &mut each);
    if starts_with_assistant(each.first.as_ref().map(|(_, i)| i)) {
        (each.visit)(Item::Preamble);
    }
}

/// The view's items of [`project_with`] put in `items`, in order; what
/// was dropped, and the compactions in force and not.
#[allow(clippy::type_complexity)]
fn sweep<'a>(
    log: &'a Log,
    extra: &'a [Compaction],
    turn: u32,
    items: &mut impl Sink<'a>,
) -> (Vec<Dropped>, Vec<usize>, Vec<(usize, Inactive)>) {
    let records = log.records();
    // An empty log has no items to carry one.
    let tag = Tag::of(log).unwrap_or_default();
    let (mut active, mut inactive) = compaction_status_as_of(log, turn);
    let mut added: Vec<(usize, &Compaction)> = Vec::new();
    for (k, c) in extra.iter().enumerate() {
        let order = records.len() + k;
        if c.deferred_until_turn.is_some_and(|t| turn < t) {
            inactive.push((order, Inactive::Deferred));
        } else if covered_indices(log, c).is_none() {
            inactive.push((order, Inactive::OutOfBounds));
        } else {
            active.push(order);
            added.push((order, c));
        }
    }

    let mut spans: Vec<Span<'_>> = active
        .iter()
        .filter_map(|&i| {
            let Body::Compaction(c) = &records.get(i)?.body else {
                return None;
            };
            let (lo, hi) = covered_indices(log, c)?;
            Some(Span {
                order: i,
                lo,
                hi,
                c,
            })
        })
        .chain(added.into_iter().filter_map(|(order, c)| {
            let (lo, hi) = covered_indices(log, c)?;
            Some(Span { order, lo, hi, c })
        }))
        .collect();
    spans.sort_by_key(|s| s.lo);
    let by_order: HashMap<usize, &Compaction> = spans.iter().map(|s| (s.order, s.c)).collect();
    // The turns each compaction covers: a summary names all of them, even
    // when a newer summary nested inside splits it in two. Its first and
    // last records the model sees decide, as they decide what the summary
    // is made of: a range ending on the `turn_start` of the turn it keeps
    // names no turn more than its digest.
    let records_all = log.records();
    let visible = |k: &usize| records_all[*k].body.is_model_visible();
    let span_turns: HashMap<usize, (u32, u32)> = spans
        .iter()
        .map(|s| {
            let first = (s.lo..=s.hi).find(visible).unwrap_or(s.lo);
            let last = (s.lo..=s.hi).rev().find(visible).unwrap_or(s.hi);
            (s.order, (log.turn_of(first), log.turn_of(last)))
        })
        .collect();

    let mut summary_heap = Heap::new();
    let mut reasoning_heap = Heap::new();
    let mut tools_heap = Heap::new();
    let mut clip_heap = Heap::new();
    // Compactions with a per-tool override, by tool name.
    let mut tool_heaps: HashMap<&str, Heap> = HashMap::new();

    // Items pushed so far: the next one's position.
    let mut pushed = 0;
    let mut dropped = Vec::new();
    let mut pending: HashMap<&str, Pending> = HashMap::new();
    let mut next_span = 0;
    // The summary whose run is open, and the item index of its Summary.
    let mut open_summary: Option<(usize, usize)> = None;

    // The position of the record the pass is at (see `crate::handle`).
    let mut next_at: u64 = 0;
    for (i, rec) in records.iter().enumerate() {
        // Positions past u32 (four billion records) are not met in logs.
        let at = u32::try_from(next_at).unwrap_or(u32::MAX);
        if !is_overlay(&rec.body) {
            next_at += 1;
        }
        while next_span < spans.len() && spans[next_span].lo <= i {
            let s = &spans[next_span];
            let entry = (s.order, s.hi);
            if s.c.summary.is_some() {
                summary_heap.push(entry);
            }
            if s.c.reasoning.is_some() {
                reasoning_heap.push(entry);
            }
            if s.c.tool_calls.is_some() {
                tools_heap.push(entry);
            }
            if s.c.clip_chars.is_some() || s.c.excerpt_chars.is_some() {
                clip_heap.push(entry);
            }
            for name in s.c.tool_overrides.keys() {
                tool_heaps.entry(name.as_str()).or_default().push(entry);
            }
            next_span += 1;
        }
        if let Body::System { .. } = rec.body {
            // System prompts pass through, never compacted.
            items.push(
                Item::Event {
                    index: i,
                    record: rec,
                },
                false,
            );
            pushed += 1;
            continue;
        }
        if !rec.body.is_model_visible() {
            continue;
        }

        // Summaries first: they beat every mechanical policy.
        if let Some(order) = top(&mut summary_heap, i) {
            // A summary inside a call/result pair (only hand-written or
            // imported ranges do that) would sit between the call and its
            // result: no provider accepts that, so the pair leaves the view.
            for p in pending.values_mut() {
                if let Some(item) = p.item.take() {
                    drop_unpaired(item, items, &mut dropped);
                    p.fate = CallFate::Folded;
                }
            }
            match open_summary {
                Some((o, item)) if o == order => {
                    if let Item::Summary {
                        last, at: range, ..
                    } = items.get(item)
                    {
                        *last = i;
                        *range = (range.0, at);
                    }
                }
                _ => {
                    if let Some((_, item)) = open_summary {
                        items.settle(item);
                    }
                    let text = by_order[&order]
                        .summary
                        .as_ref()
                        .map_or(&NO_TEXT, |s| &s.text);
                    open_summary = Some((order, pushed));
                    items.push(
                        Item::Summary {
                            first: i,
                            last: i,
                            turns: span_turns[&order],
                            compaction: order,
                            text,
                            at: (at, at),
                            tag,
                        },
                        true,
                    );
                    pushed += 1;
                }
            }
            match &rec.body {
                Body::ToolCall { id, .. } => {
                    let earlier = pending.insert(
                        id,
                        Pending {
                            item: None,
                            name: &NO_TEXT,
                            fate: CallFate::Folded,
                        },
                    );
                    unpair(earlier, items, &mut dropped);
                }
                Body::ToolResult { id, .. } => {
                    // A call kept outside the summary loses its result: drop
                    // the call too, so the pair stays whole.
                    if let Some(p) = pending.remove(id.as_str())
                        && let Some(item) = p.item
                    {
                        drop_unpaired(item, items, &mut dropped);
                    }
                }
                _ => {}
            }
            continue;
        }
        if let Some((_, item)) = open_summary.take() {
            items.settle(item);
        }

        match &rec.body {
            Body::Reasoning { .. } => {
                if let Some(order) = top(&mut reasoning_heap, i)
                    && by_order[&order].reasoning == Some(ReasoningPolicy::Strip)
                {
                    dropped.push(Dropped {
                        index: i,
                        reason: DropReason::ReasoningStripped { compaction: order },
                    });
                    continue;
                }
                items.push(
                    Item::Event {
                        index: i,
                        record: rec,
                    },
                    false,
                );
                pushed += 1;
            }
            Body::ToolCall { id, name, .. } => {
                let policy = tool_policy(i, name, &mut tools_heap, &mut tool_heaps, &by_order);
                let (fate, item) = match policy {
                    Some((order, ToolOverride::Omit)) => {
                        dropped.push(Dropped {
                            index: i,
                            reason: DropReason::Omitted { compaction: order },
                        });
                        (CallFate::Omitted(order), None)
                    }
                    policy => {
                        let strip = matches!(
                            policy,
                            Some((_, ToolOverride::Strip | ToolOverride::StripRequests))
                        );
                        let item = if strip {
                            Item::StrippedCall {
                                index: i,
                                record: rec,
                                tag,
                                at,
                            }
                        } else {
                            Item::Event {
                                index: i,
                                record: rec,
                            }
                        };
                        // Open until its result comes: without one it
                        // leaves the view.
                        items.push(item, true);
                        pushed += 1;
                        (CallFate::InView, Some(pushed - 1))
                    }
                };
                let earlier = pending.insert(id, Pending { item, name, fate });
                unpair(earlier, items, &mut dropped);
            }
            Body::ToolResult { id, content, .. } => match pending.remove(id.as_str()) {
                None
                | Some(Pending {
                    fate: CallFate::Folded,
                    ..
                }) => dropped.push(Dropped {
                    index: i,
                    reason: DropReason::Unpaired,
                }),
                Some(Pending {
                    fate: CallFate::Omitted(order),
                    ..
                }) => dropped.push(Dropped {
                    index: i,
                    reason: DropReason::Omitted { compaction: order },
                }),
                Some(Pending {
                    fate: CallFate::InView,
                    name: tool,
                    item,
                }) => {
                    // The call stays, with its result.
                    if let Some(item) = item {
                        items.settle(item);
                    }
                    // A result follows the policy that covers it, not its call's.
                    let policy = tool_policy(i, tool, &mut tools_heap, &mut tool_heaps, &by_order);
                    let strip = matches!(
                        policy,
                        Some((_, ToolOverride::Strip | ToolOverride::StripResponses))
                    ) && more_chars_than(content, KEEP_RESULT_CHARS);
                    let item = if strip {
                        let keep_diagnostics = policy
                            .and_then(|(order, _)| by_order[&order].keep_diagnostics)
                            .map_or(KEEP_DIAGNOSTICS, |n| n as usize);
                        Item::StrippedResult {
                            index: i,
                            record: rec,
                            tool,
                            scan: log.scan_cell(i),
                            keep_diagnostics,
                            tag,
                            at,
                        }
                    } else {
                        clipped_or_kept((i, rec, log), content, &mut clip_heap, &by_order, tag, at)
                    };
                    items.push(item, false);
                    pushed += 1;
                }
            },
            Body::User { content, .. } => {
                let item =
                    clipped_or_kept((i, rec, log), content, &mut clip_heap, &by_order, tag, at);
                items.push(item, false);
                pushed += 1;
            }
            _ => {
                items.push(
                    Item::Event {
                        index: i,
                        record: rec,
                    },
                    false,
                );
                pushed += 1;
            }
        }
    }
    if let Some((_, item)) = open_summary {
        items.settle(item);
    }

    // Calls whose result never came cannot be sent alone.
    for p in pending.into_values() {
        if let Some(item) = p.item {
            drop_unpaired(item, items, &mut dropped);
        }
    }
    dropped.sort_by_key(|d| d.index);
    (dropped, active, inactive)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::{Source, Summary, ToolPolicy};
    use crate::materialize::item_record;
    use crate::projection::fixtures::{compaction, log_of, turn};
    use crate::projection::{stripped_result_line, summary_preamble};
    use serde_json::json;

    /// Random logs: calls and results paired, unpaired, reused ids,
    /// system prompts, the assistant first, and compactions of every kind
    /// over random ranges, nested and overlapping.
    fn random_log(seed: u64) -> Log {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move |n: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % n
        };
        let len = 3 + next(40) as usize;
        let mut bodies = Vec::new();
        for k in 0..len {
            let id = ["a", "b", "c"][next(3) as usize].to_owned();
            let text = if next(3) == 0 {
                "x".repeat(600)
            } else {
                format!("t{k}")
            };
            bodies.push(match next(9) {
                0 => Body::TurnStart,
                1 => Body::User {
                    content: text,
                    author: None,
                },
                2 => Body::Assistant { content: text },
                3 => Body::Reasoning { content: text },
                4 | 5 => Body::ToolCall {
                    id,
                    name: ["edit", "read"][next(2) as usize].into(),
                    arguments: json!({"new": text}).into(),
                },
                6 | 7 => Body::ToolResult {
                    id,
                    content: text,
                    is_error: next(4) == 0,
                },
                _ => Body::System { content: text },
            });
            if next(6) == 0 {
                let mut c = Compaction::new(0, 0, Source::Auto);
                let a = next(bodies.len() as u64);
                c.from_seq = Some(a);
                c.to_seq = Some(a + next(bodies.len() as u64 - a));
                match next(5) {
                    0 => {
                        c.summary = Some(Summary {
                            text: format!("summary {k}"),
                            provenance: crate::compaction::Provenance::Supplied {
                                author: Source::User,
                            },
                        })
                    }
                    1 => c.reasoning = Some(ReasoningPolicy::Strip),
                    2 => c.clip_chars = Some(100),
                    3 => c.excerpt_chars = Some(200),
                    _ => {}
                }
                c.tool_calls = [
                    None,
                    Some(ToolPolicy::Strip),
                    Some(ToolPolicy::StripResponses),
                    Some(ToolPolicy::Omit),
                ][next(4) as usize];
                if next(3) == 0 {
                    c.tool_overrides.insert("read".into(), ToolOverride::Keep);
                }
                bodies.push(compaction(c));
            }
        }
        log_of(bodies)
    }

    #[test]
    fn each_item_is_every_item_of_the_view_once() {
        let mut summaries = 0;
        let mut preambles = 0;
        for seed in 0..2_000 {
            let log = random_log(seed);
            let mut view: Vec<String> = project(&log)
                .items
                .iter()
                .map(|i| format!("{i:?}"))
                .collect();
            let mut each = Vec::new();
            for_each_item(&log, |i| each.push(format!("{i:?}")));
            summaries += view.iter().filter(|i| i.starts_with("Summary")).count();
            preambles += view.iter().filter(|i| *i == "Preamble").count();
            view.sort();
            each.sort();
            assert_eq!(each, view, "seed {seed}");
        }
        // The cases that matter were met.
        assert!(
            summaries > 100 && preambles > 100,
            "{summaries} {preambles}"
        );
    }

    #[test]
    fn clipping_shows_head_and_tail_of_long_units_only_and_strip_wins() {
        let long = (0..3_000).map(|k| format!("{k},")).collect::<String>();
        let mut bodies = turn(0, "short", false);
        if let Body::ToolResult { content, .. } = &mut bodies[4] {
            *content = long.clone();
        }
        bodies.push(Body::User {
            content: long.clone(),
            author: None,
        });
        bodies.push(Body::User {
            content: "short".into(),
            author: None,
        });
        let mut log = log_of(bodies);
        let mut clip = Compaction::new(0, 0, Source::Auto);
        clip.clip_chars = Some(1_000);
        log.push(Record::new(
            log.next_seq(),
            "t",
            Body::Compaction(Box::new(clip)),
        ));
        let view = project(&log);
        let clipped: Vec<usize> = view
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Clipped { index, .. } => Some(*index),
                _ => None,
            })
            .collect();
        assert_eq!(clipped, vec![4, 6], "the long result and the long message");
        for item in view
            .items
            .iter()
            .filter(|i| matches!(i, Item::Clipped { .. }))
        {
            let text = item.clipped_text().unwrap();
            assert!(text.starts_with("0,1,2,") && text.ends_with("2998,2999,"));
            assert!(text.chars().count() < 1_200, "{}", text.len());
            assert!(text.contains("characters left out here"));
            let r = item_record(item).unwrap();
            assert!(
                matches!(&r.body, Body::ToolResult { content, .. } | Body::User { content, .. } if *content == text)
            );
        }
        // A strip of the same range wins over the clip, whatever the order.
        let mut strip = Compaction::new(0, 0, Source::Auto);
        strip.tool_calls = Some(ToolPolicy::Strip);
        log.push(Record::new(
            log.next_seq(),
            "t",
            Body::Compaction(Box::new(strip)),
        ));
        let view = project(&log);
        assert!(
            view.items
                .iter()
                .any(|i| matches!(i, Item::StrippedResult { index: 4, .. }))
        );
        assert!(
            view.items
                .iter()
                .any(|i| matches!(i, Item::Clipped { index: 6, .. }))
        );
    }

    #[test]
    fn per_tool_keep_wins_over_the_rule() {
        let mut bodies = turn(0, "body", false);
        let mut c = Compaction::new(0, 0, Source::User);
        c.tool_calls = Some(ToolPolicy::Omit);
        c.tool_overrides.insert("edit".into(), ToolOverride::Keep);
        bodies.push(compaction(c));
        let log = log_of(bodies);
        let view = project(&log);
        assert_eq!(
            view.items.len(),
            5,
            "user, reasoning, call, result, answer: all kept"
        );
        assert!(view.dropped.is_empty());
    }

    #[test]
    fn the_compaction_sets_how_many_diagnostics_a_stripped_result_keeps() {
        let errors: String = (0..20)
            .map(|k| format!("error[E0425]: cannot find value `v{k}` here\n --> src/a.rs:{k}:1\n"))
            .collect();
        let lines = |keep: Option<u32>| {
            let mut bodies = turn(0, "body", true);
            if let Body::ToolResult { content, .. } = &mut bodies[4] {
                *content = errors.clone();
            }
            let mut c = Compaction::new(0, 0, Source::User);
            c.tool_calls = Some(ToolPolicy::StripResponses);
            c.keep_diagnostics = keep;
            bodies.push(compaction(c));
            let log = log_of(bodies);
            let view = project(&log);
            view.items.iter().find_map(Item::stripped_line).unwrap()
        };
        // Baked into the record: 3 shown, the other 17 counted.
        let three = lines(Some(3));
        assert!(
            three.contains("`v2` here (src/a.rs:2:1); and 17 more]"),
            "{three}"
        );
        assert!(!three.contains("`v3`"), "{three}");
        // None: the default.
        let default = lines(None);
        assert!(
            default.ends_with(&format!("; and {} more]", 20 - KEEP_DIAGNOSTICS)),
            "{default}"
        );
    }

    #[test]
    fn a_loaded_log_reads_each_result_once() {
        use crate::digest::Digest;
        use crate::summarizer::{Summarizer, SummaryInput};
        let runs = || crate::diagnostics::RUNS.with(|r| r.get());
        // Four turns, each with a failed or successful result of 500
        // characters; the results of the first three are stripped.
        let mut bodies: Vec<Body> = (0..4).flat_map(|n| turn(n, "body", n % 2 == 0)).collect();
        let mut c = Compaction::new(0, 2, Source::Auto);
        c.tool_calls = Some(ToolPolicy::StripResponses);
        bodies.push(compaction(c));
        let log = log_of(bodies);
        let start = runs();
        let mut lines = Vec::new();
        for _ in 0..5 {
            let view = project(&log);
            assert!(crate::estimate::view_tokens(&view) > 0);
            let out = crate::materialize::materialize(&log, &view);
            lines.push(format!("{out:?}"));
            for item in &view.items {
                crate::anchor::item_texts(item);
            }
        }
        assert_eq!(runs() - start, 3, "each stripped result read once");
        assert!(lines.iter().all(|l| *l == lines[0]), "same view each time");
        // The retention report and the digest read the fourth, once.
        for _ in 0..3 {
            crate::kept::facts(&log, 0, log.len() - 1);
            Digest
                .summarize(SummaryInput {
                    log: &log,
                    range: (0, log.len() - 2),
                    instructions: None,
                })
                .unwrap();
        }
        assert_eq!(runs() - start, 4, "each result read once");
        // A copy of the log keeps what was found.
        let copy = log.clone();
        crate::estimate::view_tokens(&project(&copy));
        assert_eq!(runs() - start, 4);
        // The cached line is the line of the plain-string path.
        for item in &project(&log).items {
            if let Item::StrippedResult { record, tool, .. } = item
                && let Body::ToolResult {
                    content, is_error, ..
                } = &record.body
            {
                let hint = format!(
                    " was removed by compaction (recall {})",
                    item.handle().unwrap()
                );
                assert_eq!(
                    item.stripped_line(),
                    Some(stripped_result_line(tool, content, *is_error).replacen(
                        " was removed by compaction",
                        &hint,
                        1
                    ))
                );
            }
        }
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Log>();
        send_sync::<Record>();
        send_sync::<Body>();
        send_sync::<View<'static>>();
    }

    #[test]
    fn a_view_that_would_start_with_the_assistant_gets_a_preamble() {
        let log = log_of(vec![
            Body::System {
                content: "be brief".into(),
            },
            Body::Assistant {
                content: "hello".into(),
            },
            Body::User {
                content: "hi".into(),
                author: None,
            },
        ]);
        let view = project(&log);
        assert!(
            matches!(view.items[0], Item::Event { index: 0, .. }),
            "system first"
        );
        assert!(matches!(view.items[1], Item::Preamble));
        assert!(matches!(view.items[2], Item::Event { index: 1, .. }));
    }

    #[test]
    fn a_summary_between_a_call_and_its_result_takes_the_pair_out() {
        let call = |id: &str| Body::ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: json!({}).into(),
        };
        let result = |id: &str| Body::ToolResult {
            id: id.into(),
            content: "ok".into(),
            is_error: false,
        };
        let mut c = Compaction::new(0, 0, Source::User);
        c.from_seq = Some(2);
        c.to_seq = Some(3);
        c.summary = Some(Summary {
            text: "b was read".into(),
            provenance: crate::compaction::Provenance::Supplied {
                author: Source::User,
            },
        });
        let log = log_of(vec![
            Body::User {
                content: "go".into(),
                author: None,
            },
            call("a"),
            call("b"),
            result("b"),
            result("a"),
            compaction(c),
        ]);
        let view = project(&log);
        assert_eq!(view.items.len(), 2, "{:?}", view.items);
        assert!(matches!(view.items[1], Item::Summary { .. }));
        let unpaired: Vec<usize> = view
            .dropped
            .iter()
            .filter(|d| d.reason == DropReason::Unpaired)
            .map(|d| d.index)
            .collect();
        assert_eq!(unpaired, [1, 4]);
    }

    /// A view of a million events holds a million items: one more word in
    /// each is 8 MB more to write and read on every projection (the
    /// handles' tag and positions fit where the items had room).
    #[test]
    fn an_item_is_no_larger_than_before_handles() {
        assert!(std::mem::size_of::<Item<'static>>() <= 56);
    }

    #[test]
    fn summary_pair_names_its_turns() {
        let mut bodies = turn(0, "a", false);
        bodies.extend(turn(1, "b", false));
        bodies.extend(turn(2, "c", false));
        let mut c = Compaction::new(0, 1, Source::User);
        c.summary = Some(Summary {
            text: "we edited a and b".into(),
            provenance: crate::compaction::Provenance::Supplied {
                author: Source::User,
            },
        });
        bodies.push(compaction(c));
        let log = log_of(bodies);
        let view = project(&log);
        let Item::Summary { turns, text, .. } = view.items[0] else {
            panic!("{:?}", view.items[0])
        };
        assert_eq!((turns, text.as_str()), ((0, 1), "we edited a and b"));
        assert_eq!(
            summary_preamble(turns, None),
            "[The text that follows summarizes turns 1–2 of this conversation, which were compacted.]"
        );
        // In the view, the lead names the records it stands for.
        let tag = view.tag.unwrap();
        let lead = view.items[0].summary_lead().unwrap();
        let first = log.records()[view.items[0].origin().start().to_owned()].seq;
        let last = log.records()[view.items[0].origin().end().to_owned()].seq;
        assert!(
            lead.ends_with(&format!(
                "which were compacted; recall {tag}:{first}-{last} brings back their full text.]"
            )),
            "{lead}"
        );
        assert!(matches!(view.items[1], Item::Event { .. }));
    }

    /// A range ending on the `turn_start` of the turn it keeps (what
    /// automatic compaction records) names the turns its digest covers,
    /// not one more.
    #[test]
    fn a_summary_names_the_turns_the_model_saw_of_its_range() {
        let mut bodies = turn(0, "a", false);
        bodies.extend(turn(1, "b", false));
        let mut c = Compaction::new(0, 1, Source::Auto);
        c.from_seq = Some(0);
        c.to_seq = Some(6); // turn 1's turn_start
        c.summary = Some(Summary {
            text: "we edited a".into(),
            provenance: crate::compaction::Provenance::Supplied {
                author: Source::User,
            },
        });
        bodies.push(compaction(c));
        let log = log_of(bodies);
        let view = project(&log);
        let Item::Summary { turns, .. } = view.items[0] else {
            panic!("{:?}", view.items[0])
        };
        assert_eq!(turns, (0, 0));
        assert!(
            view.items[0]
                .summary_lead()
                .unwrap()
                .starts_with("[The text that follows summarizes turn 1 of this conversation"),
            "{:?}",
            view.items[0].summary_lead()
        );
    }
}
