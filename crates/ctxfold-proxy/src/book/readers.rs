//! The kept readers: what was read of each conversation head's last
//! request (its messages' raw text and the reader that read them), so the
//! next request of that head parses and reads only its new messages.

use std::sync::Mutex;

use ctxfold_formats::message_reader::MessageReader;
use serde_json::Value;

use super::lock;
use crate::cache::{Bounded, Limits};
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

/// The kept readers, by head, bounded by count and bytes (least recently
/// used dropped first).
pub(super) struct Readers(Mutex<Bounded<u64, Kept>>);

impl Readers {
    pub(super) fn new(limits: &Limits) -> Readers {
        Readers(Mutex::new(Bounded::new(
            limits.conversations,
            limits.half_bytes(),
        )))
    }

    /// Head `h`'s reader of `shape`, for a request whose head holds
    /// `system`; taken while in use, so a request of the same head
    /// running at the same time reads its body whole instead.
    pub(super) fn take(&self, h: u64, shape: Shape, system: &Option<Value>) -> Option<Kept> {
        lock(&self.0)
            .take(&h)
            .filter(|k| k.shape == shape && k.system == *system)
    }

    /// Head `h`'s reader, kept for its next request (counted as twice its
    /// text: its records hold about as much again).
    pub(super) fn keep(&self, h: u64, kept: Kept) {
        let bytes = 2 * kept.bytes;
        lock(&self.0).put(h, kept, bytes, |_| false);
    }

    /// How many are kept, and their bytes.
    pub(super) fn held(&self) -> (usize, usize) {
        let r = lock(&self.0);
        (r.len(), r.bytes())
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
