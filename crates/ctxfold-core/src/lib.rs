//! The pure core of ctxfold.
//!
//! A conversation is an append-only log of [`Record`]s. This crate holds the
//! event model ([`record`]), the overlay records ([`compaction`]) and the turn
//! and step index ([`log`]). It does no file or network I/O and has no async
//! code: storage, formats, providers and the command line live in other
//! crates and depend on this one, never the other way round.

pub mod anchor;
pub mod arrival;
pub mod attempt;
pub mod bounds;
pub mod budget;
pub mod compaction;
pub mod cost;
pub mod cut_short;
pub mod diagnostics;
pub mod digest;
pub mod dsl;
pub mod estimate;
pub mod excerpt;
pub mod firing;
pub mod handle;
pub mod json_text;
pub mod kept;
pub mod log;
pub mod materialize;
pub mod planner;
pub mod position;
pub mod projection;
pub mod recall;
pub mod record;
pub mod report;
pub mod retention;
pub mod secret;
pub mod summarizer;
pub mod summary_prompt;
mod text;
pub mod trigger;
pub mod ts;
pub mod view_size;

pub use compaction::{Compaction, CompactionReset};
pub use json_text::JsonText;
pub use log::{Counts, LineReader, Log, ReadLines, Step};
pub use record::{Body, Fields, Kind, LineError, Object, Record, RecordError, RecordWarning};
pub use ts::Ts;
