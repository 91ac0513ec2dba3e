//! Conversations as rows: create, list, find, metadata, the trash and the
//! active conversation.

use std::ops::Range;

use ctxfold_core::Record;

use super::PgStore;
use crate::meta::ConversationMeta;
use crate::store::{BrokenMeta, StoreListing};
use crate::{StoreError, now};

/// The `ctxfold_settings` key of the active conversation.
const ACTIVE_KEY: &str = "active";

impl PgStore {
    /// Create an empty conversation. An id already taken (in the trash
    /// too) is an error, and nothing is written.
    pub fn create(&self, meta: &ConversationMeta) -> Result<(), StoreError> {
        self.create_with(meta, Vec::new()).map(|_| ())
    }

    /// Create a conversation holding `records`, numbered from 0 (references
    /// to seqs follow, as the file store's creation does), in one
    /// transaction: it exists whole or not at all. Returns their seqs.
    pub fn create_with(
        &self,
        meta: &ConversationMeta,
        records: impl IntoIterator<Item = Record>,
    ) -> Result<Range<u64>, StoreError> {
        if meta.id.is_empty() {
            return Err(StoreError::EmptyId);
        }
        let text = self.meta_text(meta)?;
        let records = ctxfold_core::log::renumber(records.into_iter().collect());
        let what = || format!("create conversation `{}`", meta.id);
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(|e| self.db(what(), e))?;
        let inserted = tx
            .execute(
                "INSERT INTO ctxfold_conversations (id, meta, created_at) VALUES ($1, $2, $3)
                 ON CONFLICT (id) DO NOTHING",
                &[&meta.id, &text, &meta.created_at],
            )
            .map_err(|e| self.db(what(), e))?;
        if inserted == 0 {
            return Err(StoreError::ConversationExists {
                id: meta.id.clone(),
                store: self.target.store.clone(),
            });
        }
        let range = self.write_batch(&mut tx, &meta.id, 0, records)?;
        tx.commit().map_err(|e| self.db(what(), e))?;
        Ok(range)
    }

    /// Every conversation not in the trash, oldest first (by creation
    /// time, then id, as the file store lists them).
    pub fn list(&self) -> Result<StoreListing, StoreError> {
        let mut conn = self.conn()?;
        let rows = conn
            .query(
                "SELECT id, meta FROM ctxfold_conversations WHERE trashed_at IS NULL
                 ORDER BY created_at COLLATE \"C\", id COLLATE \"C\"",
                &[],
            )
            .map_err(|e| self.db("list conversations", e))?;
        let mut out = StoreListing::default();
        for row in rows {
            let (id, text) = self.id_and_meta(&row)?;
            match self.parse_meta(&id, &text) {
                Ok(meta) => out.conversations.push(meta),
                Err(error) => out.broken.push(BrokenMeta { id, error }),
            }
        }
        Ok(out)
    }

    /// The metadata of the conversations not in the trash whose metadata
    /// text contains `needle` (all when it is empty), oldest first; those
    /// whose metadata cannot be read are left out.
    pub fn metas_containing(&self, needle: &str) -> Result<Vec<ConversationMeta>, StoreError> {
        let mut conn = self.conn()?;
        let rows = conn
            .query(
                "SELECT id, meta FROM ctxfold_conversations
                 WHERE trashed_at IS NULL AND strpos(meta, $1) > 0
                 ORDER BY created_at COLLATE \"C\", id COLLATE \"C\"",
                &[&needle],
            )
            .map_err(|e| self.db("search the conversations' metadata", e))?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let (id, text) = self.id_and_meta(&row)?;
            if let Ok(meta) = self.parse_meta(&id, &text) {
                out.push(meta);
            }
        }
        Ok(out)
    }

    /// The metadata of conversation `id` (exactly that id; not one in the
    /// trash).
    pub fn read_meta(&self, id: &str) -> Result<ConversationMeta, StoreError> {
        let row = self.conversation_row(id, "id, meta")?;
        let (id, text) = self.id_and_meta(&row)?;
        self.parse_meta(&id, &text)
    }

    /// The conversation whose id is `id` or starts with it, as the file
    /// store's `Workspace::get` finds it: an exact id first, else a prefix
    /// that matches one conversation only.
    pub fn get(&self, id: &str) -> Result<ConversationMeta, StoreError> {
        if id.is_empty() {
            return Err(StoreError::EmptyId);
        }
        let mut conn = self.conn()?;
        let rows = conn
            .query(
                "SELECT id, meta FROM ctxfold_conversations
                 WHERE trashed_at IS NULL AND (id = $1 OR left(id, char_length($1)) = $1)
                 ORDER BY id = $1 DESC, created_at COLLATE \"C\", id COLLATE \"C\"",
                &[&id],
            )
            .map_err(|e| self.db(format!("find conversation `{id}`"), e))?;
        let mut found = Vec::with_capacity(rows.len());
        for row in &rows {
            found.push(self.id_and_meta(row)?);
        }
        match found.first() {
            None => Err(self.no_conversation(id)),
            Some((first, text)) if first == id || found.len() == 1 => self.parse_meta(first, text),
            Some(_) => Err(StoreError::Ambiguous {
                id: id.to_owned(),
                matches: found.into_iter().map(|(id, _)| id).collect(),
            }),
        }
    }

    /// Replace the metadata of conversation `meta.id`. One in the trash or
    /// missing is an error ([`StoreError::Gone`]), and nothing is written.
    pub fn write_meta(&self, meta: &ConversationMeta) -> Result<(), StoreError> {
        let text = self.meta_text(meta)?;
        let mut conn = self.conn()?;
        let updated = conn
            .execute(
                "UPDATE ctxfold_conversations SET meta = $2, created_at = $3
                 WHERE id = $1 AND trashed_at IS NULL",
                &[&meta.id, &text, &meta.created_at],
            )
            .map_err(|e| self.db(format!("write the metadata of `{}`", meta.id), e))?;
        if updated == 0 {
            return Err(self.gone(&meta.id));
        }
        Ok(())
    }

    /// Move conversation `id` to the trash: it leaves the listing, and
    /// appends to it fail. Nothing is deleted ([`PgStore::restore`] brings
    /// it back). An append in progress finishes first. No longer active.
    pub fn trash(&self, id: &str) -> Result<(), StoreError> {
        let what = || format!("move conversation `{id}` to the trash");
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(|e| self.db(what(), e))?;
        let n = tx
            .execute(
                "UPDATE ctxfold_conversations SET trashed_at = now()
                 WHERE id = $1 AND trashed_at IS NULL",
                &[&id],
            )
            .map_err(|e| self.db(what(), e))?;
        if n == 0 {
            return Err(self.no_conversation(id));
        }
        tx.execute(
            "DELETE FROM ctxfold_settings WHERE key = $1 AND value = $2",
            &[&ACTIVE_KEY, &id],
        )
        .map_err(|e| self.db(what(), e))?;
        tx.commit().map_err(|e| self.db(what(), e))
    }

    /// Bring conversation `id` back from the trash.
    pub fn restore(&self, id: &str) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let n = conn
            .execute(
                "UPDATE ctxfold_conversations SET trashed_at = NULL
                 WHERE id = $1 AND trashed_at IS NOT NULL",
                &[&id],
            )
            .map_err(|e| self.db(format!("restore conversation `{id}`"), e))?;
        if n == 0 {
            return Err(self.no_conversation(id));
        }
        Ok(())
    }

    /// Make conversation `id` the active one and note that it was used
    /// (its `last_used_at`). Returns its metadata as written. One in the
    /// trash or missing is an error, and the active one stays as it was.
    pub fn set_active(&self, id: &str) -> Result<ConversationMeta, StoreError> {
        let what = || format!("make conversation `{id}` active");
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(|e| self.db(what(), e))?;
        // The row lock keeps a trash of it from slipping in between.
        let row = tx
            .query_opt(
                "SELECT id, meta FROM ctxfold_conversations
                 WHERE id = $1 AND trashed_at IS NULL FOR UPDATE",
                &[&id],
            )
            .map_err(|e| self.db(what(), e))?
            .ok_or_else(|| self.gone(id))?;
        let (id, text) = self.id_and_meta(&row)?;
        let mut meta = self.parse_meta(&id, &text)?;
        meta.last_used_at = now();
        let text = self.meta_text(&meta)?;
        tx.execute(
            "UPDATE ctxfold_conversations SET meta = $2 WHERE id = $1",
            &[&id, &text],
        )
        .map_err(|e| self.db(what(), e))?;
        tx.execute(
            "INSERT INTO ctxfold_settings (key, value) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            &[&ACTIVE_KEY, &id],
        )
        .map_err(|e| self.db(what(), e))?;
        tx.commit().map_err(|e| self.db(what(), e))?;
        Ok(meta)
    }

    /// The id of the active conversation, if one is.
    pub fn active(&self) -> Result<Option<String>, StoreError> {
        let mut conn = self.conn()?;
        let row = conn
            .query_opt(
                "SELECT value FROM ctxfold_settings WHERE key = $1",
                &[&ACTIVE_KEY],
            )
            .map_err(|e| self.db("read the active conversation", e))?;
        match row {
            None => Ok(None),
            Some(row) => row
                .try_get::<_, String>(0)
                .map(|id| (!id.is_empty()).then_some(id))
                .map_err(|e| self.db("read the active conversation", e)),
        }
    }
}
