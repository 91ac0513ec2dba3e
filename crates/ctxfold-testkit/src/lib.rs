//! What ctxfold's tests and benchmarks share, in one place instead of a
//! copy per crate (each copy had started to differ):
//!
//! - [`corpus`]: where the real agent conversations are (`../shared/corpus/jp`
//!   beside the repository, or `CTXFOLD_CORPUS`), and their folders;
//! - [`pg`]: a PostgreSQL database of one test's own on the server
//!   `scripts/postgres` starts;
//! - [`needs`]: what a test does when a server it needs is missing (fails
//!   under `scripts/test` and in CI, skips saying so elsewhere);
//! - [`faults`]: real file-system faults (a full disk, a read-only folder);
//! - [`session`]: a long agent session generated deterministically, for
//!   the benchmarks of the pages and of `ctxfold conversation show`;
//! - [`records`]: metadata and records the store's tests write;
//! - [`canned`]: a fake upstream on 127.0.0.1 that answers with canned
//!   replies in order and records what it was sent.
//!
//! Only tests and benchmarks depend on it (as a dev-dependency); it is
//! never published. Panicking on a broken setup is its job: a test must not
//! pass without what it checks.

pub mod canned;
pub mod corpus;
pub mod faults;
pub mod needs;
pub mod pg;
pub mod records;
pub mod session;
