//! Answers read off the wire, whole or streamed, by the reader of the API
//! that sent them: the one place a provider's kind picks `openai`'s or
//! `anthropic`'s reader. [`Provider`](crate::Provider) reads its answers
//! through it, and so can a proxy without one, which forwards a client's
//! request and records a copy of the answer with the same parsers.

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
    answer(kind, raw, model, &ctx(model))
}

/// [`parse_answer`], errors classified with `ctx`.
pub(crate) fn answer(
    kind: ProviderKind,
    raw: Value,
    model: &str,
    ctx: &ErrorContext<'_>,
) -> Result<ChatResponse, ProviderError> {
    if let Some(e) = error::in_answer(&raw, ctx) {
        return Err(e);
    }
    match kind {
        ProviderKind::OpenAi => openai::parse_response(raw, model),
        ProviderKind::Anthropic => anthropic::parse_response(raw, model),
    }
}

/// `stream` read to its end as `kind` streams, into the response a
/// non-streamed call gives; `model` is `provider/model`.
pub(crate) fn streamed(
    kind: ProviderKind,
    stream: Stream<'_, impl BufRead>,
    model: &str,
) -> Result<ChatResponse, ProviderError> {
    match kind {
        ProviderKind::OpenAi => openai::read_stream(stream, model),
        ProviderKind::Anthropic => anthropic::read_stream(stream, model),
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
    let stream = Stream::new(reader, &mut ignore, &c, &io_error, cut_short);
    streamed(kind, stream, model)
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
    use crate::part::Part;

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

    /// The events Anthropic adds to a plain answer: a server tool's call
    /// (its input streamed), a citation, a compaction block, the applied
    /// edits beside the last delta; an event without `type` read by its
    /// name. They fold back into the message a whole answer would be.
    #[test]
    fn an_anthropic_stream_folds_back_what_ctxfold_does_not_read_too() {
        let stream = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"cache_read_input_tokens\":4,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"compaction\",\"content\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"compaction_delta\",\"content\":\"So far\",\"encrypted_content\":\"Zm9v\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"s\",\"name\":\"web_search\",\"input\":{}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"q\\\": 1}\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
            "event: content_block_start\ndata: {\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"\",\"citations\":[]}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"citations_delta\",\"citation\":{\"url\":\"u\"}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"Found.\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":9},\"context_management\":{\"applied_edits\":[]}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        let r = read_stream(ProviderKind::Anthropic, stream.as_bytes(), "c", false).unwrap();
        assert_eq!(
            r.raw.to_string(),
            r#"{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"compaction","content":"So far","encrypted_content":"Zm9v"},{"type":"server_tool_use","id":"s","name":"web_search","input":{"q":1}},{"type":"text","text":"Found.","citations":[{"url":"u"}]}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"cache_read_input_tokens":4,"output_tokens":9},"context_management":{"applied_edits":[]}}"#
        );
        assert_eq!(r.parts, vec![Part::Text("Found.".into())]);
        let u = r.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (7, 9));
        // Read whole, the same answer.
        let whole = parse_answer(ProviderKind::Anthropic, r.raw.clone(), "c").unwrap();
        assert_eq!((whole.parts, whole.usage), (r.parts, Some(u)));
    }

    /// Errors say what was expected, and an error sent in a stream or in a
    /// 200 body is classified as the status it stands for.
    #[test]
    fn what_does_not_read_is_named() {
        let e = parse_answer(ProviderKind::OpenAi, serde_json::json!({"id": "x"}), "m")
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no `choices`"), "{e}");
        let call = serde_json::json!({"choices": [{"message": {"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}}]});
        let e = parse_answer(ProviderKind::OpenAi, call, "m")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`choices[0].message.tool_calls[0]` has no `function.name`"),
            "{e}"
        );
        let e = parse_answer(ProviderKind::OpenAi, serde_json::json!({"choices": 7}), "m")
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a chat completion (invalid type"), "{e}");
        let tool = serde_json::json!({"content": [{"type": "tool_use", "name": "f", "input": {}}]});
        let e = parse_answer(ProviderKind::Anthropic, tool, "m")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`content[0]` is a `tool_use` without `id`"),
            "{e}"
        );
        let e = parse_answer(ProviderKind::Anthropic, serde_json::json!({"id": "m"}), "m")
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no `content` array"), "{e}");
        let overloaded = serde_json::json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        assert!(matches!(
            parse_answer(ProviderKind::Anthropic, overloaded, "m"),
            Err(ProviderError::Server { status: 529, .. })
        ));

        let chunk =
            "data: {\"error\":{\"message\":\"slow down\",\"type\":\"rate_limit_error\"}}\n\n";
        assert!(matches!(
            read_stream(ProviderKind::OpenAi, chunk.as_bytes(), "m", false),
            Err(ProviderError::RateLimited { .. })
        ));
        let chunk = "data: {\"choices\":{}}\n\n";
        let e = read_stream(ProviderKind::OpenAi, chunk.as_bytes(), "m", false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2: expected a chunk of a chat completion"),
            "{e}"
        );
        let event = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"content_block\":{}}\n\n";
        let e = read_stream(ProviderKind::Anthropic, event.as_bytes(), "m", false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`content_block_start` event ending on line 3: no valid `index` or no `content_block` object"),
            "{e}"
        );
        let error = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        assert!(matches!(
            read_stream(ProviderKind::Anthropic, error.as_bytes(), "m", false),
            Err(ProviderError::Server { status: 529, .. })
        ));
    }
}
