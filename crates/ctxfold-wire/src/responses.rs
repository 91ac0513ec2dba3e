//! OpenAI Responses (`POST /v1/responses`): input and output items (a
//! response's output items are input items of the next request), the
//! response object, and the stream's events.
//!
//! Items come back from the API with their keys in its own order (`id`,
//! `type`, `status`, …) and the API refuses some it did not write as it
//! wrote them: an item read from a request is written back over the
//! object it was read from ([`crate::write_over`]), so its order stays.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Object, tagged};

/// A message item without a `type` (the shape the API's own examples
/// use): a role (`system`, `developer`, `user` or `assistant`), its
/// content, and every other key (`id`, `status`, …).
pub type Message = crate::RoleMessage<Content>;

impl Message {
    /// The `content` of `item`, a message item's JSON, to fill in place
    /// (an item kept as the client wrote it, its text set again).
    pub fn content_mut(item: &mut Object) -> Option<&mut Value> {
        item.get_mut("content")
    }

    /// What a message item ctxfold writes anew starts from: its `type`
    /// (`"message"`), which the API may leave out but servers that
    /// implement it strictly (llama.cpp's) require.
    pub fn typed() -> Object {
        let mut o = Object::new();
        o.insert("type".into(), Value::String("message".into()));
        o
    }

    /// A message of `role` with text `content`.
    pub fn text(role: &str, content: impl Into<String>) -> Message {
        Message {
            role: role.to_owned(),
            content: Content::Text(content.into()),
            extra: Object::new(),
        }
    }
}

/// A message's content, or a call output's `output`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Text.
    Text(String),
    /// Content parts (`input_text`, `output_text`, `input_image`, …), kept
    /// as they are.
    Parts(Vec<Value>),
}

impl Content {
    /// One text part of `kind` (`input_text`, `output_text`).
    pub fn text_part(kind: &str, text: impl Into<String>) -> Content {
        let mut part = Object::new();
        part.insert("type".into(), Value::String(kind.to_owned()));
        part.insert("text".into(), Value::String(text.into()));
        Content::Parts(vec![Value::Object(part)])
    }
}

impl Content {
    /// The `type` of `part`, a content part (`input_text`, …), if it has
    /// one.
    pub fn part_kind(part: &Value) -> Option<&str> {
        part.get("type").and_then(Value::as_str)
    }

    /// The `text` of `part`, a content part, if it has one.
    pub fn part_text(part: &Value) -> Option<&str> {
        part.get("text").and_then(Value::as_str)
    }
}

impl Reasoning {
    /// Its `content` parts (`reasoning_text`), if it has them: kept among
    /// its other keys, as the API sends them back only to some clients.
    pub fn content(&self) -> Option<&[Value]> {
        self.extra
            .get("content")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
    }
}

impl Default for Content {
    fn default() -> Self {
        Content::Text(String::new())
    }
}

tagged! {
    /// An input or output item.
    pub enum Item {
        /// A message, with its `type`.
        "message" => Message(Message),
        /// A function call.
        "function_call" => FunctionCall(FunctionCall),
        /// A function call's result.
        "function_call_output" => FunctionCallOutput(CallOutput),
        /// A call of a custom tool, whose input is free text.
        "custom_tool_call" => CustomToolCall(CustomToolCall),
        /// A custom tool call's result.
        "custom_tool_call_output" => CustomToolCallOutput(CallOutput),
        /// Reasoning (its `encrypted_content` only valid as the API wrote
        /// it).
        "reasoning" => Reasoning(Reasoning),
    }
}

/// A `function_call` item.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The id its output names.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// Its arguments: JSON text in a string (some logs write the object).
    pub arguments: Value,
    /// Every other key (`id`, `status`, …).
    #[serde(flatten)]
    pub extra: Object,
}

/// A `custom_tool_call` item.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CustomToolCall {
    /// The id its output names.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// Its input, free text.
    pub input: String,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// A `function_call_output` or `custom_tool_call_output` item.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CallOutput {
    /// The call it answers.
    pub call_id: String,
    /// The result.
    pub output: Content,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// A `reasoning` item.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Reasoning {
    /// `summary_text` parts.
    #[serde(default)]
    pub summary: Vec<Value>,
    /// Every other key (`id`, `encrypted_content`, `content`, …).
    #[serde(flatten)]
    pub extra: Object,
}

/// A response object: a whole answer, or the `response` of a stream's
/// `response.completed` event.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Response {
    /// Its id (a later request names it in `previous_response_id`).
    pub id: Option<String>,
    /// The model that answered.
    pub model: Option<String>,
    /// The output items.
    #[serde(default)]
    pub output: Vec<Value>,
    /// Tokens used, as sent.
    pub usage: Option<Value>,
    /// What went wrong, when it failed.
    pub error: Option<Value>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

impl Response {
    /// A response holding only `output`.
    pub fn of_output(output: Vec<Value>) -> Response {
        Response {
            output,
            ..Response::default()
        }
    }
}

/// The names of the stream's events (its `type`s).
pub mod event {
    /// The answer is complete: its `response` holds it whole.
    pub const COMPLETED: &str = "response.completed";
    /// The answer stopped early (the output limit); its `response` holds
    /// what there is.
    pub const INCOMPLETE: &str = "response.incomplete";
    /// The answer failed.
    pub const FAILED: &str = "response.failed";
    /// An output item is complete: its `item`.
    pub const OUTPUT_ITEM_DONE: &str = "response.output_item.done";
    /// An error.
    pub const ERROR: &str = "error";
    /// The events after which nothing more comes.
    pub const LAST: [&str; 4] = [COMPLETED, INCOMPLETE, FAILED, ERROR];
}

tagged! {
    /// An event of a streamed response (the ones ctxfold reads; the many
    /// deltas are `Other`).
    pub enum StreamEvent {
        /// The answer is complete.
        "response.completed" => Completed(WithResponse),
        /// The answer stopped early.
        "response.incomplete" => Incomplete(WithResponse),
        /// The answer failed.
        "response.failed" => Failed(WithResponse),
        /// An output item is complete.
        "response.output_item.done" => OutputItemDone(OutputItemDone),
    }
}

/// An event carrying the response.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct WithResponse {
    /// The response.
    #[serde(default)]
    pub response: Value,
    /// Every other key (`sequence_number`, …).
    #[serde(flatten)]
    pub extra: Object,
}

/// `response.output_item.done`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OutputItemDone {
    /// The item.
    pub item: Value,
    /// Every other key (`output_index`, `sequence_number`, …).
    #[serde(flatten)]
    pub extra: Object,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_of_every_kind_round_trip_byte_for_byte() {
        let input = r#"[{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions>"}]},{"role":"user","content":"fix it"},{"type":"reasoning","summary":[{"type":"summary_text","text":"Plan."}],"id":"rs_1","encrypted_content":"gAAAAB"},{"type":"function_call","call_id":"call_1","name":"shell","arguments":"{\"cmd\":[\"ls\"]}","id":"fc_1","status":"completed"},{"type":"function_call_output","call_id":"call_1","output":"a.rs\n"},{"type":"custom_tool_call","call_id":"call_2","name":"apply_patch","input":"*** Begin Patch","status":"completed"},{"type":"custom_tool_call_output","call_id":"call_2","output":[{"type":"input_text","text":"done"}]},{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}},{"type":"item_reference","id":"msg_9"}]"#;
        let items: Vec<Item> = serde_json::from_str(input).unwrap();
        assert_eq!(serde_json::to_string(&items).unwrap(), input);
        let kinds: Vec<_> = items.iter().map(Item::kind).collect();
        assert_eq!(
            kinds,
            [
                Some("message"),
                None,
                Some("reasoning"),
                Some("function_call"),
                Some("function_call_output"),
                Some("custom_tool_call"),
                Some("custom_tool_call_output"),
                Some("web_search_call"),
                Some("item_reference")
            ]
        );
        assert!(matches!(&items[7], Item::Other(_)));
    }

    /// The API writes `id` and `type` first; written over the object it was
    /// read from (its own fields blanked), an item keeps that order.
    #[test]
    fn an_item_written_over_its_template_keeps_the_clients_order() {
        let sent = r#"{"id":"fc_1","type":"function_call","status":"completed","arguments":null,"call_id":null,"name":null}"#;
        let template: Object = serde_json::from_str(sent).unwrap();
        let call = Item::FunctionCall(FunctionCall {
            call_id: "call_1".into(),
            name: "shell".into(),
            arguments: "{}".into(),
            extra: Object::new(),
        });
        let out = crate::write_over(template, crate::value(&call));
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            r#"{"id":"fc_1","type":"function_call","status":"completed","arguments":"{}","call_id":"call_1","name":"shell"}"#
        );
    }

    #[test]
    fn stream_events_round_trip() {
        for data in [
            r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress"}}"#,
            r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"Hi","sequence_number":5}"#,
            r#"{"type":"response.completed","response":{"id":"resp_1","object":"response","model":"gpt-5","output":[],"usage":{"input_tokens":5,"output_tokens":2}},"sequence_number":8}"#,
        ] {
            let ev: StreamEvent = serde_json::from_str(data).unwrap();
            assert_eq!(serde_json::to_string(&ev).unwrap(), data);
        }
        let done: StreamEvent = serde_json::from_str(
            r#"{"type":"response.output_item.done","sequence_number":7,"item":{"type":"message"}}"#,
        )
        .unwrap();
        // Known fields first: the event's own order is not kept, its keys are.
        assert_eq!(
            serde_json::to_string(&done).unwrap(),
            r#"{"type":"response.output_item.done","item":{"type":"message"},"sequence_number":7}"#
        );
    }
}
