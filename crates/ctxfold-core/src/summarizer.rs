//! The `Summarizer` service: turns the raw events of a range into text.
//!
//! A summarizer always reads the raw events of its range, never a projected
//! view, so a summary is never a summary of a summary. Two ship: the offline
//! digest ([`crate::digest`]) and, in the provider layer, the model
//! summarizer.

use crate::compaction::Provenance;
use crate::log::Log;

/// What a summarizer is asked to summarize.
#[derive(Debug, Clone, Copy)]
pub struct SummaryInput<'a> {
    /// The whole log (for context such as turn numbers).
    pub log: &'a Log,
    /// The records to summarize: indices into `log.records()`, inclusive.
    pub range: (usize, usize),
    /// Instructions from the rule or the command line, if any.
    pub instructions: Option<&'a str>,
}

/// A summary and how it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryOutput {
    /// The text.
    pub text: String,
    /// Where it came from (always [`Provenance::Derived`] for a summarizer).
    pub provenance: Provenance,
}

/// Why a summary could not be made. Nothing is recorded when this happens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{summarizer}: {message}")]
pub struct SummarizeError {
    /// The summarizer that failed.
    pub summarizer: String,
    /// What went wrong.
    pub message: String,
}

/// Turns the raw events of a range into a summary.
pub trait Summarizer {
    /// The summarizer's name as recorded in provenance: `digest`, or
    /// `provider/model`.
    fn name(&self) -> String;

    /// Summarize the range.
    fn summarize(&self, input: SummaryInput<'_>) -> Result<SummaryOutput, SummarizeError>;

    /// Whether it works offline and fast (the digest): a slow one (a model)
    /// is bracketed by `compaction_started` / `compaction_finished` records
    /// so a crash while it runs is visible and inert.
    fn offline(&self) -> bool {
        false
    }
}
