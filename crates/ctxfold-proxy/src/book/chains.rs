//! Responses requests chained with `previous_response_id`: their input
//! holds only what is new, so they are recorded after the answer they
//! name, found through an index of each conversation's latest answer id.

use ctxfold_core::{Body, Object, Record};
use ctxfold_store::create_new;
use ctxfold_tokens::{Heuristic, TokenEstimator};
use serde_json::json;

use super::create::title_from;
use super::index::hash128;
use super::{AnswerSlot, Book, History, META_KEY, PrepareError, Prepared, lock, stamp};
use crate::cache::{Bounded, Limits};
use crate::protocol::Shape;

/// The latest Responses answer id of each conversation, both ways
/// (answer ids as hashes: their length is the upstream's), each way
/// bounded by count; and the conversation each request was recorded in,
/// by how it ends ([`request_mark`]): the client's next request holds it
/// before the answer it got, so a client sharing its name with more
/// others than a request is compared with finds its own again. Recorded
/// as the request is, never after the answer: a client may send its next
/// request before the proxy has recorded the answer.
pub(super) struct Chains {
    by_response: Bounded<u128, String>,
    pub(super) latest: Bounded<String, u128>,
    by_request: Bounded<u128, String>,
}

impl Chains {
    pub(super) fn new(limits: &Limits) -> Chains {
        Chains {
            by_response: Bounded::new(limits.index, usize::MAX),
            latest: Bounded::new(limits.index, usize::MAX),
            by_request: Bounded::new(limits.index, usize::MAX),
        }
    }

    /// A request recorded in `conversation`, by its [`request_mark`].
    pub(super) fn record_request(&mut self, mark: &str, conversation: &str) {
        self.by_request
            .put(hash128(mark), conversation.to_owned(), 0, |_| false);
    }

    /// The conversation the request marked `mark` was recorded in (the
    /// latest, should two requests end alike).
    pub(super) fn find_request(&mut self, mark: &str) -> Option<String> {
        self.by_request.get(&hash128(mark)).cloned()
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
                // The history is the upstream's: only the new input is
                // sent, the same on both sides.
                estimate: ctxfold_core::cost::Estimate {
                    without_input: tokens as u64,
                    with_input: tokens as u64,
                    ..Default::default()
                },
            }),
            emulated: None,
        })
    }
}

/// What marks where a history ends, for the client's next request: its
/// last record's tool-result id (which the upstream made unique) or text.
/// `None` when it ends with an answer.
pub(super) fn request_mark(records: &[Record]) -> Option<String> {
    match &records.last()?.body {
        Body::ToolResult { id, .. } => Some(format!("result\0{id}")),
        Body::User { content, .. } => Some(format!("user\0{}", content.trim())),
        _ => None,
    }
}

/// In a client's history, the mark ([`request_mark`]) of the request its
/// newest answer answered: the records before that answer.
pub(super) fn answered_mark(client: &[Record]) -> Option<String> {
    let answer = |r: &Record| {
        matches!(
            r.body,
            Body::Assistant { .. } | Body::ToolCall { .. } | Body::Reasoning { .. }
        )
    };
    let last = client.iter().rposition(answer)?;
    let start = client[..last].iter().rposition(|r| !answer(r))? + 1;
    request_mark(&client[..start])
}
