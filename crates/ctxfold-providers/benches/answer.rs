//! Reading a provider's answer: a whole body and a stream of each API, as
//! the agent host and the proxy read them (`ctxfold_providers::wire`). The
//! answer is ~20 KB: reasoning, text and a tool call, the streams in ~1,000
//! small events, as the providers send them.
//!
//! `cargo bench -p ctxfold-providers --bench answer`

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::fmt::Write as _;

use ctxfold_providers::ProviderKind;
use ctxfold_providers::wire::{parse_answer, read_stream};
use serde_json::{Value, json};

fn main() {
    divan::main();
}

const PIECES: usize = 300;

fn piece(i: usize) -> String {
    format!("word{i} and a \"quote\" ")
}

fn anthropic_stream() -> String {
    let mut out = String::new();
    let mut ev = |name: &str, data: Value| {
        let _ = write!(out, "event: {name}\ndata: {data}\n\n");
    };
    ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "content": [], "model": "claude", "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": 10, "cache_read_input_tokens": 5000,
            "output_tokens": 1}}}),
    );
    ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
    );
    for i in 0..PIECES {
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": piece(i)}}),
        );
    }
    ev(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCkYIBxgCKkD"}}),
    );
    ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
    );
    for i in 0..PIECES {
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": piece(i)}}),
        );
    }
    ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 1}),
    );
    ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {}}}),
    );
    let input =
        json!({"path": "a.rs", "text": (0..PIECES).map(piece).collect::<String>()}).to_string();
    for chunk in input.as_bytes().chunks(40) {
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": String::from_utf8_lossy(chunk)}}),
        );
    }
    ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 2}),
    );
    ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 900}}),
    );
    ev("message_stop", json!({"type": "message_stop"}));
    out
}

fn openai_stream() -> String {
    let mut out = String::new();
    let mut chunk = |delta: Value, finish: Value| {
        let c = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000,
            "model": "gpt-4o", "system_fingerprint": "fp_1",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]});
        let _ = write!(out, "data: {c}\n\n");
    };
    chunk(json!({"role": "assistant", "content": ""}), Value::Null);
    for i in 0..PIECES {
        chunk(json!({"reasoning_content": piece(i)}), Value::Null);
    }
    for i in 0..PIECES {
        chunk(json!({"content": piece(i)}), Value::Null);
    }
    chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "write", "arguments": ""}}]}),
        Value::Null,
    );
    let args =
        json!({"path": "a.rs", "text": (0..PIECES).map(piece).collect::<String>()}).to_string();
    for piece in args.as_bytes().chunks(40) {
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": String::from_utf8_lossy(piece)}}]}),
            Value::Null,
        );
    }
    chunk(json!({}), json!("tool_calls"));
    let usage = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000,
        "model": "gpt-4o", "choices": [], "usage": {"prompt_tokens": 5000, "completion_tokens": 900, "total_tokens": 5900}});
    let _ = write!(out, "data: {usage}\n\ndata: [DONE]\n\n");
    out
}

#[divan::bench]
fn anthropic_streamed(bencher: divan::Bencher) {
    let s = anthropic_stream();
    bencher.bench(|| read_stream(ProviderKind::Anthropic, s.as_bytes(), "claude", false).unwrap());
}

#[divan::bench]
fn openai_streamed(bencher: divan::Bencher) {
    let s = openai_stream();
    bencher.bench(|| read_stream(ProviderKind::OpenAi, s.as_bytes(), "gpt-4o", false).unwrap());
}

#[divan::bench]
fn anthropic_whole(bencher: divan::Bencher) {
    let raw = read_stream(
        ProviderKind::Anthropic,
        anthropic_stream().as_bytes(),
        "claude",
        false,
    )
    .unwrap()
    .raw;
    bencher
        .with_inputs(|| raw.clone())
        .bench_values(|raw| parse_answer(ProviderKind::Anthropic, raw, "claude").unwrap());
}

#[divan::bench]
fn openai_whole(bencher: divan::Bencher) {
    let raw = read_stream(
        ProviderKind::OpenAi,
        openai_stream().as_bytes(),
        "gpt-4o",
        false,
    )
    .unwrap()
    .raw;
    bencher
        .with_inputs(|| raw.clone())
        .bench_values(|raw| parse_answer(ProviderKind::OpenAi, raw, "gpt-4o").unwrap());
}
