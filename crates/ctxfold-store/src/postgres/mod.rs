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
//!
//! The code is split by job: `store` (the handle, its pool and its
//! messages), `conversations` (metadata, trash, the active one), `events`
//! (appending and loading records), `locks` (compaction and turn locks),
//! `migrations` (the schema), `url` and `password` (what a URL names and
//! where its password comes from), `target` (where a store connects, and
//! what a failed connection means).
//!
//! [`Record::to_json_line`]: ctxfold_core::Record::to_json_line
//! [`LineReader`]: ctxfold_core::log::LineReader

mod conversations;
mod events;
mod locks;
mod migrations;
mod password;
mod store;
mod target;
mod url;

pub use locks::PgLock;
pub use migrations::SCHEMA_VERSION;
pub use store::{PgOptions, PgStore};
pub use url::{URL_FORM, mask_url};
