//! Anthropic Messages (`POST /v1/messages`): the request, its messages and
//! content blocks (thinking with its signature, tool use and results,
//! images; server-side blocks such as `compaction`, `server_tool_use` or
//! `web_search_tool_result` kept as they came), and the stream's events.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{IntoValue, Object, RequestBody, put, put_extra, tagged};

pub use crate::role;

/// A request body.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Request {
    /// The model.
    pub model: String,
    /// The output limit (required by the API).
    pub max_tokens: Option<u32>,
    /// The system prompt.
    pub system: Option<Content>,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// Whether the answer is streamed (written only when it is).
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub stream: bool,
    /// Every other key (`thinking`, `metadata`, `temperature`, …).
    #[serde(flatten)]
    pub extra: Object,
}

/// A message: its role (see [`role`]), its content, every other key.
pub type Message = crate::RoleMessage<Content>;

impl Message {
    /// The `content` of `m`, a message's JSON, borrowed: for a reader that
    /// walks a request without copying it (serde hands out no references
    /// into a value).
    pub fn content_of(m: &Object) -> Option<&Value> {
        m.get("content")
    }

    /// The `content` of `m`, a message's JSON, to take or fill in place.
    pub fn content_mut(m: &mut Object) -> Option<&mut Value> {
        m.get_mut("content")
    }

    /// A message of `role` holding `content`, with the other keys `keys`
    /// (but `role` and `content`).
    pub fn new(role: &str, content: Content, keys: Object) -> Message {
        Message {
            role: role.to_owned(),
            content,
            extra: crate::extra_except(keys, &["role", "content"]),
        }
    }
}

/// A whole answer as the Messages API returns it (`type: "message"`):
/// what Claude Code keeps as the `message` of its assistant lines. Read
/// from the servers that copy the API, its id, type, role and model may be
/// missing (empty).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// Its id (`msg_…`).
    #[serde(default)]
    pub id: String,
    /// `message`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// `assistant`.
    #[serde(default)]
    pub role: String,
    /// The model that wrote it.
    #[serde(default)]
    pub model: Value,
    /// Its content blocks (`None`, written `null`, while they are still
    /// to be set).
    pub content: Option<Vec<Block>>,
    /// Why it stopped (`end_turn`, `tool_use`, …).
    pub stop_reason: Option<String>,
    /// The stop sequence met, if any.
    pub stop_sequence: Option<String>,
    /// Tokens used, as sent (see [`Usage`]; `None`: no `usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Object>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

impl Reply {
    /// An answer `id` of `model` that ended its turn, its content still to
    /// be set and its usage zero (an answer no model call made).
    pub fn ended(id: impl Into<String>, model: Value) -> Reply {
        let mut usage = Object::new();
        usage.insert("input_tokens".into(), Value::from(0));
        usage.insert("output_tokens".into(), Value::from(0));
        Reply {
            id: id.into(),
            kind: "message".into(),
            role: role::ASSISTANT.into(),
            model,
            content: None,
            stop_reason: Some("end_turn".into()),
            stop_sequence: None,
            usage: Some(usage),
            extra: Object::new(),
        }
    }
}

/// An answer's `usage`, the counts ctxfold reads.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// The prompt's tokens that were neither written to nor read from the
    /// prompt cache.
    pub input_tokens: Option<u64>,
    /// The prompt's tokens written to the cache.
    pub cache_creation_input_tokens: Option<u64>,
    /// The prompt's tokens read from the cache.
    pub cache_read_input_tokens: Option<u64>,
    /// The answer's tokens.
    pub output_tokens: Option<u64>,
    /// Every other key (`cache_creation`, `service_tier`, …).
    #[serde(flatten)]
    pub extra: Object,
}

/// A message's content, or the top-level `system`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Content blocks.
    Blocks(Vec<Block>),
}

tagged! {
    /// A content block.
    pub enum Block {
        /// Text.
        "text" => Text(Text),
        /// The model's reasoning, signed.
        "thinking" => Thinking(Thinking),
        /// Reasoning the API keeps encrypted.
        "redacted_thinking" => RedactedThinking(RedactedThinking),
        /// A tool call.
        "tool_use" => ToolUse(ToolUse),
        /// A tool's result.
        "tool_result" => ToolResult(ToolResult),
        /// An image.
        "image" => Image(Image),
    }
}

impl Block {
    /// A `text` block.
    pub fn text(text: impl Into<String>) -> Block {
        Block::Text(Text {
            text: text.into(),
            extra: Object::new(),
        })
    }

    /// The block's other keys (for `Other`: none).
    pub fn extra_mut(&mut self) -> Option<&mut Object> {
        match self {
            Block::Text(b) => Some(&mut b.extra),
            Block::Thinking(b) => Some(&mut b.extra),
            Block::RedactedThinking(b) => Some(&mut b.extra),
            Block::ToolUse(b) => Some(&mut b.extra),
            Block::ToolResult(b) => Some(&mut b.extra),
            Block::Image(b) => Some(&mut b.extra),
            Block::Other(_) => None,
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
        put(&mut o, "max_tokens", self.max_tokens.map(Value::from));
        put(&mut o, "system", self.system);
        o.insert("messages".into(), self.messages.into_value());
        if !self.tools.is_empty() {
            o.insert("tools".into(), crate::value(&self.tools));
        }
        if self.stream {
            o.insert("stream".into(), Value::Bool(true));
        }
        put_extra(&mut o, self.extra);
        o
    }
}

impl IntoValue for Request {
    fn into_value(self) -> Value {
        Value::Object(self.into_object())
    }
}

impl IntoValue for Content {
    fn into_value(self) -> Value {
        match self {
            Content::Text(s) => Value::String(s),
            Content::Blocks(b) => b.into_value(),
        }
    }
}

impl IntoValue for Block {
    fn into_value(self) -> Value {
        let mut o = Object::new();
        let tag = |o: &mut Object, t: &str| {
            o.insert("type".into(), Value::String(t.to_owned()));
        };
        let extra = match self {
            Block::Other(v) => return v,
            Block::Text(b) => {
                tag(&mut o, "text");
                o.insert("text".into(), Value::String(b.text));
                b.extra
            }
            Block::Thinking(b) => {
                tag(&mut o, "thinking");
                o.insert("thinking".into(), Value::String(b.thinking));
                put(&mut o, "signature", b.signature);
                b.extra
            }
            Block::RedactedThinking(b) => {
                tag(&mut o, "redacted_thinking");
                o.insert("data".into(), Value::String(b.data));
                b.extra
            }
            Block::ToolUse(b) => {
                tag(&mut o, "tool_use");
                o.insert("id".into(), Value::String(b.id));
                o.insert("name".into(), Value::String(b.name));
                o.insert("input".into(), b.input);
                b.extra
            }
            Block::ToolResult(b) => {
                tag(&mut o, "tool_result");
                o.insert("tool_use_id".into(), Value::String(b.tool_use_id));
                put(&mut o, "content", b.content);
                put(&mut o, "is_error", b.is_error);
                b.extra
            }
            Block::Image(b) => {
                tag(&mut o, "image");
                o.insert("source".into(), b.source);
                b.extra
            }
        };
        put_extra(&mut o, extra);
        Value::Object(o)
    }
}

/// A `text` block.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Text {
    /// The text.
    pub text: String,
    /// Every other key (`cache_control`, `citations`, …).
    #[serde(flatten)]
    pub extra: Object,
}

/// A `thinking` block.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Thinking {
    /// The reasoning.
    pub thinking: String,
    /// Its signature: the API refuses thinking sent back without it, or
    /// changed.
    pub signature: Option<String>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// A `redacted_thinking` block.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RedactedThinking {
    /// The encrypted reasoning.
    pub data: String,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// A `tool_use` block.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolUse {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments (an object).
    pub input: Value,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// A `tool_result` block.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolResult {
    /// The call it answers.
    pub tool_use_id: String,
    /// The result: a string or blocks (`None`: no `content` key).
    pub content: Option<Content>,
    /// Whether the tool failed (`None`: no `is_error` key).
    pub is_error: Option<bool>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// An `image` block.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Image {
    /// Where the image is (`base64` data, a `url`, a `file`).
    pub source: Value,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// A tool the model may call.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Tool {
    /// A server tool's or a versioned tool's type (`web_search_20250305`,
    /// `custom`); none for a plain client tool.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// JSON Schema of its input.
    pub input_schema: Option<Value>,
    /// Every other key (`cache_control`, a server tool's settings, …).
    #[serde(flatten)]
    pub extra: Object,
}

/// The input schema of a tool that declares none: any object.
pub fn any_object_schema() -> Value {
    let mut schema = Object::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(Object::new()));
    Value::Object(schema)
}

/// `tool_choice` forcing one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolChoice {
    /// `tool`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The tool.
    pub name: String,
}

impl ToolChoice {
    /// Force the tool `name`.
    pub fn tool(name: &str) -> ToolChoice {
        ToolChoice {
            kind: "tool".into(),
            name: name.to_owned(),
        }
    }
}

tagged! {
    /// An event of a streamed answer (its `data`).
    pub enum StreamEvent {
        /// The message, without content yet, and its first usage.
        "message_start" => MessageStart(MessageStart),
        /// A content block begins.
        "content_block_start" => ContentBlockStart(ContentBlockStart),
        /// A piece of a content block.
        "content_block_delta" => ContentBlockDelta(ContentBlockDelta),
        /// A content block is complete.
        "content_block_stop" => ContentBlockStop(Indexed),
        /// The stop reason and the final usage.
        "message_delta" => MessageDelta(MessageDelta),
        /// The answer is complete.
        "message_stop" => MessageStop(Empty),
        /// Keep-alive.
        "ping" => Ping(Empty),
        /// The answer failed.
        "error" => Error(ErrorEvent),
    }
}

/// The names of the stream's events (its `event:` lines and `type`s).
pub mod event {
    /// `message_start`.
    pub const MESSAGE_START: &str = "message_start";
    /// `content_block_start`.
    pub const CONTENT_BLOCK_START: &str = "content_block_start";
    /// `content_block_delta`.
    pub const CONTENT_BLOCK_DELTA: &str = "content_block_delta";
    /// `content_block_stop`.
    pub const CONTENT_BLOCK_STOP: &str = "content_block_stop";
    /// `message_delta`.
    pub const MESSAGE_DELTA: &str = "message_delta";
    /// `message_stop`: the last event of a whole answer.
    pub const MESSAGE_STOP: &str = "message_stop";
    /// `error`: the last event of a failed answer.
    pub const ERROR: &str = "error";
    /// The events after which nothing more comes.
    pub const LAST: [&str; 2] = [MESSAGE_STOP, ERROR];
}

/// `message_start`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MessageStart {
    /// The message (`id`, `model`, `role`, empty `content`, `usage`, …).
    pub message: Object,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// `content_block_start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentBlockStart {
    /// The block's place in the content.
    pub index: u64,
    /// The block as it begins.
    pub content_block: Block,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// `content_block_delta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentBlockDelta {
    /// The block's place in the content.
    pub index: u64,
    /// The piece.
    pub delta: Delta,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

tagged! {
    /// A piece of a content block.
    pub enum Delta {
        /// Text.
        "text_delta" => Text(TextDelta),
        /// Reasoning.
        "thinking_delta" => Thinking(ThinkingDelta),
        /// The thinking block's signature.
        "signature_delta" => Signature(SignatureDelta),
        /// A piece of a tool call's input, as JSON text.
        "input_json_delta" => InputJson(InputJsonDelta),
        /// A citation of a text block.
        "citations_delta" => Citations(CitationsDelta),
    }
}

/// `text_delta`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TextDelta {
    /// The text.
    pub text: String,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// `thinking_delta`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ThinkingDelta {
    /// The reasoning.
    pub thinking: String,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// `signature_delta`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SignatureDelta {
    /// The signature.
    pub signature: String,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// `input_json_delta`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InputJsonDelta {
    /// JSON text, to join with the others.
    pub partial_json: String,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// `citations_delta`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CitationsDelta {
    /// The citation.
    pub citation: Value,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// An event naming a block by its index.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Indexed {
    /// The block's place in the content.
    pub index: u64,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// `message_delta`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MessageDelta {
    /// Keys of the message that changed (`stop_reason`, …).
    #[serde(default)]
    pub delta: Object,
    /// Usage keys that changed.
    pub usage: Option<Object>,
    /// The edits the provider applied (its context management), beside
    /// the delta as in a whole message (`Some(null)`: a `null` sent).
    #[serde(default, deserialize_with = "crate::present")]
    pub context_management: Option<Value>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// An event with nothing but its type.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Empty {
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// `error`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ErrorEvent {
    /// What went wrong (`type`, `message`).
    pub error: Value,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// The request key of the system prompt (a text or text blocks).
pub const SYSTEM: &str = "system";

/// A block's prompt-cache marker (`cache_control`), one of the keys a
/// block keeps besides those its type names: read, set and taken off
/// where a block's other keys are kept (an object of them).
pub mod cache_control {
    use crate::{Object, Value};

    /// The key.
    pub const KEY: &str = "cache_control";

    /// The marker among a block's other keys.
    pub fn of(fields: &Object) -> Option<&Value> {
        fields.get(KEY)
    }

    /// Put marker `m` among a block's other keys.
    pub fn set(fields: &mut Object, m: Value) {
        fields.insert(KEY.into(), m);
    }

    /// Take the marker off a block's other keys.
    pub fn clear(fields: &mut Object) {
        fields.remove(KEY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Serialize + for<'de> Deserialize<'de>>(text: &str) -> (T, String) {
        let t: T = serde_json::from_str(text).unwrap();
        let back = serde_json::to_string(&t).unwrap();
        (t, back)
    }

    /// A Claude Code-like request: cache markers, a `system` message, signed
    /// thinking, server-side blocks (`compaction`, `server_tool_use`,
    /// `web_search_tool_result`) and unknown keys everywhere.
    #[test]
    fn a_request_with_unknown_blocks_and_keys_round_trips_byte_for_byte() {
        let body = r#"{"model":"claude-sonnet-4-5","max_tokens":32000,"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"fix the bug"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},{"role":"assistant","content":[{"type":"thinking","thinking":"Let me look.","signature":"EqQBCkYIBxgCKkD"},{"type":"redacted_thinking","data":"EmwKAhgBEgy3"},{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"rust"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://example.invalid","title":"x","encrypted_content":"Eq8"}]},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/src/a.rs"},"caller":{"type":"direct"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"fn main() {}"}],"is_error":false,"cache_control":{"type":"ephemeral","ttl":"1h"}},{"type":"compaction","content":"Summary of the earlier turns.","encrypted":"Zm9v"}],"turn":3},{"role":"system","content":"a reminder"}],"tools":[{"name":"Read","description":"read a file","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search","max_uses":5}],"stream":true,"thinking":{"type":"enabled","budget_tokens":31999},"metadata":{"user_id":"user_abc_session_1"},"context_management":{"edits":[{"type":"compact_20260112"}]}}"#;
        let (req, back) = round_trip::<Request>(body);
        assert_eq!(back, body);
        let Content::Blocks(blocks) = &req.messages[1].content else {
            panic!("blocks")
        };
        let kinds: Vec<_> = blocks.iter().map(|b| b.kind()).collect();
        assert_eq!(
            kinds,
            [
                Some("thinking"),
                Some("redacted_thinking"),
                Some("server_tool_use"),
                Some("web_search_tool_result"),
                Some("tool_use")
            ]
        );
        assert!(matches!(&blocks[2], Block::Other(_)));
        assert!(
            matches!(&blocks[0], Block::Thinking(t) if t.signature.as_deref() == Some("EqQBCkYIBxgCKkD"))
        );
        let Content::Blocks(results) = &req.messages[2].content else {
            panic!("blocks")
        };
        assert!(matches!(&results[1], Block::Other(v) if v["type"] == "compaction"));
    }

    #[test]
    fn moved_into_a_value_as_serialized() {
        let body = r#"[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"image","source":{"type":"url","url":"u"}},{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}],"is_error":true},{"type":"tool_result","tool_use_id":"u"}],"x":1},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"thinking","thinking":"u"},{"type":"redacted_thinking","data":"d"},{"type":"tool_use","id":"t","name":"n","input":{"a":1}},{"type":"compaction","content":"c"}]},{"role":"user","content":"plain"}]"#;
        let messages: Vec<Message> = serde_json::from_str(body).unwrap();
        let request = Request {
            model: "m".into(),
            max_tokens: Some(9),
            system: Some(Content::Text("s".into())),
            messages: messages.clone(),
            tools: vec![Tool {
                name: "t".into(),
                input_schema: Some(any_object_schema()),
                ..Tool::default()
            }],
            stream: true,
            extra: Object::new(),
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
    fn a_known_block_whose_fields_do_not_read_is_kept_as_it_came() {
        let (b, back) = round_trip::<Block>(r#"{"type":"text","text":7,"x":1}"#);
        assert!(matches!(b, Block::Other(_)));
        assert_eq!(back, r#"{"type":"text","text":7,"x":1}"#);
        let (b, back) = round_trip::<Block>(r#"{"text":"untyped"}"#);
        assert_eq!(b.kind(), None);
        assert_eq!(back, r#"{"text":"untyped"}"#);
    }

    #[test]
    fn a_reply_reads_with_what_servers_leave_out_and_writes_as_before() {
        let ended = crate::value(&Reply::ended("msg_1", Value::from("m")));
        assert_eq!(
            ended.to_string(),
            r#"{"id":"msg_1","type":"message","role":"assistant","model":"m","content":null,"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}"#
        );
        let r: Reply = serde_json::from_str(
            r#"{"content":[{"type":"text","text":"hi"},{"type":"compaction","content":"c"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"cache_read_input_tokens":100,"output_tokens":7,"service_tier":"standard"},"container":null}"#,
        )
        .unwrap();
        assert_eq!((r.id.as_str(), r.kind.as_str()), ("", ""));
        let blocks = r.content.as_deref().unwrap();
        assert!(matches!(&blocks[0], Block::Text(t) if t.text == "hi"));
        assert_eq!(blocks[1].kind(), Some("compaction"));
        let usage: Usage = serde_json::from_value(Value::Object(r.usage.unwrap())).unwrap();
        assert_eq!(
            (
                usage.input_tokens,
                usage.cache_read_input_tokens,
                usage.output_tokens
            ),
            (Some(10), Some(100), Some(7))
        );
        assert_eq!(r.extra.keys().collect::<Vec<_>>(), ["container"]);
    }

    #[test]
    fn an_event_read_by_its_name_is_what_its_value_reads_as() {
        for (name, data) in [
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a \"b\""},"x":1}"#,
            ),
            ("content_block_delta", r#"{"type":"ping"}"#),
            ("content_block_stop", r#"{"type":"content_block_stop"}"#),
            ("future_event", r#"{"type":"future_event","x":2}"#),
        ] {
            let by_value = StreamEvent::from_value(serde_json::from_str(data).unwrap());
            assert_eq!(StreamEvent::from_str_as(name, data).unwrap(), by_value);
        }
        // Without a `type`, the name says it.
        let ev = StreamEvent::from_str_as("content_block_stop", r#"{"index":3}"#).unwrap();
        assert!(matches!(
            ev,
            StreamEvent::ContentBlockStop(Indexed { index: 3, .. })
        ));
        assert!(StreamEvent::from_str_as("ping", "{not json").is_err());
    }

    #[test]
    fn stream_events_round_trip_and_unknown_ones_are_kept() {
        for data in [
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","usage":{"input_tokens":10,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"compaction_delta","content":"so far"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":50}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5},"context_management":{"applied_edits":[]}}"#,
            r#"{"type":"message_delta","delta":{},"context_management":null}"#,
            r#"{"type":"message_stop"}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            r#"{"type":"future_event","x":[1,2.5,"y"]}"#,
        ] {
            let (ev, back) = round_trip::<StreamEvent>(data);
            assert_eq!(back, data);
            assert_eq!(
                ev.kind().map(str::len),
                Some(back.split('"').nth(3).unwrap().len())
            );
        }
    }
}
