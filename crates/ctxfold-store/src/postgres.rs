//! The PostgreSQL store: conversations shared by several processes or
//! machines (proxy replicas), with the file store's guarantees (SPEC §2,
//! §15): append-only logs, one writer at a time per conversation, batches
//! written whole or not at all, records kept byte for byte, one compaction
//! at a time.
//!
//! - Records are stored as the very line the file store writes
//!   ([`Record::to_json_line`]) and read back through the same
//!   [`LineReader`], so a record of a type this version does not know, or
//!   with fields it does not know, round-trips unchanged.
//! - An append is one transaction. Its `seq` numbers come from a counter on
//!   the conversation's row, taken under that row's lock (`FOR UPDATE`):
//!   appenders of one conversation queue there, so `seq` is gapless and
//!   unique, and a batch that fails leaves the counter as it was.
//! - The compaction and turn locks are session-level advisory locks held on
//!   a connection of their own: the server drops them when that connection
//!   ends, so a replica that dies never wedges a conversation.
//! - The schema is created and migrated on first use, inside a transaction
//!   under an advisory lock (concurrent first users queue); a database whose
//!   schema is newer than this binary is refused with a clear error.
//!
//! Tables (all prefixed `ctxfold_`, so the store can share a database and
//! follows the connection's `search_path`): `ctxfold_schema_version`,
//! `ctxfold_conversations` (id, the `meta.json` text, created, the `seq`
//! counter, trashed), `ctxfold_events` (conversation, seq, type, the line),
//! `ctxfold_settings` (the active conversation).
//!
//! Connections are plain TCP or unix sockets, without TLS (`sslmode=require`
//! is refused with a message saying so).

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use ::postgres::config::{Host, SslMode};
use ::postgres::error::SqlState;
use ::postgres::fallible_iterator::FallibleIterator;
use ::postgres::types::ToSql;
use ::postgres::{Client, Config, IsolationLevel, NoTls, Transaction};
use ctxfold_core::Record;
use ctxfold_core::log::LineReader;
use r2d2_postgres::PostgresConnectionManager;
use r2d2_postgres::r2d2;

use crate::event_log::Loaded;
use crate::meta::ConversationMeta;
use crate::{StoreError, now};

/// The form of a PostgreSQL store URL, for messages and docs.
pub const URL_FORM: &str = "postgres://user[:password]@host[:port]/database";

/// The schema migrations, oldest first: `(version, SQL)`. Each runs once,
/// in the transaction that records its version. Never edit one that has
/// shipped: add the next.
const MIGRATIONS: &[(u32, &str)] = &[(
    1,
    r#"
CREATE TABLE ctxfold_conversations (
    id          text PRIMARY KEY,
    -- The conversation's meta.json, as the file store writes it (text, not
    -- jsonb: jsonb would reorder the keys of `extras`).
    meta        text NOT NULL,
    created_at  text NOT NULL,
    -- The next record's seq: taken and advanced under the row's lock.
    next_seq    bigint NOT NULL DEFAULT 0 CHECK (next_seq >= 0),
    trashed_at  timestamptz,
    inserted_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE ctxfold_events (
    conversation_id text NOT NULL REFERENCES ctxfold_conversations (id),
    seq             bigint NOT NULL CHECK (seq >= 0),
    type            text NOT NULL,
    -- The record's JSON line, byte for byte as the file store writes it.
    line            text NOT NULL,
    appended_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (conversation_id, seq)
);
CREATE TABLE ctxfold_settings (
    key   text PRIMARY KEY,
    value text NOT NULL
);
"#,
)];

/// The newest schema version this binary knows.
pub const SCHEMA_VERSION: u32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// Advisory lock key spaces (the first of the two `int4` keys), so that
/// ctxfold's locks never meet each other's: "cxf" and a number.
const LOCK_MIGRATE: i32 = 0x6378_6600;
const LOCK_COMPACTION: i32 = 0x6378_6601;
const LOCK_TURN: i32 = 0x6378_6602;

/// Records inserted per statement: one round trip for a typical batch,
/// bounded parameter size for an import.
const INSERT_CHUNK: usize = 1000;

/// The `ctxfold_settings` key of the active conversation.
const ACTIVE_KEY: &str = "active";

type Manager = PostgresConnectionManager<NoTls>;
type Conn = r2d2::PooledConnection<Manager>;

/// How a [`PgStore`] connects.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// Connections kept at most. Each held compaction or turn lock keeps
    /// one for as long as it is held.
    pub pool_size: u32,
    /// How long to wait for the server to answer a new connection, unless
    /// the URL says (`connect_timeout=`).
    pub connect_timeout: Duration,
    /// How long an operation waits for a free connection.
    pub wait_timeout: Duration,
    /// How long one statement may run before the server cancels it (an
    /// append waiting on a row lock that a hung session holds), unless the
    /// URL sets `options`.
    pub statement_timeout: Duration,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            pool_size: 16,
            connect_timeout: Duration::from_secs(10),
            wait_timeout: Duration::from_secs(30),
            statement_timeout: Duration::from_secs(60),
        }
    }
}

/// Conversations and their logs in a PostgreSQL database. Cheap to clone:
/// clones share one connection pool.
#[derive(Clone)]
pub struct PgStore {
    pool: r2d2::Pool<Manager>,
    config: Config,
    target: Target,
    options: PgOptions,
}

/// Where a store connects, for messages: never the password.
#[derive(Clone)]
struct Target {
    /// The URL, password masked.
    store: String,
    /// `host:port`.
    addr: String,
    user: String,
    password: PasswordFrom,
}

/// Where the password came from, which an authentication error names.
#[derive(Clone, Debug)]
enum PasswordFrom {
    Url,
    Env,
    File(PathBuf),
    /// None; with why a password file was not used, when one was there.
    Nowhere(Option<String>),
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // By hand: the config holds the password.
        f.debug_struct("PgStore")
            .field("url", &self.target.store)
            .field("password_from", &self.target.password_label())
            .field("pool_size", &self.options.pool_size)
            .finish()
    }
}

/// What [`PgStore::list`] found.
#[derive(Debug, Default)]
pub struct PgListing {
    /// The conversations (not in the trash), oldest first.
    pub conversations: Vec<ConversationMeta>,
    /// Conversations whose metadata could not be read: one bad row hides
    /// no other conversation.
    pub broken: Vec<PgBroken>,
}

/// A conversation whose metadata could not be read.
#[derive(Debug)]
pub struct PgBroken {
    /// Its id.
    pub id: String,
    /// Why it could not be read.
    pub error: StoreError,
}

/// A compaction or turn lock on one conversation, held until dropped.
///
/// It is a session-level advisory lock on a pooled connection that this
/// guard keeps: dropping it unlocks and gives the connection back, and
/// when the process dies the server ends the session and the lock with it.
/// The key is the conversation id's `hashtext`: two ids that hash alike
/// share a lock, which can only make one wait (report busy), never let two
/// in.
pub struct PgLock {
    conn: Option<Conn>,
    space: i32,
    id: String,
}

impl fmt::Debug for PgLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.space == LOCK_TURN {
            "turn"
        } else {
            "compaction"
        };
        f.debug_struct("PgLock")
            .field("kind", &kind)
            .field("id", &self.id)
            .finish()
    }
}

impl PgLock {
    /// Whether the lock is still held. A lost connection (a network cut, a
    /// server restart) loses the lock with it: a holder about to act on
    /// the lock after a long wait (a slow summary) can check here first.
    pub fn is_held(&mut self) -> bool {
        let Some(conn) = self.conn.as_mut() else {
            return false;
        };
        // Two-key advisory locks show as classid, objid and objsubid 2.
        conn.query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_locks
                            WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
                              AND classid = $1::int4::oid AND objid = hashtext($2)::oid
                              AND objsubid = 2)",
            &[&self.space, &self.id],
        )
        .ok()
        .and_then(|row| row.try_get::<_, bool>(0).ok())
        .unwrap_or(false)
    }
}

impl Drop for PgLock {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let released = conn
            .query_one(
                "SELECT pg_advisory_unlock($1, hashtext($2))",
                &[&self.space, &self.id],
            )
            .ok()
            .and_then(|row| row.try_get::<_, bool>(0).ok());
        if released != Some(true) {
            // The pool must not lend out a connection still holding it. A
            // lost connection (the usual cause) is dropped by the pool.
            let _ = conn.batch_execute("SELECT pg_advisory_unlock_all()");
        }
    }
}

impl PgStore {
    /// Connect to the database at `url` (`postgres://user[:password]@host[:port]/database`)
    /// with the default [`PgOptions`], and create or migrate the schema.
    ///
    /// The password comes from the URL, else `PGPASSWORD`, else the
    /// password file (`PGPASSFILE`, else `~/.pgpass`; lines
    /// `host:port:database:user:password`, `*` matching anything).
    pub fn connect(url: &str) -> Result<PgStore, StoreError> {
        Self::connect_with(url, &PgOptions::default())
    }

    /// [`PgStore::connect`] with options.
    pub fn connect_with(url: &str, options: &PgOptions) -> Result<PgStore, StoreError> {
        let store = mask_url(url);
        let mut config = parse_url(url, &store)?;
        let password = supply_password(&mut config);
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.connect_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("ctxfold");
        }
        // A session that hangs holding a conversation's row lock must not
        // hang every writer behind it: their statements end in an error.
        if config.get_options().is_none() {
            config.options(&format!(
                "-c statement_timeout={}",
                options.statement_timeout.as_millis().max(1)
            ));
        }
        let target = Target {
            store,
            addr: addr_of(&config),
            user: config.get_user().unwrap_or_default().to_owned(),
            password,
        };
        // One connection made directly, not by the pool: its error says
        // what is wrong (the pool's would only say it timed out).
        let mut first = config.connect(NoTls).map_err(|e| target.connect_error(e))?;
        migrate_client(&mut first, &target)?;
        drop(first);
        let pool = r2d2::Pool::builder()
            .max_size(options.pool_size.max(1))
            .min_idle(Some(0))
            .connection_timeout(options.wait_timeout)
            .build_unchecked(PostgresConnectionManager::new(config.clone(), NoTls));
        Ok(PgStore {
            pool,
            config,
            target,
            options: options.clone(),
        })
    }

    /// The store's URL with the password masked, for messages.
    pub fn url(&self) -> &str {
        &self.target.store
    }

    /// Create or migrate the schema to [`SCHEMA_VERSION`] (done by
    /// [`PgStore::connect`] already; running it again changes nothing).
    /// Returns the version. A schema newer than this binary is an error.
    pub fn migrate(&self) -> Result<u32, StoreError> {
        let mut conn = self.conn()?;
        migrate_client(&mut conn, &self.target)
    }

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
    pub fn list(&self) -> Result<PgListing, StoreError> {
        let mut conn = self.conn()?;
        let rows = conn
            .query(
                "SELECT id, meta FROM ctxfold_conversations WHERE trashed_at IS NULL
                 ORDER BY created_at COLLATE \"C\", id COLLATE \"C\"",
                &[],
            )
            .map_err(|e| self.db("list conversations", e))?;
        let mut out = PgListing::default();
        for row in rows {
            let (id, text) = self.id_and_meta(&row)?;
            match self.parse_meta(&id, &text) {
                Ok(meta) => out.conversations.push(meta),
                Err(error) => out.broken.push(PgBroken { id, error }),
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
        let mut conn = self.conn()?;
        let row = conn
            .query_opt(
                "SELECT id, meta FROM ctxfold_conversations WHERE id = $1 AND trashed_at IS NULL",
                &[&id],
            )
            .map_err(|e| self.db(format!("read conversation `{id}`"), e))?
            .ok_or_else(|| self.no_conversation(id))?;
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

    /// Append records to conversation `id`, giving them the next `seq`
    /// numbers (whatever `seq` they carry). Returns the `seq` of the first
    /// and one past the last.
    ///
    /// One transaction: the whole batch is written, or nothing. Appenders
    /// of one conversation take turns on its row lock, so seqs are gapless
    /// and unique across processes. A conversation in the trash or missing
    /// is an error ([`StoreError::Gone`]), and nothing is written.
    pub fn append(
        &self,
        id: &str,
        records: impl IntoIterator<Item = Record>,
    ) -> Result<Range<u64>, StoreError> {
        match self.append_if(id, None, records)? {
            Ok(range) => Ok(range),
            // Without an expected seq every next seq is accepted.
            Err(next) => Ok(next..next),
        }
    }

    /// The `seq` the next record appended to conversation `id` gets.
    pub fn next_seq(&self, id: &str) -> Result<u64, StoreError> {
        let mut conn = self.conn()?;
        let row = conn
            .query_opt(
                "SELECT next_seq FROM ctxfold_conversations WHERE id = $1 AND trashed_at IS NULL",
                &[&id],
            )
            .map_err(|e| self.db(format!("read conversation `{id}`"), e))?
            .ok_or_else(|| self.no_conversation(id))?;
        let next: i64 = row
            .try_get(0)
            .map_err(|e| self.db(format!("read conversation `{id}`"), e))?;
        Ok(u64::try_from(next).unwrap_or(0))
    }

    /// Append as [`PgStore::append`] does, but when `expected` is given only
    /// if the conversation's next `seq` is that one (checked under the row
    /// lock); `Ok(Err(next))` means it is `next`, and nothing was written.
    pub fn append_if(
        &self,
        id: &str,
        expected: Option<u64>,
        records: impl IntoIterator<Item = Record>,
    ) -> Result<Result<Range<u64>, u64>, StoreError> {
        // Collected before the transaction: the row lock is held only while
        // writing.
        let records: Vec<Record> = records.into_iter().collect();
        let what = || format!("append to conversation `{id}`");
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(|e| self.db(what(), e))?;
        let row = tx
            .query_opt(
                "SELECT next_seq FROM ctxfold_conversations
                 WHERE id = $1 AND trashed_at IS NULL FOR UPDATE",
                &[&id],
            )
            .map_err(|e| self.db(what(), e))?
            .ok_or_else(|| self.gone(id))?;
        let next: i64 = row.try_get(0).map_err(|e| self.db(what(), e))?;
        let next = u64::try_from(next).unwrap_or(0);
        if expected.is_some_and(|e| e != next) {
            // Dropping the transaction rolls it back and frees the row.
            return Ok(Err(next));
        }
        let range = self.write_batch(&mut tx, id, next, records)?;
        tx.commit().map_err(|e| self.db(what(), e))?;
        Ok(Ok(range))
    }

    /// Number `records` from `next`, insert them and advance the counter.
    /// The caller holds the conversation's row (created or locked in `tx`).
    fn write_batch(
        &self,
        tx: &mut Transaction<'_>,
        id: &str,
        next: u64,
        records: Vec<Record>,
    ) -> Result<Range<u64>, StoreError> {
        let what = || format!("append to conversation `{id}`");
        let mut seq = next;
        let mut chunk = Chunk::default();
        for mut r in records {
            // Room for "one past the last" in a bigint column.
            if seq >= i64::MAX as u64 {
                return Err(StoreError::Database {
                    what: format!(
                        "{}: seq {seq} is the last a database store holds; nothing was written",
                        what()
                    ),
                    source: None,
                });
            }
            r.seq = seq;
            // The one serialization the file store uses: byte-identical lines.
            chunk.push(seq as i64, r.body.type_name().to_owned(), r.to_json_line());
            seq += 1;
            if chunk.len() == INSERT_CHUNK {
                chunk.insert(tx, id).map_err(|e| self.db(what(), e))?;
            }
        }
        if !chunk.is_empty() {
            chunk.insert(tx, id).map_err(|e| self.db(what(), e))?;
        }
        if seq != next {
            tx.execute(
                "UPDATE ctxfold_conversations SET next_seq = $2 WHERE id = $1",
                &[&id, &(seq as i64)],
            )
            .map_err(|e| self.db(what(), e))?;
        }
        Ok(next..seq)
    }

    /// Load every record of conversation `id`. A row that is not a record
    /// is skipped with a warning (and stays in the database), as the file
    /// store skips such a line.
    pub fn load(&self, id: &str) -> Result<Loaded, StoreError> {
        self.load_from(id, 0)
    }

    /// Load the records of conversation `id` whose `seq` is `from_seq` or
    /// more: what was appended since a log whose `next_seq()` is
    /// `from_seq` was loaded.
    pub fn load_from(&self, id: &str, from_seq: u64) -> Result<Loaded, StoreError> {
        let what = || format!("read conversation `{id}`");
        let mut conn = self.conn()?;
        // One snapshot: the rows read are those of committed batches only.
        let mut tx = conn
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(|e| self.db(what(), e))?;
        self.require_live(&mut tx, id)?;
        let from = i64::try_from(from_seq).unwrap_or(i64::MAX);
        let params: [&(dyn ToSql + Sync); 2] = [&id, &from];
        let mut rows = tx
            .query_raw(
                "SELECT seq, line FROM ctxfold_events
                 WHERE conversation_id = $1 AND seq >= $2 ORDER BY seq",
                params,
            )
            .map_err(|e| self.db(what(), e))?;
        let mut reader = LineReader::new();
        let mut seqs = Vec::new();
        let mut buf = String::new();
        while let Some(row) = rows.next().map_err(|e| self.db(what(), e))? {
            let seq: i64 = row.try_get(0).map_err(|e| self.db(what(), e))?;
            let line: &str = row.try_get(1).map_err(|e| self.db(what(), e))?;
            // The reader's line policy, as for a file: every row is a
            // complete line.
            buf.clear();
            buf.push_str(line);
            buf.push('\n');
            reader.push(buf.as_bytes());
            seqs.push(seq);
        }
        drop(rows);
        tx.commit().map_err(|e| self.db(what(), e))?;
        let read = reader.finish();
        let warnings = read
            .notes
            .into_iter()
            .map(|n| {
                let seq = n
                    .line
                    .checked_sub(1)
                    .and_then(|i| seqs.get(i))
                    .map_or_else(|| "?".to_owned(), |s| s.to_string());
                let kept = if n.skipped {
                    "; the row stays in the database"
                } else {
                    ""
                };
                format!(
                    "{}: conversation `{id}`, seq {seq}: {}{kept}",
                    self.target.store, n.message
                )
            })
            .collect();
        Ok(Loaded {
            records: read.records,
            warnings,
            torn: None,
        })
    }

    /// How many records conversation `id` holds.
    pub fn len(&self, id: &str) -> Result<u64, StoreError> {
        self.counts(id).map(|(len, _)| len)
    }

    /// The `seq` of the last record of conversation `id`, if it has any.
    pub fn last_seq(&self, id: &str) -> Result<Option<u64>, StoreError> {
        self.counts(id).map(|(_, last)| last)
    }

    fn counts(&self, id: &str) -> Result<(u64, Option<u64>), StoreError> {
        let what = || format!("count the records of `{id}`");
        let mut conn = self.conn()?;
        let row = conn
            .query_opt(
                "SELECT count(e.seq), max(e.seq) FROM ctxfold_conversations c
                 LEFT JOIN ctxfold_events e ON e.conversation_id = c.id
                 WHERE c.id = $1 AND c.trashed_at IS NULL GROUP BY c.id",
                &[&id],
            )
            .map_err(|e| self.db(what(), e))?
            .ok_or_else(|| self.no_conversation(id))?;
        let len: i64 = row.try_get(0).map_err(|e| self.db(what(), e))?;
        let last: Option<i64> = row.try_get(1).map_err(|e| self.db(what(), e))?;
        Ok((
            u64::try_from(len).unwrap_or(0),
            last.and_then(|s| u64::try_from(s).ok()),
        ))
    }

    /// Take the compaction lock of conversation `id` without waiting:
    /// `Ok(None)` means another process (on any machine) is compacting it
    /// now. A conversation in the trash or missing is an error.
    pub fn try_compaction_lock(&self, id: &str) -> Result<Option<PgLock>, StoreError> {
        self.try_lock(LOCK_COMPACTION, id)
    }

    /// Take the turn lock of conversation `id` without waiting: one agent
    /// turn at a time. `Ok(None)` means another process runs a turn in it.
    pub fn try_turn_lock(&self, id: &str) -> Result<Option<PgLock>, StoreError> {
        self.try_lock(LOCK_TURN, id)
    }

    fn try_lock(&self, space: i32, id: &str) -> Result<Option<PgLock>, StoreError> {
        let what = || format!("lock conversation `{id}`");
        let mut conn = self.conn()?;
        // NULL when the conversation is not there: no lock taken then.
        let row = conn
            .query_one(
                "SELECT CASE WHEN EXISTS (SELECT 1 FROM ctxfold_conversations
                                          WHERE id = $2 AND trashed_at IS NULL)
                        THEN pg_try_advisory_lock($1, hashtext($2)) END",
                &[&space, &id],
            )
            .map_err(|e| self.db(what(), e))?;
        let got: Option<bool> = row.try_get(0).map_err(|e| self.db(what(), e))?;
        match got {
            None => Err(self.gone(id)),
            Some(false) => Ok(None),
            Some(true) => Ok(Some(PgLock {
                conn: Some(conn),
                space,
                id: id.to_owned(),
            })),
        }
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

    /// A connection from the pool.
    fn conn(&self) -> Result<Conn, StoreError> {
        self.pool.get().map_err(|e| {
            // The pool only says it timed out: a direct attempt says why.
            match self.config.connect(NoTls) {
                Err(ce) => self.target.connect_error(ce),
                Ok(_) => StoreError::Database {
                    what: format!(
                        "no free connection to {} within {} s: all {} are in use",
                        self.target.store,
                        self.options.wait_timeout.as_secs(),
                        self.options.pool_size
                    ),
                    source: Some(Box::new(e)),
                },
            }
        })
    }

    /// Fails unless conversation `id` is there and not in the trash.
    fn require_live(&self, tx: &mut Transaction<'_>, id: &str) -> Result<(), StoreError> {
        let row = tx
            .query_opt(
                "SELECT 1 FROM ctxfold_conversations WHERE id = $1 AND trashed_at IS NULL",
                &[&id],
            )
            .map_err(|e| self.db(format!("read conversation `{id}`"), e))?;
        match row {
            Some(_) => Ok(()),
            None => Err(self.no_conversation(id)),
        }
    }

    fn id_and_meta(&self, row: &::postgres::Row) -> Result<(String, String), StoreError> {
        let id: String = row
            .try_get(0)
            .map_err(|e| self.db("read a conversation", e))?;
        let text: String = row
            .try_get(1)
            .map_err(|e| self.db(format!("read conversation `{id}`"), e))?;
        Ok((id, text))
    }

    fn parse_meta(&self, id: &str, text: &str) -> Result<ConversationMeta, StoreError> {
        serde_json::from_str(text).map_err(|e| StoreError::BadMeta {
            id: id.to_owned(),
            store: self.target.store.clone(),
            detail: e.to_string(),
        })
    }

    /// The metadata as the file store's `meta.json` holds it.
    fn meta_text(&self, meta: &ConversationMeta) -> Result<String, StoreError> {
        let mut text = serde_json::to_string_pretty(meta).map_err(|e| StoreError::BadMeta {
            id: meta.id.clone(),
            store: self.target.store.clone(),
            detail: e.to_string(),
        })?;
        text.push('\n');
        Ok(text)
    }

    fn db(&self, what: impl fmt::Display, e: ::postgres::Error) -> StoreError {
        StoreError::Database {
            what: format!("{what} in {}", self.target.store),
            source: Some(Box::new(e)),
        }
    }

    fn no_conversation(&self, id: &str) -> StoreError {
        StoreError::NoConversation {
            id: id.to_owned(),
            store: self.target.store.clone(),
        }
    }

    fn gone(&self, id: &str) -> StoreError {
        StoreError::Gone {
            id: id.to_owned(),
            store: self.target.store.clone(),
        }
    }
}

/// One multi-row insert's worth of records, as column arrays.
#[derive(Default)]
struct Chunk {
    seqs: Vec<i64>,
    types: Vec<String>,
    lines: Vec<String>,
}

impl Chunk {
    fn push(&mut self, seq: i64, kind: String, line: String) {
        self.seqs.push(seq);
        self.types.push(kind);
        self.lines.push(line);
    }

    fn len(&self) -> usize {
        self.seqs.len()
    }

    fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }

    /// Insert and empty: one statement, one round trip.
    fn insert(&mut self, tx: &mut Transaction<'_>, id: &str) -> Result<(), ::postgres::Error> {
        tx.execute(
            "INSERT INTO ctxfold_events (conversation_id, seq, type, line)
             SELECT $1, s, t, l FROM unnest($2::bigint[], $3::text[], $4::text[]) AS u (s, t, l)",
            &[&id, &self.seqs, &self.types, &self.lines],
        )?;
        self.seqs.clear();
        self.types.clear();
        self.lines.clear();
        Ok(())
    }
}

/// Bring the schema to [`SCHEMA_VERSION`] over `client`.
fn migrate_client(client: &mut Client, target: &Target) -> Result<u32, StoreError> {
    let db = |what: &str, e: ::postgres::Error| StoreError::Database {
        what: format!("{what} in {}", target.store),
        source: Some(Box::new(e)),
    };
    let too_new = |found: u32| StoreError::SchemaTooNew {
        store: target.store.clone(),
        found,
        supported: SCHEMA_VERSION,
    };
    // Without DDL or a lock when it is up to date: every connect checks,
    // and a role that may not create tables can still use the store.
    if let Some(found) = schema_version(client).map_err(|e| db("read the schema version", e))? {
        if found == SCHEMA_VERSION {
            return Ok(found);
        }
        if found > SCHEMA_VERSION {
            return Err(too_new(found));
        }
    }
    let what = "create or migrate the ctxfold tables";
    let mut tx = client.transaction().map_err(|e| db(what, e))?;
    // Concurrent first users queue here; the lock ends with the transaction.
    tx.execute("SELECT pg_advisory_xact_lock($1, 0)", &[&LOCK_MIGRATE])
        .map_err(|e| db(what, e))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS ctxfold_schema_version (
             version    integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         )",
    )
    .map_err(|e| db(what, e))?;
    let found: i32 = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM ctxfold_schema_version",
            &[],
        )
        .and_then(|row| row.try_get(0))
        .map_err(|e| db(what, e))?;
    let found = u32::try_from(found).unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(too_new(found));
    }
    for &(version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
        let step = format!("migrate the ctxfold tables to version {version}");
        tx.batch_execute(sql).map_err(|e| db(&step, e))?;
        tx.execute(
            "INSERT INTO ctxfold_schema_version (version) VALUES ($1)",
            &[&(version as i32)],
        )
        .map_err(|e| db(&step, e))?;
    }
    tx.commit().map_err(|e| db(what, e))?;
    Ok(SCHEMA_VERSION)
}

/// The schema version recorded in the database; `None` when there is no
/// version table yet.
fn schema_version(client: &mut Client) -> Result<Option<u32>, ::postgres::Error> {
    let exists: bool = client
        .query_one(
            "SELECT to_regclass('ctxfold_schema_version') IS NOT NULL",
            &[],
        )?
        .try_get(0)?;
    if !exists {
        return Ok(None);
    }
    let v: i32 = client
        .query_one(
            "SELECT coalesce(max(version), 0) FROM ctxfold_schema_version",
            &[],
        )?
        .try_get(0)?;
    Ok(Some(u32::try_from(v).unwrap_or(0)))
}

impl Target {
    fn password_label(&self) -> &'static str {
        match self.password {
            PasswordFrom::Url => "url",
            PasswordFrom::Env => "PGPASSWORD",
            PasswordFrom::File(_) => "password file",
            PasswordFrom::Nowhere(_) => "none",
        }
    }

    /// What a failed connection means, in words: wrong password, server
    /// not there, no such database.
    fn connect_error(&self, e: ::postgres::Error) -> StoreError {
        if let Some(db) = e.as_db_error() {
            let code = db.code();
            if *code == SqlState::INVALID_PASSWORD {
                let detail = match &self.password {
                    PasswordFrom::Url => "the password in the URL was refused".to_owned(),
                    PasswordFrom::Env => "the password in PGPASSWORD was refused".to_owned(),
                    PasswordFrom::File(p) => {
                        format!("the password from {} was refused", p.display())
                    }
                    PasswordFrom::Nowhere(_) => "the server refused the login".to_owned(),
                };
                return StoreError::AuthFailed {
                    user: self.user.clone(),
                    addr: self.addr.clone(),
                    detail,
                };
            }
            if *code == SqlState::INVALID_CATALOG_NAME {
                // The server's message says it all ("database \"x\" does not exist").
                return StoreError::Database {
                    what: format!(
                        "cannot use {}: {}; create it, or name another in the URL",
                        self.store,
                        db.message()
                    ),
                    source: None,
                };
            }
            return StoreError::Database {
                what: format!("PostgreSQL at {} refused the connection", self.addr),
                source: Some(Box::new(e)),
            };
        }
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(c) = cause {
            if c.to_string().contains("password missing") {
                let mut detail = "the server asks for a password and none was given: put it in the URL, set PGPASSWORD, or add a line host:port:database:user:password to ~/.pgpass (or the file PGPASSFILE names)".to_owned();
                if let PasswordFrom::Nowhere(Some(note)) = &self.password {
                    detail.push_str(&format!(" ({note})"));
                }
                return StoreError::AuthFailed {
                    user: self.user.clone(),
                    addr: self.addr.clone(),
                    detail,
                };
            }
            if let Some(io) = c.downcast_ref::<std::io::Error>() {
                return StoreError::Unreachable {
                    addr: self.addr.clone(),
                    reason: io.to_string(),
                };
            }
            cause = c.source();
        }
        if e.to_string().contains("timeout") {
            return StoreError::Unreachable {
                addr: self.addr.clone(),
                reason: "no answer in time".to_owned(),
            };
        }
        StoreError::Database {
            what: format!("cannot connect to {}", self.store),
            source: Some(Box::new(e)),
        }
    }
}

/// Parse a store URL, with messages that say what was expected and never
/// show the password.
fn parse_url(url: &str, masked: &str) -> Result<Config, StoreError> {
    let bad = |detail: String| StoreError::BadUrl {
        url: masked.to_owned(),
        detail,
    };
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(bad(
            "it does not start with postgres:// or postgresql://".to_owned()
        ));
    }
    let config = Config::from_str(url).map_err(|e| {
        let mut text = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        bad(scrub(&text, url))
    })?;
    if config.get_user().is_none_or(str::is_empty) {
        return Err(bad("it names no user (postgres://USER@…)".to_owned()));
    }
    if config.get_hosts().is_empty() {
        return Err(bad("it names no host (…@HOST…)".to_owned()));
    }
    if config.get_dbname().is_none_or(str::is_empty) {
        return Err(bad(
            "it names no database (…/DATABASE at the end)".to_owned()
        ));
    }
    if config.get_ssl_mode() == SslMode::Require {
        return Err(bad(
            "sslmode=require, but this ctxfold connects without TLS (use sslmode=disable or prefer, or a TLS-terminating proxy)".to_owned(),
        ));
    }
    Ok(config)
}

/// `host:port` of each host the config names, for messages.
fn addr_of(config: &Config) -> String {
    let ports = config.get_ports();
    config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            // One port serves every host; none means the default.
            let port = ports
                .get(i)
                .or_else(|| ports.first().filter(|_| ports.len() == 1))
                .copied()
                .unwrap_or(5432);
            match host {
                Host::Tcp(h) if h.contains(':') => format!("[{h}]:{port}"),
                Host::Tcp(h) => format!("{h}:{port}"),
                #[cfg(unix)]
                Host::Unix(p) => format!("{}/.s.PGSQL.{port}", p.display()),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Put a password into `config` when the URL has none: `PGPASSWORD`,
/// else the password file. Says where it came from.
fn supply_password(config: &mut Config) -> PasswordFrom {
    if config.get_password().is_some_and(|p| !p.is_empty()) {
        return PasswordFrom::Url;
    }
    if let Ok(p) = std::env::var("PGPASSWORD")
        && !p.is_empty()
    {
        config.password(p);
        return PasswordFrom::Env;
    }
    let named = std::env::var_os("PGPASSFILE").filter(|p| !p.is_empty());
    let explicit = named.is_some();
    let Some(path) = named
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".pgpass")))
    else {
        return PasswordFrom::Nowhere(None);
    };
    let text = match read_password_file(&path) {
        Ok(Some(text)) => text,
        Ok(None) if !explicit => return PasswordFrom::Nowhere(None),
        Ok(None) => {
            return PasswordFrom::Nowhere(Some(format!(
                "PGPASSFILE names {}, which is not there",
                path.display()
            )));
        }
        Err(note) => return PasswordFrom::Nowhere(Some(note)),
    };
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        // libpq's rule: a socket connection matches `localhost`.
        _ => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or_default().to_owned();
    let user = config.get_user().unwrap_or_default().to_owned();
    match password_file_lookup(&text, &host, &port.to_string(), &db, &user) {
        Some(p) => {
            config.password(p);
            PasswordFrom::File(path)
        }
        None => PasswordFrom::Nowhere(None),
    }
}

/// The password file's text; `Ok(None)` when there is none. One that
/// others may read is not used (libpq's rule), and the note says why.
fn read_password_file(path: &Path) -> Result<Option<String>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("password file {} not read: {e}", path.display())),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "password file {} not used: group or others may read it (chmod 0600 it)",
                path.display()
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    std::fs::read_to_string(path)
        .map(Some)
        .map_err(|e| format!("password file {} not read: {e}", path.display()))
}

/// The password of the first line of a password file that matches:
/// `host:port:database:user:password`, `*` matching anything, `\:` and
/// `\\` for a colon and a backslash, `#` starting a comment line.
fn password_file_lookup(
    text: &str,
    host: &str,
    port: &str,
    db: &str,
    user: &str,
) -> Option<String> {
    text.lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .find_map(|line| {
            let fields = split_password_line(line)?;
            let want = [host, port, db, user];
            let matches = fields[..4]
                .iter()
                .zip(want)
                .all(|(pattern, value)| pattern == "*" || pattern == value);
            matches.then(|| fields[4].clone())
        })
}

/// The five fields of a password file line, unescaped; `None` when it has
/// fewer.
fn split_password_line(line: &str) -> Option<[String; 5]> {
    let mut fields: [String; 5] = Default::default();
    let mut i = 0;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields[i].push(next);
                }
            }
            // The password is the rest of the line, colons and all.
            ':' if i < 4 => i += 1,
            c => fields[i].push(c),
        }
    }
    (i == 4).then_some(fields)
}

/// `url` with its password replaced by `***` (the one masker of
/// [`ctxfold_core::secret`], re-exported for the store's callers).
pub use ctxfold_core::secret::mask_url;
use ctxfold_core::secret::scrub;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_the_password_of_a_url() {
        assert_eq!(
            mask_url("postgres://ctxfold:ctxfold-test@127.0.0.1:5432/ctxfold"),
            "postgres://ctxfold:***@127.0.0.1:5432/ctxfold"
        );
        assert_eq!(
            mask_url("postgresql://u@h/db"),
            "postgresql://u@h/db",
            "no password: unchanged"
        );
        assert_eq!(
            mask_url("postgres://u:p%40ss@h/db?sslmode=disable&password=two#x"),
            "postgres://u:***@h/db?sslmode=disable&password=***#x"
        );
        assert_eq!(
            mask_url("postgres://u:pa/ss@word@h:1/db"),
            "postgres://u:***@h:1/db",
            "an unencoded / or @ in the password is masked too"
        );
        assert_eq!(
            mask_url("host=h user=u password='a b\\'c' dbname=d"),
            "host=h user=u password=*** dbname=d"
        );
        assert_eq!(
            mask_url("host=h password = s3cret"),
            "host=h password = ***"
        );
        assert_eq!(mask_url(""), "");
        assert_eq!(mask_url("postgres://"), "postgres://");
    }

    #[test]
    fn bad_urls_say_what_was_expected_and_hide_the_password() {
        for (url, what) in [
            ("mysql://u:hunter2secret@h/db", "does not start with"),
            ("postgres://u:hunter2secret@h:notaport/db", "port"),
            ("postgres://:hunter2secret@h/db", "no user"),
            ("postgres://u:hunter2secret@h", "no database"),
            (
                "postgres://u:hunter2secret@h/db?sslmode=require",
                "without TLS",
            ),
        ] {
            let e = parse_url(url, &mask_url(url)).expect_err(url);
            let text = e.to_string();
            assert!(text.contains(what), "{url}: {text}");
            assert!(text.contains(URL_FORM), "{url}: {text}");
            assert!(!text.contains("hunter2secret"), "{url}: {text}");
        }
    }

    #[test]
    fn password_file_lines_match_like_libpq() {
        let text = "# comment\n\
                    other:5432:*:u:nope\n\
                    h:5432:db:u:pa\\:ss:word\n\
                    *:*:*:*:fallback\n";
        assert_eq!(
            password_file_lookup(text, "h", "5432", "db", "u").as_deref(),
            Some("pa:ss:word")
        );
        assert_eq!(
            password_file_lookup(text, "x", "1", "y", "z").as_deref(),
            Some("fallback")
        );
        assert_eq!(password_file_lookup("h:1:d:u\n", "h", "1", "d", "u"), None);
        assert_eq!(password_file_lookup("", "h", "1", "d", "u"), None);
    }

    #[test]
    fn schema_version_is_the_last_migration() {
        assert!(MIGRATIONS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(SCHEMA_VERSION, MIGRATIONS.last().map_or(0, |m| m.0));
    }
}
