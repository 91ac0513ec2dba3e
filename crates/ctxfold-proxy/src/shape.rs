//! The wire shapes the proxy compacts: OpenAI chat completions and
//! Anthropic messages. Requests are read and written by `ctxfold-formats`
//! (the same code that imports and exports transcripts, with its
//! byte-faithful round trip of every field it does not map), answers by
//! `ctxfold-providers` (the same parsers the agent host uses).

use std::io::BufRead;

use ctxfold_core::{Object, Record};
use ctxfold_formats::Transcript;
use ctxfold_providers::ProviderKind;
use serde_json::Value;

/// An API shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `POST /v1/chat/completions`.
    Chat,
    /// `POST /v1/messages`.
    Messages,
}

impl Shape {
    /// Its name, as in metrics and the conversation's metadata.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Chat => "openai",
            Shape::Messages => "anthropic",
        }
    }

    /// The provider kind whose parsers read its answers.
    pub fn kind(self) -> ProviderKind {
        match self {
            Shape::Chat => ProviderKind::OpenAi,
            Shape::Messages => ProviderKind::Anthropic,
        }
    }

    /// A request body's conversation as records, and the rest of the body.
    pub fn read(self, body: &Value) -> Result<Transcript, String> {
        if !body.is_object() {
            return Err("expected a JSON object (a request body)".into());
        }
        match self {
            Shape::Chat => ctxfold_formats::openai::from_json(body),
            Shape::Messages => ctxfold_formats::anthropic::from_json(body),
        }
    }

    /// A request body holding `records`, with the rest of the body as
    /// [`read`](Self::read) kept it in `extras`.
    pub fn write(self, records: &[Record], extras: &Object) -> Value {
        match self {
            Shape::Chat => ctxfold_formats::openai::to_json(records, extras),
            Shape::Messages => ctxfold_formats::anthropic::to_json(records, extras),
        }
    }

    /// The records of a whole answer body, stamped `ts` (the usage the
    /// upstream reported on the last one, as the agent host records it).
    pub fn answer(self, raw: Value, model: &str, ts: &str) -> Result<Vec<Record>, String> {
        ctxfold_providers::wire::parse_answer(self.kind(), raw, model)
            .map(|r| r.to_records(ts))
            .map_err(|e| e.to_string())
    }

    /// The records of a streamed answer, read to its end, stamped `ts`.
    pub fn streamed_answer(
        self,
        reader: impl BufRead,
        model: &str,
        ts: &str,
    ) -> Result<Vec<Record>, String> {
        ctxfold_providers::wire::read_answer_stream(self.kind(), reader, model)
            .map(|r| r.to_records(ts))
            .map_err(|e| e.to_string())
    }
}

/// Whether a request asks for a streamed answer.
pub fn wants_stream(body: &Value) -> bool {
    body.get("stream").and_then(Value::as_bool) == Some(true)
}

/// The request's `model`, or "" when it names none.
pub fn model(body: &Value) -> &str {
    body.get("model").and_then(Value::as_str).unwrap_or("")
}
