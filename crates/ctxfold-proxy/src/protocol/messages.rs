//! Anthropic Messages (`POST /v1/messages`, and its token count): requests
//! read and written by `ctxfold_formats::anthropic`, answers by the agent
//! host's parsers with the `compaction` blocks and applied edits they
//! leave out; the system prompt in the body's `system`; prompt-cache
//! markers; Claude Code's session in `metadata.user_id`; the provider's
//! context editing and compaction, passed through or emulated.

use axum::http::HeaderMap;
use ctxfold_core::{Object, Record};
use ctxfold_formats::Transcript;
use ctxfold_formats::message_reader::Wire;
use ctxfold_providers::ProviderKind;
use ctxfold_wire::context_management::{Asks, Edit};

use ctxfold_wire::emulated;
use serde::Deserialize;
use serde_json::Value;

use super::{
    ContextManagement, Head, Incremental, Protocol, Route, Serves, Upstream, Wanted, body_model,
    first_count, tokens_of, wants_stream,
};
use crate::agent::{Agent, Session};

/// Anthropic Messages.
pub struct Messages;

const ROUTES: &[Route] = &[
    Route {
        path: "/v1/messages",
        label: "messages",
        serves: Serves::Turn,
    },
    Route {
        path: "/v1/messages/count_tokens",
        label: "count_tokens",
        serves: Serves::CountTokens,
    },
];

impl Protocol for Messages {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn routes(&self) -> &'static [Route] {
        ROUTES
    }

    fn upstream(&self) -> Upstream {
        Upstream::Anthropic
    }

    fn claims(&self, path: &str, headers: &HeaderMap) -> bool {
        path.starts_with("/v1/messages")
            || headers.contains_key("anthropic-version")
            || headers.contains_key("x-api-key")
    }

    fn history_key(&self) -> &'static str {
        "messages"
    }

    fn read(&self, body: &Value) -> Result<Transcript, String> {
        ctxfold_formats::anthropic::from_json(body)
    }

    fn write(&self, records: &[&Record], extras: &Object) -> Value {
        ctxfold_formats::anthropic::to_json(records, extras)
    }

    fn incremental(&self) -> Option<&dyn Incremental> {
        Some(self)
    }

    fn model<'b>(&self, body: &'b Value) -> &'b str {
        body_model(body)
    }

    fn head<'b>(&self, body: &'b Value) -> Head<'b> {
        // The system prompt is the history's system record.
        Head {
            system: None,
            tools: super::tool_names(body),
        }
    }

    fn fixed_tokens(&self, body: &Value) -> usize {
        // Not `system`: the log holds it as its system record, which the
        // view counts; counting it here too made every request look
        // larger by it, and automatic compaction fire early and fold deep.
        tokens_of(body, &["tools"])
    }

    fn output_limit(&self, body: &Value) -> Option<u64> {
        first_count(body, &["max_tokens"])
    }

    fn answer(&self, raw: Value, model: &str, ts: &str) -> Result<Vec<Record>, String> {
        ctxfold_providers::wire::parse_answer(ProviderKind::Anthropic, raw, model)
            .map(|r| with_blocks(&r, ts))
            .map_err(|e| e.to_string())
    }

    fn streamed_answer(
        &self,
        stream: &[u8],
        model: &str,
        ts: &str,
        cut_short: bool,
    ) -> Result<Vec<Record>, String> {
        ctxfold_providers::wire::read_stream(ProviderKind::Anthropic, stream, model, cut_short)
            .map(|r| with_blocks(&r, ts))
            .map_err(|e| e.to_string())
    }

    fn ends(&self, event: Option<&str>, data: &str) -> bool {
        const LAST: [&str; 2] = ctxfold_wire::anthropic::event::LAST;
        if event.is_some_and(|e| !LAST.contains(&e)) {
            return false;
        }
        if serde_json::from_str::<serde::de::IgnoredAny>(data).is_err() {
            return false;
        }
        super::event_type(data)
            .as_deref()
            .or(event)
            .is_some_and(|k| LAST.contains(&k))
    }

    fn session(&self, body: &Value, _agent: Option<Agent>) -> Option<Session> {
        crate::agent::claude_code_session(body)
    }

    fn chained<'b>(&self, _body: &'b Value) -> Option<&'b str> {
        None
    }

    fn context_management(&self) -> Option<&dyn ContextManagement> {
        Some(self)
    }

    fn cache_markers(&self) -> bool {
        true
    }
}

/// An answer's records, with the `compaction` blocks and applied edits
/// the parser leaves out (issue 29).
fn with_blocks(r: &ctxfold_providers::ChatResponse, ts: &str) -> Vec<Record> {
    crate::context_management::with_answer_blocks(&r.raw, r.to_records(ts), ts)
}

impl Incremental for Messages {
    fn wire(&self) -> Wire {
        Wire::Anthropic
    }

    fn reader_head(&self, head: &Object) -> Option<Value> {
        // The system prompt: the reader keeps its records.
        head.get(ctxfold_wire::anthropic::SYSTEM).cloned()
    }

    fn write_messages(&self, records: &[&Record], out: &mut Vec<u8>) -> Option<()> {
        for m in ctxfold_formats::anthropic::messages(records) {
            super::put_message(out, &m)?;
        }
        Some(())
    }

    fn top_level(&self, r: &Record) -> bool {
        // Those read from a `system` message go back among the messages.
        matches!(r.body, ctxfold_core::Body::System { .. })
            && !ctxfold_formats::anthropic::is_system_message(r)
    }

    fn joins_roles(&self) -> bool {
        true
    }
}

impl ContextManagement for Messages {
    fn asks(&self, body: &Object) -> Asks {
        Asks::of_messages(body)
    }

    fn strip(&self, o: &mut Object) {
        ctxfold_wire::context_management::strip_messages_request(o);
    }

    fn wanted(&self, asks: &Asks, _compacts: bool, _tokens: usize) -> Option<Wanted> {
        // The on-demand `compaction: {"type": "summarize"}`, of the whole
        // conversation, answered alone (the edits are worked through
        // before, by the book).
        /// What the ask says besides its type.
        #[derive(serde::Deserialize)]
        struct Summarize {
            #[serde(default)]
            instructions: Option<Value>,
        }
        let ask = asks.summarize.as_ref()?;
        let instructions = match Summarize::deserialize(ask).map(|s| s.instructions) {
            Ok(Some(Value::String(i))) if !i.trim().is_empty() => Some(i),
            _ => None,
        };
        Some(Wanted {
            keep_last: None,
            instructions,
            note: "compaction (summarize)",
            alone: true,
            required: true,
        })
    }

    fn compaction(&self, signature: &str, text: &str) -> Value {
        emulated::anthropic_block(Some(text), signature)
    }

    fn repeat(&self, asks: &Asks, _compacts: bool, note: &str) -> Option<bool> {
        let by_edit = note.starts_with(ctxfold_wire::context_management::COMPACT);
        if asks.summarize.is_none() && !by_edit {
            return None;
        }
        let pause = asks
            .edits
            .iter()
            .any(|e| matches!(e, Edit::Compact(c) if c.pause_after_compaction == Some(true)));
        Some(asks.summarize.is_some() || pause)
    }

    fn alone(
        &self,
        raw: &Value,
        _compacts: bool,
        compaction: &Value,
        at: i64,
    ) -> (Value, Option<String>) {
        let m =
            emulated::anthropic_alone(&format!("msg_ctxfold_{at}"), body_model(raw), compaction);
        let s = wants_stream(raw).then(|| emulated::anthropic_events(&m));
        (m, s)
    }

    fn stream_with(&self, text: &str, compaction: Option<&Value>, edits: &[Value]) -> String {
        emulated::anthropic_stream_with(text, compaction, edits)
    }
}
