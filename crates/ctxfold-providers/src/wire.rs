//! Answers read off the wire without a [`Provider`](crate::Provider): for a
//! proxy that forwards a client's request and records a copy of the answer
//! (streamed or not) with the same parsers the client side uses.

use std::io::BufRead;

use serde_json::Value;

use crate::error::{self, ErrorContext, ProviderError};
use crate::model::ProviderKind;
use crate::response::ChatResponse;
use crate::stream::Stream;
use crate::{anthropic, openai};

fn ctx(model: &str) -> ErrorContext<'_> {
    ErrorContext {
        model,
        key_var: None,
    }
}

/// A whole (non-streamed) answer body of `kind`; an error body is an error.
pub fn parse_answer(
    kind: ProviderKind,
    raw: Value,
    model: &str,
) -> Result<ChatResponse, ProviderError> {
    if raw.get("error").is_some_and(|e| !e.is_null()) {
        return Err(error::in_body(&raw, &ctx(model)));
    }
    match kind {
        ProviderKind::OpenAi => openai::parse_response(raw, model),
        ProviderKind::Anthropic => anthropic::parse_response(raw, model),
    }
}

/// A streamed answer of `kind` (server-sent events), read to its end.
///
/// `cut_short`: the stream is known to have broken off; what completed of
/// it is read instead of failing: for Anthropic the content blocks that
/// were closed (a thinking block with its signature, a tool call with all
/// of its input), for OpenAI chat the text and reasoning that arrived (a
/// tool call's end is not marked, so none is kept). It may be empty, with
/// no usage or stop reason.
pub fn read_stream(
    kind: ProviderKind,
    reader: impl BufRead,
    model: &str,
    cut_short: bool,
) -> Result<ChatResponse, ProviderError> {
    let c = ctx(model);
    let io_error = |e: std::io::Error| ProviderError::Malformed {
        detail: format!("the stream broke off: {e}"),
    };
    let mut ignore = |_| {};
    let raw = Stream::new(reader, &mut ignore, &c, &io_error, cut_short).read(kind)?;
    parse_answer(kind, raw, model)
}

/// Whether an error answer (its status and body) says the request is
/// over the model's context window, as the agent host reads it.
pub fn is_context_overflow(status: u16, body: &[u8]) -> bool {
    status == 413
        || (status >= 400 && error::is_overflow(&error::details(&String::from_utf8_lossy(body))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Part;

    /// An Anthropic stream that broke off inside a tool call's input: the
    /// closed thinking (with its signature) and text blocks are kept, the
    /// open tool call is not.
    #[test]
    fn a_cut_anthropic_stream_keeps_the_closed_blocks() {
        let stream = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"c\"}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"plan\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"sig\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Reading it.\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"read\",\"input\":{}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_blo",
        );
        let strict = read_stream(ProviderKind::Anthropic, stream.as_bytes(), "c", false);
        assert!(
            strict.is_err(),
            "a stream without message_stop is not whole"
        );
        let r = read_stream(ProviderKind::Anthropic, stream.as_bytes(), "c", true).unwrap();
        assert_eq!(
            r.parts,
            vec![
                Part::Reasoning {
                    text: "plan".into(),
                    signature: Some("sig".into())
                },
                Part::Text("Reading it.".into()),
            ]
        );
        assert!(r.stop_reason.is_none());
    }

    /// An OpenAI stream that broke off: the text that arrived is kept, the
    /// tool call (whose end is never marked) is not.
    #[test]
    fn a_cut_openai_stream_keeps_the_text_that_arrived() {
        let stream = concat!(
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Let me \"}}]}\n\n",
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"look.\"}}]}\n\n",
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"pa\"}}]}}]}\n\n",
            "data: {\"id\":\"c\",\"cho",
        );
        assert!(read_stream(ProviderKind::OpenAi, stream.as_bytes(), "m", false).is_err());
        let r = read_stream(ProviderKind::OpenAi, stream.as_bytes(), "m", true).unwrap();
        assert_eq!(r.parts, vec![Part::Text("Let me look.".into())]);
    }

    /// Cut before anything completed: nothing.
    #[test]
    fn a_stream_cut_before_any_block_closed_holds_nothing() {
        let stream = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"c\"}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Half\"}}\n\n",
        );
        let r = read_stream(ProviderKind::Anthropic, stream.as_bytes(), "c", true).unwrap();
        assert!(r.parts.is_empty(), "{:?}", r.parts);
    }
}
