//! The planner: turns rules into compaction records (SPEC §5).
//!
//! A [`Rule`] says which turns and how. Planning resolves its bounds to
//! absolute positions against the log as it was when the run began (several
//! rules in one run all see the same log), applies `keep_first` and
//! `keep_last`, grows a derived summary to the union of the summaries it
//! overlaps, refuses a supplied summary that partly overlaps one, and bakes
//! the per-tool hints from config into `tool_overrides`.
//!
//! Generating summary text is not the planner's job: a [`Planned`] that
//! needs a derived summary says so, with the exact range a summarizer must
//! read, and the caller fills the text in.

use std::collections::{BTreeMap, BTreeSet};

use crate::bounds::{Bound, BoundError, Clock, Keep};
use crate::compaction::{
    Compaction, Provenance, ReasoningPolicy, Source, Summary, ToolOverride, ToolPolicy,
    truncate_note,
};
use crate::log::Log;
use crate::record::Body;

/// Which turns to compact and how.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rule {
    /// Start bound (default: the first turn).
    pub from: Option<Bound>,
    /// End bound (default: the last turn).
    pub to: Option<Bound>,
    /// Turns kept at the start.
    pub keep_first: Option<Keep>,
    /// Turns kept at the end.
    pub keep_last: Option<Keep>,
    /// Of the turns `keep_first` and `keep_last` keep (within the bounds),
    /// taken together, only the last this many steps stay verbatim,
    /// counted from the end: the last kept turn keeps up to this many of
    /// its newest steps, the kept turn before it what is left, and so on.
    /// The closed steps before each kept turn's share are compacted with
    /// the rule's policies (its user messages stay), so a long turn (one
    /// request, dozens of tool calls) shrinks as well, and so does a short
    /// conversation the keeps keep whole. `None`: kept turns stay whole.
    pub keep_steps: Option<u32>,
    /// Reasoning policy.
    pub reasoning: Option<ReasoningPolicy>,
    /// Tool policy.
    pub tool_calls: Option<ToolPolicy>,
    /// Summarize the range instead.
    pub summary: Option<SummaryRequest>,
    /// At most this many diagnostics a result it strips keeps (`None`:
    /// [`KEEP_DIAGNOSTICS`](crate::projection::KEEP_DIAGNOSTICS)).
    pub keep_diagnostics: Option<u32>,
}

/// How a rule's summary is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryRequest {
    /// Derive it with a summarizer from the raw events.
    Derive {
        /// `provider/model`, or `None` for the default summarizer.
        model: Option<String>,
        /// Instructions for a model summarizer.
        instructions: Option<String>,
    },
    /// Text written by a person or the assistant.
    Supplied {
        /// The summary.
        text: String,
        /// Who wrote it.
        author: Source,
    },
}

/// Steps the built-in rule keeps verbatim: the last this many of the turns
/// it keeps, taken together (not of each turn).
pub const BUILTIN_KEEP_STEPS: u32 = 4;

impl Rule {
    /// The built-in rule: keep first 1, keep last 3, and of those turns
    /// together only the last [`BUILTIN_KEEP_STEPS`] steps verbatim (the
    /// older closed steps of the kept turns fold too); strip reasoning and
    /// tools.
    pub fn builtin() -> Rule {
        Rule {
            keep_first: Some(Keep::Count(1)),
            keep_last: Some(Keep::Count(3)),
            keep_steps: Some(BUILTIN_KEEP_STEPS),
            reasoning: Some(ReasoningPolicy::Strip),
            tool_calls: Some(ToolPolicy::Strip),
            ..Rule::default()
        }
    }

    /// Whether the rule does anything at all.
    pub fn has_policy(&self) -> bool {
        self.reasoning.is_some() || self.tool_calls.is_some() || self.summary.is_some()
    }
}

/// Per-tool compaction hints from config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolHints {
    /// `[tools.NAME] compaction = …`
    pub per_tool: BTreeMap<String, ToolOverride>,
    /// `[tools."*"] compaction = …`: every tool without its own hint.
    pub default: Option<ToolOverride>,
}

/// What planning needs besides the rules.
#[derive(Debug, Clone, Default)]
pub struct PlanContext {
    /// The current time, for duration bounds.
    pub now: Option<jiff::Timestamp>,
    /// Per-tool hints, baked into `tool_overrides`.
    pub hints: ToolHints,
    /// Who is compacting.
    pub source: Source,
    /// Why (truncated to 200 characters).
    pub note: Option<String>,
    /// Defer activation until this turn index (the assistant's tool).
    pub deferred_until_turn: Option<u32>,
}

/// One compaction the planner made.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The record to append. For a derived summary, `summary` is `None`
    /// until the caller fills it in.
    pub compaction: Compaction,
    /// Covered record indices, inclusive: what a summarizer must read.
    pub range: (usize, usize),
    /// Set when a derived summary must still be generated.
    pub derive: Option<(Option<String>, Option<String>)>,
    /// The turns (0-based) the rule asked for, when a summary overlap grew
    /// the range beyond them.
    pub grown_from: Option<(u32, u32)>,
    /// Which rule (index) made it.
    pub rule: usize,
}

/// A rule that produced nothing, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Which rule (index).
    pub rule: usize,
    /// Why, for people.
    pub reason: String,
}

/// The result of planning a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Compactions to append, in rule order.
    pub planned: Vec<Planned>,
    /// Rules that had nothing to do.
    pub skipped: Vec<Skipped>,
}

/// Why a run could not be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A bound could not be resolved.
    #[error("rule {rule}: {reason}")]
    Bound {
        /// Which rule (1-based).
        rule: usize,
        /// What was wrong.
        reason: BoundError,
    },
    /// The bounds contradict each other.
    #[error(
        "rule {rule}: the range starts at turn {} but ends at turn {}; nothing lies between",
        start + 1, end + 1
    )]
    EmptyRange {
        /// Which rule (1-based).
        rule: usize,
        /// The resolved start (0-based).
        start: i64,
        /// The resolved end (0-based).
        end: i64,
    },
    /// A supplied summary partly overlaps an existing one.
    #[error(
        "rule {rule}: the supplied summary of turns {}–{} partly overlaps the summary of turns {}–{}; a written summary cannot be widened, so cover all of those turns or none",
        new.0 + 1, new.1 + 1, existing.0 + 1, existing.1 + 1
    )]
    SuppliedOverlap {
        /// Which rule (1-based).
        rule: usize,
        /// The new summary's turns (0-based).
        new: (u32, u32),
        /// The existing summary's turns (0-based).
        existing: (u32, u32),
    },
    /// The rule has no policy.
    #[error(
        "rule {rule} says what to compact but not how: give it reasoning, tool_calls or a summary"
    )]
    NoPolicy {
        /// Which rule (1-based).
        rule: usize,
    },
    /// A supplied summary has no text.
    #[error(
        "rule {rule}: the supplied summary is empty; an empty summary would erase the turns it covers"
    )]
    EmptySummary {
        /// Which rule (1-based).
        rule: usize,
    },
}

impl PlanError {
    /// The same error, said of rule `n` (1-based): for callers that plan
    /// their rules one at a time.
    pub fn for_rule(mut self, n: usize) -> PlanError {
        match &mut self {
            PlanError::Bound { rule, .. }
            | PlanError::EmptyRange { rule, .. }
            | PlanError::SuppliedOverlap { rule, .. }
            | PlanError::NoPolicy { rule }
            | PlanError::EmptySummary { rule } => *rule = n,
        }
        self
    }
}

/// Why a summary may not be recorded (SPEC §6).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SummaryRefused {
    /// The text is empty or only whitespace.
    #[error("is empty")]
    Empty,
    /// The summary is not smaller than what it replaces.
    #[error("(~{size} tokens) is not smaller than what it replaces (~{replaced} tokens)")]
    NotSmaller {
        /// Estimated tokens of the summary.
        size: usize,
        /// Estimated tokens of the raw events it replaces.
        replaced: usize,
    },
}

/// Check a summary about to replace the raw records `range` (inclusive
/// indices) of `log`: it must say something, and be smaller than what it
/// replaces. Every caller that records a summary (commands, automatic
/// compaction, the assistant's tool) applies the same check.
pub fn check_summary(log: &Log, range: (usize, usize), text: &str) -> Result<(), SummaryRefused> {
    if text.trim().is_empty() {
        return Err(SummaryRefused::Empty);
    }
    let replaced = crate::estimate::raw_tokens(&log.records()[range.0..=range.1]);
    let size = crate::estimate::text_tokens(text);
    if size >= replaced {
        return Err(SummaryRefused::NotSmaller { size, replaced });
    }
    Ok(())
}

/// A summary in force (or deferred, or planned earlier in this run): its
/// covered record indices, and its record's `seq` (`None` when planned in
/// this run).
#[derive(Debug, Clone, Copy)]
struct KnownSummary<'a> {
    lo: usize,
    hi: usize,
    seq: Option<u64>,
    /// Written by a person or the assistant (not derived).
    supplied: bool,
    /// Its text, when known (not yet for a derived one planned this run).
    text: Option<&'a str>,
}

/// Plan `rules` against `log`. Every rule sees the log as it was when the
/// run began.
pub fn plan(log: &Log, rules: &[Rule], ctx: &PlanContext) -> Result<Plan, PlanError> {
    let clock = Clock { now: ctx.now };
    let mut out = Plan::default();
    // Summaries planned by earlier rules of this run count too: two
    // summaries must never slice each other.
    let mut summaries = existing_summaries(log);
    for (n, rule) in rules.iter().enumerate() {
        let bound_err = |reason| PlanError::Bound {
            rule: n + 1,
            reason,
        };
        if !rule.has_policy() {
            return Err(PlanError::NoPolicy { rule: n + 1 });
        }
        let turns = log.turn_count() as i64;
        let mut start = match &rule.from {
            Some(b) => b.resolve_start(log, clock).map_err(bound_err)?,
            None => 0,
        };
        let mut end = match &rule.to {
            Some(b) => b.resolve_end(log, clock).map_err(bound_err)?,
            None => turns - 1,
        };
        if rule.from.is_some() && rule.to.is_some() && start > end && start < turns {
            return Err(PlanError::EmptyRange {
                rule: n + 1,
                start,
                end,
            });
        }
        let bounds = (start.max(0), end.min(turns - 1));
        if let Some(k) = &rule.keep_first {
            start = start.max(k.first_not_kept(log).map_err(bound_err)?);
        }
        if let Some(k) = &rule.keep_last {
            end = end.min(k.last_not_kept(log, clock).map_err(bound_err)?);
        }
        end = end.min(turns - 1);
        let main = (start >= 0 && end >= 0 && start <= end).then_some((start as u32, end as u32));
        // The old steps of the turns the keeps keep (within the bounds),
        // each run a compaction of its own, in log order around the range.
        let steps: Vec<(usize, usize)> = match rule.keep_steps {
            Some(keep) => {
                let kept: Vec<u32> = (bounds.0..=bounds.1)
                    .map(|t| t as u32)
                    .filter(|&t| main.is_none_or(|(a, b)| t < a || t > b))
                    .collect();
                old_steps(log, &kept, keep)
            }
            None => Vec::new(),
        };
        let first_main = main.and_then(|(a, _)| log.turn_range(a)).map(|r| r.start);
        let (before, after): (Vec<_>, Vec<_>) = steps
            .into_iter()
            .partition(|&(lo, _)| first_main.is_some_and(|m| lo < m));
        for r in before {
            plan_steps(log, r, rule, ctx, &mut summaries, n, &mut out)?;
        }
        if let Some((from_turn, to_turn)) = main
            && let (Some(lo_r), Some(hi_r)) = (log.turn_range(from_turn), log.turn_range(to_turn))
        {
            match region(log, (lo_r.start, hi_r.end - 1), rule, ctx, &summaries, n)? {
                Region::Planned(p) => {
                    remember(&mut summaries, rule, &p);
                    out.planned.push(*p)
                }
                Region::Invisible => out.skipped.push(Skipped {
                    rule: n,
                    reason: format!(
                        "turns {}–{} hold nothing the model sees",
                        from_turn + 1,
                        to_turn + 1
                    ),
                }),
                Region::AlreadySummarized(reason) => out.skipped.push(Skipped { rule: n, reason }),
            }
        }
        let had_steps = !after.is_empty() || out.planned.iter().any(|p| p.rule == n);
        for r in after {
            plan_steps(log, r, rule, ctx, &mut summaries, n, &mut out)?;
        }
        if main.is_none() && !had_steps {
            out.skipped.push(Skipped {
                rule: n,
                reason: if turns == 0 {
                    "the conversation has no turns".into()
                } else {
                    format!("no turns left to compact in a conversation of {turns} turns")
                },
            });
        }
    }
    Ok(out)
}

/// The old closed steps of the kept turns `kept` (0-based, in log order),
/// as runs of inclusive record indices in log order. The last `keep` steps
/// of those turns taken together stay: walking them from the last turn to
/// the first, each turn keeps its newest `min(its steps, what is left of
/// keep)` steps, so a turn reached with nothing left keeps none. In each
/// turn, the steps before its share are old up to the first open one (a
/// step still waiting for a tool result, and what follows it, stay). A
/// user message between two steps (a correction mid-turn) ends a run: it
/// is the user's own words, which only whole-turn rules fold (the message
/// that opens a turn is in no step, so it never folds here either). Runs
/// never reach from one turn into the next.
fn old_steps(log: &Log, kept: &[u32], keep: u32) -> Vec<(usize, usize)> {
    let steps: Vec<_> = kept.iter().map(|&t| log.steps(t)).collect();
    let mut left = keep as usize;
    let mut shares = vec![0; steps.len()];
    for (share, turn) in shares.iter_mut().zip(&steps).rev() {
        *share = turn.len().min(left);
        left -= *share;
    }
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (turn, share) in steps.iter().zip(shares) {
        let old = &turn[..turn.len() - share];
        let closed = old.iter().take_while(|s| s.closed).count();
        let first = runs.len();
        for s in &old[..closed] {
            let joins = runs.len() > first
                && runs.last().is_some_and(|&(_, hi)| {
                    !log.records()[hi + 1..s.start]
                        .iter()
                        .any(|r| matches!(r.body, Body::User { .. }))
                });
            match runs.last_mut() {
                Some(run) if joins => run.1 = s.end - 1,
                _ => runs.push((s.start, s.end - 1)),
            }
        }
    }
    runs
}

/// Plan `rule` over the steps `range`, recording what it gives in `out`.
fn plan_steps<'a>(
    log: &'a Log,
    range: (usize, usize),
    rule: &'a Rule,
    ctx: &PlanContext,
    summaries: &mut Vec<KnownSummary<'a>>,
    n: usize,
    out: &mut Plan,
) -> Result<(), PlanError> {
    match region(log, range, rule, ctx, summaries, n)? {
        Region::Planned(p) => {
            remember(summaries, rule, &p);
            out.planned.push(*p);
        }
        // Steps of reasoning-free text, or already summarized: nothing to
        // say about them, the range is what the report speaks of.
        Region::Invisible | Region::AlreadySummarized(_) => {}
    }
    Ok(())
}

/// A summary planned in this run counts for the rules after it: two
/// summaries must never slice each other.
fn remember<'a>(summaries: &mut Vec<KnownSummary<'a>>, rule: &'a Rule, p: &Planned) {
    if rule.summary.is_some() {
        summaries.push(KnownSummary {
            lo: p.range.0,
            hi: p.range.1,
            seq: None,
            supplied: matches!(rule.summary, Some(SummaryRequest::Supplied { .. })),
            text: match &rule.summary {
                Some(SummaryRequest::Supplied { text, .. }) => Some(text),
                _ => None,
            },
        });
    }
}

/// Plan one rule's policies over exact record indices `lo..=hi`, which may
/// end inside a turn at a step boundary (automatic compaction within a
/// turn). The rule's bounds are ignored. `None`: nothing to do (the range
/// holds nothing the model sees, or is already summarized).
pub fn plan_region(
    log: &Log,
    range: (usize, usize),
    rule: &Rule,
    ctx: &PlanContext,
) -> Result<Option<Planned>, PlanError> {
    if !rule.has_policy() {
        return Err(PlanError::NoPolicy { rule: 1 });
    }
    Ok(
        match region(log, range, rule, ctx, &existing_summaries(log), 0)? {
            Region::Planned(p) => Some(*p),
            Region::Invisible | Region::AlreadySummarized(_) => None,
        },
    )
}

/// What planning one region gave.
enum Region {
    Planned(Box<Planned>),
    /// Nothing in it is model-visible.
    Invisible,
    /// A summary in force already covers exactly this range: a second one
    /// would repeat it (and, from a model, cost a second call). Why, for
    /// people.
    AlreadySummarized(String),
}

/// Index ranges of the summaries in force, and of those deferred (they
/// will be in force soon: seed 000's overlap checks see them too).
fn existing_summaries(log: &Log) -> Vec<KnownSummary<'_>> {
    crate::projection::active_or_deferred(log)
        .into_iter()
        .filter_map(|(i, c, (lo, hi))| {
            let s = c.summary.as_ref()?;
            Some(KnownSummary {
                lo,
                hi,
                seq: Some(log.records()[i].seq),
                supplied: matches!(s.provenance, Provenance::Supplied { .. }),
                text: Some(&s.text),
            })
        })
        .collect()
}

fn region(
    log: &Log,
    (mut lo, mut hi): (usize, usize),
    rule: &Rule,
    ctx: &PlanContext,
    summaries: &[KnownSummary<'_>],
    n: usize,
) -> Result<Region, PlanError> {
    let records = log.records();
    if !records[lo..=hi].iter().any(|r| r.body.is_model_visible()) {
        return Ok(Region::Invisible);
    }
    let asked = (log.turn_of(lo), log.turn_of(hi));
    let mut grown_from = None;
    match &rule.summary {
        Some(SummaryRequest::Derive { .. }) => {
            // Summaries cannot be sliced: grow to the union, until stable.
            loop {
                let mut grew = false;
                for &KnownSummary {
                    lo: slo, hi: shi, ..
                } in summaries
                {
                    if slo <= hi && lo <= shi && (slo < lo || shi > hi) {
                        lo = lo.min(slo);
                        hi = hi.max(shi);
                        grew = true;
                    }
                }
                if !grew {
                    break;
                }
                grown_from = Some(asked);
            }
            // A derived summary of exactly a summarized range says again
            // what is already said. A written one is new words: it may
            // replace the text in view (the newer summary wins).
            // Compared by the events the model sees: overlay records appended
            // since (in the last turn) do not make a range new.
            let visible = visible_bounds(log, lo, hi);
            if let Some(same) = summaries
                .iter()
                .find(|s| visible_bounds(log, s.lo, s.hi) == visible)
            {
                let which = match same.seq {
                    Some(seq) => format!("by the compaction recorded at seq {seq}"),
                    None => "by an earlier rule of this run".into(),
                };
                let by = if same.supplied { " (written)" } else { "" };
                return Ok(Region::AlreadySummarized(format!(
                    "turns {}–{} are already summarized{by} {which}; nothing was recorded (revoke that summary with --reset first to summarize again)",
                    log.turn_of(lo) + 1,
                    log.turn_of(hi) + 1
                )));
            }
        }
        Some(SummaryRequest::Supplied { text, .. }) => {
            if text.trim().is_empty() {
                return Err(PlanError::EmptySummary { rule: n + 1 });
            }
            let visible = visible_bounds(log, lo, hi);
            if let Some(same) = summaries.iter().find(|s| {
                visible_bounds(log, s.lo, s.hi) == visible && s.text == Some(text.as_str())
            }) {
                let which = match same.seq {
                    Some(seq) => format!("the compaction recorded at seq {seq}"),
                    None => "an earlier rule of this run".into(),
                };
                return Ok(Region::AlreadySummarized(format!(
                    "turns {}–{} already have this summary, word for word ({which}); nothing was recorded",
                    log.turn_of(lo) + 1,
                    log.turn_of(hi) + 1
                )));
            }
            for &KnownSummary {
                lo: slo, hi: shi, ..
            } in summaries
            {
                let overlaps = slo <= hi && lo <= shi;
                let nested = (slo >= lo && shi <= hi) || (lo >= slo && hi <= shi);
                if overlaps && !nested {
                    return Err(PlanError::SuppliedOverlap {
                        rule: n + 1,
                        new: asked,
                        existing: (log.turn_of(slo), log.turn_of(shi)),
                    });
                }
            }
        }
        None => {}
    }
    let mut c = Compaction::new(log.turn_of(lo), log.turn_of(hi), ctx.source);
    c.from_seq = Some(records[lo].seq);
    c.to_seq = Some(records[hi].seq);
    c.reasoning = rule.reasoning;
    c.tool_calls = rule.tool_calls;
    c.note = ctx.note.as_deref().map(truncate_note);
    c.deferred_until_turn = ctx.deferred_until_turn;
    let mut derive = None;
    match &rule.summary {
        Some(SummaryRequest::Supplied { text, author }) => {
            c.summary = Some(Summary {
                text: text.clone(),
                provenance: Provenance::Supplied { author: *author },
            });
        }
        Some(SummaryRequest::Derive {
            model,
            instructions,
        }) => derive = Some((model.clone(), instructions.clone())),
        None => {}
    }
    if rule.tool_calls.is_some() {
        c.tool_overrides = bake_hints(log, (lo, hi), &ctx.hints);
        c.keep_diagnostics = rule.keep_diagnostics;
    }
    Ok(Region::Planned(Box::new(Planned {
        compaction: c,
        range: (lo, hi),
        derive,
        grown_from,
        rule: n,
    })))
}

/// The first and last model-visible record in `lo..=hi`.
fn visible_bounds(log: &Log, lo: usize, hi: usize) -> Option<(usize, usize)> {
    let records = &log.records()[lo..=hi];
    let first = records.iter().position(|r| r.body.is_model_visible())?;
    let last = records.iter().rposition(|r| r.body.is_model_visible())?;
    Some((lo + first, lo + last))
}

/// The per-tool overrides for a range: every tool with its own hint, and
/// the `*` hint for every other tool called in the range. Only rules with a
/// tool policy get them: a reasoning-only rule leaves tools alone.
fn bake_hints(
    log: &Log,
    (lo, hi): (usize, usize),
    hints: &ToolHints,
) -> BTreeMap<String, ToolOverride> {
    let mut out = hints.per_tool.clone();
    if let Some(default) = hints.default {
        let called: BTreeSet<&str> = log.records()[lo..=hi]
            .iter()
            .filter_map(|r| match &r.body {
                Body::ToolCall { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        for name in called {
            out.entry(name.to_owned()).or_insert(default);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_steps_stop_at_a_user_message_mid_turn() {
        use crate::record::Record;
        let mut log = Log::new();
        let mut push = |b: Body| log.push(Record::new(log.next_seq(), "t", b));
        push(Body::TurnStart);
        push(Body::User {
            content: "do it".into(),
            author: None,
        });
        for k in 0..8 {
            if k == 3 {
                push(Body::User {
                    content: "no, never touch the database".into(),
                    author: None,
                });
            }
            push(Body::ToolCall {
                id: format!("c{k}"),
                name: "run".into(),
                arguments: serde_json::json!({}).into(),
            });
            push(Body::ToolResult {
                id: format!("c{k}"),
                content: "x".repeat(500),
                is_error: false,
            });
        }
        let runs = old_steps(&log, &[0], 4);
        assert_eq!(runs.len(), 2, "{runs:?}");
        for (lo, hi) in runs {
            assert!(
                !log.records()[lo..=hi]
                    .iter()
                    .any(|r| matches!(r.body, Body::User { .. })),
                "the correction stays out of the folds"
            );
        }
    }
    use crate::record::{Body, Record};
    use serde_json::json;

    /// A log of one turn per entry of `turns`, each a user message and then
    /// one step per entry: a tool call with its result (`'c'`), a call left
    /// without one (`'o'`), or a user correction and then a closed call
    /// (`'u'`). Every result is long enough to strip.
    fn steps_log(turns: &[&str]) -> Log {
        let mut log = Log::new();
        let mut push = |b: Body| log.push(Record::new(log.next_seq(), "t", b));
        for (t, steps) in turns.iter().enumerate() {
            push(Body::TurnStart);
            push(Body::User {
                content: format!("do {t}"),
                author: None,
            });
            for (k, kind) in steps.chars().enumerate() {
                if kind == 'u' {
                    push(Body::User {
                        content: format!("no, not like that {t}.{k}"),
                        author: None,
                    });
                }
                let id = format!("c{t}.{k}");
                push(Body::ToolCall {
                    id: id.clone(),
                    name: "run".into(),
                    arguments: json!({}).into(),
                });
                if kind != 'o' {
                    push(Body::ToolResult {
                        id,
                        content: "x".repeat(500),
                        is_error: false,
                    });
                }
            }
        }
        log
    }

    /// The steps (turn, index in turn) the built-in rule with `keep_steps`
    /// folds, one vector per compaction.
    fn folded_steps(log: &Log, keep: u32) -> Vec<Vec<(u32, usize)>> {
        let rule = Rule {
            keep_steps: Some(keep),
            ..Rule::builtin()
        };
        let p = plan(log, &[rule], &PlanContext::default()).unwrap();
        p.planned
            .iter()
            .map(|pl| {
                (0..log.turn_count() as u32)
                    .flat_map(|t| {
                        log.steps(t)
                            .into_iter()
                            .enumerate()
                            .map(move |(i, s)| (t, i, s))
                    })
                    .filter(|(_, _, s)| s.start >= pl.range.0 && s.end - 1 <= pl.range.1)
                    .map(|(t, i, _)| (t, i))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn keep_steps_counts_the_kept_turns_together_from_the_end() {
        // Both turns kept (first 1, last 3); of their 4 + 3 steps the last
        // four stay: turn 1's last step and all of turn 2.
        let log = steps_log(&["cccc", "ccc"]);
        assert_eq!(folded_steps(&log, 4), vec![vec![(0, 0), (0, 1), (0, 2)]]);
        // The user's messages stay.
        let p = plan(&log, &[Rule::builtin()], &PlanContext::default()).unwrap();
        assert_eq!(p.planned.len(), 1);
        let (lo, hi) = p.planned[0].range;
        assert!(
            !log.records()[lo..=hi]
                .iter()
                .any(|r| matches!(r.body, Body::User { .. }))
        );
        // A budget the last turn uses up leaves the turn before it none:
        // all its closed steps fold, its request stays.
        let log = steps_log(&["ccc", "ccccc"]);
        assert_eq!(
            folded_steps(&log, 4),
            vec![vec![(0, 0), (0, 1), (0, 2)], vec![(1, 0)]]
        );
        // A budget larger than the kept steps folds nothing.
        assert!(folded_steps(&steps_log(&["cccc", "ccc"]), 7).is_empty());
        // An open step is never folded, nor anything after it in its turn
        // (the unanswered call and the next call are one model call's
        // output: one open step, then two closed ones, in turn 1).
        let log = steps_log(&["coccc", "ccc"]);
        assert_eq!(folded_steps(&log, 4), vec![vec![(0, 0)]]);
        // A user message between two steps splits the run.
        let log = steps_log(&["ccucc", "ccc"]);
        assert_eq!(
            folded_steps(&log, 4),
            vec![vec![(0, 0), (0, 1)], vec![(0, 2), (0, 3)]]
        );
        // The whole turns between the keeps fold as one range; only the
        // kept turns' steps are counted.
        let log = steps_log(&["cccc", "cc", "cc", "cc", "cc", "cc"]);
        let folded = folded_steps(&log, 4);
        assert_eq!(folded.len(), 3, "{folded:?}");
        assert_eq!(folded[0], vec![(0, 0), (0, 1), (0, 2), (0, 3)]);
        assert_eq!(folded[2], vec![(3, 0), (3, 1)]);
    }

    fn log(turns: u32) -> Log {
        let mut recs = Vec::new();
        let mut push = |b: Body| {
            let seq = recs.len() as u64;
            recs.push(Record::new(seq, "2026-01-01T00:00:00Z", b));
        };
        for t in 0..turns {
            push(Body::TurnStart);
            push(Body::User {
                content: format!("q{t}"),
                author: None,
            });
            push(Body::ToolCall {
                id: format!("c{t}"),
                name: if t % 2 == 0 { "read" } else { "grep" }.into(),
                arguments: json!({}).into(),
            });
            push(Body::ToolResult {
                id: format!("c{t}"),
                content: "out".into(),
                is_error: false,
            });
            push(Body::Assistant {
                content: format!("a{t}"),
            });
        }
        Log::from_records(recs)
    }

    fn with(mut l: Log, c: Compaction) -> Log {
        let seq = l.next_seq();
        l.push(Record::new(seq, "t", Body::Compaction(Box::new(c))));
        l
    }

    #[test]
    fn builtin_rule_keeps_first_one_and_last_three() {
        let l = log(10);
        let p = plan(&l, &[Rule::builtin()], &PlanContext::default()).unwrap();
        let c = &p.planned[1].compaction;
        assert_eq!((c.from_turn, c.to_turn), (1, 6));
        assert_eq!(c.from_seq, Some(5));
        assert_eq!(c.to_seq, Some(34));
        // Each turn is two steps (a call and its result, then the answer):
        // the last four steps of the kept turns are those of turns 9 and
        // 10; the steps of turns 1 and 8 fold, in log order around the
        // range, their requests left out.
        let ranges: Vec<_> = p.planned.iter().map(|p| p.range).collect();
        assert_eq!(ranges, vec![(2, 4), (5, 34), (37, 39)]);
    }

    #[test]
    fn short_conversation_has_nothing_to_compact() {
        // Two turns of two steps: the built-in rule keeps all four.
        let p = plan(&log(2), &[Rule::builtin()], &PlanContext::default()).unwrap();
        assert!(p.planned.is_empty());
        assert_eq!(p.skipped.len(), 1);
        // A third turn: the first turn's steps are no longer among the
        // last four, they fold; its request stays.
        let p = plan(&log(3), &[Rule::builtin()], &PlanContext::default()).unwrap();
        let ranges: Vec<_> = p.planned.iter().map(|p| p.range).collect();
        assert_eq!(ranges, vec![(2, 4)]);
        assert!(p.skipped.is_empty());
    }

    #[test]
    fn rules_in_one_run_see_the_log_as_it_began() {
        let l = with(log(10), {
            let mut c = Compaction::new(0, 2, Source::User);
            c.reasoning = Some(ReasoningPolicy::Strip);
            c
        });
        let rule = Rule {
            from: Some(Bound::LastCompaction),
            tool_calls: Some(ToolPolicy::Omit),
            ..Rule::default()
        };
        let p = plan(&l, &[rule.clone(), rule], &PlanContext::default()).unwrap();
        assert_eq!(p.planned.len(), 2);
        for planned in &p.planned {
            assert_eq!(planned.compaction.from_turn, 3);
        }
    }

    #[test]
    fn derived_summary_grows_to_the_union_until_stable() {
        let mut l = log(10);
        for (a, b) in [(1, 3), (5, 6)] {
            let mut c = Compaction::new(a, b, Source::User);
            c.summary = Some(Summary {
                text: "s".into(),
                provenance: Provenance::Supplied {
                    author: Source::User,
                },
            });
            l = with(l, c);
        }
        let rule = Rule {
            from: Some(Bound::Turn(3)), // turn index 2: inside 1..=3
            to: Some(Bound::Turn(6)),   // turn index 5: inside 5..=6
            summary: Some(SummaryRequest::Derive {
                model: None,
                instructions: None,
            }),
            ..Rule::default()
        };
        let p = plan(&l, &[rule], &PlanContext::default()).unwrap();
        let planned = &p.planned[0];
        assert_eq!(
            (planned.compaction.from_turn, planned.compaction.to_turn),
            (1, 6)
        );
        assert_eq!(planned.grown_from, Some((2, 5)));
        assert!(planned.derive.is_some());
    }

    #[test]
    fn supplied_summary_partly_overlapping_is_refused_naming_turns() {
        let mut c = Compaction::new(1, 3, Source::User);
        c.summary = Some(Summary {
            text: "s".into(),
            provenance: Provenance::Supplied {
                author: Source::User,
            },
        });
        let l = with(log(10), c);
        let rule = |from, to| Rule {
            from: Some(Bound::Turn(from)),
            to: Some(Bound::Turn(to)),
            summary: Some(SummaryRequest::Supplied {
                text: "mine".into(),
                author: Source::User,
            }),
            ..Rule::default()
        };
        let err = plan(&l, &[rule(3, 6)], &PlanContext::default()).unwrap_err();
        assert_eq!(
            err,
            PlanError::SuppliedOverlap {
                rule: 1,
                new: (2, 5),
                existing: (1, 3)
            }
        );
        assert!(
            err.to_string()
                .contains("turns 3–6 partly overlaps the summary of turns 2–4")
        );
        // Nesting either way is fine.
        assert!(plan(&l, &[rule(1, 8)], &PlanContext::default()).is_ok());
        assert!(plan(&l, &[rule(3, 3)], &PlanContext::default()).is_ok());
    }

    #[test]
    fn hints_are_baked_only_for_tool_rules_and_star_expands_to_called_tools() {
        let l = log(6);
        let ctx = PlanContext {
            hints: ToolHints {
                per_tool: BTreeMap::from([("search".to_owned(), ToolOverride::StripResponses)]),
                default: Some(ToolOverride::Keep),
            },
            ..PlanContext::default()
        };
        let tools = Rule {
            tool_calls: Some(ToolPolicy::Strip),
            ..Rule::default()
        };
        let p = plan(&l, &[tools], &ctx).unwrap();
        let o = &p.planned[0].compaction.tool_overrides;
        assert_eq!(o.get("search"), Some(&ToolOverride::StripResponses));
        assert_eq!(o.get("read"), Some(&ToolOverride::Keep));
        assert_eq!(o.get("grep"), Some(&ToolOverride::Keep));
        let reasoning = Rule {
            reasoning: Some(ReasoningPolicy::Strip),
            ..Rule::default()
        };
        let p = plan(&l, &[reasoning], &ctx).unwrap();
        assert!(p.planned[0].compaction.tool_overrides.is_empty());
    }

    #[test]
    fn summaries_of_one_run_never_slice_each_other() {
        let derive = |from, to| Rule {
            from: Some(Bound::Turn(from)),
            to: Some(Bound::Turn(to)),
            summary: Some(SummaryRequest::Derive {
                model: None,
                instructions: None,
            }),
            ..Rule::default()
        };
        let p = plan(
            &log(8),
            &[derive(1, 3), derive(2, 4)],
            &PlanContext::default(),
        )
        .unwrap();
        let second = &p.planned[1];
        assert_eq!(
            (second.compaction.from_turn, second.compaction.to_turn),
            (0, 3)
        );
        assert_eq!(second.grown_from, Some((1, 3)));
    }

    #[test]
    fn a_start_after_the_end_is_an_error_naming_both() {
        let rule = Rule {
            from: Some(Bound::Turn(4)),
            to: Some(Bound::Turn(2)),
            reasoning: Some(ReasoningPolicy::Strip),
            ..Rule::default()
        };
        let err = plan(&log(6), &[rule], &PlanContext::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "rule 1: the range starts at turn 4 but ends at turn 2; nothing lies between"
        );
    }

    #[test]
    fn a_rule_without_policy_is_an_error() {
        let err = plan(&log(3), &[Rule::default()], &PlanContext::default()).unwrap_err();
        assert_eq!(err, PlanError::NoPolicy { rule: 1 });
    }

    #[test]
    fn region_can_end_inside_a_turn() {
        let l = log(3);
        let rule = Rule {
            tool_calls: Some(ToolPolicy::Strip),
            ..Rule::default()
        };
        // Records 6..=8: turn 1's user, call, result (the step ends at 8).
        let p = plan_region(&l, (6, 8), &rule, &PlanContext::default())
            .unwrap()
            .unwrap();
        assert_eq!(
            (p.compaction.from_seq, p.compaction.to_seq),
            (Some(6), Some(8))
        );
        assert_eq!((p.compaction.from_turn, p.compaction.to_turn), (1, 1));
    }
}
