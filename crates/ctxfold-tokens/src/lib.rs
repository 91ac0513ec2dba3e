//! Token accounting for ctxfold (SPEC §7).
//!
//! - [`TokenEstimator`]: counts the tokens of a text, and from it of a
//!   record, a view item, tool schemas and per-message overhead.
//! - Two estimators: [`Heuristic`] (characters / 4, rounded up, plus 4 per
//!   block, as seed 002 did) for every model without an offline tokenizer
//!   (Claude, llama, qwen, …), and [`Bpe`], exact counts for the OpenAI
//!   encodings `o200k_base` and `cl100k_base`, with the vocabulary compiled
//!   into the binary: nothing is downloaded at run time.
//!   [`for_model`] picks one from a model name.
//! - [`CountCache`]: events are immutable, so each is counted once, keyed
//!   by its `seq`; re-estimating after a turn costs what the turn added.
//!   [`CountCache::estimate_next_request`] starts from the usage the
//!   provider reported for the last call, when there is one.
//! - [`context_window`]: a built-in table of common models' windows.
//!
//! # Why `bpe-openai` and not `tiktoken-rs`
//!
//! Both ship the vocabularies and give identical counts (the tests check it
//! on every text of the JP corpus, with `tiktoken-rs` as the reference).
//! Measured on this machine (2 cores shared with other builds, Rust 1.95,
//! 2.8 MB of corpus text), each crate alone in an empty program:
//!
//! | | `bpe-openai` 0.3 | `tiktoken-rs` 0.12 |
//! | --- | --- | --- |
//! | clean debug build | 59 s | 22 s |
//! | clean release build | 93 s | 64 s |
//! | binary size over an empty program (release) | +47 MB | +8 MB |
//! | whole run loading both vocabularies, release | 0.11–0.18 s | 0.32–0.35 s |
//! | 2.8 MB corpus, o200k, release | 161 ms | 227 ms |
//! | 2 MB of `a`, release | 33 ms | 0.8–1.25 s |
//! | 8 MB of `a`, release | 124 ms | 4.2–6.8 s |
//! | 2 MB of spaces | 15 ms | **panics** (regex stack overflow) |
//!
//! `tiktoken-rs`'s backtracking regex panics on a long run of whitespace,
//! and its cost grows faster than linearly on long pieces. A tool result is
//! whatever a tool printed, and counting runs on every trigger check: a
//! panic or a multi-second stall there is not acceptable, so the crate
//! ships `bpe-openai` (linear on every input) and pays for it in build time
//! and binary size.

mod cache;
mod estimator;
mod window;

pub use cache::{CountCache, baseline_is_current, message_count};
pub use estimator::{
    BLOCK_OVERHEAD, Bpe, CHARS_PER_TOKEN, Encoding, Heuristic, MESSAGE_OVERHEAD, TokenEstimator,
    for_model, model_name,
};
pub use window::context_window;
