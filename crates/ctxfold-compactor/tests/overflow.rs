//! A "context too long" answer leads to exactly one compaction and one
//! retry, against a real HTTP server on 127.0.0.1 that speaks OpenAI's
//! chat completions and rejects requests as too long when told to.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use common::*;
use ctxfold_compactor::{
    BasicCompactor, Context, Conversation, DigestOnly, Moment, OverflowError, retry_on_overflow,
};
use ctxfold_core::planner::ToolHints;
use ctxfold_core::projection::project;
use ctxfold_core::trigger::AutoPolicy;
use ctxfold_core::{Body, Log};
use ctxfold_providers::model::{ProviderConfig, ProviderKind};
use ctxfold_providers::{ChatRequest, Provider, request_from_view};
use ctxfold_store::EventLog;
use ctxfold_tokens::Heuristic;

/// A chat completions server: the first `overflows` requests get OpenAI's
/// context-length error, the rest an answer. It keeps every request body.
fn upstream(overflows: usize) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let bodies = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            let mut length = 0;
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let n = {
                let mut b = bodies.lock().unwrap();
                b.push(String::from_utf8_lossy(&body).into_owned());
                b.len()
            };
            let (status, reply) = if n <= overflows {
                (
                    "400 Bad Request",
                    r#"{"error":{"message":"This model's maximum context length is 4096 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#.to_owned(),
                )
            } else {
                (
                    "200 OK",
                    serde_json::json!({"id": "x", "object": "chat.completion", "model": "m",
                        "choices": [{"index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": "Done."}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})
                    .to_string(),
                )
            };
            let mut s = stream;
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    (url, seen)
}

fn setup(dir: &std::path::Path) -> EventLog {
    std::fs::create_dir_all(dir.join("c")).unwrap();
    EventLog::new(dir.join("c"))
}

fn send_with(
    provider: &Provider,
) -> impl FnMut(&Log) -> Result<String, ctxfold_providers::ProviderError> + '_ {
    move |log: &Log| {
        let req = request_from_view(
            log,
            &project(log),
            &ChatRequest {
                model: "m".into(),
                ..ChatRequest::default()
            },
        );
        provider.chat(&req, None).map(|r| r.text())
    }
}

fn compactions(log: &Log) -> usize {
    log.records()
        .iter()
        .filter(|r| matches!(r.body, Body::Compaction(_)))
        .count()
}

#[test]
fn an_overflow_gets_one_compaction_and_one_retry() {
    let dir = tempfile::tempdir().unwrap();
    let store = setup(dir.path());
    let (url, seen) = upstream(1);
    let provider = Provider::new("fake", ProviderConfig::new(ProviderKind::OpenAi, url));
    let c = BasicCompactor::new(
        AutoPolicy::default(),
        ToolHints::default(),
        Box::new(Heuristic::default()),
        Box::new(DigestOnly),
    );
    let mut conv = Conversation::new(Log::new(), &store);
    for k in 0..12 {
        conv.append(turn(k)).unwrap();
    }
    // The window is not known: the provider's answer is all there is.
    let ctx = Context::new(Moment::BeforeStep, None);
    let (answer, outcome) = retry_on_overflow(&c, &mut conv, &ctx, send_with(&provider), |e| {
        e.is_context_overflow()
    })
    .unwrap();
    assert_eq!(answer, "Done.");
    let outcome = outcome.expect("it compacted");
    assert_eq!(outcome.committed.len(), 1);
    let bodies = seen.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2, "one request, one retry");
    assert!(
        bodies[1].len() < bodies[0].len() / 2,
        "{} then {}",
        bodies[0].len(),
        bodies[1].len()
    );
    assert_eq!(compactions(conv.log()), 1);
    assert_eq!(
        compactions(&Log::from_records(store.load().unwrap().records)),
        1
    );
    checked_view(conv.log());
}

#[test]
fn a_second_overflow_is_returned_not_looped_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = setup(dir.path());
    let (url, seen) = upstream(usize::MAX);
    let provider = Provider::new("fake", ProviderConfig::new(ProviderKind::OpenAi, url));
    let c = BasicCompactor::new(
        AutoPolicy::default(),
        ToolHints::default(),
        Box::new(Heuristic::default()),
        Box::new(DigestOnly),
    );
    let mut conv = Conversation::new(Log::new(), &store);
    for k in 0..12 {
        conv.append(turn(k)).unwrap();
    }
    let ctx = Context::new(Moment::BeforeStep, Some(4096));
    let err = retry_on_overflow(&c, &mut conv, &ctx, send_with(&provider), |e| {
        e.is_context_overflow()
    })
    .unwrap_err();
    assert!(
        matches!(&err, OverflowError::Send(e) if e.is_context_overflow()),
        "{err}"
    );
    assert_eq!(seen.lock().unwrap().len(), 2, "never more than one retry");
    assert_eq!(compactions(conv.log()), 1, "one compaction");
}
