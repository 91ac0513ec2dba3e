//! A long agent session, generated deterministically, for the benchmarks
//! of the pages (`crates/ctxfold-ui/benches/page.rs`) and of `ctxfold
//! conversation show` (`crates/ctxfold-cli/benches/show.rs`).
//!
//! Turns of ten records (a user message, reasoning, three tool calls with
//! their results, an answer); every `every` turns a compaction. In
//! [`generate`] it folds what lies before the last three turns into a
//! summary (automatic, with now and then a manual strip or an assistant's
//! summary), as a long agent session does: the ranges nest, each starting
//! at the first record, and the view stays small. In [`generate_strips`]
//! it strips the reasoning and the tool results of the `every` turns
//! before the last three: ranges side by side, and a view about as long
//! as the log. In [`generate_overlapping`] each strip covers the `3 *
//! every / 2` turns before the last three, so its range overlaps the one
//! before by a third and each compaction still changes the view (all in
//! force), as when a user strips "the last fifteen turns" now and then.

use ctxfold_core::compaction::{Provenance, ReasoningPolicy, Source, Summary, ToolPolicy};
use ctxfold_core::{Body, Compaction, Log, Record};
use serde_json::json;

fn push(log: &mut Log, body: Body) -> u64 {
    let seq = log.next_seq();
    log.push(Record::new(seq, "2026-12-01T00:00:00Z", body));
    seq
}

/// `events` records (about), a summary of all but the last three turns
/// every `every` turns.
pub fn generate(events: usize, every: usize) -> Log {
    make(events, every, true)
}

/// `events` records (about), a strip of the `every` turns before the last
/// three every `every` turns.
pub fn generate_strips(events: usize, every: usize) -> Log {
    make(events, every, false)
}

/// `events` records (about), a strip of the `3 * every / 2` turns before
/// the last three every `every` turns: each range overlaps the one before,
/// and each is in force over the turns only it covers.
pub fn generate_overlapping(events: usize, every: usize) -> Log {
    make_shaped(events, every, Shape::Overlapping)
}

fn make(events: usize, every: usize, nested: bool) -> Log {
    make_shaped(
        events,
        every,
        if nested { Shape::Nested } else { Shape::Strips },
    )
}

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Nested,
    Strips,
    Overlapping,
}

fn make_shaped(events: usize, every: usize, shape: Shape) -> Log {
    let nested = shape == Shape::Nested;
    let span = if shape == Shape::Overlapping {
        every + every / 2
    } else {
        every
    };
    let mut log = Log::new();
    let mut turn = 0u32;
    let mut turn_starts: Vec<u64> = Vec::new();
    while turn_starts.len() < events / 10 {
        turn_starts.push(push(&mut log, Body::TurnStart));
        push(
            &mut log,
            Body::User {
                content: format!(
                    "Turn {turn}: fix the failing test in src/module_{}.rs",
                    turn % 50
                ),
                author: None,
            },
        );
        push(
            &mut log,
            Body::Reasoning {
                content: "Let me look at the file and run the tests. ".repeat(6),
            },
        );
        for k in 0..3 {
            let id = format!("call-{turn}-{k}");
            push(
                &mut log,
                Body::ToolCall {
                    id: id.clone(),
                    name: ["read_file", "run_tests", "edit_file"][k].into(),
                    arguments: json!({"path": format!("src/module_{}.rs", turn % 50), "content": "x".repeat(200)}).into(),
                },
            );
            push(
                &mut log,
                Body::ToolResult {
                    id,
                    content: format!("line {turn}\n").repeat(40),
                    is_error: k == 1 && turn.is_multiple_of(7),
                },
            );
        }
        push(
            &mut log,
            Body::Assistant {
                content: format!("Done with turn {turn}; the test passes now."),
            },
        );
        turn += 1;
        if !nested && (turn as usize).is_multiple_of(every) && turn as usize >= span + 3 {
            let to = turn - 4;
            let from = to + 1 - span as u32;
            let mut c = Compaction::new(from, to, Source::Auto);
            c.from_seq = Some(turn_starts[from as usize]);
            c.to_seq = Some(turn_starts[to as usize + 1] - 1);
            c.reasoning = Some(ReasoningPolicy::Strip);
            c.tool_calls = Some(ToolPolicy::StripResponses);
            push(&mut log, Body::Compaction(Box::new(c)));
        } else if nested && (turn as usize).is_multiple_of(every) && turn > 3 {
            let to = turn - 4;
            let n = turn as usize / every;
            let source = match n % 10 {
                3 => Source::User,
                7 => Source::Assistant,
                _ => Source::Auto,
            };
            let mut c = Compaction::new(0, to, source);
            c.from_seq = Some(0);
            c.to_seq = Some(turn_starts[to as usize + 1] - 1);
            if source == Source::User {
                c.reasoning = Some(ReasoningPolicy::Strip);
                c.tool_calls = Some(ToolPolicy::StripResponses);
            } else {
                c.summary = Some(Summary {
                    text: format!("Turns 1–{} fixed tests in many modules. ", to + 1).repeat(8),
                    provenance: match source {
                        Source::Assistant => Provenance::Supplied {
                            author: Source::Assistant,
                        },
                        _ => Provenance::Derived {
                            summarizer: "local/model".into(),
                            version: None,
                            instructions: None,
                            method: None,
                        },
                    },
                });
            }
            c = c.with_note("the view was over the automatic threshold");
            push(&mut log, Body::Compaction(Box::new(c)));
        }
    }
    log
}
