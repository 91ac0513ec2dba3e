//! Which key a request belongs to: the `x-ctxfold-conversation` header,
//! else the session its agent names, else a fingerprint of its stable
//! head; and the key a stored conversation was recorded under.

use ctxfold_core::{Body, Record};
use ctxfold_store::{ConversationMeta, StoreError};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::index::gone_for_good;
use super::{Book, META_KEY, Naming};
use crate::context_management::emulated_origin;
use crate::protocol::Shape;

impl Book {
    /// The key of a request: its `x-ctxfold-conversation` header, else the
    /// session its agent names (`session:AGENT:ID`, see [`agent`]), else
    /// the fingerprint of its head. A header naming a conversation the
    /// proxy recorded (the id its answers carry in that header) stands for
    /// that conversation's key, so a client echoing it goes on there.
    pub(super) fn key(
        &self,
        shape: Shape,
        body: &Value,
        client: &[Record],
        naming: &Naming<'_>,
    ) -> Result<String, StoreError> {
        let Some(h) = naming.header else {
            if let Some(session) = shape.session(body, naming.agent) {
                return Ok(session.key());
            }
            // A history holding ctxfold's own compaction (the emulated
            // provider's, sent back) is the conversation its signature
            // names, whatever else its head changed (Codex's compact
            // request has no tools, its next request has).
            if let Some(key) = self.emulated_key(client)? {
                return Ok(key);
            }
            // A history that starts with the provider's compaction is that
            // compaction's conversation, wherever its head was.
            let first = client
                .iter()
                .find(|r| !matches!(r.body, Body::System { .. }));
            if let Some(c) = first.and_then(ctxfold_formats::provider_compaction) {
                return Ok(compaction_key(c));
            }
            return Ok(fingerprint(shape, body, client));
        };
        // Only an exact id: a prefix lookup would read every conversation's
        // metadata on every request.
        let recorded = if h.starts_with('.') || h.contains(['/', '\\']) {
            None
        } else {
            match self.store.read_meta(h) {
                Ok(m) => recorded_key(&m).map(str::to_owned),
                Err(e) if gone_for_good(&e) || matches!(e, StoreError::InvalidId { .. }) => None,
                Err(e) => return Err(e),
            }
        };
        Ok(recorded.unwrap_or_else(|| format!("header:{h}")))
    }

    /// The key of the conversation that the latest compaction ctxfold
    /// emulated in `client` names (its signature), when the proxy
    /// recorded that conversation and it can still be read.
    fn emulated_key(&self, client: &[Record]) -> Result<Option<String>, StoreError> {
        let named = client.iter().rev().find_map(|r| {
            let c = ctxfold_formats::provider_compaction(r)?;
            emulated_origin(c).map(|(id, _)| id)
        });
        let Some(id) = named else {
            return Ok(None);
        };
        if id.starts_with('.') || id.contains(['/', '\\']) {
            return Ok(None);
        }
        match self.store.read_meta(id) {
            Ok(m) => Ok(recorded_key(&m).map(str::to_owned)),
            Err(e) if gone_for_good(&e) || matches!(e, StoreError::InvalidId { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The prefix of the key of a history that starts with a compaction.
pub(super) const COMPACTION_KEY: &str = "compaction:";

/// Where a conversation's metadata (under [`META_KEY`]) keeps the key of
/// its latest provider compaction.
pub(super) const COMPACTION_META: &str = "compaction";

/// The key of a history that starts with the provider's compaction `c`
/// (a block or item, as recorded).
pub(super) fn compaction_key(c: &Value) -> String {
    // Its own fields, not the object's text: an SDK sends the block back
    // with its keys in another order.
    let mut h = Sha256::new();
    for k in ["id", "content", "signature", "encrypted_content"] {
        h.update([0]);
        h.update(c.get(k).map(Value::to_string).unwrap_or_default());
    }
    let d = h.finalize();
    let hex: String = d[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("{COMPACTION_KEY}{hex}")
}

/// The stable head of a request: its shape, system prompt, tool names and
/// first user message.
fn fingerprint(shape: Shape, body: &Value, client: &[Record]) -> String {
    let mut h = Sha256::new();
    h.update(shape.name());
    let head = shape.head(body);
    // A system prompt kept outside the history (Responses' `instructions`).
    if let Some(i) = head.system {
        h.update([0]);
        h.update(i);
    }
    for r in client {
        match &r.body {
            Body::System { content } => {
                h.update([0]);
                h.update(content);
            }
            Body::User { content, .. } => {
                h.update([1]);
                h.update(content);
                break;
            }
            _ => {}
        }
    }
    let mut tools = head.tools;
    tools.sort_unstable();
    for t in tools {
        h.update([2]);
        h.update(t);
    }
    let d = h.finalize();
    let hex: String = d[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("head:{hex}")
}

/// The key the proxy recorded a conversation under.
pub(super) fn recorded_key(meta: &ConversationMeta) -> Option<&str> {
    meta.extras
        .get(META_KEY)
        .and_then(|p| p.get("key"))
        .and_then(Value::as_str)
}
