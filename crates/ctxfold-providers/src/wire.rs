//! Answers read off the wire without a [`Provider`](crate::Provider): for a
//! proxy that forwards a client's request and records a copy of the answer
//! (streamed or not) with the same parsers the client side uses.

use std::io::BufRead;

use serde_json::Value;

use crate::error::{self, ErrorContext, ProviderError};
use crate::model::ProviderKind;
use crate::response::ChatResponse;
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
pub fn read_answer_stream(
    kind: ProviderKind,
    reader: impl BufRead,
    model: &str,
) -> Result<ChatResponse, ProviderError> {
    let c = ctx(model);
    let io_error = |e: std::io::Error| ProviderError::Malformed {
        detail: format!("the stream broke off: {e}"),
    };
    let raw = match kind {
        ProviderKind::OpenAi => openai::read_stream(reader, &mut |_| {}, &c, &io_error)?,
        ProviderKind::Anthropic => anthropic::read_stream(reader, &mut |_| {}, &c, &io_error)?,
    };
    parse_answer(kind, raw, model)
}
