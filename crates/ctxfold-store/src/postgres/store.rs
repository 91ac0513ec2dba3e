//! The store's handle: how it connects ([`PgOptions`]), the connection
//! pool, and the helpers every operation shares (a connection, a live
//! conversation, metadata text, errors that name the store).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use ::postgres::{Config, NoTls, Transaction};
use r2d2_postgres::PostgresConnectionManager;
use r2d2_postgres::r2d2;

use super::migrations::migrate_client;
use super::password::supply_password;
use super::target::{Target, addr_of};
use super::url::{mask_url, parse_url};
use crate::StoreError;
use crate::meta::ConversationMeta;

pub(super) type Manager = PostgresConnectionManager<NoTls>;
pub(super) type Conn = r2d2::PooledConnection<Manager>;

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

/// The connection pool, closed on a thread of its own when the last
/// [`PgStore`] lets go of it.
///
/// The synchronous client closes a connection by running its own tokio
/// runtime, which panics on a thread that drives another (the proxy's and
/// the pages' servers, whose store goes when their runtime ends): a crash
/// at every stop. A plain thread has no runtime to collide with.
struct ClosingPool(Option<r2d2::Pool<Manager>>);

impl std::ops::Deref for ClosingPool {
    type Target = r2d2::Pool<Manager>;

    fn deref(&self) -> &Self::Target {
        // Some until dropped.
        self.0
            .as_ref()
            .unwrap_or_else(|| unreachable!("the pool is taken only on drop"))
    }
}

impl Drop for ClosingPool {
    fn drop(&mut self) {
        let Some(pool) = self.0.take() else { return };
        // Joined: the connections are closed (the server told) before the
        // process goes on to exit. Were no thread to be had, the pool is
        // dropped in that failed spawn, as it was before.
        if let Ok(closer) = std::thread::Builder::new()
            .name("ctxfold-pg-close".into())
            .spawn(move || drop(pool))
        {
            let _ = closer.join();
        }
    }
}

/// Conversations and their logs in a PostgreSQL database. Cheap to clone:
/// clones share one connection pool.
#[derive(Clone)]
pub struct PgStore {
    pool: Arc<ClosingPool>,
    pub(super) config: Config,
    pub(super) target: Target,
    pub(super) options: PgOptions,
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
            pool: Arc::new(ClosingPool(Some(pool))),
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
    ///
    /// [`SCHEMA_VERSION`]: super::SCHEMA_VERSION
    pub fn migrate(&self) -> Result<u32, StoreError> {
        let mut conn = self.conn()?;
        migrate_client(&mut conn, &self.target)
    }

    /// A connection from the pool.
    pub(super) fn conn(&self) -> Result<Conn, StoreError> {
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
    pub(super) fn require_live(
        &self,
        tx: &mut Transaction<'_>,
        id: &str,
    ) -> Result<(), StoreError> {
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

    pub(super) fn id_and_meta(
        &self,
        row: &::postgres::Row,
    ) -> Result<(String, String), StoreError> {
        let id: String = row
            .try_get(0)
            .map_err(|e| self.db("read a conversation", e))?;
        let text: String = row
            .try_get(1)
            .map_err(|e| self.db(format!("read conversation `{id}`"), e))?;
        Ok((id, text))
    }

    pub(super) fn parse_meta(&self, id: &str, text: &str) -> Result<ConversationMeta, StoreError> {
        serde_json::from_str(text).map_err(|e| StoreError::BadMeta {
            id: id.to_owned(),
            store: self.target.store.clone(),
            detail: e.to_string(),
        })
    }

    /// The metadata as the file store's `meta.json` holds it.
    pub(super) fn meta_text(&self, meta: &ConversationMeta) -> Result<String, StoreError> {
        let mut text = serde_json::to_string_pretty(meta).map_err(|e| StoreError::BadMeta {
            id: meta.id.clone(),
            store: self.target.store.clone(),
            detail: e.to_string(),
        })?;
        text.push('\n');
        Ok(text)
    }

    pub(super) fn db(&self, what: impl fmt::Display, e: ::postgres::Error) -> StoreError {
        StoreError::Database {
            what: format!("{what} in {}", self.target.store),
            source: Some(Box::new(e)),
        }
    }

    /// The `columns` of conversation `id`'s row (exactly that id; not one
    /// in the trash), or that there is no such conversation.
    pub(super) fn conversation_row(
        &self,
        id: &str,
        columns: &str,
    ) -> Result<::postgres::Row, StoreError> {
        let sql = format!(
            "SELECT {columns} FROM ctxfold_conversations WHERE id = $1 AND trashed_at IS NULL"
        );
        self.conn()?
            .query_opt(&sql, &[&id])
            .map_err(|e| self.db(format!("read conversation `{id}`"), e))?
            .ok_or_else(|| self.no_conversation(id))
    }

    pub(super) fn no_conversation(&self, id: &str) -> StoreError {
        StoreError::NoConversation {
            id: id.to_owned(),
            store: self.target.store.clone(),
        }
    }

    pub(super) fn gone(&self, id: &str) -> StoreError {
        StoreError::Gone {
            id: id.to_owned(),
            store: self.target.store.clone(),
        }
    }
}
