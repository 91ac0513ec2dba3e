//! Recall and search over a store (SPEC §16): the two read-only
//! operations every shell offers the model (the agent host's tools,
//! `ctxfold mcp`, the command line), given nothing but a store and a
//! handle.
//!
//! A handle names its conversation by a tag computed from the records
//! (see [`ctxfold_core::handle`]), so a process that knows nothing else
//! finds the conversation by computing tags: the scope's first when one is
//! set, else every conversation's, most recently used first, each loaded
//! once and its tag kept. The work on the log itself is the core's
//! ([`ctxfold_core::recall`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ctxfold_core::Log;
use ctxfold_core::handle::{Handle, HandleError, Tag};
use ctxfold_core::recall::{self, Page, RecallError, Recalled};
use ctxfold_store::{Store, StoreError};

/// Why a recall or search could not be answered. Each message says what
/// to do instead: the reader is often a model.
#[derive(Debug, thiserror::Error)]
pub enum RecallFailure {
    /// The handle could not be read.
    #[error(transparent)]
    Handle(#[from] HandleError),
    /// The log has no such thing, or the offset is past its end.
    #[error(transparent)]
    Recall(#[from] RecallError),
    /// No conversation of the store has the handle's tag.
    #[error(
        "no conversation in {store} has the tag {tag} (the part of {handle} before `:`): copy the handle exactly as a placeholder or summary shows it"
    )]
    NoConversation {
        /// The handle as given.
        handle: String,
        /// Its tag.
        tag: Tag,
        /// Where the store is.
        store: String,
    },
    /// A search with nothing saying which conversation.
    #[error(
        "say which conversation to search: give `within`, a handle from any placeholder or summary lead of it (such as k3f9q:41)"
    )]
    NoScope,
    /// The store failed.
    #[error("the store {store} could not be read: {source}")]
    Store {
        /// Where the store is.
        store: String,
        /// What failed.
        #[source]
        source: StoreError,
    },
}

/// Recall and search over one store, optionally scoped to one
/// conversation (an agent's own: a handle of any other is refused).
#[derive(Debug)]
pub struct Recaller {
    store: Arc<dyn Store>,
    scope: Option<String>,
    /// Tags already computed, by conversation id (a conversation's tag
    /// never changes once it has records).
    tags: Mutex<HashMap<String, Tag>>,
}

/// One page of what a handle stands for.
#[derive(Debug, Clone)]
pub struct RecalledPage {
    /// The conversation the handle names.
    pub conversation: String,
    /// The handle, as read.
    pub handle: Handle,
    /// What it stands for, whole.
    pub recalled: Recalled,
    /// The page asked for: its exact text and where it lies.
    pub page: Page,
}

impl RecalledPage {
    /// The page as a tool answers with it: its text, then the line that
    /// says what it was and what is left.
    pub fn rendered(&self) -> String {
        recall::render_page(&self.handle, &self.recalled, &self.page)
    }
}

/// What a search found.
#[derive(Debug, Clone)]
pub struct Searched {
    /// The conversation searched.
    pub conversation: String,
    /// The text looked for, trimmed.
    pub query: String,
    /// The hits, newest first, and how many more there were.
    pub found: recall::Found,
}

impl Searched {
    /// The hits as a tool answers with them.
    pub fn rendered(&self) -> String {
        recall::render_found(&self.query, &self.found)
    }
}

/// What a conversation resolved to: its id and its loaded log.
struct Found {
    id: String,
    log: Log,
}

impl Recaller {
    /// Recall from `store`; with a `scope` (a conversation id), only from
    /// that conversation.
    pub fn new(store: Arc<dyn Store>, scope: Option<String>) -> Recaller {
        Recaller {
            store,
            scope,
            tags: Mutex::new(HashMap::new()),
        }
    }

    /// The conversation this recaller is scoped to, if any.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// Page `offset..offset + limit` (characters; `limit` 0 for the
    /// default page) of what `handle` stands for, with the line that says
    /// what is left. Also gives the conversation's id.
    pub fn recall(
        &self,
        handle: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(String, String), RecallFailure> {
        let page = self.recall_page(handle, offset, limit)?;
        let rendered = page.rendered();
        Ok((page.conversation, rendered))
    }

    /// [`Recaller::recall`], its parts kept apart: the page's exact text
    /// and where it lies in the whole (what the command line prints).
    pub fn recall_page(
        &self,
        handle: &str,
        offset: usize,
        limit: usize,
    ) -> Result<RecalledPage, RecallFailure> {
        let handle: Handle = handle.parse()?;
        let found = self.conversation(&handle)?;
        let recalled = recall::recall(&found.log, &handle)?;
        let page = recall::page(&handle, &recalled, offset, limit)?;
        Ok(RecalledPage {
            conversation: found.id,
            handle,
            recalled,
            page,
        })
    }

    /// Records holding `query` (ASCII case ignored), folded ones included,
    /// newest first, at most `limit` (0 for the default), each an excerpt
    /// with its handle. `within` names the conversation by any of its
    /// handles (a range handle also limits the search to its records);
    /// without it, the scope's conversation.
    pub fn search(
        &self,
        query: &str,
        within: Option<&str>,
        limit: usize,
    ) -> Result<(String, String), RecallFailure> {
        let searched = self.find(query, within, limit)?;
        let rendered = searched.rendered();
        Ok((searched.conversation, rendered))
    }

    /// [`Recaller::search`], its hits kept as values.
    pub fn find(
        &self,
        query: &str,
        within: Option<&str>,
        limit: usize,
    ) -> Result<Searched, RecallFailure> {
        let (found, range) = match within.map(str::trim).filter(|w| !w.is_empty()) {
            Some(w) => {
                let handle: Handle = w.parse()?;
                let range = match handle.target {
                    ctxfold_core::handle::Target::Range(a, b) => Some((a, b)),
                    _ => None,
                };
                (self.conversation(&handle)?, range)
            }
            None => {
                let id = self.scope.as_deref().ok_or(RecallFailure::NoScope)?;
                (self.load(id)?, None)
            }
        };
        let hits = recall::search(&found.log, query, range, limit)?;
        Ok(Searched {
            conversation: found.id,
            query: query.trim().to_owned(),
            found: hits,
        })
    }

    fn load(&self, id: &str) -> Result<Found, RecallFailure> {
        let log = self
            .store
            .load(id)
            .map_err(|source| self.store_error(source))?
            .into_log();
        if let Some(tag) = Tag::of(&log)
            && let Ok(mut tags) = self.tags.lock()
        {
            tags.insert(id.to_owned(), tag);
        }
        Ok(Found {
            id: id.to_owned(),
            log,
        })
    }

    /// The conversation `handle` names: the scope's (refusing another's),
    /// else the most recently used one with its tag.
    fn conversation(&self, handle: &Handle) -> Result<Found, RecallFailure> {
        if let Some(id) = &self.scope {
            let found = self.load(id)?;
            let own = Tag::of(&found.log).unwrap_or_default();
            if own != handle.tag {
                return Err(RecallError::OtherConversation {
                    handle: handle.to_string(),
                    tag: handle.tag,
                    own,
                }
                .into());
            }
            return Ok(found);
        }
        let mut metas = self
            .store
            .list()
            .map_err(|source| self.store_error(source))?
            .conversations;
        // The conversation being worked in is the one most recently used.
        metas.sort_by(|a, b| b.last_used_at.cmp(&a.last_used_at));
        let known: HashMap<String, Tag> = self.tags.lock().map(|t| t.clone()).unwrap_or_default();
        // Conversations whose tag is known and matches first, then the
        // ones not yet loaded.
        if let Some(m) = metas.iter().find(|m| known.get(&m.id) == Some(&handle.tag)) {
            return self.load(&m.id);
        }
        for m in metas.iter().filter(|m| !known.contains_key(&m.id)) {
            let found = self.load(&m.id)?;
            if Tag::of(&found.log) == Some(handle.tag) {
                return Ok(found);
            }
        }
        Err(RecallFailure::NoConversation {
            handle: handle.to_string(),
            tag: handle.tag,
            store: self.store.location(),
        })
    }

    fn store_error(&self, source: StoreError) -> RecallFailure {
        RecallFailure::Store {
            store: self.store.location(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxfold_core::Record;
    use ctxfold_core::projection::project;
    use ctxfold_core::record::Body;
    use ctxfold_store::Workspace;

    fn user(text: &str) -> Record {
        Record::new(
            0,
            "2026-12-06T10:00:00Z",
            Body::User {
                content: text.into(),
                author: None,
            },
        )
    }

    #[test]
    fn a_handle_alone_finds_its_conversation_and_a_scope_refuses_others() {
        let dir = tempfile::tempdir().unwrap();
        let (ws, _) = Workspace::init(dir.path()).unwrap();
        let store: Arc<dyn Store> = Arc::new(ws);
        let mut ids = Vec::new();
        for text in ["first conversation", "second conversation"] {
            let meta = ctxfold_store::create_new(
                store.as_ref(),
                None,
                None,
                Default::default(),
                vec![user(text)],
            )
            .unwrap();
            ids.push(meta.id);
        }
        let tag_of = |id: &str| Tag::of(&store.load(id).unwrap().into_log()).unwrap();
        let (a, b) = (tag_of(&ids[0]), tag_of(&ids[1]));
        let any = Recaller::new(store.clone(), None);
        let (id, text) = any.recall(&format!("{a}:0"), 0, 0).unwrap();
        assert_eq!(id, ids[0]);
        assert!(text.starts_with("first conversation\n"), "{text}");
        let (id, _) = any.recall(&format!("recall {b}:0"), 0, 0).unwrap();
        assert_eq!(id, ids[1]);
        let scoped = Recaller::new(store.clone(), Some(ids[0].clone()));
        let e = scoped.recall(&format!("{b}:0"), 0, 0).unwrap_err();
        assert!(
            e.to_string().contains("belongs to another conversation"),
            "{e}"
        );
        let e = any.recall("zzzzz:0", 0, 0).unwrap_err();
        assert!(e.to_string().contains("no conversation in"), "{e}");
        let e = any.search("conversation", None, 0).unwrap_err();
        assert!(matches!(e, RecallFailure::NoScope));
        let (_, hits) = scoped.search("CONVERSATION", None, 0).unwrap();
        assert!(
            hits.starts_with(&format!(
                "{a}:0 a user message (record 0): first conversation"
            )),
            "{hits}"
        );
        // The view of an empty conversation has no tag to hand out.
        let empty =
            ctxfold_store::create_new(store.as_ref(), None, None, Default::default(), vec![])
                .unwrap();
        assert!(
            project(&store.load(&empty.id).unwrap().into_log())
                .tag
                .is_none()
        );
    }
}
