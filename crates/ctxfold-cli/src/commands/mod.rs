//! One module per command or command group, each a `run` over the
//! [`Context`](crate::context::Context) that gives back a report for the
//! printer ([`Report`](crate::render::Report)). No command imports another:
//! what they share is in modules named for what it is.

pub mod compact;
pub mod completions;
pub mod config;
pub mod conversation;
pub mod doctor;
pub mod init;
pub mod mcp;
pub mod proxy;
pub mod query;
pub mod recall;
pub mod run;
pub mod search;
pub mod stats;
pub mod store;
pub mod ui;
