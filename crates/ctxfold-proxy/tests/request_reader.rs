//! The proxy's kept readers against reading every request whole: two books
//! on two workspaces get the same sequence of requests (an agent going on,
//! a retry of an earlier state, an edit, a new head, a repeated tool-call
//! id, a malformed message), one through `prepare_bytes` (raw messages,
//! only what changed read again) and one through `prepare` on the parsed
//! body. Every answer, error and stored record must be the same.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::sync::Arc;

use ctxfold_core::planner::{Rule, SummaryRequest};
use ctxfold_core::trigger::AutoPolicy;
use ctxfold_core::{Body, Log};
use ctxfold_proxy::book::{Book, Compaction, Naming, Prepared};
use ctxfold_store::{EventLog, Workspace};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A book whose automatic rule strips old tool steps, and with
/// `summarize` also folds old turns into an (offline) summary.
fn book(dir: &std::path::Path, summarize: bool) -> Book {
    let ws = Workspace::init(dir).unwrap().0;
    let mut rule = Rule::builtin();
    if summarize {
        rule.summary = Some(SummaryRequest::Derive {
            model: None,
            instructions: None,
        });
    }
    let compaction = Compaction {
        policy: AutoPolicy {
            enabled: true,
            rule,
            ..AutoPolicy::default()
        },
        hints: Default::default(),
        summarizers: Arc::new(|| Box::new(ctxfold_compactor::DigestOnly)),
        // Small: the sequences fold as they grow.
        window: Some(1_500),
        observe: false,
        emulate: Default::default(),
    };
    Book::open(Arc::new(ws), compaction).unwrap()
}

/// The three APIs whose requests are read one message at a time.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    Chat,
    Messages,
    Responses,
}

impl Shape {
    fn protocol(self) -> ctxfold_proxy::protocol::Shape {
        use ctxfold_proxy::protocol::{chat, messages, responses};
        match self {
            Shape::Chat => &chat::Chat,
            Shape::Messages => &messages::Messages,
            Shape::Responses => &responses::Responses,
        }
    }
}

fn user(shape: Shape, t: &str) -> Value {
    match shape {
        Shape::Responses => json!({"type": "message", "role": "user", "content": t}),
        _ => json!({"role": "user", "content": t}),
    }
}

fn assistant(shape: Shape, t: &str) -> Value {
    match shape {
        Shape::Chat => json!({"role": "assistant", "content": t}),
        Shape::Messages => json!({"role": "assistant", "content": [{"type": "text", "text": t}]}),
        Shape::Responses => {
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t}]})
        }
    }
}

fn call(shape: Shape, id: &str, path: &str) -> Value {
    match shape {
        Shape::Chat => json!({"role": "assistant", "content": null, "tool_calls": [{"id": id,
            "type": "function", "function": {"name": "read_file", "arguments": format!("{{\"path\":\"{path}\"}}")}}]}),
        Shape::Messages => json!({"role": "assistant", "content": [{"type": "tool_use", "id": id,
            "name": "read_file", "input": {"path": path}}]}),
        Shape::Responses => json!({"type": "function_call", "call_id": id, "name": "read_file",
            "arguments": format!("{{\"path\":\"{path}\"}}")}),
    }
}

fn result(shape: Shape, id: &str, t: &str) -> Value {
    match shape {
        Shape::Chat => json!({"role": "tool", "tool_call_id": id, "content": t}),
        // Every other one with a prompt-cache marker, which moves when its
        // block is folded.
        Shape::Messages if t.len().is_multiple_of(2) => {
            json!({"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": id, "content": t, "cache_control": {"type": "ephemeral"}}]})
        }
        Shape::Messages => {
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": t}]})
        }
        Shape::Responses => json!({"type": "function_call_output", "call_id": id, "output": t}),
    }
}

fn malformed(shape: Shape) -> Value {
    match shape {
        Shape::Chat => json!({"role": 9}),
        Shape::Messages => json!({"role": "system", "content": "no"}),
        Shape::Responses => json!({"type": 5}),
    }
}

fn body(shape: Shape, system: &str, messages: &[Value]) -> Value {
    match shape {
        Shape::Chat => {
            let mut all = vec![json!({"role": "system", "content": system})];
            all.extend_from_slice(messages);
            json!({"model": "m", "messages": all, "temperature": 0.5})
        }
        Shape::Messages => {
            json!({"model": "m", "system": system, "max_tokens": 64, "messages": messages})
        }
        Shape::Responses => json!({"model": "m", "instructions": system, "input": messages}),
    }
}

/// What an agent does next.
#[derive(Debug, Clone)]
enum Step {
    /// A tool step of `n` lines, then maybe a new user message.
    Go { lines: usize, user: bool },
    /// The request of an earlier state again (a retry).
    Retry { back: usize },
    /// Message `at` edited.
    Edit { at: usize },
    /// Another system prompt.
    NewHead,
    /// A call reusing the id of an earlier call.
    RepeatId,
    /// A message the shape cannot read, then taken back.
    Malformed,
    /// A tool step whose result the user answers at once (a user message
    /// right after the result, or in Anthropic's case also in the same
    /// message).
    Interrupt { same_message: bool },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (1..40usize, any::<bool>()).prop_map(|(lines, user)| Step::Go { lines, user }),
        1 => (1..6usize).prop_map(|back| Step::Retry { back }),
        1 => (0..30usize).prop_map(|at| Step::Edit { at }),
        1 => Just(Step::NewHead),
        1 => Just(Step::RepeatId),
        1 => Just(Step::Malformed),
        2 => any::<bool>().prop_map(|same_message| Step::Interrupt { same_message }),
    ]
}

/// What a prepared request says, the conversation id aside (ids are
/// random).
fn outcome(
    r: Result<Prepared, ctxfold_proxy::book::PrepareError>,
    compactions: &mut usize,
) -> String {
    match r {
        Ok(p) => {
            *compactions += p.compactions;
            format!(
                "body {:?} before {} after {} compactions {} history {:?} answer {:?}",
                // The same JSON: messages that go as sent keep the client's
                // own spelling.
                p.body
                    .map(|b| serde_json::from_slice::<Value>(&b).expect("the body is JSON")),
                p.tokens_before,
                p.tokens_after,
                p.compactions,
                p.history,
                p.answer.map(|a| (a.shape.name(), a.model))
            )
        }
        Err(e) => format!("error {e}"),
    }
}

/// `text` with each recall handle's conversation tag (`recall k3f9q:41`)
/// written as `TAG`: the two stores' conversations began at different
/// times, so their tags differ while everything else must not.
fn without_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(k) = rest.find("recall ") {
        let (head, tail) = rest.split_at(k + "recall ".len());
        out.push_str(head);
        match tail.get(..6) {
            Some(t) if t.ends_with(':') => {
                out.push_str("TAG:");
                rest = &tail[6..];
            }
            _ => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// Every conversation's records, without time stamps or ids, in a fixed
/// order.
fn stored(dir: &std::path::Path) -> Vec<String> {
    let ws = Workspace::at(dir.join(".ctxfold"));
    let mut all: Vec<String> = ws
        .list()
        .unwrap()
        .conversations
        .iter()
        .map(|c| {
            let records = EventLog::new(&c.dir).load().unwrap().records;
            let bodies: Vec<Body> = Log::from_records(records)
                .records()
                .iter()
                .map(|r| r.body.clone())
                .collect();
            format!("{bodies:?}")
        })
        .collect();
    all.sort();
    all
}

/// Run `steps` through both books; returns how many compactions they made.
fn run(shape: Shape, steps: &[Step], summarize: bool) -> Result<usize, TestCaseError> {
    let mut compactions = 0;
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (book(a_dir.path(), summarize), book(b_dir.path(), summarize));
    let mut system = "You are a coding agent.".to_owned();
    let mut msgs = vec![user(shape, "Fix the tests.")];
    let mut history: Vec<Vec<Value>> = Vec::new();
    let mut k = 0;
    for (n, s) in steps.iter().enumerate() {
        let mut sent = msgs.clone();
        match s {
            Step::Go { lines, user: u } => {
                k += 1;
                let id = format!("call_{k}");
                msgs.push(call(shape, &id, &format!("src/f{k}.rs")));
                msgs.push(result(shape, &id, &"let x = 1; // a line\n".repeat(*lines)));
                if *u {
                    msgs.push(assistant(shape, &format!("Done with step {k}.")));
                    msgs.push(user(shape, &format!("Now part {k}.")));
                }
                sent = msgs.clone();
            }
            Step::Retry { back } => {
                if let Some(h) = history.iter().rev().nth(*back) {
                    sent = h.clone();
                }
            }
            Step::Edit { at } => {
                let i = at % msgs.len();
                msgs[i] = user(shape, &format!("edited at step {n}"));
                sent = msgs.clone();
            }
            Step::NewHead => {
                system = format!("You are agent {n}.");
                sent = msgs.clone();
            }
            Step::RepeatId => {
                k += 1;
                msgs.push(call(shape, "call_1", "src/again.rs"));
                msgs.push(result(shape, "call_1", "again"));
                sent = msgs.clone();
            }
            Step::Malformed => {
                sent.push(malformed(shape));
            }
            Step::Interrupt { same_message } => {
                k += 1;
                let id = format!("call_{k}");
                msgs.push(call(shape, &id, "src/x.rs"));
                if *same_message && shape == Shape::Messages {
                    msgs.push(json!({"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": id, "content": "partial"},
                        {"type": "text", "text": "stop, read y instead"}]}));
                } else {
                    msgs.push(result(shape, &id, "partial"));
                    msgs.push(user(shape, "stop, read y instead"));
                }
                sent = msgs.clone();
            }
        }
        history.push(sent.clone());
        let v = body(shape, &system, &sent);
        let bytes = serde_json::to_vec(&v).unwrap();
        let got = without_tags(&outcome(
            a.prepare_bytes(shape.protocol(), &bytes, &Naming::default()),
            &mut compactions,
        ));
        let want = without_tags(&outcome(
            b.prepare(shape.protocol(), &v, &Naming::default()),
            &mut 0,
        ));
        prop_assert_eq!(got, want, "step {} ({:?}) of {:?}", n, s, steps);
    }
    prop_assert_eq!(stored(a_dir.path()), stored(b_dir.path()));
    Ok(compactions)
}

#[test]
fn messages_of_one_role_in_a_row_render_as_a_whole_body_does() {
    // Anthropic joins them; a message between them must not go as its raw
    // text while the rest is folded.
    let mut steps: Vec<Step> = (0..6)
        .map(|_| Step::Go {
            lines: 30,
            user: true,
        })
        .collect();
    steps.push(Step::Interrupt {
        same_message: false,
    });
    steps.extend((0..4).map(|_| Step::Go {
        lines: 30,
        user: false,
    }));
    for shape in [Shape::Chat, Shape::Messages, Shape::Responses] {
        let n = run(shape, &steps, false).unwrap() + run(shape, &steps, true).unwrap();
        assert!(n >= 1, "{shape:?}: folded {n} times");
    }
}

#[test]
fn a_long_tool_loop_folds_and_reads_the_same() {
    let steps: Vec<Step> = (0..40)
        .map(|i| Step::Go {
            lines: 30,
            user: i % 8 == 7,
        })
        .collect();
    for shape in [Shape::Chat, Shape::Messages, Shape::Responses] {
        let n = run(shape, &steps, false).unwrap() + run(shape, &steps, true).unwrap();
        assert!(n >= 2, "{shape:?}: the loop folded {n} times");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn chat_requests_read_as_a_whole_body_reads(
        steps in prop::collection::vec(step(), 1..14),
        summarize in any::<bool>(),
    ) {
        run(Shape::Chat, &steps, summarize)?;
    }

    #[test]
    fn messages_requests_read_as_a_whole_body_reads(
        steps in prop::collection::vec(step(), 1..14),
        summarize in any::<bool>(),
    ) {
        run(Shape::Messages, &steps, summarize)?;
    }

    #[test]
    fn responses_requests_read_as_a_whole_body_reads(
        steps in prop::collection::vec(step(), 1..14),
        summarize in any::<bool>(),
    ) {
        run(Shape::Responses, &steps, summarize)?;
    }
}
