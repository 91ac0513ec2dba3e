//! Google's Gemini API (`generateContent`, `streamGenerateContent`): the
//! request's `contents` and `systemInstruction`, their parts (text,
//! thoughts, function calls and responses), and the answer
//! (`GenerateContentResponse`: candidates and `usageMetadata`), whole or
//! as one chunk of a stream. Keys are camelCase as the REST API writes
//! them; every key a type does not name is kept in its `extra`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Object;

/// The roles of a content.
pub mod role {
    /// `user`: the user's words and function responses.
    pub const USER: &str = "user";
    /// `model`: the model's answers and function calls.
    pub const MODEL: &str = "model";
}

/// The request keys of a conversation.
pub mod key {
    /// The history.
    pub const CONTENTS: &str = "contents";
    /// The system prompt.
    pub const SYSTEM_INSTRUCTION: &str = "systemInstruction";
    /// The function declarations.
    pub const TOOLS: &str = "tools";
    /// How the model may call them.
    pub const TOOL_CONFIG: &str = "toolConfig";
    /// Sampling and output limits (`maxOutputTokens`).
    pub const GENERATION_CONFIG: &str = "generationConfig";
    /// A part's thought signature, kept beside the part's own keys.
    pub const THOUGHT_SIGNATURE: &str = "thoughtSignature";
}

/// One turn of the history: a role and its parts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Content {
    /// `user` or `model` (absent in a `systemInstruction`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Its parts, in order.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// One part of a content: text (a thought when `thought` is set), a
/// function call, a function response, or anything else (`extra`: inline
/// data, files, executable code…).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text, or a thought's summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Whether the text is the model's thought.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<bool>,
    /// The signature the model's thinking is sent back with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    /// A call the model asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_call: Option<FunctionCall>,
    /// A call's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_response: Option<FunctionResponse>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Part {
        Part {
            text: Some(text.into()),
            ..Part::default()
        }
    }
}

/// A function call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FunctionCall {
    /// Its id, when the API gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The function's name.
    pub name: String,
    /// Its arguments, an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// A function call's result.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FunctionResponse {
    /// The call's id, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The function's name.
    pub name: String,
    /// The result, an object (`{"output": …}` or `{"error": …}` by
    /// convention).
    #[serde(default)]
    pub response: Value,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// An answer, whole or one chunk of a stream.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Response {
    /// The candidates (one unless `candidateCount` asked for more).
    #[serde(default)]
    pub candidates: Vec<Candidate>,
    /// What the request and the answer counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_metadata: Option<Usage>,
    /// The model that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_version: Option<String>,
    /// The answer's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// Every other key (`promptFeedback`, an `error` of a stream).
    #[serde(flatten)]
    pub extra: Object,
}

/// One candidate answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// What it says (absent when it was blocked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// Why it ended (`STOP`, `MAX_TOKENS`, …); set on the last chunk of
    /// a stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Object,
}

/// `usageMetadata`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// The request's tokens (the cached ones included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_token_count: Option<u64>,
    /// The answer's tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates_token_count: Option<u64>,
    /// The request's tokens read from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_content_token_count: Option<u64>,
    /// The thinking's tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thoughts_token_count: Option<u64>,
    /// Every other key (`totalTokenCount`, per-modality counts).
    #[serde(flatten)]
    pub extra: Object,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_content_reads_and_writes_its_parts_and_keeps_what_it_does_not_name() {
        let text = r#"{"role":"model","parts":[{"text":"thinking","thought":true},{"functionCall":{"name":"ls","args":{"dir":"."}},"thoughtSignature":"c2ln"},{"inlineData":{"mimeType":"image/png","data":"AA=="}}],"x":1}"#;
        let c: Content = serde_json::from_str(text).unwrap();
        assert_eq!(c.role.as_deref(), Some(role::MODEL));
        assert_eq!(c.parts[0].thought, Some(true));
        let call = c.parts[1].function_call.as_ref().unwrap();
        assert_eq!((call.name.as_str(), call.id.as_deref()), ("ls", None));
        assert_eq!(c.parts[1].thought_signature.as_deref(), Some("c2ln"));
        assert!(c.parts[2].extra.contains_key("inlineData"));
        let back: Value = serde_json::to_value(&c).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn an_answer_reads_its_usage() {
        let r: Response = serde_json::from_str(
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":2,"totalTokenCount":12},"modelVersion":"gemini-2.5-flash"}"#,
        )
        .unwrap();
        assert_eq!(r.candidates[0].finish_reason.as_deref(), Some("STOP"));
        let u = r.usage_metadata.unwrap();
        assert_eq!(
            (u.prompt_token_count, u.candidates_token_count),
            (Some(10), Some(2))
        );
    }
}
