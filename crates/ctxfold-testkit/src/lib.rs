//! What ctxfold's tests and benchmarks share, in one place instead of a
//! copy per crate (each copy had started to differ):
//!
//! - [`client`]: the HTTP client the tests reach the proxy and the pages
//!   with, and the answers it reads;
//! - [`corpus`]: where the real agent conversations are (`../shared/corpus/jp`
//!   beside the repository, or `CTXFOLD_CORPUS`), and their folders;
//! - [`pg`]: a PostgreSQL database of one test's own on the server
//!   `scripts/postgres` starts;
//! - [`needs`]: what a test does when a server it needs is missing (fails
//!   under `scripts/test` and in CI, skips saying so elsewhere);
//! - [`faults`]: real file-system faults (a full disk, a read-only folder);
//! - [`session`]: a long agent session generated deterministically, for
//!   the benchmarks of the pages and of `ctxfold conversation show`;
//! - [`records`]: metadata and records the store's tests write, and a
//!   conversation's records read back from a store as `ctxfold c print
//!   --format json` prints them (for the tests that run the proxy
//!   in-process);
//! - [`upstream`]: the one scripted upstream on 127.0.0.1 the tests talk
//!   to: the proxy tests' model on every API the proxy speaks, the real
//!   agents' model, or canned replies in order ([`upstream::canned`]),
//!   each request checked and kept; and
//!   the proxy tests' tool-using client of that model
//!   ([`upstream::tool_loop`]).
//!
//! Only tests and benchmarks depend on it (as a dev-dependency); it is
//! never published. Panicking on a broken setup is its job: a test must not
//! pass without what it checks.

pub mod agent_session;
pub mod client;
pub mod corpus;
pub mod faults;
pub mod generated;
pub mod needs;
pub mod peak;
pub mod pg;
pub mod records;
pub mod session;
pub mod upstream;
