//! An error body in the shape both APIs answer with:
//! `{"type": "error", "error": {"type": …, "message": …}}`.

use serde::{Deserialize, Serialize};

use crate::Object;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_as_the_apis_write_it() {
        assert_eq!(
            serde_json::to_string(&ErrorBody::new("ctxfold_proxy_error", "no \"upstream\""))
                .unwrap(),
            r#"{"type":"error","error":{"type":"ctxfold_proxy_error","message":"no \"upstream\""}}"#
        );
    }
}
