//! Records' positions: the numbers recall handles name records by (see
//! [`crate::handle`]), counted over a log with ctxfold's own overlay
//! records (compactions, resets, attempts) left out, so they never change
//! as the log grows. Kept apart from the handles' text: the log keeps its
//! tag, so the handles sit below the log and the positions, counted over
//! it, above.

use crate::attempt::{FINISHED, STARTED};
use crate::log::Log;
use crate::record::Body;

/// Whether a record is ctxfold's bookkeeping over the conversation (a
/// compaction, a reset, a compaction attempt's start or end) rather than
/// part of it: handles do not count it.
pub fn is_overlay(body: &Body) -> bool {
    match body {
        Body::Compaction(_) | Body::CompactionReset(_) => true,
        Body::Other { kind, .. } => kind == STARTED || kind == FINISHED,
        _ => false,
    }
}

/// The index in `log` of the record at position `n` (see the module
/// docs), if there is one.
pub fn index_of_position(log: &Log, n: u64) -> Option<usize> {
    log.records()
        .iter()
        .enumerate()
        .filter(|(_, r)| !is_overlay(&r.body))
        .nth(usize::try_from(n).ok()?)
        .map(|(i, _)| i)
}

/// The position of the record at index `index` of `log` (the number a
/// handle on it gives; not its `seq`, which counts overlays too).
pub fn position(log: &Log, index: usize) -> u64 {
    log.records()
        .iter()
        .take(index)
        .filter(|r| !is_overlay(&r.body))
        .count() as u64
}

/// How many records count for positions (the last position plus one).
pub fn positions(log: &Log) -> u64 {
    log.records()
        .iter()
        .filter(|r| !is_overlay(&r.body))
        .count() as u64
}
