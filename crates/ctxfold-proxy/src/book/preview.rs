//! The body the upstream would get, for `count_tokens`: the stored view
//! with what is new in the request at its end, recording and compacting
//! nothing.

use serde_json::Value;

use super::render::render_stored;
use super::{Book, META_KEY, Naming, PrepareError, lock};
use crate::protocol::Shape;
use crate::reconcile::align;

impl Book {
    /// The body the upstream would get for `body`, recording nothing and
    /// compacting nothing (for `count_tokens`): the view of the stored
    /// conversation with what is new in the request at its end. `None`:
    /// the request's own body (no conversation, or nothing folded).
    pub fn preview(
        &self,
        shape: Shape,
        body: &Value,
        naming: &Naming<'_>,
    ) -> Result<Option<Vec<u8>>, PrepareError> {
        let transcript = shape.read(body).map_err(PrepareError::Body)?;
        let client = transcript.records;
        let key = self.key(shape, body, &client, naming)?;
        let (slot, maybe_dropped) = self.slot(&key);
        let mut ids = lock(&slot).clone();
        drop(slot);
        if ids.is_empty() && (self.store.is_shared() || maybe_dropped) {
            ids = self
                .store
                .find_by_extra(&format!("/{META_KEY}/key"), &Value::String(key))?
                .into_iter()
                .rev()
                .map(|m| m.id)
                .collect();
        }
        self.index.readable(&mut ids);
        let body = self.first_readable(&ids, |_, s| {
            let stored = s.conv.log().records();
            // What is new in the request is not in the log: it goes as
            // sent, after the view of what is.
            let Some(pairs) = align(stored, &client).paired() else {
                return Ok(None);
            };
            let r = render_stored(
                shape,
                s.conv.log(),
                &client,
                &pairs,
                &transcript.extras,
                None,
                None,
            );
            Ok(Some(r.body))
        })?;
        Ok(body.flatten())
    }
}
