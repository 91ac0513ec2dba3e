//! Where a conversation's records go: the seam between the service and a
//! store. The workspace's [`EventLog`] is one; [`InStore`] is a
//! conversation of any [`Store`]; [`Memory`] keeps records in the caller's
//! log only (one-shot transcripts, previews).

use std::ops::Range;
use std::sync::Arc;

use ctxfold_core::{Log, Record};
use ctxfold_store::{AppendAt, CompactionLock, EventLog, Store, StoreError, StoreLock};

/// A conversation's store, as the compaction service needs it. Shared
/// across threads: a proxy serves a conversation from whichever worker
/// takes the request.
pub trait Journal: Send + Sync {
    /// Append `records` durably and return the `seq`s they were given: the
    /// store's next ones (`next` is the caller's log's next `seq`; a store
    /// that others append to may give later ones).
    fn append(&self, next: u64, records: Vec<Record>) -> Result<Range<u64>, StoreError>;

    /// Append `records` only if the store's next `seq` is `next` (nothing
    /// was appended since the caller's log); `None` when another writer
    /// got there first, and nothing was written.
    fn append_at(&self, next: u64, records: Vec<Record>) -> Result<Option<Range<u64>>, StoreError>;

    /// Take the one-compaction-at-a-time lock without waiting; `None` when
    /// another process holds it. Held until the guard is dropped.
    fn try_lock(&self) -> Result<Option<Guard>, StoreError>;

    /// The log as stored now, when others may have appended to it since the
    /// caller loaded it (`None`: the caller's log is the only copy).
    fn reload(&self) -> Result<Option<Log>, StoreError>;
}

/// Holds a [`Journal`]'s compaction lock until dropped.
pub struct Guard(#[allow(dead_code)] Held);

enum Held {
    Nothing,
    File(#[allow(dead_code)] CompactionLock),
    Store(#[allow(dead_code)] StoreLock),
}

impl Journal for EventLog {
    fn append(&self, _next: u64, records: Vec<Record>) -> Result<Range<u64>, StoreError> {
        EventLog::append(self, records)
    }

    fn append_at(&self, next: u64, records: Vec<Record>) -> Result<Option<Range<u64>>, StoreError> {
        Ok(EventLog::append_at(self, next, records)?.ok())
    }

    fn try_lock(&self) -> Result<Option<Guard>, StoreError> {
        Ok(self.try_compaction_lock()?.map(|l| Guard(Held::File(l))))
    }

    fn reload(&self) -> Result<Option<Log>, StoreError> {
        let loaded = self.load()?;
        for w in &loaded.warnings {
            tracing::warn!("{w}");
        }
        Ok(Some(loaded.into_log()))
    }
}

/// A journal that keeps nothing: records live in the caller's log only.
/// Used for a transcript compacted in one go and for previews.
#[derive(Debug, Default, Clone, Copy)]
pub struct Memory;

impl Journal for Memory {
    fn append(&self, next: u64, records: Vec<Record>) -> Result<Range<u64>, StoreError> {
        // As the workspace log: seqs up to u64::MAX - 1, never wrapped.
        match next.checked_add(records.len() as u64) {
            Some(end) => Ok(next..end),
            None => Err(StoreError::SeqOverflow {
                path: "(in memory)".into(),
                seq: next.saturating_sub(1),
            }),
        }
    }

    fn append_at(&self, next: u64, records: Vec<Record>) -> Result<Option<Range<u64>>, StoreError> {
        self.append(next, records).map(Some)
    }

    fn try_lock(&self) -> Result<Option<Guard>, StoreError> {
        Ok(Some(Guard(Held::Nothing)))
    }

    fn reload(&self) -> Result<Option<Log>, StoreError> {
        Ok(None)
    }
}

/// Conversation `id` of a [`Store`] (the workspace or PostgreSQL), owned,
/// so a conversation can live in a long-running service (the proxy).
#[derive(Debug, Clone)]
pub struct InStore {
    store: Arc<dyn Store>,
    id: String,
}

impl InStore {
    /// The journal of conversation `id` in `store`.
    pub fn new(store: Arc<dyn Store>, id: &str) -> Self {
        InStore {
            store,
            id: id.to_owned(),
        }
    }
}

impl Journal for InStore {
    fn append(&self, _next: u64, records: Vec<Record>) -> Result<Range<u64>, StoreError> {
        self.store.append(&self.id, records)
    }

    fn append_at(&self, next: u64, records: Vec<Record>) -> Result<Option<Range<u64>>, StoreError> {
        Ok(match self.store.append_at(&self.id, next, records)? {
            AppendAt::Appended(r) => Some(r),
            AppendAt::Moved { .. } => None,
        })
    }

    fn try_lock(&self) -> Result<Option<Guard>, StoreError> {
        // The lock is the store's: in PostgreSQL it holds across replicas,
        // and dies with the session of a replica that dies.
        Ok(self
            .store
            .try_compaction_lock(&self.id)?
            .map(|l| Guard(Held::Store(l))))
    }

    fn reload(&self) -> Result<Option<Log>, StoreError> {
        let loaded = self.store.load(&self.id)?;
        for w in &loaded.warnings {
            tracing::warn!("{w}");
        }
        Ok(Some(loaded.into_log()))
    }
}
