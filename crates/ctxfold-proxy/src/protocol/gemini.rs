//! Google's Gemini API (`POST /v1beta/models/{model}:generateContent` and
//! `:streamGenerateContent`, and the same under `/v1/`, the API's stable
//! version, which the `google-genai` SDK uses with a base URL of its own;
//! `[proxy] gemini`): requests read and written
//! by `ctxfold_formats::gemini` (`contents`, `systemInstruction`); the
//! model named by the path; answers (`candidates`, `usageMetadata`), whole
//! or as server-sent events (`?alt=sse`), read here into the records the
//! next request's history will read them as.
//!
//! What it lacks, said here rather than found missing: the provider has no
//! context management of this kind and no chaining; a request is read
//! whole every time (no incremental reader); no agent session hint is
//! known. Other paths under `/v1beta/` (`countTokens`, the model list)
//! pass through to the upstream.

use axum::http::HeaderMap;
use ctxfold_core::{Object, Record};
use ctxfold_formats::Transcript;
use ctxfold_providers::response::USAGE;
use ctxfold_providers::sse::SseReader;
use ctxfold_wire::gemini::{Content, Part, Response, key, role};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Call, ContextManagement, Head, Incremental, Protocol, Route, Serves, Upstream, tokens_of,
};
use crate::agent::{Agent, Session};

/// Google's Gemini API.
pub struct Gemini;

const ROUTES: &[Route] = &[
    Route {
        path: "/v1beta/models/{call}",
        label: "generate_content",
        serves: Serves::Turn,
    },
    // OpenAI's `GET /v1/models/{model}` shares the path: only a POST of a
    // `{model}:{action}` the proxy interprets is Gemini's.
    Route {
        path: "/v1/models/{call}",
        label: "generate_content",
        serves: Serves::Turn,
    },
];

/// The actions of a model path the proxy interprets, with their metrics
/// names.
const ACTIONS: [(&str, &str); 2] = [
    ("generateContent", "generate_content"),
    ("streamGenerateContent", "stream_generate_content"),
];

impl Protocol for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn routes(&self) -> &'static [Route] {
        ROUTES
    }

    fn call(&self, route: &Route, path: &str) -> Option<Call> {
        // `models/{model}:{action}`: the model is in the path.
        let last = path.rsplit('/').next()?;
        let (model, action) = last.rsplit_once(':')?;
        let (_, label) = ACTIONS.iter().find(|(a, _)| *a == action)?;
        Some(Call {
            label,
            serves: route.serves,
            model: Some(model.to_owned()),
        })
    }

    fn upstream(&self) -> Upstream {
        Upstream::Gemini
    }

    fn claims(&self, path: &str, headers: &HeaderMap) -> bool {
        path.starts_with("/v1beta/") || headers.contains_key("x-goog-api-key")
    }

    fn history_key(&self) -> &'static str {
        key::CONTENTS
    }

    fn read(&self, body: &Value) -> Result<Transcript, String> {
        ctxfold_formats::gemini::from_json(body)
    }

    fn write(&self, records: &[&Record], extras: &Object) -> Value {
        ctxfold_formats::gemini::to_json(records, extras)
    }

    fn incremental(&self) -> Option<&dyn Incremental> {
        None
    }

    fn model<'b>(&self, _body: &'b Value) -> &'b str {
        // Named by the path: `Call::model`.
        ""
    }

    fn head<'b>(&self, body: &'b Value) -> Head<'b> {
        // The system instruction is the history's system record.
        Head {
            system: None,
            tools: Keys::of(body).tools(),
        }
    }

    fn fixed_tokens(&self, body: &Value) -> usize {
        tokens_of(body, &[key::TOOLS, key::TOOL_CONFIG])
    }

    fn output_limit(&self, body: &Value) -> Option<u64> {
        Keys::of(body).generation_config?.max_output_tokens
    }

    fn answer(&self, raw: Value, model: &str, ts: &str) -> Result<Vec<Record>, String> {
        let r: Response = serde_json::from_value(raw)
            .map_err(|e| format!("the answer is not a GenerateContentResponse: {e}"))?;
        if let Some(e) = r.extra.get("error") {
            return Err(format!("the upstream answered with an error: {e}"));
        }
        let mut answer = Answer::default();
        answer.take(r);
        answer.records(model, ts)
    }

    fn streamed_answer(
        &self,
        stream: &[u8],
        model: &str,
        ts: &str,
        cut_short: bool,
    ) -> Result<Vec<Record>, String> {
        let mut sse = SseReader::new(stream);
        let mut answer = Answer::default();
        let mut ended = false;
        loop {
            let ev = match sse.next_event() {
                Ok(Some(ev)) => ev,
                Ok(None) => break,
                Err(_) if cut_short => break,
                Err(e) => return Err(format!("the Gemini stream could not be read: {e:?}")),
            };
            let chunk = match serde_json::from_str::<Response>(&ev.data) {
                Ok(c) => c,
                Err(_) if cut_short => break,
                Err(e) => {
                    return Err(format!(
                        "the Gemini stream's event ending on line {} is not an answer chunk: {e}",
                        ev.line
                    ));
                }
            };
            if chunk.extra.contains_key("error") {
                if cut_short {
                    break;
                }
                return Err("the Gemini stream ended with an error".into());
            }
            ended |= chunk.candidates.iter().any(|c| c.finish_reason.is_some());
            answer.take(chunk);
        }
        if !ended && !cut_short {
            return Err("the Gemini stream ended before a chunk with a `finishReason`".into());
        }
        answer.records(model, ts)
    }

    fn follow(&self, answer: &mut [Record], history: &[Record]) {
        ctxfold_formats::gemini::renumber_calls(
            answer,
            ctxfold_formats::gemini::call_count(history),
        );
    }

    fn ends(&self, _event: Option<&str>, data: &str) -> bool {
        if !data.contains("finishReason") && !data.contains("\"error\"") {
            return false;
        }
        match serde_json::from_str::<Response>(data) {
            Ok(r) => {
                r.extra.contains_key("error")
                    || r.candidates.iter().any(|c| c.finish_reason.is_some())
            }
            Err(_) => false,
        }
    }

    fn session(&self, _body: &Value, _agent: Option<Agent>) -> Option<Session> {
        None
    }

    fn chained<'b>(&self, _body: &'b Value) -> Option<&'b str> {
        None
    }

    fn context_management(&self) -> Option<&dyn ContextManagement> {
        None
    }

    fn error_body(&self, kind: &str, message: &str) -> Value {
        // The shape Google's APIs answer errors in (`google.rpc.Status`).
        let (code, status) = match kind {
            "invalid_request_error" => (400, "INVALID_ARGUMENT"),
            _ => (502, "UNAVAILABLE"),
        };
        json!({"error": {"code": code, "message": message, "status": status}})
    }
}

/// What is read of a request besides its contents: the functions'
/// names and the output limit (a field of an unexpected shape reads as
/// absent).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Keys<'a> {
    #[serde(borrow, default)]
    tools: Option<Vec<Tool<'a>>>,
    #[serde(default)]
    generation_config: Option<GenerationConfig>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Tool<'a> {
    #[serde(borrow, default)]
    function_declarations: Vec<Declaration<'a>>,
}

#[derive(Deserialize)]
struct Declaration<'a> {
    #[serde(borrow, default, deserialize_with = "ctxfold_wire::loose::text")]
    name: Option<&'a str>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig {
    #[serde(default)]
    max_output_tokens: Option<u64>,
}

impl<'a> Keys<'a> {
    fn of(body: &'a Value) -> Keys<'a> {
        Keys::deserialize(body).unwrap_or_default()
    }

    fn tools(self) -> Vec<&'a str> {
        (self.tools.into_iter().flatten())
            .flat_map(|t| t.function_declarations)
            .filter_map(|d| d.name)
            .collect()
    }
}

/// An answer gathered from a whole body or a stream's chunks: the first
/// candidate's parts (consecutive text pieces joined, as a client joins
/// them), the last usage reported, the model that answered.
#[derive(Default)]
struct Answer {
    parts: Vec<Part>,
    usage: Option<ctxfold_wire::gemini::Usage>,
    model: Option<String>,
}

impl Answer {
    fn take(&mut self, r: Response) {
        if let Some(u) = r.usage_metadata {
            self.usage = Some(u);
        }
        if let Some(m) = r.model_version {
            self.model = Some(m);
        }
        let Some(content) = r.candidates.into_iter().next().and_then(|c| c.content) else {
            return;
        };
        self.parts.extend(content.parts);
    }

    fn records(self, model: &str, ts: &str) -> Result<Vec<Record>, String> {
        let content = Content {
            role: Some(role::MODEL.into()),
            parts: self.parts,
            extra: Object::new(),
        };
        // Numbered from 0 here; `follow` numbers them on from the request.
        let mut records = ctxfold_formats::gemini::answer_records(&content, 0)?;
        super::stamped(&mut records, ts);
        if let (Some(u), Some(last)) = (self.usage, records.last_mut()) {
            let output =
                u.candidates_token_count.unwrap_or(0) + u.thoughts_token_count.unwrap_or(0);
            last.metadata.get_or_insert_default().insert(
                USAGE.into(),
                json!({"model": self.model.as_deref().unwrap_or(model),
                       "input_tokens": u.prompt_token_count.unwrap_or(0),
                       "output_tokens": output,
                       "raw": ctxfold_wire::value(&u)}),
            );
        }
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxfold_core::Body;

    fn chunk(parts: Value, last: bool) -> String {
        let mut c = json!({"candidates": [{"content": {"role": "model", "parts": parts}}],
            "modelVersion": "gemini-x"});
        if last {
            c["candidates"][0]["finishReason"] = json!("STOP");
            c["usageMetadata"] = json!({"promptTokenCount": 100, "candidatesTokenCount": 7, "thoughtsTokenCount": 3});
        }
        format!("data: {c}\r\n\r\n")
    }

    #[test]
    fn a_stream_is_one_answer_and_ends_at_its_finish_reason() {
        let stream = [
            chunk(json!([{"text": "Reading "}]), false),
            chunk(json!([{"text": "it."}]), false),
            chunk(
                json!([{"functionCall": {"name": "ls", "args": {"d": "."}}}]),
                true,
            ),
        ]
        .concat();
        let records = Gemini
            .streamed_answer(stream.as_bytes(), "asked", "T", false)
            .unwrap();
        assert!(
            matches!(&records[0].body, Body::Assistant { content } if content == "Reading it.")
        );
        assert!(matches!(&records[1].body, Body::ToolCall { name, .. } if name == "ls"));
        let usage = &records[1].metadata.as_ref().unwrap()[USAGE];
        assert_eq!(
            (
                &usage["input_tokens"],
                &usage["output_tokens"],
                &usage["model"]
            ),
            (&json!(100), &json!(10), &json!("gemini-x"))
        );
        // Each event is watched for the end: only the last one ends it.
        let events: Vec<&str> = stream.split("\r\n\r\n").filter(|e| !e.is_empty()).collect();
        let ends: Vec<bool> = events
            .iter()
            .map(|e| Gemini.ends(None, e.trim_start_matches("data: ")))
            .collect();
        assert_eq!(ends, [false, false, true]);
        assert!(Gemini.ends(None, r#"{"error": {"code": 500, "message": "x"}}"#));
    }

    #[test]
    fn a_stream_that_broke_off_is_an_error_unless_read_as_cut_short() {
        let stream = chunk(json!([{"text": "Half an ans"}]), false);
        assert!(
            Gemini
                .streamed_answer(stream.as_bytes(), "m", "T", false)
                .is_err()
        );
        let records = Gemini
            .streamed_answer(stream.as_bytes(), "m", "T", true)
            .unwrap();
        assert!(
            matches!(&records[0].body, Body::Assistant { content } if content == "Half an ans")
        );
        // An answer with no candidate (blocked) is one empty text.
        let blocked = Gemini
            .answer(
                json!({"promptFeedback": {"blockReason": "SAFETY"}}),
                "m",
                "T",
            )
            .unwrap();
        assert!(
            matches!(&blocked[..], [r] if matches!(&r.body, Body::Assistant { content } if content.is_empty()))
        );
        assert!(
            Gemini
                .answer(json!({"error": {"code": 429}}), "m", "T")
                .is_err()
        );
    }

    #[test]
    fn only_a_model_call_is_interpreted() {
        let route = &ROUTES[0];
        let call = Gemini
            .call(route, "/v1beta/models/gemini-2.5-pro:streamGenerateContent")
            .unwrap();
        assert_eq!(
            (call.label, call.model.as_deref()),
            ("stream_generate_content", Some("gemini-2.5-pro"))
        );
        for other in [
            "/v1beta/models/gemini-2.5-pro:countTokens",
            "/v1beta/models/gemini-2.5-pro",
            "/v1beta/models/gemini-2.5-pro:embedContent",
        ] {
            assert!(Gemini.call(route, other).is_none(), "{other}");
        }
    }
}
