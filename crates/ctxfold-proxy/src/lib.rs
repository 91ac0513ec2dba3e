//! `ctxfold proxy`: an HTTP proxy speaking the provider APIs agents
//! already use (SPEC §14). Each conversation it sees is recorded as an
//! ordinary ctxfold conversation; the upstream gets the compacted view,
//! rendered back into the client's own wire shape; the answer streams back
//! untouched while a copy is recorded.
//!
//! - [`agent`]: which agent sent a request, and the session it names.
//! - [`config`]: the `[proxy]` section.
//! - [`context_management`]: the providers' own context management
//!   (compaction blocks and items, applied edits), passed through and
//!   recorded.
//! - [`ending`]: whether an answer reached its protocol's end, watched as
//!   it passes; what can be read of a JSON answer cut short.
//! - [`reconcile`]: a request's history against the stored log (pure).
//! - [`request`]: a request body split with its messages as raw text.
//! - [`protocol`]: the model APIs, one module each (routes, upstream,
//!   reading and writing, answers, what each lacks).
//! - [`book`]: finding, recording and compacting conversations
//!   (synchronous, run on the blocking pool).
//! - [`server`]: the async HTTP edge (axum on tokio, reqwest upstream).
//! - [`listener`]: accepting connections: a cap on how many are open,
//!   deadlines for a request's head and for an idle connection.
//! - [`intake`]: reading a body the proxy interprets: declared JSON,
//!   bounded in size and time.
//! - [`cache`]: what is kept in memory between requests, and its bounds.
//! - [`metrics`]: what `/metrics` reports.

pub mod agent;
pub mod book;
pub mod cache;
pub mod config;
pub mod context_management;
pub mod ending;
pub mod intake;
pub mod listener;
pub mod metrics;
pub mod protocol;
pub mod reconcile;
pub mod request;
pub mod server;

pub use book::{Book, Compaction};
pub use config::{OnError, ProxyConfig};
pub use server::serve;
