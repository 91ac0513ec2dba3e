//! A fork: a copy of a conversation as a new one, its own records first
//! and the compactions it was given after them (numbered after the
//! original's last `seq`, so the copy keeps their order). The original is
//! not touched. The command line's `conversation fork` runs it; anything
//! else that forks (the pages, a library user) gets the same copy.

use ctxfold_core::{Body, Compaction, Log, Record};
use ctxfold_store::{ConversationMeta, Store, StoreError};

/// Why a fork was not made.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    /// The original's last record has the largest `seq` there is.
    #[error(
        "conversation {id}: its last record has seq {seq}, the largest there is; no record can follow it"
    )]
    SeqExhausted {
        /// The original.
        id: String,
        /// Its last record's `seq`.
        seq: u64,
    },
    /// The store could not create the copy.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The records of a fork of `log` (conversation `id`): its own, then
/// `compactions` stamped `ts`, each numbered after the record before it.
pub fn fork_records(
    id: &str,
    log: &Log,
    compactions: Vec<Compaction>,
    ts: &str,
) -> Result<Vec<Record>, ForkError> {
    let mut records = log.records().to_vec();
    for c in compactions {
        let seq = match records.last() {
            None => 0,
            Some(r) => r
                .seq
                .checked_add(1)
                .ok_or_else(|| ForkError::SeqExhausted {
                    id: id.to_owned(),
                    seq: r.seq,
                })?,
        };
        records.push(Record::new(seq, ts, Body::Compaction(Box::new(c))));
    }
    Ok(records)
}

/// Fork conversation `meta` (whose log is `log`) in `store`: a new
/// conversation titled "fork of TITLE" (or of its id), with the same
/// import source and extras, holding [`fork_records`].
pub fn fork(
    store: &dyn Store,
    meta: &ConversationMeta,
    log: &Log,
    compactions: Vec<Compaction>,
    ts: &str,
) -> Result<ConversationMeta, ForkError> {
    let records = fork_records(&meta.id, log, compactions, ts)?;
    let title = Some(format!(
        "fork of {}",
        meta.title.as_deref().unwrap_or(&meta.id)
    ));
    Ok(ctxfold_store::create_new(
        store,
        title,
        meta.imported_from.clone(),
        meta.extras.clone(),
        records,
    )?)
}
