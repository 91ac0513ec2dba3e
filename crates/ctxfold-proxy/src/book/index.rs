//! The key index: each key's conversations (forks included, the one used
//! last first), one lock per key so its requests are prepared one at a
//! time; and the conversations that can no longer be read, forgotten.

use std::sync::{Arc, Mutex};

use ctxfold_store::StoreError;
use sha2::{Digest, Sha256};

use super::{Book, lock};

impl Book {
    /// The conversations of `key`, and whether the index may have dropped
    /// them (then an empty list is looked up in the store).
    pub(super) fn slot(&self, key: &str) -> (Arc<Mutex<Vec<String>>>, bool) {
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
        lock(&self.sessions).take(&id.to_owned());
        lock(&self.gone).put(id.to_owned(), (), 0, |_| false);
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
