//! The key index: each key's conversations (forks included, the one used
//! last first), one lock per key so its requests are prepared one at a
//! time; and the conversations that can no longer be read, forgotten.

use std::sync::{Arc, Mutex};

use ctxfold_store::StoreError;
use sha2::{Digest, Sha256};

use super::{Book, lock};
use crate::cache::{Bounded, Limits};

/// A key's conversations, the one used last first; held while one of its
/// requests is prepared.
pub(super) type Slot = Arc<Mutex<Vec<String>>>;

/// The key index, bounded by count (least recently used dropped first),
/// and the conversations that can no longer be read.
pub(super) struct KeyIndex {
    keys: Mutex<Bounded<u128, Slot>>,
    gone: Mutex<Bounded<String, ()>>,
}

impl KeyIndex {
    /// An index holding `keys` (each key's conversations), the most
    /// recently used last; `dropped`: some were left out.
    pub(super) fn new(limits: &Limits, keys: Vec<(&str, Vec<String>)>, dropped: bool) -> KeyIndex {
        let mut index = Bounded::new(limits.index, usize::MAX);
        if dropped {
            index.mark_dropped();
        }
        for (k, ids) in keys {
            index.put(hash128(k), Arc::new(Mutex::new(ids)), 0, |_| false);
        }
        KeyIndex {
            keys: Mutex::new(index),
            gone: Mutex::new(Bounded::new(limits.index, usize::MAX)),
        }
    }

    /// The conversations of `key`, and whether the index may have dropped
    /// them (then an empty list is looked up in the store).
    pub(super) fn slot(&self, key: &str) -> (Slot, bool) {
        let h = hash128(key);
        let mut keys = lock(&self.keys);
        if let Some(s) = keys.get(&h) {
            return (s.clone(), false);
        }
        let s = Arc::new(Mutex::new(Vec::new()));
        // A key being prepared is never dropped: a second slot for it
        // would let two of its requests record a conversation each.
        keys.put(h, s.clone(), 0, |s| Arc::strong_count(s) > 1);
        (s, keys.dropped())
    }

    /// Conversation `id` can no longer be read.
    pub(super) fn mark_gone(&self, id: &str) {
        lock(&self.gone).put(id.to_owned(), (), 0, |_| false);
    }

    /// `ids` without the conversations that can no longer be read.
    pub(super) fn readable(&self, ids: &mut Vec<String>) {
        let gone = lock(&self.gone);
        ids.retain(|x| gone.peek(x).is_none());
    }

    /// How many keys it holds.
    pub(super) fn len(&self) -> usize {
        lock(&self.keys).len()
    }
}

impl Book {
    /// The conversations of `key` (see [`KeyIndex::slot`]).
    pub(super) fn slot(&self, key: &str) -> (Slot, bool) {
        self.index.slot(key)
    }

    /// A conversation of a key that is no longer there (removed with
    /// `c rm`, its metadata broken) is forgotten: the key's requests go on
    /// in the others, or in a new one. Any other error (a database that
    /// does not answer for a while) is the request's: it fails open, and
    /// the conversation is used again by the next request.
    pub(super) fn forget(&self, id: &str, e: StoreError) -> Result<(), StoreError> {
        if !gone_for_good(&e) {
            return Err(e);
        }
        tracing::warn!("conversation {id} can no longer be read ({e}); the proxy stops using it");
        self.sessions.remove(id);
        self.index.mark_gone(id);
        Ok(())
    }
}

/// Whether `e` says the conversation is no longer there (removed, moved to
/// the trash, its metadata broken), not that the store failed for now.
pub(super) fn gone_for_good(e: &StoreError) -> bool {
    match e {
        StoreError::NotFound { .. }
        | StoreError::NoConversation { .. }
        | StoreError::Gone { .. }
        | StoreError::Vanished { .. }
        | StoreError::BadMeta { .. } => true,
        StoreError::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        _ => false,
    }
}

/// A 128-bit hash of `text` (a key, an answer id): what the indexes keep
/// in its place, so an entry's size does not depend on the client.
// A SHA-256 digest is 32 bytes: its first 16 always make a `[u8; 16]`.
#[allow(clippy::expect_used)]
pub(super) fn hash128(text: &str) -> u128 {
    let d = Sha256::digest(text.as_bytes());
    u128::from_le_bytes(d[..16].try_into().expect("16 of 32 bytes"))
}
