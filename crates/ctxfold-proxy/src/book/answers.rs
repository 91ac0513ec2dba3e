//! Recording the upstream's answer where its request left the log (only if
//! nothing was appended since), learning the upstream's token scale from
//! its usage, and indexing its Responses id for a chained request.

use ctxfold_core::Record;
use ctxfold_providers::response::USAGE;

use super::counting::{calibrated, reported_input};
use super::{AnswerSlot, Book, PrepareError, lock, stamp};

impl Book {
    /// Record an answer where `slot` says, if the log is still as its
    /// request left it. Returns whether it was recorded.
    pub fn record_answer(
        &self,
        slot: &AnswerSlot,
        records: Vec<Record>,
    ) -> Result<bool, PrepareError> {
        let recorded = self.append_answer(slot, records);
        self.trim();
        recorded
    }

    fn append_answer(&self, slot: &AnswerSlot, records: Vec<Record>) -> Result<bool, PrepareError> {
        let session = self.session(&slot.conversation)?;
        let mut s = lock(&session);
        s.refresh()?;
        if s.conv.log().len() != slot.len || records.is_empty() {
            return Ok(false);
        }
        let response = records.iter().rev().find_map(|r| {
            r.metadata
                .as_ref()?
                .get(crate::shape::RESPONSE_ID)?
                .as_str()
                .map(str::to_owned)
        });
        let counted = records
            .iter()
            .rev()
            .find_map(|r| reported_input(r.metadata.as_ref()?.get(USAGE)?));
        let compacted = records
            .iter()
            .any(|r| ctxfold_formats::provider_compaction(r).is_some());
        // Only right after the request: another replica may have recorded
        // an answer to the same request first.
        if s.conv.append_at(stamp(&records))?.is_none() {
            return Ok(false);
        }
        // The provider compacted in this answer: what came before is out
        // of its view from now on.
        if compacted && let Some(folded) = crate::context_management::provider_folded(s.conv.log())
        {
            s.conv.append(vec![folded])?;
        }
        if let Some(counted) = counted
            && slot.sent > 0
        {
            s.scale = calibrated(counted, slot.sent);
        }
        if let Some(response) = response {
            lock(&self.chains).record(&response, &slot.conversation);
        }
        // After the chain index: a chained request may follow at once.
        self.touch(&mut s);
        Ok(true)
    }
}
