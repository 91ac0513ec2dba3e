//! Going on in a key's conversation: the first whose log the request
//! continues (or is an earlier state of) gets what is new, appended only
//! if no other writer appended since it was read (else read again and
//! compared, a few times); a request that diverges from them all is
//! recorded as a new conversation naming the one it forked from.

use ctxfold_core::{Body, Record};
use serde_json::Value;

use super::chains::answered_mark;
use super::identity::recorded_key;
use super::{Book, History, META_KEY, PrepareError, lock, stamp};
use crate::protocol::Shape;
use crate::reconcile::{Alignment, align};

/// How many times a request re-reads a log that another writer appended to
/// between its read and its append before it records a conversation of
/// its own.
const APPEND_TRIES: usize = 4;

impl Book {
    /// Append what is new in `client` to conversation `id`, or record it
    /// as a new conversation when it diverges. Returns the conversation,
    /// what happened, and whether a user message was added (a new turn).
    pub(super) fn continue_or_fork(
        &self,
        shape: Shape,
        key: &str,
        model: &str,
        client: &[Record],
        named: &mut Vec<String>,
    ) -> Result<(String, History, bool), PrepareError> {
        // The key's conversations, newest first: two clients sharing a
        // key each find their own again instead of forking every time.
        let mut from = None;
        let mut ids = named.clone();
        // The conversation the request the client's newest answer
        // answered was recorded in goes first, should it be past the ones
        // tried (a name shared by more clients than that): it is the one
        // the client continues.
        if let Some(id) = self.answered_in(key, client, named) {
            ids.retain(|x| *x != id);
            ids.insert(0, id);
        }
        if let Some(found) = self.go_on_in(client, &ids, &mut from)? {
            return Ok(found);
        }
        if self.store.is_shared() {
            // Another replica may have forked this key's conversation: go
            // on there rather than fork it again here.
            let more: Vec<String> = self
                .store
                .find_by_extra(&format!("/{META_KEY}/key"), &Value::String(key.to_owned()))?
                .into_iter()
                .rev()
                .map(|m| m.id)
                .filter(|id| !named.contains(id))
                .collect();
            named.extend(more.iter().cloned());
            if let Some(found) = self.go_on_in(client, &more, &mut from)? {
                return Ok(found);
            }
        }
        let Some(from) = from else {
            // None of them can be read: start afresh.
            let new = self.create(shape, key, model, client, None)?;
            return Ok((new, History::New, true));
        };
        tracing::info!(
            "conversation {from}: the request's history differs from the log; recording it as a new conversation"
        );
        let new = self.create(shape, key, model, client, Some(&from))?;
        Ok((new, History::Forked, true))
    }

    /// The conversation of `key` that the request answered by the newest
    /// answer in `client` was recorded in, as far as this process knows.
    /// A hint only: a conversation that cannot be read is none.
    fn answered_in(&self, key: &str, client: &[Record], named: &[String]) -> Option<String> {
        let mark = answered_mark(client)?;
        let id = lock(&self.chains).find_request(&mark)?;
        if named.contains(&id) {
            return Some(id);
        }
        // A request alike in another name's conversation is not this one.
        let meta = self.store.read_meta(&id).ok()?;
        (recorded_key(&meta) == Some(key)).then_some(id)
    }

    /// Go on in the first of `ids` whose log `client` continues (or is an
    /// earlier state of); `from` becomes the first that could be read.
    fn go_on_in(
        &self,
        client: &[Record],
        ids: &[String],
        from: &mut Option<String>,
    ) -> Result<Option<(String, History, bool)>, PrepareError> {
        self.first_readable(ids, |id, s| {
            from.get_or_insert_with(|| id.clone());
            for _ in 0..APPEND_TRIES {
                match align(s.conv.log().records(), client) {
                    Alignment::Extends { tail, .. } => {
                        let new = stamp(&client[tail..]);
                        let added = new.len();
                        let user = new.iter().any(|r| matches!(r.body, Body::User { .. }));
                        if s.conv.append_at(new)?.is_some() {
                            if added > 0 {
                                self.touch(s);
                            }
                            return Ok(Some((id.clone(), History::Continued { added }, user)));
                        }
                        // Another writer appended since the log was read:
                        // compare with what it holds now.
                        s.reload()?;
                    }
                    Alignment::Earlier { .. } => {
                        return Ok(Some((id.clone(), History::Earlier, false)));
                    }
                    Alignment::Diverges { .. } => break,
                }
            }
            Ok(None)
        })
    }
}
