//! OpenAI chat completions (`POST /v1/chat/completions`), as OpenAI and
//! the servers that copy it (Ollama, llama.cpp, vLLM, OpenRouter) speak
//! it: the request, its messages and tool calls, the answer (whole, or
//! rebuilt from a stream's chunks).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{IntoValue, Object, RequestBody, present, put, put_extra};

pub use crate::role;

/// A request body.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Request {
    /// The model.
    pub model: String,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// The output limit (most models).
    pub max_tokens: Option<u32>,
    /// The output limit (OpenAI's reasoning models, which refuse
    /// `max_tokens`).
    pub max_completion_tokens: Option<u32>,
    /// Whether the answer is streamed.
    #[serde(default)]
    pub stream: bool,
    /// What a stream reports besides the answer.
    pub stream_options: Option<StreamOptions>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// `stream_options`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StreamOptions {
    /// The last chunk reports usage.
    pub include_usage: bool,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// A message, of any role.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Message {
    /// Its role (see [`role`]).
    pub role: String,
    /// The call a `tool` message answers.
    pub tool_call_id: Option<String>,
    /// Its content: `None` when the key is missing.
    #[serde(default, deserialize_with = "present")]
    pub content: Option<Content>,
    /// An assistant's reasoning (DeepSeek, vLLM, llama.cpp).
    pub reasoning_content: Option<String>,
    /// An assistant's reasoning, as OpenRouter and newer vLLM name it.
    pub reasoning: Option<String>,
    /// An assistant's tool calls (`None` when the key is missing).
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Every other key (`name`, `refusal`, …).
    #[serde(flatten)]
    pub extra: Object,
}

impl Message {
    /// The `content` of `m`, a message's JSON, borrowed: for a reader that
    /// walks a request without copying it (serde hands out no references
    /// into a value).
    pub fn content_of(m: &Object) -> Option<&Value> {
        m.get("content")
    }

    /// The `tool_calls` of `m`, a message's JSON, borrowed (see
    /// [`Message::content_of`]).
    pub fn tool_calls_of(m: &Object) -> Option<&Value> {
        m.get("tool_calls")
    }

    /// A message of `role` with text `content`.
    pub fn text(role: &str, content: impl Into<String>) -> Message {
        Message {
            role: role.to_owned(),
            content: Some(Content::Text(content.into())),
            ..Message::default()
        }
    }

    /// `extra` set to `keys` but for those the message's own fields set.
    pub fn with_extra(mut self, keys: Object) -> Message {
        let mut set = vec!["role"];
        for (k, on) in [
            ("tool_call_id", self.tool_call_id.is_some()),
            ("content", self.content.is_some()),
            ("reasoning_content", self.reasoning_content.is_some()),
            ("reasoning", self.reasoning.is_some()),
            ("tool_calls", self.tool_calls.is_some()),
        ] {
            if on {
                set.push(k);
            }
        }
        self.extra = crate::extra_except(keys, &set);
        self
    }
}

/// A message's `content`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Text.
    Text(String),
    /// Content parts (`text`, `image_url`, …), kept as they are.
    Parts(Vec<Value>),
    /// `null` (an assistant message with only tool calls).
    Null,
    /// Anything else, as it came (not what the API sends).
    Other(Value),
}

impl Content {
    /// `content` as a value, from what a record kept of it.
    pub fn from_value(v: Value) -> Content {
        match v {
            Value::String(s) => Content::Text(s),
            Value::Array(a) => Content::Parts(a),
            Value::Null => Content::Null,
            other => Content::Other(other),
        }
    }
}

/// A tool call in an assistant message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id.
    pub id: String,
    /// `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function called.
    pub function: FunctionCall,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

impl ToolCall {
    /// A `function` call.
    pub fn function(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: "function".into(),
            function: FunctionCall {
                name: name.into(),
                arguments,
                extra: Object::new(),
            },
            extra: Object::new(),
        }
    }
}

/// The function of a tool call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The tool.
    pub name: String,
    /// Its arguments: JSON text in a string (some logs write the object).
    pub arguments: Value,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Tool {
    /// `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function.
    pub function: FunctionDef,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

impl Tool {
    /// A `function` tool.
    pub fn function(name: &str, description: &str, parameters: Value) -> Tool {
        Tool {
            kind: "function".into(),
            function: FunctionDef {
                name: name.to_owned(),
                description: Some(description.to_owned()),
                parameters: Some(parameters),
                extra: Object::new(),
            },
            extra: Object::new(),
        }
    }
}

/// A function tool's definition.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FunctionDef {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// JSON Schema of its arguments.
    pub parameters: Option<Value>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// `tool_choice` forcing one function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolChoice {
    /// `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function, by name.
    pub function: Named,
}

impl ToolChoice {
    /// Force the function `name`.
    pub fn function(name: &str) -> ToolChoice {
        ToolChoice {
            kind: "function".into(),
            function: Named {
                name: name.to_owned(),
            },
        }
    }
}

/// Something named (a forced tool).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Named {
    /// The name.
    pub name: String,
}

/// A whole answer, as a non-streamed call gives it (or rebuilt from a
/// stream's chunks: their other keys first, in the order they came).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Completion {
    /// Every other key (`id`, `model`, `created`, …).
    #[serde(flatten)]
    pub extra: Object,
    /// `chat.completion`.
    pub object: String,
    /// The answers; ctxfold reads the first.
    pub choices: Vec<Choice>,
    /// Tokens used, as sent.
    pub usage: Option<Value>,
}

/// One answer of a [`Completion`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Choice {
    /// Its index.
    pub index: u64,
    /// The assistant's message.
    pub message: Message,
    /// Why it stopped (`stop`, `tool_calls`, `length`, …; `null` when a
    /// stream broke off).
    pub finish_reason: Option<Value>,
}

/// An answer as read: a whole completion (its choices hold a `message`)
/// or one chunk of a stream (`delta`). Unlike [`Completion`], which is what
/// ctxfold writes, every key is optional: the servers that copy the API
/// leave out what they do not have (a choice's index, a tool call's id or
/// type, a chunk's delta).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Answer {
    /// `chat.completion` or `chat.completion.chunk`.
    pub object: Option<Value>,
    /// The answers; ctxfold reads the one of index 0.
    pub choices: Option<Vec<AnswerChoice>>,
    /// Tokens used, as sent (see [`Usage`]).
    pub usage: Option<Value>,
    /// What went wrong: a chunk of a stream may be an error instead.
    pub error: Option<Value>,
    /// Every other key (`id`, `model`, `created`, …).
    #[serde(flatten)]
    pub extra: Object,
}

/// One answer of an [`Answer`].
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AnswerChoice {
    /// Its index (none: 0).
    pub index: Option<u64>,
    /// The whole message (a whole completion).
    pub message: Option<AnswerMessage>,
    /// A piece of the message (a chunk).
    pub delta: Option<AnswerMessage>,
    /// Why it stopped (`stop`, `tool_calls`, `length`, …).
    pub finish_reason: Option<Value>,
    /// Every other key (`logprobs`, …).
    #[serde(flatten)]
    pub extra: Object,
}

/// An assistant's message as an answer holds it, whole or a piece of it.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AnswerMessage {
    /// `assistant`.
    pub role: Option<String>,
    /// Its text (or parts).
    pub content: Option<Content>,
    /// Its reasoning (DeepSeek, vLLM, llama.cpp).
    pub reasoning_content: Option<String>,
    /// Its reasoning, as OpenRouter and newer vLLM name it.
    pub reasoning: Option<String>,
    /// Its tool calls (in a chunk: pieces of them, by `index`).
    pub tool_calls: Option<Vec<AnswerToolCall>>,
    /// Every other key (`refusal`, …).
    #[serde(flatten)]
    pub extra: Object,
}

/// A tool call as an answer holds it, whole or a piece of it.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AnswerToolCall {
    /// Which call a piece belongs to (a chunk's).
    pub index: Option<u64>,
    /// The call's id.
    pub id: Option<String>,
    /// `function`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The function called.
    pub function: Option<AnswerFunction>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// The function of an [`AnswerToolCall`].
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AnswerFunction {
    /// The tool.
    pub name: Option<String>,
    /// Its arguments: JSON text in a string (in a chunk, a piece of it).
    pub arguments: Option<Value>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// An answer's `usage`, the counts ctxfold reads.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// The prompt's tokens, cached ones included.
    pub prompt_tokens: Option<u64>,
    /// The answer's tokens, reasoning included.
    pub completion_tokens: Option<u64>,
    /// Every other key (`total_tokens`, `prompt_tokens_details`, …).
    #[serde(flatten)]
    pub extra: Object,
}

impl Content {
    /// Its text: the text itself, or the `text` of each part that has one,
    /// joined with `sep`; empty for `null` and anything else.
    pub fn text(&self, sep: &str) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(sep),
            Content::Null | Content::Other(_) => String::new(),
        }
    }
}

impl Request {
    /// The request as a body to send, its messages kept typed until
    /// they are written (see [`RequestBody`]).
    pub fn into_body(mut self) -> RequestBody<Message> {
        let messages = std::mem::take(&mut self.messages);
        RequestBody::new(self.into_object(), messages)
    }

    /// Its keys, in the order the type's `Serialize` writes them.
    fn into_object(self) -> Object {
        let mut o = Object::new();
        o.insert("model".into(), Value::String(self.model));
        o.insert("messages".into(), self.messages.into_value());
        if !self.tools.is_empty() {
            o.insert("tools".into(), crate::value(&self.tools));
        }
        put(&mut o, "max_tokens", self.max_tokens.map(Value::from));
        put(
            &mut o,
            "max_completion_tokens",
            self.max_completion_tokens.map(Value::from),
        );
        o.insert("stream".into(), Value::Bool(self.stream));
        put(
            &mut o,
            "stream_options",
            self.stream_options.as_ref().map(crate::value),
        );
        put_extra(&mut o, self.extra);
        o
    }
}

impl IntoValue for Request {
    fn into_value(self) -> Value {
        Value::Object(self.into_object())
    }
}

impl IntoValue for Message {
    fn into_value(self) -> Value {
        let mut o = Object::new();
        o.insert("role".into(), Value::String(self.role));
        put(&mut o, "tool_call_id", self.tool_call_id);
        put(&mut o, "content", self.content);
        put(&mut o, "reasoning_content", self.reasoning_content);
        put(&mut o, "reasoning", self.reasoning);
        put(&mut o, "tool_calls", self.tool_calls);
        put_extra(&mut o, self.extra);
        Value::Object(o)
    }
}

impl IntoValue for Content {
    fn into_value(self) -> Value {
        match self {
            Content::Text(s) => Value::String(s),
            Content::Parts(p) => Value::Array(p),
            Content::Null => Value::Null,
            Content::Other(v) => v,
        }
    }
}

impl IntoValue for ToolCall {
    fn into_value(self) -> Value {
        let mut f = Object::new();
        f.insert("name".into(), Value::String(self.function.name));
        f.insert("arguments".into(), self.function.arguments);
        put_extra(&mut f, self.function.extra);
        let mut o = Object::new();
        o.insert("id".into(), Value::String(self.id));
        o.insert("type".into(), Value::String(self.kind));
        o.insert("function".into(), Value::Object(f));
        put_extra(&mut o, self.extra);
        Value::Object(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Serialize + for<'de> Deserialize<'de>>(text: &str) -> String {
        let t: T = serde_json::from_str(text).unwrap();
        serde_json::to_string(&t).unwrap()
    }

    #[test]
    fn a_request_keeps_its_other_keys_and_fields_byte_for_byte() {
        let body = r#"{"model":"gpt-4o","messages":[{"role":"system","content":"be brief","name":"ops"},{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}}]},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\": \"a.rs\"}","strict":true},"index":0}],"refusal":null},{"role":"tool","tool_call_id":"call_1","content":"fn main() {}"},{"role":"function","content":"x","name":"legacy"}],"tools":[{"type":"function","function":{"name":"read","description":"read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}},"cache":"ephemeral"}],"max_tokens":512,"stream":true,"stream_options":{"include_usage":true,"chunk_usage":false},"temperature":0.25,"seed":7,"logit_bias":{"50256":-100}}"#;
        assert_eq!(round_trip::<Request>(body), body);
    }

    #[test]
    fn a_missing_content_and_a_null_one_differ() {
        let none: Message = serde_json::from_str(r#"{"role":"assistant"}"#).unwrap();
        assert_eq!(none.content, None);
        let null: Message = serde_json::from_str(r#"{"role":"assistant","content":null}"#).unwrap();
        assert_eq!(null.content, Some(Content::Null));
        assert_eq!(
            serde_json::to_string(&null).unwrap(),
            r#"{"role":"assistant","content":null}"#
        );
        let empty: Message =
            serde_json::from_str(r#"{"role":"assistant","content":"","tool_calls":[]}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&empty).unwrap(),
            r#"{"role":"assistant","content":"","tool_calls":[]}"#
        );
    }

    #[test]
    fn extra_keys_never_repeat_a_field() {
        let mut keys = Object::new();
        keys.insert("name".into(), "n".into());
        keys.insert("content".into(), "old".into());
        keys.insert("tool_calls".into(), Value::Array(vec![]));
        let m = Message::text(role::USER, "new").with_extra(keys);
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"role":"user","content":"new","name":"n","tool_calls":[]}"#
        );
    }

    #[test]
    fn moved_into_a_value_as_serialized() {
        let body = r#"[{"role":"system","content":"be brief","name":"ops"},{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":null,"reasoning_content":"r","reasoning":"s","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{}","strict":true},"index":0}],"refusal":null},{"role":"tool","tool_call_id":"call_1","content":"x"},{"role":"assistant"},{"role":"user","content":7}]"#;
        let messages: Vec<Message> = serde_json::from_str(body).unwrap();
        let request = Request {
            model: "m".into(),
            messages: messages.clone(),
            tools: vec![Tool::function("f", "d", Value::Null)],
            max_completion_tokens: Some(5),
            stream: true,
            stream_options: Some(StreamOptions {
                include_usage: true,
                extra: Object::new(),
            }),
            ..Request::default()
        };
        assert_eq!(
            request.clone().into_value().to_string(),
            crate::value(&request).to_string()
        );
        let moved = messages.clone().into_value();
        assert_eq!(moved.to_string(), crate::value(&messages).to_string());
        assert_eq!(moved.to_string(), body);
    }

    #[test]
    fn answers_read_whole_or_in_chunks_with_what_servers_leave_out() {
        let whole = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls","logprobs":null}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}"#;
        let a: Answer = serde_json::from_str(whole).unwrap();
        let choice = &a.choices.as_ref().unwrap()[0];
        let call = &choice
            .message
            .as_ref()
            .unwrap()
            .tool_calls
            .as_ref()
            .unwrap()[0];
        assert_eq!((call.id.as_deref(), call.kind.as_deref()), (None, None));
        assert_eq!(a.extra.keys().collect::<Vec<_>>(), ["id"]);
        let usage: Usage = serde_json::from_value(a.usage.clone().unwrap()).unwrap();
        assert_eq!(
            (usage.prompt_tokens, usage.completion_tokens),
            (Some(3), Some(1))
        );
        let chunk = r#"{"id":"c","choices":[{"index":0,"delta":{"content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}],"tool_calls":[{"index":1,"id":null,"function":{"arguments":"{\"p"}}]},"finish_reason":null}]}"#;
        let a: Answer = serde_json::from_str(chunk).unwrap();
        let delta = a.choices.unwrap().remove(0).delta.unwrap();
        assert_eq!(delta.content.unwrap().text("|"), "a|b");
        assert_eq!(delta.tool_calls.unwrap()[0].index, Some(1));
        let error: Answer = serde_json::from_str(r#"{"error":{"message":"no"}}"#).unwrap();
        assert!(error.error.is_some() && error.choices.is_none());
    }

    #[test]
    fn a_rebuilt_completion_puts_the_chunks_keys_first() {
        let c = r#"{"id":"chatcmpl-1","created":1700000000,"model":"m","system_fingerprint":"fp","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi","reasoning":"why"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}"#;
        assert_eq!(round_trip::<Completion>(c), c);
    }
}
