//! The overhead ctxfold adds to a provider call: from the log to the bytes
//! of the request body (project the log, build the neutral request, write
//! the provider's JSON) for a conversation of about 200,000 tokens with
//! compactions. Target: under 20 ms.
//!
//! `cargo bench -p ctxfold-providers --bench request`

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::sync::OnceLock;

use ctxfold_core::compaction::{Compaction, ReasoningPolicy, Source, ToolPolicy};
use ctxfold_core::estimate::raw_tokens;
use ctxfold_core::projection::project;
use ctxfold_core::{Body, Log, Record};
use ctxfold_providers::{ChatRequest, anthropic, openai, request_from_view};
use serde_json::json;

fn main() {
    divan::main();
}

/// 60 turns of an agent session (~200k tokens by the heuristic): user text,
/// signed reasoning, three tool calls with results of 2–6 KB, an answer;
/// then two compactions over the older half, as a long session has.
fn conversation() -> &'static Log {
    static LOG: OnceLock<Log> = OnceLock::new();
    LOG.get_or_init(|| {
        let mut recs = Vec::new();
        let mut push = |b: Body, meta: Option<serde_json::Value>| {
            let seq = recs.len() as u64;
            let mut r = Record::new(seq, "2026-11-30T00:00:00Z", b);
            if let Some(serde_json::Value::Object(m)) = meta {
                r.metadata = Some(Box::new(m));
            }
            recs.push(r);
        };
        for t in 0..60 {
            push(Body::TurnStart, None);
            push(
                Body::User {
                    content: format!(
                        "Step {t}: look at the failing test in src/mod{t}.rs and fix it. "
                    )
                    .repeat(4),
                    author: None,
                },
                None,
            );
            push(
                Body::Reasoning {
                    content: "The failure is in the parser; read it, then the test.".repeat(6),
                },
                Some(json!({"anthropic_thinking_signature": "EpcCCkYIBhgCKkD".repeat(20)})),
            );
            for k in 0..3 {
                let id = format!("call_{t}_{k}");
                push(
                    Body::ToolCall {
                        id: id.clone(),
                        name: "read_file".into(),
                        arguments: json!({"path": format!("src/mod{t}_{k}.rs")}).into(),
                    },
                    None,
                );
                push(
                    Body::ToolResult {
                        id,
                        content: "fn parse(input: &str) -> Result<Ast, Error> { todo!() }\n"
                            .repeat(40 + 30 * k),
                        is_error: false,
                    },
                    None,
                );
            }
            push(
                Body::Assistant {
                    content: "Fixed: the bound was off by one; the tests pass now. ".repeat(5),
                },
                None,
            );
        }
        let mut c = Compaction::new(0, 29, Source::Auto);
        c.reasoning = Some(ReasoningPolicy::Strip);
        c.tool_calls = Some(ToolPolicy::Strip);
        push(Body::Compaction(Box::new(c)), None);
        let mut c = Compaction::new(30, 44, Source::Auto);
        c.tool_calls = Some(ToolPolicy::StripResponses);
        push(Body::Compaction(Box::new(c)), None);
        let log = Log::from_records(recs);
        let tokens = raw_tokens(log.records());
        assert!((180_000..260_000).contains(&tokens), "{tokens} tokens");
        log
    })
}

fn options() -> ChatRequest {
    ChatRequest {
        system: Some("You are a careful coding assistant.".into()),
        max_tokens: Some(4096),
        ..ChatRequest::new("model")
    }
}

/// Log → OpenAI chat completions body, as bytes.
#[divan::bench]
fn log_to_openai_body(bencher: divan::Bencher) {
    let log = conversation();
    let opts = options();
    bencher.bench(|| {
        let view = project(divan::black_box(log));
        let req = request_from_view(log, &view, &opts);
        serde_json::to_vec(&openai::body(&req, true)).unwrap().len()
    });
}

/// Log → Anthropic messages body, as bytes.
#[divan::bench]
fn log_to_anthropic_body(bencher: divan::Bencher) {
    let log = conversation();
    let opts = options();
    bencher.bench(|| {
        let view = project(divan::black_box(log));
        let req = request_from_view(log, &view, &opts);
        serde_json::to_vec(&anthropic::body(&req, true))
            .unwrap()
            .len()
    });
}
