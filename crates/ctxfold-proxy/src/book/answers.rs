//! Recording the upstream's answer where its request left the log (only if
//! nothing was appended since), learning the upstream's token scale from
//! its usage, and indexing its Responses id for a chained request.

use ctxfold_core::Record;
use ctxfold_providers::response::USAGE;
use serde_json::Value;

use super::counting::{calibrated, reported_input};
use super::identity::{COMPACTION_META, compaction_key};
use super::{AnswerSlot, Book, META_KEY, PrepareError, lock, stamp};

impl Book {
    /// Record an answer where `slot` says, if the log is still as its
    /// request left it. Returns whether it was recorded.
    pub fn record_answer(
        &self,
        slot: &AnswerSlot,
        records: Vec<Record>,
    ) -> Result<bool, PrepareError> {
        // A history the provider replaces with its compaction (Anthropic's
        // block sent back first) is keyed by that compaction: it goes on
        // in this conversation.
        let keys: Vec<String> = (records.iter())
            .filter_map(|r| ctxfold_formats::provider_compaction(r).map(compaction_key))
            .collect();
        let recorded = self.append_answer(slot, records, keys.last());
        if matches!(recorded, Ok(true)) {
            for k in keys {
                let (ids, _) = self.slot(&k);
                lock(&ids).insert(0, slot.conversation.clone());
            }
        }
        self.trim();
        recorded
    }

    /// Keep the key of the conversation's latest provider compaction in
    /// its metadata ([`COMPACTION_META`]), so a proxy started again (or
    /// another replica) finds the conversation a history starting with
    /// that compaction goes on in. A failure is only logged: the index in
    /// memory has it for this process. Called with the conversation's
    /// session held, as [`touch`](Self::touch) is, so neither write
    /// undoes the other.
    fn remember_compaction(&self, id: &str, key: &str) {
        let written = self.store.read_meta(id).and_then(|mut m| {
            let entry = m
                .extras
                .entry(META_KEY.to_owned())
                .or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(o) = entry {
                o.insert(COMPACTION_META.into(), Value::String(key.to_owned()));
            }
            self.store.write_meta(&m)
        });
        if let Err(e) = written {
            tracing::warn!(
                "conversation {id}: its provider compaction not kept in its metadata: {e}"
            );
        }
    }

    fn append_answer(
        &self,
        slot: &AnswerSlot,
        mut records: Vec<Record>,
        compaction: Option<&String>,
    ) -> Result<bool, PrepareError> {
        let session = self.session(&slot.conversation)?;
        let mut s = lock(&session);
        s.refresh()?;
        if s.conv.log().len() != slot.len || records.is_empty() {
            return Ok(false);
        }
        // As the next request's history will read it: the log is the
        // history this answer follows.
        slot.shape.follow(&mut records, s.conv.log().records());
        let response = records.iter().rev().find_map(|r| {
            r.metadata
                .as_ref()?
                .get(crate::protocol::responses::RESPONSE_ID)?
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
        if let Some(key) = compaction {
            self.remember_compaction(&slot.conversation, key);
        }
        Ok(true)
    }
}
