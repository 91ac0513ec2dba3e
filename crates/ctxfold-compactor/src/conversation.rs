//! A conversation as the service works on it: the log in memory, the store
//! it is written to, and what the service keeps between calls (the running
//! size of the view, the circuit breaker, the last turn boundary it fired
//! at).

use std::ops::Range;

use ctxfold_core::view_size::ViewSize;
use ctxfold_core::{Log, Record};
use ctxfold_store::StoreError;
use ctxfold_tokens::TokenEstimator;

use crate::breaker::Breaker;
use crate::journal::Journal;

/// One conversation in the service's hands. Keep it for as long as the
/// conversation is in use (a host's session, a proxy's cache entry): the
/// view's size is then kept up to date at the cost of what each turn adds.
pub struct Conversation<'j> {
    log: Log,
    journal: Held<'j>,
    size: ViewSize,
    pub(crate) breaker: Breaker,
    /// The turn count the breaker's failures belong to: a new turn closes
    /// it again, whether or not the caller says so.
    pub(crate) breaker_turns: usize,
    /// Turn count at the last between-turn firing: at most one per boundary.
    pub(crate) fired_at_turns: Option<usize>,
    /// The log's length when the service last found nothing it could do
    /// before a step, and why: until the log grows, the answer is the same
    /// (no lock, no reading the log again before every step).
    pub(crate) stuck: Option<(usize, crate::Status)>,
    /// Whether the warning that the fixed part leaves no room was logged.
    pub(crate) no_room_said: bool,
}

/// The store, borrowed (a command's or host's session) or owned (a
/// proxy's cache entry, which outlives any one request).
enum Held<'j> {
    Borrowed(&'j dyn Journal),
    Owned(Box<dyn Journal>),
}

impl Conversation<'static> {
    /// `log` as loaded from `journal`, which the conversation keeps: for a
    /// caller that holds conversations across requests and threads.
    pub fn owning(log: Log, journal: Box<dyn Journal>) -> Self {
        Self::with(log, Held::Owned(journal))
    }
}

impl<'j> Conversation<'j> {
    /// `log` as loaded from `journal`.
    pub fn new(log: Log, journal: &'j dyn Journal) -> Self {
        Self::with(log, Held::Borrowed(journal))
    }

    fn with(log: Log, journal: Held<'j>) -> Self {
        Conversation {
            log,
            journal,
            size: ViewSize::new(),
            breaker: Breaker::new(),
            breaker_turns: 0,
            fired_at_turns: None,
            stuck: None,
            no_room_said: false,
        }
    }

    /// The log as it stands.
    pub fn log(&self) -> &Log {
        &self.log
    }

    /// The log, giving the conversation up.
    pub fn into_log(self) -> Log {
        self.log
    }

    /// The store.
    pub fn journal(&self) -> &dyn Journal {
        match &self.journal {
            Held::Borrowed(j) => *j,
            Held::Owned(j) => j.as_ref(),
        }
    }

    /// Append `records` (whatever `seq` they carry) to the store and the
    /// log. When the store numbered them after records another process
    /// appended meanwhile, the log is read again.
    pub fn append(&mut self, records: Vec<Record>) -> Result<Range<u64>, StoreError> {
        if records.is_empty() {
            let next = self.log.next_seq();
            return Ok(next..next);
        }
        let next = self.log.next_seq();
        let range = self.journal().append(next, records.clone())?;
        if range.start != next {
            self.reload()?;
            return Ok(range);
        }
        for (seq, mut r) in range.clone().zip(records) {
            r.seq = seq;
            self.log.push(r);
        }
        Ok(range)
    }

    /// Append `records` only right after the records this log holds;
    /// `None` (nothing written) when another writer appended first: read
    /// the log again then ([`Journal::reload`]).
    pub fn append_at(&mut self, records: Vec<Record>) -> Result<Option<Range<u64>>, StoreError> {
        let next = self.log.next_seq();
        if records.is_empty() {
            return Ok(Some(next..next));
        }
        let Some(range) = self.journal().append_at(next, records.clone())? else {
            return Ok(None);
        };
        for (seq, mut r) in range.clone().zip(records) {
            r.seq = seq;
            self.log.push(r);
        }
        Ok(Some(range))
    }

    /// A new turn starts: automatic compaction may be attempted again.
    /// (The service also notices a new turn by itself.)
    pub fn begin_turn(&mut self) {
        self.breaker.reset();
        self.breaker_turns = self.log.turn_count();
    }

    /// Close the breaker when the log has moved on to a new turn.
    pub(crate) fn sync_turn(&mut self) {
        let turns = self.log.turn_count();
        if turns != self.breaker_turns {
            self.breaker.reset();
            self.breaker_turns = turns;
        }
    }

    /// The breaker's state this turn.
    pub fn breaker(&self) -> &Breaker {
        &self.breaker
    }

    /// Read the log again from the store, when the store can tell.
    pub(crate) fn reload(&mut self) -> Result<(), StoreError> {
        if let Some(fresh) = self.journal().reload()? {
            if fresh.len() < self.log.len() {
                // Not a continuation of what we had: count afresh.
                self.size = ViewSize::new();
            }
            self.log = fresh;
        }
        Ok(())
    }

    /// Estimated tokens of the view, kept up to date as the log grows.
    pub(crate) fn view_tokens(&mut self, est: &dyn TokenEstimator) -> usize {
        self.size
            .update(&self.log, |r| est.record_tokens(r), |i| est.item_tokens(i))
    }

    /// How many full projections sizing the view took (benchmarks, tests).
    pub fn projections(&self) -> usize {
        self.size.projections
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_can_move_to_another_thread() {
        // The proxy keeps conversations across requests and hands them to
        // blocking threads: that must keep compiling.
        fn is_send<T: Send>(_: &T) {}
        let conv = Conversation::owning(Log::new(), Box::new(crate::Memory));
        is_send(&conv);
        let conv = std::thread::spawn(move || conv).join().unwrap();
        assert_eq!(conv.log().len(), 0);
    }
}
