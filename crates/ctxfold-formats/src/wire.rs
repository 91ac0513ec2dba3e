//! Which chat format a request's messages are in, and what a transcript
//! keeps of its body besides them.
//!
//! Below the chat formats and the message reader, which all name it: the
//! formats take their metadata prefix from it, the reader its body keys.

use ctxfold_core::Object;
use serde_json::Value;

use crate::chat::kept_body;

/// Which chat format a reader reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI chat completions `messages`.
    OpenAi,
    /// Anthropic messages (`system` in the body, `messages`).
    Anthropic,
    /// OpenAI Responses `input` items.
    Responses,
}

impl Wire {
    /// The body key holding the messages.
    pub fn messages_key(self) -> &'static str {
        match self {
            Wire::OpenAi | Wire::Anthropic => "messages",
            Wire::Responses => "input",
        }
    }

    /// The prefix of the format's metadata keys, and its key in
    /// [`Transcript::extras`](crate::Transcript::extras).
    pub(crate) const fn prefix(self) -> &'static str {
        match self {
            Wire::OpenAi => "openai",
            Wire::Anthropic => "anthropic",
            Wire::Responses => "responses",
        }
    }

    /// The body keys export rebuilds from records.
    fn placeholders(self) -> &'static [&'static str] {
        match self {
            Wire::OpenAi => &["messages"],
            Wire::Anthropic => &["system", "messages"],
            Wire::Responses => &["input"],
        }
    }

    /// What a transcript keeps of a request body (every key but those
    /// export rebuilds), as `from_json` keeps it in
    /// [`Transcript::extras`](crate::Transcript::extras); `body` holds its
    /// messages as an array, or any placeholder value.
    pub fn extras(self, body: &Object) -> Object {
        let mut extras = Object::new();
        if let Some(kept) = kept_body(body, self.placeholders()) {
            extras.insert(self.prefix().into(), Value::Object(kept));
        }
        extras
    }
}
