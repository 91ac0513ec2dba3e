//! OpenAI chat completions (`POST /v1/chat/completions`): requests read
//! and written by `ctxfold_formats::openai`, answers by the agent host's
//! parsers in `ctxfold-providers`. No context management of the
//! provider's; no chaining. Codex's session hints are read here too (a
//! Codex configured for chat sends them).

use axum::http::HeaderMap;
use ctxfold_core::{Object, Record};
use ctxfold_formats::Transcript;
use ctxfold_formats::message_reader::Wire;
use ctxfold_providers::ProviderKind;
use serde_json::Value;

use super::{
    ContextManagement, Head, Incremental, Protocol, Route, Serves, Upstream, body_model,
    first_count, tokens_of,
};
use crate::agent::{Agent, Session};

/// OpenAI chat completions.
pub struct Chat;

const ROUTES: &[Route] = &[Route {
    path: "/v1/chat/completions",
    label: "chat_completions",
    serves: Serves::Turn,
}];

impl Protocol for Chat {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn routes(&self) -> &'static [Route] {
        ROUTES
    }

    fn upstream(&self) -> Upstream {
        Upstream::OpenAi
    }

    fn claims(&self, _path: &str, _headers: &HeaderMap) -> bool {
        // The default upstream of what no other protocol claims.
        false
    }

    fn history_key(&self) -> &'static str {
        "messages"
    }

    fn read(&self, body: &Value) -> Result<Transcript, String> {
        ctxfold_formats::openai::from_json(body)
    }

    fn write(&self, records: &[&Record], extras: &Object) -> Value {
        ctxfold_formats::openai::to_json(records, extras)
    }

    fn incremental(&self) -> Option<&dyn Incremental> {
        Some(self)
    }

    fn model<'b>(&self, body: &'b Value) -> &'b str {
        body_model(body)
    }

    fn head<'b>(&self, body: &'b Value) -> Head<'b> {
        Head {
            system: None,
            tools: super::tool_names(body),
        }
    }

    fn fixed_tokens(&self, body: &Value) -> usize {
        // Not the system messages: the log holds them as its system
        // record, which the view counts.
        tokens_of(body, &["tools"])
    }

    fn output_limit(&self, body: &Value) -> Option<u64> {
        first_count(body, &["max_tokens", "max_completion_tokens"])
    }

    fn answer(&self, raw: Value, model: &str, ts: &str) -> Result<Vec<Record>, String> {
        ctxfold_providers::wire::parse_answer(ProviderKind::OpenAi, raw, model)
            .map(|r| r.to_records(ts))
            .map_err(|e| e.to_string())
    }

    fn streamed_answer(
        &self,
        stream: &[u8],
        model: &str,
        ts: &str,
        cut_short: bool,
    ) -> Result<Vec<Record>, String> {
        ctxfold_providers::wire::read_stream(ProviderKind::OpenAi, stream, model, cut_short)
            .map(|r| r.to_records(ts))
            .map_err(|e| e.to_string())
    }

    fn ends(&self, _event: Option<&str>, data: &str) -> bool {
        if data.trim() == "[DONE]" {
            return true;
        }
        if !data.contains("finish_reason") && !data.contains("\"error\"") {
            return false;
        }
        /// What of a chunk says it is the last.
        #[derive(serde::Deserialize)]
        struct Last {
            #[serde(default)]
            error: Option<serde::de::IgnoredAny>,
            #[serde(default)]
            choices: Vec<Choice>,
        }
        #[derive(serde::Deserialize)]
        struct Choice {
            #[serde(default)]
            finish_reason: Option<Value>,
        }
        let Ok(v) = serde_json::from_str::<Last>(data) else {
            return false;
        };
        v.error.is_some()
            || v.choices
                .iter()
                .any(|c| c.finish_reason.as_ref().is_some_and(|f| !f.is_null()))
    }

    fn session(&self, body: &Value, agent: Option<Agent>) -> Option<Session> {
        crate::agent::codex_session(body, agent)
    }

    fn chained<'b>(&self, _body: &'b Value) -> Option<&'b str> {
        None
    }

    fn context_management(&self) -> Option<&dyn ContextManagement> {
        None
    }
}

impl Incremental for Chat {
    fn wire(&self) -> Wire {
        Wire::OpenAi
    }

    fn write_messages(&self, records: &[&Record], out: &mut Vec<u8>) -> Option<()> {
        for m in ctxfold_formats::openai::messages(records) {
            super::put_message(out, &m)?;
        }
        Some(())
    }
}
