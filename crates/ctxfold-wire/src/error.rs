//! An error body in the shape both APIs answer with:
//! `{"type": "error", "error": {"type": …, "message": …}}`.

use serde::{Deserialize, Serialize};

use crate::{Object, Value};

/// An error answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// `error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// What went wrong.
    pub error: Error,
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Error {
    /// Its kind (`overloaded_error`, `invalid_request_error`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// For people.
    pub message: String,
    /// Every other key (`code`, `param`, …).
    #[serde(flatten)]
    pub extra: Object,
}

impl ErrorBody {
    /// An error of `kind` saying `message`.
    pub fn new(kind: &str, message: &str) -> ErrorBody {
        ErrorBody {
            kind: "error".into(),
            error: Error {
                kind: kind.to_owned(),
                message: message.to_owned(),
                extra: Object::new(),
            },
        }
    }
}

/// An error answer as read, in any of the shapes the servers that speak
/// these APIs send: `{"error": {"message", "type", "code"}}` (OpenAI,
/// llama.cpp, Anthropic's [`ErrorBody`]), `{"error": "text"}` (Ollama),
/// `{"message", "type", "code"}` (vLLM), `{"detail": …}` (FastAPI
/// servers). Only the keys that say what went wrong are read (the body is
/// quoted whole where none does), so reading a large answer to see whether
/// it is an error copies nothing else.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Reported {
    /// What went wrong: an object (read as [`Detail`]) or text (`null`:
    /// none).
    pub error: Option<Value>,
    /// What went wrong, beside no `error` object.
    pub message: Option<Value>,
    /// What went wrong, as FastAPI says it (text, or a list of problems).
    pub detail: Option<Value>,
    /// A code (`context_length_exceeded`, `400`, …).
    pub code: Option<Value>,
    /// A type (`invalid_request_error`, …).
    #[serde(rename = "type")]
    pub kind: Option<Value>,
}

/// The `error` object of a [`Reported`] error.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Detail {
    /// For people.
    pub message: Option<Value>,
    /// A code (`context_length_exceeded`, `400`, …).
    pub code: Option<Value>,
    /// A type (`overloaded_error`, …).
    #[serde(rename = "type")]
    pub kind: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_of_every_shape_read() {
        let r: Reported = serde_json::from_str(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .unwrap();
        let d: Detail = serde_json::from_value(r.error.unwrap()).unwrap();
        assert_eq!(d.kind, Some("overloaded_error".into()));
        let r: Reported =
            serde_json::from_str(r#"{"error":"model \"x\" not found","code":404}"#).unwrap();
        assert_eq!((r.error.is_some(), r.code), (true, Some(404.into())));
        let r: Reported = serde_json::from_str(
            r#"{"object":"error","message":"too long","type":"BadRequestError","code":400}"#,
        )
        .unwrap();
        assert_eq!((r.error, r.message), (None, Some("too long".into())));
        let r: Reported = serde_json::from_str(r#"{"error":null,"choices":[]}"#).unwrap();
        assert_eq!(r, Reported::default());
    }

    #[test]
    fn written_as_the_apis_write_it() {
        assert_eq!(
            serde_json::to_string(&ErrorBody::new("ctxfold_proxy_error", "no \"upstream\""))
                .unwrap(),
            r#"{"type":"error","error":{"type":"ctxfold_proxy_error","message":"no \"upstream\""}}"#
        );
    }
}
