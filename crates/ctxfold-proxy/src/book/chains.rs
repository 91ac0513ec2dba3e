//! Responses requests chained with `previous_response_id`: their input
//! holds only what is new, so they are recorded after the answer they
//! name, found through an index of each conversation's latest answer id.

use ctxfold_core::{Object, Record};
use ctxfold_store::create_new;
use ctxfold_tokens::{Heuristic, TokenEstimator};
use serde_json::{Value, json};

use super::create::title_from;
use super::index::hash128;
use super::{AnswerSlot, Book, History, META_KEY, PrepareError, Prepared, lock, stamp};
use crate::cache::{Bounded, Limits};
use crate::shape::Shape;

/// The latest Responses answer id of each conversation, both ways
/// (answer ids as hashes: their length is the upstream's), each way
/// bounded by count.
pub(super) struct Chains {
    by_response: Bounded<u128, String>,
    pub(super) latest: Bounded<String, u128>,
}

impl Chains {
    pub(super) fn new(limits: &Limits) -> Chains {
        Chains {
            by_response: Bounded::new(limits.index, usize::MAX),
            latest: Bounded::new(limits.index, usize::MAX),
        }
    }

    pub(super) fn record(&mut self, response: &str, conversation: &str) {
        let h = hash128(response);
        if let Some(old) = self.latest.take(&conversation.to_owned()) {
            self.by_response.take(&old);
        }
        self.latest.put(conversation.to_owned(), h, 0, |_| false);
        self.by_response
            .put(h, conversation.to_owned(), 0, |_| false);
    }

    /// The conversation whose latest answer is `response`. Either way may
    /// have dropped its entry: only one that both still hold counts.
    pub(super) fn find(&mut self, response: &str) -> Option<String> {
        let h = hash128(response);
        let id = self.by_response.get(&h)?.clone();
        (self.latest.get(&id) == Some(&h)).then_some(id)
    }
}

impl Book {
    /// Record a chained Responses request after the answer it names (or as
    /// a new conversation naming it); it goes upstream as sent.
    pub(super) fn chain(
        &self,
        shape: Shape,
        previous: &str,
        model: &str,
        client: &[Record],
    ) -> Result<Prepared, PrepareError> {
        let est = Heuristic::default();
        let tokens: usize = client.iter().map(|r| est.record_tokens(r)).sum();
        let known = lock(&self.chains).find(previous);
        let mut id = None;
        if let Some(known) = known {
            match self.session(&known) {
                Ok(session) => {
                    let mut s = lock(&session);
                    s.refresh()?;
                    s.conv.append(stamp(client))?;
                    self.touch(&mut s);
                    id = Some((known, s.conv.log().len()));
                }
                Err(e) => self.forget(&known, e)?,
            }
        }
        let (id, len) = match id {
            Some(found) => found,
            None => {
                let key = format!("chain:{previous}");
                let meta = json!({"key": key, "shape": shape.name(), "model": model,
                    "previous_response_id": previous});
                let title = title_from(client);
                let mut extras = Object::new();
                extras.insert(META_KEY.into(), meta);
                let c = create_new(&*self.store, title, None, extras, stamp(client))?;
                let len = client.len();
                (c.id, len)
            }
        };
        Ok(Prepared {
            body: None,
            conversation: id.clone(),
            tokens_before: tokens,
            tokens_after: tokens,
            compactions: 0,
            history: History::Chained,
            answer: Some(AnswerSlot {
                conversation: id,
                len,
                sent: tokens,
                shape,
                model: model.to_owned(),
                managed: false,
                in_flight: None,
            }),
            emulated: None,
        })
    }
}

/// The `previous_response_id` a Responses request is chained with.
pub(super) fn chained(shape: Shape, body: &Value) -> Option<&str> {
    if shape != Shape::Responses {
        return None;
    }
    body.get("previous_response_id").and_then(Value::as_str)
}
