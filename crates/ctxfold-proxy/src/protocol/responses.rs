//! OpenAI Responses (`POST /v1/responses`, and the provider's compaction
//! endpoint `/v1/responses/compact`): requests read and written by
//! `ctxfold_formats::responses`; answers read by the format too (a
//! response's output items are input items); the system prompt in the
//! body's `instructions`; requests chained with `previous_response_id`;
//! Codex's session hints; the provider's compaction items and Codex's
//! `compaction_trigger`, passed through or emulated.

use axum::http::HeaderMap;
use ctxfold_core::{Object, Record};
use ctxfold_formats::Transcript;
use ctxfold_formats::message_reader::Wire;
use ctxfold_providers::response::USAGE;
use ctxfold_providers::sse::SseReader;
use ctxfold_wire::context_management::{Asks, COMPACTION};
use ctxfold_wire::emulated;
use ctxfold_wire::responses::{Response, StreamEvent, event};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    ContextManagement, Head, Incremental, Protocol, Route, Serves, Upstream, Wanted, body_model,
    first_count, tokens_of, wants_stream,
};
use crate::agent::{Agent, Session};

/// OpenAI Responses.
pub struct Responses;

/// Metadata key of the response id on an answer's records: a request
/// chained with `previous_response_id` names it.
pub const RESPONSE_ID: &str = "response_id";

const ROUTES: &[Route] = &[
    Route {
        path: "/v1/responses",
        label: "responses",
        serves: Serves::Turn,
    },
    // The provider's own compaction (issue 29): forwarded as sent, its
    // compaction item recorded; or emulated.
    Route {
        path: "/v1/responses/compact",
        label: "responses_compact",
        serves: Serves::Compact,
    },
];

impl Protocol for Responses {
    fn name(&self) -> &'static str {
        "openai-responses"
    }

    fn routes(&self) -> &'static [Route] {
        ROUTES
    }

    fn upstream(&self) -> Upstream {
        Upstream::OpenAi
    }

    fn claims(&self, _path: &str, _headers: &HeaderMap) -> bool {
        // Its other paths go to OpenAI, as chat's do.
        false
    }

    fn history_key(&self) -> &'static str {
        "input"
    }

    fn read(&self, body: &Value) -> Result<Transcript, String> {
        ctxfold_formats::responses::from_json(body)
    }

    fn write(&self, records: &[&Record], extras: &Object) -> Value {
        ctxfold_formats::responses::to_json(records, extras)
    }

    fn incremental(&self) -> Option<&dyn Incremental> {
        Some(self)
    }

    fn model<'b>(&self, body: &'b Value) -> &'b str {
        body_model(body)
    }

    fn head<'b>(&self, body: &'b Value) -> Head<'b> {
        Head {
            // The system prompt is a body key, not an item.
            system: Keys::of(body).instructions,
            tools: super::tool_names(body),
        }
    }

    fn fixed_tokens(&self, body: &Value) -> usize {
        tokens_of(body, &["instructions", "tools"])
    }

    fn output_limit(&self, body: &Value) -> Option<u64> {
        first_count(body, &["max_output_tokens"])
    }

    fn answer(&self, raw: Value, model: &str, ts: &str) -> Result<Vec<Record>, String> {
        answer(&raw, model, ts)
    }

    fn streamed_answer(
        &self,
        stream: &[u8],
        model: &str,
        ts: &str,
        cut_short: bool,
    ) -> Result<Vec<Record>, String> {
        streamed(stream, model, ts, cut_short)
    }

    fn ends(&self, event: Option<&str>, data: &str) -> bool {
        const LAST: [&str; 4] = event::LAST;
        if event.is_some_and(|e| !LAST.contains(&e)) {
            return false;
        }
        super::event_type(data).is_some_and(|k| LAST.contains(&k.as_str()))
    }

    fn session(&self, body: &Value, agent: Option<Agent>) -> Option<Session> {
        crate::agent::codex_session(body, agent)
    }

    fn chained<'b>(&self, body: &'b Value) -> Option<&'b str> {
        Keys::of(body).previous_response_id
    }

    fn context_management(&self) -> Option<&dyn ContextManagement> {
        Some(self)
    }

    fn made(&self, record: &mut Record) {
        ctxfold_formats::responses::typed_message(record);
    }
}

impl Incremental for Responses {
    fn wire(&self) -> Wire {
        Wire::Responses
    }

    fn write_messages(&self, records: &[&Record], out: &mut Vec<u8>) -> Option<()> {
        // Items are written over the objects they came from, so they go
        // through values.
        let v = self.write(records, &Object::new());
        for m in v.get(self.history_key())?.as_array()? {
            super::put_message(out, m)?;
        }
        Some(())
    }
}

impl ContextManagement for Responses {
    fn asks(&self, body: &Object) -> Asks {
        Asks::of_responses(body)
    }

    fn strip(&self, o: &mut Object) {
        ctxfold_wire::context_management::strip_responses_request(o);
    }

    fn wanted(&self, asks: &Asks, compacts: bool, tokens: usize) -> Option<Wanted> {
        // The compact endpoint and Codex's trigger: the whole
        // conversation, answered alone.
        if compacts || asks.trigger {
            return Some(Wanted {
                keep_last: None,
                instructions: None,
                note: "compaction",
                alone: true,
                required: true,
            });
        }
        // `context_management: [{"type": "compaction", "compact_threshold":
        // N}]`: past N, all but the last turn, in the answer.
        let threshold = (asks.responses.iter())
            .filter(|e| e.get("type").and_then(Value::as_str) == Some(COMPACTION))
            .find_map(|e| e.get("compact_threshold").and_then(Value::as_u64))?;
        (tokens > threshold as usize).then_some(Wanted {
            keep_last: Some(1),
            instructions: None,
            note: "compaction",
            alone: false,
            required: false,
        })
    }

    fn compaction(&self, signature: &str, text: &str) -> Value {
        let item_id = format!("cmp_{}", signature.replace(':', "_"));
        emulated::responses_item(&item_id, &format!("{signature}:{text}"))
    }

    fn repeat(&self, asks: &Asks, compacts: bool, _note: &str) -> Option<bool> {
        Some(compacts || asks.trigger)
    }

    fn alone(
        &self,
        raw: &Value,
        compacts: bool,
        compaction: &Value,
        at: i64,
    ) -> (Value, Option<String>) {
        if compacts {
            /// The request's input, sent back in the answer.
            #[derive(Deserialize)]
            struct Input {
                #[serde(default)]
                input: Value,
            }
            let input = Input::deserialize(raw).map_or(Value::Null, |i| i.input);
            let r = emulated::compaction_response(
                &format!("cmpresp_ctxfold_{at}"),
                at,
                &input,
                compaction,
            );
            return (r, None);
        }
        let r = emulated::responses_alone(
            &format!("resp_ctxfold_{at}"),
            body_model(raw),
            at,
            compaction,
        );
        let s = wants_stream(raw).then(|| emulated::responses_events(&r));
        (r, s)
    }

    fn stream_with(&self, text: &str, compaction: Option<&Value>, _edits: &[Value]) -> String {
        match compaction {
            Some(item) => emulated::responses_stream_with(text, item),
            None => text.to_owned(),
        }
    }
}

/// What is read of a Responses body besides its input and tools: its
/// system prompt and the answer it is chained to.
#[derive(Deserialize, Default)]
struct Keys<'a> {
    #[serde(borrow, default, deserialize_with = "ctxfold_wire::loose::text")]
    instructions: Option<&'a str>,
    #[serde(borrow, default, deserialize_with = "ctxfold_wire::loose::text")]
    previous_response_id: Option<&'a str>,
}

impl<'a> Keys<'a> {
    fn of(body: &'a Value) -> Keys<'a> {
        Keys::deserialize(body).unwrap_or_default()
    }
}

/// A response object's records (`raw`: whole, or a stream's
/// `response.completed`).
fn answer(raw: &Value, model: &str, ts: &str) -> Result<Vec<Record>, String> {
    let response: Response = serde_json::from_value(raw.clone())
        .map_err(|e| format!("the answer is not a response object: {e}"))?;
    if let Some(e) = response.error.as_ref().filter(|e| !e.is_null()) {
        return Err(format!("the upstream answered with an error: {e}"));
    }
    let mut records = ctxfold_formats::responses::output_records(raw)?;
    if response.extra.get("object").and_then(Value::as_str) == Some("response.compaction") {
        // `/v1/responses/compact`: its output repeats the input's user
        // messages before the compaction item; only the item is new.
        records.retain(|r| ctxfold_formats::provider_compaction(r).is_some());
    }
    super::stamped(&mut records, ts);
    // Always `Some`: an empty answer got its record above.
    if let Some(last) = records.last_mut() {
        let meta = last.metadata.get_or_insert_default();
        if let Some(id) = &response.id {
            meta.insert(RESPONSE_ID.into(), id.clone().into());
        }
        if let Some(u) = response.usage.as_ref().filter(|u| u.is_object()) {
            /// The counts of a response's `usage`.
            #[derive(serde::Deserialize)]
            struct Counts {
                input_tokens: Option<u64>,
                output_tokens: Option<u64>,
            }
            let counts: Option<Counts> = serde_json::from_value(u.clone()).ok();
            meta.insert(
                USAGE.into(),
                json!({"model": response.model.as_deref().unwrap_or(model),
                       "input_tokens": counts.as_ref().and_then(|c| c.input_tokens),
                       "output_tokens": counts.as_ref().and_then(|c| c.output_tokens),
                       "raw": u}),
            );
        }
    }
    Ok(records)
}

/// A stream's `response.completed` (or `response.incomplete`) event;
/// `cut_short`: the output items that were done before it broke off.
fn streamed(reader: &[u8], model: &str, ts: &str, cut_short: bool) -> Result<Vec<Record>, String> {
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
