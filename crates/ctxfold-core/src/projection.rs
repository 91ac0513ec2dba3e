//! The projection: `project(log) -> View`, the model's view of a log with
//! every active compaction applied (SPEC §4).
//!
//! It is a pure function of the log. For each model-visible event and each
//! content kind (reasoning, tool calls, summary) the winning compaction is
//! the latest-appended active one whose range covers the event and that has
//! an opinion on that kind. Summaries beat mechanical policies. Tool calls
//! and their results are decided together, at the call.
//!
//! Cost: one pass over the records with a sweep line. Compactions enter a
//! max-heap (by append order) when the pass reaches their first record and
//! are dropped lazily once it passes their last, so the cost is
//! O(events + compactions × log compactions), with no scan of all
//! compactions per event. The view borrows records from the log; stripped
//! arguments and one-line results are computed only when rendered, a
//! one-line result from what the log found in the result the first time
//! (see [`crate::diagnostics::ScanCell`]): rendering it again does not read
//! the result again.

use std::collections::{BinaryHeap, HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::compaction::{Compaction, ReasoningPolicy, ToolOverride, revoked_seqs};
use crate::diagnostics::{Diagnostic, ScanCell, first_of, printed_outcome, result_diagnostics};
use crate::json_text::JsonText;
use crate::log::Log;
use crate::record::{Body, Record};

/// Argument strings up to this many characters survive `strip-requests`:
/// paths, flags, short queries.
pub const KEEP_ARGUMENT_CHARS: usize = 120;

/// The model's view of a log.
#[derive(Debug)]
pub struct View<'a> {
    /// What the model sees, in order.
    pub items: Vec<Item<'a>>,
    /// Model-visible events that are not in the view, and why.
    pub dropped: Vec<Dropped>,
    /// The compactions in force, by index of their record in the log.
    pub active: Vec<usize>,
    /// Compactions present but not in force, and why.
    pub inactive: Vec<(usize, Inactive)>,
}

/// Why a compaction is not in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Inactive {
    /// A `compaction_reset` revoked it.
    Revoked,
    /// Its `deferred_until_turn` has not been reached.
    Deferred,
    /// Its range lies outside the log.
    OutOfBounds,
}

/// One element of the view.
#[derive(Debug, Clone, Copy)]
pub enum Item<'a> {
    /// A raw event, unchanged.
    Event {
        /// Index of the record in the log.
        index: usize,
        /// The record.
        record: &'a Record,
    },
    /// A tool call whose long argument values are replaced by placeholders
    /// (see [`strip_arguments`]).
    StrippedCall {
        /// Index of the record in the log.
        index: usize,
        /// The call.
        record: &'a Record,
    },
    /// A tool result replaced by one line (see [`stripped_result_line`]).
    StrippedResult {
        /// Index of the record in the log.
        index: usize,
        /// The result.
        record: &'a Record,
        /// The tool's name, from its call.
        tool: &'a str,
        /// The log's cache of what the recognizer found in `record` (see
        /// [`Item::stripped_line`]).
        scan: &'a ScanCell,
        /// At most this many diagnostics shown (the compaction's
        /// `keep_diagnostics`, else [`KEEP_DIAGNOSTICS`]).
        keep_diagnostics: usize,
    },
    /// A tool result or user message longer than its compaction's
    /// `clip_chars`, shown as its head and tail with a note (see
    /// [`clip_text`]).
    Clipped {
        /// Index of the record in the log.
        index: usize,
        /// The record.
        record: &'a Record,
        /// The compaction's `clip_chars`.
        keep_chars: usize,
    },
    /// A summary standing for a run of events: rendered as a user message
    /// naming the turns, then an assistant message with the text.
    Summary {
        /// Index of the first event it stands for.
        first: usize,
        /// Index of the last event it stands for.
        last: usize,
        /// First and last turn (0-based) the summary covers: the whole range
        /// of its compaction, also when a nested summary splits it.
        turns: (u32, u32),
        /// Index of the compaction record that holds the text.
        compaction: usize,
        /// The summary text.
        text: &'a str,
    },
    /// A user message put first because the view would otherwise start with
    /// the assistant. Stands for no event.
    Preamble,
}

/// A model-visible event left out of the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// Index of the record in the log.
    pub index: usize,
    /// Why.
    pub reason: DropReason,
}

/// Why an event was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum DropReason {
    /// `reasoning = strip` of the compaction at this index.
    ReasoningStripped {
        /// Index of the compaction record.
        compaction: usize,
    },
    /// `omit` of the compaction at this index (call and result together).
    Omitted {
        /// Index of the compaction record.
        compaction: usize,
    },
    /// A call without its result or a result without its call (in the raw
    /// log, or because its partner was folded away).
    Unpaired,
}

/// The user message that introduces a summary.
pub fn summary_preamble(turns: (u32, u32)) -> String {
    if turns.0 == turns.1 {
        format!(
            "[The text that follows summarizes turn {} of this conversation, which was compacted.]",
            turns.0 + 1
        )
    } else {
        format!(
            "[The text that follows summarizes turns {}–{} of this conversation, which were compacted.]",
            turns.0 + 1,
            turns.1 + 1
        )
    }
}

/// The user message put first when the view would start with the assistant.
pub const PREAMBLE: &str = "[The conversation continues.]";

impl Item<'_> {
    /// The indices of the raw events this item stands for.
    pub fn origin(&self) -> std::ops::RangeInclusive<usize> {
        match *self {
            Item::Event { index, .. }
            | Item::StrippedCall { index, .. }
            | Item::StrippedResult { index, .. }
            | Item::Clipped { index, .. } => index..=index,
            Item::Summary { first, last, .. } => first..=last,
            #[allow(clippy::reversed_empty_ranges)]
            Item::Preamble => 1..=0,
        }
    }

    /// The one line a stripped result shows ([`stripped_result_line`]),
    /// made from what the log found in the result: the result is read once
    /// per loaded log, however often its view is rendered or counted.
    /// `None` for any other item.
    pub fn stripped_line(&self) -> Option<String> {
        let Item::StrippedResult {
            record,
            tool,
            scan,
            keep_diagnostics,
            ..
        } = *self
        else {
            return None;
        };
        let Body::ToolResult {
            content, is_error, ..
        } = &record.body
        else {
            return None;
        };
        let found = scan.get_or_scan(content, *is_error);
        Some(render_stripped(
            tool,
            *is_error,
            found.chars,
            &found.diagnostics,
            keep_diagnostics,
        ))
    }
}

impl Item<'_> {
    /// The text a clipped item shows ([`clip_text`]); `None` for any other
    /// item.
    pub fn clipped_text(&self) -> Option<String> {
        let Item::Clipped {
            record, keep_chars, ..
        } = *self
        else {
            return None;
        };
        match &record.body {
            Body::ToolResult { content, .. } | Body::User { content, .. } => {
                Some(clip_text(content, keep_chars))
            }
            _ => None,
        }
    }
}

/// `text` cut to about `keep` characters: its first two thirds and its
/// last third, with a note between them naming how much was left out and
/// that the log keeps it. Text no longer than `keep` comes back whole.
pub fn clip_text(text: &str, keep: usize) -> String {
    let total = text.chars().count();
    if total <= keep {
        return text.to_owned();
    }
    let head = keep * 2 / 3;
    let tail = keep - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(total - tail).collect();
    format!(
        "{start}\n[… {} of {total} characters left out here by compaction to fit the context window; the log keeps them whole …]\n{end}",
        total - head - tail
    )
}

/// Replace every string longer than [`KEEP_ARGUMENT_CHARS`] in `args` with a
/// placeholder that says how much was removed. Arguments with no such
/// string come back as they were, text included.
pub fn strip_arguments(args: &JsonText) -> JsonText {
    // A string is never longer in characters than the text holding it:
    // short arguments need no parsing.
    if args.text().len() <= KEEP_ARGUMENT_CHARS {
        return args.clone();
    }
    let value = args.value();
    let stripped = strip_value(&value);
    if stripped == value {
        args.clone()
    } else {
        JsonText::from(stripped)
    }
}

fn strip_value(args: &Value) -> Value {
    match args {
        Value::String(s) => {
            let n = s.chars().count();
            if n > KEEP_ARGUMENT_CHARS {
                Value::String(format!("[{n} characters removed by compaction]"))
            } else {
                args.clone()
            }
        }
        Value::Array(a) => Value::Array(a.iter().map(strip_value).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), strip_value(v))).collect())
        }
        other => other.clone(),
    }
}

/// Diagnostics a stripped result keeps at most (see
/// [`stripped_result_line`]); the rest are counted ("and N more"). Enough
/// for a failing build's distinct errors, most severe first, in about a
/// tenth of what such output usually is.
pub const KEEP_DIAGNOSTICS: usize = 16;

/// The one line that replaces a stripped tool result: the tool, its
/// outcome, the size removed, and what it reported that an agent needs to
/// carry on: its distinct diagnostics with their location (see
/// [`crate::diagnostics`]), most severe first, up to [`KEEP_DIAGNOSTICS`],
/// then how many more there were.
///
/// The outcome is what the output says: `failed` for a result flagged an
/// error; for one flagged a success whose output holds a failing test, a
/// panic or an error, what it printed (`[cargo_test: 1 test failed; …`,
/// see [`printed_outcome`]); else `succeeded`.
///
/// This reads all of `content`; a view item has the same line without that
/// ([`Item::stripped_line`]).
pub fn stripped_result_line(tool: &str, content: &str, is_error: bool) -> String {
    render_stripped(
        tool,
        is_error,
        content.chars().count(),
        &result_diagnostics(content, is_error),
        KEEP_DIAGNOSTICS,
    )
}

/// The line of [`stripped_result_line`] from the result's size in
/// characters and its diagnostics, showing at most `budget` of them: one
/// place says what it holds, whether the diagnostics were just found or
/// kept from before.
fn render_stripped(
    tool: &str,
    is_error: bool,
    chars: usize,
    found: &[Diagnostic],
    budget: usize,
) -> String {
    let mut line = match (is_error, printed_outcome(found)) {
        (true, _) => format!("[{tool} failed"),
        (false, Some(said)) => format!("[{tool}: {said}"),
        (false, None) => format!("[{tool} succeeded"),
    };
    line.push_str(&format!(
        "; its output ({chars} characters) was removed by compaction"
    ));
    let shown: Vec<&Diagnostic> = first_of(found, budget).collect();
    // The same message at several places (one unresolved import in four
    // files) is said once with all its locations: each location is a
    // distinct diagnostic, the message need not be repeated.
    let mut groups: Vec<(&Diagnostic, Vec<&str>)> = Vec::new();
    for d in &shown {
        let merge = d
            .location
            .as_deref()
            .filter(|loc| !d.line.contains(loc))
            .and_then(|loc| {
                groups
                    .iter_mut()
                    .find(|(g, locs)| g.line == d.line && !locs.is_empty())
                    .map(|(_, locs)| (loc, locs))
            });
        match merge {
            Some((loc, locs)) => locs.push(loc),
            None => {
                let locs = match d.location.as_deref() {
                    Some(loc) if d.text.ends_with(&format!("({loc})")) => vec![loc],
                    _ => Vec::new(),
                };
                groups.push((d, locs));
            }
        }
    }
    for (k, (d, locs)) in groups.iter().enumerate() {
        line.push_str(if k == 0 {
            ". Diagnostics in it: "
        } else {
            "; "
        });
        if locs.len() > 1 {
            line.push_str(&format!("{} ({})", d.line, locs.join(", ")));
        } else {
            line.push_str(&d.text);
        }
    }
    let more = found.len() - shown.len();
    if more > 0 {
        line.push_str(&format!("; and {more} more"));
    }
    line.push(']');
    line
}

/// Whether `s` holds more than `n` characters, reading at most `n + 1` of
/// them (a result's length is asked on every projection).
fn more_chars_than(s: &str, n: usize) -> bool {
    s.len() > n && s.chars().nth(n).is_some()
}

/// A compaction in force, resolved to record indices.
struct Span<'a> {
    /// Append order: the compaction record's index (later wins).
    order: usize,
    lo: usize,
    hi: usize,
    c: &'a Compaction,
}

/// Max-heap entries: (append order, last covered index).
type Heap = BinaryHeap<(usize, usize)>;

/// The winner covering `i` in `heap`, dropping expired entries on top.
fn top(heap: &mut Heap, i: usize) -> Option<usize> {
    while let Some(&(order, hi)) = heap.peek() {
        if hi >= i {
            return Some(order);
        }
        heap.pop();
    }
    None
}

/// The first index whose record has `seq >= seq`.
fn index_of_seq(records: &[Record], seq: u64) -> usize {
    records.partition_point(|r| r.seq < seq)
}

/// The inclusive index range a compaction covers, if any.
pub fn covered_indices(log: &Log, c: &Compaction) -> Option<(usize, usize)> {
    let records = log.records();
    let lo = match c.from_seq {
        Some(s) => index_of_seq(records, s),
        None => log.turn_range(c.from_turn)?.start,
    };
    let hi = match c.to_seq {
        Some(s) => index_of_seq(records, s.saturating_add(1)).checked_sub(1)?,
        None => {
            let last = (log.turn_count() as u32).checked_sub(1)?;
            log.turn_range(c.to_turn.min(last))?.end.checked_sub(1)?
        }
    };
    (lo <= hi && lo < records.len()).then_some((lo, hi))
}

/// Which compaction records are in force, and which are not and why.
pub fn compaction_status(log: &Log) -> (Vec<usize>, Vec<(usize, Inactive)>) {
    compaction_status_as_of(log, highest_turn(log))
}

/// The log's highest turn index (0 for a log without turns).
fn highest_turn(log: &Log) -> u32 {
    (log.turn_count() as u32).saturating_sub(1)
}

/// [`compaction_status`] as it will be once the log's highest turn index
/// reaches `turn`: deferred compactions due by then count as in force.
pub fn compaction_status_as_of(log: &Log, turn: u32) -> (Vec<usize>, Vec<(usize, Inactive)>) {
    let records = log.records();
    let revoked = revoked_seqs(records);
    let highest_turn = turn;
    let mut active = Vec::new();
    let mut inactive = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let Body::Compaction(c) = &r.body else {
            continue;
        };
        if revoked.contains(&r.seq) {
            inactive.push((i, Inactive::Revoked));
        } else if c.deferred_until_turn.is_some_and(|t| highest_turn < t) {
            inactive.push((i, Inactive::Deferred));
        } else if covered_indices(log, c).is_none() {
            inactive.push((i, Inactive::OutOfBounds));
        } else {
            active.push(i);
        }
    }
    (active, inactive)
}

/// What the pass decided for a pending tool call, until its result comes.
struct Pending {
    /// Position of the call's item in `items`, if it is in the view.
    item: Option<usize>,
    name_index: usize,
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

/// A call replaced in `pending` by a later call with the same id never gets
/// its result: take it out of the view.
/// The record as it is, or clipped when the latest compaction over it
/// with a `clip_chars` says it is too long.
fn clipped_or_kept<'a>(
    i: usize,
    rec: &'a Record,
    content: &str,
    clip_heap: &mut Heap,
    by_order: &HashMap<usize, &Compaction>,
) -> Item<'a> {
    if let Some(order) = top(clip_heap, i)
        && let Some(keep) = by_order[&order].clip_chars
        && more_chars_than(content, keep as usize + 200)
    {
        return Item::Clipped {
            index: i,
            record: rec,
            keep_chars: keep as usize,
        };
    }
    Item::Event {
        index: i,
        record: rec,
    }
}

fn unpair(
    earlier: Option<Pending>,
    items: &[Item<'_>],
    removed: &mut [bool],
    dropped: &mut Vec<Dropped>,
) {
    if let Some(Pending {
        item: Some(item), ..
    }) = earlier
    {
        removed[item] = true;
        dropped.push(Dropped {
            index: *items[item].origin().start(),
            reason: DropReason::Unpaired,
        });
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
    let records = log.records();
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
    // when a newer summary nested inside splits it in two.
    let span_turns: HashMap<usize, (u32, u32)> = spans
        .iter()
        .map(|s| (s.order, (log.turn_of(s.lo), log.turn_of(s.hi))))
        .collect();

    let mut summary_heap = Heap::new();
    let mut reasoning_heap = Heap::new();
    let mut tools_heap = Heap::new();
    let mut clip_heap = Heap::new();
    // Compactions with a per-tool override, by tool name.
    let mut tool_heaps: HashMap<&str, Heap> = HashMap::new();

    let mut items: Vec<Item<'_>> = Vec::with_capacity(records.len());
    let mut dropped = Vec::new();
    let mut removed: Vec<bool> = Vec::new(); // tombstones for items
    let mut pending: HashMap<&str, Pending> = HashMap::new();
    let mut tool_names: Vec<&str> = Vec::new();
    let mut next_span = 0;
    // The summary whose run is open, and the item index of its Summary.
    let mut open_summary: Option<(usize, usize)> = None;

    for (i, (rec, scan)) in records.iter().zip(log.scans()).enumerate() {
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
            if s.c.clip_chars.is_some() {
                clip_heap.push(entry);
            }
            for name in s.c.tool_overrides.keys() {
                tool_heaps.entry(name.as_str()).or_default().push(entry);
            }
            next_span += 1;
        }
        if let Body::System { .. } = rec.body {
            // System prompts pass through, never compacted.
            items.push(Item::Event {
                index: i,
                record: rec,
            });
            removed.push(false);
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
                    removed[item] = true;
                    dropped.push(Dropped {
                        index: *items[item].origin().start(),
                        reason: DropReason::Unpaired,
                    });
                    p.fate = CallFate::Folded;
                }
            }
            match open_summary {
                Some((o, item)) if o == order => {
                    if let Item::Summary { last, .. } = &mut items[item] {
                        *last = i;
                    }
                }
                _ => {
                    let text = by_order[&order]
                        .summary
                        .as_ref()
                        .map_or("", |s| s.text.as_str());
                    open_summary = Some((order, items.len()));
                    items.push(Item::Summary {
                        first: i,
                        last: i,
                        turns: span_turns[&order],
                        compaction: order,
                        text,
                    });
                    removed.push(false);
                }
            }
            match &rec.body {
                Body::ToolCall { id, .. } => {
                    let earlier = pending.insert(
                        id,
                        Pending {
                            item: None,
                            name_index: usize::MAX,
                            fate: CallFate::Folded,
                        },
                    );
                    unpair(earlier, &items, &mut removed, &mut dropped);
                }
                Body::ToolResult { id, .. } => {
                    // A call kept outside the summary loses its result: drop
                    // the call too, so the pair stays whole.
                    if let Some(p) = pending.remove(id.as_str())
                        && let Some(item) = p.item
                    {
                        removed[item] = true;
                        dropped.push(Dropped {
                            index: *items[item].origin().start(),
                            reason: DropReason::Unpaired,
                        });
                    }
                }
                _ => {}
            }
            continue;
        }
        open_summary = None;

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
                items.push(Item::Event {
                    index: i,
                    record: rec,
                });
                removed.push(false);
            }
            Body::ToolCall { id, name, .. } => {
                let policy = tool_policy(i, name, &mut tools_heap, &mut tool_heaps, &by_order);
                tool_names.push(name);
                let name_index = tool_names.len() - 1;
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
                        items.push(if strip {
                            Item::StrippedCall {
                                index: i,
                                record: rec,
                            }
                        } else {
                            Item::Event {
                                index: i,
                                record: rec,
                            }
                        });
                        removed.push(false);
                        (CallFate::InView, Some(items.len() - 1))
                    }
                };
                let earlier = pending.insert(
                    id,
                    Pending {
                        item,
                        name_index,
                        fate,
                    },
                );
                unpair(earlier, &items, &mut removed, &mut dropped);
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
                    name_index,
                    ..
                }) => {
                    // A result follows the policy that covers it, not its call's.
                    let tool = tool_names[name_index];
                    let policy = tool_policy(i, tool, &mut tools_heap, &mut tool_heaps, &by_order);
                    let strip = matches!(
                        policy,
                        Some((_, ToolOverride::Strip | ToolOverride::StripResponses))
                    ) && more_chars_than(content, KEEP_RESULT_CHARS);
                    items.push(if strip {
                        let keep_diagnostics = policy
                            .and_then(|(order, _)| by_order[&order].keep_diagnostics)
                            .map_or(KEEP_DIAGNOSTICS, |n| n as usize);
                        Item::StrippedResult {
                            index: i,
                            record: rec,
                            tool,
                            scan,
                            keep_diagnostics,
                        }
                    } else {
                        clipped_or_kept(i, rec, content, &mut clip_heap, &by_order)
                    });
                    removed.push(false);
                }
            },
            Body::User { content, .. } => {
                items.push(clipped_or_kept(i, rec, content, &mut clip_heap, &by_order));
                removed.push(false);
            }
            _ => {
                items.push(Item::Event {
                    index: i,
                    record: rec,
                });
                removed.push(false);
            }
        }
    }

    // Calls whose result never came cannot be sent alone.
    for p in pending.into_values() {
        if let Some(item) = p.item {
            removed[item] = true;
            dropped.push(Dropped {
                index: *items[item].origin().start(),
                reason: DropReason::Unpaired,
            });
        }
    }
    if removed.iter().any(|&r| r) {
        let mut keep = removed.iter().map(|r| !r);
        items.retain(|_| keep.next().unwrap_or(true));
    }
    dropped.sort_by_key(|d| d.index);

    // Never start with the assistant (system prompts aside).
    let first = items
        .iter()
        .position(|i| !matches!(i, Item::Event { record, .. } if matches!(record.body, Body::System { .. })))
        .unwrap_or(items.len());
    let starts_with_assistant = match items.get(first) {
        Some(Item::Event { record, .. }) => !matches!(record.body, Body::User { .. }),
        Some(Item::Clipped { record, .. }) => !matches!(record.body, Body::User { .. }),
        Some(Item::StrippedCall { .. } | Item::StrippedResult { .. }) => true,
        Some(Item::Summary { .. } | Item::Preamble) | None => false,
    };
    if starts_with_assistant {
        items.insert(first, Item::Preamble);
    }

    View {
        items,
        dropped,
        active,
        inactive,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::{Source, Summary, ToolPolicy};
    use crate::materialize::item_record;
    use serde_json::json;

    fn log_of(bodies: Vec<Body>) -> Log {
        Log::from_records(
            bodies
                .into_iter()
                .enumerate()
                .map(|(i, b)| Record::new(i as u64, "t", b))
                .collect(),
        )
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

    fn turn(n: u32, body: &str, is_error: bool) -> Vec<Body> {
        vec![
            Body::TurnStart,
            Body::User {
                content: format!("question {n}"),
                author: None,
            },
            Body::Reasoning {
                content: "thinking".into(),
            },
            Body::ToolCall {
                id: format!("c{n}"),
                name: "edit".into(),
                arguments: json!({"path": "src/a.rs", "new": body, "flags": ["-v"]}).into(),
            },
            Body::ToolResult {
                id: format!("c{n}"),
                content: "x".repeat(500),
                is_error,
            },
            Body::Assistant {
                content: format!("answer {n}"),
            },
        ]
    }

    fn compaction(c: Compaction) -> Body {
        Body::Compaction(Box::new(c))
    }

    #[test]
    fn strip_keeps_short_values_and_says_what_was_removed() {
        let long = "y".repeat(300);
        let mut bodies = turn(0, &long, true);
        let mut c = Compaction::new(0, 0, Source::User);
        c.tool_calls = Some(ToolPolicy::Strip);
        bodies.push(compaction(c));
        let log = log_of(bodies);
        let view = project(&log);
        let call = view
            .items
            .iter()
            .find(|i| matches!(i, Item::StrippedCall { .. }))
            .and_then(item_record)
            .unwrap();
        let Body::ToolCall { arguments, .. } = &call.body else {
            panic!()
        };
        let arguments = arguments.value();
        assert_eq!(arguments["path"], "src/a.rs");
        assert_eq!(arguments["flags"], json!(["-v"]));
        assert_eq!(arguments["new"], "[300 characters removed by compaction]");
        let result = view
            .items
            .iter()
            .find(|i| matches!(i, Item::StrippedResult { .. }))
            .and_then(item_record)
            .unwrap();
        let Body::ToolResult {
            content, is_error, ..
        } = &result.body
        else {
            panic!()
        };
        assert!(*is_error, "is_error is kept");
        // A failure in no known shape keeps its first line, cut.
        assert!(
            content.starts_with(
                "[edit failed; its output (500 characters) was removed by compaction. Diagnostics in it: xxx"
            ) && content.chars().count() < 340,
            "{content}"
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
    fn a_stripped_result_keeps_every_diagnostic_most_severe_first() {
        let out = "warning: unused import: `a`\n --> src/a.rs:1:5\nerror[E0425]: cannot find value `x`\n --> src/b.rs:3:9\nerror: could not compile `b`\nerror: aborting due to 2 previous errors\n";
        assert_eq!(
            stripped_result_line("cargo_check", out, true),
            format!(
                "[cargo_check failed; its output ({} characters) was removed by compaction. Diagnostics in it: error[E0425]: cannot find value `x` (src/b.rs:3:9); error: could not compile `b`; error: aborting due to 2 previous errors; warning: unused import: `a` (src/a.rs:1:5)]",
                out.chars().count()
            )
        );
        // The same message at several places is said once, with each
        // place; past the budget the rest are counted.
        let many = "error[E0432]: unresolved import `crate::R`\n --> src/a.rs:3:5\nerror[E0432]: unresolved import `crate::R`\n --> src/b.rs:6:5\nerror[E0282]: type annotations needed\n --> src/c.rs:1:1\nwarning: unused `self` argument\n --> src/c.rs:2:2\n";
        let found = result_diagnostics(many, true);
        assert_eq!(
            render_stripped("cargo_check", true, 9, &found, 2),
            "[cargo_check failed; its output (9 characters) was removed by compaction. Diagnostics in it: error[E0432]: unresolved import `crate::R` (src/a.rs:3:5, src/b.rs:6:5); and 2 more]"
        );
        // A failure in no known shape keeps its first line; a quiet
        // success keeps what it kept before.
        assert_eq!(
            stripped_result_line("deploy", "\nthe server said no\nmore", true),
            "[deploy failed; its output (24 characters) was removed by compaction. Diagnostics in it: the server said no]"
        );
        assert_eq!(
            stripped_result_line("read_file", "fn error() {}", false),
            "[read_file succeeded; its output (13 characters) was removed by compaction]"
        );
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
    fn the_outcome_is_what_the_output_says() {
        // Flagged a success, but a test failed or the build did not.
        let run = "running 2 tests\ntest a::b ... FAILED\ntest a::c ... FAILED\n";
        assert!(
            stripped_result_line("cargo_test", run, false)
                .starts_with("[cargo_test: 2 tests failed; its output")
        );
        assert!(
            stripped_result_line("cargo_test", "Ran 3/3 tests, of which 1 failed.", false)
                .starts_with("[cargo_test: 1 test failed;")
        );
        assert!(
            stripped_result_line(
                "run",
                "thread 'main' panicked at src/m.rs:1:1:\nboom",
                false
            )
            .starts_with("[run: panicked;")
        );
        assert!(
            stripped_result_line("check", "error[E0425]: cannot find value `x` here", false)
                .starts_with("[check: 1 error;")
        );
        // Warnings alone, or an exception quoted in a document read: the
        // run did what it was asked.
        assert!(
            stripped_result_line("check", "warning: unused import: `a` here", false)
                .starts_with("[check succeeded;")
        );
        // A generic wrapper is passed over for the cause it wraps.
        let wrapped = r#"{"message":"An error occurred while running the 'read' tool.","trace":["no such repository here"]}"#;
        assert!(
            stripped_result_line("read", wrapped, true)
                .ends_with("Diagnostics in it: no such repository here]")
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
                assert_eq!(
                    item.stripped_line().as_deref(),
                    Some(stripped_result_line(tool, content, *is_error).as_str())
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
    fn deferred_compaction_waits_for_its_turn() {
        let mut bodies = turn(0, "body", false);
        let mut c = Compaction::new(0, 0, Source::Assistant);
        c.reasoning = Some(ReasoningPolicy::Strip);
        c.deferred_until_turn = Some(1);
        bodies.push(compaction(c));
        let log = log_of(bodies.clone());
        assert_eq!(project(&log).inactive, vec![(6, Inactive::Deferred)]);
        assert!(project(&log).dropped.is_empty());
        // As of the next turn it applies, before that turn exists.
        assert_eq!(project_as_of(&log, 1).dropped.len(), 1);
        assert_eq!(project_as_of(&log, 0).dropped.len(), 0);
        // The next turn starts: now it applies.
        bodies.extend(turn(1, "body", false));
        let log = log_of(bodies);
        let view = project(&log);
        assert!(view.inactive.is_empty());
        assert_eq!(view.dropped.len(), 1);
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
        assert_eq!((turns, text), ((0, 1), "we edited a and b"));
        assert_eq!(
            summary_preamble(turns),
            "[The text that follows summarizes turns 1–2 of this conversation, which were compacted.]"
        );
        assert!(matches!(view.items[1], Item::Event { .. }));
    }
}
