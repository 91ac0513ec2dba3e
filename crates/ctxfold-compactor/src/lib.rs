//! The compaction service (SPEC §8, seed 002): one place that decides,
//! summarizes and records compactions, for the command line, the agent
//! host and the proxy alike.
//!
//! - [`Compactor`] is the contract: [`compact_if_needed`](Compactor::compact_if_needed)
//!   between turns or before a model call, [`compact_region`](Compactor::compact_region)
//!   over a given range, and [`compact_for_overflow`](Compactor::compact_for_overflow)
//!   when a provider answered that the request is too long.
//! - [`BasicCompactor`] is the backend that owns the algorithm: the pure
//!   decisions of the core ([`ctxfold_core::trigger`],
//!   [`ctxfold_core::retention`]) and the order of effects (lock,
//!   `compaction_started`, summarize, check, append, `compaction_finished`).
//!   Its parts are replaceable: the token estimator, the summarizers
//!   ([`Summarizers`]) and the store ([`Journal`]).
//! - [`compact_with_rules`] runs manual rules (`conversation compact`,
//!   `ctxfold compact FILE`) through the same steps.
//! - [`assistant`]: what the assistant's `compact` tool proposes, planned
//!   for its preview and recorded with the call's result.
//! - [`reset`]: undo and redo of compactions (the `compaction_reset`
//!   record the command line and the browser pages append).
//! - [`retry_on_overflow`] is what a caller does with a "context too long"
//!   answer: one forced compaction, one retry, never a loop.
//!
//! The service is synchronous; an async caller runs it on a blocking
//! thread. It logs with `tracing` (firings at info, skips at debug).

pub mod assistant;
mod basic;
mod breaker;
mod conversation;
mod derive;
pub mod effect;
pub mod fork;
pub mod journal;
mod manual;
mod overflow;
pub mod replay;
pub mod reset;

use ctxfold_core::Compaction;
use ctxfold_core::planner::PlanError;
use ctxfold_core::summarizer::Summarizer;
use ctxfold_core::trigger::Skip;
use ctxfold_store::StoreError;
use serde::Serialize;

pub use basic::BasicCompactor;
pub use breaker::Breaker;
pub use conversation::Conversation;
pub use effect::Effect;
pub use journal::{InStore, Journal, Memory};
pub use manual::{Fallback, Run, compact_by_default, compact_with_rules};
pub use overflow::{OverflowError, retry_on_overflow};

/// When the service is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Moment {
    /// A turn just completed (seed 004).
    BetweenTurns,
    /// A model call is about to be made (seed 002).
    BeforeStep,
}

/// What the service needs to know besides the conversation.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    /// When it is asked.
    pub moment: Moment,
    /// The model's context window in tokens, when known; unknown means
    /// automatic compaction is skipped.
    pub window: Option<u32>,
    /// Tokens the request holds besides the view of the log: the system
    /// prompt, tool definitions (the budget's fixed part).
    pub extra_tokens: usize,
    /// The most the reply may take, as the request says (`max_tokens`):
    /// the reserve is never more.
    pub max_tokens: Option<u32>,
    /// Tokens the upstream counts per estimated token: 1 until a provider
    /// reports what it counted (its usage, or the figure in an overflow
    /// error). Every estimate the service compares is multiplied by it.
    pub scale: f64,
    /// The current time, for duration keeps.
    pub now: Option<jiff::Timestamp>,
    /// Decide and report, write nothing and call no model.
    pub dry_run: bool,
}

impl Context {
    /// A context for `moment` with a window and nothing else.
    pub fn new(moment: Moment, window: Option<u32>) -> Self {
        Context {
            moment,
            window,
            extra_tokens: 0,
            max_tokens: None,
            scale: 1.0,
            now: None,
            dry_run: false,
        }
    }

    /// `tokens` as the upstream counts them (see [`Context::scale`]).
    pub fn scaled(&self, tokens: usize) -> usize {
        if self.scale == 1.0 {
            tokens
        } else {
            (tokens as f64 * self.scale).ceil() as usize
        }
    }
}

/// Gives the summarizer a rule names: the offline digest for `None` or
/// `digest`, a model for `provider/model`.
pub trait Summarizers {
    /// The summarizer for `model`.
    fn get(&self, model: Option<&str>) -> Result<Box<dyn Summarizer>, String>;
}

/// The offline digest only.
#[derive(Debug, Default, Clone, Copy)]
pub struct DigestOnly;

impl Summarizers for DigestOnly {
    fn get(&self, model: Option<&str>) -> Result<Box<dyn Summarizer>, String> {
        match model {
            None | Some("digest") => Ok(Box::new(ctxfold_core::digest::Digest)),
            Some(m) => Err(format!(
                "no model summarizers here: `{m}` cannot be used (only the offline digest)"
            )),
        }
    }
}

/// A compaction the service recorded (or, in a dry run, would record).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Committed {
    /// Its record's `seq` (`None` in a dry run).
    pub seq: Option<u64>,
    /// The record.
    pub compaction: Compaction,
    /// What it changes in the view.
    pub effect: Effect,
}

/// How a request to the service ended. None of these is an error: the
/// caller goes on with the view as it now is.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum Status {
    /// Not due.
    Skipped {
        /// Why.
        #[serde(flatten)]
        why: Skip,
    },
    /// Compacted, and the view is now under the threshold (or no
    /// threshold applies).
    Compacted,
    /// Compacted, but still over the threshold: the retained tail alone is
    /// too large, or the attempts ran out.
    StillOver {
        /// Why, for people.
        reason: String,
    },
    /// Nothing could be compacted (nothing before the retained tail, the
    /// range is empty, or the rule would change nothing).
    NothingToCompact {
        /// Why, for people.
        reason: String,
    },
    /// The newest unit alone is larger than the budget: compaction cannot
    /// make the request fit; output truncation is the remedy.
    Unfit {
        /// Its tokens.
        unit_tokens: usize,
        /// The threshold.
        threshold: usize,
    },
    /// The fixed part (system prompt, tool definitions) alone leaves no
    /// room in the window for the conversation: said once per
    /// conversation, not on every request.
    NoRoom {
        /// Tokens of the fixed part.
        fixed: usize,
        /// The window less the reply's reserve.
        limit: usize,
    },
    /// Another process is compacting this conversation.
    Busy,
    /// Too many failed or fruitless attempts this turn: stopped until the
    /// next turn.
    BreakerOpen,
    /// The attempt failed; nothing was recorded but its
    /// `compaction_finished` with the error.
    Failed {
        /// What went wrong.
        error: String,
    },
}

/// What the service did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// When it was asked.
    pub moment: Moment,
    /// How it ended.
    #[serde(flatten)]
    pub status: Status,
    /// Estimated tokens of the request before.
    pub before: usize,
    /// Estimated tokens of the request after.
    pub after: usize,
    /// The trigger, when the window is known.
    pub threshold: Option<usize>,
    /// The budget it worked to, when the window is known.
    pub budget: Option<ctxfold_core::budget::Budget>,
    /// What it recorded, in order.
    pub committed: Vec<Committed>,
}

impl Outcome {
    /// Whether anything was (or in a dry run, would be) recorded.
    pub fn compacted(&self) -> bool {
        !self.committed.is_empty()
    }
}

/// Why the service could not do its job. Failures of a summarizer are not
/// errors (see [`Status::Failed`]); these are: the store could not be
/// written or read, or the request could not be planned.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    /// Reading or writing the conversation failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The rules could not be planned.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A bound could not be resolved.
    #[error(transparent)]
    Bound(#[from] ctxfold_core::bounds::BoundError),
    /// A manual run's summary failed or was refused; nothing was recorded.
    #[error("{0}")]
    Summary(String),
    /// Another process is compacting this conversation.
    #[error("the conversation is being compacted by another process; try again when it is done")]
    Busy,
    /// What was approved no longer fits the conversation, which changed
    /// while the user decided; nothing was recorded.
    #[error(
        "the conversation changed while the compaction was being approved ({0}); nothing was recorded"
    )]
    Changed(String),
}

/// The compaction service's contract.
pub trait Compactor {
    /// Compact if the trigger for `ctx.moment` says so: between turns, the
    /// rolling range of the automatic rule, at most once per turn boundary;
    /// before a step, what lies before the retained tail, with bounded
    /// retries and the circuit breaker.
    fn compact_if_needed(
        &self,
        conv: &mut Conversation<'_>,
        ctx: &Context,
    ) -> Result<Outcome, CompactError>;

    /// Compact the records `range` (inclusive indices) with the automatic
    /// rule's policies, whatever the trigger says. The range must not split
    /// a tool call from its result.
    fn compact_region(
        &self,
        conv: &mut Conversation<'_>,
        range: (usize, usize),
        ctx: &Context,
    ) -> Result<Outcome, CompactError>;

    /// The provider answered that the request is too long: compact what
    /// lies before the retained tail once, whatever the trigger says.
    fn compact_for_overflow(
        &self,
        conv: &mut Conversation<'_>,
        ctx: &Context,
    ) -> Result<Outcome, CompactError>;
}
