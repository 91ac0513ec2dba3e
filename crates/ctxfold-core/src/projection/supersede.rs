//! Which compactions in force change the view: a second pass over the
//! records with the sweep's heaps, asking at each record the model sees
//! which compaction decides it and what the record would become without
//! that one (the next compaction down the same heap decides instead).
//!
//! A compaction that decides nothing anywhere is *superseded*: a later
//! summary over its range, or later policies of the same kind, decide every
//! record it acts on, and revoking it changes nothing until they are
//! revoked. One that decides some records but would leave them as they are
//! (a policy with nothing of its kind in its range, a policy or a summary
//! repeated over the same range) has *no effect*. Only the others are in
//! force in the sense the listings and the pages show: revoking one of
//! them changes what the model sees (a property test in
//! `tests/projection_props.rs` holds this against the projection).
//!
//! Cost: one pass, O(events × log compactions), and, for each compaction
//! that changes nothing, a walk over its own range to say what supersedes
//! it, a summary's run at a time where summaries decide (records one by
//! one only where none does), so summaries nested from the first record
//! cost each the runs under them, not their records (issue 48).

// foldhash: record indices and call ids, hashed for every record of a long
// log (SipHash was a tenth of a listing at a million events).
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use crate::compaction::{Compaction, ReasoningPolicy, ToolOverride};
use crate::handle::Tag;
use crate::log::Log;
use crate::record::{Body, Record};
use crate::text::more_chars_than;

use super::status::covered_indices;
use super::sweep::{Heap, KEEP_RESULT_CHARS, top};
use super::{Item, KEEP_DIAGNOSTICS};

/// What revoking a compaction in force would do to the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IfRevoked {
    /// It changes the view.
    Changes,
    /// It decides nothing: other compactions decide every record it acts
    /// on; `by` (a record index) decides the most of them, `more` others
    /// decide the rest.
    Superseded {
        /// The compaction record that decides the most of its records.
        by: usize,
        /// How many other compactions decide some of them.
        more: usize,
    },
    /// It decides records but leaves them as they would be without it.
    NoEffect,
}

/// Who decides a record the model sees (compaction record indices): the
/// summary over it, else the winning policy of its kind (reasoning, or the
/// tool policy of a call or result) and the winning clip.
/// One is kept for every record of the log: twelve bytes, not forty-eight
/// (a million records' worth is memory the standings touch).
#[derive(Debug, Clone, Copy, Default)]
struct Deciders {
    summary: Who,
    policy: Who,
    clip: Who,
}

/// A compaction record's index, or none, in four bytes. A log of four
/// billion records does not fit in memory, so every index does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Who(u32);

impl Default for Who {
    fn default() -> Who {
        Who(u32::MAX)
    }
}

impl Who {
    fn of(index: Option<usize>) -> Who {
        index
            .and_then(|i| u32::try_from(i).ok())
            .map_or(Who::default(), Who)
    }

    fn get(self) -> Option<usize> {
        (self.0 != u32::MAX).then_some(self.0 as usize)
    }
}

/// The winner covering `i` in `heap` and the one under it.
fn top2(heap: &mut Heap, i: usize) -> (Option<usize>, Option<usize>) {
    if top(heap, i).is_none() {
        return (None, None);
    }
    let Some(first) = heap.pop() else {
        return (None, None);
    };
    let second = top(heap, i);
    heap.push(first);
    (Some(first.0), second)
}

/// The tool policy compaction `order` gives tool `name` (as the sweep's
/// `tool_policy` reads it); `None` for no compaction: the call is kept.
fn tool_override(
    by_order: &HashMap<usize, &Compaction>,
    order: Option<usize>,
    name: &str,
) -> ToolOverride {
    let Some(c) = order.and_then(|o| by_order.get(&o)) else {
        return ToolOverride::Keep;
    };
    match c.tool_overrides.get(name) {
        Some(o) => *o,
        None => c.tool_calls.map_or(ToolOverride::Keep, ToolOverride::from),
    }
}

/// The winning tool policy for `name` at `i` and the one under it, over
/// the general heap and the tool's own.
fn tool_top2(
    i: usize,
    name: &str,
    tools_heap: &mut Heap,
    tool_heaps: &mut HashMap<&str, Heap>,
) -> (Option<usize>, Option<usize>) {
    let (g1, g2) = top2(tools_heap, i);
    let (s1, s2) = tool_heaps
        .get_mut(name)
        .map_or((None, None), |h| top2(h, i));
    let Some(first) = g1.max(s1) else {
        return (None, None);
    };
    let second = [g1, g2, s1, s2]
        .into_iter()
        .flatten()
        .filter(|&o| o != first)
        .max();
    (Some(first), second)
}

/// How a call shows under a policy: left out, stripped, or as it is.
fn call_shape(p: ToolOverride) -> u8 {
    match p {
        ToolOverride::Omit => 0,
        ToolOverride::Strip | ToolOverride::StripRequests => 1,
        ToolOverride::Keep | ToolOverride::StripResponses => 2,
    }
}

/// The text record `i` shows under clip compaction `order`: its head and
/// tail (a clip or an excerpt), or `None` when it shows as it is.
fn clipped(
    by_order: &HashMap<usize, &Compaction>,
    order: Option<usize>,
    (index, record, scan): (usize, &crate::record::Record, &crate::diagnostics::ScanCell),
    content: &str,
    tag: Tag,
) -> Option<String> {
    let c = by_order.get(&order?)?;
    let (keep_chars, over, excerpt) = match (c.excerpt_chars, c.clip_chars) {
        (Some(n), _) => (n as usize, n as usize, true),
        (None, Some(n)) => (n as usize, n as usize + 200, false),
        (None, None) => return None,
    };
    if !more_chars_than(content, over) {
        return None;
    }
    Item::Clipped {
        index,
        record,
        keep_chars,
        excerpt,
        scan,
        tag,
        at: 0,
    }
    .clipped_text()
}

/// What a tool result shows as, before it is made: its stripped line with
/// this many diagnostics, or its text under this clip compaction (`None`:
/// as it is).
#[derive(Clone, Copy)]
enum Shown {
    Line(usize),
    Clip(Option<usize>),
}

/// A call waiting for its result: the compaction whose policy changes how
/// the call shows, credited only if the call stays in the view (its
/// result comes outside any summary), and whether it is in the view.
struct Waiting<'a> {
    credit: Option<usize>,
    in_view: bool,
    name: &'a str,
    /// The call's record index.
    at: usize,
}

/// The tool of each call and result the model sees: its call's record
/// index (four bytes a record, where the name was sixteen).
struct Names<'a> {
    records: &'a [Record],
    call: Vec<Who>,
}

impl<'a> Names<'a> {
    /// The tool of record `i`, a call or a result with its call.
    fn of(&self, i: usize) -> Option<&'a str> {
        let call = self.call.get(i)?.get()?;
        match &self.records.get(call)?.body {
            Body::ToolCall { name, .. } => Some(name),
            _ => None,
        }
    }
}

/// What revoking each compaction of `active` (record indices, in force)
/// would do to the view of `log`.
pub(super) fn effects(log: &Log, active: &[usize]) -> HashMap<usize, IfRevoked> {
    effects_with(log, active, false)
}

/// [`effects`]; with `walk`, a superseded compaction's range read record
/// by record rather than a summary's run at a time (the reference the
/// tests hold the runs to).
fn effects_with(log: &Log, active: &[usize], walk: bool) -> HashMap<usize, IfRevoked> {
    effects_keeping(log, active, walk, false)
        .or_else(|| effects_keeping(log, active, walk, true))
        .unwrap_or_default()
}

/// [`effects_with`], the record-by-record deciders kept (`keep`, or where
/// a range lies wholly under others': see [`some_range_under_others`]);
/// `None` when a compaction changes nothing and they were not kept (the
/// caller then sweeps again, keeping them).
fn effects_keeping(
    log: &Log,
    active: &[usize],
    walk: bool,
    keep: bool,
) -> Option<HashMap<usize, IfRevoked>> {
    let records = log.records();
    let mut spans: Vec<(usize, usize, usize, &Compaction)> = active
        .iter()
        .filter_map(|&i| {
            let Body::Compaction(c) = &records.get(i)?.body else {
                return None;
            };
            let (lo, hi) = covered_indices(log, c)?;
            Some((lo, hi, i, c.as_ref()))
        })
        .collect();
    // Nothing in force, nothing superseded: and none of the per-record
    // vectors below (a hundred MB at a million records) is made.
    if spans.is_empty() {
        return Some(HashMap::new());
    }
    spans.sort_by_key(|s| s.0);
    // Who decides each record is read only to explain a compaction that
    // changes nothing (16 bytes a record): kept when one may, else the
    // sweep is made again in the rare case one does.
    let keep = keep || some_range_under_others(&spans);
    let per_record = |n: usize| if keep { n } else { 0 };
    let by_order: HashMap<usize, &Compaction> = spans.iter().map(|s| (s.2, s.3)).collect();
    // The turns each summary names (as the sweep's `span_turns`).
    let visible = |k: &usize| records[*k].body.is_model_visible();
    let turns_of: HashMap<usize, (u32, u32)> = spans
        .iter()
        .filter(|s| s.3.summary.is_some())
        .map(|&(lo, hi, order, _)| {
            let first = (lo..=hi).find(visible).unwrap_or(lo);
            let last = (lo..=hi).rev().find(visible).unwrap_or(hi);
            (order, (log.turn_of(first), log.turn_of(last)))
        })
        .collect();
    let mut unsure: HashSet<usize> = HashSet::new();

    let mut summary_heap = Heap::new();
    let mut reasoning_heap = Heap::new();
    let mut tools_heap = Heap::new();
    let mut clip_heap = Heap::new();
    let mut tool_heaps: HashMap<&str, Heap> = HashMap::new();
    // By record index: the compaction there changes the view (set at
    // nearly every record of a long log, so no hashing).
    let mut changes = Marks(vec![false; records.len()]);
    let mut deciders: Vec<Deciders> = vec![Deciders::default(); per_record(records.len())];
    let mut names = Names {
        records,
        call: vec![Who::default(); per_record(records.len())],
    };
    let mut call_names = CallNames { records, map: None };
    let mut waiting: HashMap<&str, Waiting<'_>> = HashMap::new();
    let tag = Tag::of(log).unwrap_or_default();
    let mut next_span = 0;

    for (i, (rec, scan)) in records.iter().zip(log.scans()).enumerate() {
        while next_span < spans.len() && spans[next_span].0 <= i {
            let (_, hi, order, c) = spans[next_span];
            let entry = (order, hi);
            if c.summary.is_some() {
                summary_heap.push(entry);
            }
            if c.reasoning.is_some() {
                reasoning_heap.push(entry);
            }
            if c.tool_calls.is_some() {
                tools_heap.push(entry);
            }
            if c.clip_chars.is_some() || c.excerpt_chars.is_some() {
                clip_heap.push(entry);
            }
            for name in c.tool_overrides.keys() {
                tool_heaps.entry(name.as_str()).or_default().push(entry);
            }
            next_span += 1;
        }
        if matches!(rec.body, Body::System { .. }) || !rec.body.is_model_visible() {
            continue;
        }
        // The tool of a call or result, whoever decides it (to say what
        // supersedes a tool policy).
        match &rec.body {
            Body::ToolCall { id, .. } if keep => {
                call_names.call(id, i);
                names.call[i] = Who::of(Some(i));
            }
            Body::ToolResult { id, .. } if keep => {
                names.call[i] = Who::of(match waiting.get(id.as_str()) {
                    Some(w) => Some(w.at),
                    None => call_names.of(i, id),
                })
            }
            _ => {}
        }
        let (s1, s2) = top2(&mut summary_heap, i);
        if let Some(s1) = s1 {
            if let Some(d) = deciders.get_mut(i) {
                d.summary = Who::of(Some(s1));
            }
            // Calls waiting for a result leave the view (or never were in
            // it) with or without whatever decided how they show; their
            // results then do too.
            waiting.clear();
            // The summary under it could stand for the record just as
            // well only with the same text over the same turns; whether it
            // does is settled at the end, by projecting without this one.
            let alike = s2.is_some_and(|s2| {
                turns_of.get(&s1) == turns_of.get(&s2)
                    && by_order[&s1].summary.as_ref().map(|s| &s.text)
                        == by_order[&s2].summary.as_ref().map(|s| &s.text)
            });
            if alike {
                unsure.insert(s1);
            } else {
                changes.insert(s1);
            }
            continue;
        }
        match &rec.body {
            Body::Reasoning { .. } => {
                let (r1, r2) = top2(&mut reasoning_heap, i);
                if let Some(d) = deciders.get_mut(i) {
                    d.policy = Who::of(r1);
                }
                let strips = |o: Option<usize>| {
                    o.and_then(|o| by_order[&o].reasoning) == Some(ReasoningPolicy::Strip)
                };
                if let Some(r1) = r1
                    && strips(Some(r1)) != strips(r2)
                {
                    changes.insert(r1);
                }
            }
            Body::ToolCall { id, name, .. } => {
                let (t1, t2) = tool_top2(i, name, &mut tools_heap, &mut tool_heaps);
                if let Some(d) = deciders.get_mut(i) {
                    d.policy = Who::of(t1);
                }
                let (p1, p2) = (
                    tool_override(&by_order, t1, name),
                    tool_override(&by_order, t2, name),
                );
                let credit = t1.filter(|_| call_shape(p1) != call_shape(p2));
                // A call with the same id before it leaves the view.
                waiting.insert(
                    id,
                    Waiting {
                        credit,
                        in_view: p1 != ToolOverride::Omit,
                        name,
                        at: i,
                    },
                );
            }
            Body::ToolResult { id, content, .. } => {
                let Some(w) = waiting.remove(id.as_str()) else {
                    continue;
                };
                if let Some(c) = w.credit {
                    changes.insert(c);
                }
                if !w.in_view {
                    continue;
                }
                let (t1, t2) = tool_top2(i, w.name, &mut tools_heap, &mut tool_heaps);
                let (c1, c2) = top2(&mut clip_heap, i);
                if let Some(d) = deciders.get_mut(i) {
                    *d = Deciders {
                        summary: Who::default(),
                        policy: Who::of(t1),
                        clip: Who::of(c1),
                    };
                }
                let long = more_chars_than(content, KEEP_RESULT_CHARS);
                let strips = |o: Option<usize>| {
                    long && matches!(
                        tool_override(&by_order, o, w.name),
                        ToolOverride::Strip | ToolOverride::StripResponses
                    )
                };
                let keep = |o: Option<usize>| {
                    o.and_then(|o| by_order[&o].keep_diagnostics)
                        .map_or(KEEP_DIAGNOSTICS, |n| n as usize)
                };
                // The tool's name copied only when two lines are made to
                // be compared (not for each result).
                let line = |keep_diagnostics| {
                    let tool = w.name.to_owned();
                    Item::StrippedResult {
                        index: i,
                        record: rec,
                        tool: &tool,
                        scan,
                        keep_diagnostics,
                        tag,
                        at: 0,
                    }
                    .stripped_line()
                };
                let clip = |c| clipped(&by_order, c, (i, rec, scan), content, tag);
                // What the result becomes: its line (made with this many
                // diagnostics), or its text clipped by this compaction.
                // Compared without being made where the answer is plain:
                // a line is never the text, nor two lines made alike
                // different.
                let shown = |t, c| {
                    if strips(t) {
                        Shown::Line(keep(t))
                    } else {
                        Shown::Clip(c)
                    }
                };
                let same = |a: Shown, b: Shown| match (a, b) {
                    (Shown::Line(x), Shown::Line(y)) => x == y || line(x) == line(y),
                    (Shown::Clip(x), Shown::Clip(y)) => x == y || clip(x) == clip(y),
                    _ => false,
                };
                let now = shown(t1, c1);
                for x in [t1, c1].into_iter().flatten() {
                    let t = if t1 == Some(x) { t2 } else { t1 };
                    let c = if c1 == Some(x) { c2 } else { c1 };
                    if !same(shown(t, c), now) {
                        changes.insert(x);
                    }
                }
            }
            Body::User { content, .. } => {
                let (c1, c2) = top2(&mut clip_heap, i);
                if let Some(d) = deciders.get_mut(i) {
                    d.clip = Who::of(c1);
                }
                let clip = |c| clipped(&by_order, c, (i, rec, scan), content, tag);
                if let Some(c1) = c1
                    && clip(Some(c1)) != clip(c2)
                {
                    changes.insert(c1);
                }
            }
            _ => {}
        }
    }

    // Made only for a compaction that changes nothing (a pass and 20 bytes
    // a record): where every one in force changes the view, never.
    let runs = std::cell::OnceCell::new();
    spans
        .iter()
        .map(|&(lo, hi, order, c)| {
            let effect = if changes.contains(order)
                || (unsure.contains(&order) && changes_when_revoked(log, order))
            {
                IfRevoked::Changes
            } else if !keep {
                return None;
            } else {
                let runs = runs.get_or_init(|| Runs::new(records, &deciders, &names));
                unchanged(log, (lo, hi), order, c, (&deciders, &names), (runs, walk))
            };
            Some((order, effect))
        })
        .collect()
}

/// Whether some of `spans` (record ranges, sorted by their start) lies
/// wholly under the others: no record of it is covered by it alone. Only
/// such a compaction can be superseded; one with a record of its own
/// changes the view there unless it acts on nothing there (no effect,
/// rare), which the sweep finds out too.
fn some_range_under_others(spans: &[(usize, usize, usize, &Compaction)]) -> bool {
    if spans.len() < 2 {
        return false;
    }
    // The ranges' ends cut the records into pieces, each covered by the
    // same ranges throughout; a range lies under others when it has no
    // piece that it alone covers.
    let mut cuts: Vec<usize> = spans.iter().flat_map(|s| [s.0, s.1 + 1]).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let at = |x: usize| cuts.partition_point(|&c| c < x);
    let mut depth = vec![0isize; cuts.len()];
    for s in spans {
        depth[at(s.0)] += 1;
        depth[at(s.1 + 1)] -= 1;
    }
    // alone[k]: the pieces before cut `k` that one range alone covers.
    let mut alone = vec![0usize; cuts.len()];
    let mut d = 0;
    for k in 0..cuts.len().saturating_sub(1) {
        d += depth[k];
        alone[k + 1] = alone[k] + usize::from(d == 1);
    }
    spans.iter().any(|s| alone[at(s.1 + 1)] == alone[at(s.0)])
}

/// The last call before with each id (its record index), for a result's
/// tool.
///
/// A result's call is nearly always still waiting for it (`waiting` holds
/// the same name: a summary that takes a call out of the view empties it),
/// so the map of every call, a few hundred thousand entries at a million
/// records (7% of the listing), is made only at the first result whose
/// call is not waiting, from the records before it: then it answers as
/// one kept from the first record would.
struct CallNames<'a> {
    records: &'a [Record],
    map: Option<HashMap<&'a str, usize>>,
}

impl<'a> CallNames<'a> {
    /// A call the model sees, at the record the sweep is at.
    fn call(&mut self, id: &'a str, at: usize) {
        if let Some(map) = &mut self.map {
            map.insert(id, at);
        }
    }

    /// The call `id`, asked at record `i`.
    fn of(&mut self, i: usize, id: &str) -> Option<usize> {
        let records = self.records;
        let map = self.map.get_or_insert_with(|| {
            (records[..i].iter().enumerate())
                .filter(|(_, r)| r.body.is_model_visible())
                .filter_map(|(at, r)| match &r.body {
                    Body::ToolCall { id, .. } => Some((id.as_str(), at)),
                    _ => None,
                })
                .collect()
        });
        map.get(id).copied()
    }
}

/// Record indices marked, as a set: [`Marks::insert`] and
/// [`Marks::contains`].
struct Marks(Vec<bool>);

impl Marks {
    fn insert(&mut self, i: usize) {
        if let Some(m) = self.0.get_mut(i) {
            *m = true;
        }
    }

    fn contains(&self, i: usize) -> bool {
        self.0.get(i).copied().unwrap_or(false)
    }
}

/// Whether revoking the compaction at record `order` changes what the
/// model is sent, found by projecting the log with it revoked: for the
/// rare summary whose twin (the same text over the same turns) lies
/// under it.
fn changes_when_revoked(log: &Log, order: usize) -> bool {
    let mut without = log.clone();
    without.push(crate::record::Record::new(
        log.next_seq(),
        "",
        Body::CompactionReset(Box::new(crate::compaction::CompactionReset {
            targets: crate::compaction::ResetTargets::Some(vec![log.records()[order].seq]),
            restore: false,
            extra: crate::record::Object::new(),
        })),
    ));
    let now = crate::materialize::materialize(log, &super::project(log));
    now != crate::materialize::materialize(&without, &super::project(&without))
}

/// The records under one summary, run by run, and what kinds of record
/// lie before each index: so a compaction's range under summaries is read
/// a run at a time. With summaries nested from the first record, each
/// superseded one's range was read record by record: the square of the
/// conversation.
struct Runs {
    /// Where each run starts, and the summary deciding its records
    /// (`None`: none does, each record read on its own). The records the
    /// pass leaves out (not sent, the system prompt) belong to the run
    /// around them and count in no kind.
    starts: Vec<(usize, Option<usize>)>,
    /// Before index `i`: the records the pass reads, reasoning, tool
    /// calls and results of a named tool, user messages and results, and
    /// results of a named tool.
    before: Vec<[u32; 5]>,
}

impl Runs {
    fn new(records: &[crate::record::Record], deciders: &[Deciders], names: &Names<'_>) -> Runs {
        let mut starts: Vec<(usize, Option<usize>)> = Vec::new();
        let mut before = Vec::with_capacity(records.len() + 1);
        let mut n = [0u32; 5];
        before.push(n);
        for (i, rec) in records.iter().enumerate() {
            if !matches!(rec.body, Body::System { .. }) && rec.body.is_model_visible() {
                let key = deciders[i].summary.get();
                if starts.last().is_none_or(|&(_, k)| k != key) {
                    starts.push((i, key));
                }
                let result = matches!(rec.body, Body::ToolResult { .. });
                let named = names.call[i].get().is_some();
                n[0] += 1;
                n[1] += u32::from(matches!(rec.body, Body::Reasoning { .. }));
                n[2] += u32::from(named);
                n[3] += u32::from(matches!(rec.body, Body::User { .. }) || result);
                n[4] += u32::from(named && result);
            }
            before.push(n);
        }
        Runs { starts, before }
    }
}

/// Why compaction `order` (over records `lo..=hi`) changes nothing: the
/// compactions that decide the records it acts on, or, when it decides
/// some itself, no effect.
fn unchanged(
    log: &Log,
    (lo, hi): (usize, usize),
    order: usize,
    c: &Compaction,
    (deciders, names): (&[Deciders], &Names<'_>),
    (runs, walk): (&Runs, bool),
) -> IfRevoked {
    let clips = c.clip_chars.is_some() || c.excerpt_chars.is_some();
    let mut count: HashMap<usize, usize> = HashMap::new();
    let mut decides_some = false;
    // Who decides each record it acts on, read one record at a time.
    let read = |i: usize, count: &mut HashMap<usize, usize>, decides_some: &mut bool| {
        let rec = &log.records()[i];
        let d = deciders[i];
        let on_tool = names
            .of(i)
            .is_some_and(|n| c.tool_calls.is_some() || c.tool_overrides.contains_key(n));
        let acts = c.summary.is_some()
            || (matches!(rec.body, Body::Reasoning { .. }) && c.reasoning.is_some())
            || on_tool
            || (matches!(rec.body, Body::User { .. } | Body::ToolResult { .. }) && clips);
        if !acts {
            return;
        }
        let who: Vec<usize> = match d.summary.get() {
            Some(s) => vec![s],
            None => {
                let mut v = Vec::new();
                if (on_tool || matches!(rec.body, Body::Reasoning { .. }))
                    && let Some(p) = d.policy.get()
                {
                    v.push(p);
                }
                if clips && let Some(k) = d.clip.get() {
                    v.push(k);
                }
                v
            }
        };
        for w in who {
            if w == order {
                *decides_some = true;
            } else {
                *count.entry(w).or_default() += 1;
            }
        }
    };
    // Under a summary a record counts for it when this compaction acts on
    // it, which its kind says, unless a tool's own policy needs its name.
    let by_kind =
        !walk && (c.summary.is_some() || c.tool_calls.is_some() || c.tool_overrides.is_empty());
    if !by_kind {
        for i in lo..=hi {
            read(i, &mut count, &mut decides_some);
        }
    } else {
        let first = runs.starts.partition_point(|r| r.0 <= lo).saturating_sub(1);
        for (k, &(start, key)) in runs.starts.iter().enumerate().skip(first) {
            if start > hi {
                break;
            }
            let end = runs.starts.get(k + 1).map_or(log.len(), |r| r.0);
            let (a, b) = (start.max(lo), end.min(hi + 1));
            if a >= b {
                continue;
            }
            let Some(s) = key else {
                for i in a..b {
                    read(i, &mut count, &mut decides_some);
                }
                continue;
            };
            let kind = |j: usize| (runs.before[b][j] - runs.before[a][j]) as usize;
            let acted = if c.summary.is_some() {
                kind(0)
            } else {
                // A result of a named tool is both a tool's record and a
                // clip's: counted once.
                let (tools, clipped) = (c.tool_calls.is_some(), clips);
                usize::from(c.reasoning.is_some()) * kind(1)
                    + usize::from(tools) * kind(2)
                    + usize::from(clipped) * kind(3)
                    - usize::from(tools && clipped) * kind(4)
            };
            if acted == 0 {
                continue;
            }
            if s == order {
                decides_some = true;
            } else {
                *count.entry(s).or_default() += acted;
            }
        }
    }
    if decides_some {
        return IfRevoked::NoEffect;
    }
    // The one deciding the most; the latest among equals.
    match count.iter().max_by_key(|&(&o, &n)| (n, o)) {
        Some((&by, _)) => IfRevoked::Superseded {
            by,
            more: count.len() - 1,
        },
        None => IfRevoked::NoEffect,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::{Provenance, Source, Summary, ToolPolicy};
    use crate::projection::fixtures::{compaction, log_of, turn};
    use crate::projection::status::compaction_status;

    /// A result whose call one summary took and which another summary
    /// stands for is still its call's tool's: a policy for that tool over
    /// it is superseded by the summary over it (not of no effect, as for
    /// a record no policy of its tool acts on). No call waits for the
    /// result (the first summary took it), so the tool is found from the
    /// records before.
    #[test]
    fn a_result_whose_call_a_summary_took_is_still_its_tools() {
        let mut bodies = turn(0, "a", false);
        bodies.extend(turn(1, "b", false));
        bodies.extend(turn(2, "c", false));
        let summary = |from, to| {
            let mut c = Compaction::new(0, 0, Source::User);
            (c.from_seq, c.to_seq) = (Some(from), Some(to));
            c.summary = Some(Summary {
                text: format!("records {from} to {to}"),
                provenance: Provenance::Supplied {
                    author: Source::User,
                },
            });
            c
        };
        // Turn 0's call is record 3, its result record 4.
        let mut policy = Compaction::new(0, 0, Source::User);
        (policy.from_seq, policy.to_seq) = (Some(4), Some(4));
        policy
            .tool_overrides
            .insert("edit".into(), ToolOverride::Strip);
        bodies.push(compaction(summary(0, 3)));
        bodies.push(compaction(summary(4, 5)));
        bodies.push(compaction(policy));
        let log = log_of(bodies);
        let (first, second, policy) = (18, 19, 20);
        let (active, _) = compaction_status(&log);
        assert_eq!(active, [first, second, policy]);
        let effects = effects(&log, &active);
        assert_eq!(
            effects[&policy],
            IfRevoked::Superseded {
                by: second,
                more: 0
            },
            "{effects:?}"
        );
        assert_eq!(effects, effects_with(&log, &active, true));
    }

    /// Reading a superseded compaction's range a summary's run at a time
    /// says what reading it record by record says, on logs whose
    /// compactions nest, overlap and repeat, of every kind.
    #[test]
    fn runs_say_what_the_records_say() {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |m: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % m
        };
        let (mut superseded, mut swept_again) = (0, 0);
        for _ in 0..300 {
            let turns = 2 + next(12) as u32;
            let mut bodies: Vec<Body> = (0..turns)
                .flat_map(|n| turn(n, &"output ".repeat(1 + next(60) as usize), next(4) == 0))
                .collect();
            for _ in 0..1 + next(8) {
                let a = next(u64::from(turns)) as u32;
                let b = next(u64::from(turns)) as u32;
                let from = if next(3) == 0 { 0 } else { a.min(b) };
                let mut c = Compaction::new(from, a.max(b), Source::User);
                match next(7) {
                    0 | 1 => {
                        c.summary = Some(Summary {
                            text: format!("summary {}", next(3)),
                            provenance: Provenance::Supplied {
                                author: Source::User,
                            },
                        })
                    }
                    2 => c.reasoning = Some(crate::compaction::ReasoningPolicy::Strip),
                    3 => c.tool_calls = Some(ToolPolicy::StripResponses),
                    4 => c.tool_calls = Some(ToolPolicy::Strip),
                    5 => {
                        c.clip_chars = Some(10 + next(40) as u32);
                        if next(2) == 0 {
                            c.tool_calls = Some(ToolPolicy::StripResponses);
                        }
                    }
                    _ => {
                        c.tool_overrides
                            .insert("read_file".into(), crate::compaction::ToolOverride::Omit);
                    }
                }
                if next(2) == 0 {
                    c.reasoning = Some(crate::compaction::ReasoningPolicy::Strip);
                }
                bodies.push(compaction(c));
            }
            let log = log_of(bodies);
            let (active, _) = compaction_status(&log);
            let by_runs = effects(&log, &active);
            assert_eq!(by_runs, effects_with(&log, &active, true));
            // The deciders kept from the start: the same (without them the
            // sweep is made again where one changes nothing).
            let kept = effects_keeping(&log, &active, false, true);
            assert_eq!(Some(&by_runs), kept.as_ref());
            let once = effects_keeping(&log, &active, false, false);
            swept_again += usize::from(once.is_none());
            assert!(once.is_none_or(|once| once == by_runs));
            superseded += by_runs
                .values()
                .filter(|e| matches!(e, IfRevoked::Superseded { .. }))
                .count();
        }
        assert!(superseded > 50, "only {superseded} superseded compactions");
        assert!(swept_again > 0, "no log swept again");
    }

    #[test]
    fn a_range_lies_under_others_when_no_record_of_it_is_its_alone() {
        let c = Compaction::new(0, 0, Source::User);
        let under = |ranges: &[(usize, usize)]| {
            let mut spans: Vec<_> = (ranges.iter().enumerate())
                .map(|(k, &(lo, hi))| (lo, hi, k, &c))
                .collect();
            spans.sort_by_key(|s| s.0);
            some_range_under_others(&spans)
        };
        // Side by side, overlapping by a few records, one alone.
        assert!(!under(&[(0, 9), (10, 19)]));
        assert!(!under(&[(0, 14), (10, 24), (20, 34)]));
        assert!(!under(&[(3, 3)]));
        // Nested, the same twice, or covered by two that overlap.
        assert!(under(&[(0, 9), (0, 19)]));
        assert!(under(&[(2, 5), (0, 19)]));
        assert!(under(&[(4, 8), (4, 8)]));
        assert!(under(&[(0, 10), (5, 15), (11, 20)]));
        // Touching the next one's start is not under it.
        assert!(!under(&[(0, 10), (5, 15), (12, 20)]));
    }
}
