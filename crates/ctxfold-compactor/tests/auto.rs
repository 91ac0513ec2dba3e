//! Automatic compaction through the library, on real files: between turns
//! over a conversation grown turn by turn, before every step of a runaway
//! turn, the circuit breaker, and the property that every request stays
//! valid.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::cell::Cell;
use std::rc::Rc;

use common::*;
use ctxfold_compactor::{
    BasicCompactor, Compactor, Context, Conversation, DigestOnly, Moment, Status, Summarizers,
};
use ctxfold_core::compaction::Source;
use ctxfold_core::planner::{Rule, SummaryRequest, ToolHints};
use ctxfold_core::summarizer::{SummarizeError, Summarizer, SummaryInput, SummaryOutput};
use ctxfold_core::trigger::AutoPolicy;
use ctxfold_core::{Body, Log};
use ctxfold_store::EventLog;
use ctxfold_tokens::Heuristic;

fn compactor(policy: AutoPolicy) -> BasicCompactor {
    BasicCompactor::new(
        policy,
        ToolHints::default(),
        Box::new(Heuristic::default()),
        Box::new(DigestOnly),
    )
}

fn on() -> AutoPolicy {
    AutoPolicy {
        enabled: true,
        ..AutoPolicy::default()
    }
}

/// 30 turns grown one by one into a 6,000-token window with the default
/// rule: compaction fires exactly when the view is over the threshold and
/// the conversation has more than `min_turns` turns, over the rolling range
/// after the last compaction, the bands never overlap, every view stays
/// under the window, and the records on disk say `auto`.
#[test]
fn between_turns_rolling_bands_keep_the_view_under_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let store = EventLog::new(dir.path().join("c"));
    std::fs::create_dir_all(dir.path().join("c")).unwrap();
    let window = 6_000;
    let policy = on();
    let threshold = policy.budget(window, 0, None).trigger;
    let c = compactor(policy.clone());
    let mut conv = Conversation::new(Log::new(), &store);
    let mut fired = Vec::new();
    let mut last_to: Option<u32> = None;
    for k in 0..30 {
        conv.append(turn(k)).unwrap();
        let turns = conv.log().turn_count();
        // What the trigger must decide, computed here from scratch.
        let size = checked_view(conv.log());
        let due = turns > policy.min_turns as usize && size > threshold;
        let out = c
            .compact_if_needed(&mut conv, &Context::new(Moment::BetweenTurns, Some(window)))
            .unwrap();
        assert_eq!(out.before, size, "the running size is the view's size");
        assert_eq!(out.compacted(), due, "turn {turns}: {out:?}");
        if let Some(done) = out.committed.first() {
            let comp = &done.compaction;
            assert_eq!(comp.source, Source::Auto);
            // Rolling range: after the last compaction (and after keep_first
            // = 1), up to the last turn less keep_last = 3; the same firing
            // may go on down to the target over what lies before the
            // retained tail (a band that can end inside a turn).
            let from = last_to.map_or(1, |t| t + 1).max(1);
            assert!(
                comp.from_turn + 1 >= from && comp.from_turn <= from,
                "turn {turns}: {comp:?}"
            );
            if comp.summary.is_none() && out.committed.len() == 1 {
                assert_eq!(comp.to_turn, turns as u32 - 4, "turn {turns}");
            }
            last_to = out.committed.iter().map(|c| c.compaction.to_turn).max();
            // At the target, or so near it that going on would save less
            // than a firing must.
            let b = out.budget.unwrap();
            assert!(
                out.after <= b.target + b.min_gain(),
                "turn {turns}: {out:?}"
            );
            fired.push(turns);
        }
        let after = checked_view(conv.log());
        assert!(after < window as usize, "turn {turns}: ~{after} tokens");
    }
    assert!(fired.len() >= 2, "fired at {fired:?}");
    // Once per boundary: asking again at the same turn does nothing.
    let again = c
        .compact_if_needed(&mut conv, &Context::new(Moment::BetweenTurns, Some(window)))
        .unwrap();
    assert!(!again.compacted());
    // What the store holds is what the conversation holds.
    let loaded = store.load().unwrap();
    assert_eq!(loaded.records.len(), conv.log().len());
    let autos = loaded
        .records
        .iter()
        .filter(|r| matches!(&r.body, Body::Compaction(c) if c.source == Source::Auto))
        .count();
    assert!(autos >= fired.len());
}

/// A single turn of 200 tool steps grown step by step into an 8,000-token
/// window, compacted before every model call with a summary rule: the
/// early closed steps are folded, every request is valid and fits the
/// window, and the turn runs to its end. The request and the last step
/// stay verbatim.
#[test]
fn a_runaway_turn_is_folded_by_steps_and_every_request_fits() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("c")).unwrap();
    let store = EventLog::new(dir.path().join("c"));
    let window = 8_000;
    let policy = AutoPolicy {
        rule: Rule {
            summary: Some(SummaryRequest::Derive {
                model: None,
                instructions: None,
            }),
            keep_first: Some(ctxfold_core::bounds::Keep::Count(1)),
            ..Rule::default()
        },
        ..on()
    };
    let c = compactor(policy);
    let mut conv = Conversation::new(Log::new(), &store);
    conv.append(runaway_opening()).unwrap();
    let mut firings = 0;
    for k in 0..200 {
        // Before the model call that makes step k.
        let out = c
            .compact_if_needed(&mut conv, &Context::new(Moment::BeforeStep, Some(window)))
            .unwrap();
        firings += out.committed.len();
        for done in &out.committed {
            // Step granular: the range ends inside the one turn.
            assert_eq!((done.compaction.from_turn, done.compaction.to_turn), (0, 0));
            assert!(done.compaction.to_seq.is_some());
        }
        let size = checked_view(conv.log());
        assert!(size <= window as usize, "step {k}: ~{size} tokens: {out:?}");
        let (call, result) = step(k);
        conv.append(vec![call, result]).unwrap();
    }
    conv.append(vec![ctxfold_core::Record::new(
        0,
        "t",
        Body::Assistant {
            content: "All tests pass now.".into(),
        },
    )])
    .unwrap();
    assert!(firings >= 3, "{firings} firings");
    let log = conv.log();
    let view = ctxfold_core::projection::project(log);
    assert_valid_request(log, &view);
    let texts: Vec<String> = ctxfold_core::materialize::materialize(log, &view)
        .iter()
        .filter_map(|r| match &r.body {
            Body::User { content, .. } | Body::Assistant { content } => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t == "Make every test in the repository pass.")
    );
    assert_eq!(
        texts.last().map(String::as_str),
        Some("All tests pass now.")
    );
}

/// A summarizer that counts its calls and fails, or returns a summary as
/// large as what it replaces.
struct Counting {
    calls: Rc<Cell<usize>>,
    fail: bool,
}

struct CountingSummarizer {
    calls: Rc<Cell<usize>>,
    fail: bool,
}

impl Summarizer for CountingSummarizer {
    fn name(&self) -> String {
        "test/counting".into()
    }
    fn summarize(&self, input: SummaryInput<'_>) -> Result<SummaryOutput, SummarizeError> {
        self.calls.set(self.calls.get() + 1);
        if self.fail {
            return Err(SummarizeError {
                summarizer: self.name(),
                message: "the model is down".into(),
            });
        }
        // Everything the range held, and more: never smaller.
        let text: String = input.log.records()[input.range.0..=input.range.1]
            .iter()
            .map(|r| r.to_json_line())
            .collect();
        Ok(SummaryOutput {
            text: text.repeat(2),
            provenance: ctxfold_core::compaction::Provenance::Derived {
                summarizer: self.name(),
                version: None,
                instructions: None,
                method: None,
            },
        })
    }
}

impl Summarizers for Counting {
    fn get(&self, _model: Option<&str>) -> Result<Box<dyn Summarizer>, String> {
        Ok(Box::new(CountingSummarizer {
            calls: self.calls.clone(),
            fail: self.fail,
        }))
    }
}

/// A summarizer that fails, or whose summaries do not shrink, trips the
/// breaker after 1 + `compaction_retries` attempts; no call follows in that
/// turn, the next turn may try again, and every failed attempt is recorded
/// as such (nothing else).
#[test]
fn failing_or_useless_summaries_trip_the_breaker() {
    for fail in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("c")).unwrap();
        let store = EventLog::new(dir.path().join("c"));
        let calls = Rc::new(Cell::new(0));
        let policy = AutoPolicy {
            compaction_retries: 2,
            // Outputs are not excerpted on arrival here: the summaries are
            // what is under test.
            excerpt_share: 0.0,
            rule: Rule {
                summary: Some(SummaryRequest::Derive {
                    model: Some("test/counting".into()),
                    instructions: None,
                }),
                ..Rule::default()
            },
            ..on()
        };
        let c = BasicCompactor::new(
            policy,
            ToolHints::default(),
            Box::new(Heuristic::default()),
            Box::new(Counting {
                calls: calls.clone(),
                fail,
            }),
        );
        let mut conv = Conversation::new(Log::new(), &store);
        conv.append(runaway_opening()).unwrap();
        let ctx = Context::new(Moment::BeforeStep, Some(4_000));
        let mut statuses = Vec::new();
        for k in 0..40 {
            let (call, result) = step(k);
            conv.append(vec![call, result]).unwrap();
            let out = c.compact_if_needed(&mut conv, &ctx).unwrap();
            assert!(out.committed.is_empty(), "{out:?}");
            statuses.push(out.status);
        }
        assert_eq!(calls.get(), 3, "fail={fail}: 1 + compaction_retries calls");
        assert!(conv.breaker().is_open());
        assert!(statuses.iter().any(|s| matches!(s, Status::BreakerOpen)));
        // Each attempt is on record as failed; the view is untouched.
        let attempts = ctxfold_core::attempt::attempts(conv.log());
        assert_eq!(attempts.len(), 3);
        assert!(
            attempts.iter().all(|a| a.state() == "failed"),
            "{attempts:?}"
        );
        assert!(
            !conv
                .log()
                .records()
                .iter()
                .any(|r| matches!(r.body, Body::Compaction(_)))
        );
        // A new turn: attempts are allowed again, as many as before.
        conv.begin_turn();
        // (One attempt a call: a firing escalates instead of retrying.)
        c.compact_if_needed(&mut conv, &ctx).unwrap();
        c.compact_if_needed(&mut conv, &ctx).unwrap();
        assert_eq!(calls.get(), 5);
    }
}

/// A single step larger than the window is cut in the view only (its
/// result shown as head and tail with a note), so the request fits; the
/// record is untouched and undoing the compaction brings it back. When
/// the fixed part alone fills the window, that is said, once, and nothing
/// is recorded. (With outputs excerpted on arrival, the default, such a
/// result is excerpted before it is measured: `excerpts.rs`.)
#[test]
fn a_step_larger_than_the_window_is_clipped_in_the_view_only() {
    let c = compactor(AutoPolicy {
        excerpt_share: 0.0,
        ..on()
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("c")).unwrap();
    let store = EventLog::new(dir.path().join("c"));
    let mut conv = Conversation::new(Log::new(), &store);
    conv.append(runaway_opening()).unwrap();
    let (call, mut result) = step(0);
    let big = (0..4_000)
        .map(|k| format!("line {k}\n"))
        .collect::<String>();
    if let Body::ToolResult { content, .. } = &mut result.body {
        *content = big.clone();
    }
    conv.append(vec![call, result]).unwrap();
    let ctx = Context::new(Moment::BeforeStep, Some(4_000));
    let out = c.compact_if_needed(&mut conv, &ctx).unwrap();
    let budget = out.budget.unwrap();
    assert!(out.before > budget.limit(), "{out:?}");
    assert!(out.after <= budget.limit(), "{out:?}");
    let clip = out
        .committed
        .iter()
        .find(|k| k.compaction.clip_chars.is_some())
        .unwrap_or_else(|| panic!("{out:?}"));
    assert_eq!(clip.effect.clipped, 1, "{out:?}");
    let steps = &clip.compaction.budget.as_ref().unwrap().escalation;
    assert_eq!(steps.last(), Some(&ctxfold_core::budget::Escalation::Clip));
    // The view shows the head and the tail, and says what was left out.
    let view = ctxfold_core::projection::project(conv.log());
    let shown: Vec<String> = view.items.iter().filter_map(|i| i.clipped_text()).collect();
    assert_eq!(shown.len(), 1);
    assert!(shown[0].starts_with("line 0\n") && shown[0].ends_with("line 3999\n"));
    assert!(
        shown[0].contains("left out here by compaction"),
        "{}",
        shown[0]
    );
    // The raw record is untouched.
    let raw = store.load().unwrap().records;
    assert!(
        raw.iter()
            .any(|r| matches!(&r.body, Body::ToolResult { content, .. } if *content == big))
    );
    checked_view(conv.log());

    // No room at all: said, and nothing recorded.
    let mut conv = Conversation::new(Log::new(), &ctxfold_compactor::Memory);
    conv.append(runaway_opening()).unwrap();
    let (call, result) = step(0);
    conv.append(vec![call, result]).unwrap();
    let mut full = Context::new(Moment::BeforeStep, Some(4_000));
    full.extra_tokens = 3_900;
    let out = c.compact_if_needed(&mut conv, &full).unwrap();
    assert!(matches!(out.status, Status::NoRoom { .. }), "{out:?}");
    assert!(out.committed.is_empty());
}

/// A summarizer whose summaries are smaller than the raw events but larger
/// than what the range takes up in the view now.
struct Bloated;

impl Summarizer for Bloated {
    fn name(&self) -> String {
        "test/bloated".into()
    }
    fn summarize(&self, input: SummaryInput<'_>) -> Result<SummaryOutput, SummarizeError> {
        let raw: usize = input.log.records()[input.range.0..=input.range.1]
            .iter()
            .map(|r| r.to_json_line().len())
            .sum();
        Ok(SummaryOutput {
            text: "s".repeat(raw * 8 / 10),
            provenance: ctxfold_core::compaction::Provenance::Derived {
                summarizer: self.name(),
                version: None,
                instructions: None,
                method: None,
            },
        })
    }
}

struct BloatedOnly;

impl Summarizers for BloatedOnly {
    fn get(&self, _model: Option<&str>) -> Result<Box<dyn Summarizer>, String> {
        Ok(Box::new(Bloated))
    }
}

/// A summary smaller than the raw range but larger than what the range
/// takes up in the view (already omitted by hand) is refused: the view
/// never grows.
#[test]
fn a_summary_that_would_grow_the_view_is_refused() {
    let journal = ctxfold_compactor::Memory;
    let mut conv = Conversation::new(Log::new(), &journal);
    conv.append(runaway_opening()).unwrap();
    for k in 0..40 {
        let (call, result) = step(k);
        conv.append(vec![call, result]).unwrap();
    }
    // Omit steps 0–37 by hand.
    let log = conv.log();
    let mut omit = ctxfold_core::Compaction::new(0, 0, Source::User);
    omit.from_seq = Some(log.records()[2].seq);
    omit.to_seq = Some(log.records()[2 + 38 * 2 - 1].seq);
    omit.tool_calls = Some(ctxfold_core::compaction::ToolPolicy::Omit);
    conv.append(vec![ctxfold_core::Record::new(
        0,
        "t",
        Body::Compaction(Box::new(omit)),
    )])
    .unwrap();
    let before = checked_view(conv.log());
    let c = BasicCompactor::new(
        AutoPolicy {
            rule: Rule {
                summary: Some(SummaryRequest::Derive {
                    model: Some("test/bloated".into()),
                    instructions: None,
                }),
                ..Rule::default()
            },
            ..on()
        },
        ToolHints::default(),
        Box::new(Heuristic::default()),
        Box::new(BloatedOnly),
    );
    let window = u32::try_from(before).unwrap() * 9 / 10;
    let out = c
        .compact_if_needed(&mut conv, &Context::new(Moment::BeforeStep, Some(window)))
        .unwrap();
    // A small band may shrink the view; the merge over the omitted steps,
    // which would multiply it, is refused.
    assert!(
        matches!(&out.status, Status::Failed { error } if error.contains("would not shrink the view"))
            || !out.committed.is_empty(),
        "{:?}",
        out.status
    );
    assert!(
        out.committed
            .iter()
            .all(|c| c.compaction.to_seq > Some(2 + 38 * 2))
    );
    assert!(checked_view(conv.log()) <= before);
}

/// `compact_region` refuses a range holding a call still waiting for its
/// result; between turns, an unfinished turn is never folded, even with
/// `keep_last = 0`.
#[test]
fn an_open_step_is_never_compacted() {
    let journal = ctxfold_compactor::Memory;
    let mut conv = Conversation::new(Log::new(), &journal);
    for k in 0..8 {
        conv.append(turn(k)).unwrap();
    }
    let (call, _) = step(99);
    conv.append(vec![call]).unwrap();
    let policy = AutoPolicy {
        min_turns: 1,
        rule: Rule {
            keep_last: Some(ctxfold_core::bounds::Keep::Count(0)),
            ..Rule::builtin()
        },
        ..on()
    };
    let c = compactor(policy);
    let n = conv.log().len();
    let err = c
        .compact_region(
            &mut conv,
            (0, n - 1),
            &Context::new(Moment::BeforeStep, None),
        )
        .unwrap_err();
    assert!(err.to_string().contains("waiting for its result"), "{err}");
    let out = c
        .compact_if_needed(&mut conv, &Context::new(Moment::BetweenTurns, Some(1_000)))
        .unwrap();
    let done = &out.committed[0].compaction;
    assert!(
        done.to_seq.unwrap() < conv.log().records()[n - 1].seq,
        "{done:?}"
    );
    assert!(
        done.to_turn < 8,
        "the turn in progress is left alone: {done:?}"
    );
}

/// Compactions the assistant had approved during a turn are in force from
/// the next turn: automatic compaction at that boundary does not fold over
/// them (a newer summary would shadow them), and the next turn's first step
/// measures the view with them in force.
#[test]
fn what_the_assistant_deferred_to_the_next_turn_is_not_folded_over() {
    use ctxfold_compactor::assistant::{Proposal, plan_proposals, record_proposals};
    use ctxfold_core::bounds::Keep;
    use ctxfold_core::compaction::{ReasoningPolicy, ToolPolicy};
    use ctxfold_core::trigger::Skip;

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("c")).unwrap();
    let store = EventLog::new(dir.path().join("c"));
    let window = 6_000;
    let c = compactor(on());
    let mut conv = Conversation::new(Log::new(), &store);
    for k in 0..20 {
        conv.append(turn(k)).unwrap();
    }
    let over = checked_view(conv.log());
    assert!(
        over > on().budget(window, 0, None).trigger,
        "the test needs a view over the threshold"
    );
    let proposals = vec![Proposal {
        rule: Rule {
            keep_last: Some(Keep::Count(1)),
            reasoning: Some(ReasoningPolicy::Strip),
            tool_calls: Some(ToolPolicy::Strip),
            ..Rule::default()
        },
        note: "The files hold it all.".into(),
    }];
    let preview = plan_proposals(conv.log(), &proposals, &ToolHints::default(), None).unwrap();
    let approved: Vec<_> = preview
        .iter()
        .filter_map(|p| p.compaction.clone())
        .collect();
    let recorded = record_proposals(
        &mut conv,
        &proposals,
        &approved,
        &ToolHints::default(),
        None,
        Vec::new(),
    )
    .unwrap();
    assert_eq!(recorded.len(), 1);
    assert_eq!(
        recorded[0].compaction,
        preview[0].compaction.clone().unwrap()
    );
    assert_eq!(recorded[0].compaction.deferred_until_turn, Some(20));
    // Not in force yet: the view is as large as before.
    assert_eq!(checked_view(conv.log()), over);

    let out = c
        .compact_if_needed(&mut conv, &Context::new(Moment::BetweenTurns, Some(window)))
        .unwrap();
    assert_eq!(
        out.status,
        Status::Skipped {
            why: Skip::DeferredPending { compactions: 1 }
        }
    );
    assert!(!out.compacted());

    // The next turn starts: the preview's "after" size is what it sees.
    let mut opening = turn(20);
    opening.truncate(2);
    conv.append(opening).unwrap();
    let out = c
        .compact_if_needed(&mut conv, &Context::new(Moment::BeforeStep, Some(window)))
        .unwrap();
    let now = checked_view(conv.log());
    assert_eq!(out.before, now);
    assert!(now < over, "{now} < {over}");
    assert!(
        now.abs_diff(preview[0].tokens.1) < 40,
        "the preview's estimate ({}) is the view the next turn starts from ({now}), but for its opening",
        preview[0].tokens.1
    );
}

/// Before a step of the same turn, automatic compaction starts its band
/// after what the assistant deferred: a newer band over the approved
/// summary would shadow it once both are in force.
#[test]
fn a_step_of_the_same_turn_does_not_fold_over_what_was_deferred() {
    use ctxfold_compactor::assistant::{Proposal, plan_proposals, record_proposals};
    use ctxfold_core::bounds::{Bound, Keep};
    use ctxfold_core::projection::covered_indices;

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("c")).unwrap();
    let store = EventLog::new(dir.path().join("c"));
    let window = 6_000;
    // Summaries for the automatic rule, so that it would grow over others.
    let c = compactor(AutoPolicy {
        rule: Rule {
            summary: Some(SummaryRequest::Derive {
                model: None,
                instructions: None,
            }),
            ..Rule::builtin()
        },
        ..on()
    });
    let mut conv = Conversation::new(Log::new(), &store);
    for k in 0..20 {
        conv.append(turn(k)).unwrap();
    }
    let proposals = vec![Proposal {
        rule: Rule {
            to: Some(Bound::Turn(10)),
            keep_last: Some(Keep::Count(1)),
            summary: Some(SummaryRequest::Supplied {
                text: "Turns 1-10 read modules 0-9; each has two tests.".into(),
                author: Source::Assistant,
            }),
            ..Rule::default()
        },
        note: "The modules are on disk.".into(),
    }];
    let planned = plan_proposals(conv.log(), &proposals, &ToolHints::default(), None).unwrap();
    let approved: Vec<_> = planned
        .iter()
        .filter_map(|p| p.compaction.clone())
        .collect();
    record_proposals(
        &mut conv,
        &proposals,
        &approved,
        &ToolHints::default(),
        None,
        Vec::new(),
    )
    .unwrap();
    let deferred_end = covered_indices(conv.log(), &approved[0]).unwrap().1;

    let out = c
        .compact_if_needed(&mut conv, &Context::new(Moment::BeforeStep, Some(window)))
        .unwrap();
    assert!(out.compacted(), "the view is over the threshold: {out:?}");
    for done in &out.committed {
        let (lo, _) = covered_indices(conv.log(), &done.compaction).unwrap();
        assert!(
            lo > deferred_end,
            "{lo} > {deferred_end}: {:?}",
            done.compaction
        );
    }
}

/// A conversation whose view is `head` (a summary over its first turn, or
/// that turn's opening request kept verbatim) and then a short newest
/// message, with nothing else to fold; and the window the view is twice
/// as large as.
fn over_by_its_head(summary: bool) -> (Log, u32) {
    use ctxfold_core::compaction::{Compaction, Provenance, Summary};
    let big =
        "The user and the assistant went through every module of the repository. ".repeat(400);
    let at = |b| ctxfold_core::Record::new(0, "2026-01-01T00:00:00Z", b);
    let mut conv = Conversation::new(Log::new(), &ctxfold_compactor::Memory);
    let opening = if summary {
        "Fix the tests.".to_owned()
    } else {
        big.clone()
    };
    conv.append(vec![
        at(Body::TurnStart),
        at(Body::User {
            content: opening,
            author: None,
        }),
    ])
    .unwrap();
    if summary {
        // An agent's own compaction of the first turn (as a Claude Code
        // session's is imported), with a long summary.
        let mut head = Compaction::new(0, 0, Source::Agent);
        head.summary = Some(Summary {
            text: big,
            provenance: Provenance::Supplied {
                author: Source::Agent,
            },
        });
        conv.append(vec![at(Body::Compaction(Box::new(head)))])
            .unwrap();
    }
    conv.append(vec![
        at(Body::TurnStart),
        at(Body::User {
            content: "And now the docs.".into(),
            author: None,
        }),
    ])
    .unwrap();
    let log = conv.log().clone();
    let tokens = checked_view(&log);
    (log, (tokens / 2) as u32)
}

/// When what lies before the newest unit keeps a request over the window
/// (the fixed part and the newest unit fit by far) and nothing more can
/// be folded, the firing names it: a summary at the head of the view that
/// cannot be made smaller, or the opening request kept verbatim; not the
/// newest unit, which fits (issue 45: "the fixed part and the newest unit
/// alone are over the window … unit_tokens=4021 fixed=0 limit=18750").
#[test]
fn what_keeps_a_request_over_the_window_is_named() {
    for (summary, cause) in [
        (true, "the summary at the head of the view holds ~"),
        (false, "what stays verbatim before the newest unit"),
    ] {
        let (log, window) = over_by_its_head(summary);
        let mut conv = Conversation::new(log, &ctxfold_compactor::Memory);
        let ctx = Context::new(Moment::BeforeStep, Some(window));
        // No excerpts on arrival: the long opening stays whole.
        let c = compactor(AutoPolicy {
            excerpt_share: 0.0,
            ..on()
        });
        let out = c.compact_if_needed(&mut conv, &ctx).unwrap();
        let budget = out.budget.unwrap();
        assert!(out.before > budget.limit(), "{out:?}");
        assert!(out.committed.is_empty(), "{out:?}");
        let Status::StillOver { reason } = &out.status else {
            panic!("{summary}: {out:?}");
        };
        assert!(reason.contains(cause), "{reason}");
        assert!(reason.contains("nothing more can be folded"), "{reason}");
    }
}
