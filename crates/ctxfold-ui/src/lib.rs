//! ctxfold's browser pages (issue 15): the conversations of a store, and
//! one conversation's shape — where its tokens are, which turns are folded,
//! by what, what the model now sees — with undo and restore.
//!
//! `ctxfold ui` serves them; the proxy serves the same router under `/ui`.
//! Rendering is synchronous and pure over loaded data (a [`Log`] and its
//! metadata), so it is tested and measured without a server; only
//! [`server`] is async, and it runs store calls and rendering on tokio's
//! blocking pool.
//!
//! - [`data`]: what a conversation is, for the pages (its source, model,
//!   window, last activity, sizes), loaded through the [`Store`] trait.
//! - [`list`]: the conversation list.
//! - [`conversation`]: one conversation's page, built from [`timeline`]
//!   (turns as bars, compactions as bands, attempts), [`curve`] (tokens
//!   over the conversation's life), [`view`] (what the model sees beside
//!   the raw turns) and the compaction details with their undo and restore
//!   buttons.
//! - [`html`]: the layout and small formatting helpers (escaping is maud's).
//! - [`security`]: the token (as the proxy's), the loopback rule for
//!   `Host`, cross-site request checks and form tokens.
//! - [`server`]: the axum router both shells mount, live updates by
//!   server-sent events.
//!
//! [`Log`]: ctxfold_core::Log
//! [`Store`]: ctxfold_store::Store

pub mod conversation;
pub mod curve;
pub mod data;
pub mod html;
pub mod list;
pub mod security;
pub mod server;
pub mod timeline;
pub mod view;

pub use server::{Ui, router};
