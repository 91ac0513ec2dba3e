//! A piece of a message, [`Part`]: the same in a request and in an answer
//! (what [`crate::request`] sends, what [`crate::response`] reads back),
//! with the texts and tool calls of a list of parts and the log's key for
//! a reasoning part's signature. Below both, so neither imports the other.

use serde_json::Value;

/// One piece of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Text.
    Text(String),
    /// The model's reasoning.
    Reasoning {
        /// The reasoning text.
        text: String,
        /// Anthropic's signature, when the reasoning may be sent back.
        signature: Option<String>,
    },
    /// A tool call by the model.
    ToolCall {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
        /// Its arguments: a JSON object (a string holds arguments text that
        /// did not parse, sent back as it was).
        arguments: Value,
    },
    /// A tool's result, in a user-role message.
    ToolResult {
        /// The id of the call it answers.
        id: String,
        /// The result text.
        content: String,
        /// Whether the tool failed.
        is_error: bool,
    },
}

/// The metadata key of an Anthropic thinking signature on a reasoning
/// record: written with an answer's records, read back into a request's
/// reasoning part (JP's key, also read and written by `ctxfold-formats`).
pub const THINKING_SIGNATURE: &str = "anthropic_thinking_signature";

/// The tool calls of `parts`, in order: (id, name, arguments).
pub(crate) fn tool_call_parts(parts: &[Part]) -> impl Iterator<Item = (&str, &str, &Value)> {
    parts.iter().filter_map(|p| match p {
        Part::ToolCall {
            id,
            name,
            arguments,
        } => Some((id.as_str(), name.as_str(), arguments)),
        _ => None,
    })
}

/// The text parts of `parts`, in order.
pub(crate) fn text_parts(parts: &[Part]) -> Vec<&str> {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}
