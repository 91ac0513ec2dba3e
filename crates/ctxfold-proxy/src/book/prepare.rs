//! A request from its bytes to the body the upstream gets: read (with the
//! head's kept reader when it can), keyed, gone on with in a conversation
//! (or a new one), compacted, rendered, and where its answer goes.

use ctxfold_core::{Object, Record};
use ctxfold_formats::message_reader::MessageReader;
use ctxfold_tokens::{Heuristic, TokenEstimator};
use serde_json::Value;

use super::chains::request_mark;
use super::counting::scaled;
use super::identity::{COMPACTION_KEY, COMPACTION_META};
use super::readers::{Kept, head_hash};
use super::render::render_stored;
use super::sent::Sent;
use super::{
    AnswerSlot, Book, History, MAX_FORKS_TRIED, META_KEY, Naming, PrepareError, Prepared, lock,
};
use crate::context_management::provider_folded;
use crate::protocol::Shape;
use crate::protocol::{asks, provider_managed};
use crate::reconcile::{Alignment, align};
use crate::request;
use ctxfold_formats::provider_compaction;

impl Book {
    /// Record the history of the request body `bytes` and make the body
    /// the upstream gets. Same as [`prepare`](Self::prepare) on the parsed
    /// body, but the messages a conversation's last request already had
    /// are neither parsed nor read again.
    pub fn prepare_bytes(
        &self,
        shape: Shape,
        bytes: &[u8],
        naming: &Naming<'_>,
    ) -> Result<Prepared, PrepareError> {
        self.trimmed(|| self.prepare_split(shape, bytes, naming))
    }

    fn prepare_split(
        &self,
        shape: Shape,
        bytes: &[u8],
        naming: &Naming<'_>,
    ) -> Result<Prepared, PrepareError> {
        let Some(inc) = shape.incremental() else {
            // Read whole every time.
            let body: Value = serde_json::from_slice(bytes)
                .map_err(|e| PrepareError::Body(format!("not JSON ({e})")))?;
            return self.prepare_parsed(shape, &body, naming);
        };
        let wire = inc.wire();
        let split = match request::split(bytes, shape.history_key()) {
            Ok(Some(s)) if !s.messages.is_empty() => s,
            Ok(_) => {
                let body: Value = serde_json::from_slice(bytes)
                    .map_err(|e| PrepareError::Body(format!("not JSON ({e})")))?;
                return self.prepare_parsed(shape, &body, naming);
            }
            Err(e) => return Err(PrepareError::Body(e)),
        };
        let request::Split {
            head,
            head_text,
            messages,
        } = split;
        let system = inc.reader_head(&head);
        let h = head_hash(shape, messages[0].get());
        let taken = self.readers.take(h, shape, &system);
        let mut kept = match taken {
            Some(k) => k,
            None => Kept {
                shape,
                reader: MessageReader::new(wire, Some(&head)).map_err(PrepareError::Body)?,
                system,
                raw: Vec::new(),
                bytes: 0,
            },
        };
        let same = kept
            .raw
            .iter()
            .zip(&messages)
            .take_while(|(a, b)| ***a == *b.get())
            .count();
        kept.reader.truncate(same);
        for r in kept.raw.drain(same..) {
            kept.bytes -= r.len();
        }
        for m in &messages[same..] {
            let read = serde_json::from_str::<Value>(m.get())
                .map_err(|e| e.to_string())
                .and_then(|v| kept.reader.read(&v));
            if let Err(e) = read {
                self.readers.keep(h, kept);
                return Err(PrepareError::Body(e));
            }
            kept.bytes += m.get().len();
            kept.raw.push(m.get().into());
        }
        if kept.reader.needs_pairing() {
            // Pairing renames ids across the whole history: read it whole.
            self.readers.keep(h, kept);
            let body: Value = serde_json::from_slice(bytes)
                .map_err(|e| PrepareError::Body(format!("not JSON ({e})")))?;
            return self.prepare_parsed(shape, &body, naming);
        }
        let extras = wire.extras(&head);
        let head = Value::Object(head);
        // `head` was made an object on the line above.
        #[allow(clippy::expect_used)]
        let sent = Sent {
            texts: &kept.raw,
            reader: &kept.reader,
            head: head.as_object().expect("the head is an object"),
            head_text: &head_text,
        };
        let prepared = self.prepare_read(
            shape,
            &head,
            kept.reader.records(),
            &extras,
            Some(sent),
            naming,
        );
        self.readers.keep(h, kept);
        prepared
    }

    /// Record `body`'s history and make the body the upstream gets.
    pub fn prepare(
        &self,
        shape: Shape,
        body: &Value,
        naming: &Naming<'_>,
    ) -> Result<Prepared, PrepareError> {
        self.trimmed(|| self.prepare_parsed(shape, body, naming))
    }

    /// `prepare`, then the loaded logs trimmed to their bounds, once the
    /// request no longer holds its conversation (see `trim`).
    fn trimmed(
        &self,
        prepare: impl FnOnce() -> Result<Prepared, PrepareError>,
    ) -> Result<Prepared, PrepareError> {
        let prepared = prepare();
        self.trim();
        prepared
    }

    fn prepare_parsed(
        &self,
        shape: Shape,
        body: &Value,
        naming: &Naming<'_>,
    ) -> Result<Prepared, PrepareError> {
        let transcript = shape.read(body).map_err(PrepareError::Body)?;
        self.prepare_read(
            shape,
            body,
            &transcript.records,
            &transcript.extras,
            None,
            naming,
        )
    }

    /// [`prepare`](Self::prepare) of a body read into `client` records and
    /// `extras`; `body` need hold only the keys besides the messages.
    fn prepare_read(
        &self,
        shape: Shape,
        body: &Value,
        client: &[Record],
        extras: &Object,
        sent: Option<Sent>,
        naming: &Naming<'_>,
    ) -> Result<Prepared, PrepareError> {
        let model = naming.model.unwrap_or_else(|| shape.model(body)).to_owned();
        if let Some(previous) = shape.chained(body) {
            return self.chain(shape, previous, &model, client);
        }
        let key = self.key(shape, body, client, naming)?;
        let (slot, maybe_dropped) = self.slot(&key);
        // Held to the end: one request of a key at a time (in this
        // process; replicas sharing a store append conditionally).
        let mut named = lock(&slot);
        if named.is_empty() && key.starts_with(COMPACTION_KEY) {
            // The answer holding this compaction may still be being
            // recorded (with the key that names its conversation).
            drop(named);
            self.pending.wait(std::time::Duration::from_secs(2));
            named = lock(&slot);
            if named.is_empty() {
                // Recorded before this process started (or by another
                // replica): the conversation's metadata keeps its latest.
                let found = self.store.find_by_extra(
                    &format!("/{META_KEY}/{COMPACTION_META}"),
                    &Value::String(key.clone()),
                )?;
                named.extend(found.into_iter().rev().map(|m| m.id));
            }
        }
        if named.is_empty() && (self.store.is_shared() || maybe_dropped) {
            // Another replica may have recorded this key's conversations,
            // or the index dropped the key since this process saw it.
            let found = self
                .store
                .find_by_extra(&format!("/{META_KEY}/key"), &Value::String(key.clone()))?;
            named.extend(found.into_iter().rev().map(|m| m.id));
        }
        let first = if named.is_empty() {
            self.create_first(shape, &key, &model, client)?
        } else {
            None
        };
        if named.is_empty() && first.is_none() {
            // Another replica started this key's conversation meanwhile.
            let found = self
                .store
                .find_by_extra(&format!("/{META_KEY}/key"), &Value::String(key.clone()))?;
            named.extend(found.into_iter().rev().map(|m| m.id));
        }
        let (id, history, new_turn) = match first {
            Some(id) => (id, History::New, true),
            // The key's first conversation is taken but not found (moved to
            // the trash): a new one with an id of its own.
            None if named.is_empty() => (
                self.create(shape, &key, &model, client, None)?,
                History::New,
                true,
            ),
            None => self.continue_or_fork(shape, &key, &model, client, &mut named)?,
        };
        // The conversation used goes first; those that can no longer be
        // read go.
        named.retain(|x| *x != id);
        self.index.readable(&mut named);
        named.insert(0, id.clone());
        // Only the first are ever tried (the store has the others).
        named.truncate(MAX_FORKS_TRIED);
        if let Some(mark) = request_mark(client) {
            lock(&self.chains).record_request(&mark, &id);
        }
        let asks = asks(shape, body, client);
        // The upstream lacks the providers' context management: ctxfold
        // provides it; else a request that uses it is the provider's.
        let emulating = crate::protocol::emulated(self.compaction.emulate, shape)
            && (naming.compacts
                || asks.any()
                || client.iter().any(|r| provider_compaction(r).is_some()));
        let managed = !emulating && (naming.compacts || provider_managed(shape, &asks, client));
        let mode = match (emulating, managed) {
            (true, _) => Mode::Emulate(&asks, naming.compacts),
            (false, true) => Mode::Provider,
            (false, false) => Mode::Ctxfold,
        };
        self.finish(
            shape, &id, history, body, extras, client, sent, &model, new_turn, mode,
        )
    }

    /// Compact (unless the request is an earlier state), render, and say
    /// where the answer goes.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        shape: Shape,
        id: &str,
        history: History,
        body: &Value,
        extras: &Object,
        client: &[Record],
        sent: Option<Sent>,
        model: &str,
        new_turn: bool,
        mode: Mode<'_>,
    ) -> Result<Prepared, PrepareError> {
        // The fixed part counts as the trigger counts it: once.
        let fixed = shape.fixed_tokens(body);
        let session = self.session(id)?;
        let mut s = lock(&session);
        let mut compactions = 0;
        let managed = matches!(mode, Mode::Provider);
        // Its answer may hold a compaction that the next request starts with.
        let compacting = match mode {
            Mode::Emulate(asks, compacts) => compacts || asks.compaction(),
            Mode::Provider => true,
            Mode::Ctxfold => false,
        };
        let acts = history != History::Earlier && !self.compaction.observe;
        let mut emulated = None;
        // A retried request the emulation answered with a compaction
        // already: answered with it again, nothing recorded anew.
        let mut repeat = false;
        if let Mode::Emulate(asks, compacts) = mode
            && !self.compaction.observe
            && (compacts || asks.compaction())
        {
            let after = align(s.conv.log().records(), client)
                .paired()
                .and_then(|p| p.pairs.last().map(|&(si, _)| si));
            if let Some(e) = after.and_then(|a| Book::repeated(&s, shape, asks, compacts, a)) {
                emulated = Some(e);
                repeat = true;
            } else if history == History::Earlier
                && (compacts || asks.trigger || asks.summarize.is_some())
            {
                // It asks to compact an earlier state of the log, which
                // was never answered with a compaction: the log has gone
                // on past it, and a summary of it now would fold what
                // came after.
                return Err(PrepareError::Unservable(format!(
                    "the request repeats an earlier state of conversation {id}, which has gone on since without a compaction there; ctxfold cannot compact that state. Send the conversation's whole history"
                )));
            }
        }
        if let Mode::Emulate(asks, compacts) = mode
            && !repeat
        {
            if acts {
                let before = s.conv.log().len();
                let e = self.emulate(&mut s, shape, fixed, asks, compacts)?;
                compactions += s.conv.log().records()[before..]
                    .iter()
                    .filter(|r| matches!(r.body, ctxfold_core::Body::Compaction(_)))
                    .count();
                emulated = Some(e);
            } else if !self.compaction.observe {
                // A retried request: nothing new to do, but what the
                // upstream lacks still must not reach it.
                emulated = Some(super::Emulated::default());
            }
        }
        // ctxfold's own automatic compaction, unless the provider's (or
        // its emulation) just compacted.
        let compacted = emulated.as_ref().is_some_and(|e| e.compaction.is_some());
        if acts && !managed && !compacted {
            compactions += self.compact(&mut s, shape, model, body, fixed, new_turn)?;
        }
        if managed
            && history != History::Earlier
            && let Some(folded) = provider_folded(s.conv.log())
        {
            s.conv.append(vec![folded])?;
        }
        let stored = s.conv.log().records();
        let est = Heuristic::default();
        let pairs = match align(stored, client) {
            Alignment::Diverges { at } => {
                // The log was just made from, or extended with, this
                // history: another process must have changed it since.
                // Send the client's request as it is.
                tracing::warn!(
                    "conversation {id} changed under the request (at record {at}); sending it unchanged"
                );
                let t = client.iter().map(|r| est.record_tokens(r)).sum();
                return Ok(Prepared {
                    body: None,
                    conversation: id.to_owned(),
                    tokens_before: t,
                    tokens_after: t,
                    compactions,
                    history,
                    answer: None,
                    emulated,
                });
            }
            aligned => aligned.paired().unwrap_or_default(),
        };
        // What the conversation's previous request sent, for the prefix
        // this one shares with it (a new conversation has none).
        let previous = (s.last_sent.as_ref())
            .filter(|_| history != History::New)
            .map(|l| &l.prefix);
        let r = render_stored(shape, s.conv.log(), client, &pairs, extras, sent, previous);
        // Everything as the upstream counted the last answer's request.
        if history != History::Earlier {
            self.touch_with(&mut s, Some(fixed));
        }
        let up = |t: usize| scaled(fixed + t, s.scale);
        let unchanged = self.compaction.observe || managed;
        let (body, tokens_before, tokens_after, sent_est) = if unchanged {
            (None, up(r.before), up(r.before), fixed + r.before)
        } else {
            (r.body, up(r.before), up(r.after), fixed + r.after)
        };
        // The cost of both sides (issue 46): the prefix shared with the
        // conversation's previous request is read from the prompt cache.
        let now = ctxfold_core::cost::Sent {
            fixed: fixed as u64,
            without: r.before as u64,
            with: if unchanged { r.before } else { r.after } as u64,
            shared: r.shared as u64,
            prefix: r.prefix,
        };
        let previous = if history == History::New {
            None
        } else {
            s.last_sent.as_ref()
        };
        let mut estimate = now.estimate(previous);
        if unchanged {
            // Sent as the client sent it: both sides are the client's.
            estimate.with_cached = estimate.without_cached;
        }
        if history != History::Earlier {
            s.last_sent = Some(now);
        }
        let answer = (history != History::Earlier && !repeat).then(|| AnswerSlot {
            conversation: id.to_owned(),
            len: s.conv.log().len(),
            sent: sent_est,
            shape,
            model: model.to_owned(),
            managed,
            in_flight: compacting.then(|| std::sync::Arc::new(self.pending.begin())),
            estimate,
        });
        Ok(Prepared {
            body,
            conversation: id.to_owned(),
            tokens_before,
            tokens_after,
            compactions,
            history,
            answer,
            emulated,
        })
    }
}

/// Who manages a request's context.
#[derive(Clone, Copy)]
enum Mode<'a> {
    /// ctxfold, as for any request.
    Ctxfold,
    /// The provider (issue 29): sent as the client sent it, never
    /// compacted on top.
    Provider,
    /// ctxfold in the provider's place, for an upstream without it: what
    /// the request asks (and whether its endpoint compacts).
    Emulate(&'a ctxfold_wire::context_management::Asks, bool),
}
