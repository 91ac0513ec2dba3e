//! Metadata and records the store tests write, one copy for all of them.

use ctxfold_core::{Body, Object, Record};
use ctxfold_store::ConversationMeta;
use serde_json::json;

/// Metadata of conversation `id`, made at `created`, with extras out of
/// alphabetical order (they must be kept as written).
pub fn meta_at(id: &str, created: &str) -> ConversationMeta {
    let mut extras = Object::new();
    extras.insert("zeta".into(), json!({"y": 2, "b": [3, "é"]}));
    extras.insert("alpha".into(), json!(1));
    ConversationMeta {
        id: id.to_owned(),
        title: Some(format!("title of {id}")),
        created_at: created.to_owned(),
        last_used_at: created.to_owned(),
        imported_from: None,
        extras,
    }
}

/// A user message record saying `text`.
pub fn user(text: &str) -> Record {
    Record::new(
        0,
        "2026-01-02T03:04:05Z",
        Body::User {
            content: text.into(),
            author: None,
        },
    )
}
