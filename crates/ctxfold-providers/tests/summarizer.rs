//! The model summarizer against a fake upstream on 127.0.0.1: a range that
//! fits goes in one call; one that does not is pruned, or chunked and
//! combined; a context overflow shrinks the budget; a failure says why.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use ctxfold_core::compaction::Provenance;
use ctxfold_core::summarizer::{Summarizer, SummaryInput};
use ctxfold_core::{Body, Log, Record};
use ctxfold_providers::{ModelSummarizer, ProviderKind};
use ctxfold_testkit::upstream::Upstream;
use ctxfold_testkit::upstream::canned::Reply;
use serde_json::{Value, json};

fn answer(text: &str) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        }),
    )
}

/// `turns` turns, each with a question, a tool call, a result of
/// `result_chars` characters and an answer.
fn log(turns: usize, result_chars: usize) -> Log {
    let mut recs = Vec::new();
    let mut push = |b: Body| {
        let seq = recs.len() as u64;
        recs.push(Record::new(seq, "", b));
    };
    for t in 0..turns {
        push(Body::TurnStart);
        push(Body::User {
            content: format!("Please fix bug {t} in src/m{t}.rs"),
            author: None,
        });
        push(Body::ToolCall {
            id: format!("c{t}"),
            name: "read_file".into(),
            arguments: json!({"path": format!("src/m{t}.rs")}).into(),
        });
        push(Body::ToolResult {
            id: format!("c{t}"),
            content: format!("{t}").repeat(result_chars),
            is_error: false,
        });
        push(Body::Assistant {
            content: format!("Fixed bug {t}: the loop bound was off by one."),
        });
    }
    Log::from_records(recs)
}

fn user_text(req: &Value) -> String {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn method(p: &Provenance) -> Option<String> {
    match p {
        Provenance::Derived { method, .. } => method.clone(),
        Provenance::Supplied { .. } => panic!("derived expected"),
    }
}

#[test]
fn a_range_that_fits_is_one_call_with_the_raw_events() {
    let server = Upstream::canned(vec![answer("Bugs 0 and 1 were fixed.")]);
    let s =
        ModelSummarizer::new(server.provider(ProviderKind::OpenAi), "tiny").with_window(Some(8192));
    let l = log(2, 100);
    let out = s
        .summarize(SummaryInput {
            log: &l,
            range: (0, l.len() - 1),
            instructions: None,
        })
        .unwrap();
    assert_eq!(out.text, "Bugs 0 and 1 were fixed.");
    assert_eq!(method(&out.provenance), None);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let body = reqs[0].json();
    let text = user_text(&body);
    assert!(
        text.contains("USER: Please fix bug 1 in src/m1.rs"),
        "{text}"
    );
    assert!(
        text.contains("TOOL RESULT read_file: 1111"),
        "raw results are sent whole"
    );
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Pending work"),
        "default instructions"
    );
    assert!(
        matches!(out.provenance, Provenance::Derived { ref summarizer, .. } if summarizer.ends_with("/tiny"))
    );
}

#[test]
fn long_tool_results_are_pruned_first() {
    let server = Upstream::canned(vec![answer("Pruned summary.")]);
    // The budget: (8,192 − 2,048 for the answer − ~430 for the
    // instructions) tokens × 3 characters ≈ 17,100 characters. Three results
    // of 9,000 characters do not fit; pruned to ~5,150 each they do.
    let s =
        ModelSummarizer::new(server.provider(ProviderKind::OpenAi), "tiny").with_window(Some(8192));
    let l = log(3, 9_000);
    let out = s
        .summarize(SummaryInput {
            log: &l,
            range: (0, l.len() - 1),
            instructions: None,
        })
        .unwrap();
    assert_eq!(method(&out.provenance).as_deref(), Some("pruned"));
    let text = user_text(&server.requests()[0].json());
    assert!(text.contains("characters cut"), "results were cut");
    assert!(text.contains("Fixed bug 2"), "nothing else was");
}

#[test]
fn a_range_larger_than_the_window_is_summarized_in_chunks_and_combined() {
    let server = Upstream::canned(vec![
        answer("part summary"),
        answer("part summary"),
        answer("part summary"),
        answer("part summary"),
        answer("part summary"),
        answer("part summary"),
        answer("part summary"),
        answer("part summary"),
        answer("Combined summary of everything."),
    ]);
    let progress = std::sync::Mutex::new(Vec::new());
    let s = ModelSummarizer::new(server.provider(ProviderKind::OpenAi), "tiny")
        .with_window(Some(2048))
        .with_max_tokens(Some(256))
        .with_progress(Box::new(|done, planned| {
            progress.lock().unwrap().push((done, planned))
        }));
    let l = log(12, 2_000);
    let out = s
        .summarize(SummaryInput {
            log: &l,
            range: (0, l.len() - 1),
            instructions: None,
        })
        .unwrap();
    let m = method(&out.provenance).unwrap();
    assert!(m.starts_with("chunked, "), "{m}");
    let parts: usize = m["chunked, ".len()..]
        .trim_end_matches(" parts")
        .parse()
        .unwrap();
    let reqs = server.requests();
    assert_eq!(
        reqs.len(),
        parts + 1,
        "one call per chunk, then one to combine"
    );
    // Every turn's request reached some chunk, and each chunk fit the budget.
    let all: String = reqs[..parts].iter().map(|r| user_text(&r.json())).collect();
    for t in 0..12 {
        assert!(
            all.contains(&format!("Please fix bug {t} in")),
            "turn {t} was summarized"
        );
    }
    for r in &reqs[..parts] {
        assert!(user_text(&r.json()).chars().count() < (2048 - 256) * 3);
    }
    // The last call combines the part summaries.
    let last = reqs.last().unwrap().json();
    assert!(user_text(&last).contains(&format!("--- Part {parts} of {parts} ---")));
    assert_eq!(out.text, "Combined summary of everything.");
    let p = progress.lock().unwrap();
    assert_eq!(p.last(), Some(&(parts + 1, parts + 1)));
}

#[test]
fn a_context_overflow_halves_the_budget_and_tries_again() {
    let overflow = Reply::json(
        400,
        json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error"}}),
    );
    let server = Upstream::canned(vec![
        overflow,
        answer("s"),
        answer("s"),
        answer("s"),
        answer("s"),
        answer("Done."),
    ]);
    let s =
        ModelSummarizer::new(server.provider(ProviderKind::OpenAi), "tiny").with_window(Some(8192));
    let l = log(4, 4_000);
    let out = s
        .summarize(SummaryInput {
            log: &l,
            range: (0, l.len() - 1),
            instructions: Some("Be terse."),
        })
        .unwrap();
    assert!(server.requests().len() >= 2);
    assert!(
        matches!(out.provenance, Provenance::Derived { instructions: Some(ref i), .. } if i == "Be terse.")
    );
}

#[test]
fn failures_say_which_summarizer_and_why() {
    let server = Upstream::canned(vec![Reply::json(
        401,
        json!({"error": {"message": "invalid api key"}}),
    )]);
    let s =
        ModelSummarizer::new(server.provider(ProviderKind::OpenAi), "tiny").with_window(Some(8192));
    let l = log(1, 10);
    let err = s
        .summarize(SummaryInput {
            log: &l,
            range: (0, l.len() - 1),
            instructions: None,
        })
        .unwrap_err();
    assert!(err.summarizer.ends_with("/tiny"));
    assert!(err.to_string().contains("invalid api key"), "{err}");
    let server = Upstream::canned(vec![answer("")]);
    let s =
        ModelSummarizer::new(server.provider(ProviderKind::OpenAi), "tiny").with_window(Some(8192));
    let err = s
        .summarize(SummaryInput {
            log: &l,
            range: (0, l.len() - 1),
            instructions: None,
        })
        .unwrap_err();
    assert!(err.to_string().contains("empty summary"), "{err}");
}

#[test]
fn a_single_step_larger_than_the_window_is_cut_to_fit() {
    let server = Upstream::canned(vec![answer("It was a very long question.")]);
    let s = ModelSummarizer::new(server.provider(ProviderKind::OpenAi), "tiny")
        .with_window(Some(2048))
        .with_max_tokens(Some(256));
    let mut recs = vec![Record::new(0, "", Body::TurnStart)];
    recs.push(Record::new(
        1,
        "",
        Body::User {
            content: "please ".repeat(8_000),
            author: None,
        },
    ));
    recs.push(Record::new(
        2,
        "",
        Body::ToolCall {
            id: "w".into(),
            name: "write_file".into(),
            arguments: json!({"content": "x".repeat(40_000)}).into(),
        },
    ));
    recs.push(Record::new(
        3,
        "",
        Body::ToolResult {
            id: "w".into(),
            content: "ok".into(),
            is_error: false,
        },
    ));
    let l = Log::from_records(recs);
    let out = s
        .summarize(SummaryInput {
            log: &l,
            range: (0, 3),
            instructions: None,
        })
        .unwrap();
    assert_eq!(method(&out.provenance).as_deref(), Some("pruned"));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1, "one call, no empty chunk, no combine");
    let text = user_text(&reqs[0].json());
    assert!(
        text.chars().count() < (2048 - 256) * 3,
        "{}",
        text.chars().count()
    );
    assert!(text.contains("USER: please please"));
}

#[test]
fn custom_instructions_reach_every_call_including_the_combine() {
    let server = Upstream::canned(vec![answer("part"); 30]);
    let s = ModelSummarizer::new(server.provider(ProviderKind::OpenAi), "tiny")
        .with_window(Some(2048))
        .with_max_tokens(Some(256));
    let l = log(12, 2_000);
    let out = s
        .summarize(SummaryInput {
            log: &l,
            range: (0, l.len() - 1),
            instructions: Some("Answer in French."),
        })
        .unwrap();
    assert!(method(&out.provenance).unwrap().starts_with("chunked"));
    for r in server.requests() {
        let system = r.json()["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(system.contains("Answer in French."), "{system}");
    }
    let last = server.requests().last().unwrap().json();
    assert!(
        last["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Combine them")
    );
}
