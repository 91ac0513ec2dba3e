//! Issue 7 item 25: an upstream that echoes the request's credentials in an
//! error (a status body, a JSON error in a 200, an error event in a stream)
//! never gets the key printed or stored: not in the error's text, not in
//! its Debug form, not in what the summarizer reports or returns.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::time::Duration;

use ctxfold_core::summarizer::{Summarizer, SummaryInput};
use ctxfold_core::{Body, Log, Record};
use ctxfold_providers::redact::REDACTED;
use ctxfold_providers::{
    ChatRequest, ModelSummarizer, Part, Provider, ProviderConfig, ProviderKind, Role, StreamEvent,
};
use ctxfold_testkit::upstream::Upstream;
use ctxfold_testkit::upstream::canned::{Reply, sse};
use serde_json::json;

const KEY: &str = "sk-test-9f8e7d6c5b4a39281706";

fn provider(server: &Upstream, kind: ProviderKind) -> Provider {
    let base = match kind {
        ProviderKind::OpenAi => format!("{}/v1", server.base),
        ProviderKind::Anthropic => server.base.clone(),
    };
    let mut c = ProviderConfig::new(kind, base);
    c.api_key = Some(KEY.into());
    c.max_retries = 0;
    c.timeout = Duration::from_secs(10);
    Provider::new("echo", c)
}

fn request() -> ChatRequest {
    let mut r = ChatRequest::new("m");
    r.push(Role::User, Part::Text("hi".into()));
    r
}

/// What the server echoes: the header that carried the key.
fn header(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => "{authorization}",
        ProviderKind::Anthropic => "{x-api-key}",
    }
}

/// Every shape of echoed error, for `kind`.
fn echoing_replies(kind: ProviderKind) -> Vec<(&'static str, Reply, bool)> {
    let h = header(kind);
    let json_error = |status| {
        Reply::json(
            status,
            json!({"error": {"message": format!("bad credentials: {h}"), "type": "x"}}),
        )
        .echoing()
    };
    // A plain-text body long enough to be quoted with a cut that falls
    // inside the key.
    let long = format!("{}{h}{}", "x".repeat(285), "y".repeat(400));
    let stream_error = match kind {
        ProviderKind::OpenAi => sse(&[(
            None,
            json!({"error": {"message": format!("upstream said no to {h}"), "code": 401}}),
        )]),
        ProviderKind::Anthropic => sse(&[(
            Some("error"),
            json!({"type": "error", "error": {"type": "api_error", "message": format!("echo {h}")}}),
        )]),
    };
    vec![
        ("400", json_error(400), false),
        ("401", json_error(401), false),
        ("500", json_error(500), false),
        (
            "500 text",
            Reply::text(500, &format!("gateway dump: headers={h}")).echoing(),
            false,
        ),
        ("cut text", Reply::text(400, &long).echoing(), false),
        (
            "error in a 200",
            Reply::json(
                200,
                json!({"error": {"message": format!("{h}"), "code": 403}}),
            )
            .echoing(),
            false,
        ),
        (
            "stream error event",
            Reply::sse(&stream_error).echoing(),
            true,
        ),
    ]
}

fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(KEY), "{what}: the key leaked: {text}");
    // Not even its start (a quote cut through it).
    assert!(
        !text.contains(&KEY[..5]),
        "{what}: part of the key leaked: {text}"
    );
}

#[test]
fn errors_never_hold_the_key_whatever_the_upstream_echoes() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        for (what, reply, streamed) in echoing_replies(kind) {
            let server = Upstream::canned(vec![reply]);
            let p = provider(&server, kind);
            let mut sink = |_: StreamEvent| {};
            let stream: Option<&mut dyn FnMut(StreamEvent)> =
                if streamed { Some(&mut sink) } else { None };
            let e = p.chat(&request(), stream).unwrap_err();
            // The server did get the key, and did echo it.
            let seen = server.requests();
            assert!(
                seen[0].headers.iter().any(|(_, v)| v.contains(KEY)),
                "{what}"
            );
            let what = format!("{kind:?} {what}");
            assert_clean(&what, &e.to_string());
            assert_clean(&what, &format!("{e:?}"));
            assert!(
                e.to_string().contains(REDACTED),
                "{what}: the echo should show where the key was: {e}"
            );
        }
    }
}

fn log() -> Log {
    let mut recs = Vec::new();
    for (i, b) in [
        Body::TurnStart,
        Body::User {
            content: "Please fix the parser".into(),
            author: None,
        },
        Body::Assistant {
            content: "Fixed: the loop bound was off by one.".into(),
        },
    ]
    .into_iter()
    .enumerate()
    {
        recs.push(Record::new(i as u64, "", b));
    }
    Log::from_records(recs)
}

#[test]
fn the_summarizer_reports_and_stores_no_key() {
    let l = log();
    let input = || SummaryInput {
        log: &l,
        range: (0, l.len() - 1),
        instructions: None,
    };
    // A failure: what would go into a compaction_finished error.
    for (what, reply, _) in echoing_replies(ProviderKind::OpenAi)
        .into_iter()
        .filter(|(_, _, streamed)| !streamed)
    {
        let server = Upstream::canned(vec![reply]);
        let s = ModelSummarizer::new(provider(&server, ProviderKind::OpenAi), "m")
            .with_window(Some(8192));
        let e = s.summarize(input()).unwrap_err();
        assert_clean(what, &e.to_string());
        assert_clean(what, &format!("{e:?}"));
    }
    // A summary that repeats the key (the upstream put it in the answer):
    // what would be stored as the summary and its provenance.
    let server = Upstream::canned(vec![
        Reply::json(
            200,
            json!({
                "id": "x", "object": "chat.completion", "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant",
                    "content": "The user fixed the parser. Request came with {authorization}."},
                    "finish_reason": "stop"}]
            }),
        )
        .echoing(),
    ]);
    let s =
        ModelSummarizer::new(provider(&server, ProviderKind::OpenAi), "m").with_window(Some(8192));
    let out = s.summarize(input()).unwrap();
    assert_clean("summary", &out.text);
    assert_clean("provenance", &format!("{:?}", out.provenance));
    assert!(
        out.text.contains(&format!("Bearer {REDACTED}")),
        "{}",
        out.text
    );
}

#[test]
fn a_credential_header_from_config_is_redacted_too() {
    let server = Upstream::canned(vec![
        Reply::json(
            401,
            json!({"error": {"message": "rejected {authorization}"}}),
        )
        .echoing(),
    ]);
    let mut c = ProviderConfig::new(ProviderKind::OpenAi, format!("{}/v1", server.base));
    c.max_retries = 0;
    c.headers
        .insert("Authorization".into(), format!("Bearer {KEY}"));
    let e = Provider::new("h", c).chat(&request(), None).unwrap_err();
    assert_clean("header", &format!("{e} {e:?}"));
}

#[test]
fn a_credential_header_echoed_without_its_scheme_is_redacted_whatever_the_scheme() {
    // The upstream quotes only the credential, not the header: the value
    // after the scheme must be a secret too, whatever the scheme's case.
    let secret = "dXNlcjpjb3JyZWN0LWhvcnNlLWJhdHRlcnk";
    for value in [
        format!("bearer {secret}"),
        format!("BEARER {secret}"),
        format!("Basic {secret}"),
        format!("Token {secret}"),
        format!("Bearer   {secret}"),
    ] {
        let server = Upstream::canned(vec![Reply::json(
            401,
            json!({"error": {"message": format!("credential {secret} is not valid")}}),
        )]);
        let mut c = ProviderConfig::new(ProviderKind::OpenAi, format!("{}/v1", server.base));
        c.max_retries = 0;
        c.headers.insert("Authorization".into(), value.clone());
        let e = Provider::new("h", c).chat(&request(), None).unwrap_err();
        let shown = format!("{e} {e:?}");
        assert!(!shown.contains(&secret[..8]), "{value}: leaked: {shown}");
        assert!(shown.contains(REDACTED), "{value}: {shown}");
    }
}
