//! Providers against a fake upstream server on 127.0.0.1: wire shapes,
//! streaming, retries, timeouts and error classification.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::time::{Duration, Instant};

use ctxfold_core::Body;
use ctxfold_providers::{
    ChatRequest, ChatResponse, Message, Part, Provider, ProviderConfig, ProviderError,
    ProviderKind, Role, StopReason, StreamEvent, ToolSpec,
};
use ctxfold_testkit::upstream::Upstream;
use ctxfold_testkit::upstream::canned::{Reply, sse};
use serde_json::{Value, json};

fn request(model: &str) -> ChatRequest {
    let mut r = ChatRequest::new(model);
    r.system = Some("be brief".into());
    r.messages.push(Message {
        role: Role::User,
        parts: vec![Part::Text("read a.rs".into())],
    });
    r.tools.push(ToolSpec {
        name: "read".into(),
        description: "read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    });
    r
}

/// Call with streaming, collecting the events.
fn chat_streamed(
    p: &Provider,
    r: &ChatRequest,
) -> (Result<ChatResponse, ProviderError>, Vec<StreamEvent>) {
    let mut events = Vec::new();
    let mut on = |e: StreamEvent| events.push(e);
    let res = p.chat(r, Some(&mut on));
    (res, events)
}

fn openai_answer() -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {
            "role": "assistant", "content": "Reading it.", "reasoning_content": "The user wants a.rs.",
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}}]},
            "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59}
    })
}

fn openai_stream() -> String {
    let chunk = |delta: Value, finish: Value| {
        (
            None,
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4o-2024-08-06",
                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut events = vec![
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"reasoning_content": "The user "}), Value::Null),
        chunk(json!({"reasoning_content": "wants a.rs."}), Value::Null),
        chunk(json!({"content": "Reading"}), Value::Null),
        chunk(json!({"content": " it."}), Value::Null),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                   "function": {"name": "read", "arguments": ""}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"pa"}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\":\"a.rs\"}"}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
    ];
    events.push((
        None,
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4o-2024-08-06", "choices": [],
               "usage": {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59}}),
    ));
    let mut s = sse(&events);
    s.push_str("data: [DONE]\n\n");
    s
}

fn expected_parts() -> Vec<Part> {
    vec![
        Part::Reasoning {
            text: "The user wants a.rs.".into(),
            signature: None,
        },
        Part::Text("Reading it.".into()),
        Part::ToolCall {
            id: "call_1".into(),
            name: "read".into(),
            arguments: json!({"path": "a.rs"}),
        },
    ]
}

#[test]
fn openai_non_streaming_request_and_response() {
    let server = Upstream::canned(vec![Reply::json(200, openai_answer())]);
    let p = server.provider(ProviderKind::OpenAi);
    let r = p.chat(&request("gpt-4o"), None).unwrap();
    assert_eq!(r.parts, expected_parts());
    assert_eq!(r.stop_reason, Some(StopReason::ToolUse));
    let u = r.usage.as_ref().unwrap();
    assert_eq!((u.input_tokens, u.output_tokens), (42, 17));
    assert_eq!(r.raw["id"], "chatcmpl-1", "the raw response is kept");
    assert_eq!(r.model, "fake/gpt-4o");

    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].header("authorization"), Some("Bearer test-key"));
    let body = seen[0].json();
    assert_eq!(body["model"], "gpt-4o");
    assert_eq!(body["stream"], false);
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "be brief"})
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "read a.rs"})
    );
    assert_eq!(body["tools"][0]["function"]["name"], "read");

    let records = r.to_records("2026-01-01T00:00:00Z");
    assert_eq!(records.len(), 3);
    assert!(matches!(records[0].body, Body::Reasoning { .. }));
    let usage = &records[2].metadata.as_ref().unwrap()["usage"];
    assert_eq!(usage["model"], "fake/gpt-4o");
    assert_eq!(usage["input_tokens"], 42);
    assert_eq!(usage["raw"]["total_tokens"], 59);
}

#[test]
fn openai_stream_gives_the_same_response_and_deltas_as_they_come() {
    let server = Upstream::canned(vec![Reply::sse(&openai_stream())]);
    let p = server.provider(ProviderKind::OpenAi);
    let (res, events) = chat_streamed(&p, &request("gpt-4o"));
    let streamed = res.unwrap();

    let body = server.requests()[0].json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        events,
        vec![
            StreamEvent::Reasoning("The user ".into()),
            StreamEvent::Reasoning("wants a.rs.".into()),
            StreamEvent::Text("Reading".into()),
            StreamEvent::Text(" it.".into()),
            StreamEvent::ToolCall {
                id: "call_1".into(),
                name: "read".into()
            },
        ]
    );

    let plain_server = Upstream::canned(vec![Reply::json(200, openai_answer())]);
    let plain = plain_server
        .provider(ProviderKind::OpenAi)
        .chat(&request("gpt-4o"), None)
        .unwrap();
    assert_eq!(streamed.parts, plain.parts);
    assert_eq!(streamed.usage, plain.usage);
    assert_eq!(streamed.stop_reason, plain.stop_reason);
    assert_eq!(
        streamed.raw["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
        "{\"path\":\"a.rs\"}"
    );
    assert_eq!(streamed.raw["model"], "gpt-4o-2024-08-06");
}

fn anthropic_answer() -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "thinking", "thinking": "The user wants a.rs.", "signature": "EqQBCkYIARgCIkD"},
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.rs"}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 40, "cache_read_input_tokens": 2, "output_tokens": 17}
    })
}

fn anthropic_stream() -> String {
    sse(&[
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 40, "cache_read_input_tokens": 2, "output_tokens": 1}}}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ),
        (Some("ping"), json!({"type": "ping"})),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "The user "}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "wants a.rs."}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "signature_delta", "signature": "EqQBCkYIARgCIkD"}}),
        ),
        (
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "text", "text": ""}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "text_delta", "text": "Reading"}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "text_delta", "text": " it."}}),
        ),
        (
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": 1}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 2,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": "{\"path\": "}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": "\"a.rs\"}"}}),
        ),
        (
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": 2}),
        ),
        (
            Some("message_delta"),
            json!({"type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 17}}),
        ),
        (Some("message_stop"), json!({"type": "message_stop"})),
    ])
}

fn anthropic_parts() -> Vec<Part> {
    vec![
        Part::Reasoning {
            text: "The user wants a.rs.".into(),
            signature: Some("EqQBCkYIARgCIkD".into()),
        },
        Part::Text("Reading it.".into()),
        Part::ToolCall {
            id: "toolu_1".into(),
            name: "read".into(),
            arguments: json!({"path": "a.rs"}),
        },
    ]
}

#[test]
fn anthropic_non_streaming_request_and_response() {
    let server = Upstream::canned(vec![Reply::json(200, anthropic_answer())]);
    let p = server.provider(ProviderKind::Anthropic);
    let r = p.chat(&request("claude-sonnet-4-5"), None).unwrap();
    assert_eq!(r.parts, anthropic_parts());
    assert_eq!(r.stop_reason, Some(StopReason::ToolUse));
    let u = r.usage.as_ref().unwrap();
    assert_eq!((u.input_tokens, u.output_tokens), (42, 17));

    let seen = &server.requests()[0];
    assert_eq!(seen.path, "/v1/messages");
    assert_eq!(seen.header("x-api-key"), Some("test-key"));
    assert_eq!(seen.header("anthropic-version"), Some("2023-06-01"));
    let body = seen.json();
    assert_eq!(body["system"], "be brief");
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "read a.rs"}]}])
    );

    let records = r.to_records("t");
    assert_eq!(
        records[0].metadata.as_ref().unwrap()["anthropic_thinking_signature"],
        "EqQBCkYIARgCIkD"
    );
    assert_eq!(
        records[2].metadata.as_ref().unwrap()["usage"]["input_tokens"],
        42
    );
}

#[test]
fn anthropic_stream_assembles_thinking_signature_and_tool_input() {
    let server = Upstream::canned(vec![Reply::sse(&anthropic_stream())]);
    let p = server.provider(ProviderKind::Anthropic);
    let (res, events) = chat_streamed(&p, &request("claude-sonnet-4-5"));
    let r = res.unwrap();
    assert_eq!(server.requests()[0].json()["stream"], true);
    assert_eq!(r.parts, anthropic_parts());
    assert_eq!(r.stop_reason, Some(StopReason::ToolUse));
    let u = r.usage.as_ref().unwrap();
    assert_eq!(
        (u.input_tokens, u.output_tokens),
        (42, 17),
        "input from message_start, output from message_delta"
    );
    assert_eq!(
        events,
        vec![
            StreamEvent::Reasoning("The user ".into()),
            StreamEvent::Reasoning("wants a.rs.".into()),
            StreamEvent::Text("Reading".into()),
            StreamEvent::Text(" it.".into()),
            StreamEvent::ToolCall {
                id: "toolu_1".into(),
                name: "read".into()
            },
        ]
    );
    let plain = Upstream::canned(vec![Reply::json(200, anthropic_answer())]);
    let plain = plain
        .provider(ProviderKind::Anthropic)
        .chat(&request("claude-sonnet-4-5"), None)
        .unwrap();
    assert_eq!(r.parts, plain.parts);
    assert_eq!(r.usage, plain.usage);
    assert_eq!(
        r.raw["content"], plain.raw["content"],
        "the stream folds into the same message"
    );
}

#[test]
fn a_429_is_retried_and_then_succeeds() {
    let server = Upstream::canned(vec![
        Reply::json(
            429,
            json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
        )
        .header("retry-after-ms", "20"),
        Reply::json(200, openai_answer()),
    ]);
    let p = server.provider(ProviderKind::OpenAi);
    let r = p.chat(&request("gpt-4o"), None).unwrap();
    assert_eq!(r.text(), "Reading it.");
    assert_eq!(server.requests().len(), 2, "one retry");
}

#[test]
fn a_429_that_persists_is_rate_limited_after_the_retries() {
    let server = Upstream::canned(vec![Reply::json(
        429,
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
    )]);
    let e = server
        .provider(ProviderKind::Anthropic)
        .chat(&request("claude"), None)
        .unwrap_err();
    assert!(
        matches!(&e, ProviderError::RateLimited { attempts: 3, message } if message == "slow down"),
        "{e}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn a_500_is_retried_then_reported() {
    let server = Upstream::canned(vec![Reply::text(500, "upstream exploded")]);
    let p = server.provider(ProviderKind::OpenAi);
    let e = p.chat(&request("gpt-4o"), None).unwrap_err();
    assert!(
        matches!(&e, ProviderError::Server { status: 500, attempts: 3, message } if message == "upstream exploded"),
        "{e:?}"
    );
    assert_eq!(server.requests().len(), 3, "max_retries 2: three requests");
    assert_eq!(
        e.to_string(),
        "server error (HTTP 500) after 3 attempt(s): upstream exploded"
    );
}

#[test]
fn a_400_is_not_retried() {
    let server = Upstream::canned(vec![Reply::json(
        400,
        json!({"error": {"message": "Invalid schema for function 'read'", "type": "invalid_request_error"}}),
    )]);
    let e = server
        .provider(ProviderKind::OpenAi)
        .chat(&request("gpt-4o"), None)
        .unwrap_err();
    assert!(
        matches!(e, ProviderError::Rejected { status: 400, .. }),
        "{e}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn malformed_sse_is_named() {
    let server = Upstream::canned(vec![Reply::sse(
        "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"hi\"}}]}\n\ndata: {not json\n\n",
    )]);
    let (res, events) = chat_streamed(&server.provider(ProviderKind::OpenAi), &request("m"));
    let ProviderError::Malformed { detail } = res.unwrap_err() else {
        panic!("expected Malformed")
    };
    assert!(detail.contains("line 4"), "{detail}");
    assert!(detail.contains("not JSON"), "{detail}");
    assert!(detail.contains("{not json"), "{detail}");
    assert_eq!(
        events,
        vec![StreamEvent::Text("hi".into())],
        "what came before was shown"
    );

    let server = Upstream::canned(vec![Reply::sse("event: message_start\nhello there\n\n")]);
    let (res, _) = chat_streamed(&server.provider(ProviderKind::Anthropic), &request("m"));
    let ProviderError::Malformed { detail } = res.unwrap_err() else {
        panic!("expected Malformed")
    };
    assert!(
        detail.contains("line 2") && detail.contains("hello there"),
        "{detail}"
    );
}

#[test]
fn a_stream_cut_short_is_malformed() {
    let full = anthropic_stream();
    let cut = &full[..full.find("event: message_delta").unwrap()];
    let server = Upstream::canned(vec![Reply::sse(cut)]);
    let (res, _) = chat_streamed(&server.provider(ProviderKind::Anthropic), &request("m"));
    let e = res.unwrap_err();
    assert!(e.to_string().contains("ended before `message_stop`"), "{e}");

    let full = openai_stream();
    let cut = &full[..full.find("\"tool_calls\"").unwrap()];
    let cut = &cut[..cut.rfind("\n\n").unwrap() + 2];
    let server = Upstream::canned(vec![Reply::sse(cut)]);
    let (res, _) = chat_streamed(&server.provider(ProviderKind::OpenAi), &request("m"));
    let e = res.unwrap_err();
    assert!(
        e.to_string()
            .contains("ended before the answer was finished"),
        "{e}"
    );
}

#[test]
fn context_overflow_is_recognized_for_each_shape() {
    let shapes = [
        (
            ProviderKind::OpenAi,
            Reply::json(
                400,
                json!({"error": {
                "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
            ),
        ),
        (
            ProviderKind::Anthropic,
            Reply::json(
                400,
                json!({"type": "error", "error": {
                "type": "invalid_request_error", "message": "prompt is too long: 208315 tokens > 200000 maximum"}}),
            ),
        ),
        (
            ProviderKind::OpenAi,
            Reply::json(
                400,
                json!({"error": {"code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error", "n_prompt_tokens": 4500, "n_ctx": 4096}}),
            ),
        ),
    ];
    for (kind, reply) in shapes {
        let server = Upstream::canned(vec![reply]);
        let e = server.provider(kind).chat(&request("m"), None).unwrap_err();
        assert!(e.is_context_overflow(), "{kind:?}: {e}");
        assert_eq!(server.requests().len(), 1, "an overflow is not retried");
    }
}

#[test]
fn errors_inside_a_stream_are_classified() {
    let body = sse(&[
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {"content": [], "usage": {}}}),
        ),
        (
            Some("error"),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    ]);
    let server = Upstream::canned(vec![Reply::sse(&body)]);
    let (res, _) = chat_streamed(&server.provider(ProviderKind::Anthropic), &request("m"));
    assert!(
        matches!(res, Err(ProviderError::Server { status: 529, .. })),
        "{res:?}"
    );

    let body =
        "data: {\"error\": {\"message\": \"prompt is too long for the context window\"}}\n\n";
    let server = Upstream::canned(vec![Reply::sse(body)]);
    let (res, _) = chat_streamed(&server.provider(ProviderKind::OpenAi), &request("m"));
    assert!(res.unwrap_err().is_context_overflow());
}

#[test]
fn a_server_that_ignores_stream_is_read_as_one_answer() {
    let server = Upstream::canned(vec![Reply::json(200, openai_answer())]);
    let (res, events) = chat_streamed(&server.provider(ProviderKind::OpenAi), &request("m"));
    assert_eq!(res.unwrap().parts, expected_parts());
    assert!(events.contains(&StreamEvent::Text("Reading it.".into())));
}

#[test]
fn a_bad_key_is_an_auth_error_naming_its_variable() {
    let server = Upstream::canned(vec![Reply::json(
        401,
        json!({"error": {"message": "Incorrect API key provided: sk-...", "type": "invalid_request_error", "code": "invalid_api_key"}}),
    )]);
    let mut c = ProviderConfig::new(ProviderKind::OpenAi, format!("{}/v1", server.base));
    // Cargo sets this variable for every test run: it stands for a key.
    c.api_key_env = Some("CARGO_PKG_NAME".into());
    let e = Provider::new("openai", c)
        .chat(&request("gpt-4o"), None)
        .unwrap_err();
    assert!(matches!(e, ProviderError::Auth { status: 401, .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "authentication failed (HTTP 401): bad or missing API key in $CARGO_PKG_NAME: Incorrect API key provided: sk-..."
    );
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer ctxfold-providers")
    );
    assert_eq!(server.requests().len(), 1, "not retried");
}

#[test]
fn an_unset_key_variable_fails_before_any_request() {
    let server = Upstream::canned(vec![Reply::json(200, openai_answer())]);
    let c = ProviderConfig::new(ProviderKind::OpenAi, format!("{}/v1", server.base))
        .with_key_env("CTXFOLD_SURELY_UNSET_KEY_VARIABLE");
    let e = Provider::new("openai", c)
        .chat(&request("gpt-4o"), None)
        .unwrap_err();
    assert!(
        matches!(&e, ProviderError::MissingKey { var, .. } if var == "CTXFOLD_SURELY_UNSET_KEY_VARIABLE"),
        "{e}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn a_404_is_an_unknown_model() {
    let server = Upstream::canned(vec![Reply::json(
        404,
        json!({"error": {"message": "The model `gpt-9` does not exist or you do not have access to it.",
                         "type": "invalid_request_error", "code": "model_not_found"}}),
    )]);
    let e = server
        .provider(ProviderKind::OpenAi)
        .chat(&request("gpt-9"), None)
        .unwrap_err();
    assert!(
        matches!(&e, ProviderError::UnknownModel { model, .. } if model == "gpt-9"),
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with("unknown model `gpt-9`: The model"),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("or the provider's base_url is wrong"),
        "{e}"
    );
}

#[test]
fn a_slow_server_hits_the_timeout() {
    let server = Upstream::canned(vec![
        Reply::json(200, openai_answer()).delayed(Duration::from_millis(1500)),
    ]);
    let mut c = ProviderConfig::new(ProviderKind::OpenAi, format!("{}/v1", server.base));
    c.timeout = Duration::from_millis(250);
    let start = Instant::now();
    let e = Provider::new("slow", c)
        .chat(&request("m"), None)
        .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_millis(1200),
        "{:?}",
        start.elapsed()
    );
    assert!(
        matches!(&e, ProviderError::Timeout { after, .. } if *after == Duration::from_millis(250)),
        "{e:?}"
    );
    assert!(
        e.to_string().ends_with("did not answer within 250 ms"),
        "{e}"
    );
}

#[test]
fn a_refused_connection_is_unreachable() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let c = ProviderConfig::new(ProviderKind::Anthropic, format!("http://127.0.0.1:{port}"));
    let e = Provider::new("down", c)
        .chat(&request("m"), None)
        .unwrap_err();
    assert!(matches!(e, ProviderError::Unreachable { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with(&format!("cannot reach http://127.0.0.1:{port}/v1/messages")),
        "{e}"
    );
}

#[test]
fn configured_max_tokens_and_extra_reach_the_body() {
    let server = Upstream::canned(vec![Reply::json(200, anthropic_answer())]);
    let mut c = ProviderConfig::new(ProviderKind::Anthropic, server.base.clone());
    c.max_tokens = Some(1000);
    let p = Provider::new("a", c);
    let mut r = request("claude");
    r.extra.insert(
        "thinking".into(),
        json!({"type": "enabled", "budget_tokens": 512}),
    );
    p.chat(&r, None).unwrap();
    let body = server.requests()[0].json();
    assert_eq!(body["max_tokens"], 1000);
    assert_eq!(body["thinking"]["budget_tokens"], 512);
}

#[test]
fn context_window_from_each_server_then_the_table() {
    let llama = Upstream::canned(vec![Reply::json(
        200,
        json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}),
    )]);
    let c = ProviderConfig::new(ProviderKind::OpenAi, format!("{}/v1", llama.base))
        .with_window_from(ctxfold_providers::WindowSource::LlamacppProps);
    assert_eq!(
        Provider::new("llamacpp", c).context_window("any").unwrap(),
        Some(8192)
    );
    assert_eq!(llama.requests()[0].path, "/props");
    assert_eq!(llama.requests()[0].method, "GET");

    let ollama = Upstream::canned(vec![Reply::json(
        200,
        json!({"parameters": "temperature 0.7", "model_info": {"general.architecture": "llama", "llama.context_length": 131072}}),
    )]);
    let c = ProviderConfig::new(ProviderKind::OpenAi, format!("{}/v1", ollama.base))
        .with_window_from(ctxfold_providers::WindowSource::OllamaShow);
    assert_eq!(
        Provider::new("ollama", c)
            .context_window("llama3.2:1b")
            .unwrap(),
        Some(131072)
    );
    assert_eq!(ollama.requests()[0].path, "/api/show");
    assert_eq!(ollama.requests()[0].json(), json!({"model": "llama3.2:1b"}));

    let vllm = Upstream::canned(vec![Reply::json(
        200,
        json!({"object": "list", "data": [{"id": "other", "max_model_len": 1}, {"id": "Qwen/Qwen2.5-7B", "max_model_len": 32768}]}),
    )]);
    let c = ProviderConfig::new(ProviderKind::OpenAi, format!("{}/v1", vllm.base))
        .with_window_from(ctxfold_providers::WindowSource::ModelsList);
    assert_eq!(
        Provider::new("vllm", c)
            .context_window("Qwen/Qwen2.5-7B")
            .unwrap(),
        Some(32768)
    );
    assert_eq!(vllm.requests()[0].path, "/v1/models");

    // A server that does not say: the table, else unknown.
    let silent = Upstream::canned(vec![Reply::text(404, "not found")]);
    let c = ProviderConfig::new(ProviderKind::OpenAi, format!("{}/v1", silent.base))
        .with_window_from(ctxfold_providers::WindowSource::LlamacppProps);
    let p = Provider::new("x", c);
    assert_eq!(p.context_window("gpt-4o-mini").unwrap(), Some(128_000));
    assert_eq!(p.context_window("my-finetune").unwrap(), None);

    // The table alone, without asking anyone.
    let c = ProviderConfig::new(ProviderKind::Anthropic, "http://127.0.0.1:9");
    assert_eq!(
        Provider::new("anthropic", c)
            .context_window("claude-opus-4-1")
            .unwrap(),
        Some(200_000)
    );
}
