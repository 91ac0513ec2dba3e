//! `ctxfold store …`: move conversations between stores, and set up a
//! PostgreSQL one.

pub mod copy;
pub mod migrate;
