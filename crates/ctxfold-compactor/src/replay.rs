//! A transcript replayed as a live agent would have grown it, with
//! automatic compaction before every model call and after every turn (what
//! `ctxfold compact FILE --auto` reports): the compactions it records, what
//! each changed, and the log with them, all in memory.

use ctxfold_core::planner::{Plan, Planned};
use ctxfold_core::{Body, Compaction, Log};

use crate::{
    BasicCompactor, Committed, CompactError, Compactor, Context, Conversation, Effect, Memory,
    Moment, Outcome,
};

/// A transcript replayed with automatic compaction.
pub struct Replay {
    /// One entry per compaction recorded, for the timeline.
    pub plan: Plan,
    /// The compactions, in order.
    pub compactions: Vec<Compaction>,
    /// What each changed when it was recorded.
    pub effects: Vec<Effect>,
    /// The `seq` of each compaction's record in [`Replay::log`].
    pub seqs: Vec<u64>,
    /// The records each covers, as indices of [`Replay::log`].
    pub ranges: Vec<(usize, usize)>,
    /// The log with them.
    pub log: Log,
}

/// Replay `log` record by record as a live agent would have grown it,
/// compacting before every model call and after every turn.
pub fn replay(compactor: &BasicCompactor, log: &Log, window: u32) -> Result<Replay, CompactError> {
    let journal = Memory;
    let mut conv = Conversation::new(Log::new(), &journal);
    let mut committed: Vec<Committed> = Vec::new();
    // The records each compaction covers, as indices of the replayed
    // log (which only grows, so they stay right): the retention report
    // reads them.
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut moments: Vec<Moment> = Vec::new();
    let now = log
        .records()
        .last()
        .and_then(|r| r.ts.timestamp())
        .or_else(|| Some(jiff::Timestamp::now()));
    let run = |conv: &mut Conversation<'_>, moment: Moment| -> Result<Outcome, CompactError> {
        let ctx = Context {
            now,
            ..Context::new(moment, Some(window))
        };
        compactor.compact_if_needed(conv, &ctx)
    };
    let mut keep = |conv: &Conversation<'_>, outcome: Outcome, moment: Moment| {
        for c in outcome.committed {
            let range = ctxfold_core::projection::covered_indices(conv.log(), &c.compaction)
                .unwrap_or((0, 0));
            ranges.push(range);
            moments.push(moment);
            committed.push(c);
        }
    };
    let mut previous: Option<&Body> = None;
    for r in log.records() {
        let body = &r.body;
        let turn_ends = matches!(body, Body::TurnStart) && conv.log().turn_count() > 0;
        let call_starts =
            body.is_assistant_side() && !previous.is_some_and(|p| p.is_assistant_side());
        if turn_ends {
            let outcome = run(&mut conv, Moment::BetweenTurns)?;
            keep(&conv, outcome, Moment::BetweenTurns);
            conv.begin_turn();
        } else if call_starts {
            let outcome = run(&mut conv, Moment::BeforeStep)?;
            keep(&conv, outcome, Moment::BeforeStep);
        }
        if body.is_model_visible() {
            previous = Some(body);
        }
        conv.append(vec![r.clone()])?;
    }
    // The last turn is complete too.
    let outcome = run(&mut conv, Moment::BetweenTurns)?;
    keep(&conv, outcome, Moment::BetweenTurns);
    let plan = Plan {
        planned: committed
            .iter()
            .zip(ranges.iter())
            .map(|(c, range)| Planned {
                compaction: c.compaction.clone(),
                range: *range,
                derive: None,
                grown_from: None,
                rule: 0,
            })
            .collect(),
        skipped: Vec::new(),
    };
    let seqs = committed.iter().filter_map(|c| c.seq).collect();
    let (compactions, effects) = committed
        .into_iter()
        .map(|c| (c.compaction, c.effect))
        .unzip();
    let fired = moments.len();
    let steps = moments.iter().filter(|m| **m == Moment::BeforeStep).count();
    tracing::info!(
        window,
        fired,
        before_a_step = steps,
        between_turns = fired - steps,
        "replayed with automatic compaction"
    );
    Ok(Replay {
        plan,
        compactions,
        effects,
        seqs,
        ranges,
        log: conv.into_log(),
    })
}
