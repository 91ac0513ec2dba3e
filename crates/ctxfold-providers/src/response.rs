//! A model's answer: [`ChatResponse`], the same whether it was streamed or
//! not, and the records it becomes in the log.
//!
//! # Records ([`ChatResponse::to_records`])
//!
//! In the order the model gave them: `reasoning` (its signature in metadata
//! `anthropic_thinking_signature`), `assistant` text, `tool_call`. An answer
//! with none of these becomes one `assistant` record with empty text, so
//! its usage has a place. The last record carries metadata `usage`:
//!
//! ```json
//! {"model": "anthropic/claude-sonnet-4-5", "input_tokens": 1520, "output_tokens": 210,
//!  "raw": {"input_tokens": 20, "cache_read_input_tokens": 1500, "output_tokens": 210}}
//! ```
//!
//! `input_tokens` is the whole prompt as the provider counted it (for
//! Anthropic: input plus cache creation plus cache reads), `raw` the usage
//! object as the provider sent it. Records get `seq` 0: the store numbers
//! them when it appends them.

use ctxfold_core::{Body, Record};
use serde_json::{Value, json};

use crate::part::{Part, THINKING_SIGNATURE, text_parts, tool_call_parts};

/// The metadata key of reported usage.
pub const USAGE: &str = "usage";

/// Tokens the provider says the call used.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    /// The prompt, cached parts included.
    pub input_tokens: u64,
    /// The answer, reasoning included.
    pub output_tokens: u64,
    /// The usage object as sent.
    pub raw: Value,
}

impl Usage {
    /// A response's `usage` as sent, if it is an object, with its counts
    /// as the API's usage type reads them (a count it lacks: 0).
    pub(crate) fn of(raw: Value, input_tokens: u64, output_tokens: u64) -> Option<Usage> {
        raw.is_object().then_some(Usage {
            input_tokens,
            output_tokens,
            raw,
        })
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// It was done (`stop`, `end_turn`, `stop_sequence`).
    EndTurn,
    /// It wants its tool calls run (`tool_calls`, `tool_use`).
    ToolUse,
    /// It hit the output limit (`length`, `max_tokens`).
    MaxTokens,
    /// Anything else, as sent (`content_filter`, `refusal`, `pause_turn`, …).
    Other(String),
}

impl StopReason {
    /// Read a provider's finish or stop reason.
    pub fn parse(s: &str) -> StopReason {
        match s {
            "stop" | "end_turn" | "stop_sequence" | "eos" => StopReason::EndTurn,
            "tool_calls" | "tool_use" | "function_call" => StopReason::ToolUse,
            "length" | "max_tokens" => StopReason::MaxTokens,
            other => StopReason::Other(other.to_owned()),
        }
    }
}

/// Something that arrived on a stream, for a terminal to show as it comes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// A piece of the answer's text.
    Text(String),
    /// A piece of reasoning.
    Reasoning(String),
    /// A tool call began (its arguments follow, unshown).
    ToolCall {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
    },
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// `provider/model`, as asked for.
    pub model: String,
    /// Reasoning, text and tool calls, in order (no tool results).
    pub parts: Vec<Part>,
    /// Reported usage, if any.
    pub usage: Option<Usage>,
    /// Why the model stopped, if it said.
    pub stop_reason: Option<StopReason>,
    /// The whole response as JSON. For a stream: the response a
    /// non-streamed call would have given, rebuilt from the chunks.
    pub raw: Value,
}

impl ChatResponse {
    /// The answer's text parts, joined with "\n\n".
    pub fn text(&self) -> String {
        text_parts(&self.parts).join("\n\n")
    }

    /// The tool calls: (id, name, arguments).
    pub fn tool_calls(&self) -> Vec<(&str, &str, &Value)> {
        tool_call_parts(&self.parts).collect()
    }

    /// The records to append to the log (see the module docs), stamped
    /// `ts`.
    pub fn to_records(&self, ts: &str) -> Vec<Record> {
        let mut out: Vec<Record> = Vec::new();
        for part in &self.parts {
            let (body, meta) = match part {
                Part::Text(t) => (Body::Assistant { content: t.clone() }, None),
                Part::Reasoning { text, signature } => (
                    Body::Reasoning {
                        content: text.clone(),
                    },
                    signature
                        .as_ref()
                        .map(|s| (THINKING_SIGNATURE, Value::String(s.clone()))),
                ),
                Part::ToolCall {
                    id,
                    name,
                    arguments,
                } => (
                    Body::ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments: arguments.into(),
                    },
                    None,
                ),
                Part::ToolResult { .. } => continue,
            };
            let mut r = Record::new(0, ts, body);
            if let Some((k, v)) = meta {
                r.metadata.get_or_insert_default().insert(k.into(), v);
            }
            out.push(r);
        }
        if out.is_empty() {
            out.push(Record::new(
                0,
                ts,
                Body::Assistant {
                    content: String::new(),
                },
            ));
        }
        if let (Some(u), Some(last)) = (&self.usage, out.last_mut()) {
            last.metadata.get_or_insert_default().insert(
                USAGE.into(),
                json!({
                    "model": self.model,
                    "input_tokens": u.input_tokens,
                    "output_tokens": u.output_tokens,
                    "raw": u.raw,
                }),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_stored_on_the_last_record_and_signatures_on_reasoning() {
        let r = ChatResponse {
            model: "anthropic/claude-sonnet-4-5".into(),
            parts: vec![
                Part::Reasoning {
                    text: "hmm".into(),
                    signature: Some("sig".into()),
                },
                Part::Text("hello".into()),
                Part::ToolCall {
                    id: "t1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                },
            ],
            usage: Some(Usage {
                input_tokens: 12,
                output_tokens: 5,
                raw: json!({"input_tokens": 12, "output_tokens": 5}),
            }),
            stop_reason: Some(StopReason::ToolUse),
            raw: Value::Null,
        };
        let recs = r.to_records("2026-01-01T00:00:00Z");
        assert_eq!(recs.len(), 3);
        assert_eq!(
            recs[0].metadata.as_ref().unwrap()[THINKING_SIGNATURE],
            "sig"
        );
        assert!(recs[1].metadata.is_none());
        let usage = &recs[2].metadata.as_ref().unwrap()[USAGE];
        assert_eq!(
            usage,
            &json!({"model": "anthropic/claude-sonnet-4-5", "input_tokens": 12, "output_tokens": 5,
                    "raw": {"input_tokens": 12, "output_tokens": 5}})
        );
        assert!(matches!(recs[2].body, Body::ToolCall { .. }));
        assert_eq!(recs[2].ts, "2026-01-01T00:00:00Z");
    }

    #[test]
    fn an_empty_answer_still_carries_its_usage() {
        let r = ChatResponse {
            model: "openai/gpt-4o".into(),
            parts: vec![],
            usage: Some(Usage {
                input_tokens: 1,
                output_tokens: 0,
                raw: json!({}),
            }),
            stop_reason: None,
            raw: Value::Null,
        };
        let recs = r.to_records("t");
        assert_eq!(recs.len(), 1);
        assert!(matches!(&recs[0].body, Body::Assistant { content } if content.is_empty()));
        assert!(recs[0].metadata.as_ref().unwrap().contains_key(USAGE));
    }
}
