//! One storage interface over both stores (SPEC §15): the workspace (files,
//! the embedded default) and PostgreSQL (shared by processes and machines).
//!
//! Callers hold an `Arc<dyn Store>` and never reach past it, so a command
//! works the same on either. Both keep the log's guarantees (SPEC §2):
//! append-only, gapless `seq`s given by the store, batches written whole or
//! not at all, records byte for byte, one compaction at a time.
//!
//! The workspace's log operations need only the conversation's folder, not
//! its `meta.json`: a corrupt metadata file never stops the log from being
//! read or appended to.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

use ctxfold_core::{Object, Record};
use serde_json::Value;

use crate::event_log::{CompactionLock, EventLog, Loaded};
use crate::meta::{self, ConversationMeta, ImportSource};
use crate::postgres::{PgLock, PgStore};
use crate::workspace::{self, Conversation, Listing, Workspace};
use crate::{StoreError, now};

/// What [`Store::list`] found: the conversations' metadata.
pub type StoreListing = Listing<ConversationMeta, BrokenMeta>;

/// A conversation whose metadata could not be read.
#[derive(Debug)]
pub struct BrokenMeta {
    /// Its id.
    pub id: String,
    /// Why it could not be read.
    pub error: StoreError,
}

/// What a conditional append ([`Store::append_at`]) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppendAt {
    /// The log's next `seq` was the one expected: the batch got these.
    Appended(Range<u64>),
    /// Another writer got there first: the log's next `seq` is this one,
    /// and nothing was written.
    Moved {
        /// The log's next `seq`.
        next: u64,
    },
}

impl From<Result<Range<u64>, u64>> for AppendAt {
    /// A backend's answer: the `seq`s the batch got, or the log's next
    /// `seq` when it was not the one expected.
    fn from(r: Result<Range<u64>, u64>) -> Self {
        match r {
            Ok(range) => AppendAt::Appended(range),
            Err(next) => AppendAt::Moved { next },
        }
    }
}

/// A turn or compaction lock on one conversation, held until dropped. In
/// either store the lock dies with the process that holds it, so a crash
/// never wedges a conversation.
pub struct StoreLock(Held);

enum Held {
    File(#[allow(dead_code)] CompactionLock),
    // Boxed: a pooled connection is large, a file handle is not.
    Pg(#[allow(dead_code)] Box<PgLock>),
}

impl fmt::Debug for StoreLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Held::File(_) => f.write_str("StoreLock(file)"),
            Held::Pg(l) => write!(f, "StoreLock({l:?})"),
        }
    }
}

/// Conversations and their logs, in whichever store holds them.
///
/// Ids are exact everywhere but in [`Store::find`], which takes a prefix.
/// A conversation in the trash is not there for any operation.
pub trait Store: Send + Sync + fmt::Debug {
    /// Where the store is, for messages: the workspace folder, or the URL
    /// with its password masked.
    fn location(&self) -> String;

    /// Whether other processes on other machines may use the store at the
    /// same time (PostgreSQL): a caller must then not assume its copy of a
    /// log is the latest.
    fn is_shared(&self) -> bool;

    /// Every conversation, oldest first (by creation time, then id).
    fn list(&self) -> Result<StoreListing, StoreError>;

    /// The conversation whose id is `id`, else the one whose id starts with
    /// it (an error when several do).
    fn find(&self, id: &str) -> Result<ConversationMeta, StoreError>;

    /// The metadata of conversation `id`.
    fn read_meta(&self, id: &str) -> Result<ConversationMeta, StoreError>;

    /// Replace the metadata of conversation `meta.id`.
    fn write_meta(&self, meta: &ConversationMeta) -> Result<(), StoreError>;

    /// Create conversation `meta.id` with that metadata and `records`
    /// (numbered from 0), whole or not at all. An id already taken is
    /// [`StoreError::ConversationExists`], and nothing is written.
    fn create(
        &self,
        meta: &ConversationMeta,
        records: Vec<Record>,
    ) -> Result<Range<u64>, StoreError>;

    /// Every record of conversation `id`, with what the user should know
    /// (lines or rows that are not records, a torn tail set aside).
    fn load(&self, id: &str) -> Result<Loaded, StoreError>;

    /// [`Store::load`] for a command that answers and ends: a snapshot the
    /// load would write (a workspace's, see
    /// [`EventLog::load_leaving_snapshot`]) is left for later and said
    /// due in [`Loaded::snapshot_due`]. A store without snapshots loads as
    /// [`Store::load`] does.
    fn load_leaving_snapshot(&self, id: &str) -> Result<Loaded, StoreError> {
        self.load(id)
    }

    /// Append a batch, giving it the next `seq`s (whatever the records
    /// carry): all of it is written or none. Returns the seqs given.
    fn append(&self, id: &str, records: Vec<Record>) -> Result<Range<u64>, StoreError>;

    /// Append a batch only if the log's next `seq` is `expected`: for a
    /// writer that must not append after records it has not seen.
    fn append_at(
        &self,
        id: &str,
        expected: u64,
        records: Vec<Record>,
    ) -> Result<AppendAt, StoreError>;

    /// The `seq` the next appended record gets.
    fn next_seq(&self, id: &str) -> Result<u64, StoreError>;

    /// The `seq` after the last record written so far, without waiting
    /// for or taking any lock: a batch being written may show in part,
    /// and a torn tail is stepped over, not repaired. For "has the log
    /// grown?" checks that run often (the proxy before each request, open
    /// pages); a writer appends with [`Store::append_at`] to be sure.
    fn peek_next_seq(&self, id: &str) -> Result<u64, StoreError> {
        self.next_seq(id)
    }

    /// Take the turn lock (one agent turn at a time) without waiting;
    /// `None` when another process holds it.
    fn try_turn_lock(&self, id: &str) -> Result<Option<StoreLock>, StoreError>;

    /// Take the compaction lock (one compaction at a time) without
    /// waiting; `None` when another process holds it.
    fn try_compaction_lock(&self, id: &str) -> Result<Option<StoreLock>, StoreError>;

    /// The id of the active conversation, if one is.
    fn active(&self) -> Result<Option<String>, StoreError>;

    /// Make conversation `id` the active one and note that it was used.
    /// Returns its metadata as written.
    fn set_active(&self, id: &str) -> Result<ConversationMeta, StoreError>;

    /// Move conversation `id` to the trash (nothing is deleted). Returns
    /// where it went, for messages.
    fn trash(&self, id: &str) -> Result<String, StoreError>;

    /// The conversations whose metadata `extras` hold `value` at `key`
    /// (the proxy's key of a client, say), oldest first. `key` is a
    /// top-level key of `extras`, or a JSON Pointer into it when it starts
    /// with `/` (`/proxy/key`). Conversations whose metadata cannot be read
    /// are left out.
    fn find_by_extra(&self, key: &str, value: &Value) -> Result<Vec<ConversationMeta>, StoreError> {
        Ok(self
            .list()?
            .conversations
            .into_iter()
            .filter(|m| extra_matches(m, key, value))
            .collect())
    }
}

/// Whether `meta`'s extras hold `value` at `key` (see
/// [`Store::find_by_extra`]).
pub(crate) fn extra_matches(meta: &ConversationMeta, key: &str, value: &Value) -> bool {
    let found = match key.strip_prefix('/') {
        Some(path) => {
            let (first, rest) = path.split_once('/').unwrap_or((path, ""));
            // JSON Pointer escapes: `~1` is `/`, `~0` is `~`.
            let first = first.replace("~1", "/").replace("~0", "~");
            meta.extras.get(&first).and_then(|v| {
                if rest.is_empty() {
                    Some(v)
                } else {
                    v.pointer(&format!("/{rest}"))
                }
            })
        }
        None => meta.extras.get(key),
    };
    found == Some(value)
}

/// Create a conversation with a fresh id in `store`: titled, imported from
/// somewhere, with format extras, holding `records`. Returns its metadata.
pub fn create_new(
    store: &dyn Store,
    title: Option<String>,
    imported_from: Option<ImportSource>,
    extras: Object,
    records: Vec<Record>,
) -> Result<ConversationMeta, StoreError> {
    let ts = now();
    let mut meta = ConversationMeta {
        id: workspace::new_id(),
        title,
        created_at: ts.clone(),
        last_used_at: ts,
        imported_from,
        extras,
    };
    // Ids carry a random suffix: a clash (two in the same second, or a
    // copied-in conversation) is rare, and the next try is another id.
    for _ in 0..16 {
        match store.create(&meta, records.clone()) {
            Err(StoreError::ConversationExists { .. }) => meta.id = workspace::new_id(),
            Ok(_) => return Ok(meta),
            Err(e) => return Err(e),
        }
    }
    store.create(&meta, records).map(|_| meta)
}

impl Workspace {
    /// The folder of conversation `id` (exact id), if it is there.
    fn folder_of(&self, id: &str) -> Result<PathBuf, StoreError> {
        self.folder(id)?.ok_or_else(|| StoreError::NotFound {
            id: id.to_owned(),
            workspace: self.root().to_owned(),
        })
    }

    /// The folder of conversation `id` for a write: the caller found it
    /// before, so a folder missing now went away meanwhile (`rm`), and the
    /// error says so.
    fn folder_to_write(&self, id: &str) -> Result<PathBuf, StoreError> {
        let dir = self.root().join("conversations").join(id);
        self.folder(id)?.ok_or(StoreError::Vanished { dir })
    }

    /// The folder of conversation `id` when it is there (`id` checked).
    fn folder(&self, id: &str) -> Result<Option<PathBuf>, StoreError> {
        workspace::check_id(id)?;
        let dir = self.root().join("conversations").join(id);
        Ok(dir.is_dir().then_some(dir))
    }

    fn log_to_write(&self, id: &str) -> Result<EventLog, StoreError> {
        self.folder_to_write(id).map(EventLog::new)
    }
}

impl Store for Workspace {
    fn location(&self) -> String {
        self.root().display().to_string()
    }

    fn is_shared(&self) -> bool {
        false
    }

    fn list(&self) -> Result<StoreListing, StoreError> {
        let listing = Workspace::list(self)?;
        Ok(StoreListing {
            conversations: listing.conversations.into_iter().map(|c| c.meta).collect(),
            broken: listing
                .broken
                .into_iter()
                .map(|b| BrokenMeta {
                    id: b.id,
                    error: b.error,
                })
                .collect(),
        })
    }

    fn find(&self, id: &str) -> Result<ConversationMeta, StoreError> {
        self.get(id).map(|c| c.meta)
    }

    fn read_meta(&self, id: &str) -> Result<ConversationMeta, StoreError> {
        meta::read(&self.folder_of(id)?)
    }

    fn write_meta(&self, meta: &ConversationMeta) -> Result<(), StoreError> {
        meta::write(&self.folder_to_write(&meta.id)?, meta)
    }

    fn create(
        &self,
        meta: &ConversationMeta,
        records: Vec<Record>,
    ) -> Result<Range<u64>, StoreError> {
        let n = records.len() as u64;
        self.create_as(meta, records)?;
        Ok(0..n)
    }

    fn load(&self, id: &str) -> Result<Loaded, StoreError> {
        EventLog::new(self.folder_of(id)?).load()
    }

    fn load_leaving_snapshot(&self, id: &str) -> Result<Loaded, StoreError> {
        EventLog::new(self.folder_of(id)?).load_leaving_snapshot()
    }

    fn append(&self, id: &str, records: Vec<Record>) -> Result<Range<u64>, StoreError> {
        self.log_to_write(id)?.append(records)
    }

    fn append_at(
        &self,
        id: &str,
        expected: u64,
        records: Vec<Record>,
    ) -> Result<AppendAt, StoreError> {
        Ok(self.log_to_write(id)?.append_at(expected, records)?.into())
    }

    fn next_seq(&self, id: &str) -> Result<u64, StoreError> {
        self.log_to_write(id)?.next_seq()
    }

    fn peek_next_seq(&self, id: &str) -> Result<u64, StoreError> {
        EventLog::new(self.folder_of(id)?).peek_next_seq()
    }

    fn try_turn_lock(&self, id: &str) -> Result<Option<StoreLock>, StoreError> {
        Ok(self
            .log_to_write(id)?
            .try_turn_lock()?
            .map(|l| StoreLock(Held::File(l))))
    }

    fn try_compaction_lock(&self, id: &str) -> Result<Option<StoreLock>, StoreError> {
        Ok(self
            .log_to_write(id)?
            .try_compaction_lock()?
            .map(|l| StoreLock(Held::File(l))))
    }

    fn active(&self) -> Result<Option<String>, StoreError> {
        Ok(Workspace::active(self))
    }

    fn set_active(&self, id: &str) -> Result<ConversationMeta, StoreError> {
        let dir = self.folder_to_write(id)?;
        let meta = meta::read(&dir)?;
        let mut c = Conversation { dir, meta };
        Workspace::set_active(self, &mut c)?;
        Ok(c.meta)
    }

    fn trash(&self, id: &str) -> Result<String, StoreError> {
        let dir = self.folder_to_write(id)?;
        Ok(self.remove_folder(id, &dir)?.display().to_string())
    }
}

impl Store for PgStore {
    fn location(&self) -> String {
        self.url().to_owned()
    }

    fn is_shared(&self) -> bool {
        true
    }

    fn list(&self) -> Result<StoreListing, StoreError> {
        PgStore::list(self)
    }

    fn find(&self, id: &str) -> Result<ConversationMeta, StoreError> {
        self.get(id)
    }

    fn read_meta(&self, id: &str) -> Result<ConversationMeta, StoreError> {
        PgStore::read_meta(self, id)
    }

    fn write_meta(&self, meta: &ConversationMeta) -> Result<(), StoreError> {
        PgStore::write_meta(self, meta)
    }

    fn create(
        &self,
        meta: &ConversationMeta,
        records: Vec<Record>,
    ) -> Result<Range<u64>, StoreError> {
        workspace::check_id(&meta.id)?;
        self.create_with(meta, records)
    }

    fn load(&self, id: &str) -> Result<Loaded, StoreError> {
        PgStore::load(self, id)
    }

    fn append(&self, id: &str, records: Vec<Record>) -> Result<Range<u64>, StoreError> {
        PgStore::append(self, id, records)
    }

    fn append_at(
        &self,
        id: &str,
        expected: u64,
        records: Vec<Record>,
    ) -> Result<AppendAt, StoreError> {
        Ok(self.append_if(id, Some(expected), records)?.into())
    }

    fn next_seq(&self, id: &str) -> Result<u64, StoreError> {
        PgStore::next_seq(self, id)
    }

    fn try_turn_lock(&self, id: &str) -> Result<Option<StoreLock>, StoreError> {
        Ok(PgStore::try_turn_lock(self, id)?.map(|l| StoreLock(Held::Pg(Box::new(l)))))
    }

    fn try_compaction_lock(&self, id: &str) -> Result<Option<StoreLock>, StoreError> {
        Ok(PgStore::try_compaction_lock(self, id)?.map(|l| StoreLock(Held::Pg(Box::new(l)))))
    }

    fn active(&self) -> Result<Option<String>, StoreError> {
        PgStore::active(self)
    }

    fn set_active(&self, id: &str) -> Result<ConversationMeta, StoreError> {
        PgStore::set_active(self, id)
    }

    fn trash(&self, id: &str) -> Result<String, StoreError> {
        PgStore::trash(self, id)?;
        Ok(format!("the trash of {}", self.url()))
    }

    fn find_by_extra(&self, key: &str, value: &Value) -> Result<Vec<ConversationMeta>, StoreError> {
        // The metadata text holds a string, number or boolean exactly as
        // it is serialized alone: the database narrows the rows down to
        // those holding that text, and the match is made here.
        let needle = match value {
            Value::String(_) | Value::Number(_) | Value::Bool(_) => value.to_string(),
            _ => String::new(),
        };
        Ok(self
            .metas_containing(&needle)?
            .into_iter()
            .filter(|m| extra_matches(m, key, value))
            .collect())
    }
}
