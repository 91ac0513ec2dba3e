//! The proxy tests' model: a deterministic agent on every API the proxy
//! speaks. A user message saying `steps=N` gets N tool calls (`read_file`
//! of `src/mK.rs`), one per request, then a text answer; the steps done
//! are read from the last tool result, as compaction may have folded the
//! ones before it. A model's name asks for an odd answer:
//!
//! - `chatty…`: every request answered in a few hundred characters, the
//!   same for the same request;
//! - `stall…`: a stream's first text, then silence (longer than the
//!   tests' `timeout_secs = 1`);
//! - `unframed…`: an answer delimited by the connection's close, cut
//!   short before its protocol's end;
//! - `cut…`: a stream that announces its whole length and breaks off
//!   before its end;
//! - `slow…`: a stream that pauses before its last event, for tests that
//!   kill the proxy mid-stream.
//!
//! Every request is checked first ([`super::checks`]); one that fails is
//! answered 400 (over the window: the error each API gives for it) and
//! its problem kept.

use std::time::Duration;

use serde_json::{Value, json};

use super::checks::{blocks, check, tokens};
use super::http::Answer;
use super::{Seen, Shared, anthropic, gemini, openai, responses};

/// What the model does.
pub(crate) enum Act {
    Tool { id: String, path: String },
    Text(String),
}

/// A whole answer with a length: the status line, the content type, the
/// body.
fn reply(status: &str, ctype: &str, body: &[u8]) -> Answer {
    let mut out = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nx-upstream: fake\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    Answer::bytes(out)
}

/// The head of a stream (no length: delimited by the connection's close).
const STREAM_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

/// The answer to `seen`, kept as request `n`.
pub(crate) fn answer(shared: &Shared, seen: Seen, window: usize, same_answer: bool) -> Answer {
    let n = shared.record(seen.clone());
    if seen.method == "GET" && seen.path.starts_with("/v1/models") {
        // Bytes a pass-through must hand back exactly, odd spacing too.
        let body = b"{\"object\": \"list\",  \"data\": [{\"id\": \"fake-1\"}]}\n";
        return reply("200 OK", "application/json", body);
    }
    if seen.method == "GET" {
        // Any other listing (stored completions, files): names its path.
        let body = json!({"object": "list", "path": seen.path}).to_string();
        return reply("200 OK", "application/json", body.as_bytes());
    }
    if seen.path == "/v1/messages/count_tokens" {
        let body = json!({"input_tokens": tokens(&seen.json_or_null())}).to_string();
        return reply("200 OK", "application/json", body.as_bytes());
    }
    let gemini = gemini::gemini_call(&seen.path);
    let shape = match seen.path.as_str() {
        "/v1/chat/completions" => "openai",
        "/v1/messages" => "anthropic",
        "/v1/responses" => "responses",
        _ if gemini.is_some() => "gemini",
        p => return reply("404 Not Found", "text/plain", p.as_bytes()),
    };
    let raw = seen.json_or_null();
    // A Responses request is checked as the messages it stands for; a
    // chained one (its history is on the server, which this fake does
    // not keep) only for its size.
    let chained = shape == "responses" && raw["previous_response_id"].is_string();
    let (shape, req) = match (shape, &gemini) {
        ("responses", _) => ("anthropic", responses::responses_as_messages(&raw)),
        (_, Some((model, stream))) => (
            "anthropic",
            gemini::gemini_as_messages(&raw, model, *stream),
        ),
        _ => (shape, raw.clone()),
    };
    let checked = if chained {
        let t = tokens(&req);
        if t > window {
            Err(format!("~{t} tokens, over the window of {window}"))
        } else {
            Ok(())
        }
    } else {
        check(shape, &req, window)
    };
    if let Err(problem) = checked {
        shared.problem(n, &problem);
        // Over the window: the error each API gives for it.
        let e = match (problem.contains("over the window"), seen.path.as_str()) {
            (true, _) if gemini.is_some() => {
                json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                "message": format!("The input token count exceeds the maximum number of tokens allowed ({problem})")}})
            }
            (true, "/v1/messages") => json!({"type": "error", "error": {
                "type": "invalid_request_error", "message": format!("prompt is too long: {problem}")}}),
            (true, _) => {
                json!({"error": {"message": format!("This model's maximum context length is {window} tokens ({problem})"),
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
            }
            _ => {
                json!({"type": "error", "error": {"message": problem, "type": "invalid_request_error"}})
            }
        };
        return reply(
            "400 Bad Request",
            "application/json",
            e.to_string().as_bytes(),
        );
    }
    let (steps, done) = progress(shape, &req);
    let act = if req["model"]
        .as_str()
        .is_some_and(|m| m.starts_with("chatty"))
    {
        Act::Text(chatty(&last_user_text(shape, &req)))
    } else if done < steps {
        Act::Tool {
            id: if same_answer {
                format!("call_step_{done}")
            } else {
                format!("call_{n}")
            },
            path: format!("src/m{done}.rs"),
        }
    } else {
        Act::Text(format!("done: {done} steps"))
    };
    let model = req["model"].as_str().unwrap_or("fake").to_owned();
    let streamed = req["stream"] == json!(true);
    if gemini.is_some() {
        let chunks = gemini::gemini_answer(&act);
        if streamed {
            let mut a = Answer::bytes(STREAM_HEAD);
            for c in &chunks {
                a = a.send(format!("data: {c}\r\n\r\n"));
            }
            return a;
        }
        let whole = gemini::gemini_whole(&chunks);
        return reply("200 OK", "application/json", whole.to_string().as_bytes());
    }
    if seen.path == "/v1/responses" {
        let response = responses::responses_answer(n, &model, &act);
        if model.starts_with("unframed") {
            let events = responses::responses_stream(&response);
            return unframed(streamed, &events, &response, &act);
        }
        if streamed {
            let mut a = Answer::bytes(STREAM_HEAD);
            for e in responses::responses_stream(&response) {
                a = a.send(e);
            }
            return a;
        }
        return reply(
            "200 OK",
            "application/json",
            response.to_string().as_bytes(),
        );
    }
    let whole = || match shape {
        "openai" => openai::openai_answer(&model, &act),
        _ => anthropic::anthropic_answer(&model, &act),
    };
    if !streamed {
        if model.starts_with("unframed") {
            return unframed(false, &[], &whole(), &act);
        }
        return reply("200 OK", "application/json", whole().to_string().as_bytes());
    }
    let events = match shape {
        "openai" => openai::openai_stream(&model, &act),
        _ => anthropic::anthropic_stream(&model, &act),
    };
    if model.starts_with("stall") {
        let first_text = if shape == "openai" { 2 } else { 3 };
        return Answer::bytes(STREAM_HEAD)
            .send(events[..first_text].concat())
            .pause(Duration::from_secs(3));
    }
    if model.starts_with("unframed") {
        return unframed(true, &events, &whole(), &act);
    }
    if model.starts_with("cut") {
        let all: usize = events.iter().map(String::len).sum();
        return Answer::bytes(format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {all}\r\nconnection: close\r\n\r\n"
        ))
        .send(events[..events.len() - 2].concat());
    }
    let mut a = Answer::bytes(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
    );
    let last = events.len() - 1;
    for (i, e) in events.into_iter().enumerate() {
        if model.starts_with("slow") && i == last {
            a = a.pause(Duration::from_secs(3));
        }
        a = a.send(e);
    }
    a
}

/// A model named `unframed…`: an answer delimited by the connection's
/// close (no length, no chunks), cut short before its protocol's end: a
/// stream without its last events (`[DONE]` and the `finish_reason`,
/// `message_delta` and `message_stop`, `response.completed`), a JSON
/// body cut in the middle of the answer's text.
fn unframed(streamed: bool, events: &[String], body: &Value, act: &Act) -> Answer {
    let ctype = if streamed {
        "text/event-stream"
    } else {
        "application/json"
    };
    let a = Answer::bytes(format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {ctype}\r\nconnection: close\r\n\r\n"
    ));
    if streamed {
        let keep = if events[0].contains("response.created") {
            events.len() - 1
        } else {
            events.len() - 2
        };
        return a.send(events[..keep].concat());
    }
    let text = body.to_string();
    let half = match act {
        Act::Text(t) => text
            .find(t.as_str())
            .map_or(text.len() / 2, |at| at + t.len() / 2),
        Act::Tool { .. } => text.len() / 2,
    };
    a.send(&text.as_bytes()[..half])
}

/// The text of the request's newest user message.
fn last_user_text(shape: &str, req: &Value) -> String {
    blocks(shape, req)
        .unwrap_or_default()
        .iter()
        .rev()
        .find(|(role, _)| role == "user")
        .map(|(_, bs)| bs.iter().filter_map(|b| b["text"].as_str()).collect())
        .unwrap_or_default()
}

/// A chatty answer to `asked`: 250 to 650 characters of words picked by a
/// hash of it (deterministic).
fn chatty(asked: &str) -> String {
    const WORDS: [&str; 16] = [
        "the", "parser", "keeps", "every", "line", "so", "tests", "pass", "and", "config", "moves",
        "into", "one", "module", "later", "today",
    ];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in asked.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    let len = 250 + (h % 400) as usize;
    let mut out = String::from("Answer:");
    while out.len() < len {
        h = h.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        out.push(' ');
        out.push_str(WORDS[(h >> 60) as usize]);
    }
    out.push('.');
    out
}

/// (steps asked for, steps done): the steps from the last user text that
/// says `steps=N` (else from a summary that quotes it: a long turn's own
/// request folded with its first steps); the steps done from the file the
/// last tool result read (`// src/mK.rs` is step K), since compaction may
/// have folded the results before it.
fn progress(shape: &str, req: &Value) -> (usize, usize) {
    let msgs = blocks(shape, req).unwrap_or_default();
    let text = |bs: &[Value]| -> String { bs.iter().filter_map(|b| b["text"].as_str()).collect() };
    let asked = |bs: &[Value]| -> Option<usize> {
        text(bs)
            .split_whitespace()
            .find_map(|w| w.strip_prefix("steps="))
            .and_then(|n| n.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok())
    };
    let by = |users: bool| {
        msgs.iter()
            .rev()
            .filter(|(role, _)| (role == "user") == users)
            .find_map(|(_, bs)| asked(bs))
    };
    let steps = by(true).or_else(|| by(false)).unwrap_or(0);
    let done = match msgs.last() {
        Some((_, bs)) => bs
            .iter()
            .rev()
            .find(|b| b["type"] == "tool_result")
            .map_or(0, |b| {
                let content = match &b["content"] {
                    Value::String(s) => s.clone(),
                    other => text(other.as_array().map_or(&[][..], |a| a)),
                };
                content
                    .split("src/m")
                    .nth(1)
                    .and_then(|r| r.split('.').next())
                    .and_then(|k| k.parse::<usize>().ok())
                    .map_or(1, |k| k + 1)
            }),
        None => 0,
    };
    (steps, done)
}
