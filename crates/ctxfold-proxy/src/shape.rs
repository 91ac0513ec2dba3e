//! The wire shapes the proxy compacts: OpenAI chat completions, Anthropic
//! messages and OpenAI responses. Requests are read and written by
//! `ctxfold-formats` (the same code that imports and exports transcripts,
//! with its byte-faithful round trip of every field it does not map);
//! answers by `ctxfold-providers` (the same parsers the agent host uses),
//! or, for responses, whose output items are input items too, by the
//! format's own reader.

use std::io::BufRead;

use ctxfold_core::{Object, Record};
use ctxfold_formats::Transcript;
use ctxfold_formats::message_reader::Wire;
use ctxfold_providers::ProviderKind;
use serde_json::Value;

/// An API shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `POST /v1/chat/completions`.
    Chat,
    /// `POST /v1/messages`.
    Messages,
    /// `POST /v1/responses`.
    Responses,
}

impl Shape {
    /// Its name, as in metrics and the conversation's metadata.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Chat => "openai",
            Shape::Messages => "anthropic",
            Shape::Responses => "openai-responses",
        }
    }

    /// The provider kind whose parsers read its answers (`None`: the
    /// shape reads its own).
    fn kind(self) -> Option<ProviderKind> {
        match self {
            Shape::Chat => Some(ProviderKind::OpenAi),
            Shape::Messages => Some(ProviderKind::Anthropic),
            Shape::Responses => None,
        }
    }

    /// The chat format of its requests.
    pub fn wire(self) -> Wire {
        match self {
            Shape::Chat => Wire::OpenAi,
            Shape::Messages => Wire::Anthropic,
            Shape::Responses => Wire::Responses,
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
            Shape::Responses => ctxfold_formats::responses::from_json(body),
        }
    }

    /// A request body holding `records`, with the rest of the body as
    /// [`read`](Self::read) kept it in `extras`.
    pub fn write<R: std::borrow::Borrow<Record>>(self, records: &[R], extras: &Object) -> Value {
        match self {
            Shape::Chat => ctxfold_formats::openai::to_json(records, extras),
            Shape::Messages => ctxfold_formats::anthropic::to_json(records, extras),
            Shape::Responses => ctxfold_formats::responses::to_json(records, extras),
        }
    }

    /// The messages of `records` appended to `out`, a JSON array being
    /// written (a comma first unless `out` is just its `[`): the
    /// `messages` of [`Shape::write`]. Chat and Messages messages are
    /// serialized straight from their typed form, without building JSON
    /// values (Responses items are written over the objects they came
    /// from, so they go through values).
    pub(crate) fn write_messages<R: std::borrow::Borrow<Record>>(
        self,
        records: &[R],
        out: &mut Vec<u8>,
    ) -> Option<()> {
        fn put(out: &mut Vec<u8>, m: &impl serde::Serialize) -> Option<()> {
            if out.len() > 1 {
                out.push(b',');
            }
            serde_json::to_writer(out, m).ok()
        }
        match self {
            Shape::Chat => {
                for m in ctxfold_formats::openai::messages(records) {
                    put(out, &m)?;
                }
            }
            Shape::Messages => {
                for m in ctxfold_formats::anthropic::messages(records) {
                    put(out, &m)?;
                }
            }
            Shape::Responses => {
                let v = self.write(records, &Object::new());
                for m in v.get(self.wire().messages_key())?.as_array()? {
                    put(out, m)?;
                }
            }
        }
        Some(())
    }

    /// The records of a whole answer body, stamped `ts` (the usage the
    /// upstream reported on the last one, as the agent host records it).
    pub fn answer(self, raw: Value, model: &str, ts: &str) -> Result<Vec<Record>, String> {
        let Some(kind) = self.kind() else {
            return responses::answer(&raw, model, ts);
        };
        ctxfold_providers::wire::parse_answer(kind, raw, model)
            .map(|r| self.answer_records(&r, ts))
            .map_err(|e| e.to_string())
    }

    /// The records of a streamed answer, stamped `ts`: read to its end,
    /// or, `cut_short`, what completed of one that broke off (see
    /// [`ctxfold_providers::wire::read_stream`]; for responses, the output
    /// items that were done).
    pub fn streamed_answer(
        self,
        reader: impl BufRead,
        model: &str,
        ts: &str,
        cut_short: bool,
    ) -> Result<Vec<Record>, String> {
        let Some(kind) = self.kind() else {
            return responses::streamed(reader, model, ts, cut_short);
        };
        ctxfold_providers::wire::read_stream(kind, reader, model, cut_short)
            .map(|r| self.answer_records(&r, ts))
            .map_err(|e| e.to_string())
    }

    /// The records of what is readable of a whole (non-streamed) answer
    /// body that was cut short, stamped `ts`: the text that arrived, the
    /// body closed where it broke off ([`crate::ending::close_truncated`]).
    /// Tool calls and reasoning are left out (the cut may fall inside
    /// them, and a call's arguments or a signature cut short must not be
    /// sent again); one empty text when nothing of it is readable.
    pub fn cut_body(self, body: &[u8], model: &str, ts: &str) -> Vec<Record> {
        let mut records: Vec<Record> = crate::ending::close_truncated(body)
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|raw| self.answer(raw, model, ts).ok())
            .unwrap_or_default()
            .into_iter()
            .filter(|r| matches!(&r.body, ctxfold_core::Body::Assistant { content } if !content.is_empty()))
            .collect();
        if records.is_empty() {
            records.push(Record::new(
                0,
                ts,
                ctxfold_core::Body::Assistant {
                    content: String::new(),
                },
            ));
        }
        records
    }

    /// An answer's records; for Anthropic, with the `compaction` blocks
    /// and applied edits the parser leaves out (issue 29).
    fn answer_records(self, r: &ctxfold_providers::ChatResponse, ts: &str) -> Vec<Record> {
        let records = r.to_records(ts);
        match self {
            Shape::Messages => crate::context_management::with_answer_blocks(&r.raw, records, ts),
            _ => records,
        }
    }
}

/// Answers of the Responses API: a response object, whole or as the
/// `response.completed` event of a stream.
mod responses {
    use std::io::BufRead;

    use ctxfold_core::{Body, Record};
    use ctxfold_providers::response::USAGE;
    use ctxfold_providers::sse::SseReader;
    use ctxfold_wire::responses::{Response, StreamEvent, event};
    use serde_json::{Value, json};

    /// Metadata key of the response id on an answer's records: a request
    /// chained with `previous_response_id` names it.
    pub const RESPONSE_ID: &str = "response_id";

    pub fn answer(raw: &Value, model: &str, ts: &str) -> Result<Vec<Record>, String> {
        if let Some(e) = raw.get("error").filter(|e| !e.is_null()) {
            return Err(format!("the upstream answered with an error: {e}"));
        }
        let mut records = ctxfold_formats::responses::output_records(raw)?;
        if raw.get("object").and_then(Value::as_str) == Some("response.compaction") {
            // `/v1/responses/compact`: its output repeats the input's user
            // messages before the compaction item; only the item is new.
            records.retain(|r| ctxfold_formats::provider_compaction(r).is_some());
        }
        for r in &mut records {
            r.ts = ts.into();
        }
        if records.is_empty() {
            records.push(Record::new(
                0,
                ts,
                Body::Assistant {
                    content: String::new(),
                },
            ));
        }
        let id = raw.get("id").and_then(Value::as_str);
        let usage = raw.get("usage").filter(|u| u.is_object());
        // Always `Some`: an empty answer got its record above.
        if let Some(last) = records.last_mut() {
            let meta = last.metadata.get_or_insert_default();
            if let Some(id) = id {
                meta.insert(RESPONSE_ID.into(), id.into());
            }
            if let Some(u) = usage {
                meta.insert(
                    USAGE.into(),
                    json!({"model": raw.get("model").and_then(Value::as_str).unwrap_or(model),
                           "input_tokens": u.get("input_tokens"),
                           "output_tokens": u.get("output_tokens"), "raw": u}),
                );
            }
        }
        Ok(records)
    }

    /// A stream's `response.completed` (or `response.incomplete`) event;
    /// `cut_short`: the output items that were done before it broke off.
    pub fn streamed(
        reader: impl BufRead,
        model: &str,
        ts: &str,
        cut_short: bool,
    ) -> Result<Vec<Record>, String> {
        let mut sse = SseReader::new(reader);
        let mut done = Vec::new();
        loop {
            let ev = match sse.next_event() {
                Ok(Some(ev)) => ev,
                Ok(None) => break,
                Err(_) if cut_short => break,
                Err(e) => return Err(format!("the Responses stream could not be read: {e:?}")),
            };
            let Ok(data) = serde_json::from_str::<Value>(&ev.data) else {
                if cut_short {
                    break;
                }
                return Err(format!(
                    "the Responses stream's event ending on line {} is not JSON",
                    ev.line
                ));
            };
            match StreamEvent::from_value(data) {
                StreamEvent::Completed(e) | StreamEvent::Incomplete(e) if !cut_short => {
                    return answer(&e.response, model, ts);
                }
                StreamEvent::OutputItemDone(e) => done.push(e.item),
                e if !cut_short && matches!(e.kind(), Some(event::FAILED | event::ERROR)) => {
                    return Err("the Responses stream ended with an error".into());
                }
                _ => {}
            }
        }
        if !cut_short {
            return Err("the Responses stream ended before `response.completed`".into());
        }
        let mut records = ctxfold_formats::responses::output_records(&ctxfold_wire::value(
            &Response::of_output(done),
        ))?;
        for r in &mut records {
            r.ts = ts.into();
        }
        Ok(records)
    }
}

pub use responses::RESPONSE_ID;

/// Whether a request asks for a streamed answer.
pub fn wants_stream(body: &Value) -> bool {
    body.get("stream").and_then(Value::as_bool) == Some(true)
}

/// The request's `model`, or "" when it names none.
pub fn model(body: &Value) -> &str {
    body.get("model").and_then(Value::as_str).unwrap_or("")
}
