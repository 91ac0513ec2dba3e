//! Storage for ctxfold: the workspace folder, one folder per conversation,
//! the append-only `events.jsonl` log and the `meta.json` file.
//!
//! Two stores sit behind one interface, [`Store`]: the workspace (files,
//! the embedded default) and PostgreSQL ([`PgStore`]). The crate depends on
//! the core for the record model and on nothing above it.

use std::path::{Path, PathBuf};

pub mod event_log;
pub mod meta;
mod parallel_lines;
pub mod postgres;
mod snapshot;
pub mod store;
mod stream;
pub mod workspace;

pub use event_log::{CompactionLock, EventLog, FromSnapshot, Loaded, TornTail};
pub use meta::{ConversationMeta, ImportSource};
pub use postgres::PgStore;
pub use store::{AppendAt, BrokenMeta, Store, StoreListing, StoreLock, create_new};
pub use stream::Streamed;
pub use workspace::{Broken, Conversation, Listing, Workspace};

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file could not be read or written. (The system's reason is the
    /// error's source, so chains print it once.)
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A file holds something that is not what ctxfold wrote.
    #[error("{}{}: {detail}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    BadLine {
        /// The file.
        path: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// What was expected.
        detail: String,
    },
    /// The conversation's folder went away while a command was using it
    /// (`conversation rm` meanwhile); nothing was written to it.
    #[error(
        "conversation folder {} is gone (removed or moved while this command ran); nothing was written",
        dir.display()
    )]
    Vanished {
        /// The folder.
        dir: PathBuf,
    },
    /// The log's last `seq` leaves no room for another (a hand-edited log:
    /// the store numbers records from 0 up to `u64::MAX - 1`).
    #[error(
        "{}: the last record's seq is {seq}, so no record can follow it (seqs end at {}; was the log edited by hand?); nothing was written",
        path.display(),
        u64::MAX - 1
    )]
    SeqOverflow {
        /// The log.
        path: PathBuf,
        /// The last `seq`.
        seq: u64,
    },
    /// An empty conversation id (which would match every conversation).
    #[error(
        "empty conversation id; give an id or a prefix of one (`ctxfold conversation ls` lists them)"
    )]
    EmptyId,
    /// An id that cannot name a conversation.
    #[error("invalid conversation id `{id}`: {detail}")]
    InvalidId {
        /// The id.
        id: String,
        /// What was expected.
        detail: String,
    },
    /// No conversation has that id.
    #[error("no conversation `{id}` in {}; `ctxfold conversation ls` lists them", workspace.display())]
    NotFound {
        /// The id asked for.
        id: String,
        /// The workspace searched.
        workspace: PathBuf,
    },
    /// An id prefix matches several conversations.
    #[error("`{id}` matches several conversations: {}; give more of the id", matches.join(", "))]
    Ambiguous {
        /// The prefix.
        id: String,
        /// The ids it matches.
        matches: Vec<String>,
    },
    /// No id given and no active conversation.
    #[error("no conversation given and none is active; name one, or `ctxfold conversation use ID`")]
    NoActive,
    /// No XDG data directory for the global workspace.
    #[error(
        "no workspace here (no .ctxfold/ above the current directory) and no data directory for the global one; run `ctxfold init`"
    )]
    NoDataDir,
    /// A store URL that is not a PostgreSQL URL ctxfold can use. The URL
    /// is shown with its password masked.
    #[error(
        "invalid PostgreSQL URL `{url}`: {detail}; expected postgres://user[:password]@host[:port]/database"
    )]
    BadUrl {
        /// The URL, password masked.
        url: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The PostgreSQL server could not be reached (refused, timed out,
    /// unknown host).
    #[error(
        "cannot connect to PostgreSQL at {addr}: {reason}; is the server running and listening there?"
    )]
    Unreachable {
        /// `host:port` (or the socket folder).
        addr: String,
        /// What the system said.
        reason: String,
    },
    /// The server refused the credentials, or wanted a password and got
    /// none. Never holds the password.
    #[error("authentication failed for user `{user}` at PostgreSQL {addr}: {detail}")]
    AuthFailed {
        /// The role name.
        user: String,
        /// `host:port`.
        addr: String,
        /// Where the password came from, or that there was none.
        detail: String,
    },
    /// The database's ctxfold schema is newer than this binary knows.
    #[error(
        "the ctxfold tables in {store} are at schema version {found}, newer than this ctxfold supports (version {supported}); upgrade ctxfold, or use another database"
    )]
    SchemaTooNew {
        /// The store (URL, password masked).
        store: String,
        /// The version found in the database.
        found: u32,
        /// The newest version this binary knows.
        supported: u32,
    },
    /// A database operation failed. (The server's or driver's reason is
    /// the source.)
    #[error("{what}")]
    Database {
        /// What was being done, and where (URL, password masked).
        what: String,
        /// The driver's error, when there is one.
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
    /// A conversation with that id already exists in a database store.
    #[error("conversation `{id}` already exists in {store}; nothing was written")]
    ConversationExists {
        /// The id.
        id: String,
        /// The store (URL, password masked).
        store: String,
    },
    /// No conversation has that id in a database store (or it is in the
    /// trash).
    #[error("no conversation `{id}` in {store}; `ctxfold conversation ls` lists them")]
    NoConversation {
        /// The id asked for.
        id: String,
        /// The store (URL, password masked).
        store: String,
    },
    /// The conversation went away from a database store (moved to the
    /// trash meanwhile) before a write; nothing was written.
    #[error(
        "conversation `{id}` is gone from {store} (moved to the trash meanwhile, or never there); nothing was written"
    )]
    Gone {
        /// The id.
        id: String,
        /// The store (URL, password masked).
        store: String,
    },
    /// A conversation's metadata in a database store is not what ctxfold
    /// writes (edited by hand).
    #[error(
        "conversation `{id}` in {store}: its metadata is not a ctxfold metadata object: {detail}"
    )]
    BadMeta {
        /// The id.
        id: String,
        /// The store (URL, password masked).
        store: String,
        /// What the parser said.
        detail: String,
    },
}

impl StoreError {
    /// A [`StoreError::Io`].
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// The current time as RFC 3339 text, as ctxfold stamps its records.
pub fn now() -> String {
    jiff::Timestamp::now().to_string()
}
