//! The kept readers: what was read of each conversation head's last
//! request (its messages' raw text and the reader that read them), so the
//! next request of that head parses and reads only its new messages.

use ctxfold_formats::message_reader::MessageReader;
use serde_json::Value;

use super::{Book, lock};
use crate::protocol::Shape;

/// A conversation head's last request, as read: each message's raw text
/// and the reader that read them.
pub(super) struct Kept {
    pub(super) shape: Shape,
    /// Anthropic's top-level `system` (the reader's head records).
    pub(super) system: Option<Value>,
    pub(super) raw: Vec<Box<str>>,
    /// The text of `raw`.
    pub(super) bytes: usize,
    pub(super) reader: MessageReader,
}

impl Book {
    /// Head `h`'s reader, kept for its next request (counted as twice its
    /// text: its records hold about as much again).
    pub(super) fn keep_reader(&self, h: u64, kept: Kept) {
        let bytes = 2 * kept.bytes;
        lock(&self.readers).put(h, kept, bytes, |_| false);
    }
}

/// The key of a kept reader: the shape and the first message's text.
pub(super) fn head_hash(shape: Shape, first: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    shape.name().hash(&mut h);
    first.hash(&mut h);
    h.finish()
}
