//! Where a conversation's records go: the seam between the service and a
//! store. The workspace's [`EventLog`] is one; [`Memory`] keeps records in
//! the caller's log only (one-shot transcripts, previews).

use std::ops::Range;

use ctxfold_core::{Log, Record};
use ctxfold_store::{CompactionLock, EventLog, StoreError};

/// A conversation's store, as the compaction service needs it. Shared
/// across threads: a proxy serves a conversation from whichever worker
/// takes the request.
pub trait Journal: Send + Sync {
    /// Append `records` durably and return the `seq`s they were given: the
    /// store's next ones (`next` is the caller's log's next `seq`; a store
    /// that others append to may give later ones).
    fn append(&self, next: u64, records: Vec<Record>) -> Result<Range<u64>, StoreError>;

    /// Take the one-compaction-at-a-time lock without waiting; `None` when
    /// another process holds it. Held until the guard is dropped.
    fn try_lock(&self) -> Result<Option<Guard>, StoreError>;

    /// The log as stored now, when others may have appended to it since the
    /// caller loaded it (`None`: the caller's log is the only copy).
    fn reload(&self) -> Result<Option<Log>, StoreError>;
}

/// Holds a [`Journal`]'s compaction lock until dropped.
pub struct Guard(#[allow(dead_code)] Option<CompactionLock>);

impl Journal for EventLog {
    fn append(&self, _next: u64, records: Vec<Record>) -> Result<Range<u64>, StoreError> {
        EventLog::append(self, records)
    }

    fn try_lock(&self) -> Result<Option<Guard>, StoreError> {
        Ok(self.try_compaction_lock()?.map(|l| Guard(Some(l))))
    }

    fn reload(&self) -> Result<Option<Log>, StoreError> {
        let loaded = self.load()?;
        for w in &loaded.warnings {
            tracing::warn!("{w}");
        }
        Ok(Some(Log::from_records(loaded.records)))
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

    fn try_lock(&self) -> Result<Option<Guard>, StoreError> {
        Ok(Some(Guard(None)))
    }

    fn reload(&self) -> Result<Option<Log>, StoreError> {
        Ok(None)
    }
}
